"""The credential store: where search and model keys live, and never anywhere else.

Three stores behind one small Protocol, chained in this order:

1. the environment (``BRAVE_SEARCH_API_KEY``, ``TAVILY_API_KEY``, ``ANTHROPIC_API_KEY``,
   ``OPENAI_API_KEY``, ...): read only, set by the operator's shell or service manager;
2. the OS keyring (the ``keyring`` package): optional; a missing package, the "fail" backend
   or any backend error means "not available", never a crash;
3. a JSON file with mode 0600 in the user config dir, written atomically by
   ``webward credentials set NAME``; a file other users can read is refused.

Keys never appear in logs, audit records, reprs or error messages: adapters hold them as
:class:`Secret`, whose repr and str are masked, and messages name the *variable*, not the value.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ._errors import InvalidInput, Reason, Refused
from ._settings import NoHome, user_dir
from ._sqlite import make_private_dirs

__all__ = [
    "KNOWN_NAMES",
    "ChainedStore",
    "CredentialStore",
    "EnvironmentStore",
    "FileStore",
    "KeyringStore",
    "Secret",
    "check_name",
    "default_credentials_path",
    "default_store",
    "fits_a_header",
    "mask",
]

#: The credentials webward itself reads (search providers, then model providers).
KNOWN_NAMES = ("BRAVE_SEARCH_API_KEY", "TAVILY_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")

#: The keyring "service" under which webward keeps its entries.
KEYRING_SERVICE = "webward"

_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")


def check_name(name: object) -> str:
    """``name`` if it is a credential name (``UPPER_SNAKE_CASE``, at most 64 characters)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(
            "a credential name is UPPER_SNAKE_CASE, for example BRAVE_SEARCH_API_KEY"
        )
    return name


def fits_a_header(key: str) -> bool:
    """Whether ``key`` can travel in an HTTP header as an API key does: one word of printable
    ASCII (no space, control or non-ASCII character)."""
    return key.isascii() and key.isprintable() and " " not in key


def mask(value: str) -> str:
    """A display form that shows just enough to recognise a key: ``tvly…9f3a``.

    Short values show less, so a masked short key never gives most of itself away.
    """
    if len(value) >= 20:
        return f"{value[:4]}…{value[-4:]}"
    if len(value) >= 12:
        return f"…{value[-4:]}"
    return "…"


