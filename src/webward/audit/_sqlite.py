"""The SQLite audit sink: ``audit.db`` in the state dir, shared by the processes of one machine.

WAL and a busy timeout let several ``webward`` processes write at once; a commit thread
(``_core.CommitThread``) makes one transaction of the records that arrive while another
commits. The table is the one both SQL stores share (``_core.COLUMNS``).
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import anyio

from .._errors import Refused
from .._sqlite import open_wal
from ._core import (
    ADDED_COLUMNS,
    FIELDS,
    REASON_AUDIT_UNAVAILABLE,
    SCHEMA,
    AuditRecord,
    CommitThread,
    Flushed,
    audit_unavailable,
    records_of,
    select_sql,
    to_row,
)

__all__ = ["SQLiteAuditSink"]

T = TypeVar("T")

# Rows per INSERT statement: 18 columns x 500 rows stays far below SQLite's 32,766 variables.
_ROWS_PER_STATEMENT = 500
_ROW_MARKS = f"({', '.join('?' for _ in FIELDS)})"


# How much less than the busy timeout a batch must have left before the connection's timeout
# is cut to what it has left: a batch taken as it arrives (the hot path) runs no PRAGMA, and
# SQLite's busy handler sleeps in steps of up to 100 ms anyway.
_BUSY_SLACK_S = 0.1


@functools.lru_cache(maxsize=64)
def _insert_sql(n: int) -> str:
    return f"INSERT INTO audit ({', '.join(FIELDS)}) VALUES {', '.join([_ROW_MARKS] * n)}"


def _insert_rows(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Insert ``rows`` in one transaction, durable when this returns.

    A batch is one multi-row INSERT, so one statement step, rather than executemany's step
    per row: sqlite3 lets go of the GIL around every step, and under load each step was a
    thread switch the event loop paid for. In autocommit mode a lone statement is its own
    transaction; a larger batch is wrapped in one.
    """
    if len(rows) <= _ROWS_PER_STATEMENT:
        conn.execute(_insert_sql(len(rows)), [v for row in rows for v in row])
        return
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        for i in range(0, len(rows), _ROWS_PER_STATEMENT):
            chunk = rows[i : i + _ROWS_PER_STATEMENT]
            conn.execute(_insert_sql(len(chunk)), [v for row in chunk for v in row])


