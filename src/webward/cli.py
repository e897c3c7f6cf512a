"""The ``webward`` command line: one subcommand per ``_cmd_<name>`` module.

Each command module exposes ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args, settings) -> int``. Every command takes ``--config FILE``. Exit codes: 0 done,
1 upstream failure, 2 bad usage or input, 3 refused.

Start-up is kept short: a command module imports at its top only what ``webward --help``
needs, and only the command being run gets its arguments (and their imports) added.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import importlib
import io
import os
import re
import signal
import sys
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

from ._errors import (
    InvalidInput,
    Reason,
    Refused,
    UpstreamError,
    WebwardError,
    another_tier_would_pass,
    internal_error,
)
from ._signals import dropped_interrupt, forget_unhandled_interrupt, taken_signals

if TYPE_CHECKING:
    import logging

    from ._settings import Settings


__all__ = [
    "Interrupted",
    "empty_tier",
    "exit_code",
    "is_closed",
    "json_text",
    "main",
    "port_number",
    "print_json",
    "report_error",
    "run",
    "run_call",
]

# The order is the order of `webward --help`.
COMMANDS = ("fetch", "search", "audit", "credentials", "ask", "mcp", "serve", "console")
# Commands that do one thing and end within seconds: the cyclic garbage collector is off while
# they run. Their few cycles die with the process, and its passes would only walk the objects
# the imports made, again and again (about 10 ms of a small page's read). Servers and the
# agent loop keep it.
ONE_SHOT = frozenset({"fetch", "search", "audit", "credentials"})
# Commands that serve until stopped: their operator reads the log, store lines and all.
SERVERS = frozenset({"mcp", "serve", "console"})

EPILOG = """\
exit codes: 0 done (read, searched, listed, answered); 1 upstream failure (timeout, HTTP or
provider error) or output that could not be written (a full disk, stdout closed); 2 bad usage
or input; 3 refused (policy, guard, rate limit, circuit open, not configured); 141 the reader
of a pipe went away (| head); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up
(SIGHUP, the terminal closed), and 128+N for SIGQUIT (131), SIGUSR1 (138) and SIGUSR2 (140):
the call in flight is audited as cancelled.

configuration: --config FILE, else $WEBWARD_CONFIG, else webward.toml in the user config dir
(~/.config/webward/webward.toml on Linux); a webward.toml in the working directory is read
only when named with --config. WEBWARD_* variables override
single settings (WEBWARD_TIER, WEBWARD_ALLOW_RANGES, WEBWARD_STATE_DIR, ...). Credentials
never live in the config file.
"""


def _ended_by(signum: int) -> str:
    """How a person is told what ended a command (``--json``'s sentence)."""
    if signum == signal.SIGINT:
        return "interrupted (Ctrl-C)"
    if signum == signal.SIGHUP:
        return "hung up (SIGHUP)"
    return f"terminated ({signal.Signals(signum).name})"


def exit_code(error: WebwardError) -> int:
    """The exit code for an error: 1 upstream, 2 bad input, 3 refused."""
    if isinstance(error, UpstreamError):
        return 1
    if isinstance(error, InvalidInput):
        return 2
    if isinstance(error, Refused):
        return 3
    return 1


def report_error(error: WebwardError, as_json: bool) -> int:
    """Print ``error`` for people (stderr) or scripts (the error model on stdout); if stdout
    cannot be written, the sentence goes to stderr, and if neither can, only the code is left."""
    with contextlib.suppress(OSError):
        if as_json:
            try:
                print_json(error.to_wire(for_model=False), flush=True)
                return exit_code(error)
            except OSError:
                _silence_stdout()
        message = error.message
        if another_tier_would_pass(error):
            message += "; or choose this call's tier with --tier"  # at the terminal, one may
        print(f"webward: {message}", file=sys.stderr, flush=True)
    return exit_code(error)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush of what could not be
    written does not raise again on the way out."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


# What a write to a full disk or a failing device raises (a pipe's reader leaving is
# BrokenPipeError, answered on its own). The state dir's own failures are refusals, so these
# reaching the top are the output's.
_WRITE_FAILURES = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG})


def _modules(chosen: str | None = None) -> list[tuple[str, ModuleType]]:
    found = []
    # A command line naming its command imports (and builds the parser of) that one only.
    for name in (chosen,) if chosen else COMMANDS:
        try:
            found.append((name, importlib.import_module(f"webward._cmd_{name}")))
        except ModuleNotFoundError as exc:
            if exc.name != f"webward._cmd_{name}":
                raise  # a command whose own dependency is missing must say so, not vanish
    return found


