"""State shared through Redis, so N gateway replicas keep one budget and one page cache.

:class:`RedisLimitState` keeps each limiter key's :class:`HostState` as one JSON value under
``webward:limits:<key>`` and changes it with an optimistic ``WATCH``/``MULTI``/``EXEC`` loop:
two replicas spending the same host's last token race, one ``EXEC`` fails, and that replica
reads the new state and decides again. Any Redis failure refuses the read
(``limits_unavailable``): abuse protections fail closed.

:class:`RedisPageCache` keeps converted pages (:meth:`CachedPage.to_dict` as JSON) under
``webward:pages:<sha256 of the cache key>`` with the page-cache TTL (plus ``STALE_KEEP_S`` for a page
with validators, to revalidate it; ``_cache.keep_s``). A Redis failure there is a
miss (or a page not kept): the cache only saves a download, so it is never a reason to refuse.

``[state] redis_url`` chooses both (``open_limit_state``, ``Web``). The URL may carry a password;
messages name only its host, port and database.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import urllib.parse
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError, WatchError

from ._cache import CachedPage, keep_s
from ._errors import Refused
from ._limit_state import Change, HostState, R, limits_unavailable

__all__ = [
    "LIMITS_PREFIX",
    "PAGES_PREFIX",
    "RedisError",
    "RedisLimitState",
    "RedisPageCache",
    "redact_url",
]

LIMITS_PREFIX = "webward:limits:"
PAGES_PREFIX = "webward:pages:"
# A key nobody has touched for a day is forgotten: by then its bucket is full again and any
# hold (at most an hour) or open circuit (minutes) has run out, so nothing of value is lost.
_IDLE_TTL_S = 86_400
# Replicas racing for one key retry their read-modify-write; past this many lost races in a
# row the store is treated as unavailable rather than spinning on.
_MAX_RACES = 100
_FIELDS = tuple(f.name for f in dataclasses.fields(HostState))


def redact_url(url: str) -> str:
    """``url`` without its user name and password: what messages may show of a Redis URL."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "redis://[unparseable url]"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _client(url: str, timeout_s: float) -> Redis:
    # Short timeouts, one immediate retry (a connection the server dropped while idle) and no
    # backoff: a Redis that is down must turn into a refusal quickly, not hold the caller.
    client: Redis = Redis.from_url(
        url,
        socket_connect_timeout=timeout_s,
        socket_timeout=timeout_s,
        retry=Retry(NoBackoff(), 1),
    )
    return client


def _encode(state: HostState) -> str:
    return json.dumps(dataclasses.asdict(state), separators=(",", ":"))


def _decode(raw: bytes | str | None) -> HostState | None:
    if raw is None:
        return None
    data = json.loads(raw)
    return HostState(**{name: data[name] for name in _FIELDS})


class RedisLimitState:
    """Limiter and breaker state in Redis, shared by every replica pointed at it.

    One key per limiter key, one atomic read-modify-write per call (``WATCH``/``MULTI``/
    ``EXEC``, retried when another replica changed the key in between: ``change`` is pure).
    Keys idle for a day expire. Any Redis error refuses with ``limits_unavailable``.
    """

    def __init__(self, url: str, *, timeout_s: float = 2.0, idle_ttl_s: int = _IDLE_TTL_S) -> None:
        self._where = redact_url(url)
        self._client = _client(url, timeout_s)
        self._ttl = idle_ttl_s

    def __repr__(self) -> str:
        return f"RedisLimitState({self._where!r})"

    async def update(self, key: str, change: Change[R]) -> R:
        name = LIMITS_PREFIX + key
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                for _ in range(_MAX_RACES):
                    try:
                        await pipe.watch(name)
                        new, result = change(_decode(await pipe.get(name)))
                        pipe.multi()  # type: ignore[no-untyped-call]
                        pipe.set(name, _encode(new), ex=self._ttl)
                        await pipe.execute()
                        return result
                    except WatchError:
                        continue  # another replica changed the key: read it again
        except (RedisError, OSError, ValueError, KeyError, TypeError) as exc:
            raise self._unavailable(exc) from None
        raise self._unavailable(f"{_MAX_RACES} writers in a row raced for one key")

    async def get(self, key: str) -> HostState | None:
        try:
            return _decode(await self._client.get(LIMITS_PREFIX + key))
        except (RedisError, OSError, ValueError, KeyError, TypeError) as exc:
            raise self._unavailable(exc) from None

    async def aclose(self) -> None:
        await self._client.aclose()

    def _unavailable(self, exc: BaseException | str) -> Refused:
        return limits_unavailable(self._where, str(exc).strip().rstrip("."))


class RedisPageCache:
    """Converted pages in Redis, so a window read on one replica can be paged on another.

    Entries expire after ``ttl_s``; a page bigger than ``max_chars`` is not kept. The total
    size is Redis's business (``maxmemory`` with ``volatile-lru`` or ``allkeys-lru``). Redis
    errors are misses: the cache only saves a download, and every hop of a cached read is
    checked again for its caller anyway.
    """

    def __init__(
        self,
        url: str,
        *,
        ttl_s: float = 600.0,
        max_chars: int = 50_000_000,
        timeout_s: float = 2.0,
    ) -> None:
        self._where = redact_url(url)
        self._client = _client(url, timeout_s)
        self._ttl_ms = int(ttl_s * 1000)
        self._max_chars = max_chars

    def __repr__(self) -> str:
        return f"RedisPageCache({self._where!r})"

    @staticmethod
    def _name(key: str) -> str:
        # Hashed: keys hold whole URLs (up to max_url_chars) and a NUL separator.
        return PAGES_PREFIX + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()

    async def get(self, key: str) -> CachedPage | None:
        try:
            raw: Any = await self._client.get(self._name(key))
        except (RedisError, OSError):
            return None  # Redis unreachable: a miss; the page is fetched again
        if raw is None:
            return None
        try:
            return CachedPage.from_dict(json.loads(raw))
        except (ValueError, KeyError, TypeError):
            return None  # an entry this version cannot read: fetch again

    async def put(self, key: str, page: CachedPage) -> None:
        if self._ttl_ms <= 0 or page.size() > self._max_chars:
            return
        try:
            data = json.dumps(page.to_dict(), ensure_ascii=False, separators=(",", ":"))
            keep_ms = int(keep_s(page, self._ttl_ms / 1000) * 1000)
            await self._client.set(self._name(key), data, px=keep_ms)
        except (RedisError, OSError):
            return None  # not kept; the next window of this page downloads it again

    async def aclose(self) -> None:
        await self._client.aclose()
