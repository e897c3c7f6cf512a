"""Bounded conversion: the hostile-page corpus of tests/hostile.py, measured.

    python bench/convert.py [--skip-anchor] [--skip-load]

1. Each hostile page converted in this process (CPU seconds: webward's routing, html-to-markdown
   for heavy pages, the PDF caps; the slower of a read with and without the page's links)
   beside its anchor: the unrouted converter on the same bytes
   (``trafilatura.extract`` for HTML; pypdf over every page for PDF), run in a subprocess
   stopped after ``--anchor-limit`` seconds.
2. The same pages through the worker pool (``webward._workers.ConvertPool``): wall time and the
   worker's peak RSS, the worst case printed last.
3. Forty concurrent hostile reads (the shared-stream PDF, allowed to keep pypdf busy for
   minutes) through one ``Web`` over a loopback server, and another agent's small read made
   meanwhile: its latency beside the one-second bound.

Lines read ``name: ours X, anchor Y, ratio Z``. No network beyond 127.0.0.1.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import anyio
import hostile
from localserver import respond, serve

from webward import Refused, Settings, StaticResolver, UpstreamError, Web
from webward._convert import convert
from webward._settings import LimitsSettings
from webward._workers import ConvertPool, Job
from webward.testing import MemoryAuditSink

LIMITS = LimitsSettings()
URL = "https://example.com/page"
# Links to "#" grow with the page's own URL: that page is read at a URL as long as webward
# fetches (limits.max_url_chars).
LONG_URL = "https://example.com/" + "a" * 2_000
_URL_OF = {"links to a long URL 990 kB": LONG_URL}

# Rules that hide and show elements of the class "h" with one more class each.
_SELECTORS_OF_ONE = b"".join(b".h.x%d{display:none}" % i for i in range(2_000)) + b"".join(
    b".h.y%d:hover{display:block}" % i for i in range(5_000)
)

PAGES: list[tuple[str, Any, str]] = [
    ("deep 100,000", lambda: hostile.deep_html(100_000), "text/html"),
    ("table 960 kB", lambda: hostile.table_html(960_000), "text/html"),
    ("one huge line 990 kB", lambda: hostile.huge_line_html(990_000), "text/html"),
    ("slow layout 990 kB", lambda: hostile.slow_html(990_000), "text/html"),
    ("links to a long URL 990 kB", lambda: hostile.fragment_links_html(990_000), "text/html"),
    ("long base href 86 kB", lambda: hostile.base_href_html(2_000, 50_000), "text/html"),
    ("list 250 deep 990 kB", lambda: hostile.deep_list_html(250, 990_000), "text/html"),
    ("quote 100 deep 990 kB", lambda: hostile.deep_quote_html(100, 990_000), "text/html"),
    ("rowspans 62 kB", lambda: hostile.span_html(1_600), "text/html"),
    ("layout tables: 10,000 cells, 80 nested", hostile.layout_tables_html, "text/html"),
    ("tiny paragraphs 990 kB", lambda: hostile.tiny_elements_html(b"<p>x"), "text/html"),
    ("330,000 empty paragraphs 990 kB", lambda: hostile.tiny_elements_html(b"<p>"), "text/html"),
    (
        "330,000 empty paragraphs naming the kinds' words 990 kB",
        hostile.kinds_named_html,
        "text/html",
    ),
    (
        "38,000 dialogs among attributed elements 990 kB",
        lambda: hostile.tiny_elements_html(b"<i a></i><dialog></dialog>"),
        "text/html",
    ),
    ("book of 4,000 paragraphs 990 kB", lambda: hostile.paragraphs_html(990_000), "text/html"),
    ("book of 1,800 paragraphs 990 kB", lambda: hostile.paragraphs_html(990_000, 90), "text/html"),
    ("markdown characters 990 kB", lambda: hostile.markdown_chars_html(990_000), "text/html"),
    ("tiny cells 990 kB", lambda: hostile.tiny_elements_html(b"<tr><td>a"), "text/html"),
    ("one tag of 90,000 attributes 990 kB", lambda: hostile.attributes_html(90_000), "text/html"),
    ("200 attributes a tag 990 kB", lambda: hostile.attributes_html(200), "text/html"),
    ("class names 990 kB", lambda: hostile.class_names_html(), "text/html"),
    ("stray end tags 2,000 deep 990 kB", lambda: hostile.stray_end_tags_html(), "text/html"),
    ("a stylesheet of 990 kB", lambda: hostile.stylesheet_html(), "text/html"),
    (
        "tiny cells a stylesheet hides and shows 990 kB",
        lambda: hostile.styled_elements_html(b"<tr><td class=h>a"),
        "text/html",
    ),
    (
        "45,000 divs a stylesheet hides and shows 990 kB",
        lambda: hostile.styled_elements_html(b"<div class=h>ab cd</div>"),
        "text/html",
    ),
    (
        "2,000 selectors of one class 990 kB",
        lambda: hostile.styled_elements_html(b'<p class="h g">x y z', sheet=_SELECTORS_OF_ONE),
        "text/html",
    ),
    ("math openers left open 990 kB", lambda: hostile.delimiters_html("paren"), "text/html"),
    ("blanks beside a cell's lines 990 kB", hostile.blanks_beside_cell_lines_html, "text/html"),
    ("one run of backslashes 990 kB", lambda: hostile.delimiters_html("backslashes"), "text/html"),
    ("backticks in a code link 990 kB", lambda: hostile.delimiters_html("backticks"), "text/html"),
    ("36,000 links on one line 990 kB", lambda: hostile.marked_line_html("link"), "text/html"),
    (
        "36,000 links in one list item 990 kB",
        lambda: hostile.marked_line_html("link", b"li"),
        "text/html",
    ),
    ("49,000 code spans on one line 990 kB", lambda: hostile.marked_line_html("code"), "text/html"),
    ("a paragraph of # 990 kB", lambda: hostile.non_word_html(b"#"), "text/html"),
    ("ten nested paragraphs of 109 kB", hostile.nested_paragraphs_html, "text/html"),
    ("tags that never close 990 kB", hostile.unclosed_tags_html, "text/html"),
    ("SVG nested 90,000 deep 990 kB", hostile.nested_unseen_html, "text/html"),
    (
        "a hidden div over 90,000 nested SVGs 990 kB",
        lambda: hostile.nested_unseen_html(b"<div hidden>", b"</div>"),
        "text/html",
    ),
    ("text of 260,000 tokens after labels 990 kB", hostile.label_runs_html, "text/html"),
    ("one text of 107,000 entities 990 kB", hostile.entity_text_html, "text/html"),
    ("900 nested pre 200 kB", hostile.nested_pre_html, "text/html"),
    ("49,000 images between words 294 kB", hostile.dropped_between_words_html, "text/html"),
    (
        "45,000 navs between words 540 kB",
        lambda: hostile.dropped_between_words_html(b"<nav></nav>", 45_000),
        "text/html",
    ),
    (
        "45,000 scripts between words 810 kB",
        lambda: hostile.dropped_between_words_html(b"<script></script>", 45_000),
        "text/html",
    ),
    (
        "25,000 hidden spans between words 1 MB",
        lambda: hostile.dropped_between_words_html(b"<span hidden></span>", 25_000, b"y" * 30),
        "text/html",
    ),
    (
        "160,000 word breaks in one block 960 kB",
        lambda: hostile.dropped_between_words_html(b"<wbr>", 160_000, b"a"),
        "text/html",
    ),
    (
        "an attribute left open over 140,000 <embed 980 kB",
        lambda: b"<html><body><p title='" + b"<embed " * 140_000,
        "text/html",
    ),
    ("200 nested formulas around 990 kB", hostile.nested_math_html, "text/html"),
    ("200 nested <b><i> around 980 kB", hostile.nested_marks_html, "text/html"),
    ("a feed of 7,000 items 1 MB (as text/html)", hostile.feed_xml, "text/html"),
    ("markdown of 33,000 links and code 990 kB", hostile.markdown_links, "text/markdown"),
    ("markdown of one run of 990,000 backticks", hostile.backtick_run, "text/markdown"),
    ("markdown of brackets 990 kB", hostile.markdown_brackets, "text/markdown"),
    ("markdown heading of 9,990 # 20 kB", hostile.markdown_heading_line, "text/markdown"),
    ("70,000 links with a dot segment 990 kB", hostile.odd_links_html, "text/html"),
    ("veils left open 990 kB", hostile.veils_left_open_html, "text/html"),
    ("a link of 49,000 images 686 kB", hostile.image_links_html, "text/html"),
    ("36,000 empty anchors in a definition 990 kB", hostile.definition_anchors_html, "text/html"),
    ("200 nested terms over 30,000 anchors", hostile.nested_terms_over_anchors_html, "text/html"),
    # (Under the bound of element levels, which the 200 nested terms pass: read as Markdown.)
    (
        "45 nested terms over 30,000 anchors",
        lambda: hostile.nested_terms_over_anchors_html(45),
        "text/html",
    ),
    ("a gutter beside 8,000 code blocks", hostile.gutter_of_many_blocks_html, "text/html"),
    ("headings in steps' headers 990 kB", lambda: hostile.reading_rules_html("steps"), "text/html"),
    ("headings all link 990 kB", lambda: hostile.reading_rules_html("linked"), "text/html"),
    (
        "a code block of 80,000 line blocks 990 kB",
        lambda: hostile.reading_rules_html("lines"),
        "text/html",
    ),
    ("inline quotations 990 kB", lambda: hostile.reading_rules_html("quotes"), "text/html"),
    ("buttons in table cells 990 kB", lambda: hostile.reading_rules_html("buttons"), "text/html"),
    ("headings in summaries 990 kB", lambda: hostile.reading_rules_html("summaries"), "text/html"),
    ("a list of 90,000 letters 990 kB", lambda: hostile.reading_rules_html("letters"), "text/html"),
    ("LaTeXML paragraphs 990 kB", lambda: hostile.reading_rules_html("latexml"), "text/html"),
    ("LaTeXML equations 990 kB", lambda: hostile.reading_rules_html("equations"), "text/html"),
    ("numbered captions 990 kB", lambda: hostile.reading_rules_html("captions"), "text/html"),
    (
        "an equation row of 45,000 cells",
        lambda: hostile.reading_rules_html("equation row"),
        "text/html",
    ),
    ("styles of list-style 990 kB", lambda: hostile.reading_rules_html("list styles"), "text/html"),
    (
        "quotes in one figure 990 kB",
        lambda: hostile.reading_rules_html("figure quotes"),
        "text/html",
    ),
    (
        "nested infobox asides 990 kB",
        lambda: hostile.reading_rules_html("nested infoboxes"),
        "text/html",
    ),
    (
        "lists of tabs, hidden panels 990 kB",
        lambda: hostile.reading_rules_html("tabs"),
        "text/html",
    ),
    ("skip links 990 kB", lambda: hostile.reading_rules_html("skip links"), "text/html"),
    ("divs of emphasis 990 kB", lambda: hostile.reading_rules_html("emphasis"), "text/html"),
    (
        "tweets in one wrapper 990 kB",
        lambda: hostile.reading_rules_html("embedded posts"),
        "text/html",
    ),
    (
        "cards of linked headings 990 kB",
        lambda: hostile.reading_rules_html("teaser cards"),
        "text/html",
    ),
    (
        "a sharing class 250 deep 990 kB",
        lambda: hostile.reading_rules_html("share widgets"),
        "text/html",
    ),
    (
        "headings with anchors 990 kB",
        lambda: hostile.reading_rules_html("heading anchors"),
        "text/html",
    ),
    (
        "emphasised links 990 kB",
        lambda: hostile.reading_rules_html("emphasised links"),
        "text/html",
    ),
    ("indented prose 990 kB", lambda: hostile.reading_rules_html("indented prose"), "text/html"),
    (
        "99,000 hidden paragraphs 990 kB",
        lambda: hostile.tiny_elements_html(b"<p hidden>"),
        "text/html",
    ),
    ("49,000 words with an id 920 kB", hostile.ids_html, "text/html"),
    ("20,600 links to words with ids 990 kB", hostile.fragment_targets_html, "text/html"),
    ("12,000 note links and backlinks 920 kB", hostile.backlinks_html, "text/html"),
    ("7,000 references and backlinks 990 kB", hostile.references_html, "text/html"),
    ("a glossary of 21,200 terms with ids 990 kB", hostile.glossary_html, "text/html"),
    ("23,500 lists numbered from a start 990 kB", hostile.numbered_lists_html, "text/html"),
    ("9,000 lists of ARIA tabs 990 kB", hostile.aria_tabs_html, "text/html"),
    ("13,500 headings with permalinks 980 kB", hostile.anchored_headings_html, "text/html"),
    ("20,000 one-line code blocks 990 kB", hostile.code_blocks_html, "text/html"),
    ("highlighted code of 18,000 lines 990 kB", hostile.highlighted_code_html, "text/html"),
    (
        "45,000 links to fragments 57 levels deep 930 kB",
        lambda: hostile.numbered_units_html(
            b"<a href=#%d>w</a> ", 45_000, b"<div>" * 57, b"</div>" * 57
        ),
        "text/html",
    ),
    ("48,000 links 250 levels deep 770 kB", hostile.deep_wrappers_html, "text/html"),
    (
        "a line of 198,000 link targets left open 990 kB",
        hostile.unclosed_openings_html,
        "text/html",
    ),
    (
        "a word of 110,000 autolinks left open 990 kB",
        lambda: hostile.unclosed_openings_html(b"&lt;a:x_"),
        "text/html",
    ),
    (
        "45,000 short dates with a title 990 kB",
        lambda: hostile.deep_wrappers_html(unit=b"<abbr title=1>a</abbr>", count=45_000, depth=1),
        "text/html",
    ),
    (
        "49,500 paragraphs of class title 990 kB",
        lambda: hostile.deep_wrappers_html(unit=b"<p class=title>x</p>", count=49_500, depth=1),
        "text/html",
    ),
    (
        "48,500 spans in 250 captioned figures 740 kB",
        lambda: hostile.deep_wrappers_html(
            b"<figure><figcaption>c</figcaption>", b"</figure>", b"<span>w</span> ", 48_500
        ),
        "text/html",
    ),
    (
        "48,500 spans in 250 headers 730 kB",
        lambda: hostile.deep_wrappers_html(
            b"<header>", b"</header>", b"<span>w</span> ", 48_500, end=b"<h1>t</h1>"
        ),
        "text/html",
    ),
    ("pdf shared stream 2,000 pages", hostile.shared_stream_pdf, "application/pdf"),
    ("pdf 5,000 pages", lambda: hostile.many_pages_pdf(5_000), "application/pdf"),
    ("pdf 30,000 pages 9 MB", lambda: hostile.many_pages_pdf(30_000), "application/pdf"),
    (
        "pdf one page of 1.9 MB of text",
        lambda: hostile.shared_stream_pdf(1, 1_900_000),
        "application/pdf",
    ),
    (
        "pdf one page of 250 kB of text",
        lambda: hostile.shared_stream_pdf(1, 250_000),
        "application/pdf",
    ),
    ("pdf Forms drawn 10x, 4 levels, 1.8 kB", hostile.form_xobject_pdf, "application/pdf"),
    (
        "pdf Forms with resources from a /Parent 1.8 kB",
        lambda: hostile.form_xobject_pdf(inherit=True),
        "application/pdf",
    ),
    ("pdf Forms naming 3 Forms and themselves", hostile.wide_form_tree_pdf, "application/pdf"),
]

_ANCHOR = """
import io, sys, time
sys.path.insert(0, {tests!r})
import hostile
body = {make}
t = time.process_time()
if {pdf}:
    from pypdf import PdfReader
    for page in PdfReader(io.BytesIO(body), strict=False).pages:
        page.extract_text()
