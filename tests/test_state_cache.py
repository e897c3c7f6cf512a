"""cache.db in the state dir: the command line's page cache and robots.txt answers."""

from __future__ import annotations

import dataclasses
import stat
from pathlib import Path

import pytest
from stores import database

from webward._cache import CachedPage
from webward._convert import Converted
from webward._errors import Refused
from webward._robots import RobotsChecker
from webward._state_cache import SQLitePageCache, SQLiteRobotsStore, StateCache
from webward.testing import FakeClock

pytestmark = pytest.mark.anyio


def page(url: str, text: str) -> CachedPage:
    converted = Converted(
        kind="text",
        media_type="text/html",
        title="T",
        text=text,
        parts=(),
        links=(),
        truncated=False,
    )
    return CachedPage(requested_url=url, final_url=url, status=200, converted=converted)


async def test_a_page_outlives_its_process_until_its_ttl(tmp_path: Path) -> None:
    """A page put by one store is found by another on the same file, until the TTL ends."""
    clock = FakeClock()
    first = SQLitePageCache(StateCache(tmp_path, clock=clock), ttl_s=600, max_chars=10_000)
    await first.put("k", page("http://a.example/", "hello"))
    await first.aclose()
    second = SQLitePageCache(StateCache(tmp_path, clock=clock), ttl_s=600, max_chars=10_000)
    found = await second.get("k")
    assert found is not None and found.converted.text == "hello"
    clock.advance(600)
    assert await second.get("k") is None
    await second.aclose()
    assert stat.S_IMODE((tmp_path / "cache.db").stat().st_mode) == 0o600


async def test_the_least_recently_used_page_goes_first(tmp_path: Path) -> None:
    """Over max_chars, the page read longest ago is evicted; a page bigger than the whole
    cache is not kept."""
    clock = FakeClock()
    cache = SQLitePageCache(StateCache(tmp_path, clock=clock), ttl_s=600, max_chars=200)
    await cache.put("a", page("http://a.example/", "a" * 50))
    clock.advance(1)
    await cache.put("b", page("http://b.example/", "b" * 50))
    clock.advance(1)
    assert await cache.get("a") is not None  # a is now the more recently used
    clock.advance(1)
    await cache.put("c", page("http://c.example/", "c" * 50))
    assert await cache.get("b") is None
    assert await cache.get("a") is not None and await cache.get("c") is not None
    await cache.put("huge", page("http://h.example/", "h" * 500))
    assert await cache.get("huge") is None
    await cache.aclose()


async def test_an_unusable_file_is_a_miss_not_an_error(tmp_path: Path) -> None:
    """A state dir that cannot hold the database: every get misses, every put is dropped."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = SQLitePageCache(StateCache(blocker, clock=FakeClock()), ttl_s=600, max_chars=10_000)
    await cache.put("k", page("http://a.example/", "hello"))
    assert await cache.get("k") is None
    await cache.aclose()


@pytest.mark.parametrize(
    "change",
    [
        "data = 'text, not bytes'",
        "data = -5",
        "data = 800000000",  # bytes(n) of it once allocated n bytes
        "data = CAST(json_set(CAST(data AS TEXT), '$.status', 1180591620717411303424) AS BLOB)",
        "data = CAST(json_set(CAST(data AS TEXT), '$.fetchedAt', 'inf') AS BLOB)",
        "data = CAST(json_set(CAST(data AS TEXT), '$.bytesRead', 100000000000000000000) AS BLOB)",
        "data = CAST(json_set(CAST(data AS TEXT), '$.converted.title', json('{}')) AS BLOB)",
    ],
)
async def test_a_row_changed_by_hand_is_a_miss(tmp_path: Path, change: str) -> None:
    """A row of cache.db changed by hand (or by another program): a miss, never a crash, an
    allocation of its number in bytes, or a status the audit log cannot store."""

    cache = SQLitePageCache(StateCache(tmp_path, clock=FakeClock()), ttl_s=600, max_chars=10_000)
    await cache.put("k", page("http://a.example/", "hello"))
    with database(tmp_path / "cache.db") as conn:
        conn.execute(f"UPDATE pages SET {change} WHERE key = 'k'")
    found = await cache.get("k")
    assert found is None or (found.status == 200 and found.converted.title == "T")
    await cache.aclose()


def test_an_entry_that_names_another_read_is_not_one_for_this_url() -> None:
    """An entry whose requested URL, chain or final URL is not what a read of the URL wrote
    (a final URL on a host the chain never visited) is not served for it."""
    ok = page("http://a.example/", "x")
    assert ok.written_for("http://a.example/")
    assert not ok.written_for("http://b.example/")
    forged = dataclasses.replace(ok, final_url="http://internal.example/secret")
    assert not forged.written_for("http://a.example/")
    hops = dataclasses.replace(
        ok, redirects=("http://a.example/", "http://a.example/b"), final_url="http://a.example/b"
    )
    assert hops.written_for("http://a.example/")


async def test_robots_answers_are_kept_for_the_next_checker(tmp_path: Path) -> None:
    """A second checker (a new process) on the same file applies the stored rules without
    fetching robots.txt again, and fetches again once the answer has expired."""
    clock = FakeClock()
    fetches: list[str] = []
    rules = b"User-agent: *\nDisallow: /private\n"

    async def fetch(url: str) -> tuple[int, bytes]:
        fetches.append(url)
        return 200, rules

    for _ in range(2):
        store = StateCache(tmp_path, clock=clock)
        checker = RobotsChecker(fetch, clock=clock, ttl_s=3600, store=SQLiteRobotsStore(store))
        await checker.check("http://a.example/open")
        with pytest.raises(Refused, match="disallows /private"):
            await checker.check("http://a.example/private")
        await store.aclose()
    assert fetches == ["http://a.example/robots.txt"]
    clock.advance(3600)
    store = StateCache(tmp_path, clock=clock)
    checker = RobotsChecker(fetch, clock=clock, ttl_s=3600, store=SQLiteRobotsStore(store))
    await checker.check("http://a.example/open")
    await store.aclose()
    assert len(fetches) == 2


async def test_an_unreachable_answer_is_kept_only_briefly(tmp_path: Path) -> None:
    """A 503 robots.txt is kept for error_ttl_s across checkers, then asked again."""
    clock = FakeClock()
    calls: list[str] = []

    async def fetch(url: str) -> tuple[int, bytes]:
        calls.append(url)
        return 503, b""

    def checker(store: StateCache) -> RobotsChecker:
        return RobotsChecker(fetch, clock=clock, error_ttl_s=60, store=SQLiteRobotsStore(store))

    for _ in range(2):
        store = StateCache(tmp_path, clock=clock)
        with pytest.raises(Refused, match=r"could not be read \(HTTP 503\)"):
            await checker(store).check("http://b.example/x")
        await store.aclose()
    assert len(calls) == 1
    clock.advance(60)
    store = StateCache(tmp_path, clock=clock)
    with pytest.raises(Refused):
        await checker(store).check("http://b.example/x")
    await store.aclose()
    assert len(calls) == 2
