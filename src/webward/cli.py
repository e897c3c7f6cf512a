"""The ``webward`` command line: one subcommand per ``_cmd_<name>`` module.

Each command module exposes ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args, settings) -> int``. Every command takes ``--config FILE``. Exit codes: 0 done,
1 upstream failure, 2 bad usage or input, 3 refused.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from types import ModuleType

from ._errors import InvalidInput, Refused, UpstreamError, WebwardError, internal_error
from ._settings import Settings

__all__ = ["exit_code", "main", "report_error"]

# The order is the order of `webward --help`.
COMMANDS = ("fetch", "search", "audit", "credentials", "ask", "mcp", "serve", "console")

EPILOG = """\
exit codes: 0 read or searched; 1 upstream failure (timeout, HTTP or provider error);
2 bad usage or input; 3 refused (policy, guard, rate limit, circuit open, not configured).

configuration: --config FILE, else $WEBWARD_CONFIG, else the user config dir; a webward.toml
in the working directory is read only when named with --config. WEBWARD_* variables override
single settings (WEBWARD_TIER, WEBWARD_ALLOW_RANGES, WEBWARD_STATE_DIR, ...). Credentials
never live in the config file.
"""


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
    """Print ``error`` for people (stderr) or scripts (the error model on stdout)."""
    if as_json:
        print(json.dumps(error.to_wire(), ensure_ascii=False))
    else:
        print(f"webward: {error.message}", file=sys.stderr)
    return exit_code(error)


def _modules() -> list[tuple[str, ModuleType]]:
    found = []
    for name in COMMANDS:
        try:
            found.append((name, importlib.import_module(f"webward._cmd_{name}")))
        except ModuleNotFoundError as exc:
            if exc.name != f"webward._cmd_{name}":
                raise  # a command whose own dependency is missing must say so, not vanish
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="webward",
        description="The one audited door through which AI agents read the public web and search it.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"webward {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in _modules():
        p = sub.add_parser(
            name,
            help=module.HELP,
            description=getattr(module, "DESCRIPTION", module.HELP),
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument("--config", metavar="FILE", help="the config file (TOML) to read")
        module.add_arguments(p)
        p.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    as_json = bool(getattr(args, "json", False))
    try:
        settings = Settings.load(args.config)
        code: int = args._module.run(args, settings)
    except WebwardError as exc:
        return report_error(exc, as_json)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug: one sentence (code internal_error), never a traceback
        return report_error(internal_error(exc), as_json)
    return code


if __name__ == "__main__":
    sys.exit(main())
