"""Gateway throughput: 50 concurrent clients reading one cached local page, beside a bare app.

    python bench/gateway.py [--requests 2000] [--clients 50] [--rounds 5] [--before OTHER/src]
    python bench/gateway.py --observability [--baseline /path/to/other/checkout/src]

Two servers run the same way, each uvicorn in its own process on 127.0.0.1, and take turns
(``--rounds`` runs of ``--requests`` each; the median round is the figure):

- **ours**: ``webward serve`` with a bearer token, SQLite audit in a temp state dir, reading a
  page from a loopback origin (the first request fetches it; every measured one is a cache
  hit, so the figure is the gateway and the core's cached path: auth, JSON, policy, guard,
  window, envelope and one audit write per call);
- **anchor**: a bare ASGI app (no framework) answering every POST with the very bytes the
  gateway returned.

The client is a small keep-alive HTTP/1.1 client on asyncio streams (so the client costs the
same for both). Target: ours at least 0.5x the anchor's rate and, since on two shared cores the
client can be what limits the rate, at most 2x the anchor's server CPU per request (read from
``/proc``); the output names the stack (HTTP parser, event loop) of both sides. Loopback only,
bounded: a fixed number of requests per server.

``--floors`` adds two servers to the same rounds, which bound what any gateway that audits as
webward does can reach here: the anchor's app writing one durable audit record a request
(made as the core makes a cached read's, in ``webward serve``'s SQLite store, the answer sent
once its commit is done), then the same with the shipped metrics and call log around the
write. Neither checks, reads or frames anything: the gap between them and the anchor is the
audit's and telemetry's alone (docs/servers.md).

``--observability`` instead runs the gateway once per observability setting, all taking turns
in the same rounds (docs/operations.md):

- **off**: no tracing (no ``OTEL_*``), ``metrics = false``, ``call_log = "off"``;
- **tracing**: spans exported over OTLP/HTTP to a local receiver in this process;
- **metrics**: ``GET /metrics`` kept (``metrics = true``), no call log;
- **shipped**: as ``webward serve`` ships: metrics, and a call log line on stderr;
- **today** (with ``--baseline SRC``): the same gateway from another checkout's ``src``, the
  figure "off" must stay within 3 % of.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _origin import serve_page

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"
FETCH_PATH = "/v1/capabilities/web:page.fetch@1"
PAGE = (
    "<html><head><title>Bench page</title></head><body><h1>Bench</h1>"
    + "".join(f"<p>Paragraph {i}: owls and herons read the public web.</p>" for i in range(40))
    + "</body></html>"
).encode()

ANCHOR_APP = """
import sys
from pathlib import Path

import uvicorn

BODY = Path(sys.argv[1]).read_bytes()
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    more = True
    while more:  # read the request body, as the gateway must
        more = (await receive()).get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})


import socket

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # as bind_socket does
sock.bind(("127.0.0.1", 0))
sock.listen(2048)  # listening before the address is announced: early clients queue
print(f"anchor on http://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr, flush=True)
config = uvicorn.Config(
    app, log_level="warning", access_log=False, ws="none", server_header=False,
    http=sys.argv[2], loop=sys.argv[3],  # the stack `webward serve` runs on here
    proxy_headers=False,  # as `webward serve` sets it: no X-Forwarded-* middleware on either
)
uvicorn.Server(config).run(sockets=[sock])
"""


# ``--audit memory``: the same gateway, with the audit kept in memory instead of SQLite, to
# tell the gateway's own cost from the audit store's (one durable INSERT per call).
MEMORY_AUDIT_GATEWAY = """
import gc
import sys

import anyio
import uvicorn

from webward import Settings, Web
from webward._gateway import address_url, bind_socket, create_app
from webward.testing import MemoryAuditSink

try:  # as `webward serve` opens its Web; a checkout from before telemetry has none
    from webward._telemetry import Telemetry
except ImportError:
    Telemetry = None


async def main() -> None:
    settings = Settings.load(sys.argv[1])
    extra = {}
    if Telemetry is not None:
        extra["telemetry"] = Telemetry.for_settings(settings, server=True)
    async with Web(settings, audit=MemoryAuditSink(), **extra) as web:
        sock = bind_socket("127.0.0.1", 0)
        print(f"gateway on {address_url(sock)}", file=sys.stderr, flush=True)
        app = create_app(settings, web)
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, ws="none", server_header=False,
            proxy_headers=False, http="auto",  # httptools where installed, as `webward serve`
        )
        gc.freeze()  # as `webward serve` does
        await uvicorn.Server(config).serve(sockets=[sock])