class SQLiteAuditSink:
    """Audit records in ``audit.db`` in the state dir: WAL, a busy timeout, one INSERT per
    record, so several ``webward`` processes can write at once without losing a row.

    The file and its directory are created on the first write. Writes are committed by a
    thread of the sink's own (``_core.CommitThread``), reads in a worker thread, so the event
    loop never waits on the disk.

    A write or probe the store does not answer (another process holds the write lock) is
    given up ``busy_timeout_s`` after its record was handed over (after the probe began):
    the time it waited behind another write or probe of this sink, which shares one
    connection, is part of it, not added to it.
    """

    def __init__(self, state_dir: str | Path, *, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(state_dir) / "audit.db"
        self._busy_timeout_s = busy_timeout_s
        self._conn: sqlite3.Connection | None = None
        self._busy_now_s = busy_timeout_s  # the connection's busy timeout as last set
        self._lock = threading.Lock()
        self._batch = threading.local()  # the deadline of the batch this thread commits
        self._commits = CommitThread(self._commit, name="webward-audit")

    def write(self, record: AuditRecord) -> Coroutine[Any, Any, None]:
        # The commit's own coroutine, awaited by the caller: every call waits on its commit,
        # and a coroutine of this method's around it would be one more frame to resume.
        return self._commits.write(to_row(record))

    async def probe(self) -> None:
        """Whether a record could be written now: the log opens (created if need be) and
        takes its write lock; ``audit_unavailable`` naming the file otherwise."""
        deadline = time.monotonic() + self._busy_timeout_s  # a worker thread's wait included
        failure = await anyio.to_thread.run_sync(self._probe_sync, deadline)
        if failure is not None:
            raise audit_unavailable(failure)

    def _probe_sync(self, deadline: float) -> str | None:
        if not self._acquire(deadline):
            return self._no_answer()
        try:
            conn = self._connect(create=True, deadline=deadline)
            assert conn is not None
            self._wait_at_most(conn, deadline)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        except (sqlite3.Error, OSError) as exc:
            return self._unopened(exc)
        finally:
            self._lock.release()
        return None

    async def query(
        self,
        since: dt.datetime | None = None,
        agent: str | None = None,
        decision: str | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        return await anyio.to_thread.run_sync(
            lambda: self._query_sync(since, agent, decision, limit)
        )

    async def aclose(self) -> None:
        await self._commits.aclose()  # every record handed over is committed first
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _connect(self, create: bool, deadline: float | None = None) -> sqlite3.Connection | None:
        """The sink's connection, opened (within ``deadline``, if given) the first time."""
        if self._conn is not None:
            return self._conn
        if not create and not self.path.exists():
            return None
        timeout = self._timeout_for(deadline)
        conn = open_wal(self.path, timeout_s=timeout, schema=SCHEMA)
        self._busy_now_s = timeout
        try:
            self._wait_at_most(conn, deadline)
            have = {row[1] for row in conn.execute("PRAGMA table_info(audit)")}
            for name, kind in ADDED_COLUMNS:
                if name not in have:  # a log written by an older webward
                    conn.execute(f"ALTER TABLE audit ADD COLUMN {name} {kind}")
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _commit(self, rows: list[tuple[Any, ...]], since: float) -> Flushed:
        """The commit thread's flush: no row of the batch was handed over before ``since``,
        so the batch is answered by ``since`` plus the busy timeout (:meth:`_write_sync`)."""
        self._batch.deadline = since + self._busy_timeout_s
        try:
            return self._write_sync(rows)
        finally:
            self._batch.deadline = None

    def _write_sync(self, rows: list[tuple[Any, ...]]) -> Flushed:
        """Insert ``rows`` in one transaction; see :data:`Flushed`. Answered by the batch's
        deadline (:meth:`_commit`; the busy timeout from now for a call of its own), the
        wait for the sink's connection included."""
        deadline = getattr(self._batch, "deadline", None)
        if deadline is None:
            deadline = time.monotonic() + self._busy_timeout_s
        if not self._acquire(deadline):
            return self._no_answer()
        try:
            try:
                conn = self._connect(create=True, deadline=deadline)
                assert conn is not None
                self._wait_at_most(conn, deadline)
            except (sqlite3.Error, OSError) as exc:
                return self._unopened(exc)
            try:
                _insert_rows(conn, rows)
            except (sqlite3.OperationalError, OSError) as exc:  # the store: no row would pass
                return f"{self.path}: {exc}"
            except Exception as exc:  # a row's content (an integer past 64 bits, a clash)
                if len(rows) == 1:
                    return f"{self.path}: {type(exc).__name__}: {exc}"
                return [self._write_one(conn, row, deadline) for row in rows]
        finally:
            self._lock.release()
        return None

    def _write_one(
        self, conn: sqlite3.Connection, row: tuple[Any, ...], deadline: float
    ) -> str | None:
        try:
            self._wait_at_most(conn, deadline)  # the rows together, not each, within it
            _insert_rows(conn, [row])
        except Exception as exc:
            return f"{self.path}: {type(exc).__name__}: {exc}"
        return None

    def _acquire(self, deadline: float) -> bool:
        """The sink's lock (one statement at a time on its one connection), unless
        ``deadline`` passes first: a write or probe queued behind one that waits out a
        locked store must not then wait a busy timeout of its own on top."""
        return self._lock.acquire(blocking=False) or self._lock.acquire(
            timeout=max(deadline - time.monotonic(), 0.0)
        )

    def _wait_at_most(self, conn: sqlite3.Connection, deadline: float | None) -> None:
        """Let SQLite's busy handler wait on a lock until ``deadline`` at most (the busy
        timeout whole for ``None``). The PRAGMA runs only when the timeout changes: a batch
        taken as it arrives keeps the whole of it, as every commit did before."""
        timeout = self._timeout_for(deadline)
        if timeout != self._busy_now_s:
            conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._busy_now_s = timeout

    def _timeout_for(self, deadline: float | None) -> float:
        timeout = self._busy_timeout_s
        if deadline is not None:
            left = deadline - time.monotonic()
            if left < timeout - _BUSY_SLACK_S:
                timeout = max(left, 0.0)  # 0: one try, no wait (the store may be free again)
        return timeout

    def _unopened(self, exc: BaseException) -> str:
        """Why the log could not be opened: a state dir that is a file, or one not writable,
        said as `webward audit` says it, not as the errno of the mkdir that failed on it."""
        unusable = _unusable_dir(self.path.parent)
        if unusable is not None:
            return f"the audit log at {self.path} cannot be written ({unusable})"
        return f"{self.path}: {exc}"

    def _no_answer(self) -> str:
        return f"{self.path}: busy, no answer within {self._busy_timeout_s:g} s"

    def _query_sync(
        self, since: dt.datetime | None, agent: str | None, decision: str | None, limit: int
    ) -> list[AuditRecord]:
        sql, params = select_sql(since, agent, decision, limit, mark="?", tiebreak="rowid")
        rows: list[Any] = self.read_sync(
            lambda conn: conn.execute(sql, params).fetchall(), default=[]
        )
        return records_of(rows)

    def read_sync(self, work: Callable[[sqlite3.Connection], T], *, default: T) -> T:
        """``work(connection)`` on this log, under the sink's lock (blocking: call it from a
        worker thread); ``default`` if nothing was ever audited here. A store error refuses
        (``audit_unavailable``), naming the file. Readers such as the console use it."""
        with self._lock:
            try:
                conn = self._connect(create=False)
                if conn is None:
                    unusable = _unusable_dir(self.path.parent)
                    if unusable is not None:  # not an empty log: one no call could write
                        raise Refused(
                            f"refused: the audit log at {self.path} cannot be written "
                            f"({unusable}), so every call is refused; fix that, or point "
                            "[state] dir (WEBWARD_STATE_DIR) at a directory webward can write",
                            reason=REASON_AUDIT_UNAVAILABLE,
                        )
                    return default  # nothing was ever audited here
                self._wait_at_most(conn, None)  # the whole busy timeout, whatever a write had
                return work(conn)
            except (sqlite3.Error, OSError) as exc:
                raise Refused(
                    f"refused: the audit log at {self.path} cannot be read ({exc}); if another "
                    "program holds it, try again once it is done, and if it is no SQLite "
                    "database, move it aside (webward starts a new one) or point [state] dir "
                    "(WEBWARD_STATE_DIR) at the right directory",
                    reason=REASON_AUDIT_UNAVAILABLE,
                ) from None


def _unusable_dir(directory: Path) -> str | None:
    """Why ``directory`` (the state dir) cannot hold the audit log, or ``None`` if it can:
    it, or the nearest of its parents that exists, must be a directory this process may
    write in (the first write creates what is missing)."""
    for place in (directory, *directory.parents):
        try:
            if not place.exists():
                continue
            if not place.is_dir():
                return f"{place} is not a directory"
        except OSError as exc:
            return f"{place}: {exc.strerror or exc}"
        if not os.access(place, os.W_OK | os.X_OK):
            return f"{place} is not writable by this user"
        return None
    return None
