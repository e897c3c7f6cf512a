"""The renderer seam: plain HTTP, or headless Chromium behind webward's egress proxy.

``ChromiumRenderer`` launches Debian's Chromium through Playwright for one render and closes it
afterwards. Every byte Chromium sends goes through :mod:`webward._proxy`, bound to the calling
agent's gate, so a rendered page's images, iframes, scripts and redirects face the same guard,
policy, address table and pinning as a page read (see REFERENCE.md, "Headless Chromium without
opening an SSRF hole"). One browser per render rather than one per ``Web``: the proxy carries
one caller's policy, a fresh profile leaves no cookies or cache between agents, and a hung or
crashed browser is never shared.

Chromium itself is kept small: it gets a scrubbed environment (no API keys, no ``WEBWARD_*``
variables: see :func:`_browser_env`), no desktop program to start for a page (stubs first on
its PATH: :func:`_handler_stubs`), its own background traffic switched off (component
updates, sync and accounts, safe browsing, domain reliability, metrics, pings; whatever still
tries goes through the proxy, is decided and audited like a page request), and it runs
sandboxed where the kernel allows. When webward runs as root, Chromium runs as the
unprivileged user ``nobody`` (through ``setpriv``), so that its sandbox can be on; without
user namespaces the sandbox is off and that is said in the docs (docs/render.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import ipaddress
import os
import pwd
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ._addresses import ip_text, quoted
from ._errors import Reason, Refused, UpstreamError, WebwardError
from ._redact import drop_userinfo

if TYPE_CHECKING:  # the egress proxy is imported by a render, not by every read
    from playwright.async_api import Playwright

    from ._proxy import Gate

__all__ = [
    "CHROMIUM",
    "MAX_DOM_CHARS",
    "UNSAFE_ENV",
    "ChromiumRenderer",
    "PlainRenderer",
    "Rendered",
    "Renderer",
    "default_renderer",
    "renderer_needs",
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
    "--disable-gpu",
    "--no-first-run",
    # Chromium's own traffic, off (Playwright's defaults add more: optimisation hints,
    # network time, search preconnects, extensions, breakpad). Anything left still meets
    # the proxy's gate and the audit record.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--safebrowsing-disable-auto-update",
    "--metrics-recording-only",
    "--disable-crash-reporter",
    "--no-pings",
    "--dns-prefetch-disable",
    "--no-default-browser-check",
    "--disable-default-apps",
    "--disable-extensions",
    "--allow-browser-signin=false",
    "--disable-features=" + ",".join(
        (
            # Playwright's own list (a second --disable-features would replace, not add) ...
            "AvoidUnnecessaryBeforeUnloadCheckSync", "DestroyProfileOnBrowserClose",
            "HttpsUpgrades", "HttpsFirstBalancedModeAutoEnable", "LensOverlay", "MediaRouter",
            "PaintHolding", "ThirdPartyStoragePartitioning",
            "AvoidCorsURLLoaderRestartOnRedirect", "OptimizationHints",
            "NetworkTimeServiceQuerying", "AimEnabled", "PreconnectToSearch",
            # ... and the background fetches it leaves on.
            "OptimizationHintsFetching", "OptimizationGuideModelDownloading",
            "OptimizationHintsFetchingAnonymousDataConsent", "AutofillServerCommunication",
            "CertificateTransparencyComponentUpdater", "Translate", "InterestFeedContentSuggestions",
            "SafeBrowsingEnhancedProtection", "PrivacySandboxSettings4", "FedCm",
            # A page's RTCPeerConnection made Chromium join the mDNS group (224.0.0.251:5353)
            # to answer for the .local names it hides host addresses behind: a socket outside
            # the proxy taking the local network's packets. WebRTC gathers no host address
            # here (proxied UDP only), so there is nothing to hide.
            "WebRtcHideLocalIpsWithMdns",
        )
    ),
)  # fmt: skip
# Playwright's own switches that a render may not have: "--disable-popup-blocking" lets a page
# open windows without a click (300 in a loop held its render to the whole deadline, each a
# document of its own in a browser of 1.5 GB); with Chromium's popup blocker on, a script's
# window.open and its click on a target=_blank link open nothing, no one clicking here.
# "--disable-ipc-flooding-protection" let a page change its address (pushState, a hash)
# thousands of times a tick, which kept the browser too busy to read or close the page: a
# render ran to its whole deadline and past it (33 s). Chromium throttles those with it on.
_DEFAULT_ARGS_DROPPED = ("--disable-popup-blocking", "--disable-ipc-flooding-protection")
# The only variables Chromium is given (see _browser_env); the rest of webward's environment,
# API keys and WEBWARD_* included, never reaches it.
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "TZ", "FONTCONFIG_PATH")
#: The user Chromium runs as when webward runs as root.
UNPRIVILEGED_USER = "nobody"
_SETPRIV = "/usr/bin/setpriv"
# The programs Chromium runs to hand a URL to the desktop (a page's ``mailto:`` iframe or
# ``location = "mailto:..."`` makes it run ``xdg-email`` or ``xdg-open``; no switch or profile
# preference turns that off, mailto being always allowed): each is a stub that does nothing
# and fails, in a directory first on Chromium's PATH, so a page never starts a program here.
_HANDLERS = (
    "xdg-open", "xdg-email", "gio", "gnome-open", "kde-open", "kde-open5", "exo-open",
    "sensible-browser", "x-www-browser", "www-browser",
)  # fmt: skip
_STUB = "#!/bin/sh\nexit 1\n"
# How long closing the browser (and then Playwright's driver) may take after a render, also
# one that timed out or was cancelled: its profile is removed only once it has exited.
_CLOSE_S = 5.0
# The Playwright call a message of its names first ("Page.goto: ", "Page.content: "): its
# API, not the page's trouble.
_PLAYWRIGHT_CALL = re.compile(r"^\w+(?:\.\w+)+:\s*")


@dataclass(frozen=True)
class Rendered:
    """What a render produced: the rendered DOM as HTML, the viewport PNG when asked, and
    whether the DOM was cut at :data:`MAX_DOM_CHARS`."""

    html: str
    screenshot_png: bytes | None = None
    cut: bool = False

    def __repr__(self) -> str:
        shot = None if self.screenshot_png is None else len(self.screenshot_png)
        return f"Rendered(html={len(self.html)} chars, screenshot_png={shot} bytes)"


class Renderer(Protocol):
    """Renders one page; every request it makes goes through ``gate``."""

    async def render(self, url: str, *, screenshot: bool, gate: Gate) -> Rendered:
        """Render ``url`` (already read and checked); raises ``WebwardError``."""
        ...


def renderer_needs(executable: str = CHROMIUM) -> str:
    """What the headless renderer lacks here, named so that it can be installed: the extra
    that brings playwright, the Debian package for Chromium, or both (``""``: neither)."""
    missing = []
    if importlib.util.find_spec("playwright") is None:
        missing.append("the render extra (pip install 'webward[render]')")
    if not os.path.exists(executable):
        missing.append(f"Debian's chromium at {executable} (apt-get install chromium)")
    return " and ".join(missing)


def _unavailable(executable: str = CHROMIUM) -> Refused:
    needs = renderer_needs(executable) or f"a Chromium at {executable} that starts"
    return Refused(
        f"refused: the headless renderer is not available; it needs {needs}",
        code="unsupported_type",
        reason=Reason.RENDERER_UNAVAILABLE,
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
        render_timeout_s: float | None = None,
        proxy_max_bytes: int = 20_000_000,
        max_concurrent: int = 2,
        max_memory_bytes: int = 2 * 1024**3,
    ) -> None:
        self._executable = executable
        # Two bounds: the page's load (goto_timeout_s), and the whole render (launch, load,
        # the DOM and the screenshot; by default the load's plus 15 s), which also stops a
        # page that loads and then keeps the browser busy.
        self._goto_timeout_s = goto_timeout_s
        self._render_timeout_s = (
            goto_timeout_s + 15.0 if render_timeout_s is None else render_timeout_s
        )
        self._proxy_max_bytes = proxy_max_bytes
        # A browser costs hundreds of MB: a long-lived gateway or MCP server renders at most
        # this many pages at once, and the others wait (inside their own deadline).
        self._max_concurrent = max_concurrent
        # What the render's browser may hold at once (see _memory_bound): Chromium lets each
        # renderer process take 16 GB, and a page may make several.
        self._max_memory_bytes = max_memory_bytes
        self._slots: anyio.Semaphore | None = None

    async def render(self, url: str, *, screenshot: bool, gate: Gate) -> Rendered:
        # Playwright reads this variable from the real environment when it launches, so the
        # real environment is what must be checked (not Settings).
        if os.environ.get(UNSAFE_ENV):
            raise Refused(
                f"refused: the headless renderer does not start while {UNSAFE_ENV} is set, "
                "because it would let Chromium reach loopback without the proxy; unset it in "
                "the environment webward runs in",
                code="unsupported_type",
                reason=Reason.RENDERER_UNSAFE,
            )
        if not url.startswith(("http://", "https://")):
            raise Refused(
                "refused: only http:// and https:// pages are rendered", reason=Reason.SCHEME
            )
        if not os.path.exists(self._executable) or importlib.util.find_spec("playwright") is None:
            raise _unavailable(self._executable)
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        deadline = self._render_timeout_s
        # A caller's deadline shorter than the render's own (the read's, for a render
        # fallback): the waits for the page's load and quiet end in time for the DOM to be
        # read, and the browser closed, before it; else the page is lost rather than read as
        # it stands. The render's own deadline leaves that room after the load's bound.
        until = anyio.current_effective_deadline()  # the caller's: the browser closed by then
        read_by = until - _AFTER_READ_S
        if self._slots is None:
            self._slots = anyio.Semaphore(self._max_concurrent)
        try:
            with anyio.fail_after(deadline) as scope:
                async with self._slots:
                    return await self._render(url, screenshot, gate, deadline, read_by, until)
        except WebwardError:
            raise
        # The caller's own cancellation is no Exception and passes through untouched.
        except Exception as exc:
            if scope.cancel_called:  # whatever Playwright raised as it was cut off
                raise UpstreamError(
                    f"the page did not finish rendering within {deadline:g} s, the whole "
                    "render's deadline (launch, load, the page's DOM and its screenshot)",
                    code="timeout",
                    reason=Reason.RENDER_TIMEOUT,
                ) from None
            if isinstance(exc, PlaywrightTimeout):
                raise UpstreamError(
                    f"the page did not finish loading within {self._goto_timeout_s:g} s",
                    code="timeout",
                    reason=Reason.RENDER_TIMEOUT,
                ) from None
            if isinstance(exc, FileNotFoundError):
                raise _unavailable(self._executable) from None
            if isinstance(exc, PlaywrightError):
                first = (str(exc).strip().splitlines() or ["unknown error"])[0][:200]
                first = _PLAYWRIGHT_CALL.sub("", first).rstrip(".")  # "Page.goto: ..."
                if "Download is starting" in first:
                    raise UpstreamError(
                        "the address starts a download rather than showing a page, so there "
                        "is nothing to render; read it without a screenshot",
                        reason=Reason.RENDER,
                    ) from None
                raise UpstreamError(
                    f"the headless renderer failed ({first}); read the page without a screenshot",
                    reason=Reason.RENDER,
                ) from None
            raise

    async def _render(
        self,
        url: str,
        screenshot: bool,
        gate: Gate,
        deadline: float,
        read_by: float,
        until: float,
    ) -> Rendered:
        """One browser, its proxy and its private directory; Playwright's errors are left to
        :meth:`render` to word (each one itself, never inside an exception group). The waits
        for the page's load and quiet end at ``read_by`` (``anyio.current_time()``) at the
        latest."""
        from ._proxy import open_proxy

        async with _private_dir() as root:
            launch = await anyio.to_thread.run_sync(_prepare, root, self._executable)
            env: dict[str, str | float | bool] = dict(launch.env)
            # Left in this order: the browser closes (and has exited) before its driver
            # stops, the proxy stops, and the private directory is removed.
            async with (
                open_proxy(gate, deadline_s=deadline, max_bytes=self._proxy_max_bytes) as proxy,
                _playwright(until) as pw,
            ):
                context = await pw.chromium.launch_persistent_context(
                    launch.profile,
                    executable_path=launch.executable,
                    headless=True,
                    chromium_sandbox=launch.sandbox,
                    env=env,
                    # No bypass, ever; the render's own secret (the proxy answers nothing
                    # else on this machine that finds its port).
                    proxy=proxy.playwright_proxy(),  # type: ignore[arg-type]
                    # The proxy ends TLS with a throw-away certificate and checks the
                    # origin's certificate itself, with webward's trust store.
                    ignore_https_errors=True,
                    args=list(_ARGS),
                    ignore_default_args=list(_DEFAULT_ARGS_DROPPED),
                    service_workers="block",
                    accept_downloads=False,
                    viewport={"width": VIEWPORT["width"], "height": VIEWPORT["height"]},
                    device_scale_factor=1,
                )
                try:
                    # A page that takes more memory than the bound (array buffers, a DOM
                    # grown without end) has its browser stopped (see _memory_bound).
                    async with _memory_bound(launch.profile, self._max_memory_bytes):
                        page = await context.new_page()
                        await _load(page, url, gate, self._goto_timeout_s, read_by)
                        await _quiet(page, read_by)
                        # A page that keeps changing its address keeps its DOM from being read:
                        # the reads end in time to close the browser before the caller's deadline.
                        with anyio.move_on_at(read_by + _SETTLE_S) as settling:
                            html, cut = await _settled_content(page, self._goto_timeout_s)
                        if settling.cancelled_caught:
                            raise UpstreamError(
                                "the page kept changing as it rendered and did not settle in time "
                                "to be read; read it without the browser (a plain read)",
                                code="timeout",
                                reason=Reason.RENDER_TIMEOUT,
                            )
                        png = await page.screenshot(type="png") if screenshot else None
                        _same_site(url, page.url)  # where the DOM and the picture came from
                finally:
                    await _close(context, launch.profile, until)
        return Rendered(html=html, screenshot_png=png, cut=cut)


#: After the load event, how long a render waits at most for the network to go quiet (no
#: request for half a second: the fetches a script starts on load answered), then for the
#: page's text to stop changing (a script that writes it on a timer).
_QUIET_S = 3.0  # the two together
_TEXT_POLL_S = 0.25
# What a render needs after those waits, within its caller's deadline: the DOM's read, the
# screenshot, closing the browser and, back in the caller, the reading's conversion.
_AFTER_READ_S = 3.0
# Of that, what the DOM's read may take (a page that navigates under it is read again).
_SETTLE_S = 1.0
# What closing the browser (and stopping the driver) is given at least, when the caller's
# deadline leaves less: past it a browser that has not closed is killed.
_MIN_CLOSE_S = 0.5


async def _quiet(page: Any, read_by: float) -> None:
    """Wait, within the bounds above, for what a page's scripts do after its load event: a
    single-page app fetches its content then (a render read at the load event gave an empty
    reading and a blank picture). Best effort: a page that never goes quiet (a long poll, a
    ticking clock) is read as it stands at the bounds."""
    from playwright.async_api import Error as PlaywrightError

    last = None
    # One bound for both waits, and a page that navigates away under them (an error here)
    # ends them: the DOM's read then waits for its navigation.
    with (
        anyio.move_on_after(_QUIET_S),
        anyio.move_on_at(read_by),
        contextlib.suppress(PlaywrightError),
    ):
        await page.wait_for_load_state("networkidle", timeout=_QUIET_S * 1000)
        while True:
            size = await page.evaluate("document.body ? document.body.innerText.length : 0")
            if size and size == last:
                return
            last = size
            await anyio.sleep(_TEXT_POLL_S)


#: At most this many characters of a rendered DOM leave the browser: a page read plainly is
#: cut at 1 MB, and a hostile one can build a DOM of hundreds of megabytes (827 MB of this
#: process's memory for one render).
MAX_DOM_CHARS = 2_000_000
#: Frames within frames are written in this deep at most (a frame's own frames included).
_FRAME_DEPTH = 4

# The DOM as it is read, made in a world of webward's own (a CDP isolated world: the page's
# DOM, not its scripts' globals), where the page cannot replace what serializes it, and cut
# before it leaves the browser. Open shadow roots (a web component's text, which the
# screenshot shows) are written in as declarative ones, which the converter reads.
#
# A same-origin <iframe>'s document (a srcdoc, or a frame of the page's own site: a reader's
# or a help widget's text, which the screenshot shows) is written in after the frame's own
# element, its body in a <div>, counted against the same cap: the page's own markup first,
# then its frames in document order while room is left. A frame that is not shown (hidden,
# display:none, visibility:hidden, opacity:0 on it or an ancestor, smaller than 2x2 px,
# clipped away by an ancestor, or placed above or before the document's start, where no
# scroll reaches) is not read: text no reader sees is where injected instructions sit.
#
# A frame's element is found in the markup by an attribute set on it for this read only,
# whose name holds a random nonce made per read (the page cannot write it: not in a text
# node, which is escaped, nor in an attribute's value, where '"' is), never by its tag's own
# text (an identical tag in a <template>, a <script> or a comment comes first). The
# attributes are dropped from the markup and removed from the DOM after the read.
#
# A frame cut at the cap is cut back before any tag, comment or raw-text element (<script>,
# <style>, <textarea>, <title>, <xmp>, <noscript>, <noembed>, <noframes>, <iframe>,
# <plaintext>) the cut leaves open, which would swallow the page's own markup after it. A
# frame of another origin (or a sandboxed one, whose origin is opaque) is never read: its
# document is out of this world's reach (contentDocument is null), and its origin is checked
# besides.
_SERIALIZE = """(() => {
  const type = document.contentType, html = document.documentElement;
  if (!html) return {type, html: ''};
  const nonce = Array.from(crypto.getRandomValues(new Uint8Array(16)),
                           b => b.toString(16).padStart(2, '0')).join('');
  const mark = 'data-ww-' + nonce, marked = [];
  const unmark = s => s.replace(new RegExp(' ' + mark + '="[0-9]+"', 'g'), '');
  const collect = (node, roots, frames) => {
    for (const el of [node, ...node.querySelectorAll('*')]) {
      if (el.localName === 'iframe') frames.push(el);
      if (el.shadowRoot) { roots.push(el.shadowRoot); collect(el.shadowRoot, roots, frames); }
    }
  };
  const shown = frame => {
    const view = frame.ownerDocument.defaultView;
    if (typeof frame.checkVisibility === 'function') {
      if (!frame.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) return false;
    } else {
      const css = view.getComputedStyle(frame);
      if (!frame.getClientRects().length || css.visibility !== 'visible'
          || Number(css.opacity) === 0) return false;
    }
    const box = frame.getBoundingClientRect();
    let [left, top, right, bottom] = [box.left, box.top, box.right, box.bottom];
    for (let el = frame.parentElement ?? frame.parentNode?.host; el && el !== html;
         el = el.parentElement ?? el.parentNode?.host) {
      const css = view.getComputedStyle(el), edge = el.getBoundingClientRect();
      if (/hidden|clip/.test(css.overflowX)) [left, right] = [Math.max(left, edge.left),
                                                             Math.min(right, edge.right)];
      if (/hidden|clip/.test(css.overflowY)) [top, bottom] = [Math.max(top, edge.top),
                                                             Math.min(bottom, edge.bottom)];
    }
    if (right - left < 2 || bottom - top < 2) return false;
    const root = frame.ownerDocument.scrollingElement ?? frame.ownerDocument.documentElement;
    if (bottom + view.scrollY <= 0) return false;
    return view.getComputedStyle(root).direction === 'rtl' || right + view.scrollX > 0;
  };
  const RAW = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'noscript', 'noembed',
                       'noframes', 'iframe', 'plaintext']);
  const SPACE = ' \\t\\n\\f\\r';
  // Where a tag whose name ends at i ends (past its '>'), or -1 if it does not end in s.
  const tagEnd = (s, i) => {
    for (;;) {
      while (i < s.length && (SPACE + '/').includes(s[i])) i++;
      if (i >= s.length) return -1;
      if (s[i] === '>') return i + 1;
      i++;
      while (i < s.length && !(SPACE + '/>=').includes(s[i])) i++;
      while (i < s.length && SPACE.includes(s[i])) i++;
      if (i >= s.length) return -1;
      if (s[i] !== '=') continue;
      i++;
      while (i < s.length && SPACE.includes(s[i])) i++;
      if (i >= s.length) return -1;
      const quote = s[i];
      if (quote === '"' || quote === "'") {
        const end = s.indexOf(quote, i + 1);
        if (end < 0) return -1;
        i = end + 1;
      } else if (quote === '>') return i + 1;
      else while (i < s.length && !(SPACE + '>').includes(s[i])) i++;
    }
  };
  // How much of s (markup cut anywhere) leaves no tag, comment or raw-text element open.
  const whole = s => {
    const next = /<(?:!|\\/?[A-Za-z])/g;
    for (;;) {
      const found = next.exec(s);
      if (!found) return s.length;
      const lt = found.index;
      let end;
      if (s.startsWith('<!--', lt)) {
        if (s[lt + 4] === '>') end = lt + 5;
        else if (s.startsWith('->', lt + 4)) end = lt + 6;
        else {
          const ends = [s.indexOf('-->', lt + 4), s.indexOf('--!>', lt + 4)].filter(e => e >= 0);
          if (!ends.length) return lt;
          const e = Math.min(...ends);
          end = e + (s.startsWith('-->', e) ? 3 : 4);
        }
      } else if (s[lt + 1] === '!') {
        end = s.indexOf('>', lt);
        if (end < 0) return lt;
        end += 1;
      } else {
        const close = s[lt + 1] === '/', from = lt + (close ? 2 : 1);
        let stop = from;
        while (stop < s.length && !(SPACE + '/>').includes(s[stop])) stop++;
        const name = s.slice(from, stop).toLowerCase();
        end = tagEnd(s, stop);
        if (end < 0) return lt;
        if (!close && RAW.has(name)) {
          if (name === 'plaintext') return lt;
          const closer = new RegExp('</' + name + '[\\t\\n\\f\\r />]', 'ig');
          closer.lastIndex = end;
          const shut = closer.exec(s);
          if (!shut) return lt;
          end = tagEnd(s, shut.index + 2 + name.length);
          if (end < 0) return lt;
        }
      }
      next.lastIndex = end;
    }
  };
  let cut = false;  // whether any of the DOM (a frame's included) was left out for the cap
  const markup = (host, room, depth) => {
    const roots = [], frames = [];
    collect(host, roots, frames);
    const live = [];
    for (const frame of depth < MAX_FRAME_DEPTH ? frames : []) {
      const doc = frame.contentDocument;
      if (!doc || !doc.body || doc.defaultView?.origin !== window.origin) continue;
      if (!shown(frame)) continue;
      frame.setAttribute(mark, String(live.length));
      marked.push(frame);
      live.push(doc);
    }
    const own = roots.length && typeof host.getHTML === 'function'
      ? host.getHTML({shadowRoots: roots}) : host.innerHTML;
    const places = [];
    live.forEach((doc, n) => {
      const tag = ' ' + mark + '="' + n + '"', at = own.indexOf(tag);
      if (at >= 0) places.push({doc, at, tag});
    });
    places.sort((a, b) => a.at - b.at);
    const closer = /<\\/iframe[\\t\\n\\f\\r />]/ig;
    // The marks' length in the markup after each frame, which the read drops.
    const after = places.map(() => 0);
    for (let n = places.length - 2; n >= 0; n--) after[n] = after[n + 1] + places[n + 1].tag.length;
    let out = '', at = 0;
    for (const [n, place] of places.entries()) {
      if (place.at < at) continue;
      closer.lastIndex = place.at;
      const shut = closer.exec(own);
      const end = shut ? tagEnd(own, shut.index + '</iframe'.length) : -1;
      if (end < 0) continue;
      out += unmark(own.slice(at, place.at)) + unmark(own.slice(place.at + place.tag.length, end));
      at = end;
      const left = room - out.length - (own.length - at - after[n]) - '<div></div>'.length;
      if (left <= 0) { cut = true; break; }
      const full = markup(place.doc.body, left, depth + 1), inner = full.slice(0, left);
      const kept = whole(inner);
      if (kept < full.length) cut = true;
      out += '<div>' + inner.slice(0, kept) + '</div>';
    }
    return out + unmark(own.slice(at));
  };
  const open = '<!DOCTYPE html><html>', close = '</html>';
  let text;
  try {
    text = open + markup(html, MAX_DOM_CHARS - open.length - close.length, 0) + close;
  } finally {
    for (const frame of marked) frame.removeAttribute(mark);
  }
  const over = text.length > MAX_DOM_CHARS;
  return {type, html: over ? text.slice(0, MAX_DOM_CHARS) : text, cut: cut || over};
})()""".replace("MAX_DOM_CHARS", str(MAX_DOM_CHARS))
_SERIALIZE = _SERIALIZE.replace("MAX_FRAME_DEPTH", str(_FRAME_DEPTH))

# How long one read of the DOM may take (a DOM of 300,000 elements is read in about a second).
_DOM_READ_S = 5.0
# What a read of a page that is navigating says, from Playwright or the DevTools protocol.
_NAVIGATING = ("navigating", "context was destroyed", "Cannot find context")


async def _dom_of(page: Any) -> tuple[str, bool]:
    """The page's DOM, serialized as :data:`_SERIALIZE` says, and whether it was cut at
    :data:`MAX_DOM_CHARS`."""
    from playwright.async_api import Error as PlaywrightError

    session = await page.context.new_cdp_session(page)
    try:
        frames = await session.send("Page.getFrameTree")
        world = await session.send(
            "Page.createIsolatedWorld",
            {"frameId": frames["frameTree"]["frame"]["id"], "worldName": "webward-read"},
        )
        result = await session.send(
            "Runtime.evaluate",
            {
                "expression": _SERIALIZE,
                "contextId": world["executionContextId"],
                "returnByValue": True,
            },
        )
    finally:
        with contextlib.suppress(PlaywrightError):
            await session.detach()
    if "exceptionDetails" in result:  # the page moved on under it: read again
        raise PlaywrightError(f"Execution context was destroyed: {result['exceptionDetails']}")
    value = result.get("result", {}).get("value")
    if not isinstance(value, dict):
        return "", False
    if value.get("type") == "application/pdf":
        # Chromium's PDF viewer draws nothing headless (a blank picture) and has no text in
        # its DOM, while a plain read hands the PDF to the model as a document.
        raise Refused(
            "refused: the address is a PDF, which the headless browser shows as a blank "
            "page; read it without a screenshot, which hands the PDF over as a document",
            code="unsupported_type",
            reason=Reason.UNSUPPORTED_TYPE,
        )
    html = value.get("html")
    return (html, value.get("cut") is True) if isinstance(html, str) else ("", False)


async def _settled_content(page: Any, timeout_s: float) -> tuple[str, bool]:
    """The page's DOM (:func:`_dom_of`) once a navigation it started (a meta refresh, a
    script's ``location`` on load) has settled: its DOM cannot be read mid-navigation. A page
    that is still navigating after three such waits keeps navigating itself away."""
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    unanswered = 0  # reads the page never answered (moved on, or its scripts held it)
    for _ in range(3):
        try:
            # A read the page navigates away from may never be answered: bounded, then read
            # again once the navigation has loaded. A read between two of its navigations
            # (its address changed under it) is no settled page either.
            before = page.url
            with anyio.fail_after(min(timeout_s, _DOM_READ_S)):
                dom = await _dom_of(page)
            if page.url == before:
                return dom
            continue
        except TimeoutError:
            unanswered += 1
            continue  # no answer: the page moved on already, so read its next DOM at once
        except PlaywrightError as exc:
            if not any(words in str(exc) for words in _NAVIGATING):
                raise
        with contextlib.suppress(PlaywrightTimeout):
            await page.wait_for_load_state("load", timeout=timeout_s * 1000)
    if unanswered == 3:  # an alert() loop, a script that never yields: no navigation at all
        raise UpstreamError(
            "the page's scripts kept the browser from reading it (a dialog or a script that "
            "never lets go); read it without the browser (a plain read)",
            reason=Reason.RENDER,
        )
    raise UpstreamError(
        "the page kept navigating itself away as it rendered, so it has no settled page to "
        "read; read it without the browser (a plain read) or read where it leads",
        reason=Reason.RENDER,
    )


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    scheme = parts.scheme.lower()
    default = {"http": 80, "https": 443}.get(scheme)
    host = (parts.hostname or "").rstrip(".").lower()
    with contextlib.suppress(ValueError):
        # One address, one spelling: the browser writes [::ffff:7f00:1] where the guard
        # wrote [::ffff:127.0.0.1], and a page that stayed home read as sent elsewhere.
        host = ip_text(ipaddress.ip_address(host))
    return scheme, host, port or default


def _same_site(url: str, rendered: str) -> None:
    """Refuse the rendering of a page that navigated itself to another origin (a script's
    ``location``, a meta refresh): its text and screenshot are that site's, and would be filed
    under this URL, in the result, the audit and the cache. The requests it made went through
    the gate all the same. A page that changes its own path (a router's ``pushState``, a
    redirect within its site) stays on its origin, and its rendering stands."""
    if _origin(rendered) == _origin(url):
        return
    if not rendered.lower().startswith(("http://", "https://")):
        # about:blank, a blob: or data: document the page made, a browser's error page: no
        # address anyone can read, so the next step is the plain read, not "that address".
        raise UpstreamError(
            "the page replaced itself in the browser with a document that has no address to "
            f"read ({quoted(drop_userinfo(rendered), 80)}) as it rendered; read the page "
            "without the browser (a plain read)",
            reason=Reason.RENDER,
        )
    raise UpstreamError(
        f"the page sent the browser on to another site ({quoted(drop_userinfo(rendered))}) "
        "as it rendered, so what it showed is not this page's; read that address itself if "
        "it is wanted",
        reason=Reason.RENDER,
    )


async def _load(page: Any, url: str, gate: Gate, timeout_s: float, read_by: float) -> None:
    """Open ``url`` and wait for its load event, or only until the render's request cap is
    spent (a page asking for hundreds of subresources would otherwise hold the render to its
    deadline, every further request refused), or until ``read_by``."""
    timeout_ms = timeout_s * 1000
    await page.goto(url, wait_until="commit", timeout=timeout_ms)

    async def loaded(scope: anyio.CancelScope) -> None:
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        # A subresource that never arrives (a hung tracking pixel) keeps the load event from
        # firing: past the load's bound, or read_by, the page is read (and pictured) as it
        # stands.
        with contextlib.suppress(PlaywrightTimeout), anyio.move_on_at(read_by):
            await page.wait_for_load_state("load", timeout=timeout_ms)
        scope.cancel()

    async def capped(scope: anyio.CancelScope) -> None:
        await gate.exhausted.wait()
        scope.cancel()

    from ._proxy import ungrouped

    # The load's own error (a timeout, a crash), not the group around it: the render words it.
    with ungrouped():
        async with anyio.create_task_group() as tg:
            tg.start_soon(loaded, tg.cancel_scope)
            tg.start_soon(capped, tg.cancel_scope)


# How often a render's memory is looked at: a page can allocate about 5 GB a second, so a
# browser is stopped within a few hundred MB of its bound.
_MEMORY_POLL_S = 0.05


@contextlib.asynccontextmanager
async def _memory_bound(profile: str, limit: int) -> AsyncIterator[None]:
    """Run the block while the render's browser holds at most ``limit`` bytes (the private
    memory of its processes together: :func:`_browser_memory`); past that, the browser is
    killed, the block cancelled, and the render fails in one sentence. Chromium bounds each
    renderer at 16 GB and a page makes a renderer for each site it frames: a page filling
    array buffers took 3.4 GB (as much as it asked for) of a machine shared with everything
    else that runs there."""
    from ._proxy import ungrouped

    over: list[int] = []

    async def watch(scope: anyio.CancelScope) -> None:
        ours: dict[int, bool] = {}
        while True:
            used = await anyio.to_thread.run_sync(_browser_memory, profile, ours)
            if used > limit:
                over.append(used)
                scope.cancel()
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(_kill_browser, profile)
                return
            await anyio.sleep(_MEMORY_POLL_S)

    try:
        with ungrouped():
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch, tg.cancel_scope)
                yield
                tg.cancel_scope.cancel()
    except Exception:
        if not over:  # the block's own error; a killed browser's is the memory's
            raise
    if over:
        raise UpstreamError(
            f"the page took more than {limit / 1024**3:g} GB of memory in the browser as it "
            "rendered, so the browser was stopped; read it without the browser (a plain read)",
            reason=Reason.RENDER,
        )


def _browser_memory(profile: str, ours: dict[int, bool]) -> int:
    """The private (anonymous) resident memory, in bytes, of the render's browser and its
    helpers (:func:`_browser_pids`): script heaps, array buffers, the DOM; not the program's
    shared pages, which every process maps. ``ours`` remembers, across calls, which
    processes are the render's."""
    total = 0
    for pid in _browser_pids(profile, ours):
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"RssAnon:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError):
            continue  # gone, or not ours to read
    return total


