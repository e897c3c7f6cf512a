"""What a test's webward left in its stores, read with everything it opens closed after.

Python 3.13 warns of a SQLite connection left to the collector, and the suite makes warnings
errors: the warning then fails whichever later test the collector happens to run in.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio

from webward.audit import AuditRecord, AuditSink


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
