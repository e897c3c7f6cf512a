"""Find-in-page benchmark: does ``web_fetch(url, query=...)`` rank the right passage first?

    python bench/find.py [/work/shared/data/extraction-dev/] [/work/shared/data/extraction-dev-readability/]

For every page of both development sets (read in place, never copied): webward's reading of the
page (``_convert.convert`` then ``_envelope.prepare_body``, the very text the windows index),
and as the query the first sentence of the page's gold text (the first run of words up to
``.``, ``!``, ``?`` or a line end that has at least 4 words, cut to 40 words). The passage
"holding" it is the block (``_find.blocks``) where the sentence's first words occur in the
reading. A page whose reading does not contain the sentence (the extractor dropped it) is
counted apart, since no ranking can find what is not there.

Prints per set and overall: pages, pages whose reading holds the sentence, and how often the
holding passage ranks first (top-1) and among the passages returned (top-5), as a share of
the pages whose reading holds it. No network: local files only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from webward._convert import convert
from webward._envelope import prepare_body
from webward._find import MAX_PASSAGES, blocks, rank
from webward._settings import LimitsSettings

DEFAULT_SETS = (
    Path("/work/shared/data/extraction-dev/"),
    Path("/work/shared/data/extraction-dev-readability/"),
)
_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"[^\n.!?]+[.!?]?")
_PROBE_WORDS = 8  # the sentence is located in the reading by its first words


def first_sentence(gold: str) -> str | None:
    """The first sentence of ``gold`` with at least 4 words, cut to 40 words."""
    for match in _SENTENCE.finditer(gold):
        words = match.group(0).split()
        if len(_WORD.findall(match.group(0))) >= 4:
            return " ".join(words[:40])[:512]
    return None


def pages(directory: Path) -> Iterator[tuple[str, bytes, str]]:
    """``(id, html bytes, gold text)`` of each page of a set, in either layout."""
    truth_file = directory / "ground-truth.json"
    if truth_file.exists():
        truth = json.loads(truth_file.read_text(encoding="utf-8"))
        for page_id, entry in sorted(truth.items()):
            body = gzip.decompress((directory / "html" / f"{page_id}.html.gz").read_bytes())
            yield page_id, body, entry["articleBody"]
        return
    import lxml.html  # type: ignore[import-untyped]

    for page_dir in sorted(p for p in directory.iterdir() if (p / "source.html.gz").exists()):
        body = gzip.decompress((page_dir / "source.html.gz").read_bytes())
        expected = gzip.decompress((page_dir / "expected.html.gz").read_bytes())
        gold = lxml.html.document_fromstring(expected).text_content()
        yield page_dir.name, body, gold


def holding_block(text: str, sentence: str) -> int | None:
    """The offset of the block of ``text`` where the sentence's first words occur, or None."""
    probe = [w.lower() for w in _WORD.findall(sentence)][:_PROBE_WORDS]
    words = [(m.start(), m.group(0).lower()) for m in _WORD.finditer(text)]
    tokens = [w for _, w in words]
    for i in range(len(tokens) - len(probe) + 1):
        if tokens[i : i + len(probe)] == probe:
            at = words[i][0]
            for block in blocks(text):
                if block.offset <= at < block.end:
                    return block.offset
    return None


def run_set(directory: Path) -> tuple[int, int, int, int, float]:
    """pages, pages holding the sentence, top-1 hits, top-5 hits, seconds spent ranking."""
    limits = LimitsSettings()
    total = held = top1 = top5 = 0
    spent = 0.0
    for _page_id, body, gold in pages(directory):
        total += 1
        sentence = first_sentence(gold)
        if sentence is None:
            continue
        reading = convert(
            body,
            "text/html",
            "https://example.org/",
            truncated=False,
            include_links=False,
            limits=limits,
        )
        text = prepare_body(reading.text)
        target = holding_block(text, sentence)
        if target is None:
            continue
        held += 1
        started = time.perf_counter()
        ranked = rank(text, sentence)
        spent += time.perf_counter() - started
        offsets = [block.offset for block, _score in ranked[:MAX_PASSAGES]]
        top1 += bool(offsets) and offsets[0] == target
        top5 += target in offsets
    return total, held, top1, top5, spent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", type=Path, default=list(DEFAULT_SETS))
    args = parser.parse_args(argv)
    sums = [0, 0, 0, 0]
    spent_all = 0.0
    print("set | pages | reading holds the sentence | top-1 | top-5 | ranking ms/page")
    for directory in args.sets:
        total, held, top1, top5, spent = run_set(directory)
        for i, value in enumerate((total, held, top1, top5)):
            sums[i] += value
        spent_all += spent
        print(
            f"{directory.name} | {total} | {held} | {top1 / max(held, 1):.3f} | "
            f"{top5 / max(held, 1):.3f} | {1000 * spent / max(held, 1):.1f}"
        )
    total, held, top1, top5 = sums
    print(
        f"overall | {total} | {held} | {top1 / max(held, 1):.3f} | {top5 / max(held, 1):.3f} | "
        f"{1000 * spent_all / max(held, 1):.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
