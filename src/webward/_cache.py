"""The page cache: a page's converted text, kept briefly so offset calls page through the same
text without fetching it again.

Keyed by the requested URL, ``include_links``, how the page may have been read (plain
HTTP, or possibly rendered headless) and where the reader may connect (``[network]``;
:func:`cache_key`); entries live
``limits.page_cache_ttl_s`` seconds (600 by default) and the cache holds at most
``limits.page_cache_max_chars`` characters, evicting the least recently used page first.
The cache saves the download and nothing else: the literal guard and the policy run before a
lookup, and on a hit ``Web`` runs every hop of the cached read (the requested URL and each
redirect) through this caller's policy, guard, robots.txt and limits again, so a cached page is
only ever handed to a caller who may read it.

Implementations of :class:`PageCache`: :class:`MemoryPageCache` (one process),
:class:`NullPageCache` (caching off) and ``_cache_redis.RedisPageCache`` (shared by replicas through
``[state] redis_url``; it stores :meth:`CachedPage.to_dict` as JSON). The protocol is async
because the shared one talks to a server.

Freshness: a page remembers when it was read (``fetched_at``, the ``Web``'s clock) and the
validators its server sent (``ETag``, ``Last-Modified``). ``Web`` serves it only while it is
younger than the TTL and than the call's ``max_age``; past that it asks the server again,
conditionally when it can, and a 304 renews the page without reading or converting it again.
So that an expired page can still be revalidated, every store keeps a page with validators
:data:`STALE_KEEP_S` seconds past its TTL (:func:`keep_s`); one without is dropped at the TTL.
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ._capabilities import MAX_AGE_LIMIT_S, whole_number
from ._convert import Converted
from ._errors import InvalidInput, Reason
from ._models import Link, Part
from ._settings import LimitsSettings

__all__ = [
    "MAX_AGE_LIMIT_S",
    "STALE_KEEP_S",
    "CachedPage",
    "MemoryPageCache",
    "NullPageCache",
    "PageCache",
    "cache_key",
    "check_max_age",
    "keep_s",
    "reach_of",
]

#: How long past its TTL a page with validators is kept, to be revalidated with a conditional
#: request rather than read again (an hour: long enough for an agent's session, while the
#: stores' size bounds still evict it first when space is short).
STALE_KEEP_S = 3600.0


@dataclass(frozen=True)
class CachedPage:
    """What an offset call needs of an earlier read: the converted page and its provenance."""

    requested_url: str
    final_url: str
    status: int
    converted: Converted  # before windowing and the envelope
    redirects: tuple[str, ...] = ()
    bytes_read: int = 0
    retrieved_at: str = ""
    etag: str = ""  # the validators the server sent, for a conditional request
    last_modified: str = ""
    fetched_at: float = 0.0  # when read (or last revalidated), in the Web's clock seconds
    # A reading a headless render made: the hosts (``host[:port]``) that render contacted,
    # whose content it may hold. Another caller is served it only if its policy reaches them
    # all (``Web._read``); a list that overflowed (``... and N more hosts``) reaches no one.
    rendered_hosts: tuple[str, ...] = ()

    def validators(self) -> tuple[tuple[str, str], ...]:
        """The headers of a conditional request for this page (empty when it has none)."""
        headers: list[tuple[str, str]] = []
        if self.etag:
            headers.append(("If-None-Match", self.etag))
        if self.last_modified:
            headers.append(("If-Modified-Since", self.last_modified))
        return tuple(headers)

    def size(self) -> int:
        """Characters this entry costs against ``page_cache_max_chars`` (base64 included)."""
        c = self.converted
        return (
            len(c.text)
            + len(c.title)
            + len(self.requested_url)
            + len(self.final_url)
            + sum(len(link.url) + len(link.text) for link in c.links)
            + sum(len(p.data) + len(p.text or "") for p in c.parts)
            + sum(len(r) for r in self.redirects)
            + sum(len(h) for h in self.rendered_hosts)
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, for caches kept outside the process."""
        c = self.converted
        return {
            "requestedUrl": self.requested_url,
            "finalUrl": self.final_url,
            "status": self.status,
            "redirects": list(self.redirects),
            "bytesRead": self.bytes_read,
            "retrievedAt": self.retrieved_at,
            "etag": self.etag,
            "lastModified": self.last_modified,
            "fetchedAt": self.fetched_at,
            "renderedHosts": list(self.rendered_hosts),
            "converted": {
                "kind": c.kind,
                "mediaType": c.media_type,
                "title": c.title,
                "text": c.text,
                "parts": [p.to_wire() for p in c.parts],
                "links": [link.to_wire() for link in c.links],
                "truncated": c.truncated,
            },
        }

    def written_for(self, url: str) -> bool:
        """Whether this entry is one a read of ``url`` wrote: requested as ``url``, its chain
        starting there and ending at its final URL. An entry changed by hand, or by another
        program sharing the store, could name a page read elsewhere (on a host this caller may
        not reach) or a final URL its chain never visited."""
        chain = self.redirects or (self.requested_url,)
        return self.requested_url == url and chain[0] == url and chain[-1] == self.final_url

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CachedPage:
        """The inverse of :meth:`to_dict`; ``ValueError`` for values no read writes (text
        that is not text, a status past HTTP's, a time that is no time), so that a changed
        entry is a miss."""
        c = data["converted"]
        converted = Converted(
            kind=_text(c["kind"]),
            media_type=_text(c["mediaType"]),
            title=_text(c["title"]),
            text=_text(c["text"]),
            parts=tuple(
                Part(
                    type=_text(p["type"]),
                    media_type=_text(p["mediaType"]),
                    bytes=_count(p["bytes"]),
                    name=_text(p["name"]),
                    data=_text(p["data"]),
                    text=None if p.get("text") is None else _text(p["text"]),
                )
                for p in c.get("parts", ())
            ),
            links=tuple(
                Link(url=_text(x["url"]), text=_text(x["text"])) for x in c.get("links", ())
            ),
            truncated=bool(c["truncated"]),
        )
        status, fetched_at = int(data["status"]), float(data.get("fetchedAt", 0.0))
        if not 100 <= status <= 999 or not math.isfinite(fetched_at):
            raise ValueError("not a cached read")
        return cls(
            requested_url=_text(data["requestedUrl"]),
            final_url=_text(data["finalUrl"]),
            status=status,
            converted=converted,
            redirects=tuple(_text(r) for r in data.get("redirects", ())),
            bytes_read=_count(data.get("bytesRead", 0)),
            retrieved_at=_text(data.get("retrievedAt", "")),
            etag=_text(data.get("etag", "")),
            last_modified=_text(data.get("lastModified", "")),
            fetched_at=fetched_at,
            rendered_hosts=tuple(_text(h) for h in data.get("renderedHosts", ())),
        )


