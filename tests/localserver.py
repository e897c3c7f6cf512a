"""Real HTTP servers on loopback for the tests: a route table of small handlers.

Each handler gets the parsed request and writes to the raw socket, so tests can send what a
hostile server sends (drip-feed, reset mid-body, a lying Content-Length) as easily as a page.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""


Handler = Callable[[Request, socket.socket], None]


def respond(
    status: int = 200,
    body: bytes | str = b"",
    content_type: str = "text/html; charset=utf-8",
    headers: dict[str, str] | None = None,
) -> Handler:
    """A handler that sends one complete response."""
    data = body.encode() if isinstance(body, str) else body

    def handler(req: Request, sock: socket.socket) -> None:
        send(sock, status, data, content_type, headers)

    return handler


def send(
    sock: socket.socket,
    status: int,
    body: bytes,
    content_type: str | None = "text/html; charset=utf-8",
    headers: dict[str, str] | None = None,
) -> None:
    lines = [f"HTTP/1.1 {status} X"]
    hdrs = dict(headers or {})
    if content_type is not None:
        hdrs.setdefault("Content-Type", content_type)
    hdrs.setdefault("Content-Length", str(len(body)))
    hdrs.setdefault("Connection", "close")
    lines += [f"{k}: {v}" for k, v in hdrs.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)


def redirect(location: str, status: int = 302) -> Handler:
    return respond(status, b"", headers={"Location": location})


@dataclass
class LocalServer:
    """A threaded HTTP/1.1 server on a loopback address with a mutable route table."""

    host: str = "127.0.0.1"
    routes: dict[str, Handler] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    accepts: int = 0
    port: int = 0

    @property
    def base(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def _handle(self, sock: socket.socket) -> None:
        self.accepts += 1
        sock.settimeout(10)
        try:
            while True:
                req = _read_request(sock)
                if req is None:
                    return
                self.requests.append(req)
                handler = self.routes.get(req.path) or self.routes.get("*")
                if handler is None:
                    send(sock, 404, b"not found", "text/plain")
                else:
                    handler(req, sock)
                return  # one request per connection keeps the hostile handlers simple
        except OSError:
            return


def _read_request(sock: socket.socket) -> Request | None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
        if len(buf) > 1_000_000:
            return None
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = [*lines[0].split(" ", 2), "", ""][:3]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0") or 0)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return Request(method, target, headers, rest[:length])


@contextmanager
def serve(
    host: str = "127.0.0.1", routes: dict[str, Handler] | None = None
) -> Iterator[LocalServer]:
    """Run a :class:`LocalServer` on ``host`` (a loopback address) for the block."""
    assert host.startswith("127.") or host == "::1", "tests only ever listen on loopback"
    server = LocalServer(host=host, routes=dict(routes or {}))

    class _TCPHandler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            server._handle(self.request)

    family = socket.AF_INET6 if ":" in host else socket.AF_INET

    class _Server(socketserver.ThreadingTCPServer):
        address_family = family
        allow_reuse_address = True
        daemon_threads = True
        # socketserver's backlog is 5: a burst of connections to one origin (as many as
        # per_host_concurrency lets through) would wait for SYN retries, as no real server's.
        request_queue_size = 256

    tcp = _Server((host, 0), _TCPHandler)
    server.port = tcp.server_address[1]
    thread = threading.Thread(target=tcp.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        tcp.shutdown()
        tcp.server_close()


@contextmanager
def accept_counter(host: str = "127.0.0.2", port: int = 0) -> Iterator[LocalServer]:
    """A listener on another loopback address that counts accepts: proof of no connection."""
    with serve(host) as server:
        yield server


def drip(body: bytes, delay_s: float, content_type: str = "text/html") -> Handler:
    """Send the headers, then one byte every ``delay_s`` seconds."""

    def handler(req: Request, sock: socket.socket) -> None:
        sock.sendall(
            f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        )
        for i in range(len(body)):
            sock.sendall(body[i : i + 1])
            time.sleep(delay_s)

    return handler


def held() -> tuple[threading.Event, threading.Event, Handler]:
    """A route that never answers: ``arrived`` is set when a request comes, and ``hung_up``
    once the other side (the webward under test) closes the connection. Returns both and
    the handler."""
    arrived, hung_up = threading.Event(), threading.Event()

    def hold(req: Request, sock: socket.socket) -> None:
        arrived.set()
        try:
            if sock.recv(1) == b"":  # holds its answer until the connection is closed
                hung_up.set()
        except OSError:
            pass

    return arrived, hung_up, hold
