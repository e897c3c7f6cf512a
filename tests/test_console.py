"""The operator console in Debian's Chromium (Playwright), over real HTTP on loopback, from
both setups: SQLite audit with memory limit state, and PostgreSQL audit with Redis state."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime as dt
import json
import logging
import os
import re
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from conftest import RedisServer
from localserver import redirect, respond, serve
from playwright.sync_api import Browser, Page, sync_playwright
from test_gateway import running_gateway

from webward import Settings, Web
from webward._errors import InvalidInput
from webward._gateway import FETCH_PATH, hash_token
from webward._render import CHROMIUM
from webward._telemetry import Telemetry
from webward._tokens import TokenTable
from webward.audit import AuditRecord, open_audit_sink
from webward.console import CSP
from webward.console._auth import SESSION_S, AgentTokens, Check

ROOT = Path(__file__).resolve().parents[1]
ADMIN, BOT = "admin-console-token", "bot-gateway-token"
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/console/\?token=[\w-]+)")  # webward console's
SCRIPT_URL = (
    'https://evil.example/<script>alert(1)</script>"><img src=https://tracker.example/x.png>'
)
BIDI_QUERY = "invoice \u202egpj.exe holiday"
HTML_AGENT = '<b onmouseover="alert(3)">mallory</b>'
# Laid out from its Hebrew first letter this host read as one ending in google.com (it shows
# in its ASCII form, xn--4db.google.com.xn--5db.blocked.example, left to right); its token
# is a secret a shared console page must not show; its session name pushed the targets away.
RTL_SECRET_URL = "https://\u05d0.google.com.\u05d1.blocked.example/p?token=SECRET-VALUE-42"
LONG_SESSION = "s" * 500
# Regenerate the screenshots in docs/console/ with WEBWARD_CONSOLE_SCREENSHOTS=1.
SHOTS = ROOT / "docs" / "console" if os.environ.get("WEBWARD_CONSOLE_SCREENSHOTS") else None
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    # Nothing but loopback resolves: a request a hostile row smuggled in could not leave.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


def console_settings(tmp_path: Path, **sections: Any) -> Settings:
    """Loopback reads, breaker after 2 failures; alice-admin (role admin) and bot (no role)."""
    base: dict[str, Any] = {
        "network": {"allow_ranges": ["127.0.0.1/32"]},
        "policy": {"default_tier": "connected", "robots": False, "deny": ["*.blocked.example"]},
        "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000, "breaker_failures": 2},
        "state": {"dir": str(tmp_path / "state")},
        "search": {"provider": "searxng", "searxng_url": "http://127.0.0.1:9/searx"},
        "agents": {
            "alice-admin": {"tier": "full", "role": "admin", "token_sha256": hash_token(ADMIN)},
            "bot": {"tier": "full", "token_sha256": hash_token(BOT)},
        },
    }
    for name, value in sections.items():
        base[name] = {**base.get(name, {}), **value}
    return Settings().replace(base)


def seed(settings: Settings, now: dt.datetime, count: int = 130) -> None:
    """``count`` records over the last hour (three hostile ones newest) and one redirect chain."""

    async def write() -> None:
        sink = open_audit_sink(settings)
        try:
            for i in range(count, 0, -1):
                refused = i % 5 == 0
                await sink.write(
                    AuditRecord.create(
                        decision="refused" if refused else "allowed",
                        reason=("host_denied" if i % 10 == 0 else "rate_limited")
                        if refused
                        else "allowed",
                        agent=("alice", "research", "crawler")[i % 3],
                        tier="connected",
                        capability="web:page.fetch@1",
                        target=f"https://site{i % 7}.example/page/{i}",
                        status=None if refused else 200,
                        duration_ms=40 + 7 * i,
                        time=now - dt.timedelta(seconds=20 * i + 60),
                    )
                )
            for target, agent in (
                (SCRIPT_URL, "research"),
                (BIDI_QUERY, "research"),
                (RTL_SECRET_URL, HTML_AGENT),
            ):
                await sink.write(
                    AuditRecord.create(
                        decision="allowed", reason="allowed", agent=agent, tier="full",
                        capability="web:search.query@1" if target == BIDI_QUERY else "web:page.fetch@1",
                        target=target, time=now - dt.timedelta(seconds=30), duration_ms=120,
                        session=LONG_SESSION if agent == HTML_AGENT else None,
                    )
                )  # fmt: skip
        finally:
            await sink.aclose()

    # In a thread of its own: Playwright's sync API keeps an event loop in the test's thread.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(anyio.run, write).result()


def gateway_calls(base: str, origin: Any) -> None:
    """Real calls by bot: one read through a redirect, then two 500s (the breaker opens)."""
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {BOT}"}, timeout=30) as c:
        assert c.post(FETCH_PATH, json={"url": origin.url("/hop")}).status_code == 200
        for _ in range(2):
            assert c.post(FETCH_PATH, json={"url": origin.url("/fail")}).status_code == 502
        assert c.post(FETCH_PATH, json={"url": origin.url("/fail")}).status_code == 503


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Debian Chromium for the module (never a downloaded browser)."""
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            yield b
        finally:
            b.close()


