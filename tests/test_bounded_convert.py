"""Bounded conversion: the hostile-page corpus (tests/hostile.py) converts within its bounds,
the worker pool holds conversions inside the call's deadline and a memory limit, and past its
queue bound the gateway sheds load with 503 and ``Retry-After``.

Time and memory are asserted by bound (CPU seconds, the deadline plus one second, the worker's
address-space limit), never by exact figure; bench/convert.py prints the measured ones.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import os
import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx
import pytest
from hostile import (
    _pdf,
    anchored_headings_html,
    aria_tabs_html,
    attributes_html,
    backlinks_html,
    base_href_html,
    blanks_beside_cell_lines_html,
    class_names_html,
    code_blocks_html,
    deep_html,
    deep_list_html,
    deep_quote_html,
    deep_wrappers_html,
    definition_anchors_html,
    delimiters_html,
    dropped_between_words_html,
    entity_text_html,
    form_xobject_pdf,
    fragment_links_html,
    fragment_targets_html,
    glossary_html,
    highlighted_code_html,
    huge_line_html,
    ids_html,
    image_links_html,
    label_runs_html,
    layout_tables_html,
    many_pages_pdf,
    markdown_brackets,
    markdown_chars_html,
    markdown_heading_line,
    marked_line_html,
    nested_blank_links_html,
    nested_marks_html,
    nested_math_html,
    nested_paragraphs_html,
    nested_pre_html,
    non_word_html,
    numbered_lists_html,
    numbered_units_html,
    odd_links_html,
    page_tree_pdf,
    paragraphs_html,
    reading_rules_html,
    references_html,
    shared_stream_pdf,
    slow_html,
    span_html,
    stray_end_tags_html,
    styled_elements_html,
    stylesheet_html,
    table_html,
    tiny_elements_html,
    unclosed_openings_html,
    unclosed_tags_html,
    veils_left_open_html,
    wide_form_tree_pdf,
)
from localserver import respond, serve
from mcp import Client
from test_gateway import FETCH_PATH, assert_error, auth, load, loopback_web, running_gateway
from test_reading_choice import record_readings

from webward import Refused, Settings, StaticResolver, UpstreamError, Web, _convert, _structure
from webward._convert import (
    _MAX_LINE_ELEMENTS,
    MAX_LINKS,
    MAX_READING_CHARS,
    _bound_attributes,
    _bound_copies,
    _break_long_lines,
    _candidate_text,
    _clean,
    _drop_all,
    _filtered,
    _flatten_nested_pre,
    _parse,
    _pieces,
    _rescanned,
    _resolve,
    _split_entity_html,
    _split_entity_texts,
    convert,
    html_to_markdown,
    tidy_markdown,
)
from webward._mcp import build_server
from webward._parts import pdf_text
from webward._settings import LimitsSettings
from webward._workers import CHEAP_HTML_BYTES, TRIM_GROWTH_MB, ConvertPool, Job, is_cheap
from webward.testing import FakeClock, MemoryAuditSink

LIMITS = LimitsSettings()
URL = "https://example.com/page"
# Each hostile page converts in at most 0.5 s of CPU on the 2-core development machine
# (bench/convert.py); the tests allow three times that, so a slower machine still passes.
CPU_BOUND_S = 1.5


def cpu_convert(body: bytes, content_type: str = "text/html; charset=utf-8", **kw: Any) -> Any:
    """convert() in this process, returning (Converted, CPU seconds)."""
    started = time.process_time()
    limits = kw.pop("limits", LIMITS)
    result = convert(body, content_type, URL, truncated=False, include_links=False, limits=limits)
    return result, time.process_time() - started


# ---- the hostile corpus, converter by converter ---------------------------------------------


@pytest.mark.parametrize(
    ("depth", "note"),
    [
        (3_000, "[this page nests its elements more than 2,048 levels deep, past"),
        (100_000, "[this page nests its elements more than 256 levels deep among more than"),
    ],
    ids=["3000", "100000"],
)
def test_a_page_nested_past_the_parser_yields_its_deepest_words_with_a_note(
    depth: int, note: str
) -> None:
    # Up to 20,000 tags the parser reads 2,048 levels; past that, 256 (see the next test).
    result, cpu = cpu_convert(deep_html(depth))
    assert "DEEPEST-WORDS at the bottom of the nesting." in result.text
    assert "Opening words before the nesting begins." in result.text
    assert result.text.startswith(note)
    assert cpu < CPU_BOUND_S


def test_end_tags_that_close_nothing_under_a_deep_nesting_are_read_as_plain_text() -> None:
    # Each is searched for through the whole stack of open elements: at 2,000 levels that
    # took 0.57 s to parse. Among so many tags only 256 levels are parsed.
    body = stray_end_tags_html(2_000)
    result, cpu = cpu_convert(body)
    assert result.text.startswith("[this page nests its elements more than 256 levels deep")
    assert result.text.count("word") == body.count(b"word</a>")
    assert cpu < CPU_BOUND_S


@pytest.mark.parametrize("depth", [1_100, 2_000], ids=["1100", "2000"])
@pytest.mark.parametrize("tag", ["div", "blockquote", "span"])
def test_a_page_nested_past_what_markdown_conversion_reads_keeps_every_level(
    tag: str, depth: int
) -> None:
    """Under the parser's limit, but past the ~1,020 levels html-to-markdown reads (it left
    out the rest without a word): every level's words, with a note."""
    body = (
        b"<html><body>"
        + b"".join(f"<{tag}>level {i} words ".encode() for i in range(depth))
        + f"</{tag}>".encode() * depth
        + b"</body></html>"
    )
    result, cpu = cpu_convert(body)
    assert result.text.startswith("[this page nests its elements more than 1,000 levels deep")
    assert f"level {depth - 1} words" in result.text
    assert cpu < CPU_BOUND_S
    shallow = read(body.replace(f"<{tag}>".encode(), b"", depth - 900))  # 900 levels
    assert not shallow.startswith("[this page")  # Markdown, deepest level included
    assert f"level {depth - 1} words" in shallow


def test_a_page_with_nothing_but_deep_text_is_never_an_empty_success() -> None:
    body = (
        b"<html><body>" + b"<div>" * 50_000 + b"only words" + b"</div>" * 50_000 + b"</body></html>"
    )
    result = html_to_markdown(body.decode(), URL)
    assert result.extractor == "plain"
    assert "only words" in result.markdown


def test_scripts_and_styles_stay_out_of_the_plain_reading() -> None:
    body = (
        "<html><body><script>var secret = 1;</script><style>p {}</style><p>shown</p>"
        + "<div>" * 3000
        + "deep</body></html>"
    )
    result = html_to_markdown(body, URL)
    assert "shown" in result.markdown and "deep" in result.markdown
    assert "secret" not in result.markdown and "p {}" not in result.markdown


def test_hidden_elements_stay_out_of_the_plain_reading() -> None:
    """Read without a parser, a page still loses its hidden elements (as the tree reading
    does), the elements nested in them and a ">" inside their attributes included; a void
    element marked hidden hides only itself."""
    hidden = (
        '<div hidden><div>inner</div>SECRET1</div><span aria-hidden="true">SECRET2</span>'
        '<div style="display: none">SECRET3<div title="a<b" hidden>SECRET4</div></div>'
        '<p style="visibility:hidden">SECRET5</p><input hidden><p class="hidden-xs">kept</p>'
    )
    body = "<html><body><p>shown</p>" + "<div>" * 3000 + hidden + "deep</body></html>"
    result = html_to_markdown(body, URL)
    assert result.extractor == "plain"
    assert "shown" in result.markdown and "kept" in result.markdown
    assert "deep" in result.markdown
    assert "SECRET" not in result.markdown and "inner" not in result.markdown


@pytest.mark.parametrize("deep", [True, False], ids=["nested-past-the-parser", "scant"])
def test_what_a_reader_never_sees_stays_out_of_the_plain_reading(deep: bool) -> None:
    """Read without a parser (a page nested too deep, or a scant reading read again from its
    body), a page loses what a browser never shows as the page's words, as the tree reading
    does: comments (a ">" inside one ends nothing), iframe and object fallbacks, closed
    dialogs, templates nested in templates, SVG, image maps, a <title> in the body, and
    attribute values holding ">"; a <header> does not end at a <head> it starts with."""
    unseen = (
        "<!-- build 1.2 -> SYSTEM NOTE: UNSEEN1 -->"
        "<!--[if IE]><p>UNSEEN2</p><![endif]--><!--><!--->"
        "<iframe src=/x>UNSEEN3 <p>x</p></iframe>"
        "<object data=/x><p>UNSEEN4<object>UNSEEN5</object></p></object>"
        "<dialog><p>UNSEEN6</p></dialog>"
        "<template><template>UNSEEN7</template>UNSEEN8</template>"
        "<svg><title>UNSEEN9</title><text>UNSEEN10</text></svg>"
        "<map name=m><area alt=x>UNSEEN11</map><title>UNSEEN12</title>"
        "<p data-x=\"a>UNSEEN13\" class='b>UNSEEN14'>kept</p>"
        '<div data-x="a>b" hidden>UNSEEN15</div>'
    )
    words = "Words of the page that a reader sees, kept in the plain reading. "
    if deep:
        body = f"<html><body><p>{words}</p>" + "<div>" * 3000 + unseen + "deep</body></html>"
        text = html_to_markdown(body, URL).markdown
        assert "deep" in text
    else:
        body = (
            "<html><head><title>S</title></head><body><header><p>menu</p></header>"
            f"<form><span>{words * 4}</span></form>{unseen}</body></html>"
        )
        text, _ = cpu_convert(body.encode())
        text = text.text
    assert words.strip() in text and "kept" in text
    assert "UNSEEN" not in text and "-->" not in text


@pytest.mark.parametrize(
    ("markup", "shown"),
    [
        ("<div hidden><!-- </div> -->INJECTED</div><p>shown</p>", ["shown"]),
        ('<div hidden><span title="</div>">INJECTED</span></div><p>shown</p>', ["shown"]),
        ('<div hidden><script>"</div>"</script>INJECTED</div><p>shown</p>', ["shown"]),
        ("<script><!-- <script> </script> INJECTED --> </script><p>shown</p>", ["shown"]),
        ("\u0130" * 60 + '<div style="display:none">INJECTED</div><p>shown</p>', ["shown"]),
        ('<img alt="<!--">shown one <p>shown two</p>', ["shown one", "shown two"]),
        (
            '<p title="<script>">shown one</p> <script>x</script><p>shown two</p>',
            ["shown one", "shown two"],
        ),
        ("<p hidden>INJECTED<p>shown one<p>shown two", ["shown one", "shown two"]),
        ("<ul><li hidden>INJECTED<li>shown one</ul><p>shown two</p>", ["shown one", "shown two"]),
        ("<dialog>INJECTED</dialog><dialog open>shown one</dialog>", ["shown one"]),
        ("<textarea><!-- </textarea><p>shown one</p>", ["shown one"]),
        ('<div/hidden>INJECTED</div><div id="a"hidden>INJECTED</div><p>shown</p>', ["shown"]),
        ('<div style="display&#58;none">INJECTED</div><p>shown</p>', ["shown"]),
        ('<div style="&#100;isplay:none">INJECTED</div><p>shown</p>', ["shown"]),
        ('<div style="display:/**/none">INJECTED</div><p>shown</p>', ["shown"]),
        ("<p hidden>x</i>INJECTED</p><p>shown</p>", ["shown"]),
        ("<table><tr><td hidden>x</b>INJECTED</td><td>shown</td></tr></table>", ["shown"]),
        ("<span hidden><div>x</span>INJECTED</div></span><p>shown</p>", ["shown"]),
        ("<x_a hidden>x</x_b>INJECTED</x_a><p>shown</p>", ["shown"]),
        ("<div><p hidden>INJECTED</div><p>shown</p>", ["shown"]),
        ("<p>shown</p><!-- INJECTED", ["shown"]),
        ('<p>shown</p><div title="x>INJECTED', ["shown"]),
        ('<p title="' + "a" * 5000 + '>INJECTED">shown</p>', ["shown"]),
        ('<div hidden title="' + "a" * 5000 + '</div>">INJECTED</div><p>shown</p>', ["shown"]),
        ("<p class=x title=it's>shown one, not lost</p><p>shown two, again</p>", ["shown one"]),
        (
            '<div hidden><span title="'
            + "a" * 5000
            + '> </div> ">INJECTED</span></div><p>shown</p>',
            ["shown"],
        ),
        (
            '<div x"y title="' + "a" * 5000 + '>INJECTED" hidden>INJECTED</div><p>shown</p>',
            ["shown"],
        ),
        ('<div style="display:\\6e one">INJECTED</div><p>shown</p>', ["shown"]),
        ('<div style="dis\\play:none">INJECTED</div><p>shown</p>', ["shown"]),
        ('<div style="display:\\6e\r\none">INJECTED</div><p>shown</p>', ["shown"]),
        (
            '<ul><li>shown</li><li style="display:none">Menu<ul><li>INJECTED</li></ul></li></ul>',
            ["shown"],
        ),
        ("<div hidden><!x</div>INJECTED</div><div hidden><?x</div>INJECTED</div>shown", ["shown"]),
        ("<div hidden><![CDATA[</div>]]>INJECTED</div><p>shown</p>", ["shown"]),
        (
            '<script></script.>INJECTED</script><title></title">INJECTED</title><p>shown</p>',
            ["shown"],
        ),
        ('<dialog class="modal open">INJECTED</dialog><dialog/open>shown</dialog>', ["shown"]),
        ('<div style="overflow: hidden"><p class="x hidden">shown one</p></div>', ["shown one"]),
        ('<p>See <a href="/hidden">shown one</a> here.</p>', ["See shown one here."]),
        ('<p>Vis <a title=\u00a0"x>shown one</a> more.</p><p>shown two</p>', ["shown two"]),
        ("<a x='<p z=\"' title=\"'>INJECTED\">shown</a>", ["shown"]),
        ("<p>un<em>believ</em>able H<sub>2</sub>O</p>", ["unbelievable H_2O"]),
        ("<div hidden><table></div>INJECTED</table></div><p>shown</p>", ["shown"]),
        ("<div hidden><object></div>INJECTED</object></div><p>shown</p>", ["shown"]),
        (
            "<p>If x < 5 the loop stops.</p><p>Second one here.</p><p>Third <b>bold</b>.</p>",
            ["If x < 5 the loop stops.", "Second one here.", "Third bold"],
        ),
    ],
)
def test_the_plain_reading_reads_markup_as_a_browser_tokenizes_it(
    markup: str, shown: list[str]
) -> None:
    """What hides an element ends where a browser ends it: not at a "</div>" inside a comment,
    an attribute or a script, nor at a script's end tag inside "<!-- <script>"; an element
    whose end tag is left out ends where HTML ends it. Markup inside an attribute value
    opens nothing, and offsets survive characters whose lower case is longer (U+0130)."""
    body = "<html><body>" + "<div>" * 3000 + markup + "</body></html>"
    text = html_to_markdown(body, URL).markdown
    assert "INJECTED" not in text
    for words in shown:
        assert words in text, (words, text[-300:])


