"""Limiter state shared through Redis, so N gateway replicas keep one budget.

:class:`RedisLimitState` keeps each limiter key's :class:`HostState` as one JSON value under
``webward:limits:<key>`` (``[state] redis_prefix``, then ``limits:``) and changes it with an
optimistic ``WATCH``/``MULTI``/``EXEC`` loop: two replicas spending the same host's last token
race, one ``EXEC`` fails, and that replica reads the new state and decides again. Any Redis failure refuses the read
(``limits_unavailable``): abuse protections fail closed, and promptly: each change (its wait
for the process's other writers of the key included) ends within twice the client's timeout,
and a Redis that just gave no answer is not asked again for a timeout's length
(``_redis_client.RedisHealth``, shared with the page cache).

``[state] redis_url`` chooses it (``open_limit_state``). The URL may carry a password; messages
name only its host, port and database (``_redis_client.redact_url``).
"""

from __future__ import annotations

import dataclasses
import json
import random

import anyio
from redis.exceptions import RedisError, WatchError

from .._errors import Refused
from .._redis_client import failure_of, redact_url, redis_client, redis_health
from ._state import NOT_OURS, Change, HostState, R, limits_unavailable, state_of

__all__ = ["LIMITS_PREFIX", "RedisLimitState"]

LIMITS_PREFIX = "webward:limits:"  # with the default [state] redis_prefix
# A key nobody has touched for a day is forgotten: by then its bucket is full again and any
# hold (at most an hour) or open circuit (minutes) has run out, so nothing of value is lost.
_IDLE_TTL_S = 86_400
# Replicas racing for one key retry their read-modify-write; past this many lost races in a
# row the store is treated as unavailable rather than spinning on.
_MAX_RACES = 100
_STRIPES = 64  # locks a process's writers of one key take turns on
# The readiness probe's key: a real write with an expiry, as a change of the limits makes.
READY_KEY = "webward:ready"  # with the default [state] redis_prefix
_READY_TTL_MS = 60_000
_FIELDS = tuple(f.name for f in dataclasses.fields(HostState))


def _encode(state: HostState) -> str:
    return json.dumps(dataclasses.asdict(state), separators=(",", ":"))


def _decode(raw: bytes | str | None) -> HostState | None:
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        return state_of(data[name] for name in _FIELDS)
    except (ValueError, KeyError, TypeError):  # another writer's key, or a damaged one
        raise ValueError(NOT_OURS) from None


class RedisLimitState:
    """Limiter and breaker state in Redis, shared by every replica pointed at it.

    One key per limiter key, one atomic read-modify-write per call (``WATCH``/``MULTI``/
    ``EXEC``, retried when another replica changed the key in between: ``change`` is pure).
    Keys idle for a day expire. Any Redis error refuses with ``limits_unavailable``.

    Within one process, the writers of one key take turns (one of :data:`_STRIPES` locks,
    by the key's hash): only other replicas race it, so a race lost is rare. Sixty tasks of
    one gateway on one agent's budget raced each other, and some lost a hundred times in a
    row: refused ``limits_unavailable`` with the store up.

    A change is bounded as a whole, the wait for its turn included, by twice the client's
    timeout (and by the call's deadline): ten calls to one host behind a frozen Redis each
    waited for the one ahead of it, which spent its own timeout, and nine ran into the read's
    deadline (504, blamed on the site). A Redis that gave no answer is not asked again for
    the client's timeout: the changes waiting for their turn, and those that arrive then,
    are refused at once (``RedisHealth``).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 2.0,
        idle_ttl_s: int = _IDLE_TTL_S,
        prefix: str = "webward:",
    ) -> None:
        self._where = redact_url(url)
        self._keys = prefix + "limits:"  # [state] redis_prefix: a deployment's own keys
        self._ready = prefix + "ready"
        self._client = redis_client(url, timeout_s)
        self._health = redis_health(url, timeout_s)
        self._bound_s = 2 * timeout_s  # one change, its wait for its turn included
        self._ttl = idle_ttl_s
        self._turns: list[anyio.Lock] | None = None  # made on first use: they are the loop's

    def __repr__(self) -> str:
        return f"RedisLimitState({self._where!r})"

    async def update(self, key: str, change: Change[R]) -> R:
        if self._turns is None:
            self._turns = [anyio.Lock() for _ in range(_STRIPES)]
        try:
            with self._health.trips(self._bound_s) as trip:
                async with self._turns[hash(key) % _STRIPES]:
                    self._health.recheck(trip.seen)  # found down while it waited its turn
                    result, trip.wrote = await self._update(key, change)
                    return result
        except (RedisError, OSError) as exc:  # no answer, or none in time (its turn too)
            raise self._unavailable(exc) from None

    async def _update(self, key: str, change: Change[R]) -> tuple[R, bool]:
        """``change`` applied, and whether it wrote."""
        name = self._keys + key
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                for attempt in range(_MAX_RACES):
                    try:
                        await pipe.watch(name)
                        cur = _decode(await pipe.get(name))
                        new, result = change(cur)
                        if new == cur:  # nothing to write (a refusal): no race to lose either
                            await pipe.unwatch()  # type: ignore[no-untyped-call]
                            return result, False
                        pipe.multi()  # type: ignore[no-untyped-call]
                        pipe.set(name, _encode(new), ex=self._ttl)
                        await pipe.execute()
                        return result, True
                    except WatchError:
                        # Another replica changed the key: read it again, after a short random
                        # wait that grows, so that replicas racing in step fall out of step.
                        await anyio.sleep(random.uniform(0, min(0.001 * 2**attempt, 0.02)))
        except (ValueError, KeyError, TypeError) as exc:  # Redis errors: for update's trips
            raise self._unavailable(exc) from None
        raise self._unavailable(f"{_MAX_RACES} writers in a row raced for one key")

    async def get(self, key: str) -> HostState | None:
        try:
            with self._health.trips(self._bound_s):
                return _decode(await self._client.get(self._keys + key))
        except (RedisError, OSError, ValueError, KeyError, TypeError) as exc:
            raise self._unavailable(exc) from None

    async def probe(self) -> None:
        """Whether a change of the limits could be made now: a real write with an expiry
        (``SET`` of :data:`READY_KEY`, as a change sets its key), so that a full Redis
        (``maxmemory`` with ``noeviction``), a read-only replica or a frozen one fails it as
        it fails the calls; a ``PING`` passed on each. ``limits_unavailable`` otherwise."""
        try:
            with self._health.trips(self._bound_s) as trip:
                await self._client.set(self._ready, "1", px=_READY_TTL_MS)
                trip.wrote = True
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None

    async def aclose(self) -> None:
        await self._client.aclose()

    def _unavailable(self, exc: BaseException | str) -> Refused:
        return limits_unavailable(self._where, *failure_of(exc, self._where))