class Watched:
    """A page with every request and dialog it saw written down."""

    def __init__(self, browser: Browser) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 860})
        self.page: Page = self.context.new_page()
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def shot(self, name: str, tmp_path: Path, *, full_page: bool = True) -> None:
        path = (SHOTS or tmp_path) / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), full_page=full_page)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def walk_console(browser: Browser, base: str, tmp_path: Path, *, shots: bool) -> None:
    """Log in, read, filter, page, open a record, see the charts, hosts, policy and budgets."""
    w = Watched(browser)
    page = w.page
    try:
        resp = page.goto(f"{base}/console/")
        assert resp is not None and resp.status == 401
        assert resp.headers["content-security-policy"] == CSP
        page.fill("#token", BOT)  # an agent without the admin role
        page.click("button[type=submit]")
        assert "may not open the console" in page.inner_text("main")
        assert 'role = "admin"' in page.inner_text("main")
        page.goto(f"{base}/console/login")
        page.fill("#token", ADMIN)
        page.click("button[type=submit]")
        page.wait_for_selector("table.audit")
        assert page.url == f"{base}/console/"

        # Newest first: bot's real calls through the gateway, then the hostile rows, as text.
        rows = page.locator("table.audit tbody tr")
        assert rows.count() == 50
        assert rows.nth(0).inner_text().split("\t")[1].strip() == "bot"
        body = page.inner_text("table.audit")
        assert SCRIPT_URL in body and HTML_AGENT in body
        assert "invoice \\u202egpj.exe holiday" in body  # the bidi override is shown, not obeyed
        assert page.evaluate("document.scripts.length") == 0
        assert page.locator("main img, main b").count() == 0
        assert "SECRET-VALUE-42" not in body and "token=REDACTED" in body
        hostile = page.locator("table.audit tbody tr", has_text="mallory").locator("td.target")
        # Its host in ASCII, and any text of a target laid out left to right, isolated.
        assert "https://xn--4db.google.com.xn--5db.blocked.example/" in hostile.inner_text()
        style = "c => [getComputedStyle(c).direction, getComputedStyle(c).unicodeBidi]"
        assert hostile.evaluate(style) == ["ltr", "isolate"]
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        if shots:
            w.shot("audit", tmp_path, full_page=False)  # the first rows are the story

        # Filter by agent and decision with the form.
        page.fill("input[name=agent]", "alice")
        page.select_option("select[name=decision]", "refused")
        page.click(".filters button[type=submit]")
        page.wait_for_url(re.compile(r"agent=alice"))
        cells = page.locator("table.audit tbody tr td:nth-child(2)").all_inner_texts()
        decisions = page.locator("table.audit tbody tr td:nth-child(6)").all_inner_texts()
        assert len(cells) == 8 and set(cells) == {"alice"} and set(decisions) == {"refused"}

        # Page through everything, newest to oldest: 50, 50, 36 distinct records.
        page.goto(f"{base}/console/")
        seen: list[str] = []
        while True:
            seen += page.locator("table.audit tbody tr td:first-child a").evaluate_all(
                "links => links.map(a => a.getAttribute('href'))"
            )
            older = page.locator("a[rel=next]")
            if not older.count():
                break
            older.click()
            page.wait_for_selector("a[rel=first]")
        assert len(seen) == len(set(seen)) == 130 + 3 + 4

        # One click to a call's full record: the read through a redirect shows its chain.
        page.goto(f"{base}/console/?q=/hop")
        page.locator("table.audit tbody tr td.target a").first.click()
        page.wait_for_selector("ol.chain")
        chain = page.locator("ol.chain li").all_inner_texts()
        assert [c.rsplit("/", 1)[1] for c in chain] == ["hop", "page"]
        if shots:
            w.shot("record", tmp_path)

        # Usage: the charts are drawn (SVG with visible lines and bars).
        page.goto(f"{base}/console/usage?range=1h")
        lines = page.locator("figure.chart svg polyline")
        assert lines.count() >= 4  # three agents (and bot), p50 and p95
        box = lines.first.bounding_box()
        assert box is not None and box["width"] > 100
        assert page.locator("figure.chart svg rect.d-refused").count() >= 3
        assert "host_denied" in page.inner_text("main") and "rate_limited" in page.inner_text(
            "main"
        )
        if shots:
            w.shot("usage", tmp_path)

        # Top hosts with their breaker: 127.0.0.1 failed twice and is open.
        page.goto(f"{base}/console/hosts")
        row = page.locator("table.hosts tr", has_text="127.0.0.1")
        assert "open until" in row.inner_text()
        assert page.locator("table.hosts tr", has_text="provider:searxng").count() == 1
        if shots:
            w.shot("hosts", tmp_path)

        page.goto(f"{base}/console/policy")
        text = page.inner_text("main")
        assert "*.blocked.example" in text and "searxng" in text and "enforce" in text
        assert "http://127.0.0.1:9/searx" in text
        if shots:
            w.shot("policy", tmp_path)

        page.goto(f"{base}/console/budgets")
        assert "No budgets are configured" in page.inner_text("main")
        if shots:
            w.shot("budgets", tmp_path)

        page.click("header .logout button")
        page.wait_for_url(re.compile(r"/console/login$"))
        assert page.goto(f"{base}/console/").status == 401  # type: ignore[union-attr]
    finally:
        w.context.close()
    assert w.dialogs == []
    assert w.requests and all(u.startswith(f"{base}/") for u in w.requests), w.requests


def origin_server() -> Any:
    return serve(
        routes={
            "/hop": redirect("/page"),
            "/page": respond(
                200, "<html><head><title>P</title></head><body><p>hi</p></body></html>"
            ),
            "/fail": respond(500, "down"),
        }
    )


def test_console_in_chromium_from_sqlite_and_memory_state(browser: Browser, tmp_path: Path) -> None:
    """Embedded defaults: the whole console works, hostile rows stay text, nothing leaves."""
    settings = console_settings(tmp_path)
    seed(settings, dt.datetime.now(dt.UTC))
    with origin_server() as origin, running_gateway(settings, lambda: Web(settings)) as base:
        gateway_calls(base, origin)
        walk_console(browser, base, tmp_path, shots=True)