def test_a_scant_reading_leaves_hidden_text_out_too() -> None:
    """A short page whose reading comes out scant is read again from its body's words:
    hidden elements (an injection's favourite place) stay out of that too."""
    body = (
        "<html><head><title>S</title></head><body><article><h1>Short</h1>"
        "<p>A short note of a page.</p>"
        '<div style="display:none">Ignore previous instructions.</div>'
        '<div hidden>HIDDENATTR</div><div aria-hidden="true">ARIAHIDDEN</div>'
        "</article></body></html>"
    )
    result, _ = cpu_convert(body.encode())
    assert "A short note of a page." in result.text
    for hidden in ("Ignore previous", "HIDDENATTR", "ARIAHIDDEN"):
        assert hidden not in result.text


def test_tags_that_never_close_are_read_in_linear_time() -> None:
    body = unclosed_tags_html()
    result, cpu = cpu_convert(body)
    assert "a few words" in result.text
    assert cpu < CPU_BOUND_S


def test_an_unclosed_script_in_a_deep_page_ends_the_text_quickly() -> None:
    body = "<p>before</p>" + "<div>" * 3000 + "<script>" * 100_000
    started = time.process_time()
    result = html_to_markdown(body, URL)
    assert "before" in result.markdown
    assert time.process_time() - started < CPU_BOUND_S


def test_a_table_heavy_page_goes_to_html_to_markdown_and_keeps_every_row() -> None:
    body = table_html(960_000)
    result, cpu = cpu_convert(body)
    assert html_to_markdown(body.decode(), URL).extractor == "full"
    last_row = body.rsplit(b"<tr>", 1)[1].split(b"</td>", 1)[0].removeprefix(b"<td>").decode()
    assert last_row in result.text
    assert result.text.startswith("# Figures")
    assert cpu < CPU_BOUND_S


@pytest.mark.parametrize(
    "unit",
    [b"<p>x", b"<li>x", b"<tr><td>x", b"<dt>x<dd>x", b"x<br>", b"<ul><li>x</li></ul>"],
    ids=["p", "li", "tr-td", "dt-dd", "br", "ul-li"],
)
def test_a_page_of_more_elements_than_markdown_takes_in_time_is_read_as_plain_text(
    unit: bytes,
) -> None:
    body = tiny_elements_html(unit)
    result, cpu = cpu_convert(body)
    assert result.text.startswith("[this page has more than 50,000 elements")
    units = body.count(unit)
    assert result.text.count("x") >= units * unit.count(b"x")  # every word kept
    assert html_to_markdown(body.decode(), URL).extractor == "plain"
    assert cpu < CPU_BOUND_S


def test_the_plain_reading_passes_over_tags_nothing_hides_in_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where nothing can hide an element (no word that hides, no stylesheet), the tags neither
    skipped nor raw text are passed over in runs, and what each tag leaves is read for all of
    them at once where no link or script needs its own reading: a page of 330,000 bare <p>s
    spent 0.25 s handing each tag to Python. The reading is the one made tag by tag."""
    tokens = _convert._TOKEN
    searches: list[None] = []

    class Counting:
        def search(self, *args: Any) -> Any:
            searches.append(None)
            return tokens.search(*args)

    monkeypatch.setattr(_convert, "_TOKEN", Counting())
    readers = counted(monkeypatch, "_TagText")
    body = (
        "<html><head><title>t</title><script>var p = '<p>';</script></head><body>"
        + "<p>x <b title='a > b'>y</b><br>" * 10_000
        + "<!-- <p>c --><svg><text>s</text></svg><p>end</p></body></html>"
    )
    assert _convert._plain_text(body) == "\n".join(["x y"] * 10_000 + ["end"])
    assert len(searches) <= 10  # at the title, the script, the comment, the SVG (to their ends)
    assert readers == []
    assert _convert._plain_text("<p>a <a href=/x><img alt=ab></a> <sup>2</sup></p>") == "a ab ^2"
    assert len(readers) == 1


@pytest.mark.parametrize(
    "unit", [b"<tr><td class=h>qz", b"<div class=h>qz y</div>"], ids=["plain", "markdown"]
)
def test_elements_a_stylesheet_hides_and_shows_again_keep_their_words(unit: bytes) -> None:
    # Every element is compared with the sheet's selectors, in the tree reading (45,000
    # divs) or the parser-free one (58,000 cells), and shown again by a rule on hover.
    body = styled_elements_html(unit)
    assert read(body).count("qz") == body.count(b"qz")


def test_a_sheet_past_its_bounds_hides_nothing() -> None:
    # 1 MB of rules that hide: past the rules read, one could show what another hides.
    assert "a paragraph under a huge sheet" in read(stylesheet_html())


def test_the_parser_keeps_no_table_of_ids() -> None:
    """libxml2 files every id attribute in a table of the document's IDs unless told not to,
    in parsing, in each copy of the tree and in freeing it; nothing here reads the table (an id
    is read as the attribute it is): 49,000 words with an id each spent 0.1 s of their 0.55 s
    on it (bench/convert.py)."""
    tree, _ = _parse("<p id=a>words</p>")
    assert tree.xpath("id('a')") == []  # what XPath's id() finds: the table
    assert tree.find(".//p").get("id") == "a"


@pytest.mark.parametrize(
    ("make", "word", "unit"),
    [
        (ids_html, "**t**", b"<b id="),
        (fragment_targets_html, "[l](", b"<a href="),
        (backlinks_html, "note", b"note"),
        (references_html, "ref", b" ref<"),
        (glossary_html, "definition text", b"definition text"),
        (numbered_lists_html, "x", b">x<"),
        (aria_tabs_html, "panel", b">panel<"),
        (anchored_headings_html, "text", b">text<"),
        (code_blocks_html, "x = 1", b"x = 1"),
        (highlighted_code_html, "def f()", b"<span class=k>def"),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_pages_just_under_the_element_bound_keep_every_word(
    make: Any, word: str, unit: bytes
) -> None:
    # Elements with an id, a start, a target or a language of their own, as many as the
    # Markdown reading takes (bench/convert.py measures them).
    body = make()
    result, cpu = cpu_convert(body)
    assert not result.text.startswith("[this page has more than")
    assert result.text.count(word) == body.count(unit)
    assert cpu < CPU_BOUND_S


def test_without_style_rules_only_elements_that_can_hide_are_asked_whether_they_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before a page's links are listed, an element with an id or a class alone hides nothing
    on a page without style rules: it is not walked (49,000 words with an id each were, for
    nothing). Those with an attribute that hides, and dialogs, still are."""
    asked = counted(monkeypatch, "_hiding")
    tree, _ = _parse(
        "<body>"
        + "<b id=x class=y>w</b>" * 100
        + "<p hidden>h</p><p style='display: none'>s</p><dialog>d</dialog><p>kept</p></body>"
    )
    _convert._drop_unseen(tree, None)
    assert len(asked) == 3
    assert tree.text_content() == "w" * 100 + "kept"


