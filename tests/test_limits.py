"""Limits: token bucket, back-pressure, circuit breaker and concurrency, on a fake clock."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskStatus
from hypothesis import given, settings
from hypothesis import strategies as st

import webward
from webward._errors import InvalidInput, Refused, UpstreamError
from webward._settings import LimitsSettings, Settings
from webward.limits import (
    DEFAULT_BACKPRESSURE_S,
    MAX_BACKPRESSURE_S,
    REASON_BACKPRESSURE,
    REASON_CIRCUIT_OPEN,
    REASON_LIMITS_UNAVAILABLE,
    REASON_RATE_LIMITED,
    HostState,
    Limiter,
    LimitState,
    MemoryLimitState,
    SQLiteLimitState,
    Ticket,
    limits_unavailable,
    open_limit_state,
    parse_retry_after,
    retry_after_from_headers,
)
from webward.testing import FakeClock

HOST = "example.org"


@pytest.fixture(params=["memory", "sqlite"])
async def state(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LimitState]:
    """Every behaviour holds for both stores."""
    store: LimitState = (
        MemoryLimitState() if request.param == "memory" else SQLiteLimitState(tmp_path)
    )
    yield store
    await store.aclose()


def limiter(state: LimitState, clock: FakeClock, **changes: float) -> Limiter:
    return Limiter(state, replace(LimitsSettings(), **changes), clock=clock, sleep=clock.sleep)


async def refused(lim: Limiter, key: str = HOST) -> Refused:
    with pytest.raises(Refused) as info:
        await lim.acquire(key)
    return info.value


@pytest.mark.anyio
async def test_bucket_allows_a_burst_then_refuses_with_when(state: LimitState) -> None:
    """Five at once pass (burst 5); the sixth is refused and told to retry in 0.5 s (2/s)."""
    clock = FakeClock()
    lim = limiter(state, clock)
    for _ in range(5):
        await lim.record(await lim.acquire(HOST), status=200)
    err = await refused(lim)
    assert err.code == "rate_limited"
    assert err.reason == REASON_RATE_LIMITED
    assert err.retry_after == pytest.approx(0.5)
    assert err.message == "rate limited: example.org has had too many requests; retry in 0.5 s"
    assert err.to_wire() == {
        "error": {"code": "rate_limited", "message": err.message, "retryAfter": 0.5}
    }
    clock.advance(0.5)
    await lim.record(await lim.acquire(HOST), status=200)
    await refused(lim)
    # Another host has its own bucket.
    await lim.record(await lim.acquire("other.example"), status=200)


@pytest.mark.anyio
async def test_tier_full_has_the_larger_budget_of_the_same_bucket(state: LimitState) -> None:
    """Tier full's reads spend a quarter token (full_tier_budget 4): 20 at once where the other
    tiers get 5, four times the refill, and from the host's one bucket, which the others then
    find as empty as full left it."""
    clock = FakeClock()
    lim = limiter(state, clock)
    full = lim.cost_for("full")
    assert (full, lim.cost_for("connected"), lim.cost_for("as-owner")) == (0.25, 1.0, 1.0)
    for _ in range(20):
        await lim.record(await lim.acquire(HOST, cost=full), status=200)
    with pytest.raises(Refused) as info:
        await lim.acquire(HOST, cost=full)
    assert info.value.retry_after == pytest.approx(0.125)  # a quarter token at 2 a second
    assert (await refused(lim)).retry_after == pytest.approx(0.5)  # a whole one
    clock.advance(0.5)  # one token: four reads in tier full, or one in any other
    for _ in range(4):
        await lim.record(await lim.acquire(HOST, cost=full), status=200)
    await refused(lim)
    clock.advance(0.5)
    await lim.record(await lim.acquire(HOST), status=200)
    with pytest.raises(Refused):
        await lim.acquire(HOST, cost=full)


@pytest.mark.anyio
async def test_bucket_refills_only_up_to_the_burst(state: LimitState) -> None:
    """A long quiet spell saves up at most per_host_burst tokens."""
    clock = FakeClock()
    lim = limiter(state, clock)
    await lim.record(await lim.acquire(HOST), status=200)
    clock.advance(3600)
    for _ in range(5):
        await lim.record(await lim.acquire(HOST), status=200)
    await refused(lim)


@pytest.mark.anyio
async def test_circuit_opens_after_five_failures_and_probes_once(state: LimitState) -> None:
    """Five failures open the circuit for 30 s; then one probe; its failure reopens for 60 s."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=100)
    for _ in range(4):
        await lim.record(await lim.acquire(HOST), error=UpstreamError("reset", reason="connect"))
    await lim.record(await lim.acquire(HOST), status=503)  # a 5xx is the fifth failure
    err = await refused(lim)
    assert err.code == "circuit_open"
    assert err.reason == REASON_CIRCUIT_OPEN
    assert err.retry_after == pytest.approx(30)
    assert err.message == (
        "circuit open: example.org failed 5 times in a row; webward will try it again in 30 s"
    )
    clock.advance(29.9)
    await refused(lim)
    clock.advance(0.1)
    probe = await lim.acquire(HOST)  # half-open: exactly one probe
    assert probe.probe
    assert (await refused(lim)).code == "circuit_open"
    await lim.record(probe, error=UpstreamError("timed out", code="timeout"))
    err = await refused(lim)
    assert err.retry_after == pytest.approx(60)  # 30 s x opened twice
    assert "failed 6 times in a row" in err.message
    clock.advance(60)
    probe = await lim.acquire(HOST)
    await lim.record(probe, status=200)  # the probe succeeds: closed, counts forgotten
    for _ in range(4):
        await lim.record(await lim.acquire(HOST), status=500)
    await lim.record(await lim.acquire(HOST), status=200)
    s = await lim.state_of(HOST)
    assert s is not None and s.failures == 0 and s.opened == 0 and s.open_until == 0


