"""Benchmark: the whole read path, ``Web.fetch`` of every window of a page, beside httpx +
trafilatura on the same pages in the same run.

    python bench/wholepath.py [--rounds 2] [--limit 0] [--profile FILE]

The pages are the two extraction development sets (``../shared/data/extraction-dev/html`` and
``../shared/data/extraction-dev-readability/*/source.html.gz``, read by path at run time, never
copied), served by uvicorn on 127.0.0.1 in a subprocess, with a ``robots.txt`` that allows all.

Ours: ``Web.fetch`` of window 0, then of every next window until the page ends, with robots.txt
on, the default limits (rate raised so the benchmark is not throttled), the default page cache,
an in-memory audit, the envelope and the conversion pool, exactly as a library caller gets them.
Anchor: ``httpx.AsyncClient.get`` then ``trafilatura.extract(..., output_format="markdown")``
on the same page, in the same process, one page at a time.

Printed per set and overall, wall and CPU per page (the machine is shared: CPU per page is the
steadier figure; ours counts the conversion workers' CPU too, read from /proc):

    name: ours X ms, anchor Y ms, ratio Z        (ratio = ours / anchor; below 1 is faster)

Each round reads every page under a fresh query string, so no round is served from the cache.

Library paging: every window of a long page (about 270,000 characters), ours reading the
windows after the first from the page cache, the anchor the same ``Web`` with the page cache
off (each window downloaded and converted again). No network beyond 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx

from webward import Settings, StaticResolver, Web
from webward._cache import NullPageCache
from webward.testing import MemoryAuditSink

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
if not DATA.is_dir():  # run from /work/main or a worktree under /work/wt
    DATA = Path("/work/shared/data")

APP = """
import gzip, json, os
pages = {}
for name, path in json.loads(os.environ["WEBWARD_BENCH_PAGES"]).items():
    with gzip.open(path, "rb") as f:
        pages["/" + name] = f.read()
pages["/long"] = (
    b"<html><head><title>Long</title></head><body><article><h1>Long</h1>"
    + b"".join(b"<p>Paragraph %d of a long page that an agent reads window by window, "
               b"with enough words in it to make the windows count.</p>" % i
               for i in range(2000))
    + b"</article></body></html>"
)
robots = b"User-agent: *\\nAllow: /\\n"
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path == "/robots.txt":
        body, kind, status = robots, b"text/plain", 200
    elif path in pages:
        body, kind, status = pages[path], b"text/html; charset=utf-8", 200
    else:
        body, kind, status = b"not found", b"text/plain", 404
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", kind),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
"""


def page_sets() -> dict[str, dict[str, str]]:
    """Per set: served name -> path of the gzipped page."""
    article = {
        f"a/{p.name.removesuffix('.html.gz')}": str(p)
        for p in sorted((DATA / "extraction-dev" / "html").glob("*.html.gz"))
    }
    readability = {
        f"r/{p.parent.name}": str(p)
        for p in sorted((DATA / "extraction-dev-readability").glob("*/source.html.gz"))
    }
    return {"extraction-dev": article, "extraction-dev-readability": readability}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) a process and its reaped children (a browser's) have used,
    from /proc; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def cpu_now(server_pid: int) -> dict[int, float]:
    """CPU seconds by process: this one (as 0) and its helpers (the conversion zygote and its
    workers, a renderer), the page server excluded: it serves both sides alike."""
    helpers = [p for p in _descendants(os.getpid()) if p != server_pid]
    helpers = [p for p in helpers if server_pid not in (p, *_ancestors(p))]
    return {0: time.process_time(), **{p: _cpu_of(p) for p in helpers}}


def cpu_spent(before: dict[int, float], server_pid: int) -> float:
    """CPU seconds spent since ``before``: by the processes alive now (a helper that ended
    meanwhile, a killed worker, takes its share with it rather than subtracting its life)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in cpu_now(server_pid).items())


def _ancestors(pid: int) -> list[int]:
    out = []
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        out.append(pid)
    return out


async def measure(
    urls: list[str], read: Callable[[str], Awaitable[None]], server_pid: int
) -> tuple[float, float]:
    """Wall and CPU seconds per page, the pages read one after another."""
    cpu, wall = cpu_now(server_pid), time.perf_counter()
    for url in urls:
        await read(url)
    n = len(urls)
    return (time.perf_counter() - wall) / n, cpu_spent(cpu, server_pid) / n


def line(name: str, ours: float, anchor: float) -> str:
    return f"{name}: ours {ours * 1000:.1f} ms, anchor {anchor * 1000:.1f} ms, ratio {ours / anchor:.2f}"


