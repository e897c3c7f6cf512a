"""The headless renderer: real Debian Chromium through Playwright, every request through
webward's validating egress proxy, against pages served on loopback."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import os
import pwd
import shutil
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import trustme
from fake_models import pdf_bytes
from localserver import LocalServer, Request, accept_counter, respond, send, serve
from PIL import Image
from test_tls import serve_tls

from webward import Refused, Settings, StaticResolver, UpstreamError, Web, _envelope
from webward._call import Call
from webward._gate import RenderGate
from webward._proxy import EgressProxy, Gate, open_proxy
from webward._render import (
    _CLOSE_S,
    MAX_DOM_CHARS,
    UNPRIVILEGED_USER,
    UNSAFE_ENV,
    ChromiumRenderer,
    PlainRenderer,
    Rendered,
    _namespaces_allowed,
    _same_site,
)
from webward.testing import FakeClock, MemoryAuditSink

pytestmark = pytest.mark.anyio

REBIND = "rebind.webward-test.net"  # resolves (StaticResolver) to 127.0.0.2


def make_web(limits: dict[str, Any] | None = None, **kw: Any) -> Web:
    s = Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "full", "robots": False},
            # A generous read deadline: the render fallback must finish inside it, and the
            # test machine is shared.
            "limits": {
                "per_host_rate": 1000.0,
                "per_host_burst": 1000,
                "fetch_timeout_s": 40.0,
                **(limits or {}),
            },
        }
    )
    kw.setdefault("audit", MemoryAuditSink())
    return Web(s, StaticResolver({REBIND: ["127.0.0.2"]}), **kw)


async def test_screenshot_is_a_viewport_png() -> None:
    """A tier-full read with include_screenshot returns a 1280x800 PNG part and is audited."""
    page = "<html><head><title>Shot</title></head><body><h1>Hello</h1></body></html>"
    with serve(routes={"/": respond(200, page)}) as srv:
        audit = MemoryAuditSink()
        async with make_web(audit=audit, renderer=ChromiumRenderer()) as web:
            result = await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
    shot = result.screenshot
    assert shot is not None and shot.type == "image" and shot.media_type == "image/png"
    png = base64.b64decode(shot.data)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and shot.bytes == len(png)
    with Image.open(io.BytesIO(png)) as img:
        assert img.format == "PNG" and img.size == (1280, 800)
    assert "Hello" in result.content
    # Chromium's own request reached the page through the proxy (the plain read came first).
    assert any("HeadlessChrome" in r.headers.get("user-agent", "") for r in srv.requests)
    assert [(r.decision, r.reason) for r in audit.records] == [("allowed", "allowed")]


async def test_screenshot_in_tier_connected_is_refused_by_policy() -> None:
    """A tier-connected screenshot is refused by the policy before anything is read."""
    with serve(routes={"/": respond(200, "<p>x</p>")}) as srv:
        audit = MemoryAuditSink()
        async with make_web(audit=audit, renderer=ChromiumRenderer()) as web:
            with pytest.raises(Refused) as err:
                await web.fetch(srv.url("/"), include_screenshot=True, tier="connected")
        assert srv.accepts == 0
    assert err.value.reason == "screenshot_needs_tier"
    assert [(r.decision, r.reason) for r in audit.records] == [("refused", "screenshot_needs_tier")]


def gate_for(web: Web, tier: str = "full") -> tuple[RenderGate, Call]:
    """The Web's real gate for one render, and the call record it writes its hosts into."""
    call = Call("web:page.fetch@1", "cli", "")
    return web._gate.render_gate("cli", tier, call), call


def browser_requests(server: LocalServer) -> list[Request]:
    return [r for r in server.requests if "HeadlessChrome" in r.headers.get("user-agent", "")]


async def test_proxy_refuses_internal_subresources_without_connecting() -> None:
    """Images, iframes, scripts and XHR to 127.0.0.2, by address or by a name resolving to
    it, are refused by the proxy and never reach the listener, while the page itself renders;
    the render's record lists the page's host as contacted and both refused hosts."""
    with accept_counter("127.0.0.2") as internal:
        port = internal.port
        direct, named = f"http://127.0.0.2:{port}/", f"http://{REBIND}:{port}/"
        page = f"""<html><body>
        <img src="{direct}a.png"><img src="{named}b.png">
        <iframe src="{direct}frame"></iframe><iframe src="{named}frame"></iframe>
        <script src="{named}s.js"></script>
        <p id="out">pending</p>
        <script>
          fetch("{direct}fetch").catch(() => 0);
          var seen = [];
          for (const u of ["{direct}xhr", "{named}xhr"]) {{
            var x = new XMLHttpRequest();
            x.open("GET", u, false);  // synchronous: finished before the load event
            try {{ x.send(); seen.push(x.status); }} catch (e) {{ seen.push("blocked"); }}
          }}
          document.getElementById("out").textContent = "xhr:" + seen.join(",");
        </script></body></html>"""
        with serve(routes={"/": respond(200, page)}) as srv:
            async with make_web() as web:
                gate, record = gate_for(web)
                rendered = await ChromiumRenderer().render(
                    srv.url("/"), screenshot=False, gate=gate
                )
        assert "xhr:blocked,blocked" in rendered.html
        assert internal.accepts == 0
    assert record.render_contacted == [f"127.0.0.1:{srv.port}"]
    assert set(record.render_refused) == {
        f"127.0.0.2:{port} (internal_address)",
        f"{REBIND}:{port} (internal_address)",
    }


async def test_a_pages_websockets_are_refused_and_in_the_record() -> None:
    """A WebSocket, wss:// (an upgrade inside a TLS tunnel) or ws:// (which Chromium tunnels
    in clear), is refused without a connection, and the render's record lists it: the
    proxy's own refusals went only to its own list, and a page could try a channel to any
    host unseen. The page's load waits (in the origin's thread) until both are listed."""
    with accept_counter("127.0.0.2") as internal:
        port = internal.port
        page = f"""<html><body><p>sockets</p><script>
          new WebSocket("ws://{REBIND}:{port}/plain");
          new WebSocket("wss://{REBIND}:{port + 1}/tls");
        </script><img src="/held.gif"></body></html>"""
        listed: list[str] = []

        def held(req: Request, sock: socket.socket) -> None:
            deadline = time.monotonic() + 10
            while len(listed) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            send(sock, 200, b"GIF89a", "image/gif")

        with serve(routes={"/": respond(200, page), "/held.gif": held}) as srv:
            async with make_web() as web:
                gate, record = gate_for(web)
                listed = record.render_refused  # the list the gate fills, read by `held`
                await ChromiumRenderer().render(srv.url("/"), screenshot=False, gate=gate)
        assert internal.accepts == 0
    assert set(record.render_refused) == {
        f"{REBIND}:{port} (render_upgrade)",
        f"{REBIND}:{port + 1} (render_upgrade)",
    }


async def test_a_script_that_posts_is_refused_and_audited() -> None:
    """Only GET and HEAD leave through the proxy: a page script's POST, PUT and DELETE
    (fetch and XHR) never reach the origin, and the call's audit record says so."""
    page = """<html><body><p id="out">pending</p><script>
      fetch("/submit", {method: "POST", body: "secret=1"}).catch(() => 0);
      var seen = [];
      for (const m of ["POST", "PUT", "DELETE"]) {
        var x = new XMLHttpRequest();
        x.open(m, "/submit", false);
        try { x.send("secret=2"); seen.push(x.status); } catch (e) { seen.push("blocked"); }
      }
      document.getElementById("out").textContent = "sent:" + seen.join(",");
    </script></body></html>"""
    with serve(routes={"/": respond(200, page), "/submit": respond(200, "taken")}) as srv:
        audit = MemoryAuditSink()
        async with make_web(audit=audit, renderer=ChromiumRenderer()) as web:
            await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
        methods = [r.method for r in srv.requests]
    assert "POST" not in methods and "PUT" not in methods and "DELETE" not in methods
    assert [r.path for r in srv.requests if r.path == "/submit"] == []
    (rec,) = audit.records
    assert rec.decision == "allowed"
    assert rec.render_contacted == (f"127.0.0.1:{srv.port}",)
    assert rec.render_refused == (f"127.0.0.1:{srv.port} (render_method)",)


async def test_a_render_sends_at_most_the_request_cap() -> None:
    """A page asking for 500 images sends at most [limits] render_max_requests requests (the
    page included); the rest are refused, and the audit record names the cap."""
    images = "".join(f'<img src="/i{n}.png">' for n in range(500))
    page = f"<html><body><h1>Many</h1>{images}</body></html>"
    png = b"\x89PNG\r\n\x1a\n"
    with serve(routes={"/": respond(200, page), "*": respond(200, png, "image/png")}) as srv:
        audit = MemoryAuditSink()
        web = make_web({"render_max_requests": 40}, audit=audit, renderer=ChromiumRenderer())
        async with web:
            await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
        sent = len(browser_requests(srv))
    assert 1 <= sent <= 40
    assert f"127.0.0.1:{srv.port} (render_requests)" in audit.records[-1].render_refused


async def test_a_subresource_on_a_denied_host_is_refused_without_connecting() -> None:
    """A subresource whose host is on the deny list is refused by the gate: no connection to
    it, and the audit record lists it as refused (the page's own host as contacted)."""
    with serve(routes={"*": respond(200, "x", "text/plain")}) as denied:
        page = (
            f'<html><body><h1>Page</h1><img src="http://denied.example:{denied.port}/a.png">'
            f'<script src="http://denied.example:{denied.port}/s.js"></script></body></html>'
        )
        with serve(routes={"/": respond(200, page)}) as srv:
            s = Settings().replace(
                {
                    "network": {"allow_ranges": ["127.0.0.1/32"]},
                    "policy": {"default_tier": "full", "robots": False, "deny": ["denied.example"]},
                    "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
                }
            )
            audit = MemoryAuditSink()
            resolver = StaticResolver({"denied.example": ["127.0.0.1"]})
            async with Web(s, resolver, audit=audit, renderer=ChromiumRenderer()) as web:
                await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
        assert denied.accepts == 0
    (rec,) = audit.records
    assert rec.render_contacted == (f"127.0.0.1:{srv.port}",)
    assert rec.render_refused == (f"denied.example:{denied.port} (host_denied)",)


