"""The reading controls an agent passes per call: ``max_chars`` (window size, with a token
estimate), ``query`` (find in page, BM25 over the page's blocks) and Markdown for Agents (the
site answers ``text/markdown``), through ``Web.fetch`` against real servers on loopback."""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_models import png_bytes
from hypothesis import given, settings
from hypothesis import strategies as st
from localserver import Request, respond, send, serve
from test_reading import DASH, long_text, text_of, web

from webward import InvalidInput
from webward._find import MAX_BLOCK_CHARS, MAX_PASSAGES, blocks, find
from webward._window import approx_tokens, check_max_chars, make_window

pytestmark = pytest.mark.anyio

SRC = Path(__file__).resolve().parents[1] / "src"

_HEADER = re.compile(
    r"showing characters (\d+)\u2013(\d+) of (\d+)(?:; pass offset=(\d+) to continue)?"
)


# ---- max_chars ------------------------------------------------------------------------------


@given(
    text=st.text(
        alphabet=st.sampled_from(
            ["a", "b", " ", "\n", "\r", "\\", "*", "\u0301", "\u200d", "é", "日"]
        ),
        max_size=400,
    ),
    size=st.integers(min_value=1, max_value=120),
)
@settings(max_examples=300, deadline=None)
def test_windows_of_any_size_tile_the_text_with_exact_headers(text: str, size: int) -> None:
    """For any max_chars, the windows from offset 0 concatenate to the text, each header names
    exactly its range, and each continue hint is where the next window starts."""
    bodies: list[str] = []
    offset = 0
    while True:
        shown, window = make_window(text, offset, size)
        if offset == 0 and len(text) <= size:
            assert shown == text and window.next_offset is None
            bodies.append(shown)
            break
        header, body = shown.split("\n\n", 1)
        m = _HEADER.fullmatch(header)
        assert m is not None, header
        start, end, total = int(m[1]), int(m[2]), int(m[3])
        assert (start, end, total) == (offset, window.end, len(text))
        assert body == text[start:end]
        assert end - start <= size
        bodies.append(body)
        if m[4] is None:
            assert end == len(text) and window.next_offset is None
            break
        assert int(m[4]) == end == window.next_offset
        offset = end
    assert "".join(bodies) == text


@pytest.mark.parametrize("bad", [0, -1, -40_000, 40_001, 10**9, True, 2.5, "ten", "", None])
def test_bad_max_chars_is_refused_in_one_sentence(bad: object) -> None:
    if bad is None:
        assert check_max_chars(bad, 40_000) == 40_000  # not given: the operator's window
        return
    with pytest.raises(InvalidInput) as exc:
        check_max_chars(bad, 40_000)
    assert str(exc.value) == "max_chars must be a whole number from 1 to 40000"


def test_the_token_estimate_follows_the_script() -> None:
    assert approx_tokens("") == 0
    assert approx_tokens("a" * 400) == 100  # ASCII: 4 characters a token
    assert approx_tokens("\u0436" * 400) == 200  # Cyrillic: 2
    assert approx_tokens("\u65e5" * 400) == 400  # CJK: 1


async def test_max_chars_pages_a_page_in_smaller_windows_with_exact_offsets() -> None:
    """Through Web.fetch: windows of max_chars tile the page, the header is exact, the page
    is downloaded once, and each result says about how many tokens it holds."""
    page_text = long_text(25_000)
    with serve(routes={"/t": respond(200, page_text, "text/plain; charset=utf-8")}) as srv:
        async with web() as w:
            for size in (7_000, 9_999):
                bodies: list[str] = []
                offset: int | None = 0
                while offset is not None:
                    page = await w.fetch(srv.url("/t"), offset=offset, max_chars=size)
                    header, body = text_of(page.content).split("\n\n", 1)
                    assert header.startswith(
                        f"showing characters {offset}{DASH}{page.window.end} of 25000"
                    )
                    assert page.window.end - offset <= size
                    assert page.approx_tokens == approx_tokens(page.content)
                    assert page.to_wire()["approxTokens"] == page.approx_tokens
                    assert page.approx_tokens < size  # a window of max_chars stays under its cap
                    bodies.append(body)
                    offset = page.window.next_offset
                assert "".join(bodies) == page_text
    assert len(srv.requests) == 1


