"""The page cache in Redis, so a window read on one replica can be paged on another.

:class:`RedisPageCache` keeps converted pages (:meth:`CachedPage.to_dict` as JSON) under
``webward:pages:<sha256 of the cache key>`` (``[state] redis_prefix``, then ``pages:``) with
the page-cache TTL (plus ``STALE_KEEP_S`` for a page with validators, to revalidate it;
``_cache.keep_s``). A Redis failure is a miss (or a
page not kept): the cache only saves a download, so it is never a reason to refuse. A Redis
that just gave no answer (to the cache or to the limits: one ``_redis_client.RedisHealth``
per URL) is a miss at once, not a wait of the client's timeout per read.

``[state] redis_url`` chooses it (``Web``); it stands beside the in-process caches of
``_cache`` and the SQLite one of ``_state_cache``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ._cache import CachedPage, keep_s
from ._redis_client import RedisError, redact_url, redis_client, redis_health

__all__ = ["PAGES_PREFIX", "RedisPageCache"]

PAGES_PREFIX = "webward:pages:"  # with the default [state] redis_prefix


class RedisPageCache:
    """Converted pages in Redis, so a window read on one replica can be paged on another.

    Entries expire after ``ttl_s``; a page bigger than ``max_chars`` is not kept. The total
    size is Redis's business (``maxmemory``, with ``noeviction``: an LRU policy would evict
    the limits and budgets sharing the keyspace too; docs/servers.md). Redis errors are
    misses: the cache only saves a download, and every hop of a cached read is checked
    again for its caller anyway.
    """

    def __init__(
        self,
        url: str,
        *,
        ttl_s: float = 600.0,
        max_chars: int = 50_000_000,
        timeout_s: float = 2.0,
        prefix: str = "webward:",
    ) -> None:
        self._where = redact_url(url)
        self._keys = prefix + "pages:"  # [state] redis_prefix: a deployment's own keys
        self._client = redis_client(url, timeout_s)
        self._health = redis_health(url, timeout_s)
        self._ttl_ms = int(ttl_s * 1000)
        self._max_chars = max_chars

    def __repr__(self) -> str:
        return f"RedisPageCache({self._where!r})"

    def _name(self, key: str) -> str:
        # Hashed: keys hold whole URLs (up to max_url_chars) and a NUL separator.
        return self._keys + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()

    async def get(self, key: str) -> CachedPage | None:
        try:
            with self._health.trips():
                raw: Any = await self._client.get(self._name(key))
        except (RedisError, OSError):
            return None  # Redis unreachable: a miss; the page is fetched again
        if raw is None:
            return None
        try:
            return CachedPage.from_dict(json.loads(raw))
        except Exception:
            return None  # an entry this version cannot read, or changed: fetch again

    async def put(self, key: str, page: CachedPage) -> None:
        if self._ttl_ms <= 0 or page.size() > self._max_chars:
            return
        try:
            data = json.dumps(page.to_dict(), ensure_ascii=False, separators=(",", ":"))
            keep_ms = int(keep_s(page, self._ttl_ms / 1000) * 1000)
            with self._health.trips() as trip:
                await self._client.set(self._name(key), data, px=keep_ms)
                trip.wrote = True
        except (RedisError, OSError):
            return None  # not kept; the next window of this page downloads it again

    async def aclose(self) -> None:
        await self._client.aclose()
