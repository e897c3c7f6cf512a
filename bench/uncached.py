"""Uncached throughput: many concurrent reads of DISTINCT ~100 kB pages, beside httpx + trafilatura.

    python bench/uncached.py [--pages 200] [--web-clients 200] [--gateway-clients 50,200]
                             [--rounds 1] [--cases web,gateway]

A loopback origin (its own process) serves ``--pages`` distinct article pages of about 100 kB
(``/p/<n>``: generated words, headings, a list and a table, a navigation bar). Every read is a
miss: nothing is cached, so each one downloads and converts a page. Two cases, ours and the
anchor taking turns in every round (fresh processes each time, so no cache survives):

- **web**: one process makes all ``--web-clients`` reads at once.
  *ours*: ``Web.fetch`` as shipped (SQLite audit in a temp state dir, conversions in its worker
  pool, started before the clock starts, as a server starts it). *anchor*: ``httpx.AsyncClient``
  (no connection cap) and ``trafilatura.extract(..., output_format="markdown")`` in a
  ``concurrent.futures.ProcessPoolExecutor`` with one process per core (the size of ours),
  its workers warmed up before the clock starts.
- **gateway**: ``--pages`` reads through an HTTP server, ``C`` clients at a time (one
  keep-alive connection each) for each ``C`` of ``--gateway-clients``.
  *ours*: ``webward serve``. *anchor*: a bare ASGI app on the same uvicorn and stack that
  fetches with httpx and extracts with trafilatura in the same process pool.

Per side: wall time, peak RSS (of the whole process tree, converter processes included, as
PSS so that pages shared by forked processes count once; sampled every 20 ms), CPU time per
page read (user and system, of the same tree, from its start to its end; on a shared machine
the steadier figure), p50/p99 latency over every call, and what the calls got (200;
``overloaded`` 503s, which carry ``Retry-After``; ``timeout``; other errors). Host limits are raised so that the one
loopback host is not what holds the reads back (a real crowd reads many hosts); the read
deadline stays the default. Each figure prints as ``name: ours X, anchor Y, ratio Z`` with
ratio = ours / anchor (times and memory: at most 1 means ours is no worse; pages read per
second: at least 1). Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"
FETCH_PATH = "/v1/capabilities/web:page.fetch@1"
WORKERS = os.cpu_count() or 1

_WORDS = [
    "owl",
    "heron",
    "river",
    "stone",
    "market",
    "winter",
    "garden",
    "letter",
    "engine",
    "harbour",
    "lantern",
    "meadow",
    "signal",
    "copper",
    "window",
    "valley",
    "thunder",
    "orchard",
    "pilgrim",
    "canvas",
    "silver",
    "ladder",
    "compass",
    "island",
    "forest",
    "bridge",
    "mirror",
    "candle",
    "marble",
    "saddle",
    "anchor",
    "feather",
    "kettle",
    "violin",
    "basket",
    "tunnel",
]


def page(n: int, size: int = 100_000) -> bytes:
    """Page ``n``: an article of about ``size`` bytes, different for every ``n``."""
    rng = random.Random(n)
    nav = "".join(f'<li><a href="/section/{i}">Section {i}</a></li>' for i in range(30))
    parts = [
        f"<html><head><title>Article {n}</title></head><body>",
        f"<nav><ul>{nav}</ul></nav><article><h1>Article {n}: the {rng.choice(_WORDS)}</h1>",
    ]
    length = sum(map(len, parts))
    section = 0
    while length < size:
        if rng.random() < 0.08:
            section += 1
            chunk = f"<h2>Part {section} of article {n}</h2>"
        elif rng.random() < 0.04:
            items = "".join(f"<li>{' '.join(rng.choices(_WORDS, k=6))}</li>" for _ in range(5))
            chunk = f"<ul>{items}</ul>"
        elif rng.random() < 0.02:
            rows = "".join(
                f"<tr><td>{rng.choice(_WORDS)}</td><td>{rng.randint(1, 999)}</td></tr>"
                for _ in range(6)
            )
            chunk = f"<table><tr><th>name</th><th>count</th></tr>{rows}</table>"
        else:
            chunk = f"<p>{' '.join(rng.choices(_WORDS, k=rng.randint(40, 90)))}.</p>"
        parts.append(chunk)
        length += len(chunk)
    parts.append("</article><footer>Footer links and a copyright line.</footer></body></html>")
    return "".join(parts).encode()


# ---- the origin (its own process) -----------------------------------------------------------


def _origin_main(pages: int) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    bodies = [page(n) for n in range(pages)]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            match = re.fullmatch(r"/p/(\d+)", self.path)
            if match is None or int(match.group(1)) >= pages:
                self.send_error(404)
                return
            body = bodies[int(match.group(1))]
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


# ---- the readers -----------------------------------------------------------------------------


def _extract(html: str, url: str) -> str:
    import trafilatura

    return trafilatura.extract(html, url=url, output_format="markdown") or ""


def _warm_pool(pool: Any) -> None:
    """Every worker started and trafilatura imported in it, before any clock starts."""
    sample = page(10**6).decode()
    for future in [pool.submit(_extract, sample, "http://warm.invalid/") for _ in range(WORKERS)]:
        future.result()


def _settings(state: str) -> Any:
    from webward import Settings

    return Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"robots": False},
            "state": {"dir": state},
            "limits": {
                "per_host_rate": 100_000.0,
                "per_host_burst": 100_000,
                "per_host_concurrency": 1_000,
            },
        }
    )


async def _timed(call: Any) -> tuple[float, str]:
    started = time.perf_counter()
    try:
        await call
        outcome = "ok"
    except Exception as exc:
        outcome = getattr(exc, "code", type(exc).__name__)
    return time.perf_counter() - started, outcome


async def _at_once(calls: Any) -> dict[str, Any]:
    """``calls`` run at once: the wall time, the CPU seconds this process and its descendants
    (converter processes) spent meanwhile, and each call's (seconds, outcome)."""
    cpu, started = _tree_cpu(os.getpid()), time.perf_counter()
    results = await asyncio.gather(*(_timed(call) for call in calls))
    wall = time.perf_counter() - started
    return {"wall": wall, "cpu": _tree_cpu(os.getpid()) - cpu, "results": results}


