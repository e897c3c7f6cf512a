"""Benchmark: webward's guarded, pinned read beside a bare httpx client, in one run.

Serves a small text page from uvicorn on 127.0.0.1 (a subprocess) and reads it N times at
concurrency 1 and 50, through (a) ``Web.fetch`` with the page cache off (guard, policy, limits,
pinned transport, caps, conversion, window, envelope, audit in memory) and (b) a bare
``httpx.AsyncClient`` with keep-alive. Prints ``name: ours X, anchor Y, ratio Z`` (time per
read; ratio = ours / anchor). Loopback only; bounded request counts.

    python bench/fetch.py [--requests 2000]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx

from webward import Settings, StaticResolver, Web
from webward._cache import NullPageCache
from webward.testing import MemoryAuditSink

APP = """
body = (b"plain text line for the benchmark\\n" * 60)
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def timed(n: int, concurrency: int, one: object) -> float:
    """Seconds per request for n requests at the given concurrency."""
    sem = anyio.Semaphore(concurrency)

    async def worker() -> None:
        async with sem:
            await one()  # type: ignore[operator]

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(worker)
    return (time.perf_counter() - start) / n


async def main(requests: int) -> None:
    port = free_port()
    appdir = Path(os.environ.get("TMPDIR", "/tmp")) / "webward-bench-fetch"
    appdir.mkdir(exist_ok=True)
    (appdir / "benchapp.py").write_text(APP)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "benchapp:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
        ],
        cwd=appdir,
    )
    try:
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                await anyio.sleep(0.05)
        url = f"http://127.0.0.1:{port}/page"
        settings = Settings().replace(
            {
                "network": {"allow_ranges": ["127.0.0.1/32"]},
                "policy": {"default_tier": "connected", "robots": False},
                "limits": {
                    "per_host_rate": 1e9,
                    "per_host_burst": 10**9,
                    "per_host_concurrency": 1000,
                },
            }
        )
        async with (
            Web(
                settings, StaticResolver({}), audit=MemoryAuditSink(), page_cache=NullPageCache()
            ) as web,
            httpx.AsyncClient(trust_env=False, limits=httpx.Limits(max_connections=100)) as client,
        ):

            async def ours() -> None:
                await web.fetch(url)

            async def anchor() -> None:
                r = await client.get(url)
                r.raise_for_status()
                r.text  # noqa: B018 - decode like webward does

            await timed(50, 10, ours)  # warm both pools
            await timed(50, 10, anchor)
            for conc in (1, 50):
                a = await timed(requests, conc, anchor)
                o = await timed(requests, conc, ours)
                print(
                    f"fetch c={conc} (ms/read): ours {o * 1000:.3f}, anchor(httpx) {a * 1000:.3f}, ratio {o / a:.2f}"
                )
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    anyio.run(main, parser.parse_args().requests)
