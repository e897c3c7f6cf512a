"""The PostgreSQL audit sink: one audit log for N gateway replicas.

Chosen by ``[audit] postgres_dsn_env``, the *name* of an environment variable holding the DSN
(``open_audit_sink`` reads it). The DSN may carry a password, so it never appears in a
message, a repr or a log line: messages name the variable instead.

The table is the one both SQL stores share (``_core.COLUMNS``), created or upgraded on first use
when it needs it, and only then (``_open_table``: roles that own nothing read and write). Records are
written with group commit, as the SQLite sink does: records arriving while a transaction is in
flight join the next one, one INSERT each, and every writer returns only once the transaction
holding its record committed. A batch that fails on one row's content is retried row by row,
so one caller's input never costs another caller's record; text PostgreSQL cannot hold (a NUL)
arrives escaped (``AuditRecord`` does it). Any other database error refuses the call
(``audit_unavailable``): the door never opens unaudited. A broken connection is dropped and the next call connects
again, so the sink recovers when the server comes back. The log says once when a store that
took records stops taking them, and once when it takes them again (``_core.StoreHealth``, as
the SQLite sink says it).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

import anyio
import psycopg
from psycopg import conninfo, sql

from .._errors import Refused, operator_step
from ._core import (
    ADDED_COLUMNS,
    FIELDS,
    REASON_AUDIT_UNAVAILABLE,
    SCHEMA,
    AuditRecord,
    Flushed,
    GroupCommit,
    StoreHealth,
    audit_unavailable,
    filled_columns,
    records_of,
    select_sql,
    to_row,
)

__all__ = ["SCHEMA_LOCK", "PostgresAuditSink", "dsn_parses"]

_SCHEMA = (
    *SCHEMA,
    # Columns added after the first release (a log an older webward created gains them).
    *(f"ALTER TABLE audit ADD COLUMN IF NOT EXISTS {name} {kind}" for name, kind in ADDED_COLUMNS),
)
# Two replicas creating the table at the same moment would collide in the catalogue
# (CREATE ... IF NOT EXISTS is not safe against a concurrent CREATE); this lock serialises them
# (the console's index builds take turns on a key of their own: console/_postgres_reader.py).
SCHEMA_LOCK = 0x77656277  # "webw"
# A record already there is its own: ids are random, and the batch of a COMMIT whose answer
# was lost (the link broke after the server committed) is tried once more on a new
# connection, which met its own rows (a unique violation) and refused calls whose records
# were in the log. Only the id's: a unique index an operator added on other columns still
# refuses the row it would drop, rather than losing its record in silence.
_INSERT = (
    f"INSERT INTO audit ({', '.join(FIELDS)}) VALUES ({', '.join('%s' for _ in FIELDS)}) "
    "ON CONFLICT (id) DO NOTHING"
)
_CONNECT_TIMEOUT_S = 5
# A statement (the batch's INSERT, a probe) the server does not answer within this is given up
# and the connection dropped: a locked table or a frozen server must not hold every call.
_STATEMENT_TIMEOUT_S = 5
T = TypeVar("T")

log = logging.getLogger(__name__)


def _bound_s() -> float:
    """How long one write or probe may take, connecting included (read when used, so that
    a test can shorten the two)."""
    return _CONNECT_TIMEOUT_S + _STATEMENT_TIMEOUT_S


class PostgresAuditSink:
    """Audit records in PostgreSQL, shared by every replica given the same DSN.

    ``dsn_env`` is the name of the variable the DSN came from; it is what messages show.
    """

    def __init__(self, dsn: str, *, dsn_env: str) -> None:
        self._dsn = dsn
        self._env = dsn_env
        self._secrets = _secrets_of(dsn)
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock: anyio.Lock | None = None  # one statement at a time on the connection
        # Why this connection's role may not write: the table lacks columns only its owner
        # may add (``_open_table``); None when it may.
        self._outdated: str | None = None
        # The next step of a refusal: the SQLite one ("make that store writable, or point
        # [state] dir ... at one that is") sent an operator whose DSN named a database that
        # does not exist, or a server refusing without TLS, to a setting that changes nothing.
        self._advice = (
            f"check that server (up, writable, the role's INSERT) and the DSN in ${dsn_env} "
            "(host, port, database, role, password, sslmode), or point [audit] "
            "postgres_dsn_env at another"
        )
        self._commits = GroupCommit(self._insert, self._advice)
        # Whether the log took its last write or probe: said in the log when that changes.
        self._health = StoreHealth(log, f"the PostgreSQL named by ${dsn_env}")

    def __repr__(self) -> str:
        return f"PostgresAuditSink(dsn_env={self._env!r})"

    def write(self, record: AuditRecord) -> Coroutine[Any, Any, None]:
        """Group commit: see the module docstring (the commit's own coroutine, as SQLite's)."""
        return self._commits.write(to_row(record))

    async def query(
        self,
        since: dt.datetime | None = None,
        agent: str | None = None,
        decision: str | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        sql, params = select_sql(since, agent, decision, limit, mark="%s", tiebreak="id")
        return records_of(await self.read(sql, params))

    async def aclose(self) -> None:
        await self._drop()

    async def probe(self) -> None:
        """Whether a record could be written now: a connection (the table created if need
        be) on which a record is inserted and rolled back, so that a role without INSERT, a
        read-only server or a table gone fails it as it fails the records (a ``SELECT 1``
        passed on each); ``audit_unavailable`` naming the variable otherwise."""
        deadline = anyio.current_time() + _bound_s()
        if not await self._acquire_by(deadline):
            raise audit_unavailable(self._down(TimeoutError()), self._advice)
        try:
            with anyio.fail_after(deadline - anyio.current_time()):
                await self._write_connection()
                await self._on_live_connection(_insert_none)
        except (psycopg.Error, OSError, TimeoutError) as exc:
            await self._drop()
            raise audit_unavailable(self._down(exc), self._advice) from None
        finally:
            self._locked().release()
        self._health.took()

    async def read(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows of one read-only statement on this log, in a transaction on the sink's
        connection (which creates the table if no replica has yet). A database error refuses
        (``audit_unavailable``), naming the variable, never the DSN. The console reads so."""

        async def rows(conn: psycopg.AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            async with conn.transaction():
                cur = await conn.execute(sql, list(params))
                return [tuple(row) for row in await cur.fetchall()]

        # Bounded as a write is: a server that stopped answering (frozen, a dead link) held
        # the console's page without end while writes and probes gave up within the bound.
        deadline = anyio.current_time() + _bound_s()
        if not await self._acquire_by(deadline):
            raise self.unreadable(TimeoutError())
        try:
            with anyio.fail_after(deadline - anyio.current_time()):
                await self._current_connection()
                return await self._on_live_connection(rows)
        except (psycopg.Error, OSError, TimeoutError) as exc:
            await self._drop()
            raise self.unreadable(exc) from None
        finally:
            self._locked().release()

    async def connect_autocommit(self) -> psycopg.AsyncConnection[Any]:
        """A connection of its own in autocommit mode, for statements that cannot run in a
        transaction (the console's ``CREATE INDEX CONCURRENTLY``), preparing nothing (as
        ``_connect``); the caller closes it."""
        return await psycopg.AsyncConnection.connect(
            self._dsn, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S, prepare_threshold=None
        )

    def unreadable(self, exc: BaseException) -> Refused:
        """The refusal for a failed read of this log: the variable's name, the driver's first
        line with any part of the DSN taken out."""
        return Refused(
            operator_step(
                f"refused: the PostgreSQL audit log named by ${self._env} cannot be read "
                f"({self._describe(exc)})",
                f"check that server and the DSN in ${self._env} (host, port, database, role, "
                "password, sslmode)",
            ),
            reason=REASON_AUDIT_UNAVAILABLE,
        )

    def _locked(self) -> anyio.Lock:
        if self._lock is None:  # created lazily: anyio locks belong to the running loop
            self._lock = anyio.Lock()
        return self._lock

    async def _acquire_by(self, deadline: float) -> bool:
        """The connection's lock, unless ``deadline`` (``anyio.current_time()``) passes
        first: a write or probe queued behind one that waits out a locked table must not then
        wait a bound of its own on top."""
        with anyio.move_on_after(deadline - anyio.current_time()):
            await self._locked().acquire()
            return True
        return False

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None or self._conn.closed:
            # No statement prepared on the server (psycopg's default prepares one after its
            # fifth run): behind PgBouncer's transaction pooling the server connection is
            # shared, and another client's prepare of the same name failed ("already exists").
            conn = await psycopg.AsyncConnection.connect(
                self._dsn,
                autocommit=False,
                connect_timeout=_CONNECT_TIMEOUT_S,
                prepare_threshold=None,
            )
            try:
                async with conn.transaction():
                    self._outdated = await _open_table(conn)
            except BaseException:
                await conn.close()
                raise
            self._conn = conn
        return self._conn

    async def _current_connection(self) -> psycopg.AsyncConnection[Any]:
        """The connection, replaced first if it was opened on a table lacking columns this role
        may not add: its owner may have upgraded the table since, and the temporary view of a
        reader (``_open_table``) would go on hiding the new columns' values."""
        reused = self._conn is not None and not self._conn.closed
        conn = await self._connect()
        if self._outdated is not None and reused:
            await self._drop()
            conn = await self._connect()
        return conn

    async def _write_connection(self) -> psycopg.AsyncConnection[Any]:
        """:meth:`_current_connection`, for a write or a probe: refused when the table lacks
        columns this role may not add (its records would lose those fields; a reader reads
        them as their defaults instead)."""
        conn = await self._current_connection()
        if self._outdated is not None:
            raise psycopg.errors.InsufficientPrivilege(self._outdated)
        return conn

    async def _on_live_connection(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """``work(connection)``; once more on a new connection if a connection kept from
        before fails (:data:`_STALE_ERRORS`: a server restarted since ends its idle sessions,
        and the first call after it must not be refused for that)."""
        reused = self._conn is not None and not self._conn.closed
        try:
            return await work(await self._connect())
        except _STALE_ERRORS:
            if not reused:
                raise
            await self._drop()
        return await work(await self._connect())

    async def _insert(self, rows: list[tuple[Any, ...]], since: float) -> Flushed:
        """Insert ``rows`` in one transaction; see ``_core.Flushed``. A batch that fails on
        its content (not on the connection) is retried row by row. Bounded in time: a server
        that does not answer fails the batch (and a later commit of it is only a record
        more) within the bound of ``since``, when its first row was handed over, the wait
        behind the batch or probe before it included."""
        deadline = since + _bound_s()
        if not await self._acquire_by(deadline):
            return self._down(TimeoutError())
        try:
            with anyio.fail_after(deadline - anyio.current_time()):
                return await self._insert_batch(rows)
        except TimeoutError as exc:
            await self._drop()
            return self._down(exc)
        finally:
            self._locked().release()

    async def _insert_batch(self, rows: list[tuple[Any, ...]]) -> Flushed:
        reused = self._conn is not None and not self._conn.closed
        try:
            conn = await self._write_connection()
        except (psycopg.Error, OSError) as exc:  # no connection, or no schema: no row
            await self._drop()
            return self._down(exc)
        try:
            await _insert_rows(conn, rows)
        except _CONNECTION_ERRORS as exc:
            await self._drop()
            if reused:  # a connection from before a restart: once more on a new one
                return await self._insert_batch(rows)
            return self._down(exc)
        except Exception as exc:
            if not _of_a_row(exc):
                if reused:  # a table gone or a session left read-only: see _STALE_ERRORS
                    await self._drop()
                    return await self._insert_batch(rows)
                return self._down(exc)
            if len(rows) == 1:
                return self._failed(exc)
        else:
            self._health.took()
            return None
        errors: list[str | None] = []
        for i, row in enumerate(rows):
            try:
                await _insert_rows(conn, [row])
            except _CONNECTION_ERRORS as exc:
                await self._drop()
                return errors + [self._down(exc)] * (len(rows) - i)
            except Exception as exc:
                if not _of_a_row(exc):  # the log's own after all: no row will do better
                    return errors + [self._down(exc)] * (len(rows) - i)
                errors.append(self._failed(exc))
            else:
                self._health.took()
                errors.append(None)
        return errors

    def _failed(self, exc: BaseException) -> str:
        return f"PostgreSQL named by ${self._env}: {self._describe(exc)}"

    def _down(self, exc: BaseException) -> str:
        """:meth:`_failed` for a failure of the log itself (not of one row's content): the
        first after it took records is said in the log, once."""
        failure = self._failed(exc)
        self._health.noted(failure)
        return failure

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error, OSError):  # already broken: nothing to free
                await conn.close()

    def _describe(self, exc: BaseException) -> str:
        # The first line of the driver's message, with anything of the DSN that might be
        # secret taken out (a DSN with a typo can be echoed back in a parse error).
        if isinstance(exc, TimeoutError):  # no text of its own ("TimeoutError: ")
            return f"it did not answer within {_bound_s():g} s"
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        # libpq quotes the value of an option it cannot use ('invalid integer value "..." for
        # connection option "port"'): with a "/" in a URL's password, that value is a piece of
        # the password. No quoted value is repeated; the option's name is enough to go on.
        text = _QUOTED_VALUE.sub(r'\1"[redacted]"', text)
        return f"{type(exc).__name__}: {text}"


# Errors of the connection or the server, after which no row would do better (on a connection
# made anew, the batch is tried once more).
_CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, OSError)
# What a connection kept from before may fail with where a new one would not: the connection's
# own errors, and the log's, since a connection is where the table is made ready and the
# server's settings taken. With the audit table dropped or renamed, a column of it dropped, or
# a session opened while the database was read-only (default_transaction_read_only, a failover
# that had not ended), the kept connection failed every write and probe until a probe dropped
# it: a call read its page and lost its record while a new connection would have made the table
# again, and the first call after the server took writes again was refused. Once more on a new
# connection; a failure there is the log's, said as before.
_STALE_ERRORS = (psycopg.Error, OSError)