class _Parser(argparse.ArgumentParser):
    """argparse's parser (its subcommands' too), whose usage error, under ``--json``, also
    prints the error model on stdout (code ``invalid_input``): a script reading stdout got
    nothing. The usage text still goes to stderr."""

    def error(self, message: str) -> NoReturn:
        message += _command_meant(message) + self._dash_word_meant(message)
        if self._json:
            error = {"code": "invalid_input", "message": f"{message}; see `{self.prog} --help`"}
            with contextlib.suppress(OSError, ValueError):
                print_json({"error": error}, flush=True)
        super().error(message)

    _json = False  # set for the whole command line (every subparser) by build_parser
    _words: tuple[str, ...] = ()  # the command line's words before any "--", likewise

    def _dash_word_meant(self, message: str) -> str:
        """For "the following arguments are required: QUERY" when the command line held a
        word with a dash that is no option of this command (`webward search -x`): that the
        word was taken for an option, and how to give it as the value (a query or question
        may begin with a dash; else, that there is no such option). argparse dropped it
        without a word, and "-x" looked given."""
        missing = re.match(r"the following arguments are required: ([A-Z]+)", message)
        if missing is None:
            return ""
        for word in self._words:
            if not word.startswith("-") or word.split("=")[0] in self._option_string_actions:
                continue
            if self._negative_number_matcher.match(word):
                continue  # a value (see __init__), an option's: never taken for an option
            if word.startswith("--") or missing.group(1) not in ("QUERY", "QUESTION"):
                return f"; `{self.prog}` has no option {word!r}"
            return (
                f"; {word!r} was taken for an option: a {missing.group(1)} that begins "
                f"with - goes after --, as in `{self.prog} -- {word}`"
            )
        return ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A value that starts with a minus and a digit is a value, as Python 3.13's argparse
        # takes it: before, only a bare number was, and `--since -5m` got argparse's
        # "expected one argument" where `--since=-5m` got the flag's own sentence.
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def _print_message(self, message: str, file: Any = None) -> None:  # (typeshed's protocol)
        # argparse drops a write that fails (`--help >/dev/full` exited 0, the help lost):
        # on stdout it is the output, answered by main() as every output not written is.
        if message and file is sys.stdout:
            file.write(message)
            return
        super()._print_message(message, file)


def port_number(text: str) -> int:
    """A ``--port`` as typed: ASCII digits, with an optional sign (the range is checked by
    the command, by name). argparse's ``type=int`` took "٣" (an Arabic-Indic three) as port
    3, and a server bound it."""
    value = text.strip()
    digits = value.removeprefix("-")
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 9):
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535, not {text!r}")
    return int(value)