async def test_a_remembered_window_is_never_served_for_a_page_read_again() -> None:
    """Windows of a cached page are remembered (cut and weighed once): the same window read
    again is the same text in a fresh envelope, with the token estimate of what is handed
    over. Once the page is read again (``max_age=0``: it changed), its windows are cut
    from the new text, never remembered ones of the old."""
    versions = iter(["Über die Brücke nach 北京. " * 400, "Neue Brücke nach 東京! " * 400])

    def changing(req: Request, sock: socket.socket) -> None:
        send(sock, 200, next(versions).encode(), "text/plain; charset=utf-8")

    with serve(routes={"/t": changing}) as srv:
        async with web() as w:
            first = await w.fetch(srv.url("/t"), offset=3000, max_chars=2000)
            again = await w.fetch(srv.url("/t"), offset=3000, max_chars=2000)
            assert text_of(again.content) == text_of(first.content)
            assert again.content != first.content  # a nonce of its own
            assert "北京" in text_of(first.content)
            for page in (first, again):
                assert page.approx_tokens == approx_tokens(page.content)
            changed = await w.fetch(srv.url("/t"), offset=3000, max_chars=2000, max_age=0)
            assert "東京" in text_of(changed.content) and "北京" not in text_of(changed.content)
            assert changed.approx_tokens == approx_tokens(changed.content)
            assert changed.window.total == len("Neue Brücke nach 東京! " * 400)
    assert len(srv.requests) == 2


@pytest.mark.parametrize("bad", [0, -5, 40_001])
async def test_a_bad_max_chars_is_refused_before_any_connection(bad: int) -> None:
    with serve(routes={"/t": respond(200, "hello", "text/plain")}) as srv:
        async with web() as w:
            with pytest.raises(
                InvalidInput, match=r"^max_chars must be a whole number from 1 to 40000$"
            ):
                await w.fetch(srv.url("/t"), max_chars=bad)
    assert srv.accepts == 0


async def test_max_chars_is_bounded_by_the_operators_limit() -> None:
    with serve(routes={"/t": respond(200, long_text(3000), "text/plain")}) as srv:
        async with web(limits={"max_fetch_text_chars": 1000}) as w:
            page = await w.fetch(srv.url("/t"))
            assert page.window.end == 1000
            with pytest.raises(InvalidInput, match=r"from 1 to 1000$"):
                await w.fetch(srv.url("/t"), max_chars=1001)


# ---- query: find in page --------------------------------------------------------------------

_ARTICLE = "\n\n".join(
    [
        "# Growing tomatoes on a balcony",
        "Tomatoes need at least six hours of direct sunlight every day to ripen well, so "
        "pick the sunniest corner of the balcony for the pots.",
        "Water the plants deeply twice a week rather than a little every day; shallow watering "
        "keeps the roots near the surface where they dry out.",
        "Feed them with a potassium-rich fertiliser once the first flowers appear, and pinch "
        "out the side shoots of cordon varieties as they grow.",
        "Blight shows as brown patches on the leaves in wet summers: remove affected leaves at "
        "once and keep the foliage dry when watering.",
        *[
            f"Filler paragraph {i} about compost, mulch, trellis and seed catalogues."
            for i in range(40)
        ],
    ]
)


def test_blocks_cover_the_text_and_stay_bounded() -> None:
    text = _ARTICLE + "\n\n" + ("word " * 2000).strip() + "\n\nshort tail"
    spans = blocks(text)
    assert spans[0].offset == 0 and spans[-1].end == len(text)
    for a, b in itertools.pairwise(spans):
        assert a.end <= b.offset and not text[a.end : b.offset].strip()
    assert all(b.end - b.offset <= MAX_BLOCK_CHARS for b in spans)
    # The heading joins the paragraph it heads.
    assert text[spans[0].offset : spans[0].end].startswith(
        "# Growing tomatoes on a balcony\n\nTomatoes"
    )


_WORDS = st.sampled_from(["owl", "heron", "the", "tide", "river", "\u65e5\u672c", "x", "\u0301"])
_SEPARATORS = st.sampled_from([" ", " ", "\n", "\n\n", ". ", "\n \n", "\r\n\r\n"])


