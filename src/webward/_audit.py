"""The audit log: one record per call, allowed or refused; no record, no call.

A record says who (agent, tier), what (capability, target), what webward decided and why
(decision, reason code), and how it went (final URL, redirect chain, status, bytes, content
type, duration, provider). It never holds page text or base64: there is no field for them,
a ``data:`` target is cut to its scheme, credentials in URLs (``user:pass@``) are dropped, and
targets are cut at :data:`MAX_TARGET_CHARS`.

Decisions (:data:`DECISIONS`):

- ``allowed``: the call went through;
- ``report-would-deny``: it went through only because ``[policy] mode = "report"``; ``reason``
  (and ``would_deny``) name the policy refusal that enforce mode would have given;
- ``refused``: webward said no (policy, guard, limits, robots.txt, caps, bad input);
- ``failed``: the far side failed (timeout, HTTP error, provider error).

A record that cannot be written refuses the call: sinks raise ``Refused`` with reason
``audit_unavailable``. Sinks: :class:`SQLiteAuditSink` (``audit.db`` in the state dir, WAL and a
busy timeout, so several processes can write at once), ``_postgres.PostgresAuditSink`` (one
log for N replicas, ``[audit] postgres_dsn_env``) and :class:`MemoryAuditSink` (tests,
``webward.testing``).
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import orjson

from ._errors import Reason, Refused
from ._redact import drop_userinfo
from ._settings import Settings
from ._sqlite import open_wal

if TYPE_CHECKING:
    from ._call import Call

__all__ = [
    "DECISIONS",
    "MAX_TARGET_CHARS",
    "REASON_AUDIT_UNAVAILABLE",
    "AuditRecord",
    "AuditSink",
    "MemoryAuditSink",
    "SQLiteAuditSink",
    "audit_unavailable",
    "open_audit_sink",
]

DECISIONS = ("allowed", "report-would-deny", "refused", "failed")
REASON_AUDIT_UNAVAILABLE = Reason.AUDIT_UNAVAILABLE
#: Targets (URLs, queries) longer than this are cut, and marked with an ellipsis.
MAX_TARGET_CHARS = 2048


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


_ID_PREFIX = uuid.uuid4().hex[:8]  # random per process, so ids from several processes differ
_ID_COUNTER = itertools.count()


def _new_id() -> str:
    # Unique, not secret: a per-process random prefix, the time and a counter spare the
    # hot path a getrandom() call per record.
    return f"{_ID_PREFIX}{time.time_ns():016x}{next(_ID_COUNTER) & 0xFFFFFFFF:08x}"  # 32 hex


def _clean_url(value: Any) -> str:
    text = str(value)
    if text.lstrip("\x00 \t\n\r\f")[:5].lower() == "data:":
        return "data:[omitted]"  # a data: URL is its payload; base64 never goes in a record
    if "@" in text:  # only then can there be credentials to drop
        text = drop_userinfo(text)
    if len(text) > MAX_TARGET_CHARS:
        text = text[: MAX_TARGET_CHARS - 1] + "…"
    return _storable(text)


def _storable(text: str) -> str:
    """``text`` as every store can hold it: a lone surrogate (a caller can send one as
    ``\\ud800`` in JSON) is written out as its escape, and so is a NUL (``\\x00``, which
    PostgreSQL refuses in text), so that the store never turns the row down."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    return text


def _iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# Text fields besides the URLs (which _clean_url handles) that must reach the store intact.
_OTHER_TEXT_FIELDS = (
    "agent", "tier", "capability", "reason", "would_deny", "content_type", "provider",
)  # fmt: skip


