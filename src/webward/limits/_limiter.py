"""Abuse protections per host: a token bucket, a few concurrent requests, a circuit breaker.

- **Rate**: a token bucket per key (a host, or ``provider:NAME`` for a search provider):
  ``per_host_rate`` tokens a second, at most ``per_host_burst`` saved up. A request spends one
  token, a page read in tier full ``1 / full_tier_budget`` of one (:meth:`Limiter.cost_for`).
  An empty bucket is refused with ``code="rate_limited"`` and when to retry.
- **Back-pressure**: an upstream 429 is not a failure. Its ``Retry-After`` (seconds or an HTTP
  date; ``X-RateLimit-Reset`` as a fallback) holds the key's bucket until then (at most
  :data:`MAX_BACKPRESSURE_S`; :data:`DEFAULT_BACKPRESSURE_S` when the server names no time).
- **Circuit**: ``breaker_failures`` consecutive failures (connect errors, timeouts, broken
  bodies, 5xx; never 4xx) open the key's circuit for ``breaker_open_s`` x the number of times
  it has opened, capped at ``breaker_max_open_s``. When that time is up the circuit is
  half-open: exactly one probe goes through; its success closes the circuit (and forgets the
  count), its failure opens it again for longer. Any answer from the host that is not a 5xx
  (a 404 included) counts as a success.
- **Concurrency**: at most ``per_host_concurrency`` requests in flight per key, and of those
  at most all but one for one agent when there are three or more, so that one agent's reads
  of URLs that stall never hold every slot of a host. These slots
  live in the process (an anyio semaphore per key), also when the rest of the state is in
  SQLite: they bound what one process sends at once, not the machine.

The state sits behind ``_state.LimitState``, one atomic read-modify-write per call, and is
changed by the pure functions of ``_steps``, so the algorithms stay the same whatever stores
them: ``MemoryLimitState`` for one long-lived process, ``SQLiteLimitState`` (``limits.db`` in
the state dir, WAL, ``BEGIN IMMEDIATE``) so that separate ``webward`` processes on one machine
share one budget (and ``_redis.RedisLimitState`` for replicas).
Time comes from an injected clock; with SQLite or Redis it must be the wall clock, which the
processes share.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any

import anyio

from .._errors import InvalidInput, Refused, human_wait
from .._settings import LimitsSettings
from ._state import (
    MAX_BACKPRESSURE_S,
    REASON_BACKPRESSURE,
    REASON_CIRCUIT_OPEN,
    REASON_LIMITS_UNAVAILABLE,
    REASON_RATE_LIMITED,
    Change,
    HostState,
    LimitState,
)
from ._steps import (
    Admission,
    Config,
    admit,
    backpressure,
    failure,
    hold,
    release_probe,
    success,
)

log = logging.getLogger("webward.limits")

__all__ = [
    "DEFAULT_BACKPRESSURE_S",
    "Limiter",
    "Ticket",
    "parse_retry_after",
    "retry_after_from_headers",
]

#: A 429 that names no time holds the key this long.
DEFAULT_BACKPRESSURE_S = 5.0


def _refusal(label: str, a: Admission) -> Refused:
    wait = max(a.retry_after, 0.001)
    if a.reason == REASON_RATE_LIMITED:
        return Refused(
            f"rate limited: {label} has had too many requests; retry in {human_wait(wait)}",
            code="rate_limited",
            reason=REASON_RATE_LIMITED,
            retry_after=wait,
        )
    if a.reason == REASON_BACKPRESSURE:
        return Refused(
            f"rate limited: {label} asked webward to slow down (HTTP 429, or 503 with a "
            f"Retry-After); retry in {human_wait(wait)}",
            code="rate_limited",
            reason=REASON_BACKPRESSURE,
            retry_after=wait,
        )
    times = "once" if a.failures == 1 else f"{a.failures} times in a row"
    return Refused(
        f"circuit open: {label} failed {times}; webward will try it again in {human_wait(wait)}",
        code="circuit_open",
        reason=REASON_CIRCUIT_OPEN,
        retry_after=wait,
    )


# ---- the front the core uses ------------------------------------------------------------


@dataclass(eq=False)
class Ticket:
    """One admitted request: holds a concurrency slot until it is recorded or released."""

    key: str
    probe: bool = False  # this request is the half-open circuit's one probe
    agent: str | None = None  # whose share of the key's slots it holds one of (None: no share)
    done: bool = False
    # It waited for a concurrency slot or a token: the call's deadline was partly spent
    # here, so its running out says nothing of the host.
    queued: bool = False


class _Slots:
    def __init__(self, size: int) -> None:
        self.sem = anyio.Semaphore(size)
        self.users = 0
        # One agent's share: how many of the key's slots each agent holds or waits for (at
        # most ``share``) and, for an agent whose share is full, the event that the release
        # of one of its slots sets.
        self.share = size - 1 if size > 2 else 0  # of one or two slots, all of them
        self.held: dict[str, int] = {}
        self.freed: dict[str, anyio.Event] = {}

    def take_share(self, agent: str) -> bool:
        """Count one of ``agent``'s share if it holds less than all of it (the usual case:
        a dict lookup, no wait); False if it holds its whole share."""
        held = self.held.get(agent, 0)
        if held >= self.share:
            return False
        self.held[agent] = held + 1
        return True

    async def wait_share(self, agent: str) -> None:
        """Wait for one of ``agent``'s own slots to be given back, and count it."""
        while not self.take_share(agent):
            freed = self.freed.get(agent)
            if freed is None:
                freed = self.freed[agent] = anyio.Event()
            await freed.wait()

    def give_share(self, agent: str) -> None:
        held = self.held[agent] - 1
        if held:
            self.held[agent] = held
        else:
            del self.held[agent]
        freed = self.freed.pop(agent, None)
        if freed is not None:  # every waiter of the agent looks again; the first takes it
            freed.set()


