"""webward's validating egress proxy: the only way out for the headless renderer.

Chromium is launched with this proxy and no bypass (see ``_render``), so every request a
rendered page makes -- the document, each image, iframe, script, ``fetch()`` and every redirect
hop -- arrives here, as an absolute-form ``GET http://...`` or inside a ``CONNECT host:port``
tunnel. The proxy ends the tunnel's TLS itself (with a throw-away certificate the render's
browser is told to accept) so that it sees each request inside, and sends it on with webward's
own pinned transport, which verifies the origin's certificate with webward's trust store as a
page read does. So every single request, plain or TLS, goes through the :class:`Gate` of the
calling agent: the method (GET and HEAD only), the render's request cap, the literal guard, the
agent's reach policy, robots.txt, the host's own rate limit and circuit breaker, the resolver
with every answer checked, and a connection to exactly the validated address.

The proxy listens on 127.0.0.1 (ephemeral port) for one render, and serves only the browser of
that render: each client connection must carry the render's secret (HTTP basic proxy
credentials Playwright hands Chromium), else it gets ``407`` and nothing else. One client
connection carries exactly one request and one relayed response, then it is closed, so every
next request meets the gate again. Every connection has a deadline and the render a byte budget.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hmac
import os
import secrets
import ssl
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Protocol, TypeVar

import anyio
import anyio.abc
from anyio.streams.tls import TLSStream

from . import guard
from ._errors import Reason, Refused, WebwardError
from ._transport import Body, CapFor, header_value

__all__ = ["EgressProxy", "Gate", "open_proxy", "ungrouped"]

_MAX_HEAD = 16 * 1024
_CHUNK = 65536
_MIN_SHARE = 256 * 1024  # the least a body of unknown length may read, budget permitting
_USER = "webward"
_MAX_NOTED = 1000  # URLs an EgressProxy keeps of those it relayed, and of those it refused
_T = TypeVar("_T")
# Request headers that belong to the hop between Chromium and the proxy, or that the
# transport sets itself, not to the origin.
_HOP_HEADERS = frozenset(
    {
        "connection", "keep-alive", "proxy-connection", "proxy-authorization", "host", "te",
        "upgrade", "trailer", "transfer-encoding", "content-length", "accept-encoding",
    }
)  # fmt: skip
# Response headers not relayed: the transport decoded the body and the proxy frames it anew.
# Nor an origin's challenge for credentials (WWW-Authenticate): a render has none to give,
# and Chromium waits for someone to type them into a prompt no one sees, so one image
# answered 401 with a challenge held its page's load to the load's bound (12 s). Without the
# challenge a 401 is a failed response like any other, and the page loads.
_HOP_RESPONSE_HEADERS = frozenset(
    {
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "te", "upgrade",
        "trailer", "transfer-encoding", "content-length", "content-encoding", "alt-svc",
        "www-authenticate",
    }
)  # fmt: skip


class Gate(Protocol):
    """Decides about every request of one render, for one caller, and sends the allowed ones."""

    #: Set once the render's request cap has refused a request: nothing more will load.
    exhausted: anyio.Event

    async def check_tunnel(self, url: str) -> guard.ParsedURL:
        """The decision for a ``CONNECT`` target (``https://host:port/``): the literal guard
        and the policy; raises ``WebwardError`` when refused."""
        ...

    def refuse(self, url: str, exc: WebwardError) -> None:
        """Note a request the proxy refused on its own (an upgrade, no TLS in a tunnel) where
        the gate notes its own refusals: in the call's record."""
        ...

    async def request(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], cap_for: CapFor
    ) -> Body:
        """Decide about one request (method, cap, guard, policy, robots.txt, limits) and send
        it through the pinned transport; the body is decoded and at most as long as
        ``cap_for`` (asked once the response's head has arrived) allows.
        Raises ``WebwardError`` when refused or when the origin cannot be reached."""
        ...


