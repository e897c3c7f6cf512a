"""The signals that end a webward command, taken over by every face so that the call in flight
is cancelled and audited rather than killed with its record unwritten."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterable
from typing import Any

__all__ = [
    "ENDING_SIGNALS",
    "dropped_interrupt",
    "forget_unhandled_interrupt",
    "note_dropped_interrupts",
    "stop_if_interrupted",
    "taken_signals",
]

#: The signals every face takes over (the CLI's calls in ``cli.run_call``, every command in
#: ``cli.main``, the servers' uvicorn in ``_serving.serve``): each ends a command the way
#: SIGTERM does, the call in flight cancelled and its audit record written, then exit
#: 128 + the signal's number. Each is one whose default action ends the process (with the
#: record unwritten) and that an operator's environment sends:
#: SIGINT (Ctrl-C); SIGTERM (kill, a supervisor, a container stopping); SIGHUP (the terminal
#: closed, an SSH session dropped); SIGQUIT (Ctrl-\, and the stop signal of some container
#: images: its core dump of a Python interpreter helps nobody, while the lost record breaks
#: the audit's promise); SIGUSR1 and SIGUSR2 (a log rotation's or a supervisor's "reload"
#: sent to a process that has none: it ended the process anyway, now it ends it audited).
#: Left alone: SIGPIPE (Python ignores it; a reader gone is BrokenPipeError, exit 141), and
#: SIGALRM, SIGXCPU, SIGXFSZ and the profiling timers, which the process's own limits and
#: timers raise, not an operator. A signal this platform lacks (Windows) is left out; one
#: ignored when a face starts (nohup's SIGHUP, a background job's SIGINT) stays ignored.
ENDING_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, name)
)


def taken_signals(*, but: Iterable[int] = ()) -> list[signal.Signals]:
    """The signals of :data:`ENDING_SIGNALS` (except ``but``) not ignored at the moment: the
    ones a face takes over, in the main thread only."""
    return [
        signum
        for signum in ENDING_SIGNALS
        if signum not in but and signal.getsignal(signum) is not signal.SIG_IGN
    ]


# The Ctrl-Cs Python could not raise: see note_dropped_interrupts.
_dropped: list[int] = []


def note_dropped_interrupts() -> None:
    """Keep the Ctrl-C (KeyboardInterrupt) that Python raised where it cannot propagate (a
    weakref callback, such as the import system's module locks', or a ``__del__``), for
    :func:`dropped_interrupt`. It printed "Exception ignored in: ... KeyboardInterrupt"
    and was lost: the command ran on, read its page and exited 0. Only for the program
    (``_program.run``): a library's host keeps its own hook."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _dropped.append(getattr(unraisable.exc_value, "signum", signal.SIGINT))
            return
        previous(unraisable)

    sys.unraisablehook = hook


def dropped_interrupt() -> int | None:
    """The signal of the first Ctrl-C Python had to drop (:func:`note_dropped_interrupts`),
    if any: the command ends as that signal would have ended it."""
    return _dropped[0] if _dropped else None


def stop_if_interrupted() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C was dropped (:func:`dropped_interrupt`): a server
    about to start. Dropped while it loaded, it was lost and the server served on (a
    command that returns is ended by ``cli``, one that serves never returns)."""
    if dropped_interrupt() is not None:
        raise KeyboardInterrupt


def forget_unhandled_interrupt() -> None:
    """Clear CPython's note that a KeyboardInterrupt went unhandled, once webward has handled
    it. CPython notes one that leaves any ``exec()`` or ``eval()`` of a string (dataclasses and
    namedtuple make their methods so, on the imports of a command's first 100 ms), even when
    it is caught further up, and at exit kills the process with SIGINT in place of the exit
    code given: `webward fetch` interrupted then said its sentence and ended -2 (killed),
    not the README's 130. The next such call clears the note; this is one that does nothing."""
    exec("")  # the note is reset as any exec() of a string begins
