"""The HTTP stack under ``webward serve`` and ``webward mcp --http``.

uvicorn parses HTTP with h11 (pure Python) unless httptools is installed, and anyio runs the
standard asyncio loop unless told to use uvloop. Both fast parts are C extensions that the
``serve`` extra brings (uvloop not on Windows, where it does not exist): when importable the
servers use them, and say so in their start-up line, since the stack is a large share of the
cost of a cached read (bench/gateway.py). Without them the servers run the same way on h11 and
asyncio.

The servers run on asyncio alone, never on trio: their modules are imported inside
:func:`asyncio_only`, which keeps trio out of the process where it happens to be installed.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import logging
import math
import sys
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import anyio
import anyio.lowlevel

__all__ = [
    "Stack",
    "asyncio_only",
    "fastest_stack",
    "few_files_warning",
    "http_protocol",
    "run_server",
    "serve",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Stack:
    """uvicorn's HTTP protocol (``httptools`` or ``h11``) and the event loop (``uvloop`` or
    ``asyncio``)."""

    http: str
    loop: str

    def describe(self) -> str:
        return f"{self.http}, {self.loop}"


#: Below this many open files a server says so as it starts. systemd gives a service 1024
#: (soft) unless told otherwise, which holds hundreds of requests at once: no warning there.
FEW_OPEN_FILES = 1024


def few_files_warning(name: str) -> str | None:
    """A warning for a server (``name``: "webward serve") whose process may open fewer than
    :data:`FEW_OPEN_FILES` files (``ulimit -n``), else None. Each request in flight holds two
    descriptors (its client's connection and the origin's); past the limit the event loop
    cannot accept a connection, and uvloop closes it unanswered with nothing logged, so an
    operator saw clients reset at 50 requests at once under ``ulimit -n 64`` and no reason.
    The soft limit is first raised to the hard one (:func:`_raise_open_files_limit`), so only
    a hard limit that low is warned of."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to read
        return None
    _raise_open_files_limit()
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY or soft >= FEW_OPEN_FILES:
        return None
    return (
        f"{name}: warning: this process may open only {soft} files (ulimit -n), which a "
        "burst of requests uses up, and a client past that is disconnected unanswered; "
        f"raise the limit (ulimit -n {FEW_OPEN_FILES * 4}, or LimitNOFILE= in a systemd unit)"
    )


def _importable(module: str) -> bool:
    # Imported, not only found: a wheel built for another platform or a broken install is
    # found but fails to load, and then the server must fall back rather than fail to start.
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def fastest_stack() -> Stack:
    """The fastest stack installed here: httptools and uvloop where importable."""
    return Stack(
        http="httptools" if _importable("httptools") else "h11",
        loop="uvloop" if _importable("uvloop") else "asyncio",
    )


#: A request's head (its line and headers) may hold this many bytes, and must arrive within
#: this many seconds of the connection's first byte (or of the connection, for the first):
#: httptools, unlike h11 (16 KiB), bounds neither, and a client that never finishes its head
#: held a connection and its memory for as long as it liked (3,000 such connections, or one
#: 150 MB header, reached the gateway before any token was asked for).
MAX_HEAD_BYTES = 64 * 1024
HEAD_TIMEOUT_S = 10.0
#: A request's body must have arrived this many seconds after its head did (the gateway's
#: bodies are 64 KiB at most): a token holder could otherwise hold a connection, its call and
#: its memory by sending a byte a minute. Answered 408 and closed; the app hears that the
#: client left, and the scope's ``LATE_BODY`` key says why.
BODY_TIMEOUT_S = 10.0
LATE_BODY = "webward.late_body"
#: An answer the client takes none of for this many seconds (its bytes waiting in the server,
#: not one of them taken) is given up and the connection dropped. uvicorn bounds no write: a
#: client that asked for more than the socket buffers hold (an image's base64) and never read
#: held its connection, and the answer's memory, for as long as it stayed connected (its
#: keep-alive close waits for the unsent bytes first). A slow reader that takes some now and
#: then is not stalled.
SEND_TIMEOUT_S = 30.0
_SWEEP_EVERY_S = 1.0  # how often the bounds above are checked, over all connections