def test_item_numbers_and_terms_are_read_from_their_own_text_where_it_has_some(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A numbered item with words of its own is marked without a walk of it, and a term with
    words of its own and nothing inside is not read whole again: a walk or an XPath
    evaluation for each of 23,500 lists' items and 21,200 terms (bench/convert.py)."""
    import lxml.html

    walks: list[None] = []
    walk = _structure._iterwalk
    monkeypatch.setattr(_structure, "_iterwalk", lambda *a: walks.append(None) or walk(*a))
    reads: list[None] = []
    read_whole = lxml.html.HtmlMixin.text_content
    monkeypatch.setattr(
        lxml.html.HtmlMixin, "text_content", lambda el: reads.append(None) or read_whole(el)
    )
    page = (
        "<ol start=3><li>a</li><li><b>b</b></li></ol>"
        "<dl><dt>x</dt><dd>y</dd><dt>Term:</dt><dd>z</dd><dt><i>i:</i></dt><dd>w</dd></dl>"
    )
    tree, _ = _parse(f"<body>{page}</body>")
    _structure.prepare(tree)
    # The item whose words are in its <b>; the term whose words are in its <i> (is it empty,
    # does it end in a colon).
    assert (len(walks), len(reads)) == (1, 2)
    markdown = html_to_markdown(f"<html><body><main>{page}</main></body></html>", URL).markdown
    assert markdown == "3. a\n4. **b**\n\n- **x**: y\n- **Term:** z\n- ***i:*** w"


_DEEP = {
    "links": (b"<div>", b"</div>", b"<a href=#>w</a> ", 48_000, b""),
    "figures": (
        b"<figure><figcaption>c</figcaption>",
        b"</figure>",
        b"<span>w</span> ",
        48_500,
        b"",
    ),
    "headers": (b"<header>", b"</header>", b"<span>w</span> ", 48_500, b"<h1>t</h1>"),
}


def test_links_to_fragments_57_levels_deep_are_read_as_plain_text() -> None:
    # 45,000 links to anchors (none of them on the page) 57 levels down: 0.55 s as Markdown.
    body = numbered_units_html(b"<a href=#%d>w</a> ", 45_000, b"<div>" * 57, b"</div>" * 57)
    result, cpu = cpu_convert(body)
    assert result.text.startswith("[this page nests its elements so deep")
    assert result.text.split("\n\n", 1)[1].count("w") == 45_000
    assert cpu < CPU_BOUND_S


def test_links_to_anchors_the_page_lacks_are_not_looked_for_among_their_ancestors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A paragraph's own permalink goes to an id the page has: links to anchors that are
    nowhere are not each asked whether they are one (45,000 of them read their ancestors)."""
    asked = counted(monkeypatch, "_links_its_block")
    tree, _ = _parse("<body><p>" + "<a href=#x>w</a> " * 100 + "</p></body>")
    _convert._drop_permalinks(tree)
    assert asked == []
    tree, _ = _parse("<body><p id=x>" + "<a href=#x>w</a> " * 100 + "</p></body>")
    _convert._drop_permalinks(tree)
    assert len(asked) == 100


@pytest.mark.parametrize("kind", _DEEP)
def test_elements_nested_deep_in_all_are_read_as_plain_text_with_a_note(kind: str) -> None:
    # 48,000 links (or spans in figures or headers) 250 levels down: 0.5 to 0.75 s to
    # convert to Markdown, html-to-markdown's time for each growing with its depth.
    opening, closing, unit, count, end = _DEEP[kind]
    result, cpu = cpu_convert(deep_wrappers_html(opening, closing, unit, count, end=end))
    note, text = result.text.split("\n\n", 1)
    assert note == (
        "[this page nests its elements so deep that they have more than 1,500,000 levels above "
        "them in all, more than webward converts to Markdown in time; webward shows its text "
        "without formatting]"
    )
    assert text.count("w") == count  # every word kept
    assert cpu < CPU_BOUND_S


def test_a_deep_pages_plain_reading_starts_a_line_at_each_block() -> None:
    """The plain reading of a page nested too deep for Markdown started a line at paragraphs,
    items and headings but not at figures, captions, folded sections or definition lists:
    each caption ran into the words before it ("Hidden 0Caption number 1"). Every block a
    browser starts a line at starts one."""
    unit = (
        b"<figure><img src=/i.png alt=''><figcaption>Caption %d</figcaption></figure><details>"
        b"<summary>More</summary>Folded</details><dl><dt>Term</dt><dd>Meaning</dd></dl>"
        b"<aside>Aside</aside>"
    )
    units = b"".join(unit % n for n in range(2_000))
    note, text = read(deep_wrappers_html(unit=units, count=1, depth=200)).split("\n\n", 1)
    assert note.startswith("[this page nests its elements so deep")
    assert text.startswith("Caption 0\nMore\nFolded\nTerm\nMeaning\nAside\nCaption 1\n")
    assert text.count("\n") == 2_000 * 6 - 1


def test_elements_nested_deep_but_fewer_levels_in_all_keep_their_markdown() -> None:
    # 48,000 links 28 levels down (1.4 million levels above them in all), or 250 levels down
    # but 5,500 of them: the reading of a page no deeper than 30 levels is never weighed.
    for depth, count in ((28, 48_000), (250, 5_500)):
        text = read(deep_wrappers_html(count=count, depth=depth))
        assert text.startswith("[w](https://example.com/page) [w](")
        assert text.count("w") == count


def test_a_page_just_under_the_element_bound_keeps_its_markdown() -> None:
    body = tiny_elements_html(b"<li>x</li>", 49_000 * 10)  # about 49,000 items in one list
    text = read(body)
    assert not text.startswith("[this page has more than")
    assert text.count("- x") >= 48_000


def test_a_book_length_page_of_paragraphs_goes_to_html_to_markdown_and_keeps_them_all() -> None:
    body = paragraphs_html(990_000)
    paragraphs = body.count(b"<p>")
    assert paragraphs > 2_000  # past what trafilatura reads in time, whatever their size
    result, cpu = cpu_convert(body)
    assert html_to_markdown(body.decode(), URL).extractor == "full"
    assert result.text.startswith("# Chapter one")
    assert result.text.count("the quick brown fox") >= paragraphs
    assert f"\n{paragraphs - 1}\\. " in result.text  # the last paragraph
    assert cpu < CPU_BOUND_S


def test_a_heavy_page_is_read_from_its_main_container() -> None:
    """Past trafilatura's bounds, html-to-markdown reads the <article> (or <main>) holding the
    page's text, not the blocks of links around it; a teaser holding a sliver of the page's
    text is no main container, and the whole page is read."""
    related = "".join(
        f"<div class='rel'><a href='/r{i}'>Related story {i}</a></div>" for i in range(600)
    )
    story = "".join(
        f"<p>Paragraph {i} of the story, long enough to be read.</p>" for i in range(1_500)
    )
    page = f"<html><body><div>{related}</div><article><h1>Story</h1>{story}</article></body></html>"
    reading = html_to_markdown(page, URL)
    assert reading.extractor == "full"  # past the bound on elements
    assert reading.markdown.startswith("# Story")
    assert "Paragraph 1499 of the story" in reading.markdown
    assert "Related story" not in reading.markdown
    teaser = "<article><p>A teaser of a few words.</p></article>"
    whole = html_to_markdown(
        page.replace("<article>", "<div>")
        .replace("</article>", "</div>")
        .replace("<body>", f"<body>{teaser}"),
        URL,
    )
    assert "Related story 599" in whole.markdown and "Paragraph 1499" in whole.markdown


def test_text_made_of_markdown_characters_goes_to_html_to_markdown() -> None:
    body = markdown_chars_html(990_000)
    assert body.count(b"<p>") < 1_000  # few elements: the characters alone route the page
    result, cpu = cpu_convert(body)
    assert html_to_markdown(body.decode(), URL).extractor == "full"
    assert result.text.count("[f]g") == body.count(b"[f]g")
    assert cpu < CPU_BOUND_S


@pytest.mark.parametrize(
    ("kind", "size"),
    [("paren", 100_000), ("bracket", 100_000), ("backslashes", 100_000), ("backticks", 990_000)],
)
def test_delimiters_left_open_go_to_html_to_markdown_and_keep_their_text(
    kind: str, size: int
) -> None:
    # trafilatura scans on from each open delimiter to the end of its text: these pages took
    # 3 to 4.8 s through it (1 MB of "\\(" minutes); few elements and few Markdown characters,
    # so no other bound routes them.
    body = delimiters_html(kind, size)
    result, cpu = cpu_convert(body)
    assert html_to_markdown(body.decode(), URL).extractor == "full"
    assert "Plain words of an article" in result.text
    assert len(result.text) > 0.9 * size
    assert cpu < CPU_BOUND_S


def test_blanks_beside_a_cells_lines_are_searched_once() -> None:
    """The marks that join a cell's lines are collapsed over the whole Markdown: a pattern
    tried at each blank of a code block's run took 19.6 s at 59 kB. The cell reads as its
    lines and the code keeps its blanks."""
    body = blanks_beside_cell_lines_html(200_000)
    result, cpu = cpu_convert(body)
    assert "first line<br>second line" in result.text
    assert "a" + " " * 1000 in result.text
    assert cpu < CPU_BOUND_S


def test_math_closed_as_it_opens_stays_with_trafilatura() -> None:
    # Paired delimiters cost one scan each: 3,000 formulas are no reason to route the page,
    # and trafilatura writes them as Markdown math.
    formulas = " ".join(f"where \\(x_{{{i}}} + y\\) holds" for i in range(3_000))
    prose = "<p>Plain words of an article about rivers and owls, told at length.</p>" * 20
    page = f"<html><body><main>{prose}<p>{formulas}</p></main></body></html>"
    result = html_to_markdown(page, URL)
    assert result.extractor == "main"
    assert "$x_{2999} + y$" in result.markdown


def test_the_rescan_bound_counts_openers_closed_only_in_a_later_text() -> None:
    # trafilatura scans each text node on its own: openers whose closer lies in another node
    # scan to their node's end, so the bound takes the whole page's text as one.
    assert _rescanned("\\( " * 10_000 + "\\)") > 10_000_000
    assert _rescanned(" ".join(["\\(x\\)"] * 100_000)) < 1_000_000
    runs = " ".join("`" * i for i in range(1, 30))  # no run has another of its length after it
    assert _rescanned(runs + " y" * 500_000) > 10_000_000
    assert _rescanned(" ".join(["`a`"] * 100_000)) < 1_000_000
    assert _rescanned("*" + "\\" * 5_000) > 10_000_000
    assert _rescanned("no delimiters here " * 50_000) == 0


_MARK_TEXT = {"link": "[link](https://example.com/x)", "code": "`c`", "emphasis": "*e*"}


@pytest.mark.parametrize("holder", [b"p", b"li"])
@pytest.mark.parametrize(
    ("mark", "size"),
    # Emphasis is shorter: 990 kB of it is more elements than Markdown conversion takes.
    [("link", 990_000), ("code", 990_000), ("emphasis", 750_000)],
)
def test_a_line_of_thousands_of_marks_is_broken_and_keeps_every_mark(
    mark: str, size: int, holder: bytes
) -> None:
    # html-to-markdown spends time on each mark in proportion to its line: 36,000 links on one
    # line took 1.3 s in a paragraph, 3.1 s in a list item. A break every _MAX_LINE_ELEMENTS.
    body = marked_line_html(mark, holder, size)
    result, cpu = cpu_convert(body)
    written = _MARK_TEXT[mark]
    assert result.text.count(written) == body.count(b"word <")  # every mark, as a mark
    assert max(line.count(written) for line in result.text.splitlines()) == _MAX_LINE_ELEMENTS
    assert cpu < CPU_BOUND_S


def _breaks(html: str) -> tuple[int, str]:
    """The ``<br>``s that _break_long_lines adds to ``html``, and the page it leaves."""
    import lxml.html

    tree = lxml.html.fromstring(html)
    before = len(tree.findall(".//br"))
    _break_long_lines(tree)
    return len(tree.findall(".//br")) - before, lxml.html.tostring(tree, encoding="unicode")


_LINK = 'word <a href="/x">link</a> '


@pytest.mark.parametrize(
    ("page", "breaks"),
    [
        (f"<p>{_LINK * 1_200}</p>", 2),
        # Elements that are not marks (a custom element around the whole application, a
        # <span>, an old page's <font>) neither end a line nor hide the lines in them.
        (f"<app-root><x-view><p>{_LINK * 1_200}</p></x-view></app-root>", 2),
        (f"<p><span>{_LINK * 1_200}</span></p>", 2),
        (f"<font><p>{_LINK * 400}</p><p>{_LINK * 400}</p></font>", 0),
        (f"<p>{_LINK * 400}</p><p>{_LINK * 400}</p>", 0),  # each paragraph its own line
        (f"<p>{(_LINK + '<div></div>') * 1_200}</p>", 0),
        (f"<p>{(_LINK * 100 + '<br>') * 12}</p>", 0),
        # In a mark, html-to-markdown flattens a block into the line: it does not end it.
        (f"<p>{(_LINK + '<a href=/y><div>d</div></a>') * 600}</p>", 2),
        (f"<p>{(_LINK + '<b>b<div></div></b>') * 600}</p>", 2),
        (f"<pre>{_LINK * 1_200}</pre>", 0),  # a code block's lines are the page's own
        # In a paragraph every inline element costs, marks or not, empty or not.
        (f"<p>{'w1 <u></u>' * 1_200}</p>", 2),
    ],
    ids=[
        "paragraph",
        "custom",
        "span",
        "font",
        "paragraphs",
        "blocks",
        "brs",
        "in-link",
        "in-emphasis",
        "pre",
        "empty-inline",
    ],
)
def test_a_break_goes_where_a_markdown_line_passes_the_mark_bound(page: str, breaks: int) -> None:
    added, _ = _breaks(f"<html><body>{page}</body></html>")
    assert added == breaks


def test_marks_nested_past_the_bound_in_one_element_become_plain_text() -> None:
    added, html = _breaks(f"<html><body><p><b>{_LINK * 1_200}</b></p></body></html>")
    assert added == 1  # after the <b>, where the line can end
    assert '<a href="/x">' not in html  # the links inside it lose their tags...
    assert html.count("word link") == 1_200  # ...and keep their words


@pytest.mark.parametrize("unit", [b"#", b"-", b"$", b"="])
def test_runs_of_non_word_characters_go_to_html_to_markdown(unit: bytes) -> None:
    body = non_word_html(unit)
    result, cpu = cpu_convert(body)
    assert html_to_markdown(body.decode(), URL).extractor == "full"
    assert result.text.count(unit.decode()) > 0.9 * len(body)
    assert cpu < CPU_BOUND_S


@pytest.mark.parametrize(("unit", "read"), [(b"](x_ ", "](x\\_ "), (b"&lt;a:x_", "<a:x\\_")])
def test_openings_nothing_closes_are_passed_over_once(unit: bytes, read: str) -> None:
    """The search for underscores at a word's edge in html-to-markdown's reading skips link
    targets and autolinks; each opening of one that nothing closed on its line (its word) had
    it search on to that end: 300 kB of them took 30 s. Each is passed over once, and every
    underscore is still escaped."""
    body = unclosed_openings_html(unit, size=300_000)
    result, cpu = cpu_convert(body)
    assert result.text.count(read.strip()) == 300_000 // len(unit)
    assert cpu < CPU_BOUND_S


def test_the_filter_bound_counts_only_long_runs_on_one_line() -> None:
    assert _filtered("#" * 999) == 0
    assert _filtered("#" * 1_000) == 1_000
    assert _filtered("a" * 499 + "#" * 1_000 + "a") == 1_000  # found wherever it starts
    assert _filtered(("-" * 600 + "\n") * 1_000) == 0  # each line backs over its own run
    assert _filtered("a " * 100_000) == 0
    # Runs just short of the bound count nothing, and are scanned once, not once a character.
    assert _filtered(("#" * 999 + "a") * 990) == 0
    body = non_word_html(b"#" * 999 + b"a")
    result, cpu = cpu_convert(body)
    assert result.text.count("#") > 0.9 * len(body)
    assert cpu < CPU_BOUND_S


def test_a_first_reading_without_words_is_not_read_again(monkeypatch: Any) -> None:
    # A second reading wins only by holding the first one's words: with none, it cannot.
    second: list[Any] = []
    monkeypatch.setattr(_convert, "_second_reading", lambda tree: second.append(tree) or "")
    page = "<html><body><pre>" + "-\n" * 20_000 + "</pre></body></html>"
    result = html_to_markdown(page, URL)
    assert result.extractor == "main" and result.markdown.count("-") == 20_000
    assert second == []


@pytest.mark.parametrize(("words", "second"), [(12_000, "full"), (2_000, "readability")])
def test_text_in_many_nested_candidates_is_read_again_by_html_to_markdown(
    monkeypatch: Any, words: int, second: str
) -> None:
    # readability-lxml reads each candidate's whole text: ten nested paragraphs of 109 kB took
    # 1 s in the second readings. html-to-markdown reads them instead, keeping every one; of
    # 18 kB, far within the bound, the second readings still run.
    readability: list[Any] = []
    second_reading = _convert._second_reading

    def recording(tree: Any) -> str:
        readability.append(tree)
        return second_reading(tree)

    monkeypatch.setattr(_convert, "_second_reading", recording)
    result = html_to_markdown(nested_paragraphs_html(10, words).decode(), URL)
    assert result.extractor == second
    assert bool(readability) is (second == "readability")
    assert result.markdown.count(f"word{words - 1}") == 10  # every level's paragraph


def test_the_candidate_text_counts_each_candidate_s_whole_text() -> None:
    def counted(body: str) -> int:
        tree, _ = _parse(f"<html><body>{body}</body></html>")
        return _candidate_text(tree)

    assert counted("<p>abc</p>") == 6  # its parent <body> and grandparent <html>
    assert counted("<div><p>abc</p></div>") == 6  # the <div>, and <body> its grandparent
    assert counted("<div><div><p>abc</p></div></div>") == 9  # each <div> is one
    assert counted("<div><span>abc</span></div>") == 6  # no paragraph: the <div> and <body>
    assert _candidate_text(_parse(nested_paragraphs_html().decode())[0]) > 5_000_000


@pytest.mark.parametrize(("words", "whole_cascade"), [(2_600, False), (200, True)])
def test_a_page_of_many_tokens_skips_trafilatura_s_whole_cascade(
    monkeypatch: pytest.MonkeyPatch, words: int, whole_cascade: bool
) -> None:
    # Text in no paragraph, so the quick reading is deficient: 280,000 tokens took 0.95 s in
    # justext; 20,000 are within the bound and still get the whole cascade.
    passes = record_readings(monkeypatch)
    result = html_to_markdown(label_runs_html(50, words).decode(), URL)
    assert any(passes) is whole_cascade
    assert result.markdown.count(f"w{words - 1}") == 50  # every run read


@pytest.mark.parametrize("unit", [b"w538&amp;", "w538\xa0".encode(), "w538\xa9".encode()])
def test_texts_of_many_entities_are_split_and_read_the_same(unit: bytes) -> None:
    import lxml.html

    body = entity_text_html(unit=unit)
    result, cpu = cpu_convert(body)
    assert result.text.count("w538") == 107_000
    assert cpu < CPU_BOUND_S
    # The same Markdown as the one long text gives (html-to-markdown reads an empty <span> as
    # nothing), each text now short.
    tree, _ = _parse(body.decode())
    whole = lxml.html.tostring(tree, encoding="unicode")
    _split_entity_texts(tree)
    split = lxml.html.tostring(tree, encoding="unicode")
    assert split.count("<span></span>") > 250  # 535,000 characters
    assert max(len(t) for t in tree.xpath("//text()")) <= 2_000
    assert _convert._h2m(split) == _convert._h2m(whole)
    # A serialized reading (readability-lxml's) is split the same way, and left as it is
    # when it has no such text.
    assert _split_entity_html(whole).count("<span></span>") == split.count("<span></span>")
    plain = "<div>" + "<p>a &amp; b</p>" * 100 + "</div>"  # many entities, in short texts
    assert _split_entity_html(plain) is plain


def test_preformatted_text_nested_in_itself_is_read_as_one_block() -> None:
    body = nested_pre_html()
    result, cpu = cpu_convert(body)
    assert result.text.count("w1") == body.count(b"w1")
    assert result.text.count("```") == 2  # one code block, opened and closed
    assert cpu < CPU_BOUND_S
    tree, _ = _parse(body.decode())
    _flatten_nested_pre(tree)
    assert len(tree.xpath("//pre")) == 1 and len(tree.xpath("//pre/span")) == 1


# Elements the cleaning drops, each followed by a word: by tag (stripped in one pass), hidden
# (dropped by attribute), empty inline (dropped as holding no words), page furniture.
DROPPED_UNITS = [
    b"<img>",
    b"<nav></nav>",
    b"<script></script>",
    b"<iframe></iframe>",
    b"<span hidden></span>",
    b'<div style="display:none">no</div>',
    b"<i></i>",
    b"<header><a>menu</a></header>",
    b'<div class="cookie-banner">ok</div>',
]


@pytest.mark.parametrize("unit", DROPPED_UNITS, ids=lambda unit: unit.decode()[:24])
@pytest.mark.parametrize("count", [5_000, 20_000])
def test_words_between_dropped_elements_are_read_and_joined_into_one_text(
    unit: bytes, count: int
) -> None:
    # Stripped or dropped one by one, they left 45,000 text nodes in the paragraph (seconds in
    # trafilatura's XPath) or rewrote the whole text before each (36 s): now one text.
    body = dropped_between_words_html(unit, count, b"w ")
    result, _ = cpu_convert(body)
    assert result.text.split() == ["w"] * count
    tree, _ = _parse(body.decode())
    _clean(tree)
    assert tree.xpath("count(//main//text())") == 1  # (a <div> ends the <p>: in <main>)


def test_dropping_elements_all_at_once_leaves_what_dropping_each_leaves() -> None:
    import lxml.html

    page = (
        "<html><body><div>a<b>1</b>b<i>2</i>c<p>3<u>4</u>d<s>5</s></p>e<b>6<i>7</i>f</b>g"
        "<span>8</span><span>9</span>h<em>10</em></div></body></html>"
    )
    for picked in (("b",), ("i", "u"), ("span", "em", "s"), ("b", "i", "p")):
        one_by_one, _ = _parse(page)
        for element in list(one_by_one.iter(*picked)):
            element.drop_tree()  # keeps the tail text, which belongs to the parent
        at_once, _ = _parse(page)
        _drop_all(list(at_once.iter(*picked)))
        assert lxml.html.tostring(at_once) == lxml.html.tostring(one_by_one), picked
        assert at_once.xpath("count(//text())") == one_by_one.xpath("count(//text())")


def test_formulas_nested_in_each_other_are_each_read_once() -> None:
    # Read innermost first, each level read the text of all those inside it again (3.2 s).
    body = nested_math_html(200, 100_000)
    result, _ = cpu_convert(body)
    assert result.text.count("x") == 100_000 + 200  # the text, and each level's token
    # A nested formula reads as it would alone, inside the outer one's tokens; the outer one
    # does not take a nested one's TeX for its own.
    tree, _ = _parse(
        "<html><body><p>see <math><mrow><mi>a</mi><mo>+</mo><math><semantics><mi>b</mi>"
        '<annotation encoding="application/x-tex">b^2</annotation></semantics></math>'
        "<mo>=</mo><mi>c</mi></mrow></math> here</p></body></html>"
    )
    _convert._structure.math_to_text(tree, "$", "$")
    assert tree.find(".//p").text == "see a + $b^2$ = c here"


def test_marks_nested_past_the_bound_are_read_as_plain_text() -> None:
    # html-to-markdown held a copy of each level's content: 200 nested <b><i> around 980 kB
    # of text took 410 MB, past the converter worker's 512 MiB. Past 16 levels they are plain.
    tree, _ = _parse(nested_marks_html(200, 1_000).decode())
    _bound_copies(tree)
    assert len(tree.xpath("//b | //i")) == 16
    assert len(tree.xpath("//span")) == 400 - 16
    tree, _ = _parse(nested_marks_html(200, 1_000, b"section><h2").decode())
    _bound_copies(tree)
    assert len(tree.xpath("//section | //h2")) == 16 and len(tree.xpath("//div")) == 400 - 16
    for unit in (b"b><i", b"sub", b"section"):
        result, _ = cpu_convert(nested_marks_html(200, 980_000, unit))
        assert result.text.count("x") == 980_000


def test_marks_nested_around_a_whole_page_are_read_within_the_worker_s_memory() -> None:
    async def read() -> str:
        pool = ConvertPool(workers=1, queue=4, memory_mb=512)
        try:
            job = Job(nested_marks_html(), "text/html", URL, False, False, LIMITS)
            return (await pool.convert(job, time.monotonic() + 30)).text
        finally:
            await pool.aclose()

    assert anyio.run(read).count("x") == 980_000


# Run in a child: an address-space limit lowered is never raised again in that process.
_UNDER_ULIMIT = """
import resource, sys, time
import anyio
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # ulimit -v: 2 GiB
from webward._settings import LimitsSettings
from webward._workers import ConvertPool, Job
body = ("<html><body>" + "<p>words of the page</p>" * 20_000 + "</body></html>").encode()
async def read():
    pool = ConvertPool(workers=1, queue=4, memory_mb=4096)
    try:
        job = Job(body, "text/html", "https://example.com/", False, False, LimitsSettings())
        return (await pool.convert(job, time.monotonic() + 60)).text
    finally:
        await pool.aclose()
print(anyio.run(read).count("words of the page"))
"""


def test_a_process_memory_limit_below_the_workers_is_the_workers_limit() -> None:
    """Under a ``ulimit -v`` lower than ``convert_memory_mb`` a worker takes the process's
    limit: it asked for its own, above what a child may set, failed to start each time, and
    every page it would have read was refused as "crashed"."""
    done = subprocess.run(
        [sys.executable, "-c", _UNDER_ULIMIT], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout.strip()) == (0, "20000"), done.stderr[-2000:]


def test_a_text_is_cut_between_letters_or_digits_where_it_has_them() -> None:
    text = "word & " * 1_000
    pieces = _pieces(text)
    assert "".join(pieces) == text
    assert all(len(p) <= 2_000 for p in pieces)
    assert all(p[-1].isalnum() and q[0].isalnum() for p, q in itertools.pairwise(pieces))
    assert [len(p) for p in _pieces("& " * 3_000)] == [2_000, 2_000, 2_000]  # no pair: cut


@pytest.mark.parametrize(
    "kind", ["figure quotes", "nested infoboxes", "tabs", "skip links", "emphasis"]
)
def test_the_rules_of_the_third_round_stay_linear(kind: str) -> None:
    """A page of one shape this round's rules rewrite, up to the byte cap: quotes in one
    figure (their caption was looked for once per quote: 9 s), nested infobox asides (each
    read its items again: 3.6 s), tabs, skip links, divs of emphasis; with the page's links
    asked for too (the lists of tabs took 1.6 s so: libxml2 merged ``//*[...]``'s matches
    from 20,000 lists in quadratic time)."""
    for links in (False, True):
        started = time.process_time()
        result = convert(
            reading_rules_html(kind), "text/html; charset=utf-8", URL, truncated=False,
            include_links=links, limits=LIMITS,
        )  # fmt: skip
        assert result.text and time.process_time() - started < CPU_BOUND_S


@pytest.mark.parametrize(
    "kind",
    [
        "embedded posts",
        "teaser cards",
        "share widgets",
        "heading anchors",
        "emphasised links",
        "indented prose",
    ],
)
def test_the_reading_rules_of_2026_12_06_read_a_page_of_their_shape(kind: str) -> None:
    """A page of one shape the rules of 2026-12-06 rewrite, up to the byte cap, is read (with
    its links asked for too): 20,000 tweets in one wrapper (each judged on the wrapper's
    children up to the first that is not it), cards of linked headings, a sharing class 250
    deep around the text (read up to 500 characters, one inside another passed over),
    headings opening with an empty anchor, links of emphasised words, prose indented by the
    source. (Their time is bench/convert.py's: each within the bound of a page.)"""
    for links in (False, True):
        result = convert(
            reading_rules_html(kind), "text/html; charset=utf-8", URL, truncated=False,
            include_links=links, limits=LIMITS,
        )  # fmt: skip
        assert result.text.strip()


def test_a_tag_of_90000_attributes_keeps_its_first_and_the_page_its_words() -> None:
    body = attributes_html(90_000)
    assert body.count(b"<p ") == 1  # one tag: 81 s of parsing before its bound
    result, cpu = cpu_convert(body + b"<p>the closing words</p>")
    assert "the quick brown fox" in result.text
    assert "the closing words" in result.text
    assert cpu < CPU_BOUND_S


# However a tag's attributes are written, the tokenizer counts them as the parser does: a ">"
# or "<" inside a quoted value does not end the tag, nor does a missing space begin a new one.
ATTRIBUTE_FORMS = {
    "quoted": ('a{i}="v"', " "),
    "single-quoted": ("a{i}='v w'", " "),
    "quoted >": ('a{i}=">"', " "),
    "quoted <": ('a{i}="<p x>"', " "),
    "unquoted": ("a{i}=v", " "),
    "bare": ("a{i}", " "),
    "slashes": ("a{i}", "/"),
    "no space": ('a{i}="v"', ""),
    "spaced =": ('a{i} = "v"', "\n"),
}


@pytest.mark.parametrize("form", ATTRIBUTE_FORMS.values(), ids=ATTRIBUTE_FORMS.keys())
def test_a_tag_is_cut_to_its_first_128_attributes_however_they_are_written(
    form: tuple[str, str],
) -> None:
    import lxml.html

    attribute, separator = form
    attributes = separator.join(attribute.format(i=i) for i in range(5_000))
    text = f"<html><body><div {attributes}>inside</div><p>after</p></body></html>"
    tree = lxml.html.document_fromstring(_bound_attributes(text))
    div = tree.find(".//div")
    assert div is not None and len(div.attrib) == 128
    assert list(div.attrib)[:2] == ["a0", "a1"]  # the first are kept, in order
    assert div.text_content() == "inside"
    assert tree.findtext(".//p") == "after"


@pytest.mark.parametrize("space", ["\u00a0", "\u2003", "\u3000"])
def test_a_quote_after_a_unicode_space_opens_no_value(space: str) -> None:
    # To the parser the space starts a bare value that ends at the next ASCII space, so the
    # names after it are attributes; read as a space it would open a quote holding them all.
    import lxml.html

    names = " ".join(f"a{i}" for i in range(5_000))
    text = f'<html><body><div v={space}"{names}>inside</div><p>after</p></body></html>'
    tree = lxml.html.document_fromstring(_bound_attributes(text))
    div = tree.find(".//div")
    assert div is not None and len(div.attrib) == 128


def test_no_element_keeps_more_than_128_attributes_whatever_the_tag_soup() -> None:
    # Tags of hundreds of attributes with quotes, spaces, "<", ">", "/", comments and
    # no-break spaces strewn among them: however the parser tokenizes them, the bound holds.
    import random

    import lxml.html

    rng = random.Random(16)
    strewn = ["=", '"', "'", " ", "\t", "\n", "/", ">", "<", "\u00a0", "`", "&", '="', "<p"]
    strewn += ["<!--", "-->", "\r", "='", "= ", "<a ", "</p>", "<![CDATA[", "]]>", "<?", "?>"]
    values = ['="v"', "='v'", "=v", '=">"', "='<'"]
    past_the_bound = 0
    for _ in range(300):
        parts = []
        for j in range(rng.randint(150, 600)):
            parts.append(f" n{j}")
            if rng.random() < 0.02:
                parts.append(rng.choice(strewn))
            if rng.random() < 0.3:
                parts.append(rng.choice(values))
        text = "<html><body><p " + "".join(parts) + ">tail</p><div>more</div></body></html>"
        unbounded = lxml.html.document_fromstring(text)
        past_the_bound += max(len(e.attrib) for e in unbounded.iter("*")) > 128
        tree = lxml.html.document_fromstring(_bound_attributes(text))
        assert max(len(e.attrib) for e in tree.iter("*")) <= 128
    assert past_the_bound > 100  # the soup does reach past the bound when left alone


def test_tags_of_ordinary_attribute_counts_are_left_as_they_are() -> None:
    text = (
        attributes_html(128, size=20_000).decode()
        + '<img src="data:image/png;base64,'
        + ("A" * 50_000)
        + '" alt="x">'
    )
    assert _bound_attributes(text) == text


def test_an_attribute_quote_left_open_reads_to_the_end_without_a_slow_scan() -> None:
    body = b'<html><body><p>before</p><div a="' + b"x y " * 240_000
    result, cpu = cpu_convert(body)
    assert "before" in result.text
    assert cpu < CPU_BOUND_S


@pytest.mark.parametrize(
    "body",
    [attributes_html(200), attributes_html(60, value='"a longer value"'), class_names_html()],
    ids=["200-a-tag", "60-a-tag", "class-names"],
)
def test_attribute_heavy_pages_go_to_html_to_markdown_and_keep_their_words(body: bytes) -> None:
    assert body.count(b"<p") <= 2_000  # few elements: the attributes alone route the page
    result, cpu = cpu_convert(body)
    assert html_to_markdown(body.decode(), URL).extractor == "full"
    assert result.text.count("the quick") == body.count(b"the quick")
    assert cpu < CPU_BOUND_S


@pytest.mark.parametrize("make", [huge_line_html, slow_html], ids=["huge-line", "slow"])
def test_pages_up_to_the_byte_cap_convert_within_the_bound(make: Any) -> None:
    body = make(990_000)
    result, cpu = cpu_convert(body)
    assert len(result.text) > 100_000  # read, not dropped
    assert cpu < CPU_BOUND_S


# ---- pages made to grow ----------------------------------------------------------------------
# Each of these read to many times its size (up to 220 MB) before its bound; the assertions
# on the reading's length fail on that code, but for rowspan="0" (trafilatura reads it as 1).


def read(body: bytes, url: str = URL, include_links: bool = False) -> str:
    return str(
        convert(
            body, "text/html", url, truncated=False, include_links=include_links, limits=LIMITS
        ).text
    )


@pytest.mark.parametrize("include_links", [False, True])
def test_links_to_a_long_page_url_stop_lengthening_the_reading(include_links: bool) -> None:
    body = fragment_links_html(880_000)  # 48,000 links: under the bound of the plain reading
    long_url = "https://example.com/" + "a" * 2_000
    text = read(body, long_url, include_links)
    assert len(text) < 2 * len(body)  # 98 MB before
    assert text.startswith(f"[x]({long_url}")  # the first links keep their address
    assert text.count("x") >= 48_000  # every link keeps its text


def test_a_long_base_href_is_not_the_base_of_the_links() -> None:
    text = read(base_href_html(links=2_000, base_chars=50_000))
    assert text.startswith("[y](https://example.com/x)")  # resolved against the page's URL
    assert len(text) < 100_000  # 100 MB before


def test_a_link_longer_than_a_fetchable_url_keeps_its_text_and_loses_its_address() -> None:
    long = "https://example.com/" + "b" * 3_000
    text = read(
        f'<html><body><p>see <a href="{long}">the long one</a> here</p></body></html>'.encode()
    )
    assert "the long one" in text and "bbbb" not in text


@pytest.mark.parametrize(
    "body",
    [deep_list_html(250), deep_list_html(1_000), deep_quote_html(100), deep_quote_html(250)],
    ids=["list-250", "list-1000", "quote-100", "quote-250"],
)
def test_deeply_nested_lists_and_quotes_keep_their_items_without_growing(body: bytes) -> None:
    text = read(body)
    assert len(text) < 4 * len(body)  # 50 to 124 MB before
    assert text.count("x") >= 90_000  # every item or paragraph kept (before, a list 1,000 deep
    assert "> " * 7 not in text and " " * 20 + "x" not in text  # lost its items to the bullets)


def test_lists_and_quotes_nested_a_few_levels_keep_their_form() -> None:
    body = b"<html><body><h1>T</h1>" + b"<ul><li>level" * 4 + b"</li></ul>" * 4
    body += b"<blockquote><blockquote><p>twice quoted</p></blockquote></blockquote></body></html>"
    text = read(body)
    assert "      - level" in text  # the fourth level, indented three times
    assert "> > twice quoted" in text


@pytest.mark.parametrize(
    "span", [b'rowspan="65534"', b'rowspan="0"', b'colspan="1000"'], ids=["rows", "zero", "cols"]
)
def test_table_cells_spanning_thousands_of_rows_or_columns_do_not_multiply(span: bytes) -> None:
    body = span_html(1_600, span)
    text = read(body)
    assert len(text) < 4 * len(body)  # 8 to 9 times before, and 1.2 s
    assert "r1599" in text and "words before the table" in text


def test_layout_tables_are_read_as_their_blocks_in_time() -> None:
    # A column of 10,000 layout cells and 80 nested ones (240 levels deep: a page nested
    # deeper is read without a tree): each table is judged on its own rows, each cell's
    # blocks counted in one walk, innermost first.
    body = layout_tables_html()
    result, cpu = cpu_convert(body)
    assert html_to_markdown(body.decode(), URL).extractor == "full"
    assert result.text.count("y z") == 10_000 and "| " not in result.text
    assert result.text.count("more words") == 80
    assert cpu < CPU_BOUND_S


def test_a_table_keeps_its_ordinary_spans() -> None:
    body = b"<html><body><table><tr><th colspan='2'>Both</th></tr><tr><td>a</td><td>b</td></tr>"
    body += b"</table></body></html>"
    assert html_to_markdown(body.decode(), URL).markdown.startswith("| Both | |")


def test_a_reading_is_cut_at_its_ceiling_with_a_note() -> None:
    # Code blocks keep their lines' indents: lines of two characters inside lists nested six
    # levels deep (the most kept) still grow seven times over, past the ceiling.
    body = (
        b"<html><body>" + b"<ul><li>" * 200 + b"<pre>" + b"x\n" * 480_000 + b"</pre></body></html>"
    )
    text = read(body)
    assert len(text) < MAX_READING_CHARS + 200
    assert text.endswith(
        f"[reading cut at {MAX_READING_CHARS:,} characters: the page is made to grow]"
    )


def test_tidying_without_code_blocks_is_the_line_by_line_tidying() -> None:
    text = "  \n\nfirst  \t\n\n\n\nsecond\xa0\n \n\u3000\nthird\r\nfourth\x01  \n\n"
    assert tidy_markdown(text) == "first\n\nsecond\n\nthird\nfourth"
    # Spaces that do not end a line stay, and cost no more than their length.
    assert tidy_markdown("a" + " " * 200_000 + "b") == "a" + " " * 200_000 + "b"


def test_ordinary_articles_still_go_to_the_main_content_extractor() -> None:
    article = (
        "<html><body><nav>"
        + "<a href='/x'>menu</a>" * 30
        + "</nav><article><h1>Title</h1>"
        + "".join(
            f"<p>Paragraph {i} of the article, with enough words to count.</p>" for i in range(40)
        )
        + "</article></body></html>"
    )
    assert html_to_markdown(article, URL).extractor == "main"


# How a PDF's text says where it ends early: true for a model with the PDF and one without.
PDF_REST = "the pages after it are in the PDF itself (attached at offset 0), not in this text"


def test_a_pdf_whose_pages_share_one_inflating_stream_stops_at_the_content_cap() -> None:
    result, cpu = cpu_convert(shared_stream_pdf(), "application/pdf")
    text = result.text
    assert "[PDF text stops at page 1, where the inflated page content passes 256,000 bytes" in text
    assert result.kind == "document" and "2000 pages" in result.text
    assert cpu < CPU_BOUND_S * 2


def test_a_pdf_with_thousands_of_pages_is_read_up_to_the_page_cap() -> None:
    result, cpu = cpu_convert(many_pages_pdf(5_000), "application/pdf")
    text = result.text
    assert "Page 499 words" in text and "Page 500 words" not in text
    assert text.endswith(f"[PDF text stops at the first 500 pages; {PDF_REST}]")
    assert cpu < CPU_BOUND_S * 3


def test_a_pdf_of_many_pages_is_read_without_reading_every_page_object() -> None:
    from pypdf import PdfReader

    from webward._parts import _first_pages

    body = many_pages_pdf(30_000)  # 9 MB: 3 s before, 2.5 s of it reading all 30,000 pages
    reader = PdfReader(io.BytesIO(body), strict=False)
    pages, more, count = _first_pages(reader, 500)
    assert len(pages) == 500 and more and count == 30_000
    assert len(reader.resolved_objects) < 1_000  # the 500 pages read, and little else
    result, _ = cpu_convert(body, "application/pdf")
    assert "30000 pages" in result.text
    text = result.text
    assert "Page 499 words" in text and text.endswith(
        f"[PDF text stops at the first 500 pages; {PDF_REST}]"
    )


@pytest.mark.parametrize("cycle", [False, True], ids=["tree", "cycle"])
def test_pdf_pages_keep_their_order_and_what_they_inherit_from_the_page_tree(cycle: bool) -> None:
    result, _ = cpu_convert(page_tree_pdf(3, 2, cycle=cycle), "application/pdf")
    text = result.text
    words = [f"Leaf {i} words" for i in range(6)]
    assert [text.index(w) for w in words] == sorted(text.index(w) for w in words)  # in order
    assert text.count("Leaf 0 words") == 1  # a cycle back to the root reads nothing twice
    assert "6 pages" in result.text and "[PDF text stops" not in text


def test_a_pdf_with_no_page_to_show_is_refused_by_name() -> None:
    """A page tree that only loops back on itself holds no page: handed on, the model
    provider would reject the whole request, so it is refused as unreadable, saying why."""
    looped = _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>",
        ]
    )
    with pytest.raises(Refused) as caught:
        cpu_convert(looped, "application/pdf")
    assert caught.value.reason == "unreadable_pdf"
    assert caught.value.message == "refused: the PDF could not be read (it has no page to show)"


