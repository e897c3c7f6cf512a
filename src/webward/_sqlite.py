"""Opening the state dir's SQLite files (audit, limits) safely from several processes."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

__all__ = ["open_wal"]


def open_wal(path: Path, *, timeout_s: float, schema: tuple[str, ...] = ()) -> sqlite3.Connection:
    """Connect in autocommit mode, switch to WAL and create ``schema``.

    Two processes opening a new file at the same moment can get "database is locked" from
    the journal-mode switch, which SQLite answers without waiting on its busy handler; the
    setup is therefore retried until ``timeout_s`` has passed.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
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