@given(
    text=st.lists(st.tuples(_WORDS, _SEPARATORS), max_size=600).map(
        lambda pairs: "".join(w + sep for w, sep in pairs)
    ),
    query=st.lists(_WORDS, min_size=1, max_size=4).map(" ".join),
    size=st.integers(min_value=1, max_value=3000),
)
@settings(max_examples=150, deadline=None)
def test_blocks_and_passages_always_point_into_the_text(text: str, query: str, size: int) -> None:
    """Blocks are ordered, disjoint, bounded and leave out only blank runs; every passage is
    a span of the text, shown verbatim, within max_chars in all."""
    spans = blocks(text)
    covered = "".join(text[b.offset : b.end] for b in spans)
    assert "".join(text.split()) == "".join(covered.split())
    for a, b in itertools.pairwise(spans):
        assert a.end <= b.offset
    assert all(0 < b.end - b.offset <= MAX_BLOCK_CHARS for b in spans)
    rendering, passages = find(text, query, size)
    assert len(passages) <= MAX_PASSAGES
    assert sum(p.end - p.offset for p in passages) <= size
    for i, p in enumerate(passages, 1):
        assert 0 <= p.offset < p.end <= len(text)
        assert (
            f"[{i}] characters {p.offset}{DASH}{p.end} of {len(text)}; pass offset={p.offset}"
            f" to read the page from here\n\n{text[p.offset : p.end]}"
        ) in rendering


def test_find_ranks_the_passage_that_holds_the_words_first() -> None:
    rendering, passages = find(_ARTICLE, "brown patches on leaves blight", 40_000)
    assert passages and len(passages) <= MAX_PASSAGES
    best = passages[0]
    assert _ARTICLE[best.offset : best.end].startswith("Blight shows as brown patches")
    assert rendering.startswith(f"{len(passages)} passage")
    assert (
        f"[1] characters {best.offset}{DASH}{best.end} of {len(_ARTICLE)}; pass offset={best.offset}"
        in rendering
    )
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)


@pytest.mark.parametrize(
    ("paragraph", "query"),
    [
        ("नई दिल्ली भारत की राजधानी है और देश का एक बड़ा शहर भी है।", "दिल्ली राजधानी"),
        ("กรุงเทพมหานครเป็นเมืองหลวงและเมืองที่ใหญ่ที่สุดของประเทศไทย", "เมืองหลวง"),
        ("Le crème brûlée est un dessert à base de crème et de sucre caramélisé.", "brûlée"),
        # CJK Extension B and later, past U+FFFF: a run of them read as one word, so a query
        # for one of them found nothing.
        (
            "古籍中的\U00020000\U00020001\U00020002字和\U0002a6a5\U0002a6a5字都收在字典裡。",
            "\U00020001",
        ),
    ],
    ids=["hindi", "thai", "decomposed-accents", "cjk-extension-b"],
)
def test_find_reads_words_with_combining_marks_and_scripts_without_spaces(
    paragraph: str, query: str
) -> None:
    """Hindi's vowel signs and viramas are part of its words (\\w leaves them out, which broke
    "दिल्ली" into one-letter pieces); Thai, written without spaces, is matched character by
    character as CJK is, the ideographs past U+FFFF too; accents written as combining marks
    stay in their words."""
    import unicodedata

    if query == "brûlée":
        paragraph, query = (unicodedata.normalize("NFD", s) for s in (paragraph, query))
    _assert_found_among_others(paragraph, query)


def _assert_found_among_others(paragraph: str, query: str) -> None:
    """``query`` finds ``paragraph`` set among unrelated ones, its passage holding it whole."""
    filler = "\n\n".join(
        f"An unrelated paragraph number {i} about gardening." * 8 for i in range(6)
    )
    text = f"{filler}\n\n{paragraph}\n\n{filler}"
    _, passages = find(text, query, 40_000)
    assert passages, query
    assert paragraph in text[passages[0].offset : passages[0].end]


