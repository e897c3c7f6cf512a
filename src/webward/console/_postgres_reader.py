"""The console's reads of the PostgreSQL audit log (the queries live in ``_queries``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ..audit._postgres import SCHEMA_LOCK, PostgresAuditSink
from . import _queries
from ._queries import _INDEXED, _POSTGRES, _SQLReader

__all__ = ["PostgresAuditReader"]

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
        self._indexed = await self._build()
        self._unbuildable = not self._indexed
        return self._indexed

    async def _build(self) -> bool:
        # CONCURRENTLY: the replicas' audit writes go on while an index is built. It cannot
        # run in a transaction, so it gets a connection of its own in autocommit mode; the
        # session lock keeps two consoles from building the same index at once.
        sink = self._sink
        try:
            async with await sink.connect_autocommit() as conn:
                await conn.execute("SELECT pg_advisory_lock(%s)", (SCHEMA_LOCK,))
                for name, columns in _INDEXES.items():
                    await conn.execute(
                        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON audit {columns}"
                    )
                await conn.execute("SELECT pg_advisory_unlock(%s)", (SCHEMA_LOCK,))
        except psycopg.errors.InsufficientPrivilege:
            return False  # not the owner: the indexes are its to build, the reads still ours
        except (psycopg.Error, OSError) as exc:
            raise sink.unreadable(exc) from None
        return True

    async def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return await self._sink.read(sql, params)  # creates or upgrades the table if need be

    async def aclose(self) -> None:
        await self._sink.aclose()