def test_a_small_pdf_whose_one_page_inflates_past_the_content_cap_is_not_parsed() -> None:
    """6 kB on the wire, 1.9 MB of text operators once inflated: 5 to 9 s of pypdf under the
    old 2,000,000-byte cap. Under a cap of a window's worth the page is never parsed; a page of
    250 kB (a window's text and more) still is."""
    result, cpu = cpu_convert(shared_stream_pdf(pages=1, inflated=1_900_000), "application/pdf")
    assert result.text.endswith(
        f", no extractable text, from {URL}\n\n"
        "[PDF text stops at page 1, where the inflated page content passes 256,000 bytes; "
        f"{PDF_REST}]"
    )
    assert cpu < CPU_BOUND_S
    result, _ = cpu_convert(shared_stream_pdf(pages=1, inflated=250_000), "application/pdf")
    header, _, text = result.text.partition("\n\n")
    assert header.startswith("application/pdf document") and text.startswith("spam spam")
    assert text.endswith("spam") and len(text) > 40_000  # the whole page: windows page it


# However the page writes its Do, and wherever the Forms find their resources.
FORM_BOMBS = {
    **{
        name: functools.partial(form_xobject_pdf, inflated=20_000, nest=4, draw=draw)
        for name, draw in {
            "plain": b"/X%d Do\n",
            "comment before Do": b"/X%d %%c\n Do\n",
            "a second operand": b"/X%d /Junk Do\n",
            "name escaped": b"/X#3%d Do\n",
            "no space": b"/X%d\nDo ",
        }.items()
    },
    "resources from a /Parent": functools.partial(
        form_xobject_pdf, inflated=20_000, nest=4, inherit=True
    ),
}


