"""The headless renderer: real Debian Chromium through Playwright, every request through
webward's validating egress proxy, against pages served on loopback."""

from __future__ import annotations

import base64
import io
import socket
import threading
import time
from typing import Any

import anyio
import pytest
from localserver import accept_counter, respond, serve
from PIL import Image

from webward import Refused, Settings, StaticResolver, Web
from webward._errors import WebwardError
from webward._proxy import open_proxy
from webward._render import UNSAFE_ENV, ChromiumRenderer, PlainRenderer
from webward._web import _RenderGate
from webward.testing import MemoryAuditSink

pytestmark = pytest.mark.anyio

REBIND = "rebind.webward-test.net"  # resolves (StaticResolver) to 127.0.0.2


def make_web(**kw: Any) -> Web:
    s = Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "full", "robots": False},
            "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
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


class RecordingGate:
    """The Web's real gate, with every refusal it makes written down (what the proxy saw)."""

    def __init__(self, inner: _RenderGate) -> None:
        self.inner, self.refused = inner, set[str]()

    def check(self, url: str) -> Any:
        try:
            return self.inner.check(url)
        except WebwardError:
            self.refused.add(url)
            raise

    async def connect(self, url: Any, timeout: float) -> Any:
        try:
            return await self.inner.connect(url, timeout)
        except WebwardError:
            self.refused.add(url.url)
            raise


async def test_proxy_refuses_internal_subresources_without_connecting() -> None:
    """Images, iframes, scripts and XHR to 127.0.0.2, by address or by a name resolving to
    it, are refused by the proxy and never reach the listener, while the page itself renders."""
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
                gate = RecordingGate(_RenderGate(web, "cli", "full"))
                rendered = await ChromiumRenderer().render(
                    srv.url("/"), screenshot=False, gate=gate
                )
        assert "xhr:blocked,blocked" in rendered.html
        # Everything that must finish before the load event was asked for and refused.
        for path in ("a.png", "frame", "xhr"):
            assert f"{direct}{path}" in gate.refused
        for path in ("b.png", "frame", "s.js", "xhr"):
            assert f"{named}{path}" in gate.refused
        assert internal.accepts == 0


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


async def test_proxy_connect_to_internal_targets_gets_403_and_no_connection() -> None:
    """CONNECT to a name resolving to 127.0.0.2, or to 127.0.0.2 itself, is answered 403."""
    with accept_counter("127.0.0.2") as internal:
        async with make_web() as web, open_proxy(_RenderGate(web, "cli", "full")) as proxy:
            for target in (f"{REBIND}:{internal.port}", f"127.0.0.2:{internal.port}"):
                raw = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode()
                answer = await _proxy_request(proxy.port, raw)
                assert answer.startswith(b"HTTP/1.1 403 "), answer
        assert internal.accepts == 0
    assert [reason for _, reason in proxy.refused] == ["internal_address", "internal_address"]


async def test_proxy_forwards_a_plain_get_to_an_allowed_target() -> None:
    """An absolute-form GET to an allowed loopback page is forwarded in origin form."""
    with serve(routes={"/hello": respond(200, "hi there", "text/plain")}) as srv:
        async with make_web() as web, open_proxy(_RenderGate(web, "cli", "full")) as proxy:
            url = srv.url("/hello?x=1")
            raw = f"GET {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Connection: keep-alive\r\n\r\n"
            answer = await _proxy_request(proxy.port, raw.encode())
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"hi there")
    assert [r.target for r in srv.requests] == ["/hello?x=1"]
    assert "proxy-connection" not in srv.requests[0].headers


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


async def test_proxy_sends_one_plain_request_per_checked_connection() -> None:
    """A second request pipelined on one proxy connection never reaches the origin that was
    checked for the first (it might name another host on the same address)."""
    origin = _KeepAliveOrigin()
    async with make_web() as web, open_proxy(_RenderGate(web, "cli", "full")) as proxy:
        first = f"GET http://127.0.0.1:{origin.port}/one HTTP/1.1\r\nHost: x\r\n\r\n"
        second = "GET http://denied.example/two HTTP/1.1\r\nHost: denied.example\r\n\r\n"
        async with await anyio.connect_tcp("127.0.0.1", proxy.port) as sock:
            await sock.send((first + second).encode())
            with anyio.fail_after(10):
                answer = await sock.receive()
    origin.listener.close()
    assert answer.startswith(b"HTTP/1.1 200")
    assert origin.received.count(b"GET ") == 1
    assert b"/two" not in origin.received and b"denied.example" not in origin.received


async def test_proxy_refuses_a_host_outside_the_callers_policy() -> None:
    """A public name the agent's tier does not reach gets 403 before any DNS or connection."""
    async with make_web() as web, open_proxy(_RenderGate(web, "cli", "as-owner")) as proxy:
        raw = b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"
        answer = await _proxy_request(proxy.port, raw)
    assert answer.startswith(b"HTTP/1.1 403 ")
    assert proxy.allowed == []


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
    with serve(routes={"/": respond(200, "<p>x</p>")}) as srv:
        for renderer in (ChromiumRenderer(executable="/nonexistent/chromium"), PlainRenderer()):
            async with make_web(renderer=renderer) as web:
                with pytest.raises(Refused) as err:
                    await web.fetch(srv.url("/"), include_screenshot=True, tier="full")
            assert (err.value.code, err.value.reason) == (
                "unsupported_type",
                "renderer_unavailable",
            )
            assert "Debian package chromium" in err.value.message


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


async def test_as_owner_and_plain_builds_read_a_shell_as_served() -> None:
    """Tier as-owner never renders, and a build without the renderer reads the shell as
    served: no error either way, and no browser request reaches the page."""
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
            owner = await web.fetch(srv.url("/"))
        async with make_web(renderer=PlainRenderer()) as web:
            plain = await web.fetch(srv.url("/"), tier="connected")
        assert not any("HeadlessChrome" in r.headers.get("user-agent", "") for r in srv.requests)
    for page in (owner, plain):
        assert "Text the page script wrote." not in page.content


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
    URL on the same Web gets the page as served (read again), never the rendered text."""
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
            plain = await web.fetch(srv.url("/"), tier="as-owner")
            again = await web.fetch(srv.url("/"), tier="connected")
        plain_reads = [r for r in srv.requests if "HeadlessChrome" not in r.headers["user-agent"]]
    assert "Text the page script wrote." in rendered.content
    assert "Text the page script wrote." not in plain.content
    assert "Text the page script wrote." in again.content  # connected's own cache entry
    assert len(plain_reads) == 2  # the as-owner read went to the server, not to the cache