async def _web_ours(urls: list[str], state: str) -> dict[str, Any]:
    from webward import Web

    async with Web(_settings(state)) as web:
        await web.start_workers()
        return await _at_once(web.fetch(url, agent="bench", tier="connected") for url in urls)


async def _anchor_read(client: Any, pool: Any, url: str) -> str:
    response = await client.get(url)
    response.raise_for_status()
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(pool, _extract, response.text, url)


async def _web_anchor(urls: list[str]) -> dict[str, Any]:
    from concurrent.futures import ProcessPoolExecutor

    import httpx

    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    with ProcessPoolExecutor(WORKERS) as pool:
        _warm_pool(pool)
        async with httpx.AsyncClient(limits=limits, timeout=12.0, trust_env=False) as client:
            return await _at_once(_anchor_read(client, pool, u) for u in urls)


def _reader_main(side: str, port: int, pages: int) -> None:
    urls = [f"http://127.0.0.1:{port}/p/{n}" for n in range(pages)]
    with tempfile.TemporaryDirectory() as state:
        if side == "ours":
            measured = asyncio.run(_web_ours(urls, state))
        else:
            measured = asyncio.run(_web_anchor(urls))
    print(json.dumps(measured), flush=True)


ANCHOR_SERVER = """
import asyncio, json, socket, sys
from concurrent.futures import ProcessPoolExecutor

import httpx
import uvicorn

sys.path.insert(0, sys.argv[1])
from uncached import WORKERS, _anchor_read, _warm_pool

state = {}


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
                state["client"] = httpx.AsyncClient(limits=limits, timeout=12.0, trust_env=False)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await state["client"].aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    try:
        text = await _anchor_read(state["client"], state["pool"], json.loads(body)["url"])
        status, answer = 200, json.dumps({"text": text}).encode()
    except Exception as exc:
        status, answer = 502, json.dumps({"error": str(exc)}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


if __name__ == "__main__":
    state["pool"] = ProcessPoolExecutor(WORKERS)
    _warm_pool(state["pool"])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    print(f"anchor on http://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, ws="none", server_header=False,
        http=sys.argv[2], loop=sys.argv[3], proxy_headers=False,
    )
    uvicorn.Server(config).run(sockets=[sock])
"""


