"""Freshness: ``max_age`` per call and conditional revalidation (``ETag`` / ``Last-Modified``),
against a loopback server that counts requests and answers conditional ones with 304, through
one ``Web``, two ``Web`` sharing Redis, and two command-line processes sharing the state dir."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from localserver import Request, send, serve
from test_reading import text_of, web
from test_redis import replicas
from test_redis import settings as redis_settings

from webward import InvalidInput
from webward._cache import MAX_AGE_LIMIT_S, CachedPage, check_max_age
from webward.testing import FakeClock, MemoryAuditSink

pytestmark = pytest.mark.anyio

SRC = Path(__file__).resolve().parents[1] / "src"
LAST_MODIFIED = "Tue, 01 Dec 2026 04:00:00 GMT"


class Origin:
    """A page that answers a matching ``If-None-Match`` / ``If-Modified-Since`` with 304 and
    no body, and counts full answers and 304s apart."""

    def __init__(self, text: str, *, etag: str | None = None, last_modified: str | None = None):
        self.text, self.etag, self.last_modified = text, etag, last_modified
        self.full = 0
        self.not_modified = 0
        self.conditional: list[dict[str, str]] = []  # the validators each request carried

    def __call__(self, req: Request, sock: socket.socket) -> None:
        sent = {k: v for k, v in req.headers.items() if k.startswith("if-")}
        self.conditional.append(sent)
        headers: dict[str, str] = {}
        if self.etag:
            headers["ETag"] = self.etag
        if self.last_modified:
            headers["Last-Modified"] = self.last_modified
        unchanged = (
            sent.get("if-none-match") == self.etag
            if self.etag
            else bool(self.last_modified) and sent.get("if-modified-since") == self.last_modified
        )
        if unchanged:
            self.not_modified += 1
            send(sock, 304, b"", None, headers)
            return
        self.full += 1
        body = f"<html><head><title>T</title></head><body><p>{self.text}</p></body></html>"
        send(sock, 200, body.encode(), "text/html; charset=utf-8", headers)


VALIDATORS = {
    "etag": {"etag": '"v1"'},
    "last-modified": {"last_modified": LAST_MODIFIED},
}


@pytest.mark.parametrize("kind", sorted(VALIDATORS))
async def test_max_age_serves_a_younger_reading_and_revalidates_an_older_one(kind: str) -> None:
    origin = Origin("The first reading of the page.", **VALIDATORS[kind])
    clock = FakeClock()
    with serve(routes={"/p": origin}) as srv:
        async with web(clock=clock) as w:
            url = srv.url("/p")
            await w.fetch(url)
            clock.advance(30)
            young = await w.fetch(url, max_age=60)
            assert len(srv.requests) == 1  # younger than max_age: no request at all
            origin.text = "A second reading the server would send in full."
            clock.advance(60)  # now 90 s old
            old = await w.fetch(url, max_age=60)
    assert "The first reading" in text_of(young.content)
    # Older than max_age: asked again, conditionally; the 304 keeps the cached reading, so
    # the text is the first one although the server's body has changed meanwhile.
    assert len(srv.requests) == 2 and origin.full == 1 and origin.not_modified == 1
    header = "if-none-match" if kind == "etag" else "if-modified-since"
    assert header in origin.conditional[1] and not origin.conditional[0]
    assert "The first reading" in text_of(old.content)
    assert old.status == 200


async def test_without_validators_an_older_reading_is_read_again() -> None:
    origin = Origin("Version one.")
    clock = FakeClock()
    with serve(routes={"/p": origin}) as srv:
        async with web(clock=clock) as w:
            await w.fetch(srv.url("/p"))
            origin.text = "Version two."
            clock.advance(10)
            same = await w.fetch(srv.url("/p"), max_age=20)
            clock.advance(20)
            again = await w.fetch(srv.url("/p"), max_age=20)
    assert "Version one." in text_of(same.content)
    assert "Version two." in text_of(again.content)
    assert origin.full == 2 and origin.conditional == [{}, {}]


async def test_max_age_zero_always_asks_and_a_304_renews_the_reading() -> None:
    """0 sends a request every time; the 304 (no body: nothing to convert) keeps the cached
    reading and resets its age, so a later call without max_age sends nothing; the audit
    record of the revalidating call says 304."""
    origin = Origin("Original text of the page.", etag='"abc"')
    audit = MemoryAuditSink()
    clock = FakeClock()
    with serve(routes={"/p": origin}) as srv:
        async with web(clock=clock, audit=audit) as w:
            url = srv.url("/p")
            await w.fetch(url)
            origin.text = "Changed text the server would send in full."
            clock.advance(550)
            zero = await w.fetch(url, max_age=0)
            assert len(srv.requests) == 2
            clock.advance(550)  # 1,100 s after the first read, 550 s after the 304
            later = await w.fetch(url)
    assert origin.full == 1 and origin.not_modified == 1 and len(srv.requests) == 2
    assert origin.conditional[1] == {"if-none-match": '"abc"'}
    assert "Original text" in text_of(zero.content) and "Original text" in text_of(later.content)
    assert [r.status for r in audit.records] == [200, 304, 200]
    assert all(r.decision == "allowed" for r in audit.records)


async def test_an_expired_reading_is_revalidated_and_a_changed_page_read_again() -> None:
    """Past the TTL a page with validators is still kept, to be revalidated; a new ETag
    brings a 200 and the new text, whose own ETag is then remembered."""
    origin = Origin("Edition one.", etag='"e1"')
    clock = FakeClock()
    with serve(routes={"/p": origin}) as srv:
        async with web(clock=clock, limits={"page_cache_ttl_s": 100}) as w:
            url = srv.url("/p")
            await w.fetch(url)
            clock.advance(101)
            kept = await w.fetch(url)  # expired: conditional, 304
            origin.text, origin.etag = "Edition two.", '"e2"'
            clock.advance(101)
            changed = await w.fetch(url)  # expired again: conditional, 200 with a new body
            clock.advance(101)
            await w.fetch(url)  # the new ETag is sent, and matches
    assert "Edition one." in text_of(kept.content)
    assert "Edition two." in text_of(changed.content)
    assert [c.get("if-none-match") for c in origin.conditional] == [None, '"e1"', '"e1"', '"e2"']
    assert origin.full == 2 and origin.not_modified == 2


async def test_validators_go_only_to_the_url_the_reading_came_from() -> None:
    """A redirected read revalidates at its final URL: the redirect hop carries no validators
    (they describe the other response), and every hop meets the gate again."""
    origin = Origin("Behind a redirect.", etag='"r1"')
    hops: list[dict[str, str]] = []

    def moved(req: Request, sock: socket.socket) -> None:
        hops.append({k: v for k, v in req.headers.items() if k.startswith("if-")})
        send(sock, 301, b"", None, {"Location": "/new"})

    with serve(routes={"/old": moved, "/new": origin}) as srv:
        async with web() as w:
            first = await w.fetch(srv.url("/old"))
            again = await w.fetch(srv.url("/old"), max_age=0)
    assert hops == [{}, {}]
    assert origin.conditional == [{}, {"if-none-match": '"r1"'}]
    assert again.redirects == first.redirects == (srv.url("/old"), srv.url("/new"))
    assert "Behind a redirect." in text_of(again.content)


@pytest.mark.parametrize(
    "bad", [-1, MAX_AGE_LIMIT_S + 1, 2.5, True, "ten", "", "-3", "\u0661\u0662", [], {}]
)
async def test_a_bad_max_age_is_refused_before_any_connection(bad: object) -> None:
    with serve(routes={"/p": Origin("x")}) as srv:
        async with web() as w:
            with pytest.raises(InvalidInput) as exc:
                await w.fetch(srv.url("/p"), max_age=bad)  # type: ignore[arg-type]
    assert srv.accepts == 0
    assert (
        str(exc.value) == f"max_age must be a whole number of seconds from 0 to {MAX_AGE_LIMIT_S}"
    )
    assert exc.value.reason == "bad_max_age"


def test_good_max_age_values() -> None:
    assert check_max_age(None) is None
    assert check_max_age(0) == 0 and check_max_age(" 60 ") == 60 and check_max_age(60.0) == 60
    assert check_max_age(MAX_AGE_LIMIT_S) == MAX_AGE_LIMIT_S


def test_validators_survive_the_json_of_shared_caches() -> None:
    from webward._convert import Converted

    page = CachedPage(
        "https://e.com/a",
        "https://e.com/a",
        200,
        Converted("text", "text/plain", "", "x", (), (), False),
        etag='W/"1"',
        last_modified=LAST_MODIFIED,
        fetched_at=123.5,
    )
    again = CachedPage.from_dict(json.loads(json.dumps(page.to_dict())))
    assert again == page
    assert again.validators() == (("If-None-Match", 'W/"1"'), ("If-Modified-Since", LAST_MODIFIED))


async def test_two_webs_sharing_redis_share_freshness(redis_url: str) -> None:
    """One replica reads; the other serves it while young, revalidates it with max_age=0 (a
    304), and the renewed reading (age reset) is what the first replica then serves."""
    origin = Origin("Shared through Redis.", etag='"s1"')
    clock = FakeClock()
    with serve(routes={"/p": origin}) as srv:
        async with replicas(redis_settings(redis_url), clock) as (a, b):
            url = srv.url("/p")
            await a.fetch(url)
            clock.advance(5)
            young = await b.fetch(url, max_age=10)
            assert len(srv.requests) == 1
            renewed = await b.fetch(url, max_age=0)
            clock.advance(8)  # 13 s after the read, 8 s after the 304
            served = await a.fetch(url, max_age=10)
    assert len(srv.requests) == 2 and origin.not_modified == 1
    assert origin.conditional[1] == {"if-none-match": '"s1"'}
    for page in (young, renewed, served):
        assert "Shared through Redis." in text_of(page.content)


def _cli(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webward", "fetch", *args, "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=60,
    )


def test_cli_processes_share_freshness_through_the_state_dir(tmp_path: Path) -> None:
    config = tmp_path / "webward.toml"
    config.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n'
        '[policy]\ndefault_tier = "connected"\nrobots = false\n'
        f"[state]\ndir = {json.dumps(str(tmp_path / 'state'))}\n"
    )
    origin = Origin("Read by the command line.", last_modified=LAST_MODIFIED)
    with serve(routes={"/p": origin}) as srv:
        first = _cli(srv.url("/p"), config=config)
        cached = _cli(srv.url("/p"), "--max-age", "3600", config=config)
        assert len(srv.requests) == 1
        origin.text = "A body the 304 never sends."
        fresh = _cli(srv.url("/p"), "--max-age", "0", "--json", config=config)
        bad = _cli(srv.url("/p"), "--max-age", "-5", config=config)
    for run in (first, cached, fresh):
        assert run.returncode == 0, run.stderr
    assert "Read by the command line." in cached.stdout
    assert "Read by the command line." in json.loads(fresh.stdout)["content"]
    assert len(srv.requests) == 2 and origin.not_modified == 1
    assert origin.conditional[1] == {"if-modified-since": LAST_MODIFIED}
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        f"webward: --max-age must be a whole number of seconds from 0 to {MAX_AGE_LIMIT_S}"
    )


async def test_the_agent_tool_takes_max_age() -> None:
    from webward.agents import ToolContext, execute_tool

    origin = Origin("For the model.", etag='"m1"')
    with serve(routes={"/p": origin}) as srv:
        async with web() as w:
            context = ToolContext(w, "research", "connected")
            await execute_tool("web_fetch", {"url": srv.url("/p")}, context)
            zero = await execute_tool("web_fetch", {"url": srv.url("/p"), "max_age": "0"}, context)
            bad = await execute_tool("web_fetch", {"url": srv.url("/p"), "max_age": -1}, context)
    assert not zero.is_error and "For the model." in zero.text
    assert origin.not_modified == 1 and len(srv.requests) == 2
    assert bad.is_error and bad.text.startswith("max_age must be a whole number of seconds")
