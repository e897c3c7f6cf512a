"""One benchmark report: every benchmark in bench/ with short settings, one Markdown table.

    python bench/report.py [--out bench/REPORT.md] [--only NAME ...] [--timeout-scale 1.0]

Runs each benchmark of :data:`BENCHES` (the one table of per-bench arguments, short enough that
the whole report takes a few minutes) as its own process, reads every line it prints in the
benchmarks' common form ::

    name: ours X, anchor Y, ratio Z

(the anchor may carry its label, ``anchor(httpx) Y`` or ``trafilatura Y``; text after the ratio
is kept as a note), and writes one Markdown table, a row per figure: ours, the anchor, the
ratio. A benchmark that fails, times out or is missing gets a row saying so; one that prints no
such line gets a row saying that. A script in bench/ that the table does not name is listed as
not run. The header notes the date, the commit and the machine's load, since the machine may
be shared. Loopback only, as every benchmark is.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA = ROOT.parents[1] / "shared" / "data"
if not DATA.is_dir():  # a checkout under /work/wt/NAME or /work/main
    DATA = Path("/work/shared/data")


@dataclass(frozen=True)
class Bench:
    label: str  # what the rows measure, as the report names it
    script: str  # a file in bench/
    args: tuple[str, ...] = ()
    timeout_s: float = 300.0


#: Every benchmark the report runs, in report order, with its short settings.
BENCHES: tuple[Bench, ...] = (
    Bench("fetch overhead", "fetch.py", ("--requests", "300"), 180),
    Bench("whole path and library paging", "wholepath.py", ("--rounds", "3"), 600),
    Bench(
        "extraction F1 and speed (extraction-dev)",
        "extraction.py",
        (str(DATA / "extraction-dev"), "--repeat", "1", "--skip", "mcp-fetch"),
        600,
    ),
    Bench(
        "extraction F1 and speed (extraction-dev-readability)",
        "extraction.py",
        (str(DATA / "extraction-dev-readability"), "--repeat", "1", "--skip", "mcp-fetch"),
        600,
    ),
    Bench("CLI start-up and paging", "cli.py", ("--runs", "2"), 300),
    Bench("gateway rate", "gateway.py", ("--requests", "2000", "--rounds", "1"), 300),
    Bench("MCP calls per second", "mcp_calls.py", ("--calls", "100"), 180),
    Bench("observability cost, no exporter", "telemetry.py", ("--calls", "2000"), 180),
    Bench(
        "peak memory at 200 concurrent reads",
        "uncached.py",
        ("--pages", "200", "--web-clients", "200", "--gateway-clients", "200", "--cases", "web"),
        600,
    ),
    Bench("bounded conversion", "convert.py", ("--anchor-limit", "3", "--skip-load"), 300),
    Bench("connection pool", "pool.py", ("--hosts", "30", "--requests", "200"), 120),
    Bench("page cache", "cache.py", ("--puts", "300"), 180),
    Bench("find in page", "find.py", (), 300),
    Bench("console audit view", "console.py", ("--rows", "20000", "--runs", "3"), 300),
)

# "name: ours X, anchor Y, ratio Z[ note]": values are split on ", " (a comma then a space),
# so "1,234" stays one value.
_LINE = re.compile(
    r"^(?P<name>[^:\n]+?):\s+(?P<pre>(?:[A-Za-z0-9-]+ )?)ours (?P<ours>.+?), (?P<anchor>.+?), "
    r"ratio (?P<ratio>[<>]?\s*[^\s,;]+)(?P<note>.*)$"
)


@dataclass(frozen=True)
class Row:
    figure: str
    ours: str
    anchor: str
    ratio: str


def parse(label: str, output: str) -> list[Row]:
    """The rows of every standard line in ``output``, named ``label: name``."""
    rows = []
    for line in output.splitlines():
        match = _LINE.match(line.strip())
        if match is None:
            continue
        name = match["name"].strip()
        if match["pre"].strip():  # "F1 ours ...": the measure's name goes with the figure's
            name = f"{name} {match['pre'].strip()}"
        note = match["note"].strip(" ,;")
        if note:
            name = f"{name} {note}"
        anchor = re.sub(r"^(?:best )?anchor\s*", "", match["anchor"].strip())
        rows.append(Row(f"{label}: {name}", match["ours"].strip(), anchor, match["ratio"]))
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def run(bench: Bench, scale: float) -> tuple[list[Row], str]:
    """The bench's rows, and a note on how it ran."""
    script = BENCH / bench.script
    if not script.is_file():
        return [], f"not run: bench/{bench.script} is missing"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, str(script), *bench.args],
            capture_output=True,
            text=True,
            timeout=bench.timeout_s * scale,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return [], f"failed: stopped after {bench.timeout_s * scale:.0f} s"
    spent = time.monotonic() - started
    rows = parse(bench.label, done.stdout)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1][:200]
        return rows, f"failed (exit {done.returncode}, {spent:.0f} s): {last}"
    if not rows:
        return [], f"ran ({spent:.0f} s); prints no `ours, anchor, ratio` line"
    return rows, f"ran ({spent:.0f} s)"


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=BENCH / "REPORT.md")
    parser.add_argument("--only", nargs="*", help="scripts to run (e.g. fetch.py); default all")
    parser.add_argument("--timeout-scale", type=float, default=1.0, help="scale every timeout")
    args = parser.parse_args()

    benches = [b for b in BENCHES if not args.only or b.script in args.only]
    load_before = os.getloadavg()
    started = dt.datetime.now(dt.UTC)
    lines = [
        "| figure | ours | anchor | ratio |",
        "| --- | --- | --- | --- |",
    ]
    notes = []
    for bench in benches:
        print(f"running bench/{bench.script} {' '.join(bench.args)}", file=sys.stderr, flush=True)
        rows, how = run(bench, args.timeout_scale)
        for row in rows:
            cells = (row.figure, row.ours, row.anchor, row.ratio)
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        if not rows:
            lines.append(f"| {_cell(bench.label)} | | | {_cell(how)} |")
        notes.append(f"- `bench/{bench.script} {' '.join(bench.args)}`: {how}")
    named = {b.script for b in BENCHES} | {Path(__file__).name}
    for script in sorted(p.name for p in BENCH.glob("*.py")):
        if script not in named and not script.startswith("_"):
            notes.append(f"- `bench/{script}`: not run (no settings in bench/report.py's table)")
    ended = dt.datetime.now(dt.UTC)
    load_after = os.getloadavg()
    header = [
        "# Benchmark report",
        "",
        f"Written by `python bench/report.py` on {started:%Y-%m-%d}, {started:%H:%M} to "
        f"{ended:%H:%M} UTC, at commit {_commit()}; {os.cpu_count()} cores, Python "
        f"{platform.python_version()}. Load average (1, 5, 15 min) "
        f"{', '.join(f'{x:.2f}' for x in load_before)} at the start and "
        f"{', '.join(f'{x:.2f}' for x in load_after)} at the end: the machine may be shared, "
        "so wall-clock figures move with its load and CPU figures are the steadier ones.",
        "",
        "Each row is one line a benchmark printed as `name: ours X, anchor Y, ratio Z` (ratio = "
        "ours / anchor unless the benchmark says otherwise: below 1 is better for times and "
        "memory, above 1 for rates and F1). Short settings: see the list below the table and "
        "each script's docstring for what it measures.",
        "",
    ]
    footer = ["", "## How each benchmark ran", "", *notes, ""]
    text = "\n".join([*header, *lines, *footer])
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