async def test_subresources_meet_robots_and_the_hosts_rate_limit() -> None:
    """robots.txt (for the caller's tier) and the host's own rate budget decide each
    subresource: a disallowed image is never requested, and past the budget the rest are
    refused as rate limited."""
    robots = "User-agent: *\nDisallow: /private\n"
    page = '<html><body><h1>P</h1><img src="/private/a.png">' + "".join(
        f'<img src="/i{n}.png">' for n in range(30)
    )
    routes = {"/robots.txt": respond(200, robots, "text/plain"), "/": respond(200, page)}
    routes["*"] = respond(200, b"\x89PNG", "image/png")
    with serve(routes=routes) as srv:
        s = Settings().replace(
            {
                "network": {"allow_ranges": ["127.0.0.1/32"]},
                "policy": {"default_tier": "full", "robots": True},
                "limits": {"per_host_rate": 0.001, "per_host_burst": 3, "full_tier_budget": 1.0},
            }
        )
        audit = MemoryAuditSink()
        async with Web(
            s, StaticResolver({}), audit=audit, renderer=ChromiumRenderer(), clock=FakeClock()
        ) as web:
            await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
        paths = [r.path for r in browser_requests(srv)]
    assert "/private/a.png" not in paths
    assert len(paths) <= 2  # a burst of 3: the plain read took one token
    refused = audit.records[-1].render_refused
    assert f"127.0.0.1:{srv.port} (robots)" in refused
    assert f"127.0.0.1:{srv.port} (rate_limited)" in refused


async def _proxy_request(port: int, raw: bytes) -> bytes:
    async with await anyio.connect_tcp("127.0.0.1", port) as sock:
        await sock.send(raw)
        out = b""
        with anyio.fail_after(10):
            while True:
                try:
                    out += await sock.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return out


def _auth(proxy: EgressProxy) -> str:
    return f"Proxy-Authorization: {proxy.authorization()}\r\n"


async def test_proxy_connect_to_internal_targets_never_connects() -> None:
    """CONNECT to 127.0.0.2 is answered 403; a tunnel to a name (here resolving to
    127.0.0.2) connects nowhere when it opens, since the proxy ends its TLS and decides each
    request inside (the rendering test above shows those refused)."""
    with accept_counter("127.0.0.2") as internal:
        async with make_web() as web, open_proxy(gate_for(web)[0]) as proxy:
            target = f"127.0.0.2:{internal.port}"
            raw = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{_auth(proxy)}\r\n"
            answer = await _proxy_request(proxy.port, raw.encode())
            assert answer.startswith(b"HTTP/1.1 403 "), answer
            named = f"{REBIND}:{internal.port}"
            async with await anyio.connect_tcp("127.0.0.1", proxy.port) as sock:
                await sock.send(f"CONNECT {named} HTTP/1.1\r\n{_auth(proxy)}\r\n".encode())
                with anyio.fail_after(10):
                    assert (await sock.receive()).startswith(b"HTTP/1.1 200 ")
        assert internal.accepts == 0
    assert [reason for _, reason in proxy.refused] == ["internal_address"]


async def test_a_refusal_past_the_request_cap_names_no_setting_in_the_page() -> None:
    """The proxy answers a refused request with the model's message, which a frame of the
    page's own origin shows as the page's text (a shell's reading held it, in a code block):
    past the render's request cap it said "([limits] render_max_requests)", a setting for
    the model to read. The operator's step stays in the message the operator reads."""
    with serve(routes={"*": respond(200, "ok", "text/plain")}) as srv:
        async with make_web({"render_max_requests": 1}) as web:
            gate, _ = gate_for(web)
            async with open_proxy(gate) as proxy:
                answers = [
                    await _proxy_request(
                        proxy.port,
                        f"GET {srv.url(f'/{n}')} HTTP/1.1\r\n{_auth(proxy)}\r\n".encode(),
                    )
                    for n in range(2)
                ]
    assert answers[0].startswith(b"HTTP/1.1 200 ")
    refused = answers[1].decode()
    assert refused.startswith("HTTP/1.1 403 ")
    assert refused.endswith("\r\n\r\nrefused: a render may send at most 1 requests\n")
    with pytest.raises(Refused) as caught:
        await gate.request("GET", srv.url("/2"), [], lambda s, h: (0, True))
    assert "[limits] render_max_requests" in caught.value.message


async def test_the_proxy_keeps_a_bounded_note_of_what_it_refused() -> None:
    """A page firing requests that are refused at once (past the render's cap, at internal
    addresses) made the proxy keep every URL (of up to 16 KB) for the whole render: it
    keeps the first 1000, and the call's record still names the host once."""
    path = "/" + "a" * 1500
    async with make_web() as web:
        gate, record = gate_for(web)
        async with open_proxy(gate) as proxy:
            for n in range(1100):
                raw = f"GET http://127.0.0.2:8080{path}{n} HTTP/1.1\r\n{_auth(proxy)}\r\n"
                assert (await _proxy_request(proxy.port, raw.encode())).startswith(b"HTTP/1.1 403 ")
    assert len(proxy.refused) == 1000
    assert proxy.refused[0] == (f"http://127.0.0.2:8080{path}0", "internal_address")
    assert record.render_refused == ["127.0.0.2:8080 (internal_address)"]


async def test_proxy_forwards_a_plain_get_to_an_allowed_target() -> None:
    """An absolute-form GET to an allowed loopback page is forwarded in origin form."""
    with serve(routes={"/hello": respond(200, "hi there", "text/plain")}) as srv:
        async with make_web() as web, open_proxy(gate_for(web)[0]) as proxy:
            url = srv.url("/hello?x=1")
            raw = (
                f"GET {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Connection: keep-alive\r\n"
                f"{_auth(proxy)}\r\n"
            )
            answer = await _proxy_request(proxy.port, raw.encode())
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"hi there")
    assert [r.target for r in srv.requests] == ["/hello?x=1"]
    assert "proxy-connection" not in srv.requests[0].headers
    assert "proxy-authorization" not in srv.requests[0].headers


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "unknown-length"])
async def test_bodies_read_at_once_share_the_renders_byte_budget(declared: bool) -> None:
    """A page's subresources are read at once (Chromium opens dozens of connections): eight
    1 MB bodies (as many as one origin's pool connects at once), all answered together, read
    at most the render's 2 MB between them, with or without a declared length. Each once had
    the whole budget left to it (a probe pulled 493 MB through one render)."""
    size, budget, count = 1_000_000, 2_000_000, 8
    together = threading.Barrier(count, timeout=20)

    def big(req: Request, sock: socket.socket) -> None:
        together.wait()  # every request is in flight before any body is sent
        length = f"Content-Length: {size}\r\n" if declared else ""
        head = f"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n{length}Connection: close\r\n\r\n"
        with contextlib.suppress(OSError):  # the proxy stops reading at its cap
            sock.sendall(head.encode() + b"x" * size)

    with serve(routes={"/big": big}) as srv:
        # Else the host's limit spaces them out (one agent holds all of its slots but one).
        limits = {"per_host_concurrency": count + 1}
        async with (
            make_web(limits) as web,
            open_proxy(gate_for(web)[0], max_bytes=budget) as proxy,
        ):
            raw = f"GET {srv.url('/big')} HTTP/1.1\r\nHost: 127.0.0.1\r\n{_auth(proxy)}\r\n"
            answers: list[bytes] = []

            async def one() -> None:
                answers.append(await _proxy_request(proxy.port, raw.encode()))

            async with anyio.create_task_group() as tg:
                for _ in range(count):
                    tg.start_soon(one)
    bodies = [answer.split(b"\r\n\r\n", 1)[1] for answer in answers]
    assert all(answer.startswith(b"HTTP/1.1 200 ") for answer in answers)
    assert 0 < sum(map(len, bodies)) <= budget
    assert proxy.bytes_left >= 0


@pytest.mark.parametrize("credentials", ["", "Proxy-Authorization: Basic d2Vid2FyZDpndWVzcw==\r\n"])
async def test_proxy_without_the_renders_secret_gets_407_and_nothing_else(
    credentials: str,
) -> None:
    """A client on this machine that finds the proxy's port but not the render's secret is
    answered 407 before any decision: no request reaches even an allowed origin."""
    with serve(routes={"*": respond(200, "hi", "text/plain")}) as srv:
        async with make_web() as web, open_proxy(gate_for(web)[0]) as proxy:
            for raw in (
                f"GET {srv.url('/x')} HTTP/1.1\r\nHost: 127.0.0.1\r\n{credentials}\r\n",
                f"CONNECT 127.0.0.1:{srv.port} HTTP/1.1\r\n{credentials}\r\n",
            ):
                answer = await _proxy_request(proxy.port, raw.encode())
                assert answer.startswith(b"HTTP/1.1 407 "), answer
                assert b'Proxy-Authenticate: Basic realm="webward"' in answer
        assert srv.accepts == 0
    assert proxy.unauthenticated == 2 and proxy.allowed == [] and proxy.refused == []


class _KeepAliveOrigin:
    """An origin that ignores ``Connection: close``: it answers the first request and keeps
    reading, recording every byte it is sent."""

    def __init__(self) -> None:
        self.received = b""
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            conn.settimeout(5)
            answered = False
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                self.received += data
                if not answered and b"\r\n\r\n" in self.received:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    answered = True


async def test_proxy_relays_one_response_per_client_connection() -> None:
    """A second request pipelined (keep-alive) on one proxy connection is never relayed: the
    proxy answers the first and closes the connection."""
    origin = _KeepAliveOrigin()
    async with make_web() as web, open_proxy(gate_for(web)[0]) as proxy:
        auth = _auth(proxy)
        first = f"GET http://127.0.0.1:{origin.port}/one HTTP/1.1\r\nHost: x\r\n{auth}\r\n"
        second = f"GET http://127.0.0.1:{origin.port}/two HTTP/1.1\r\nHost: x\r\n{auth}\r\n"
        answer = await _proxy_request(proxy.port, (first + second).encode())
    origin.listener.close()
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok")
    assert answer.count(b"HTTP/1.1 ") == 1  # and then the proxy closed the connection
    assert origin.received.count(b"GET ") == 1 and b"/two" not in origin.received
    assert proxy.allowed == [f"http://127.0.0.1:{origin.port}/one"]


