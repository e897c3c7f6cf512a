"""The pinned transport: the only module that opens sockets.

Why httpcore with a custom network backend (and not aiohttp or plain httpx): httpcore hands
every new connection's host and port to one method, ``connect_tcp``, and then does TLS itself
with the *origin's host name* as SNI and for certificate checks. So the backend can resolve the
name once, refuse if any answer is internal, and connect to exactly the validated IP, while
TLS still verifies the name. It takes the URL as explicit components (scheme, host, port,
target), so the host the guard checked is the host that is requested — nothing re-parses the
URL string. It never reads proxy settings from the environment.

Bodies are read raw and decoded here, with an output limit on every decompression step, so a
gzip or brotli bomb stops at the cap with bounded memory.
"""

from __future__ import annotations

import os
import ssl
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import brotli
import httpcore

from . import guard
from ._addresses import quoted
from ._content import human_size
from ._errors import Reason, Refused, UpstreamError, operator_step
from ._resolver import unresolved
from ._telemetry import http_span, span

__all__ = ["Body", "Connector", "PinnedBackend", "Transport"]

USER_AGENT = "webward/0.1 (+https://github.com/webward/webward)"


class Connector(Protocol):
    """Opens a TCP stream to an IP address (httpcore's network backend shape)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream: ...


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """Resolves once, refuses internal answers, connects to exactly a validated address."""

    def __init__(
        self, resolver: Any, allow_networks: Sequence[Any] = (), connector: Connector | None = None
    ) -> None:
        self._resolver = resolver
        self._allow = tuple(allow_networks)
        self._connector: Connector = connector or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        with span("connect", {"server.address": host, "server.port": port}):
            return await self._connect(host, port, timeout, local_address, socket_options)

    async def _connect(
        self,
        host: str,
        port: int,
        timeout: float | None,
        local_address: str | None,
        socket_options: Any,
    ) -> httpcore.AsyncNetworkStream:
        """DNS, every answer checked, then a connection to the first address that answers."""
        answers = await self._resolver.resolve(host)
        if not answers:  # a resolver that answers nothing, instead of raising as it should
            raise unresolved(host)
        # Every answer must pass, not just the one we pick: a mixed answer is an attack.
        for ip in answers:
            guard.assert_ip_allowed(host, ip, self._allow)
        last: Exception | None = None
        for ip in answers:
            try:
                stream = await self._connector.connect_tcp(
                    ip,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
                return _Metered(stream, host)
            except (httpcore.ConnectError, httpcore.ConnectTimeout, OSError) as exc:
                last = exc
        if last is None:  # not reached: answers is not empty, and each pass returns or sets it
            raise unresolved(host)
        raise last

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> Any:
        raise Refused("refused: unix sockets are never opened", reason=Reason.SCHEME)

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


# What a server may send for one request before its response's headers are read: the headers
# (httpcore's h11 takes 100 KiB at most) and a few interim responses (103 Early Hints). Parsing
# is paid per event: an endless stream of interim responses took 11 s of CPU a read, bounded
# only by the deadline, and never reached the body's cap.
_HEAD_WIRE_BYTES = 256 * 1024
# Pieces of one body (a chunk of a chunked body, a read of any other): one piece costs a parse
# and a Python step whatever its size, and 1 MB sent in 1-byte chunks took 5 s of CPU on the
# event loop. Past this many, each further piece must bring 8 bytes on average: a list
# streamed a line a chunk (70,000 lines of 8 bytes) is read, 1-byte chunks stop near 75,000.
_MAX_PIECES = 65_536
_PIECE_BYTES = 8
# Reads of the connection for one request: each costs a wake-up and a parse whatever it
# brings, and a server that sends a byte a segment (chunk framing without data, interim
# responses, a body) under every byte bound kept a read busy, 4 to 6 s of CPU, until its
# deadline. Reads past this many, and past _READS_PER_S for each second since the request
# went out, must have brought 64 bytes each on average: a server flushing a row of a CSV
# export at a time (30 bytes every 0.25 ms) is read, one sending a byte at a time as fast as
# it can stops within a second.
_MAX_READS = 16_384
_READS_PER_S = 4_000
_READ_BYTES = 64


class _Metered(httpcore.AsyncNetworkStream):
    """A connection's stream that bounds what the server sends for each request (the counts
    restart with each write of a request): its bytes may not pass a budget,
    :data:`_HEAD_WIRE_BYTES` until the response's headers are read, then the body's cap on
    top (:meth:`allow_body`); nor its reads the bound of :data:`_MAX_READS`. So framing that
    carries no page (chunk extensions, empty compressed blocks, interim responses, a byte a
    segment) ends the read rather than costing CPU until the deadline."""

    def __init__(self, stream: httpcore.AsyncNetworkStream, host: str) -> None:
        self._stream = stream
        self._host = host
        self._spent = False  # the server sent bytes past a response's end (:meth:`spend`)
        self._read = self._reads = 0
        self._since = 0.0  # when the request was written (time.monotonic())
        self._cap: int | None = None  # the body's, once the headers are read
        self._budget = _HEAD_WIRE_BYTES

    def allow_body(self, cap: int) -> None:
        """The response's headers are read, and its body is capped at ``cap`` (decoded): the
        head, the cap, and a quarter more for framing (a chunk's size line) and compressed
        data that decodes to little; real pages' framing is under 1%."""
        self._cap, self._budget = cap, _HEAD_WIRE_BYTES + cap + cap // 4

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._stream.read(max_bytes, timeout)
        self._read += len(data)
        self._reads += 1
        if (
            self._reads > _MAX_READS
            and self._read < self._reads * _READ_BYTES
            and self._reads > _MAX_READS + _READS_PER_S * (time.monotonic() - self._since)
        ):
            raise _wasteful(
                self._host,
                f"its answer a few bytes at a time ({self._reads:,} reads of "
                f"{self._read / self._reads:.0f} bytes on average)",
            )
        if self._read > self._budget:
            raise _wasteful(
                self._host,
                f"over {human_size(_HEAD_WIRE_BYTES)} before its answer's body (headers and "
                "interim responses)"
                if self._cap is None
                else "far more framing and compressed data than a body within its "
                f"{human_size(self._cap)} cap needs",
            )
        return data

    def spend(self) -> None:
        """Never carry another request: the server sent bytes past its response's end, which
        wait in the connection's buffer and would be read as the next request's answer
        (another path's, another agent's). httpcore closes an idle connection whose stream is
        readable (the server hung up, it assumes) before it could be reused: so is this one."""
        self._spent = True

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if self._spent:
            # Should httpcore ever reuse it anyway: a connection it may not use (its own
            # signal; a write error would be swallowed and the buffered bytes read), so the
            # request goes out on a new connection.
            raise httpcore.ConnectionNotAvailable()
        self._read = self._reads = 0  # a new request
        self._since = time.monotonic()
        self._cap, self._budget = None, _HEAD_WIRE_BYTES
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        tls = await self._stream.start_tls(ssl_context, server_hostname, timeout)
        return _Metered(tls, self._host)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable" and self._spent:
            return True
        return self._stream.get_extra_info(info)


def _wasteful(host: str, what: str) -> UpstreamError:
    return UpstreamError(
        f"{host} sent {what}, more than any page needs, so webward stopped reading it",
        reason=Reason.PROTOCOL,
    )


class _Decoder(Protocol):
    def feed(self, data: bytes, limit: int) -> bytes:
        """Decode ``data``, returning at most ``limit`` bytes (more input may stay buffered)."""
        ...

    @property
    def finished(self) -> bool:
        """Whether the encoded stream reached its end (a cut one did not)."""
        ...


class _Identity:
    finished = True  # a plain body has no end marker of its own: Content-Length tells

    def feed(self, data: bytes, limit: int) -> bytes:
        return data[:limit]


_GZIP_MAGIC = b"\x1f\x8b"


class _Zlib:
    def __init__(self, wbits: int) -> None:
        self._wbits = wbits
        self._d = zlib.decompressobj(wbits)
        self._first = wbits != -zlib.MAX_WBITS and wbits < 16
        # RFC 1952: a gzip body may be several members back to back (gzip -d and Python's
        # gzip module decode them all). Bytes after a member's end wait here until two of them
        # tell whether a next member starts; anything else after the end is ignored, as ever.
        self._members = wbits > 16
        self._after_end = b""
        self._ignore_rest = False
        # Until the zlib header's two bytes are in, a stream cannot be told from raw deflate:
        # a first byte that arrives alone waits here.
        self._head = b""

    @property
    def finished(self) -> bool:
        return self._d.eof

    def feed(self, data: bytes, limit: int) -> bytes:
        if self._first and len(self._head) + len(data) < 2:
            self._head += data
            return b""
        data, self._head = self._head + data, b""
        # Pieces joined once: a body of thousands of small members appended to one bytes
        # object copied all of it per member (2 s of a blocked event loop for 110 kB).
        pieces: list[bytes] = []
        size = 0
        while data and size < limit and not self._ignore_rest:
            if self._d.eof:
                self._after_end += data
                data = b""
                if len(self._after_end) < 2:
                    break
                if not self._members or self._after_end[:2] != _GZIP_MAGIC:
                    self._ignore_rest = True
                    break
                # A new member: a new decompressor, under the same limit as the first
                # (``limit`` counts this whole call's output), so a bomb split in members
                # still stops at the cap.
                self._d = zlib.decompressobj(self._wbits)
                data, self._after_end = self._after_end, b""
            piece = self._inflate(data, limit - size)
            pieces.append(piece)
            size += len(piece)
            # Past the end of this member, the rest of the input is the next one's start;
            # short of the limit the decompressor took all of it.
            data = self._d.unused_data if self._d.eof else b""
        return b"".join(pieces)

    def _inflate(self, data: bytes, limit: int) -> bytes:
        try:
            return self._d.decompress(data, limit)
        except zlib.error:
            if self._first:  # servers send raw deflate as "deflate" too: retry raw once
                self._first = False
                self._d = zlib.decompressobj(-zlib.MAX_WBITS)
                return self._inflate(data, limit)
            raise
        finally:
            self._first = False


class _Brotli:
    def __init__(self) -> None:
        self._d = brotli.Decompressor()

    @property
    def finished(self) -> bool:
        return bool(self._d.is_finished())

    def feed(self, data: bytes, limit: int) -> bytes:
        out: bytes = self._d.process(data, output_buffer_limit=limit)
        while len(out) < limit and not self._d.can_accept_more_data():
            more: bytes = self._d.process(b"", output_buffer_limit=limit - len(out))
            if not more:
                break
            out += more
        return out


def _decoder(encoding: str) -> _Decoder:
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        return _Identity()
    if enc in ("gzip", "x-gzip"):
        return _Zlib(16 + zlib.MAX_WBITS)
    if enc == "deflate":
        return _Zlib(zlib.MAX_WBITS)
    if enc == "br":
        return _Brotli()
    raise UpstreamError(
        f"the server sent an unsupported content encoding ({quoted(enc, 40)})",
        reason=Reason.ENCODING,
    )


@dataclass(frozen=True)
class Body:
    """A response read under its cap: decoded bytes, and whether the cap cut it."""

    status: int
    headers: tuple[tuple[str, str], ...]
    content: bytes
    truncated: bool
    wire_bytes: int

    def header(self, name: str) -> str | None:
        return header_value(self.headers, name)


def header_value(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    """The first value of header ``name`` (any case) in ``headers``, or None."""
    name = name.lower()
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


#: Idle keep-alive connections a pool per origin keeps: a few for the next reads of a host,
#: so that 64 pools hold at most 512 idle connections whatever a host's concurrency.
_IDLE_PER_ORIGIN = 8

# cap_for(status, headers) -> (cap in decoded bytes, whether overflow truncates or refuses)
CapFor = Callable[[int, tuple[tuple[str, str], ...]], tuple[int, bool]]


class Transport:
    """Connection pools over a :class:`PinnedBackend`, one small pool per origin.

    httpcore's pool scans every connection it holds on each request; one pool of 100 shared by
    every host made each read pay for all the others' keep-alive connections. A pool per
    origin (scheme, host, port) keeps at most :data:`_IDLE_PER_ORIGIN` idle connections alive;
    the ``max_origins`` most recently used origins keep their pools, and older idle ones are
    closed.

    By default (``per_origin=None``) a pool sets no limit of its own on the connections in
    flight: every request ``Web`` sends holds one of its host's ``[limits]
    per_host_concurrency`` slots (the limiter) meanwhile, and that bounds them. A fixed cap
    here (8) made a larger setting a lie: reads past the cap queued for a connection behind
    stalled ones until their deadline. ``per_origin`` caps them for a caller without a limiter.
    """

    def __init__(
        self,
        backend: PinnedBackend,
        *,
        ssl_context: ssl.SSLContext | None = None,
        per_origin: int | None = None,
        max_origins: int = 64,
    ) -> None:
        self._backend = backend
        self._ssl_context = ssl_context
        self._per_origin = per_origin
        self._idle_per_origin = (
            _IDLE_PER_ORIGIN if per_origin is None else min(per_origin, _IDLE_PER_ORIGIN)
        )
        self._max_origins = max_origins
        self._pools: OrderedDict[tuple[str, str, int], httpcore.AsyncConnectionPool] = OrderedDict()

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), OrderedDict()
        for pool in pools:
            await pool.aclose()

    async def _pool_for(self, url: guard.ParsedURL) -> httpcore.AsyncConnectionPool:
        key = (url.scheme, url.host, url.port)
        pool = self._pools.get(key)
        if pool is not None:
            self._pools.move_to_end(key)
            return pool
        pool = self._pools[key] = httpcore.AsyncConnectionPool(
            ssl_context=self._ssl_context,
            max_connections=self._per_origin,  # None: the host's slots bound what is in flight
            max_keepalive_connections=self._idle_per_origin,
            keepalive_expiry=5.0,
            retries=0,
            network_backend=self._backend,
        )
        if len(self._pools) > self._max_origins:
            # Close the least recently used pool with nothing in flight (a request still
            # connecting holds a connection that is not idle); at most one per new origin.
            for old_key, old in self._pools.items():
                if old_key != key and all(c.is_idle() for c in old.connections):
                    del self._pools[old_key]
                    await old.aclose()
                    break
        return pool

    async def request(
        self,
        method: str,
        url: guard.ParsedURL,
        *,
        cap_for: CapFor,
        headers: Sequence[tuple[str, str]] = (),
        content: bytes | None = None,
        timeout: float,
        read_body: Callable[[int], bool] = lambda status: True,
    ) -> Body:
        """Send one request to ``url`` (already checked) and read its body under the cap.

        No redirects are followed here; the caller decides about each hop.
        """
        with http_span(method, url) as current:
            body = await self._request(method, url, cap_for, headers, content, timeout, read_body)
            current.set_attribute("http.response.status_code", body.status)
        return body

    async def _request(
        self,
        method: str,
        url: guard.ParsedURL,
        cap_for: CapFor,
        headers: Sequence[tuple[str, str]],
        content: bytes | None,
        timeout: float,
        read_body: Callable[[int], bool],
    ) -> Body:
        hdrs = [("Host", url.authority), ("Accept-Encoding", "gzip, deflate, br")]
        # webward's own User-Agent, unless the caller names one (the renderer relays its
        # browser's, so a rendered page sees the browser it runs in).
        if not any(k.lower() == "user-agent" for k, _ in headers):
            hdrs.insert(1, ("User-Agent", USER_AGENT))
        hdrs += [(k, v) for k, v in headers if k.lower() not in ("host", "accept-encoding")]
        if content is not None:
            hdrs.append(("Content-Length", str(len(content))))
        target_url = httpcore.URL(
            scheme=url.scheme.encode(),
            host=url.host.encode(),
            port=url.port,
            target=url.target.encode(),
        )
        extensions = {
            "timeout": {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
        }
        try:
            pool = await self._pool_for(url)
            async with pool.stream(
                method, target_url, headers=hdrs, content=content, extensions=extensions
            ) as resp:
                resp_headers = tuple(
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.headers
                )
                if not read_body(resp.status):
                    return Body(resp.status, resp_headers, b"", False, 0)
                cap, truncate_ok = cap_for(resp.status, resp_headers)
                stream = resp.extensions.get("network_stream")
                if isinstance(stream, _Metered):  # the body's own budget on top of the head's
                    stream.allow_body(cap)
                with span("read"):
                    body = await _read_capped(
                        resp, resp.status, resp_headers, cap, truncate_ok, url
                    )
                # A response read to its end returns its connection to the pool when the
                # block closes: not one that holds bytes past that end. (Every stream the
                # backend opens is a _Metered, TLS included; a cut body's connection is
                # closed by httpcore, its response not being done.)
                if isinstance(stream, _Metered) and _left_bytes_behind(resp):
                    stream.spend()
                return body
        except httpcore.TimeoutException as exc:
            raise UpstreamError(
                f"{url.host} did not answer in time", code="timeout", reason=Reason.TIMEOUT
            ) from exc
        except httpcore.ConnectError as exc:
            # httpcore reports a failed handshake as a connect error wrapping the ssl error;
            # say that it was TLS, so a wrong or untrusted certificate is not read as an outage.
            tls = _ssl_cause(exc)
            if tls is not None:
                raise _tls_error(url, tls) from exc
            raise UpstreamError(
                f"could not connect to {url.authority}", reason=Reason.CONNECT
            ) from exc
        except OSError as exc:
            raise UpstreamError(
                f"could not connect to {url.authority}", reason=Reason.CONNECT
            ) from exc
        except httpcore.RemoteProtocolError as exc:
            raise _remote_protocol_error(url, exc) from exc
        except (httpcore.ReadError, httpcore.WriteError) as exc:
            raise _broken(url) from exc
        except httpcore.ProtocolError as exc:
            raise UpstreamError(
                f"{url.host} sent a malformed HTTP response", reason=Reason.PROTOCOL
            ) from exc


async def _read_capped(
    resp: httpcore.Response,
    status: int,
    headers: tuple[tuple[str, str], ...],
    cap: int,
    truncate_ok: bool,
    url: guard.ParsedURL,
) -> Body:
    encoding = ",".join(v for k, v in headers if k.lower() == "content-encoding")
    encodings = [
        e for e in (p.strip() for p in encoding.split(",")) if e and e.lower() != "identity"
    ]
    if len(encodings) > 1:
        raise UpstreamError(
            "the server sent stacked content encodings, which webward does not decode",
            reason=Reason.ENCODING,
        )
    decoder = _decoder(encodings[0] if encodings else "")
    if not truncate_ok and not encodings:
        length = header_value(headers, "content-length")
        if length is not None and length.isdigit() and int(length) > cap:
            raise _too_large(url, cap)
    out = bytearray()
    wire = pieces = 0
    try:
        async for chunk in resp.aiter_stream():
            wire += len(chunk)
            pieces += 1
            if pieces > _MAX_PIECES + len(out) // _PIECE_BYTES:
                raise _wasteful(
                    url.host, f"its body in {pieces:,} pieces of {len(out) // pieces} bytes"
                )
            # One byte over the cap tells us the body is longer than the cap.
            out += decoder.feed(chunk, cap + 1 - len(out))
            if len(out) > cap:
                if not truncate_ok:
                    raise _too_large(url, cap)
                return Body(status, headers, bytes(out[:cap]), True, wire)
    except (zlib.error, brotli.error) as exc:
        raise UpstreamError(
            f"{url.host} sent a body that could not be decompressed", reason=Reason.ENCODING
        ) from exc
    # A compressed stream carries its own end; one that stops short of it was cut (a body
    # without Content-Length just ends when the connection closes), and reading it as whole
    # would drop the rest of the page silently. The cap's own cut returned above, before this.
    # An empty body is no stream at all: servers send one with Content-Encoding set.
    if wire and not decoder.finished:
        raise _broken(url, " (its compressed body ends early)")
    return Body(status, headers, bytes(out), False, wire)


def _left_bytes_behind(resp: httpcore.Response) -> bool:
    """Whether the connection of ``resp``, read to its end, holds bytes the server sent past
    it (more than its Content-Length, bytes after its last chunk, a body on a 204, 304 or
    HEAD answer), or whether that cannot be told: either way it must not be reused.

    h11, under httpcore, keeps such bytes in its receive buffer and parses them as the next
    response on that connection. Its ``trailing_data`` (public) says what is left; the way to
    it goes through httpcore's own objects (the pool's stream, its HTTP/1.1 connection), so
    a change there answers True: a new connection next time, never a desync.
    """
    stream = getattr(resp.stream, "_stream", None)  # the pool's wrapper, then the connection's
    state = getattr(getattr(stream, "_connection", None), "_h11_state", None)
    left = getattr(state, "trailing_data", None)
    if not (isinstance(left, tuple) and len(left) == 2 and isinstance(left[0], bytes | bytearray)):
        return True
    data, closed = left
    return bool(data) or bool(closed)


def _remote_protocol_error(
    url: guard.ParsedURL, exc: httpcore.RemoteProtocolError
) -> UpstreamError:
    """What a protocol error of the server's answer means, in one sentence.

    h11 (under httpcore) refuses a Content-Length that is not one number with these two
    messages, and has no error type of its own for it; telling them apart by text is brittle,
    but the fallback is the sentence every other such error gets.
    """
    text = str(exc)
    if text in ("bad Content-Length", "conflicting Content-Length headers"):
        # Reason ``broken`` as before: the body's length is unknown, so it cannot be read.
        return UpstreamError(
            f"{url.host} sent a malformed Content-Length header (not one number), so its "
            "response could not be read",
            reason=Reason.BROKEN,
        )
    lowered = text.lower()
    if any(word in lowered for word in ("closed", "disconnected", "incomplete")):
        return _broken(url)
    # The connection held, the answer is no HTTP/1.1: said as such, not as a network fault
    # (and without h11's text, which quotes the server's bytes).
    what = next(
        (said for start, said in _MALFORMED if lowered.startswith(start)), "malformed framing"
    )
    return UpstreamError(
        f"{url.host} answered with something that is not a valid HTTP response ({what}), "
        "so it could not be read",
        reason=Reason.PROTOCOL,
    )


# h11's words for a malformed answer, and what they mean to someone reading the message.
_MALFORMED = (
    ("illegal status line", "no valid status line"),
    ("receive buffer too long", "headers past the size limit"),
    ("illegal header line", "a malformed header line"),
    ("continuation line", "a malformed header line"),
    ("illegal chunk", "a chunk size that is not a number"),
    ("illegal", "malformed framing"),
)


def _broken(url: guard.ParsedURL, why: str = "") -> UpstreamError:
    return UpstreamError(
        f"the connection to {url.host} broke before the response was complete{why}",
        reason=Reason.BROKEN,
    )


def _ssl_cause(exc: BaseException) -> ssl.SSLError | None:
    """The ssl error behind an httpcore connect error (it wraps it as its argument)."""
    for cand in (exc.__cause__, exc.__context__, *exc.args[:1]):
        if isinstance(cand, ssl.SSLError):
            return cand
    return None


# OpenSSL's verify codes for a chain that ends in no CA webward trusts: self-signed (18, 19),
# an issuer it does not have (20, 2).
_UNTRUSTED_ISSUER = frozenset((2, 18, 19, 20))


def _tls_error(url: guard.ParsedURL, exc: ssl.SSLError) -> UpstreamError:
    if isinstance(exc, ssl.SSLCertVerificationError):
        why = " ".join(str(exc.verify_message or "verification failed").split())[:200]
        message = f"the TLS certificate of {url.host} could not be verified ({why.rstrip('.')})"
        if exc.verify_code in _UNTRUSTED_ISSUER:  # not a wrong name or a date: a private CA?
            message = operator_step(
                message,
                _ca_file_problem()
                or f"if {url.host} is served under a private CA, an operator can trust that CA "
                "with SSL_CERT_FILE=/path/to/ca.pem in webward's environment",
                model="",
            )
    else:
        message = f"the TLS handshake with {url.host} failed"
    return UpstreamError(message, reason=Reason.TLS)


def _ca_file_problem() -> str | None:
    """What is wrong with the CA file SSL_CERT_FILE names, if it is set and OpenSSL could not
    load it (it skips such a file without a word): the refusal told an operator who had set
    it, to a path mistyped or to a file that is no PEM, to set SSL_CERT_FILE."""
    path = os.environ.get("SSL_CERT_FILE")
    if not path:
        return None
    try:
        ssl.create_default_context(cafile=path)
    except FileNotFoundError:
        problem = "which does not exist"
    except (OSError, ssl.SSLError):
        problem = "which holds no PEM certificate OpenSSL can read"
    else:
        return None
    return (
        f"SSL_CERT_FILE in webward's environment names {path!r}, {problem}, so the CAs it "
        "was meant to add are not trusted; point it at the CA's PEM file"
    )


def _too_large(url: guard.ParsedURL, cap: int) -> Refused:
    return Refused(
        operator_step(
            f"refused: {url.url} is larger than the {human_size(cap)} cap, and binary content "
            "is never truncated",
            "an operator can raise [limits] max_image_bytes or max_pdf_bytes",
            model="",
        ),
        code="too_large",
        reason=Reason.TOO_LARGE,
    )
