"""The ``webward`` program's first code: its console script and ``python -m webward`` start
here, ahead of the command line's own imports.

Those imports take 100 to 300 ms, and Ctrl-C pressed while they ran (a command typed, then
thought better of) met Python's default handler: a traceback through the import machinery,
and exit -2 in place of the README's 130. Nothing has begun then (no call, no record), so the
person is told that in one sentence; a second Ctrl-C meanwhile is ignored.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import NoReturn

__all__ = ["run"]

_SAID = "interrupted (Ctrl-C): stopped before any call began"


def run() -> NoReturn:
    """``webward.cli.run``, imported here so that Ctrl-C during its imports (or before its
    own handling begins: the arguments still being read) ends the program as the README
    says, not with a traceback."""
    from ._signals import forget_unhandled_interrupt, note_dropped_interrupts

    note_dropped_interrupts()
    try:
        from .cli import run as run_command

        run_command()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the way out is not interrupted again
        forget_unhandled_interrupt()  # exit 130 as said, not killed by SIGINT
        said = _SAID
        cli = sys.modules.get("webward.cli")
        if cli is not None and cli._begun[0]:
            # The command had answered (its output being flushed, the program exiting): its
            # call, if any, is audited as what it was; stdout holds its answer already.
            said = cli._ANSWERED_THEN_INTERRUPTED
        # The command line's own printers are what was being imported: written here.
        if "--json" in sys.argv[1:] and said is _SAID:  # one JSON object on stdout, as always
            line = '{"error": {"code": "cancelled", "message": "' + said + '"}}'
            stream = sys.stdout
        else:
            line, stream = f"webward: {said}", sys.stderr
        with contextlib.suppress(OSError, ValueError):  # a closed stream: the code says it
            print(line, file=stream, flush=True)
        sys.exit(128 + signal.SIGINT)
