"""A locked audit store holds each call for the sink's bound at most, counted from when its
record was handed over (or its probe began): a batch, or a probe, queued behind one that
waits out the lock gets what is left of that bound, not a whole bound of its own on top.

The SQLite log is locked from another connection (``BEGIN IMMEDIATE``), the PostgreSQL table
with ``LOCK TABLE``; both sinks are given short bounds so that the tests are quick.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from webward import Refused, Settings
from webward.audit import (
    REASON_AUDIT_UNAVAILABLE,
    AuditRecord,
    SQLiteAuditSink,
    _postgres,
    open_audit_sink,
)

pytestmark = pytest.mark.anyio

BOUND_S = 1.0  # the SQLite sink's busy timeout here
# Refused within the bound, and well before twice it (what a queued batch or probe took when
# it waited for the one ahead of it, then a whole bound of its own).
WITHIN_S = 1.5


def record(name: str) -> AuditRecord:
    return AuditRecord.create(
        decision="allowed",
        reason="allowed",
        agent="agent",
        tier="connected",
        capability="web:page.fetch@1",
        target=f"https://example.org/{name}",
    )


class Watched(SQLiteAuditSink):
    """The SQLite sink, telling the test when its commit thread has taken a batch."""

    def __init__(self, state_dir: Path) -> None:
        super().__init__(state_dir, busy_timeout_s=BOUND_S)
        self.committing = threading.Event()

    def _write_sync(self, rows: list[tuple[Any, ...]]) -> Any:
        self.committing.set()
        return super()._write_sync(rows)


async def timed(work: Any) -> tuple[float, BaseException | None]:
    """How long ``work()`` took from its start, and what it raised."""
    began = time.monotonic()
    try:
        await work()
    except Exception as exc:
        return time.monotonic() - began, exc
    return time.monotonic() - began, None


def assert_refused_in_time(outcome: tuple[float, BaseException | None], bound: float) -> None:
    took, error = outcome
    assert isinstance(error, Refused) and error.reason == REASON_AUDIT_UNAVAILABLE, error
    assert "\n" not in error.message
    assert took < bound, f"refused after {took:.2f} s"


async def test_writes_and_probes_queued_behind_a_locked_batch_keep_the_bound(
    tmp_path: Path,
) -> None:
    """While another process holds audit.db's write lock, the first batch waits out the busy
    timeout; records handed over meanwhile (the next batch) and a probe that begins meanwhile
    are refused within the busy timeout of their own start too, not after the first batch's
    wait plus one of their own. Once the lock is gone the sink writes again, with the whole
    busy timeout."""
    sink = Watched(tmp_path)
    await sink.write(record("before"))  # the log and the sink's connection exist
    sink.committing.clear()
    locker = sqlite3.connect(sink.path, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    outcomes: dict[str, tuple[float, BaseException | None]] = {}

    async def run(name: str, work: Any) -> None:
        outcomes[name] = await timed(work)

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "first", lambda: sink.write(record("first")))
                await anyio.to_thread.run_sync(sink.committing.wait)  # its batch waits
                for i in range(5):
                    tg.start_soon(run, f"queued-{i}", lambda i=i: sink.write(record(f"q{i}")))
                tg.start_soon(run, "probe", sink.probe)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert sorted(outcomes) == ["first", "probe", *(f"queued-{i}" for i in range(5))]
    for outcome in outcomes.values():
        assert_refused_in_time(outcome, WITHIN_S)
    await sink.write(record("after"))
    await sink.probe()
    assert sink._conn is not None
    assert sink._conn.execute("PRAGMA busy_timeout").fetchone() == (int(BOUND_S * 1000),)
    targets = {r.target for r in await sink.query(limit=100)}
    await sink.aclose()
    assert targets == {"https://example.org/before", "https://example.org/after"}


async def test_a_short_lock_still_lets_a_whole_batch_through(tmp_path: Path) -> None:
    """The bound only cuts waits that would pass it: a lock another process lets go of
    within the busy timeout costs no record (the batch waits for it, as before)."""
    sink = Watched(tmp_path)
    await sink.write(record("before"))
    sink.committing.clear()
    locker = sqlite3.connect(sink.path, isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN IMMEDIATE")

    def release_once_committing() -> None:
        sink.committing.wait()
        locker.execute("ROLLBACK")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, release_once_committing)
            for i in range(5):
                tg.start_soon(sink.write, record(f"w{i}"))
    locker.close()
    rows = await sink.query(limit=100)
    await sink.aclose()
    assert len(rows) == 6


async def test_postgres_writes_and_probes_queued_behind_a_locked_batch_keep_the_bound(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PostgreSQL sink alike: with its table locked, a batch and a probe queued behind a
    batch that waits out the sink's bound (1.5 s here) are refused within that bound of their
    own start, not after the first one's wait plus a bound of their own."""
    monkeypatch.setattr(_postgres, "_CONNECT_TIMEOUT_S", 1)
    monkeypatch.setattr(_postgres, "_STATEMENT_TIMEOUT_S", 0.5)
    env = "WEBWARD_TEST_PG_DSN"
    settings = Settings().replace({"audit": {"postgres_dsn_env": env}})
    sink = open_audit_sink(settings, {env: postgres_dsn})
    assert isinstance(sink, _postgres.PostgresAuditSink)
    await sink.write(record("before"))
    outcomes: dict[str, tuple[float, BaseException | None]] = {}

    async def run(name: str, work: Any) -> None:
        outcomes[name] = await timed(work)

    with psycopg.connect(postgres_dsn) as locker:
        locker.execute("LOCK TABLE audit IN ACCESS EXCLUSIVE MODE")
        with anyio.fail_after(15):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "first", lambda: sink.write(record("first")))
                await anyio.wait_all_tasks_blocked()  # its batch waits on the locked table
                for i in range(5):
                    tg.start_soon(run, f"queued-{i}", lambda i=i: sink.write(record(f"q{i}")))
                tg.start_soon(run, "probe", sink.probe)
        locker.rollback()
    assert sorted(outcomes) == ["first", "probe", *(f"queued-{i}" for i in range(5))]
    for outcome in outcomes.values():
        assert_refused_in_time(outcome, 1.5 + 0.5)
    await sink.write(record("after"))
    targets = {r.target for r in await sink.query(limit=100)}
    await sink.aclose()
    assert {"https://example.org/before", "https://example.org/after"} <= targets