@dataclass
class EgressProxy:
    """A running proxy: its port and secret, and what it relayed and refused (for the tests;
    the first :data:`_MAX_NOTED` of each)."""

    port: int
    password: str = field(repr=False)
    username: str = _USER
    refused: list[tuple[str, str]] = field(default_factory=list)  # (target, reason)
    allowed: list[str] = field(default_factory=list)
    unauthenticated: int = 0  # client connections turned away with 407
    bytes_left: int = 0  # of the render's budget, not yet read nor set aside for a body

    def noted(self, into: list[_T], entry: _T) -> None:
        """Keep ``entry`` in one of the lists above while it holds fewer than
        :data:`_MAX_NOTED`: a page firing requests past the render's cap (each refused at
        once) kept every URL (of up to 16 KB) in the server's memory for the render."""
        if len(into) < _MAX_NOTED:
            into.append(entry)

    def reserve(self, headers: Sequence[tuple[str, str]]) -> int:
        """Set aside, from what is left of the budget, what one response may read: its
        declared length when it is not compressed (the decoded body is that long), else a
        quarter of what is left (at least 256 KiB of it). Set aside when its head arrives, so
        that the responses being read at once (Chromium opens dozens) never hold more than
        the budget between them; what a body did not use is given back (:meth:`settle`)."""
        left = max(self.bytes_left, 0)
        declared = header_value(headers, "content-length")
        plain = header_value(headers, "content-encoding") in (None, "identity")
        if declared is not None and declared.isdigit() and plain:
            share = min(int(declared), left)
        else:
            share = min(left, max(left // 4, _MIN_SHARE))
        self.bytes_left -= share
        return share

    def settle(self, reserved: int, used: int) -> None:
        self.bytes_left += max(reserved - used, 0)

    @property
    def server(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def playwright_proxy(self) -> dict[str, str]:
        """Playwright's ``proxy=`` for this render: no bypass, ever, and the render's secret."""
        return {"server": self.server, "username": self.username, "password": self.password}

    def authorization(self) -> str:
        """The ``Proxy-Authorization`` value this proxy accepts."""
        token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode("ascii")
        return f"Basic {token}"


@asynccontextmanager
async def open_proxy(
    gate: Gate, *, deadline_s: float = 20.0, max_bytes: int = 20_000_000
) -> AsyncIterator[EgressProxy]:
    """Run the proxy on 127.0.0.1 (ephemeral port) for the block."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
    proxy = EgressProxy(port, secrets.token_urlsafe(32), bytes_left=max_bytes)
    expected = proxy.authorization().encode("ascii")

    async def handle(client: anyio.abc.SocketStream) -> None:
        async with client:
            with anyio.move_on_after(deadline_s):
                # Chromium hung up or a handshake broke: there is nothing left to answer.
                with contextlib.suppress(
                    OSError,
                    ssl.SSLError,
                    anyio.BrokenResourceError,
                    anyio.ClosedResourceError,
                    anyio.EndOfStream,  # it closed the tunnel mid-handshake (a cert it refused)
                ):
                    await _serve_one(client, gate, proxy, expected)

    # The task group wraps whatever the block raised (a Playwright error, a timeout): the
    # caller gets that exception itself, so its own handlers still match.
    with ungrouped():
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, handle, tg)
            try:
                yield proxy
            finally:
                tg.cancel_scope.cancel()  # the listener closes once its task has stopped


@contextlib.contextmanager
def ungrouped() -> Iterator[None]:
    """A task group's failure inside the block raised as the one exception it stands for
    (:func:`single_exception`), not as the group around it."""
    try:
        yield
    except BaseExceptionGroup as group:
        exc = single_exception(group)
        raise exc from exc.__cause__


def single_exception(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a task group's failure stands for: an interrupt or exit first
    (never hidden), then the first real error, else the cancellation (never swallowed)."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop(0)
        if isinstance(exc, BaseExceptionGroup):
            pending[:0] = exc.exceptions
        else:
            leaves.append(exc)
    cancelled = anyio.get_cancelled_exc_class()
    for leaf in leaves:
        if not isinstance(leaf, (Exception, cancelled)):
            return leaf
    for leaf in leaves:
        if isinstance(leaf, Exception):
            return leaf
    return leaves[0]


@dataclass(frozen=True)
class _Head:
    method: str
    target: str
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None


async def _read_head(stream: anyio.abc.ByteStream) -> _Head | None:
    """One request head; None if the client hung up or sent something that is not HTTP/1."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        try:
            buf += await stream.receive(_CHUNK)
        except anyio.EndOfStream:
            return None
        if len(buf) > _MAX_HEAD:
            return None
    head = buf.partition(b"\r\n\r\n")[0]
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return None
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers.append((name.strip(), value.strip()))
    return _Head(parts[0].upper(), parts[1], tuple(headers))


async def _answer(
    client: anyio.abc.ByteStream,
    status: int,
    text: str,
    extra: tuple[tuple[str, str], ...] = (),
) -> None:
    # An error is answered with its ``for_model``: a refused frame or navigation shows the text
    # in the page the model reads, so it carries no operator step.
    body = (text + "\n").encode("utf-8", "replace")
    head = [f"HTTP/1.1 {status} {_phrase(status)}", "Content-Type: text/plain; charset=utf-8"]
    head += [f"{k}: {v}" for k, v in extra]
    head += [f"Content-Length: {len(body)}", "Connection: close"]
    await client.send(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Status"


async def _serve_one(
    client: anyio.abc.SocketStream, gate: Gate, proxy: EgressProxy, expected: bytes
) -> None:
    head = await _read_head(client)
    if head is None:
        await _answer(client, 400, "webward proxy: malformed request")
        return
    given = (head.header("proxy-authorization") or "").encode("latin-1", "replace")
    if not hmac.compare_digest(given, expected):
        # Only the render's own browser knows the secret; anything else on this machine
        # that finds the port is turned away before any decision or connection.
        proxy.unauthenticated += 1
        await _answer(
            client,
            407,
            "webward proxy: authentication required",
            (("Proxy-Authenticate", 'Basic realm="webward"'),),
        )
        return
    if head.method == "CONNECT":
        url = f"https://{head.target}/"  # host:port; a path or user info fails the guard's parse
        try:
            parsed = await gate.check_tunnel(url)
            if parsed.target != "/":
                raise Refused(
                    "refused: a CONNECT target must be host:port", reason=Reason.PROXY_TARGET
                )
        except WebwardError as exc:
            _refuse(gate, proxy, url, exc)  # the gate's own refusals are noted once
            await _answer(client, _status_for(exc), exc.for_model)
            return
        await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        # TLS ends here (the browser accepts the render's throw-away certificate); the request
        # inside is decided like a plain one, and sent on over verified TLS by the transport.
        try:
            tls = await TLSStream.wrap(
                client, server_side=True, ssl_context=_server_context(), standard_compatible=False
            )
        except ssl.SSLError as exc:
            # Plain HTTP where TLS must be: a ws:// WebSocket, which Chromium tunnels in
            # clear. Refused as a wss:// one is (the handshake failed: nothing was sent on),
            # and recorded, so that the call's record shows the page tried.
            if exc.reason in ("HTTP_REQUEST", "WRONG_VERSION_NUMBER"):
                _refuse(gate, proxy, url, _no_upgrade())
            raise
        inner = await _read_head(tls)
        if inner is None:
            return
        if not inner.target.startswith("/"):
            await _answer(tls, 400, "webward proxy: expected an origin-form request in a tunnel")
            return
        await _relay(tls, gate, proxy, inner, f"https://{parsed.authority}{inner.target}")
        return
    if not head.target.lower().startswith("http://"):
        await _answer(client, 400, "webward proxy: only CONNECT and http:// URLs")
        return
    await _relay(client, gate, proxy, head, head.target)


async def _relay(
    client: anyio.abc.ByteStream, gate: Gate, proxy: EgressProxy, head: _Head, url: str
) -> None:
    """One request through the gate and one response back; then the connection closes."""
    if head.header("upgrade") is not None:
        exc: WebwardError = _no_upgrade()
        _refuse(gate, proxy, url, exc)
        await _answer(client, 403, exc.for_model)
        return
    headers = [(k, v) for k, v in head.headers if k.lower() not in _HOP_HEADERS]
    reserved = 0

    def cap_for(status: int, response_headers: tuple[tuple[str, str], ...]) -> tuple[int, bool]:
        nonlocal reserved
        reserved = proxy.reserve(response_headers)
        return reserved, True  # cut at the cap: the browser gets what fits

    try:
        body = await gate.request(head.method, url, headers, cap_for)
    except WebwardError as exc:
        # What a failed body read is not known: its share stays spent.
        proxy.noted(proxy.refused, (url, exc.reason))
        await _answer(client, _status_for(exc), exc.for_model)
        return
    proxy.noted(proxy.allowed, url)
    proxy.settle(reserved, len(body.content))
    out = [f"HTTP/1.1 {body.status} {_phrase(body.status)}"]
    out += [f"{k}: {v}" for k, v in body.headers if k.lower() not in _HOP_RESPONSE_HEADERS]
    content = b"" if head.method == "HEAD" else body.content
    if head.method != "HEAD":
        out.append(f"Content-Length: {len(content)}")
    out.append("Connection: close")
    await client.send(("\r\n".join(out) + "\r\n\r\n").encode("latin-1", "replace") + content)


def _no_upgrade() -> Refused:
    return Refused(
        "refused: the renderer does not open WebSockets or other upgraded connections",
        reason=Reason.RENDER_UPGRADE,
    )


def _refuse(gate: Gate, proxy: EgressProxy, url: str, exc: WebwardError) -> None:
    """A refusal of the proxy's own, noted in the call's record as the gate's are."""
    proxy.noted(proxy.refused, (url, exc.reason))
    gate.refuse(url, exc)


def _status_for(exc: WebwardError) -> int:
    if exc.reason == Reason.RENDER_METHOD:
        return 405
    if exc.code == "rate_limited":
        return 429
    if exc.code == "circuit_open":
        return 503
    if isinstance(exc, Refused):
        return 403
    if exc.code == "invalid_input":  # a URL no request may carry (a control character)
        return 400
    return 504 if exc.code == "timeout" else 502


@functools.cache
def _server_context() -> ssl.SSLContext:
    """The TLS context the proxy ends tunnels with: a throw-away self-signed certificate,
    made once per process. Nothing trusts it but the render's browser, which is launched
    to accept any certificate from its one proxy; the origin's own certificate is checked by
    the transport, against webward's trust store."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webward render proxy")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    # ssl loads a certificate only from a file: written to a private directory, loaded, gone.
    with tempfile.TemporaryDirectory(prefix="webward-proxy-") as tmp:
        path = os.path.join(tmp, "proxy.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(
                key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        ctx.load_cert_chain(path)
    return ctx