async def test_a_tunnel_closed_before_its_handshake_ends_only_that_connection() -> None:
    """A browser that hangs up right after CONNECT (as Chromium does on a certificate it
    refuses) ends that connection alone: the proxy goes on relaying the render's requests."""
    origin = _KeepAliveOrigin()
    async with make_web() as web, open_proxy(gate_for(web)[0]) as proxy:
        auth = _auth(proxy)
        tunnel = f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\nHost: x\r\n{auth}\r\n"
        async with await anyio.connect_tcp("127.0.0.1", proxy.port) as sock:
            await sock.send(tunnel.encode())
            with anyio.fail_after(10):
                assert (await sock.receive()).startswith(b"HTTP/1.1 200")
        plain = f"GET http://127.0.0.1:{origin.port}/one HTTP/1.1\r\nHost: x\r\n{auth}\r\n"
        answer = await _proxy_request(proxy.port, plain.encode())
    origin.listener.close()
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok")


async def test_proxy_refuses_a_host_outside_the_callers_policy() -> None:
    """A public name the agent's tier does not reach gets 403 before any DNS or connection."""
    async with make_web() as web, open_proxy(gate_for(web, "as-owner")[0]) as proxy:
        raw = f"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n{_auth(proxy)}\r\n"
        answer = await _proxy_request(proxy.port, raw.encode())
    assert answer.startswith(b"HTTP/1.1 403 ")
    assert proxy.allowed == []


async def test_https_requests_inside_tunnels_meet_the_gate_one_by_one() -> None:
    """An https page renders through the proxy (TLS ended there, the origin's certificate
    checked by webward's transport against the local CA), and inside the tunnel each request
    is decided: a script's POST over https never reaches the origin."""
    ca = trustme.CA()
    cert = ca.issue_cert("tls.example")
    page = """<html><body><h1>Secure page</h1><img src="/pic.png"><script>
      var x = new XMLHttpRequest(); x.open("POST", "/submit", false);
      try { x.send("a=1"); } catch (e) {}
    </script></body></html>"""
    server = LocalServer(
        routes={"/": respond(200, page), "*": respond(200, b"\x89PNG", "image/png")}
    )
    with serve_tls(cert, server):
        s = Settings().replace(
            {
                "network": {"allow_ranges": ["127.0.0.1/32"]},
                "policy": {"default_tier": "full", "robots": False},
                "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
            }
        )
        ctx = ssl.create_default_context()
        ca.configure_trust(ctx)
        audit = MemoryAuditSink()
        resolver = StaticResolver({"tls.example": ["127.0.0.1"]})
        async with Web(
            s, resolver, audit=audit, renderer=ChromiumRenderer(), ssl_context=ctx
        ) as web:
            page_read = await web.fetch(
                f"https://tls.example:{server.port}/", include_screenshot=True, tier="full"
            )
    assert page_read.screenshot is not None
    seen = [(r.method, r.path) for r in browser_requests(server)]
    assert ("GET", "/") in seen and ("GET", "/pic.png") in seen
    assert all(method == "GET" for method, _ in seen)
    (rec,) = audit.records
    assert rec.render_contacted == (f"tls.example:{server.port}",)
    assert rec.render_refused == (f"tls.example:{server.port} (render_method)",)


async def test_a_render_contacts_only_the_pages_hosts() -> None:
    """Chromium's own background traffic (updates, accounts, hints, safe browsing) is off:
    rendering a plain page, the proxy sees requests for the page's host and nothing else."""
    with serve(routes={"/": respond(200, "<html><body><h1>Quiet</h1></body></html>")}) as srv:
        audit = MemoryAuditSink()
        async with make_web(audit=audit, renderer=ChromiumRenderer()) as web:
            await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
    (rec,) = audit.records
    assert rec.render_contacted == (f"127.0.0.1:{srv.port}",)
    assert rec.render_refused == ()


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[1])


def _browser_processes() -> list[int]:
    """Chromium processes started by this test process (other renders may run on the
    machine at the same time)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"chromium" not in f.read():
                    continue
            pid = int(entry)
            while pid > 1 and pid != me:
                pid = _parent(pid)
        except (OSError, ValueError, IndexError):
            continue
        if pid == me:
            found.append(int(entry))
    return found


async def test_chromium_gets_a_scrubbed_environment_and_no_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While Chromium renders, its processes hold none of webward's secrets or WEBWARD_*
    variables; as root, they run as the unprivileged user, sandboxed when the kernel allows."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    monkeypatch.setenv("BRAVE_API_KEY", "brave-test-secret")
    monkeypatch.setenv("WEBWARD_CONFIG_TEST", "webward-test-secret")
    seen: dict[int, tuple[bytes, int, bytes, bytes]] = {}
    page = respond(200, "<html><body><h1>Env</h1></body></html>")

    def inspect(req: Request, sock: socket.socket) -> None:
        if "HeadlessChrome" in req.headers.get("user-agent", ""):
            for pid in _browser_processes():
                try:
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        environ = f.read()
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmdline = f.read()
                    with open(f"/proc/{pid}/status", "rb") as f:
                        status = f.read()
                    uid = os.stat(f"/proc/{pid}").st_uid
                except OSError:
                    continue
                seen[pid] = (environ, uid, cmdline, status)
        page(req, sock)

    with serve(routes={"/": inspect}) as srv:
        async with make_web(renderer=ChromiumRenderer()) as web:
            await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
    assert seen, "no Chromium process was found while it rendered"
    home = b"HOME=" + tempfile.gettempdir().encode() + b"/webward-"
    # The browser process shows its environment; helpers write their title over theirs.
    assert any(home in environ for environ, _, _, _ in seen.values())
    for environ, uid, _, _ in seen.values():
        assert b"secret" not in environ and b"WEBWARD" not in environ
        if os.geteuid() == 0:
            assert uid == pwd.getpwnam(UNPRIVILEGED_USER).pw_uid
    user = pwd.getpwnam(UNPRIVILEGED_USER) if os.geteuid() == 0 else None
    if _namespaces_allowed((user.pw_uid, user.pw_gid) if user else None):
        # Sandboxed: no process was told --no-sandbox, and the renderers run under seccomp.
        assert all(b"--no-sandbox" not in cmdline for _, _, cmdline, _ in seen.values())
        renderers = [
            status for _, _, cmdline, status in seen.values() if b"--type=renderer" in cmdline
        ]
        assert renderers and all(b"Seccomp:\t2" in status for status in renderers)


async def test_launch_refused_when_the_unsafe_playwright_variable_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the loopback-bypass variable set, Chromium is never launched and the read is refused."""
    monkeypatch.setenv(UNSAFE_ENV, "1")
    with serve(routes={"/": respond(200, "<p>x</p>")}) as srv:
        audit = MemoryAuditSink()
        async with make_web(audit=audit, renderer=ChromiumRenderer()) as web:
            with pytest.raises(Refused) as err:
                await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
        assert not any("HeadlessChrome" in r.headers.get("user-agent", "") for r in srv.requests)
    assert (err.value.code, err.value.reason) == ("unsupported_type", "renderer_unsafe")
    assert audit.records[-1].decision == "refused"


async def test_missing_chromium_or_plain_build_is_refused_by_name() -> None:
    """No Chromium binary, or the plain renderer, refuses with renderer_unavailable naming chromium."""
    messages: list[str] = []
    with serve(routes={"/": respond(200, "<p>x</p>")}) as srv:
        for renderer in (ChromiumRenderer(executable="/nonexistent/chromium"), PlainRenderer()):
            async with make_web(renderer=renderer) as web:
                with pytest.raises(Refused) as err:
                    await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
            assert (err.value.code, err.value.reason) == (
                "unsupported_type",
                "renderer_unavailable",
            )
            messages.append(err.value.message)
    # What is missing is named with how to get it; what is there, not.
    assert "Debian's chromium at /nonexistent/chromium (apt-get install chromium)" in messages[0]
    assert "webward[render]" not in messages[0]  # playwright is installed here
    assert "a Chromium at /usr/bin/chromium that starts" in messages[1]


SHELL_PAGE = (
    "<html><head><title>App</title></head><body><div id='app'></div><script>"
    "document.getElementById('app').innerHTML = '<h1>Rendered heading</h1><p>' + "
    "'Text the page script wrote. '.repeat(12) + '</p>';</script></body></html>"
)


@pytest.mark.parametrize("tier", ["connected", "full"])
async def test_a_script_only_page_is_rendered_headless(tier: str) -> None:
    """A page whose HTML holds only a script shell is rendered through the proxy and its
    rendered DOM is what the model reads (tiers connected and full)."""
    with serve(routes={"/": respond(200, SHELL_PAGE)}) as srv:
        async with make_web(renderer=ChromiumRenderer()) as web:
            page = await web.fetch(srv.url("/"), tier=tier)
        assert any("HeadlessChrome" in r.headers.get("user-agent", "") for r in srv.requests)
    assert "Text the page script wrote." in page.content


async def test_as_owner_and_plain_builds_say_a_shell_needs_a_browser() -> None:
    """Tier as-owner never renders, and a build without the renderer cannot: either way the
    read is refused with what would render it (not an empty reading), and no browser request
    reaches the page."""
    with serve(routes={"/": respond(200, SHELL_PAGE)}) as srv:
        owner_settings = Settings().replace(
            {
                "network": {"allow_ranges": ["127.0.0.1/32"]},
                "policy": {"default_tier": "as-owner", "allow": ["127.0.0.1"], "robots": False},
            }
        )
        async with Web(
            owner_settings, StaticResolver({}), audit=MemoryAuditSink(), renderer=ChromiumRenderer()
        ) as web:
            with pytest.raises(Refused) as owner:
                await web.fetch(srv.url("/"))
        async with make_web(renderer=PlainRenderer()) as web:
            with pytest.raises(Refused) as plain:
                await web.fetch(srv.url("/"), tier="connected")
        assert not any("HeadlessChrome" in r.headers.get("user-agent", "") for r in srv.requests)
    assert owner.value.reason == plain.value.reason == "needs_browser"
    assert owner.value.code == "unsupported_type"
    assert "writes its text with JavaScript" in owner.value.message
    assert "tiers connected and full, not as-owner" in owner.value.message
    assert "without a headless renderer (PlainRenderer)" in plain.value.message  # all here
    # docs/reading.md gives the refusal (it once said such a page read as empty text).
    reading = (Path(__file__).parents[1] / "docs" / "reading.md").read_text(encoding="utf-8")
    said = owner.value.message.split("; an operator", 1)[0].replace(
        srv.url("/"), "https://app.example/"
    )
    assert said + "; …` (exit 3)" in " ".join(reading.split()).replace("`refused: ", "refused: ")


