"""Benchmark: the whole read path, ``Web.fetch`` of every window of a page, beside httpx +
trafilatura on the same pages in the same run.

    python bench/wholepath.py [--rounds 3] [--limit 0] [--profile FILE]

The pages are the two extraction development sets (``../shared/data/extraction-dev/html`` and
``../shared/data/extraction-dev-readability/*/source.html.gz``, read by path at run time, never
copied), served by uvicorn on 127.0.0.1 in a subprocess, with a ``robots.txt`` that allows all.

Ours: ``Web.fetch`` of window 0, then of every next window until the page ends, with robots.txt
on, the default limits (rate raised so the benchmark is not throttled), the default page cache,
an in-memory audit, the envelope and the conversion pool, exactly as a library caller gets them.
Anchor: ``httpx.AsyncClient.get`` then ``trafilatura.extract(..., output_format="markdown")``
on the same page, in the same process, one page at a time.

The two sides are interleaved page by page: each page is read by ours and by the anchor one
right after the other, which side goes first alternating from page to page and from round to
round, so a busy moment of the shared machine falls on both alike. Each read is measured alone:
CPU seconds of this process (``time.process_time``, every thread) plus those its helper
processes (the conversion zygote and workers, a renderer; read from /proc) spent meanwhile, the
page server excluded (it serves both sides alike), and the looking-up of helpers kept outside
the measured span. Each round reads every page of both sets under a fresh query string, so no
round is served from the cache. Printed per set and overall, the median over rounds of each
round's wall and CPU per page (CPU is the steadier figure on a shared machine), each round's
CPU ratio and the load average in a ``#`` line:

    name: ours X ms, anchor Y ms, ratio Z        (ratio = ours / anchor; below 1 is faster)

Library paging: every window of a long page (about 270,000 characters), ours reading the
windows after the first from the page cache, the anchor the same ``Web`` with the page cache
off (each window downloaded and converted again). No network beyond 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
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


def helpers_of(server_pid: int) -> list[int]:
    """This process's helper processes (the conversion zygote and its workers, a renderer),
    the page server and its children excluded: it serves both sides alike."""
    return [
        p for p in _descendants(os.getpid()) if p != server_pid and server_pid not in _ancestors(p)
    ]


async def measure_one(
    url: str, read: Callable[[str], Awaitable[None]], server_pid: int
) -> tuple[float, float]:
    """Wall and CPU seconds of one read: this process's CPU (every thread) and its helpers'.
    Helpers are looked up outside the measured span; one born during the read (a replaced
    worker) counts with its whole life, one that ended takes its share with it."""
    before = {p: _cpu_of(p) for p in helpers_of(server_pid)}
    cpu, wall = time.process_time(), time.perf_counter()
    await read(url)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    helpers = sum(_cpu_of(p) - before.get(p, 0.0) for p in helpers_of(server_pid))
    return wall, cpu + helpers


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
            # Per round, per set and side: [wall seconds, CPU seconds, pages].
            rounds_out: list[dict[tuple[str, str], list[float]]] = []
            for r in range(rounds):
                sums: dict[tuple[str, str], list[float]] = {}
                index = 0
                for name, pages in sets.items():
                    for page in pages:
                        url = f"{base}{page}?round={r}"
                        sides = (("ours", ours), ("anchor", anchor))
                        # Alternate which side reads first, page by page and round by round.
                        for side, read in sides if (index + r) % 2 == 0 else sides[::-1]:
                            wall, cpu = await measure_one(url, read, proc.pid)
                            for key in ((name, side), ("all", side)):
                                acc = sums.setdefault(key, [0.0, 0.0, 0])
                                acc[0] += wall
                                acc[1] += cpu
                                acc[2] += 1
                        index += 1
                rounds_out.append(sums)
                ratio = sums[("all", "ours")][1] / sums[("all", "anchor")][1]
                out.append(f"# round {r + 1}: CPU ratio {ratio:.2f}, load {os.getloadavg()[0]:.2f}")
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

                def per_page(side: str, field: int, name: str = name) -> float:
                    """Median over rounds of the round's seconds per page."""
                    return statistics.median(
                        [rd[(name, side)][field] / rd[(name, side)][2] for rd in rounds_out]
                    )

                label = "whole path" if name == "all" else f"whole path {name}"
                out.append(
                    line(f"{label} wall per page", per_page("ours", 0), per_page("anchor", 0))
                )
                out.append(
                    line(f"{label} CPU per page", per_page("ours", 1), per_page("anchor", 1))
                )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return out


def run() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="reads of every page per side")
    parser.add_argument("--limit", type=int, default=0, help="at most this many pages a set")
    parser.add_argument("--profile", help="write a cProfile of the run to this file")
    args = parser.parse_args()
    windows: list[int] = []
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
        lines = anyio.run(main, args.rounds, args.limit, windows)
        profiler.disable()
        profiler.dump_stats(args.profile)
    else:
        lines = anyio.run(main, args.rounds, args.limit, windows)
    print(f"# {len(windows)} page reads by ours, {sum(windows)} windows; load {load} at the start,")
    print(f"# {', '.join(f'{x:.2f}' for x in os.getloadavg())} at the end (1, 5, 15 min)")
    for text in lines:
        print(text)


if __name__ == "__main__":
    run()
