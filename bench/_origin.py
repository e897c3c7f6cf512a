"""The page origin several benchmarks read from: a threaded HTTP/1.1 server on 127.0.0.1 that
answers every GET with one HTML page (loopback only; the benchmarks give webward
``allow_ranges`` for exactly 127.0.0.1)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_page(page: bytes) -> tuple[ThreadingHTTPServer, str]:
    """Start the origin in a daemon thread; returns the server (``shutdown()`` it when done)
    and the page's URL."""

    class Page(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real origin

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/page"