async def test_renders_beyond_the_concurrency_cap_wait_their_turn() -> None:
    """With max_concurrent=1, two screenshots asked at once are both taken, one browser after
    the other: the page server never sees the two browsers' requests overlap."""
    import threading

    spans: list[tuple[float, float]] = []
    lock = threading.Lock()
    page = respond(200, "<html><body><h1>Slow</h1></body></html>")

    def slow(req: Any, sock: socket.socket) -> None:
        start = time.monotonic()
        if "HeadlessChrome" in req.headers.get("user-agent", ""):
            time.sleep(1.5)  # holds the browser's request open, so an overlap would show
        page(req, sock)
        with lock:
            if "HeadlessChrome" in req.headers.get("user-agent", ""):
                spans.append((start, time.monotonic()))

    with serve(routes={"/": slow}) as srv:
        async with make_web(renderer=ChromiumRenderer(max_concurrent=1)) as web:
            results: list[Any] = []

            async def shot() -> None:
                results.append(await web.fetch(srv.url("/"), include_screenshot=True, tier="full"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(shot)
                tg.start_soon(shot)
    assert len(results) == 2 and all(r.screenshot is not None for r in results)
    assert len(spans) == 2
    (_, first_ends), (second_starts, _) = sorted(spans)
    assert first_ends <= second_starts


async def test_a_rendered_reading_is_never_served_from_the_cache_to_a_tier_that_may_not_render() -> (
    None
):
    """A connected read renders a script shell and caches it; an as-owner read of the same
    URL on the same Web reads the page as served (read again, not from the cache) and, finding
    only a script shell, is refused as needing a browser: never the rendered text."""
    with serve(routes={"/": respond(200, SHELL_PAGE)}) as srv:
        s = Settings().replace(
            {
                "network": {"allow_ranges": ["127.0.0.1/32"]},
                "policy": {"default_tier": "connected", "allow": ["127.0.0.1"], "robots": False},
                "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
            }
        )
        async with Web(
            s, StaticResolver({}), audit=MemoryAuditSink(), renderer=ChromiumRenderer()
        ) as web:
            rendered = await web.fetch(srv.url("/"), tier="connected")
            with pytest.raises(Refused) as plain:
                await web.fetch(srv.url("/"), tier="as-owner")
            again = await web.fetch(srv.url("/"), tier="connected")
        plain_reads = [r for r in srv.requests if "HeadlessChrome" not in r.headers["user-agent"]]
    assert "Text the page script wrote." in rendered.content
    assert plain.value.reason == "needs_browser"
    assert "Text the page script wrote." in again.content  # the rendered entry, kept apart
    assert len(plain_reads) == 2  # the as-owner read went to the server, not to the cache


# ---- hostile pages that break their own render ------------------------------------------


@contextmanager
def held_open() -> Iterator[Any]:
    """A handler that holds its request open until the test ends (a subresource that never
    arrives, so the page's load event never fires)."""
    release = threading.Event()

    def handler(req: Request, sock: socket.socket) -> None:
        release.wait(60)
        send(sock, 200, b"late", "text/plain")

    try:
        yield handler
    finally:
        release.set()


@contextmanager
def private_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A temporary directory for the renders' private directories (reachable by the
    unprivileged user Chromium runs as under root), so that what is left there shows."""
    tmp = tempfile.mkdtemp(prefix="render-tmp-")
    os.chmod(tmp, 0o755)
    monkeypatch.setattr(tempfile, "tempdir", tmp)
    try:
        yield tmp
    finally:
        monkeypatch.setattr(tempfile, "tempdir", None)
        shutil.rmtree(tmp, ignore_errors=True)


# A script shell that navigates itself away as soon as it has loaded, again and again.
NAV_SHELL = (
    "<html><head><title>Away</title></head><body><div id='app'></div><script>"
    "window.addEventListener('load', () => { location.href = '/again?' + Math.random(); });"
    "</script></body></html>"
)
# A script shell whose one image never arrives: its load event never fires.
STALL_SHELL = SHELL_PAGE.replace("</body>", "<img src='/stall.png'></body>")
# A page with its own text (no fallback) whose one image never arrives.
STALL_PAGE = (
    "<html><head><title>Stall</title></head><body><h1>Stalled</h1><p>"
    + "Text of a page whose image never arrives. " * 5
    + "</p><img src='/stall.png'></body></html>"
)


@pytest.mark.parametrize("page", ["navigates_away", "never_loads"])
async def test_a_shell_that_breaks_its_render_leaves_the_plain_reading(page: str) -> None:
    """A script shell that navigates itself away on load makes its fallback render fail: the
    connected read still returns the plain reading (the fallback is best effort). One whose
    load never finishes (an image that never arrives) is read as it stands once the load's
    bound has passed. Either way the audit record is an allowed read, never
    internal_error."""
    with held_open() as stall:
        routes = {"/": respond(200, NAV_SHELL), "/again": respond(200, NAV_SHELL)}
        if page == "never_loads":
            routes = {"/": respond(200, STALL_SHELL), "/stall.png": stall}
        with serve(routes=routes) as srv:
            audit = MemoryAuditSink()
            renderer = ChromiumRenderer(goto_timeout_s=2)
            async with make_web(audit=audit, renderer=renderer) as web:
                result = await web.fetch(srv.url("/"), tier="connected")
            assert browser_requests(srv), "the fallback render never ran"
    written = "Text the page script wrote." in result.content
    assert written == (page == "never_loads")
    assert [(r.decision, r.reason) for r in audit.records] == [("allowed", "allowed")]


async def test_a_fallback_whose_load_outlasts_the_reads_deadline_is_read_as_it_stands() -> None:
    """A script shell whose image never arrives, when the load's bound (here 60 s; 12 s by
    default) does not end before the read's deadline (12 s, the render's launch and the
    plain read included): the render waited for the load until the deadline cut it, and the
    reading only said it had not finished. It is now read as it stands in time."""
    with held_open() as stall:
        routes = {"/": respond(200, STALL_SHELL), "/stall.png": stall}
        with serve(routes=routes) as srv:
            renderer = ChromiumRenderer(goto_timeout_s=60)
            async with make_web({"fetch_timeout_s": 12.0}, renderer=renderer) as web:
                result = await web.fetch(srv.url("/"), tier="connected")
    assert "Text the page script wrote." in result.content


# A script shell whose content comes from the server after its load event, as a
# single-page app's does (a fetch started 300 ms after load), and one written on a timer.
LATE_SHELL = (
    "<html><head><title>Late</title></head><body><div id='app'></div><script>"
    "window.addEventListener('load', () => setTimeout(() => fetch('/data').then(r => r.text())"
    ".then(t => { document.getElementById('app').innerHTML = '<p>' + t + '</p>'; }), 300));"
    "</script></body></html>"
)
TIMED_SHELL = SHELL_PAGE.replace("<script>", "<script>setTimeout(() => {", 1).replace(
    "</script>", "}, 800);</script>", 1
)


# A script shell whose words are a web component's, in its open shadow root.
SHADOW_SHELL = (
    "<html><head><title>Card</title></head><body><my-card></my-card><script>"
    "customElements.define('my-card', class extends HTMLElement { connectedCallback() {"
    " this.attachShadow({mode: 'open'}).innerHTML = '<p>' +"
    " 'Text inside the component shadow root. '.repeat(8) + '</p>'; } });"
    "</script></body></html>"
)


async def test_a_web_components_shadow_root_is_read() -> None:
    """A component's text lives in its shadow root, which the DOM as Playwright gives it
    leaves out (the screenshot showed the text, the reading was empty): the render writes
    open shadow roots in as declarative ones, which the converter reads."""
    with serve(routes={"/": respond(200, SHADOW_SHELL)}) as srv:
        async with make_web(renderer=ChromiumRenderer()) as web:
            page = await web.fetch(srv.url("/"), tier="connected")
    assert "Text inside the component shadow root." in page.content


# A page that replaces what serializes a DOM in its own scripts (the word it smuggles is
# built, so that it is nowhere in the page's source), and a page that builds a huge DOM.
TAMPERING = (
    "<html><head><title>T</title></head><body><p>Text of the page itself.</p>"
    "<div id=c></div><script>"
    "const fake = () => '<p>' + 'SMUG' + 'GLED text that is nowhere in the DOM</p>';"
    "document.getElementById('c').attachShadow({mode: 'open'}).innerHTML = '<i>card</i>';"
    "Element.prototype.getHTML = fake;"
    "Object.defineProperty(Element.prototype, 'innerHTML', {get: fake});"
    "Object.defineProperty(Element.prototype, 'outerHTML', {get: fake});"
    "</script></body></html>"
)
HUGE = (
    "<html><head><title>H</title></head><body><p id=p>Text of the page itself.</p><script>"
    "document.getElementById('p').after('x'.repeat(5000000));</script></body></html>"
)


async def test_the_dom_is_read_out_of_the_pages_reach_and_bounded() -> None:
    """The DOM was serialized in the page's own scripts' world: a page that replaced the
    serializer handed the render text that is nowhere on the page, and one of hundreds of
    megabytes (827 MB of this process for one render). It is now serialized in a world of
    webward's own and cut at MAX_DOM_CHARS before it leaves the browser."""
    with serve(routes={"/t": respond(200, TAMPERING), "/h": respond(200, HUGE)}) as srv:
        async with make_web() as web:
            gate, _ = gate_for(web)
            tampered = await ChromiumRenderer().render(srv.url("/t"), screenshot=False, gate=gate)
            gate, _ = gate_for(web)
            huge = await ChromiumRenderer().render(srv.url("/h"), screenshot=False, gate=gate)
    assert "SMUGGLED" not in tampered.html
    assert "Text of the page itself." in tampered.html and "<i>card</i>" in tampered.html
    assert len(huge.html) == MAX_DOM_CHARS and "Text of the page itself." in huge.html