else:
    import trafilatura
    trafilatura.extract(body.decode(), output_format="markdown", include_tables=True)
print(time.process_time() - t)
"""

_MAKERS = {
    "deep 100,000": "hostile.deep_html(100_000)",
    "table 960 kB": "hostile.table_html(960_000)",
    "one huge line 990 kB": "hostile.huge_line_html(990_000)",
    "slow layout 990 kB": "hostile.slow_html(990_000)",
    "links to a long URL 990 kB": "hostile.fragment_links_html(990_000)",
    "long base href 86 kB": "hostile.base_href_html(2_000, 50_000)",
    "list 250 deep 990 kB": "hostile.deep_list_html(250, 990_000)",
    "quote 100 deep 990 kB": "hostile.deep_quote_html(100, 990_000)",
    "rowspans 62 kB": "hostile.span_html(1_600)",
    "layout tables: 10,000 cells, 80 nested": "hostile.layout_tables_html()",
    "tiny paragraphs 990 kB": 'hostile.tiny_elements_html(b"<p>x")',
    "330,000 empty paragraphs 990 kB": 'hostile.tiny_elements_html(b"<p>")',
    "330,000 empty paragraphs naming the kinds' words 990 kB": "hostile.kinds_named_html()",
    "38,000 dialogs among attributed elements 990 kB": (
        'hostile.tiny_elements_html(b"<i a></i><dialog></dialog>")'
    ),
    "book of 4,000 paragraphs 990 kB": "hostile.paragraphs_html(990_000)",
    "book of 1,800 paragraphs 990 kB": "hostile.paragraphs_html(990_000, 90)",
    "markdown characters 990 kB": "hostile.markdown_chars_html(990_000)",
    "tiny cells 990 kB": 'hostile.tiny_elements_html(b"<tr><td>a")',
    "one tag of 90,000 attributes 990 kB": "hostile.attributes_html(90_000)",
    "200 attributes a tag 990 kB": "hostile.attributes_html(200)",
    "class names 990 kB": "hostile.class_names_html()",
    "stray end tags 2,000 deep 990 kB": "hostile.stray_end_tags_html()",
    "a stylesheet of 990 kB": "hostile.stylesheet_html()",
    "tiny cells a stylesheet hides and shows 990 kB": (
        'hostile.styled_elements_html(b"<tr><td class=h>a")'
    ),
    "45,000 divs a stylesheet hides and shows 990 kB": (
        'hostile.styled_elements_html(b"<div class=h>ab cd</div>")'
    ),
    "2,000 selectors of one class 990 kB": (
        'hostile.styled_elements_html(b\'<p class="h g">x y z\', sheet=b"".join(b".h.x%d{display:none}"'
        ' % i for i in range(2_000)) + b"".join(b".h.y%d:hover{display:block}" % i for i in range(5_000)))'
    ),
    "math openers left open 990 kB": 'hostile.delimiters_html("paren")',
    "blanks beside a cell's lines 990 kB": "hostile.blanks_beside_cell_lines_html()",
    "one run of backslashes 990 kB": 'hostile.delimiters_html("backslashes")',
    "backticks in a code link 990 kB": 'hostile.delimiters_html("backticks")',
    "36,000 links on one line 990 kB": 'hostile.marked_line_html("link")',
    "36,000 links in one list item 990 kB": 'hostile.marked_line_html("link", b"li")',
    "49,000 code spans on one line 990 kB": 'hostile.marked_line_html("code")',
    "a paragraph of # 990 kB": 'hostile.non_word_html(b"#")',
    "ten nested paragraphs of 109 kB": "hostile.nested_paragraphs_html()",
    "tags that never close 990 kB": "hostile.unclosed_tags_html()",
    "SVG nested 90,000 deep 990 kB": "hostile.nested_unseen_html()",
    "a hidden div over 90,000 nested SVGs 990 kB": (
        'hostile.nested_unseen_html(b"<div hidden>", b"</div>")'
    ),
    "text of 260,000 tokens after labels 990 kB": "hostile.label_runs_html()",
    "one text of 107,000 entities 990 kB": "hostile.entity_text_html()",
    "900 nested pre 200 kB": "hostile.nested_pre_html()",
    "49,000 images between words 294 kB": "hostile.dropped_between_words_html()",
    "45,000 navs between words 540 kB": (
        'hostile.dropped_between_words_html(b"<nav></nav>", 45_000)'
    ),
    "45,000 scripts between words 810 kB": (
        'hostile.dropped_between_words_html(b"<script></script>", 45_000)'
    ),
    "25,000 hidden spans between words 1 MB": (
        'hostile.dropped_between_words_html(b"<span hidden></span>", 25_000, b"y" * 30)'
    ),
    "160,000 word breaks in one block 960 kB": (
        'hostile.dropped_between_words_html(b"<wbr>", 160_000, b"a")'
    ),
    "an attribute left open over 140,000 <embed 980 kB": (
        'b"<html><body><p title=\'" + b"<embed " * 140_000'
    ),
    "200 nested formulas around 990 kB": "hostile.nested_math_html()",
    "200 nested <b><i> around 980 kB": "hostile.nested_marks_html()",
    "a feed of 7,000 items 1 MB (as text/html)": "hostile.feed_xml()",
    "markdown of 33,000 links and code 990 kB": "hostile.markdown_links()",
    "markdown of one run of 990,000 backticks": "hostile.backtick_run()",
    "markdown of brackets 990 kB": "hostile.markdown_brackets()",
    "markdown heading of 9,990 # 20 kB": "hostile.markdown_heading_line()",
    "70,000 links with a dot segment 990 kB": "hostile.odd_links_html()",
    "veils left open 990 kB": "hostile.veils_left_open_html()",
    "a link of 49,000 images 686 kB": "hostile.image_links_html()",
    "36,000 empty anchors in a definition 990 kB": "hostile.definition_anchors_html()",
    "200 nested terms over 30,000 anchors": "hostile.nested_terms_over_anchors_html()",
    "45 nested terms over 30,000 anchors": "hostile.nested_terms_over_anchors_html(45)",
    "a gutter beside 8,000 code blocks": "hostile.gutter_of_many_blocks_html()",
    "headings in steps' headers 990 kB": 'hostile.reading_rules_html("steps")',
    "headings all link 990 kB": 'hostile.reading_rules_html("linked")',
    "a code block of 80,000 line blocks 990 kB": 'hostile.reading_rules_html("lines")',
    "inline quotations 990 kB": 'hostile.reading_rules_html("quotes")',
    "buttons in table cells 990 kB": 'hostile.reading_rules_html("buttons")',
    "headings in summaries 990 kB": 'hostile.reading_rules_html("summaries")',
    "a list of 90,000 letters 990 kB": 'hostile.reading_rules_html("letters")',
    "LaTeXML paragraphs 990 kB": 'hostile.reading_rules_html("latexml")',
    "LaTeXML equations 990 kB": 'hostile.reading_rules_html("equations")',
    "numbered captions 990 kB": 'hostile.reading_rules_html("captions")',
    "an equation row of 45,000 cells": 'hostile.reading_rules_html("equation row")',
    "styles of list-style 990 kB": 'hostile.reading_rules_html("list styles")',
    "quotes in one figure 990 kB": 'hostile.reading_rules_html("figure quotes")',
    "nested infobox asides 990 kB": 'hostile.reading_rules_html("nested infoboxes")',
    "lists of tabs, hidden panels 990 kB": 'hostile.reading_rules_html("tabs")',
    "skip links 990 kB": 'hostile.reading_rules_html("skip links")',
    "divs of emphasis 990 kB": 'hostile.reading_rules_html("emphasis")',
    "tweets in one wrapper 990 kB": 'hostile.reading_rules_html("embedded posts")',
    "cards of linked headings 990 kB": 'hostile.reading_rules_html("teaser cards")',
    "a sharing class 250 deep 990 kB": 'hostile.reading_rules_html("share widgets")',
    "headings with anchors 990 kB": 'hostile.reading_rules_html("heading anchors")',
    "emphasised links 990 kB": 'hostile.reading_rules_html("emphasised links")',
    "indented prose 990 kB": 'hostile.reading_rules_html("indented prose")',
    "99,000 hidden paragraphs 990 kB": 'hostile.tiny_elements_html(b"<p hidden>")',
    "49,000 words with an id 920 kB": "hostile.ids_html()",
    "20,600 links to words with ids 990 kB": "hostile.fragment_targets_html()",
    "12,000 note links and backlinks 920 kB": "hostile.backlinks_html()",
    "7,000 references and backlinks 990 kB": "hostile.references_html()",
    "a glossary of 21,200 terms with ids 990 kB": "hostile.glossary_html()",
    "23,500 lists numbered from a start 990 kB": "hostile.numbered_lists_html()",
    "9,000 lists of ARIA tabs 990 kB": "hostile.aria_tabs_html()",
    "13,500 headings with permalinks 980 kB": "hostile.anchored_headings_html()",
    "20,000 one-line code blocks 990 kB": "hostile.code_blocks_html()",
    "highlighted code of 18,000 lines 990 kB": "hostile.highlighted_code_html()",
    "45,000 links to fragments 57 levels deep 930 kB": (
        'hostile.numbered_units_html(b"<a href=#%d>w</a> ", 45_000, b"<div>" * 57, b"</div>" * 57)'
    ),
    "48,000 links 250 levels deep 770 kB": "hostile.deep_wrappers_html()",
    "a line of 198,000 link targets left open 990 kB": "hostile.unclosed_openings_html()",
    "a word of 110,000 autolinks left open 990 kB": 'hostile.unclosed_openings_html(b"&lt;a:x_")',
    "45,000 short dates with a title 990 kB": (
        'hostile.deep_wrappers_html(unit=b"<abbr title=1>a</abbr>", count=45_000, depth=1)'
    ),
    "49,500 paragraphs of class title 990 kB": (
        'hostile.deep_wrappers_html(unit=b"<p class=title>x</p>", count=49_500, depth=1)'
    ),
    "48,500 spans in 250 captioned figures 740 kB": (
        'hostile.deep_wrappers_html(b"<figure><figcaption>c</figcaption>", b"</figure>",'
        ' b"<span>w</span> ", 48_500)'
    ),
    "48,500 spans in 250 headers 730 kB": (
        'hostile.deep_wrappers_html(b"<header>", b"</header>", b"<span>w</span> ", 48_500,'
        ' end=b"<h1>t</h1>")'
    ),
    "pdf shared stream 2,000 pages": "hostile.shared_stream_pdf()",
    "pdf 5,000 pages": "hostile.many_pages_pdf(5_000)",
    "pdf 30,000 pages 9 MB": "hostile.many_pages_pdf(30_000)",
    "pdf one page of 1.9 MB of text": "hostile.shared_stream_pdf(1, 1_900_000)",
    "pdf one page of 250 kB of text": "hostile.shared_stream_pdf(1, 250_000)",
    "pdf Forms drawn 10x, 4 levels, 1.8 kB": "hostile.form_xobject_pdf()",
    "pdf Forms with resources from a /Parent 1.8 kB": "hostile.form_xobject_pdf(inherit=True)",
    "pdf Forms naming 3 Forms and themselves": "hostile.wide_form_tree_pdf()",
}

# Each page is made by both tables (the anchor's in a process of its own): one missing from
# _MAKERS stopped the run at that page, the anchor asked for it (report.py's run).
assert [name for name, _, _ in PAGES] == list(_MAKERS), "PAGES and _MAKERS name other pages"


def anchor_cpu(name: str, pdf: bool, limit_s: float) -> float | None:
    """CPU seconds of the unrouted converter, or None when stopped at ``limit_s``."""
    code = _ANCHOR.format(tests=str(Path(hostile.__file__).parent), make=_MAKERS[name], pdf=pdf)
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=limit_s
        )
    except subprocess.TimeoutExpired:
        return None
    return float(out.stdout.strip().splitlines()[-1])


def in_process(skip_anchor: bool, limit_s: float) -> float:
    print("# in this process: CPU seconds of one conversion")
    worst = 0.0
    for name, make, content_type in PAGES:
        body = make()
        url = _URL_OF.get(name, URL)
        spent = []
        for links in (False, True):  # a read asked for the page's links does more work
            started = time.process_time()
            convert(body, content_type, url, truncated=False, include_links=links, limits=LIMITS)
            spent.append(time.process_time() - started)
        ours = max(spent)
        worst = max(worst, ours) if content_type == "text/html" else worst
        if skip_anchor:
            print(f"{name} ({len(body):,} bytes): ours {ours:.3f} s (links off {spent[0]:.3f} s)")
            continue
        anchor = anchor_cpu(name, content_type == "application/pdf", limit_s)
        if anchor is None:
            print(
                f"{name}: ours {ours:.3f} s, anchor > {limit_s:g} s (stopped), ratio < {ours / limit_s:.3f}"
            )
        else:
            print(f"{name}: ours {ours:.3f} s, anchor {anchor:.3f} s, ratio {ours / anchor:.3f}")
    print(f"worst HTML page up to the byte cap: ours {worst:.3f} s, bound 0.5 s")
    return worst


def _peak_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        fields = dict(line.split(":", 1) for line in status)
    return int(fields["VmHWM"].split()[0])


async def through_pool() -> None:
    print("# through the worker pool: wall seconds (deadline included), worker peak RSS")
    worst_s = worst_kb = 0.0
    for name, make, content_type in PAGES:
        # A worker that grows past its bound retires after answering: this one stays (its bound
        # is the memory limit), so that its peak can be read after the page.
        pool = ConvertPool(
            workers=LIMITS.convert_workers,
            queue=LIMITS.convert_queue,
            memory_mb=LIMITS.convert_memory_mb,
            retire_growth_mb=LIMITS.convert_memory_mb,
        )
        # Start the worker first, so the figures are the conversion's, not the zygote's.
        await pool.convert(
            Job(b"<p>x</p>" * 4000, "text/html", URL, False, False, LIMITS), time.monotonic() + 30
        )
        job = Job(make(), content_type, _URL_OF.get(name, URL), False, True, LIMITS)
        started = time.monotonic()
        await pool.convert(job, started + LIMITS.fetch_timeout_s)
        wall = time.monotonic() - started
        kb = _peak_rss_kb(pool._idle[0].pid)
        worst_s, worst_kb = max(worst_s, wall), max(worst_kb, kb)
        print(f"{name}: {wall:.3f} s, peak RSS {kb / 1024:.0f} MiB")
        await pool.aclose()
    limit = LIMITS.convert_memory_mb
    print(f"worst case: ours {worst_s:.3f} s, deadline {LIMITS.fetch_timeout_s:g} s")
    print(
        f"worst worker peak RSS: ours {worst_kb / 1024:.0f} MiB, limit {limit} MiB, ratio {worst_kb / 1024 / limit:.3f}"
    )


async def under_load() -> None:
    print("# 40 concurrent hostile reads and another agent's small read")
    hostile_pdf = hostile.shared_stream_pdf(pages=2, inflated=8_000_000)
    small = b"<html><head><title>Small</title></head><body><p>a small page</p></body></html>"
    routes = {
        "/hostile.pdf": respond(200, hostile_pdf, "application/pdf"),
        "/small": respond(200, small),
    }
    settings = Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected", "robots": False},
            "limits": {
                "per_host_rate": 1000.0,
                "per_host_burst": 1000,
                "max_pdf_inflated_bytes": 100_000_000,
            },
        }
    )
    outcomes: dict[str, int] = {}
    with serve(routes=routes) as server:
        async with Web(settings, StaticResolver({}), audit=MemoryAuditSink()) as web:
            # A running server: the converters imported, the zygote started by earlier reads.
            # A running server: the converters imported, the zygote started by earlier reads.
            await web.fetch(server.url("/small?warm"), agent="other")
            await web._converter.start()
            await web._converter.start()

            async def read_hostile(i: int) -> None:
                try:
                    await web.fetch(server.url(f"/hostile.pdf?{i}"))
                    reason = "allowed"
                except (Refused, UpstreamError) as exc:
                    reason = exc.reason
                outcomes[reason] = outcomes.get(reason, 0) + 1

            latencies = []
            async with anyio.create_task_group() as tg:
                for i in range(40):
                    tg.start_soon(read_hostile, i)
                while web._converter._running == 0:
                    await anyio.sleep(0.01)
                for i in range(5):
                    started = time.monotonic()
                    await web.fetch(server.url(f"/small?{i}"), agent="other")
                    latencies.append(time.monotonic() - started)
                    await anyio.sleep(1.0)
    print(f"hostile reads ended as: {outcomes}; small reads: {[round(x, 3) for x in latencies]}")
    print(
        f"small read during 40 hostile reads (worst of 5, the first as the 40 arrive): ours {max(latencies):.3f} s, bound 1.0 s, ratio {max(latencies):.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-anchor", action="store_true")
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--load-only", action="store_true")
    parser.add_argument("--anchor-limit", type=float, default=20.0)
    args = parser.parse_args()
    if not args.load_only:
        in_process(args.skip_anchor, args.anchor_limit)
        anyio.run(through_pool)
    if not args.skip_load:
        anyio.run(under_load)


if __name__ == "__main__":
    main()
