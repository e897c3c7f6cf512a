"""The console's reads of the PostgreSQL audit log (the queries live in ``_queries``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from .._audit import REASON_AUDIT_UNAVAILABLE
from .._errors import Refused
from .._postgres import _SCHEMA_LOCK, PostgresAuditSink
from ._queries import _POSTGRES, _POSTGRES_INDEXES, _SQLReader

__all__ = ["PostgresAuditReader"]


class PostgresAuditReader(_SQLReader):
    """Reads through a sink of its own: its connection, its lock, its redaction of the DSN."""

    dialect = _POSTGRES

    def __init__(self, sink: PostgresAuditSink) -> None:
        self._sink = sink
        self._indexed = False

    async def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        sink = self._sink
        async with sink._locked():
            try:
                conn = await sink._connect()  # creates the table if no replica has yet
                if not self._indexed:
                    async with conn.transaction():
                        # Serialised with the sinks' schema creation: concurrent CREATE
                        # INDEX IF NOT EXISTS collide in the catalogue as CREATE TABLE does.
                        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                        for statement in _POSTGRES_INDEXES:
                            await conn.execute(statement)
                    self._indexed = True
                async with conn.transaction():
                    cur = await conn.execute(sql, list(params))
                    return [tuple(r) for r in await cur.fetchall()]
            except (psycopg.Error, OSError) as exc:
                await sink._drop()
                raise Refused(
                    f"refused: the PostgreSQL audit log named by ${sink._env} cannot be read "
                    f"({sink._describe(exc)})",
                    reason=REASON_AUDIT_UNAVAILABLE,
                ) from None

    async def aclose(self) -> None:
        await self._sink.aclose()