def _command_meant(message: str) -> str:
    """For argparse's refusal of a command that is none (``webward fech URL``), the command
    most likely meant: the list of every command alone left the typo to be found by eye."""
    typed = re.match(r"argument COMMAND: invalid choice: '(.*?)' \(", message)
    if typed is None:
        return ""
    import difflib

    close = difflib.get_close_matches(typed.group(1).lower(), COMMANDS, n=1, cutoff=0.6)
    return f"; the closest is `webward {close[0]}`" if close else ""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given ``argv``, only the command it names gets its arguments added."""
    chosen = _chosen_command(argv)
    # --json (before any "--") asks for JSON answers, usage errors included.
    words = list(argv or ())
    _Parser._words = tuple(words[: words.index("--") if "--" in words else None])
    _Parser._json = "--json" in _Parser._words
    parser = _Parser(
        prog="webward",
        description="The one audited door through which AI agents read the public web and search it.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"webward {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in _modules(chosen):
        p = sub.add_parser(
            name,
            help=module.HELP,
            description=getattr(module, "DESCRIPTION", module.HELP),
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if chosen is not None and name != chosen:
            continue  # the command line names another command: its arguments are not needed
        config_help = getattr(module, "CONFIG_HELP", "the config file (TOML) to read")
        p.add_argument("--config", metavar="FILE", help=config_help)
        module.add_arguments(p)
        p.set_defaults(_module=module, _parser=p)
    return parser


def _chosen_command(argv: Sequence[str] | None) -> str | None:
    # The command is the first word that is not an option (the top level has only options
    # without values: --help, --version).
    # "" when no command is named (top-level help, or a typo argparse will name): none of
    # the commands' arguments are needed.
    if argv is None:
        return None
    first = next((a for a in argv if not a.startswith("-")), "")
    return first if first in COMMANDS else ""


def main(argv: Sequence[str] | None = None) -> int:
    """The command line ``argv`` (else ``sys.argv[1:]``) run, to its exit code. What the
    command printed is flushed here, where a write that fails is still answered (exit 141
    for a pipe whose reader left, 1 and one sentence for a full disk): left to the
    interpreter's last flush, a buffered stdout (the usual one, without PYTHONUNBUFFERED)
    failed outside every handler, with "Exception ignored" on stderr and exit 120."""
    _stand_in_for_closed_streams()
    try:
        try:
            code = _main(argv)
        except SystemExit:  # argparse's --help, --version and usage errors
            sys.stdout.flush()
            raise
        sys.stdout.flush()
    except OSError as exc:
        lost = _output_lost(exc)
        if lost is None:
            raise
        return lost
    return code


def _output_lost(exc: OSError) -> int | None:
    """The exit code for ``exc`` if it is a write to stdout that failed (None if not), said
    as the README promises: a pipe's reader gone quietly, a full disk in one sentence.
    stdout then points at /dev/null, so that the interpreter's last flush of what could not
    be written does not raise again on the way out."""
    if isinstance(exc, BrokenPipeError):
        # The reader went away (`webward fetch URL | head`): stop quietly, as a tool killed
        # by SIGPIPE would.
        _silence_stdout()
        return 141
    if exc.errno not in _WRITE_FAILURES and not isinstance(exc, _StreamClosed):
        return None
    _silence_stdout()
    with contextlib.suppress(OSError):
        print(f"webward: could not write the output ({exc.strerror})", file=sys.stderr)
    return 1


def _main(argv: Sequence[str] | None) -> int:
    if argv is None:
        argv = [_utf8_argument(arg) for arg in sys.argv[1:]]
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # told by the command's own parser, whose usage names its options
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    as_json = bool(getattr(args, "json", False))
    _replace_unencodable(as_json)
    terminated: list[int] = []
    loaded: list[str] = []  # the config file the settings came from ("" for none)
    _begun[0] = True  # from here Ctrl-C is answered below, not by _program's "before any call"
    try:
        # A store's own lines repeat the refusal at the terminal: shown by servers, or asked for.
        store_lines = args.command in SERVERS or bool(getattr(args, "verbose", False))
        with (
            _quiet_libraries(store_lines),
            _collector_paused(args.command in ONE_SHOT),
            _terminate_as_interrupt(terminated),
        ):
            try:
                settings = _settings_for(args)
                loaded.append(settings.source)
                code: int = args._module.run(args, settings)
                if dropped_interrupt() is not None and code < 128:
                    # Ctrl-C came, and was dropped: ended as it asked, but the command has
                    # answered (its call, if any, audited as what it was). Said on stderr as
                    # such, not as a call cancelled: with --json, a cancelled error after the
                    # answer put two JSON objects on stdout.
                    with contextlib.suppress(OSError, ValueError):
                        print(f"webward: {_ANSWERED_THEN_INTERRUPTED}", file=sys.stderr)
                    return 128 + signal.SIGINT
            finally:
                _flush_traces()  # while the records the exporter logs are still throttled
    except WebwardError as exc:
        if isinstance(exc, InvalidInput):
            flags = dict(getattr(args._module, "FLAG_NAMES", {}))
            if hasattr(args, "session"):
                flags["session"] = "--session"  # every command with a session spells it so
            exc.message = _flags_named(exc.message, flags)
        if loaded and _CONFIG_WORDS in exc.message:
            exc.message = exc.message.replace(
                _CONFIG_WORDS, f"{_CONFIG_WORDS} file {_config_file(loaded[0])}"
            )
        return report_error(exc, as_json)
    except KeyboardInterrupt as exc:
        code = 128 + getattr(exc, "signum", terminated[0] if terminated else signal.SIGINT)
        return _answer_interrupt(code, args.command, as_json)
    except OSError as exc:
        lost = _output_lost(exc)
        return report_error(internal_error(exc), as_json) if lost is None else lost
    except Exception as exc:  # a bug: one sentence (code internal_error), never a traceback
        if _interrupt_inside(exc):
            code = 128 + (terminated[0] if terminated else signal.SIGINT)
            return _answer_interrupt(code, args.command, as_json)
        return report_error(_missing_package(exc) or internal_error(exc), as_json)
    return code


_ANSWERED_THEN_INTERRUPTED = "interrupted (Ctrl-C) as the command ended, after its answer"


def _answer_interrupt(code: int, command: str, as_json: bool) -> int:
    forget_unhandled_interrupt()
    if as_json:  # a script reading stdout gets an answer, as for every other failure
        _print_interrupted(code)
    else:  # the person (or a supervisor's log) is told what became of the call
        _say_interrupted(code, command)
    return code


def _interrupt_inside(exc: Exception) -> bool:
    """Whether ``exc`` is a library's report of the Ctrl-C that struck inside it: pydantic-core
    builds a model's schema when its class is made (the MCP SDK's hundreds, while `webward
    mcp` imports it) and turns an exception raised meanwhile into a SchemaError naming it, so
    Ctrl-C pressed then was "webward failed unexpectedly (SchemaError); this is a bug", exit
    1. Also an exception raised while a KeyboardInterrupt was handled, or from one."""
    seen: BaseException | None = exc
    for _ in range(10):  # a chain, never a cycle walked for ever
        if seen is None:
            return False
        if isinstance(seen, KeyboardInterrupt):
            return True
        if type(seen).__name__ == "SchemaError" and "KeyboardInterrupt" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _missing_package(exc: Exception) -> WebwardError | None:
    """The answer to a package webward needs that cannot be imported (an install cut short,
    a dependency uninstalled since): "a bug in webward" gave the person no next step, where
    the package's name and pip's command are the whole of it. The extras' packages are
    named before this, each with its extra."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    package = exc.name.partition(".")[0]
    if not package.isidentifier():
        return None
    # This interpreter by its path: a `python3` found first on PATH may be another one's.
    python = sys.executable if sys.executable and " " not in sys.executable else "python3"
    return WebwardError(
        f"webward could not import {package}, a package it needs: this Python's install of "
        f"webward is incomplete; install what is missing with `{python} -m pip install "
        "webward` (or reinstall webward as it was installed)",
        code="internal_error",
        reason=Reason.INTERNAL_ERROR,
    )