def test_console_in_chromium_from_postgres_and_redis(
    browser: Browser,
    tmp_path: Path,
    postgres_dsn: str,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Scale-out: the same pages from the PostgreSQL audit log and the Redis limit state."""
    monkeypatch.setenv("WEBWARD_TEST_AUDIT_DSN", postgres_dsn)
    settings = console_settings(
        tmp_path,
        audit={"postgres_dsn_env": "WEBWARD_TEST_AUDIT_DSN"},
        state={"redis_url": redis_url},
    )
    seed(settings, dt.datetime.now(dt.UTC))
    with origin_server() as origin, running_gateway(settings, lambda: Web(settings)) as base:
        gateway_calls(base, origin)
        walk_console(browser, base, tmp_path, shots=False)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_gateway_console_sessions_are_signed_expire_and_end(tmp_path: Path) -> None:
    """A session value names its agent and login time, signed with the token's digest: another
    replica (same config) takes it, a forged or altered one is refused, and it ends after
    SESSION_S, at a logout (on the replica that saw it), or when the agent's token changes."""
    now = [1_800_000_000.0]
    tokens = TokenTable(console_settings(tmp_path))
    here = AgentTokens(tokens, clock=lambda: now[0])
    there = AgentTokens(TokenTable(console_settings(tmp_path)), clock=lambda: now[0])
    verdict, session = here.login(ADMIN)
    assert verdict == Check(200, "alice-admin") and ADMIN not in session
    assert there.check(session) == Check(200, "alice-admin")
    assert here.login(BOT)[0].status == 403 and here.login(BOT)[1] == ""
    unknown = Check(401, message="that token is not known to this gateway", unknown_token=True)
    assert here.login("nope") == (unknown, "")
    head, issued, name, mac = session.split(".")
    forged = [
        f"{head}.{issued}.{b'bot'.hex()}.{mac}",  # another agent's name
        f"{head}.{int(issued[:-16], 16) + 3600:x}{issued[-16:]}.{name}.{mac}",  # a later login
        f"{head}.{issued}.{name}.{mac[:-1]}{'1' if mac.endswith('0') else '0'}",  # altered
        f"{head}.{issued}.{name}",
        f"{head}.zz{issued[-16:]}.{name}.{mac}",
        f"{head}.{issued[-16:]}.{name}.{mac}",
        f"{head}.{issued}.{name.upper()}.{mac}",  # the same name, spelled another way
        f"{head}.{issued}.{name}.{mac[:-1]}\u00e9",  # no comparison of ASCII: no 500
    ]
    for value in forged:
        assert there.check(value).status == 401, value
    now[0] += SESSION_S - 1
    assert there.check(session).status == 200
    now[0] += 2
    assert there.check(session).status == 401
    _, fresh = here.login(ADMIN)
    _, other = here.login(ADMIN)  # the same second: a session of its own
    rotated = console_settings(
        tmp_path,
        agents={
            "alice-admin": {"tier": "full", "role": "admin", "token_sha256": hash_token("new")}
        },
    )
    assert AgentTokens(TokenTable(rotated), clock=lambda: now[0]).check(fresh).status == 401
    here.logout(fresh)
    assert here.check(fresh).status == 401 and there.check(fresh).status == 200
    # A logged-out session's copy under another spelling is no session.
    f_head, f_issued, f_name, f_mac = fresh.split(".")
    for respelled in (
        f"{f_head}.{f_issued}.{f_name.upper()}.{f_mac}",
        f"{f_head}.{f_issued.upper()}.{f_name}.{f_mac}",
    ):
        assert here.check(respelled).status == 401
    assert here.check(other).status == 200


def test_console_http_auth_and_headers(tmp_path: Path) -> None:
    """401 without a credential, 403 for an agent without the admin role (bearer or cookie),
    strict headers on every page, a same-site http-only cookie, no cross-site login."""
    settings = console_settings(tmp_path)
    seed(settings, dt.datetime.now(dt.UTC), count=3)
    with running_gateway(settings, lambda: Web(settings)) as base, httpx.Client(base_url=base) as c:
        assert c.get("/console/").status_code == 401
        assert c.get("/console/", headers={"Authorization": "Bearer nope"}).status_code == 401
        bot = c.get("/console/policy", headers={"Authorization": f"Bearer {BOT}"})
        assert bot.status_code == 403 and "mallory" not in bot.text
        port = httpx.URL(base).port
        cookies = {f"webward_console_{port}": BOT}  # named by port: consoles share a host
        with httpx.Client(base_url=base, cookies=cookies) as with_cookie:
            assert with_cookie.get("/console/").status_code == 403
        admin = c.get("/console/", headers={"Authorization": f"Bearer {ADMIN}"})
        assert admin.status_code == 200
        for r in (bot, admin):
            assert r.headers["content-security-policy"] == CSP
            assert r.headers["x-content-type-options"] == "nosniff"
            assert r.headers["cache-control"] == "no-store"
        assert "<script" not in admin.text.lower() and " style=" not in admin.text

        evil = c.post(
            "/console/login", data={"token": ADMIN}, headers={"Origin": "https://evil.example"}
        )
        assert evil.status_code == 403 and "set-cookie" not in evil.headers
        wrong = c.post("/console/login", data={"token": BOT + "x"})
        assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
        ok = c.post("/console/login", data={"token": ADMIN}, headers={"Origin": base})
        cookie = ok.headers["set-cookie"]
        assert ok.status_code == 303 and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert "Path=/console/" in cookie and "Secure" not in cookie  # plain http on loopback
        assert f"Max-Age={SESSION_S}" in cookie
        assert c.get("/console/budgets").status_code == 200  # the cookie now counts
        assert f"webward_console_{port}=" in cookie
        # The browser keeps a session, never the token: it calls no capability.
        session = c.cookies[f"webward_console_{port}"]
        assert ADMIN not in session
        as_token = c.post(FETCH_PATH, json={"url": "http://127.0.0.1:9/"}, headers=bearer(session))
        assert as_token.status_code == 401
        # A logout ends the session on the server: a copy of the cookie no longer opens it.
        with httpx.Client(base_url=base, cookies={f"webward_console_{port}": session}) as copy:
            assert copy.get("/console/").status_code == 200
            c.post("/console/logout", headers={"Origin": base})
            assert copy.get("/console/").status_code == 401
        assert c.post("/console/login", data={"token": ADMIN}).status_code == 303

        # Behind the TLS proxy the docs recommend: the browser's page is https, the gateway
        # sees http; the login is its own page's, and the cookie is Secure.
        host = base.removeprefix("http://")
        with httpx.Client(base_url=base) as proxied:
            behind = proxied.post(
                "/console/login", data={"token": ADMIN}, headers={"Origin": f"https://{host}"}
            )
            assert behind.status_code == 303 and "Secure" in behind.headers["set-cookie"]
            out = proxied.post(
                "/console/logout",
                headers={"Origin": f"https://{host}", "Cookie": f"webward_console_{port}={ADMIN}"},
            )
            gone = f'webward_console_{port}=""'
            assert out.status_code == 303 and gone in out.headers["set-cookie"]

        # A bad filter or a forged cursor is one sentence, not a traceback.
        for forged in ("1e400~x", "1~99999999999999999999999"):  # past a float; past SQLite
            bad = c.get("/console/", params={"cursor": forged})
            assert bad.status_code == 400 and "cursor is not one this console made" in bad.text
        assert "Traceback" not in bad.text
        assert c.get("/console/?since=soon").status_code == 400
        late = c.get("/console/?until=2026-13-45")  # named as the console's field, not a flag
        assert late.status_code == 400 and "until &#39;2026-13-45&#39; is neither" in late.text
        assert "--since" not in late.text
        assert c.get("/console/?since=99999999d&until=99999999w").status_code == 200
        # Answers no view makes carry the security headers too: 404, 405.
        for answer in (c.get("/console/no-such-page"), c.get("/console/logout")):
            assert answer.status_code in (404, 405)
            # A page of the console's with what to do, not Starlette's text/plain "Not Found".
            assert answer.headers["content-type"].startswith("text/html")
            assert "no such page" in answer.text or "GET is not allowed here" in answer.text
            assert answer.headers["content-security-policy"].startswith("default-src 'none'")
            assert answer.headers["x-frame-options"] == "DENY"
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["cache-control"] == "no-store"
        assert c.get("/console/audit/0000").status_code == 404


def test_a_path_with_a_slash_too_many_is_no_redirect_to_the_requests_host(
    tmp_path: Path,
) -> None:
    """/console/usage/ was redirected by Starlette to http://<the request's Host>/console/usage:
    behind the TLS proxy the docs recommend, a downgrade of the operator's page to plain
    http, and to any host a request named. It is the console's 404 page, as such a path is
    the gateway's own 404, naming no host."""
    settings = console_settings(tmp_path)
    with running_gateway(settings, lambda: Web(settings)) as base, httpx.Client(base_url=base) as c:
        for path in ("/console/usage/", "/console/login/", "/console/static/console.css/"):
            answer = c.get(
                path,
                headers={**bearer(ADMIN), "Host": "evil.example", "X-Forwarded-Proto": "https"},
            )
            assert answer.status_code == 404 and "location" not in answer.headers
            assert "no such page" in answer.text and "evil.example" not in answer.text
            assert answer.headers["content-security-policy"] == CSP
        assert c.get("/console/usage", headers=bearer(ADMIN)).status_code == 200


def test_a_logout_ends_the_session_on_every_replica_and_after_a_restart(
    tmp_path: Path, redis_url: str
) -> None:
    """Two gateways sharing one Redis (and config); the second started again. A session
    logged out on the first was refused there and taken by the other replica (and by the
    first once restarted) until its 12 hours ran out: the signed cookie needs no shared store
    to be taken, and the logout was kept in the one process. It is kept in the limit store
    now, so a copy of the cookie opens no replica; a session not logged out opens every one."""
    settings = console_settings(tmp_path, state={"redis_url": redis_url})
    seed(settings, dt.datetime.now(dt.UTC), count=3)

    def opens(base: str, session: str) -> int:
        port = httpx.URL(base).port
        with httpx.Client(base_url=base, cookies={f"webward_console_{port}": session}) as c:
            return c.get("/console/").status_code

    with (
        running_gateway(settings, lambda: Web(settings)) as a,
        running_gateway(settings, lambda: Web(settings)) as b,
        httpx.Client(base_url=a) as c,
    ):
        assert c.post("/console/login", data={"token": ADMIN}).status_code == 303
        ended = c.cookies[f"webward_console_{httpx.URL(a).port}"]
        assert c.post("/console/login", data={"token": ADMIN}).status_code == 303
        kept = c.cookies[f"webward_console_{httpx.URL(a).port}"]  # a second login, kept
        assert kept != ended and opens(b, ended) == 200 and opens(b, kept) == 200
        c.cookies.set(f"webward_console_{httpx.URL(a).port}", ended)
        assert c.post("/console/logout").status_code == 303
        assert opens(a, ended) == 401 and opens(b, ended) == 401
        assert opens(a, kept) == 200 and opens(b, kept) == 200
    with running_gateway(settings, lambda: Web(settings)) as restarted:
        assert opens(restarted, ended) == 401 and opens(restarted, kept) == 200


def test_a_logout_holds_after_redis_restarts_empty(tmp_path: Path) -> None:
    """The logout was kept as a key of its own in Redis, so a Redis restarted without its data
    (or flushed, or failed over to a replica behind) forgot it, and a copy of the logged-out
    cookie (signed, so taken with no store at all) opened every other replica again for the
    rest of its 12 hours. A session is now taken only while Redis says it is live: after such
    a restart every session logs in again, and a login then works as before."""
    server = RedisServer().start()
    settings = console_settings(tmp_path, state={"redis_url": server.url})
    seed(settings, dt.datetime.now(dt.UTC), count=3)

    def opens(base: str, session: str) -> int:
        port = httpx.URL(base).port
        with httpx.Client(base_url=base, cookies={f"webward_console_{port}": session}) as c:
            return c.get("/console/").status_code

    try:
        with (
            running_gateway(settings, lambda: Web(settings)) as a,
            running_gateway(settings, lambda: Web(settings)) as b,
            httpx.Client(base_url=a) as c,
        ):
            cookie = f"webward_console_{httpx.URL(a).port}"
            assert c.post("/console/login", data={"token": ADMIN}).status_code == 303
            ended = c.cookies[cookie]
            assert c.post("/console/login", data={"token": ADMIN}).status_code == 303
            kept = c.cookies[cookie]
            c.cookies.set(cookie, ended)
            assert c.post("/console/logout").status_code == 303
            assert opens(b, ended) == 401 and opens(b, kept) == 200
            server.stop()
            server.start()  # the same port, nothing kept
            assert opens(b, ended) == 401  # was 200: the logout forgotten
            assert opens(b, kept) == 401  # forgotten too: it logs in again
            again = c.post("/console/login", data={"token": ADMIN})
            assert again.status_code == 303 and opens(b, again.cookies[cookie]) == 200
    finally:
        server.stop()


def test_a_logout_outlives_a_restart_without_redis(tmp_path: Path) -> None:
    """Without Redis the gateway's limit store is its own memory: a logout kept there was
    forgotten by a restart, and a copy of the logged-out cookie (signed, so taken with no
    store at all) opened the console again for the rest of its 12 hours. The logout is kept
    in the state dir then; a session not logged out still opens the restarted gateway."""
    settings = console_settings(tmp_path)
    seed(settings, dt.datetime.now(dt.UTC), count=3)

    def opens(base: str, session: str) -> int:
        port = httpx.URL(base).port
        with httpx.Client(base_url=base, cookies={f"webward_console_{port}": session}) as c:
            return c.get("/console/").status_code

    with running_gateway(settings, lambda: Web(settings)) as a, httpx.Client(base_url=a) as c:
        assert c.post("/console/login", data={"token": ADMIN}).status_code == 303
        ended = c.cookies[f"webward_console_{httpx.URL(a).port}"]
        assert c.post("/console/login", data={"token": ADMIN}).status_code == 303
        kept = c.cookies[f"webward_console_{httpx.URL(a).port}"]
        c.cookies.set(f"webward_console_{httpx.URL(a).port}", ended)
        assert c.post("/console/logout").status_code == 303
        assert opens(a, ended) == 401 and opens(a, kept) == 200
    with running_gateway(settings, lambda: Web(settings)) as restarted:
        assert opens(restarted, ended) == 401 and opens(restarted, kept) == 200


def test_a_record_whose_id_holds_a_slash_opens_from_its_link(tmp_path: Path) -> None:
    """A record written with an id of its own (``AuditRecord(id=...)``, an import) may hold a
    "/": its link (``/console/audit/import%2F2024%2F7``) was refused by the gateway, which
    routes no path holding an encoded slash (404), so the record had no page. Its link now
    names it in the query, and opens it."""
    settings = console_settings(tmp_path)

    async def write() -> None:
        sink = open_audit_sink(settings)
        record = AuditRecord.create(
            decision="allowed", reason="allowed", agent="importer", tier="connected",
            capability="web:page.fetch@1", target="https://site.example/imported",
        )  # fmt: skip
        await sink.write(dataclasses.replace(record, id="import/2024/7"))
        await sink.aclose()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # Playwright's loop is this thread's
        pool.submit(anyio.run, write).result()
    with (
        running_gateway(settings, lambda: Web(settings)) as base,
        httpx.Client(base_url=base, headers=bearer(ADMIN)) as c,
    ):
        listing = c.get("/console/")
        (link,) = set(re.findall(r'href="(/console/audit[/?][^"]+)"', listing.text))
        assert link == "/console/audit?id=import%2F2024%2F7"
        page = c.get(link)
    assert page.status_code == 200 and "https://site.example/imported" in page.text


# "google" with two Cyrillic "o" (U+043E): its own host, xn--ggle-55da, that reads as the other.
HOMOGRAPH = "g\u043e\u043egle"


def test_a_host_in_letters_of_another_script_shows_in_the_ascii_form_it_was_read_by(
    browser: Browser, tmp_path: Path
) -> None:
    """An agent's read of a host spelled with Cyrillic letters that look Latin showed in the
    audit view, the record and Top hosts (for a read refused before it was sent) as the host
    it imitates: google.com. Its host shows as the read named it (xn--ggle-55da.com), in
    the console and in `webward audit`, and Top hosts' link for it lists the refused read."""
    from webward._cmd_audit import render_table
    from webward._resolver import StaticResolver
    from webward.console import AuditFilter, open_audit_reader

    settings = console_settings(tmp_path)
    resolver = StaticResolver({"xn--ggle-55da.com": ["127.0.0.1"]})
    with (
        origin_server() as origin,
        running_gateway(settings, lambda: Web(settings, resolver=resolver)) as base,
    ):
        with httpx.Client(base_url=base, headers=bearer(BOT), timeout=30) as c:
            read = f"http://{HOMOGRAPH}.com:{origin.port}/page?q=what-the-agent-sent"
            r = c.post(FETCH_PATH, json={"url": read})
            assert r.status_code == 200, r.text
            denied = f"https://{HOMOGRAPH}.blocked.example/login"
            assert c.post(FETCH_PATH, json={"url": denied}).status_code == 403
        w = Watched(browser)
        page = w.page
        try:
            page.goto(f"{base}/console/login")
            page.fill("#token", ADMIN)
            page.click("button[type=submit]")
            page.wait_for_selector("table.audit")
            targets = page.locator("table.audit td.target").all_inner_texts()
            assert targets == [
                "https://xn--ggle-55da.blocked.example/login",
                f"http://xn--ggle-55da.com:{origin.port}/page?q=what-the-agent-sent",
            ]
            page.locator("table.audit td.target a").nth(1).click()
            page.wait_for_selector("ol.chain")
            assert "\u043e" not in page.inner_text("main")
            page.goto(f"{base}/console/hosts")
            hosts = page.locator("table.hosts td.target").all_inner_texts()
            assert sorted(hosts) == [
                "provider:searxng",
                "xn--ggle-55da.blocked.example",
                "xn--ggle-55da.com",
            ]
            page.locator("table.hosts a", has_text="xn--ggle-55da.blocked.example").click()
            page.wait_for_selector("table.audit")
            listed = page.locator("table.audit td.target").all_inner_texts()
            assert listed == ["https://xn--ggle-55da.blocked.example/login"]
        finally:
            w.context.close()
        assert w.dialogs == []

    async def table() -> str:
        reader = open_audit_reader(settings)
        try:
            return render_table((await reader.page(AuditFilter(), None, 10)).records)
        finally:
            await reader.aclose()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # Playwright's loop is this thread's
        shown = pool.submit(anyio.run, table).result()
    assert "https://xn--ggle-55da.blocked.example/login" in shown and "\u043e" not in shown


def _console_process(settings_file: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "webward", "console", "--config", str(settings_file)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = LINK.search(line)
    assert found, line
    return proc, found.group(1)


@pytest.mark.parametrize("setup", ["sqlite", "postgres+redis"])
def test_webward_console_command_prints_a_one_time_link(
    setup: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`webward console` serves on loopback; its printed token works once, then the cookie."""
    lines = ["[state]", f"dir = {json.dumps(str(tmp_path / 'state'))}"]
    sections: dict[str, Any] = {}
    if setup != "sqlite":
        monkeypatch.setenv("WEBWARD_TEST_AUDIT_DSN", request.getfixturevalue("postgres_dsn"))
        redis_url = request.getfixturevalue("redis_url")
        lines += [
            f"redis_url = {json.dumps(redis_url)}",
            "[audit]",
            'postgres_dsn_env = "WEBWARD_TEST_AUDIT_DSN"',
        ]
        sections = {
            "audit": {"postgres_dsn_env": "WEBWARD_TEST_AUDIT_DSN"},
            "state": {"redis_url": redis_url},
        }
    config = tmp_path / "webward.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    seed(console_settings(tmp_path, **sections), dt.datetime.now(dt.UTC), count=60)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("WEBWARD_STATE_DIR")  # the config file names the state dir
    proc, url = _console_process(config, env)
    try:
        with httpx.Client(timeout=30) as c:
            first = c.get(url)
            assert first.status_code == 303 and first.headers["location"] == "/console/"
            assert "token=" not in first.headers["location"]
            page = c.get(url.split("?")[0])
            assert page.status_code == 200 and page.text.count('<tr class="d-') == 50
            assert "mallory" in page.text  # the hostile agent, escaped
            assert c.get(url.split("?")[0] + "hosts").status_code == 200
            with httpx.Client(timeout=30) as other:  # the link is spent
                again = other.get(url)
                assert again.status_code == 401 and "set-cookie" not in again.headers
            reopened = c.get(url)  # the spent link again, from the logged-in browser
            assert reopened.status_code == 200 and "<h1>Log in</h1>" not in reopened.text
            session = dict(c.cookies)
            assert c.post(url.split("?")[0] + "logout").status_code == 303
            with httpx.Client(timeout=30, cookies=session) as kept:  # a copy of the cookie
                assert kept.get(url.split("?")[0]).status_code == 401  # the session ended
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()


def test_webward_console_answers_only_requests_that_name_this_machine(tmp_path: Path) -> None:
    """A page elsewhere can reach the loopback console under a name of its own that resolves
    there (DNS rebinding): a Host that is no address or localhost is refused, before the token
    is looked at; the printed link (an address) and localhost are served."""
    config = tmp_path / "webward.toml"
    config.write_text(f"[state]\ndir = {json.dumps(str(tmp_path / 'state'))}\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("WEBWARD_STATE_DIR", None)
    proc, url = _console_process(config, env)
    port = url.split(":")[2].split("/")[0]
    try:
        with httpx.Client(timeout=30) as c:
            for host in ("rebind.attacker.example", f"rebind.attacker.example:{port}", ""):
                refused = c.get(url, headers={"Host": host})
                assert refused.status_code == 403 and "loopback address" in refused.text
            assert c.get(url, headers={"Host": f"localhost:{port}"}).status_code == 303
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        assert proc.stderr is not None
        said = proc.stderr.read()
        proc.stderr.close()
    # Stopped by SIGTERM: exit 143 and one line saying so (it makes no calls to speak of).
    assert proc.returncode == 143
    assert said.splitlines()[-1] == "webward console: terminated (SIGTERM): stopped", said


def _read_only_stderr() -> None:
    # What `2>&-` in a shell can leave: a file the interpreter opens as it starts takes fd 2.
    os.dup2(os.open(os.devnull, os.O_RDONLY), 2)


@pytest.mark.parametrize(
    "started", [lambda: os.close(2), _read_only_stderr], ids=["closed", "read-only"]
)
def test_webward_console_started_without_stderr_prints_its_link_on_stdout(
    tmp_path: Path, started: Any
) -> None:
    """`webward console 2>&-`: the one-time link, the console's only way in, comes on stdout
    rather than being dropped with what a closed stderr would have shown (or failing, where
    the descriptor holds a file opened for reading)."""
    config = tmp_path / "webward.toml"
    config.write_text(f"[state]\ndir = {json.dumps(str(tmp_path / 'state'))}\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "webward", "console", "--config", str(config)],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=started,
    )
    try:
        assert proc.stdout is not None
        # Bounded: with the link lost, the console runs on and prints nothing.
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline() if ready else ""
        url = LINK.search(line)
        assert url, line
        with httpx.Client(timeout=30) as c:
            assert c.get(url.group(1)).status_code == 303
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()


def test_webward_console_refuses_a_non_loopback_address(tmp_path: Path) -> None:
    """The local console listens on loopback only; the message says what to use instead."""
    done = subprocess.run(
        [sys.executable, "-m", "webward", "console", "--host", "0.0.0.0"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--host must be a loopback address" in done.stderr and "Traceback" not in done.stderr


def test_a_role_other_than_admin_is_refused_when_config_loads() -> None:
    """`role` knows one value; a typo is an error at load, not an agent silently without it."""
    with pytest.raises(
        InvalidInput, match=r'\[agents\.ops\] role is .root.; leave it out or set "admin"'
    ):
        Settings().replace({"agents": {"ops": {"tier": "full", "role": "root"}}})


def test_the_agent_filter_is_exact_and_names_and_sessions_show_apart(tmp_path: Path) -> None:
    """`bob` and `bob ` are two agents: `?agent=bob%20` lists only the second's records (it
    was trimmed to `bob`, showing another agent's), and the table shows a name with outer
    white space quoted. Each record's session is a column, and `?session=` filters on it,
    exactly; the record view shows the session and the hits a search's lists dropped."""
    settings = console_settings(tmp_path)
    now = dt.datetime.now(dt.UTC)

    async def write() -> None:
        sink = open_audit_sink(settings)
        for i, (agent, target, session) in enumerate(
            [
                ("bob", "https://bob.example/plain", None),
                ("bob ", "https://bob.example/spaced", "gateway:bob%20:s1"),
                ("bob ", "owls", "gateway:bob%20:s2"),
            ]
        ):
            search = not target.startswith("https:")
            await sink.write(
                AuditRecord.create(
                    decision="allowed", reason="allowed", agent=agent, tier="full",
                    capability="web:search.query@1" if search else "web:page.fetch@1",
                    target=target, session=session, hits_dropped=2 if search else None,
                    time=now - dt.timedelta(seconds=30 - i),
                )
            )  # fmt: skip
        await sink.aclose()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # as seed(): Playwright's loop
        pool.submit(anyio.run, write).result()
    admin = {"Authorization": f"Bearer {ADMIN}"}

    def cells(page: httpx.Response, column: int) -> list[str]:
        rows = re.findall(r"<tr class=\"d-[^\"]+\">(.*?)</tr>", page.text, re.S)
        found = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[column] for row in rows]
        return [re.sub(r"<[^>]+>", "", cell) for cell in found]  # the text, without links

    with running_gateway(settings, lambda: Web(settings)) as base, httpx.Client(base_url=base) as c:
        spaced = c.get("/console/", params={"agent": "bob "}, headers=admin)
        plain = c.get("/console/", params={"agent": "bob"}, headers=admin)
        every = c.get("/console/", headers=admin)
        one = c.get("/console/", params={"session": "gateway:bob%20:s1"}, headers=admin)
        part = c.get("/console/", params={"session": "s1"}, headers=admin)
        record_id = re.findall(r'href="/console/audit/([0-9a-f]+)"', every.text)[0]
        record = c.get(f"/console/audit/{record_id}", headers=admin)
    assert spaced.status_code == plain.status_code == every.status_code == 200
    assert "bob.example/spaced" in spaced.text and "bob.example/plain" not in spaced.text
    assert "bob.example/plain" in plain.text and "bob.example/spaced" not in plain.text
    assert 'value="bob "' in spaced.text  # the form keeps the name as given
    assert cells(every, 1) == ["&#39;bob &#39;", "&#39;bob &#39;", "bob"]
    assert cells(every, 9) == ["gateway:bob%20:s2", "gateway:bob%20:s1", "-"]
    assert "bob.example/spaced" in one.text and "owls" not in one.text
    assert "bob.example" not in part.text and "No audit records match" in part.text
    assert re.search(r"<th>session</th><td[^>]*>gateway:bob%20:s2</td>", record.text)
    assert re.search(r"<th>hitsDropped</th><td[^>]*>2</td>", record.text)


def test_the_audit_view_shows_and_filters_the_face_and_shows_would_deny(tmp_path: Path) -> None:
    """Each row says which face made the call (a bearer token's agent or a name anyone may
    type), `?face=` filters on it; a call report mode let through that then failed shows
    what enforce mode would have refused (its row said only `failed`)."""
    settings = console_settings(tmp_path)
    now = dt.datetime.now(dt.UTC)

    async def write() -> None:
        sink = open_audit_sink(settings)
        for i, (face, decision, reason, would_deny) in enumerate(
            [
                ("gateway", "allowed", "allowed", None),
                ("cli", "failed", "http_500", "host_denied"),
            ]
        ):
            await sink.write(
                AuditRecord.create(
                    decision=decision, reason=reason, agent="alice", tier="connected",
                    capability="web:page.fetch@1", target=f"https://{face}.example/",
                    face=face, would_deny=would_deny, time=now - dt.timedelta(seconds=30 - i),
                )
            )  # fmt: skip
        await sink.aclose()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # as seed(): Playwright's loop
        pool.submit(anyio.run, write).result()
    admin = {"Authorization": f"Bearer {ADMIN}"}

    def rows(page: httpx.Response) -> list[list[str]]:
        found = re.findall(r"<tr class=\"d-[^\"]+\">(.*?)</tr>", page.text, re.S)
        return [
            [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in found
        ]

    with running_gateway(settings, lambda: Web(settings)) as base, httpx.Client(base_url=base) as c:
        every = c.get("/console/", headers=admin)
        cli = c.get("/console/", params={"face": "cli"}, headers=admin)
        bad = c.get("/console/", params={"face": "token"}, headers=admin)
    assert every.status_code == cli.status_code == 200
    assert "<th>Face</th>" in every.text
    assert [(r[2], r[5]) for r in rows(every)] == [
        ("cli", "failed would deny: host_denied"),
        ("gateway", "allowed"),
    ]
    assert [r[2] for r in rows(cli)] == ["cli"] and "gateway.example" not in cli.text
    assert bad.status_code == 400 and "face must be one of" in bad.text


def test_the_audit_view_flags_a_call_whose_render_was_refused_hosts(tmp_path: Path) -> None:
    """A page whose render tried an internal address is an "allowed" call: its row now says
    how many hosts the render's gate refused, and how many were internal (the list showed
    nothing of it; only the record's own page named them)."""
    settings = console_settings(tmp_path)
    now = dt.datetime.now(dt.UTC)
    junk = tuple(f"junk{n}.example (render_method)" for n in range(49))

    async def write() -> None:
        sink = open_audit_sink(settings)
        for i, refused in enumerate(
            [
                (),
                ("127.0.0.2:8080 (internal_address)", "example.org (render_method)"),
                (*junk, "127.0.0.2:8080 (internal_address)", "... and 3 more hosts"),
            ]
        ):
            await sink.write(
                AuditRecord.create(
                    decision="allowed", reason="allowed", agent="alice", tier="full",
                    capability="web:page.fetch@1", target=f"https://p{i}.example/",
                    render_refused=refused, time=now - dt.timedelta(seconds=30 - i),
                )
            )  # fmt: skip
        await sink.aclose()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # as seed(): Playwright's loop
        pool.submit(anyio.run, write).result()
    with running_gateway(settings, lambda: Web(settings)) as base, httpx.Client(base_url=base) as c:
        page = c.get("/console/", headers={"Authorization": f"Bearer {ADMIN}"})
    assert page.status_code == 200
    found = re.findall(r"<tr class=\"d-[^\"]+\">(.*?)</tr>", page.text, re.S)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)[5] for r in found]
    assert [re.sub(r"<[^>]+>", "", c).strip() for c in cells] == [
        "allowed render refused: 53 (1 internal)",
        "allowed render refused: 2 (1 internal)",
        "allowed",
    ]


def test_the_policy_view_shows_each_agents_own_lists_and_settings(tmp_path: Path) -> None:
    """An agent's own allow list confines even a `full` agent, while the tiers table says
    "any public host not denied": the Agents table shows each agent's allow and deny lists,
    its search lists, its URL provenance and its budgets (it showed tier and role only)."""
    settings = console_settings(
        tmp_path,
        agents={
            "dave": {"tier": "full", "allow": ["127.0.0.1"], "provenance": "session"},
            "alice": {"deny": ["127.0.0.3"], "search_deny": ["*.shady.example"]},
            "carol": {
                "search_allow": ["docs.example.org"],
                "budget": {"fetch_per_day": 5, "search_spend_per_hour": 0.5},
            },
        },
    )
    admin = {"Authorization": f"Bearer {ADMIN}"}
    with running_gateway(settings, lambda: Web(settings)) as base, httpx.Client(base_url=base) as c:
        policy = c.get("/console/policy", headers=admin)
    assert policy.status_code == 200

    def row(agent: str) -> str:
        found = re.search(rf"<tr>\s*<td>{agent}</td>(.*?)</tr>", policy.text, re.S)
        assert found is not None, policy.text
        return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1))).strip()

    assert row("dave") == "full - no 127.0.0.1 - - - session (only URLs the session has seen) none"
    assert row("alice") == "connected - no - 127.0.0.3 - *.shady.example off none"
    assert row("carol") == (
        "connected - no - - docs.example.org - off fetch_per_day = 5 search_spend_per_hour = 0.5"
    )
    assert row("bot") == "full - yes - - - - off none"
    assert ADMIN not in policy.text and hash_token(ADMIN) not in policy.text