@pytest.mark.anyio
async def test_open_time_grows_and_is_capped(state: LimitState) -> None:
    """Each reopening stays open 30 s x times opened, never more than breaker_max_open_s."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1000, breaker_failures=1)
    seen = []
    for _ in range(13):
        await lim.record(await lim.acquire(HOST), status=502)
        err = await refused(lim)
        seen.append(round(err.retry_after or 0))
        clock.advance(err.retry_after or 0)
    assert seen == [30, 60, 90, 120, 150, 180, 210, 240, 270, 300, 300, 300, 300]


@pytest.mark.anyio
async def test_4xx_never_counts_and_ends_a_streak(state: LimitState) -> None:
    """404s and 403s are answers, not failures: they never open the circuit and reset the count."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1000)
    for _ in range(20):
        await lim.record(await lim.acquire(HOST), status=404)
    for _ in range(4):
        await lim.record(await lim.acquire(HOST), status=500)
    await lim.record(await lim.acquire(HOST), error=UpstreamError("forbidden", status=403))
    for _ in range(4):
        await lim.record(await lim.acquire(HOST), status=500)
    await lim.record(await lim.acquire(HOST), status=200)  # still closed


@pytest.mark.anyio
async def test_429_is_backpressure_not_failure(state: LimitState) -> None:
    """A 429 holds the host until its Retry-After and never opens the circuit."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1000, breaker_failures=1)
    await lim.record(await lim.acquire(HOST), status=429, retry_after=12)
    err = await refused(lim)
    assert err.code == "rate_limited"
    assert err.reason == REASON_BACKPRESSURE
    assert err.retry_after == pytest.approx(12)
    assert (
        err.message
        == "rate limited: example.org asked webward to slow down (HTTP 429, or 503 with a "
        "Retry-After); retry in 12 s"
    )
    clock.advance(12)
    await lim.record(await lim.acquire(HOST), status=429)  # no Retry-After: the default hold
    assert (await refused(lim)).retry_after == pytest.approx(DEFAULT_BACKPRESSURE_S)
    clock.advance(DEFAULT_BACKPRESSURE_S)
    await lim.record(await lim.acquire(HOST), status=200)
    s = await lim.state_of(HOST)
    assert s is not None and s.open_until == 0


@pytest.mark.anyio
async def test_a_long_hold_is_told_in_the_unit_a_person_reads(state: LimitState) -> None:
    """A provider's hour-long Retry-After is refused as "60 min" on every later call, as the
    first refusal (the provider's own) says it, never "3600 s"."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1000)
    await lim.record(await lim.acquire(HOST), status=429, retry_after=3600)
    assert (await refused(lim)).message.endswith("; retry in 60 min")
    clock.advance(3600 - 90)
    assert (await refused(lim)).message.endswith("; retry in 90 s")


@pytest.mark.anyio
async def test_a_429_holds_at_most_an_hour(state: LimitState) -> None:
    """A server cannot hold a host for longer than MAX_BACKPRESSURE_S."""
    clock = FakeClock()
    lim = limiter(state, clock)
    await lim.record_backpressure(HOST, 10**9)
    assert (await refused(lim)).retry_after == pytest.approx(MAX_BACKPRESSURE_S)


@pytest.mark.anyio
async def test_guard_classifies_how_the_block_ended(state: LimitState) -> None:
    """In guard(): upstream errors are failures, refusals are neutral, a clean exit succeeds."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1000, breaker_failures=3)
    for _ in range(2):
        with pytest.raises(UpstreamError):
            async with lim.guard(HOST):
                raise UpstreamError("timed out", code="timeout")
    for _ in range(5):
        with pytest.raises(Refused):
            async with lim.guard(HOST):
                raise Refused("too large", code="too_large")
    s = await lim.state_of(HOST)
    assert s is not None and s.failures == 2
    async with lim.guard(HOST):
        pass
    s = await lim.state_of(HOST)
    assert s is not None and s.failures == 0
    for _ in range(3):
        with pytest.raises(OSError):
            async with lim.guard(HOST):
                raise ConnectionResetError("reset")
    assert (await refused(lim)).code == "circuit_open"


@pytest.mark.anyio
async def test_explicit_record_inside_guard(state: LimitState) -> None:
    """A status recorded inside guard() is the outcome; the block's exit adds nothing."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1000, breaker_failures=1)
    async with lim.guard(HOST) as ticket:
        await lim.record(ticket, status=503)
    assert (await refused(lim)).code == "circuit_open"


@pytest.mark.anyio
async def test_record_by_key_ends_the_oldest_ticket(state: LimitState) -> None:
    """record(key, ...) (how the core's hop hooks call it) frees the concurrency slot."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1000, per_host_concurrency=1)
    for _ in range(3):  # with one slot, this would hang if record(key) did not free it
        await lim.acquire(HOST)
        await lim.record(HOST, 200, None, None)


@pytest.mark.anyio
async def test_concurrency_slots_per_host(state: LimitState) -> None:
    """With per_host_concurrency=2 a third request waits until one of two finishes."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1000, per_host_concurrency=2)
    first = await lim.acquire(HOST)
    await lim.acquire(HOST)
    other = await lim.acquire("other.example")  # other hosts are not held up
    got: list[object] = []

    async def third(task_status: TaskStatus[None]) -> None:
        task_status.started()
        got.append(await lim.acquire(HOST))

    async with anyio.create_task_group() as tg:
        await tg.start(third)
        await anyio.wait_all_tasks_blocked()
        assert got == []
        await lim.record(first, status=200)
    assert len(got) == 1
    await lim.release(other)


@pytest.mark.anyio
async def test_one_agent_holds_all_of_a_hosts_slots_but_one(state: LimitState) -> None:
    """Of four slots, one agent holds three: its fourth request waits (queued) for one of
    its own while another agent's request takes the last slot at once, and a wait given up
    leaves nothing behind. Of two slots, one agent holds both (half would halve a lone
    agent's reads)."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1000, per_host_concurrency=4)
    mallory = [await lim.acquire(HOST, agent="mallory") for _ in range(3)]
    got: list[Ticket] = []

    async def fourth(task_status: TaskStatus[None]) -> None:
        task_status.started()
        got.append(await lim.acquire(HOST, agent="mallory"))

    async with anyio.create_task_group() as gone:  # a wait for its share, cancelled
        gone.start_soon(partial(lim.acquire, HOST, agent="mallory"))
        await anyio.wait_all_tasks_blocked()
        gone.cancel_scope.cancel()
    async with anyio.create_task_group() as tg:
        await tg.start(fourth)
        await anyio.wait_all_tasks_blocked()
        assert got == []  # mallory's share is full, though a slot of the host is free
        alice = await lim.acquire(HOST, agent="alice")
        assert not alice.queued
        await lim.record(alice, status=200)
        assert got == []  # alice's slot given back is not mallory's
        await lim.record(mallory[0], status=200)
    (late,) = got
    assert late.queued and late.agent == "mallory"  # its deadline ran partly in our queue
    for ticket in (*mallory[1:], late):
        await lim.record(ticket, status=200)
    assert lim._slots == {}  # nothing left behind
    two = limiter(state, clock, per_host_burst=1000, per_host_concurrency=2)
    both = [await two.acquire(HOST, agent="mallory") for _ in range(2)]
    assert not any(t.queued for t in both)
    for ticket in both:
        await two.release(ticket)


@pytest.mark.anyio
async def test_a_timeout_after_waiting_for_a_slot_is_not_the_hosts_failure(
    state: LimitState,
) -> None:
    """A request that waited in webward's own queue for its slot and then ran out of its
    deadline says nothing of the host: it does not count toward the breaker. Other failures
    of queued requests (a 5xx) and timeouts of requests that never waited still do."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1000, per_host_concurrency=1, breaker_failures=2)
    timeout = UpstreamError("the host did not answer in time", code="timeout")
    first = await lim.acquire(HOST)
    queued: list[Ticket] = []

    async def wait_for_a_slot(task_status: TaskStatus[None]) -> None:
        task_status.started()
        queued.append(await lim.acquire(HOST))

    async with anyio.create_task_group() as tg:
        await tg.start(wait_for_a_slot)
        await anyio.wait_all_tasks_blocked()
        await lim.record(first, status=200)
    (second,) = queued
    assert second.queued and not first.queued
    await lim.record(second, error=timeout)
    third = await lim.acquire(HOST)  # not queued: its timeout counts
    await lim.record(third, error=timeout)
    assert (await lim.state_of(HOST)).failures == 1  # type: ignore[union-attr]
    fourth = await lim.acquire(HOST)
    await lim.record(fourth, error=timeout)
    assert (await refused(lim)).code == "circuit_open"


class StoreGoneAway(MemoryLimitState):
    """A shared store that stops answering once ``gone`` is set (Redis killed mid-call)."""

    gone = False

    async def update(self, key: str, change: Any) -> Any:
        if self.gone:
            raise limits_unavailable("redis://127.0.0.1:6390/0", "Connection refused")
        return await super().update(key, change)


@pytest.mark.anyio
async def test_a_store_lost_after_the_request_went_out_does_not_fail_the_call() -> None:
    """The host answered; only its outcome cannot be recorded: the call keeps its answer (a
    refusal now would record a page read as refused), the slot is freed, and the next
    request is refused at admission."""
    store = StoreGoneAway()
    lim = limiter(store, FakeClock(), per_host_concurrency=1)
    ticket = await lim.acquire(HOST)
    store.gone = True
    await lim.record(ticket, status=200)
    assert ticket.done
    assert (await refused(lim)).reason == REASON_LIMITS_UNAVAILABLE


@pytest.mark.anyio
async def test_a_probe_that_learns_nothing_frees_the_half_open_circuit(state: LimitState) -> None:
    """A probe ended without an outcome (the guard refused its redirect) lets the next one in."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1000, breaker_failures=1)
    await lim.record(await lim.acquire(HOST), status=500)
    clock.advance(30)
    probe = await lim.acquire(HOST)
    await lim.record(probe, error=Refused("internal address", reason="internal_address"))
    second = await lim.acquire(HOST)
    assert second.probe


@pytest.mark.anyio
async def test_acquire_may_wait_out_a_short_refusal(state: LimitState) -> None:
    """With max_wait_s, a refusal that ends soon enough is waited out on the injected sleep."""
    clock = FakeClock()
    lim = limiter(state, clock, per_host_burst=1)
    start = clock.now
    await lim.record(await lim.acquire(HOST), status=200)
    await lim.record(await lim.acquire(HOST, max_wait_s=1.0), status=200)
    assert clock.now - start == pytest.approx(0.5)
    with pytest.raises(Refused):
        await lim.acquire(HOST, max_wait_s=0.1)


@pytest.mark.anyio
async def test_label_names_the_key_in_messages() -> None:
    """A provider key can be named for people: "the brave search provider"."""
    clock = FakeClock()
    lim = limiter(MemoryLimitState(), clock, per_host_burst=1)
    await lim.record(await lim.acquire("provider:brave"), status=200)
    with pytest.raises(Refused, match=r"^rate limited: the brave search provider has had"):
        await lim.acquire("provider:brave", label="the brave search provider")


@given(
    steps=st.lists(
        st.tuples(st.floats(min_value=0, max_value=3, allow_nan=False), st.integers(1, 6)),
        min_size=1,
        max_size=25,
    ),
    rate=st.sampled_from([0.5, 1.0, 2.0, 10.0]),
    burst=st.integers(1, 8),
)
@settings(max_examples=60, deadline=None)
def test_property_bucket_never_exceeds_burst_plus_rate(
    steps: list[tuple[float, int]], rate: float, burst: int
) -> None:
    """Over any schedule, admissions never exceed burst + rate x elapsed, and a refusal's
    retry_after is always enough to get in."""

    async def main() -> None:
        clock = FakeClock()
        lim = limiter(MemoryLimitState(), clock, per_host_rate=rate, per_host_burst=burst)
        start, admitted = clock.now, 0
        for advance, tries in steps:
            clock.advance(advance)
            for _ in range(tries):
                try:
                    await lim.record(await lim.acquire(HOST), status=200)
                    admitted += 1
                except Refused as err:
                    assert err.retry_after is not None and err.retry_after > 0
                    assert err.retry_after <= 1 / rate + 1e-9
                    break
            assert admitted <= burst + rate * (clock.now - start) + 1e-6

    anyio.run(main)


_TWO_PROCESS = textwrap.dedent(
    """
    import sys, anyio
    from webward._errors import Refused, UpstreamError
    from webward.limits import Limiter, SQLiteLimitState
    from webward._settings import LimitsSettings

    async def main(state_dir, action, key, n):
        clock = lambda: 1_000_000.0  # one instant for both processes: no sleeps, no luck
        lim = Limiter(SQLiteLimitState(state_dir, clock=clock), LimitsSettings(), clock=clock)
        admitted = 0
        for _ in range(n):
            try:
                ticket = await lim.acquire(key)
            except Refused as err:
                print("refused", err.code, err.retry_after)
                break
            admitted += 1
            if action == "fail":
                await lim.record(ticket, error=UpstreamError("reset"))
            else:
                await lim.record(ticket, status=200)
        print("admitted", admitted)
        await lim.aclose()

    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
    """
)


def _run_child(state_dir: Path, action: str, key: str, n: int) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(webward.__file__).resolve().parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", _TWO_PROCESS, str(state_dir), action, key, str(n)],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    return out.stdout.split("\n")[:-1]


def test_two_processes_share_one_budget_through_sqlite(tmp_path: Path) -> None:
    """The second webward process sees the tokens and failures the first one spent."""
    assert _run_child(tmp_path, "ok", HOST, 5) == ["admitted 5"]
    assert _run_child(tmp_path, "ok", HOST, 1) == ["refused rate_limited 0.5", "admitted 0"]
    assert _run_child(tmp_path, "fail", "down.example", 5) == ["admitted 5"]
    assert _run_child(tmp_path, "ok", "down.example", 1) == [
        "refused circuit_open 30.0",
        "admitted 0",
    ]
    assert (tmp_path / "limits.db").is_file()


@pytest.mark.anyio
async def test_unusable_sqlite_state_refuses(tmp_path: Path) -> None:
    """A state dir that cannot exist (its parent is a file) refuses: limits fail closed."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    lim = Limiter(SQLiteLimitState(blocker / "state"), LimitsSettings(), clock=FakeClock())
    with pytest.raises(Refused) as info:
        await lim.acquire(HOST)
    assert info.value.reason == REASON_LIMITS_UNAVAILABLE
    assert info.value.message.startswith("refused: the rate-limit state is unavailable; ")
    await lim.aclose()
    store = SQLiteLimitState(blocker / "state")
    with pytest.raises(Refused) as probed:  # what /readyz asks: the same refusal, no call
        await store.probe()
    assert probed.value.reason == REASON_LIMITS_UNAVAILABLE
    assert "point [state] redis_url (or [state] dir) at one that answers" in probed.value.message
    await store.aclose()
    fine = SQLiteLimitState(tmp_path / "fine")
    await fine.probe()  # a usable dir: the probe passes
    await fine.aclose()


@pytest.mark.anyio
async def test_the_sqlite_probe_fails_on_a_full_or_read_only_store(tmp_path: Path) -> None:
    """/readyz's probe commits a real write, so it fails as the store's own writes do: on a
    full disk (SQLite's own page limit, as a full disk answers SQLITE_FULL) and on a store
    that may not be written. Taking the write lock and rolling back wrote nothing and passed
    on both."""
    store = SQLiteLimitState(tmp_path)
    await store.update(HOST, lambda _: (HostState(1.0, 1.0), None))
    assert store._conn is not None
    (pages,) = store._conn.execute("PRAGMA page_count").fetchone()
    store._conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(Refused) as full:
        await store.probe()
    assert full.value.reason == REASON_LIMITS_UNAVAILABLE
    assert f"the store at {store.path} failed (database or disk is full)" in full.value.message
    store._conn.execute(f"PRAGMA max_page_count = {pages * 100}")
    await store.probe()  # room again: it passes
    store._conn.execute("PRAGMA query_only = ON")  # a store that may not be written
    with pytest.raises(Refused) as read_only:
        await store.probe()
    assert read_only.value.reason == REASON_LIMITS_UNAVAILABLE
    await store.aclose()


def test_bad_limits_are_invalid_input() -> None:
    """A zero rate, burst, concurrency or breaker setting is refused when the limiter is built."""
    for name in (
        "per_host_rate",
        "per_host_burst",
        "per_host_concurrency",
        "breaker_failures",
        "breaker_open_s",
    ):
        with pytest.raises(InvalidInput, match=name):
            Limiter(MemoryLimitState(), replace(LimitsSettings(), **{name: 0}))
    for budget in (0.5, 0.0, float("nan")):  # a smaller budget than the other tiers' is a typo
        with pytest.raises(InvalidInput, match="full_tier_budget must be at least 1"):
            Limiter(MemoryLimitState(), replace(LimitsSettings(), full_tier_budget=budget))


def test_open_limit_state_kinds(tmp_path: Path) -> None:
    """memory and sqlite stores come from settings; a Redis URL picks Redis whatever the kind."""
    s = Settings().replace({"state": {"dir": str(tmp_path)}})
    assert isinstance(open_limit_state(s, "memory"), MemoryLimitState)
    sqlite_state = open_limit_state(s, "sqlite")
    assert isinstance(sqlite_state, SQLiteLimitState)
    assert sqlite_state.path == tmp_path / "limits.db"
    with pytest.raises(InvalidInput, match="unknown limit store"):
        open_limit_state(s, "etcd")
    redis_state = open_limit_state(s.replace({"state": {"redis_url": "redis://127.0.0.1:1"}}))
    assert type(redis_state).__name__ == "RedisLimitState"  # nothing is connected until used


RETRY_AFTER_CASES: list[tuple[str | None, float | None]] = [
    ("120", 120.0),
    (" 7 ", 7.0),
    ("1.5", 1.5),
    ("-3", 0.0),
    ("99999999", MAX_BACKPRESSURE_S),
    ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),  # now is 07:28:00
    ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # in the past
    ("soon", None),
    ("", None),
    (None, None),
]