def _settings_for(args: argparse.Namespace) -> Settings:
    """The config the command line names, loaded; or, for a command that reads none (a
    module's ``reads_config(args)`` says so: `credentials`, `serve --hash-token`), the
    defaults, so that a config being written, and broken for now, does not stop the very
    commands that help write it (a token's hash, a key stored)."""
    from ._settings import Settings  # not for `webward --help`

    reads_config = getattr(args._module, "reads_config", None)
    if reads_config is not None and not reads_config(args):
        _warn_unknown_variables(())
        return Settings()
    try:
        settings = Settings.load(None if args.config is None else _file_name(args.config))
    except InvalidInput:
        _warn_unknown_variables(())  # a typo may be why: said before the refusal
        raise
    _warn_unknown_variables((settings.audit.postgres_dsn_env,))
    return settings


def _warn_unknown_variables(also: tuple[str, ...]) -> None:
    """One line on stderr for each WEBWARD_* variable webward does not read (a typo)."""
    from ._settings import unknown_variables

    for sentence in unknown_variables(os.environ, also):
        with contextlib.suppress(OSError, ValueError):
            print(f"webward: warning: {sentence}", file=sys.stderr, flush=True)


# Whether main() runs as the program (run()), which exits when it returns, rather than inside
# a process that goes on (a test), whose signal handlers must be left as they were.
_as_program = [False]
# Whether main() has reached the command's own run, where it answers Ctrl-C itself: one that
# escapes main() earlier (the arguments being read) is _program's to say, before any call.
_begun = [False]


def run() -> NoReturn:
    """``webward`` as a program (the console script, ``python -m webward``): :func:`main`,
    then exit. The objects left are frozen first, so that the interpreter's last collection
    skips them: it would walk every object the imports made (about 20 ms after a small read)
    and find next to no garbage. Exit handlers still run and the streams are still flushed."""
    _as_program[0] = True
    code = main()
    gc.freeze()
    sys.exit(code)


# How a refusal names the config an operator edits (guard's "[network] allow_ranges of the
# config"): at the terminal, the file itself is named, as `serve` and `mcp` do.
_CONFIG_WORDS = "allow_ranges of the config"


def _config_file(source: str) -> str:
    """The config file the settings came from, else the one the command line would read
    (not there yet: the operator creates it)."""
    if source:
        return source
    if os.environ.get("WEBWARD_CONFIG"):
        return os.environ["WEBWARD_CONFIG"]
    from ._settings import NoHome, user_dir

    try:
        path = str(user_dir("config") / "webward.toml")
    except NoHome:
        return "named with --config (none is found without a home directory)"
    home = os.path.expanduser("~")
    if home not in ("", "~", "/") and path.startswith(home + os.sep):
        path = "~" + path[len(home) :]
    return path


def _utf8_argument(arg: str) -> str:
    """A command-line argument whose bytes the locale's encoding could not decode (ASCII
    under the C locale without UTF-8 mode: "café" arrives as ``caf\\udcc3\\udca9``) decoded
    as UTF-8, the encoding a terminal most likely typed it in: the query was sent as
    ``caf\\ufffd\\ufffd`` and audited with the surrogates, neither what was typed. Bytes
    that are no UTF-8 either are left as they were (a URL holding one is refused by name)."""
    if not any("\udc80" <= c <= "\udcff" for c in arg):
        return arg
    return os.fsencode(arg).decode("utf-8", "surrogateescape")


def _file_name(arg: str) -> str:
    """A file's name as typed, as the filesystem takes it: :func:`_utf8_argument` decoded
    its bytes as UTF-8, which an ASCII filesystem encoding (the C locale without UTF-8 mode)
    cannot encode again, and ``--config /srv/café/webward.toml`` was said not to exist. The
    bytes typed are the file's name, whatever the locale."""
    try:
        os.fsencode(arg)
    except UnicodeEncodeError:
        return os.fsdecode(arg.encode("utf-8", "surrogateescape"))
    return arg


