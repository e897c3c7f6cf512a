"""Main-content extraction benchmark: webward's reader against three anchors on two sets.

    python bench/extraction.py [DIR ...] [--repeat 3] [--half tune|held-out|all] [--skip mcp-fetch]

Each DIR is a development set, read in place, never copied (default: both sets below). Its
layout says which it is and how it is scored, each as its README says:

- ``extraction-dev/`` (Scrapinghub's article-extraction-benchmark, 90 news and blog pages):
  ``html/<id>.html.gz`` and ``ground-truth.json`` (``{id: {"url", "articleBody"}}``). Precision
  and recall averaged over pages, F1 from the two averages.
- ``extraction-dev-readability/`` (65 pages of Mozilla Readability's tests):
  ``<id>/source.html.gz`` and ``<id>/expected.html.gz``, whose lxml ``text_content()`` is the
  gold text. F1 per page, averaged over pages (precision and recall shown are averages too).

Both: lowercase ``\\w+`` tokens compared as multisets with the gold text; Markdown link targets
``(url)`` removed first; an empty output scores 0.

**Tuning and held-out halves.** Each set is split once, the same way on every run: its page ids
are ordered by the SHA-256 of the id (UTF-8), and pages at even positions of that order form the
*tuning* half, pages at odd positions the *held-out* half (45/45 and 33/32 pages). Rules in the
reader are chosen by looking at tuning pages only (``--half tune`` runs just those); the held-out
figures say how the rules do on pages they were not chosen on. Every table shows both halves.
*Overall* is the mean of the two sets' F1 (each set by its own convention), per half.

Extractors:
- ``webward``: ``webward._content.convert`` on the raw bytes (decoding, cleaning, extraction,
  fallback and Markdown tidying all included in its time);
- ``trafilatura``: ``trafilatura.extract(html)`` with its defaults;
- ``readability``: readability-lxml's ``Document(html).summary()`` then markdownify (ATX);
- ``mcp-fetch``: the reference MCP fetch server's ``extract_content_from_html`` (readabilipy +
  markdownify). readabilipy uses Node.js when node and its ``node_modules`` are present; if they
  are not, this bench switches it to its pure-Python mode (instead of letting readabilipy run
  ``npm install``) and says so.

The anchors get the page already decoded to ``str`` (webward's decoder, untimed); webward gets
bytes. Timing is interleaved page by page, so a busy machine slows every extractor alike; with
``--repeat N`` the fast extractors run N passes and the best pass counts (mcp-fetch runs once).
``--per-page FILE`` writes every page's scores as JSON (for looking at tuning pages);
``--json FILE`` writes the tables (F1, precision, recall per set and half, ms per page). No
network: everything runs on local files.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Extractor = Callable[[bytes, str, str], str]

DEFAULT_SETS = (
    Path("/work/shared/data/extraction-dev/"),
    Path("/work/shared/data/extraction-dev-readability/"),
)
HALVES = ("tune", "held-out")
# Readability's tests resolve links against this address.
_READABILITY_URL = "http://fakehost/test/page.html"

_TOKEN = re.compile(r"\w+")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def tokens(text: str) -> collections.Counter[str]:
    """Lowercase word tokens of ``text``, Markdown link targets removed."""
    return collections.Counter(t.lower() for t in _TOKEN.findall(_LINK_TARGET.sub("]", text)))


def precision_recall(output: str, truth: str) -> tuple[float, float]:
    """Token precision and recall of one page (0, 0 for an empty output)."""
    got, want = tokens(output), tokens(truth)
    common = sum((got & want).values())
    precision = common / sum(got.values()) if got else 0.0
    recall = common / sum(want.values()) if want else 0.0
    return precision, recall


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def halves(ids: list[str]) -> dict[str, str]:
    """The fixed split: ids ordered by SHA-256, even positions tune, odd positions held out."""
    ordered = sorted(ids, key=lambda i: hashlib.sha256(i.encode("utf-8")).hexdigest())
    return {page_id: HALVES[n % 2] for n, page_id in enumerate(ordered)}


@dataclass(frozen=True)
class Page:
    id: str
    half: str
    body: bytes
    html: str
    url: str
    truth: str


@dataclass(frozen=True)
class DataSet:
    name: str
    per_page_f1: bool  # the readability set's convention; else F1 of averaged P and R
    pages: list[Page]


def load(directory: Path, only: str) -> DataSet:
    """A development set in either layout; ``only`` keeps one half (or ``all``)."""
    from webward._convert import decode_text

    raw: list[tuple[str, bytes, str, str]] = []  # id, body, url, truth
    truth_file = directory / "ground-truth.json"
    per_page_f1 = not truth_file.exists()
    if not per_page_f1:
        truth = json.loads(truth_file.read_text(encoding="utf-8"))
        for page_id, entry in sorted(truth.items()):
            body = gzip.decompress((directory / "html" / f"{page_id}.html.gz").read_bytes())
            raw.append((page_id, body, entry["url"], entry["articleBody"]))
    else:
        import lxml.html  # type: ignore[import-untyped]

        for page_dir in sorted(p for p in directory.iterdir() if (p / "source.html.gz").exists()):
            body = gzip.decompress((page_dir / "source.html.gz").read_bytes())
            expected = gzip.decompress((page_dir / "expected.html.gz").read_bytes())
            # The expected pages are UTF-8 and declare no charset: lxml given their bytes
            # would read them as Latin-1 ("Itâs"), a wrong word in the gold for every
            # character past ASCII, whichever extractor is scored.
            gold = lxml.html.document_fromstring(expected.decode("utf-8")).text_content()
            raw.append((page_dir.name, body, _READABILITY_URL, gold))
    split = halves([page_id for page_id, *_ in raw])
    pages = []
    for page_id, body, url, gold in raw:
        if only in ("all", split[page_id]):
            html, _ = decode_text(body, None, html=True)
            pages.append(Page(page_id, split[page_id], body, html, url, gold))
    return DataSet(directory.name or str(directory), per_page_f1, pages)


def _webward() -> Extractor:
    from webward._convert import convert
    from webward._settings import LimitsSettings

    limits = LimitsSettings()

    def run(body: bytes, html: str, url: str) -> str:
        page = convert(body, "text/html", url, truncated=False, include_links=False, limits=limits)
        return page.text

    return run


def _trafilatura() -> Extractor:
    import trafilatura

    def run(body: bytes, html: str, url: str) -> str:
        return trafilatura.extract(html) or ""

    return run


def _readability() -> Extractor:
    import markdownify
    from readability import Document

    def run(body: bytes, html: str, url: str) -> str:
        return str(markdownify.markdownify(Document(html).summary(), heading_style=markdownify.ATX))

    return run


def _mcp_fetch() -> tuple[Extractor, str]:
    import readabilipy
    from readabilipy import simple_json

    js = Path(readabilipy.__file__).parent / "javascript" / "node_modules"
    node = simple_json.have_node() if js.is_dir() else False
    if not node:
        # have_node() would otherwise try `npm install`: a bench opens no connections.
        simple_json.have_node = lambda: False  # type: ignore[attr-defined]
    from mcp_server_fetch.server import extract_content_from_html

    def run(body: bytes, html: str, url: str) -> str:
        out = extract_content_from_html(html)
        return "" if out.startswith("<error>") else out

    return run, "Node.js readability" if node else "pure-Python mode (no Node.js readability)"


@dataclass
class Row:
    p: float
    r: float
    f1: float
    n: int


def score(data: DataSet, scores: dict[str, tuple[float, float]], half: str) -> Row | None:
    """One extractor's figures over one half (or ``all``) of a set, by the set's convention."""
    chosen = [page.id for page in data.pages if half in ("all", page.half)]
    if not chosen:
        return None
    n = len(chosen)
    p = sum(scores[i][0] for i in chosen) / n
    r = sum(scores[i][1] for i in chosen) / n
    if data.per_page_f1:
        return Row(p, r, sum(f1(*scores[i]) for i in chosen) / n, n)
    return Row(p, r, f1(p, r), n)


def _cell(row: Row | None) -> str:
    return f"{row.f1:.3f}" if row else "  -  "


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("dirs", type=Path, nargs="*", help="development sets (default: both)")
    parser.add_argument("--repeat", type=int, default=3, help="timing passes for fast extractors")
    parser.add_argument("--limit", type=int, default=0, help="only the first N pages of a set")
    parser.add_argument("--half", choices=(*HALVES, "all"), default="all", help="pages to run")
    parser.add_argument("--skip", action="append", default=[], help="an extractor to leave out")
    parser.add_argument("--per-page", type=Path, help="write per-page scores to this JSON file")
    parser.add_argument("--json", type=Path, help="write the tables to this JSON file")
    args = parser.parse_args(argv)

    sets = [load(d, args.half) for d in (args.dirs or DEFAULT_SETS)]
    if args.limit:
        sets = [DataSet(s.name, s.per_page_f1, s.pages[: args.limit]) for s in sets]

    extractors: dict[str, Extractor] = {}
    notes: dict[str, str] = {}
    factories = (
        ("webward", _webward),
        ("trafilatura", _trafilatura),
        ("readability", _readability),
    )
    for name, factory in factories:
        if name not in args.skip:
            extractors[name] = factory()
    if "mcp-fetch" not in args.skip:
        extractors["mcp-fetch"], notes["mcp-fetch"] = _mcp_fetch()

    # set name -> extractor -> page id -> output; and the best pass's seconds per set
    outputs = {s.name: {name: {} for name in extractors} for s in sets}  # type: ignore[var-annotated]
    best = {s.name: {} for s in sets}  # type: ignore[var-annotated]
    for data in sets:
        for rep in range(max(1, args.repeat)):
            spent = dict.fromkeys(extractors, 0.0)
            for page in data.pages:
                for name, run in extractors.items():
                    if rep > 0 and name == "mcp-fetch":
                        continue
                    start = time.perf_counter()
                    out = run(page.body, page.html, page.url)
                    spent[name] += time.perf_counter() - start
                    outputs[data.name][name][page.id] = out
            for name, seconds in spent.items():
                if rep == 0 or name != "mcp-fetch":
                    best[data.name][name] = min(best[data.name].get(name, float("inf")), seconds)

    per_page: dict[str, dict[str, dict[str, object]]] = {}
    table: dict[str, dict[str, dict[str, Row | None]]] = {}  # set -> extractor -> half -> row
    for data in sets:
        per_page[data.name] = {page.id: {"half": page.half} for page in data.pages}
        table[data.name] = {}
        for name in extractors:
            scores = {}
            for page in data.pages:
                out = outputs[data.name][name][page.id]
                scores[page.id] = precision_recall(out, page.truth)
                per_page[data.name][page.id][name] = [*scores[page.id], len(out)]
            table[data.name][name] = {h: score(data, scores, h) for h in (*HALVES, "all")}

    print(f"cpu count {os.cpu_count()}, best of {args.repeat} passes, pages: {args.half}")
    for name, note in notes.items():
        print(f"note: {name} ran in {note}")
    header = (
        f"| {'extractor':<12} | F1 tune | F1 held-out | F1 all | precision | recall "
        f"| ms/page | chars/page | empty |"
    )
    rule = f"|{'-' * 14}|---------|-------------|--------|-----------|--------|---------|------------|-------|"
    for data in sets:
        n = len(data.pages)
        tuned = sum(page.half == "tune" for page in data.pages)
        convention = "F1 per page, averaged" if data.per_page_f1 else "F1 of averaged P and R"
        print(f"\n{data.name}: {n} pages ({tuned} tune, {n - tuned} held-out); {convention}\n")
        print(header)
        print(rule)
        for name in extractors:
            rows = table[data.name][name]
            every = rows["all"]
            assert every is not None
            chars = sum(len(o) for o in outputs[data.name][name].values()) / n
            empty = sum(not o.strip() for o in outputs[data.name][name].values())
            ms = 1000 * best[data.name][name] / n
            print(
                f"| {name:<12} | {_cell(rows['tune']):>7} | {_cell(rows['held-out']):>11} "
                f"| {every.f1:6.3f} | {every.p:9.3f} | {every.r:6.3f} | {ms:7.1f} "
                f"| {chars:10.0f} | {empty:5d} |"
            )

    if len(sets) > 1:
        print(f"\noverall (mean of the {len(sets)} sets' F1) and time over all pages\n")
        print(f"| {'extractor':<12} | F1 tune | F1 held-out | F1 all | ms/page |")
        print(f"|{'-' * 14}|---------|-------------|--------|---------|")
        total = sum(len(s.pages) for s in sets)
        for name in extractors:
            cells = []
            for h in (*HALVES, "all"):
                rows = [table[s.name][name][h] for s in sets]
                got = [row.f1 for row in rows if row is not None]
                cells.append(f"{sum(got) / len(got):.3f}" if len(got) == len(rows) else "  -  ")
            ms = 1000 * sum(best[s.name][name] for s in sets) / total
            print(f"| {name:<12} | {cells[0]:>7} | {cells[1]:>11} | {cells[2]:>6} | {ms:7.1f} |")

    if args.per_page:
        args.per_page.write_text(json.dumps(per_page, indent=1), encoding="utf-8")
    if args.json:
        summary = {
            data.name: {
                name: {
                    "ms_per_page": 1000 * best[data.name][name] / len(data.pages),
                    **{
                        h: None if row is None else {"f1": row.f1, "p": row.p, "r": row.r}
                        for h, row in table[data.name][name].items()
                    },
                }
                for name in extractors
            }
            for data in sets
        }
        args.json.write_text(json.dumps(summary, indent=1), encoding="utf-8")

    if "webward" not in extractors:
        return 0
    print()
    verdicts = []
    for data in sets:
        for h in (*HALVES,):
            ours = table[data.name]["webward"][h]
            others = {k: v[h] for k, v in table[data.name].items() if k != "webward"}
            if ours is None or not others:
                continue
            top = max(others, key=lambda k: others[k].f1)  # type: ignore[union-attr]
            theirs = others[top]
            assert theirs is not None
            print(
                f"{data.name} {h}: F1 ours {ours.f1:.3f}, best anchor ({top}) {theirs.f1:.3f}, "
                f"ratio {ours.f1 / theirs.f1 if theirs.f1 else float('inf'):.3f}"
            )
            if h == "held-out":
                verdicts.append(
                    (f"{data.name} held-out F1 above the best anchor", ours.f1 > theirs.f1)
                )
                if not data.per_page_f1:
                    verdicts.append((f"{data.name} held-out F1 at least 0.97", ours.f1 >= 0.97))
    if "trafilatura" in extractors:
        ours_s = sum(best[s.name]["webward"] for s in sets)
        theirs_s = sum(best[s.name]["trafilatura"] for s in sets)
        total = sum(len(s.pages) for s in sets)
        print(
            f"speed: ours {1000 * ours_s / total:.1f} ms/page, trafilatura "
            f"{1000 * theirs_s / total:.1f} ms/page, ratio {theirs_s / ours_s:.2f}"
        )
        verdicts.append(("time per page at most trafilatura's", ours_s <= theirs_s))
    print()
    for label, met in verdicts:
        print(f"target {'met' if met else 'MISSED'}: {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