async def test_same_origin_frames_are_read_and_other_origins_frames_are_not() -> None:
    """A shell whose text is in frames: a same-origin frame's and a srcdoc's text is written
    in after the frame (the reading had none of it, while the screenshot showed it); a frame
    of another origin, or a sandboxed one (an opaque origin), is requested through the proxy
    as before but never read."""
    words = "<html><body><p>" + "{0} frame words. " * 8 + "</p></body></html>"
    with serve(routes={"/": respond(200, words.format("Foreign"))}) as other:
        shell = (
            "<html><head><title>Framed</title></head><body><script>"
            'document.body.innerHTML = \'<iframe src="/inner"></iframe>'
            '<iframe srcdoc="<p>Srcdoc frame words.</p>"></iframe>'
            '<iframe sandbox srcdoc="<p>Sandboxed frame words.</p>"></iframe>'
            f'<iframe src="{other.url("/")}"></iframe>\';'
            "</script></body></html>"
        )
        routes = {"/": respond(200, shell), "/inner": respond(200, words.format("Inner"))}
        with serve(routes=routes) as srv:
            async with make_web(renderer=ChromiumRenderer()) as web:
                page = await web.fetch(srv.url("/"), tier="connected")
        assert browser_requests(other), "the other origin's frame was never loaded"
    assert "Inner frame words." in page.content and "Srcdoc frame words." in page.content
    assert "Foreign" not in page.content and "Sandboxed" not in page.content


async def test_a_frames_text_counts_against_the_dom_cap() -> None:
    """A same-origin frame's document is bounded by what the page's own markup leaves of
    MAX_DOM_CHARS: a frame of millions of characters is cut, and the page's text after the
    frame is kept."""
    page = (
        '<html><body><p>Before the frame.</p><iframe srcdoc="<p>Frame start.</p><script>'
        "document.body.append('y'.repeat(5000000))</script>\"></iframe>"
        "<p>After the frame.</p></body></html>"
    )
    with serve(routes={"/": respond(200, page)}) as srv:
        async with make_web() as web:
            gate, _ = gate_for(web)
            rendered = await ChromiumRenderer().render(srv.url("/"), screenshot=False, gate=gate)
    html = rendered.html
    assert len(html) <= MAX_DOM_CHARS and "yyyy" in html
    framed = html.index("<p>Frame start.</p>")  # the frame's own DOM, not its srcdoc attribute
    assert html.index("Before the frame.") < framed < html.index("After the frame.")


async def test_a_rendered_page_cut_at_the_dom_cap_reads_as_cut() -> None:
    """A shell that writes more than MAX_DOM_CHARS of text was read as its first 2,000,000
    characters with ``truncated`` false and no note, so the agent took them for the whole
    page (a plain read cut at its byte cap says so). The render now tells the cut, a frame
    cut at the cap included, and the reading ends with a note and is marked truncated."""
    shell = (
        "<html><head><title>Long</title></head><body><div id=root></div><script>"
        "document.getElementById('root').append('word '.repeat(500000));</script></body></html>"
    )
    framed = (
        '<html><body><p>Before the frame.</p><iframe srcdoc="<p>Frame start.</p><script>'
        "document.body.append('y'.repeat(5000000))</script>\"></iframe>"
        "<p>After the frame.</p></body></html>"
    )
    short = "<html><body><p>Short page.</p><iframe srcdoc='<p>Frame.</p>'></iframe></body></html>"
    routes = {
        "/": respond(200, shell),
        "/framed": respond(200, framed),
        "/short": respond(200, short),
    }
    with serve(routes=routes) as srv:
        async with make_web(renderer=ChromiumRenderer()) as web:
            first = await web.fetch(srv.url("/"), tier="connected")
            last = await web.fetch(srv.url("/"), tier="connected", offset=first.window.total - 200)
            renders = []
            for path in ("/framed", "/short"):
                gate, _ = gate_for(web)
                renders.append(
                    await ChromiumRenderer().render(srv.url(path), screenshot=False, gate=gate)
                )
    assert first.truncated and last.truncated
    assert _envelope.unwrap(last.content)[1].endswith(
        "\n\n[truncated: the rendered page is longer than the 2,000,000 characters of it "
        "webward reads]"
    )
    assert [r.cut for r in renders] == [True, False]


# Frames of the page's own origin that no reader sees, each beside one that is shown.
HIDDEN_FRAMES = {
    "attribute": "hidden",
    "display": 'style="display:none"',
    "visibility": 'style="visibility:hidden"',
    "opacity": 'style="opacity:0"',
    "zero": 'style="width:0;height:0;border:0"',
    "pixel": 'style="width:1px;height:1px;border:0"',
    "offscreen": 'style="position:absolute;left:-5000px;top:-5000px"',
}


async def test_a_frame_no_reader_sees_is_not_read() -> None:
    """A hidden frame of the page's own origin (the hidden attribute, display:none,
    visibility:hidden, opacity:0, a 0x0 or 1x1 box, placed where no scroll reaches) had its
    text written in a plain <div> and read as the page's: text no reader sees (nor the
    screenshot) is where injected instructions sit. Only the frame that is shown is read."""
    words = "<html><body><p>" + "{0} frame words. " * 8 + "</p></body></html>"
    frames = "".join(
        f'<iframe src="/{name}" {how}></iframe>' for name, how in HIDDEN_FRAMES.items()
    )
    page = (
        "<html><body><p>Text of the page itself.</p>"
        f'{frames}<iframe src="/shown"></iframe><p>After the frames.</p></body></html>'
    )
    routes = {"/": respond(200, page), "/shown": respond(200, words.format("Shown"))}
    routes |= {f"/{name}": respond(200, words.format(name.title())) for name in HIDDEN_FRAMES}
    with serve(routes=routes) as srv:
        async with make_web() as web:
            gate, _ = gate_for(web)
            rendered = await ChromiumRenderer().render(srv.url("/"), screenshot=False, gate=gate)
        assert {f"/{name}" for name in HIDDEN_FRAMES} <= {r.path for r in srv.requests}
    html = rendered.html
    assert html.index("Text of the page itself.") < html.index("Shown frame words.")
    assert html.index("Shown frame words.") < html.index("After the frames.")
    assert [n for n in HIDDEN_FRAMES if f"{n.title()} frame words" in html] == []


async def test_a_frame_is_placed_by_its_element_not_by_a_copy_of_its_tag() -> None:
    """A frame was placed at the first copy of its tag's text in the page's markup: the same
    <iframe> tag inside a <template> (as a web component keeps one), a script or a comment
    before the live frame took its text, and the reading lost it. It is now placed by an
    attribute made for the read, which the markup handed over no longer holds."""
    words = "<html><body><p>" + "Inner frame words. " * 8 + "</p></body></html>"
    tag = '<iframe src="/inner"></iframe>'
    shell = (
        "<html><head><title>Framed</title></head><body><script>"
        "document.body.innerHTML = '<p>Page text here, long enough to be words of its own.</p>"
        f"<template>{tag}</template><script type=\"text/x-template\">{tag}</scr' + 'ipt>"
        f"<!--{tag}-->{tag}<p>After the frame.</p>';</script></body></html>"
    )
    routes = {"/": respond(200, shell), "/inner": respond(200, words)}
    with serve(routes=routes) as srv:
        async with make_web(renderer=ChromiumRenderer()) as web:
            page = await web.fetch(srv.url("/"), tier="connected")
            gate, _ = gate_for(web)
            rendered = await ChromiumRenderer().render(srv.url("/"), screenshot=False, gate=gate)
    assert "Inner frame words." in page.content and "After the frame." in page.content
    html = rendered.html
    live = html.index("Inner frame words.")
    assert html.rindex(tag) < live < html.index("After the frame.") and "data-ww-" not in html


async def test_a_frame_cut_inside_a_script_leaves_the_pages_text_after_it() -> None:
    """A frame cut at the DOM cap was cut back to a tag's edge only: a cut inside a large
    <script type=application/json> left it open, and the page's own markup after the frame
    became its text (the rest of the article was lost). The cut now falls before it."""
    frame = (
        "<html><body><p>Frame start words here.</p><script>"
        "const data = document.createElement('script'); data.type = 'application/json';"
        "data.text = '{\"d\": \"' + 'x'.repeat(2500000) + '\"}'; document.body.append(data);"
        "</script></body></html>"
    )
    shell = (
        "<html><head><title>Shell</title></head><body><script>document.body.innerHTML = "
        '\'<p>Before the frame, words of the page itself.</p><iframe src="/frame"></iframe>'
        "<p>After the frame: the rest of the article.</p>';</script></body></html>"
    )
    with serve(routes={"/": respond(200, shell), "/frame": respond(200, frame)}) as srv:
        async with make_web(renderer=ChromiumRenderer()) as web:
            page = await web.fetch(srv.url("/"), tier="connected")
            gate, _ = gate_for(web)
            rendered = await ChromiumRenderer().render(srv.url("/"), screenshot=False, gate=gate)
    content = page.content
    assert content.index("Before the frame") < content.index("Frame start words here.")
    assert content.index("Frame start words here.") < content.index("After the frame: the rest")
    assert len(rendered.html) <= MAX_DOM_CHARS and "xxxx" not in rendered.html


async def test_what_a_shell_writes_after_its_load_event_is_read() -> None:
    """The DOM was read at the load event: a shell that fetched its content just after, or
    wrote it on a timer, was read empty (and pictured blank). The render now waits for the
    network to go quiet and the text to stop changing, within bounds."""
    data = "Text the server sent after the page loaded. " * 6
    routes = {"/late": respond(200, LATE_SHELL), "/data": respond(200, data, "text/plain"),
              "/timed": respond(200, TIMED_SHELL)}  # fmt: skip
    with serve(routes=routes) as srv:
        async with make_web(renderer=ChromiumRenderer()) as web:
            late = await web.fetch(srv.url("/late"), tier="connected")
            timed = await web.fetch(srv.url("/timed"), tier="connected")
    assert "Text the server sent after the page loaded." in late.content
    assert "Text the page script wrote." in timed.content


class OutOfTime:
    """A renderer that does not finish within the read's deadline, counting its renders."""

    def __init__(self, takes_s: float) -> None:
        self.takes_s = takes_s
        self.renders = 0

    async def render(self, url: str, *, screenshot: bool, gate: Gate) -> Rendered:
        self.renders += 1
        await anyio.sleep(self.takes_s)
        return Rendered(SHELL_PAGE)


# A script shell that never settles: it changes its address a thousand times a tick.
PUSHING_SHELL = (
    "<html><head><title>Pushing</title></head><body><div id='app'></div><script>var i = 0;"
    "setInterval(() => { for (let k = 0; k < 1000; k++) history.pushState({}, '', '/?p=' + i++);"
    " document.getElementById('app').textContent = 'push ' + i; }, 0);</script></body></html>"
)