def _replace_unencodable(as_json: bool = False) -> None:
    """Text the output's encoding cannot hold (a page's "é" on an ASCII terminal) written as
    ``\\xe9`` rather than ending the command in a UnicodeEncodeError, after the call was
    made and audited, with a false bug report. Under ``--json`` stdout carries JSON only, and
    such a character is written as JSON's ``\\u00e9`` instead, whatever the stream's error
    mode was (``\\xe9`` inside a JSON string is no JSON); :func:`print_json` already
    writes it so, and this keeps every other JSON a command prints valid too."""
    for stream in (sys.stdout, sys.stderr):
        if as_json and stream is sys.stdout:
            _register_json_escapes()
            with contextlib.suppress(AttributeError, ValueError, OSError):
                stream.reconfigure(errors=_JSON_ESCAPES)  # type: ignore[union-attr]
        elif _may_fail(stream):
            with contextlib.suppress(AttributeError, ValueError, OSError):
                stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]


def _may_fail(stream: object) -> bool:
    """Whether writing text to ``stream`` can raise UnicodeEncodeError: its errors are
    "strict", or "surrogateescape" (Python's choice under the C locale) with an encoding
    that cannot hold every character (ASCII there: a page's "é" ended the command as "a
    bug", after the read was made and audited). UTF-8 with surrogateescape writes all
    text, and keeps writing back the bytes of an undecodable argument as they came."""
    errors = getattr(stream, "errors", None)
    if errors == "strict":
        return True
    if errors != "surrogateescape":
        return False
    try:
        "\u00e9\U0001f600".encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeError, LookupError):
        return True
    return False


# Every character JSON output writes as a \u escape even where the stream could carry it:
# C1 controls and DEL (C0 ones json.dumps escapes itself), bidi controls and marks, the line
# and paragraph separators, the other invisible format characters (Unicode's Cc, Cf, Zl and
# Zp, checked by a test) and lone surrogates. A page, a provider or an agent chose them, and on
# a terminal they move the cursor, rewrite lines or reorder what is shown.
_ESCAPED_IN_JSON = re.compile(
    "[\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001345f\U0001bca0-\U0001bca3"
    # Shown as nothing, though not format characters: the grapheme joiner, Hangul fillers,
    # the blank Braille pattern, variation selectors (which can carry bytes unseen).
    "\u034f\u115f\u1160\u3164\uffa0\u2800\ufe00-\ufe0f\U000e0100-\U000e01ef"
    "\U0001d173-\U0001d17a\U000e0000-\U000e007f]"
)


def _u_escape(text: str) -> str:
    """``text`` as JSON's ``\\uXXXX`` escapes (a character past U+FFFF as its two
    surrogates' escapes, as JSON spells it)."""
    out = []
    for c in text:
        n = ord(c)
        if n > 0xFFFF:
            n -= 0x10000
            out.append(f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}")
        else:
            out.append(f"\\u{n:04x}")
    return "".join(out)


def json_text(value: Any, *, indent: int | None = None, encoding: str | None = None) -> str:
    """``value`` as the JSON the command line prints: UTF-8 text as it is, but what could
    drive a terminal (:data:`_ESCAPED_IN_JSON`) as ``\\u`` escapes, and, for a stream whose
    ``encoding`` cannot carry the text, every character past ASCII as one. Valid JSON either
    way, which reads back to the same values."""
    import json

    text = json.dumps(value, ensure_ascii=False, indent=indent)
    if text.isascii() and "\x7f" not in text:
        return text
    text = _ESCAPED_IN_JSON.sub(lambda m: _u_escape(m.group()), text)
    if encoding is not None and not text.isascii():
        try:
            text.encode(encoding)
        except (UnicodeError, LookupError):  # an ASCII or Latin-1 stream: escapes only
            text = json.dumps(value, ensure_ascii=True, indent=indent).replace("\x7f", "\\u007f")
    return text


def print_json(value: Any, *, indent: int | None = None, flush: bool = False) -> None:
    """Print ``value`` as JSON on stdout (:func:`json_text`): the one place the command line
    writes JSON, so that it is valid whatever the stream's encoding."""
    stream = sys.stdout
    encoding = getattr(stream, "encoding", None) or "utf-8"
    print(json_text(value, indent=indent, encoding=encoding), flush=flush)


_JSON_ESCAPES = "webward.json"


