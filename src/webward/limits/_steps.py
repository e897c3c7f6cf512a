"""The limiter's algorithms: pure functions of (state, settings, now), no I/O.

Each step takes a key's :class:`~._state.HostState` (``None`` for a key never seen), the
limiter's :class:`Config` and the time, and returns the new state and a result, so that a
store can apply it in one atomic read-modify-write and run it again if it lost a race
(``_state.LimitState.update``). :func:`admit` spends tokens and answers an
:class:`Admission`; :func:`success`, :func:`failure`, :func:`hold`, :func:`backpressure` and
:func:`release_probe` move the circuit breaker and the back-pressure hold.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ._state import (
    MAX_BACKPRESSURE_S,
    REASON_BACKPRESSURE,
    REASON_CIRCUIT_OPEN,
    REASON_RATE_LIMITED,
    HostState,
)

__all__ = [
    "Admission",
    "Config",
    "admit",
    "backpressure",
    "failure",
    "hold",
    "release_probe",
    "success",
]

# While a half-open probe is in flight, others are told to come back after at most this long;
# the probe itself holds a lease of twice the fetch deadline, in case its process dies.
_PROBE_RETRY_HINT_S = 2.0


@dataclass(frozen=True)
class Config:
    rate: float
    burst: float
    failures: int
    open_s: float
    max_open_s: float
    probe_lease_s: float


@dataclass(frozen=True)
class Admission:
    ok: bool
    probe: bool = False
    reason: str = ""
    retry_after: float = 0.0
    failures: int = 0


def _fresh(cfg: Config, now: float) -> HostState:
    return HostState(tokens=cfg.burst, updated=now)


def _refill(s: HostState, cfg: Config, now: float) -> HostState:
    # A clock that steps backwards refills nothing (and never un-spends tokens).
    s = _within_reach(s, cfg, now)
    elapsed = max(0.0, now - s.updated)
    return replace(
        s, tokens=min(cfg.burst, s.tokens + elapsed * cfg.rate), updated=max(now, s.updated)
    )


def _within_reach(s: HostState, cfg: Config, now: float) -> HostState:
    """``s`` with no time further ahead of ``now`` than it can be set: a machine that ran
    with its clock years ahead (booted before NTP, a VM's clock) left times from then in the
    store, and once the clock was put right the bucket refilled nothing until that time and
    a hold or an open circuit lasted as long, every read of the host refused ("retry in
    0.5 s") for years. A step back by more than the bucket takes to fill is taken as the
    clock put right: the bucket counts from now, its tokens as they were; a small one (clocks
    of processes sharing a store differ a little) still refills nothing. A hold, an open
    circuit or a probe's lease is never longer from now than its own bound."""
    full_s = cfg.burst / cfg.rate if cfg.rate > 0 else 0.0
    if (  # almost always: a state is made again only when a clock went back (every step)
        s.updated - now <= full_s
        and s.hold_until <= now + MAX_BACKPRESSURE_S
        and s.open_until <= now + cfg.max_open_s
        and s.probe_until <= now + cfg.probe_lease_s
    ):
        return s
    return replace(
        s,
        updated=now if s.updated - now > full_s else s.updated,
        hold_until=min(s.hold_until, now + MAX_BACKPRESSURE_S),
        open_until=min(s.open_until, now + cfg.max_open_s),
        probe_until=min(s.probe_until, now + cfg.probe_lease_s),
    )


def admit(
    cur: HostState | None, cfg: Config, now: float, cost: float = 1.0
) -> tuple[HostState, Admission]:
    s = _refill(cur or _fresh(cfg, now), cfg, now)
    if now < s.hold_until:
        return s, Admission(False, reason=REASON_BACKPRESSURE, retry_after=s.hold_until - now)
    probe = False
    if s.open_until:
        if now < s.open_until:
            return s, Admission(
                False,
                reason=REASON_CIRCUIT_OPEN,
                retry_after=s.open_until - now,
                failures=s.failures,
            )
        if now < s.probe_until:  # half-open, and someone else is already probing
            return s, Admission(
                False,
                reason=REASON_CIRCUIT_OPEN,
                retry_after=min(s.probe_until - now, _PROBE_RETRY_HINT_S),
                failures=s.failures,
            )
        probe = True
    if s.tokens < cost:
        return s, Admission(
            False, reason=REASON_RATE_LIMITED, retry_after=(cost - s.tokens) / cfg.rate
        )
    s = replace(s, tokens=s.tokens - cost)
    if probe:
        s = replace(s, probe_until=now + cfg.probe_lease_s)
    return s, Admission(True, probe=probe)


def success(cur: HostState | None, cfg: Config, now: float) -> tuple[HostState, None]:
    s = cur or _fresh(cfg, now)
    return replace(s, failures=0, opened=0, open_until=0.0, probe_until=0.0), None


def failure(cur: HostState | None, cfg: Config, now: float) -> tuple[HostState, None]:
    s = cur or _fresh(cfg, now)
    failures = s.failures + 1
    half_open = bool(s.open_until) and now >= s.open_until
    closed = not s.open_until
    if half_open or (closed and failures >= cfg.failures):
        opened = s.opened + 1
        open_for = min(cfg.open_s * opened, cfg.max_open_s)
        return replace(
            s, failures=failures, opened=opened, open_until=now + open_for, probe_until=0.0
        ), None
    return replace(s, failures=failures), None  # open already, or not yet at the threshold


def hold(cur: HostState | None, cfg: Config, now: float, seconds: float) -> tuple[HostState, None]:
    s = _refill(cur or _fresh(cfg, now), cfg, now)
    hold = now + min(max(seconds, 0.0), MAX_BACKPRESSURE_S)
    return replace(s, tokens=0.0, hold_until=max(s.hold_until, hold)), None


def backpressure(
    cur: HostState | None, cfg: Config, now: float, seconds: float
) -> tuple[HostState, None]:
    # A 429 means the host answered: its failure streak ends, and its bucket empties and is
    # held until the time it named.
    s, _ = hold(cur, cfg, now, seconds)
    return replace(s, failures=0, opened=0, open_until=0.0, probe_until=0.0), None


def release_probe(cur: HostState | None, cfg: Config, now: float) -> tuple[HostState, None]:
    s = cur or _fresh(cfg, now)
    return replace(s, probe_until=0.0), None