def _closing_bound(until: float) -> float:
    """How long closing may take: :data:`_CLOSE_S`, or what is left before the caller's
    deadline ``until`` when that is less, but :data:`_MIN_CLOSE_S` at least."""
    return max(_MIN_CLOSE_S, min(_CLOSE_S, until - anyio.current_time()))


@contextlib.asynccontextmanager
async def _playwright(until: float) -> AsyncIterator[Playwright]:
    """Playwright's driver for one render, stopped even when the render timed out or was
    cancelled (shielded, bounded, within the caller's deadline ``until`` where it can be):
    stopping it kills any browser it launched still running."""
    from playwright.async_api import async_playwright

    manager = async_playwright()
    # A start cut off by a cancellation left the driver it had spawned running, one process
    # more for each render cancelled that early: the start runs in a task of its own, never
    # cancelled. The render waits for it (shielded) up to _CLOSE_S; past that it gives up,
    # and the driver is stopped whenever it has started. A cancellation that came meanwhile
    # is taken at the checkpoint, inside the try, which stops the driver.
    starting = asyncio.get_running_loop().create_task(manager.start())
    with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_S):
        await asyncio.shield(starting)
    if not starting.done():
        starting.add_done_callback(functools.partial(_stop_once_started, manager))
        raise UpstreamError(
            f"the headless renderer did not start within {_CLOSE_S:g} s; read the page "
            "without a screenshot",
            reason=Reason.RENDER,
        )
    pw = starting.result()
    try:
        await anyio.lowlevel.checkpoint()
        yield pw
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(_closing_bound(until)):
            await manager.__aexit__(None, None, None)