@pytest.mark.parametrize(("value", "expected"), RETRY_AFTER_CASES)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    """Retry-After is delta-seconds or an HTTP date, clamped to [0, MAX_BACKPRESSURE_S]."""
    now = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    got = parse_retry_after(value, now)
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_retry_after_from_headers() -> None:
    """Retry-After wins; else X-RateLimit-Reset, the exhausted window first (Brave's windows)."""
    assert retry_after_from_headers({"Retry-After": "3", "X-RateLimit-Reset": "9"}) == 3.0
    brave = [
        ("X-RateLimit-Limit", "1, 15000"),
        ("X-RateLimit-Remaining", "0, 14000"),
        ("X-RateLimit-Reset", "1, 1419704"),
    ]
    assert retry_after_from_headers(brave) == 1.0
    quota = [("x-ratelimit-remaining", "1, 0"), ("x-ratelimit-reset", "1, 1419704")]
    assert retry_after_from_headers(quota) == MAX_BACKPRESSURE_S
    assert retry_after_from_headers({"X-RateLimit-Reset": "4, 9"}) == 4.0
    assert retry_after_from_headers({"X-RateLimit-Reset": "nan"}) is None
    assert retry_after_from_headers({}) is None


@pytest.mark.anyio
async def test_the_memory_store_stays_bounded_and_keeps_hosts_that_answer() -> None:
    """Failing hosts (marked: failures, an open circuit, a hold) were never dropped, and past
    the size every update scanned the whole store for a healthy key: 100,000 hosts that
    refuse connections held the store and made each update cost 50 ms. Now the store stays
    within its size, marked keys take at most half, and a host that answers keeps its state
    however many fail after it."""
    store = MemoryLimitState(max_keys=100)
    lim = limiter(store, FakeClock(), per_host_burst=5)
    await lim.record(await lim.acquire(HOST), status=200)  # a host that answers, bucket spent by 1
    for n in range(1_000):  # hosts that fail: one failure each
        await lim.record(await lim.acquire(f"down-{n}.example"), status=503)
    kept = [await store.get(f"down-{n}.example") for n in range(1_000)]
    assert sum(state is not None for state in kept) == 50  # half of the size, the newest
    assert kept[-1] is not None and kept[0] is None
    answered = await store.get(HOST)
    assert answered is not None and answered.tokens < 5  # its bucket remembered


