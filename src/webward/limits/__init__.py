"""Abuse protections per host: a token bucket, a few requests at once, a circuit breaker.

    Limiter                   admit / record per key, refusals with when to retry (_limiter.py)
     └── pure steps           admit, success, failure, hold, backpressure      (_steps.py)
    LimitState                one atomic read-modify-write per call            (_state.py)
     ├── MemoryLimitState     one long-lived process                           (_state.py)
     ├── SQLiteLimitState     ``limits.db``: the processes of one machine      (_state.py)
     └── RedisLimitState      N replicas (the ``redis`` extra)                 (_redis.py)

:func:`open_limit_state` chooses the store from the settings; Redis is imported only when
configured.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .._errors import InvalidInput
from .._settings import Settings
from ._limiter import (
    DEFAULT_BACKPRESSURE_S,
    Limiter,
    Ticket,
    parse_retry_after,
    retry_after_from_headers,
)
from ._state import (
    BUDGET_PREFIX,
    MAX_BACKPRESSURE_S,
    REASON_BACKPRESSURE,
    REASON_CIRCUIT_OPEN,
    REASON_LIMITS_UNAVAILABLE,
    REASON_RATE_LIMITED,
    SESSION_PART,
    HostState,
    LimitState,
    MemoryLimitState,
    SQLiteLimitState,
    limits_unavailable,
)

__all__ = [
    "BUDGET_PREFIX",
    "DEFAULT_BACKPRESSURE_S",
    "MAX_BACKPRESSURE_S",
    "REASON_BACKPRESSURE",
    "REASON_CIRCUIT_OPEN",
    "REASON_LIMITS_UNAVAILABLE",
    "REASON_RATE_LIMITED",
    "SESSION_PART",
    "HostState",
    "LimitState",
    "Limiter",
    "MemoryLimitState",
    "SQLiteLimitState",
    "Ticket",
    "limits_unavailable",
    "open_limit_state",
    "parse_retry_after",
    "retry_after_from_headers",
]


def open_limit_state(
    settings: Settings, kind: str = "memory", *, clock: Callable[[], float] = time.time
) -> LimitState:
    """The limit store for ``settings``: Redis whenever ``[state] redis_url`` is set (replicas
    share one budget), else ``kind``: ``memory`` (one long-lived process) or ``sqlite``
    (``limits.db`` in the state dir; the command line's default)."""
    if kind not in ("memory", "sqlite"):
        raise InvalidInput(f"unknown limit store {kind!r}; use memory or sqlite")
    if settings.state.redis_url:
        from .._extras import require

        require("redis", "redis", "[state] redis_url")
        from ._redis import RedisLimitState  # imported only when configured

        return RedisLimitState(settings.state.redis_url, prefix=settings.state.redis_prefix)
    if kind == "memory":
        return MemoryLimitState()
    return SQLiteLimitState(settings.state.path(), clock=clock)
