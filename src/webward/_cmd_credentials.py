"""``webward credentials set|get|delete|list``: keys for search and model providers.

A secret is read from stdin (when it is not a terminal) or a hidden prompt, never from the
command line, where it would land in shell history and the process list.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ._errors import InvalidInput, Refused

if TYPE_CHECKING:  # imported when the command runs, not for `webward --help`
    from ._credentials import ChainedStore
    from ._settings import Settings

HELP = "store, show (masked), delete or list search and model API keys"
DESCRIPTION = """\
Keys are looked up in the environment, then the OS keyring, then a file only you can read
(mode 0600) in the user config dir. `set NAME` reads the key from stdin or a hidden prompt and
writes the file (or the OS keyring with --keyring); `get NAME` shows it masked; `delete NAME`
removes it from the keyring and the file; `list` shows which keys are set and where.
Names: BRAVE_SEARCH_API_KEY, TAVILY_API_KEY, ANTHROPIC_API_KEY, OPENAI_API_KEY. --json prints
one JSON document instead (keys masked): `list` an array of {"name", "set", "masked",
"source", "path"}, `get` one of them, `set` and `delete` what was done."""

ACTIONS = ("set", "get", "delete", "list")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=ACTIONS, metavar="ACTION", help="set, get, delete or list")
    p.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="the key's name, e.g. TAVILY_API_KEY (set, get and delete need one)",
    )
    # Caught so a key typed on the command line is refused without being echoed back.
    p.add_argument("extra", nargs="*", default=[], help=argparse.SUPPRESS)
    p.add_argument(
        "--keyring", action="store_true", help="set: store in the OS keyring instead of the file"
    )
    p.add_argument(
        "--json", action="store_true", help="print one JSON document (keys masked) for scripts"
    )


CONFIG_HELP = "taken as every command takes it, and not read: keys never live in the config"


def reads_config(args: argparse.Namespace) -> bool:
    """Whether this command line reads the config: keys never live there."""
    return False


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ._credentials import default_store

    return run_with(args, default_store())


def run_with(args: argparse.Namespace, store: ChainedStore) -> int:
    """``run`` against a given store (the tests pass one with a temporary file)."""
    if args.extra:
        raise InvalidInput(
            "refused to take a key from the command line (it would stay in shell history); "
            "pipe it on stdin or type it at the prompt, and if that was a real key, rotate it"
        )
    if args.keyring and args.action != "set":
        # Taken and ignored, `get --keyring` read as "the key in the keyring" while it showed
        # the environment's or the file's, and `list --keyring` as the keyring's keys alone.
        raise InvalidInput(
            f"--keyring applies to `webward credentials set` only; `{args.action}` looks in "
            "the environment, the OS keyring and the credential file (leave --keyring out)"
        )
    as_json = bool(getattr(args, "json", False))
    if args.action == "list":
        if args.name:
            raise InvalidInput("`webward credentials list` takes no NAME")
        return _list(store, as_json)
    if not args.name:
        raise InvalidInput(f"`webward credentials {args.action}` needs a NAME, e.g. TAVILY_API_KEY")
    from ._credentials import check_name

    name = check_name(args.name)
    if args.action != "delete":  # deleting a mistyped name is how a typo is cleaned up
        _warn_unknown(name)
    if args.action == "set":
        return _set(store, name, args.keyring, as_json)
    if args.action == "get":
        return _get(store, name, as_json)
    return _delete(store, name, as_json)


def _warn_unknown(name: str) -> None:
    """A name webward never reads is most often a typo: say so, and which name was meant."""
    from ._credentials import KNOWN_NAMES

    if name in KNOWN_NAMES:
        return
    import difflib

    close = difflib.get_close_matches(name, KNOWN_NAMES, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    print(
        f"webward: warning: webward does not read {name}; {hint}"
        f"the names it reads are {', '.join(KNOWN_NAMES)}",
        file=sys.stderr,
    )


#: The longest line read from stdin as a key (``serve --hash-token`` reads its token so too).
MAX_STDIN_CHARS = 64 * 1024


def read_stdin_line(what: str) -> str:
    """The one line stdin holds, blank lines and blanks around it left out ("" if there is
    none), read up to :data:`MAX_STDIN_CHARS`: an endless stdin (``< /dev/zero``) grew
    without bound. ``what`` names it ("key", "token") in the refusals of a longer stdin and
    of one holding two lines: only the first was taken, and a file of several keys piped in
    stored its first line as the key without a word."""
    stdin = sys.stdin
    if stdin is None:
        text = ""
    elif stdin.isatty():
        # A person typing (`serve --hash-token` at a terminal): the line ends at Enter. Read to
        # the end, the command waited for a Ctrl-D that nothing asked for.
        text = stdin.readline(MAX_STDIN_CHARS + 2)
    else:
        text = stdin.read(MAX_STDIN_CHARS + 2)
    value = text.strip()
    if len(value) > MAX_STDIN_CHARS or len(text) > MAX_STDIN_CHARS + 1:
        raise InvalidInput(
            f"the {what} on stdin is longer than 64 KiB, which no {what} is; pipe the {what} itself"
        )
    if "\n" in value or "\r" in value:
        raise InvalidInput(
            f"stdin holds more than one line, and a {what} is one; pipe the {what} alone"
        )
    return value


def _read_secret(name: str) -> str:
    from ._credentials import fits_a_header

    if sys.stdin is not None and sys.stdin.isatty():
        import getpass

        try:
            value = getpass.getpass(f"{name}: ")
        except EOFError:  # Ctrl-D at the prompt: no key, as an empty line is
            value = ""
    else:
        value = read_stdin_line("key")
    value = value.strip()
    if not value:
        raise InvalidInput(
            f"no key was given for {name}; pipe it on stdin or type it at the prompt"
        )
    if not fits_a_header(value):
        raise InvalidInput(
            "a key is one word of printable ASCII, without spaces, control or non-ASCII "
            "characters (it travels in an HTTP header)"
        )
    return value


def _store_of(store: ChainedStore, kind: type) -> object:
    return next((s for s in store.stores if isinstance(s, kind)), None)


def _set(store: ChainedStore, name: str, use_keyring: bool, as_json: bool) -> int:
    from ._credentials import EnvironmentStore, FileStore, KeyringStore, mask

    value = _read_secret(name)
    if use_keyring:
        target = _store_of(store, KeyringStore)
        if not isinstance(target, KeyringStore):
            raise Refused("refused: no OS keyring is configured", reason="keyring_unavailable")
        target.set(name, value)
        where, source, path = "the OS keyring", "keyring", None
    else:
        store.set(name, value)
        file_store = _store_of(store, FileStore)
        path = str(file_store.path) if isinstance(file_store, FileStore) else None
        where, source = path or "the credential store", "file"
    env = _store_of(store, EnvironmentStore)
    shadowed = isinstance(env, EnvironmentStore) and bool(env.get(name))
    if as_json:
        _print_json(
            {"name": name, "stored": True, "masked": mask(value), "source": source}
            | {"path": path, "environmentTakesPrecedence": shadowed}
        )
        return 0
    print(f"stored {name} ({mask(value)}) in {where}")
    if shadowed:
        print(f"note: {name} is also set in the environment, which takes precedence")
    return 0


def _print_json(value: object) -> None:
    from .cli import print_json

    print_json(value)


def _entry(name: str, found: tuple[str, object] | None) -> dict[str, object]:
    """``--json``'s account of one key: whether it is set, masked, and the store it is in."""
    from ._credentials import FileStore, mask

    if found is None:
        return {"name": name, "set": False, "masked": None, "source": None, "path": None}
    value, store = found
    path = str(store.path) if isinstance(store, FileStore) else None
    source = str(getattr(store, "kind", "store"))
    return {"name": name, "set": True, "masked": mask(value), "source": source, "path": path}