@pytest.mark.parametrize(
    ("paragraph", "query"),
    [
        (
            "Le cr\u00e8me br\u00fbl\u00e9e est un dessert \u00e0 base de cr\u00e8me.",
            "bru\u0302le\u0301e",
        ),
        (
            "Le cre\u0300me bru\u0302le\u0301e est un dessert a\u0300 base de cre\u0300me.",
            "br\u00fbl\u00e9e",
        ),
        (
            "The Caf\u00e9 M\u00fcller opened in Z\u00fcrich in 1950 on the old square.",
            "cafe zurich",
        ),
        (
            "\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3 returned to Ithaca after twenty years.",
            "\u039f\u03b4\u03c5\u03c3\u03c3\u03b5\u03cd\u03c2",
        ),
        ("Die Stra\u00dfe f\u00fchrt am Fluss entlang bis zum Hafen der Stadt.", "STRASSE"),
    ],
    ids=["nfd-query", "nfd-page", "no-accents", "greek-capitals", "sharp-s"],
)
def test_find_matches_a_word_however_its_accents_and_case_are_written(
    paragraph: str, query: str
) -> None:
    """A query finds its word whether page and query write an accent as one character or as
    a letter and a combining mark, with or without it, and in any case (a model types "cafe"
    for "Caf\u00e9", and Greek capitals carry no accents): a page in NFD and a query in NFC
    shared no word, so the passage was not found."""
    _assert_found_among_others(paragraph, query)


def test_find_counts_words_of_one_character_digits_above_all() -> None:
    """A step's or a version's number is a word: "step 7" ranks Step 7 first, and "7" alone
    finds Version 7 (words of one character were left out, so "step 7" found every step
    alike and "7" nothing). "I" and the single letters of contractions stay out, as stop
    words do."""
    steps = "\n\n".join(
        f"## Step {i}\n\nIn this step you configure the widget carefully and then check the "
        "result on the dashboard before moving on to the next one."
        for i in range(1, 10)
    )
    _, passages = find(steps, "step 7", 40_000)
    assert steps[passages[0].offset : passages[0].end].startswith("## Step 7\n")
    versions = "\n\n".join(
        f"## Version {i}\n\nThis release improves performance and fixes several bugs reported "
        "by users of the library over the last months."
        for i in range(1, 8)
    )
    _, passages = find(versions, "7", 40_000)
    assert len(passages) == 1
    assert versions[passages[0].offset : passages[0].end].startswith("## Version 7\n")
    _, passages = find(versions, "plan B", 40_000)
    assert passages == ()
    _, passages = find(
        versions + "\n\nKeep plan B ready in case the release slips again.", "B", 40_000
    )
    assert len(passages) == 1
    assert find("I think it\u2019s what I\u2019d do, isn't it? " * 5, "I s t d", 40_000)[1] == ()


def test_find_with_no_shared_word_returns_no_passage() -> None:
    rendering, passages = find(_ARTICLE, "quantum chromodynamics", 40_000)
    assert passages == ()
    assert rendering.startswith("no passage of this page")


@pytest.mark.parametrize("query", ["the and of to it", "???", "I'd"])
def test_a_query_with_no_word_to_look_for_says_so(query: str) -> None:
    """A query of stop words or punctuation alone finds nothing because it asks for nothing:
    the result says that, not that no passage matches (which sent a model paging through a
    page its other words would have found a passage in)."""
    rendering, passages = find(_ARTICLE, query, 40_000)
    assert passages == ()
    assert rendering == (
        f"the query holds no word to look for in this page ({len(_ARTICLE)} characters): only "
        'common words such as "the" and "of", or punctuation; ask with words the passage '
        "would hold, or read it in windows with offset"
    )


def test_find_keeps_to_max_chars() -> None:
    _, passages = find(_ARTICLE, "compost mulch trellis", 150)
    assert sum(p.end - p.offset for p in passages) <= 150