def _json_escapes(exc: UnicodeError) -> tuple[str, int]:
    """The codec error handler of :data:`_JSON_ESCAPES`: what the encoding cannot hold, as
    JSON's ``\\u`` escapes."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return _u_escape(exc.object[exc.start : exc.end]), exc.end


def _register_json_escapes() -> None:
    import codecs

    try:
        codecs.lookup_error(_JSON_ESCAPES)
    except LookupError:
        codecs.register_error(_JSON_ESCAPES, _json_escapes)


def is_closed(stream: object) -> bool:
    """Whether ``stream`` stands in for a standard stream the process was started without."""
    return isinstance(stream, _ClosedStream)


class _StreamClosed(OSError):
    """A write to stdout when it was closed (``webward fetch URL >&-``)."""


class _ClosedStream(io.TextIOBase):
    """What stands in for a standard stream the process started without (``>&-``, ``2>&-``),
    where Python leaves ``None``: print() then wrote to nothing and the command exited 0 with
    its output lost, and ``print(..., file=sys.stderr)`` wrote to stdout. Writing to stdout
    raises (the output is lost: "could not write the output", exit 1, as on a full disk);
    what is meant for stderr is dropped (the exit code still says what happened)."""

    def __init__(self, name: str, *, fails: bool) -> None:
        super().__init__()
        self._name = name
        self._fails = fails

    def write(self, text: str) -> int:
        if self._fails and text:
            raise _StreamClosed(errno.EBADF, f"{self._name} is closed")
        return len(text)

    def flush(self) -> None:
        pass


def _stand_in_for_closed_streams() -> None:
    """A standard stream the process was started without: its file descriptor opened on
    /dev/null, so that a file opened later (the audit log, a socket) cannot get it and
    receive what is written to fd 1 or 2 (the signal handler's notes are), and a
    :class:`_ClosedStream` for ``sys.stdout`` and ``sys.stderr``. A file the interpreter
    opened as it started can already hold such a descriptor (``2>&-``: Python then wraps a
    file it reads as ``sys.stderr``, and every write to it fails): a stream whose descriptor
    is not open for writing counts as closed too, its descriptor left to whoever holds it."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None and (name == "stdin" or _writable(fd)):
            continue
        try:
            os.fstat(fd)
        except OSError:
            with contextlib.suppress(OSError):
                null = os.open(os.devnull, os.O_RDWR)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
        if name != "stdin":
            setattr(sys, name, _ClosedStream(name, fails=name == "stdout"))


def _writable(fd: int) -> bool:
    """Whether descriptor ``fd`` is open for writing (where the platform can tell)."""
    try:
        import fcntl
    except ImportError:  # Windows: no way to ask, as before
        return True
    try:
        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except OSError:
        return False
    return mode in (os.O_WRONLY, os.O_RDWR)


def _flags_named(message: str, flags: dict[str, str]) -> str:
    """A refusal of input whose subject is one of the core's argument names (``max_chars
    must be ...``) with the flag the person typed (``--max-chars must be ...``) instead, as
    the gateway spells its body's fields."""
    name, space, rest = message.partition(" ")
    # "max_chars must ...", and a subject with its value: "offset 99999 is past the end".
    said = rest.startswith(("must ", "takes ", "is ")) or _VALUE_IS.match(rest)
    if space and name in flags and said:
        return f"{flags[name]} {rest}"
    both = _EITHER.fullmatch(message)  # "pass either offset or query, not both: query ..."
    if both and both["one"] in flags and both["other"] in flags:
        one, other = flags[both["one"]], flags[both["other"]]
        why = both["why"].replace(f"{both['other']} ", f"{other} ", 1)
        return f"pass either {one} or {other}, not both{why}"
    return message


# A value shown whole, or cut as the core shows a long one ("999999… (23 digits) is").
_VALUE_IS = re.compile(r"[0-9]+(?:… \([0-9]+ digits\))? is ")
_EITHER = re.compile(r"pass either (?P<one>\w+) or (?P<other>\w+), not both(?P<why>(?::.*)?)")


def refuse_call_log_on_json_stdout(as_json: bool, web: Any, settings: Settings) -> None:
    """With ``--json`` stdout carries one JSON object: a call log there (``/dev/stdout``)
    would put its lines beside it, so the command is refused before any call."""
    if as_json and web.telemetry.logs_to(1):
        from ._telemetry import stdout_taken

        raise stdout_taken(settings, "this command's", "its JSON answer")


def empty_tier(tier: str | None) -> InvalidInput | None:
    """The refusal of ``--tier ""``, which the core would read as "no tier given" and answer
    with the agent's default in silence, while ``--tier bogus`` is refused."""
    if tier is None or tier.strip():
        return None
    from ._settings import TIERS

    return InvalidInput(
        f"--tier is empty; name one of {', '.join(TIERS)}, or leave it out for the agent's tier"
    )


def _interrupted_message(code: int) -> str:
    # `ask` may be waiting on its model, with no call of webward's in flight.
    return (
        f"{_ended_by(code - 128)}: stopped; a call in flight, if any, was cancelled and "
        "audited as cancelled"
    )


def _say_interrupted(code: int, command: str) -> None:
    """The one sentence on stderr for a command a signal ended without ``--json``: exit 130
    alone left the person at the terminal (and a supervisor's log) with nothing to say
    whether the call in flight was lost or audited. A server's calls in flight were
    answered, or cancelled, in its graceful shutdown; the console, `audit` and `credentials`
    make no calls."""
    if command == "console":
        said = f"webward console: {_ended_by(code - 128)}: stopped"
    elif command in ("audit", "credentials"):
        said = f"webward: {_ended_by(code - 128)}: stopped"
    elif command in SERVERS:
        said = (
            f"webward {command}: {_ended_by(code - 128)}: stopped; calls in flight were "
            "answered, or cancelled, and audited"
        )
    else:
        said = f"webward: {_interrupted_message(code)}"
    with contextlib.suppress(OSError, ValueError):
        print(said, file=sys.stderr, flush=True)


def _print_interrupted(code: int) -> None:
    error = {
        # Not one of the agents' wire codes: no agent face answers a cancelled call (its
        # client left); only a script that ran the command reads this.
        "code": "cancelled",
        "message": _interrupted_message(code),
    }
    with contextlib.suppress(OSError, ValueError):
        print_json({"error": error}, flush=True)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, SIGTERM or another of :data:`~webward._signals.ENDING_SIGNALS` ended a call
    run by :func:`run_call`; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def run_call(func: Callable[..., Awaitable[int]], *args: Any) -> int:
    """``anyio.run(func, *args)`` for a command that makes one audited call (fetch, search),
    with Ctrl-C, SIGTERM and the rest of :data:`~webward._signals.ENDING_SIGNALS` taken over
    while it runs.

    asyncio's own handler cancels the call at the first Ctrl-C and raises KeyboardInterrupt
    wherever the loop is at the second: in the shielded write of the cancelled call's audit
    record (lost), or inside anyio's cancellation machinery, which then spun at full CPU or
    left a worker thread the interpreter waited for at exit. Here the first signal cancels
    the call from within the loop (``call_soon_threadsafe``), and later ones are only noted:
    the record's write is bounded (``_web._UNEXPECTED_AUDIT_S``), so the call ends soon; if
    it has not ended :data:`_INTERRUPT_GRACE_S` after the first signal, the process stops
    anyway, with the exit code of the signal. Raises :class:`Interrupted` once the call has
    ended. A job started in the background keeps SIGINT ignored."""
    import anyio

    if threading.current_thread() is not threading.main_thread():
        return anyio.run(func, *args)
    state = _Interrupts()
    # A Ctrl-C Python had to drop before this (raised inside an import's callback): the
    # call does not begin, as if it had come now.
    state.signum = dropped_interrupt()

    async def call() -> int | None:
        import asyncio

        state.task = asyncio.current_task()
        state.loop = asyncio.get_running_loop()
        try:
            if state.signum is not None:  # a signal before the call began: nothing to audit
                return None
            return await func(*args)
        finally:
            state.loop = None  # a signal from now on finds no call to cancel

    # SIGINT only while it is Python's own (not SIG_IGN, nor a handler someone else set).
    handlers = {s: signal.getsignal(s) for s in taken_signals(but=(signal.SIGINT,))}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        handlers[signal.SIGINT] = signal.default_int_handler
    try:
        for signum in handlers:
            signal.signal(signum, state.handle)
        code = anyio.run(call)
    except BaseException:
        if state.signum is None:
            raise
        code = None
    finally:
        # A program that was interrupted ends now: Ctrl-C pressed again has nothing left to
        # cancel, and would otherwise print a traceback from the way out, or (once the
        # interpreter reset its handlers) kill it with the output half written.
        ending = state.signum is not None and _as_program[0]
        for signum, previous in handlers.items():
            signal.signal(signum, signal.SIG_IGN if ending else previous)
        if state.watchdog is not None:
            state.watchdog.cancel()
    if code is None:  # the call was cancelled (or a signal came before it began)
        assert state.signum is not None
        raise Interrupted(state.signum)
    # A signal that came once the call was over, or before its cancellation reached it, ended
    # nothing: the call is answered and audited as what it was, not said to be cancelled.
    return code


# How long an interrupted call may take to end before the process stops without it: the
# core bounds the write of its cancelled record at 10 s (_web._UNEXPECTED_AUDIT_S), and the
# stores it closes next at a few more.
_INTERRUPT_GRACE_S = 20.0


class _Interrupts:
    """The signal handler of :func:`run_call` and what it knows."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.task: Any = None
        self.loop: Any = None
        self.watchdog: threading.Timer | None = None
        self.noted = False

    def handle(self, signum: int, frame: Any) -> None:
        if self.signum is not None:
            # The call is being cancelled and its record written: a second Ctrl-C raising
            # KeyboardInterrupt now would lose the record. Said once, so the person knows.
            if not self.noted:
                self.noted = True
                with contextlib.suppress(OSError):  # os.write: no buffered stream in a handler
                    os.write(
                        2,
                        b"webward: interrupted; ending the call and writing its audit "
                        b"record first\n",
                    )
            return
        self.signum = signum
        loop, task = self.loop, self.task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed in between
                loop.call_soon_threadsafe(task.cancel)
        self.watchdog = threading.Timer(_INTERRUPT_GRACE_S, self._give_up)
        self.watchdog.daemon = True
        self.watchdog.start()

    def _give_up(self) -> None:
        with contextlib.suppress(OSError):
            os.write(
                2,
                f"webward: the interrupted call did not end within {_INTERRUPT_GRACE_S:.0f} s; "
                "stopping without waiting for it\n".encode(),
            )
        os._exit(128 + (self.signum or signal.SIGINT))


@contextlib.contextmanager
def _terminate_as_interrupt(terminated: list[int]) -> Iterator[None]:
    """SIGTERM (a supervisor, ``kill``, a container stopping), SIGHUP (the terminal closed)
    and the rest of :data:`~webward._signals.ENDING_SIGNALS` end a command as Ctrl-C does:
    the call in flight is cancelled and audited as ``cancelled``, where the default action
    killed the process with the record unwritten. SIGINT's handler of the moment takes it
    (asyncio's cancels the main task, then raises KeyboardInterrupt), called directly: a job
    started in the background has SIGINT ignored, and SIGTERM must still end it. The exit code is then
    128 + the signal's number (143 for SIGTERM, 129 for SIGHUP). Servers take the same
    signals into uvicorn's graceful shutdown (``_serving.serve``), which raises the signal
    again here once it is done. In the main thread only, as signal handlers must be."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        terminated.append(signum)
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler):  # ignored, or the default of a process that never set one
            raise KeyboardInterrupt
        handler(signal.SIGINT, frame)

    previous = {s: signal.signal(s, interrupt) for s in taken_signals(but=(signal.SIGINT,))}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def _collector_paused(paused: bool) -> Iterator[None]:
    """The cyclic garbage collector off for the block if ``paused`` (see :data:`ONE_SHOT`),
    then as it was (``main`` also runs inside test processes)."""
    if not paused or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _flush_traces() -> None:
    telemetry = sys.modules.get("webward._telemetry")  # imported by every command that traces
    if telemetry is not None:
        telemetry.flush_tracing()


def _own_records(record: logging.LogRecord) -> bool:
    if record.name == "webward" or record.name.startswith("webward."):
        return True
    # The trace exporter failing (a collector down, a 500) is the operator's to know; one
    # such line a minute, not one a batch. Only the export pipeline's: the API's other
    # loggers say what a caller sent (a malformed tracestate member of a gateway header or an
    # MCP request's _meta, verbatim), which wrote an agent's escape sequences and forged lines
    # to the server's log and took the minute's line from the exporter's failure.
    if record.name.startswith(_EXPORT_LOGGERS) and record.levelno >= 30:  # WARNING and up
        import time

        now = time.monotonic()
        if now - _exporter_said[0] >= _EXPORTER_QUIET_S:
            _exporter_said[0] = now
            # Its line names the collector's URL (urllib3's "with url: /v1/traces?api_key=
            # ..."): a key in its query would be in every server log that line reaches.
            from ._redact import redact_message

            text = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                # The batch processor's "Exception while exporting": the exception, not its
                # traceback, which a server's log has no use for.
                error = record.exc_info[1]
                text = f"{text} ({type(error).__name__}: {error})"
            record.exc_info, record.exc_text, record.stack_info = None, None, None
            # One line of text: the collector's answer (its reason phrase) is the far side's.
            text = _CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode(), text)
            record.msg, record.args = redact_message(text), None
            return True
    return False