@dataclass(frozen=True)
class AuditRecord:
    """One call through the door. Field names are snake_case; :meth:`to_wire` is camelCase."""

    agent: str
    tier: str
    capability: str  # web:page.fetch@1 | web:search.query@1
    target: str  # the requested URL, or the query
    decision: str  # see DECISIONS
    reason: str  # a fixed code: "allowed" when allowed, else the refusal's or failure's reason
    time: dt.datetime = field(default_factory=_utcnow)
    id: str = field(default_factory=_new_id)
    would_deny: str | None = None  # report mode: the policy reason enforce would refuse with
    final_url: str | None = None
    redirects: tuple[str, ...] = ()  # every URL visited, the requested one first
    status: int | None = None
    bytes: int | None = None
    content_type: str | None = None
    duration_ms: int | None = None
    provider: str | None = None
    # A headless render's requests: the hosts it contacted, and those the gate refused, as
    # "host[:port] (reason)". Empty when nothing was rendered.
    render_contacted: tuple[str, ...] = ()
    render_refused: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise ValueError(f"unknown audit decision {self.decision!r}")
        if self.time.tzinfo is None:
            raise ValueError("audit time must carry a time zone")
        # Frozen, but cleaned once here so that no writer can put secrets or payloads in.
        set_ = object.__setattr__
        set_(self, "target", _clean_url(self.target))
        if self.final_url is not None:
            set_(self, "final_url", _clean_url(self.final_url))
        set_(self, "redirects", tuple(map(_clean_url, self.redirects)))
        for name in ("render_contacted", "render_refused"):
            set_(self, name, tuple(_storable(str(h))[:300] for h in getattr(self, name)))
        for name in _OTHER_TEXT_FIELDS:
            value = getattr(self, name)
            if value is not None:
                set_(self, name, _storable(str(value)))

    @classmethod
    def create(
        cls,
        *,
        decision: str,
        reason: str,
        agent: str = "",
        tier: str = "",
        capability: str = "",
        target: str = "",
        **fields: Any,
    ) -> AuditRecord:
        """A record stamped now; every other field of the dataclass may be given by name.

        Lenient where the core may not know a field yet (a call refused before its tier was
        known has ``tier=""``); ``redirects`` may be any sequence.
        """
        for name in ("redirects", "render_contacted", "render_refused"):
            if name in fields and fields[name] is not None:
                fields[name] = tuple(fields[name])
            elif name in fields:
                del fields[name]
        return cls(
            agent=str(agent),
            tier=str(tier),
            capability=str(capability),
            target=target if isinstance(target, str) else repr(target),
            decision=decision,
            reason=str(reason),
            **fields,
        )

    @classmethod
    def from_call(cls, call: Call, *, decision: str, reason: str) -> AuditRecord:
        """The call in flight (``_call.Call``), frozen into its record, stamped now."""
        return cls(
            agent=str(call.agent),
            tier=str(call.tier),
            capability=str(call.capability),
            target=call.target,
            decision=decision,
            reason=str(reason),
            would_deny=call.would_deny,
            final_url=call.final_url,
            redirects=tuple(call.redirects),
            status=call.status,
            bytes=call.bytes,
            content_type=call.content_type,
            duration_ms=call.duration_ms(),
            provider=call.provider,
            render_contacted=tuple(call.render_contacted),
            render_refused=tuple(call.render_refused),
        )

    def to_wire(self) -> dict[str, Any]:
        """The record as camelCase JSON (``webward audit --json``)."""
        return {
            "id": self.id,
            "time": _iso(self.time),
            "agent": self.agent,
            "tier": self.tier,
            "capability": self.capability,
            "target": self.target,
            "decision": self.decision,
            "reason": self.reason,
            "wouldDeny": self.would_deny,
            "finalUrl": self.final_url,
            "redirects": list(self.redirects),
            "status": self.status,
            "bytes": self.bytes,
            "contentType": self.content_type,
            "durationMs": self.duration_ms,
            "provider": self.provider,
            "renderContacted": list(self.render_contacted),
            "renderRefused": list(self.render_refused),
        }


