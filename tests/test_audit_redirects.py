"""A read's ``redirects`` lists the URLs it requested (and, when a redirect's next hop is
refused, where that redirect led), never a URL refused before anything was sent.

The gate writes each hop's URL into the call's chain before the hop's checks, so that a
read refused at a redirect's hop says where the redirect led. A first hop refused by those
checks (rate limit, robots.txt, ...) sent nothing, and listed its URL as "visited" all the
same (probe 43, F9) while a first-hop policy refusal listed nothing: one refusal class, two
answers. Each test here checks the origin's own log of what it was sent against the record.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from localserver import LocalServer, redirect, respond, serve

from webward import Settings, Web
from webward._errors import Refused
from webward.audit import AuditRecord
from webward.testing import MemoryAuditSink

PAGE = "<html><head><title>T</title></head><body><p>an ordinary page</p></body></html>"


@pytest.fixture
def site() -> Iterator[LocalServer]:
    routes = {
        "/robots.txt": respond(200, "User-agent: *\nDisallow: /private\n", "text/plain"),
        "/page": respond(200, PAGE),
        "/other": respond(200, PAGE),
        "/private": respond(200, PAGE),
        "/go": redirect("http://denied.example/landing"),
    }
    with serve(routes=routes) as server:
        yield server


def settings(**sections: Any) -> Settings:
    base: dict[str, Any] = {
        "network": {"allow_ranges": ["127.0.0.1/32"]},
        "policy": {"default_tier": "connected", "robots": False, "deny": ["denied.example"]},
        "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
    }
    for name, value in sections.items():
        base[name] = {**base.get(name, {}), **value}
    return Settings().replace(base)


@asynccontextmanager
async def web(s: Settings) -> AsyncIterator[tuple[Web, MemoryAuditSink]]:
    audit = MemoryAuditSink()
    async with Web(s, audit=audit) as w:
        yield w, audit


async def refused_read(w: Web, url: str, agent: str = "cli") -> Refused:
    with pytest.raises(Refused) as info:
        await w.fetch(url, agent=agent)
    return info.value


def paths(site: LocalServer) -> list[str]:
    return [r.path for r in site.requests]


def chain(record: AuditRecord) -> tuple[tuple[str, ...], int | None]:
    return record.redirects, record.status


@pytest.mark.anyio
async def test_a_read_refused_by_the_hosts_rate_limit_lists_nothing(site: LocalServer) -> None:
    """One token a host, none coming back soon: the second read is refused rate_limited
    before it sends anything, and its record lists no URL (it listed the URL)."""
    async with web(settings(limits={"per_host_rate": 0.001, "per_host_burst": 1})) as (w, audit):
        await w.fetch(site.url("/page"))
        err = await refused_read(w, site.url("/other"))
    assert err.reason == "rate_limited"
    assert paths(site) == ["/page"]  # /other was never requested
    allowed, limited = audit.records
    assert chain(allowed) == ((site.url("/page"),), 200)
    assert (limited.reason, *chain(limited)) == ("rate_limited", (), None)


@pytest.mark.anyio
async def test_a_read_refused_by_robots_txt_lists_nothing(site: LocalServer) -> None:
    """robots.txt is read (a request of its own, on no record's chain), and disallows the
    page: the page was never requested, and the record lists nothing."""
    async with web(settings(policy={"robots": True})) as (w, audit):
        err = await refused_read(w, site.url("/private"))
    assert err.reason == "robots"
    assert paths(site) == ["/robots.txt"]
    [record] = audit.records
    assert chain(record) == ((), None)


@pytest.mark.anyio
async def test_refusals_before_the_first_hop_list_nothing_either(site: LocalServer) -> None:
    """The same class, refused earlier (policy, an agent's own lists, its budget): nothing
    sent, nothing listed."""
    s = settings(
        agents={
            "spent": {"budget": {"fetch_per_day": 1}},
            "confined": {"allow": ["allowed.example"]},
        }
    )
    async with web(s) as (w, audit):
        await w.fetch(site.url("/page"), agent="spent")
        budget = await refused_read(w, site.url("/other"), agent="spent")
        confined = await refused_read(w, site.url("/other"), agent="confined")
        denied = await refused_read(w, "http://denied.example/x")
    assert [e.reason for e in (budget, confined, denied)] == [
        "budget_exhausted",
        "host_not_allowed",
        "host_denied",
    ]
    assert paths(site) == ["/page"]
    assert [chain(r) for r in audit.records[1:]] == [((), None)] * 3


@pytest.mark.anyio
async def test_a_read_refused_at_a_redirects_hop_keeps_what_was_sent_and_where_it_led(
    site: LocalServer,
) -> None:
    """/go was requested and answered 302 to a denied host: the chain is /go, then where the
    redirect led (refused there, never requested), and the status is the 302 that came back
    (it was null, as though nothing had answered)."""
    async with web(settings()) as (w, audit):
        err = await refused_read(w, site.url("/go"))
    assert err.reason == "host_denied"
    assert paths(site) == ["/go"]
    [record] = audit.records
    assert chain(record) == ((site.url("/go"), "http://denied.example/landing"), 302)
    assert record.final_url is None
