"""The page cache: TTL and size eviction on a fake clock, LRU order, and caching off."""

from __future__ import annotations

import json

import pytest

from webward._cache import CachedPage, MemoryPageCache, NullPageCache, PageCache, cache_key
from webward._convert import Converted
from webward._models import Link, Part
from webward._settings import LimitsSettings
from webward.testing import FakeClock


def page(text: str, url: str = "https://example.com/a") -> CachedPage:
    converted = Converted(
        kind="text",
        media_type="text/html",
        title="",
        text=text,
        parts=(),
        links=(),
        truncated=False,
    )
    return CachedPage(requested_url=url, final_url=url, status=200, converted=converted)


@pytest.mark.anyio
async def test_a_page_is_found_until_its_ttl_passes() -> None:
    """An entry lives exactly ttl seconds."""
    clock = FakeClock()
    cache = MemoryPageCache(ttl_s=600, max_chars=10_000, clock=clock)
    await cache.put("k", page("hello"))
    clock.advance(599.9)
    got = await cache.get("k")
    assert got is not None and got.converted.text == "hello"
    clock.advance(0.1)
    assert await cache.get("k") is None
    assert len(cache) == 0
    assert cache.chars == 0


@pytest.mark.anyio
async def test_size_bound_evicts_the_least_recently_used_page() -> None:
    """Past max_chars the page used longest ago goes first; a get counts as a use."""
    clock = FakeClock()
    url = "https://example.com/a"
    size = page("x" * 100, url).size()
    cache = MemoryPageCache(ttl_s=600, max_chars=3 * size, clock=clock)
    for key in ("a", "b", "c"):
        await cache.put(key, page("x" * 100, url))
    assert await cache.get("a") is not None  # a is now the most recently used
    await cache.put("d", page("x" * 100, url))
    assert await cache.get("b") is None
    assert [await cache.get(k) for k in ("a", "c", "d")].count(None) == 0
    assert cache.chars == 3 * size


@pytest.mark.anyio
async def test_a_page_bigger_than_the_cache_is_not_kept() -> None:
    """A page that alone exceeds max_chars is not stored and evicts nothing."""
    cache = MemoryPageCache(ttl_s=600, max_chars=500, clock=FakeClock())
    await cache.put("small", page("s"))
    await cache.put("huge", page("h" * 1000))
    assert await cache.get("huge") is None
    assert await cache.get("small") is not None


@pytest.mark.anyio
async def test_putting_a_key_again_replaces_it_and_renews_its_ttl() -> None:
    """A second put replaces the page and starts its lifetime again."""
    clock = FakeClock()
    cache = MemoryPageCache(ttl_s=10, max_chars=10_000, clock=clock)
    await cache.put("k", page("old"))
    clock.advance(8)
    await cache.put("k", page("new"))
    clock.advance(8)
    got = await cache.get("k")
    assert got is not None and got.converted.text == "new"
    assert len(cache) == 1


@pytest.mark.anyio
async def test_expired_pages_are_swept_on_put() -> None:
    """Expired entries stop counting against the size bound when anything is stored."""
    clock = FakeClock()
    cache = MemoryPageCache(ttl_s=5, max_chars=10_000, clock=clock)
    await cache.put("a", page("a" * 50))
    clock.advance(6)
    await cache.put("b", page("b"))
    assert len(cache) == 1
    assert cache.chars == page("b").size()


@pytest.mark.anyio
async def test_expiry_follows_the_order_of_storing_not_of_use() -> None:
    """A page read again moves to the back of the size queue but still expires on time, and a
    page stored again expires after the ones stored before it."""
    clock = FakeClock()
    cache = MemoryPageCache(ttl_s=10, max_chars=10_000, clock=clock)
    await cache.put("a", page("a"))
    clock.advance(1)
    await cache.put("b", page("b"))
    clock.advance(1)
    await cache.put("c", page("c"))
    assert await cache.get("a") is not None  # used last, stored first
    await cache.put("b", page("b2"))  # stored again: now the youngest
    clock.advance(8.5)  # a (stored at +0) has expired; c (+2) and b (+2) have not
    await cache.put("d", page("d"))
    assert len(cache) == 3
    assert await cache.get("a") is None
    clock.advance(1.6)  # c and b (both stored at +2) expire together
    await cache.put("e", page("e"))
    assert sorted(k for k in ("b", "c", "d", "e") if cache._entries.get(k)) == ["d", "e"]
    assert cache.chars == page("d").size() + page("e").size()