@pytest.mark.parametrize("make", FORM_BOMBS.values(), ids=FORM_BOMBS.keys())
def test_form_xobjects_drawn_over_and_over_stop_the_text_early(make: Any) -> None:
    """A page that only draws a Form, drawn ten times by the Form above it, four levels
    deep, to 20 kB of text: 200 MB for pypdf to parse (10 s here), though the file is 2 kB
    and no content stream passes the cap. The byte cap counts what a page holds, each Form
    once; how often pypdf parses it again, the extraction's own bound of work stops (a
    static count of draws was fooled by resources from a /Parent and by Forms it could not
    read, and took W ** depth steps on Forms naming themselves)."""
    extracted = pdf_text(make(), 1_000_000, max_pages=500, max_inflated=256_000)
    assert extracted.stopped == (
        "page 1, where reading the text passes its bound of work (the content is parsed again "
        "and again)"
    )
    assert extracted.text == ""


def test_a_form_xobject_drawn_once_under_the_cap_is_read() -> None:
    extracted = pdf_text(
        form_xobject_pdf(inflated=20_000, nest=1, fan=3), 1_000_000, max_inflated=256_000
    )
    assert extracted.stopped == "" and extracted.text.count("spam spam") > 300


def test_forms_that_name_many_forms_and_themselves_are_counted_once_each() -> None:
    """Forms at each of 14 levels naming the 3 Forms of the next level and themselves: a
    count that walked them from every Form took 3 ** 14 steps (17 s) and charged a few
    hundred bytes. Each Form is counted once, and the page, one chain of draws, is read."""
    extracted = pdf_text(wide_form_tree_pdf(3, 14), 1_000_000, max_inflated=256_000)
    assert extracted.stopped == "" and extracted.text == "leaf"