async def test_query_returns_passages_that_point_into_the_page_and_reads_no_more() -> None:
    """A query on a cached page downloads nothing; each passage's offsets point into the
    same text the windows index, and reading from its offset starts with the passage."""
    html = (
        "<html><head><title>Tomatoes</title></head><body><article>"
        + "".join(f"<p>{para}</p>" for para in _ARTICLE.split("\n\n")[1:])
        + "</article></body></html>"
    )
    with serve(routes={"/a": respond(200, html)}) as srv:
        async with web() as w:
            whole = await w.fetch(srv.url("/a"))
            assert len(srv.requests) == 1
            found = await w.fetch(srv.url("/a"), query="how often should I water the plants")
            assert len(srv.requests) == 1  # the cached page, searched: no download
            text = text_of(whole.content)
            assert found.passages
            best = found.passages[0]
            assert text[best.offset : best.end].startswith("Water the plants deeply")
            assert found.window.next_offset == best.offset
            assert found.window.total == len(text)
            assert text[best.offset : best.end] in text_of(found.content)
            wire = found.to_wire()
            assert wire["passages"][0] == {
                "offset": best.offset,
                "end": best.end,
                "score": best.score,
            }
            assert "query: how often should I water the plants" in found.content
            jump = await w.fetch(srv.url("/a"), offset=best.offset)
            assert text_of(jump.content).split("\n\n", 1)[1].startswith("Water the plants deeply")
    assert len(srv.requests) == 1


async def test_a_query_on_an_image_is_refused_in_a_sentence() -> None:
    """A query has no text to search in an image: refused by name, in English ("is a image"
    came from the reading's kind)."""
    with serve(routes={"/i.png": respond(200, png_bytes(), "image/png")}) as srv:
        async with web() as w:
            with pytest.raises(InvalidInput) as refused:
                await w.fetch(srv.url("/i.png"), query="cats")
    assert str(refused.value) == (
        f"query finds passages in a page's text, and {srv.url('/i.png')} is an image "
        "(read it without query)"
    )


async def test_query_on_a_long_page_finds_the_passage_past_the_first_window() -> None:
    """A page of several windows (ranked in a worker thread): the passage lies past the first
    window, and reading from its offset shows it."""
    filler = "\n\n".join(f"Paragraph {i} about nothing in particular, again." for i in range(2000))
    page_text = filler + "\n\nThe albatross glides for hours without a wingbeat.\n\n" + filler
    with serve(routes={"/long": respond(200, page_text, "text/plain; charset=utf-8")}) as srv:
        async with web() as w:
            found = await w.fetch(srv.url("/long"), query="albatross wingbeat")
            assert found.passages is not None
            best = found.passages[0]
            assert best.offset > 40_000
            jump = await w.fetch(srv.url("/long"), offset=best.offset, max_chars=200)
    assert page_text[best.offset : best.end].startswith("The albatross glides")
    assert text_of(jump.content).split("\n\n", 1)[1].startswith("The albatross glides")
    assert len(srv.requests) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": "  "}, "query must not be empty"),
        ({"query": 5}, "query must be a string"),
        ({"query": "x" * 513}, "query must be at most 512 characters (it has 513)"),
        ({"query": "tomato", "offset": 10}, "pass either offset or query, not both"),
    ],
)
async def test_a_bad_query_is_refused_before_any_connection(
    kwargs: dict[str, object], message: str
) -> None:
    with serve(routes={"/a": respond(200, "hello")}) as srv:
        async with web() as w:
            with pytest.raises(InvalidInput) as exc:
                await w.fetch(srv.url("/a"), **kwargs)  # type: ignore[arg-type]
    assert str(exc.value).startswith(message)
    assert srv.accepts == 0


# ---- Markdown for Agents ------------------------------------------------------------------


async def test_a_site_that_answers_markdown_is_read_as_it_is_and_said_so() -> None:
    """The read asks for text/markdown alongside HTML; a Markdown answer becomes the reading
    (windowed, enveloped) and the result names the site as its source."""
    markdown = "# Release notes\n\n" + "\n\n".join(
        f"- change {i}: fixed a bug" for i in range(3000)
    )
    seen: list[Request] = []

    def negotiate(req: Request, sock: object) -> None:
        seen.append(req)
        if "text/markdown" in req.headers.get("accept", ""):
            send(sock, 200, markdown.encode(), "text/markdown; charset=utf-8")  # type: ignore[arg-type]
        else:
            send(sock, 200, b"<html><body><p>html</p></body></html>")  # type: ignore[arg-type]

    with serve(routes={"/notes": negotiate}) as srv:
        async with web() as w:
            page = await w.fetch(srv.url("/notes"), max_chars=20_000)
    accept = seen[0].headers["accept"]
    assert accept.split(",")[0] == "text/markdown" and "text/html" in accept
    assert page.content_type == "text/markdown"
    assert page.markdown_source == "site"
    assert page.to_wire()["markdownSource"] == "site"
    assert "\nmarkdown-source: site\n" in page.content
    assert page.title == "Release notes"
    assert text_of(page.content).split("\n\n", 1)[1] == markdown[:20_000]
    assert page.window.total == len(markdown) and page.window.next_offset == 20_000