class Limiter:
    """Rate limit, back-pressure, circuit breaker and concurrency per key.

    Use it as ``async with limiter.guard(key) as ticket:`` (the outcome is recorded from how
    the block ends, or explicitly with :meth:`record`), or pair :meth:`acquire` with exactly
    one :meth:`record` (or :meth:`release`). ``clock`` gives seconds; with
    :class:`SQLiteLimitState` it must be the wall clock. ``sleep`` is only used when a caller
    lets :meth:`acquire` wait (``max_wait_s``).
    """

    def __init__(
        self,
        state: LimitState,
        limits: LimitsSettings,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[Any]] = anyio.sleep,
    ) -> None:
        for name in (
            "per_host_rate",
            "per_host_burst",
            "per_host_concurrency",
            "breaker_failures",
            "breaker_open_s",
            "breaker_max_open_s",
        ):
            value = getattr(limits, name)
            if not value > 0:
                raise InvalidInput(f"limits.{name} must be greater than 0 (it is {value!r})")
        if limits.per_host_burst < 1:
            raise InvalidInput("limits.per_host_burst must be at least 1")
        if not limits.full_tier_budget >= 1:
            raise InvalidInput(
                f"limits.full_tier_budget must be at least 1 (it is {limits.full_tier_budget!r})"
            )
        self.state = state
        self.limits = limits
        self._clock = clock
        self._sleep = sleep
        self._cfg = Config(
            rate=float(limits.per_host_rate),
            burst=float(limits.per_host_burst),
            failures=int(limits.breaker_failures),
            open_s=float(limits.breaker_open_s),
            max_open_s=float(limits.breaker_max_open_s),
            probe_lease_s=max(2.0 * limits.fetch_timeout_s, 1.0),
        )
        self._slots: dict[str, _Slots] = {}
        self._open: dict[str, deque[Ticket]] = {}

    def cost_for(self, tier: str) -> float:
        """The tokens one page read by ``tier`` spends: tier full has the larger budget."""
        return 1.0 / self.limits.full_tier_budget if tier == "full" else 1.0

    async def acquire(
        self,
        key: str,
        *,
        max_wait_s: float = 0.0,
        label: str | None = None,
        cost: float = 1.0,
        agent: str | None = None,
    ) -> Ticket:
        """Admit one request to ``key`` or raise :class:`Refused` (``rate_limited`` or
        ``circuit_open``, with ``retry_after``). Waits for a concurrency slot; waits out a
        refusal only if it ends within ``max_wait_s``. ``label`` names the key in messages;
        ``cost`` is the tokens the request spends (see :meth:`cost_for`); ``agent``, whose
        share of the key's slots the request takes (None: the key's slots alone)."""
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = _Slots(self.limits.per_host_concurrency)
        slots.users += 1
        # An agent holds at most all of the key's slots but one (of three or more; of one or
        # two that would halve what a lone agent gets): four reads of URLs that stall, from
        # one agent, held every slot of a host for their whole deadline, and every other
        # agent's read of that host waited behind them. Its further reads wait for one of its
        # own, and that wait is webward's queue, as the wait for the key's slots is.
        share = agent if slots.share else None
        queued = False
        if share is not None and not slots.take_share(share):
            try:
                await slots.wait_share(share)
            except BaseException:
                self._drop_user(key, slots)
                raise
            queued = True
        queued = queued or slots.sem.value == 0
        try:
            await slots.sem.acquire()
        except BaseException:
            if share is not None:
                slots.give_share(share)
            self._drop_user(key, slots)
            raise
        waited = 0.0
        try:
            while True:
                admission = await self.state.update(key, self._admitter(self._clock(), cost))
                if admission.ok:
                    break
                if waited + admission.retry_after > max_wait_s:
                    raise _refusal(label or key, admission)
                await self._sleep(admission.retry_after)
                waited += admission.retry_after
                queued = True
        except BaseException:
            slots.sem.release()
            if share is not None:
                slots.give_share(share)
            self._drop_user(key, slots)
            raise
        ticket = Ticket(key, probe=admission.probe, agent=share, queued=queued)
        self._open.setdefault(key, deque()).append(ticket)
        return ticket

    async def release(self, ticket: Ticket) -> None:
        """End ``ticket`` without recording an outcome (a probe that learnt nothing frees the
        half-open circuit for the next caller)."""
        if ticket.done:
            return
        ticket.done = True
        queue = self._open.get(ticket.key)
        if queue is not None:
            with suppress(ValueError):
                queue.remove(ticket)
            if not queue:
                del self._open[ticket.key]
        slots = self._slots.get(ticket.key)
        if slots is not None:
            slots.sem.release()
            if ticket.agent is not None:
                slots.give_share(ticket.agent)
            self._drop_user(ticket.key, slots)
        if ticket.probe:
            await self._update(ticket.key, release_probe)

    async def record(
        self,
        ticket: Ticket | str,
        status: int | None = None,
        error: BaseException | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Record how a request ended and end its ticket.

        ``ticket`` may be the key instead; then the oldest open ticket of that key is ended.
        A status of 429 is back-pressure (held for ``retry_after`` seconds); 5xx, and errors
        without a status (timeouts, connect errors), are failures; any other status is a
        success. Refusals and invalid input say nothing about the host, nor does a timeout
        of a request that first waited in webward's own queue for its slot.
        """
        if isinstance(ticket, str):
            queue = self._open.get(ticket)
            key = ticket
            tk = queue[0] if queue else None
        else:
            key, tk = ticket.key, ticket
        outcome = _classify(status, error)
        queued_timeout = tk is not None and tk.queued and getattr(error, "code", None) == "timeout"
        if outcome == "failure" and queued_timeout:
            outcome = "neutral"  # the deadline ran out partly in our own queue
        await self._finish(key, tk, outcome, retry_after)

    async def _finish(
        self, key: str, tk: Ticket | None, outcome: str, retry_after: float | None
    ) -> None:
        try:
            with anyio.CancelScope(shield=True):  # the outcome must land even when cancelled
                try:
                    await self._record_outcome(key, outcome, retry_after)
                except Refused as exc:
                    if exc.reason != REASON_LIMITS_UNAVAILABLE:
                        raise
                    # The store went away after the request went out: the host's answer is
                    # the call's to report (the next call is refused at admission); only
                    # this outcome is lost from the breaker.
                    log.warning("the outcome of a request to %s was not recorded: %s", key, exc)
                if tk is not None:
                    if outcome != "neutral":
                        tk.probe = False  # the probe told us something; its lease is spent
                    await self.release(tk)
        except BaseException:
            if tk is not None and not tk.done:
                with anyio.CancelScope(shield=True):
                    await self.release(tk)
            raise

    async def _record_outcome(self, key: str, outcome: str, retry_after: float | None) -> None:
        if outcome == "success":
            await self.record_success(key)
        elif outcome == "failure":
            await self.record_failure(key)
            if retry_after is not None:  # a 503 naming a time: a failure, and a hold
                await self._update(key, lambda cur, cfg, now: hold(cur, cfg, now, retry_after))
        elif outcome == "backpressure":
            await self.record_backpressure(key, retry_after)

    async def record_success(self, key: str) -> None:
        """The host answered (anything but a 5xx or a 429): its failure streak ends."""
        await self._update(key, success)

    async def record_failure(self, key: str) -> None:
        """A connect error, timeout, broken body or 5xx: one more consecutive failure."""
        await self._update(key, failure)

    async def record_backpressure(self, key: str, retry_after_s: float | None) -> None:
        """An upstream 429: hold the key for ``retry_after_s`` seconds (a default if None)."""
        seconds = DEFAULT_BACKPRESSURE_S if retry_after_s is None else retry_after_s
        await self._update(key, lambda cur, cfg, now: backpressure(cur, cfg, now, seconds))

    @asynccontextmanager
    async def guard(
        self,
        key: str,
        *,
        max_wait_s: float = 0.0,
        label: str | None = None,
        within_s: float | None = None,
    ) -> AsyncIterator[Ticket]:
        """Admit one request for the block and record how it ended.

        Inside the block, call ``await limiter.record(ticket, status=..., retry_after=...)``
        when a response arrives. If the block ends without a record, an exception is
        classified (see :meth:`record`) and a normal exit counts as a success. ``within_s``:
        admission (the wait for a slot included) raises ``TimeoutError`` past that long.
        """
        with anyio.fail_after(within_s):  # None: no bound
            ticket = await self.acquire(key, max_wait_s=max_wait_s, label=label)
        try:
            yield ticket
        except BaseException as exc:
            if not ticket.done:
                await self.record(ticket, error=exc)
            raise
        else:
            if not ticket.done:
                await self._finish(ticket.key, ticket, "success", None)

    async def state_of(self, key: str) -> HostState | None:
        """The stored state of ``key`` (for tests and diagnostics)."""
        return await self.state.get(key)

    async def aclose(self) -> None:
        """Close the state store."""
        await self.state.aclose()

    async def _update(
        self, key: str, fn: Callable[[HostState | None, Config, float], tuple[HostState, None]]
    ) -> None:
        now = self._clock()
        await self.state.update(key, lambda cur: fn(cur, self._cfg, now))

    def _admitter(self, now: float, cost: float) -> Change[Admission]:
        def change(cur: HostState | None) -> tuple[HostState, Admission]:
            return admit(cur, self._cfg, now, cost)

        return change

    def _drop_user(self, key: str, slots: _Slots) -> None:
        slots.users -= 1
        if slots.users <= 0 and self._slots.get(key) is slots:
            del self._slots[key]


def _classify(status: int | None, error: BaseException | None) -> str:
    """``success``, ``failure``, ``backpressure`` or ``neutral`` for the breaker."""
    if error is not None:
        if isinstance(error, Refused | InvalidInput):
            return "neutral"  # webward said no; the host said nothing
        err_status = getattr(error, "status", None)
        if isinstance(err_status, int):
            return _classify(err_status, None)
        if isinstance(error, Exception):
            return "failure"  # timeout, connect error, broken body
        return "neutral"  # cancellation from outside, KeyboardInterrupt: not the host's fault
    if status is None:
        return "neutral"
    if status == 429:
        return "backpressure"
    if status >= 500:
        return "failure"
    return "success"


# ---- Retry-After ------------------------------------------------------------------------


def parse_retry_after(
    value: str | None, now: float | None = None, *, cap: float = MAX_BACKPRESSURE_S
) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delta-seconds or an HTTP date.

    ``now`` is the wall-clock time (``time.time()`` if None). Returns None for a missing or
    unreadable value; never less than 0 or more than ``cap`` (:data:`MAX_BACKPRESSURE_S`).
    """
    if value is None:
        return None
    v = value.strip()
    if not v:
        return None
    try:
        seconds = float(v)
    except ValueError:
        seconds = math.nan
    if not math.isnan(seconds):
        if math.isinf(seconds):
            return cap if seconds > 0 else 0.0
        return min(max(seconds, 0.0), cap)
    import email.utils  # an HTTP date is rare: the email package is not loaded for every read

    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    current = time.time() if now is None else now
    return min(max(when.timestamp() - current, 0.0), cap)


def retry_after_from_headers(
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    now: float | None = None,
    *,
    cap: float = MAX_BACKPRESSURE_S,
) -> float | None:
    """Seconds to wait from response headers: ``Retry-After``, else ``X-RateLimit-Reset``.

    ``X-RateLimit-Reset`` may list several windows (Brave: ``1, 1419704``); the longest
    window whose ``X-RateLimit-Remaining`` is 0 wins, else the shortest.
    """
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    found: dict[str, str] = {}
    for k, v in pairs:
        found.setdefault(k.lower(), v)
    from_retry = parse_retry_after(found.get("retry-after"), now, cap=cap)
    if from_retry is not None:
        return from_retry
    resets = _numbers(found.get("x-ratelimit-reset"))
    if not resets:
        return None
    remaining = _numbers(found.get("x-ratelimit-remaining"))
    exhausted = [r for r, left in zip(resets, remaining, strict=False) if left <= 0]
    chosen = max(exhausted) if exhausted else min(resets)
    return min(max(chosen, 0.0), cap)


def _numbers(value: str | None) -> list[float]:
    if not value:
        return []
    out: list[float] = []
    for part in value.split(","):
        try:
            n = float(part.strip())
        except ValueError:
            return []
        if math.isnan(n) or math.isinf(n):
            return []
        out.append(n)
    return out