class AuditSink(Protocol):
    """Where audit records go. ``write`` raises ``Refused(audit_unavailable)`` if it cannot."""

    async def write(self, record: AuditRecord) -> None:
        """Store ``record`` durably, or raise ``Refused`` (reason ``audit_unavailable``)."""
        ...

    async def query(
        self,
        since: dt.datetime | None = None,
        agent: str | None = None,
        decision: str | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        """Records at or after ``since``, newest first, at most ``limit``.

        ``decision="report-would-deny"`` also finds calls that report mode let through and
        that then failed.
        """
        ...

    async def aclose(self) -> None:
        """Release the store."""
        ...


def audit_unavailable(detail: str) -> Refused:
    """The refusal every sink raises when a record cannot be written."""
    return Refused(
        f"refused: audit unavailable; webward does not open the door unaudited ({detail})",
        reason=REASON_AUDIT_UNAVAILABLE,
    )


def _matches(
    r: AuditRecord, since: dt.datetime | None, agent: str | None, decision: str | None
) -> bool:
    if since is not None and r.time < since:
        return False
    if agent is not None and r.agent != agent:
        return False
    if decision is not None:
        if decision == "report-would-deny":
            return r.decision == decision or r.would_deny is not None
        return r.decision == decision
    return True


class MemoryAuditSink:
    """Audit records in a list (``.records``), oldest first: for tests and ``webward.testing``.

    ``broken=True`` makes every write fail as an unavailable store does, so a test can show
    that its agent copes with webward refusing to work unaudited.
    """

    def __init__(self, *, broken: bool = False) -> None:
        self.records: list[AuditRecord] = []
        self.broken = broken

    async def write(self, record: AuditRecord) -> None:
        if self.broken:
            raise audit_unavailable("the memory audit sink was made broken")
        self.records.append(record)

    async def query(
        self,
        since: dt.datetime | None = None,
        agent: str | None = None,
        decision: str | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        found = [r for r in reversed(self.records) if _matches(r, since, agent, decision)]
        return found[: max(limit, 0)]

    async def aclose(self) -> None:
        return None


_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS audit (
        id TEXT PRIMARY KEY,
        ts REAL NOT NULL,
        agent TEXT NOT NULL,
        tier TEXT NOT NULL,
        capability TEXT NOT NULL,
        target TEXT NOT NULL,
        decision TEXT NOT NULL,
        reason TEXT NOT NULL,
        would_deny TEXT,
        final_url TEXT,
        redirects TEXT NOT NULL,
        status INTEGER,
        bytes INTEGER,
        content_type TEXT,
        duration_ms INTEGER,
        provider TEXT,
        render_contacted TEXT NOT NULL DEFAULT '[]',
        render_refused TEXT NOT NULL DEFAULT '[]'
    )""",
    "CREATE INDEX IF NOT EXISTS audit_ts ON audit (ts)",
)
# Columns added after the first release: (name, type); a table created before them gains
# them when a sink opens it (SQLite here, PostgreSQL in _postgres).
_ADDED_COLUMNS = (
    ("render_contacted", "TEXT NOT NULL DEFAULT '[]'"),
    ("render_refused", "TEXT NOT NULL DEFAULT '[]'"),
)
_FIELDS = (
    "id", "ts", "agent", "tier", "capability", "target", "decision", "reason", "would_deny",
    "final_url", "redirects", "status", "bytes", "content_type", "duration_ms", "provider",
    "render_contacted", "render_refused",
)  # fmt: skip


# Rows per INSERT statement: 18 columns x 500 rows stays far below SQLite's 32,766 variables.
_ROWS_PER_STATEMENT = 500
_ROW_MARKS = f"({', '.join('?' for _ in _FIELDS)})"


@functools.lru_cache(maxsize=64)
def _insert_sql(n: int) -> str:
    return f"INSERT INTO audit ({', '.join(_FIELDS)}) VALUES {', '.join([_ROW_MARKS] * n)}"


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


def _json_list(items: tuple[str, ...]) -> str:
    try:
        return orjson.dumps(items).decode("utf-8")
    except orjson.JSONEncodeError:  # a lone surrogate: escaped, as ASCII JSON
        return json.dumps(list(items))


def _to_row(r: AuditRecord) -> tuple[Any, ...]:
    # Spelled out in _FIELDS order (the round-trip tests hold it to that): this runs once per call on
    # the hot path, and asdict() would deep-copy every field.
    redirects = _json_list(r.redirects) if r.redirects else "[]"
    return (
        r.id, r.time.timestamp(), r.agent, r.tier, r.capability, r.target, r.decision,
        r.reason, r.would_deny, r.final_url, redirects, r.status, r.bytes, r.content_type,
        r.duration_ms, r.provider,
        _json_list(r.render_contacted) if r.render_contacted else "[]",
        _json_list(r.render_refused) if r.render_refused else "[]",
    )  # fmt: skip


def _from_row(row: tuple[Any, ...]) -> AuditRecord:
    values = dict(zip(_FIELDS, row, strict=True))
    ts = values.pop("ts")
    values["time"] = dt.datetime.fromtimestamp(ts, dt.UTC)
    for name in ("redirects", "render_contacted", "render_refused"):
        values[name] = tuple(json.loads(values[name] or "[]"))
    return AuditRecord(**values)


class _Batch:
    """Records waiting for one commit; the first writer leads and commits them all."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.leader = False
        self.done = anyio.Event()
        self.failure: str | None = None  # the whole batch failed
        self.row_errors: list[str | None] = []  # or some rows did (None: written)


#: What a flush answers: ``None`` when every row was written; the error text when the batch
#: was not; or, after a batch retried row by row, the error text (or ``None``) of each row.
Flushed = str | list[str | None] | None


class _GroupCommit:
    """Group commit for a sink: records that arrive while a commit is in flight join the
    next one, and every writer returns only once the transaction holding its record
    committed. ``flush(rows)`` commits one batch and answers :data:`Flushed`: a sink whose
    batch fails on one row's content retries it row by row, so that one caller's input never
    costs another caller's record."""

    def __init__(self, flush: Callable[[list[tuple[Any, ...]]], Awaitable[Flushed]]) -> None:
        self._flush = flush
        self._batch = _Batch()
        self._lock: anyio.Lock | None = None  # created lazily: it belongs to the running loop

    async def write(self, row: tuple[Any, ...]) -> None:
        batch = self._batch
        index = len(batch.rows)
        batch.rows.append(row)
        if batch.leader:
            await batch.done.wait()
        else:
            batch.leader = True
            if self._lock is None:
                self._lock = anyio.Lock()
            # Until the flush answers, the batch counts as failed: a leader hit by an
            # unexpected error must not let its followers take their rows for written.
            batch.failure = "the audit write did not finish"
            # Shielded: a leader whose own caller is cancelled still commits the batch, its
            # followers' rows and its own (a cancelled call is audited too).
            with anyio.CancelScope(shield=True):
                try:
                    async with self._lock:
                        self._batch = _Batch()  # from here on, new records wait for the next
                        try:
                            flushed = await self._flush(batch.rows)
                        except Exception as exc:
                            flushed = f"the audit write failed: {exc}"
                        batch.failure = flushed if isinstance(flushed, str) else None
                        batch.row_errors = flushed if isinstance(flushed, list) else []
                finally:
                    batch.done.set()
        error = batch.failure
        if error is None and batch.row_errors:
            error = batch.row_errors[index]
        if error is not None:
            raise audit_unavailable(error)


def _select(
    since: dt.datetime | None,
    agent: str | None,
    decision: str | None,
    limit: int,
    *,
    mark: str,
    tiebreak: str,
) -> tuple[str, list[Any]]:
    """The query behind ``AuditSink.query`` for a SQL sink: ``mark`` is the driver's
    placeholder, ``tiebreak`` the column that orders records of the same instant."""
    where: list[str] = []
    params: list[Any] = []
    if since is not None:
        where.append(f"ts >= {mark}")
        params.append(since.timestamp())
    if agent is not None:
        where.append(f"agent = {mark}")
        params.append(agent)
    if decision is not None:
        if decision == "report-would-deny":
            where.append(f"(decision = {mark} OR would_deny IS NOT NULL)")
        else:
            where.append(f"decision = {mark}")
        params.append(decision)
    sql = f"SELECT {', '.join(_FIELDS)} FROM audit"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += f" ORDER BY ts DESC, {tiebreak} DESC LIMIT {mark}"
    params.append(max(int(limit), 0))
    return sql, params


class SQLiteAuditSink:
    """Audit records in ``audit.db`` in the state dir: WAL, a busy timeout, one INSERT per
    record, so several ``webward`` processes can write at once without losing a row.

    The file and its directory are created on the first write. sqlite3 runs in a worker
    thread (``anyio.to_thread``) so the event loop never waits on the disk.
    """

    def __init__(self, state_dir: str | Path, *, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(state_dir) / "audit.db"
        self._busy_timeout_s = busy_timeout_s
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._commits = _GroupCommit(lambda rows: anyio.to_thread.run_sync(self._write_sync, rows))

    async def write(self, record: AuditRecord) -> None:
        await self._commits.write(_to_row(record))

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
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        if self._conn is not None:
            return self._conn
        if not create and not self.path.exists():
            return None
        conn = open_wal(self.path, timeout_s=self._busy_timeout_s, schema=_SCHEMA)
        try:
            have = {row[1] for row in conn.execute("PRAGMA table_info(audit)")}
            for name, kind in _ADDED_COLUMNS:
                if name not in have:  # a log written by an older webward
                    conn.execute(f"ALTER TABLE audit ADD COLUMN {name} {kind}")
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _write_sync(self, rows: list[tuple[Any, ...]]) -> Flushed:
        """Insert ``rows`` in one transaction; see :data:`Flushed`."""
        with self._lock:
            try:
                conn = self._connect(create=True)
                assert conn is not None
            except (sqlite3.Error, OSError) as exc:
                return f"{self.path}: {exc}"
            try:
                _insert_rows(conn, rows)
            except (sqlite3.OperationalError, OSError) as exc:  # the store: no row would pass
                return f"{self.path}: {exc}"
            except Exception as exc:  # a row's content (an integer past 64 bits, a clash)
                if len(rows) == 1:
                    return f"{self.path}: {type(exc).__name__}: {exc}"
                return [self._write_one(conn, row) for row in rows]
        return None

    def _write_one(self, conn: sqlite3.Connection, row: tuple[Any, ...]) -> str | None:
        try:
            _insert_rows(conn, [row])
        except Exception as exc:
            return f"{self.path}: {type(exc).__name__}: {exc}"
        return None

    def _query_sync(
        self, since: dt.datetime | None, agent: str | None, decision: str | None, limit: int
    ) -> list[AuditRecord]:
        sql, params = _select(since, agent, decision, limit, mark="?", tiebreak="rowid")
        with self._lock:
            try:
                conn = self._connect(create=False)
                if conn is None:
                    return []  # nothing was ever audited here
                rows = conn.execute(sql, params).fetchall()
            except (sqlite3.Error, OSError) as exc:
                raise Refused(
                    f"refused: the audit log at {self.path} cannot be read ({exc})",
                    reason=REASON_AUDIT_UNAVAILABLE,
                ) from None
        return [_from_row(tuple(row)) for row in rows]


def open_audit_sink(settings: Settings, environ: Mapping[str, str] | None = None) -> AuditSink:
    """The audit sink ``settings`` ask for: SQLite in the state dir unless PostgreSQL is set.

    ``[audit] postgres_dsn_env`` names the environment variable (in ``environ``, by default
    the process's) holding the PostgreSQL DSN. If it is unset or empty, every call is refused
    rather than quietly audited somewhere else.
    """
    var = settings.audit.postgres_dsn_env
    if var:
        dsn = (os.environ if environ is None else environ).get(var, "").strip()
        if not dsn:
            return _RefusingSink(
                f"[audit] postgres_dsn_env names ${var}, which is unset or empty; it must "
                "hold the PostgreSQL DSN of the audit log"
            )
        from ._extras import require

        require("psycopg", "postgres", "[audit] postgres_dsn_env")
        from ._postgres import PostgresAuditSink  # imported only when configured

        return PostgresAuditSink(dsn, dsn_env=var)
    return SQLiteAuditSink(settings.state.path())


class _RefusingSink:
    """A sink that refuses every write: the configured store does not exist."""

    def __init__(self, detail: str) -> None:
        self._detail = detail

    async def write(self, record: AuditRecord) -> None:
        raise audit_unavailable(self._detail)

    async def query(
        self,
        since: dt.datetime | None = None,
        agent: str | None = None,
        decision: str | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        raise audit_unavailable(self._detail)

    async def aclose(self) -> None:
        return None