async def main(rounds: int, limit: int, windows_out: list[int]) -> list[str]:
    sets = page_sets()
    if limit:
        sets = {k: dict(list(v.items())[:limit]) for k, v in sets.items()}
    all_pages = {name: path for pages in sets.values() for name, path in pages.items()}
    port = free_port()
    appdir = Path(os.environ.get("TMPDIR", "/tmp")) / "webward-bench-wholepath"
    appdir.mkdir(exist_ok=True)
    (appdir / "benchapp.py").write_text(APP)
    import json

    env = {**os.environ, "WEBWARD_BENCH_PAGES": json.dumps(all_pages)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "benchapp:app", "--host", "127.0.0.1", "--port",
         str(port), "--log-level", "warning", "--no-access-log"],
        cwd=appdir,
        env=env,
    )  # fmt: skip
    out: list[str] = []
    try:
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                await anyio.sleep(0.05)
        base = f"http://127.0.0.1:{port}/"
        settings = Settings().replace(
            {
                "network": {"allow_ranges": ["127.0.0.1/32"]},
                "policy": {"default_tier": "connected", "robots": True},
                "limits": {"per_host_rate": 1e6, "per_host_burst": 10**6},
            }
        )
        import trafilatura

        async with (
            Web(settings, StaticResolver({}), audit=MemoryAuditSink()) as web,
            httpx.AsyncClient(trust_env=False) as client,
        ):

            async def ours(url: str) -> None:
                page = await web.fetch(url)
                windows = 1
                while page.window.next_offset is not None:
                    page = await web.fetch(url, offset=page.window.next_offset)
                    windows += 1
                windows_out.append(windows)

            async def anchor(url: str) -> None:
                r = await client.get(url)
                r.raise_for_status()
                trafilatura.extract(r.text, output_format="markdown", include_tables=True)

            # Warm both sides (imports, the conversion zygote, connections) on one page of
            # each set, outside the figures: a server reads pages all day.
            await web._converter.start()
            for pages in sets.values():
                first = next(iter(pages))
                await ours(f"{base}{first}?warm")
                await anchor(f"{base}{first}?warm")
            totals: dict[str, list[float]] = {}
            for name, pages in sets.items():
                for r in range(rounds):
                    urls = [f"{base}{p}?round={r}" for p in pages]
                    # Alternate the order, so neither side always reads a warmer machine.
                    if r % 2:
                        a = await measure(urls, anchor, proc.pid)
                        o = await measure(urls, ours, proc.pid)
                    else:
                        o = await measure(urls, ours, proc.pid)
                        a = await measure(urls, anchor, proc.pid)
                    for key, value in zip(("ow", "oc", "aw", "ac"), (*o, *a), strict=True):
                        totals.setdefault(f"{name}/{key}", []).append(value)
                        totals.setdefault(f"all/{key}", []).append(value)
            # Library paging: every window of a long page, read from the page cache (ours)
            # or downloaded and converted again for every window (anchor: the cache off).
            async with Web(
                settings, StaticResolver({}), audit=MemoryAuditSink(), page_cache=NullPageCache()
            ) as uncached:

                async def page_through(reader: Web, url: str) -> int:
                    page, windows = await reader.fetch(url), 1
                    while page.window.next_offset is not None:
                        page = await reader.fetch(url, offset=page.window.next_offset)
                        windows += 1
                    return windows

                paging: dict[str, list[float]] = {"ours": [], "anchor": []}
                windows = 0
                for r in range(rounds):
                    for side, reader in (("ours", web), ("anchor", uncached)):
                        cpu, wall = cpu_now(proc.pid), time.perf_counter()
                        windows = await page_through(reader, f"{base}long?paging={r}")
                        paging[side].append(time.perf_counter() - wall)
                        paging[side].append(cpu_spent(cpu, proc.pid))
                ours_wall = sum(paging["ours"][0::2]) / rounds
                anchor_wall = sum(paging["anchor"][0::2]) / rounds
                out.append(line(f"library paging {windows} windows (wall)", ours_wall, anchor_wall))
                ours_cpu = sum(paging["ours"][1::2]) / rounds
                anchor_cpu = sum(paging["anchor"][1::2]) / rounds
                out.append(line(f"library paging {windows} windows (CPU)", ours_cpu, anchor_cpu))
            for name in (*sets, "all"):

                def mean(key: str, name: str = name) -> float:
                    values = totals[f"{name}/{key}"]
                    return sum(values) / len(values)

                label = "whole path" if name == "all" else f"whole path {name}"
                out.append(line(f"{label} wall per page", mean("ow"), mean("aw")))
                out.append(line(f"{label} CPU per page", mean("oc"), mean("ac")))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return out


def run() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=2, help="reads of each set per side")
    parser.add_argument("--limit", type=int, default=0, help="at most this many pages a set")
    parser.add_argument("--profile", help="write a cProfile of the run to this file")
    args = parser.parse_args()
    windows: list[int] = []
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
        lines = anyio.run(main, args.rounds, args.limit, windows)
        profiler.disable()
        profiler.dump_stats(args.profile)
    else:
        lines = anyio.run(main, args.rounds, args.limit, windows)
    print(f"# {len(windows)} page reads, {sum(windows)} windows; load {os.getloadavg()[0]:.2f}")
    for text in lines:
        print(text)


if __name__ == "__main__":
    run()
