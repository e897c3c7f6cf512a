"""The audit log: one record per call, allowed or refused; no record, no call.

    AuditSink                 async write(record) / query(...) / aclose()
     ├── MemoryAuditSink      a list, for tests and ``webward.testing``          (_core.py)
     ├── SQLiteAuditSink      ``audit.db`` in the state dir, one machine         (_sqlite.py)
     └── PostgresAuditSink    one log for N replicas (the ``postgres`` extra)    (_postgres.py)

:class:`AuditRecord` (the record, cleaned of secrets and payloads when it is made), the sink
protocol and what the two SQL stores share (one table, its rows, group commit, the query)
live in ``_core``; readers of the SQL table (the console) take its column names
(:data:`FIELDS`) and :func:`from_row` from here. :func:`open_audit_sink` chooses the store from
the settings; PostgreSQL is imported only when configured.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Mapping

from .._errors import InvalidInput, Refused
from .._settings import Settings
from ._core import (
    DECISIONS,
    FACES,
    FIELDS,
    MAX_TARGET_CHARS,
    REASON_AUDIT_UNAVAILABLE,
    UNREADABLE,
    AuditRecord,
    AuditSink,
    MemoryAuditSink,
    StoreHealth,
    audit_unavailable,
    from_row,
    from_rows,
    shared_target,
    shared_wire,
    unreadable_note,
)
from ._sqlite import SQLiteAuditSink

__all__ = [
    "DECISIONS",
    "FACES",
    "FIELDS",
    "MAX_TARGET_CHARS",
    "REASON_AUDIT_UNAVAILABLE",
    "UNREADABLE",
    "AuditRecord",
    "AuditSink",
    "MemoryAuditSink",
    "SQLiteAuditSink",
    "audit_unavailable",
    "from_row",
    "from_rows",
    "open_audit_sink",
    "shared_target",
    "shared_wire",
    "unreadable_note",
]


def open_audit_sink(settings: Settings, environ: Mapping[str, str] | None = None) -> AuditSink:
    """The audit sink ``settings`` ask for: SQLite in the state dir unless PostgreSQL is set.

    ``[audit] postgres_dsn_env`` names the environment variable (in ``environ``, by default
    the process's) holding the PostgreSQL DSN. If it is unset or empty, every call is refused
    rather than quietly audited somewhere else.
    """
    var = settings.audit.postgres_dsn_env
    if var:
        dsn = (os.environ if environ is None else environ).get(var, "").strip()
        from .._extras import require

        # The extra first, and with the variable if that is missing too: said one after
        # the other, they were two rounds of fix and retry.
        try:
            require("psycopg", "postgres", "[audit] postgres_dsn_env")
        except InvalidInput as exc:
            if dsn:
                raise
            raise InvalidInput(
                f"{exc.message}, and set ${var} (unset or empty now) to the PostgreSQL DSN of "
                "the audit log"
            ) from None
        if not dsn:
            return _RefusingSink(
                f"[audit] postgres_dsn_env names ${var}, which is unset or empty",
                f"set ${var} to the PostgreSQL DSN of the audit log, or leave [audit] "
                "postgres_dsn_env out to audit into SQLite in the state dir",
            )
        from ._postgres import PostgresAuditSink, dsn_parses  # imported only when configured

        if not dsn_parses(dsn):  # the driver's parse error would quote the DSN, password too
            return _RefusingSink(
                f"[audit] postgres_dsn_env names ${var}, whose DSN does not parse",
                "check its syntax (a key=value list or a postgresql:// URL, special characters "
                "in the password percent-encoded)",
            )
        return PostgresAuditSink(dsn, dsn_env=var)
    return SQLiteAuditSink(settings.state.path())


class _RefusingSink:
    """A sink that refuses every write: the configured store does not exist. Said once in
    the log, as a store that fails is (``StoreHealth``): a gateway started with a DSN that
    does not parse refused every call and said nothing."""

    def __init__(self, detail: str, advice: str | None = None) -> None:
        self._detail = detail
        self._advice = advice
        self._health = StoreHealth(logging.getLogger(__name__), "the configured audit store")

    async def write(self, record: AuditRecord) -> None:
        self._health.noted(self._detail)
        raise audit_unavailable(self._detail, self._advice)

    async def probe(self) -> None:
        self._health.noted(self._detail)
        raise audit_unavailable(self._detail, self._advice)

    async def query(
        self,
        since: dt.datetime | None = None,
        agent: str | None = None,
        decision: str | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        raise Refused(
            f"refused: the audit log cannot be read ({self._detail})"
            + (f"; {self._advice}" if self._advice else ""),
            reason=REASON_AUDIT_UNAVAILABLE,
        )

    async def aclose(self) -> None:
        return None