def test_a_long_lived_sqlite_store_drops_rows_idle_a_day(tmp_path: Path) -> None:
    """limits.db dropped rows idle a day only when opened: in webward serve, which keeps its
    budgets there without Redis, every session name a client made up kept its session
    budget's row until the next restart. Idle rows now go while the store is open too, as
    Redis's keys expire; a row in use stays."""
    from webward._budgets import Budgets

    async def main() -> tuple[int, bool]:
        clock = FakeClock(1_800_000_000.0)
        settings = Settings().replace(
            {"agents": {"bot": {"tier": "connected", "budget": {"fetch_per_session": 5}}}}
        )
        store = SQLiteLimitState(tmp_path, clock=clock)
        budgets = Budgets(settings, store, clock=clock)
        try:
            for n in range(50):
                await budgets.charge_call("bot", "fetch", f"gateway:bot:made-up-{n}")
            clock.advance(2 * 86_400)
            await budgets.charge_call("bot", "fetch", "gateway:bot:live")
            live = await store.get("budget:bot:fetch:calls:session:gateway:bot:live")
        finally:
            await store.aclose()
        with sqlite3.connect(tmp_path / "limits.db") as db:
            (rows,) = db.execute("SELECT count(*) FROM hosts").fetchone()
        return rows, live is not None

    assert anyio.run(main) == (1, True)


@pytest.mark.anyio
async def test_a_clock_put_back_from_years_ahead_does_not_lock_the_host_out(
    state: LimitState,
) -> None:
    """A machine that ran with its clock in 2099 (booted before NTP) and then had it put
    right: the host's bucket, emptied then, refilled nothing until 2099 and a hold set then
    lasted as long, every read refused "retry in 0.5 s" for years. The bucket now counts
    from the corrected time, and a hold is never longer than its bound from now."""
    clock = FakeClock(start=4_070_908_800.0)  # 2099-01-01
    lim = limiter(state, clock)
    for _ in range(5):
        await lim.record(await lim.acquire(HOST), status=200)
    await lim.record(await lim.acquire("held.example"), status=429)  # held: Retry-After
    clock.now = 1_796_000_000.0  # 2026: the clock put right
    err = await refused(lim)  # the tokens spent stay spent: no un-spending
    assert err.retry_after == pytest.approx(0.5)
    clock.advance(0.5)
    await lim.record(await lim.acquire(HOST), status=200)  # as told: 0.5 s later, admitted
    held = await refused(lim, "held.example")
    assert held.retry_after <= 3600
    clock.advance(3600)
    await lim.record(await lim.acquire("held.example"), status=200)