# ---- measuring -------------------------------------------------------------------------------


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (field 3 on)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def _tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                children.setdefault(int(_stat(int(entry))[1]), []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo += children.get(found[-1], [])
    return found


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants, as PSS: a page that forked
    processes share counts once in all, not once per process that maps it."""
    total = 0
    for current in _tree(pid):
        try:
            with open(f"/proc/{current}/smaps_rollup") as f:
                pss = re.search(r"^Pss:\s+(\d+) kB", f.read(), re.M)
            total += int(pss.group(1)) * 1024 if pss else 0
        except (OSError, ValueError):
            continue
    return total


def _tree_cpu(pid: int) -> float:
    """CPU seconds (user and system) spent so far by ``pid`` and its living descendants."""
    total = 0
    for current in _tree(pid):
        try:
            fields = _stat(current)
            total += int(fields[11]) + int(fields[12])
        except (OSError, ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


class _PeakRSS:
    """The peak RSS of a process tree, sampled every 20 ms on a thread while in use."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss(self.pid))
            self._stop.wait(0.02)

    def __enter__(self) -> _PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _summary(
    wall: float, cpu: float, results: list[tuple[float, str]], peak: int
) -> dict[str, Any]:
    latencies = sorted(seconds for seconds, _ in results)
    outcomes: dict[str, int] = {}
    for _, outcome in results:
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return {
        "goodput": outcomes.get("ok", 0) / wall,  # pages read per second
        "cpu": 1000 * cpu / max(1, outcomes.get("ok", 0)),  # ms of CPU per page read
        "wall": wall,
        "rss": peak / 2**20,
        "p50": statistics.median(latencies),
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "outcomes": outcomes,
    }


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["PYTHONPATH"] = str(ROOT / "src")
    env.pop("WEBWARD_CONFIG", None)
    return env


def _web_round(side: str, port: int, pages: int) -> dict[str, Any]:
    args = [sys.executable, __file__, "--reader", side, "--port", str(port), "--pages", str(pages)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=_env())
    with _PeakRSS(proc.pid) as rss:
        out, _ = proc.communicate()
    data = json.loads(out.strip().splitlines()[-1])
    return _summary(data["wall"], data["cpu"], [tuple(r) for r in data["results"]], rss.peak)


def _spawn_server(args: list[str]) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        args,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=_env(),
        start_new_session=True,  # its process group: what it leaves is stopped with it
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if match is None:
        proc.kill()
        raise SystemExit(f"server did not start: {line}{proc.stderr.read()}")
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # the call log, drained
    return proc, int(match.group(1))


async def _post(port: int, urls: list[str], clients: int) -> tuple[float, list[tuple[float, str]]]:
    results: list[tuple[float, str]] = []
    todo = list(reversed(urls))

    async def client() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while todo:
                body = json.dumps({"url": todo.pop()}).encode()
                head = (
                    f"POST {FETCH_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                    f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n"
                )
                started = time.perf_counter()
                writer.write(head.encode() + body)
                answer = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", answer)
                assert length is not None, answer
                payload = await reader.readexactly(int(length.group(1)))
                status = int(answer.split(b" ", 2)[1])
                outcome = "ok"
                if status != 200:
                    code = json.loads(payload).get("error", {})
                    outcome = code.get("code", str(status)) if isinstance(code, dict) else "502"
                    if status == 503 and b"\r\nretry-after:" not in answer.lower():
                        outcome = "503 without Retry-After"
                results.append((time.perf_counter() - started, outcome))
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return time.perf_counter() - started, results


def _gateway_round(side: str, port: int, pages: int, clients: int, tmp: str) -> dict[str, Any]:
    from webward._serving import fastest_stack

    stack = fastest_stack()
    if side == "ours":
        from webward._tokens import hash_token

        config = Path(tmp) / f"webward-{time.monotonic_ns()}.toml"
        state = Path(tmp) / f"state-{time.monotonic_ns()}"
        config.write_text(
            "\n".join(
                [
                    "[network]",
                    'allow_ranges = ["127.0.0.1/32"]',
                    "[policy]",
                    "robots = false",
                    "[limits]",
                    "per_host_rate = 100000.0",
                    "per_host_burst = 100000",
                    "per_host_concurrency = 1000",
                    "[state]",
                    f"dir = {json.dumps(str(state))}",
                    "[agents.bench]",
                    'tier = "connected"',
                    f'token_sha256 = "{hash_token(TOKEN)}"',
                ]
            )
            + "\n",
            encoding="utf-8",
        )
        args = [
            sys.executable,
            "-m",
            "webward.cli",
            "serve",
            "--port",
            "0",
            "--config",
            str(config),
        ]
    else:
        args = [sys.executable, "-c", ANCHOR_SERVER, str(ROOT / "bench"), stack.http, stack.loop]
    server, server_port = _spawn_server(args)
    try:
        urls = [f"http://127.0.0.1:{port}/p/{n}" for n in range(pages)]
        with _PeakRSS(server.pid) as rss:
            cpu = _tree_cpu(server.pid)
            wall, results = asyncio.run(_post(server_port, urls, clients))
            cpu = _tree_cpu(server.pid) - cpu
    finally:
        server.terminate()
        server.wait(30)
        # The anchor's pool workers outlived its server (orphans, idle, 48 MB each, a pair a
        # round), and a later round ran beside them.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
    return _summary(wall, cpu, results, rss.peak)


def _line(name: str, ours: float, anchor: float, unit: str) -> None:
    print(f"{name}: ours {ours:.2f} {unit}, anchor {anchor:.2f} {unit}, ratio {ours / anchor:.2f}")


def _report(case: str, rounds: dict[str, list[dict[str, Any]]], deadline: float) -> None:
    median = {
        side: {
            key: statistics.median(r[key] for r in runs)
            for key in ("wall", "rss", "p50", "p99", "goodput", "cpu")
        }
        for side, runs in rounds.items()
    }
    for side, runs in rounds.items():
        for r in runs:
            print(
                f"  {case} {side:>6}: wall {r['wall']:6.2f} s  CPU {r['cpu']:5.1f} ms/page  "
                f"peak RSS {r['rss']:6.0f} MiB  "
                f"p50 {r['p50']:6.2f} s  p99 {r['p99']:6.2f} s  {r['outcomes']}"
            )
    ours, anchor = median["ours"], median["anchor"]
    _line(f"{case} wall", ours["wall"], anchor["wall"], "s")
    _line(f"{case} peak RSS", ours["rss"], anchor["rss"], "MiB")
    _line(f"{case} p50", ours["p50"], anchor["p50"], "s")
    _line(f"{case} p99", ours["p99"], anchor["p99"], "s")
    # Pages read (200 OK) per second: a side that refuses calls finishes early, so wall time
    # alone flatters it; this is the figure that says how much reading got done.
    _line(f"{case} pages read per second", ours["goodput"], anchor["goodput"], "/s")
    # The steadier figure on a shared machine: what each page read cost the reader's whole
    # process tree (its converter processes included), whatever else the machine was doing.
    _line(f"{case} CPU per page read", ours["cpu"], anchor["cpu"], "ms")
    shed = statistics.median(r["outcomes"].get("overloaded", 0) for r in rounds["ours"])
    late = statistics.median(r["outcomes"].get("timeout", 0) for r in rounds["ours"])
    within = ours["p99"] <= deadline + 1
    print(
        f"{case}: overloaded (503) {shed:.0f}, timeout {late:.0f}; p99 within the {deadline:g} s read deadline + 1 s "
        f"-> {'met' if within else 'NOT met'}; wall and RSS no worse than the anchor -> "
        f"{'met' if ours['wall'] <= anchor['wall'] and ours['rss'] <= anchor['rss'] else 'NOT met'}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--web-clients", type=int, default=200, help="reads at once (web case)")
    parser.add_argument("--gateway-clients", default="50,200", help="comma-separated")
    parser.add_argument("--rounds", type=int, default=1, help="turns per side; the median counts")
    parser.add_argument("--cases", default="web,gateway")
    parser.add_argument("--origin", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--reader", choices=("ours", "anchor"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    if args.origin is not None:
        _origin_main(args.origin)
        return 0
    if args.reader is not None:
        _reader_main(args.reader, args.port, args.pages)
        return 0

    from webward._serving import fastest_stack
    from webward._settings import LimitsSettings

    deadline = LimitsSettings().fetch_timeout_s
    origin = subprocess.Popen(
        [sys.executable, __file__, "--origin", str(args.pages)],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert origin.stdout is not None
    port = int(origin.stdout.readline())
    print(
        f"{args.pages} distinct pages of {len(page(0)) // 1000} kB; {WORKERS} cores; anchor: "
        f"httpx + trafilatura in a process pool of {WORKERS}; servers on "
        f"{fastest_stack().describe()}"
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cases = args.cases.split(",")
            if "web" in cases:
                runs: dict[str, list[dict[str, Any]]] = {"ours": [], "anchor": []}
                for _ in range(args.rounds):
                    for side in runs:
                        runs[side].append(_web_round(side, port, args.pages))
                _report(f"uncached web {args.pages} at once", runs, deadline)
            if "gateway" in cases:
                for clients in (int(c) for c in args.gateway_clients.split(",")):
                    runs = {"ours": [], "anchor": []}
                    for _ in range(args.rounds):
                        for side in runs:
                            runs[side].append(_gateway_round(side, port, args.pages, clients, tmp))
                    _report(f"uncached gateway {clients} clients", runs, deadline)
    finally:
        origin.terminate()
        origin.wait(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