def test_parts_count_toward_the_size() -> None:
    """An image's base64 costs its length in characters."""
    converted = Converted(
        "image",
        "image/png",
        "a.png",
        "header",
        (Part(type="image", media_type="image/png", bytes=3, name="a.png", data="QUJD"),),
        (),
        False,
    )
    entry = CachedPage("https://e.com/a.png", "https://e.com/a.png", 200, converted)
    assert entry.size() == len("header") + len("a.png") + 2 * len("https://e.com/a.png") + 4


@pytest.mark.anyio
async def test_from_limits_uses_the_settings() -> None:
    """The cache takes its ttl and size bound from LimitsSettings."""
    clock = FakeClock()
    cache = MemoryPageCache.from_limits(
        LimitsSettings(page_cache_ttl_s=1.0, page_cache_max_chars=100), clock
    )
    await cache.put("k", page("x"))
    clock.advance(1.0)
    assert await cache.get("k") is None


@pytest.mark.anyio
async def test_zero_ttl_turns_the_memory_cache_off() -> None:
    """With ttl 0 nothing is kept."""
    cache = MemoryPageCache(ttl_s=0, max_chars=1000, clock=FakeClock())
    await cache.put("k", page("x"))
    assert await cache.get("k") is None


@pytest.mark.anyio
async def test_clear_forgets_everything() -> None:
    """clear() empties the cache."""
    cache = MemoryPageCache(clock=FakeClock())
    await cache.put("k", page("x"))
    cache.clear()
    assert await cache.get("k") is None and cache.chars == 0


@pytest.mark.anyio
async def test_null_cache_stores_nothing() -> None:
    """Caching off: every get misses."""
    cache = NullPageCache()
    await cache.put("k", page("x"))
    assert await cache.get("k") is None


def test_both_implementations_satisfy_the_protocol() -> None:
    """MemoryPageCache and NullPageCache are PageCaches."""
    assert isinstance(MemoryPageCache(), PageCache)
    assert isinstance(NullPageCache(), PageCache)


def test_cache_key_separates_links_from_plain_reads() -> None:
    """A read with links and one without are different entries."""
    assert cache_key("https://e.com/", True) != cache_key("https://e.com/", False)
    assert cache_key("https://e.com/", True) == cache_key("https://e.com/", True)
    # Plain and rendered readings never share an entry.
    keys = {cache_key("https://e.com/", False, reading=r) for r in ("plain", "rendered")}
    assert len(keys) == 2


def test_cached_page_round_trips_through_json() -> None:
    """to_dict / from_dict survive JSON, for caches kept outside the process."""
    converted = Converted(
        kind="document",
        media_type="application/pdf",
        title="Report",
        text="application/pdf document report.pdf, 3 bytes, 1 page, from https://e.com/report.pdf",
        parts=(
            Part(
                type="document",
                media_type="application/pdf",
                bytes=3,
                name="report.pdf",
                data="QUJD",
                text="hi",
            ),
        ),
        links=(Link(url="https://e.com/b", text="B"),),
        truncated=True,
    )
    entry = CachedPage(
        requested_url="https://e.com/r",
        final_url="https://e.com/report.pdf",
        status=200,
        converted=converted,
        redirects=("https://e.com/r",),
        bytes_read=3,
        retrieved_at="2026-01-01T00:00:00Z",
    )
    assert CachedPage.from_dict(json.loads(json.dumps(entry.to_dict()))) == entry
