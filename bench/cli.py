"""Benchmark: the command line's start-up CPU and its paging, each beside an anchor, in one run.

1. Start-up (CPU seconds of a whole new process, user + system, median of --runs):
   ``webward --help`` beside ``python -c pass``; ``webward fetch`` of a small local page
   beside ``curl`` of the same page. Every fetch reads a URL not read before (a page in the
   state dir's cache would be no read) and is checked to have printed the page's text. Three
   cases: the tiny page as a new user's first command (a new state dir: its databases are
   created and robots.txt is asked), with the CPU the process had spent when its first request
   reached the server and what it spent after that (the read, conversion, audit and output);
   the same page with the state dir in use (robots.txt answer kept); and a short article
   (nav, eight paragraphs, footer: past the whole-page cut, so the main-content extractor
   runs) as a first command.
2. Paging: every 40,000-character window of a ~230,000-character page read by separate
   ``webward fetch --offset N`` processes with the state dir's page and robots.txt cache
   (ours), beside the same with the page cache off, which downloads the page again for every
   window (anchor; its rate budget is raised so that it finishes). Wall seconds for all
   windows, and the requests the server saw.

Prints ``name: ours X, anchor Y, ratio Z`` (ratio = ours / anchor). Loopback only: a
threaded HTTP server on 127.0.0.1 and ``allow_ranges = ["127.0.0.1/32"]``. Run it with the
Python whose webward you measure (a fresh ``pip install .`` venv has no test extras):

    python bench/cli.py [--runs 5]
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

SMALL = (
    b"<html><head><title>Small</title></head><body><h1>Small page</h1>"
    b"<p>A short paragraph of text for the start-up benchmark.</p></body></html>"
)
# A short blog post: about 1,000 characters of text between a menu and a footer.
ARTICLE = (
    b"<!doctype html><html><head><meta charset='utf-8'><title>A short article</title></head>"
    b"<body><nav><a href='/'>Home</a> <a href='/blog'>Blog</a> <a href='/about'>About</a></nav>"
    b"<article><h1>A short article</h1>"
    + b"".join(
        b"<p>Paragraph %d says something about the subject in a sentence or two, as a short"
        b" blog post would, with enough words to count.</p>" % i
        for i in range(8)
    )
    + b"</article><footer>Copyright 2026 Example. <a href='/privacy'>Privacy</a></footer>"
    b"</body></html>"
)
# ~230,000 characters of Markdown once converted: six windows.
LONG = (
    b"<html><head><title>Long</title></head><body><article><h1>Long page</h1>"
    + b"".join(
        b"<p>Paragraph %d of the long page, with enough words to make a real line of text.</p>" % i
        for i in range(2900)
    )
    + b"</article></body></html>"
)


class Server:
    """A threaded HTTP server on 127.0.0.1 that counts requests and calls ``on_request``."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.on_request: Callable[[], None] | None = None
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if outer.on_request is not None:
                    outer.on_request()
                outer.requests.append(self.path)
                path = self.path.split("?", 1)[0]
                body = {"/small": SMALL, "/article": ARTICLE, "/long": LONG}.get(path)
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def child_cpu(command: Sequence[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one run of ``command``, from the kernel's accounting."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"bench: {' '.join(command)} failed: {done.stderr.decode()[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def proc_cpu(pid: int) -> float:
    """CPU seconds a running process has spent so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fetch_phases(
    command: Sequence[str], env: dict[str, str], server: Server, expect: str
) -> tuple[float, float]:
    """(CPU before the first request reached the server, CPU in all) of one fetch process,
    which must print ``expect`` (the page was read and converted, not only asked for)."""
    seen: list[float] = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    server.on_request = lambda: seen.append(proc_cpu(proc.pid)) if not seen else None
    out, err = proc.communicate()
    server.on_request = None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or not seen or expect not in out.decode():
        sys.exit(f"bench: {' '.join(command)} failed: {err.decode()[-500:]}")
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seen[0], total


def fetches(
    server: Server,
    page: str,
    expect: str,
    cfg: Path,
    env: dict[str, str],
    runs: int,
    webward: list[str],
    root: Path | None = None,
) -> tuple[float, float]:
    """Median (CPU before the first request, CPU in all) of ``runs`` fetches of ``page``,
    each of a URL not read before; with ``root``, each in a new state dir under it (a new
    user's first command), else in the state dir of ``env``."""
    phases = []
    for i in range(runs):
        run_env = env
        if root is not None:
            state = Path(tempfile.mkdtemp(prefix="state-", dir=root))
            run_env = {**env, "WEBWARD_STATE_DIR": str(state)}
        url = server.url(f"{page}?{i}-{time.monotonic_ns()}")
        command = [*webward, "fetch", url, "--config", str(cfg)]
        phases.append(fetch_phases(command, run_env, server, expect))
    return statistics.median(p[0] for p in phases), statistics.median(p[1] for p in phases)


def line(name: str, ours: float, anchor: float, unit: str = "s") -> None:
    print(f"{name}: ours {ours:.3f} {unit}, anchor {anchor:.3f} {unit}, ratio {ours / anchor:.2f}")


def config(directory: Path, extra: str = "") -> Path:
    path = directory / "webward.toml"
    path.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\ndefault_tier = "connected"\n' + extra
    )
    return path


def page_through(
    server: Server, url: str, cfg: Path, env: dict[str, str], webward: list[str]
) -> tuple[float, float, int, int]:
    """Wall and CPU seconds to read every window of ``url`` in separate processes, the
    windows read and the requests the server saw."""
    server.requests.clear()
    offset: str | None = "0"
    windows = 0
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    while offset is not None:
        out = subprocess.run(
            [*webward, "fetch", url, "--config", str(cfg), "--offset", offset, "--json"],
            env=env,
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            sys.exit(f"bench: window at {offset} failed: {out.stderr.strip()}")
        window = json.loads(out.stdout)["window"]
        windows += 1
        nxt = window["nextOffset"]
        offset = None if nxt is None else str(nxt)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - start, cpu, windows, len(server.requests)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per start-up figure")
    args = parser.parse_args(argv)
    curl = shutil.which("curl")
    if curl is None:
        sys.exit("bench: curl is needed as the anchor of the fetch figure")
    webward = [sys.executable, "-m", "webward"]
    server = Server()
    with tempfile.TemporaryDirectory(prefix="webward-bench-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "WEBWARD_STATE_DIR": str(root / "state")}
        # Neither the caller's webward settings nor its interpreter switches: with
        # PYTHONDONTWRITEBYTECODE a source checkout would compile every module on every run,
        # and PYTHONUNBUFFERED writes each line alone; a new user's shell has neither.
        for var in (
            "WEBWARD_CONFIG",
            "WEBWARD_TIER",
            "WEBWARD_ALLOW_RANGES",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONUNBUFFERED",
        ):
            env.pop(var, None)
        # Runs follow each other faster than a host's default rate: raise it for this origin.
        cfg = config(root, "[limits]\nper_host_rate = 100\nper_host_burst = 100\n")

        # 1. start-up
        child_cpu([*webward, "--help"], env)  # warm the file cache and the byte-code
        help_cpu = statistics.median(child_cpu([*webward, "--help"], env) for _ in range(args.runs))
        pass_cpu = statistics.median(
            child_cpu([sys.executable, "-c", "pass"], env) for _ in range(args.runs)
        )
        line("startup webward --help vs python -c pass (CPU)", help_cpu, pass_cpu)
        curl_cpu = {
            page: statistics.median(
                child_cpu([curl, "-sS", "-o", "/dev/null", server.url(page)], env)
                for _ in range(args.runs)
            )
            for page in ("/small", "/article")
        }
        fresh = root / "fresh"  # the state dirs of first commands
        fresh.mkdir()
        # The file cache and the byte-code of the read path too, extractor included.
        fetches(server, "/article", "Paragraph 7", cfg, env, 1, webward, fresh)
        small = "Small page"
        first, total = fetches(server, "/small", small, cfg, env, args.runs, webward, fresh)
        line(
            "startup webward fetch small page, first command vs curl (CPU)",
            total,
            curl_cpu["/small"],
        )
        line("  of which before the first request vs python -c pass (CPU)", first, pass_cpu)
        print(
            f"  of which after the first request (read, convert, audit, print): {total - first:.3f} s"
        )
        fetches(server, "/small", small, cfg, env, 1, webward)  # robots.txt answer kept
        _, total = fetches(server, "/small", small, cfg, env, args.runs, webward)
        line(
            "startup webward fetch small page, state dir in use vs curl (CPU)",
            total,
            curl_cpu["/small"],
        )
        first, total = fetches(
            server, "/article", "Paragraph 7", cfg, env, args.runs, webward, fresh
        )
        line(
            "startup webward fetch short article, first command vs curl (CPU)",
            total,
            curl_cpu["/article"],
        )
        line(
            "  of which before the first request (article) vs python -c pass (CPU)", first, pass_cpu
        )

        # 2. paging, each side with a state dir of its own (no robots.txt answer carried over)
        cached = root / "cached"
        cached.mkdir()
        cached_wall, cached_cpu, windows, cached_requests = page_through(
            server,
            server.url("/long"),
            config(cached),
            {**env, "WEBWARD_STATE_DIR": str(cached / "state")},
            webward,
        )
        nocache = root / "nocache"
        nocache.mkdir()
        cfg_nocache = config(
            nocache, "[limits]\npage_cache_ttl_s = 0\nper_host_rate = 100\nper_host_burst = 100\n"
        )
        fresh_wall, fresh_cpu, fresh_windows, fresh_requests = page_through(
            server,
            server.url("/long"),
            cfg_nocache,
            {**env, "WEBWARD_STATE_DIR": str(nocache / "state")},
            webward,
        )
        assert windows == fresh_windows
        line(f"paging {windows} windows in separate processes (wall)", cached_wall, fresh_wall)
        line(f"paging {windows} windows in separate processes (CPU)", cached_cpu, fresh_cpu)
        print(
            f"paging requests seen by the server: ours {cached_requests}, anchor {fresh_requests}"
        )
    server.httpd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
