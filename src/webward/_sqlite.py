"""Opening the state dir's SQLite files (audit, limits, cache) safely from several processes."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

__all__ = ["open_wal"]


def open_wal(path: Path, *, timeout_s: float, schema: tuple[str, ...] = ()) -> sqlite3.Connection:
    """Connect in autocommit mode, switch to WAL and create ``schema``.

    Two processes opening a new file at the same moment can get "database is locked" from
    the journal-mode switch, which SQLite answers without waiting on its busy handler; the
    setup is therefore retried until ``timeout_s`` has passed.

    The file is created readable by its owner only (0600, like the credentials file): the
    audit log and the cached pages say what was read. SQLite gives its ``-wal`` and ``-shm``
    files the database's own mode.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
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