async def test_an_html_answer_is_not_marked_as_site_markdown() -> None:
    with serve(
        routes={"/h": respond(200, "<html><body><p>Plain HTML page.</p></body></html>")}
    ) as srv:
        async with web() as w:
            page = await w.fetch(srv.url("/h"))
    assert page.markdown_source is None
    assert "markdown-source" not in page.content
    assert page.to_wire()["markdownSource"] is None


# ---- the command line -----------------------------------------------------------------------


def _cli(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webward", "fetch", *args, "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=60,
    )


def test_the_ranker_is_loaded_before_the_page_is_asked_for(tmp_path: Path) -> None:
    """Find-in-page's libraries load before the read: under a tight memory limit OpenBLAS
    ends the process as it loads, which after the read left a request made and no audit
    record of it. The origin looks in the command's memory map as the request arrives."""
    config = tmp_path / "webward.toml"
    config.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n'
        '[policy]\ndefault_tier = "connected"\nrobots = false\n'
        f"[state]\ndir = {json.dumps(str(tmp_path / 'state'))}\n"
    )
    loaded: list[bool] = []

    def page(req: Request, sock: socket.socket) -> None:
        maps = Path(f"/proc/{command.pid}/maps").read_text()
        loaded.append("_multiarray_umath" in maps)  # NumPy's core, which bm25s loads
        send(sock, 200, _ARTICLE.encode(), "text/markdown; charset=utf-8")

    with serve(routes={"/a": page}) as srv:
        args = ["fetch", srv.url("/a"), "--query", "blight", "--config", str(config)]
        command = subprocess.Popen(
            [sys.executable, "-m", "webward", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )
        out, err = command.communicate(timeout=60)
    assert command.returncode == 0, err
    assert loaded == [True] and "Blight" in out


async def test_the_ranker_is_loaded_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ranker's first import (bm25s, NumPy: 0.2-0.4 s) ran on the event loop, so a
    process's first find-in-page call held every other call of the loop that long (asyncio's
    debug mode: "Executing <Task ...> took 0.406 seconds"). It is loaded in a thread, still
    before the page is asked for."""
    import threading

    from webward import _find

    where: list[tuple[bool, int]] = []

    def load() -> None:  # what loading sees: which thread, and whether the page was asked for
        where.append((threading.current_thread() is threading.main_thread(), len(srv.requests)))

    monkeypatch.setattr(_find, "ranker_loaded", lambda: False, raising=False)  # a fresh process
    monkeypatch.setattr(_find, "load_ranker", load)
    with serve(routes={"/a": respond(200, _ARTICLE, "text/markdown; charset=utf-8")}) as srv:
        async with web() as w:
            page = await w.fetch(srv.url("/a"), query="blight")
    assert where == [(False, 0)]
    assert page.passages


async def test_a_call_during_the_rankers_import_waits_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ranker counted as loaded once "bm25s" was in sys.modules, where the import puts it
    as it begins: a second find-in-page call made during the first one's import (0.2-0.4 s)
    skipped the load and asked for its page before the ranker was loaded, the order
    faa320e keeps. It waits for the load as the first does."""
    import threading
    import types

    import anyio

    from webward import _find

    state = threading.Condition()
    loads: list[bool] = []  # one per call that waits for the ranker
    asked: list[str] = []  # one per page request the server saw
    release = threading.Event()

    def load() -> None:  # the ranker's import under way: in sys.modules, not yet loaded
        sys.modules["bm25s"] = types.ModuleType("bm25s")
        with state:
            loads.append(True)
            state.notify_all()
        release.wait(30)
        sys.modules["bm25s"] = real

    real = sys.modules.get("bm25s") or __import__("bm25s")
    monkeypatch.delitem(sys.modules, "bm25s")  # a fresh process
    monkeypatch.setattr(_find, "_loaded", False, raising=False)
    monkeypatch.setattr(_find, "load_ranker", load)
    article = respond(200, _ARTICLE, "text/markdown; charset=utf-8")

    def page(req: Request, sock: socket.socket) -> None:
        with state:
            asked.append(req.path)
            state.notify_all()
        article(req, sock)

    def until(seen: Callable[[], object]) -> None:
        with state:
            assert state.wait_for(seen, 30)

    with serve(routes={"/a": page, "/b": page}) as srv:
        async with web() as w, anyio.create_task_group() as tg:
            tg.start_soon(lambda: w.fetch(srv.url("/a"), query="blight"))
            await anyio.to_thread.run_sync(until, lambda: loads)  # its import has begun
            tg.start_soon(lambda: w.fetch(srv.url("/b"), query="blight"))
            await anyio.to_thread.run_sync(until, lambda: len(loads) == 2 or asked)
            seen = "page asked for" if asked else "both wait for the ranker"
            release.set()
    assert seen == "both wait for the ranker"
    assert sorted(asked) == ["/a", "/b"]


