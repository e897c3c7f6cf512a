"""What a test's webward left in its stores, read with everything it opens closed after.

Python 3.13 warns of a SQLite connection left to the collector, and the suite makes warnings
errors: the warning then fails whichever later test the collector happens to run in.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio

from webward.audit import AuditRecord, AuditSink
from webward.audit._core import COLUMNS, table_sql


def stored_records(sink: AuditSink) -> list[AuditRecord]:
    """The records ``sink`` holds (its default query), the sink closed after."""

    async def read() -> list[AuditRecord]:
        try:
            return await sink.query()
        finally:
            await sink.aclose()

    return anyio.run(read)


@contextmanager
def database(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to the SQLite file at ``path``: committed when the block ends (rolled back
    if it raised), then closed (``with sqlite3.connect(...)`` commits but leaves it open)."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


# One record as an older webward wrote it, each column's value as an SQL literal.
_OLD_ROW = {
    "id": "'old'", "ts": "1.0", "agent": "'cli'", "tier": "'full'",
    "capability": "'web:page.fetch@1'", "target": "'https://example.org/'",
    "decision": "'allowed'", "reason": "'allowed'", "would_deny": "NULL", "final_url": "NULL",
    "redirects": "'[]'", "status": "200", "bytes": "1", "content_type": "NULL",
    "duration_ms": "1", "provider": "NULL", "render_contacted": "'[]'",
    "render_refused": "'[]'", "session": "NULL", "hits_dropped": "NULL", "face": "NULL",
}  # fmt: skip


def older_audit_table(without: Collection[str]) -> tuple[str, str]:
    """The ``CREATE TABLE`` of the audit table of a webward from before the columns
    ``without``, and the ``INSERT`` of one record it wrote (agent ``cli``, id ``old``): the
    same SQL for SQLite and PostgreSQL."""
    columns = tuple(c for c in COLUMNS if c[0] not in without)
    row = ", ".join(_OLD_ROW[name] for name, _ in columns)
    return table_sql(columns), f"INSERT INTO audit VALUES ({row})"