class Secret:
    """A key held in memory: ``reveal()`` gives the value; repr and str never do."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise InvalidInput("a credential must be a non-empty string")
        self._value = value

    def reveal(self) -> str:
        """The key itself: only for the request header it is meant for."""
        return self._value

    def masked(self) -> str:
        """The display form, e.g. ``tvly…9f3a``."""
        return mask(self._value)

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:  # an accidental f-string sends "***", which fails safely
        return "***"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and secrets.compare_digest(self._value, other._value)

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self) -> Any:  # never pickled into a cache or a queue by accident
        raise TypeError("a Secret cannot be pickled")


def _plain(value: str | Secret) -> str:
    if isinstance(value, Secret):
        return value.reveal()
    if not isinstance(value, str) or not value:
        raise InvalidInput("a credential must be a non-empty string")
    if any(ch in value for ch in "\r\n\x00"):
        raise InvalidInput("a credential is one line without control characters")
    return value


@runtime_checkable
class CredentialStore(Protocol):
    """Where keys are kept. ``kind`` names the store in messages ("environment", ...)."""

    kind: str

    def get(self, name: str) -> str | None:
        """The value of ``name``, or None when this store does not hold it."""
        ...

    def set(self, name: str, value: str | Secret) -> None:
        """Store ``value`` under ``name`` (raises ``Refused`` when the store is read only)."""
        ...

    def delete(self, name: str) -> bool:
        """Remove ``name``; True when something was removed."""
        ...


class EnvironmentStore:
    """Keys from environment variables (a mapping passed in; read only)."""

    kind = "environment"

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def __repr__(self) -> str:
        return "EnvironmentStore()"

    def get(self, name: str) -> str | None:
        value = self._environ.get(check_name(name), "")
        return value.strip() or None

    def set(self, name: str, value: str | Secret) -> None:
        raise Refused(
            f"refused: {check_name(name)} comes from the environment, which webward cannot "
            "change; set it in your shell or service definition",
            reason=Reason.CREDENTIALS_READ_ONLY,
        )

    def delete(self, name: str) -> bool:
        raise Refused(
            f"refused: {check_name(name)} comes from the environment, which webward cannot "
            "change; unset it in your shell or service definition",
            reason=Reason.CREDENTIALS_READ_ONLY,
        )


class KeyringStore:
    """Keys in the OS keyring, under the service ``webward``.

    ``backend`` is a ``keyring.backend.KeyringBackend``; None means the system's choice.
    A keyring that is missing, the "fail" backend, or one that errors counts as empty for
    reads; writes to it are refused with a message.
    """

    kind = "keyring"

    def __init__(self, backend: Any = None, *, service: str = KEYRING_SERVICE) -> None:
        self._backend = backend
        self._resolved = backend is not None
        self._service = service

    def __repr__(self) -> str:
        return f"KeyringStore(service={self._service!r})"

    def _get_backend(self) -> Any:
        if not self._resolved:
            self._resolved = True
            try:
                import keyring

                self._backend = keyring.get_keyring()
            except Exception:  # no package, a broken backend, a warning turned error
                self._backend = None
        backend = self._backend
        if backend is None:
            return None
        try:
            from keyring.backends import fail

            if isinstance(backend, fail.Keyring):
                return None
        except Exception:
            pass
        try:
            # keyring signals an unusable backend by a priority that is <= 0 or raises.
            if float(type(backend).priority) <= 0:
                return None
        except Exception:
            return None
        return backend

    def available(self) -> bool:
        """Whether a usable keyring backend is present."""
        return self._get_backend() is not None

    def get(self, name: str) -> str | None:
        name = check_name(name)
        backend = self._get_backend()
        if backend is None:
            return None
        try:
            value = backend.get_password(self._service, name)
        except Exception:  # locked, no D-Bus session, anything: treat as not available
            return None
        # Stripped as the environment's are: a key stored by another tool from a pipe
        # (`echo KEY | secret-tool store ...`) keeps its newline, which no API key has.
        return (value.strip() or None) if isinstance(value, str) else None

    def set(self, name: str, value: str | Secret) -> None:
        name = check_name(name)
        plain = _plain(value)
        backend = self._get_backend()
        if backend is None:
            raise Refused(
                "refused: no OS keyring is available here; store the key in the credential "
                "file instead (`webward credentials set NAME` without --keyring)",
                reason=Reason.KEYRING_UNAVAILABLE,
            )
        try:
            backend.set_password(self._service, name, plain)
        except Exception:
            raise Refused(
                f"refused: the OS keyring did not store {name}", reason=Reason.KEYRING_UNAVAILABLE
            ) from None

    def delete(self, name: str) -> bool:
        name = check_name(name)
        backend = self._get_backend()
        if backend is None:
            return False
        try:
            if backend.get_password(self._service, name) is None:
                return False
            backend.delete_password(self._service, name)
        except Exception:
            return False
        return True


def default_credentials_path() -> Path:
    """``<user config dir>/webward/credentials.json`` (:class:`~webward._settings.NoHome`
    when the user has no home to find)."""
    return user_dir("credentials") / "credentials.json"


# The next step when the credential file cannot be opened or written: its directory is this
# user's (HOME another user's, as after `su -p` or `sudo -E`), or the file is put elsewhere.
_FILE_ADVICE = "set HOME to this user's home, or XDG_CONFIG_HOME to a directory it can write"


class FileStore:
    """Keys in a JSON file only its owner may read (mode 0600), written atomically.

    Format: ``{"version": 1, "credentials": {"NAME": "value", ...}}``.
    """

    kind = "file"

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        # The default is found when first needed: a user without a home directory (a
        # container's bare user id) whose keys are in the environment needs no file.
        self._path = Path(path) if path is not None else None

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = default_credentials_path()
        return self._path

    def __repr__(self) -> str:
        return f"FileStore(path={str(self._path or 'default')!r})"

    def _read(self) -> dict[str, str]:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise Refused(
                f"refused: the credential file {self.path} could not be opened ({exc.strerror}); "
                f"{_FILE_ADVICE}, or give the key in its environment variable",
                reason=Reason.CREDENTIALS_FILE,
            ) from None
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if os.name != "nt" and info.st_mode & 0o077:
                raise Refused(
                    f"refused to read the credential file {self.path}: other users can read it "
                    f"(mode {stat.S_IMODE(info.st_mode):04o}); run `chmod 600 {self.path}`",
                    reason=Reason.CREDENTIALS_FILE_MODE,
                )
            raw = fh.read(1_000_000)
        try:
            data = json.loads(raw.decode("utf-8"))
            creds = data["credentials"]
            if not isinstance(creds, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in creds.items()
            ):
                raise ValueError
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise InvalidInput(
                f"the credential file {self.path} is not in webward's format; fix or delete it "
                "and set the keys again"
            ) from None
        return dict(creds)

    def _write(self, creds: Mapping[str, str]) -> None:
        directory = self.path.parent
        tmp = directory / f".{self.path.name}.{secrets.token_hex(6)}.tmp"
        try:
            make_private_dirs(directory)  # each dir made on the way 0700, whatever the umask
            payload = json.dumps(
                {"version": 1, "credentials": dict(sorted(creds.items()))}, indent=2
            )
            # Created 0600 from the first byte (never chmod-ed after the fact), then renamed
            # over the old file, so a reader sees the old file or the new one, never half.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                if hasattr(os, "fchmod"):
                    os.fchmod(fd, 0o600)
                os.write(fd, (payload + "\n").encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise Refused(
                f"refused: the credential file {self.path} could not be written ({exc.strerror}); "
                f"{_FILE_ADVICE}, or use the OS keyring (`webward credentials set NAME --keyring`)",
                reason=Reason.CREDENTIALS_FILE,
            ) from None

    def get(self, name: str) -> str | None:
        name = check_name(name)
        try:
            value = self._read().get(name)
        except NoHome:  # no home, so no default file to hold the key (`credentials` says so)
            return None
        # Stripped as the environment's are: a hand-edited file may hold "KEY\n" or " KEY ".
        return (value.strip() or None) if value else None

    def set(self, name: str, value: str | Secret) -> None:
        name = check_name(name)
        plain = _plain(value)
        creds = self._read()
        creds[name] = plain
        self._write(creds)

    def delete(self, name: str) -> bool:
        name = check_name(name)
        creds = self._read()
        if name not in creds:
            return False
        del creds[name]
        self._write(creds)
        return True

    def names(self) -> list[str]:
        """The names the file holds, sorted."""
        return sorted(self._read())


class ChainedStore:
    """Reads from each store in turn (first hit wins); writes to one store (``write_to``)."""

    kind = "chain"

    def __init__(
        self, stores: Sequence[CredentialStore], *, write_to: CredentialStore | None = None
    ) -> None:
        if not stores:
            raise ValueError("a chained store needs at least one store")
        self.stores = tuple(stores)
        self._write_to = write_to if write_to is not None else self.stores[-1]

    def __repr__(self) -> str:
        return f"ChainedStore({', '.join(s.kind for s in self.stores)})"

    def lookup(self, name: str) -> tuple[str, CredentialStore] | None:
        """The value of ``name`` and the store it came from, or None."""
        for store in self.stores:
            value = store.get(name)
            if value:
                return value, store
        return None

    def get(self, name: str) -> str | None:
        found = self.lookup(name)
        return found[0] if found else None

    def get_secret(self, name: str) -> Secret | None:
        """``get`` wrapped as a :class:`Secret`."""
        value = self.get(name)
        return Secret(value) if value else None

    def set(self, name: str, value: str | Secret) -> None:
        self._write_to.set(name, value)

    def delete(self, name: str) -> bool:
        """Remove ``name`` from every writable store; True when any held it."""
        removed = False
        for store in self.stores:
            if isinstance(store, EnvironmentStore):
                continue
            removed = store.delete(name) or removed
        return removed

    def names(self, extra: Iterable[str] = KNOWN_NAMES) -> list[str]:
        """``extra`` plus every name a file store in the chain holds, without duplicates."""
        out = list(dict.fromkeys(extra))
        for store in self.stores:
            if isinstance(store, FileStore):
                out += [n for n in store.names() if n not in out]
        return out


def default_store(
    environ: Mapping[str, str] | None = None,
    path: str | os.PathLike[str] | None = None,
    *,
    keyring_backend: Any = None,
) -> ChainedStore:
    """Environment, then OS keyring, then the 0600 file; writes go to the file.

    ``environ=None`` reads ``os.environ`` (the CLI, and ``Web`` when no store is passed).
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    file_store = FileStore(path)
    return ChainedStore(
        [EnvironmentStore(env), KeyringStore(keyring_backend), file_store], write_to=file_store
    )