def _of_a_row(exc: BaseException) -> bool:
    """Whether ``exc``, an INSERT's error, is one row's content (a value out of range, text
    PostgreSQL cannot hold, a clash), which the other rows of its batch need not share;
    any other database error is the log's (a role without INSERT, a read-only server, a
    table gone): said as the store down, once, rather than as one bad row per call."""
    return isinstance(exc, (psycopg.DataError, psycopg.IntegrityError)) or not isinstance(
        exc, psycopg.Error
    )


# A record the probe inserts and rolls back: never in the log.
_PROBE_ROW = to_row(AuditRecord.create(decision="allowed", reason="allowed", agent="probe"))


# What is there: the audit table's schema, owner (whether this role is it, or a member of it)
# and columns, looked up as the unqualified ``audit`` of every statement resolves; no row when
# there is no such table.
_LOOK = """
SELECT n.nspname, pg_get_userbyid(c.relowner), pg_has_role(c.relowner, 'USAGE'),
       array(SELECT a.attname::text FROM pg_attribute AS a
             WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)
FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE c.oid = to_regclass('audit')
"""


async def _open_table(conn: psycopg.AsyncConnection[Any]) -> str | None:
    """Makes the audit table ready on ``conn`` (in its transaction); returns why this role
    may not write to it, or None.

    The DDL runs only when it is needed: ``CREATE``/``ALTER`` need the schema's CREATE right or
    the table's ownership, which an auditor's role (SELECT only) or a writer's (INSERT and
    SELECT) does not hold, and were refused even on a table with nothing to change. A table
    lacking columns that this role may not add is read, on this connection only, through a
    temporary view of the same name (``pg_temp`` comes first when a name is looked up), which
    reads each missing column as its default, as the SQLite reader does; writing is refused.
    """
    cur = await conn.execute(_LOOK)
    found = await cur.fetchone()
    if found is not None and set(FIELDS) <= set(found[3]):
        return None  # the common case, for every role: nothing to do, no lock taken
    # Two replicas creating the table at the same moment would collide; once the lock is
    # held, look again: the one before may have done it all.
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
    cur = await conn.execute(_LOOK)
    found = await cur.fetchone()
    if found is None or found[2]:  # no table (CREATE refused tells why), or ours to alter
        for statement in _SCHEMA:
            await conn.execute(statement)
        return None
    schema, owner, _, have = found
    if set(FIELDS) <= set(have):
        return None
    view = sql.SQL("CREATE TEMP VIEW audit AS SELECT {} FROM {}").format(
        sql.SQL(", ".join(filled_columns(have))), sql.Identifier(schema, "audit")
    )
    await conn.execute(view)
    missing = [name for name in FIELDS if name not in have]
    return (
        f"the audit table lacks the column{'s' if len(missing) > 1 else ''} "
        f"{', '.join(missing)}, which only its owner may add: open the log once as the role "
        f"{owner} to upgrade the table"
    )


async def _insert_none(conn: psycopg.AsyncConnection[Any]) -> None:
    async with conn.transaction(force_rollback=True):
        await conn.execute(_INSERT, _PROBE_ROW)


async def _insert_rows(conn: psycopg.AsyncConnection[Any], rows: list[tuple[Any, ...]]) -> None:
    async with conn.transaction(), conn.cursor() as cur:
        await cur.executemany(_INSERT, rows)


def dsn_parses(dsn: str) -> bool:
    """Whether libpq reads ``dsn`` (a connection string or URL) without a syntax error."""
    try:
        conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return False
    return True


_QUOTED_VALUE = re.compile(r'(\bvalue:? )"[^"]*"')


def _secrets_of(dsn: str) -> tuple[str, ...]:
    found = [dsn] if dsn else []
    try:
        password = conninfo.conninfo_to_dict(dsn).get("password")
    except psycopg.Error:
        password = None
    if password:
        found.append(str(password))
    return tuple(sorted(found, key=len, reverse=True))  # the whole DSN first
