"""Find in page: the passages of a page's text that best match a query, ranked with BM25.

Pure: no I/O. The text searched is the very text the windows index (the converted page,
prepared for the envelope), so a passage's ``offset`` is a valid ``offset`` for the next read
and the window from there starts with the passage.

Blocks: the text is cut at blank lines (Markdown paragraphs, headings, list and code blocks);
a block longer than :data:`MAX_BLOCK_CHARS` is cut again at line ends, else at sentence ends,
else where a window would cut it; a block shorter than :data:`MIN_BLOCK_CHARS` (a heading, a
date line) is joined to the block after it, so a heading is found with the paragraph it heads.

Ranking: BM25 (``bm25s``, Lucene's variant, k1 = 1.5, b = 0.75) over the blocks' lowercase word
tokens (a word of one character counts: "7", "B"), English stop words left out (and the
single letters of "I" and contractions: :data:`STOP_WORDS`), case folded and accents left out
("cafe" finds "Caf\u00e9", written precomposed or with a combining mark: :func:`_fold`), other
combining marks kept in their words; CJK (past U+FFFF too), Thai,
Lao, Myanmar and Khmer characters count one token each, since those scripts do not put spaces
between words. Ties go to the earlier block. Blocks that share no word with
the query are never returned.

Why ``bm25s``: it is maintained (releases through 2026), needs only NumPy (its SciPy and
Numba speed-ups are optional and unused here), and scores a page's few hundred blocks in about
a millisecond; ``rank-bm25``, the other common choice, has had no release since 2022.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ._models import Passage
from ._window import NOTICES, _cut

__all__ = [
    "MAX_BLOCK_CHARS",
    "MAX_PASSAGES",
    "MIN_BLOCK_CHARS",
    "STOP_WORDS",
    "Block",
    "blocks",
    "find",
]

#: Passages handed back per call, best first.
MAX_PASSAGES = 5
#: A block longer than this is cut into smaller ones, so a passage is a quotable span.
MAX_BLOCK_CHARS = 1200
#: A block shorter than this joins the block after it.
MIN_BLOCK_CHARS = 80

_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*\s+")
# Scripts written without spaces between words: CJK, and Thai, Lao, Myanmar and Khmer.
_CJK = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
    # CJK Extension B and later (U+20000..U+3FFFF): rare characters, names and old texts.
    "\U00020000-\U0003ffff"
)
# Marks that are part of a word though \w leaves them out: combining accents, and the vowel
# signs and viramas of the Indic scripts (Devanagari to Sinhala), so "दिल्ली" is one word and not
# pieces of one letter each.
_MARKS = "\u0300-\u036f\u0900-\u0963\u0966-\u0dff"
# One token per character of those scripts; other words, of one word character or more: a
# step's or version's number ("step 7", "Version 7"), a letter that names something ("plan
# B", "C"). (Only two or more counted once: "step 7" found every step alike, "7" nothing.)
_TOKEN_PATTERN = rf"(?u)[{_CJK}]|(?:(?![{_CJK}])[\w{_MARKS}]){{2,}}|(?![{_CJK}])\w"
#: Words left out of the ranking: Lucene's English stop words (bm25s's "en", written out:
#: bm25s takes a few tenths of a second to import, paid on the first query only), and the
#: single letters that are nearly always an English pronoun or a contraction's piece ("I",
#: "it's", "don't", "I'd", "I'm"), which every block of prose holds and no query means.
# fmt: off
STOP_WORDS = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
    "d", "i", "m", "s", "t",
)
# fmt: on


@dataclass(frozen=True)
class Block:
    """A span ``text[offset:end]`` of the page."""

    offset: int
    end: int


def _split_long(text: str, offset: int, end: int) -> list[Block]:
    """``text[offset:end]`` in pieces of at most MAX_BLOCK_CHARS, cut at the latest line end,
    else sentence end, in the second half of each piece."""
    out: list[Block] = []
    while end - offset > MAX_BLOCK_CHARS:
        limit = offset + MAX_BLOCK_CHARS
        floor = offset + MAX_BLOCK_CHARS // 2
        cut = text.rfind("\n", floor, limit) + 1
        if cut <= floor:
            cut = 0
            for match in _SENTENCE_END.finditer(text, floor, limit):
                cut = match.end()
        if cut <= floor:
            cut = _cut(text, offset, MAX_BLOCK_CHARS)
        out.append(Block(offset, cut))
        offset = cut
    if end > offset:
        out.append(Block(offset, end))
    return out


def blocks(text: str) -> list[Block]:
    """The blocks of ``text`` in order; they never overlap and skip only blank-line runs."""
    spans: list[Block] = []
    start = 0
    for match in _BLANK_LINES.finditer(text):
        if match.start() > start:
            spans.append(Block(start, match.start()))
        start = match.end()
    if len(text) > start:
        spans.append(Block(start, len(text)))
    joined: list[Block] = []
    pending: int | None = None  # where a short block waiting to join the next one starts
    for span in spans:
        begin = span.offset if pending is None else pending
        if span.end - begin < MIN_BLOCK_CHARS:
            pending = begin
            continue
        pending = None
        joined.extend(_split_long(text, begin, span.end))
    if pending is not None:
        if joined and spans[-1].end - joined[-1].offset <= MAX_BLOCK_CHARS:
            joined[-1] = Block(joined[-1].offset, spans[-1].end)  # a short tail joins the last
        else:
            joined.append(Block(pending, spans[-1].end))
    return joined


#: Whether :func:`load_ranker` has completed once. Not ``"bm25s" in sys.modules``: the import
#: puts it there as it begins, so a call made during another's import (0.2-0.4 s) took the
#: ranker for loaded and asked for its page first.
_loaded = False


def ranker_loaded() -> bool:
    """Whether :func:`load_ranker` has nothing left to do."""
    return _loaded


def load_ranker() -> None:
    """Import the ranker (a few tenths of a second the first time; nothing after)."""
    global _loaded
    import bm25s  # type: ignore[import-untyped]  # noqa: F401  # bm25s ships no type information

    _loaded = True


# The accents of Latin, Greek and Cyrillic letters, once decomposed (U+0300..U+036F).
_ACCENTS = re.compile("[\u0300-\u036f]+")


def _fold(text: str) -> str:
    """``text`` as words are compared: case folded ("Stra\u00dfe" as "strasse"), and accents
    left out whether written as one character or as a letter and a combining mark, so "cafe",
    "caf\u00e9" and "cafe\u0301" are one word (a page in NFD shared no word with a query in
    NFC, and Greek capitals, written without accents, none with a query with them). Only the
    words are folded: blocks keep their offsets in the text as it is."""
    if text.isascii():
        return text.lower()
    text = _ACCENTS.sub("", unicodedata.normalize("NFD", text.casefold()))
    return unicodedata.normalize("NFC", text)  # Hangul syllables and the like, recomposed


def _tokenize(texts: list[str]) -> list[list[str]]:
    # Loaded by load_ranker before the read (see there).
    import bm25s

    tokens: list[list[str]] = bm25s.tokenize(
        [_fold(text) for text in texts],
        lower=True,
        token_pattern=_TOKEN_PATTERN,
        stopwords=list(STOP_WORDS),
        return_ids=False,
        show_progress=False,
    )
    return tokens


def rank(text: str, query: str) -> list[tuple[Block, float]]:
    """Every block of ``text`` that shares a word with ``query``, best BM25 score first."""
    import bm25s

    spans = blocks(text)
    query_tokens = _tokenize([query])[0]
    if not spans or not query_tokens:
        return []
    corpus = _tokenize([text[b.offset : b.end] for b in spans])
    wanted = set(query_tokens)
    if not any(wanted.intersection(tokens) for tokens in corpus):
        # Nothing to rank (and BM25 of a corpus without a word divides by zero).
        return []
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(corpus, show_progress=False)
    scores = retriever.get_scores(query_tokens)
    ranked = [
        (spans[i], float(scores[i]))
        for i in range(len(spans))
        if scores[i] > 0 and wanted.intersection(corpus[i])
    ]
    ranked.sort(key=lambda item: (-item[1], item[0].offset))
    return ranked


def find(text: str, query: str, max_chars: int) -> tuple[str, tuple[Passage, ...]]:
    """The rendering of the best passages (at most MAX_PASSAGES, at most ``max_chars``
    characters of page text in all) and the passages themselves.

    The rendering names each passage's range in the page (``[1] characters 1200\u20131850 of
    81234; pass offset=1200 to read the page from here``) above its text.
    """
    if text in NOTICES:  # a notice, not the page's text (see _window.make_window)
        return text, ()
    total = len(text)
    chosen: list[Passage] = []
    pieces: list[str] = []
    budget = max_chars
    for block, score in rank(text, query)[:MAX_PASSAGES]:
        if budget <= 0:
            break
        end = block.end
        if end - block.offset > budget:
            end = _cut(text, block.offset, budget)
        budget -= end - block.offset
        chosen.append(Passage(offset=block.offset, end=end, score=round(score, 3)))
        pieces.append(
            f"[{len(chosen)}] characters {block.offset}\u2013{end} of {total}; pass "
            f"offset={block.offset} to read the page from here\n\n{text[block.offset : end]}"
        )
    if not chosen:
        if not _tokenize([query])[0]:
            # Said apart: "matches the query" sent a model asking "how to install it" off to
            # page through the whole text, when other words of its question would find it.
            return (
                f"the query holds no word to look for in this page ({total} characters): "
                'only common words such as "the" and "of", or punctuation; ask with words '
                "the passage would hold, or read it in windows with offset",
                (),
            )
        return (
            f"no passage of this page ({total} characters) matches the query; "
            "read it in windows with offset instead",
            (),
        )
    noun = "passage" if len(chosen) == 1 else "passages"
    head = f"{len(chosen)} {noun} of {total} characters matching the query, best first"
    return head + "\n\n" + "\n\n".join(pieces), tuple(chosen)