async def test_a_fallback_that_never_settles_ends_by_the_reads_deadline() -> None:
    """A shell whose address changes a thousand times a tick: its DOM's reads went on into
    the read's deadline, then closing the busy browser waited its whole bound, so the call
    ended 5 to 6 s past its deadline. The read of the DOM now ends in time to close the
    browser before the deadline, a close that does not end in time kills the browser, and
    no browser is left."""
    deadline_s = 8.0
    audit = MemoryAuditSink()
    with serve(routes={"/": respond(200, PUSHING_SHELL)}) as srv:
        async with make_web({"fetch_timeout_s": deadline_s}, audit=audit) as web:
            began = time.monotonic()
            page = await web.fetch(srv.url("/"), tier="connected")
            took = time.monotonic() - began
    # Before, the call ended 5 to 6 s past its deadline: the DOM's reads ran into it, then
    # the close waited its whole bound (_CLOSE_S, 5 s). Now it ends within about a second of
    # it on a quiet machine; on a loaded one (the suite in CI, with this page's browser busy
    # on both cores) the kill and reaping of the busy browser took up to 3.4 s more. The
    # bound is the old close's alone: a call that still waits it out fails, whatever the load.
    assert took < deadline_s + _CLOSE_S, took
    assert "there is no text to give" in page.content or "push" in page.content
    assert len(audit.records) == 1
    assert _browser_processes() == []


async def test_a_page_whose_dialogs_hold_the_browser_says_so() -> None:
    """A page looping ``alert()`` never navigates: its screenshot's failure said it "kept
    navigating itself away". It now says what held the browser, in one sentence."""
    page = (
        "<html><body><p>Hi</p><script>for (;;) { alert(1); confirm(2); prompt(3); }"
        "</script></body></html>"
    )
    with serve(routes={"/": respond(200, page)}) as srv:
        async with make_web(renderer=ChromiumRenderer(goto_timeout_s=2)) as web:
            with pytest.raises(UpstreamError) as failed:
                await web.fetch(srv.url("/"), include_screenshot=True)
    message = failed.value.message
    assert "kept the browser from reading it" in message, message
    assert "navigating" not in message


async def test_a_shell_whose_render_runs_out_of_time_says_so_and_is_not_kept() -> None:
    """A script shell whose render does not finish by the read's deadline (renders queued
    behind others): its reading was empty, handed over as a success, and cached for the
    cache's lifetime. It now says why there is no text, and the next read renders again."""
    s = Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected", "robots": False},
            "limits": {"fetch_timeout_s": 1.0},
        }
    )
    renderer = OutOfTime(takes_s=2.0)
    bare = "<html><head><title>App</title></head><body><div id='app'></div><script>1</script>"
    with serve(routes={"/": respond(200, bare + "</body></html>")}) as srv:
        async with Web(s, StaticResolver({}), audit=MemoryAuditSink(), renderer=renderer) as web:
            first = await web.fetch(srv.url("/"))
            again = await web.fetch(srv.url("/"))
    assert "there is no text to give; try again later" in first.content
    assert "there is no text to give" in again.content
    assert renderer.renders == 2 and len(srv.requests) == 2


async def test_a_shell_that_sends_the_browser_to_another_site_is_not_read_as_itself() -> None:
    """A script shell whose script sends the browser to another origin: that site's text is
    not filed under the shell's URL (in the result, the audit or the cache); the plain
    reading stands. A shell that rewrites its own path (a router's replaceState) stays on its
    origin, and its rendering is read."""
    other_page = "<html><head><title>Other</title></head><body><p>" + "Other site. " * 20
    with serve(routes={"/": respond(200, other_page + "</p></body></html>")}) as other:
        away = SHELL_PAGE.replace("<script>", f"<script>location.replace({other.url('/')!r});", 1)
        routed = SHELL_PAGE.replace("<script>", "<script>history.replaceState(null, '', '/home');")
        routes = {"/away": respond(200, away), "/routed": respond(200, routed)}
        with serve(routes=routes) as srv:
            audit = MemoryAuditSink()
            async with make_web(audit=audit, renderer=ChromiumRenderer()) as web:
                moved = await web.fetch(srv.url("/away"), tier="connected")
                again = await web.fetch(srv.url("/away"), tier="connected")
                stayed = await web.fetch(srv.url("/routed"), tier="connected")
        assert any("HeadlessChrome" in r.headers.get("user-agent", "") for r in other.requests)
    for read in (moved, again):
        assert "Other site." not in read.content and read.final_url == srv.url("/away")
    assert "Text the page script wrote." in stayed.content
    assert [(r.decision, r.reason) for r in audit.records] == [("allowed", "allowed")] * 3


async def test_a_rendered_reading_is_not_served_to_an_agent_that_may_not_reach_its_hosts() -> None:
    """A shell whose text comes from a script on another host: carol's render reads it and
    the cache keeps it, with the hosts that render reached. Bob, whose own list denies that
    host, is not served carol's reading from the cache: his read renders afresh through his
    gate, which refuses the host, so its text never reaches him; carol's cached read names
    the hosts its content came from."""
    script = "document.getElementById('app').innerHTML = '<p>' + 'From the other host. '.repeat(12) + '</p>';"
    with serve("127.0.0.2", routes={"/app.js": respond(200, script, "text/javascript")}) as other:
        shell = (
            "<html><head><title>App</title></head><body><div id='app'></div>"
            f"<script src='{other.url('/app.js')}'></script></body></html>"
        )
        with serve(routes={"/": respond(200, shell)}) as srv:
            s = Settings().replace(
                {
                    "network": {"allow_ranges": ["127.0.0.1/32", "127.0.0.2/32"]},
                    "policy": {"default_tier": "connected", "robots": False},
                    "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
                    "agents": {"bob": {"tier": "connected", "deny": ["127.0.0.2"]}},
                }
            )
            audit = MemoryAuditSink()
            async with Web(s, StaticResolver({}), audit=audit, renderer=ChromiumRenderer()) as web:
                carol = await web.fetch(srv.url("/"), agent="carol")
                bob = await web.fetch(srv.url("/"), agent="bob")
                again = await web.fetch(srv.url("/"), agent="carol")
    assert "From the other host." in carol.content
    assert "From the other host." not in bob.content
    bob_record = audit.records[1]
    assert any("127.0.0.2" in r and "host_denied" in r for r in bob_record.render_refused)
    assert any("127.0.0.2" in h for h in audit.records[2].render_contacted)
    assert again.final_url == srv.url("/")


@pytest.mark.parametrize(
    ("page", "renderer", "reason", "message"),
    [
        ("never_loads", {"goto_timeout_s": 2}, "", ""),  # pictured as it stands after 2 s
        (
            "never_loads",
            {"goto_timeout_s": 60, "render_timeout_s": 3},
            "render_timeout",
            "the page did not finish rendering within 3 s, the whole render's deadline",
        ),
        ("navigates_away", {"goto_timeout_s": 2}, "render", "the page kept navigating itself"),
    ],
)
async def test_a_screenshot_of_a_page_that_breaks_its_render_fails_in_one_sentence(
    monkeypatch: pytest.MonkeyPatch,
    page: str,
    renderer: dict[str, float],
    reason: str,
    message: str,
) -> None:
    """A screenshot whose render fails gets one sentence naming the bound that fired (the
    whole render's deadline) or what the page did, audited with that reason (never
    internal_error; never Playwright's own wording); a page whose image never arrives is
    pictured as it stands once the load's bound passes. The render's private directory is
    gone afterwards, the browser having exited before it was removed."""
    with private_tmp(monkeypatch) as tmp, held_open() as stall:
        routes = {"/": respond(200, NAV_SHELL), "/again": respond(200, NAV_SHELL)}
        if page == "never_loads":
            routes = {"/": respond(200, STALL_PAGE), "/stall.png": stall}
        with serve(routes=routes) as srv:
            audit = MemoryAuditSink()
            async with make_web(audit=audit, renderer=ChromiumRenderer(**renderer)) as web:
                try:
                    shot = await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
                except UpstreamError as exc:
                    err: UpstreamError | None = exc
                else:
                    err = None
        left = [name for name in os.listdir(tmp) if name.startswith("webward-")]
    assert left == []
    (rec,) = audit.records
    assert rec.reason != "internal_error"
    if err is None:  # the load's bound passed, or the navigation settled in time
        assert not reason or page == "navigates_away"
        assert shot.screenshot is not None
        return
    assert err.reason == reason and rec.reason == reason
    assert err.message.startswith(message)
    assert "\n" not in err.message and err.message.count(". ") == 0


async def test_a_screenshot_of_a_pdf_is_refused_in_one_sentence() -> None:
    """Chromium's PDF viewer draws nothing in a headless browser: a screenshot of a PDF was
    a blank picture, handed over as the page's. It is refused by name, pointing to the plain
    read, which hands the PDF over as a document."""
    with serve(routes={"/doc.pdf": respond(200, pdf_bytes(), "application/pdf")}) as srv:
        audit = MemoryAuditSink()
        async with make_web(audit=audit, renderer=ChromiumRenderer()) as web:
            with pytest.raises(Refused) as err:
                await web.fetch(srv.url("/doc.pdf"), include_screenshot=True, tier="full")
            plain = await web.fetch(srv.url("/doc.pdf"), tier="full")
    assert err.value.reason == "unsupported_type" and err.value.code == "unsupported_type"
    assert "is a PDF" in err.value.message and "without a screenshot" in err.value.message
    assert "\n" not in err.value.message and err.value.message.count(". ") == 0
    assert audit.records[0].reason == "unsupported_type"
    assert plain.parts and plain.parts[0].type == "document"


