"""The renderer seam: plain HTTP, or headless Chromium behind webward's egress proxy.

``ChromiumRenderer`` launches Debian's Chromium through Playwright for one render and closes it
afterwards. Every byte Chromium sends goes through :mod:`webward._proxy`, bound to the calling
agent's gate, so a rendered page's images, iframes, scripts and redirects face the same guard,
policy, address table and pinning as a page read (see REFERENCE.md, "Headless Chromium without
opening an SSRF hole"). One browser per render rather than one per ``Web``: the proxy carries
one caller's policy, a fresh profile leaves no cookies or cache between agents, and a hung or
crashed browser is never shared.

Chromium itself is kept small: it gets a scrubbed environment (no API keys, no ``WEBWARD_*``
variables: see :func:`_browser_env`), its own background traffic switched off (component
updates, sync and accounts, safe browsing, domain reliability, metrics, pings; whatever still
tries goes through the proxy, is decided and audited like a page request), and it runs
sandboxed where the kernel allows. When webward runs as root, Chromium runs as the
unprivileged user ``nobody`` (through ``setpriv``), so that its sandbox can be on; without
user namespaces the sandbox is off and that is said in the docs (docs/render.md).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ._errors import Reason, Refused, UpstreamError

if TYPE_CHECKING:  # the egress proxy is imported by a render, not by every read
    from ._proxy import Gate

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
        )
    ),
)  # fmt: skip
# The only variables Chromium is given (see _browser_env); the rest of webward's environment,
# API keys and WEBWARD_* included, never reaches it.
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "TZ", "FONTCONFIG_PATH")
#: The user Chromium runs as when webward runs as root.
UNPRIVILEGED_USER = "nobody"
_SETPRIV = "/usr/bin/setpriv"


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
                reason=Reason.RENDERER_UNSAFE,
            )
        if not url.startswith(("http://", "https://")):
            raise Refused(
                "refused: only http:// and https:// pages are rendered", reason=Reason.SCHEME
            )
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
                reason=Reason.RENDER_TIMEOUT,
            ) from None

    async def _render(self, url: str, screenshot: bool, gate: Gate, deadline: float) -> Rendered:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout
        from playwright.async_api import async_playwright

        from ._proxy import open_proxy

        try:
            async with _private_dir() as root:
                launch = await anyio.to_thread.run_sync(_prepare, root, self._executable)
                env: dict[str, str | float | bool] = dict(launch.env)
                async with (
                    open_proxy(gate, deadline_s=deadline, max_bytes=self._proxy_max_bytes) as proxy,
                    async_playwright() as pw,
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
                        service_workers="block",
                        accept_downloads=False,
                        viewport={"width": VIEWPORT["width"], "height": VIEWPORT["height"]},
                        device_scale_factor=1,
                    )
                    try:
                        page = await context.new_page()
                        await _load(page, url, gate, self._goto_timeout_s)
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
                f"the headless renderer failed ({first.rstrip('.')})", reason=Reason.RENDER
            ) from None
        return Rendered(html=html, screenshot_png=png)


async def _load(page: Any, url: str, gate: Gate, timeout_s: float) -> None:
    """Open ``url`` and wait for its load event, or only until the render's request cap is
    spent (a page asking for hundreds of subresources would otherwise hold the render to its
    deadline, every further request refused)."""
    timeout_ms = timeout_s * 1000
    await page.goto(url, wait_until="commit", timeout=timeout_ms)

    async def loaded(scope: anyio.CancelScope) -> None:
        await page.wait_for_load_state("load", timeout=timeout_ms)
        scope.cancel()

    async def capped(scope: anyio.CancelScope) -> None:
        await gate.exhausted.wait()
        scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(loaded, tg.cancel_scope)
        tg.start_soon(capped, tg.cancel_scope)


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
    env = _browser_env(os.environ, profile)
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


def _browser_env(environ: Mapping[str, str], home: str) -> dict[str, str]:
    """The whole environment Chromium gets: a few harmless variables, and its own home,
    config and cache inside the render's profile. No key, token or webward variable."""
    env = {k: environ[k] for k in _ENV_KEEP if k in environ and not k.startswith("WEBWARD")}
    env.setdefault("PATH", "/usr/bin:/bin")
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