def _count(value: Any) -> int:
    """A count of bytes as a read writes it: a whole number that the audit log can store."""
    if type(value) is not int or not 0 <= value < 2**53:
        raise ValueError("not a cached read")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("not a cached read")
    return value


def cache_key(url: str, include_links: bool, *, reading: str = "plain", reach: str = "") -> str:
    """The cache key of a read: the requested URL (as normalised by the guard), whether
    links were asked for, how the page may have been read: ``plain`` (HTTP only, tier
    as-owner) or ``rendered`` (tiers whose reads may be rendered headless), so a tier that may
    not render never gets a rendered page; and the reader's ``[network]`` reach
    (:func:`reach_of`)."""
    key = f"{url}\x00links={bool(include_links)}\x00reading={reading}"
    return f"{key}\x00reach={reach}" if reach else key


def reach_of(allow: Iterable[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> str:
    """The part of the cache key that says where the reading ``Web`` may connect: its
    ``allow_ranges``, in one order. A cached read is checked again for its caller (policy,
    robots.txt), but the address guard runs only where a connection is made: replicas sharing
    a store with different [network] settings must not serve each other's pages (one that
    may reach the intranet would hand its pages to one that may not). Empty for the default
    (public addresses only), so those keys are as they were."""
    return ",".join(sorted({str(net) for net in allow}))


def keep_s(page: CachedPage, ttl_s: float) -> float:
    """How long a store keeps ``page``: its TTL, plus :data:`STALE_KEEP_S` when it carries
    validators (a TTL of 0 or less turns caching off and stays off)."""
    if ttl_s <= 0:
        return ttl_s
    return ttl_s + STALE_KEEP_S if page.validators() else ttl_s


def check_max_age(value: object) -> int | None:
    """A call's ``max_age``: ``None`` (the TTL alone decides), or whole seconds from 0 (always
    ask the server) to :data:`MAX_AGE_LIMIT_S` (``_capabilities.whole_number``). Anything else
    is refused in one sentence."""
    if value is None:
        return None
    number = whole_number(value)
    if number is None or not 0 <= number <= MAX_AGE_LIMIT_S:
        raise InvalidInput(
            f"max_age must be a whole number of seconds from 0 to {MAX_AGE_LIMIT_S}",
            reason=Reason.BAD_MAX_AGE,
        )
    return number


@runtime_checkable
class PageCache(Protocol):
    """Where converted pages wait for their next window.

    A cache never refuses or raises: a store it cannot reach is a miss (``get``) or a page not
    kept (``put``), because the cache only saves a download.
    """

    async def get(self, key: str) -> CachedPage | None:
        """The page stored under ``key``, or ``None`` if absent or expired."""
        ...

    async def put(self, key: str, page: CachedPage) -> None:
        """Store ``page`` under ``key``, replacing what was there."""
        ...

    async def aclose(self) -> None:
        """Release the store."""
        ...


class NullPageCache:
    """Caching off: stores nothing, finds nothing; every offset call fetches again."""

    async def get(self, key: str) -> CachedPage | None:
        return None

    async def put(self, key: str, page: CachedPage) -> None:
        return None

    async def aclose(self) -> None:
        return None


class MemoryPageCache:
    """An in-process LRU cache bounded by age and by total characters. Thread-safe.

    Every operation is O(1) (amortised): entries are kept twice in order, by last use (for
    the size bound) and by insertion, so expiry only ever looks at the oldest entries. Pages
    with validators are kept :data:`STALE_KEEP_S` longer (for revalidation), so insertion is
    only nearly the order of expiry: an expired entry stored behind a longer-kept one waits
    for it, or for the size bound, and ``get`` never serves it meanwhile.
    """

    def __init__(
        self,
        *,
        ttl_s: float = 600.0,
        max_chars: int = 50_000_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl_s
        self._max_chars = max_chars
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, int, CachedPage]] = OrderedDict()
        self._by_age: OrderedDict[str, float] = OrderedDict()  # key -> expiry, oldest first
        self._chars = 0
        self._lock = threading.Lock()

    @classmethod
    def from_limits(
        cls, limits: LimitsSettings, clock: Callable[[], float] = time.monotonic
    ) -> MemoryPageCache:
        """A cache sized by ``page_cache_ttl_s`` and ``page_cache_max_chars``."""
        return cls(
            ttl_s=limits.page_cache_ttl_s, max_chars=limits.page_cache_max_chars, clock=clock
        )

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def chars(self) -> int:
        """Characters held now."""
        return self._chars

    async def get(self, key: str) -> CachedPage | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires, _, page = entry
            if self._clock() >= expires:
                self._remove(key)
                return None
            self._entries.move_to_end(key)
            return page

    async def put(self, key: str, page: CachedPage) -> None:
        size = page.size()
        with self._lock:
            if key in self._entries:
                self._remove(key)
            if self._ttl <= 0 or size > self._max_chars:
                return  # caching off, or a page bigger than the whole cache: not kept
            now = self._clock()
            expires = now + keep_s(page, self._ttl)
            self._entries[key] = (expires, size, page)
            self._by_age[key] = expires
            self._chars += size
            self._evict(now)

    async def aclose(self) -> None:
        return None

    def clear(self) -> None:
        """Forget every page."""
        with self._lock:
            self._entries.clear()
            self._by_age.clear()
            self._chars = 0

    def _remove(self, key: str) -> None:
        _, size, _ = self._entries.pop(key)
        del self._by_age[key]
        self._chars -= size

    def _evict(self, now: float) -> None:
        while self._by_age:
            key, expires = next(iter(self._by_age.items()))
            if now < expires:
                break
            self._remove(key)
        while self._chars > self._max_chars and self._entries:
            self._remove(next(iter(self._entries)))
