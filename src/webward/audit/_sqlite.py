"""The SQLite audit sink: ``audit.db`` in the state dir, shared by the processes of one machine.

WAL and a busy timeout let several ``webward`` processes write at once; a commit thread
(``_core.CommitThread``) makes one transaction of the records that arrive while another
commits. The table is the one both SQL stores share (``_core.COLUMNS``).

A reader that may not write the log (``webward audit`` as another user, a read-only state dir)
opens it read-only.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import functools
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import anyio

from .._errors import Refused
from .._sqlite import not_a_database_step, open_wal, probe_write
from ._core import (
    ADDED_COLUMNS,
    FIELDS,
    FULL_WORDS,
    REASON_AUDIT_UNAVAILABLE,
    SCHEMA,
    SIZE_LIMIT_WORDS,
    AuditRecord,
    CommitThread,
    Flushed,
    StoreHealth,
    audit_unavailable,
    filled_columns,
    records_of,
    select_sql,
    to_row,
)

__all__ = ["SQLiteAuditSink"]

T = TypeVar("T")

log = logging.getLogger(__name__)

# Rows per INSERT statement: 21 columns x 500 rows stays far below SQLite's 32,766 variables.
_ROWS_PER_STATEMENT = 500
_ROW_MARKS = f"({', '.join('?' for _ in FIELDS)})"


# How much less than the busy timeout a batch must have left before the connection's timeout
# is cut to what it has left: a batch taken as it arrives (the hot path) runs no PRAGMA, and
# SQLite's busy handler sleeps in steps of up to 100 ms anyway.
_BUSY_SLACK_S = 0.1


# The probe's own one-row table: it commits a real write (``_sqlite.probe_write``), so that a
# full disk (SQLITE_FULL) or a read-only store fails it as it fails the records.
_PROBE_TABLE = "audit_probe"


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

    A file removed or replaced under the sink (the state dir deleted while a gateway runs) is
    noticed at the next batch or probe, which write to the file at :attr:`path` again.
    """

    def __init__(self, state_dir: str | Path, *, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(state_dir) / "audit.db"
        self._busy_timeout_s = busy_timeout_s
        self._conn: sqlite3.Connection | None = None
        self._opened: tuple[int, int] | None = None  # (st_dev, st_ino) of the file it has open
        self._opened_companions: list[tuple[Path, tuple[int, int] | None]] = []  # -wal, -shm
        self._read_only = False  # opened by a reader that may not write the log
        self._replaced = False  # the file was removed or replaced, and not yet opened again
        self._health = StoreHealth(log, str(self.path))  # said in the log when it changes
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
        commits a write to a one-row table of the probe's own; ``audit_unavailable`` naming
        the file and the store's error otherwise (a full disk among them)."""
        deadline = time.monotonic() + self._busy_timeout_s  # a worker thread's wait included
        failure = await anyio.to_thread.run_sync(self._probe_sync, deadline)
        if failure is not None:
            # A file that is no database is moved aside: "make that store writable" was no step.
            raise audit_unavailable(failure, not_a_database_step(failure))

    def _probe_sync(self, deadline: float) -> str | None:
        if not self._acquire(deadline):
            return self._health.noted(self._no_answer())
        failure = None
        try:
            conn = self._connect(create=True, deadline=deadline)
            assert conn is not None
            self._wait_at_most(conn, deadline)
            try:
                probe_write(conn, _PROBE_TABLE)
            except (sqlite3.OperationalError, OSError) as exc:
                if not self._made_room(conn, exc):
                    raise
                probe_write(conn, _PROBE_TABLE)
        except (sqlite3.Error, OSError) as exc:
            failure = self._unopened(exc)
        finally:
            self._lock.release()
        return self._health.noted(failure)

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
            self._close()

    def _connect(self, create: bool, deadline: float | None = None) -> sqlite3.Connection | None:
        """The sink's connection, opened (within ``deadline``, if given) when it has none.

        ``create``: a writer's, read-write, the file created if need be. Otherwise a
        reader's: ``None`` if there is no file; read-write if this process may write it (the
        console builds its indexes), else read-only (:meth:`_open_read_only`).

        The path is checked (one stat) each time against the file open: once that file is
        removed or replaced, its records would reach no reader (an unlinked inode is freed
        when closed), so the connection is dropped and the file at the path opened again,
        created as on a first open. Refusing every call until a restart instead would make
        deleting the state dir an outage, and the next ``webward`` process to start would
        create a new log there anyway.
        """
        conn = self._conn
        if conn is not None:
            if not self._moved():
                if not (create and self._read_only):
                    return conn
                self._close()  # a reader's read-only connection: a write needs its own
            else:
                self._replaced = True
                self._drop_moved(conn)
        if create:
            return self._open_read_write(deadline)
        if not self.path.exists():
            return None
        try:
            return self._open_read_write(deadline)
        except (sqlite3.Error, OSError) as exc:
            # A full disk, too, is read read-only: the log is most wanted then, and opening
            # it read-write fails on the -shm it cannot grow ("disk I/O error").
            if not (_write_denied(exc) or _disk_full(exc, self.path.parent)):
                raise
            return self._open_read_only(exc)

    def _open_read_write(self, deadline: float | None) -> sqlite3.Connection:
        timeout = self._timeout_for(deadline)
        conn = open_wal(self.path, timeout_s=timeout, schema=SCHEMA)
        self._busy_now_s = timeout
        try:
            self._wait_at_most(conn, deadline)
            have = _columns(conn)
            for name, kind in ADDED_COLUMNS:
                if name not in have:  # a log written by an older webward
                    _add_column(conn, name, kind)
        except BaseException:
            conn.close()
            raise
        self._opened_now(conn, read_only=False)
        if self._replaced:
            self._replaced = False
            log.warning(
                "the audit log at %s was removed or replaced while webward ran; records "
                "from now on go to the new file",
                self.path,
            )
        return conn

    def _open_read_only(self, denied: BaseException) -> sqlite3.Connection | None:
        """The log opened read-only, for a reader that may not write it (``denied`` is why);
        ``None`` if it holds no audit table yet. Also for a reader on a full disk, which
        cannot grow the ``-shm`` a read-write open needs.

        With a writer's ``-shm`` (or records in a ``-wal``) it is read through them. Without
        either, the database file holds every record and is read alone (``immutable``):
        ``mode=ro`` would make the two, this user's and as read-only as the file, and they
        would keep writers out once the file is writable again. A ``-wal`` SQLite cannot
        index here (no ``-shm`` can be made) refuses, rather than its records going unseen.
        """
        uri = self.path.absolute().as_uri()
        wal, shm = self._companions()
        held = 0  # bytes in the -wal
        with contextlib.suppress(OSError):
            held = os.stat(wal).st_size
        if held or shm.exists():
            try:
                return self._read_only_now(*self._open_uri(f"{uri}?mode=ro"))
            except sqlite3.Error as exc:
                full = _disk_full(exc, self.path.parent)
                if not (_write_denied(exc) or full):
                    raise
                if held and full:
                    raise _DiskFull(
                        f"{FULL_WORDS}, and some of its records are in {wal}, which SQLite "
                        "cannot read without room for its index"
                    ) from None
                if held:
                    raise sqlite3.OperationalError(
                        f"some of its records are in {wal}, which only a user who may write "
                        f"in {self.path.parent} can read"
                    ) from None
        try:
            conn, found = self._open_uri(f"{uri}?mode=ro&immutable=1")
        except sqlite3.Error as exc:
            if _write_denied(exc):
                raise denied from None  # unreadable: why the first open failed says it
            raise
        return self._read_only_now(conn, found)

    def _read_only_now(self, conn: sqlite3.Connection, found: bool) -> sqlite3.Connection | None:
        if not found:  # a file created, its table not yet: nothing was audited here
            conn.close()
            return None
        try:
            have = _columns(conn)
            if not have.issuperset(FIELDS):
                # An older webward's table, which no ALTER can bring up to date here: a view
                # of the same name in the connection's own temp schema, which comes first
                # when a name is looked up, reads it as the table it would become, so every
                # reader's query runs on it as it is (an index is built on main's table).
                conn.execute(
                    f"CREATE TEMP VIEW audit AS SELECT rowid AS rowid, "
                    f"{', '.join(filled_columns(have))} FROM main.audit"
                )
        except BaseException:
            conn.close()
            raise
        self._opened_now(conn, read_only=True)
        return conn

    def _open_uri(self, uri: str) -> tuple[sqlite3.Connection, bool]:
        conn = sqlite3.connect(
            uri,
            uri=True,
            timeout=self._busy_timeout_s,
            isolation_level=None,
            check_same_thread=False,
        )
        self._busy_now_s = self._busy_timeout_s
        try:
            # Reads the schema, so it fails here, not in the reader's work, if it cannot open.
            found = conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'audit'"
            ).fetchone()[0]
        except BaseException:
            conn.close()
            raise
        return conn, bool(found)

    def _opened_now(self, conn: sqlite3.Connection, *, read_only: bool) -> None:
        self._opened = _identity(self.path)  # None: gone already, the next use opens it again
        self._opened_companions = [(p, _identity(p)) for p in self._companions()]
        self._conn = conn
        self._read_only = read_only

    def _companions(self) -> tuple[Path, Path]:
        return (
            self.path.with_name(f"{self.path.name}-wal"),
            self.path.with_name(f"{self.path.name}-shm"),
        )

    def _drop_moved(self, conn: sqlite3.Connection) -> None:
        """Close ``conn``, whose file is no longer at the path. If only that file was moved
        or replaced, its -wal and -shm are still there, and SQLite would pair them with the
        file now at the path (and read pages of the old one into it): so they are
        checkpointed into the old file (kept, if it was moved rather than deleted) and
        removed, if they are still the ones opened with it. Closing deletes nothing of the
        new file's: SQLite checkpoints and deletes on close only a file that was not moved.
        """
        with contextlib.suppress(sqlite3.Error):  # PASSIVE: waits on no reader
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        self._close()
        for companion, opened in self._opened_companions:
            if opened is not None and _identity(companion) == opened:
                with contextlib.suppress(OSError):
                    companion.unlink()

    def _moved(self) -> bool:
        """Whether the file at :attr:`path` is no longer the one the connection has open."""
        try:
            info = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return True
        except OSError:  # cannot tell (a dir made unsearchable): the file open is still there
            return False
        return (info.st_dev, info.st_ino) != self._opened

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def _commit(self, rows: list[tuple[Any, ...]], since: float) -> Flushed:
        """The commit thread's flush: no row of the batch was handed over before ``since``,
        so the batch is answered by ``since`` plus the busy timeout (:meth:`_write_sync`)."""
        self._batch.deadline = since + self._busy_timeout_s
        try:
            flushed = self._write_sync(rows)
        finally:
            self._batch.deadline = None
        if flushed is None:
            self._health.took()
        elif isinstance(flushed, str):  # the store's failure, not a row's content
            self._health.noted(flushed)
        return flushed

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
                if not self._made_room(conn, exc):
                    return self._failure(exc)
                try:  # not written: the frames of a commit that ran out of room count for none
                    _insert_rows(conn, rows)
                except (sqlite3.Error, OSError) as again:
                    return self._failure(again)
            except Exception as exc:  # a row's content (an integer past 64 bits, a clash)
                if len(rows) == 1:  # the row's own error, not the store's (see _commit)
                    return [f"{self.path}: {type(exc).__name__}: {exc}"]
                return [self._write_one(conn, row, deadline) for row in rows]
        finally:
            self._lock.release()
        return None

    def _made_room(self, conn: sqlite3.Connection, exc: BaseException) -> bool:
        """After a write that ran out of room (a full disk, the file size limit): whether a
        checkpoint made some, so that the write may be tried once more.

        The -wal grows by each commit's pages until SQLite's automatic checkpoint at 1,000
        pages (4 MiB) starts it again from its beginning. Where it could not grow that far,
        every record was refused from there on, though the log itself had room; and the
        probe, which commits one page where a record commits three or more (the table and
        its two indexes), passed on the room a record lacked, so each of the next calls read
        its page and then lost its record. ``RESTART`` copies the -wal's pages into the log
        and has the next commit write the -wal again from its beginning, into space the file
        already holds. It fails as the write did when the log itself cannot grow by them, and
        waits on readers no longer than the busy timeout left (then ``busy`` is 1)."""
        if not (_disk_full(exc, self.path.parent) or _size_limit(exc, self.path) is not None):
            return False
        try:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
        except (sqlite3.Error, OSError):
            return False
        return bool(busy == 0)

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
        return self._failure(exc)

    def _failure(self, exc: BaseException) -> str:
        """The store's error, said as a full disk when it is one (SQLite's "disk I/O error"
        for a -shm it could not grow does not say so)."""
        if _disk_full(exc, self.path.parent) and not isinstance(exc, _DiskFull):
            return f"{self.path}: {FULL_WORDS} ({exc})"
        limit = _size_limit(exc, self.path)
        if limit is not None:
            return f"{self.path}: it cannot grow past {SIZE_LIMIT_WORDS}, {limit:,} bytes ({exc})"
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
        worker thread); ``default`` if nothing was ever audited here, or if ``work`` would
        write (the console's indexes) to a log this process may only read. A store error
        refuses (``audit_unavailable``), naming the file. Readers such as the console use it.
        """
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
                try:
                    return work(conn)
                except sqlite3.Error as exc:
                    if self._read_only and _code(exc) == sqlite3.SQLITE_READONLY:
                        return default
                    raise
                finally:
                    if self._read_only:  # opened again for each read: a file read alone
                        self._close()  # would not show what a writer commits later
            except (sqlite3.Error, OSError) as exc:
                if _disk_full(exc, self.path.parent):  # not "move it aside": free space
                    raise Refused(
                        f"refused: the audit log at {self.path} cannot be read "
                        f"({self._failure(exc).removeprefix(f'{self.path}: ')}); free space "
                        "on that disk and try again",
                        reason=REASON_AUDIT_UNAVAILABLE,
                    ) from None
                limit = _size_limit(exc, self.path)
                if limit is not None:  # not "move it aside": the log is sound
                    raise Refused(
                        f"refused: the audit log at {self.path} cannot be read ({exc}): "
                        f"reading it writes beside it, past {SIZE_LIMIT_WORDS}, {limit:,} "
                        "bytes; raise that limit (ulimit -f unlimited) and try again",
                        reason=REASON_AUDIT_UNAVAILABLE,
                    ) from None
                if isinstance(exc, PermissionError):  # no lock, no other program: the modes
                    raise Refused(
                        f"refused: the audit log at {self.path} cannot be read "
                        f"({exc.strerror}): this user may not read it or a directory above "
                        "it; run webward as the user that writes it, or point [state] dir "
                        "(WEBWARD_STATE_DIR) at a directory this user can write",
                        reason=REASON_AUDIT_UNAVAILABLE,
                    ) from None
                raise Refused(
                    f"refused: the audit log at {self.path} cannot be read ({exc}); if another "
                    "program holds it, try again once it is done, and if it is no SQLite "
                    "database, move it aside (webward starts a new one) or point [state] dir "
                    "(WEBWARD_STATE_DIR) at the right directory",
                    reason=REASON_AUDIT_UNAVAILABLE,
                ) from None


# Free space below which an I/O error is taken for a full disk: SQLite says "disk I/O error",
# without the errno, when it cannot grow its -shm (32 kB) or -wal for want of space.
_NEARLY_FULL_BYTES = 1024 * 1024


class _DiskFull(sqlite3.OperationalError):
    """A read the full disk makes impossible, said by webward rather than by SQLite."""


# How far below the process's file size limit the log's files (or the 32 KiB -shm SQLite
# makes beside it) may be for an I/O error to be taken for that limit.
_NEAR_SIZE_LIMIT_BYTES = 1024 * 1024


def _size_limit(exc: BaseException, path: Path) -> int | None:
    """The process's file size limit (RLIMIT_FSIZE, ``ulimit -f``) in bytes, if ``exc`` is
    the I/O error of a write that went past it: SQLite says "disk I/O error" (EFBIG, its
    SIGXFSZ ignored by Python), and the refusal said to make the store writable, or, to a
    read (which writes the -shm beside the log), to move the log aside."""
    if isinstance(exc, OSError):
        if exc.errno != errno.EFBIG:
            return None
    elif not (
        isinstance(exc, sqlite3.Error) and _code(exc) in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL)
    ):
        return None
    try:
        import resource  # not on Windows
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    sizes = [32 * 1024]  # the -shm a reader or writer makes first
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        with contextlib.suppress(OSError):
            sizes.append((path.parent / name).stat().st_size)
    return soft if max(sizes) + _NEAR_SIZE_LIMIT_BYTES > soft else None


def _disk_full(exc: BaseException, directory: Path) -> bool:
    """Whether ``exc`` comes of a full disk: SQLITE_FULL, ENOSPC or EDQUOT, or SQLite's I/O
    error while the filesystem holding ``directory`` has almost no space left."""
    if isinstance(exc, _DiskFull):
        return True
    if isinstance(exc, sqlite3.Error):
        if _code(exc) == sqlite3.SQLITE_FULL:
            return True
        if _code(exc) != sqlite3.SQLITE_IOERR:
            return False
    elif isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    else:
        return False
    for place in (directory, *directory.parents):
        try:
            info = os.statvfs(place)
        except FileNotFoundError:
            continue
        except OSError:
            return False
        return info.f_bavail * info.f_frsize < _NEARLY_FULL_BYTES
    return False


def _columns(conn: sqlite3.Connection) -> set[str]:
    """The columns of the audit table ``conn`` has open."""
    return {row[1] for row in conn.execute("PRAGMA main.table_info(audit)")}


def _add_column(conn: sqlite3.Connection, name: str, kind: str) -> None:
    """Add the column ``name`` to an older webward's audit table. Processes that open the log
    at the same moment all see it missing, and all add it: the first does, and the others'
    "duplicate column name" is that done (it refused their first calls)."""
    try:
        conn.execute(f"ALTER TABLE audit ADD COLUMN {name} {kind}")
    except sqlite3.OperationalError as exc:
        if "duplicate column name" not in str(exc):
            raise


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _code(exc: sqlite3.Error) -> int:
    """SQLite's primary result code of ``exc`` (its extended code less the detail)."""
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


# What an open of a log this process may read but not write fails with: EACCES, EPERM, EROFS
# (os.open of the file), SQLITE_READONLY (no -shm can be made) and SQLITE_CANTOPEN.
_DENIED_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_DENIED_CODES = frozenset({sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM})


def _write_denied(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.Error):
        return _code(exc) in _DENIED_CODES
    return isinstance(exc, OSError) and exc.errno in _DENIED_ERRNOS


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
            if _read_only_mount(place):  # no chmod or other user can fix that
                return f"{place} is on a read-only filesystem"
            return f"{place} is not writable by this user"
        return None
    return None


def _read_only_mount(place: Path) -> bool:
    """Whether ``place`` is on a filesystem mounted read-only (where the platform says)."""
    try:
        return bool(os.statvfs(place).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # Windows has no statvfs
        return False