def test_a_form_larger_than_the_cap_stops_the_text_before_it_is_parsed() -> None:
    """A Form drawn once whose content alone passes the cap: the page is not parsed."""
    extracted = pdf_text(
        form_xobject_pdf(inflated=300_000, nest=0), 1_000_000, max_inflated=256_000
    )
    assert extracted.stopped == "page 1, where the inflated page content passes 256,000 bytes"


def _xref_shifted(pdf: bytes, by: int) -> bytes:
    """``pdf`` with every offset of its cross-reference table off by ``by`` bytes."""
    head, _, table = pdf.partition(b"xref\n")
    fixed = re.sub(
        rb"(?m)^(\d{10}) 00000 n ", lambda m: b"%010d 00000 n " % (int(m[1]) + by), table
    )
    return head + b"xref\n" + fixed


DAMAGED_PDFS = {
    "offsets +5": lambda pdf: _xref_shifted(pdf, 5),
    "offsets -3": lambda pdf: _xref_shifted(pdf, -3),
    "table numbered from 1": lambda pdf: pdf.replace(b"xref\n0 ", b"xref\n1 ", 1).replace(
        b"0000000000 65535 f \n", b"", 1
    ),
    "entries one index early": lambda pdf: pdf.replace(b"0000000000 65535 f \n", b"", 1).replace(
        b"trailer", b"0000000000 00000 n \ntrailer", 1
    ),
    "bytes before the header": lambda pdf: b"garbage\n" + pdf,
    "startxref wrong": lambda pdf: re.sub(rb"startxref\n\d+", b"startxref\n12", pdf),
    "startxref past the end": lambda pdf: re.sub(rb"startxref\n\d+", b"startxref\n99999999", pdf),
    "CRLF": lambda pdf: pdf.replace(b"\n", b"\r\n"),
}


@pytest.mark.parametrize("damage", DAMAGED_PDFS.values(), ids=DAMAGED_PDFS.keys())
def test_a_damaged_pdf_reads_as_the_intact_one(damage: Any) -> None:
    # A well-formed file is opened strictly, which skips pypdf's repair pass; every damaged
    # one must still be repaired as the lenient opening repairs it.
    intact = many_pages_pdf(50)
    expected = pdf_text(intact, 40_000)
    assert expected.pages == 50 and "Page 49 words" in expected.text
    assert pdf_text(damage(intact), 40_000) == expected


def test_pdf_text_is_held_to_the_text_cap() -> None:
    limits = LimitsSettings(max_read_bytes=1_000)
    result, _ = cpu_convert(many_pages_pdf(300), "application/pdf", limits=limits)
    assert result.text.endswith(f"[PDF text cut at 1,000 characters; {PDF_REST}]")
    assert len(result.text) < 1_300 and result.parts[0].text is None


def test_markdown_of_brackets_or_one_long_heading_converts_in_bounded_time() -> None:
    result, cpu = cpu_convert(markdown_brackets(), "text/markdown")
    assert len(result.text) == 990_000 and cpu < CPU_BOUND_S
    result, cpu = cpu_convert(markdown_heading_line(), "text/markdown")
    assert result.title.startswith("# # #") and cpu < CPU_BOUND_S


def test_markdown_links_made_absolute_against_a_long_url_stay_within_the_url_budget() -> None:
    """140,000 "[a](#)" on a page whose URL is 2 kB long made a reading of 287 MB: past the
    budget of URL characters, links stay as the page wrote them."""
    body = b"[a](#) " * 141_000
    long_url = "https://example.com/" + "a" * 2_000
    result = convert(
        body, "text/markdown", long_url, truncated=False, include_links=True, limits=LIMITS
    )
    assert len(result.text) < len(body) + 1_100_000
    assert result.text.startswith(f"[a]({long_url}) ") and result.text.endswith("[a](#) ")


def test_a_links_text_holds_brackets_in_pairs_as_commonmark_reads_it() -> None:
    md = b"See [a [1] note](/n) and [b [c](/c) and [ok](/ok)."
    text = convert(md, "text/markdown", URL, truncated=False, include_links=False, limits=LIMITS)
    assert text.text == (
        "See [a [1] note](https://example.com/n) and [b [c](https://example.com/c) and "
        "[ok](https://example.com/ok)."
    )


