"""The console's reads of the PostgreSQL audit log (the queries live in ``_queries``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ..audit._postgres import SCHEMA_LOCK, PostgresAuditSink
from . import _queries
from ._queries import _INDEXED, _POSTGRES, _SQLReader

__all__ = ["PostgresAuditReader"]

# The console's index builds take turns on this session lock (see _build).
_BUILD_LOCK = SCHEMA_LOCK + 1
_INDEXES = {
    "audit_ts_id": "(ts, id)",
    **{f"audit_{c}_ts_id": f"({c}, ts, id)" for c in _INDEXED},
}


class PostgresAuditReader(_SQLReader):
    """Reads through a sink of its own: its connection, its lock, its redaction of the DSN."""

    dialect = _POSTGRES

    def __init__(self, sink: PostgresAuditSink) -> None:
        self._sink = sink
        self._indexed = False
        # Whether this role was refused the index build (only the table's owner may build
        # one: an auditor's SELECT-only role is not): pages then scan, bounded, without them.
        self._unbuildable = False

    async def prepare(self, *, build_large: bool = False) -> bool:
        if self._indexed:
            return True
        if self._unbuildable:
            return False
        names = {
            str(r[0])
            for r in await self._rows(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'audit'", []
            )
        }
        if set(_INDEXES) <= names:
            self._indexed = True
            return True
        if not build_large:
            # Counted no further than the limit: a large table costs what a small one does.
            limit = _queries.BUILD_AT_ONCE_ROWS
            ((rows,),) = await self._rows(
                f"SELECT count(*) FROM (SELECT 1 FROM audit LIMIT {int(limit) + 1}) AS head", []
            )
            if rows > limit:
                return False
        built = await self._build()
        if built is None:  # another console builds them now: this view scans, the next looks
            return False
        self._indexed = built
        self._unbuildable = not self._indexed
        return self._indexed

    async def _build(self) -> bool | None:
        """The indexes built (True), not this role's or this server's to build (False), or
        being built by another console now (None)."""
        # CONCURRENTLY: the replicas' audit writes go on while an index is built. It cannot
        # run in a transaction, so it gets a connection of its own in autocommit mode; a
        # session lock keeps two consoles from building the same index at once. Tried, never
        # waited for, and a key of its own, not the writers' SCHEMA_LOCK: behind PgBouncer's
        # transaction pooling the unlock may reach another server connection than the lock,
        # which then stays held there, and a console waiting for it hung (no page answered)
        # as did every writer that had to create or upgrade the table.
        sink = self._sink
        try:
            async with await sink.connect_autocommit() as conn:
                cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (_BUILD_LOCK,))
                got = await cur.fetchone()
                if got is None or not got[0]:
                    return None
                try:
                    for name, columns in _INDEXES.items():
                        await conn.execute(
                            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON audit {columns}"
                        )
                finally:
                    await conn.execute("SELECT pg_advisory_unlock(%s)", (_BUILD_LOCK,))
        except psycopg.errors.InsufficientPrivilege:
            return False  # not the owner: the indexes are its to build, the reads still ours
        except psycopg.errors.ReadOnlySqlTransaction:
            # A hot standby (or a database left read-only), where an auditor's console is
            # pointed to keep its reads off the primary: no index can be built there, and the
            # refusal of the build refused every page and `webward console` itself, whose
            # reads the standby serves. Without them, pages scan, bounded.
            return False
        except (psycopg.Error, OSError) as exc:
            raise sink.unreadable(exc) from None
        return True

    async def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return await self._sink.read(sql, params)  # creates or upgrades the table if need be

    async def aclose(self) -> None:
        await self._sink.aclose()