try:  # as `webward serve` runs: on the fastest stack installed
    from webward._serving import fastest_stack, run_server
except ImportError:  # a checkout from before the fast stack
    anyio.run(main)
else:
    run_server(fastest_stack(), main)
"""


# ``--floors``: the anchor's app, plus the audit (and the telemetry) webward serve's cached
# read has, and nothing else of the gateway or the core.
FLOOR_APP = """
import gc
import sys
from pathlib import Path

import uvicorn

from webward import Settings
from webward._call import Call
from webward._serving import fastest_stack, run_server
from webward._telemetry import Telemetry
from webward.audit import AuditRecord, open_audit_sink

settings = Settings.load(sys.argv[1])
BODY = Path(sys.argv[2]).read_bytes()
OBSERVED = sys.argv[3] == "audit+obs"
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def main():
    sink = open_audit_sink(settings)
    telemetry = Telemetry.for_settings(settings, server=True)

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        call = Call("web:page.fetch@1", "bench", "http://127.0.0.1/page")  # a cached read's
        call.tier, call.final_url, call.status = "connected", call.target, 200
        call.bytes, call.content_type = len(BODY), "text/html"
        record = AuditRecord.from_call(call, decision="allowed", reason="allowed")
        if OBSERVED:
            with telemetry.audit_write(record):
                await sink.write(record)
        else:
            await sink.write(record)
        await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
        await send({"type": "http.response.body", "body": BODY})

    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    print(f"floor on http://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, ws="none", server_header=False,
        http=fastest_stack().http, proxy_headers=False,
    )
    gc.freeze()
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        await sink.aclose()
        telemetry.close()


run_server(fastest_stack(), main)
"""


def _cpu_seconds(pid: int) -> float:
    """CPU seconds a process's living threads have run so far (Linux /proc, in nanoseconds).

    /proc/PID/stat counts in clock ticks (10 ms): a bare app's round of 3,000 requests is a
    few ticks, so its figure moved by a sixth with one tick, and a short round (report.py's)
    read 0 and divided by it. A server's threads live through a round, so the time of any
    that ended before it is not missed."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):  # the thread ended meanwhile
            continue
    return total / 1e9


class _OTLPSink(BaseHTTPRequestHandler):
    """A local OTLP/HTTP receiver: takes each export and answers 200 (an empty response)."""

    exports = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).exports += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