def test_budgets_view_shows_used_and_left_from_the_gateways_limit_store(tmp_path: Path) -> None:
    """An agent with an hourly fetch budget: after one read through the gateway, the budgets
    view shows that budget with one used and the rest left; agents without one are absent."""
    settings = console_settings(
        tmp_path,
        agents={
            "bot": {
                "tier": "full",
                "token_sha256": hash_token(BOT),
                "budget": {"fetch_per_hour": 5},
            }
        },
    )
    with (
        serve(routes={"/p": respond(200, "<p>budgeted page words</p>")}) as site,
        running_gateway(settings, lambda: Web(settings)) as base,
        httpx.Client(base_url=base, timeout=30) as c,
    ):
        read = c.post(
            FETCH_PATH, json={"url": site.url("/p")}, headers={"Authorization": f"Bearer {BOT}"}
        )
        assert read.status_code == 200
        view = c.get("/console/budgets", headers={"Authorization": f"Bearer {ADMIN}"})
    assert view.status_code == 200
    rows = re.findall(r"<tr><td>(.*?)</td></tr>", view.text)
    assert rows == ["bot</td><td>fetch</td><td>calls</td><td>hour</td><td>5</td><td>1</td><td>4"]


def test_a_provider_chosen_by_its_key_shows_with_its_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No [search] provider, a Brave key in the environment: searches go to Brave, so the
    policy view names it and the hosts view lists provider:brave with its calls from the
    audit log (where a 429's hold or an open breaker would show)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", "BSA-console-test-key")
    settings = console_settings(tmp_path, search={"provider": "", "searxng_url": ""})

    async def write() -> None:
        sink = open_audit_sink(settings)
        for decision in ("allowed", "refused", "failed"):
            await sink.write(
                AuditRecord.create(
                    decision=decision, reason="allowed", agent="bot", tier="full",
                    capability="web:search.query@1", target="owls", provider="brave",
                )
            )  # fmt: skip
        await sink.aclose()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # as seed(): Playwright's loop
        pool.submit(anyio.run, write).result()
    admin = {"Authorization": f"Bearer {ADMIN}"}
    with running_gateway(settings, lambda: Web(settings)) as base, httpx.Client(base_url=base) as c:
        policy = c.get("/console/policy", headers=admin)
        hosts = c.get("/console/hosts", headers=admin)
    assert policy.status_code == 200 and "none configured" not in policy.text
    assert "<td>brave</td>" in policy.text
    row = re.search(r">provider:brave</a></td>(.*?)</tr>", hosts.text, re.S)
    assert row is not None, hosts.text
    assert [int(n) for n in re.findall(r"<td[^>]*>(\d+)</td>", row.group(1))[:3]] == [3, 1, 1]
    assert "BSA-console-test-key" not in policy.text + hosts.text


def test_a_token_the_console_refuses_counts_as_a_refused_credential(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The console's login takes any agent's token (a 403 says it is valid), yet a wrong one
    was neither counted in webward_auth_refusals_total nor logged: guessing tokens there was
    invisible to the alert docs/operations.md gives. Each of the login form, a bearer header
    and a cookie holding a wrong token now counts as `unknown`, as on the capability routes;
    a visit without a credential (the login form) is no refusal, and the log names no token."""
    settings = console_settings(tmp_path)
    guess = "guessed-token-value-1"
    caplog.set_level(logging.WARNING, logger="webward")
    telemetry = Telemetry(metrics=True)
    with (
        running_gateway(settings, lambda: Web(settings, telemetry=telemetry)) as base,
        httpx.Client(base_url=base) as c,
    ):
        port = httpx.URL(base).port
        assert c.get("/console/").status_code == 401  # no credential: the login form
        assert c.post("/console/login", data={"token": guess}).status_code == 401
        assert c.get("/console/", headers=bearer(guess)).status_code == 401
        cookie = {f"webward_console_{port}": guess}
        with httpx.Client(base_url=base, cookies=cookie) as with_cookie:
            assert with_cookie.get("/console/hosts").status_code == 401
        assert c.post("/console/login", data={"token": ADMIN}).status_code == 303
    assert telemetry.metrics is not None
    metrics = telemetry.metrics.exposition().decode()
    assert 'webward_auth_refusals_total{reason="unknown"} 3.0' in metrics
    assert 'webward_auth_refusals_total{reason="missing"} 0.0' in metrics
    said = [
        r.getMessage() for r in caplog.records if "refused for its credentials" in r.getMessage()
    ]
    assert said and "reason=unknown" in said[0] and "127.0.0.1" in said[0]
    assert guess not in caplog.text


def test_the_usage_chart_draws_the_busiest_agents_and_the_rest_as_one_line(
    tmp_path: Path,
) -> None:
    """A library caller or an MCP client may name agents freely: one line per agent made the
    usage page of 100,000 agents 41 MB (seconds to serve, more to draw), in eight colours
    that repeat. Past eight agents the busiest seven have lines and the others one, summed."""
    settings = console_settings(tmp_path)
    now = dt.datetime.now(dt.UTC)

    async def write() -> None:
        sink = open_audit_sink(settings)
        agents = ["busy"] * 5 + [f"task-{i:02}" for i in range(12)]
        for i, agent in enumerate(agents):
            await sink.write(
                AuditRecord.create(
                    decision="allowed", reason="allowed", agent=agent, tier="full",
                    capability="web:page.fetch@1", target=f"https://usage.example/{i}",
                    time=now - dt.timedelta(seconds=60 + i),
                )
            )  # fmt: skip
        await sink.aclose()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # as seed(): Playwright's loop
        pool.submit(anyio.run, write).result()
    admin = {"Authorization": f"Bearer {ADMIN}"}
    with running_gateway(settings, lambda: Web(settings)) as base, httpx.Client(base_url=base) as c:
        usage = c.get("/console/usage", params={"range": "1h"}, headers=admin)
    assert usage.status_code == 200
    by_agent = usage.text.split("by agent</figcaption>", 1)[1].split("</figure>", 1)[0]
    legend = re.findall(r'<li><span class="swatch (s\d)"></span>([^<]*)', by_agent)
    assert legend[0] == ("s0", "busy") and legend[-1] == ("s7", "6 other agents")
    assert len(legend) == 8 and len(re.findall(r"<polyline", by_agent)) == 8
    assert [name for _, name in legend[1:-1]] == [f"task-{i:02}" for i in range(6)]


def test_the_session_cookie_is_named_by_the_port_the_browser_reached() -> None:
    """docs/console.md: `webward_console_8080` for a console reached at port 8080, and
    `webward_console` at the scheme's default port (a TLS proxy on 443 in front), where the
    Host the browser sent names no port."""
    from starlette.requests import Request

    from webward.console._app import _cookie_name

    def reached(host: str, scheme: str = "http") -> str:
        scope = {
            "type": "http",
            "scheme": scheme,
            "server": ("127.0.0.1", 8080),
            "path": "/console/",
            "query_string": b"",
            "headers": [(b"host", host.encode())],
        }
        return _cookie_name(Request(scope))

    docs = (Path(__file__).parents[1] / "docs" / "console.md").read_text(encoding="utf-8")
    assert reached("127.0.0.1:8080") == "webward_console_8080" and "`webward_console_8080`" in docs
    assert reached("gw.example", "https") == "webward_console" and "`webward_console` at" in docs
