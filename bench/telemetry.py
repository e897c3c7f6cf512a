"""What observability costs a call when nothing asks for it: the seam's share of a request.

    python bench/telemetry.py [--calls 3000] [--repeat 7]

With no ``OTEL_*`` exporter, no metrics and no call log (``metrics = false``; the library and
the command line as they ship), every observability hook webward runs during a call is a null
path in ``webward._telemetry``. This bench measures that path's cost directly, which a load test
cannot do within 3 % on a busy two-core machine:

1. **Count** the hooks one cached gateway request runs (each hook is wrapped by a counter for
   one request, then restored): ``Telemetry.call``, ``cache``, ``hop``, ``converting``,
   ``rendering``, ``audit_write``, and the ``span`` / ``http_span`` / ``server_span`` helpers of every module
   that uses them.
2. **Time** each hook as the request runs it (the context managers entered and left), in a
   tight loop, best of ``--repeat``: their sum is the seam's CPU per request.
3. **Time** the whole request: the gateway's ASGI app called in-process (auth, JSON body, the
   cached ``web_fetch`` of a page from a loopback origin, audit to memory, the JSON answer;
   no HTTP parsing, so the share printed is an upper bound for a served request), CPU per
   request, best of ``--repeat``.

It prints ``telemetry-off: ours X us/request, anchor Y us/request, ratio Z``: ours = the request
with the seam, anchor = the same request minus the seam's measured cost (the request as it was
before observability existed), so the ratio is the no-exporter case against "today". Loopback
only: the origin is a thread in this process.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import orjson
from _origin import serve_page

from webward import Settings, StaticResolver, Web, _telemetry
from webward.testing import MemoryAuditSink

TOKEN = "bench-token"
PAGE = (
    "<html><head><title>Bench page</title></head><body><h1>Bench</h1>"
    + "".join(f"<p>Paragraph {i}: owls and herons read the public web.</p>" for i in range(40))
    + "</body></html>"
).encode()

# The module-level span helpers, wrapped wherever a webward module imported them.
_SPAN_HELPERS = ("span", "http_span", "server_span")
_HOOKS = ("call", "cache", "hop", "converting", "rendering", "audit_write")


@contextlib.contextmanager
def _counting(counts: Counter[str]) -> Iterator[None]:
    """Wrap every hook in a counter; restore them on exit."""
    saved: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            counts[label] += 1
            return original(*args, **kwargs)

        saved.append((owner, name, original))
        setattr(owner, name, counted)

    for module_name in [m for m in sys.modules if m.startswith("webward.")]:
        module = sys.modules[module_name]
        for name in _SPAN_HELPERS:
            if module is not _telemetry and getattr(module, name, None) is getattr(
                _telemetry, name
            ):
                wrap(module, name, name)
    for name in _HOOKS:
        wrap(_telemetry.Telemetry, name, f"Telemetry.{name}")
    try:
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def _hook_runners(telemetry: _telemetry.Telemetry) -> dict[str, Callable[[], None]]:
    """One run of each hook as a call runs it (context managers entered and left)."""

    class _URL:
        url, host, port = "http://127.0.0.1:1/page", "127.0.0.1", 1

    def call() -> None:
        telemetry.call("web_fetch", "web:page.fetch@1", "bench", None)  # type: ignore[arg-type]

    def cache() -> None:
        telemetry.cache(hit=True)

    def hop() -> None:
        telemetry.hop("127.0.0.1", 200, None)

    def converting() -> None:
        with telemetry.converting():
            pass

    def rendering() -> None:
        with telemetry.rendering("fallback"):
            pass

    def audit_write() -> None:
        with telemetry.audit_write(None):
            pass

    def span() -> None:
        with _telemetry.span("read", {"server.address": "127.0.0.1"}):
            pass

    def http_span() -> None:
        with _telemetry.http_span("GET", _URL()):
            pass

    def server_span() -> None:
        with _telemetry.server_span("POST", "/v1", [(b"host", b"x")]):
            pass

    return {
        "Telemetry.call": call,
        "Telemetry.cache": cache,
        "Telemetry.hop": hop,
        "Telemetry.converting": converting,
        "Telemetry.rendering": rendering,
        "Telemetry.audit_write": audit_write,
        "span": span,
        "http_span": http_span,
        "server_span": server_span,
    }


def _best_cpu_per_run(run: Callable[[], None], n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        for _ in range(n):
            run()
        best = min(best, (time.process_time() - started) / n)
    return best


async def main(calls: int, repeat: int) -> int:
    from webward._gateway import FETCH_PATH, create_app, hash_token

    origin, url = serve_page(PAGE)
    settings = Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"robots": False},
            "limits": {"per_host_rate": 1e9, "per_host_burst": 10**9},
            "agents": {"bench": {"tier": "connected", "token_sha256": hash_token(TOKEN)}},
        }
    )
    body = orjson.dumps({"url": url})
    scope = {
        "type": "http",
        "method": "POST",
        "path": FETCH_PATH,
        "root_path": "",
        "headers": [
            (b"authorization", f"Bearer {TOKEN}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    statuses: list[int] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    try:
        async with Web(settings, StaticResolver({}), audit=MemoryAuditSink()) as web:
            if _telemetry._tracer() is not None:
                print("telemetry-off: a tracer provider is installed; unset OTEL_* and retry")
                return 2
            app = create_app(settings, web=web)

            async def request() -> None:
                await app(scope, receive, send)

            await request()  # the first read fills the page cache
            counts: Counter[str] = Counter()
            with _counting(counts):
                await request()
            if statuses != [200, 200]:
                print(f"telemetry-off: the gateway answered {statuses}, not 200")
                return 1
            runners = _hook_runners(web.telemetry)
            seam = sum(
                count * _best_cpu_per_run(runners[label], 20_000, repeat)
                for label, count in counts.items()
            )
            best = float("inf")
            for _ in range(repeat):
                started = time.process_time()
                for _ in range(calls // repeat):
                    await request()
                best = min(best, (time.process_time() - started) / (calls // repeat))
    finally:
        origin.shutdown()
    hooks = ", ".join(f"{label} x{count}" for label, count in sorted(counts.items()))
    print(f"hooks run by one cached gateway request: {hooks}")
    print(f"seam cost per request: {seam * 1e6:.2f} us ({seam / best:.2%} of the request)")
    ours, anchor = best * 1e6, (best - seam) * 1e6
    print(
        f"telemetry-off: ours {ours:.1f} us/request, anchor {anchor:.1f} us/request,"
        f" ratio {ours / anchor:.3f}"
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=3000, help="cached calls timed in all")
    parser.add_argument("--repeat", type=int, default=7, help="passes; the best counts")
    args = parser.parse_args()
    sys.exit(anyio.run(main, args.calls, args.repeat))
