"""The connection pool: a request to one host while many other hosts hold keep-alive connections.

    python bench/pool.py [--hosts 100] [--requests 300]

``--hosts`` keep-alive HTTP/1.1 servers on loopback (one port each, so one origin each) are
each sent one request, leaving an idle keep-alive connection per origin; then ``--requests``
requests go to one of them. Ours is ``webward._transport.Transport`` (a small pool per origin);
the anchor is the same transport with webward's former single pool of 100 connections, which
httpcore scans on every request. CPU time per request. Lines read ``name: ours X, anchor Y,
ratio Z``. No network beyond 127.0.0.1.
"""

from __future__ import annotations

import argparse
import ipaddress
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import httpcore

from webward import StaticResolver, guard
from webward._transport import PinnedBackend, Transport

_ALLOW = (ipaddress.ip_network("127.0.0.1/32"),)


class _KeepAlive(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def server() -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


class OnePool(Transport):
    """The anchor: every origin in one pool of 100 (webward before)."""

    def __init__(self, backend: PinnedBackend) -> None:
        super().__init__(backend)
        self._one = httpcore.AsyncConnectionPool(
            max_connections=100,
            max_keepalive_connections=100,
            keepalive_expiry=5.0,
            retries=0,
            network_backend=backend,
        )
        self._pools = OrderedDict()

    async def _pool_for(self, url: guard.ParsedURL) -> httpcore.AsyncConnectionPool:
        return self._one

    async def aclose(self) -> None:
        await self._one.aclose()


async def per_request(transport: Transport, ports: list[int], requests: int) -> float:
    urls = [guard.assert_url_allowed(f"http://127.0.0.1:{p}/", allow_ranges=_ALLOW) for p in ports]

    async def get(url: guard.ParsedURL) -> None:
        body = await transport.request("GET", url, cap_for=lambda s, h: (100, True), timeout=10)
        assert body.status == 200

    for url in urls:  # one idle keep-alive connection per origin
        await get(url)
    started = time.process_time()
    for _ in range(requests):
        await get(urls[0])
    spent = (time.process_time() - started) / requests
    await transport.aclose()
    return spent


async def run(hosts: int, requests: int) -> None:
    with ExitStack() as stack:
        ports = [stack.enter_context(server()) for _ in range(hosts)]
        backend = PinnedBackend(StaticResolver({}), _ALLOW)
        ours = await per_request(Transport(backend, max_origins=hosts), ports, requests)
        anchor = await per_request(OnePool(backend), ports, requests)
    print(
        f"request with {hosts} idle origins: ours {ours * 1e6:.0f} us, anchor "
        f"{anchor * 1e6:.0f} us, ratio {ours / anchor:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    anyio.run(run, args.hosts, args.requests)


if __name__ == "__main__":
    main()