def _describe(store: object) -> str:
    from ._credentials import FileStore

    if isinstance(store, FileStore):
        return f"file {store.path}"
    return str(getattr(store, "kind", "store"))


def _get(store: ChainedStore, name: str, as_json: bool) -> int:
    from ._credentials import mask

    found = store.lookup(name)
    if found is None:
        raise Refused(
            f"{name} is not set in the environment, the OS keyring or the credential file; "
            f"run `webward credentials set {name}`",
            code="not_configured",
            reason="not_configured",
        )
    if as_json:
        _print_json(_entry(name, found))
        return 0
    value, source = found
    print(f"{name}: {mask(value)} (from {_describe(source)})")
    return 0


def _delete(store: ChainedStore, name: str, as_json: bool) -> int:
    from ._credentials import EnvironmentStore

    removed = store.delete(name)
    env = _store_of(store, EnvironmentStore)
    still = isinstance(env, EnvironmentStore) and bool(env.get(name))
    if as_json:
        _print_json({"name": name, "deleted": bool(removed), "stillInEnvironment": still})
        return 0
    print(
        f"deleted {name}"
        if removed
        else f"{name} was not stored in the OS keyring or the credential file"
    )
    if still:
        print(f"note: {name} is still set in the environment; unset it in your shell")
    return 0


def _list(store: ChainedStore, as_json: bool) -> int:
    from ._credentials import mask

    names = store.names()
    if as_json:
        _print_json([_entry(name, store.lookup(name)) for name in names])
        return 0
    width = max(len(n) for n in names)
    for name in names:
        found = store.lookup(name)
        if found is None:
            print(f"{name:<{width}}  (not set)")
        else:
            value, source = found
            print(f"{name:<{width}}  {mask(value)}  from {_describe(source)}")
    return 0