#: The stops of drivers that started after their render gave up on them (a reference kept
#: until each is done, as the event loop keeps only a weak one).
_STOPPING: set[asyncio.Task[None]] = set()


def _stop_once_started(manager: Any, started: asyncio.Task[Any]) -> None:
    """Stop the driver of a render that gave up waiting for it, now that it has started."""
    if started.cancelled() or started.exception() is not None:
        return  # no driver runs (the event loop closing cancels what is left)
    stopping = started.get_loop().create_task(manager.__aexit__(None, None, None))
    _STOPPING.add(stopping)
    stopping.add_done_callback(_STOPPING.discard)


async def _close(context: Any, profile: str, until: float) -> None:
    """Close the render's browser and wait for it to exit, also when the render timed out or
    was cancelled (shielded, bounded): Chromium writes to its profile while it shuts down, so
    the profile is removed only after this. An error while closing (a crashed browser) never
    hides the render's own. A browser that has not closed by the caller's deadline ``until``
    (a page that keeps it busy: the close waited its whole bound, 5 s past the read's
    deadline) is killed: its processes, found by the profile only it uses."""
    from playwright.async_api import Error as PlaywrightError

    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(_closing_bound(until)) as closing:
            with contextlib.suppress(PlaywrightError):
                await context.close()
        if closing.cancelled_caught:
            await anyio.to_thread.run_sync(_kill_browser, profile)