def http_protocol(stack: Stack) -> Any:
    """What to give uvicorn's ``http`` setting for ``stack``: httptools with the bounds above
    (:func:`_bounded_httptools`), h11 with the same bound on a head (h11's own is 16 KiB), the head's
    deadline and webward's answer to a request it cannot parse (:func:`_answering_h11`)."""
    return _bounded_httptools() if stack.http == "httptools" else _answering_h11()


class _RareWarning(logging.Filter):
    """A uvicorn warning any client can cause (a request httptools cannot parse, one asking
    to upgrade), at most once per :data:`_WARN_EVERY_S`: it wrote one line per malformed
    request (430 in 20 s of one client sending bad chunks), and each such client gets its
    answer anyway."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self._message = message
        self._next = 0.0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != self._message:
            return True
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + _WARN_EVERY_S
        return True


_WARN_EVERY_S = 10.0
_UPGRADE_WARNING = "Unsupported upgrade request."


def _warn_rarely() -> None:
    # Made before a server's config sets up uvicorn's logging, which keeps a logger's filters.
    logging.getLogger("uvicorn.error").addFilter(_RareWarning("Invalid HTTP request received."))
    logging.getLogger("uvicorn.error").addFilter(_RareWarning(_UPGRADE_WARNING))


@functools.lru_cache(maxsize=1)
def _answering_h11() -> type:
    """uvicorn's h11 protocol (the stack where httptools is not installed, which the mcp and
    serve extras bring: a platform without its wheel, or an install without either extra),
    answering a request it cannot
    parse in the error model, as the httptools one does, and warning of it, or of a request
    asking to upgrade, once in a while (it answered text/plain "Invalid HTTP request
    received." and warned once per request, any client's); and a head not in within
    :data:`HEAD_TIMEOUT_S` 408. The body's and the answer's deadlines are httptools's alone."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    _warn_rarely()

    class OneFraming(h11.Connection):
        # A request with both Transfer-Encoding and Content-Length is refused, as httptools
        # refuses it: h11 reads its body as chunked and keeps the connection, so the bytes
        # a proxy in front counted into the body by its Content-Length were served here as
        # the next request (one smuggled past whatever the proxy checks). uvicorn answers a
        # RemoteProtocolError with send_400_response and closes.
        too_large = False  # the head outgrew MAX_HEAD_BYTES: answered 431, not 400

        def next_event(self) -> Any:
            try:
                event = super().next_event()
            except h11.RemoteProtocolError as exc:
                self.too_large = exc.error_status_hint == 431
                raise
            if isinstance(event, h11.Request):
                # h11 bounds a head still incomplete; one that arrived whole in a read (a
                # 70 KB cookie in one write) is counted here, as httptools counts it.
                size = len(event.method) + len(event.target)
                size += sum(len(name) + len(value) + 4 for name, value in event.headers)
                if size > MAX_HEAD_BYTES:
                    self.too_large = True
                    raise h11.RemoteProtocolError("head too large", error_status_hint=431)
                names = {name for name, _ in event.headers}
                if b"transfer-encoding" in names and b"content-length" in names:
                    raise h11.RemoteProtocolError("both Transfer-Encoding and Content-Length")
            return event

    class AnsweringH11(H11Protocol):
        # A request's head must be in HEAD_TIMEOUT_S after the connection, or after the
        # answer before it, as on httptools: h11 bounds its size alone, and a client that
        # sent half a head, or nothing, held the connection and its memory for good (uvicorn
        # arms its keep-alive timeout only after an answer, and drops it at the first byte).
        _head_timer: Any = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # The head's bound is httptools's (h11's own is 16 KiB): one limit, one answer.
            self.conn = OneFraming(h11.SERVER, MAX_HEAD_BYTES)

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._await_head()

        def on_response_complete(self) -> None:
            self._await_head()  # before the base serves a request pipelined behind
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            super().connection_lost(exc)

        def _await_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._head_late)

        def _head_late(self) -> None:
            # No request begun since (h11 stays IDLE until a whole head has arrived).
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.write(_late_head())
                self.transport.close()

        def send_400_response(self, msg: str) -> None:
            # The connection closes: h11's state for it need not hear of the answer.
            if not self.transport.is_closing():
                # A head too large was answered "not HTTP/1.1 webward can read: a malformed
                # request line or header", which sent a client with a large cookie looking
                # for a typo: 431 and its size, as on httptools.
                too_large = isinstance(self.conn, OneFraming) and self.conn.too_large
                answer = _plain_answer("400 Bad Request", _unreadable_request(msg))
                self.transport.write(_TOO_LARGE if too_large else answer)
                self.transport.close()

        def _unsupported_upgrade_warning(self) -> None:
            self.logger.warning(_UPGRADE_WARNING)  # one line, not two (BoundedHttpTools)

    return AnsweringH11


