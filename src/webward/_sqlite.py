"""Opening the state dir's SQLite files (audit, limits, cache) safely from several processes."""

from __future__ import annotations

import errno
import os
import sqlite3
import time
from pathlib import Path

__all__ = ["NOT_A_DATABASE", "make_private_dirs", "not_a_database_step", "open_wal", "probe_write"]

#: SQLite's words for a file that is no database (SQLITE_NOTADB: a file written over, a
#: copy cut short, another program's file at the state dir's name).
NOT_A_DATABASE = "file is not a database"


def not_a_database_step(detail: object) -> str | None:
    """What an operator does about a store whose failure ``detail`` is :data:`NOT_A_DATABASE`
    (else None): move the file aside, which no permission or restart fixes."""
    if NOT_A_DATABASE not in str(detail):
        return None
    return (
        "it is no SQLite database: move it aside (webward starts a new one), or point "
        "[state] dir (WEBWARD_STATE_DIR) at another directory"
    )


def make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and every missing parent, each 0700: ``Path.mkdir(parents=True)``
    gives the parents it creates the umask's permissions (0777 under umask 000). A directory
    that exists already is left as it is, mode and all."""
    missing: list[Path] = []
    for place in (directory, *directory.parents):
        if place.exists():
            break
        missing.append(place)
    for place in reversed(missing):
        try:
            place.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by another process
            if not place.is_dir():
                raise


def open_wal(path: Path, *, timeout_s: float, schema: tuple[str, ...] = ()) -> sqlite3.Connection:
    """Connect in autocommit mode, switch to WAL and create ``schema``.

    Two processes opening a new file at the same moment can get "database is locked" from
    the journal-mode switch, which SQLite answers without waiting on its busy handler; the
    setup is therefore retried until ``timeout_s`` has passed.

    The file is created readable by its owner only (0600, like the credentials file): the
    audit log and the cached pages say what was read. SQLite gives its ``-wal`` and ``-shm``
    files the database's own mode. Every directory created on the way is 0700.
    """
    make_private_dirs(path.parent)
    _create_private(path)
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        conn = sqlite3.connect(
            path, timeout=timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            for statement in schema:
                conn.execute(statement)
            return conn
        except sqlite3.OperationalError as exc:
            conn.close()
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        except BaseException:
            conn.close()
            raise
        time.sleep(delay)  # runs in a worker thread, never on the event loop
        delay = min(delay * 2, 0.2)


def _create_private(path: Path) -> None:
    """Create ``path`` empty and 0600 when there is no file there (SQLite would give it the
    umask's mode), and never open one that exists: closing any descriptor of a file drops
    every POSIX lock this process holds on it, SQLite's too. A second connection opened here
    while a first was open (the gateway's console beside its audit sink) so released the
    first one's lock, and the next other process to close its own connection (a `webward
    fetch` on the same state dir) took itself for the last, and deleted the -wal and -shm the
    first was still writing: the gateway's audit records went to a deleted file.

    An existing file is checked instead, raising what opening it read-write raised (a
    directory, a file this user may not write, a read-only filesystem), as callers tell a
    reader that may not write from a broken store by it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        code = 0
        if path.is_dir():
            code = errno.EISDIR
        elif not os.access(
            path, os.R_OK | os.W_OK, effective_ids=os.access in os.supports_effective_ids
        ):
            code = errno.EROFS if os.statvfs(path).f_flag & os.ST_RDONLY else errno.EACCES
        if code:  # OSError makes the subclass open() raised: IsADirectoryError, PermissionError
            raise OSError(code, os.strerror(code), str(path)) from None
        return
    os.close(fd)


def probe_write(conn: sqlite3.Connection, table: str) -> None:
    """Commit a real write to ``table``, a one-row table of the probe's own (created if need
    be), in autocommit mode: so that a full disk (SQLITE_FULL) or a read-only store fails a
    store's probe as it fails the store's own writes. ``BEGIN IMMEDIATE`` and ``ROLLBACK``
    write nothing and passed on both. The row is replaced in place, so the file does not
    grow by a probe. ``table`` is a name of the caller's, never input."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {table} "
        "(id INTEGER PRIMARY KEY CHECK (id = 1), at DOUBLE PRECISION NOT NULL)"
    )
    conn.execute(f"INSERT OR REPLACE INTO {table} (id, at) VALUES (1, ?)", (time.time(),))