def _kill_browser(profile: str) -> None:
    """SIGKILL the render's Chromium and its helpers (:func:`_browser_pids`)."""
    import signal

    for pid in _browser_pids(profile):
        with contextlib.suppress(OSError):  # gone already, or not ours to signal
            os.kill(pid, signal.SIGKILL)


def _browser_pids(profile: str, known: dict[int, bool] | None = None) -> Iterator[int]:
    """The processes whose command line names ``profile`` (``--user-data-dir``): the render's
    Chromium and its helpers, and nothing else (each render has a profile of its own).
    ``known`` remembers, across calls, which processes are."""
    mark = profile.encode()
    known = {} if known is None else known
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid not in known:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    known[pid] = mark in f.read()
            except OSError:
                continue  # gone already, or not ours to read
        if known[pid]:
            yield pid


@contextlib.asynccontextmanager
async def _private_dir() -> AsyncIterator[str]:
    """A fresh private directory for one render, removed afterwards (also when the render
    was cancelled)."""
    root = tempfile.mkdtemp(prefix="webward-")
    try:
        yield root
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_remove, root)


def _remove(root: str) -> None:
    # Chromium's helper processes may still write to the profile for a moment after the
    # browser closed: removal is retried briefly (in a worker thread), and what still cannot
    # be removed is left (it is private) rather than failing a render that worked.
    for _ in range(40):
        try:
            shutil.rmtree(root)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