@functools.lru_cache(maxsize=1)
def _bounded_httptools() -> type:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    _warn_rarely()

    # The base's methods that run for every request, called directly rather than through
    # super(): a super object and a lookup along the MRO per callback, and httptools calls
    # five to ten of them a request (one per header), cost about 1 us a request of the loop's
    # time (measured with the protocol fed requests in one process).
    base_data_received = HttpToolsProtocol.data_received
    base_on_message_begin = HttpToolsProtocol.on_message_begin
    base_on_url = HttpToolsProtocol.on_url
    base_on_header = HttpToolsProtocol.on_header
    base_on_headers_complete = HttpToolsProtocol.on_headers_complete
    base_on_response_complete = HttpToolsProtocol.on_response_complete
    base_on_message_complete = HttpToolsProtocol.on_message_complete

    class BoundedHttpTools(HttpToolsProtocol):
        """uvicorn's httptools protocol, answering 431 to a head over MAX_HEAD_BYTES, 408 to
        one not complete HEAD_TIMEOUT_S after it began or to a body not complete
        BODY_TIMEOUT_S after its head, and closing the connection; and dropping one whose
        client takes nothing of its answer for SEND_TIMEOUT_S.

        Cheap on the hot path (a cached read is about 100 us all told): a head's bytes are
        counted as the parser hands its line and headers over, and as packets that leave a
        header incomplete (a body or a pipelined request never counts); its time is checked
        by one sweep a second (_SWEEP_EVERY_S) over the server's connections, not by a timer
        armed and cancelled per request."""

        _heading = True  # a request's head is being read (or awaited on a new connection)
        _head_bytes = 0  # the head's line and headers, as the parser hands them over
        _pending = 0  # bytes of packets that left a head incomplete (or came after an answer)
        _head_began = 0.0
        _in_body = False  # a request's head has arrived and its body not yet all of it
        _body_began = 0.0
        _answered = False  # a 431 is on its way: what comes in is dropped
        _began_here = False  # a request's head began in the packet being read
        # Requests of this connection a pipelined one arrived behind, maybe still unanswered:
        # uvicorn marks only the newest as disconnected when the client leaves, so an older
        # one's answer met a closed transport (a traceback per client that pipelines, then
        # closes).
        _behind: list[Any] | tuple[()] = ()
        # What the client has taken of its answers, as the sweep sees it: the bytes waiting in
        # the transport, and how often the transport drained below its low mark (after which
        # the app writes more); either changing between sweeps is progress. The bytes alone
        # can read the same at two sweeps of a slow reader (drained, then refilled by as much).
        _unsent: tuple[int, int] = (0, 0)
        _unsent_since = 0.0  # since when that has not changed
        _drained = 0

        def resume_writing(self) -> None:
            self._drained += 1
            super().resume_writing()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._head_began = self.loop.time()
            _sweep_soon(self.loop, self.connections)

        def data_received(self, data: bytes) -> None:
            if self._answered:  # a 431 is on its way: the rest of the head goes nowhere
                self._pending += len(data)
                if self._pending > MAX_HEAD_BYTES + _LINGER_BYTES:
                    self.transport.close()
                return
            cycle = self.cycle
            # Answered, and the request still coming (the rest of a body refused as too
            # large, or a chunked body's endless trailer, which httptools would hold): read
            # and dropped up to 4 MiB, then the connection closed. Closing sooner reset the
            # connection under the answer while an honest client was still sending its body,
            # and it never read its 413.
            late = cycle is not None and cycle.response_complete and cycle.more_body
            if late and not self._heading:
                self._pending += len(data)
                if self._pending > _LINGER_BYTES:
                    self.transport.close()
                    return
            self._began_here = False
            base_data_received(self, data)
            if self._heading:
                # A header still incomplete after this packet: httptools holds what it has
                # of it, and hands nothing over until its line ends. A head that began in this
                # packet counts from the next one: the packet also held the requests before it
                # (1,000 pipelined in one write were answered 431 at a packet's 64 KiB).
                self._pending += 0 if self._began_here else len(data)
                if self._pending > MAX_HEAD_BYTES:
                    self.send_400_response("")

        def on_message_begin(self) -> None:
            self._heading, self._head_bytes, self._head_began = True, 0, self.loop.time()
            self._pending, self._began_here = 0, True
            base_on_message_begin(self)

        def on_url(self, url: bytes) -> None:
            self._head_bytes += len(url)
            if self._head_bytes > MAX_HEAD_BYTES:
                raise _HeadTooLarge  # the parser stops; send_400_response answers 431
            base_on_url(self, url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._head_bytes += len(name) + len(value) + 4  # a trailer's count with its head's
            if self._head_bytes > MAX_HEAD_BYTES:
                raise _HeadTooLarge
            if not self._heading:
                # A chunked body's trailer field: httptools hands it over as a header, and
                # uvicorn appended it to the request's, which the app reads once the body is
                # in. An Authorization in the trailer alone (past a proxy that checks the
                # head's) named the agent. Not merged into the head (RFC 9110, 6.5.1): dropped.
                return
            if name.lower() == b"transfer-encoding" and value.strip().lower() != b"chunked":
                # httptools reads a body whose last coding is chunked and ignores the rest:
                # "gzip, chunked" was taken as plain chunked, the gzip never undone, a body
                # other than a proxy in front that decodes it checks. h11 refuses any coding
                # but chunked (RFC 9112 6.1); so does this: the parser stops, 400.
                raise _UnknownCoding
            base_on_header(self, name, value)

        def on_headers_complete(self) -> None:
            previous = self.cycle
            self._heading, self._in_body = False, True
            # A request pipelined behind one still being served waits for it: its body's
            # time starts when that answer is done (on_response_complete), not now.
            waiting = previous is not None and not previous.response_complete
            self._body_began = math.inf if waiting else self.loop.time()
            base_on_headers_complete(self)
            if waiting:
                self._behind = [c for c in self._behind if not c.response_complete]
                self._behind.append(previous)
            if _declared_length(self.headers) > _LINGER_BYTES:
                # A body longer than what follows an answer is read for (no app here reads
                # it whole: it is answered 413 early): the answer says the connection ends,
                # which a keep-alive client otherwise learnt from its next request failing.
                # The close waits as a 431's does, so that the answer is read first.
                cycle = self.cycle
                cycle.keep_alive = False
                cycle.transport = cast("Any", _ClosingLater(self.transport, self.loop))

        def connection_lost(self, exc: Exception | None) -> None:
            super().connection_lost(exc)
            for cycle in self._behind:  # as uvicorn does for the newest (see _behind)
                if not cycle.response_complete:
                    cycle.disconnected = True
                    cycle.message_event.set()

        def on_response_complete(self) -> None:
            if self._in_body and self._body_began == math.inf:
                self._body_began = self.loop.time()
            base_on_response_complete(self)

        def on_message_complete(self) -> None:
            self._in_body = False
            base_on_message_complete(self)

        def send_400_response(self, msg: str) -> None:
            if self._head_bytes <= MAX_HEAD_BYTES and self._pending <= MAX_HEAD_BYTES:
                # uvicorn's own is text/plain ("Invalid HTTP request received."): the error
                # model instead, one sentence that says what to fix.
                self.close_with(_plain_answer("400 Bad Request", _unreadable_request(msg)))
                return
            # Answered at once; what the client goes on sending is read and dropped for a
            # second (up to 4 MiB) before the close, which would otherwise reset the
            # connection under the answer before the client read it.
            if not self._answered:
                self._answered = True
                if not self.transport.is_closing():
                    self.transport.write(_TOO_LARGE)
                    self.loop.call_later(_LINGER_S, self.transport.close)

        def _unsupported_upgrade_warning(self) -> None:
            # uvicorn wrote two lines for every request asking to upgrade (Upgrade: websocket,
            # h2c), any client's, the second advising the operator to install a WebSocket
            # library the servers do without on purpose (ws="none"). The request is served as
            # plain HTTP, as RFC 9110 (7.8) allows: one line, and that once in a while.
            self.logger.warning(_UPGRADE_WARNING)

        def close_with(self, answer: bytes) -> None:
            if not self.transport.is_closing():
                self.transport.write(answer)
                self.transport.close()

    def _sweep_soon(loop: Any, connections: set[Any]) -> None:
        if not _sweeping.get(loop):
            _sweeping[loop] = True
            loop.call_later(_SWEEP_EVERY_S, _sweep, loop, connections)

    def _sweep(loop: Any, connections: set[Any]) -> None:
        now = loop.time()
        for conn in list(connections):
            if not isinstance(conn, BoundedHttpTools):
                continue
            unsent = (conn.transport.get_write_buffer_size(), conn._drained)
            if unsent != conn._unsent:  # bytes written, or taken by the client
                conn._unsent, conn._unsent_since = unsent, now
            elif unsent[0] and now - conn._unsent_since > SEND_TIMEOUT_S:
                conn.transport.abort()  # close() would wait for the bytes to go first
                continue
            if conn._answered:
                continue
            if conn._heading and now - conn._head_began > HEAD_TIMEOUT_S:
                conn.close_with(_late_head())
            # A body is not late while the server itself stopped reading (a pipelined request
            # waits for the one before it to be answered).
            elif (
                conn._in_body
                and not conn.flow.read_paused
                and now - conn._body_began > BODY_TIMEOUT_S
            ):
                conn._in_body = False
                cycle = conn.cycle
                if cycle is not None and cycle.response_complete:
                    # Answered already (a 413 before the body was read): the rest of the
                    # body is late, but the client has its answer; a second would be a lie.
                    conn.transport.close()
                    continue
                # The app hears a disconnect; a key of webward's own in its scope says why.
                cast("dict[str, Any]", conn.scope)[LATE_BODY] = True
                conn.close_with(_late_body())
        _sweeping[loop] = False
        if connections:
            _sweep_soon(loop, connections)

    # Whether a sweep is scheduled on a loop. Keyed by the loop itself, weakly: a loop's id is
    # reused once it is gone, and a stopped server's last "scheduled" left a new server on a
    # loop of the same id without any sweep.
    _sweeping: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
    return BoundedHttpTools


class _UnknownCoding(Exception):
    """Raised from a parser callback at a Transfer-Encoding other than chunked alone: the
    parser stops, and the request is answered 400 as one it cannot parse."""


class _HeadTooLarge(Exception):
    """Raised from a parser callback: httptools stops, and uvicorn's answer to a request it
    cannot parse is then webward's 431."""


def _plain_answer(status: str, message: str) -> bytes:
    body = json.dumps({"error": {"code": "invalid_input", "message": message}}).encode()
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


def _unreadable_request(msg: str) -> str:
    """The sentence a request httptools could not parse is answered with (``msg``:
    uvicorn's)."""
    if msg == "Invalid HTTP request received.":
        return (
            "the request is not HTTP/1.1 webward can read: a malformed request line or header, "
            "a bad chunked body, or both Transfer-Encoding and Content-Length"
        )
    return msg.rstrip(".")[:1].lower() + msg.rstrip(".")[1:]


def _late_head() -> bytes:
    message = f"the request line and headers did not arrive within {HEAD_TIMEOUT_S:g} s"
    return _plain_answer("408 Request Timeout", message)


def _late_body() -> bytes:
    return _plain_answer("408 Request Timeout", late_body_message())


def late_body_message() -> str:
    return f"the request body did not arrive within {BODY_TIMEOUT_S:g} s of its head"


_LINGER_BYTES = 4 * 1024 * 1024
# How long a connection stays open after an answer that refused what the client still sends.
_LINGER_S = 1.0


def _declared_length(headers: list[tuple[bytes, bytes]]) -> int:
    """The request's Content-Length (0 if none, or not a number: httptools refuses those)."""
    for name, value in headers:
        if name == b"content-length":
            return content_length(value)
    return 0


def content_length(value: bytes) -> int:
    """A Content-Length value's number (0 if it is not digits). Leading zeros are digits
    too (RFC 9110): httptools reads thousands of them, and int() refuses a string past
    4,300 digits (a ValueError in a parser callback, or in the app: a traceback). A number
    past 20 digits is past any length httptools takes, and read as 2**64."""
    if not value.isdigit():
        return 0
    digits = value.lstrip(b"0")
    return int(digits or b"0") if len(digits) <= 20 else 2**64


class _ClosingLater:
    """A connection's transport as one request's cycle sees it: its close comes
    :data:`_LINGER_S` later, while the rest of the body is read and dropped, so that the
    client, still sending, reads the answer before the connection goes (an immediate close
    resets it, and the client's kernel drops the answer unread)."""

    def __init__(self, transport: Any, loop: Any) -> None:
        self._transport = transport
        self._loop = loop

    def close(self) -> None:
        self._loop.call_later(_LINGER_S, self._transport.close)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


_TOO_LARGE = _plain_answer(
    "431 Request Header Fields Too Large",
    f"the request line and headers are larger than {MAX_HEAD_BYTES // 1024} KiB",
)


class _GraceRanOut(logging.Filter):
    """uvicorn's ``ERROR: Cancel 1 running task(s), timeout graceful shutdown exceeded``, said
    in the command's voice instead. It is no error: the shutdown went as designed (calls still
    running at the end of its grace are cancelled, audited as cancelled and answered so), but
    its line, in uvicorn's words and labelled ERROR, stood above the command's last sentence,
    which said the same: an operator's alert on ERROR lines fired on every such shutdown."""

    def __init__(self, command: str, grace_s: float) -> None:
        super().__init__()
        self._command = command
        self._grace_s = grace_s

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != _GRACE_RAN_OUT or not isinstance(record.args, tuple):
            return True
        # uvicorn counts requests, not calls: an event stream left open is one too.
        running = record.args[0] if record.args else "some"
        requests = "1 request" if running == 1 else f"{running} requests"
        theirs = "its call" if running == 1 else "their calls"
        print(
            f"{self._command}: the graceful shutdown's {self._grace_s:g} s ran out with "
            f"{requests} still running: stopped, {theirs} cancelled and audited as cancelled",
            file=sys.stderr,
            flush=True,
        )
        return False


_GRACE_RAN_OUT = "Cancel %s running task(s), timeout graceful shutdown exceeded"  # uvicorn's


async def serve(
    config: Any,
    sockets: list[Any],
    *,
    on_exit: Callable[[], None] | None = None,
    command: str = "webward serve",
) -> None:
    """``uvicorn.Server(config).serve(sockets=sockets)``, with every signal of
    ``_signals.ENDING_SIGNALS`` taking uvicorn's graceful way out, which it gives SIGINT and
    SIGTERM alone: requests in flight finish, or are cancelled and audited when
    ``timeout_graceful_shutdown`` runs out (said in one line of ``command``'s:
    :class:`_GraceRanOut`), then the server stops and raises the signal again for the
    handler before it (``cli.main``'s: exit 128 + its number). SIGHUP (the
    terminal closed) killed the server mid-call, the call unaudited and its client answered
    nothing. ``on_exit`` is called (in the loop's thread, from the signal's handler) when the
    shutdown begins."""
    # Ctrl-C while the command set the server up (its imports, the app: under asyncio's
    # handler, which only asks the main task to cancel) ends it here, before the server and
    # its lifespan task exist. Left to the first wait inside uvicorn's startup, the lifespan
    # task was cancelled while it started the conversion workers, and uvicorn logged its
    # traceback ("ERROR: Traceback ... CancelledError") above the one sentence.
    await anyio.lowlevel.checkpoint()
    from ._signals import stop_if_interrupted

    stop_if_interrupted()  # one Python dropped while the server loaded: it never starts
    _raise_open_files_limit()
    server = _signalled_server()(config)
    server.on_exit = on_exit
    grace = _GraceRanOut(command, config.timeout_graceful_shutdown)
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addFilter(grace)
    try:
        await server.serve(sockets=sockets)
    finally:
        uvicorn_log.removeFilter(grace)


def _raise_open_files_limit() -> None:
    """Raise the process's soft limit on open files to its hard limit. Every connection is
    one, and one client needs no token to open them: at a soft limit of 1024 (systemd's and
    many shells' default, under a hard limit of 524288) one client holding a thousand idle
    connections, each opened again as the 10 s head deadline closes it, left every agent
    unanswered (accept failing, and nothing in the log). At the hard limit one address
    cannot reach it: it has no more than about 28,000 ports to connect from, about 4 KB of
    the server's memory each."""
    try:
        import resource
    except ImportError:  # no POSIX limits here (Windows)
        return
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = _FILES_AT_MOST if hard == resource.RLIM_INFINITY else min(hard, _FILES_AT_MOST)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


# Some kernels refuse an "unlimited" soft limit (macOS), and some children (a browser, old
# libraries) walk every descriptor up to it: a hard limit of a billion (containerd's
# "infinity") is not taken whole.
_FILES_AT_MOST = 1 << 20


@functools.lru_cache(maxsize=1)
def _signalled_server() -> type:
    import signal
    import threading

    import uvicorn

    from ._signals import taken_signals

    class SignalledServer(uvicorn.Server):
        """uvicorn's server, whose graceful shutdown all of ``_signals.ENDING_SIGNALS`` start
        (uvicorn's ``capture_signals``, with that tuple for its SIGINT and SIGTERM). A
        signal ignored when the server starts (``nohup``) stays ignored."""

        on_exit: Callable[[], None] | None = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.should_exit:
                # Shutting down already (Ctrl-C pressed again, a supervisor's SIGTERM after
                # it): the shutdown goes on as it began. uvicorn forces an exit at a second
                # SIGINT, which skips the app's lifespan shutdown; its task was then cancelled
                # at the loop's close, with a traceback. The graceful shutdown is bounded
                # anyway (timeout_graceful_shutdown), and ends its calls audited.
                return
            super().handle_exit(sig, frame)
            if self.on_exit is not None:
                self.on_exit()

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield  # signal handlers are the main thread's to set
                return
            previous = {s: signal.signal(s, self.handle_exit) for s in taken_signals()}
            try:
                yield
            finally:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)
            # Stopped for a signal: the handler before ours now has it, once, the one that
            # began the shutdown (its exit code: 130 for Ctrl-C). uvicorn raises each signal
            # it took again, and every one reaches asyncio's SIGINT handler (cli's handler of
            # SIGTERM passes it on), which cancels the main task at the first and raises
            # KeyboardInterrupt inside the loop at the second: a traceback, and `mcp --http`
            # exited 1.
            if self._captured_signals:
                signal.raise_signal(self._captured_signals[0])

    return SignalledServer


def run_server(stack: Stack, main: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run ``main(*args)`` under anyio on the stack's event loop."""
    return anyio.run(main, *args, backend_options={"use_uvloop": stack.loop == "uvloop"})


@contextlib.contextmanager
def asyncio_only() -> Iterator[None]:
    """Modules imported inside do not import trio, as if it were not installed (it is not a
    dependency). httpcore imports it when it can, to run under it too; a server runs on asyncio
    only, and would carry its 3.5 MiB and ~50 ms of start for nothing (bench/uncached.py)."""
    if "trio" in sys.modules:  # imported already (a test run): nothing left to spare
        yield
        return
    sys.modules["trio"] = None  # type: ignore[assignment]  # `import trio` raises ImportError
    try:
        yield
    finally:
        if "trio" in sys.modules and sys.modules["trio"] is None:
            del sys.modules["trio"]  # a later `import trio` (nothing of ours) finds it again