def _spawn(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str, int]:
    proc = subprocess.Popen(
        args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if match is None:
        proc.kill()
        raise SystemExit(f"server did not start: {line}{proc.stderr.read()}")
    # The rest of stderr (a call log line per request) is drained, so the pipe never fills.
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, "127.0.0.1", int(match.group(1))


def _spawn_tree(
    name: str,
    src: str,
    command: list[str],
    env: dict[str, str],
    body: bytes,
    procs: list[subprocess.Popen[str]],
    servers: dict[str, tuple[str, int, bytes]],
    cpu: dict[str, tuple[int, list[float]]],
) -> None:
    """Start the gateway of another checkout's ``src`` as ``name``, beside the others."""
    proc, host, port = _spawn(command, {**env, "PYTHONPATH": str(Path(src).resolve())})
    procs.append(proc)
    servers[name] = (host, port, _request(port, body))
    cpu[name] = (proc.pid, [])


def _request(port: int, body: bytes) -> bytes:
    head = (
        f"POST {FETCH_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> bytes:
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
    assert length is not None, head
    body = await reader.readexactly(int(length.group(1)))
    if status != 200:
        raise SystemExit(f"status {status}: {body[:300]!r}")
    return body


async def _load(
    host: str, port: int, request: bytes, total: int, clients: int
) -> tuple[float, list[float]]:
    """``total`` requests over ``clients`` keep-alive connections; (seconds, latencies)."""
    latencies: list[float] = []
    left = [total]

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while left[0] > 0:
                left[0] -= 1
                started = time.perf_counter()
                await _one(reader, writer, request)
                latencies.append(time.perf_counter() - started)
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return time.perf_counter() - started, latencies


def _measure(
    servers: dict[str, tuple[str, int, bytes]],
    total: int,
    clients: int,
    rounds: int,
    best: dict[str, float] | None = None,
    cpu: dict[str, tuple[int, list[float]]] | None = None,
) -> dict[str, tuple[float, float, float]]:
    """Each server's (rate, p50 ms, p99 ms): ``rounds`` runs of ``total`` requests each, taking
    turns, so a slow spell of the machine falls on both alike; the rate is the median round."""
    for host, port, request in servers.values():  # warm up
        asyncio.run(_load(host, port, request, min(200, total), clients))
    rates: dict[str, list[float]] = {name: [] for name in servers}
    latencies: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(rounds):
        for name, (host, port, request) in servers.items():
            used = _cpu_seconds(cpu[name][0]) if cpu is not None else 0.0
            seconds, lat = asyncio.run(_load(host, port, request, total, clients))
            if cpu is not None:  # the server's own CPU time per request: steadier under load
                cpu[name][1].append((_cpu_seconds(cpu[name][0]) - used) / total)
            rates[name].append(total / seconds)
            latencies[name] += lat
    out = {}
    for name in servers:
        lat = sorted(latencies[name])
        rate = statistics.median(rates[name])
        p50 = statistics.median(lat) * 1000
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
        spread = ", ".join(f"{r:.0f}" for r in rates[name])
        print(
            f"{name:>9}: {rate:8.0f} req/s   p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   "
            f"({rounds} x {total} requests, {clients} clients; rounds: {spread})"
        )
        out[name] = (rate, p50, p99)
        if best is not None:  # on a loaded machine the best round is the least disturbed
            best[name] = max(rates[name])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument(
        "--rounds", type=int, default=5, help="turns per server; the median round counts"
    )
    parser.add_argument(
        "--observability",
        action="store_true",
        help="compare the gateway with tracing off, tracing on (OTLP to a local receiver), "
        "metrics on, and as shipped",
    )
    parser.add_argument(
        "--modes",
        default="off,tracing,metrics,shipped",
        help="with --observability: which settings to run (comma-separated; default all)",
    )
    parser.add_argument(
        "--baseline",
        metavar="SRC",
        help="with --observability: also run the gateway from this src directory ('today')",
    )
    parser.add_argument(
        "--audit",
        choices=("sqlite", "memory"),
        default="sqlite",
        help="sqlite: `webward serve` as shipped (default); memory: the gateway's own cost",
    )
    parser.add_argument(
        "--src",
        metavar="SRC",
        help="run ours from this src directory (another checkout: a before/after figure)",
    )
    parser.add_argument(
        "--before",
        metavar="SRC",
        help="also run the gateway from this src directory (the tree before a change), taking "
        "turns with ours and the anchor in the same rounds: a before/after figure one run holds",
    )
    parser.add_argument(
        "--floors",
        action="store_true",
        help="also run the bare app with one durable audit write a request (audit), and with "
        "the shipped metrics and call log around it (audit+obs): what auditing alone leaves",
    )
    parser.add_argument(
        "--anchor-loop",
        choices=("asyncio", "uvloop"),
        help="the anchor's event loop, when ours (--src) runs on another than this tree picks",
    )
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT / "src"))
    from webward._gateway import hash_token
    from webward._serving import fastest_stack

    stack = fastest_stack()  # what `webward serve` picks here; the anchor runs on the same
    if args.anchor_loop:  # an older `webward serve` (--src) ran anyio's default loop
        stack = type(stack)(stack.http, args.anchor_loop)

    origin, page_url = serve_page(PAGE)

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "webward.toml"
        config.write_text(
            "\n".join(
                [
                    "[network]",
                    'allow_ranges = ["127.0.0.1/32"]',
                    "[policy]",
                    "robots = false",
                    "[state]",
                    f"dir = {json.dumps(str(Path(tmp) / 'state'))}",
                    "[agents.bench]",
                    'tier = "connected"',
                    f'token_sha256 = "{hash_token(TOKEN)}"',
                ]
            )
            + "\n",
            encoding="utf-8",
        )
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env["PYTHONPATH"] = str(Path(args.src).resolve() if args.src else ROOT / "src")
        env.pop("WEBWARD_CONFIG", None)
        body = json.dumps({"url": page_url}).encode()

        if args.audit == "sqlite":
            command = [sys.executable, "-m", "webward.cli", "serve", "--port", "0"]
            command += ["--config", str(config)]
        else:
            command = [sys.executable, "-c", MEMORY_AUDIT_GATEWAY, str(config)]
        if args.observability:
            return _observability(args, command, config, env, body)
        procs: list[subprocess.Popen[str]] = []
        try:
            ours, host, port = _spawn(command, env)
            procs.append(ours)
            request = _request(port, body)

            async def first() -> bytes:
                reader, writer = await asyncio.open_connection(host, port)
                try:
                    return await _one(reader, writer, request)
                finally:
                    writer.close()

            sample = asyncio.run(first())  # fetches the page once; the rest are cache hits
            body_file = Path(tmp) / "body.json"
            body_file.write_bytes(sample)
            anchor_command = [sys.executable, "-c", ANCHOR_APP, str(body_file)]
            anchor, a_host, a_port = _spawn([*anchor_command, stack.http, stack.loop], env)
            procs.append(anchor)
            cpu: dict[str, tuple[int, list[float]]] = {
                "ours": (ours.pid, []),
                "anchor": (anchor.pid, []),
            }
            servers = {
                "ours": (host, port, request),
                "anchor": (a_host, a_port, _request(a_port, body)),
            }
            if args.floors:
                for name in ("audit", "audit+obs"):
                    floor_state = Path(tmp) / name  # a store of its own, as ours has
                    floor_config = Path(tmp) / f"{name}.toml"
                    floor_config.write_text(
                        config.read_text(encoding="utf-8").replace(
                            json.dumps(str(Path(tmp) / "state")), json.dumps(str(floor_state))
                        ),
                        encoding="utf-8",
                    )
                    floor_command = [sys.executable, "-c", FLOOR_APP, str(floor_config)]
                    proc, f_host, f_port = _spawn([*floor_command, str(body_file), name], env)
                    procs.append(proc)
                    servers[name] = (f_host, f_port, _request(f_port, body))
                    cpu[name] = (proc.pid, [])
            if args.before:
                _spawn_tree("before", args.before, command, env, body, procs, servers, cpu)
                asyncio.run(_load(*servers["before"], 1, 1))  # its first read fetches the page
            results = _measure(servers, args.requests, args.clients, args.rounds, cpu=cpu)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(15)
    origin.shutdown()

    (our_rate, our_p50, our_p99), (anchor_rate, anchor_p50, anchor_p99) = (
        results["ours"],
        results["anchor"],
    )
    ratio = our_rate / anchor_rate
    # The servers' own CPU per request: the figure that holds when the load generator, on the
    # same cores, is what limits the rate (the median round of each).
    our_cpu, anchor_cpu = (statistics.median(cpu[name][1]) for name in ("ours", "anchor"))
    print(
        f"stack: ours {stack.describe()} (webward serve), anchor {stack.describe()} "
        "(bare ASGI app on uvicorn)"
    )
    print(
        f"gateway: ours {our_rate:.0f} req/s, anchor {anchor_rate:.0f} req/s, "
        f"ratio {ratio:.2f} (audit: {args.audit})"
    )
    by_cpu = anchor_cpu / our_cpu
    print(
        f"gateway requests per server CPU second: ours {1 / our_cpu:.0f}, "
        f"anchor {1 / anchor_cpu:.0f}, ratio {by_cpu:.2f} "
        f"({our_cpu * 1e6:.0f} vs {anchor_cpu * 1e6:.0f} us/request)"
    )
    print(
        f"latency: ours p50 {our_p50:.1f} ms p99 {our_p99:.1f} ms; "
        f"anchor p50 {anchor_p50:.1f} ms p99 {anchor_p99:.1f} ms; response {len(sample)} bytes"
    )
    print(
        f"target: ratio >= 0.5 -> rate {'met' if ratio >= 0.5 else 'NOT met'}, "
        f"server CPU {'met' if by_cpu >= 0.5 else 'NOT met'}"
    )
    for name in ("audit", "audit+obs"):
        if name in results:
            floor_cpu = statistics.median(cpu[name][1])
            print(
                f"floor {name}: {results[name][0]:.0f} req/s, ratio "
                f"{results[name][0] / anchor_rate:.2f}; server CPU {floor_cpu * 1e6:.0f} "
                f"us/request, ratio {anchor_cpu / floor_cpu:.2f} (the bare app and one durable "
                f"audit record a request{', with metrics and call log' if '+' in name else ''})"
            )
    if "before" in results:
        before_cpu = statistics.median(cpu["before"][1])
        print(
            f"gateway before ({args.before}): {results['before'][0]:.0f} req/s, ratio "
            f"{results['before'][0] / anchor_rate:.2f}; server CPU {before_cpu * 1e6:.0f} us/request, "
            f"ratio {anchor_cpu / before_cpu:.2f}"
        )
    return 0


