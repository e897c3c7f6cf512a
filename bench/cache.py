"""The memory page cache's ``put`` with the cache full at its default size.

    python bench/cache.py [--page-chars 3000] [--puts 2000]

The cache is filled to ``page_cache_max_chars`` (50,000,000 by default) with pages of
``--page-chars`` characters (3,000: about 16,700 entries), then ``--puts`` more pages are
stored (a tenth as many for the anchor), each one evicting the oldest; CPU time per put. Ours is ``webward._cache.MemoryPageCache``; the anchor is
the same cache with the eviction webward had before (a scan of every entry for expired ones on
each ``put``). Lines read ``name: ours X, anchor Y, ratio Z``.
"""

from __future__ import annotations

import argparse
import time

import anyio

from webward._cache import CachedPage, MemoryPageCache
from webward._convert import Converted
from webward._settings import LimitsSettings


class ScanningCache(MemoryPageCache):
    """The anchor: expiry found by scanning every entry on each put (webward before)."""

    def _evict(self, now: float) -> None:
        for key in [k for k, (expires, _, _) in self._entries.items() if now >= expires]:
            self._remove(key)
        while self._chars > self._max_chars and self._entries:
            self._remove(next(iter(self._entries)))


def page(i: int, chars: int) -> CachedPage:
    url = f"https://example.com/{i}"
    text = "x" * (chars - 2 * len(url))
    converted = Converted("text", "text/html", "", text, (), (), False)
    return CachedPage(requested_url=url, final_url=url, status=200, converted=converted)


async def put_cost(cache: MemoryPageCache, chars: int, puts: int) -> tuple[int, float]:
    """Entries held when full, and CPU seconds per ``put`` from then on."""
    limits = LimitsSettings()
    one = page(0, chars)
    i = 0
    # Filled through put with eviction off (the anchor's fill alone would be quadratic).
    max_chars, cache._max_chars = cache._max_chars, 10**12
    evict, cache._evict = cache._evict, lambda now: None  # type: ignore[method-assign]
    while cache.chars + chars <= limits.page_cache_max_chars:
        await cache.put(f"k{i}", one)
        i += 1
    cache._max_chars, cache._evict = max_chars, evict  # type: ignore[method-assign]
    entries = len(cache)
    pages = [page(i + n, chars) for n in range(puts)]
    started = time.process_time()
    for n, p in enumerate(pages):
        await cache.put(f"k{i + n}", p)
    return entries, (time.process_time() - started) / puts


async def run(chars: int, puts: int) -> None:
    limits = LimitsSettings()
    ours_entries, ours = await put_cost(MemoryPageCache.from_limits(limits), chars, puts)
    _, anchor = await put_cost(ScanningCache.from_limits(limits), chars, max(1, puts // 10))
    print(f"cache full at {limits.page_cache_max_chars:,} chars: {ours_entries:,} entries")
    print(
        f"page-cache put (full): ours {ours * 1e6:.1f} us, anchor {anchor * 1e6:.1f} us, "
        f"ratio {ours / anchor:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--page-chars", type=int, default=3000)
    parser.add_argument("--puts", type=int, default=2000)
    args = parser.parse_args()
    anyio.run(run, args.page_chars, args.puts)


if __name__ == "__main__":
    main()