_EXPORTER_QUIET_S = 60.0
_exporter_said = [-_EXPORTER_QUIET_S]
#: The loggers of OpenTelemetry's trace export: the exporters and the span processors.
_EXPORT_LOGGERS = (
    "opentelemetry.exporter.",
    "opentelemetry.sdk._shared_internal",
    "opentelemetry.sdk.trace.export",
)
#: C0 and C1 controls, and the bidi controls and marks, written as their escapes.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _not_a_store_line(record: logging.LogRecord) -> bool:
    """Whether ``record`` is not a shared store's failure or recovery line (``STORE_HEALTH``):
    at the command line the refusal that follows says the same, and the README promises one
    sentence on stderr (a call that goes on after a store came back needs no line either)."""
    return not getattr(record, "store_health", False)


@contextlib.contextmanager
def _quiet_libraries(store_lines: bool) -> Iterator[None]:
    """Libraries' warnings and log records are for their developers, not for the person at
    the terminal, who gets webward's one sentence: while a command runs, only webward's own
    records (WARNING and up) reach stderr, without a store's failure lines unless
    ``store_lines``, and warnings are shown only when asked for with ``python -W``."""
    import logging  # not for `webward --help`

    handler = logging.StreamHandler()  # stderr, as logging's last resort would print
    handler.setLevel(logging.WARNING)
    handler.addFilter(_own_records)
    if not store_lines:
        handler.addFilter(_not_a_store_line)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with warnings.catch_warnings():
            if not sys.warnoptions:
                warnings.simplefilter("ignore")
            yield
    finally:
        root.removeHandler(handler)


if __name__ == "__main__":
    run()
