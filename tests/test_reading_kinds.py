"""The elements the kinds-of-pages passes look at, found in one walk of the page
(webward._kinds.find) as each pass's own search of the tree finds them."""

from __future__ import annotations

from typing import Any

import lxml.html
from readings import P, read_html

from webward import _kinds

# Every kind of element a pass looks for, and near misses: a question's class on a span (a
# candidate, which mark_answers passes over by its tag), a script's microdata date, a
# contents' class on a <p> (not a table of contents' tag), a paywall's id on a <form>, a
# time without its datetime, and attributes whose names hold the words but are not read.
PAGE = (
    '<html><head><script type="application/ld+json">{"@type": "Product"}</script>'
    '<script type="application/json">{}</script>'
    '<script itemprop="datePublished" content="2026-01-02"></script></head><body>'
    '<div itemscope itemtype="https://schema.org/QAPage"><div class="question">'
    f'<p>{P}</p><span class="js-answer-count">2</span></div>'
    '<div class="answer accepted-answer" itemprop="acceptedAnswer">'
    f'<time datetime="2026-01-02T10:00">10:00</time><p>{P}</p></div>'
    '<div itemprop="suggestedAnswer"><time>later</time>'
    '<meta itemprop="datePublished" content="2026-01-03"></div></div>'
    '<nav id="toc"><a href="#a">A</a></nav><ul class="Toc-list"><li>one</li></ul>'
    '<p class="toc">not a table of contents by its tag</p>'
    '<section class="table-of-contents"><aside id="on-this-page">x</aside></section>'
    '<div class="paywall"><a href="/subscribe">Subscribe</a></div>'
    '<form id="regWall"></form><p class="piano-inline">x</p><span class="paywall">x</span>'
    '<div data-toc="1" data-class="answer" title="paywall">x</div></body></html>'
)

SEARCHES = {
    "parts": _kinds._CANDIDATES,
    "typed": _kinds._TYPED,
    "scripts": _kinds._JSON_LD,
    "times": _kinds._TIMES,
    "contents": _kinds._CONTENTS,
    "paywalls": _kinds._PAYWALLS,
}


def tree() -> Any:
    return lxml.html.document_fromstring(PAGE)


def test_one_walk_finds_what_each_search_finds() -> None:
    page = tree()
    found = _kinds.find(page, 1_000)
    assert found is not None and found.current
    for name, search in SEARCHES.items():
        walked, searched = getattr(found, name), search(page)
        assert searched, name  # (the page holds some of each)
        assert [id(el) for el in walked] == [id(el) for el in searched], name


def test_the_walk_stops_past_its_bound() -> None:
    page = tree()
    elements = int(page.xpath("count(//*)"))
    assert _kinds.find(page, elements) is not None
    assert _kinds.find(page, elements - 1) is None


def test_a_pass_that_changes_the_page_leaves_the_next_to_search_again() -> None:
    """drop_contents drops the tables of contents: what the walk found is then out of date,
    and the paywall pass searches the tree itself (and finds its prompt, as it would)."""
    page = tree()
    found = _kinds.find(page, 1_000)
    assert found is not None
    _kinds.drop_contents(page, found)
    assert not found.current
    assert page.find(".//nav") is None
    _kinds.drop_paywall_prompts(page, found)
    assert not page.xpath("//div[@class='paywall']")


def test_a_page_reads_as_it_did_with_the_passes_searching() -> None:
    """The reading of a page of every kind: the walk's elements reach each pass."""
    reading = read_html(PAGE, "https://qa.example.com/questions/1")
    assert "**Answer (accepted)**" in reading
    assert "Subscribe" not in reading
