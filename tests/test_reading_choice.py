"""The second reading: when trafilatura drops part of an article, readability-lxml's reading of
the same page is taken instead, if it holds trafilatura's and is at least half again as long."""

from __future__ import annotations

import re
from collections.abc import Container

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webward import _convert, _shell
from webward._convert import convert, html_to_markdown
from webward._settings import LimitsSettings

URL = "https://example.com/songs/harbor.html"
_WORDS = [
    "river",
    "stone",
    "lantern",
    "meadow",
    "harbor",
    "violet",
    "copper",
    "orchard",
    "thunder",
    "willow",
    "basket",
    "candle",
    "falcon",
    "garden",
    "marble",
]


def words(seed: int, n: int) -> str:
    """``n`` words of plain prose-like text, different for each seed."""
    return " ".join(
        _WORDS[(seed * 7 + i * 3) % len(_WORDS)] + ("." if i % 12 == 11 else "") for i in range(n)
    )


REFRAIN = "Refrain: " + words(99, 70)


def song(verses: int = 2, refrains: int = 5) -> str:
    """A song page whose refrain comes back after every verse, as lyrics and hymns do."""
    body = "".join(
        (f"<p>Verse {i}: {words(i, 50)}</p>" if i < verses else "") + f"<p>{REFRAIN}</p>"
        for i in range(refrains)
    )
    return (
        "<html><head><title>Harbor song</title></head><body>"
        f"<article><h1>Harbor song</h1>{body}</article></body></html>"
    )


def trafilatura_alone(html: str) -> str:
    """What the first reading (trafilatura on the cleaned page) keeps of ``html``."""
    tree, _ = _convert._parse(html)
    _convert._clean(tree)
    _convert._rewrite_links(tree, URL, collect=False)
    return _convert.tidy_markdown(_convert._main_content(tree))


def test_a_refrain_trafilatura_drops_is_read_from_the_second_reading() -> None:
    """trafilatura drops a paragraph it has seen twice (a refrain); the second reading keeps
    every one, holds all trafilatura kept and is far longer, so it is the page's reading."""
    html = song()
    first = trafilatura_alone(html)
    assert first.count("Refrain:") < 5  # the case this rule is for: the first reading drops it
    result = html_to_markdown(html, URL)
    assert result.extractor == "readability"
    assert result.markdown.count("Refrain:") == 5
    assert "Verse 0:" in result.markdown and "Verse 1:" in result.markdown
    assert result.title == "Harbor song"


def test_convert_returns_the_longer_reading() -> None:
    """Through convert(), the entry point of every read: the whole song, refrains and all."""
    page = convert(
        song().encode(),
        "text/html; charset=utf-8",
        URL,
        truncated=False,
        include_links=False,
        limits=LimitsSettings(),
    )
    assert page.text.count("Refrain:") == 5


def test_a_refrain_kept_often_enough_stays_with_trafilatura() -> None:
    """Two verses and three refrains: the second reading is longer, but not half again as long
    as trafilatura's, so the first reading stands."""
    html = song(verses=2, refrains=3)
    result = html_to_markdown(html, URL)
    assert result.extractor == "main"
    assert result.markdown == trafilatura_alone(html)


