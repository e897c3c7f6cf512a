"""webward's validating egress proxy: the only way out for the headless renderer.

Chromium is launched with this proxy and no bypass (see ``_render``), so every request a
rendered page makes -- the document, each image, iframe, script, ``fetch()`` and every redirect
hop -- arrives here as ``CONNECT host:port`` or as an absolute-form ``GET http://...``. Each one
goes through a :class:`Gate`: the literal guard, the calling agent's reach policy, the resolver
seam with every answer checked, and a connection to exactly the validated address. A refused
target gets ``403`` and no connection; TLS stays end-to-end inside the tunnel.

The proxy listens on 127.0.0.1 on an ephemeral port and lives for one render, bound to one
caller's gate. Every connection has a deadline and a byte budget.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol

import anyio
import anyio.abc
import httpcore

from . import guard
from ._errors import Refused, WebwardError

__all__ = ["EgressProxy", "Gate", "open_proxy"]

_MAX_HEAD = 16 * 1024
_CHUNK = 65536
# Request headers that belong to the hop between Chromium and the proxy, not to the origin.
_HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "host", "te"}
)


class Gate(Protocol):
    """Decides about one target for one caller and opens the pinned connection."""

    def check(self, url: str) -> guard.ParsedURL:
        """The guard and policy decision for ``url``; raises ``WebwardError`` when refused."""
        ...

    async def connect(self, url: guard.ParsedURL, timeout: float) -> httpcore.AsyncNetworkStream:
        """Resolve, check every answer, connect to a validated address; raises when refused."""
        ...


@dataclass
class EgressProxy:
    """A running proxy: its port, and what it refused (for the audit trail and the tests)."""

    port: int
    refused: list[tuple[str, str]] = field(default_factory=list)  # (target, reason)
    allowed: list[str] = field(default_factory=list)

    @property
    def server(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@asynccontextmanager
async def open_proxy(
    gate: Gate, *, deadline_s: float = 20.0, max_bytes: int = 20_000_000
) -> AsyncIterator[EgressProxy]:
    """Run the proxy on 127.0.0.1 (ephemeral port) for the block."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
    proxy = EgressProxy(port)

    async def handle(client: anyio.abc.SocketStream) -> None:
        async with client:
            with anyio.move_on_after(deadline_s):
                # Chromium hung up or the upstream broke: there is nothing left to answer.
                with contextlib.suppress(
                    OSError, anyio.BrokenResourceError, anyio.ClosedResourceError
                ):
                    await _serve_one(client, gate, proxy, deadline_s, max_bytes)

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle, tg)
        try:
            yield proxy
        finally:
            tg.cancel_scope.cancel()  # the listener closes once its task has stopped


async def _read_head(client: anyio.abc.SocketStream) -> tuple[bytes, bytes] | None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        try:
            buf += await client.receive(_CHUNK)
        except anyio.EndOfStream:
            return None
        if len(buf) > _MAX_HEAD:
            return None
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


async def _answer(client: anyio.abc.SocketStream, status: int, reason: str, text: str) -> None:
    body = (text + "\n").encode("utf-8", "replace")
    await client.send(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("latin-1")
        + body
    )


async def _serve_one(
    client: anyio.abc.SocketStream,
    gate: Gate,
    proxy: EgressProxy,
    deadline_s: float,
    max_bytes: int,
) -> None:
    got = await _read_head(client)
    if got is None:
        return
    head, rest = got
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        await _answer(client, 400, "Bad Request", "webward proxy: malformed request line")
        return
    method, target, _version = parts
    connect = method.upper() == "CONNECT"
    if connect:
        url = f"https://{target}/"  # host:port; a path or user info fails the guard's parse
    elif target.lower().startswith("http://"):
        url = target
    else:
        await _answer(client, 400, "Bad Request", "webward proxy: only CONNECT and http:// URLs")
        return
    try:
        parsed = gate.check(url)
        if connect and parsed.target != "/":
            raise Refused("refused: a CONNECT target must be host:port", reason="proxy_target")
        upstream = await gate.connect(parsed, deadline_s)
    except WebwardError as exc:
        proxy.refused.append((url, exc.reason))
        status, why = (403, "Forbidden") if isinstance(exc, Refused) else (502, "Bad Gateway")
        await _answer(client, status, why, exc.message)
        return
    proxy.allowed.append(url)
    try:
        if connect:
            await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            if rest:
                await upstream.write(rest, timeout=deadline_s)
            await _pump(client, upstream, deadline_s, max_bytes, both_ways=True)
            return
        # Plain HTTP: exactly one request goes upstream (head and a Content-Length body), then
        # only the answer flows back. A second request on this connection, perhaps for another
        # host, must never reach the address that was checked for the first.
        length = _content_length(lines[1:])
        if length is None or length > max_bytes:
            await _answer(
                client,
                411,
                "Length Required",
                "webward proxy: request bodies need a Content-Length",
            )
            return
        body = rest[:length]
        while len(body) < length:
            body += await client.receive(min(_CHUNK, length - len(body)))
        await upstream.write(_origin_request(method, parsed, lines[1:]) + body, timeout=deadline_s)
        await _pump(client, upstream, deadline_s, max_bytes, both_ways=False)
    finally:
        await upstream.aclose()


def _content_length(header_lines: list[str]) -> int | None:
    """The request body's length: 0 without a body, None if it is chunked or unreadable."""
    length = 0
    for line in header_lines:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "transfer-encoding":
            return None
        if name == "content-length":
            if not value.strip().isdigit():
                return None
            length = int(value.strip())
    return length


def _origin_request(method: str, url: guard.ParsedURL, header_lines: list[str]) -> bytes:
    """The absolute-form request rewritten for the origin: origin-form target, the checked
    host as ``Host``, one request per connection (each next request meets the gate again)."""
    out = [f"{method} {url.target} HTTP/1.1", f"Host: {url.authority}"]
    for line in header_lines:
        name = line.split(":", 1)[0].strip().lower()
        if name and name not in _HOP_HEADERS:
            out.append(line)
    out.append("Connection: close")
    return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1")


async def _pump(
    client: anyio.abc.SocketStream,
    upstream: httpcore.AsyncNetworkStream,
    deadline_s: float,
    max_bytes: int,
    *,
    both_ways: bool,
) -> None:
    """Copy bytes until either side closes or the byte budget is spent: both ways for a
    tunnel, only upstream to client once a plain request has been sent."""
    budget = [max_bytes]

    def spend(n: int) -> bool:
        budget[0] -= n
        return budget[0] >= 0

    async def up(scope: anyio.CancelScope) -> None:
        try:
            while True:
                data = await client.receive(_CHUNK)
                if not spend(len(data)):
                    break
                await upstream.write(data, timeout=deadline_s)
        except (anyio.EndOfStream, anyio.BrokenResourceError, httpcore.NetworkError):
            pass
        scope.cancel()

    async def down(scope: anyio.CancelScope) -> None:
        try:
            while True:
                data = await upstream.read(_CHUNK, timeout=deadline_s)
                if not data or not spend(len(data)):
                    break
                await client.send(data)
        except (anyio.BrokenResourceError, httpcore.NetworkError, httpcore.TimeoutException):
            pass
        scope.cancel()

    async with anyio.create_task_group() as tg:
        if both_ways:
            tg.start_soon(up, tg.cancel_scope)
        tg.start_soon(down, tg.cancel_scope)
