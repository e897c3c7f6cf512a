"""The renderer seam: plain HTTP, or headless Chromium behind webward's egress proxy.

``ChromiumRenderer`` launches Debian's Chromium through Playwright for one render and closes it
afterwards. Every byte Chromium sends goes through :mod:`webward._proxy`, bound to the calling
agent's gate, so a rendered page's images, iframes, scripts and redirects face the same guard,
policy, address table and pinning as a page read (see REFERENCE.md, "Headless Chromium without
opening an SSRF hole"). One browser per render rather than one per ``Web``: the proxy carries
one caller's policy, a fresh profile leaves no cookies or cache between agents, and a hung or
crashed browser is never shared.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from dataclasses import dataclass
from typing import Protocol

import anyio

from ._errors import Refused, UpstreamError
from ._proxy import Gate, open_proxy

__all__ = [
    "CHROMIUM",
    "UNSAFE_ENV",
    "ChromiumRenderer",
    "PlainRenderer",
    "Rendered",
    "Renderer",
    "default_renderer",
]

CHROMIUM = "/usr/bin/chromium"
#: Playwright stops forcing loopback through the proxy when this is set: never render then.
UNSAFE_ENV = "PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK"
VIEWPORT = {"width": 1280, "height": 800}

_ARGS = (
    # Chromium resolves nothing itself (Playwright adds this only for SOCKS proxies) ...
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    # ... and sends loopback and link-local (169.254/16!) through the proxy too.
    "--proxy-bypass-list=<-loopback>",
    # WebRTC may not send UDP outside the proxy; headless and full honour different flags.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-quic",
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@dataclass(frozen=True)
class Rendered:
    """What a render produced: the rendered DOM as HTML, and the viewport PNG when asked."""

    html: str
    screenshot_png: bytes | None = None

    def __repr__(self) -> str:
        shot = None if self.screenshot_png is None else len(self.screenshot_png)
        return f"Rendered(html={len(self.html)} chars, screenshot_png={shot} bytes)"


class Renderer(Protocol):
    """Renders one page; every request it makes goes through ``gate``."""

    async def render(self, url: str, *, screenshot: bool, gate: Gate) -> Rendered:
        """Render ``url`` (already read and checked); raises ``WebwardError``."""
        ...


def _unavailable() -> Refused:
    return Refused(
        "refused: the headless renderer is not available; install the Debian package chromium "
        "and the Python package playwright",
        code="unsupported_type",
        reason="renderer_unavailable",
    )


class PlainRenderer:
    """The plain-HTTP build: nothing is rendered, so every render is refused by name."""

    async def render(self, url: str, *, screenshot: bool, gate: Gate) -> Rendered:
        raise _unavailable()


class ChromiumRenderer:
    """Headless Debian Chromium through Playwright, all traffic through the egress proxy."""

    def __init__(
        self,
        *,
        executable: str = CHROMIUM,
        goto_timeout_s: float = 12.0,
        proxy_max_bytes: int = 20_000_000,
        max_concurrent: int = 2,
    ) -> None:
        self._executable = executable
        self._goto_timeout_s = goto_timeout_s
        self._proxy_max_bytes = proxy_max_bytes
        # A browser costs hundreds of MB: a long-lived gateway or MCP server renders at most
        # this many pages at once, and the others wait (inside their own deadline).
        self._max_concurrent = max_concurrent
        self._slots: anyio.Semaphore | None = None

    async def render(self, url: str, *, screenshot: bool, gate: Gate) -> Rendered:
        # Playwright reads this variable from the real environment when it launches, so the
        # real environment is what must be checked (not Settings).
        if os.environ.get(UNSAFE_ENV):
            raise Refused(
                f"refused: the headless renderer does not start while {UNSAFE_ENV} is set, "
                "because it would let Chromium reach loopback without the proxy",
                code="unsupported_type",
                reason="renderer_unsafe",
            )
        if not url.startswith(("http://", "https://")):
            raise Refused("refused: only http:// and https:// pages are rendered", reason="scheme")
        if not os.path.exists(self._executable) or importlib.util.find_spec("playwright") is None:
            raise _unavailable()
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        deadline = self._goto_timeout_s + 15.0  # launch, load and screenshot together
        if self._slots is None:
            self._slots = anyio.Semaphore(self._max_concurrent)
        try:
            with anyio.fail_after(deadline):
                async with self._slots:
                    return await self._render(url, screenshot, gate, deadline)
        except (TimeoutError, PlaywrightTimeout):
            raise UpstreamError(
                f"the page did not finish rendering within {self._goto_timeout_s:g} s",
                code="timeout",
                reason="render_timeout",
            ) from None

    async def _render(self, url: str, screenshot: bool, gate: Gate, deadline: float) -> Rendered:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout
        from playwright.async_api import async_playwright

        try:
            with tempfile.TemporaryDirectory(prefix="webward-") as prof:
                async with (
                    open_proxy(gate, deadline_s=deadline, max_bytes=self._proxy_max_bytes) as proxy,
                    async_playwright() as pw,
                ):
                    context = await pw.chromium.launch_persistent_context(
                        prof,
                        executable_path=self._executable,
                        headless=True,
                        proxy={"server": proxy.server},  # no bypass, ever
                        args=list(_ARGS),
                        service_workers="block",
                        accept_downloads=False,
                        viewport={"width": VIEWPORT["width"], "height": VIEWPORT["height"]},
                        device_scale_factor=1,
                    )
                    try:
                        page = await context.new_page()
                        await page.goto(url, wait_until="load", timeout=self._goto_timeout_s * 1000)
                        html = await page.content()
                        png = await page.screenshot(type="png") if screenshot else None
                    finally:
                        await context.close()
        except FileNotFoundError:
            raise _unavailable() from None
        except PlaywrightTimeout:
            raise  # the caller words it, with the deadline
        except PlaywrightError as exc:
            first = (str(exc).strip().splitlines() or ["unknown error"])[0][:200]
            raise UpstreamError(
                f"the headless renderer failed ({first.rstrip('.')})", reason="render"
            ) from None
        return Rendered(html=html, screenshot_png=png)


def default_renderer() -> Renderer:
    """Chromium when Debian's chromium and playwright are installed, else plain HTTP."""
    if os.path.exists(CHROMIUM) and importlib.util.find_spec("playwright") is not None:
        return ChromiumRenderer()
    return PlainRenderer()
