"""Main-content extraction benchmark: webward's reader against three anchors, side by side.

    python bench/extraction.py /work/shared/data/extraction-dev/ [--repeat 3] [--skip mcp-fetch]

DIR holds ``html/<id>.html.gz`` and ``ground-truth.json`` (``{id: {"url", "articleBody"}}``), a
subset of Scrapinghub's article-extraction-benchmark. It is read in place, never copied.

Scoring follows DIR's README (the benchmark's convention): lowercase ``\\w+`` tokens compared
as multisets with ``articleBody``; Markdown link targets ``(url)`` removed first; precision and
recall averaged over pages, F1 from the two averages; an empty output scores 0.

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
No network: everything runs on local files.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

Extractor = Callable[[bytes, str, str], str]

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("dir", type=Path, help="the extraction-dev directory")
    parser.add_argument("--repeat", type=int, default=3, help="timing passes for fast extractors")
    parser.add_argument("--limit", type=int, default=0, help="only the first N pages")
    parser.add_argument("--skip", action="append", default=[], help="an extractor to leave out")
    args = parser.parse_args(argv)

    truth = json.loads((args.dir / "ground-truth.json").read_text(encoding="utf-8"))
    ids = sorted(truth)[: args.limit or None]

    from webward._convert import decode_text

    pages: list[tuple[str, bytes, str, str]] = []
    for page_id in ids:
        body = gzip.decompress((args.dir / "html" / f"{page_id}.html.gz").read_bytes())
        html, _ = decode_text(body, None, html=True)
        pages.append((page_id, body, html, truth[page_id]["url"]))

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

    outputs: dict[str, dict[str, str]] = {name: {} for name in extractors}
    best: dict[str, float] = {}
    for rep in range(max(1, args.repeat)):
        spent = dict.fromkeys(extractors, 0.0)
        for page_id, body, html, url in pages:
            for name, run in extractors.items():
                if rep > 0 and name == "mcp-fetch":
                    continue
                start = time.perf_counter()
                out = run(body, html, url)
                spent[name] += time.perf_counter() - start
                outputs[name][page_id] = out
        for name, seconds in spent.items():
            if rep == 0 or name != "mcp-fetch":
                best[name] = min(best.get(name, float("inf")), seconds)

    rows = {}
    for name in extractors:
        p_sum = r_sum = 0.0
        chars = empty = 0
        for page_id, *_ in pages:
            out = outputs[name][page_id]
            p, r = precision_recall(out, truth[page_id]["articleBody"])
            p_sum, r_sum, chars = p_sum + p, r_sum + r, chars + len(out)
            empty += not out.strip()
        n = len(pages)
        p, r = p_sum / n, r_sum / n
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        rows[name] = {
            "p": p,
            "r": r,
            "f1": f1,
            "pps": n / best[name] if best[name] else 0.0,
            "chars": chars / n,
            "empty": empty,
        }

    print(
        f"{len(pages)} pages from {args.dir} "
        f"(cpu count {os.cpu_count()}, best of {args.repeat} passes)"
    )
    for name, note in notes.items():
        print(f"note: {name} ran in {note}")
    print()
    print(f"| {'extractor':<12} | precision | recall |    F1 | pages/s | chars/page | empty |")
    print(f"|{'-' * 14}|-----------|--------|-------|---------|------------|-------|")
    for name, row in rows.items():
        print(
            f"| {name:<12} | {row['p']:9.3f} | {row['r']:6.3f} | {row['f1']:5.3f} | "
            f"{row['pps']:7.1f} | {row['chars']:10.0f} | {row['empty']:5d} |"
        )
    print()

    ours = rows.get("webward")
    if ours is None:
        return 0
    others = {k: v for k, v in rows.items() if k != "webward"}
    verdicts = []
    if others:
        top = max(others, key=lambda k: others[k]["f1"])
        ratio = ours["f1"] / others[top]["f1"] if others[top]["f1"] else float("inf")
        print(
            f"f1: ours {ours['f1']:.3f}, anchor({top}) {others[top]['f1']:.3f}, ratio {ratio:.2f}"
        )
        verdicts.append(("F1 at least the best anchor", ours["f1"] >= others[top]["f1"]))
    if "trafilatura" in rows:
        anchor = rows["trafilatura"]["pps"]
        print(
            f"speed: ours {ours['pps']:.1f} pages/s, anchor(trafilatura) {anchor:.1f} pages/s, "
            f"ratio {ours['pps'] / anchor:.2f}"
        )
        verdicts.append(("speed at least trafilatura's", ours["pps"] >= anchor))
    if "mcp-fetch" in rows:
        anchor = rows["mcp-fetch"]["chars"]
        print(
            f"chars: ours {ours['chars']:.0f} per page, anchor(mcp-fetch) {anchor:.0f} per page, "
            f"ratio {ours['chars'] / anchor:.2f}"
        )
        verdicts.append(("fewer characters per page than mcp-fetch", ours["chars"] < anchor))
    print()
    for label, met in verdicts:
        print(f"target {'met' if met else 'MISSED'}: {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