def _observability(
    args: argparse.Namespace,
    command: list[str],
    config: Path,
    env: dict[str, str],
    body: bytes,
) -> int:
    """One gateway per observability setting, taking turns in the same rounds."""
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _OTLPSink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    base = config.read_text(encoding="utf-8")
    quiet = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
    otlp = {
        **quiet,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink.server_address[1]}",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
    }
    modes: dict[str, tuple[str, dict[str, str]]] = {
        "off": ('metrics = false\ncall_log = "off"', quiet),
        "tracing": ('metrics = false\ncall_log = "off"', otlp),
        "metrics": ('metrics = true\ncall_log = "off"', quiet),
        "shipped": ("", quiet),
    }
    procs: list[subprocess.Popen[str]] = []
    servers: dict[str, tuple[str, int, bytes]] = {}
    cpu: dict[str, tuple[int, list[float]]] = {}
    try:
        if args.baseline:
            _spawn_tree("today", args.baseline, command, quiet, body, procs, servers, cpu)
        for name in args.modes.split(","):
            section, mode_env = modes[name]
            mode_config = config.with_name(f"webward-{name}.toml")
            mode_config.write_text(f"{base}[observability]\n{section}\n", encoding="utf-8")
            mode_command = [str(mode_config) if c == str(config) else c for c in command]
            proc, host, port = _spawn(mode_command, mode_env)
            procs.append(proc)
            servers[name] = (host, port, _request(port, body))
            cpu[name] = (proc.pid, [])
        for host, port, request in servers.values():  # each reads the page once; then cache hits
            asyncio.run(_load(host, port, request, 1, 1))
        best: dict[str, float] = {}
        results = _measure(servers, args.requests, args.clients, args.rounds, best, cpu)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(15)
        sink.shutdown()
    first = next(iter(results))
    for name, (rate, _, _) in results.items():
        print(
            f"{name:>8}: median {rate / results[first][0]:6.3f} x {first}, "
            f"best round {best[name]:.0f} req/s = {best[name] / best[first]:6.3f} x {first}"
        )
    per_request = {name: statistics.median(used) for name, (_, used) in cpu.items()}
    for name, seconds in per_request.items():
        print(
            f"{name:>8}: server CPU {seconds * 1e6:6.0f} us/request (median round) = "
            f"{per_request[first] / seconds:6.3f} x {first} in requests per CPU second"
        )
    print(f"OTLP exports received: {_OTLPSink.exports}")
    if "today" in results and "off" in results:
        median = results["off"][0] / results["today"][0]
        top = best["off"] / best["today"]
        by_cpu = per_request["today"] / per_request["off"]
        verdict = "met" if by_cpu >= 0.97 else "NOT met"
        print(
            f"target: off within 3 % of today -> by server CPU {by_cpu:.3f} ({verdict}); "
            f"rate median {median:.3f}, best round {top:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