@dataclass(frozen=True)
class _Launch:
    """How one browser is started: the program, its profile, its environment, its sandbox."""

    executable: str
    profile: str
    env: dict[str, str]
    sandbox: bool


def _prepare(root: str, executable: str) -> _Launch:
    """Lay out one render's private directory under ``root`` (0700, removed afterwards).

    As root, Chromium runs as :data:`UNPRIVILEGED_USER`: a small wrapper in ``root`` (root's
    own, 0700) drops to that user, with no groups or capabilities, and the profile belongs to
    it. The sandbox is on whenever that user may create the namespaces it needs.
    """
    profile = os.path.join(root, "profile")
    os.mkdir(profile, 0o700)
    env = _browser_env(os.environ, profile, _handler_stubs(root))
    if os.geteuid() != 0:
        return _Launch(executable, profile, env, _namespaces_allowed(None))
    try:
        user = pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        raise UpstreamError(
            f"the headless renderer runs as the user {UNPRIVILEGED_USER} when webward runs as "
            "root, and this machine has no such user",
            reason=Reason.RENDER,
        ) from None
    if not os.path.exists(_SETPRIV):
        raise UpstreamError(
            f"the headless renderer needs {_SETPRIV} (Debian package util-linux) to run "
            "Chromium as an unprivileged user when webward runs as root",
            reason=Reason.RENDER,
        )
    os.chmod(root, 0o711)  # the user may pass through to its profile, and see nothing else
    os.chown(profile, user.pw_uid, user.pw_gid)
    wrapper = os.path.join(root, "chromium")
    drop = (
        f"{_SETPRIV} --reuid={user.pw_uid} --regid={user.pw_gid} --clear-groups "
        "--inh-caps=-all --bounding-set=-all --no-new-privs"
    )
    fd = os.open(wrapper, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
    with os.fdopen(fd, "w") as f:
        f.write(f'#!/bin/sh\nexec {drop} -- {shlex.quote(executable)} "$@"\n')
    return _Launch(wrapper, profile, env, _namespaces_allowed((user.pw_uid, user.pw_gid)))


def _handler_stubs(root: str) -> str:
    """``root/bin``, holding a stub for each of :data:`_HANDLERS` (readable and runnable by
    the unprivileged user too; root's, so that user cannot change them)."""
    stubs = os.path.join(root, "bin")
    os.mkdir(stubs)
    os.chmod(stubs, 0o755)
    for name in _HANDLERS:
        path = os.path.join(stubs, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755)
        with os.fdopen(fd, "w") as f:
            f.write(_STUB)
        os.chmod(path, 0o755)  # whatever the umask
    return stubs


def _browser_env(environ: Mapping[str, str], home: str, stubs: str) -> dict[str, str]:
    """The whole environment Chromium gets: a few harmless variables, its own home, config
    and cache inside the render's profile, and the handler stubs first on its PATH (Debian's
    ``/usr/bin/chromium`` is a shell script: the rest of the PATH stays). No key, token or
    webward variable."""
    env = {k: environ[k] for k in _ENV_KEEP if k in environ and not k.startswith("WEBWARD")}
    env["PATH"] = stubs + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env.update(
        HOME=home,
        TMPDIR=home,
        XDG_CONFIG_HOME=os.path.join(home, ".config"),
        XDG_CACHE_HOME=os.path.join(home, ".cache"),
    )
    return env


@functools.cache
def _namespaces_allowed(user: tuple[int, int] | None) -> bool:
    """Whether Chromium's namespace sandbox can start for ``user`` (None: ourselves): probed
    once per process with ``unshare``, as the kernel, its settings and a container's seccomp
    profile all have a say. Without it Chromium runs with ``--no-sandbox`` (docs/render.md)."""
    unshare = shutil.which("unshare", path="/usr/bin:/bin")
    if unshare is None:
        return False
    cmd = [unshare, "--user", "--pid", "--net", "--fork", "true"]
    if user is not None:
        cmd = [_SETPRIV, f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups", *cmd]
    try:
        done = subprocess.run(cmd, env={"PATH": "/usr/bin:/bin"}, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def default_renderer() -> Renderer:
    """Chromium when Debian's chromium and playwright are installed, else plain HTTP."""
    if os.path.exists(CHROMIUM) and importlib.util.find_spec("playwright") is not None:
        return ChromiumRenderer()
    return PlainRenderer()