@pytest.mark.parametrize(
    "mailto",
    [
        '<iframe src="mailto:victim@example.org?subject=frame"></iframe>',
        "<script>setTimeout(() => { location = 'mailto:victim@example.org?subject=top'; }, 0)"
        "</script>",
    ],
)
async def test_a_page_never_starts_a_program_through_an_external_protocol(
    monkeypatch: pytest.MonkeyPatch, mailto: str
) -> None:
    """A mailto: iframe or a mailto: navigation makes Chromium hand the URL to the desktop;
    it finds only the render's stub, never a program on the PATH webward runs with (here a
    recording fake xdg-open and xdg-email)."""
    record = tempfile.mkdtemp(prefix="render-record-")
    os.chmod(record, 0o777)  # written by the stubs, which run as Chromium's user
    fake = os.path.join(record, "fakebin")
    os.mkdir(fake, 0o755)
    for name in ("xdg-open", "xdg-email"):
        path = os.path.join(fake, name)
        with open(path, "w") as f:
            f.write(f'#!/bin/sh\necho "$0 $*" >> {record}/fake.log\n')
        os.chmod(path, 0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    # The render's stubs, made to leave a trace, show that Chromium did try to launch one.
    stub = f'#!/bin/sh\necho "$0 $*" >> {record}/stub.log\nexit 1\n'
    monkeypatch.setattr("webward._render._STUB", stub, raising=False)
    logs = (os.path.join(record, "stub.log"), os.path.join(record, "fake.log"))

    def after_a_launch(req: Request, sock: socket.socket) -> None:
        # Holds the page's load event until something was launched (bounded).
        end = time.monotonic() + 20
        while time.monotonic() < end and not any(map(os.path.exists, logs)):
            time.sleep(0.05)
        send(sock, 200, b"\x89PNG", "image/png")

    page = f'<html><body><h1>Mail</h1>{mailto}<img src="/wait.png"></body></html>'
    try:
        with serve(routes={"/": respond(200, page), "/wait.png": after_a_launch}) as srv:
            async with make_web() as web:
                gate, _ = gate_for(web)
                try:
                    await ChromiumRenderer(goto_timeout_s=5).render(
                        srv.url("/"), screenshot=False, gate=gate
                    )
                except UpstreamError as exc:
                    # A page that navigates itself to mailto: never reports its load event.
                    assert "location" in mailto and exc.reason == "render_timeout"
        assert not os.path.exists(logs[1]), "a program on webward's PATH was started"
        with open(logs[0]) as f:
            launched = f.read()
        assert "mailto:victim@example.org" in launched
    finally:
        shutil.rmtree(record, ignore_errors=True)


async def test_a_full_host_list_says_how_many_more_and_keeps_internal_targets() -> None:
    """Past 50 refused hosts the record's list ends with how many more there were, and an
    internal target tried after 60 junk hosts is still listed: a page cannot hide it."""
    async with make_web() as web:
        gate, record = gate_for(web, "as-owner")  # no host is allowed: nothing is contacted
        for n in range(60):
            with pytest.raises(Refused):
                await gate.check_tunnel(f"https://junk{n}.example:443/")
        with pytest.raises(Refused):
            await gate.check_tunnel("https://127.0.0.2:8080/")
        with pytest.raises(Refused):
            await gate.check_tunnel("https://junk3.example:443/")  # seen before: not counted
    refused = record.render_refused
    assert len(refused) == 51
    assert refused[0].startswith("junk0.example:443 (")
    assert "127.0.0.2:8080 (internal_address)" in refused
    assert refused[-1] == "... and 11 more hosts"
    assert len(set(refused)) == len(refused)


async def test_an_internal_target_refused_for_its_method_or_past_the_cap_is_listed_as_such() -> (
    None
):
    """A POST (a beacon) to an internal address, and a request to one past the render's
    request cap, are refused anyway; the record still names them as internal targets, kept in
    a list already full of 60 junk hosts the page POSTed to first, not hidden among them as
    one more refused method."""
    async with make_web({"render_max_requests": 61}) as web:
        gate, record = gate_for(web)
        for n in range(60):
            with pytest.raises(Refused):
                await gate.request("POST", f"http://junk{n}.example/b", [], lambda s, h: (0, True))
        for method, url in (("POST", "http://127.0.0.2:8080/beacon"), ("GET", "http://127.0.0.3/")):
            with pytest.raises(Refused) as refused:
                await gate.request(method, url, [], lambda s, h: (0, True))
            assert refused.value.reason == "internal_address"
        with pytest.raises(Refused) as refused:
            await gate.request("GET", "http://junk0.example/", [], lambda s, h: (0, True))
        assert refused.value.reason == "render_requests"
    assert "127.0.0.2:8080 (internal_address)" in record.render_refused
    assert "127.0.0.3 (internal_address)" in record.render_refused
    assert record.render_refused[0] == "junk0.example (render_method)"
    assert record.render_refused[-1] == "... and 13 more hosts"
    assert gate.exhausted.is_set()


async def test_the_audit_table_shows_a_call_whose_render_was_refused_an_internal_target() -> None:
    """A page whose render tried 127.0.0.2 reads as "allowed allowed": `webward audit`'s table
    showed nothing else, the attempt named only in the record's renderRefused. It now has a
    RENDER-REFUSED column saying how many hosts were refused, and how many were internal."""
    from webward._cmd_audit import render_table

    with accept_counter("127.0.0.2") as internal:
        page = f"""<html><body><h1>Plain page</h1><p>Words enough to be read.</p>
          <img src="http://127.0.0.2:{internal.port}/pixel.png"></body></html>"""
        with serve(routes={"/": respond(200, page)}) as srv:
            audit = MemoryAuditSink()
            async with make_web(audit=audit, renderer=ChromiumRenderer()) as web:
                await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
                with pytest.raises(UpstreamError):  # a 404: nothing rendered
                    await web.fetch(srv.url("/other"), tier="full")
    assert internal.accepts == 0
    lines = render_table(list(audit.records)).splitlines()
    assert lines[0].split()[4:7] == ["DECISION", "REASON", "RENDER-REFUSED"]
    assert [line.split()[4:7] for line in lines[1:]] == [
        ["allowed", "allowed", "1"],
        ["failed", "http_404", "-"],
    ]
    assert "allowed   1 (1 internal)  200" in lines[1]


async def test_a_renders_refused_hosts_are_counted_in_the_metrics() -> None:
    """A call whose render had an image refused at an internal address, and a beacon refused
    for its method, is an "allowed" call: webward_calls_total, which an operator alerts on,
    showed nothing of either. webward_render_refusals_total counts each refused host of the
    record by reason."""
    from prometheus_client.parser import text_string_to_metric_families

    from webward._telemetry import Telemetry

    with accept_counter("127.0.0.2") as internal:
        page = f"""<html><body><h1>Plain page</h1><p>Words enough to be read.</p>
          <img src="http://127.0.0.2:{internal.port}/pixel.png">
          <script>navigator.sendBeacon("/beacon", "x");</script></body></html>"""
        with serve(routes={"/": respond(200, page)}) as srv:
            telemetry = Telemetry(metrics=True)
            audit = MemoryAuditSink()
            web = make_web(audit=audit, renderer=ChromiumRenderer(), telemetry=telemetry)
            async with web:
                await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
    assert internal.accepts == 0
    assert sorted(audit.records[-1].render_refused) == [
        f"127.0.0.1:{srv.port} (render_method)",
        f"127.0.0.2:{internal.port} (internal_address)",
    ]
    assert telemetry.metrics is not None
    counted = {
        s.labels["reason"]: s.value
        for family in text_string_to_metric_families(telemetry.metrics.exposition().decode())
        for s in family.samples
        if s.name == "webward_render_refusals_total"
    }
    telemetry.close()
    assert counted == {"internal_address": 1.0, "render_method": 1.0}


def test_a_render_refusals_reason_label_is_a_fixed_code() -> None:
    """The label is taken from the record's entry, whose host the page chose: only a reason
    webward has is a label value; the list's count of the rest is none."""
    from webward._telemetry import _render_refusal_reason

    assert _render_refusal_reason("127.0.0.2:8080 (internal_address)") == "internal_address"
    assert _render_refusal_reason("x (y) (render_upgrade)") == "render_upgrade"
    assert _render_refusal_reason("evil (made-up)") == "other"
    assert _render_refusal_reason("... and 12 more hosts") is None


async def test_contacted_hosts_past_the_cap_are_counted() -> None:
    """55 distinct hosts contacted: 50 are listed and a last entry says 5 more were."""
    names = [f"h{n}.webward-test.net" for n in range(55)]
    with serve(routes={"*": respond(200, "ok", "text/plain")}) as srv:
        s = Settings().replace(
            {
                "network": {"allow_ranges": ["127.0.0.1/32"]},
                "policy": {"default_tier": "full", "robots": False},
                "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
            }
        )
        resolver = StaticResolver({name: ["127.0.0.1"] for name in names})
        async with Web(s, resolver, audit=MemoryAuditSink()) as web:
            gate, record = gate_for(web)
            for name in names:
                await gate.request(
                    "GET", f"http://{name}:{srv.port}/", [], lambda s, h: (1000, True)
                )
    contacted = record.render_contacted
    assert contacted[:50] == [f"{name}:{srv.port}" for name in names[:50]]
    assert contacted[50:] == ["... and 5 more hosts"]


def _driver_tasks() -> list[asyncio.Task[Any]]:
    """The tasks of Playwright's drivers still running on this loop (a driver's reader ends
    once the loop has seen it exit). A driver gone from ``_children`` may be a zombie the
    loop has not reaped yet: a test that ended then closed its loop first, and the exit came
    to a closed loop, its pipe left to the collector, failing a later test (once in this
    stop's CI runs)."""
    return [
        task
        for task in asyncio.all_tasks()
        if not task.done()
        and "playwright" in getattr(getattr(task.get_coro(), "cr_code", None), "co_filename", "")
    ]


def _children() -> set[int]:
    """The live (not yet reaped or zombie) processes whose parent is this test process."""
    me, found = str(os.getpid()), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                state, parent = f.read().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue
        if parent == me and state != "Z":
            found.add(int(entry))
    return found


async def test_a_render_cancelled_while_its_driver_starts_leaves_no_driver_running() -> None:
    """A render cancelled while Playwright's driver was starting (a read's deadline, a
    client that left) left the driver running: 15 to 21 of 30 such renders did, each a
    process for as long as the server ran. The start is shielded and the driver stopped."""
    from webward._render import _playwright

    before = _children()

    async def cancelled_start(delay: float) -> None:
        with anyio.move_on_after(delay):
            async with _playwright(anyio.current_time() + 5):
                await anyio.sleep(0)

    for i in range(30):
        await cancelled_start(0.002 * (i % 15 + 1))
    with anyio.move_on_after(10):  # a stopped driver may take a moment to exit
        while _children() - before or _driver_tasks():
            await anyio.sleep(0.05)
    assert _children() - before == set() and not _driver_tasks()


async def test_a_driver_that_starts_past_its_bound_is_stopped_once_it_has(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """A driver slower to start than the render's bound: the render says so in one sentence
    at the bound, and the driver, once it has started, is stopped (it ran on, a process
    for as long as the server did). Playwright's own driver, behind a script that waits."""
    import playwright._impl.transport as transport
    from playwright._impl._driver import compute_driver_executable

    from webward import _render

    node, cli = compute_driver_executable()
    slow = tmp_path / "slow-driver"
    slow.write_text(f'#!/bin/sh\nsleep 1.5\nexec "{node}" "$@"\n')
    slow.chmod(0o755)
    monkeypatch.setattr(transport, "compute_driver_executable", lambda: (str(slow), cli))
    monkeypatch.setattr(_render, "_CLOSE_S", 0.5)
    before = _children()
    with pytest.raises(UpstreamError) as info:
        async with _render._playwright(anyio.current_time() + 30):
            pass
    assert info.value.message == (
        "the headless renderer did not start within 0.5 s; read the page without a screenshot"
    )
    assert _children() - before  # the driver is still starting
    with anyio.move_on_after(20):  # it starts (1.5 s and node's start), then is stopped
        while _children() - before or _driver_tasks():
            await anyio.sleep(0.05)
    assert _children() - before == set() and not _driver_tasks()


async def test_a_cancelled_render_closes_its_browser_before_removing_its_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A render its caller cancels mid-load (as the fallback's deadline does) still closes
    its browser and waits for it to exit, and only then removes its private directory:
    no Chromium process and no webward-* directory of the render is left."""
    requested = threading.Event()
    with private_tmp(monkeypatch) as tmp, held_open() as stall:

        def handler(req: Request, sock: socket.socket) -> None:
            requested.set()  # the browser is up and loading: cancel now
            stall(req, sock)

        with serve(routes={"/": respond(200, STALL_PAGE), "/stall.png": handler}) as srv:
            async with make_web() as web:
                gate, _ = gate_for(web)
                with anyio.CancelScope() as scope:

                    async def cancel_once_loading() -> None:
                        await anyio.to_thread.run_sync(requested.wait, 30, abandon_on_cancel=True)
                        scope.cancel()

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(cancel_once_loading)
                        await ChromiumRenderer().render(srv.url("/"), screenshot=False, gate=gate)
        assert scope.cancelled_caught and requested.is_set()
        assert _browser_processes() == []
        assert [name for name in os.listdir(tmp) if name.startswith("webward-")] == []


def test_a_navigation_elsewhere_is_named_without_its_credentials() -> None:
    """A page that sends the browser on to another site is refused by that site's URL, which
    the page chose: quoted without a user name and password, as a redirect's Location is."""
    with pytest.raises(UpstreamError) as info:
        _same_site("https://a.example/", "https://user:Zq-pw@b.example/landing")
    assert "b.example/landing" in info.value.message and "Zq" not in info.value.message


def test_a_page_at_an_ipv4_mapped_address_is_its_own_site() -> None:
    """A page read at [::ffff:127.0.0.1] (an operator's allow_ranges opening it) stays on its
    origin in the browser, which writes that address [::ffff:7f00:1]: the two spellings of
    one address were two sites, and the render was refused as sent elsewhere."""
    _same_site("http://[::ffff:127.0.0.1]:8080/", "http://[::ffff:7f00:1]:8080/next")
    with pytest.raises(UpstreamError):  # another address stays another site
        _same_site("http://[::ffff:127.0.0.1]:8080/", "http://[::ffff:7f00:2]:8080/")


async def test_a_page_opens_no_windows_of_its_own() -> None:
    """Playwright starts Chromium with its popup blocker off, so a page's script opened as many
    windows as it liked (300 held a render to its whole deadline, in a browser of 1.5 GB).
    With the blocker on, a script's window.open and its click on a target=_blank link open
    nothing: no one clicks in a render."""
    opens = "".join(f'window.open("/p{n}");' for n in range(20))
    page = f"""<html><body><h1>Windows</h1><p id="out">pending</p>
      <a id="a" href="/blank" target="_blank">x</a><script>
      document.getElementById("a").click();
      {opens}
      document.getElementById("out").textContent = "opened:" + !!window.open("/last");
    </script></body></html>"""
    with serve(routes={"/": respond(200, page), "*": respond(200, "<p>popup</p>")}) as srv:
        async with make_web() as web:
            gate, _ = gate_for(web)
            rendered = await ChromiumRenderer().render(srv.url("/"), screenshot=False, gate=gate)
        paths = [r.path for r in browser_requests(srv)]
    assert "opened:false" in rendered.html
    assert [p for p in paths if p.startswith(("/p", "/blank", "/last"))] == []


async def test_an_origins_challenge_for_credentials_does_not_hold_the_page() -> None:
    """An image or a fetch() answered 401 with a WWW-Authenticate challenge made Chromium
    wait for credentials typed into a prompt no one sees: the page's load hung to its bound
    and the fetch never settled. The proxy does not relay the challenge, so the 401 is a
    failed response like any other and the page's script sees it."""
    page = """<html><body><h1>Login</h1><p id="out">pending</p><img src="/auth.png">
      <script>
        fetch("/auth-fetch").then(r => { document.getElementById("out").textContent = "fetch:" + r.status; });
      </script></body></html>"""
    challenge = {"WWW-Authenticate": 'Basic realm="x"'}
    routes = {
        "/": respond(200, page),
        "/auth.png": respond(401, "no", "text/plain", challenge),
        "/auth-fetch": respond(401, "no", "text/plain", challenge),
    }
    with serve(routes=routes) as srv:
        async with make_web() as web:
            gate, record = gate_for(web)
            rendered = await ChromiumRenderer().render(srv.url("/"), screenshot=False, gate=gate)
    assert "fetch:401" in rendered.html
    assert record.render_contacted == [f"127.0.0.1:{srv.port}"]


def _mdns_sockets() -> set[str]:
    """The inodes of the UDP sockets bound to port 5353 (mDNS) in this network namespace."""
    found = set()
    for table in ("/proc/net/udp", "/proc/net/udp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if fields[1].rpartition(":")[2] == "14E9":
                    found.add(fields[9])
    return found


async def test_a_pages_webrtc_opens_no_mdns_listener() -> None:
    """A page's RTCPeerConnection made Chromium join the mDNS multicast group
    (224.0.0.251:5353, on every interface) to answer for the .local names it hides host
    addresses behind: a socket outside the proxy, taking packets from the local network for
    the render's life. With WebRTC held to proxied traffic no host address is gathered, so
    there is nothing to hide: the feature is off and no such socket is opened. The page
    asks the server, once its ICE gathering is complete, to look for one."""
    before = _mdns_sockets()
    seen: list[set[str]] = []

    def look(req: Request, sock: socket.socket) -> None:
        seen.append(_mdns_sockets() - before)
        send(sock, 200, b"looked", "text/plain")

    page = """<html><body><p id="out">pending</p><script>
      const pc = new RTCPeerConnection({iceServers: [{urls: "stun:127.0.0.1:9"}]});
      pc.createDataChannel("x");
      pc.onicegatheringstatechange = async () => {
        if (pc.iceGatheringState !== "complete") return;
        const sdp = pc.localDescription.sdp;
        await fetch("/look");
        document.getElementById("out").textContent = "looked " + /a=candidate/.test(sdp);
      };
      pc.createOffer().then((offer) => pc.setLocalDescription(offer));
    </script></body></html>"""
    with serve(routes={"/": respond(200, page), "/look": look}) as srv:
        async with make_web() as web:
            gate, _ = gate_for(web)
            out = await ChromiumRenderer().render(srv.url("/"), screenshot=False, gate=gate)
    assert "looked false" in out.html
    assert seen == [set()]


async def test_a_page_that_floods_its_history_is_read() -> None:
    """Playwright starts Chromium with its IPC flooding protection off, so a page changing its
    address thousands of times a tick (pushState, or location.hash) flooded the browser: its
    render ran to the whole deadline and then waited out the close, 33 s for a page of one
    line. With the protection on, Chromium throttles those changes and the page is read."""
    with serve(routes={"/": respond(200, PUSHING_SHELL)}) as srv:
        async with make_web() as web:
            gate, _ = gate_for(web)
            rendered = await ChromiumRenderer().render(srv.url("/"), screenshot=False, gate=gate)
    assert "push " in rendered.html


@pytest.mark.parametrize(
    "elsewhere",
    ["about:blank", "blob:http://a.example/8f2bfd5c-63bc-4d77-9206-36f908a3aa7b", "data:,x"],
)
def test_a_page_that_replaces_itself_is_not_sent_to_read_its_address(elsewhere: str) -> None:
    """A page that navigates itself to about:blank, or to a blob: or data: document, was
    refused with the next step "read that address itself": there is no such address to
    read. The message says so, and points at the plain read."""
    with pytest.raises(UpstreamError) as info:
        _same_site("http://a.example/", elsewhere)
    message = info.value.message
    assert "has no address to read" in message and "a plain read" in message, message
    assert "read that address" not in message


async def test_a_page_that_takes_too_much_memory_has_its_browser_stopped() -> None:
    """Chromium lets each renderer process hold 16 GB, so a page filling array buffers took
    as much of the machine's memory as it asked for (3.4 GB for 3 GB asked). The render's
    browser is now bounded (here at 512 MiB for the page's 1.5 GB): past the bound it is
    killed, the render fails in one sentence, and no browser is left."""
    page = """<html><body><h1>Memory</h1><p id="out">pending</p><script>
      const keep = []; let mb = 0;
      const grow = setInterval(() => {
        if (mb >= 1536) { clearInterval(grow); return; }
        const block = new Uint8Array(128 * 1024 * 1024); block.fill(1); keep.push(block);
        mb += 128; document.getElementById("out").textContent = "held " + mb + " MB";
      }, 20);
    </script></body></html>"""
    with serve(routes={"/": respond(200, page)}) as srv:
        async with make_web() as web:
            gate, _ = gate_for(web)
            renderer = ChromiumRenderer(max_memory_bytes=512 * 1024**2)
            with pytest.raises(UpstreamError) as failed:
                await renderer.render(srv.url("/"), screenshot=False, gate=gate)
    assert "more than 0.5 GB of memory" in failed.value.message, failed.value.message
    assert failed.value.reason == "render"
    assert _browser_processes() == []