@pytest.mark.parametrize(
    "unit",
    [b"<a href='a/./%d'>a</a> ", b"<a href='a %d'>a</a> ", b"<a href='//e.com/%d'>a</a> "],
    ids=["dot segment", "space", "scheme-relative"],
)
def test_a_page_of_links_urljoin_must_resolve_converts_in_bounded_time(
    unit: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past _SLOW_LINKS such links keep their text and lose their address."""
    body = odd_links_html(unit)
    _, cpu = cpu_convert(body)
    joined = counted(monkeypatch, "urljoin")
    result = convert(body, "text/html", URL, truncated=False, include_links=True, limits=LIMITS)
    assert cpu < CPU_BOUND_S
    assert len(joined) <= _convert._SLOW_LINKS + 10  # and a few prefixes of the base
    assert len(result.links) == MAX_LINKS and "](https://" in result.text


def counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[None]:
    """A list that grows by one at each call of ``_convert``'s ``name`` from now on."""
    calls: list[None] = []
    real = getattr(_convert, name)

    def counting(*args: Any, **kw: Any) -> Any:
        calls.append(None)
        return real(*args, **kw)

    monkeypatch.setattr(_convert, name, counting)
    return calls


def test_relative_links_are_resolved_as_urljoin_resolves_them() -> None:
    """Plain relative paths, queries and fragments are appended to a prefix of the base
    urljoin gives once per base; every other link is urljoin's."""
    rng = random.Random(7)
    pieces = ["a", "b.html", "..", ".", "", "x y", "é", "%2e", "c;d", "q:r", "~u", "./", "../"]
    bases = [
        "https://e.com", "https://e.com/a/b?q=1#f", "HTTPS://E.com/a//b/../c/",
        "https://e.com/a;p?x", "http://[::1]:8080/x/y", "https://e.com?q", "ftp://e.com/a",
    ]  # fmt: skip

    def by_urljoin(href: str, base: str) -> str | None:
        href = href.replace("\t", "").strip()
        if not href:
            return None
        url = urljoin(base, href)
        parts = urlsplit(url)
        return url if parts.scheme.lower() in ("http", "https") and parts.hostname else None

    for base in bases:
        for _ in range(3_000):
            href = "/".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
            href = rng.choice(["", "?", "#", "?#"]) + href + rng.choice(["", "?a=1", "#f", "#"])
            if href.startswith("/") and not href.startswith("//"):
                continue  # "/path": the origin prepended, "//" kept (as browsers keep it)
            assert _resolve(href, base) == by_urljoin(href, base), (href, base)


def test_veils_left_open_convert_in_bounded_time() -> None:
    _, cpu = cpu_convert(veils_left_open_html())
    assert cpu < CPU_BOUND_S
    shown = veils_left_open_html(50_000).replace(b"visible>", b"visible>shown ")
    assert read(shown).count("shown") == shown.count(b"shown")


@pytest.mark.parametrize("words", [b"w ", b""], ids=["with words", "images only"])
def test_a_link_of_many_images_keeps_each_alt_in_bounded_time(words: bytes) -> None:
    """Each image alone in a link says its alt text, not only the first (the first alt
    written made the link hold words)."""
    _, cpu = cpu_convert(image_links_html(words=words))
    assert cpu < CPU_BOUND_S
    small = image_links_html(20_000, words)
    assert read(small).count("ab") == small.count(b"alt=ab")


def test_a_page_of_image_links_too_large_for_its_tree_reads_their_alt_texts() -> None:
    """35,000 links of one image each, past the elements converted with the tree: the words
    read without it are the images' alt texts, not an empty reading."""
    body = b"<html><body><p>" + b"<a href=/x><img alt=ab></a>" * 35_000 + b"</p></body></html>"
    result, cpu = cpu_convert(body)
    assert result.text.count("ab") == 35_000 and cpu < CPU_BOUND_S


def test_a_definition_of_many_empty_anchors_converts_in_bounded_time() -> None:
    body = definition_anchors_html()
    result, cpu = cpu_convert(body)
    assert cpu < CPU_BOUND_S
    assert result.text.count("word") == body.count(b"word")


def test_the_link_passes_read_a_plain_link_without_a_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The passes over a page's links (permalinks, backlinks, empty inline elements) read the
    text of a link that holds nothing else without an XPath evaluation, look for a paragraph
    around a link only when it shows no words, and for the anchor of a link's block only when
    it goes to an anchor: 200 nested terms over 30,000 links spent 0.2 s of their 0.5 s in
    them. What they drop is unchanged."""
    import lxml.html

    texts_read: list[None] = []
    real_text = lxml.html.HtmlMixin.text_content

    def text_content(element: Any) -> Any:
        texts_read.append(None)
        return real_text(element)

    monkeypatch.setattr(lxml.html.HtmlMixin, "text_content", text_content)
    paragraphs_looked_for = counted(monkeypatch, "_in_paragraph")
    anchors_looked_for = counted(monkeypatch, "_links_its_block")
    tree = lxml.html.document_fromstring(
        "<div>" + "<dt>" * 20 + '<a href="#x">x</a>' * 2_000 + "</div>"
        "<p>" + '<a href="/y">word</a> ' * 2_000 + "</p>"
        '<h2 id="s">Section<a href="#s">\u00b6</a></h2>'
        '<ol><li id="n">A note <a href="#r">^</a> <a href="#r"><sup>b</sup></a></li></ol>'
        '<p id="q">A paragraph <a href="#q">\u00b6</a><span></span> ends.</p>'
    )
    _convert._drop_permalinks(tree)
    _convert._drop_backlinks(tree)
    _convert._drop_empty_inline(tree)
    assert texts_read == [None]  # the one link holding an element: its superscript
    assert paragraphs_looked_for == []
    # The paragraph's (the note's two links go to an anchor the page lacks: no block's).
    assert len(anchors_looked_for) == 1
    assert len(tree.xpath("//dt//a")) == 2_000 and len(tree.xpath("//p/a")) == 2_000
    text = tree.text_content()
    assert "\u00b6" not in text and "^" not in text and "A note  b" in text
    assert tree.xpath("//span") == [] and "A paragraph  ends." in text


def test_nested_links_around_blank_text_convert_in_bounded_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A link's blank text is read again from later anchors to its target at most
    MAX_LINKS times a page (it was read from each of the 1,000)."""
    body = nested_blank_links_html()
    read_texts = counted(monkeypatch, "_link_text")
    started = time.process_time()
    result = convert(body, "text/html", URL, truncated=False, include_links=True, limits=LIMITS)
    assert time.process_time() - started < CPU_BOUND_S
    assert len(read_texts) <= MAX_LINKS + 1
    assert "real words of the article here" in result.text


@pytest.mark.parametrize(
    "unit",
    [b"<p hidden>", b"<p hidden id=%d>", b"<p style=display:none;x:%d>"],
    ids=["one tag", "distinct tags", "distinct styles"],
)
def test_a_page_of_hidden_elements_alone_converts_in_bounded_time(
    unit: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no words to read, the scant reading's passes over the page's words share what
    each tag hides, and the words of a page read without its tree are not read again: each
    distinct tag is read at most twice (three times before; a flood of one tag, once a pass)."""
    body = b"".join(unit % i if b"%" in unit else unit for i in range(100_000))[:990_000]
    page = b"<html><body>" + body + b"<p>the end</p></body></html>"
    _, cpu = cpu_convert(page)
    tags_read = counted(monkeypatch, "_hides")
    result, _ = cpu_convert(page)
    assert cpu < CPU_BOUND_S
    assert len(tags_read) <= (2 * body.count(b"<") if b"%" in unit else 10)
    assert result.text.strip().endswith("the end")


def test_which_bodies_stay_in_the_calling_process() -> None:
    assert is_cheap(b"<p>x</p>" * 100, "text/html")
    assert not is_cheap(b"<p>x</p>" * (CHEAP_HTML_BYTES // 8 + 1), "text/html")
    assert not is_cheap(many_pages_pdf(2), "text/html")  # sniffed: a PDF, whatever it says
    assert is_cheap(b"plain words " * 1_000, "text/plain")
    # Linear, but 1 MB of it still took a second: a larger text goes nearby or to a worker.
    assert not is_cheap(b"plain words " * 100_000, "text/plain")


# ---- the worker pool -------------------------------------------------------------------------


def slow_pdf_limits(**kw: Any) -> LimitsSettings:
    """Limits under which the shared-stream PDF keeps pypdf busy for many seconds."""
    return LimitsSettings(max_pdf_inflated_bytes=100_000_000, **kw)


def slow_job(limits: LimitsSettings) -> Job:
    body = shared_stream_pdf(pages=2, inflated=8_000_000)
    return Job(body, "application/pdf", URL, False, False, limits)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.anyio
async def test_a_conversion_past_the_deadline_is_killed_with_its_worker() -> None:
    pool = ConvertPool(workers=1, queue=4, memory_mb=512)
    try:
        started = time.monotonic()
        with pytest.raises(UpstreamError) as caught:
            await pool.convert(slow_job(slow_pdf_limits()), started + 1.5)
        assert time.monotonic() - started < 1.5 + 1.0
        assert caught.value.code == "timeout" and caught.value.reason == "convert_timeout"
        assert "did not finish within" in caught.value.message
        assert not pool._idle  # the busy worker was not handed back ...
        # ... and the next conversion gets a fresh one.
        job = Job(slow_html(200_000), "text/html", URL, False, False, LIMITS)
        result = await pool.convert(job, time.monotonic() + 30)
        assert "quick brown fox" in result.text
    finally:
        await pool.aclose()


@pytest.mark.anyio
async def test_a_conversion_over_the_memory_limit_ends_its_worker_not_the_pool() -> None:
    # A fresh worker maps about 95 MB; converting the 960 kB table page peaks near 160 MB.
    pool = ConvertPool(workers=1, queue=4, memory_mb=128)
    try:
        job = Job(table_html(960_000), "text/html", URL, False, True, LIMITS)
        with pytest.raises(Refused) as caught:
            await pool.convert(job, time.monotonic() + 30)
        # Out of memory in Python code is a MemoryError the worker reports; in a native
        # converter it may end the worker outright. Either way, one sentence naming the limit.
        assert caught.value.reason in ("convert_memory", "convert_crashed")
        assert "128 MiB" in caught.value.message
        small = Job(slow_html(20_000), "text/html", URL, False, False, LIMITS)
        assert "committee" in (await pool.convert(small, time.monotonic() + 30)).text
    finally:
        await pool.aclose()


@pytest.mark.anyio
async def test_the_hostile_corpus_keeps_each_worker_under_its_memory_limit() -> None:
    # One worker through all the pages (none retires for its growth), looked at after each.
    pool = ConvertPool(workers=1, queue=4, memory_mb=512, retire_growth_mb=4096)
    pages = [
        (deep_html(100_000), "text/html"),
        (table_html(960_000), "text/html"),
        (huge_line_html(990_000), "text/html"),
        (slow_html(990_000), "text/html"),
        (shared_stream_pdf(), "application/pdf"),
        (many_pages_pdf(5_000), "application/pdf"),
    ]
    try:
        for body, content_type in pages:
            started = time.monotonic()
            job = Job(body, content_type, URL, False, True, LIMITS)
            await pool.convert(job, started + LIMITS.fetch_timeout_s)
            assert time.monotonic() - started < LIMITS.fetch_timeout_s + 1.0
            with open(f"/proc/{pool._idle[0].pid}/status", encoding="ascii") as status:
                fields = dict(line.split(":", 1) for line in status)
            assert int(fields["VmPeak"].split()[0]) < 512 * 1024  # kB
    finally:
        await pool.aclose()


@pytest.mark.anyio
async def test_a_worker_killed_while_idle_is_replaced_not_reported() -> None:
    pool = ConvertPool(workers=1, queue=4, memory_mb=512)
    job = Job(slow_html(20_000), "text/html", URL, False, False, LIMITS)
    try:
        await pool.convert(job, time.monotonic() + 30)
        [worker] = pool._idle
        os.kill(worker.pid, 9)
        while alive(worker.pid):
            await anyio.sleep(0.01)
        assert "committee" in (await pool.convert(job, time.monotonic() + 30)).text
        assert pool._idle[0].pid != worker.pid
    finally:
        await pool.aclose()


@pytest.mark.anyio
async def test_a_freed_worker_takes_the_next_job_before_its_caller_goes_on() -> None:
    """The worker is handed the waiting conversion as soon as it answers, not after the call
    it answered has gone on to its own work (window, envelope, audit)."""
    pool = ConvertPool(workers=1, queue=4, memory_mb=512)
    events: list[tuple[str, str]] = []
    exchange, result = pool._exchange, pool._result

    async def exchanging(job: Job, deadline: float) -> Any:
        events.append(("sent", job.final_url))
        return await exchange(job, deadline)

    def answered(answer: Any, job: Job) -> Any:
        events.append(("answered", job.final_url))
        return result(answer, job)

    pool._exchange = exchanging  # type: ignore[method-assign]
    pool._result = answered  # type: ignore[method-assign]
    first = Job(slow_html(20_000), "text/html", URL + "first", False, False, LIMITS)
    second = Job(slow_html(20_000), "text/html", URL + "second", False, False, LIMITS)
    try:
        await pool.start()
        async with anyio.create_task_group() as tg:
            tg.start_soon(pool.convert, first, time.monotonic() + 30)
            while not events:  # the first holds the only worker before the second asks
                await anyio.sleep(0)
            tg.start_soon(pool.convert, second, time.monotonic() + 30)
        assert events == [
            ("sent", URL + "first"),
            ("sent", URL + "second"),
            ("answered", URL + "first"),
            ("answered", URL + "second"),
        ]
    finally:
        await pool.aclose()


@pytest.mark.anyio
async def test_a_cancelled_read_kills_the_conversion() -> None:
    pool = ConvertPool(workers=1, queue=4, memory_mb=512)
    try:
        with anyio.move_on_after(1.0):
            await pool.convert(slow_job(slow_pdf_limits()), time.monotonic() + 60)
        assert not pool._idle
        assert pool.waiting == 0
    finally:
        await pool.aclose()


@pytest.mark.anyio
async def test_past_the_queue_bound_a_conversion_is_refused_at_once() -> None:
    pool = ConvertPool(workers=1, queue=0, memory_mb=512)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                _ignore_timeout, pool.convert(slow_job(slow_pdf_limits()), time.monotonic() + 2)
            )
            while pool._running == 0:
                await anyio.sleep(0.01)
            started = time.monotonic()
            with pytest.raises(Refused) as caught:
                await pool.convert(
                    Job(slow_html(), "text/html", URL, False, False, LIMITS), time.monotonic() + 12
                )
            assert time.monotonic() - started < 1.0
        assert caught.value.code == "overloaded" and caught.value.retry_after is not None
        assert caught.value.message.startswith("refused: webward is converting as many pages")
    finally:
        await pool.aclose()


async def _ignore_timeout(call: Any) -> None:
    with contextlib.suppress(UpstreamError):
        await call


@pytest.mark.anyio
async def test_the_wait_for_a_worker_counts_against_the_deadline() -> None:
    pool = ConvertPool(workers=1, queue=4, memory_mb=512)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                _ignore_timeout, pool.convert(slow_job(slow_pdf_limits()), time.monotonic() + 3)
            )
            while pool._running == 0:
                await anyio.sleep(0.01)
            started = time.monotonic()
            with pytest.raises(UpstreamError) as caught:
                await pool.convert(
                    Job(slow_html(), "text/html", URL, False, False, LIMITS), started + 1.0
                )
            assert time.monotonic() - started < 1.0 + 1.0
        assert caught.value.reason == "convert_timeout"
    finally:
        await pool.aclose()


# ---- through Web and the gateway --------------------------------------------------------------


def settings(**limits: Any) -> Settings:
    return Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "as-owner", "robots": False, "allow": ["127.0.0.1"]},
            "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000, **limits},
        }
    )


@pytest.mark.anyio
async def test_a_read_whose_conversion_is_cut_ends_in_one_sentence_and_an_audit_record() -> None:
    body = shared_stream_pdf(pages=2, inflated=8_000_000)
    audit = MemoryAuditSink()
    with serve(routes={"/slow.pdf": respond(200, body, "application/pdf")}) as server:
        s = settings(max_pdf_inflated_bytes=100_000_000, fetch_timeout_s=2.0)
        async with Web(s, StaticResolver({}), audit=audit) as web:
            started = time.monotonic()
            with pytest.raises(UpstreamError) as caught:
                await web.fetch(server.url("/slow.pdf"))
            assert time.monotonic() - started < 2.0 + 1.0
    assert caught.value.code == "timeout"
    assert caught.value.message == (
        f"converting {server.url('/slow.pdf')} did not finish within the read's 2 s deadline "
        "and was stopped; try again when webward is less busy; an operator can raise [limits] "
        "fetch_timeout_s"
    )
    # A model is told to try again, not which setting to raise.
    assert caught.value.for_model == (
        f"converting {server.url('/slow.pdf')} did not finish within the read's 2 s deadline "
        "and was stopped; try again when webward is less busy"
    )
    [record] = audit.records
    assert (record.decision, record.reason) == ("failed", "convert_timeout")


@pytest.mark.anyio
async def test_forty_hostile_reads_do_not_hold_up_another_agents_small_read() -> None:
    hostile_body = shared_stream_pdf(pages=2, inflated=8_000_000)
    small = b"<html><head><title>Small</title></head><body><p>a small page</p></body></html>"
    routes = {
        "/hostile.pdf": respond(200, hostile_body, "application/pdf"),
        "/small": respond(200, small),
    }
    with serve(routes=routes) as server:
        s = settings(max_pdf_inflated_bytes=100_000_000, fetch_timeout_s=4.0)
        async with Web(s, StaticResolver({}), audit=MemoryAuditSink()) as web:
            outcomes: list[str] = []

            async def hostile(i: int) -> None:
                try:
                    await web.fetch(server.url(f"/hostile.pdf?{i}"))
                except (Refused, UpstreamError) as exc:
                    outcomes.append(exc.reason)
                else:  # its text stopped by the extraction's bound of work, in time
                    outcomes.append("read")

            # A running server: the converters imported, the zygote started by earlier reads.
            await web.fetch(server.url("/small?warm"), agent="other")
            await web._converter.start()
            async with anyio.create_task_group() as tg:
                for i in range(40):
                    tg.start_soon(hostile, i)
                pool = web._converter
                while pool._running + pool.waiting + len(outcomes) < 40:  # all 40 under way
                    await anyio.sleep(0.01)
                started = time.monotonic()
                page = await web.fetch(server.url("/small"), agent="other")
                small_read_s = time.monotonic() - started
    assert page.title == "Small"
    assert small_read_s < 1.0
    assert len(outcomes) == 40 and set(outcomes) <= {"convert_timeout", "overloaded", "read"}


def test_the_gateway_sheds_load_with_503_and_retry_after(tmp_path: Path) -> None:
    slow = shared_stream_pdf(pages=2, inflated=8_000_000)
    routes = {
        "/slow.pdf": respond(200, slow, "application/pdf"),
        "/big": respond(200, slow_html(100_000)),
    }
    limits = {
        "convert_workers": 1,
        "convert_queue": 0,
        "max_pdf_inflated_bytes": 100_000_000,
        "fetch_timeout_s": 3.0,
    }
    settings = load(tmp_path, limits=limits)
    audit = MemoryAuditSink()
    webs: list[Web] = []

    def make_web() -> Web:
        webs.append(loopback_web(settings, audit))
        return webs[0]

    with serve(routes=routes) as server, running_gateway(settings, make_web) as base:
        slow_result: list[httpx.Response] = []

        def read_slow() -> None:
            body = {"url": server.url("/slow.pdf")}
            slow_result.append(
                httpx.post(base + FETCH_PATH, json=body, headers=auth("alice"), timeout=20)
            )

        thread = threading.Thread(target=read_slow)
        thread.start()
        deadline = time.monotonic() + 10
        while webs[0]._converter._running == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        response = httpx.post(
            base + FETCH_PATH, json={"url": server.url("/big")}, headers=auth("alice"), timeout=20
        )
        thread.join(20)
    message = assert_error(response, 503, "overloaded")
    assert message == "refused: webward is converting as many pages as it can; try again in 1 s"
    assert response.headers["Retry-After"] == "1"
    assert_error(slow_result[0], 504, "timeout")
    reasons = sorted(r.reason for r in audit.records)
    assert reasons == ["convert_timeout", "overloaded"]


@pytest.mark.anyio
async def test_mcp_answers_an_overloaded_read_with_a_tool_error_saying_the_same() -> None:
    slow = shared_stream_pdf(pages=2, inflated=8_000_000)
    routes = {
        "/slow.pdf": respond(200, slow, "application/pdf"),
        "/big": respond(200, slow_html(100_000)),
    }
    s = settings(
        convert_workers=1, convert_queue=0, max_pdf_inflated_bytes=100_000_000, fetch_timeout_s=3.0
    )
    audit = MemoryAuditSink()
    with serve(routes=routes) as server:
        async with (
            Web(s, StaticResolver({}), audit=audit) as web,
            anyio.create_task_group() as tg,
            Client(build_server(web)) as client,
        ):
            tg.start_soon(_ignore_timeout, web.fetch(server.url("/slow.pdf")))
            while web._converter._running == 0:
                await anyio.sleep(0.01)
            result = await client.call_tool("web_fetch", {"url": server.url("/big")})
    assert result.is_error
    message = "refused: webward is converting as many pages as it can; try again in 1 s"
    assert [block.text for block in result.content] == [message]  # type: ignore[union-attr]
    assert result.structured_content is None and result.meta is not None
    assert result.meta["webward/result"] == {
        "error": {"code": "overloaded", "message": message, "retryAfter": 1.0}
    }
    assert sorted(r.reason for r in audit.records) == ["convert_timeout", "overloaded"]


@pytest.mark.anyio
async def test_a_small_page_is_read_without_starting_any_process() -> None:
    with serve(routes={"/": respond(200, "<p>small page words</p>")}) as server:
        async with Web(settings(), StaticResolver({}), audit=MemoryAuditSink()) as web:
            page = await web.fetch(server.url("/"))
            assert "small page words" in page.content
            assert web._converter._zygote is None


def test_a_flood_past_the_queue_bound_gets_503s_each_audited(tmp_path: Path) -> None:
    """Twenty reads at once of distinct slow pages, one worker and a queue of two: the reads
    past the bound are answered 503 overloaded with Retry-After, before the read deadline
    (none waits for a worker it will not get), and every call, shed or not, has its record."""
    slow = shared_stream_pdf(pages=2, inflated=8_000_000)
    limits = {
        "convert_workers": 1,
        "convert_queue": 2,
        "max_pdf_inflated_bytes": 100_000_000,
        "fetch_timeout_s": 3.0,
    }
    settings = load(tmp_path, limits=limits)
    audit = MemoryAuditSink()
    with (
        serve(routes={"*": respond(200, slow, "application/pdf")}) as server,
        running_gateway(settings, lambda: loopback_web(settings, audit)) as base,
    ):

        async def flood() -> list[tuple[httpx.Response, float]]:
            async with httpx.AsyncClient(trust_env=False, timeout=30) as client:

                async def one(i: int) -> tuple[httpx.Response, float]:
                    started = time.monotonic()
                    body = {"url": server.url(f"/slow-{i}.pdf")}
                    r = await client.post(base + FETCH_PATH, json=body, headers=auth("alice"))
                    return r, time.monotonic() - started

                answers: list[tuple[httpx.Response, float]] = []
                async with anyio.create_task_group() as tg:
                    for i in range(20):
                        tg.start_soon(lambda i=i: _append(answers, one(i)))
                return answers

        answers = anyio.run(flood)
    statuses = sorted(r.status_code for r, _ in answers)
    shed = [(r, seconds) for r, seconds in answers if r.status_code == 503]
    assert len(answers) == 20 and set(statuses) <= {200, 503, 504}, statuses
    assert shed, statuses
    for r, seconds in shed:
        assert r.json()["error"]["code"] == "overloaded"
        assert int(r.headers["Retry-After"]) >= 1
        assert seconds < 3.0  # refused at once, not after waiting out the deadline
    reasons = [record.reason for record in audit.records]
    assert len(reasons) == 20
    assert reasons.count("overloaded") == len(shed)


async def _append(into: list[Any], call: Any) -> None:
    into.append(await call)


@pytest.mark.anyio
async def test_a_call_left_with_less_time_than_a_conversion_takes_does_not_start_one() -> None:
    """A call that waited for a worker and has less time left than conversions take (as the
    pool learned meanwhile) ends as a timeout at once instead of spending the worker on a
    conversion that would be killed at its deadline."""
    pool = ConvertPool(workers=1, queue=4, memory_mb=512)
    starts: list[None] = []
    start_sync = pool._start_sync

    def counting_start() -> Any:
        starts.append(None)
        return start_sync()

    pool._start_sync = counting_start  # type: ignore[method-assign]
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                _ignore_timeout, pool.convert(slow_job(slow_pdf_limits()), time.monotonic() + 2)
            )
            while pool._running == 0:
                await anyio.sleep(0.01)
            outcome: list[BaseException] = []

            async def second() -> None:
                job = Job(slow_html(), "text/html", URL, False, False, LIMITS)
                try:
                    await pool.convert(job, time.monotonic() + 3)
                except UpstreamError as exc:
                    outcome.append(exc)

            tg.start_soon(second)
            while pool.waiting == 0:  # admitted (nothing learned yet), waiting for the worker
                await anyio.sleep(0.01)
            pool._average = 60.0  # learned while it waits: far more time than it has left
        [error] = outcome
        assert isinstance(error, UpstreamError) and error.reason == "convert_timeout"
        assert len(starts) == 1  # the slow job's worker only: the second started none
    finally:
        await pool.aclose()


@pytest.mark.anyio
async def test_a_conversion_is_admitted_while_its_wait_fits_its_deadline_then_shed() -> None:
    """Deadline-aware admission, not a queue length: with the one worker busy and conversions
    known to take 1 s of it, a call is queued while the wait for those ahead of it and its own
    conversion fit the time it has left, and refused as overloaded past that (its Retry-After
    the expected wait); a call with more time left still queues behind the same line."""
    clock = FakeClock()
    pool = ConvertPool(workers=1, queue=256, memory_mb=512, clock=clock)
    job = Job(slow_html(100_000), "text/html", URL, False, False, LIMITS)
    refused: list[Refused] = []

    async def call(deadline: float) -> None:
        try:
            await pool.convert(job, deadline)
        except Refused as exc:
            refused.append(exc)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_ignore_timeout, pool.convert(slow_job(slow_pdf_limits()), clock() + 600))
            while pool._running == 0:
                await anyio.sleep(0.01)
            pool._cost = 1.0  # learned from the conversions so far
            for queued in range(1, 10):  # each waits `queued` s, then converts for 1 s: fits
                tg.start_soon(call, clock() + 10)
                while pool.waiting < queued and not refused:
                    await anyio.sleep(0.01)
            assert refused == []
            await call(clock() + 10)  # 10 s of wait and 1 s of its own: past its deadline
            assert len(refused) == 1
            tg.start_soon(call, clock() + 60)  # the same line, with time to wait in it
            while pool.waiting < 10 and len(refused) == 1:
                await anyio.sleep(0.01)
            assert len(refused) == 1 and pool.waiting == 10
            tg.cancel_scope.cancel()
    finally:
        await pool.aclose()
    [shed] = refused
    assert shed.code == "overloaded" and shed.retry_after == 10.0
    assert shed.message == (
        "refused: webward is converting as many pages as it can; try again in 10 s"
    )


@pytest.mark.anyio
async def test_a_burst_past_the_old_queue_bound_is_read_whole_when_it_fits() -> None:
    """Eighty distinct pages of 40 kB, read at once (more than the 64 conversions the queue
    used to hold): the workers finish them well within the read deadline, so every read gets
    its page and none is refused as overloaded."""

    def article(n: int) -> bytes:
        words = " ".join(f"word{n}x{i}" for i in range(40))
        return (
            f"<html><head><title>Page {n}</title></head><body><article><h1>Page {n}</h1>"
            + f"<p>{words}.</p>" * 90
            + "</article></body></html>"
        ).encode()

    routes = {f"/p/{n}": respond(200, article(n)) for n in range(80)}
    with serve(routes=routes) as server:
        s = settings(per_host_concurrency=1000)  # all eighty at once, as from many hosts
        async with Web(s, StaticResolver({}), audit=MemoryAuditSink()) as web:
            await web.start_workers()
            titles: list[str] = []

            async def read(n: int) -> None:
                titles.append((await web.fetch(server.url(f"/p/{n}"))).title)

            async with anyio.create_task_group() as tg:
                for n in range(80):
                    tg.start_soon(read, n)
    assert sorted(titles) == sorted(f"Page {n}" for n in range(80))


@pytest.mark.anyio
async def test_a_worker_retires_after_its_share_of_conversions_and_a_fresh_one_follows() -> None:
    """``retire_after`` conversions, then the worker exits (its heap with it) and the next
    conversion gets a fresh fork: five pages, two per worker, three workers, each page read."""
    pool = ConvertPool(workers=1, queue=4, memory_mb=512, retire_after=2)
    started = _count_starts(pool)
    try:
        for n in range(5):
            job = Job(slow_html(20_000 + n), "text/html", URL, False, False, LIMITS)
            assert "committee" in (await pool.convert(job, time.monotonic() + 30)).text
        assert len(started) == 3
        assert [w.pid for w in pool._idle] == [started[-1]]
    finally:
        await pool.aclose()
    _assert_exit(started[:2])


@pytest.mark.anyio
async def test_a_worker_gives_back_the_heap_a_big_page_left() -> None:
    """Past :data:`TRIM_GROWTH_MB` of growth a worker trims its heap: after a 1 MB table (45
    MB of heap when left untrimmed) it keeps no more than that bound and a few MB."""
    pool = ConvertPool(workers=1, queue=4, memory_mb=512, retire_growth_mb=4096)

    def resident_mb() -> float:
        with open(f"/proc/{pool._idle[0].pid}/status", encoding="ascii") as status:
            fields = dict(line.split(":", 1) for line in status)
        return int(fields["VmRSS"].split()[0]) / 1024

    try:
        small = Job(slow_html(20_000), "text/html", URL, False, False, LIMITS)
        await pool.convert(small, time.monotonic() + 30)
        before = resident_mb()
        big = Job(table_html(960_000), "text/html", URL, False, False, LIMITS)
        await pool.convert(big, time.monotonic() + 30)
        assert resident_mb() - before < TRIM_GROWTH_MB + 8
    finally:
        await pool.aclose()


@pytest.mark.anyio
async def test_a_worker_grown_past_its_bound_by_a_big_page_retires() -> None:
    """A worker whose memory, after a page of about 1 MB, is past its bound above what it had
    when forked exits after answering; the next page is converted by a fresh one."""
    pool = ConvertPool(workers=1, queue=4, memory_mb=512, retire_growth_mb=1)
    started = _count_starts(pool)
    big = b"<html><body><article>" + b"<p>words of a long page</p>" * 33_000 + b"</article>"
    try:
        for body in (big, slow_html(20_000)):
            job = Job(body, "text/html", URL, False, False, LIMITS)
            assert (await pool.convert(job, time.monotonic() + 30)).text
        assert len(started) == 2
    finally:
        await pool.aclose()
    _assert_exit(started[:1])


def _count_starts(pool: ConvertPool) -> list[int]:
    """The pids of the workers ``pool`` starts, in order."""
    pids: list[int] = []
    start_sync = pool._start_sync

    def counting_start() -> Any:
        worker = start_sync()
        pids.append(worker.pid)
        return worker

    pool._start_sync = counting_start  # type: ignore[method-assign]
    return pids


def _assert_exit(pids: list[int]) -> None:
    """Each of ``pids`` exits (and is reaped) on its own: waits for it, up to a generous bound."""
    for pid in pids:
        for _ in range(1000):
            if not alive(pid):
                break
            time.sleep(0.01)
        assert not alive(pid)


def test_the_pool_converts_large_pages_again_and_again_on_uvloop() -> None:
    """The servers run on uvloop, which leaves a descriptor it watched non-blocking: the pool
    restores blocking mode, so a large answer and the next large job on the same worker pass
    whole instead of failing part-way as a crashed converter."""
    body = "<html><body><article>" + "<p>words of a long page</p>" * 33_000 + "</article>"
    limits = LimitsSettings()

    async def convert_twice() -> list[int]:
        pool = ConvertPool(workers=1, queue=4, memory_mb=512)
        sizes, blocking = [], []
        try:
            for _ in range(3):
                job = Job(body.encode(), "text/html", URL, False, False, limits)
                sizes.append(len((await pool.convert(job, time.monotonic() + 30)).text))
                blocking += [os.get_blocking(w.conn.fileno()) for w in pool._idle]
        finally:
            await pool.aclose()
        assert blocking == [True, True, True]
        return sizes

    sizes = anyio.run(convert_twice, backend_options={"use_uvloop": True})
    assert len(sizes) == 3 and min(sizes) > 0


def test_the_passes_setting_words_apart_run_only_where_the_page_holds_their_marks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each walk of a page of 49,000 elements for glued labels, glued links, shortened dates,
    ARIA headings or lines sending the reader elsewhere costs 10 to 80 ms, and most pages
    hold none: each runs only where the page holds what it looks for (a colon before an end
    tag, a link's end before a tag, a title attribute, the word "heading", a promotion's
    words in the text of a page of more than 100,000 characters: on a shorter one the search
    costs more than the pass)."""
    names = (
        "_part_labels",
        "_part_glued_links",
        "_whole_dates",
        "_aria_headings",
        "_drop_promo_lines",
    )
    calls = {name: counted(monkeypatch, name) for name in names}
    plain = b"<html><body><main><h1>Plain</h1>" + b"<p><b id=f>t</b> words</p>" * 16_000
    assert len(b"t words" * 16_000) > _convert._PROMO_SEARCHED_CHARS
    read(plain + b"</main></body></html>")
    assert {name: len(made) for name, made in calls.items()} == dict.fromkeys(names, 0)
    marked = (
        b"<p><span>Label:</span>x <a href=/a>a</a><a href=/b>b</a> <span title='Nov 1, 2024'>"
        b"Nov 1</span></p><div role=heading>Head</div><p>See more: <a href=/c>c</a></p>"
    )
    read(plain + marked + b"</main></body></html>")
    assert {name: len(made) for name, made in calls.items()} == dict.fromkeys(names, 1)


@pytest.mark.parametrize(
    ("unit", "changed"),
    [
        (b"<span title='Nov 14, 2023'>Nov 14</span>", "Nov 14, 2023"),
        (b"<p class=title>Stack Class Reference</p>", "Stack Class Reference"),
    ],
)
def test_elements_by_their_attribute_are_found_in_linear_time(unit: bytes, changed: str) -> None:
    """The shortened dates and the title blocks were found from their attributes up
    (``//@title/parent::*``), which libxml2 answers sorting the parents in document order by
    comparing siblings, quadratic in them: 45,000 short dates of a 990 kB page took 1.3 s
    (0.5 s is a page's bound). They are found from the elements, each once."""
    page = b"<html><head><title>Stack Class Reference</title></head><body><div>"
    tree, _ = _parse((page + unit * 100_000 + b"</div></body></html>").decode())
    started = time.process_time()
    if b"class" in unit:
        _convert._title_block_as_heading(tree, "Stack Class Reference")
    else:
        _convert._whole_dates(tree)
    assert time.process_time() - started < CPU_BOUND_S
    if b"class" in unit:
        assert tree.find(".//h1").text_content() == changed
    else:
        assert [span.text for span in tree.iter("span")][-1] == changed