def test_cli_max_chars_and_query(tmp_path: Path) -> None:
    config = tmp_path / "webward.toml"
    config.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n'
        '[policy]\ndefault_tier = "connected"\nrobots = false\n'
        f"[state]\ndir = {json.dumps(str(tmp_path / 'state'))}\n"
    )
    with serve(routes={"/a": respond(200, _ARTICLE, "text/markdown; charset=utf-8")}) as srv:
        small = _cli(srv.url("/a"), "--max-chars", "500", "--json", config=config)
        found = _cli(srv.url("/a"), "--query", "blight brown patches", config=config)
        bad = _cli(srv.url("/a"), "--max-chars", "0", config=config)
    assert small.returncode == 0, small.stderr
    wire = json.loads(small.stdout)
    assert wire["window"]["end"] <= 500 and wire["window"]["nextOffset"] == wire["window"]["end"]
    assert wire["approxTokens"] > 0 and wire["markdownSource"] == "site"
    assert found.returncode == 0, found.stderr
    assert "[1] characters " in found.stdout and "Blight shows as brown patches" in found.stdout
    assert bad.returncode == 2
    assert bad.stderr.strip() == "webward: --max-chars must be a whole number from 1 to 40000"


async def test_the_agent_tool_takes_max_chars_and_query() -> None:
    """web_fetch as a model calls it: max_chars as a number or digit string, query; null
    means "not given"; a bad value is an error result naming it."""
    from webward.agents import ToolContext, execute_tool

    with serve(routes={"/t": respond(200, _ARTICLE, "text/plain; charset=utf-8")}) as srv:
        async with web() as w:
            context = ToolContext(w, "research", "connected")
            small = await execute_tool(
                "web_fetch", {"url": srv.url("/t"), "max_chars": "300"}, context
            )
            found = await execute_tool(
                "web_fetch",
                {"url": srv.url("/t"), "query": "feed fertiliser", "max_chars": None},
                context,
            )
            bad = await execute_tool("web_fetch", {"url": srv.url("/t"), "max_chars": 0}, context)
    assert not small.is_error
    assert (
        f"showing characters 0{DASH}" in small.text
        and f"of {len(_ARTICLE)}; pass offset=" in small.text
    )
    assert not found.is_error and "[1] characters " in found.text
    assert "Feed them with a potassium-rich fertiliser" in found.text
    assert bad.is_error and bad.text == "max_chars must be a whole number from 1 to 40000"


async def test_site_markdown_is_capped_like_any_text() -> None:
    """A Markdown answer over the 1 MB text cap is cut there and marked, like any reading."""
    markdown = "# Big\n\n" + "word " * 300_000  # 1.5 MB
    with serve(routes={"/big.md": respond(200, markdown, "text/markdown")}) as srv:
        async with web() as w:
            page = await w.fetch(srv.url("/big.md"))
            last = await w.fetch(srv.url("/big.md"), offset=page.window.total - 40)
    assert page.markdown_source == "site" and page.truncated
    assert text_of(last.content).endswith("[truncated at 1 MB]")
    assert page.window.total < 1_000_100