def test_the_second_extractor_runs_only_when_the_page_has_room(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When trafilatura kept more than two thirds of the page's words, no reading can be half
    again as long, so readability-lxml is not run at all (most pages pay nothing for it)."""

    def not_expected(tree: object) -> str:
        raise AssertionError("the second reading ran on a page without room for it")

    monkeypatch.setattr(_convert, "_second_reading", not_expected)
    paragraphs = "".join(f"<p>{words(i, 60)}</p>" for i in range(6))
    html = f"<html><body><article><h1>Plain article</h1>{paragraphs}</article></body></html>"
    result = html_to_markdown(html, URL)
    assert result.extractor == "main"
    assert words(5, 60)[:40] in result.markdown


def test_words_in_links_give_no_room_for_a_second_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A short article beside a long list of teaser links: the page has three times the
    article's words, but the words outside links leave no room for a reading half again as
    long (readability-lxml drops link lists), so the second extractor does not run."""
    ran: list[object] = []
    monkeypatch.setattr(_convert, "_second_reading", lambda tree: ran.append(tree) or "")
    article = "".join(f"<p>{words(i, 60)}</p>" for i in range(3))
    teasers = "".join(f'<li><a href="/story/{i}">{words(i + 20, 12)}</a></li>' for i in range(40))
    html = (
        "<html><body><article><h1>Short article</h1>"
        f"{article}</article><div class='more'><ul>{teasers}</ul></div></body></html>"
    )
    assert html_to_markdown(html, URL).extractor == "main"
    assert ran == []
    # The same page with the teasers as plain text (no links) has the room, and it runs.
    plain = html.replace('<a href="/story/', '<span data-story="').replace("</a>", "</span>")
    html_to_markdown(plain, URL)
    assert len(ran) == 1


def test_a_failing_second_extractor_keeps_the_first_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever a hostile page does to readability-lxml, the reader keeps trafilatura's text."""
    import readability  # type: ignore[import-untyped]

    def broken(self: object, *args: object, **kwargs: object) -> str:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(readability.Document, "summary", broken)
    html = song()
    result = html_to_markdown(html, URL)
    assert result.extractor == "main"
    assert result.markdown == trafilatura_alone(html)


def test_a_longer_reading_of_another_block_is_not_taken() -> None:
    """Longer is not enough: the second reading must hold trafilatura's words (else it picked
    another block of the page, a comment thread or a list of teasers)."""
    main = words(1, 100)
    other = " ".join(f"comment{i} reply{i}" for i in range(200))
    assert not _convert._longer_reading(main, other)
    most = " ".join(main.split()[:80])  # holds 80 of its 100 words: not the same article
    assert not _convert._longer_reading(main, most + " " + other)
    assert _convert._longer_reading(main, main + " " + other)


def test_the_longer_reading_needs_half_again_as_many_words() -> None:
    main = words(1, 100)
    assert not _convert._longer_reading(main, main + " " + words(2, 40))
    assert _convert._longer_reading(main, main + " " + words(2, 50))
    assert not _convert._longer_reading("", words(2, 50))


def test_link_targets_are_not_words() -> None:
    """A reading full of links is not longer for its URLs: only link texts count."""
    main = words(1, 30)
    linked = " ".join(f"[{w}](https://example.com/a/very/long/path/{w})" for w in main.split())
    assert _convert._words(linked) == _convert._words(main)
    assert not _convert._longer_reading(main, linked)


def record_readings(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """trafilatura's readings from here on, each as whether it was its whole cascade."""
    runs: list[bool] = []
    real = _convert._main_content

    def recording(
        tree: object, careful: bool = False, own: Container[str] = (), title: str = ""
    ) -> str:
        runs.append(careful)
        return real(tree, careful, own, title)

    monkeypatch.setattr(_convert, "_main_content", recording)
    return runs


def test_trafilatura_compares_readings_only_when_its_quick_one_is_deficient(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """trafilatura's full cascade (its readability and justext comparison) runs only when its
    quick reading is deficient: an ordinary article is read once, a page laid out in a table
    (the quick reading is a table and no paragraph) is read again with the cascade, unless
    the table is past the bound of the second passes (1,400 elements), where each pass costs
    a fifth of a second and more: its quick reading stands."""
    runs = record_readings(monkeypatch)
    paragraphs = "".join(f"<p>{words(i, 60)}</p>" for i in range(6))
    html_to_markdown(f"<html><body><article>{paragraphs}</article></body></html>", URL)
    assert runs == [False]
    runs.clear()
    rows = "".join(f"<tr><td>{words(i, 40)}</td><td>{words(i + 9, 40)}</td></tr>" for i in range(6))
    html_to_markdown(f"<html><body><table>{rows}</table></body></html>", URL)
    assert runs == [False, True]
    runs.clear()
    rows = "".join(f"<tr><td>Row {i}: {words(i, 12)}</td></tr>" for i in range(700))
    reading = html_to_markdown(f"<html><body><table>{rows}</table></body></html>", URL)
    assert runs == [False]
    assert "Row 699: " in reading.markdown


def test_deficient_readings() -> None:
    """What counts as deficient: too little kept, no paragraph, more tables than paragraphs."""
    prose = words(1, 80)
    table = "| a | b |\n| --- | --- |\n| " + words(2, 40) + " | c |"
    visible = len(prose) * 2

    def deficient(markdown: str) -> bool:
        return _convert._deficient(markdown, _convert._solid(markdown), visible)

    assert not deficient(f"# Title\n\n{prose}\n\n{table}")
    assert deficient(f"# Title\n\n{table}")  # no paragraph
    assert deficient(f"{prose}\n\n{table}\n\nnext\n\n{table}\n\n{table}")
    assert deficient("- " + prose)  # a list alone
    assert deficient(words(3, 10))  # too little kept


def test_room_is_counted_outside_links() -> None:
    linked = "".join(f'<a href="/{i}">{words(i, 10)}</a> ' for i in range(10))
    html = f"<html><body><p>{words(1, 100)}</p>\n<div>{linked}</div></body></html>"
    tree, _ = _convert._parse(html)
    text = _convert._visible_text(tree)
    assert _convert._has_room(tree, text, 100)
    assert not _convert._has_room(tree, text, 101)


@pytest.mark.parametrize(("kept", "runs"), [(100, False), (90, True)])
def test_the_second_extractor_needs_room_with_a_margin(
    monkeypatch: pytest.MonkeyPatch, kept: int, runs: bool
) -> None:
    """A page of 160 words: a first reading of 100 leaves room for 1.6 times as many, short
    of the margin (1.7), so readability-lxml is not asked; one of 90 leaves room for 1.78."""
    text = words(3, 160)
    monkeypatch.setattr(
        _convert,
        "_main_content",
        lambda tree, careful=False, own=(), title="": " ".join(text.split()[:kept]),
    )
    ran: list[object] = []
    monkeypatch.setattr(_convert, "_second_reading", lambda tree: ran.append(tree) or "")
    html_to_markdown(f"<html><body><article><p>{text}</p></article></body></html>", URL)
    assert bool(ran) == runs


# ASCII (where the counts take a byte-translation shortcut) mixed with other letters, spaces
# and punctuation (where they do not).
_MIXED = st.text(
    alphabet=st.sampled_from([*map(chr, range(128)), "é", "ß", "日", "\u00a0", "\u2014"])
)


@given(text=_MIXED)
@settings(max_examples=300, deadline=None)
def test_quick_counts_are_the_plain_ones(text: str) -> None:
    """Words and non-blank characters are counted exactly as the regex and str.split count
    them, ASCII or not, and a text is scant exactly when it has under 100 such characters."""
    assert _convert._count_words(text) == len(re.findall(r"\w+", text))
    assert _shell.solid(text) == len("".join(text.split()))
    long = text * 50
    assert _shell.scant(long) == (len("".join(long.split())) < _shell.SCANT_CHARS)


@given(text=st.text(alphabet=st.sampled_from([*map(chr, range(128))])))
@settings(max_examples=300, deadline=None)
def test_the_bound_on_an_ascii_text_s_words_is_never_under_their_count(text: str) -> None:
    """_has_room passes over a page whose ASCII text cannot hold the words asked without
    counting them: the bound it reads is never under the count, and is the count where one
    character separates each word from the next."""
    assert len(re.findall(r"\w+", text)) <= _convert._at_most_words(text)
    words = re.findall(r"\w+", text)
    assert _convert._at_most_words(" ".join(words)) == max(len(words), 1)


@given(text=_MIXED)
@settings(max_examples=300, deadline=None)
def test_a_page_holds_a_control_character_as_the_pattern_says(text: str) -> None:
    """_parse's quick look for control characters answers as the pattern that drops them."""
    assert _convert._has_control(text) == (_convert._CONTROL.search(text) is not None)
    assert _convert._has_control(text + "\udc80") == _convert._has_control(text)
    # and tidy_markdown, which asks it first, still drops every one (ASCII or not)
    assert _convert._CONTROL.search(_convert.tidy_markdown(text)) is None


def _teasers(count: int, summary: str) -> str:
    return "".join(
        f"<article><h2><a href='/blog/{i}'>Title number {i} of a post</a></h2>"
        f"<p>{summary.format(i=i)}</p></article>"
        for i in range(count)
    )


_THEMES = {
    "article": _teasers,
    "header and excerpt": lambda count, summary: "".join(
        f"<article><header><h2><a href='/blog/{i}'>Title number {i} of a post</a></h2></header>"
        f"<div class='excerpt'><p>{summary.format(i=i)}</p></div></article>"
        for i in range(count)
    ),
    "list items, summary in a div": lambda count, summary: (
        "<ul>"
        + "".join(
            f"<li><h3><a href='/blog/{i}'>Title number {i} of a post</a></h3>"
            f"<div>{summary.format(i=i)}</div></li>"
            for i in range(count)
        )
        + "</ul>"
    ),
    "post and read more": lambda count, summary: "".join(
        f"<div class='post'><h2><a href='/blog/{i}'>Title number {i} of a post</a></h2>"
        f"<p>{summary.format(i=i)}</p><a href='/blog/{i}'>Read more</a></div>"
        for i in range(count)
    ),
}


@pytest.mark.parametrize("theme", list(_THEMES))
def test_a_listing_keeps_its_teasers_titles_and_links(theme: str) -> None:
    """A blog's index, as themes mark it up: the extractors kept the teasers' summaries and
    dropped their linked titles (so the model read summaries of it knew not what, in another
    order); the reading is then the listing's own, titles, links and summaries in order."""
    summary = "Summary {i}: this post explains a topic in a couple of sentences for readers."
    page = (
        "<html><head><title>Blog</title></head><body><nav><a href='/'>Home</a></nav>"
        f"<main><h1>Blog</h1>{_THEMES[theme](6, summary)}</main><footer>(c) 2026</footer>"
        "</body></html>"
    )
    result = html_to_markdown(page, "https://example.org/blog")
    assert result.extractor == "full"
    text = result.markdown
    assert text.index("# Blog") < text.index("Title number 0") < text.index("Summary 0")
    for i in range(6):
        assert f"[Title number {i} of a post](https://example.org/blog/{i})" in text
        assert text.index(f"Title number {i}") < text.index(f"Summary {i}:")


def test_an_articles_related_stories_are_no_listing_of_its_reading() -> None:
    """Related stories beside an article (linked titles and summaries, both left out by
    trafilatura) and an article whose linked section headings share one element: the
    article's own reading stands."""
    article = "".join(
        f"<p>Paragraph {i} of the article itself, a sentence long enough to count as text "
        "for the extractor, and then another clause.</p>"
        for i in range(12)
    )
    related = _teasers(6, "Related {i}: another story, in brief, with a line about it too.")
    page = (
        "<html><head><title>News</title></head><body><main><article><h1>Headline</h1>"
        f"{article}</article><section class='related'>{related}</section></main></body></html>"
    )
    result = html_to_markdown(page, "https://example.org/news/1")
    assert result.extractor == "main" and "Paragraph 11 of the article" in result.markdown
    assert "Related 0" not in result.markdown


def test_an_article_whose_sections_link_to_themselves_is_no_listing() -> None:
    """Section headings that are their own permalinks (<h2><a href="#s1">), each in its own
    <section>: no teaser's titles, and the article's reading stands (the full page's would
    bring its sidebar in)."""
    sections = "".join(
        f"<section><h2><a href='#s{i}'>Section {i} heading text</a></h2>"
        + "".join(
            f"<p>Paragraph {j} of section {i}, with enough words to be an article paragraph.</p>"
            for j in range(3)
        )
        + "</section>"
        for i in range(6)
    )
    page = (
        f"<html><body><div class='post'>{sections}</div>"
        "<div class='sidebar'><p>Popular post one</p></div></body></html>"
    )
    result = html_to_markdown(page, "https://example.org/a")
    assert result.extractor == "main" and "Popular" not in result.markdown
