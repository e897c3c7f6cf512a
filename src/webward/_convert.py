"""Reading a response body: :func:`convert`, the entry point the fetch core calls.

Pure functions, no I/O. What a body becomes:

    HTML, XHTML          -> readable Markdown (main content, full-page fallback), title, links
    text, JSON, XML, MD  -> the text as it is (decoded)
    jpeg, png, gif, webp -> a short text header and an image part         (<= 5 MiB)
    PDF                  -> a short text header and a document part        (<= 10 MiB)
    other images (SVG)   -> refused, unsupported_type
    other binary types   -> refused, unsupported_type

The type comes from :func:`webward._content.sniff` (the declared type checked against the first
bytes). The pipeline for HTML:

1. decode with :func:`webward._charset.decode_text` (BOM, then the header's charset, then
   ``<meta>``, then detection; never raises);
2. parse once with lxml, read the title and ``<base href>``;
3. drop what is never content: scripts, styles, navigation, forms, hidden elements (by their
   attributes, or by a rule of the page's own ``<style>`` elements: :mod:`webward._stylesheet`)
   and cookie or consent banners; resolve every ``<a href>`` against the base (this also yields
   the outbound links);
4. extract the main content with trafilatura (Markdown, tables, links and formatting kept,
   comments dropped, precision-oriented: chosen by ``bench/extraction.py``), its main
   extractor alone first, its whole cascade only when that reading is deficient; quotes, list
   numbers, definition lists and formulas are kept through it and through the readings below
   (:mod:`webward._structure`);
5. if the extractor kept too little of the page (a home page, an index, a listing), convert the
   whole cleaned page with html-to-markdown instead;
5b. else, on a page with room for a reading 1.7 times as long, ask a second extractor
   (readability-lxml): when its reading holds trafilatura's and is at least half again as long,
   trafilatura dropped part of the article, and the longer reading is taken;
6. tidy the Markdown (blank-line runs, trailing spaces, a blank line after code fences);
7. a scant reading (see :mod:`webward._shell`) becomes the body's own words when it has some,
   or, for a page cut at the byte cap, a note that its text lies past the cut.

Third-party extractors run inside ``try``: whatever a hostile page does to them, the reader falls
back to the next step and in the end to the page's plain text.

This module holds the dispatch, HTML to Markdown and Markdown tidying. Charset detection and
decoding live in :mod:`webward._charset`; ``codec_for`` and ``decode_text`` are re-exported here.
"""

from __future__ import annotations

import bisect
import collections
import copy
import functools
import itertools
import logging
import re
import string
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from . import _content, _kinds, _shell, _structure
from . import _urls as urls
from ._charset import codec_for, decode_text
from ._errors import Reason, Refused
from ._feeds import XML_MISC, is_feed, read_feed
from ._models import Link, Part
from ._parts import (
    IMAGE_TYPES,
    MAX_IMAGE_SIDE,
    image_damaged,
    image_part,
    image_size,
    pdf_reading,
    summary_url,
)
from ._settings import LimitsSettings
from ._stylesheet import StyleRules, read_sheets, sheet_applies, style_declares
from ._stylesheet import css_readable as _css_readable
from ._window import EMPTY_BODY

__all__ = [
    "EMPTY_BODY",
    "MAX_LINKS",
    "Converted",
    "HtmlResult",
    "codec_for",
    "convert",
    "decode_text",
    "html_to_markdown",
    "tidy_markdown",
]

# As for pypdf in _parts: the extractors' warnings about odd pages stay out of the terminal.
for _name in ("trafilatura", "htmldate", "courlan", "justext", "readability"):
    logging.getLogger(_name).addHandler(logging.NullHandler())

#: At most this many outbound links are returned with ``include_links``.
MAX_LINKS = 200
#: Anchor texts and titles are cut to this many characters.
_MAX_LINK_TEXT = 200
_MAX_TITLE = 300
#: Links longer than a URL webward would fetch are not worth handing over.
_MAX_LINK_URL = 2048

# Bounds on what a page can make its reading grow to. Each of these once turned a page of
# 1 MB or less into a reading many times its size (up to 220 MB) that took seconds to make
# (tests/hostile.py has one page of each kind): a link is written out whole in the text, so
# thousands of links to a long <base href> or to "#" on a page with a long URL multiply the
# page; a Markdown list item or quote carries one indent or "> " per level it is nested, so many
# short items under deep lists or quotes do too; and a table cell's colspan and rowspan are
# written out as that many empty cells, rowspans adding cells to every row below them.
#: At most this many characters of link URLs are written into a reading (about the largest
#: body webward reads); past it, links keep their text and lose their address.
_LINK_URL_BUDGET = 1_000_000
#: At most this many of a reading's distinct links are made absolute the slow way (urljoin,
#: or percent-encoding), the rest by appending to a prefix of the base: 70,000 odd links
#: ("a/./1", "a 1") on a page of 1 MB took 0.85 s. Past it, such a link keeps its text and
#: loses its address, as past the URL budget.
_SLOW_LINKS = 5_000
#: Lists and definition lists nested deeper than this many levels, quotes deeper than half
#: as many, are read as plain blocks (their items and paragraphs kept, without the indent).
_MAX_PREFIX_DEPTH = 6
_PREFIXED = ("ul", "ol", "blockquote", "dl")
_PREFIXED_ITEMS = ("li", "dt", "dd")
#: A table cell spans at most this many columns and rows ...
_MAX_SPAN = 32
#: ... and a page's spans add at most this many cells in all; past it, cells span nothing.
_SPAN_BUDGET = 10_000
_SPAN_NUMBER = re.compile(r"\s*(\d{1,9})")
#: The last bound: a reading is cut at this many characters (the worst ordinary page of 1 MB,
#: all short links, reads to about 2 MB).
MAX_READING_CHARS = 4_000_000
_CUT_NOTE = f"[reading cut at {MAX_READING_CHARS:,} characters: the page is made to grow]"

#: The extractor "kept too little" when its text has fewer than this many non-blank
#: characters (about 40 words) ...
_MIN_KEEP_CHARS = 200
#: ... or than this share of the cleaned page's visible text. The article pages of the
#: extraction benchmark keep at least 12 % of their page, so 5 % only catches listings.
_MIN_KEEP_SHARE = 0.05
# A listing's teasers (see _lost_titles): this many linked headings make a listing; at most
# this many are compared.
_MIN_LISTING_TITLES = 3
_MAX_LISTING_TITLES = 200
#: A page with less visible text than this is read whole, without the main-content extractor:
#: it would keep little more than the floor above, and below its own floor (250 characters)
#: trafilatura starts justext, whose stoplists for 100 languages cost ~0.25 s CPU in every new
#: process, more than the rest of a small read (`webward fetch` starts one per call).
_SHORT_PAGE_CHARS = 500
#: The second reading (readability-lxml) replaces trafilatura's when it has at least this many
#: times its words and holds at least this share of them: it is then the same article with
#: what trafilatura dropped put back, not another block of the page. Chosen on the tuning
#: halves of both sets of ``bench/extraction.py`` (F1 flat from 1.5 to 1.7, and for any share
#: from 0.8 to 0.95); the second extractor runs only on pages with room for such a reading.
_LONGER_READING = 1.5
_LONGER_HOLDS = 0.9
#: The second extractor runs only on a page whose words outside links number at least this
#: many times the first reading's: a page with room for a reading :data:`_LONGER_READING`
#: times as long, with a margin, since the longer readings taken on the tuning halves had
#: room for 1.75 times the first or more, and the pages with less room (about a third of those
#: it ran on, ~8 ms each) gave nothing.
_ROOM_FOR_SECOND = 1.7

# Elements that are never readable content. Dropped before extraction: trafilatura drops
# them too, but later, and every element removed up front is one its XPath passes skip
# (measured: about 10 % faster on the benchmark, same F1).
_DROP_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "canvas",
    "iframe",
    "frame",
    "frameset",
    "object",
    "embed",
    "applet",
    "video",
    "audio",
    "map",
    "nav",
    "aside",
    "footer",
    "menu",
    "button",
    "select",
    "textarea",
    "input",
    "dialog",
    "link",
    "meta",
    "img",
    "picture",
    "source",
    "track",
    "area",
    # What a browser never shows: fallbacks for plugins and frames it supports, a title in
    # the body (the document's own title is read before), a field's list of suggestions.
    "noembed",
    "noframes",
    "title",
    "datalist",
)
# Figures holding these are content (a table, a code listing, a quote); of other figures (an
# image and its caption) the reading keeps the caption.
# What a reader never sees, whatever the page's layout (see _drop_unseen).
_UNSEEN_TAGS = ("script", "style", "noscript", "template", "noembed", "noframes", "datalist")
# A caption that numbers its figure: "Figure 3:", "Fig. 2.", "Table 1 -", "Abb. 4 Umsatz".
_NUMBERED_CAPTION = re.compile(
    r"\s*(?:figure|fig\.?|table|tab\.|listing|algorithm|chart|exhibit|plate|diagram|"
    r"abbildung|abb\.|tabelle|figura|tabla|tableau|tabela)\s*\d+(?:[.\-\u2013]\d+)*[a-z]?"
    r"(?:\s*[:.|\u2013\u2014-]|\s)",
    re.IGNORECASE,
)
_FIGURE_CONTENT = ("table", "pre", "code", "blockquote", "ul", "ol")

# Cookie and consent banners by class or id. Deliberately narrow: a bare "cookie" would drop
# the recipe on a baking blog.
_BANNER = re.compile(
    r"cookie[-_ ]?(?:banner|consent|notice|bar|policy|popup|law|message|wall|modal|dialog)"
    r"|cookieconsent|cookiebot|consent[-_ ]?(?:banner|manager|popup|modal|bar|dialog)"
    r"|gdpr|onetrust|didomi|usercentrics|truste-|qc-cmp|\bcmp(?:box|wrapper)"
    # A consent manager's own box ("cmp-banner"), not Adobe Experience Manager's components,
    # whose every class starts "cmp-" ("cmp-text", "cmp-container" on each block).
    r"|\bcmp[-_](?:banner|consent|popup|modal|dialog|overlay|notice|layer|box|wrapper|ui\b)",
    re.IGNORECASE,
)
# A word every match of the pattern above them holds: a value without one is passed over
# without running the pattern, which costs about 30 ns a character (a page of 1 MB of class
# names took 0.1 s to search).
_BANNER_WORDS = (
    "cookie",
    "consent",
    "gdpr",
    "onetrust",
    "didomi",
    "usercentrics",
    "truste-",
    "cmp",
)
_HIDDEN_WORDS = ("none", "hidden", "collapse")  # a style may hide only if it holds one
# A declaration of display or visibility, as html-to-markdown finds one to hide by.
_SHOWING_DECLARATION = re.compile(r"(?:display|visibility)\s*:[^;]*;?", re.IGNORECASE)
# An <aside> of the text itself: an admonition (a documentation site's note, tip or warning)
# or a footnote (docutils' HTML5 writer makes each one an <aside class="footnote">).
_NOTE_CLASS = re.compile(
    r"\b(?:note|notice|tip|hint|warning|caution|important|admonition|callout|footnote)s?\b",
    re.IGNORECASE,
)
_NOTE_WORDS = ("not", "tip", "hint", "warn", "caution", "important", "admonition", "callout")
_INFOBOX = re.compile(r"\binfobox\b")
# Only the start of a style, class or id is searched: real ones are far shorter.
_MAX_CHECKED_CHARS = 1_000
# An image's alt text kept in a sentence (see _keep_inline_alts): a label, not a description.
_MAX_ALT_CHARS = 80

_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
# C0 controls other than tab, newline and carriage return (and DEL): lxml refuses them, and a
# model gains nothing from them.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_BYTES = bytes(b for b in range(128) if _CONTROL.match(chr(b)))
_CONTROLS = _CONTROL_BYTES.decode("ascii")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)

# libxml2 checks each attribute of a start tag against every one before it: 16,000 attributes
# in one tag took 0.4 s to parse, 90,000 (a 1 MB page) 81 s. The real pages of
# bench/extraction.py carry at most 44 on an element. Past this many, the rest of a tag's
# attributes are left out before parsing, which bounds the parse at about 0.05 s a megabyte.
_MAX_TAG_ATTRIBUTES = 128
# An attribute of a start tag as the HTML tokenizer reads it: a name (whatever up to a space,
# "/", ">" or "="), then perhaps "=" and a value, double- or single-quoted (a quote left open
# runs to the end) or bare. Possessive throughout: one pass, no backtracking.
# Spaces are HTML's five alone: a no-break space is part of a name or value to the parser, and
# read as a space here, it would let a quote open where the parser sees none.
_ATTRIBUTE_SOURCE = (
    r"[\t\n\f\r /]*+[^\t\n\f\r />][^\t\n\f\r />=]*+"
    r"(?:[\t\n\f\r ]*+=[\t\n\f\r ]*+(?:\"[^\"]*+\"?|'[^']*+'?|[^\t\n\f\r >]*+))?+"
)
_KEPT_ATTRIBUTES = re.compile(rf"(?:{_ATTRIBUTE_SOURCE}){{{_MAX_TAG_ATTRIBUTES}}}+")
# A start tag's name and its attributes (group 1), up to where the tokenizer leaves the tag.
_START_TAG = re.compile(rf"<[A-Za-z][^\t\n\f\r />]*+((?:{_ATTRIBUTE_SOURCE})*+)")
# Text, end tags, comments and start tags of fewer attributes than the bound, as far as the
# first start tag of more: one call in C over a page that has none (a match object per tag
# cost twice as much, 43 ms on a page of 200,000 tags). Possessive, so each character is
# read once.
_UP_TO_MANY_ATTRIBUTES = re.compile(
    rf"(?:[^<]++|<(?![A-Za-z])|<[A-Za-z][^\t\n\f\r />]*+"
    rf"(?:{_ATTRIBUTE_SOURCE}){{0,{_MAX_TAG_ATTRIBUTES - 1}}}+(?!{_ATTRIBUTE_SOURCE}))*+"
)
# Void elements of HTML that libxml2's HTML parser does not know as void: it leaves each one
# open, and what follows it in its block becomes its content ("<div><embed src=x>words</div>"
# put the words inside the embed, dropped with it; a run of <wbr> in one block nested past the
# parser's limit). Written self-closing before the parse, which libxml2 honours.
# The tag's end is optional in the pattern, so that a tag that never ends (inside a quoted
# value or a comment that runs to the end of the page) is matched once, to the end, rather
# than tried again from each "<wbr" inside it (quadratic: 140 kB took 13 s).
_UNKNOWN_VOID = re.compile(
    rf"(<(?:wbr|source|track|embed|keygen)(?=[\t\n\f\r />])(?:{_ATTRIBUTE_SOURCE})*+)"
    r"([\t\n\f\r ]*+/?+>)?+",
    re.IGNORECASE,
)
_UNKNOWN_VOID_START = re.compile(r"<(?:wbr|source|track|embed|keygen)", re.IGNORECASE)

# libxml2's message when a document nests past its limit (2048 levels with huge_tree).
_TOO_DEEP = "Excessive depth"
_TOO_DEEP_NOTE = (
    "[this page nests its elements more than 2,048 levels deep, past what the HTML parser "
    "reads; webward shows its text without formatting]"
)
# libxml2 searches its whole stack of open elements for each end tag that closes nothing open
# (and for a <body> inside the body): 2,000 open <div>s and then 250,000 stray end tags took
# 0.57 s to parse. Within its default limit of 256 levels that costs at most 0.08 s; the 2,048
# levels of huge_tree are let in only on pages of at most this many tags (0.05 s at worst).
_MAX_TAGS_NESTED_DEEP = 20_000
_TOO_DEEP_AMONG_TAGS_NOTE = (
    f"[this page nests its elements more than 256 levels deep among more than "
    f"{_MAX_TAGS_NESTED_DEEP:,} tags, more than the HTML parser reads in time; webward shows "
    "its text without formatting]"
)
# Past this many elements even html-to-markdown is slow: 2 to 6 µs an element on the 2-core
# development machine (list items, cells, terms and links the dearest), and our own passes
# before it (parsing, cleaning, links, serialising) about 3 µs more: 0.7 to 0.9 s for 100,000
# items or links. Real pages hold one element per 46 bytes or more (the densest of the 155
# pages of bench/extraction.py), under 22,000 in the 1 MB a read keeps; one with more than this
# many is made of one- or two-word elements: it is read as plain text, a line per block, with a
# note saying why (0.2 to 0.3 s in all, parsing included).
_MAX_MARKDOWN_ELEMENTS = 50_000
# The kinds of pages read for their structure (_kinds: answers, prices, updates, contents,
# paywalls, a paper's authors) on pages of at most this many elements (_kinds.find's walk
# stops past it): each pass cost about 1.2 us an element, and real pages hold under 22,000
# (above).
_MAX_KINDS_ELEMENTS = 25_000
_TOO_MANY_FOR_MARKDOWN = f"count(//*) > {_MAX_MARKDOWN_ELEMENTS}"
_TOO_MANY_NOTE = (
    f"[this page has more than {_MAX_MARKDOWN_ELEMENTS:,} elements, more than webward converts "
    "to Markdown in time; webward shows its text without formatting]"
)
# html-to-markdown leaves out, without a word, whatever lies more than about 1,020 levels below
# <body> (a page of 2,000 nested blocks read as its first 1,020). A page nested past this depth
# is read as plain text too, under a note of its own.
_MAX_MARKDOWN_DEPTH = 1_000
_TOO_DEEP_FOR_MARKDOWN = "boolean(" + "/*" * (_MAX_MARKDOWN_DEPTH + 1) + ")"
_TOO_DEEP_FOR_MARKDOWN_NOTE = (
    f"[this page nests its elements more than {_MAX_MARKDOWN_DEPTH:,} levels deep, more than "
    "webward converts to Markdown; webward shows its text without formatting]"
)
# html-to-markdown's time for each inline element grows with the levels above it (48,000 links:
# 0.08 s at the top of a page, 0.23 s under 250 levels of wrappers, whatever their tag), and so
# does that of our passes that read ancestors or a container's subtree: 0.5 to 0.75 s in all
# for 48,000 links or spans 250 levels down, and 0.55 s for 45,000 links 57 levels down. A
# page whose elements have more than this many levels above them in all (about 25 ns a level)
# is read as plain text, under a note of its own. Only a page deeper than _WEIGHED_DEPTH (30)
# is weighed: one no deeper holds fewer (50,000 elements at most, the bound above); the
# development pages nest 50 levels at most and weigh under 150,000.
_MAX_ELEMENT_LEVELS = 1_500_000
_WEIGHED_DEPTH = _MAX_ELEMENT_LEVELS // _MAX_MARKDOWN_ELEMENTS
_DEEPER_THAN_WEIGHED = "boolean(" + "/*" * (_WEIGHED_DEPTH + 1) + ")"
_TOO_MANY_LEVELS_NOTE = (
    f"[this page nests its elements so deep that they have more than "
    f"{_MAX_ELEMENT_LEVELS:,} levels above them in all, more than webward converts to Markdown "
    "in time; webward shows its text without formatting]"
)
# Past these bounds trafilatura is slow. Its time grows with the cleaned page's elements (100 to
# 250 µs each on the 2-core development machine: a 1 MB page of 4,000 plain paragraphs took
# 1.1 s), more when they nest deep, and with the Markdown characters it escapes in the text
# (one Python call each, about 1.5 µs: 1.2 s for a page of 700,000). The 155 real pages of
# bench/extraction.py have at most 1,947 elements after cleaning and nest far less, so only
# machine-made, pathological or book-length pages are routed.
_MAX_MAIN_ELEMENTS = 2_000
_MAX_MAIN_DEPTH = 256
_MAX_ESCAPED_CHARS = 50_000
# trafilatura's time grows with the attributes too: it copies the tree with them, and matches
# its class and id patterns against them (1 MB of class names took 0.35 s on a page of 1,000
# paragraphs, 200 attributes on each of 587 elements 0.7 s). The real pages keep at most 2,162
# attributes and 63,514 characters of them after cleaning.
_MAX_MAIN_ATTRIBUTES = 10_000
_MAX_MAIN_ATTRIBUTE_CHARS = 250_000
_ESCAPED_CHARS = ("*", "_", "`", "~", "[", "]", "<")  # trafilatura's _INLINE_SPECIAL_CHARS
# Three patterns of trafilatura's Markdown pass (2.3) scan ahead from each delimiter to its
# closer, and start again from the next one when there is none, so their time grows with the
# square of the text a delimiter is left open in: LaTeX math openers "\(" and "\[" without
# their closers (an 80 kB paragraph of "\(" took 3.2 s, a 1 MB one minutes), a run of
# backslashes not ending in the Markdown character being escaped (20,000 backslashes 0.12 s),
# and a run of backticks in link text with no run of its length after it (800 runs of distinct
# lengths, 1.8 s). :func:`_rescanned` bounds, in one pass, the characters they would scan;
# past :data:`_MAX_RESCANNED_CHARS` (about 0.1 s at their slowest) html-to-markdown, whose
# patterns run in linear time, reads the page. No development page comes near it (their texts
# hold no math delimiter, at most 2 backslashes and 11 backticks).
_MAX_RESCANNED_CHARS = 10_000_000
# (opener, where trafilatura finds it, closer); "\\[" opens only after a space or at the start.
_MATH_DELIMITERS = (
    ("\\(", re.compile(r"\\\("), "\\)"),
    ("\\[", re.compile(r"(?<!\S)\\\["), "\\]"),
)
_BACKSLASH_RUN = re.compile(r"\\{2,}")
_BACKTICK_RUN = re.compile(r"`+")
# trafilatura's text filter matches every line of every text against a pattern opening with
# r"\W*" before 24 alternatives, so a line's leading run of non-word characters is backed over
# once per alternative: a 1 MB paragraph of "#" took 0.16 s a pass, 0.7 s with the second
# readings. Past :data:`_MAX_FILTERED_CHARS` characters in such runs (counting every run of at
# least :data:`_MIN_FILTERED_RUN` on a line, leading or not) html-to-markdown reads the page;
# no development page holds a single run that long.
_MAX_FILTERED_CHARS = 100_000
_MIN_FILTERED_RUN = 1_000
_NON_WORD = r"[^\w\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]"  # nor str.splitlines' breaks
# Tried only where a run starts: tried inside one too, each shorter run would be scanned again
# from each of its characters (1 MB of runs of 999 took 7 s).
_NON_WORD_RUN = re.compile(rf"(?<!{_NON_WORD}){_NON_WORD}{{{_MIN_FILTERED_RUN},}}")
_NON_WORD_BLOCK = re.compile(rf"{_NON_WORD}{{{_MIN_FILTERED_RUN // 2}}}")
# html-to-markdown (3.x) holds a copy of the Markdown of each of these elements' content while
# it writes the elements around it (measured, 300 of one nested around 980 kB: about 300 MB for
# each of these, 30 MB for any other tag), so its memory grows with their depth times the text.
# Past :data:`_MAX_COPY_DEPTH` of them, they are read as plain <span>s or <div>s (see
# :func:`_bound_copies`), which bounds that at about 16 times the page. (<pre> is one too, and
# the nested ones are already spans: _flatten_nested_pre.)
_MAX_COPY_DEPTH = 16
# fmt: off
_COPYING_BLOCKS = frozenset({
    "article", "aside", "blockquote", "dl", "figcaption", "figure", "footer", "h1", "h2", "h3",
    "h4", "h5", "h6", "legend", "main", "section", "summary",
})
_COPYING_TAGS = (*sorted(_COPYING_BLOCKS), *(
    "abbr", "b", "datalist", "del", "dfn", "em", "i", "mark", "option", "q", "rb", "rp", "rt",
    "s", "strike", "strong", "sub", "sup", "var",
))
# fmt: on
# html-to-markdown (3.x) spends time on each inline element in proportion to the Markdown line
# it ends (in a paragraph, even an empty <span> or <u>; directly in the body, a mark: a link,
# emphasis, code...), so a line's cost grows with the square of its inline elements: 36,000
# links in one paragraph took 1.3 s, in one list item 3.1 s, 31,000 nested <u>s 0.42 s. A line
# break after every :data:`_MAX_LINE_ELEMENTS` of them keeps that linear (0.3 s for the links,
# through the whole converter); only lines that long get one (the development pages have at
# most 106 inline elements on a line).
_MAX_LINE_ELEMENTS = 500
# What html-to-markdown flattens its content into: a block or a <br> it holds does not end the
# line (a <div> in a link, an empty one in emphasis, a <br> at the end of code).
# fmt: off
_FLATTENING_TAGS = frozenset({
    "a", "b", "strong", "i", "em", "code", "kbd", "samp", "tt", "var", "dfn", "mark", "del", "s",
    "strike", "q", "abbr", "label",
})
# fmt: on
# What ends a Markdown line, unless an element of _FLATTENING_TAGS holds it. Every other element
# (<span>, <font>, a custom element around the whole application) is inline: it neither ends a
# line nor hides the lines in it.
# fmt: off
_LINE_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "br", "caption", "center", "details", "dd",
    "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
    "h4", "h5", "h6", "header", "hr", "legend", "li", "main", "nav", "ol", "p", "pre", "section",
    "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
})
# fmt: on
# The elements a page marks its main content with, and how many (outermost) are measured.
_MAIN_TAGS = ("main", "article")
_MAX_MAIN_CANDIDATES = 64
#: A heavy page is read from its main container when that holds at least this share of its
#: text. With every page of both extraction sets read that way, F1 on the held-out halves
#: went from 0.800 to 0.864 and from 0.758 to 0.802 against the whole page; the share was
#: chosen on the tuning halves (flat from 0.1 to 0.2, lower from 0.3 up).
_MAIN_CONTAINER_SHARE = 0.2
#: Each second pass (trafilatura's whole cascade after a deficient quick reading, or
#: readability-lxml's reading) costs about as much as the first; they run only on pages of at
#: most this many elements (on the development pages, none above 771 elements needed one).
_MAX_SECOND_PASS_ELEMENTS = 1_000
#: trafilatura's fallback and readability-lxml read the whole text of every candidate for the
#: article (each parent and grandparent of a paragraph, each ``<div>``, table or list in it)
#: with regular expressions, at up to 190 ns a character of whitespace-heavy text: ten nested
#: ``<div>``s, each holding a paragraph of 109 kB, took 1 s in the second passes, three of
#: 490 kB 0.7 s. Second passes run only while that text, counted once for each candidate
#: (:func:`_candidate_text`), stays within this: pages near it took at most 0.3 s, the
#: development pages hold at most 1.03 million (0.06 s). Past it, trafilatura's deficient first
#: reading is kept (as on heavier pages), and html-to-markdown's reading of the main container
#: (a heavy page's reading, 0.1 s for 1 MB) stands in for readability-lxml's.
_MAX_CANDIDATE_TEXT = 1_500_000
# What readability-lxml reads as a candidate whatever it holds (its sanitizing pass).
_CANDIDATE_TAGS = frozenset(
    {"body", "div", "table", "ul", "section", "article", "aside", "header", "footer", "main"}
)
_PARAGRAPH_TAGS = ("p", "pre", "td")  # whose parents and grandparents are candidates
#: justext, in trafilatura's whole cascade, normalises a paragraph's whitespace with a Python
#: call for each run, five times over: about 5 µs a token (a 1 MB page of 280,000 tokens took
#: 1.5 s). Second passes run only on pages of at most this many (whitespace-separated) tokens;
#: the development pages have at most 14,331.
_MAX_SECOND_PASS_TOKENS = 40_000
# html-to-markdown (3.x), on a page with a block inside an inline element (a <p> in a <span>,
# a <div> in a custom element), handles each "&" of a text (every entity: "<" and ">" are
# written as ones) and each character from U+0080 to U+00BF (a no-break space, "©", "«"...) in
# time that grows with the text's length: 1 MB of "w1&amp;" in one text took 0.55 s, of
# "w1\xa0" 1.5 s. A text holding at least _MIN_SPLIT_ENTITIES of them is split, by empty
# <span>s, into pieces of at most _MAX_ENTITY_TEXT characters, cut between two letters or
# digits where the piece has them (elsewhere a cut can change a line's whitespace).
_MAX_ENTITY_TEXT = 2_000
_MIN_SPLIT_ENTITIES = 64
_ENTITY_CHARS = re.compile("[&<>\x80-\xbf]")
_LONG_TEXTS = f"//text()[string-length() > {_MAX_ENTITY_TEXT}]"
_ALNUM_PAIR = re.compile(r"[^\W_]{2}")
# An element below _MAX_MAIN_DEPTH others (the root, <html>, is at depth 1).
_TOO_DEEP_PATH = "boolean(" + "/*" * (_MAX_MAIN_DEPTH + 1) + ")"
# For the parser-free reading of a page nested too deep (and the words of a scant one): what
# a reader never sees. Comments; raw-text elements, whose content is never markup (a script's
# "<div>" is no element); and elements matched to their own end: a template's, an object's or
# an iframe's fallback, a closed dialog, SVG, an image map.
_RAW_TEXT = frozenset((
    "script", "style", "noscript", "iframe", "noembed", "noframes", "xmp", "title", "textarea",
    "plaintext",  # which never ends
))  # fmt: skip
_SKIPPED = frozenset((
    "script", "style", "noscript", "iframe", "noembed", "noframes", "xmp", "title", "template",
    "object", "svg", "map", "dialog", "datalist",
))  # fmt: skip
# For the words of a body whose reading came out scant: page furniture left out too, so a
# shell's server-made menus and footer do not pass for words of its own.
_NOT_WORDS = _SKIPPED | {"nav", "header", "footer", "aside", "menu", "button", "select", "head"}
_BODY_START = re.compile(r"<body\b", re.IGNORECASE)
_STYLE_TAG = re.compile(r"<style", re.IGNORECASE)
_VISIBLE = re.compile(r"visibility\s*:\s*visible", re.IGNORECASE)
# _VISIBLE looked for from its value's ":", a character the regex finds at memory speed: the
# case-blind pattern, which has no literal to look for, tried every position of the page
# (0.7 ms for 60 kB). The name is looked for in a window before each ":" found, and the
# whole pattern only where that window ends in a run of spaces as long as it, or past the
# first values found (a page of 125,000 ":visible" took 0.11 s to look at each).
_VISIBLE_VALUE = re.compile(r":\s*visible", re.IGNORECASE)
_VISIBILITY_BEFORE = re.compile(r"visibility\s*\Z", re.IGNORECASE)
_VISIBILITY_WINDOW = 80
_MAX_VISIBLE_VALUES = 100


def _shows_visible(text: str) -> bool:
    """Whether ``text`` holds :data:`_VISIBLE`."""
    for count, value in enumerate(_VISIBLE_VALUE.finditer(text)):
        colon = value.start()
        start = max(0, colon - _VISIBILITY_WINDOW)
        if _VISIBILITY_BEFORE.search(text, start, colon):
            return True
        if count >= _MAX_VISIBLE_VALUES or (
            start and text[start + len("visibility") : colon].isspace()
        ):
            return _VISIBLE.search(text) is not None  # (a name further back may end there)
    return False


# What a style that shows an element again must hold (its property's name, or an escape that
# may spell it): "visibility: visible", "initial", "vis\ible".
_MAY_SHOW = re.compile(r"visib|\\")
# Tags are "<" to the next ">" outside a quoted attribute value (``title="a > b"``; a quote
# opens one only right after "=", as in HTML: ``title=it's`` holds a plain apostrophe, and a
# value runs to its own quote however long). These are searched only up to the text's last
# ">", so that every tag that can end does and the search stays linear (from each of a
# million "<a" with no ">" after them, the scan to the end of the text made it quadratic: 9 s
# for 200 kB); a tag whose quoted value never ends before it runs to the end of the text.
_HTML_SPACE = "[ \\t\\n\\f\\r]"  # HTML's whitespace: not NBSP nor \x1c-\x1f, which \\s holds
_IN_TAG = (
    rf"""(?:[^>"'=]++|={_HTML_SPACE}*+"[^"]*+"|={_HTML_SPACE}*+'[^']*+'"""
    rf"""|=(?!{_HTML_SPACE}*+["'])|["'])*+"""
)
# Markup in the text the reading keeps, found in one pass as a browser's tokenizer finds it: a
# tag (a letter after "<" or "</": "x < 5" in a sentence is no tag), or a bogus comment ("<!",
# "<?" or "</" and no letter), which ends at its first ">". Block tags become line breaks.
_MARKUP = re.compile(rf"<(?:[!?]|/(?![a-zA-Z]))[^>]*+>|<(/?)([a-zA-Z][^\t\n\f\r />]*+){_IN_TAG}>")
# (Every block a browser starts a line at: without figure, figcaption, details and summary,
# a deep page's captions and folded sections ran into the words before and after them,
# "Hidden 0Caption number 1".)
_LINE_BREAKS = frozenset((
    "p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article",
    "table", "ul", "ol", "pre", "blockquote", "dd", "dt", "header", "main", "footer", "hr",
    "address", "aside", "caption", "center", "details", "dl", "fieldset", "figcaption",
    "figure", "form", "legend", "nav", "summary",
))  # fmt: skip
_BREAKS = {**dict.fromkeys(_LINE_BREAKS, "\n"), "td": " ", "th": " "}
# What a script's start tag leaves when it holds elements (else see _TagText._script).
_SCRIPT_STARTS = {"sup": "^", "sub": "_"}
# One token of markup, in the text lowered ASCII-wise (_ascii_lower): a comment's start, a
# bogus comment, or a whole start or end tag (its name, and the rest up to its ">" with
# quoted values skipped).
# A start that no tag completes (a quoted value that does not end before the text's last
# ">") matches the last alternative, empty: that tag never ends.
_TOKEN = re.compile(
    rf"<(?:(!--)|(/?)([a-z][^\t\n\f\r />]*+){_IN_TAG}>|(?:[!?]|/(?![a-z]))[^>]*+>"
    r"|(?P<open>(?=/?[a-z])))"
)
_TAIL_MARKUP = re.compile(r"<[a-z/!?]")  # past the text's last ">": markup that never ends
# A start tag's attributes (after its name), as HTML splits them: name, then its value.
_ATTRIBUTE = re.compile(
    rf"""([^\t\n\f\r />"'=][^\t\n\f\r />=]*+)(?:{_HTML_SPACE}*+={_HTML_SPACE}*+"""
    r"""(?:"([^"]*+)"|'([^']*+)'|([^\t\n\f\r >]*+)))?"""
)
# Hidden elements, as _clean drops them from the tree; the words first, which most pages
# lack (then no tag need be searched for them), or a reference or escape that may spell them.
_MAY_HIDE = re.compile(r"hidden|display|visibility|popover|&[#a-z]|\\")
# A start tag with a class or an id, which the page's stylesheets may hide (see _unread_spans);
# at most this many of them are asked (each costs about 5 µs to read and ask).
_NAMED = re.compile(r"[\t\n\f\r /\"'](?:class|id)[\t\n\f\r ]*+=")
_MAX_STYLED_TAGS = 10_000
_HIDDEN_TAG = re.compile(
    r"[\s/\"'](?:hidden|popover)(?![\w-])|aria-hidden\s*=\s*[\"']?\s*true|display\s*:\s*none"
    r"|visibility\s*:\s*(?:hidden|collapse)"
)
_VOID = frozenset(
    ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr")
)
# Elements whose end tag may be left out: what ends them then (HTML's rules, the common
# part): these start tags, or an end tag of an element they sit in.
_BLOCKS = frozenset((
    "address", "article", "aside", "blockquote", "details", "div", "dl", "fieldset",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "hgroup", "hr", "main", "menu", "nav", "ol", "p", "pre", "section", "table", "ul",
))  # fmt: skip
_ENDED_BY = {
    "p": _BLOCKS,
    "li": frozenset(("li",)),
    "dt": frozenset(("dt", "dd")),
    "dd": frozenset(("dt", "dd")),
    "option": frozenset(("option", "optgroup")),
    "tr": frozenset(("tr",)),
    "td": frozenset(("td", "th", "tr")),
    "th": frozenset(("td", "th", "tr")),
    "head": frozenset(("body",)),
}
# ... and the end tags that end them: their list's, table's or select's. Any other end tag of
# an element not opened inside is ignored, as a browser ignores it ("<p hidden>x</i>" hides on).
_TABLE_ENDS = frozenset(("tr", "table", "tbody", "thead", "tfoot"))
_ENDED_BY_END = {
    "li": frozenset(("ul", "ol", "menu")),
    "dt": frozenset(("dl",)),
    "dd": frozenset(("dl",)),
    "option": frozenset(("select", "datalist", "optgroup")),
    "tr": _TABLE_ENDS - {"tr"},
    "td": _TABLE_ENDS,
    "th": _TABLE_ENDS,
}
# The elements that bound an element's scope: an end tag from inside one of them reaches no
# element outside it.
_SCOPES = frozenset(("applet", "caption", "html", "table", "td", "th", "marquee", "object"))
# HTML's special elements: an end tag of an element that is none of them (a <span>) ends
# nothing while one of them is open inside it ("<span hidden><div>x</span>" hides on).
_SPECIAL = _BLOCKS | frozenset((
    "applet", "body", "button", "caption", "center", "col", "colgroup", "dd", "dir", "dt",
    "frameset", "head", "html", "iframe", "li", "listing", "marquee", "noembed", "noframes",
    "noscript", "object", "plaintext", "script", "select", "style", "summary", "tbody", "td",
    "template", "textarea", "tfoot", "th", "thead", "title", "tr", "xmp",
))  # fmt: skip
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_LINE_SPACE = re.compile(r"[^\S\n]+")
# Markdown blocks (see _deficient): headings, list items, quotes and code are not paragraphs.
_BLOCK_SPLIT = re.compile(r"\n\s*\n")
_NOT_PARAGRAPH = re.compile(r"#|[-*+>] |\d+[.)] |```|~~~")


# --------------------------------------------------------------------------------------------
# HTML


@dataclass(frozen=True)
class HtmlResult:
    """What :func:`html_to_markdown` makes of one HTML document."""

    title: str
    markdown: str
    links: tuple[Link, ...]
    # "main" (trafilatura), "readability" (readability-lxml's longer reading), "full" (whole
    # page), "plain" (words only: nested past the parser's limit), or "" (nothing readable)
    extractor: str
    # What the page's own stylesheets hide (None: nothing), for a reading of its words
    # without the tree (see _scant_reading) to leave out too.
    rules: StyleRules | None = field(default=None, compare=False, repr=False)
    # For a "plain" reading, the page's words (without the note), which a scant reading's
    # words would only read again (see _scant_reading).
    words: str | None = field(default=None, compare=False, repr=False)
    # Where the page's meta refresh sends a reader, as a note for the reading's start (see
    # _refresh_note); "" for no such redirect.
    refresh: str = ""


def _collapse(text: str, limit: int) -> str:
    return _CONTROL.sub("", _WS.sub(" ", text)).strip()[:limit].strip()


def _has_control(text: str) -> bool:
    """Whether ``text`` holds a character :data:`_CONTROL` matches: a search in C for each of
    them (memchr for most texts), quicker than one byte pass over the text's UTF-8 (20 us for
    100 kB of ASCII rather than 40, 110 rather than 150 for the development sets' pages, most
    of them not ASCII; the pattern's scan took 300)."""
    return any(control in text for control in _CONTROLS)


def _parse(text: str) -> tuple[Any, str]:
    """The parsed document (``None`` if there is nothing to parse) and, when the parser
    stopped at its nesting limit and dropped everything nested deeper, the note saying so
    (else ``""``)."""
    import lxml.etree  # type: ignore[import-untyped]  # lxml ships no type stubs
    import lxml.html  # type: ignore[import-untyped]

    text = _XML_DECL.sub("", text, count=1)
    if _has_control(text):
        # A form feed is white space to HTML and a line's end to CSS (it ends a string in a
        # sheet: "'x<FF>}" closes the string there): a newline, not nothing.
        text = _CONTROL.sub("", text.replace("\x0c", "\n"))
    text = _bound_attributes(text)
    if _UNKNOWN_VOID_START.search(text):
        text = _UNKNOWN_VOID.sub(_self_closed, text)
    if not text.strip():
        return None, ""
    # A fresh parser per call: lxml parser objects are not meant to be shared across threads,
    # and the fetch core may convert pages in worker threads.
    # huge_tree lifts libxml2's nesting limit of 256, past which it silently drops the rest of
    # the page (up to 2048 levels then); the body is already capped at 1 MB.
    # collect_ids=False: libxml2 otherwise files every id attribute in a table of the
    # document's IDs, which nothing here reads (no id() lookups; ids are read as attributes),
    # at a cost in parsing, each copy of the tree and its freeing: 49,000 elements with an id
    # each took 0.53 s against 0.43 s without the table.
    deep = text.count("<") <= _MAX_TAGS_NESTED_DEEP
    parser = lxml.html.HTMLParser(
        remove_comments=True, remove_pis=True, no_network=True, huge_tree=deep, collect_ids=False
    )
    parser.set_element_class_lookup(_html_classes())
    try:
        tree = lxml.html.document_fromstring(text, parser=parser)
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError):
        return None, ""
    if not any(_TOO_DEEP in entry.message for entry in parser.error_log):
        return tree, ""
    return tree, _TOO_DEEP_NOTE if deep else _TOO_DEEP_AMONG_TAGS_NOTE


def _self_closed(tag: re.Match[str]) -> str:
    """An :data:`_UNKNOWN_VOID` tag written self-closing (the space: a bare value would take
    the "/"); one that never ends, as it was."""
    return f"{tag.group(1)} />" if tag.group(2) is not None else tag.group()


def _bound_attributes(text: str) -> str:
    """``text`` with every start tag cut to its first :data:`_MAX_TAG_ATTRIBUTES` attributes
    (see there)."""
    pieces: list[str] = []
    done = pos = 0
    while True:
        scanned = _UP_TO_MANY_ATTRIBUTES.match(text, pos)
        assert scanned is not None  # it matches the empty string too
        pos = scanned.end()
        if pos == len(text):
            break
        tag = _START_TAG.match(text, pos)  # a tag of more: cut after its last one kept
        assert tag is not None  # the scan stops only before "<" and a letter
        kept = _KEPT_ATTRIBUTES.match(text, tag.start(1))
        assert kept is not None  # the tag has more than that many
        pieces.append(text[done : kept.end()])
        done = pos = tag.end(1)  # the rest of the tag (its ">") is kept
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


@functools.cache
def _html_classes() -> Any:
    """Every element an ``HtmlElement``, chosen in C. lxml.html's own lookup asks a Python
    method for each element the tree hands out (every element of every walk, the extractors'
    included: about 3 % of a conversion) only to give forms and their fields classes of their
    own, which no reading uses (and the fields are dropped first)."""
    import lxml.etree
    import lxml.html

    return lxml.etree.ElementDefaultClassLookup(
        element=lxml.html.HtmlElement,
        comment=lxml.html.HtmlComment,
        pi=lxml.html.HtmlProcessingInstruction,
        entity=lxml.html.HtmlEntity,
    )


def _title(tree: Any) -> str:
    node = tree.find(".//title")
    if node is not None:
        title = _collapse(node.text_content(), _MAX_TITLE)
        if title:
            return title
    for meta in tree.iter("meta"):
        kind = (meta.get("property") or meta.get("name") or "").lower()
        if kind in ("og:title", "twitter:title"):
            title = _collapse(meta.get("content") or "", _MAX_TITLE)
            if title:
                return title
    h1 = tree.find(".//h1")
    return _collapse(h1.text_content(), _MAX_TITLE) if h1 is not None else ""


# A meta refresh's content as HTML's declarative refresh reads it: a time (digits, then any
# digits and dots: "0", "5.5", ".5"), then perhaps ";" or "," and "url=", then the URL, in
# quotes or not. Group "time" is empty when the content starts otherwise (no refresh).
_REFRESH = re.compile(
    r"[\t\n\f\r ]*+(?P<time>(?P<seconds>\d*+)[\d.]*+)(?:[\t\n\f\r ]*+[;,]|[\t\n\f\r ])?+"
    r"[\t\n\f\r ]*+(?:url[\t\n\f\r ]*+=[\t\n\f\r ]*+)?+(?P<url>.*)",
    re.IGNORECASE | re.DOTALL,
)
#: A refresh's delay shown at most this long (a page may write any number of digits).
_MAX_REFRESH_SECONDS = 999_999_999


def _refresh_target(tree: Any, base: str, final_url: str) -> tuple[str, int] | None:
    """Where the page's first meta refresh (``<meta http-equiv="refresh" content="0;
    url=/next">``) sends a reader, and after how many seconds: the URL made absolute against
    the page's base, http(s) only, in ASCII form as links are; ``None`` when it has none, or
    one that only reloads the page itself. webward does not follow it (a hop of its own would
    need the gate's checks): the reading names it (see :func:`_refresh_note`)."""
    for meta in tree.iter("meta"):
        if (meta.get("http-equiv") or "").strip().lower() != "refresh":
            continue
        if next(meta.iterancestors("noscript"), None) is not None:
            continue  # where scripts do not run: a script shell's page for browsers without
        content = meta.get("content") or ""
        match = _REFRESH.match(content)
        after = content[match.end("time") : match.end("time") + 1] if match else ""
        if match is None or not match["time"] or (after and after not in " \t\n\f\r;,"):
            continue  # no refresh ("soon", "5x"): a browser tries the next one
        url = match["url"]
        if url[:1] in ("'", '"'):
            url = url[1:].split(url[0], 1)[0]
        target = _link_url(url, base) if url.strip() else None
        if (
            not target
            or len(target) > _MAX_LINK_URL
            or target.split("#", 1)[0] == final_url.split("#", 1)[0]
        ):
            return None  # no address to read (as a link's), or a reload of the page
        digits = match["seconds"].lstrip("0")
        seconds = int(digits) if 0 < len(digits) <= 9 else (0 if not digits else -1)
        return target, _MAX_REFRESH_SECONDS if seconds < 0 else seconds
    return None


def _refresh_note(url: str, seconds: int) -> str:
    """The note that starts the reading of a page that redirects by meta refresh."""
    after = f", after {seconds:,} seconds" if seconds else ""
    return (
        f"[this page redirects (meta refresh{after}) to <{url}>; webward does not follow a "
        "redirect a page makes itself: read that URL next]"
    )


def _base_url(tree: Any, final_url: str) -> str:
    for base in tree.iter("base"):
        href = (base.get("href") or "").strip()
        if href:
            resolved = _resolve(href, final_url)
            # A base longer than any URL webward fetches would lengthen every relative link.
            if resolved is None or len(resolved) > _MAX_LINK_URL:
                return final_url
            return resolved
    return final_url


# Plainly absolute http(s) URLs with a simple host (no user info, no IPv6 literal, no spaces):
# urljoin would give them back unchanged.
_ABSOLUTE = re.compile(r"https?://[^/?#\s\\@\[\]]+(?:[/?#][^\s\\]*)?", re.IGNORECASE)
_URL_NOISE = re.compile(r"[\t\n\r]")
_ROOT_RELATIVE = re.compile(r"/(?!/)[^\s\\]*")
# A relative reference urljoin only appends to a prefix of the base: leading "./" and "../"
# (group "up"), then a path without a scheme, parameters, empty or dot segments (checked
# apart), or a query alone, then maybe a fragment; no query or fragment empty (urljoin drops
# an empty one).
_PLAIN_RELATIVE = re.compile(
    r"(?P<up>(?:\.\.?/)*+)(?P<path>[^:/?#;.\s\\][^:/?#;\s\\]*+(?:/[^/?#;\s\\]++)*+/?"
    r"(?:\?[^#\s\\]++)?|\?[^#\s\\]++)(?:#[^\s\\]++)?"
)


@functools.lru_cache(maxsize=64)
def _origin(base: str) -> str:
    """``scheme://netloc`` of an http(s) base URL, or ``""``."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return ""
    return f"{parts.scheme}://{parts.netloc}"


@functools.lru_cache(maxsize=256)
def _prefix(base: str, lead: str, mark: str) -> str:
    """What urljoin puts before ``mark`` + the rest of a plain relative reference that begins
    with ``lead`` on an http(s) ``base`` (a directory for a path, the base's path for a query,
    the base without its fragment for a fragment); ``""`` if it cannot say."""
    if not _origin(base):
        return ""
    try:
        joined = urljoin(base, f"{lead}{mark}x")
    except ValueError:
        return ""
    return joined[: len(joined) - len(mark) - 1] if joined.endswith(f"{mark or '/'}x") else ""


def _resolve(href: str, base: str, slow: bool = True) -> str | None:
    """``href`` made absolute against ``base``, if it is an http(s) URL; else ``None``; ``""``
    when that takes urljoin and ``slow`` is false."""
    # Browsers ignore tabs and newlines inside URLs and trim spaces around them.
    href = _URL_NOISE.sub("", href).strip()
    if not href:
        return None
    if _ABSOLUTE.fullmatch(href):
        return href  # already absolute: most links on most pages, and urljoin is slow
    if _ROOT_RELATIVE.fullmatch(href) and "/." not in href:
        origin = _origin(base)  # "/path" with no dot segments: urljoin would only prepend this
        if origin:
            return origin + href
    # Relative paths, queries and fragments, the rest of most pages' links: a page of 50,000
    # of them spent 0.7 s in urljoin, which is asked once per base and prefix instead.
    if href[0] == "#":
        prefix = _prefix(base, "", "#") if len(href) > 1 else ""
        if prefix:
            return prefix + href
    elif (plain := _PLAIN_RELATIVE.fullmatch(href)) and "/." not in plain["path"]:
        up = plain["up"]
        rest = href[len(up) :]
        if len(up) <= 64:  # a prefix for each depth of "../": a handful per page
            prefix = _prefix(base, up, "?" if rest[0] == "?" else "")
            if prefix:
                return prefix + rest
    if not slow:
        return ""
    try:
        url = urljoin(base, href)
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            return None
    except ValueError:  # e.g. a malformed IPv6 literal
        return None
    return url


def _link_url(href: str, base: str, slow: bool = True) -> str | None:
    """A link's absolute URL as it is handed over: in ASCII form (``_urls.clean_url``), so a
    space, a bidi mark or marker-like text in it is percent-encoded rather than cut out when
    its line is neutralised, which would name another page; ``None`` for no usable URL;
    ``""`` when it takes urljoin or percent-encoding and ``slow`` is false."""
    url = _resolve(href, base, slow)
    if not url or urls.is_clean(url):
        return url
    return urls.clean_url(url, _MAX_LINK_URL) if slow else ""


class _LinkUrls:
    """One reading's links made absolute against ``base`` (:func:`_link_url`): each href
    once, at most :data:`_SLOW_LINKS` of them the slow way; past that, ``""`` for such a
    link (it keeps its text)."""

    def __init__(self, base: str) -> None:
        self._base = base
        self._made: dict[str, str | None] = {}  # pages repeat their links
        self._slow = _SLOW_LINKS

    def __call__(self, href: str) -> str | None:
        if href in self._made:
            return self._made[href]
        url = _link_url(href, self._base, slow=False)
        if url == "" and self._slow > 0:
            self._slow -= 1
            url = _link_url(href, self._base)
        self._made[href] = url
        return url


def _caption_paragraphs(figure: Any, *, every: bool) -> None:
    """The captions of ``figure`` as paragraphs: ``every`` one, or only those that number
    their figure ("Figure 3:", "Table 1.", "Abb. 2"), which the text refers to by number (a
    paper's, a report's). A numbered one also loses its ``class`` and ``id``: trafilatura drops
    every block whose class or id holds "caption" when it reads no images (LaTeXML's
    ``ltx_caption``), so a paper's captions went. A news photo's caption ("A cargo ship
    leaves PortMiami") is left to that rule: the development sets' articles leave them out
    (keeping them cost five pages precision, three of them held out)."""
    for caption in figure.iter("figcaption"):
        if _NUMBERED_CAPTION.match(_leading_text(caption, 100)) is not None:
            caption.tag = "p"
            caption.attrib.pop("class", None)
            caption.attrib.pop("id", None)
        elif every:
            caption.tag = "p"
            caption.set(_CAPTION_MARK, "")  # (see _drop_orphan_credits)


def _walk(tree: Any, *tags: str) -> Any:
    """``(event, element)`` for each element of ``tree`` (itself included) with one of
    ``tags``, or every one, in document order: ``tree.iter(*tags)`` in steps that do not grow
    with depth. lxml's iter() takes longer for each element it hands out the deeper that lies
    (0.24 s for 50,000 elements 1,000 deep, against 0.02 s here), and a hostile page nests as
    deep as the parser lets it; on an ordinary page this costs about 0.15 ms more."""
    import lxml.etree

    return lxml.etree.iterwalk(tree, events=("start",), tag=tags or lxml.etree.Element)


def _drop_all(elements: Any) -> None:
    """Drop ``elements`` (but a root) with all they hold, keeping each one's tail text where
    it was, as lxml's ``drop_tree`` does one by one, but in time linear in the page: one by one, each
    drop appends its tail to the text before it, which it reads and writes whole (25,000
    hidden ``<span>``s, each followed by a few words, in one paragraph took 36 s)."""
    _structure.replace_by_texts(dict.fromkeys(elements, ""))


def _strip_all(tree: Any, *tags: str) -> None:
    """Drop the elements of ``tree`` with one of ``tags`` with all they hold, keeping their
    tails: libxml2 strips them in one pass, then the texts of their parents are joined.

    A stripped element's tail stays behind as a text node of its own, beside the text before
    it: a paragraph left holding 45,000 such adjacent text nodes (``<img>`` and a word, 45,000
    times) made each XPath ``text()`` query over it take seconds (libxml2 merges node sets in
    time quadratic in them), and trafilatura makes such queries (one page took 6.4 s)."""
    import lxml.etree

    holders = dict.fromkeys(el.getparent() for _, el in _walk(tree, *tags))
    holders.pop(None, None)
    lxml.etree.strip_elements(tree, *tags, with_tail=False)
    _join_texts(holders)


def _join_texts(elements: Any) -> None:
    """Make the text of each of ``elements``, and the tail of each of their children, one text
    node again (lxml reads adjacent text nodes as one text, and writes a text as one node)."""
    for element in elements:
        if element.text:
            element.text = element.text
        for child in element:
            if child.tail:
                child.tail = child.tail


# Roles that mark page furniture, not content (WAI-ARIA landmark and live-region roles).
_FURNITURE_ROLES = {
    "navigation",
    "banner",
    "contentinfo",
    "complementary",
    "search",
    "dialog",
    "alertdialog",
    "menu",
    "menubar",
    "toolbar",
}


_CHECKED_ATTRIBUTES = frozenset(
    ("colspan", "rowspan", "hidden", "popover", "aria-hidden", "role", "style", "class", "id")
)


# Inline elements that hold no words when empty: an icon (<i class="fa ...">), a badge, an
# image's wrapper. trafilatura's precision mode removes such an element with its tail, so
# "Before you start, <i></i> make sure the breaker is OFF" read "Before you start,". A link
# around an image without alt text (a lightbox's, a forum post's avatar) too: it read "[](…)",
# and its links counted against the text around it in trafilatura's link density.
_EMPTY_INLINE = (
    "a", "i", "span", "em", "b", "strong", "small", "font", "u", "s", "mark", "abbr", "sup", "sub",
    "cite", "q", "kbd", "var", "samp",
)  # fmt: skip
_NO_WORDS = frozenset(("img", "br", "wbr"))
_CODE_TAGS = ("pre", "code")


def _quote_inline(tree: Any) -> None:
    """An inline quotation (``<q>``) in the quotation marks a browser shows around it
    (double curly ones, single ones inside another): trafilatura read one as a block, its
    marks gone and a paragraph break after it ("inline quote\n\n, old price")."""
    import lxml.etree

    depth = 0
    quotes = []
    for event, q in lxml.etree.iterwalk(tree, events=("start", "end"), tag="q"):
        if event == "end":
            depth -= 1
            continue
        opening, closing = ("\u2018", "\u2019") if depth else ("\u201c", "\u201d")
        depth += 1
        quotes.append(q)
        if _marked_by_page(q):
            continue
        q.text = opening + (q.text or "")
        if len(q):
            q[-1].tail = (q[-1].tail or "") + closing
        else:
            q.text += closing
    for q in quotes:
        q.tag = "span"


# Quotation marks a page writes around a <q> itself: opening ones, and those that close them.
_OPENING_MARKS = "\u00ab\u201c\u201e\"\u2018\u201a\u2039\u300c\u300e'"
_CLOSING_MARKS = "\u00bb\u201d\u201c\"\u2019\u2018\u203a\u300d\u300f'"


def _marked_by_page(q: Any) -> bool:
    """Whether the page writes quotation marks around ``q`` itself, right before and after it
    (an Arabic or French page's «<q>…</q>», whose stylesheet gives ``q`` no marks of its
    own): another pair, "«“…”»", quoted it twice."""
    before = q.getprevious()
    text = (before.tail if before is not None else q.getparent().text) or ""
    last, first = text.rstrip()[-1:], (q.tail or "").lstrip()[:1]
    return bool(last and first) and last in _OPENING_MARKS and first in _CLOSING_MARKS


def _drop_empty_inline(tree: Any) -> None:
    """Drop the inline elements without words (nothing but images or line breaks inside),
    keeping the text after them and a space for any they held ("a<span> </span>b" is two
    words); innermost first, so a wrapper emptied by it goes too (its children to be dropped
    count as gone: their tails are words of it, they are none).

    Nothing inside code (``<pre>``, ``<code>``) goes: there whitespace is content, and a
    highlighter wraps it in spans of its own (Pygments' ``<span class="w">  </span>``, whose
    loss took YAML's indentation and made "def f0" "deff0"), and a span holding a line break
    alone is a blank line (Prism's)."""
    import lxml.etree

    outside: list[Any] = []  # the inline elements outside code, in document order
    in_code = 0
    for event, element in lxml.etree.iterwalk(
        tree, events=("start", "end"), tag=(*_EMPTY_INLINE, *_CODE_TAGS)
    ):
        if element.tag in _CODE_TAGS:
            in_code += 1 if event == "start" else -1
        elif event == "start" and not in_code and not (element.text or "").strip():
            outside.append(element)  # (one with words of its own stays: not looked at again)
    doomed: dict[Any, str] = {}  # each element to drop, and what it leaves: a space or nothing
    for element in reversed(outside):
        if element.tag == "a" and not _in_paragraph(element):
            continue  # left to the Markdown (_EMPTY_LINK): see there
        if (element.text or "").strip() or any(
            (child.tail or "").strip() or (child.tag not in _NO_WORDS and child not in doomed)
            for child in element
        ):
            continue
        label = element.get("aria-label") or element.get("title") if element.tag == "a" else None
        if label and label.strip():
            # An icon's link that says what it is ("Download the report (PDF)"): it says so,
            # as a link of words (left empty, trafilatura dropped its paragraph).
            element.text = _collapse(label, _MAX_LINK_TEXT)
            continue
        spaced = element.text or any(child.tail or doomed.get(child) for child in element)
        doomed[element] = " " if spaced else ""
    _structure.replace_by_texts(doomed)  # in one pass (see _drop_all)


def _in_paragraph(element: Any) -> bool:
    """Whether ``element`` stands in a paragraph's line (a ``<p>`` around it, through inline
    elements only, a few levels up at most: a walk per link stays short). A link that shows
    nothing there (a lightbox's, around a photo without alt text) made trafilatura drop the
    paragraph whole; one standing alone (a forum post's avatar) is left in the page, as
    dropping it changed which block trafilatura took for the article. A table cell's line
    counts too: there trafilatura gave a link showing nothing the words after it for its
    own (Wikipedia's infobox, a portrait without alt text over its caption, read
    "[Portrait by Alfred Edward Chalon, 1840](…/File:Ada.jpg)", the caption made a link to
    the image's page)."""
    # Parent by parent: an iterator of ancestors cost more to make than the step or two most
    # links take (30,000 links in a term: 0.05 s).
    above = element.getparent()
    for _ in range(8):
        if above is None:
            return False
        tag = above.tag
        if tag in ("p", "td", "th"):
            return True
        if tag not in _EMPTY_INLINE:
            return False
        above = above.getparent()
    return False


_MAX_LABEL_ELEMENTS = 500  # the elements of an SVG read for those its aria-labelledby names
_MAX_LABELS = 16  # the ids of its aria-labelledby read


def _graphics_as_images(tree: Any) -> None:
    """An inline SVG that is an image (``role="img"``) has a text alternative, as an
    ``<img>`` has its alt: its ``aria-label``, else the text of the elements inside it that
    its ``aria-labelledby`` names, else its ``<title>``. Such an SVG becomes an ``<img>`` with
    that alt, read as any image's alt text is (see :func:`_keep_inline_alts`): "Build <svg
    role="img" aria-label="passing">" reads "Build passing". An SVG hidden from assistive
    technology, or without the role (an icon), stays unread, and so do the words drawn in a
    graphic (a chart's ``<text>`` tick labels)."""
    import lxml.etree

    for svg in list(tree.iter("svg")):
        roles = (svg.get("role") or "").lower().split()
        if not roles or roles[0] != "img" or _hiding(svg.attrib) == _GONE:
            continue
        name = svg.get("aria-label") or ""
        if not name.strip() and svg.get("aria-labelledby"):
            # A few distinct ids, each label's first words: an id named 100,000 times read
            # its element's text as often (93 s, 16 GB), for an alt that longer than
            # _MAX_ALT_CHARS is dropped anyway.
            named = list(dict.fromkeys((svg.get("aria-labelledby") or "")[:2000].split()))
            named = named[:_MAX_LABELS]
            wanted = set(named)
            # (its first elements only: an SVG nested in another would read it all again)
            labels = {
                el.get("id"): el
                for el in itertools.islice(svg.iter(), _MAX_LABEL_ELEMENTS)
                if el.get("id") in wanted
            }
            name = " ".join(
                labels[i].text_content()[: _MAX_ALT_CHARS + 1] for i in named if i in labels
            )
        if not name.strip():
            title = svg.find("title")
            name = title.text_content() if title is not None else ""
        image = lxml.etree.Element("img", alt=_CONTROL.sub("", name))
        image.tail = svg.tail
        svg.getparent().replace(svg, image)


def _keep_inline_alts(tree: Any) -> None:
    """An image in a sentence ("Press the <img alt='Settings'> icon") or alone in a link
    says what its alt text says: the words stay where the image was (images themselves are
    dropped with the other media). Images beside no words (a photo, a logo) stay out."""
    # Whether each link holds no words, read once, before any alt text is written into it:
    # read again for each image, the first alt made the others not alone (only the first
    # was kept), and the growing text was read again for each (49,000 images took 27 s).
    wordless: dict[Any, bool] = {}
    for image in tree.iter("img"):
        alt = _collapse(image.get("alt") or "", _MAX_ALT_CHARS + 1)
        parent = image.getparent()
        if not alt or len(alt) > _MAX_ALT_CHARS or parent is None:
            continue
        in_sentence = bool((image.tail or "").strip()) or bool(
            (parent.text or "").strip() and image.getprevious() is None
        )
        if parent.tag == "a" and parent not in wordless:
            wordless[parent] = not parent.text_content().strip()
        alone_in_link = wordless.get(parent, False)
        if in_sentence or alone_in_link:
            if alone_in_link and image.getprevious() is not None:
                alt = f" {alt}"  # after another image's alt text: "Step one Step two"
            image.tail = f"{alt}{image.tail or ''}" if image.tail else alt
            # The image goes with _DROP_TAGS, its tail (now with the alt text) stays.


# A sidenote or margin note written in the sentence it annotates (tufte-css and the themes
# built on it: Jekyll's, Hugo's, Pandoc's; <span class="sidenote">), which a wide screen
# shows in the margin; and the toggle that opens it on a narrow one (a ⊕ label).
_SIDE_NOTE = re.compile(r"(?:^|\s)(?:side|margin)-?note(?:\s|$)", re.IGNORECASE)
_NOTE_TOGGLE = re.compile(r"(?:^|\s)margin-toggle(?:\s|$)")
#: What follows a note with no space before it: "later books (Beautiful Evidence), Tufte".
_CLOSING = frozenset(",.;:!?)]}\u2026\u2019\u201d\u00bb")


def _inline_notes(tree: Any) -> None:
    """A sidenote or margin note in a sentence reads in parentheses where it stands: it was
    run into the sentence around it ("that is fine.The AWS Architecture Blog's post …"), a
    remark read as the text's own words. One standing alone in a figure is its caption. The
    toggle's ⊕ is no word."""
    for toggle in tree.iter("label"):
        if _NOTE_TOGGLE.search((toggle.get("class") or "")[:_MAX_CHECKED_CHARS]):
            toggle.text = None
    for note in tree.iter("span", "small"):
        if not _SIDE_NOTE.search((note.get("class") or "")[:_MAX_CHECKED_CHARS]):
            continue
        parent = note.getparent()
        if parent is not None and parent.tag == "figure":
            note.tag = "figcaption"
        elif (line := _in_sentence(note)) is not None and _beside_words(note, line):
            note.text = f" ({(note.text or '').lstrip()}"
            last = note[-1] if len(note) else None
            if last is None:
                note.text = f"{note.text.rstrip()})"
            else:
                last.tail = f"{(last.tail or '').rstrip()})"
            if note.tail and not note.tail[:1].isspace() and note.tail[0] not in _CLOSING:
                note.tail = f" {note.tail}"  # a word run on; a comma stays at the note


def _in_sentence(element: Any) -> Any:
    """The paragraph or list item (or ``dd``, ``td``) in whose line ``element`` stands,
    through inline elements (a few levels up at most), or ``None``."""
    for above in itertools.islice(element.iterancestors(), 8):
        if above.tag in ("p", "li", "dd", "td"):
            return above
        if above.tag not in _LINE_INLINE:
            return None
    return None


def _beside_words(note: Any, line: Any) -> bool:
    """Whether a note has words of its own and words beside it in its line: a paragraph or a
    list item that is the note alone (a page's "side-note" callout) reads as it is, with no
    parentheses around the whole of it."""
    own = note.text_content().strip()
    if not own:
        return False
    limit = len(own) + 64
    whole = _leading_text(line, limit)
    return len(whole) >= limit or whole.strip() != own


def _infobox_terms(box: Any) -> None:
    """Each item of a portable infobox (``<div class="pi-data">`` of a ``pi-data-label``
    heading and a ``pi-data-value``) made a paragraph, "**Born**: 1211": the value, words
    straight in a nested ``<div>``, went in trafilatura's precision mode, the labels left
    over it as headings ("Born", and no year). (As terms and definitions, an item whose
    value is a link took the list with it.)"""
    for item in box.iter("div"):
        if "pi-data" not in (item.get("class") or "").split() or len(item) != 2:
            continue
        label, value = item
        if "pi-data-label" in (label.get("class") or "") and "pi-data-value" in (
            value.get("class") or ""
        ):
            item.tag, label.tag, value.tag = "p", "strong", "span"
            label.tail = ": "


def _quote_attributions(tree: Any) -> None:
    """A quote's attribution read as its last line: a ``<footer>`` in the ``<blockquote>``
    (HTML's own form, Bootstrap's ``blockquote-footer``) or the ``<figcaption>`` of a
    ``<figure>`` around it, both dropped with the page's footers and captions ("> Latency is
    the mind-killer", whose words they were lost)."""
    figures = {}  # each figure's last quote: its caption goes there, read once per figure
    for quote in list(tree.iter("blockquote")):
        _attribute(quote, [child for child in quote if child.tag == "footer"])
        _lead_in(quote)
        figure = quote.getparent()
        if figure is not None and figure.tag == "figure":
            figures[figure] = quote
    for figure, quote in figures.items():
        _attribute(quote, [child for child in figure if child.tag == "figcaption"])


def _lead_in(quote: Any) -> None:
    """The line naming who is quoted, right before ``quote`` and ending in a colon, read as
    the quote's first line: Discourse writes a reply's quote as ``<aside class="quote"><div
    class="title"><img> alice:</div><blockquote>``, and the title went (a div of a class
    trafilatura drops, and of no paragraph), so the quote read as no one's words. A
    ``<div>`` first in the quote's parent, of at most :data:`_MAX_LEAD_IN_CHARS` characters,
    nothing but space between it and the quote. Its words are read, its avatar and
    controls not."""
    lead = quote.getprevious()
    if lead is None or lead.tag != "div" or lead.getprevious() is not None:
        return
    if (lead.tail or "").strip() or (lead.getparent().text or "").strip():
        return
    words = lead.text_content().strip()
    if not words.endswith(":") or len(words) > _MAX_LEAD_IN_CHARS:
        return
    line = lead.makeelement("p", {})  # its words alone (an empty controls' div in it
    line.text = " ".join(words.split())  # made trafilatura drop the line)
    line.tail, quote.text = quote.text, None
    lead.getparent().remove(lead)
    quote.insert(0, line)


_MAX_LEAD_IN_CHARS = 80


def _attribute(quote: Any, attributions: list[Any]) -> None:
    """``attributions`` made paragraphs at the end of ``quote`` (a figcaption moves in)."""
    for attribution in attributions:
        attribution.tag = "p"
        attribution.attrib.clear()  # ("blockquote-footer": a footer's class)
        quote.append(attribution)


def _clean(tree: Any, rules: StyleRules | None = None) -> None:
    """Drop what is never the reading (and what the page's ``rules`` hide), and bound what
    would make the reading grow (see :data:`_LINK_URL_BUDGET`)."""
    boxes = []
    for aside in tree.iter("aside"):
        kind = aside.get("class")
        if _matches(_INFOBOX, ("infobox",), kind):
            # The facts of the text's subject (Fandom's portable infobox: born, profession,
            # aliases), not the page's sidebar.
            boxes.append(aside)
        elif _matches(_NOTE_CLASS, _NOTE_WORDS, kind):
            aside.tag = "div"  # a note or footnote of the text, not the page's sidebar
        elif "quote" in (kind or "").split() and aside.find(".//blockquote") is not None:
            # A post's quote of the one it answers (Discourse's <aside class="quote"> of the
            # quoted author's name and a <blockquote>): the reply's own words, which went
            # with the sidebars. (Not a "pull-quote", the article's words shown twice.)
            aside.tag = "div"
    every_box = set(boxes)
    for box in boxes:
        # Its items read once, from the outermost box (each box in a box read them all
        # again: 250 nested took 3.6 s).
        if not any(up in every_box for up in box.iterancestors("aside")):
            _infobox_terms(box)
    for box in boxes:
        box.tag = "section"  # (a div of a few items, one a link, trafilatura drops)
    _quote_attributions(tree)
    _graphics_as_images(tree)
    _keep_inline_alts(tree)
    _inline_notes(tree)
    _open_shadow_roots(tree)
    _open_dialogs(tree)
    _drop_permalinks(tree)
    _drop_backlinks(tree)
    hides = rules.asker() if rules is not None else None
    _mark_task_boxes(tree, hides)  # before the form controls go
    # <xmp> and <listing>: obsolete spellings of <pre>, shown as preformatted text (an
    # <xmp>'s markup as it is written): read as code, not escaped into prose ("&lt;b&gt;").
    for old in tree.iter("xmp", "listing"):
        old.tag = "pre"
    for button in tree.iter("button"):
        if (button.get("role") or "").strip().lower() == "tab":
            button.tag = "span"  # a tab's label (Bootstrap's, Radix's), read over its panel
        elif next(button.iterancestors("td", "th"), None) is not None:
            # A table cell's value: MDN's compatibility table writes each browser's version
            # in a button (which opens its notes), and its cells read empty.
            button.tag = "span"
    for area in tree.iter("textarea"):
        # A read-only text area of lines is a file shown whole: GitHub's file view writes
        # the source in <textarea id="read-only-cursor-text-area"> (its lines shown beside
        # it are hidden from readers, or numbered cells): read as code. An editable one is
        # a form's input, and goes with the other controls.
        readonly = (area.get("aria-readonly") or "").strip().lower() == "true"
        if (readonly or area.get("readonly") is not None) and "\n" in (area.text or "").strip():
            area.tag = "pre"
    _strip_all(tree, *_DROP_TAGS)
    _fragments_as_pre(tree)
    _code_lines(tree)  # before the empty spans go, and any reading of a block's text
    _drop_empty_inline(tree)
    _quote_inline(tree)
    doomed = []
    for element in tree.iter("header", "form"):
        # A masthead (logo, menus, search) or a search / sign-up form; a header holding the
        # article's title and a form wrapping the whole page (ASP.NET) hold paragraphs or h1.
        if element.find(".//h1") is None and element.find(".//p") is None:
            parent = element.getparent()
            within = parent is not None and parent.tag in ("section", "article")
            headed = any(True for _ in element.iter("h2", "h3", "h4", "h5", "h6"))
            if element.tag == "header" and within and headed:
                element.tag = "div"  # a section's own heading (<section><header><h2>)
            else:
                doomed.append(element)
        elif (
            element.tag == "header"
            and len(element) == 1
            and element[0].tag == "h1"
            and not (element.text or "").strip()
            and not (element[0].tail or "").strip()
        ):
            # The article's title alone in a header (Docusaurus: <header><h1> in the text's
            # container): trafilatura drops every <header>, its title with it. (One holding
            # more, a byline, a date, a kicker, is left to it: those are not the article's.)
            element.tag = "div"
    # Innermost first, so that a figure inside another is judged by its own caption (the
    # outer one's renaming took it, and the inner figure went, its caption with it), and a
    # figure holding a kept one is kept around it.
    holding: set[Any] = set()
    for figure in reversed(list(tree.iter("figure"))):
        if any(True for _ in figure.iter(*_FIGURE_CONTENT)):
            figure.tag = "div"  # trafilatura would drop a figure whole, code listing and all
            _caption_paragraphs(figure, every=False)
        elif any(caption.text_content().strip() for caption in figure.iter("figcaption")):
            # An image's caption is the page's words about it (a chart's finding, say): its
            # paragraphs stay, the image goes.
            _caption_paragraphs(figure, every=True)
            figure.tag = "div"
        elif figure in holding:
            figure.tag = "div"
        else:
            doomed.append(figure)
            continue
        outer = next(figure.iterancestors("figure"), None)
        if outer is not None:
            holding.add(outer)
    spanned = []
    tab_lists: list[Any] = []
    tab_sets: list[Any] = []  # MkDocs Material's, each label beside its panel (see below)
    panels: dict[str, Any] = {}  # tab panels by id, for the tabs that name theirs
    unchosen: list[Any] = []  # tab panels hidden: read only as some list of tabs' panels
    veiled: list[Any] = []
    restyled: list[Any] = []  # kept, with a display or visibility in their style
    # One pass in Python over attributes: measured 10x faster than the equivalent XPath with
    # translate() for case folding.
    for _, el in _walk(tree):
        names = el.keys()
        if not names or _CHECKED_ATTRIBUTES.isdisjoint(names):
            continue  # most elements (a link's href, say) carry none these checks read
        # A copy read below a dozen times, each read of lxml's attributes a call into it;
        # the two it may delete are deleted from the element.
        attrs = dict(el.items())
        if "colspan" in attrs or "rowspan" in attrs:
            spanned.append(el)
        if attrs.get("role") == "tablist" or "tabbed-labels" in attrs.get("class", ""):
            tab_lists.append(el)
        elif "tabbed-set" in attrs.get("class", ""):
            tab_sets.append(el)
        elif attrs.get("role") == "tabpanel" and "id" in attrs:
            panels.setdefault(attrs["id"], el)
        if el.tag in ("html", "body"):
            continue
        hiding = _hiding(attrs)
        if hiding == _GONE and _hidden_panel(attrs):
            # A tab not chosen, one click away (Docusaurus, Starlight, MS Learn, Radix and
            # Headless UI render them hidden): read if a shown list of tabs opens it (below).
            shown = _hiding({k: v for k, v in attrs.items() if k not in _PANEL_HIDERS})
            if shown != _GONE:
                hiding = shown
                unchosen.append(el)
        if hiding != _GONE:
            # Shown ("until-found", which a reader's search finds, a display of its own, a tab
            # panel), but html-to-markdown drops any element with the attribute as hidden, and
            # trafilatura any aria-hidden one.
            if "hidden" in attrs:
                del el.attrib["hidden"]
            if "aria-hidden" in attrs:
                del el.attrib["aria-hidden"]
        if (
            hiding == _GONE
            or (hides is not None and hides(el.tag, attrs))
            or (attrs.get("role") or "").lower() in _FURNITURE_ROLES
            or _matches(_BANNER, _BANNER_WORDS, attrs.get("class"))
            or _matches(_BANNER, _BANNER_WORDS, attrs.get("id"))
        ):
            doomed.append(el)
        elif hiding == _VEILED:
            veiled.append(el)
        elif "style" in attrs and _SHOWING_DECLARATION.search(attrs["style"]):
            restyled.append(el)
    # A wrapper the hidden elements leave without words (Wikipedia's around each formula: its
    # MathML hidden by display:none, its image by aria-hidden) went with the rest of its
    # sentence too: once more, where one of them sat in an inline element.
    emptied = any(
        parent is not None and parent.tag in _EMPTY_INLINE
        for parent in (el.getparent() for el in doomed)
    )
    labelled: set[Any] = set()
    doomed += _tabs_into_panels(tab_lists, panels, labelled, set(doomed))
    doomed += _labels_into_panels(tab_sets, set(doomed))
    # A hidden "panel" no tab opens is hidden text like any other (a page's way to hand the
    # model words no reader sees): it goes.
    doomed += [panel for panel in unchosen if panel not in labelled]
    _drop_all(doomed)
    if emptied:
        _drop_empty_inline(tree)
    _unveil(veiled, restyled)
    _lift_headings(tree)
    _pre_as_code(tree)
    _show_inline_words(tree)
    for el in restyled:
        # html-to-markdown reads styles for hiding too, by other rules ("display:&nbsp;none",
        # a hidden parent of a child shown again): what is kept here, it keeps. (An element
        # kept for a child shown again may have no style of its own: hidden by its parent's.)
        style = el.get("style")
        if style:  # (lxml refuses control characters, which a character reference may write)
            if el.tag == "span" and _BLOCK_DISPLAY.search(style) is not None:
                _block_span(el)
            el.set("style", _CONTROL.sub("", _SHOWING_DECLARATION.sub("", style)))
    _bound_nesting(tree)
    _bound_spans(spanned)


_MAX_TAB_PANEL_SIBLINGS = 3  # where a list of tabs' panels are looked for: its next siblings
_MAX_TABS = 50  # and their children, up to this many
_MAX_TAB_LIST_ELEMENTS = 500  # the elements of a list of tabs read for its tabs
# The lists (and sets) of tabs opened, the page's first: a long documentation page holds a few
# dozen; a page of 7,000 spent 0.12 s of its 0.5 s on them. Past it, tabs read where they
# stand and a hidden panel goes as hidden text.
_MAX_TAB_LISTS = 200


def _tabs_into_panels(
    tab_lists: list[Any], by_id: dict[str, Any], labelled: set[Any], gone: set[Any]
) -> list[Any]:
    """Each tab's label made a paragraph opening its panel, for each list of tabs (ARIA's
    ``role="tablist"`` of ``role="tab"``s, Docusaurus's; MkDocs Material's ``tabbed-labels``
    of ``<label>``s) whose panels (``role="tabpanel"``; ``tabbed-block``) follow it, as many
    as its tabs: the tab lists, to drop. Read where they were, the labels ran together over
    the panels ("LinuxWindows", or a list "- npm - Yarn"), each panel unnamed. ARIA tabs that
    each name a panel of ``by_id`` (``aria-controls``: MS Learn's, Radix's) open those;
    others, the panels found in order: among the children of a list's next few siblings, a
    bounded number, so linear in the page. ``labelled`` gains the panels opened. A list of
    tabs that is itself hidden, or holds a hidden tab (in ``gone`` or inside it), opens none:
    its panels are hidden text like any other."""
    import lxml.etree

    hidden = _Inside(gone)
    done = []
    for tab_list in tab_lists[:_MAX_TAB_LISTS]:
        aria = tab_list.get("role") == "tablist"
        tabs = [
            tab
            for tab in itertools.islice(tab_list.iter(), _MAX_TAB_LIST_ELEMENTS)
            if (tab.get("role") == "tab" if aria else tab.tag == "label")
        ]
        if hidden(tab_list) or any(hidden(tab) for tab in tabs):
            continue
        named = [by_id.get(tab.get("aria-controls") or "") for tab in tabs] if aria else []
        # (each tab names a panel of its own, or the panels are looked for)
        unique = None not in named and len({id(panel) for panel in named}) == len(named)
        panels: list[Any] = named if unique else []
        for sibling in itertools.islice(
            tab_list.itersiblings(), 0 if panels else _MAX_TAB_PANEL_SIBLINGS
        ):
            for panel in itertools.islice(itertools.chain((sibling,), sibling), _MAX_TABS + 1):
                if not isinstance(panel.tag, str):
                    continue  # a comment
                if panel.get("role") == "tabpanel" if aria else _is_tab_block(panel):
                    panels.append(panel)
        if not tabs or len(tabs) > _MAX_TABS or len(tabs) != len(panels):
            continue
        if not labelled.isdisjoint(panels):
            continue  # named by another list of tabs already (a copy for small screens)
        labelled.update(panels)
        for tab, panel in zip(tabs, panels, strict=True):
            label = lxml.etree.Element("p")
            label.text = _collapse(tab.text_content(), _MAX_LINK_TEXT)
            label.tail, panel.text = panel.text, None
            panel.insert(0, label)
        done.append(tab_list)
    return done


def _labels_into_panels(tab_sets: list[Any], gone: set[Any]) -> list[Any]:
    """Each label of a set of tabs written label then panel (MkDocs Material's and
    pymdownx.tabbed's first style: ``<div class="tabbed-set">`` of ``<input>``, ``<label>``,
    ``<div class="tabbed-content">`` for each tab) made a paragraph opening its panel, as
    :func:`_tabs_into_panels` does for a list of tabs: the extractors dropped the label, a
    div's own text beside blocks, and each panel read unnamed (the "Latest" and "9.x"
    install commands one after the other). The labels, to drop. A set that is hidden, or
    holds more than :data:`_MAX_TABS` children, is left as it is."""
    import lxml.etree

    hidden = _Inside(gone)
    done = []
    for tab_set in tab_sets[:_MAX_TAB_LISTS]:
        children = list(itertools.islice(tab_set, 3 * _MAX_TABS + 1))
        if len(children) > 3 * _MAX_TABS or hidden(tab_set):
            continue
        for label, panel in itertools.pairwise(children):
            if (
                label.tag != "label"
                or label in gone
                or "tabbed-content" not in (panel.get("class") or "").split()
            ):
                continue
            opening = lxml.etree.Element("p")
            opening.text = _collapse(label.text_content(), _MAX_LINK_TEXT)
            opening.tail, panel.text = panel.text, None
            panel.insert(0, opening)
            done.append(label)
    return done


class _Inside:
    """Whether an element is one of ``elements`` or inside one: each element's answer kept,
    so that asking of many elements walks each ancestor once."""

    def __init__(self, elements: set[Any]) -> None:
        self._elements = elements
        self._known: dict[Any, bool] = {}

    def __call__(self, element: Any) -> bool:
        path = []
        answer = False
        while element is not None:
            if element in self._known:
                answer = self._known[element]
                break
            if element in self._elements:
                answer = True
                break
            path.append(element)
            element = element.getparent()
        for step in path:
            self._known[step] = answer
        return answer


_PANEL_HIDERS = frozenset(("hidden", "aria-hidden"))


def _hidden_panel(attrs: Any) -> bool:
    """Whether the attributes are a tab panel's, hidden (see :func:`_hiding`)."""
    return (attrs.get("role") or "").strip().lower() == "tabpanel" and (
        "hidden" in attrs or (attrs.get("aria-hidden") or "").strip().lower() == "true"
    )


def _is_tab_block(element: Any) -> bool:
    return "tabbed-block" in (element.get("class") or "").split()


# How an element's attributes hide it (see _hiding): not at all, wholly, or by visibility alone.
_SHOWN, _GONE, _VEILED = 0, 1, 2
_HIDING_ATTRIBUTES = frozenset(("aria-hidden", "hidden", "popover", "style"))  # (what it reads)


def _hiding(attrs: Any) -> int:
    """How an element's attributes hide it from a reader: ``hidden`` (but
    ``until-found``, which a reader's search shows), ``popover`` (shown only when a script or
    a button opens it), ``aria-hidden``, or an inline style of ``display: none`` or
    ``visibility: hidden`` (read as a browser reads declarations: see
    :func:`~webward._stylesheet.style_declares`): :data:`_GONE`, or :data:`_VEILED` for
    visibility alone, which a descendant may undo (see :func:`_unveil`). What the page's own
    ``<style>`` elements hide is asked of :class:`~webward._stylesheet.StyleRules` beside
    this; an external stylesheet is not read (it would take another request): text it hides
    reaches the reading, inside the envelope as all page text is. ``hidden`` and ``popover``
    hide by the browser's own sheet, which the element's style overrides: with a ``display``
    of its own other than ``none`` it is shown."""
    if not _HIDING_ATTRIBUTES.intersection(attrs):
        return _SHOWN  # (most elements asked: a class or an id alone)
    if (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return _GONE
    hidden = attrs.get("hidden")
    by_attribute = (hidden is not None and hidden.lower() != "until-found") or "popover" in attrs
    display, visibility = _own_style(attrs.get("style"), by_attribute)
    if display == "none" or (by_attribute and display is None):
        return _GONE
    return _VEILED if visibility in ("hidden", "collapse") else _SHOWN


def _own_style(style: str | None, by_display: bool) -> tuple[str | None, str | None]:
    """The ``display`` and ``visibility`` an element's own ``style`` declares (see
    :func:`~webward._stylesheet.style_declares`), read only when it holds a word that could
    hide (or, ``by_display``, declare any display), an escape or a comment that may spell one."""
    if not style:
        return None, None
    if "\\" not in style and "/*" not in style:
        lowered = style.lower()
        words = (*_HIDDEN_WORDS, "display") if by_display else _HIDDEN_WORDS
        if not any(word in lowered for word in words):
            return None, None
    return style_declares(style)


def _own_visibility(style: str | None) -> bool | None:
    """Whether an element's own ``style`` hides it by visibility (``True``), shows it
    (``False``: ``visible``, or ``initial``), or leaves it as its parent is (``None``)."""
    if not style or ("visib" not in style.lower() and "\\" not in style):
        return None
    visibility = style_declares(style)[1]
    if visibility in ("hidden", "collapse"):
        return True
    return False if visibility in ("visible", "initial") else None


def _unveil(veiled: list[Any], kept: list[Any]) -> None:
    """Each element hidden by visibility alone, dropped with what it holds, unless an element
    inside shows itself again by its own style (``visibility: visible``), as a browser shows
    it: then only the text that is hidden goes (the element's own, and that of the elements
    inside that inherit its visibility), and the element is added to ``kept``. One walk over
    each outermost such element: linear."""
    import lxml.etree

    if not veiled:
        return
    pending = set(veiled)
    gone: list[Any] = []
    for top in veiled:
        if top not in pending:
            continue  # inside one walked already
        stack: list[list[bool]] = []  # for each open element: hidden, shows something inside
        for event, el in lxml.etree.iterwalk(top, events=("start", "end"), tag=lxml.etree.Element):
            if event == "start":
                pending.discard(el)
                own = True if el is top else _own_visibility(el.get("style"))
                stack.append([stack[-1][0] if own is None else own, False])
                continue
            hidden, shows = stack.pop()
            if stack and (shows or not hidden):
                stack[-1][1] = True
            if not hidden:
                continue
            if shows:
                el.text = None
                for child in el:
                    child.tail = None
                kept.append(el)
            else:
                gone.append(el)
    _drop_all(gone)


def _open_shadow_roots(tree: Any) -> None:
    """A declarative shadow root (``<template shadowrootmode="open">``) is shown, unlike any
    other template: it is read as a block."""
    # iter(), not _walk: it hands out templates alone, which few pages hold (a walk over a page
    # of 100,000 paragraphs took 20 ms, iter() 0.02).
    roots = [template for template in tree.iter("template") if _shadow_root(template.attrib)]
    for template in roots:
        template.tag = "div"


# React's streaming render (renderToPipeableStream; Next.js's Suspense and loading.tsx) sends
# a late part of the page as <div hidden id="S:0">, and an inline script's $RC("B:0","S:0")
# (a boundary's content) or $RS("S:1","P:1") (a segment) moves it to <template id="B:0">
# (and "P:1").
_STREAMED_CALL = re.compile(r'\$R[CS]\(\s*"([BPS]:[\w-]{1,40})"\s*,\s*"([BPS]:[\w-]{1,40})"')
_MAX_STREAMED = 1000  # parts moved into place, at most
# React's runtime, which its first streamed script defines ($RC=function(b,c){...}): a call
# with no such definition is a ReferenceError in a browser, and the part stays hidden.
_STREAMED_RUNTIME = re.compile(r"\$R[CS]\s*=\s*function\b")
# The script types a browser runs (none, JavaScript's, a module); a text/plain one it keeps as
# text, and a move written there moves nothing.
_RUN_SCRIPT_TYPES = frozenset(("", "module", "text/javascript", "application/javascript"))


def _place_streamed(tree: Any) -> None:
    """Each part of a page that React streams (see :data:`_STREAMED_CALL`) read where its
    script moves it, at its template: hidden until then, it was dropped, the end of an
    article with it. (The skeleton shown meanwhile stays: the parser drops the comments that
    bound it; it holds no words, or a "Loading".) Before scripts go; in the order of the
    calls, so that a part placed inside another goes with it. One pass over the scripts, one
    over the templates and divs when a script calls: linear."""
    import lxml.etree

    calls: list[tuple[str, str]] = []
    runtime = False
    for script in tree.iter("script"):
        text = script.text
        kind = (script.get("type") or "").split(";")[0].strip().lower()
        if text and "$R" in text and script.get("src") is None and kind in _RUN_SCRIPT_TYPES:
            runtime = runtime or _STREAMED_RUNTIME.search(text) is not None
            calls += itertools.islice(_STREAMED_CALL.findall(text), _MAX_STREAMED - len(calls))
    if not calls or not runtime:
        return
    ids: dict[str, Any] = {}
    for element in tree.iter("template", "div"):
        name = element.get("id")
        if name and name[1:2] == ":":
            ids.setdefault(name, element)
    for first, second in calls:
        target, part = (
            (ids.get(second), ids.get(first))
            if first[0] == "S"
            else (ids.get(first), ids.get(second))
        )
        if (
            target is None
            or part is None
            or target.tag != "template"
            or part.tag != "div"
            or "hidden" not in part.attrib
            or target.getparent() is None
            or any(True for _ in target.iterancestors() if _ is part)
        ):
            continue
        placed = lxml.etree.Element("div")
        placed.text, part.text = part.text, None
        placed.extend(list(part))
        placed.tail = target.tail
        target.getparent().replace(target, placed)


def _open_dialogs(tree: Any) -> None:
    """An open dialog (``<dialog open>``) is shown, as the links' reading (:func:`_drop_unseen`)
    and the parser-free one take it: it is read as a block; a closed one goes with
    :data:`_DROP_TAGS`."""
    for dialog in tree.iter("dialog"):
        if "open" in dialog.attrib:
            dialog.tag = "div"


# What a heading's permalink shows (Sphinx and MkDocs "¶", "#", "§", a link symbol; nothing
# but an icon or a zero-width space: GitHub, Docusaurus, VitePress): not words of the heading
# ("# Sessions[¶](https://docs.example/#sessions)", "## useState[](…#usestate)").
_PERMALINK_TEXTS = frozenset(
    # (Doxygen's member titles: "◆ push()", a black diamond linking to the member's anchor)
    # (and man7.org's "top", a link back to the page's top in each section's heading)
    ("", "\u00b6", "#", "\u00a7", "\U0001f517", "\u2693", "\U0001f517\ufe0e", "\u25c6", "top")
)
# A permalink's words, where it has any: "Permalink: Installation" (GitHub's aria-label, which
# html-to-markdown reads as an empty link's text), "Permalink to this heading" (Sphinx).
_PERMALINK_WORDS = re.compile(
    r"(?:permalink|permanent link)(?:\s+to\s+this\s+\w+|:.*)?", re.IGNORECASE | re.DOTALL
)
_INVISIBLE = str.maketrans("", "", "\u200b\u200c\u200d\u2060\ufeff")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def _drop_teaser_grids(tree: Any, visible: int) -> None:
    """Drop a grid of other stories' cards beside the article: three or more headings each
    all one link to another page (a card, ``<a><img><h3>Title</h3></a>``, or
    ``<h3><a>Title</a></h3>``) in one block that holds nothing besides them but a label
    ("You may also be interested in...") and holds under a third of the page's ``visible``
    characters. trafilatura read such a block at the head or the end of the article as a
    run of links, other stories' titles read as the article's (a magazine's "you may also
    be interested in", a news site's promo row over the story). A listing, whose teasers
    are the page, and teasers with a summary beside their title stay (see
    :func:`_lost_titles`)."""
    cards = []
    for heading in itertools.islice(tree.iter(*_HEADINGS), _MAX_CARD_HEADINGS):
        link: Any = next(heading.iterancestors("a"), None)
        card = link
        if link is None:
            links = heading.findall(".//a")
            words = _leading_text(heading, _MAX_LINK_TEXT + 1).strip()
            if (
                len(links) != 1
                or not words
                or len(words) > _MAX_LINK_TEXT
                or _leading_text(links[0], _MAX_LINK_TEXT + 1).strip() != words
            ):
                continue
            link, card = links[0], heading
        href = (link.get("href") or "").strip()
        if href and not href.startswith("#"):
            cards.append(card)
    cards = list(dict.fromkeys(cards))  # (a card of a title and a subtitle counts once)
    if len(cards) < _MIN_GRID_CARDS:
        return
    held: dict[Any, list[Any]] = {}  # each block around cards (a few levels up): its cards
    for card in cards:
        for ancestor in itertools.islice(card.iterancestors(), _GRID_LEVELS):
            held.setdefault(ancestor, []).append(card)
    doomed = []
    done: set[Any] = set()
    measured = 0
    for card in cards:
        if measured == _MAX_GRIDS:
            break
        if card in done:
            continue
        grid = next(
            (a for a in itertools.islice(card.iterancestors(), _GRID_LEVELS)
             if len(held[a]) >= _MIN_GRID_CARDS),
            None,
        )  # fmt: skip
        if grid is None or grid.tag in _GRID_STOPS:
            continue
        done.update(held[grid])
        measured += 1
        titles = sum(_solid(c.text_content()) for c in held[grid])
        if _solid(grid.text_content()) - titles > _MAX_GRID_LABEL:
            continue  # cards with summaries, or stories in a text: not a grid of titles
        # Up to the block holding the grid and its label ("Related stories").
        for _ in range(_GRID_LEVELS):
            parent = grid.getparent()
            if (
                parent is None
                or parent.tag in _GRID_STOPS
                or _solid(parent.text_content()) - titles > _MAX_GRID_LABEL
            ):
                break
            grid = parent
        if _solid(grid.text_content()) * _GRID_SHARE < visible:
            doomed.append(grid)
    gone = set(doomed)  # (a grid inside another goes with it)
    _drop_all([grid for grid in doomed if not any(a in gone for a in grid.iterancestors())])


# Teaser grids (see _drop_teaser_grids): the headings looked at and the grids measured (each
# measure reads a grid's text, and a hostile page nests them); the cards a grid holds at
# least; the levels above a card its grid is looked for (and above the grid its label);
# the characters of a label beside the cards; a grid holds under one part in this many of
# the page's text.
_MAX_CARD_HEADINGS = 200
_MAX_GRIDS = 16
_MIN_GRID_CARDS = 3
_GRID_LEVELS = 4
_MAX_GRID_LABEL = 40
_GRID_SHARE = 3
# What a grid never is, nor grows into: the page, its main text, a section of it.
_GRID_STOPS = frozenset(("html", "body", "main", "article", "section"))


def _drop_share_widgets(tree: Any) -> None:
    """Drop a sharing widget in the text: an element whose class or id names one as a word
    (``share``, ``sharedaddy``: ``share-buttons``, ``post_share``, WordPress Jetpack's
    ``<div class="sharedaddy sd-like">`` "Like this: Like Loading...") holding under
    :data:`_MAX_SHARE_CHARS` characters, as Readability does. trafilatura drops most by its
    own classes, but where readability-lxml's reading or the whole page's was taken, "Like
    this:" stood as a heading between the article's paragraphs."""
    doomed: list[Any] = []
    gone: set[Any] = set()
    candidates = _structure.compiled(_SHARE_CANDIDATES)(tree)  # (in the document's order)
    for element in itertools.islice(candidates, _MAX_SHARE_CANDIDATES):
        names = f"{element.get('class') or ''} {element.get('id') or ''}"
        if (
            _SHARE_NAME.search(names[:_MAX_CHECKED_CHARS]) is not None
            and element.tag not in _GRID_STOPS
            and not any(up in gone for up in element.iterancestors())  # (gone with it)
            and len(_leading_text(element, _MAX_SHARE_CHARS)) < _MAX_SHARE_CHARS
        ):
            doomed.append(element)
            gone.add(element)
    _drop_all(doomed)


def _drop_promo_lines(tree: Any) -> None:
    """Drop a paragraph that sends the reader elsewhere rather than saying anything: a label
    and one link to another story ("**SEE MORE:** [Hong Kong protests: ...](…)", "Related:
    [SpaceX's Starship in Pictures](…)", "Read more: …"), which a news site puts between an
    article's paragraphs, and a line asking to be followed ("Follow us on Instagram,
    Facebook and Pinterest for more recipes!"), which ends a post. trafilatura keeps them as
    the article's paragraphs. A paragraph of one link whose words outside it are one of
    :data:`_PROMO_LABEL`'s labels alone, or of links whose words open "Follow us", "Follow
    me", "Like us on" or "Connect with us", under :data:`_MAX_PROMO_CHARS` characters, goes;
    a line of another label ("Source: [Reuters](…)") stays."""
    doomed = []
    candidates = _structure.compiled(_PROMO_CANDIDATES)(tree)
    for paragraph in itertools.islice(candidates, _MAX_PROMO_CANDIDATES):
        words = _leading_text(paragraph, _MAX_PROMO_CHARS + 1)
        if len(words) > _MAX_PROMO_CHARS:
            continue
        if _FOLLOW.match(words) is not None:
            doomed.append(paragraph)
            continue
        links = list(itertools.islice(paragraph.iter("a"), 2))
        if len(links) == 1:
            outside = words.replace(links[0].text_content(), " ", 1)
            if _PROMO_LABEL.fullmatch(outside) is not None:
                doomed.append(paragraph)
    _drop_all(doomed)


# A paragraph holding a link (found by libxml2 in one pass; the page's first few hundred
# read: the pass cost 50 ms on 45,000 paragraphs of links), the labels of a line sending the
# reader to another story, and a request to be followed.
_PROMO_CANDIDATES = "//p[.//a]"
_MAX_PROMO_CANDIDATES = 500
# What the page's words hold where there may be such a line, looked for in them lowered
# before the paragraphs are (40 ms on 330,000 paragraphs; a regular expression's search of a
# page's 1 MB, 80; the words alone are a fraction of it).
_PROMO_WORDS = (
    "see more", "see also", "also see", "read more", "read also", "also read", "more:",
    "related", "next", "miss", "must read", "recommended", "watch", "listen", "more from",
    "follow us", "follow me", "like us", "connect with",
)  # fmt: skip


# The length of text past which a page's words are searched for _PROMO_WORDS before its
# paragraphs are read: on an article of 96,000 characters the search took 0.9 ms and the pass
# 0.03 (its words hold "more" or "next" anyway), and the pass takes at most 15 ms on a page
# this long (12,000 paragraphs of links).
_PROMO_SEARCHED_CHARS = 100_000


def _promo_words(text: str) -> bool:
    """Whether ``text`` holds a word of :data:`_PROMO_WORDS`, in any case."""
    lowered = text.lower()
    return any(word in lowered for word in _PROMO_WORDS)


_PROMO_LABEL = re.compile(
    r"\W*(?:see more|see also|also see|read more|read also|also read|more|related|related "
    r"stories|related story|related articles?|read next|up next|don['\u2019]t miss|must "
    r"read|recommended|watch|listen|more from [\w ]{1,30})\W*",
    re.IGNORECASE,
)
_FOLLOW = re.compile(r"\W*(?:follow (?:us|me)|like us on|connect with us)\b", re.IGNORECASE)
_MAX_PROMO_CHARS = 300


# A sharing widget (see _drop_share_widgets): the elements looked at (the XPath finds them in
# C: most pages have none) and how many at most, the word in a class or id (Readability's),
# and the characters it holds under.
_SHARE_CANDIDATES = (
    "//@class[contains(., 'hare') or contains(., 'HARE')]/.. | //@id[contains(., 'hare')]/.."
)
_SHARE_NAME = re.compile(r"(?:\b|_)(?:share|sharedaddy)(?:\b|_)", re.IGNORECASE)
_MAX_SHARE_CHARS = 500
_MAX_SHARE_CANDIDATES = 200


def _drop_permalinks(tree: Any) -> None:
    """Drop a heading's own permalink: a link to an anchor (``#...``) inside the heading or
    right beside it (GitHub's follows it in their wrapper), showing only a permalink's mark
    or words (see :data:`_PERMALINK_TEXTS`). Its tail stays. A term's too: Sphinx gives
    each API entry's (``<dt>``) one, as it gives headings; and any block's own, inside it
    (see :func:`_links_its_block`).

    One walk of the headings and terms, the links of each outermost one read once: the parser
    nests unclosed ones, and a search of each one's links went over the same links again (200
    nested terms over 30,000 links: 11 s). A link is listed once, though it may stand beside
    two headings."""
    import lxml.etree

    candidates: dict[Any, None] = {}
    inside = 0  # headings and terms open around the walk
    # The links themselves are not walked (a page of 36,000 links spent 0.02 s on them): those
    # in an outermost heading or term are read from it, the rest that go to an anchor found
    # by libxml2. (The order they are dropped in changes nothing.)
    for event, element in lxml.etree.iterwalk(
        tree, events=("start", "end"), tag=(*_HEADINGS, "dt")
    ):
        if event == "start":
            if not inside:
                candidates.update((link, None) for _, link in _walk(element, "a"))
            inside += 1
            continue
        inside -= 1
        if not (element.tail or "").strip():
            following = element.getnext()
            if following is not None and following.tag == "a":
                candidates[following] = None
        before = element.getprevious()
        if before is not None and before.tag == "a" and not (before.tail or "").strip():
            candidates[before] = None
    # Only a link to an id the page has can go to a block it is in: 45,000 links to anchors
    # that are nowhere were each found and had their ancestors read (0.05 s).
    ids = set(tree.xpath("//@id", smart_strings=False))
    for link in tree.xpath("descendant-or-self::a[starts-with(@href, '#')]") if ids else ():
        if link not in candidates and link.get("href")[1:] in ids and _links_its_block(link):
            candidates[link] = None
    # All at once: one by one, each drop rewrote the text before it (30,000 pilcrows in one
    # paragraph took 2.8 s).
    _drop_all(link for link in candidates if _is_permalink(link))


_SELF_LINK_LEVELS = 3  # how far up a paragraph's own permalink is looked for its anchor


def _links_its_block(link: Any) -> bool:
    """Whether ``link`` goes to the anchor of an element it is in, a few levels up: a
    paragraph's own permalink (xml2rfc's ``<p id="section-1-1">…<a href="#section-1-1"
    class="pilcrow">¶</a></p>``, after each paragraph of an RFC)."""
    href = link.get("href") or ""
    if not href.startswith("#") or len(href) == 1:
        return False
    target = href[1:]
    for ancestor in itertools.islice(link.iterancestors(), _SELF_LINK_LEVELS):
        if ancestor.get("id") == target:
            return True
    return False


def _text_of(element: Any) -> str:
    """``element.text_content()``, read without an XPath evaluation where it holds no node but
    its text (most links): 30,000 links in a term took 0.02 s for each pass reading them."""
    return element.text_content() if len(element) else element.text or ""


def _is_permalink(link: Any) -> bool:
    """Whether ``link`` goes to an anchor and says no more than a permalink does."""
    if "#" not in (link.get("href") or ""):
        return False
    text = _text_of(link)[:_MAX_CHECKED_CHARS]
    text = (text if text.isascii() else text.translate(_INVISIBLE)).strip()
    return text in _PERMALINK_TEXTS or bool(_PERMALINK_WORDS.fullmatch(text))


# What a note's link back to where it is cited shows: a caret, an arrow, or (MediaWiki's, when
# a source is cited more than once) a letter in a superscript.
_BACKLINK_TEXTS = frozenset(("^", "\u2191", "\u21a9", "\u21a9\ufe0e", "\u21a9\ufe0f", "\u2934"))


_SKIP_LINK = re.compile(
    r"skip\s+(?:to\s+(?:the\s+)?(?:main\s+)?(?:content|navigation|menu|search|footer|main)"
    r"|(?:main\s+)?navigation|nav)",
    re.IGNORECASE,
)


def _drop_backlinks(tree: Any) -> None:
    """Take out a note's backlinks: a link inside a list item (a reference or footnote list)
    to an anchor (``#...``) whose only text is a return mark (dropped, its tail kept) or a
    letter in a superscript (the letter kept, as words of the page). trafilatura's
    precision mode dropped a list of such short links as navigation, and with it every
    reference of a wiki article (and the heading over them, left trailing). A skip link
    ("Skip to main content", to a place in the page) goes too: a keyboard's shortcut, never
    the page's words (Docusaurus's sits in a region, not in the navigation that goes)."""
    skips = []
    for link in list(tree.iter("a")):
        if "#" not in (link.get("href") or ""):
            continue
        text = _text_of(link).strip()
        if _SKIP_LINK.fullmatch(text) and (link.get("href") or "").startswith("#"):
            skips.append(link)
            continue
        mark = text in _BACKLINK_TEXTS
        # (A link with no element inside holds no superscript: no search for one.)
        letter = (
            len(text) == 1 and text.isalpha() and len(link) > 0 and link.find(".//sup") is not None
        )
        if (mark or letter) and next(link.iterancestors("li"), None) is not None:
            if mark:
                link.drop_tree()
            else:
                # The letter as plain words: kept in its superscript and emphasis it read
                # "^ ^***a*** ^***b*** Turney 1972", a reader's "^ a b Turney 1972".
                for inner in link.iterdescendants():
                    inner.text = inner.tail = None
                link.text = text
                for inner in list(link):
                    link.remove(inner)
                link.drop_tag()
    _drop_all(skips)


# What a heading's wrapper may hold beside it and still be the heading's alone: a permalink, an
# edit link ("[edit]"), an icon; a longer text is a teaser's or a section's.
_MAX_HEADING_COMPANY = 40
_MAX_HEADING_ELEMENTS = 20
# Elements that make a wrapper more than a heading's (a heading and its paragraph, a list).
_HEADING_RIVALS = frozenset((
    *_HEADINGS, "p", "div", "ul", "ol", "dl", "table", "pre", "blockquote", "section", "article",
    "figure", "form", "li",
))  # fmt: skip


# What a heading's own link shows: nothing (an icon), a mark, or an edit link's word.
_HEADING_MARKS = frozenset(
    ("", "#", "\u00b6", "\u00a7", "\U0001f517", "edit", "edit source", "link")
)


def _marks_a_heading(link: Any) -> bool:
    """Whether ``link`` is a heading's own: to a place in the page (a permalink), or showing
    only a mark or an edit link's word ("[edit]"). A link of its own beside a heading ("###
    Download" over a file's link) is the section's content: lifted away from it, the
    heading was left over an emptied section."""
    if (link.get("href") or "").startswith("#"):
        return True
    return link.text_content().strip().strip("[]").strip().lower() in _HEADING_MARKS


def _blocks_in_headings(tree: Any) -> None:
    """Read the blocks inside a heading as its words: ReadMe's headings write their text in a
    ``<div class="heading-text">`` beside an empty anchor ``<div>``, and trafilatura dropped
    every such heading. Each ``<div>`` in a heading gives way to its words, a space either
    side (a block was apart from them; the parser ends a heading at a ``<p>``). One walk,
    whatever the headings' nesting."""
    import lxml.etree

    open_headings = 0
    inside = []
    for event, element in lxml.etree.iterwalk(
        tree, events=("start", "end"), tag=(*_HEADINGS, "div")
    ):
        if element.tag in _HEADINGS:
            open_headings += 1 if event == "start" else -1
        elif event == "start" and open_headings:
            inside.append(element)
    for block in inside:
        block.text = " " + (block.text or "")
        block.tail = " " + (block.tail or "")
        block.drop_tag()


def _drop_empty_in_headings(tree: Any) -> None:
    """Drop the elements without words in a heading (an anchor to link to it, ``<h2><a
    class="js_header-anchor" id=""></a>Part One</h2>``, ``<a name="s1"></a>``, an empty
    ``<span id>``), their tails kept: trafilatura dropped every heading holding one, and an
    article's outline went whole. (One holding an image or a graphic stays: its alt text may
    be the heading's words. The heading's own children, of its first 2,000 headings: each
    read once.)"""
    empty = [
        child
        for heading in itertools.islice(tree.iter(*_HEADINGS), _MAX_HEADINGS_CLEARED)
        for child in heading
        if isinstance(child.tag, str)
        and child.tag not in _PICTURES
        and child.tag not in _HEADINGS  # (a heading inside is judged on its own)
        and not any(piece.strip() for piece in child.itertext())
        and next(child.iter(*_PICTURES), None) is None
    ]
    for child in empty:
        child.drop_tree()


# What a heading's element without words may show: kept; and the headings looked at (see
# _drop_empty_in_headings).
_PICTURES = ("img", "svg", "picture", "math", "br")
_MAX_HEADINGS_CLEARED = 2_000


# A heading's words outside its links.
_UNLINKED_TEXT = ".//text()[not(ancestor::a)]"


def _unlink_headings(tree: Any, own: Container[str]) -> None:
    """Keep the words of a heading that is (nearly) all link, and drop its links: trafilatura's
    precision mode drops a heading whose links hold more than four fifths of its text (its
    link density test), and with it mdBook's and MDN's every heading (each a link to itself)
    and a changelog's release headings (each a link to its tag: "Version 2.0.0 (2025-11-01)",
    so the changes below lost their version). A heading with a link among its words ("3.4.0
    - 2025-11-20" with the number linked) passes that test and keeps its link. The page's
    links list is gathered before this (:func:`html_to_markdown`), so no link is lost.

    The same test drops a heading of two links or more nearly all of them short (under 10
    characters), whatever its words around them: an API reference's signature, each type in
    it a link (rustdoc's ``<h4>pub fn push(&mut self, value: T)</h4>``, ``impl<T> Vec<T>``;
    Javadoc's, Doxygen's), went whole, and the page read as its descriptions with no name
    over any. Such a heading with two words or more outside its links keeps them and its
    links' words. A ``<summary>`` is tested too: trafilatura writes it as a heading."""
    for heading in tree.iter(*_HEADINGS, "summary"):
        links = list(heading.iter("a"))
        if not links:
            continue
        texts = [text for text in (link.text_content().strip() for link in links) if text]
        linked = sum(map(len, texts))
        own_page = any(_to_own_page(link, own) for link in links)
        if (not own_page and linked * 5 > len(heading.text_content().strip()) * 4) or (
            len(texts) > 1
            and sum(len(text) < 10 for text in texts) * 5 > len(texts) * 4
            and len(_WORD.findall(" ".join(heading.xpath(_UNLINKED_TEXT)))) >= 2
        ):
            for link in links:
                link.drop_tag()


def _lift_title(tree: Any, title: str) -> None:
    """Lift the page's first ``<h1>`` out of the short wrappers that hold links beside it, up
    to :data:`_MAX_TITLE_WRAPPERS` levels: trafilatura's precision mode drops a ``<div>`` of
    under 200 characters that holds a link, and with it the page's title in its header
    (rustdoc's ``main-heading`` of breadcrumbs, "Struct Vec" and a "Source" link; Javadoc's
    ``header`` of "Package java.util" and "Class ArrayList<E>"; pkg.go.dev's ``UnitHeader``
    of breadcrumbs, the package's name and its version's links). Each wrapper is split at
    the heading: what stands before it stays in the wrapper, what follows goes into a copy
    of it after the heading, so every reading keeps the page's order and the extractor
    judges the rest alone. The header's own lines after the heading, paragraphs of words
    and no link of at most :data:`_MAX_HEADER_LINE_CHARS` characters (PyPI's "pip install
    requests" and "Released: May 29, 2024" beside a "Latest version" link, in a
    ``<div class="banner">``, which trafilatura drops by its class too), follow it out.

    Only on a page of code (three ``<code>`` or ``<pre>`` elements or more: documentation,
    a reference), and only a heading saying more than the page's ``title`` (which the
    result carries): a news article's headline is left to the extractor, as the
    development sets' texts of articles leave it out (lifted on every page, seven of their
    pages read a headline or a masthead's heading more)."""
    heading = next(tree.iter("h1"), None)
    if (
        heading is None
        or next(heading.iterancestors("a"), None) is not None
        or not tree.xpath(_PAGE_OF_CODE)
    ):
        return
    words = set(_WORD.findall(heading.text_content().lower()))
    if words <= set(_WORD.findall(title.lower())):
        return
    wrappers = []
    for wrapper in itertools.islice(heading.iterancestors(), _MAX_TITLE_WRAPPERS):
        if wrapper.tag not in ("div", "header", "section", "hgroup"):
            break
        if _solid(wrapper.text_content()) >= _SHORT_WRAPPER_CHARS:
            break
        wrappers.append(wrapper)
    # (only as far as the outermost that holds a link: the one trafilatura drops)
    while wrappers and next(wrappers[-1].iter("a"), None) is None:
        wrappers.pop()
    # The header's own lines after the heading, paragraphs of words and no link (PyPI's
    # "pip install requests", "Released: May 29, 2024" beside a "Latest version" link):
    # dropped with the wrapper that holds the link, they follow the heading out of it.
    lines = []
    if wrappers:
        after_heading = False
        for element in wrappers[-1].iter("h1", "p"):
            if element is heading:
                after_heading = True
            elif (
                after_heading
                and element.tag == "p"
                and next(element.iter("a"), None) is None
                and len(element.text_content()) <= _MAX_HEADER_LINE_CHARS
            ):
                lines.append(element)
    for wrapper in wrappers:
        rest = [*heading.itersiblings()]
        after = None
        if rest or (heading.tail or "").strip():
            after = wrapper.makeelement(
                wrapper.tag, {k: v for k, v in wrapper.attrib.items() if k != "id"}
            )
            after.text, heading.tail = heading.tail, None
            after.extend(rest)
        tail, wrapper.tail = wrapper.tail, None
        wrapper.addnext(heading)
        if after is not None:
            heading.addnext(after)
            after.tail = tail
        else:
            heading.tail = tail
        if len(wrapper) == 0 and not (wrapper.text or "").strip():
            wrapper.getparent().remove(wrapper)
    at = heading
    for line in lines:
        tail, line.tail = line.tail, None
        if tail and tail.strip():
            _append_words(line.getparent(), line.getprevious(), tail)
        line.getparent().remove(line)
        at.addnext(line)
        at = line


# How far up the page's title is lifted out of short wrappers holding links, and what is
# short: trafilatura's bound for a div it drops for a link (its delete_by_link_density).
_MAX_TITLE_WRAPPERS = 4
_MAX_HEADER_LINE_CHARS = 200
_PAGE_OF_CODE = "(//code | //pre)[3]"
_SHORT_WRAPPER_CHARS = 200


def _labelled_lines(tree: Any) -> None:
    """Read a line of a label and its value written as inline elements in a ``<div>`` (a
    recipe card's "Prep Time 15 mins", "Servings 10 slices": WP Recipe Maker's
    ``wprm-recipe-block-container``, each a ``*-label`` span and the value's) as a
    paragraph: trafilatura's precision mode drops a div of inline elements and no
    paragraph, and the times and yield went, and with them the card's container, whose
    class (``wprm-recipe-meta-container``) it takes for boilerplate. A div whose first
    element is a label (a class token ending in "label"), holding no block and at most
    :data:`_MAX_LABELLED_CHARS` characters, becomes a ``<p>``; a div holding two such lines
    or more loses its class and id."""
    holders: dict[Any, int] = {}
    for line in _structure.compiled(_LABELLED)(tree):
        if (line.text or "").strip() or len(line.text_content()) > _MAX_LABELLED_CHARS:
            continue
        if next(line.iterdescendants(*_BLOCKS_IN_LINE), None) is not None:
            continue
        line.tag = "p"
        label = line[0]
        if not (label.tail or "")[:1].isspace():  # (a stylesheet set them apart)
            label.tail = " " + (label.tail or "")
        parent = line.getparent()
        if parent is not None and parent.tag == "div":
            holders[parent] = holders.get(parent, 0) + 1
    for holder, lines in holders.items():
        if lines >= 2:
            for name in ("class", "id"):
                holder.attrib.pop(name, None)


# A div whose first element's class names a label (found by libxml2 in one pass), and the
# blocks that make it more than a line.
_LABELLED = (
    "//div[*[1][substring(@class, string-length(@class) - 4) = 'label' or "
    "contains(@class, 'label ')]]"
)
_BLOCKS_IN_LINE = ("div", "p", "ul", "ol", "table", "h2", "h3", "h4", "pre", "blockquote")
_MAX_LABELLED_CHARS = 100


def _signatures_as_code(tree: Any) -> None:
    """Read a declaration written as inline elements in a ``<div>`` whose class names a
    signature (Javadoc's ``member-signature`` and ``type-signature``: "public boolean
    add(E e)", each part a span or a link) as a paragraph of code, its links' words kept
    (the page's links list holds them): trafilatura's precision mode drops a div of inline
    elements and no paragraph, and every method's description read under its bare name, its
    types and parameters lost. A div holding a block is left as it is."""
    for signature in _structure.compiled(_SIGNATURES)(tree):
        if next(signature.iterdescendants(*_BLOCKS_IN_LINE), None) is not None:
            continue
        if not signature.text_content().strip():
            continue
        for link in list(signature.iter("a")):  # (a code span holds no link; the list does)
            link.drop_tag()
        for part in signature.iter():  # (Javadoc's &nbsp; between the words: code's spaces)
            if part.text and "\xa0" in part.text:
                part.text = part.text.replace("\xa0", " ")
            if part is not signature and part.tail and "\xa0" in part.tail:
                part.tail = part.tail.replace("\xa0", " ")
        _as_code(signature, signature.text, list(signature))


# A div whose class names a signature, found by libxml2 in one pass.
_SIGNATURES = "//div[contains(@class, 'signature')]"


def _prototypes_as_code(tree: Any) -> None:
    """Read Doxygen's member prototype (``<div class="memproto">``: a template line over a
    ``<table class="memname">`` of the return type and name, "(", each parameter's type and
    name in cells of their own, ")") as a paragraph of code of its words, one space apart:
    trafilatura dropped the table (a layout of short cells) and the template line, and each
    member's documentation read under "push()" alone, its types and parameters lost."""
    for prototype in _structure.compiled(_PROTOTYPES)(tree):
        words = " ".join(prototype.text_content().split())
        if not words:
            continue
        for child in list(prototype):
            prototype.remove(child)
        _as_code(prototype, words)


_PROTOTYPES = "//div[@class='memproto']"


def _as_code(div: Any, text: str | None, children: Iterable[Any] = ()) -> None:
    """``div`` made a paragraph of one code span of ``text`` and ``children`` (moved in), with
    no class for trafilatura to take it for boilerplate by."""
    code = div.makeelement("code", {})
    code.text, div.text = text, None
    code.extend(children)
    div.append(code)
    div.tag = "p"
    div.attrib.pop("class", None)


def _headings_over_tables(tree: Any) -> None:
    """Move a heading that fills a table's first row (one cell holding it alone) to just
    before the table: Doxygen opens each table of members (``memberdecls``) with a row
    ``<td colspan="2"><h2><a id="pub-methods"></a>Public Member Functions</h2></td>``, which
    trafilatura dropped (a heading holding a link, the empty anchor of its target, which goes
    too), and the rows under it read as a table whose header line was gone (a run of lines
    of pipes) under no heading."""
    for row in _structure.compiled(_HEADING_ROWS)(tree):
        table = row.getparent()
        if table is not None and table.tag in ("tbody", "thead"):
            table = table.getparent()
        if table is None or table.tag != "table" or next(table.iter("tr")) is not row:
            continue
        cell = row[0]
        heading = next(child for child in cell if child.tag in _HEADINGS)
        if (cell.text or "").strip() or (heading.tail or "").strip():
            continue
        if any(True for child in cell if child is not heading and child.text_content().strip()):
            continue
        heading.tail = None
        for anchor in list(heading.iter("a")):
            # Its target (<a id="pub-methods">), no word: trafilatura drops a heading of one.
            if anchor.get("href") is None and not anchor.text_content().strip():
                anchor.drop_tree()
        table.addprevious(heading)
        row.getparent().remove(row)


_HEADING_ROWS = "//tr[count(*) = 1][*[1][h1 or h2 or h3 or h4 or h5 or h6]]"


def _drop_orphan_credits(tree: Any) -> None:
    """Drop a figure's caption holding an element trafilatura would drop by its class, where
    the caption's other words are few (a credit): reading no images, trafilatura drops a span, div or
    paragraph whose class or id holds "caption", so a news photo's ``<span
    class="caption">`` went and its ``<span class="credit">`` beside it stayed, "Photo: Ana
    Ruiz/Reuters" read alone at the head of the article, naming a photo it does not show.
    The caption went by that rule (see :func:`_caption_paragraphs`); its credit goes with
    it."""
    doomed = []
    for caption in tree.xpath(f"//*[@{_CAPTION_MARK}]"):
        named = caption.xpath(_NAMED_CAPTION)
        if not named:
            continue
        rest = _solid(caption.text_content()) - sum(_solid(el.text_content()) for el in named)
        if rest <= _MAX_CREDIT_CHARS:
            doomed.append(caption)
    _drop_all(doomed)


# The attribute marking a figure's caption made a paragraph (see _caption_paragraphs); the
# blocks trafilatura drops as a caption (its DISCARD_IMAGE_ELEMENTS), the outermost in one;
# and the words a credit beside one holds at most.
_CAPTION_MARK = "data-webward-caption"
_NAMED_CAPTION = (
    ".//*[self::div or self::p or self::section or self::span or self::ul or self::ol]"
    "[contains(@id, 'caption') or contains(@class, 'caption')]"
    "[not(ancestor::*[contains(@id, 'caption') or contains(@class, 'caption')]"
    f"[ancestor::*[@{_CAPTION_MARK}]])]"
)
_MAX_CREDIT_CHARS = 80


def _unwrap_embedded_posts(tree: Any) -> None:
    """Take away the wrappers of a post a page embeds (a tweet's ``<blockquote
    class="twitter-tweet">``, Instagram's, TikTok's, Bluesky's, Mastodon's, Reddit's,
    Facebook's) that hold the post alone, leaving the quote in their place: trafilatura drops
    a block whose class holds "embed", "social" or "share" (WordPress's ``<figure
    class="wp-block-embed">``, a news site's ``<div class="social-media-embed">``), and a
    quote two divs deep without a class too, so the posts an article quotes, the words its
    story is about, went while the sentence introducing each stayed. (A wrapper holding
    anything besides, a caption aside, stays, and so does what is around it.)"""
    posts = [q for q in tree.iter("blockquote") if _EMBEDDED_POST.search(q.get("class") or "")]
    for quote in posts:  # (found first: the tree changes around them)
        inner, wrappers = quote, []
        for wrapper in itertools.islice(quote.iterancestors(), _MAX_EMBED_WRAPPERS):
            if wrapper.tag in _EMBED_STOPS or (wrapper.text or "").strip():
                break
            if (inner.tail or "").strip() or any(
                child is not inner and (not isinstance(child.tag, str) or child.tag != "figcaption")
                for child in wrapper
            ):
                break
            wrappers.append(wrapper)
            inner = wrapper
        for wrapper in wrappers:
            wrapper.drop_tag()


# The quotes of a post embedded in a page (see _unwrap_embedded_posts): their classes, as each
# site's embedding code writes them; the wrappers unwrapped at most around one, and where
# the unwrapping always stops.
_EMBEDDED_POST = re.compile(
    r"(?<![\w-])(?:twitter-tweet|twitter-video|instagram-media|tiktok-embed|bluesky-embed"
    r"|mastodon-embed|reddit-embed-bq|text-post-media|fb-xfbml-parse-ignore)(?![\w-])"
)
_MAX_EMBED_WRAPPERS = 4
_EMBED_STOPS = frozenset(("body", "main", "article", "section", "td", "th", "li"))


def _unformat_links(tree: Any) -> None:
    """Read a link whose words are all one emphasis (``<a href><em>Netflix</em></a>``) as a
    link of plain words: trafilatura joins such an emphasis with one before it, across the
    link (``<em>is streaming on</em> <a><em>Netflix</em></a> <em>and</em>``), and wrote
    "*is streaming on Netflixand*", the link gone and the space after it too. (The link
    shows its words as a link; the emphasis on them is all that goes.)"""
    for emphasis in _structure.compiled(_LINK_EMPHASIS)(tree):
        link = emphasis.getparent()
        if not (emphasis.tail or "").strip() and not (link.text or "").strip():
            emphasis.drop_tag()


# An emphasis alone in a link (see _unformat_links): the link's one element, with no words of
# the link before it (those after it are looked at in Python).
_LINK_EMPHASIS = "//a[count(*) = 1]/*[self::em or self::i or self::b or self::strong or self::u]"


def _unlink_cited_lists(tree: Any) -> None:
    """Keep a short list of sentences each citing a short link, and drop those links: a
    changelog's entries each end in their pull request's number ("Fix ``app`` type
    signature. (#3109)"), and trafilatura's precision mode drops a list under 100
    characters (300 when nothing follows it) whose links are two or more, nearly all
    short (under 10 characters): the last release's "Fixed" went whole, and its heading
    with it, left trailing. In such a list whose every item holds three words or more
    outside its links (a menu's items are links alone), the short links go and their words
    stay (the page's links list is gathered before, so no link is lost)."""
    for listing in tree.iter("ul", "ol"):
        limit = _SHORT_LIST_CHARS if listing.getnext() is not None else _LAST_LIST_CHARS
        text = listing.text_content()[: limit + 1]
        if len(text.strip()) >= limit:
            continue
        links = [(link, link.text_content().strip()) for link in listing.iter("a")]
        texts = [words for _, words in links if words]
        short = [link for link, words in links if words and len(words) < 10]
        if len(texts) < 2 or len(short) * 5 <= len(texts) * 4:
            continue
        items = [item for item in listing if item.tag == "li"]
        if items and all(
            len(_WORD.findall(" ".join(item.xpath(_UNLINKED_TEXT)))) >= 3 for item in items
        ):
            for link in short:
                link.drop_tag()


# trafilatura's bounds for a list it tests for short links (its link_density_test): one with
# elements after it, and the last.
_SHORT_LIST_CHARS = 100
_LAST_LIST_CHARS = 300


def _headings_in_items(tree: Any) -> None:
    """Read a heading inside a line trafilatura writes as one as plain words: a list item,
    whose blocks it runs into one line, so a clause's or a step's paragraph became its
    heading ("3. ## Limitation of liability EXCEPT FOR BREACHES OF ..."; a tutorial's
    ``<li><div><span>Step 1</span><h2>..</h2></div><div><p>..``, in a wrapper of the item);
    and a ``<summary>``, which it writes as a heading itself ("## ## Specifications"). In
    an item the heading is the words' bold label; alone in its item, or over a nested list
    only, it stays a heading."""
    for heading in tree.iter(*_HEADINGS):
        # The heading and the wrappers it stands in, up to the element that holds them. The
        # words after them are looked for only in an item (not for every heading of a page).
        chain = [heading]
        parent = heading.getparent()
        while parent is not None and parent.tag in _WRAPPERS and len(chain) <= _MAX_ITEM_WRAPPERS:
            chain.append(parent)
            parent = parent.getparent()
        if parent is None:
            continue
        if parent.tag == "summary":
            heading.tag = "span"
            _alone_in_summary(parent, chain)
        elif parent.tag == "li" and any(_words_after(node) for node in chain):
            heading.tag = "strong"
            # A block was apart from the words around it: a space each side now.
            heading.tail = " " + (heading.tail or "")
            before = heading.getprevious()
            if before is not None:
                before.tail = (before.tail or "") + " "
            else:
                heading.getparent().text = (heading.getparent().text or "") + " "


def _flat_inline_code(tree: Any) -> None:
    """Read an inline ``<code>`` holding elements as one code span of its words, or, when a
    link is all its words, as a link around a code span: trafilatura writes an inline code
    element as its text alone and loses what follows a link in it, so Javadoc's "``add`` in
    interface ``Collection<E>``" (``<code><a>add</a></code>&nbsp;in interface&nbsp;<code>
    <a>Collection</a>&lt;<a>E</a>&gt;</code>``) read "[add][Collection]", a reference's
    "Use ``<code><a>List</a></code>`` when you need order." lost its words after the link,
    and a bold word in code moved to the end of its paragraph. A link among other words in
    a code span goes, its words kept (the page's links list is gathered before: trafilatura
    drops the link of ``<a><code>`` followed by more code). A ``<code>`` in a ``<pre>`` is a
    code block's (kept whole, see :func:`_code_blocks`) and stays."""
    for code in _structure.compiled(_CODE_HOLDING)(tree):
        for inner in list(code.iterdescendants()):  # (outermost first)
            if inner.tag != "a" or inner.getparent() is not code:
                inner.drop_tag()  # (its words stay, in their place)
        links = [child for child in code if child.tag == "a"]
        if (
            len(code) == 1
            and links
            and not (code.text or "").strip()
            and not (links[0].tail or "").strip()
        ):
            # The link outside, the code span of its words inside it.
            link = links[0]
            words, link.text = link.text, None
            code.remove(link)
            space, code.text = code.text, words
            link.tail, code.tail = code.tail, None
            code.addprevious(link)
            link.append(code)
            if space:  # (a space between the code and the words before it stays)
                before = link.getprevious()
                if before is None:
                    link.getparent().text = (link.getparent().text or "") + space
                else:
                    before.tail = (before.tail or "") + space
        else:
            for link in links:
                link.drop_tag()


# An inline code element holding elements (not a code block's), found by libxml2 in one pass.
_CODE_HOLDING = "//code[*][not(ancestor::pre)]"


def _alone_in_summary(summary: Any, chain: list[Any]) -> None:
    """Leave the heading ``chain[0]`` alone in ``summary`` (which trafilatura writes as the
    heading), and what stood beside it (in the wrappers ``chain[1:]``) in a block of its own
    after the summary: rustdoc's "1.0.0 · Source" before a method's header read "## 1.0.0 ·
    Source pub fn push(&mut self, value: T)", the version run into the signature (and
    "Sourceimpl<T> Vec<T>" before the words had a space between them)."""
    heading = chain[0]
    beside = summary.makeelement("p", {})  # (moved, not copied: linear in the summary)
    beside.text, summary.text = summary.text, None
    beside.extend(list(summary))
    # The heading out of its place, the words after it left there.
    parent, before, tail = heading.getparent(), heading.getprevious(), heading.tail
    heading.tail = None
    if before is not None:
        before.tail = f"{before.tail or ''} {tail or ''}"
    else:
        parent.text = f"{parent.text or ''} {tail or ''}"
    summary.append(heading)
    if beside.text_content().strip():
        for wrapper in beside.iter(*_WRAPPERS):  # (a paragraph's words, not blocks)
            wrapper.tag = "span"
        beside.tail, summary.tail = summary.tail, None
        summary.addnext(beside)


# What may stand between a heading and its list item or summary (a step's header; rustdoc's
# <summary><section class="method"><h4 class="code-header">, read "## #### pub fn push").
_WRAPPERS = frozenset(("div", "span", "header", "hgroup", "section"))
_MAX_ITEM_WRAPPERS = 3


def _words_after(element: Any) -> bool:
    """Whether words follow ``element`` in its parent (its tail, then a few siblings: enough
    to tell, and a bound on a parent of many), a nested list's aside."""
    if (element.tail or "").strip():
        return True
    for sibling in itertools.islice(element.itersiblings(), 8):
        if sibling.tag not in ("ol", "ul") and sibling.text_content().strip():
            return True
        if (sibling.tail or "").strip():
            return True
    return False


def _to_own_page(link: Any, own: Container[str]) -> bool:
    """Whether ``link`` leads to the page it is on: its address, or an empty ``href`` (which
    :func:`_rewrite_links` removed, so a link with no target that is no named anchor)."""
    href = link.get("href")
    if href is None:
        return link.get("name") is None and link.get("id") is None
    return href in own


def _lift_headings(tree: Any) -> None:
    """Move a heading out of a wrapper it shares only with a few words of links (GitHub's
    ``<div class="markdown-heading"><h2>..</h2><a class="anchor">``, MediaWiki's
    ``<div class="mw-heading"><h2>..</h2><span class="mw-editsection">[edit]``): trafilatura's
    precision mode drops a short element holding a link, and the wrapper went with the
    heading in it. Lifted to just before its wrapper, the heading stays; the links are left
    in the wrapper, for the extractor to judge alone. What is beside the heading is read up
    to :data:`_MAX_HEADING_ELEMENTS` elements (a page of headings nested in each other's
    wrappers is not read again for each)."""
    for heading in list(tree.iter(*_HEADINGS)):
        wrapper = heading.getparent()
        if (
            wrapper is None
            or wrapper.tag != "div"
            or heading.getprevious() is not None
            or (wrapper.text or "").strip()
        ):
            continue
        company = list(
            itertools.islice(
                itertools.chain.from_iterable(sibling.iter() for sibling in heading.itersiblings()),
                _MAX_HEADING_ELEMENTS + 1,
            )
        )
        links = [element for element in company if element.tag == "a"]
        if (
            len(company) > _MAX_HEADING_ELEMENTS
            or not links
            or not all(_marks_a_heading(link) for link in links)
            or any(element.tag in _HEADING_RIVALS for element in company)
        ):
            continue
        words = (heading.tail or "") + "".join(
            (element.text or "") + (element.tail or "") for element in company
        )
        if len(words.strip()) > _MAX_HEADING_COMPANY:
            continue
        wrapper.text, heading.tail = heading.tail, None
        wrapper.addprevious(heading)


# Inline elements whose words a reader sees and trafilatura's cleaning drops with them (its
# MANUALLY_CLEANED): "Meeting on <time>May 2</time> at noon" read "Meeting on at noon".
_SHOWN_INLINE = ("time", "label", "output", "blink", "marquee")
# A custom element holding text alone (GitHub's <g-emoji>, <relative-time>): read as a span,
# where trafilatura dropped one in a table cell or a heading ("| fastjson |  |" for a ✅).
_CUSTOM_LEAVES = "/descendant::*[contains(name(), '-') and not(*)]"


def _show_inline_words(tree: Any) -> None:
    """Read the inline elements trafilatura drops with their words as plain spans (see
    :data:`_SHOWN_INLINE`, :data:`_CUSTOM_LEAVES`)."""
    for element in [*tree.iter(*_SHOWN_INLINE), *tree.xpath(_CUSTOM_LEAVES)]:
        element.tag = "span"


def _part_labels(tree: Any) -> None:
    """Set a label apart from the words it labels: a page that styles its labels as blocks,
    or hides them, writes them glued to the words ("<span>Authors:</span><a>Ashish
    Vaswani</a>", "<span>Abstract:</span>The dominant ..."), which read "Authors:Ashish
    Vaswani", "Abstract:The dominant". An inline element of words alone, at most
    :data:`_MAX_LABEL_CHARS` characters ending in a colon, right before a word, now has a
    space after it. One that says "Title:" first in a heading goes (arXiv's "# Title:Attention
    Is All You Need"): the heading is the title, and its first words were a label's."""
    for label in _structure.compiled(_COLON_LABELS)(tree):
        words = label.text_content()
        if len(words) > _MAX_LABEL_CHARS or _LABEL.fullmatch(words) is None:
            continue
        parent = label.getparent()
        if (
            parent is not None
            and parent.tag in _HEADINGS
            and label.getprevious() is None
            and not (parent.text or "").strip()
            and words.strip().lower() == "title:"
            and (label.tail or "").strip()
        ):
            label.drop_tree()  # (its tail, the heading's words, stays)
            continue
        tail = label.tail or ""
        if not words.endswith(":") or tail[:1].isspace():  # (a space of its own after it)
            continue
        after = label.getnext() if not tail else None
        if tail[:1].isalnum() or (after is not None and _first_char(after).isalnum()):
            label.tail = " " + tail


def _first_char(element: Any) -> str:
    """The first character of ``element``'s words ("" for none)."""
    return next((text[:1] for text in element.itertext() if text), "")


def _block_span(span: Any) -> None:
    """Read a ``<span>`` its own style displays as a block, alone in a ``<div>`` (of no other
    element and no words of its own), as a paragraph: WP Recipe Maker writes a recipe's
    summary and its notes so (``<div class="wprm-recipe-summary"><span style="display:
    block;">This easy banana bread ...</span></div>``), and trafilatura's precision mode
    drops a div of inline elements and no paragraph: the card read without what it makes
    and what to mind. One beside other elements or words stays a span."""
    parent = span.getparent()
    if (
        parent is None
        or parent.tag != "div"
        or (parent.text or "").strip()
        or any(child is not span and not _blank_child(child) for child in parent)
        or next(span.iterdescendants(*_BLOCKS_IN_LINE), None) is not None
        or not span.text_content().strip()
    ):
        return
    span.tag = "p"


def _blank_child(child: Any) -> bool:
    """Whether ``child`` is nothing a reader sees: a comment, or a ``<br>``, with no words after."""
    return (not isinstance(child.tag, str) or child.tag == "br") and not (child.tail or "").strip()


# A style's display of a block.
_BLOCK_DISPLAY = re.compile(r"display\s*:\s*block\b", re.IGNORECASE)


def _title_block_as_heading(tree: Any, title: str) -> None:
    """Read a page's title written in a block of class ``title`` as its ``<h1>``, where the page
    has none: Doxygen writes a class's name as ``<div class="headertitle"><div
    class="title">mylib::Stack< T > Class Template Reference</div></div>`` beside links to
    its sections, which trafilatura drops (a short div holding links), and the reference
    read with no name over it. The first ``<div>``, ``<p>`` or ``<span>`` whose class holds
    the word "title", of words alone and at most :data:`_MAX_TITLE_BLOCK_CHARS` characters,
    two words or more all of them in the page's ``title``, becomes an ``<h1>``."""
    if next(tree.iter("h1"), None) is not None:
        return
    said = set(_WORD.findall(title.lower()))
    for block in itertools.islice(_structure.compiled(_TITLE_BLOCKS)(tree), 1):
        words = _WORD.findall(block.text_content().lower())
        if (
            len(words) >= 2
            and len(block.text_content()) <= _MAX_TITLE_BLOCK_CHARS
            and set(words) <= said
        ):
            block.tag = "h1"
            for name in ("class", "id"):
                block.attrib.pop(name, None)
            # Out of the short wrappers around it (Doxygen's header, holding the links to the
            # page's sections), to just before the outermost: trafilatura drops a short div
            # holding a link, the heading with it.
            outer = None
            for wrapper in itertools.islice(block.iterancestors(), _MAX_TITLE_WRAPPERS):
                if wrapper.tag not in ("div", "header", "section", "hgroup"):
                    break
                if _solid(wrapper.text_content()) >= _SHORT_WRAPPER_CHARS:
                    break
                outer = wrapper
            if outer is not None:
                tail, block.tail = block.tail, None
                if tail and tail.strip():
                    _append_words(block.getparent(), block.getprevious(), tail)
                block.getparent().remove(block)
                outer.addprevious(block)


# A block whose class holds the word "title", of inline elements at most (found by libxml2;
# from the elements, not their attributes: a parent step after an attribute step has libxml2
# sort its answer in document order comparing siblings, quadratic in them, 1.2 s for 49,500
# paragraphs of class "title").
_TITLE_BLOCKS = (
    "//*[self::div or self::p or self::span][contains(@class, 'title')]"
    "[contains(concat(' ', normalize-space(@class), ' '), ' title ')]"
    "[not(.//div or .//p or .//table or .//ul or .//ol)]"
)
_MAX_TITLE_BLOCK_CHARS = 200


def _append_words(parent: Any, before: Any, words: str) -> None:
    """``words`` written after ``before`` in ``parent`` (its text, when ``before`` is None)."""
    if before is None:
        parent.text = (parent.text or "") + words
    else:
        before.tail = (before.tail or "") + words


def _aria_headings(tree: Any) -> None:
    """Read a ``<div>`` or ``<span>`` the page names a heading (ARIA's ``role="heading"``) as
    a line of bold words: a forum writes each post's header so (Discourse's ``<div
    role="heading" aria-level="2" class="topic-meta-data">`` of the poster's names and the
    post's date), which trafilatura dropped as a div of links, and a topic read as its posts'
    words with nothing saying who wrote which. A bold line, as a post's mark reads (see
    _kinds.mark_answers), not a heading: trafilatura kept the first post's heading and
    dropped the others'. It reads as its words alone, a space apart: its links go (the
    page's links list is gathered before; read as a heading of links, the posts were a
    listing of other pages' teasers). Not one holding a heading or a block other than a
    ``<div>``, nor one past a line (:data:`_MAX_ARIA_HEADING_CHARS`)."""
    for element in _structure.compiled(_ARIA_HEADINGS)(tree):
        if len(element.text_content()) > _MAX_ARIA_HEADING_CHARS:
            continue
        if next(element.iterdescendants(*_HEADINGS, *_BLOCKS_IN_LINE[1:]), None) is not None:
            continue
        for inner in element.iterdescendants("div"):  # (a block was apart from its words)
            inner.text = " " + (inner.text or "")
            inner.tail = " " + (inner.tail or "")
        words = " ".join(element.text_content().split())
        for child in list(element):
            element.remove(child)
        element.text = None
        strong = element.makeelement("strong", {})
        strong.text = words
        element.append(strong)
        element.tag = "p"
        for name in ("role", "aria-level", "class", "id"):
            element.attrib.pop(name, None)


# A div or span named a heading, not in one (found by libxml2 in one pass).
_ARIA_HEADINGS = (
    "//*[self::div or self::span][@role='heading']"
    "[not(ancestor::h1 or ancestor::h2 or ancestor::h3 or ancestor::h4 or ancestor::h5 or "
    "ancestor::h6)]"
)
_MAX_ARIA_HEADING_CHARS = 200


def _part_glued_links(tree: Any) -> None:
    """Set apart two links written right against each other: a forum post's header writes
    its author's name and user name as two links in spans a stylesheet lays apart
    (Discourse's ``<span class="first full-name"><a>Alice Martin</a></span><span
    class="second username"><a>alice</a></span>``), and the reading ran them together,
    "[Alice Martin](…)[alice](…)", one name to a reader. A link ending in a word, with
    nothing after it (itself, or the spans it ends, up to :data:`_MAX_GLUE_LEVELS`) before
    an element opening with a link whose first character is a word's, has a space after it,
    where the two go to different places or each stands in a span of its own (two bare
    links to one place are one link split by an editor, in a word: "[Arte](…)[mis](…)")."""
    for link in tree.iter("a"):
        if link.tail:
            continue
        end = link
        for _ in range(_MAX_GLUE_LEVELS):
            parent = end.getparent()
            if end.tail or end.getnext() is not None or parent is None or parent.tag != "span":
                break
            end = parent
        after = end.getnext()
        if end.tail or after is None:
            continue
        opening = after
        for _ in range(_MAX_GLUE_LEVELS):
            if opening.tag == "a" or opening.text or len(opening) == 0:
                break
            opening = opening[0]
        if opening.tag != "a":
            continue
        # Two links to one place, each not in a span of its own, are one link an editor
        # split ("[Arte](…)[mis m](…)[oon program](…)"), its words one word: left alone.
        if (end is link or opening is after) and opening.get("href") == link.get("href"):
            continue
        if _first_char(opening).isalnum() and _last_char(link).isalnum():
            end.tail = " "


def _whole_dates(tree: Any) -> None:
    """Read a date the page shortens on screen as its whole date: a forum writes each post's
    date as the day alone, its year and time in the element's ``title`` (Discourse's ``<span
    class="relative-date" title="Nov 14, 2023 10:13 am">Nov 14</span>``; a relative "3h"
    too, which the title dates), and the reading said "Nov 14" of a post of another year.
    A span or ``<abbr>`` of words alone (at most :data:`_MAX_SHORT_DATE_CHARS` characters,
    no year) whose ``title`` holds a year in at most :data:`_MAX_DATE_TITLE_CHARS`
    characters and starts with its words reads as its title, as does a relative time ("3h",
    "2 days ago") under such a title."""
    for element in _structure.compiled(_TITLED_LEAVES)(tree):
        words = (element.text or "").strip()
        title = " ".join(element.get("title", "").split())
        if (
            not words
            or len(words) > _MAX_SHORT_DATE_CHARS
            or len(title) > _MAX_DATE_TITLE_CHARS
            or _YEAR.search(title) is None
            or _YEAR.search(words) is not None
            # A title that names no day (a month, or a date in digits) is no date: "300 m"
            # under "Built in 2019" read "Built in 2019", a height lost for a tooltip.
            or _DAY.search(title) is None
        ):
            continue
        if title.startswith(words) or _RELATIVE_TIME.fullmatch(words) is not None:
            element.text = title


# An element of words alone with a title (found by libxml2 in one pass); a year, and a
# relative time as a forum shows one ("3h", "2 days", "5 min ago").
_TITLED_LEAVES = "//*[self::span or self::abbr][@title][not(*)]"  # (see _TITLE_BLOCKS)
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_DAY = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b"
    r"|\d{4}-\d\d-\d\d|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b",
    re.IGNORECASE,
)
_RELATIVE_TIME = re.compile(
    r"\d+\s*(?:s|m|h|d|w|mo|y|min|mins|hours?|days?|weeks?|months?|years?)(?:\s+ago)?", re.I
)
_MAX_SHORT_DATE_CHARS = 20
_MAX_DATE_TITLE_CHARS = 40


def _last_char(element: Any) -> str:
    """The last character of ``element``'s words ("" for none)."""
    texts = [text for text in element.itertext() if text]
    return texts[-1][-1:] if texts else ""


# How many spans around a link, and around the link after it, are looked through.
_MAX_GLUE_LEVELS = 2


# An inline element of words alone holding a colon, outside code (found by libxml2 in one
# pass; what follows it is judged in Python: a following-sibling step costs libxml2 a walk
# of every sibling after, quadratic on a line of 40,000 elements).
_COLON_LABELS = (
    "//*[self::span or self::strong or self::b or self::label or self::dfn][not(*)]"
    "[contains(., ':')][not(ancestor::pre or ancestor::code)]"  # (a slice's "1:" is code's)
)
# A label's words: a word, then words and no colon before its own.
_LABEL = re.compile(r"\s*[^\W\d_][^:]*:\s*")
_MAX_LABEL_CHARS = 40


# A line of words written straight in a <div> (a price, a heading the site wrote as a div, a
# note's label): trafilatura's precision mode reads a div's own text only on a page short of
# paragraphs, so it dropped the line, the price "$649.00" beside a struck "~~$799.00~~" that
# it kept. Such a div reads as a paragraph where it is one short line of inline elements
# with words outside links (a share bar's or a "Related" box's links stay the extractor's to
# judge), and sits in the article: beside the page's <h1>, or among paragraphs of the body
# (at least two, of :data:`_MIN_BODY_CHARS` together; a caption's credit beside a short
# caption, a date under each <h2> of a related-posts list stay out); or where it opens a
# note (see _NOTE_CLASS: Docusaurus's admonition, "caution", one word). Only on a page whose
# paragraphs are enough for trafilatura to pass its divs over: elsewhere it reads them, and
# a paragraph more changed which block it took for the article.
_LINE_INLINE = frozenset((
    "a", "abbr", "b", "bdi", "bdo", "big", "br", "cite", "code", "data", "del", "dfn", "em",
    "font", "i", "img", "ins", "kbd", "mark", "q", "s", "samp", "small", "span", "strike",
    "strong", "sub", "sup", "time", "tt", "u", "var",
))  # fmt: skip
# Inline elements trafilatura reads as emphasis (its "hi"), and as struck text (its "del"):
# in a div's line, the words it keeps where it drops the div's own text.
_EMPHASIS = frozenset(("b", "strong", "i", "em", "u", "mark", "s", "del", "strike"))
# trafilatura's min_extracted_size: on a page of fewer characters of paragraphs it reads the
# divs' own text itself.
_MIN_EXTRACTED_CHARS = 250
_MAX_LINE_DIV_ELEMENTS = 30
_MAX_LINE_DIV_CHARS = 200
_MIN_LINE_DIV_WORDS = 2
_MIN_BODY_CHARS = 300
# trafilatura's min_extracted_size (250) and a margin for the paragraphs it prunes before it
# counts (a comment area): a line made a paragraph took a recipe's page past its count, and
# its divs (the recipe's summary and notes) were no longer read.
_MIN_PAGE_PARAGRAPH_CHARS = 400


def _lines_as_paragraphs(tree: Any) -> None:
    """Make each ``<div>`` that is one short line of the article's words a ``<p>`` (see
    :data:`_LINE_INLINE`). Each div's elements are read up to a bound, each parent's children
    once, the page's paragraphs once and only if a div qualifies: linear in the page."""
    in_article: dict[Any, bool] = {}

    def holds_article(parent: Any) -> bool:
        if parent not in in_article:
            body = 0
            paragraphs = 0
            for child in parent:
                if child.tag == "h1":
                    body = _MIN_BODY_CHARS
                    paragraphs = 2
                    break
                if child.tag == "p" and body < _MIN_BODY_CHARS:
                    paragraphs += 1
                    body += len(child.text_content())
            in_article[parent] = paragraphs >= 2 and body >= _MIN_BODY_CHARS
        return in_article[parent]

    lines = []
    partial = []  # lines trafilatura reads in part, from their first emphasis on
    for div in tree.iter("div"):
        parent = div.getparent()
        if parent is None or parent.tag == "p" or parent.tag in _LINE_INLINE:
            continue
        words = 0
        chars = 0
        linked: set[Any] = set()  # the links in the div and what they hold
        emphasis = False
        before = 0  # the words before its first emphasis
        priced = False  # it shows an offer's price (see _kinds.mark_prices)
        for count, element in enumerate(div.iter()):
            if count > _MAX_LINE_DIV_ELEMENTS or (
                element is not div and element.tag not in _LINE_INLINE
            ):
                break
            if element.tag in _EMPHASIS and not emphasis:
                emphasis, before = True, words
            priced = priced or "price" in (element.get("itemprop") or "").lower().split()
            if element.tag == "a" or element.getparent() in linked:
                linked.add(element)
            tail = element.tail if element is not div else None  # the div's own is not its
            chars += len(element.text or "") + len(tail or "")
            if element not in linked:
                words += len(_WORD.findall(element.text or ""))
            if element.getparent() not in linked:
                words += len(_WORD.findall(tail or ""))
        else:
            # A note's label (Docusaurus's "caution" opening its admonition) is one word.
            label = (
                words > 0
                and div is parent[0]
                and _matches(_NOTE_CLASS, _NOTE_WORDS, parent.get("class"))
            )
            if priced and chars <= _MAX_LINE_DIV_CHARS:
                # A product's price, which trafilatura would drop with the div's own text.
                partial.append(div)
            elif emphasis and before and words >= _MIN_LINE_DIV_WORDS:
                # trafilatura (precision mode) keeps such a div's words from its first
                # emphasis on and loses those before: "Export your list **with consent**"
                # read "**with consent**", another sentence, and a price line
                # "$49.99 <s>$69.99</s>" the old price alone. As a paragraph it is whole.
                partial.append(div)
            elif chars <= _MAX_LINE_DIV_CHARS and (
                label or (words >= _MIN_LINE_DIV_WORDS and holds_article(parent))
            ):
                lines.append(div)
            elif emphasis and words >= _MIN_LINE_DIV_WORDS:
                lines.append(div)  # (its words from the first on: "**Export**your" spaced)
    if not lines and not partial:
        return
    if _paragraph_chars(tree) >= _MIN_PAGE_PARAGRAPH_CHARS:
        for div in lines + partial:
            div.tag = "p"
    elif partial and _paragraph_chars(tree, kept=True) >= _MIN_EXTRACTED_CHARS:
        # Under the margin, a line read in part: trafilatura counts the paragraphs it keeps
        # (not a comment area's, which it prunes first), and past its bound it reads no div
        # whole, so the line loses its first words; the paragraph it becomes changes no
        # count that decides (the bound is passed without it).
        for div in partial:
            div.tag = "p"


# Prose written straight in a <div> beside blocks or split in lines by <br> (a forum post's
# body in phpBB's or vBulletin's div.content; the reply after a post's quote): trafilatura's
# precision mode reads a div's own text only on a page short of paragraphs, so on a page
# with enough of them elsewhere (another post, the comments) it dropped the post, or kept a
# reply's quote and lost the reply. Each run of such text (the div's own text and inline
# elements, up to the next block) reads as a paragraph where it is prose, of at least
# :data:`_MIN_BARE_RUN_WORDS` words outside links. A div of one run and no line break (an
# image's caption, a teaser, a line of a page written in divs) stays the extractor's, or
# _lines_as_paragraphs', to judge: on the development sets it was mostly not the article.
_MIN_BARE_RUN_WORDS = 25


def _bare_runs_as_paragraphs(tree: Any) -> None:
    """Wrap each run of prose written straight in a ``<div>`` beside blocks or split by
    ``<br>`` in a ``<p>`` (see :data:`_MIN_BARE_RUN_WORDS`). Each div's children are read
    once: linear in the page."""
    runs: list[tuple[Any, int, int]] = []  # (div, the block before it or -1, the block after)
    for div in tree.iter("div"):
        parent = div.getparent()
        if parent is None or parent.tag == "p":
            continue
        found: list[tuple[int, int, bool]] = []
        start, words, lines, blocks = -1, _count_run(div.text), False, False
        for index, child in enumerate(div):
            if isinstance(child.tag, str) and child.tag not in _LINE_INLINE:
                found.append((start, index, lines)) if words >= _MIN_BARE_RUN_WORDS else None
                start, words, lines, blocks = index, _count_run(child.tail), False, True
                continue
            if child.tag == "br":
                lines = True
            elif child.tag != "a" and isinstance(child.tag, str):
                words += _count_run(child.text_content())
            words += _count_run(child.tail)
        if words >= _MIN_BARE_RUN_WORDS:
            found.append((start, len(div), lines))
        runs.extend((div, first, end) for first, end, lined in found if blocks or lined)
    for div, start, end in reversed(runs):  # later runs first: the indices stay true
        paragraph = div.makeelement("p", {})
        if start < 0:
            paragraph.text, div.text = div.text, None
        else:
            paragraph.text, div[start].tail = div[start].tail, None
        for child in list(div)[start + 1 : end]:
            paragraph.append(child)  # moves it, with its tail
        div.insert(start + 1, paragraph)


def _count_run(text: str | None) -> int:
    return len(_WORD.findall(text)) if text else 0


_COMMENTS_NAME = re.compile(r"comment", re.IGNORECASE)


def _paragraph_chars(tree: Any, kept: bool = False) -> int:
    """The characters of the page's paragraphs, counted up to :data:`_MIN_PAGE_PARAGRAPH_CHARS`;
    if ``kept``, not those in an element whose class or id names comments (which trafilatura
    prunes before it counts)."""
    chars = 0
    for paragraph in tree.iter("p"):
        if kept and any(
            _COMMENTS_NAME.search((up.get("class") or "")[:_MAX_CHECKED_CHARS])
            or _COMMENTS_NAME.search((up.get("id") or "")[:_MAX_CHECKED_CHARS])
            for up in itertools.chain((paragraph,), paragraph.iterancestors())
        ):
            continue
        chars += len(paragraph.text_content())
        if chars >= _MIN_PAGE_PARAGRAPH_CHARS:
            break
    return chars


def _outer_blocks(tree: Any) -> Iterator[Any]:
    """Each ``<pre>`` that no other ``<pre>`` nor a table cell holds (but the only cell of its
    table, see :func:`_in_lone_cells`), in document order, in one walk (an ancestor's check
    for each would be quadratic in their nesting)."""
    import lxml.etree

    if next(tree.iter("pre"), None) is None:
        return  # most pages: known at once, without the walk (14 ms for 100,000 cells)
    holding = 0  # the open elements around the walk that hold what is inside them
    cells = 0  # of which table cells
    lone: dict[Any, bool] = {}  # each table asked about, whether it has one cell
    for event, element in lxml.etree.iterwalk(
        tree, events=("start", "end"), tag=("pre", "td", "th")
    ):
        if event == "end":
            holding -= 1
            cells -= element.tag != "pre"
            continue
        if element.tag == "pre" and (
            not holding or (holding == cells and _in_lone_cells(element, lone))
        ):
            yield element
        holding += 1
        cells += element.tag != "pre"


def _in_lone_cells(pre: Any, lone: dict[Any, bool]) -> bool:
    """Whether each table cell around ``pre`` is its table's only one: a box laying out its
    content (GitHub's issue comments, each body a ``<td class="d-block comment-body">``),
    whose blocks stay blocks, the ``<pre>`` a code block whose language and blank lines the
    readings need back (each comment's code lost its language). ``lone`` keeps each table's
    answer: each is counted once, however many blocks it holds."""
    for cell in pre.iterancestors("td", "th"):
        table = next(cell.iterancestors("table"), None)
        if table is None:
            return False
        if table not in lone:
            lone[table] = len(table.xpath(_OWN_CELLS)) == 1
        if not lone[table]:
            return False
    return True


# A table's own cells, not its nested tables'.
_OWN_CELLS = "(tr | thead/tr | tbody/tr | tfoot/tr)/*[self::td or self::th]"


def _pre_as_code(tree: Any) -> None:
    """A ``<pre>`` reads as a code block. Without ``<code>`` in it, its text goes alone in one
    ``<span>``: trafilatura takes a ``<pre>`` for code only when it wraps a single span,
    highlight.js's spans or text it knows for code, and read the others as paragraphs, a
    preformatted listing's lines and indentation run into prose. (Markup in it goes, as it
    goes in any code block: a fence holds no links.) A block of one line ends with a newline,
    as most do: trafilatura wrote one without it as inline code ("`pip install x`"), the
    language lost and the next heading run onto its line. One in a table cell is left to
    the cell's rules, one holding another to :func:`_flatten_nested_pre` (such a page goes
    to html-to-markdown, see _too_heavy)."""
    for pre in list(_outer_blocks(tree)):
        if pre.find(".//pre") is not None:
            continue
        text = pre.text_content()  # its <br>s are newlines already (see _code_lines)
        if not text.strip():
            continue
        if "\n" not in text:
            text += "\n"
            _end_line(pre)
        if pre.find(".//code") is not None or (
            len(pre) == 1 and pre[0].tag == "span" and not pre.text
        ):
            continue
        for child in list(pre):
            pre.remove(child)
        pre.text = None
        span = pre.makeelement("span")
        span.text = text
        pre.append(span)


def _end_line(element: Any) -> None:
    """A newline after the last text ``element`` holds, where it stands (in the innermost
    element around it: a block's ``<code>``, say)."""
    while len(element) and not element[-1].tail and element[-1].tag not in _VOID:
        element = element[-1]
    if len(element):
        element[-1].tail = f"{element[-1].tail or ''}\n"
    else:
        element.text = f"{element.text or ''}\n"


# The classes of a line's number before it in a code block: Chroma's (Hugo) "ln", and "lnt" in
# its gutter, Pygments' "linenos" (MkDocs Material's, empty, shows its number by CSS).
_LINE_NUMBER_CLASSES = frozenset(("ln", "lnt", "linenos", "lineno"))
_LINE_NUMBERS = re.compile(r"[\d\s]*")


def _code_lines(tree: Any) -> None:
    """Make each ``<pre>``'s text its code's lines, as a reader copies them, before anything
    reads it: a gutter of line numbers beside the code (a table of one row, the numbers'
    cell and the code's: Pygments' ``highlighttable``, which Sphinx and MkDocs Material
    write, Chroma's ``lntable`` (Hugo), Rouge's ``rouge-table`` (Jekyll)) gives way to the
    code's ``<pre>``; a line's own number before it (Chroma's, Pygments' inline ones) goes;
    a ``<br>`` becomes the newline it shows (Prism's lines end in one: Docusaurus); a link
    leaves its words (a fence holds no links: MkDocs Material anchors each line, rustdoc
    and Javadoc link the types). Without it, the extractor dropped such a table, or read it
    as a table of numbers and code, the lines read "1package main", a block's text had no
    lines to match its fence's (see _code_blocks), and trafilatura dropped a ``<code>``
    holding a link whole."""
    import lxml.etree

    if next(tree.iter("pre"), None) is None:
        return  # most pages: known at once, without the walk
    for pre in list(tree.iter("pre")):
        table = _gutter_table(pre)
        if table is None:
            continue
        pre.tail = table.tail
        table.getparent().replace(table, pre)
        if any(above.tag == "pre" for above in itertools.islice(pre.iterancestors(), 2)):
            pre.drop_tag()  # Rouge's table was inside the block's own <pre><code>
    gone: dict[Any, str] = {}
    outer: list[Any] = []  # the <pre>s no other holds
    depth = 0  # of the <pre>s open around the walk
    for event, element in lxml.etree.iterwalk(
        tree, events=("start", "end"), tag=("pre", "br", "span", "div")
    ):
        if element.tag == "pre":
            depth += 1 if event == "start" else -1
            if event == "start" and depth == 1:
                outer.append(element)
        elif not depth:
            continue
        elif element.tag == "div":
            # A block in a block of code is a line of it (Expressive Code, Astro Starlight's:
            # each line a <div class="ec-line">, no newline between): its lines ran into one
            # in trafilatura's reading, and html-to-markdown put a blank line after each. A
            # span ending in the newline it shows reads the same in both. It starts on a line
            # of its own too (rustdoc's <div class="where"> after a declaration's words read
            # "pub struct Vec<T, A = Global>where").
            if event == "start":
                _start_line(element)
            if event == "end":
                followed = element.getnext() is not None or bool(element.tail)
                if followed and not _ends_line(element):
                    element.tail = "\n" + (element.tail or "")
                element.tag = "span"
        elif event == "end":
            continue
        elif element.tag == "br":
            gone[element] = "\n"
        elif not _LINE_NUMBER_CLASSES.isdisjoint(
            (element.get("class") or "")[:_MAX_CHECKED_CHARS].split()
        ) and _LINE_NUMBERS.fullmatch(element.text_content()):
            gone[element] = ""
    _structure.replace_by_texts(gone)
    for pre in outer:
        lxml.etree.strip_tags(pre, "a")


def _fragments_as_pre(tree: Any) -> None:
    """Make each of Doxygen's code blocks a ``<pre>``: it writes one as a ``<div
    class="fragment">`` of ``<div class="line">``, each line's number in a ``<span
    class="lineno">``, and no ``<pre>`` (its stylesheet keeps the spaces). Each line was a
    short div the extractor passed over, and the example went whole; as a ``<pre>`` its
    divs read as its lines and the numbers go (see _code_lines). The newlines between the
    divs in the source are no lines of the block (a browser collapses them outside a
    ``<pre>``): they go, or each line read with a blank one after it."""
    for div in tree.xpath(_FRAGMENT_PATH):
        if (div.text or "").strip() or not all(
            child.tag == "div"
            and "line" in (child.get("class") or "").split()
            and not (child.tail or "").strip()
            for child in div
        ):
            continue
        div.tag = "pre"
        div.text = None
        for child in div:
            child.tail = None


# Doxygen's code block (see _fragments_as_pre): XPath in libxml2, no walk in Python.
_FRAGMENT_PATH = (
    "//div[contains(concat(' ', normalize-space(@class), ' '), ' fragment ') and div"
    " and not(ancestor::pre)]"
)


def _start_line(element: Any) -> None:
    """A newline before ``element`` where the words just before it, in its parent, do not
    end a line already."""
    before = element.getprevious()
    if before is not None:
        if before.tail:
            if before.tail.rstrip(" \t") and not before.tail.endswith("\n"):
                before.tail += "\n"
        elif not _ends_line(before) and before.xpath("string-length(normalize-space(.))"):
            before.tail = "\n"
        return
    parent = element.getparent()
    text = (parent.text or "") if parent is not None else ""
    if text.rstrip(" \t") and not text.endswith("\n"):
        parent.text = text + "\n"


def _ends_line(element: Any) -> bool:
    """Whether the text of ``element`` ends in a newline (read down its last children: the
    parser bounds the depth)."""
    node = element
    while len(node):
        last = node[-1]
        if last.tail:
            return str(last.tail).endswith("\n")
        node = last
    return str(node.text or "").endswith("\n")


def _gutter_table(pre: Any) -> Any:
    """The table of a code block's line numbers and code whose code cell holds ``pre`` (see
    _code_lines), or ``None``: one row of two cells, the first holding only numbers, the
    second ``pre`` alone of code."""
    cell = next((a for a in itertools.islice(pre.iterancestors(), 3) if a.tag == "td"), None)
    if cell is None or cell.getnext() is not None:
        return None
    gutter, row = cell.getprevious(), cell.getparent()
    if gutter is None or gutter.tag != "td" or gutter.getprevious() is not None:
        return None
    table = row.getparent()
    if table is not None and table.tag == "tbody":
        if table.getprevious() is not None or table.getnext() is not None:
            return None
        table = table.getparent()
    if table is None or table.tag != "table":
        return None
    if row.getprevious() is not None or row.getnext() is not None:
        return None
    # The cell's shape before the gutter's text: a cell of many <pre>s would read its gutter
    # once for each of them.
    if len(list(itertools.islice(cell.iter("pre"), 2))) != 1:
        return None
    numbers = gutter.text_content()
    if not numbers.strip() or not _LINE_NUMBERS.fullmatch(numbers):
        return None
    return table


def _mark_task_boxes(tree: Any, hides: Callable[[str, Any], bool] | None) -> None:
    """A checkbox that opens a list item (a task list's, GitHub's ``- [x]``), perhaps in a
    ``<label>`` that opens it, is written as GFM writes it, ``[x]`` or ``[ ]``, before the form
    controls are dropped: without it a done task read like one still to do. (trafilatura
    escapes the brackets: see :func:`_unescape_task_boxes`.) A box no reader sees (hidden by
    its attributes or the page's stylesheet: a CSS-only accordion's toggle) marks nothing."""
    for box in tree.iter("input"):
        if (box.get("type") or "").strip().lower() != "checkbox" or not _opens(box):
            continue
        if _hiding(box.attrib) == _GONE or (hides is not None and hides(box.tag, box.attrib)):
            continue
        holder = box.getparent()
        if holder.tag == "label" and _opens(holder):
            holder = holder.getparent()
        if holder.tag == "li":
            mark = "[x]" if "checked" in box.attrib else "[ ]"
            box.tail = f"{mark} {(box.tail or '').lstrip()}"


def _opens(element: Any) -> bool:
    """Whether ``element`` comes first in its parent, no words before it."""
    parent = element.getparent()
    return parent is not None and element.getprevious() is None and not (parent.text or "").strip()


# A task's box as trafilatura writes it, its brackets escaped, at the start of a list item.
_ESCAPED_TASK_BOX = re.compile(r"^( *(?:[-*+]|\d{1,9}[.)]) )\\\[([ x])\\\] ", re.MULTILINE)


def _unescape_task_boxes(markdown: str) -> str:
    r"""Task boxes' brackets unescaped at list items' starts, outside fenced code (where
    ``- \[x\]`` is a page's own text: a Markdown tutorial's)."""
    return _outside_fences(markdown, lambda text: _ESCAPED_TASK_BOX.sub(r"\1[\2] ", text))


def _outside_fences(markdown: str, rewrite: Callable[[str], str]) -> str:
    """``markdown`` with ``rewrite`` applied to each stretch outside its fenced code
    blocks, the blocks as they are."""
    pieces: list[str] = []
    done = 0
    for opening, closing in _fences(markdown):
        pieces += [rewrite(markdown[done : opening.start()])]
        pieces += [markdown[opening.start() : closing.end()]]
        done = closing.end()
    return "".join(pieces) + rewrite(markdown[done:])


def _unescape_word_underscores(markdown: str) -> str:
    r"""An underscore between two letters or digits unescaped, outside code: trafilatura
    wrote ``enqueued\_timestamp``, ``@s\_bielefeld``, ``Director\_Oh``, a backslash the
    model reads as part of the name, where Markdown needs none (an underscore inside a word
    never starts nor ends emphasis); and a line of underscores alone (``\_\_\_``), a
    rule. Not in fenced code, nor on a line holding inline code or a formula (``$...$``),
    where a backslash is the page's own."""
    return _outside_fences(markdown, _word_underscores)


def _word_underscores(text: str) -> str:
    """``text`` (no code block) with :data:`_ESCAPED_WORD_UNDERSCORE` unescaped on each line
    holding no inline code nor formula."""
    if "\\_" not in text:
        return text
    return "\n".join(
        [
            (
                line.replace("\\_", "_")
                if _ESCAPED_RULE.match(line)
                else _ESCAPED_WORD_UNDERSCORE.sub("_", line)
            )
            if "\\_" in line and "`" not in line and "$" not in line
            else line
            for line in text.split("\n")
        ]
    )


# An escaped underscore between two letters or digits (one after an escaped backslash,
# ``\\_``, is the page's own backslash and underscore, and stays); and a line of escaped
# underscores alone, a news agency's "___" before its credits, which reads as the rule
# between the two it is (Markdown's thematic break) rather than "\\_\\_\\_".
_ESCAPED_WORD_UNDERSCORE = re.compile(r"(?<=[^\W_])\\_(?=[^\W_])")
_ESCAPED_RULE = re.compile(r"(?:\\_){3,}[ \t]*$")


# The language a page names for a code block, by class: ``language-python`` (Prism,
# highlight.js, Markdown renderers), ``lang-js`` (Prettify), ``highlight-toml`` (Sphinx, on a
# wrapper), ``highlight-source-rust`` (GitHub, on a wrapper).
_CODE_LANGUAGE = re.compile(
    r"(?:^|\s)(?:language|lang|highlight-source|highlight)-([A-Za-z0-9_+#.-]{1,32})(?=\s|$)"
    # (and SyntaxHighlighter's "brush: js", which MDN writes on its <pre>s)
    r"|(?:^|\s)brush:\s*([A-Za-z0-9_+#.-]{1,32})(?=[\s;]|$)"
)
# On a wrapper only what names a code block's language there: GitHub's highlight-source-* and
# highlight-text-* (its grammar's scope, whose first name is the language's: "source-python",
# "text-html-basic"), Sphinx's highlight-*, which it writes beside "notranslate" (as GitHub
# does), and language-* (MkDocs, VitePress: their <pre> names none). A "highlight-box" or a
# "lang-en" section is a page's own class, not a language.
_WRAPPER_LANGUAGE = re.compile(
    r"(?:^|\s)highlight-(?:source|text)-([A-Za-z0-9_+#.]{1,32})(?=[\s-]|$)"
    r"|^(?=.*(?:^|\s)notranslate(?:\s|$)).*?"
    r"(?:^|\s)highlight-(?!source-|text-)([A-Za-z0-9_+#.-]{1,32})(?=\s|$)"
    r"|(?:^|\s)language-([A-Za-z0-9_+#.-]{1,32})(?=\s|$)"
    r"|^(?=.*(?:^|\s)highlight(?:\s|$)).*?(?:^|\s)hl-([A-Za-z0-9_+#.-]{1,32})(?=\s|$)"
)
# Pygments writes its block as <div class="highlight"><pre>; Sphinx before 1.8 (and the sites
# its themes still build that way) names the language on the div around it, without the
# "notranslate" beside it: <div class="highlight-python"><div class="highlight"><pre>. On the
# wrapper of a Pygments block, highlight-* names its language, unless it names the wrapper
# (a page's "highlight-box", "highlight-wrapper" around its code: no language).
_PYGMENTS_BLOCK = re.compile(r"(?:^|\s)highlight(?:\s|$)")
_PYGMENTS_WRAPPER_LANGUAGE = re.compile(
    _WRAPPER_LANGUAGE.pattern + r"|(?:^|\s)highlight-(?!(?:wrapper|wrap|container|box|block|"
    r"area|outer|inner|frame|panel|section|content|code|holder|body)(?:\s|$))"
    r"([A-Za-z0-9_+#.-]{1,32})(?=\s|$)"
)
# The language as an attribute rather than a class: data-lang (Hugo's Chroma, Qiita's
# code-frame wrapper), data-language (rehype-pretty-code, Astro's Shiki, Expressive Code),
# data-code-block-lang (Medium's editor, on the one span its <pre> holds). On a wrapper only
# when it wraps this block alone (a label beside it at most): a section's data-lang="en" is
# the language its words are in.
_LANGUAGE_ATTRIBUTES = ("data-lang", "data-language", "data-code-block-lang")
_LANGUAGE_VALUE = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")
_NO_LANGUAGE = frozenset(("none", "default", "plain", "nohighlight"))
_MAX_CODE_BLOCKS = 1_000


@dataclass(frozen=True)
class _CodeBlock:
    """A ``<pre>`` of the page as :func:`_restore_code` looks for it in a reading."""

    key: str  # its first line that holds anything (see _code_key)
    language: str  # "" when the page names none
    lines: list[str]  # its lines, blank ones too, trailing spaces and edge blank lines off


def _code_blocks(tree: Any) -> list[_CodeBlock]:
    """Each ``<pre>`` of the page as a reading may have written it without something it
    holds: a language it names (on its ``<code>``, itself or one of its two nearest
    wrappers), or a blank line. In document order, the first :data:`_MAX_CODE_BLOCKS` that
    no other ``<pre>`` nor a table cell holds (see :func:`_outer_blocks`)."""
    blocks: list[_CodeBlock] = []
    labels: list[Any] = []  # (see _language_labels)
    for pre in itertools.islice(_outer_blocks(tree), _MAX_CODE_BLOCKS):
        code = pre.find("code")
        if code is None and len(pre) == 1:
            code = pre[0]  # the one element that holds the code (Medium's <span>)
        wrappers = list(itertools.islice(pre.iterancestors(), 2))
        inner = (wrappers[0].get("class") or "") if wrappers else ""
        pygments = _PYGMENTS_BLOCK.search(inner[:_MAX_CHECKED_CHARS]) is not None
        text = pre.text_content().strip("\n")
        named = ""
        for element, names_it in (
            (code, _CODE_LANGUAGE),
            (pre, _CODE_LANGUAGE),
            *(
                (wrapper, _PYGMENTS_WRAPPER_LANGUAGE if pygments and level else _WRAPPER_LANGUAGE)
                for level, wrapper in enumerate(wrappers)
            ),
        ):
            if element is None or not isinstance(element.tag, str):
                continue
            match = names_it.search((element.get("class") or "")[:_MAX_CHECKED_CHARS])
            if match:
                named = match.group(1) or match.group(match.lastindex or 1)
                break
            given = next(filter(None, map(element.get, _LANGUAGE_ATTRIBUTES)), "").strip()
            if _LANGUAGE_VALUE.fullmatch(given) and (
                element is code or element is pre or _wraps_alone(element, text)
            ):
                named = given
                break
        language = "" if named.lower() in _NO_LANGUAGE else named
        if language:
            labels.extend(_language_labels(pre, language))
        # Every block is listed, those with nothing to restore too: fences are matched to
        # blocks in the page's order, and a block left out let the fence of an earlier one
        # with the same first line take a later block's language.
        lines = [line.rstrip() for line in text.split("\n")]
        while lines and not lines[-1]:
            lines.pop()
        first = next((number for number, line in enumerate(lines) if line), len(lines))
        if lines[first:]:
            blocks.append(_CodeBlock(_code_key(lines[first]), language, lines[first:]))
    _drop_all(labels)
    return blocks


def _language_labels(pre: Any, language: str) -> list[Any]:
    """The label naming ``pre``'s ``language`` right before it, or before the wrapper it
    opens (MDN's ``<div class="example-header"><span class="language-name">js</span>
    </div>`` over each block): read as a paragraph "js" over the block, whose fence now
    names the language."""
    node = pre
    for _ in range(2):
        parent = node.getparent()
        if parent is None:
            break
        before = node.getprevious()
        if before is not None:
            words = before.text_content()[: len(language) + 20].strip().lower()
            if words == language.lower() and before.find(".//pre") is None:
                return [before]
            break
        if (parent.text or "").strip():
            break
        node = parent
    return []


_MAX_BLOCK_LABEL = 100  # the words a wrapper of one code block holds beside it: a file's name


def _wraps_alone(wrapper: Any, code: str) -> bool:
    """Whether ``wrapper`` holds one code block (of text ``code``) and little else."""
    if next(itertools.islice(wrapper.iter("pre"), 1, None), None) is not None:
        return False
    return (
        len(_leading_text(wrapper, len(code) + 2 * _MAX_BLOCK_LABEL))
        <= len(code) + _MAX_BLOCK_LABEL
    )


_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)


def _code_key(line: str) -> str:
    return " ".join(line.split())


def _fences(markdown: str) -> Iterator[tuple[re.Match[str], re.Match[str]]]:
    """Each fenced block of ``markdown``: its opening fence line and its closing one, found
    by one regular expression (a reading of 500,000 lines of code is not walked line by line
    in Python). A fence line inside a block that cannot close it (shorter, another
    character, an info string: CommonMark, see tidy_markdown) is a line of the code."""
    opening: re.Match[str] | None = None
    for fence in _FENCE_LINE.finditer(markdown):
        if opening is None:
            opening = fence
        elif fence.group(1).startswith(opening.group(1)) and not fence.group(2).strip():
            yield opening, fence
            opening = None


def _restore_code(markdown: str, blocks: list[_CodeBlock]) -> str:
    """Put back in each fenced block of ``markdown`` what the page's ``<pre>`` had and the
    converter left out: the language it names, as the fence's info string (trafilatura wrote
    none), and its blank lines (trafilatura dropped every one, running a listing's functions
    together). A fenced block is the page's block whose first line it starts with, next in
    the page's order after the last one found (an extractor may have dropped some); its
    blank lines come back only where its other lines are the page's, the same and in order
    (:func:`_fences` finds the blocks)."""
    if not blocks:
        return markdown
    where: dict[str, list[int]] = {}
    for index, block in enumerate(blocks):
        where.setdefault(block.key, []).append(index)
    pieces: list[str] = []
    done = 0  # markdown[:done] is in pieces
    after = 0  # the next block of the page that may still be found
    for opened, fence in _fences(markdown):
        body = markdown[opened.end() + 1 : fence.start()]
        candidates = where.get(_code_key(body.split("\n", 1)[0]), [])
        found = bisect.bisect_left(candidates, after)
        if found == len(candidates):
            continue
        block = blocks[candidates[found]]
        after = candidates[found] + 1
        head = opened.group(0)
        if block.language and opened.group(2).strip() != block.language:
            # (html-to-markdown names the language of a <pre>'s own class, "lang-py", where
            # the page names its code's, "language-python", which this rule reads first: a
            # block read "py" or "python" as one converter or the other read the page.)
            # (The fence's indent kept: a block in a list item is indented with it, and
            # one at the line's start ended the list, the code's lines indented in it.)
            head = f"{markdown[opened.start() : opened.end(1)]}{block.language}"
        lines = body.split("\n")[:-1]  # the body ends with its last line's newline
        written = [line.rstrip() for line in lines if line.strip()]
        if len(block.lines) > len(lines) and written == [line for line in block.lines if line]:
            lines = block.lines
        pieces += [markdown[done : opened.start()], head, "\n", *(f"{line}\n" for line in lines)]
        done = fence.start()
    return "".join(pieces) + markdown[done:] if pieces else markdown


@functools.cache
def _attributed_or_dialog() -> Any:
    """Elements with any attribute, and dialogs, in document order; compiled on first use,
    as lxml is imported (start-up of a command that reads no HTML). One step with a
    predicate, not a union: libxml2 merged ``//*[@*] | //dialog`` in time quadratic in the
    two sets (30,000 dialogs among 50,000 elements with attributes: 3 s); and one step from
    the root, not ``//*[...]``, whose matches, gathered child step by child step from every
    node, libxml2 merged in time quadratic in them when they lie at different depths (20,000
    lists of tabs: 1.1 s; the same ``/descendant::*`` takes 0.03 s). So every such path here."""
    import lxml.etree

    return lxml.etree.XPath("/descendant::*[@* or self::dialog]")


@functools.cache
def _hiding_or_dialog() -> Any:
    """Elements with an attribute of :data:`_HIDING_ATTRIBUTES`, and dialogs, in document
    order: all that :func:`_drop_unseen` can drop on a page without style rules (an id or a
    class alone hides nothing there). One step from the root, as in
    :func:`_attributed_or_dialog`."""
    import lxml.etree

    held = " or ".join(f"@{name}" for name in sorted(_HIDING_ATTRIBUTES))
    return lxml.etree.XPath(f"/descendant::*[{held} or self::dialog]")


def _drop_unseen(tree: Any, rules: StyleRules | None = None) -> None:
    """Drop what a reader never sees (scripts, templates, hidden elements, closed dialogs,
    what the page's ``rules`` hide) before the page's links are listed: the list is the
    navigation a reader has, not links a page hides for the model alone."""
    _open_shadow_roots(tree)
    _strip_all(tree, *_UNSEEN_TAGS)
    hides = rules.asker() if rules is not None else None
    doomed = []
    veiled: list[Any] = []
    # Only dialogs and elements with an attribute these checks read (as in _clean), the
    # rest left out by libxml2: a page of 330,000 bare <p>s took 0.13 s more with its links
    # asked for, each element walked in Python (0.03 s so). Without style rules, only those
    # with an attribute that hides: 49,000 elements with an id each were walked for nothing.
    found = _attributed_or_dialog() if hides is not None else _hiding_or_dialog()
    for el in found(tree):
        if el.tag in ("html", "body") or (
            el.tag != "dialog" and _CHECKED_ATTRIBUTES.isdisjoint(el.keys())
        ):
            continue
        hiding = _hiding(el.attrib)
        if (
            hiding == _GONE
            or (el.tag == "dialog" and "open" not in el.attrib)
            or (hides is not None and hides(el.tag, el.attrib))
        ):
            doomed.append(el)
        elif hiding == _VEILED:
            veiled.append(el)
    _drop_all(doomed)
    _unveil(veiled, [])


def _style_rules(tree: Any, text: str) -> StyleRules | None:
    """What the page's own ``<style>`` elements hide (see :mod:`webward._stylesheet`), read
    before cleaning drops them; ``None`` for nothing. A sheet inside ``<noscript>`` or
    ``<template>`` can show but not hide: a reader with scripts never applies it. Nothing is
    hidden by visibility on a page (``text``) that makes anything visible again in a style:
    inside a hidden element, that one shows."""

    def sheets() -> Iterator[tuple[str, bool]]:
        for _, style in _walk(tree, "style"):
            applies = sheet_applies(style.get("media"), style.get("type")) and not any(
                True for _ in style.iterancestors("noscript", "template")
            )
            yield style.text or "", applies

    return read_sheets(sheets(), by_visibility=not _shows_visible(text))


def _raw_style_rules(text: str) -> StyleRules | None:
    """What the page's ``<style>`` elements hide, read from its text rather than its tree:
    for a page the parser cut short, whose deeper sheets are not in the tree (a sheet 3,000
    levels down hid nothing from the parser-free reading). Whether each applies is read from
    its ``media`` and ``type`` alone (its place is not known without a parser). One pass:
    each sheet is found once, and the search goes on after its end."""
    lowered = _ascii_lower(text)

    def sheets() -> Iterator[tuple[str, bool]]:
        pos = 0
        while (start := lowered.find("<style", pos)) != -1:
            after = start + len("<style")
            if lowered[after : after + 1] not in (" ", "\t", "\n", "\f", "\r", "/", ">"):
                pos = after  # <styles>, <stylesheet>: another element
                continue
            close = lowered.find(">", after)
            if close == -1:
                return
            end = lowered.find("</style", close)
            attrs = _folded_attributes(text[start : close + 1])
            applies = sheet_applies(attrs.get("media"), attrs.get("type"))
            yield text[close + 1 : len(text) if end == -1 else end], applies
            if end == -1:
                return
            pos = end + len("</style")

    return read_sheets(sheets(), by_visibility=not _shows_visible(text))


def _matches(pattern: re.Pattern[str], words: tuple[str, ...], value: str | None) -> bool:
    """Whether the start of ``value`` matches ``pattern``, which only values holding one of
    ``words`` (in lower case) can."""
    if not value:
        return False
    lowered = value[:_MAX_CHECKED_CHARS].lower()
    return _any_of(words)(lowered) is not None and pattern.search(lowered) is not None


@functools.cache
def _any_of(words: tuple[str, ...]) -> Callable[[str], re.Match[str] | None]:
    """A search for any of ``words``: one pass in C, where looking for each in turn from
    Python cost more (_matches asks it of most classes and ids of a page)."""
    return re.compile("|".join(map(re.escape, words))).search


def _bound_nesting(tree: Any) -> None:
    """Lists, quotes and definition lists nested past :data:`_MAX_PREFIX_DEPTH` levels (a
    quote counting two) become plain blocks, their items too: each level would add an indent
    or a "> " to every line below."""
    import lxml.etree

    depth = 0
    deep = []
    # Events for these four tags only (0.4 ms on an ordinary page). A quote counts two levels:
    # its "> " marks every line, the blank ones between paragraphs too.
    for event, element in lxml.etree.iterwalk(tree, events=("start", "end"), tag=_PREFIXED):
        levels = 2 if element.tag == "blockquote" else 1
        if event == "end":
            depth -= levels
            continue
        depth += levels
        if depth > _MAX_PREFIX_DEPTH:
            deep.append(element)
    for element in deep:
        element.tag = "div"
        for item in element.iterchildren(*_PREFIXED_ITEMS):
            item.tag = "div"


def _span(value: str | None) -> int:
    """A colspan or rowspan as a browser reads it: its leading digits, else 1; at most
    :data:`_MAX_SPAN`. (0, a rowspan down to the end of the table, counts as the most.)"""
    match = _SPAN_NUMBER.match(value or "")
    if match is None:
        return 1
    number = int(match.group(1))
    return _MAX_SPAN if number == 0 or number > _MAX_SPAN else number


def _bound_spans(cells: list[Any]) -> None:
    """The page's ``cells`` with a colspan or rowspan span at most :data:`_MAX_SPAN` columns
    and rows, and add at most :data:`_SPAN_BUDGET` cells; past it, cells lose their spans."""
    budget = _SPAN_BUDGET
    for cell in cells:
        attrs = cell.attrib
        columns, rows = _span(attrs.get("colspan")), _span(attrs.get("rowspan"))
        budget -= columns * rows - 1
        for name, number in (("colspan", columns), ("rowspan", rows)):
            if name not in attrs:
                continue
            if number == 1 or budget < 0:
                del attrs[name]
            else:
                attrs[name] = str(number)


def _image_alt(anchor: Any) -> str:
    image = anchor.find(".//img")
    return (image.get("alt") or "") if image is not None else ""


def _rewrite_links(tree: Any, base: str, collect: bool) -> tuple[Link, ...]:
    """Make every ``<a href>`` absolute (the extractors then need no base URL) and, if asked,
    collect the page's outbound http(s) links: de-duplicated, in document order."""
    page = base.split("#", 1)[0]
    seen: dict[str, int] = {}
    links: list[Link] = []
    link_url = _LinkUrls(base)
    budget = _LINK_URL_BUDGET
    rereads = MAX_LINKS
    for _, a in _walk(tree, "a"):
        href = a.get("href")
        if href is None:
            continue
        url = link_url(href)
        if url is None:
            if not href.strip().lower().startswith("mailto:"):
                del a.attrib["href"]  # javascript:, data: ...: nothing a reader can follow
            continue
        budget -= len(url)
        if not url or len(url) > _MAX_LINK_URL or budget < 0:
            del a.attrib["href"]  # its text stays (see _LINK_URL_BUDGET, _SLOW_LINKS)
            continue
        a.set("href", url)
        if not collect:
            continue
        target = url.split("#", 1)[0]
        if target == page:
            continue  # a jump within the page is not an outbound link
        # A link's text is read only when it is kept: a page may hold 100,000 anchors. One
        # whose text was blank is read again from the next anchor to its target, as long as
        # there are reads left: 1,000 anchors nested around 380 kB of no-break spaces each
        # read it all (1.3 s).
        if target in seen:
            index = seen[target]
            if not links[index].text and rereads > 0:
                rereads -= 1
                links[index] = Link(url=target, text=_link_text(a))
            continue
        if len(links) >= MAX_LINKS:
            continue
        seen[target] = len(links)
        links.append(Link(url=target, text=_link_text(a)))
    return tuple(links)


def _link_text(anchor: Any) -> str:
    """What a link says: its text, else its label, title or image's alt text."""
    return _collapse(anchor.text_content(), _MAX_LINK_TEXT) or _collapse(
        anchor.get("aria-label") or anchor.get("title") or _image_alt(anchor), _MAX_LINK_TEXT
    )


_solid = _shell.solid

# Characters of the scripts written without spaces between words, each of which says about as
# much as a word: Han ideographs (and their compatibility forms), kana, Hangul syllables.
_WIDE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
# What one of them weighs in the readings' measures of text (see _measure).
_WIDE_WEIGHT = 3


def _measure(text: str) -> int:
    """How much text ``text`` holds, for the bounds of a reading (a short page, one kept too
    little): its non-blank characters, each of a script written without spaces counting as
    :data:`_WIDE_WEIGHT` (a Chinese article of 250 characters says what one of 700 in
    English does, and was read whole as a short page, its menus and footer with it, or its
    reading taken for too little). Asked only of a text found short by its characters (a
    scan of 1 MB of Chinese takes 30 ms)."""
    return _solid(text) + (_WIDE_WEIGHT - 1) * sum(map(len, _WIDE.findall(text)))


def _visible_text(tree: Any) -> str:
    body = tree.find("body")
    return str((body if body is not None else tree).text_content())


def _has_room(tree: Any, page_text: str, words: float) -> bool:
    """Whether a second reading could have ``words`` words: the page has as many outside
    links. readability-lxml scores link-heavy blocks (menus, teaser lists) down and drops them,
    so their words stay out of its reading (a link inside a paragraph is a small exception).
    The links' words are counted only when the page's words leave room."""
    if page_text.isascii() and _at_most_words(page_text) < words:
        return False  # (most pages with no room, without counting their words)
    room = _count_words(page_text)
    if room < words:
        return False
    linked = " ".join(tree.xpath("//body//a//text()"))
    return room - _count_words(linked) >= words


def _words(text: str) -> list[str]:
    """Lowercase words of a reading, Markdown link targets left out (they are not text)."""
    return _WORD.findall(_unlinked(text))


def _unlinked(text: str) -> str:
    return _LINK_TARGET.sub("]", text).lower()


# For _count_words: in ASCII, \w is a letter, a digit or "_"; every other byte separates words.
_ASCII_WORD_BYTES = bytes(
    byte if chr(byte).isalnum() or chr(byte) == "_" else 0x20 for byte in range(256)
)


_WORD_MARKS = bytes(0x20 if b == 0x20 else 0x61 for b in _ASCII_WORD_BYTES)


_ASCII_WORD_CHARS = bytes(byte for byte in range(128) if _ASCII_WORD_BYTES[byte] != 0x20)


def _at_most_words(text: str) -> int:
    """An upper bound on ``_count_words(text)`` for ASCII ``text``: a word more than there are
    characters between words (each word after the first follows one). One byte pass that
    deletes the words' characters: a sixth of what counting the words costs."""
    return len(text.encode("ascii").translate(None, _ASCII_WORD_CHARS)) + 1


def _count_words(text: str) -> int:
    """``len(_WORD.findall(text))`` without the list: in ASCII text, words become
    whitespace-separated by one byte translation, which counts them five times as fast
    (0.3 ms rather than 1.4 for 100 kB of text; the reading decision counts a page's words and
    its reading's, and a long reading is mostly English prose)."""
    if text.isascii():
        marked = text.encode("ascii").translate(_WORD_MARKS)
        return marked.count(b" a") + (marked[:1] == b"a")
    return len(_WORD.findall(text))


@functools.cache
def _extractor(careful: bool = False) -> Any:
    """trafilatura's options, built once per process rather than on every page: Markdown,
    tables, links and formatting kept, comments dropped, precision-oriented. Quick (``fast``:
    its main extractor alone) unless ``careful``: its whole cascade then also compares the
    reading with its own readability and justext, which costs about a third of a conversion
    and, on the development sets, changed the reading only where the main extractor came out
    deficient (see :func:`_deficient`)."""
    from trafilatura.settings import Extractor

    return Extractor(
        output_format="markdown",
        tables=True,
        links=True,
        formatting=True,
        images=False,
        comments=False,
        precision=True,
        with_metadata=False,
        fast=not careful,
    )


@functools.cache
def _h2m_options() -> Any:
    """html-to-markdown's options for a whole page, built once per process."""
    import html_to_markdown as h2m

    return h2m.ConversionOptions(
        preprocessing=h2m.PreprocessingOptions(enabled=True, preset="standard"),
        extract_metadata=False,
        skip_images=True,
        autolinks=True,
        # A page's own "*" reads as its word, not as an emphasis marker (Sphinx's
        # <strong>**kwargs</strong> read "****kwargs**"), as trafilatura writes it. (Not "_":
        # it escaped the TeX of every formula, and between words it marks nothing.)
        escape_asterisks=True,
    )


def warm_up() -> None:
    """Pay the extractors' start-up now (the conversion zygote calls it before forking its
    workers): their options, and justext's stoplists of 100 languages, which trafilatura
    loads the first time it falls back to justext (about 0.25 s of CPU, once per process)."""
    _extractor()
    _extractor(careful=True)
    _h2m_options()
    try:
        from trafilatura.external import jt_stoplist_init

        jt_stoplist_init()
    except Exception:  # a trafilatura without it loads them when needed, as before
        pass


def _main_content(
    tree: Any, careful: bool = False, own: Container[str] = (), title: str = ""
) -> str:
    """trafilatura's reading of ``tree`` (which it prunes in place), as Markdown; ``title``
    is the page's (see :func:`_lift_title`)."""
    import trafilatura

    _structure.math_to_text(tree, "\\(", "\\)")  # trafilatura writes them as $...$
    _lift_title(tree, title)  # (before _guard_ampersands rewrites its words)
    for authors in tree.xpath(f"//*[@{_kinds.AUTHORS_MARK}]"):
        # A paper's authors, each a link, which trafilatura drops as a line of links (the
        # page's links list is gathered before: none is lost) or by its class ("authors",
        # as a news article's byline).
        for link in list(authors.iter("a")):
            link.drop_tag()
        for name in ("class", "id"):
            authors.attrib.pop(name, None)
    _lines_as_paragraphs(tree)
    _bare_runs_as_paragraphs(tree)
    _structure.mark_quotes(tree)
    _headings_over_tables(tree)  # (before the tables' first rows are read for headers)
    _structure.header_rows(tree)
    _structure.mark_joiners(tree)
    _guard_ampersands(tree)
    _blocks_in_headings(tree)
    _drop_empty_in_headings(tree)
    _unlink_headings(tree, own)
    _unlink_cited_lists(tree)
    _drop_orphan_credits(tree)
    _unwrap_embedded_posts(tree)
    _unformat_links(tree)
    _labelled_lines(tree)  # (before the headings in items become their words)
    _signatures_as_code(tree)
    _prototypes_as_code(tree)
    _headings_in_items(tree)
    _flat_inline_code(tree)
    try:
        out = trafilatura.extract(tree, options=_extractor(careful))
    except Exception:  # third-party code on hostile input: fall back, never crash
        return ""
    return _unindent_prose(_unglue_fences(_structure.restore(out or "")))


def _unindent_prose(markdown: str) -> str:
    """trafilatura's reading with the page's source indentation taken off its lines of prose,
    outside code blocks: it keeps the newline and indentation the page's HTML has inside a
    paragraph or before a heading (after a link, an empty anchor), and a line indented four
    spaces or more is a code block to Markdown, a heading so indented (``<a name="1"> </a>
    <h3>``) no heading at all, and a heading's words broken onto the next line ("### Prepared
    by [Ann" and "Woodlief,](…)") a heading of half its words. A list item's line keeps its
    indentation (a nested list's)."""
    if "\n    " not in markdown and "\n\t" not in markdown and markdown[:1] not in (" ", "\t"):
        return markdown  # (a search for a few characters first: see tidy_markdown)
    if _DEEP_INDENT.search(markdown) is None:
        return markdown
    return _outside_fences(markdown, _unindented)


def _unindented(text: str) -> str:
    """``text`` (no code block) unindented (see :func:`_unindent_prose`)."""
    return _DEEP_INDENT.sub("", _SPLIT_HEADING.sub(r"\1 ", text))


# A line of prose indented as code (four spaces or more, not a list item's), and a heading
# whose words go on, indented, on the next line (see _unindent_prose).
_DEEP_INDENT = re.compile(r"^[ \t]{4,}(?=\S)(?![-*+][ \t]|\d{1,9}[.)][ \t])", re.M)
_SPLIT_HEADING = re.compile(r"^(#{1,6} [^\n]*\S)[ \t]*\n[ \t]+(?=\S)", re.M)


# A code block after words on their line (Sphinx's API entry in a list item, a definition's
# paragraphs and then its example; numpydoc's "Examples" rubric before its doctest):
# trafilatura runs the blocks into one line, and the block's fence opened after the words
# ("- **Session**: A session. Basic Usage: ```"), no code block at all, its language lost.
# The fence goes to a line of its own, when a fence of its length closes it further down (a
# sentence ending in backticks stays prose, not a block swallowing the page). (Each line is
# tried from its start alone, and each run of backticks from the one character before it:
# linear.)
_GLUED_FENCE = re.compile(r"^([^\n]*?[^\n`\s])[ \t]*(`{3,})[ \t]*$", re.M)
_BARE_FENCE = re.compile(r"^ {0,3}(`{3,})[ \t]*$", re.M)


def _unglue_fences(markdown: str) -> str:
    """``markdown`` with each fence glued to the words before it on a line of its own (see
    :data:`_GLUED_FENCE`)."""
    if "`" not in markdown or "```" not in markdown:  # (one character first: see tidy_markdown)
        return markdown
    last_closer = {len(m.group(1)): m.start() for m in _BARE_FENCE.finditer(markdown)}

    def split(match: re.Match[str]) -> str:
        if last_closer.get(len(match.group(2)), -1) > match.end():
            return f"{match.group(1)}\n{match.group(2)}"
        return match.group(0)

    return _GLUED_FENCE.sub(split, markdown)


# An "&" that could start an entity (HTML5 decodes "&copy" even without its ";").
_ENTITY_AMP = re.compile(r"&(?=[#A-Za-z])")


def _guard_ampersands(tree: Any) -> None:
    """trafilatura decodes entities in the text it outputs once more, though the parser has
    decoded them already: "&amp;copy;" on the page (the words "&copy;") read "©", and a link's
    "?a=1&section=2" read "?a=1§ion=2". Its tree gets each such "&" escaped, which that last
    decoding turns back into the page's own."""
    # (The hrefs asked for, not every element for its href: a third of the time or less. The texts
    # searched only where the page's text, joined by libxml2, holds an "&" at all: most
    # pages' text does not, and the search of each text took 0.1 ms on a page of 100 kB.)
    for href in tree.xpath("/descendant::*/@href[contains(., '&')]"):
        href.getparent().set("href", _ENTITY_AMP.sub("&amp;", href))
    texts = (
        tree.xpath("/descendant::text()[contains(., '&')]")
        if "&" in tree.xpath("string(/)")
        else ()
    )
    for text in texts:
        parent = text.getparent()
        escaped = _ENTITY_AMP.sub("&amp;", str(text))
        if text.is_tail:
            parent.tail = escaped
        else:
            parent.text = escaped


def _h2m(html: str) -> str:
    import html_to_markdown as h2m

    markdown = h2m.convert(html, _h2m_options()).content or ""
    return _outside_fences(markdown, _escape_edge_underscores) if "_" in markdown else markdown


def _escape_edge_underscores(text: str) -> str:
    r"""``text`` (no code block) with each run of underscores at a word's edge escaped: a page's
    ``__init__`` (or ``_id_``) written as html-to-markdown leaves it is Markdown's strong
    emphasis around "init" (``*__init__*`` an emphasised strong "init"), where trafilatura's
    reading writes ``\_\_init\_\_``. An underscore inside a word (``my_var``) marks nothing
    and stays bare, as :func:`_unescape_word_underscores` leaves trafilatura's; code spans,
    formulas between dollars, link targets and autolinks are left as they are."""
    if "](" in text or "<" in text:
        # An opening that no closing follows ("](" with no ")" after it on its line, "<a:"
        # with no ">" before a space) had the pattern scan on to that line's or word's end,
        # again at each such opening: 200 kB of "](x_ " took 12 s. Such openings are parted
        # by a NUL first (the pattern never matched at them; nothing else reads a NUL, and
        # the page's own are none a reader sees), and joined again after.
        text = _parted_openings(text.replace("\0", ""))
        return _EDGE_UNDERSCORES.sub(_escaped_edge, text).replace("\0", "")
    return _EDGE_UNDERSCORES.sub(_escaped_edge, text)


def _parted_openings(text: str) -> str:
    """``text`` with each "](" after its line's last ")", and each "<" after its word's last
    ">", parted by a NUL: no link target, nor autolink, of :data:`_EDGE_UNDERSCORES` can
    open there, and the pattern no longer looks for its end. In one pass."""
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if "](" in line:
            end = line.rfind(")") + 1
            line = line[:end] + line[end:].replace("](", "]\0(")
        if "<" in line:
            words = _SPACES.split(line)  # (the spaces kept, at the odd places)
            for i, word in enumerate(words):
                if "<" in word:
                    end = word.rfind(">") + 1
                    words[i] = word[:end] + word[end:].replace("<", "<\0")
            line = "".join(words)
        lines[n] = line
    return "\n".join(lines)


_SPACES = re.compile(r"(\s+)")


def _escaped_edge(match: re.Match[str]) -> str:
    run = match["edge"]
    return match[0] if run is None else run.replace("_", "\\_")


# What is left as it is (a code span, a formula, a link's target, an autolink) or a run of
# underscores opening a word (after no word character nor backslash) or closing one (after a
# letter or digit, before no word character).
_EDGE_UNDERSCORES = re.compile(
    r"(`+)[^`]*?\1|\$[^$\n]+\$|\]\([^)\n]*\)|<[a-z][a-z0-9+.-]*:[^>\s]*>"
    r"|(?P<edge>(?<![\w\\])_+(?=[^\W_])|(?<=[^\W_])_+(?!\w))",
    re.IGNORECASE,
)


def _bare_body_in_main(tree: Any) -> Any:
    """A copy of ``tree`` with its body's content wrapped in a ``<main>``, for a page whose
    text sits in its body with no container trafilatura knows (no ``<main>``, ``<article>``,
    nor a class or id of its ``BODY_XPATH``: an RFC in xml2rfc's HTML, a hand-written or old
    blog) and at least :data:`_MIN_HEADINGS_GAINED` headings or :data:`_MIN_ITEMS_GAINED`
    list items; else ``None``. Read from the bare body, trafilatura's fallback keeps
    paragraphs and drops every heading, definition (``<dd>``) and list; from a ``<main>``, it
    keeps them."""
    import lxml.etree
    from trafilatura.xpaths import BODY_XPATH

    body = tree.find("body")
    if body is None or len(body) == 0 or next(tree.iter(*_MAIN_TAGS), None) is not None:
        return None
    headings = itertools.islice(body.iter(*_HEADINGS), _MIN_HEADINGS_GAINED)
    items = itertools.islice(body.iter("li"), _MIN_ITEMS_GAINED)
    if sum(1 for _ in headings) < _MIN_HEADINGS_GAINED and sum(1 for _ in items) < (
        _MIN_ITEMS_GAINED
    ):
        return None  # it could not gain them (see _more_headings)
    # A container trafilatura knows that holds little of the text (Doxygen's menu,
    # ``<div id="main-nav">``, which its "main" prefix matches: emptied by the pruning, it
    # is passed over and the fallback reads the page) leaves the body as bare as none.
    text = _solid(body.text_content())
    if any(
        (found := next(iter(expr(tree)), None)) is not None
        and _solid(found.text_content()) * _BARE_BODY_SHARE >= text
        for expr in BODY_XPATH
    ):
        return None
    wrapped = copy.deepcopy(tree)
    body = wrapped.find("body")
    main = lxml.etree.Element("main")
    main.text, body.text = body.text, None
    main.extend(list(body))
    body.append(main)
    return wrapped


_HEADING_LINE = re.compile(r"^#{1,6} ", re.MULTILINE)
# A container trafilatura knows holding under one part in this many of a body's text leaves
# it bare (see _bare_body_in_main).
_BARE_BODY_SHARE = 5
# The headings a bare body's reading in a <main> must gain to be taken: a page's sections',
# not one line (man7.org's man page gained its "NAME [top]" and its layout tables with it).
_MIN_HEADINGS_GAINED = 2
# Or the list items of words it must gain: an essay's lists (a hand-written page's "the
# replies fell into these groups:" and the groups), not a menu's links.
_MIN_ITEMS_GAINED = 2
# A list item's line in a reading, and its words once its links are taken out.
_ITEM_LINE = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$", re.MULTILINE)
_MARKDOWN_LINK = re.compile(r"!?\[[^\]\n]*\]\([^)\n]*\)")


def _worded_items(markdown: str) -> int:
    """How many list items of ``markdown`` hold a word outside their links."""
    return sum(
        1
        for item in _ITEM_LINE.findall(markdown)
        if _WORD.search(_MARKDOWN_LINK.sub("", item)) is not None
    )


def _more_headings(bare: str, in_main: str) -> bool:
    """Whether the reading of a bare body in a ``<main>`` (see :func:`_bare_body_in_main`)
    is the bare one with what its fallback dropped put back: at least
    :data:`_MIN_HEADINGS_GAINED` more headings, or :data:`_MIN_ITEMS_GAINED` more list items
    of words (the fallback drops lists too: an essay's, the "groups of replies" it went on
    to answer), and :data:`_LONGER_HOLDS` of its words. (A page whose wrapped reading gains
    no heading nor such item gains nothing the fallback loses: a mail archive's gained its
    "Next message" links.)"""
    gained = len(_HEADING_LINE.findall(in_main)) - len(_HEADING_LINE.findall(bare))
    if gained < _MIN_HEADINGS_GAINED and (
        _worded_items(in_main) - _worded_items(bare) < _MIN_ITEMS_GAINED
    ):
        return False
    ours, theirs = _words(bare), _words(in_main)
    held = collections.Counter(ours) & collections.Counter(theirs)
    return sum(held.values()) >= _LONGER_HOLDS * len(ours)


def _main_container(tree: Any, visible: int) -> Any:
    """What a heavy page is read from: the outermost ``<main>`` or ``<article>`` (among the
    first :data:`_MAX_MAIN_CANDIDATES`) that holds the most text, if that is at least
    :data:`_MAIN_CONTAINER_SHARE` of the page's ``visible`` non-blank characters, else the
    whole page. A page without either tag is known at once (libxml2 knows the page's tag
    names); the walk counts nesting so that only outermost ones are measured (one holds at
    least the text of any inside it, and 900 nested articles would be measured 900 times)."""
    import lxml.etree

    if next(tree.iter(*_MAIN_TAGS), None) is None:
        return tree
    best, most, depth, seen = tree, 0, 0, 0
    for event, element in lxml.etree.iterwalk(tree, events=("start", "end"), tag=_MAIN_TAGS):
        if event == "end":
            depth -= 1
            continue
        depth += 1
        if depth == 1:
            solid = _solid(element.text_content())
            if solid > most:
                best, most = element, solid
            seen += 1
            if seen == _MAX_MAIN_CANDIDATES:  # a listing of teasers: none holds a fifth
                break
    return best if most >= _MAIN_CONTAINER_SHARE * visible else tree


def _pieces(text: str) -> list[str]:
    """``text`` cut into pieces of at most :data:`_MAX_ENTITY_TEXT` characters, each cut
    between two letters or digits in the piece's second half where there are any."""
    pieces = []
    start = 0
    while len(text) - start > _MAX_ENTITY_TEXT:
        end = start + _MAX_ENTITY_TEXT
        half = start + _MAX_ENTITY_TEXT // 2
        # The last such pair in [half, end], found as the first in the reversed window.
        pair = _ALNUM_PAIR.search(text[end:half:-1])
        cut = end - pair.start() if pair else end
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def _split_entity_texts(tree: Any) -> bool:
    """Each text of many entities split into short ones (see :data:`_MAX_ENTITY_TEXT`) by
    empty ``<span>``s, which html-to-markdown reads as nothing; whether there was one. Only
    texts longer than a piece are looked at, found by libxml2."""
    import lxml.etree

    split = False
    for text in tree.xpath(_LONG_TEXTS):
        if len(_ENTITY_CHARS.findall(text)) < _MIN_SPLIT_ENTITIES:
            continue
        split = True
        holder = text.getparent()  # the text's element, or the one it is the tail of
        first, *rest = _pieces(str(text))
        if text.is_tail:
            holder.tail = first
            place = holder.addnext  # right after the element and the tail it keeps
        else:
            holder.text = first
            place = functools.partial(holder.insert, 0)
        for piece in reversed(rest):  # each placed before the ones after it
            span = lxml.etree.Element("span")
            span.tail = piece
            place(span)
    return split


def _split_entity_html(html: str) -> str:
    """Serialized ``html`` with its texts of many entities split, or as it is when it has
    none (parsed only when it holds that many entities at all)."""
    if len(_ENTITY_CHARS.findall(html)) < _MIN_SPLIT_ENTITIES:
        return html
    import lxml.html

    root = lxml.html.fragment_fromstring(html, create_parent="div")
    return lxml.html.tostring(root, encoding="unicode") if _split_entity_texts(root) else html


def _flatten_nested_pre(tree: Any) -> None:
    """A ``<pre>`` inside another becomes a ``<span>`` of it: html-to-markdown reads each
    block of preformatted text inside the others again, so its time grows with their depth
    times the text (200 kB in 900 nested ``<pre>``s took 0.7 s). Its text stays where it is,
    in the outer block."""
    import lxml.etree

    depth = 0
    inner = []
    for event, element in lxml.etree.iterwalk(tree, events=("start", "end"), tag="pre"):
        if event == "end":
            depth -= 1
            continue
        if depth:
            inner.append(element)
        depth += 1
    for element in inner:
        element.tag = "span"


def _bound_copies(tree: Any) -> None:
    """The elements of :data:`_COPYING_TAGS` nested more than :data:`_MAX_COPY_DEPTH` deep in
    each other become plain ones (a ``<span>``, or a ``<div>`` for a block), their text kept
    where it is: html-to-markdown holds a copy of what each of them holds until the outermost
    is done, so 200 nested ``<b><i>`` around 980 kB of text took 410 MB (the converter's
    worker has 512 MiB). The development pages nest them at most 6 deep."""
    import lxml.etree

    depth = 0
    deep = []
    for event, element in lxml.etree.iterwalk(tree, events=("start", "end"), tag=_COPYING_TAGS):
        if event == "end":
            depth -= 1
            continue
        depth += 1
        if depth > _MAX_COPY_DEPTH:
            deep.append(element)
    for element in deep:  # renamed after the walk, which matches end events by tag too
        element.tag = "div" if element.tag in _COPYING_BLOCKS else "span"


def _break_long_lines(tree: Any) -> None:
    """A ``<br>`` after every :data:`_MAX_LINE_ELEMENTS` inline elements that html-to-markdown
    would put on one Markdown line (see there), so that its time stays linear in the page.

    A line runs until an element of :data:`_LINE_TAGS` that no flattening element holds;
    counting nested elements too, the count never falls short of the line's. The break goes
    after an inline element that no flattening one holds, where it ends the line; an outermost
    flattening element holding more than the bound loses the tags inside it instead (their
    text kept; libxml2 strips them in one pass). Nothing inside ``<pre>``, whose lines are
    the page's own, is counted or changed."""
    import lxml.etree

    if tree.xpath("count(//*)") <= _MAX_LINE_ELEMENTS:
        return  # no line can hold that many
    count = 0
    flat: list[int] = []  # the count where each open flattening element started
    pre = 0
    breaks: list[Any] = []
    crowded: list[Any] = []
    for event, element in lxml.etree.iterwalk(tree, events=("start", "end")):
        tag = element.tag
        if tag == "pre":
            pre += 1 if event == "start" else -1
        elif pre or not isinstance(tag, str):
            continue  # inside a code block, or a comment
        elif tag not in _LINE_TAGS:
            if event == "start":
                if tag in _FLATTENING_TAGS:
                    flat.append(count)
                continue
            count += 1
            # Only the outermost: an element holding more than the bound is held by ones that
            # do too, and stripping each of them would walk the inner ones' elements again.
            if tag in _FLATTENING_TAGS and count - flat.pop() > _MAX_LINE_ELEMENTS and not flat:
                crowded.append(element)
            if count >= _MAX_LINE_ELEMENTS and not flat:
                breaks.append(element)
                count = 0
            continue
        if not flat:
            count = 0
    for element in crowded:
        lxml.etree.strip_tags(element, "*")
    for element in breaks:
        element.addnext(lxml.etree.Element("br"))  # the element keeps its tail before it


def _full_page(tree: Any) -> str:
    import lxml.html

    try:
        _structure.math_to_text(tree, "$", "$", keep=True)
        _flatten_nested_pre(tree)
        _bound_copies(tree)
        _break_long_lines(tree)
        _split_entity_texts(tree)
        markdown = _h2m(lxml.html.tostring(tree, encoding="unicode"))
        if "\\*" in markdown and "$" in markdown and next(tree.iter("math"), None) is not None:
            # A formula's TeX is no Markdown: its "*" as the page wrote it (see _h2m_options).
            markdown = _FORMULA.sub(lambda m: m[0].replace("\\*", "*"), markdown)
        return _structure.restore(markdown)
    except Exception:  # the last resort below still gives the page's words
        body = tree.find("body")
        node = body if body is not None else tree
        lines = node.text_content().splitlines()
        return _structure.restore("\n".join(line.strip() for line in lines if line.strip()))


# A formula html-to-markdown wrote between dollars (see _structure.math_to_text), on a line.
_FORMULA = re.compile(r"\$[^$\n]+\$")


def _second_reading(tree: Any) -> str:
    """readability-lxml's reading of a cleaned tree, as Markdown; ``""`` if it fails."""
    try:
        from readability import Document  # type: ignore[import-untyped]  # no type stubs

        _structure.math_to_text(tree, "$", "$", keep=True)
        _bound_copies(tree)  # readability-lxml keeps the nesting, html-to-markdown copies it
        summary = Document(tree).summary(html_partial=True)
        return tidy_markdown(_structure.restore(_h2m(_split_entity_html(summary))))
    except Exception:  # third-party code on hostile input: keep the first reading
        return ""


def _longer_reading(main: str, second: str) -> bool:
    """Whether ``second`` is ``main``'s article with what trafilatura dropped put back: at
    least :data:`_LONGER_READING` times its words, holding :data:`_LONGER_HOLDS` of them."""
    ours, theirs = _words(main), _words(second)
    if len(theirs) < _LONGER_READING * len(ours) or not ours:
        return False
    held = collections.Counter(ours) & collections.Counter(theirs)
    return sum(held.values()) >= _LONGER_HOLDS * len(ours)


def _deficient(markdown: str, kept: int, visible: int) -> bool:
    """Whether trafilatura's quick reading (``kept`` non-blank characters, counted once by the
    caller, who needs the count again) is deficient by the measures its full cascade applies
    before it compares readings: too little kept, no paragraph at all, or more tables than
    paragraphs (a layout table taken for the article). Read off the Markdown: blocks are
    separated by blank lines, and a table's rows start with ``|``."""
    if _kept_too_little(kept, visible, markdown):
        return True
    tables = paragraphs = 0
    for block in _BLOCK_SPLIT.split(markdown):
        if block.startswith("|"):
            tables += 1
        elif block and not _NOT_PARAGRAPH.match(block):
            paragraphs += 1
    return paragraphs == 0 or tables > paragraphs


def _lost_titles(tree: Any, markdown: str) -> bool:
    """Whether ``markdown`` kept a listing's teasers but lost their titles: at least
    :data:`_MIN_LISTING_TITLES` ``<h2>``-``<h4>`` headings that are links, each alone in its
    element (a teaser's title), whose teaser's summary (a paragraph beside the heading) is in
    the reading and whose title is not, more of them than teasers kept whole. An article's
    related stories, dropped title and summary alike, are no listing of the reading's.
    Compared word for word, so Markdown's escapes and link syntax do not count as a
    difference."""
    text = ""
    lost = whole = seen = 0
    for heading in tree.iter("h2", "h3", "h4"):
        link = heading.find(".//a[@href]")
        if link is None or "#" in link.get("href", ""):
            continue  # no link, or a section's own anchor (a permalink): no teaser's title
        heading_text = heading.text_content()
        title = _comparable(heading_text[:_MAX_LINK_TEXT])
        # The teaser: the nearest element around the title that holds words besides it (a
        # theme's <article><header><h2> keeps its excerpt beside the header), and its summary:
        # its first paragraph, or else its first words after the title.
        parent, summary = heading.getparent(), ""
        for _ in range(3):
            if parent is None or _second_heading(parent):
                break  # a teaser holds its own title alone: this is a section of a text
            paragraph = next(
                (
                    words
                    for p in parent.iter("p")
                    if len(words := _first_words(_leading_text(p))) >= 20
                ),
                "",
            )
            rest = _first_words(
                _leading_text(parent, 4 * _MAX_LINK_TEXT).replace(heading_text, "", 1)
            )
            summary = paragraph or (rest if len(rest) >= 20 else "")
            if summary:
                break
            parent = parent.getparent()
        if len(title) < 8 or not summary:
            continue
        seen += 1
        if seen > _MAX_LISTING_TITLES:
            break
        text = text or _comparable(markdown)
        if summary not in text:
            continue  # the teaser is not the reading's: related stories beside an article
        if title in text:
            whole += 1
        else:
            lost += 1
    return lost >= _MIN_LISTING_TITLES and lost > whole


# A post of a thread (see _lost_posts): a class naming one (phpBB's "post", vBulletin's
# "postcontainer", a mailing list archive's "message", a "reply"), shared with its siblings.
_POST_CLASS = re.compile(r"(?:^|[\s_-])(?:post|message|reply)(?:$|[\s_-]|container)", re.I)
# Words a post holds at least, and those of its longest text compared with the reading.
_MIN_POST_WORDS = 15
_POST_KEY_WORDS = 8


def _lost_posts(tree: Any, markdown: str) -> Any:
    """The element holding a thread whose reading ``markdown`` kept some of its posts and lost
    others, else ``None``. A thread is two or more siblings of one tag and class (a
    class naming a post, see :data:`_POST_CLASS`), each of :data:`_MIN_POST_WORDS` words or
    more; a post is kept where the first words of its longest text are in the reading. An
    article's related posts, none of them read, are no thread of the reading's."""
    groups: dict[tuple[Any, str, str], list[Any]] = {}
    for element in tree.iter("div", "article", "li", "section", "table"):
        cls = element.get("class") or ""
        parent = element.getparent()
        if parent is None or len(cls) > _MAX_CHECKED_CHARS or not _POST_CLASS.search(cls):
            continue
        groups.setdefault((parent, element.tag, cls), []).append(element)
    text = ""
    for (parent, _, _), posts in groups.items():
        if len(posts) < 2:
            continue
        keys = []
        for post in posts[:_MAX_LISTING_TITLES]:
            pieces = [piece for piece in post.itertext() if piece.strip()]
            longest = max(pieces, key=len, default="")
            key = " ".join(_WORD.findall(longest.lower())[:_POST_KEY_WORDS])
            if len(_WORD.findall(" ".join(pieces))) < _MIN_POST_WORDS or not key:
                break
            keys.append(key)
        else:
            text = text or _comparable(markdown)
            kept = sum(key in text for key in keys)
            if 0 < kept < len(keys):
                return parent
    return None


def _title_before(tree: Any, thread: Any, markdown: str) -> str | None:
    """The words of the page's first ``<h1>`` (Markdown escaped) where it stands before
    ``thread``, outside it, and its reading ``markdown`` holds no top heading, else None."""
    if _TOP_HEADING.search(markdown) is not None:
        return None
    heading = next(tree.iter("h1"), None)
    if heading is None or any(above is thread for above in heading.iterancestors()):
        return None
    for element in tree.iter():  # (which comes first in the page)
        if element is heading:
            words = _collapse(heading.text_content(), _MAX_TITLE)
            return _MARKDOWN_SPECIAL.sub(r"\\\1", words) if words else None
        if element is thread:
            return None
    return None


def _second_heading(element: Any) -> bool:
    return next(itertools.islice(element.iter("h2", "h3", "h4"), 1, None), None) is not None


def _leading_text(element: Any, limit: int = _MAX_LINK_TEXT) -> str:
    """The first ``limit`` characters of ``element``'s text, without joining all of it."""
    pieces, size = [], 0
    for piece in element.itertext():
        pieces.append(piece)
        size += len(piece)
        if size >= limit:
            break
    return "".join(pieces)[:limit]


def _comparable(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _first_words(text: str) -> str:
    """The first twelve words of ``text``, as :func:`_comparable` spells them."""
    words = _WORD.findall(text.lower())
    return " ".join(words[:12] if len(words) > 12 else words)


def _kept_too_little(kept: int, visible: int, markdown: str) -> bool:
    """Whether a reading (``markdown``) of ``kept`` non-blank characters is too little of a
    page with ``visible`` of them (its bound measured as :func:`_measure` measures)."""
    return (
        kept < _MIN_KEEP_CHARS and _measure(markdown) < _MIN_KEEP_CHARS
    ) or kept < _MIN_KEEP_SHARE * visible


def _too_heavy(tree: Any, elements: int, page_text: str) -> bool:
    """Whether the cleaned tree (of ``elements`` elements and visible text ``page_text``) is
    past what trafilatura converts quickly: more than :data:`_MAX_MAIN_ELEMENTS` elements,
    nested more than :data:`_MAX_MAIN_DEPTH` deep, more than :data:`_MAX_ESCAPED_CHARS`
    characters to escape, or more than :data:`_MAX_MAIN_ATTRIBUTES` attributes or
    :data:`_MAX_MAIN_ATTRIBUTE_CHARS` characters of them, or text that trafilatura's patterns
    would scan too long (:func:`_rescanned`, :func:`_filtered`). XPath in libxml2 and string
    counts in C, no walk in Python."""
    return (
        elements > _MAX_MAIN_ELEMENTS
        or bool(_structure.compiled(_TOO_DEEP_PATH)(tree))
        or _escaped(page_text) > _MAX_ESCAPED_CHARS
        or tree.xpath("count(//@*)") > _MAX_MAIN_ATTRIBUTES
        # (plain strings: lxml's own, which know their element, cost more to make)
        or sum(map(len, tree.xpath("//@*", smart_strings=False))) > _MAX_MAIN_ATTRIBUTE_CHARS
        or _rescanned(page_text) > _MAX_RESCANNED_CHARS
        or _filtered(page_text) > _MAX_FILTERED_CHARS
    )


_ESCAPED_BYTES = "".join(_ESCAPED_CHARS).encode("ascii")


def _escaped(text: str) -> int:
    if text.isascii():
        raw = text.encode("ascii")
        return len(raw) - len(raw.translate(None, _ESCAPED_BYTES))
    return sum(map(text.count, _ESCAPED_CHARS))


def _candidate_text(tree: Any) -> int:
    """The text of every candidate readability-lxml weighs (see :data:`_MAX_CANDIDATE_TEXT`),
    each candidate's whole text counted: one walk, each element's text length summed into its
    parent's as it ends. Run only on pages of at most :data:`_MAX_SECOND_PASS_ELEMENTS`
    elements."""
    import lxml.etree

    total = 0
    open_elements: list[list[Any]] = []  # [text length so far, whether a candidate]
    for event, element in lxml.etree.iterwalk(tree, events=("start", "end")):
        if event == "start":
            open_elements.append([len(element.text or ""), element.tag in _CANDIDATE_TAGS])
            continue
        size, candidate = open_elements.pop()
        if candidate:
            total += size
        if open_elements:
            open_elements[-1][0] += size + len(element.tail or "")
            if element.tag in _PARAGRAPH_TAGS:
                for holder in open_elements[-2:]:
                    holder[1] = True
    return total


def _filtered(text: str) -> int:
    """Characters in runs of non-word characters on a line, of at least
    :data:`_MIN_FILTERED_RUN` each: an upper bound on what trafilatura's text filter backs over
    (see :data:`_MAX_FILTERED_CHARS`). Counted in C; most pages have no such run, and are
    known to have none after a look at every half run's length of text (a run that long
    covers one of the half-run blocks the text is cut into)."""
    step = _MIN_FILTERED_RUN // 2
    if not any(_NON_WORD_BLOCK.match(text, start) for start in range(0, len(text), step)):
        return 0
    return sum(map(len, _NON_WORD_RUN.findall(text)))


def _rescanned(text: str, limit: int = _MAX_RESCANNED_CHARS) -> int:
    """An upper bound on the characters trafilatura's delimiter patterns scan in ``text``
    (see :data:`_MAX_RESCANNED_CHARS`), counted until it passes ``limit``. Each opener is
    taken to scan to the first closer after it, or to the end, as if no pair were matched and
    every text node ran on to the end of the page: trafilatura's nodes and lines are parts of
    it, so the bound holds however the page splits its text."""
    size = len(text)
    total = 0
    # Each check below first bounds its count from a count in C: most pages skip all three.
    backslashed = "\\" in text
    for opener, pattern, closer in _MATH_DELIMITERS if backslashed else ():
        if text.count(opener) * size <= limit:
            continue
        next_closer = -1
        for found in pattern.finditer(text):
            start = found.start()
            if next_closer != size and next_closer < start:
                next_closer = text.find(closer, start + 3)  # math holds a character
                if next_closer < 0:
                    next_closer = size
            total += next_closer - start
            if total > limit:
                return total
    backslashes = text.count("\\") if backslashed else 0
    if backslashes * backslashes * len(_ESCAPED_CHARS) > limit:
        # A run tried at each of its backslashes backs off over the rest of it, for each
        # Markdown character the text holds.
        present = sum(ch in text for ch in _ESCAPED_CHARS)
        for found in _BACKSLASH_RUN.finditer(text):
            run = found.end() - found.start()
            total += run * run // 2 * present
            if total > limit:
                return total
    if "`" in text and text.count("`") * size > limit:
        runs = [
            (found.start(), found.end() - found.start()) for found in _BACKTICK_RUN.finditer(text)
        ]
        after: dict[int, int] = {}  # run length -> where the next run of that length starts
        for start, length in reversed(runs):
            total += after.get(length, size) - start
            after[length] = start
            if total > limit:
                return total
    return total


def _ascii_lower(text: str) -> str:
    """``text`` with its ASCII letters lowered, and no other change: tag names are ASCII, and
    ``str.lower`` changes the length of some characters (U+0130 lowers to two), which moved
    every span found in the lowered text against the text it was cut from."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


def _comment_end(lowered: str, start: int) -> int:
    """Where the text after a comment's ``<!--`` (ending at ``start``) resumes: past its
    ``-->`` (``<!-->`` and ``<!--->`` are whole comments), or the end of the text."""
    for abrupt in (">", "->"):
        if lowered.startswith(abrupt, start):
            return start + len(abrupt)
    end = lowered.find("-->", start)
    return len(lowered) if end < 0 else end + 3


def _end_tag_at(lowered: str, name: str, pos: int) -> int:
    """Where the next ``</name`` ending the name starts, from ``pos``; -1."""
    closer = f"</{name}"
    while (close := lowered.find(closer, pos)) >= 0:
        after = close + len(closer)
        # A browser ends the element only at "</name" then whitespace, "/" or ">".
        if after >= len(lowered) or lowered[after] in " \t\n\f\r/>":
            return close
        pos = after
    return -1


def _raw_end(lowered: str, start: int, name: str) -> int:
    """Where the text after the start tag of the raw-text element ``name`` (ending at
    ``start``) resumes: past its end tag, or the end of the text. Its content is not markup:
    only ``</name`` then whitespace, ``/`` or ``>`` ends it; but in a script, not inside
    ``<!-- <script> ... -->`` (HTML's double-escaped state, where a ``</script>`` ends
    nothing). Plain ``find``s, each region scanned once: linear."""
    if name == "plaintext":
        return len(lowered)
    pos, close = start, _end_tag_at(lowered, name, start)
    while name == "script" and close >= 0:
        escape = lowered.find("<!--", pos, close)
        inner = -1 if escape < 0 else lowered.find("<script", escape + 4, close)
        if inner < 0:
            break
        dashes = lowered.find("-->", inner)
        if dashes < 0:
            return len(lowered)
        pos = dashes + 3
        if dashes > close:  # that end tag was inside the double-escaped part: the next one
            close = _end_tag_at(lowered, name, pos)
    if close < 0:
        return len(lowered)
    end = lowered.find(">", close)
    return len(lowered) if end < 0 else end + 1


def _element_end(lowered: str, name: str, start: int, stop: int) -> int:
    """Where the text after the start tag of a ``name`` element (ending at ``start``) resumes:
    past its own end tag, token by token (a ``</div>`` in a comment, an attribute or a script
    inside is no end), counting the ``name`` elements nested in it; where HTML ends it
    without one (a ``<p>`` at the next block, an ``<li>`` at the next item or the end of its
    list); else the end of the text. End tags a browser ignores end nothing here either. One
    pass over the tokens it holds: linear."""
    ended_by, ended_by_end = _ENDED_BY.get(name), _ENDED_BY_END.get(name, frozenset())
    special = name in _SPECIAL
    depth, pos = 1, start
    opened: dict[str, int] = {}  # elements opened inside and not yet closed
    specials = scopes = 0  # of them, special ones, and ones that bound a scope (a table)
    while (token := _TOKEN.search(lowered, pos, stop)) is not None:
        if token.group("open") is not None:  # a tag that never ends: nor does the element
            return len(lowered)
        pos = token.end()
        if token.group(1):
            pos = _comment_end(lowered, pos)
            continue
        tag = token.group(3)
        if tag is None:  # a bogus comment ("<!x", "<?x"): to its ">", nothing more
            continue
        # Within a list, table or other special element opened inside, an item start or an
        # end tag belongs to that one (a hidden menu's own nested list stays hidden).
        outermost = depth == 1 and not specials
        if token.group(2):  # an end tag
            # A browser ignores it when an element opened inside hides the scope (a table:
            # "<div hidden><table></div>" ends no div), or, for an element that is not
            # special (a span), when a special one is open inside.
            if tag == name and not scopes and (special or not specials):
                depth -= 1
                if depth == 0:
                    return pos
            elif opened.get(tag):
                opened[tag] -= 1
                specials -= tag in _SPECIAL
                scopes -= tag in _SCOPES
            elif outermost and tag in ended_by_end:
                return token.start()  # the end of the list or table this one sits in
            continue
        if tag in _RAW_TEXT:
            pos = _raw_end(lowered, pos, tag)
        elif ended_by is not None and outermost and tag in ended_by:
            return token.start()
        elif tag == name:
            depth += 1
        elif tag not in _VOID:
            opened[tag] = opened.get(tag, 0) + 1
            specials += tag in _SPECIAL
            scopes += tag in _SCOPES
    return len(lowered)


def _unread_spans(
    lowered: str,
    skipped: frozenset[str],
    rules: StyleRules | None = None,
    text: str = "",
    hidden_by: dict[str, int] | None = None,
) -> list[tuple[int, int]]:
    """The spans of the text (lowered by :func:`_ascii_lower`, so offsets are the text's)
    whose words are not the page's: comments, the ``skipped`` elements, closed dialogs, and
    hidden elements (``hidden``, ``aria-hidden``, ``display: none``, ``visibility: hidden``;
    and, in the first :data:`_MAX_STYLED_TAGS` tags with a class or id, what the page's
    ``rules`` hide, read from ``text``, the text as it is, since classes keep their case) with
    their content. Token by token, as a browser's tokenizer reads (a ``<!--`` inside an
    attribute value opens nothing); linear. ``hidden_by``: how tags hide by their attributes
    (:func:`_hides`), as far as known, shared by readings of one page and filled in here."""
    spans: list[tuple[int, int]] = []
    hides = rules.asker() if rules is not None else None
    styled = 0  # tags asked of the rules
    # The characters read again inside elements hidden by visibility (see veil_gaps), and the
    # spans of their hidden text still ahead, the nearest last.
    budget = len(lowered)
    gaps: list[tuple[int, int]] = []
    pos = 0
    stop = lowered.rfind(">") + 1  # past it no "<" opens a tag
    may_hide = _MAY_HIDE.search(lowered, 0, stop) is not None
    # Where nothing can hide an element, runs of text and of tags neither skipped nor raw text
    # are passed over in one match each (a page of 330,000 bare <p>s spent 0.13 s handing its
    # tags one by one to the loop below, which passed over each).
    plain = _plain_run(skipped) if not may_hide and hides is None else None

    # How each distinct tag hides by its attributes: a flood of one hidden tag was read
    # attribute by attribute each time (3.5 us a tag, 100,000 tags in 1 MB).
    if hidden_by is None:
        hidden_by = {}

    def hiding(name: str, start: int, end: int) -> int:
        """How the start tag at ``start:end`` of a ``name`` element hides it."""
        nonlocal styled
        tag = lowered[start:end]
        if name in skipped and not (
            (name == "dialog" and "open" in _attributes(tag))
            or (name == "template" and _shadow_root(_attributes(tag)))
        ):
            return _GONE
        if (
            hides is not None
            and styled < _MAX_STYLED_TAGS
            and name not in ("html", "body")  # as in the tree reading
            and _NAMED.search(lowered, start, end)
        ):
            styled += 1
            if hides(name, _folded_attributes(text[start:end])):
                return _GONE
        if not may_hide:
            return _SHOWN
        kind = hidden_by.get(tag)
        if kind is None:
            kind = hidden_by[tag] = _hides(tag)
        return kind

    shown_by: dict[str, bool] = {}  # as hidden_by, whether a tag shows its element again

    def shows_again(tag: str) -> bool:
        if tag not in shown_by:
            shown_by[tag] = _own_visibility(_attributes(tag).get("style")) is False
        return shown_by[tag]

    def veil_gaps(start: int, end: int) -> list[tuple[int, int]] | None:
        """The spans of hidden text of an element hidden by visibility alone, whose content
        runs from ``start`` to ``end``: all of it but the elements inside that show
        themselves again (``visibility: visible``), as the tree reading's :func:`_unveil`
        reads it; ``None`` when none does (or too much has been read again already)."""
        nonlocal budget
        budget -= end - start
        if budget < 0 or _MAY_SHOW.search(lowered, start, end) is None:
            return None
        found: list[tuple[int, int]] = []
        at = start
        while (token := _TOKEN.search(lowered, at, end)) is not None:
            if token.group("open") is not None:
                break
            at = token.end()
            if token.group(1):
                at = _comment_end(lowered, at)
                continue
            name = token.group(3)
            if name is None or token.group(2) or name in _VOID:
                continue
            if name in _RAW_TEXT:
                at = _raw_end(lowered, at, name)
                continue
            if styled >= _MAX_STYLED_TAGS:
                return None  # the rules can no longer be asked: hidden whole
            # An element inside ends with the veil at the latest, so its end is looked for
            # no further: one never closed was scanned to the end of the page for each veil.
            kind = hiding(name, token.start(), at)
            if kind == _GONE:
                at = min(_element_end(lowered, name, at, end), end)
            elif kind == _SHOWN and shows_again(lowered[token.start() : at]):
                found.append((token.start(), min(_element_end(lowered, name, at, end), end)))
                at = found[-1][1]
        if not found:
            return None
        edges = [start, *itertools.chain.from_iterable(found), end]
        return [(edges[k], edges[k + 1]) for k in range(0, len(edges), 2)]

    def unread(start: int, end: int) -> None:
        """Add a span, from no earlier than the end of the last one."""
        start = max(start, spans[-1][1]) if spans else start
        if start < end:
            spans.append((start, end))

    while True:
        if plain is not None and (run := plain.match(lowered, pos, stop)) is not None:
            pos = run.end()
        if (token := _TOKEN.search(lowered, pos, stop)) is None:
            break
        if gaps and gaps[-1][0] <= token.start():  # hidden text of a veil comes first
            gap = gaps.pop()
            unread(*gap)
            pos = max(pos, gap[1])
            continue
        if token.group("open") is not None:  # a quoted value that never ends: the rest is
            unread(token.start(), len(lowered))  # in the tag, and no text
            return spans
        pos = token.end()
        if token.group(1):
            pos = _comment_end(lowered, pos)
            unread(token.start(), pos)
            continue
        name = token.group(3)
        if name is None:  # a bogus comment ("<!x", "<?x"): no text of the page
            unread(token.start(), pos)
            continue
        if token.group(2) or name in _VOID:
            continue
        if name in _RAW_TEXT:
            end = _raw_end(lowered, pos, name)
            if name in skipped:
                unread(token.start(), end)
            pos = end
            continue
        if not may_hide and hides is None and name not in skipped:
            continue  # most tags of most pages: nothing can hide them
        kind = hiding(name, token.start(), pos)
        if kind == _SHOWN:
            continue
        end = _element_end(lowered, name, pos, stop)
        shown = veil_gaps(pos, end) if kind == _VEILED else None
        if shown is None:
            unread(token.start(), end)
            pos = end
            continue
        # Hidden by visibility, with elements inside shown again: its text outside them goes,
        # and they are read on (what they hide in turn too).
        unread(token.start(), shown[0][1])
        pos = shown[0][1]
        gaps.extend(reversed(shown[1:]))
    while gaps:
        unread(*gaps.pop())
    # Past the last ">", a tag or comment that begins never ends: a browser shows none of it.
    tail = _TAIL_MARKUP.search(lowered, max(pos, stop, spans[-1][1] if spans else 0))
    if tail is not None:
        unread(tail.start(), len(lowered))
    return spans


@functools.cache
def _plain_run(skipped: frozenset[str]) -> re.Pattern[str]:
    """A run of the lowered text that :data:`_TOKEN` reads as text, end tags, and start tags
    of elements neither ``skipped`` nor raw text, each tag to the same end: none of what it
    reads a reading without hiding leaves out. It stops before a comment, a bogus comment, a
    tag of those elements, and a tag that never ends."""
    names = "|".join(sorted(skipped | _RAW_TEXT))
    name = r"[a-z][^\t\n\f\r />]*+"
    return re.compile(
        rf"(?:[^<]++|<(?![a-z/!?])|</{name}{_IN_TAG}>"
        rf"|<(?!(?:{names})(?![^\t\n\f\r />])){name}{_IN_TAG}>)*+"
    )


def _hides(tag: str) -> int:
    """How a start tag hides its element (:data:`_SHOWN`, :data:`_GONE` or :data:`_VEILED`),
    by its attributes as the tree reading's :func:`_hiding` reads them (a ``hidden``
    attribute, not the word in a class or a link; ``overflow: hidden`` hides nothing): values
    decoded as a browser decodes them. A quick search of the whole tag first, which most tags
    fail."""
    import html

    loose = (
        _css_readable(html.unescape(tag)).lower()
        if "&" in tag or "\\" in tag or "/*" in tag
        else tag
    )
    if _HIDDEN_TAG.search(loose) is None:
        return _SHOWN
    return _hiding(_attributes(tag))


def _shadow_root(attrs: Any) -> bool:
    """Whether a ``<template>``'s attributes make it a declarative shadow root, which a
    browser shows (see :func:`_open_shadow_roots`)."""
    # The value exactly (a browser does not trim it); the older "shadowroot" attribute no
    # current browser reads.
    return (attrs.get("shadowrootmode") or "").lower() in ("open", "closed")


def _attributes(tag: str) -> dict[str, str]:
    """A start tag's attributes, as HTML reads them: the first of a repeated name counts,
    values decoded."""
    import html

    found: dict[str, str] = {}
    name_end = re.match(r"</?[^\t\n\f\r />]*+", tag)
    for m in _ATTRIBUTE.finditer(tag, name_end.end() if name_end else 0):
        value = m.group(2) if m.group(2) is not None else m.group(3)
        if value is None:
            value = m.group(4) or ""
        found.setdefault(m.group(1), html.unescape(value) if "&" in value else value)
    return found


def _folded_attributes(tag: str) -> dict[str, str]:
    """A start tag's attributes, as :func:`_attributes` reads them, by names in lower case."""
    folded: dict[str, str] = {}
    for name, value in _attributes(tag).items():
        folded.setdefault(name.lower(), value)
    return folded


def _markup_left(text: str) -> str:
    """``text`` with each tag replaced by what :class:`_TagText` leaves of it: where no tag is
    a link's or a script's, by :data:`_BREAKS`, read for all the tags' names at once (a page
    of 330,000 <p>s spent 0.1 s calling _TagText for each)."""
    if _TAG_WITH_STATE.search(text) is not None:  # (or what looks like one: the same)
        return _MARKUP.sub(_TagText(), text)
    parts = _MARKUP.split(text)  # text, then each tag's two groups and the text after it
    names = [name.lower() if name else "" for name in parts[2::3]]
    texts = parts[0::3]
    pieces = [""] * (2 * len(texts) - 1)
    pieces[0::2] = texts
    pieces[1::2] = [_BREAKS.get(name, "") for name in names]
    return "".join(pieces)


# A tag whose reading _TagText keeps state for, a link's or a script's, or what may be one.
_TAG_WITH_STATE = re.compile(r"</?(?:a|sup|sub)(?![^\t\n\f\r />])", re.IGNORECASE)


class _TagText:
    """What each tag leaves in the plain text, one tag after another (``_MARKUP.sub``): a
    line break for a block, a space between two table cells, ``^`` or ``_`` at the start of
    a superscript or subscript, else nothing (an inline tag sits
    inside a word as often as between two: "un<em>believ</em>able"); and at the end of a link
    that holds no words, the alt text of its images, as the tree reading keeps it (a page of
    image links read without its tree was otherwise an empty reading)."""

    def __init__(self) -> None:
        self._alts: list[str] | None = None  # inside a link: its images' alt texts
        self._worded = False  # whether that link holds words
        self._end = 0  # where the last tag ended
        self._closing = ""  # what the end tag of the script open ends with

    def __call__(self, m: re.Match[str]) -> str:
        name = (m.group(2) or "").lower()
        if self._alts is None:  # most tags of most pages: outside a link
            if name == "a" and not m.group(1):
                self._alts, self._worded, self._end = [], False, m.end()
            elif name in _SCRIPT_STARTS:
                return self._script(m, name)
            return _BREAKS.get(name, "")
        start, self._end, previous = m.start(), m.end(), self._end
        if start > previous and not self._worded:
            self._worded = not m.string[previous:start].isspace()
        if name == "a":
            alts = self._alts if m.group(1) and not self._worded else None
            self._alts, self._worded = None if m.group(1) else [], False
            return f" {' '.join(alts)} " if alts else ""
        if name == "img" and not m.group(1):
            import html

            alt = _collapse(_attributes(m.group()).get("alt", ""), _MAX_ALT_CHARS + 1)
            if alt and len(alt) <= _MAX_ALT_CHARS:
                self._alts.append(html.escape(alt, quote=False))  # the text is unescaped next
        elif name in _SCRIPT_STARTS:
            return self._script(m, name)
        return _BREAKS.get(name, "")

    def _script(self, m: re.Match[str], name: str) -> str:
        """What a script's tag leaves: its mark and brackets as the tree's readings write them
        (:func:`webward._structure.script_marks`) when its text is plain, up to its own end
        tag; the mark alone when it holds elements."""
        if m.group(1):  # its end
            closing, self._closing = self._closing, ""
            return closing
        import html

        text = m.string
        start = m.end()
        end = text.find("<", start)
        if end < 0 or text[end : end + 2 + len(name)].lower() != f"</{name}":
            self._closing = ""
            return _SCRIPT_STARTS[name]
        opening, self._closing = _structure.script_marks(html.unescape(text[start:end]), name)
        return opening


def _plain_text(
    text: str,
    skipped: frozenset[str] = _SKIPPED,
    rules: StyleRules | None = None,
    hidden_by: dict[str, int] | None = None,
) -> str:
    """The words of an HTML document without a parser: markup, the ``skipped`` elements and
    hidden ones (by their attributes, or by the page's ``rules``) removed, one line per block.
    Linear in the text, whatever its nesting (``hidden_by``: see :func:`_unread_spans`)."""
    import html

    kept: list[str] = []
    pos = 0
    for start, end in _unread_spans(_ascii_lower(text), skipped, rules, text, hidden_by):
        kept.append(text[pos:start])
        pos = end
    kept.append(text[pos:])
    joined = "\n".join(kept)
    cut = joined.rfind(">") + 1
    stripped = html.unescape(_markup_left(joined[:cut]) + joined[cut:])
    # Spaces collapsed and controls dropped in the whole text at once, not line by line (a
    # page of 250,000 one-letter blocks has as many lines).
    stripped = _CONTROL.sub("", _LINE_SPACE.sub(" ", stripped))
    return "\n".join(filter(None, [line.strip() for line in stripped.split("\n")]))


def _plain_note(tree: Any, parse_note: str) -> str:
    """Why the page is read as plain text, or ``""`` when it converts to Markdown: the parser
    dropped everything nested past its limit (``parse_note``), the page has more elements
    than can be converted in time, html-to-markdown would drop its deepest part, or its
    elements nest too deep, in all, to be converted in time."""
    if parse_note:
        return parse_note
    if tree.xpath(_TOO_MANY_FOR_MARKDOWN):
        return _TOO_MANY_NOTE
    if _structure.compiled(_TOO_DEEP_FOR_MARKDOWN)(tree):
        return _TOO_DEEP_FOR_MARKDOWN_NOTE
    if _structure.compiled(_DEEPER_THAN_WEIGHED)(tree) and _levels_over(tree, _MAX_ELEMENT_LEVELS):
        return _TOO_MANY_LEVELS_NOTE
    return ""


def _levels_over(tree: Any, bound: int) -> bool:
    """Whether the elements of ``tree`` have more than ``bound`` levels above them in all
    (each element counts its depth); the walk stops once they have."""
    import lxml.etree

    depth = levels = 0
    for event, _ in lxml.etree.iterwalk(tree, events=("start", "end")):
        if event == "end":
            depth -= 1
            continue
        depth += 1
        levels += depth
        if levels > bound:
            return True
    return False


def html_to_markdown(text: str, final_url: str, *, include_links: bool = False) -> HtmlResult:
    """Readable Markdown of an HTML document, with its title and (if asked) outbound links.

    Never raises: an unparsable or empty document gives empty Markdown.
    """
    tree, parse_note = _parse(text)
    if tree is None:
        return HtmlResult(title="", markdown="", links=(), extractor="")
    _place_streamed(tree)  # before the scripts go
    title = _title(tree)
    # Kinds of pages read for their structure, before the scripts (JSON-LD) and the vote
    # counts go. The elements each pass looks at are found in one walk of the tree (five
    # searches of it cost twice that), on a page of at most _MAX_KINDS_ELEMENTS elements (on
    # a page of 330,000 one-word elements the passes took 0.4 s of the 0.5 s a page has).
    # Each pass runs only where the walk found it something and the source holds what it
    # looks for, that search of the source made only then. (A pass changes the tree only by
    # dropping elements, taking attributes away and adding bare ones: what a later pass finds
    # is never more than the walk found.)
    found = _kinds.find(tree, _MAX_KINDS_ELEMENTS)
    asked = found is not None and "nswer" in text
    if found is not None:
        if asked and (found.parts or found.scripts):
            _kinds.mark_answers(tree, found)
        if found.scripts and "ld+json" in text:
            _kinds.mark_prices(tree, found)
        if found.times and ("atetime" in text or "ATETIME" in text or "atePublished" in text):
            _kinds.mark_updates(tree, found)  # (after the answers' marks, which open each post)
        if found.contents and any(word in text for word in _kinds.CONTENTS_WORDS):
            _kinds.drop_contents(tree, found)
        if found.paywalls and any(word in text for word in _kinds.PAYWALL_WORDS):
            _kinds.drop_paywall_prompts(tree, found)
        if "citation_author" in text:  # (its own search of the <meta>s; last: no list after)
            _kinds.mark_authors(tree)
    base = _base_url(tree, final_url)
    refresh = _refresh_target(tree, base, final_url)  # before cleaning drops the <meta>
    moved = _refresh_note(*refresh) if refresh is not None else ""
    styled = _STYLE_TAG.search(text) is not None
    rules = _style_rules(tree, text) if styled else None  # before styles go
    links: tuple[Link, ...] = ()
    if include_links:
        # Links from the whole page: the agent may want to follow the navigation that the
        # reading text leaves out; not those a reader never sees.
        _drop_unseen(tree, rules)
        links = _rewrite_links(tree, base, collect=True)
        if refresh is not None:  # where the page sends a reader: its first link
            target = refresh[0].split("#", 1)[0]
            others = (link for link in links if link.url != target)
            links = (Link(url=target, text="meta refresh"), *others)[:MAX_LINKS]
    note = _plain_note(tree, parse_note)
    if note:
        # Rather than a reading with a hole in it (or an empty one, or a late one), the
        # page's words, with a note saying why.
        if styled:
            rules = _raw_style_rules(text)  # the tree lacks the sheets past the cut
        plain = _plain_text(text, rules=rules)
        markdown = f"{note}\n\n{plain}" if plain else ""
        return HtmlResult(title, markdown, links, "plain", rules, plain, moved)
    if include_links:
        _clean(tree, rules)
    else:
        _clean(tree, rules)
        _rewrite_links(tree, base, collect=False)  # fewer anchors left to resolve
    # Labels, links and dates set apart, and a page's own headings of ARIA read, each only
    # where the source holds what it looks for (each walk of a page of 49,000 elements costs
    # 10 to 30 ms, and most pages hold none).
    if ":</" in text:
        _part_labels(tree)
    if "</a><" in text or "</a></" in text:
        _part_glued_links(tree)
    if "title=" in text or "TITLE=" in text:
        _whole_dates(tree)
    if "heading" in text:
        _aria_headings(tree)  # (after the links in it are set apart)
    if 'title"' in text or "title'" in text or "class=title" in text:  # (a class's last word)
        _title_block_as_heading(tree, title)
    page_text = _visible_text(tree)
    visible = _solid(page_text)
    if visible == 0:
        return HtmlResult(
            title=title, markdown="", links=links, extractor="", rules=rules, refresh=moved
        )
    _drop_teaser_grids(tree, visible)
    if "hare" in text or "HARE" in text:  # (the search for them costs 26 ms on 150,000 tags)
        _drop_share_widgets(tree)
    if len(page_text) <= _PROMO_SEARCHED_CHARS or _promo_words(page_text):
        _drop_promo_lines(tree)
    elements = int(tree.xpath("count(//*)"))
    code = _code_blocks(tree)  # before the marks below go into the blocks' text
    # Quotes, list numbers, definitions and formulas kept through conversion (the bounds
    # above read the page as it came).
    _structure.prepare(tree)
    short = visible < _SHORT_PAGE_CHARS and _measure(page_text) < _SHORT_PAGE_CHARS
    if short or _too_heavy(tree, elements, page_text):
        # A short page is read whole (see _SHORT_PAGE_CHARS). Past the bounds trafilatura
        # slows down in proportion (2.5 s for a 1 MB table); html-to-markdown converts such
        # a page, or its main container, in a fraction of that.
        node = tree if short else _main_container(tree, visible)
        markdown = _finish(tidy_markdown(_full_page(node)), code)
        return HtmlResult(title, markdown, links, "full" if markdown else "", rules, refresh=moved)
    # trafilatura prunes the tree it is given in place: the later readings get copies of this
    # one (a copy costs a fraction of parsing and cleaning the page again).
    spare = copy.deepcopy(tree)
    # The page's own address: a heading linked to it is the page's title (see _unlink_headings).
    own = {final_url.split("#", 1)[0], base.split("#", 1)[0]}
    markdown = tidy_markdown(_main_content(tree, own=own, title=title))
    extractor = "main"
    kept = _solid(markdown)
    second_pass = elements <= _MAX_SECOND_PASS_ELEMENTS

    @functools.cache
    def affordable() -> bool:
        """Whether the second readings are quick here: not too many tokens, nor too much
        text in nested candidates (measured on the spare: trafilatura has pruned ``tree``).
        Asked only where one would run, which on most pages is nowhere."""
        return (
            len(page_text.split()) <= _MAX_SECOND_PASS_TOKENS
            and _candidate_text(spare) <= _MAX_CANDIDATE_TEXT
        )

    if second_pass and _deficient(markdown, kept, visible) and affordable():
        markdown = tidy_markdown(
            _main_content(copy.deepcopy(spare), careful=True, own=own, title=title)
        )
        kept = _solid(markdown)
    if (
        second_pass
        and (wrapped := _bare_body_in_main(spare)) is not None  # (a copy, where it could gain)
        and affordable()
    ):
        in_main = tidy_markdown(_main_content(wrapped, own=own, title=title))
        if _more_headings(markdown, in_main):
            markdown, kept = in_main, _solid(in_main)
    if _kept_too_little(kept, visible, markdown):
        full = tidy_markdown(_full_page(spare))
        if len(full) > len(markdown):
            markdown, extractor = full, "full"
    elif (
        second_pass
        and (words := _count_words(_unlinked(markdown)))
        and _has_room(spare, page_text, _ROOM_FOR_SECOND * words)
    ):
        # The page has room for a reading well over half again as long (only then can the
        # second one win, so on most pages it never runs; nor when the first has no word to
        # hold, see _longer_reading): trafilatura may have dropped part of the article, and
        # readability-lxml, which scores blocks differently, may keep it; where it would be
        # slow, html-to-markdown's reading of the main container stands in.
        if affordable():
            second, name = _second_reading(spare), "readability"
        else:
            second = tidy_markdown(_full_page(_main_container(spare, visible)))
            name = "full"
        if _longer_reading(markdown, second):
            markdown, extractor = second, name
    if second_pass and extractor != "full" and _lost_titles(spare, markdown):
        # A listing (a blog's index, a news front): the extractors keep the teasers'
        # summaries and drop their linked titles, so the model reads summaries of it knows
        # not what; the listing's own reading keeps them, in order.
        full = tidy_markdown(_full_page(_main_container(spare, visible)))
        if not _lost_titles(spare, full):
            markdown, extractor = full, "full"
    if second_pass and extractor != "full" and (thread := _lost_posts(spare, markdown)) is not None:
        # A thread (a forum's, a mailing list archive's): the extractors each take one block
        # for the article, so the reading held one post of several; the thread's own
        # reading keeps them all, in order.
        # Only a longer reading: a thread beside the article (related posts, some of them
        # read) never stands in for it.
        full = tidy_markdown(_full_page(copy.deepcopy(thread)))
        if _lost_posts(spare, full) is None and _count_words(full) > _count_words(markdown):
            markdown, extractor = full, "full"
            if (topic := _title_before(spare, thread, markdown)) is not None:
                # The thread's topic, in the page's <h1> above the posts: the thread's own
                # reading began at its first post's author, and said not what it was about.
                markdown = f"# {topic}\n\n{markdown}"
    if extractor != "full" and asked and (qa := _kinds.lost_answers(spare, markdown)) is not None:
        # A question and its answers, marked, and the reading kept some marks and lost
        # others (trafilatura read the question's body alone): their container's own
        # reading keeps every part in order. Not bound to the second readings' page size: it
        # runs only where marks were made and lost, and html-to-markdown reads a page of
        # any size quickly.
        parts = copy.deepcopy(qa)
        _kinds.trim_parts(parts)
        full = tidy_markdown(_full_page(parts))
        if _kinds.lost_answers(spare, full) is None:
            markdown, extractor = full, "full"
    if not markdown:
        extractor = ""
    elif extractor != "full" and (heading := _lost_heading(spare, markdown)):
        # A reference's name (pkg.go.dev's package, MDN's API) in a header beside the
        # article the extractors took: the reading's outline began at "## Documentation".
        markdown = f"# {heading}\n\n{markdown}"
    markdown = _finish(markdown, code)
    return HtmlResult(title, markdown, links, extractor, rules, refresh=moved)


def _lost_heading(tree: Any, markdown: str) -> str:
    """The words of the first ``<h1>`` of ``tree`` (Markdown escaped), on a page of code
    (see :func:`_lift_title`) whose reading ``markdown`` holds no top heading, else "".
    pkg.go.dev writes the package's name in a ``<header>`` outside the ``<article>``
    trafilatura reads, MDN the API's in a ``<header>`` beside a widget, which trafilatura
    drops; the page's ``title`` says it too, among the site's words, but the model reads
    the reading's outline, and it had no root. (Not a news article's headline, which the
    development sets' texts leave out, nor a heading that is a link, a masthead's logo.)"""
    if _TOP_HEADING.search(markdown) is not None:
        return ""
    heading = next(tree.iter("h1"), None)
    if (
        heading is None
        or next(heading.iterancestors("a"), None) is not None
        or next(heading.iter("a"), None) is not None
        or not tree.xpath(_PAGE_OF_CODE)
    ):
        return ""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", _collapse(heading.text_content(), _MAX_TITLE))


_TOP_HEADING = re.compile(r"^# ", re.M)
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>])")


def _finish(markdown: str, code: list[_CodeBlock]) -> str:
    """What the page said and the converters wrote without: code blocks' languages and blank
    lines, task boxes' brackets unescaped."""
    if "\\" in markdown and "\\[" in markdown:  # (one character first: see tidy_markdown)
        markdown = _unescape_task_boxes(markdown)
    if "\\" in markdown and "\\_" in markdown:
        markdown = _unescape_word_underscores(markdown)
    return _restore_code(markdown, code)


# --------------------------------------------------------------------------------------------
# Markdown tidying

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BLANK_RUN = re.compile(r"\n{3,}")
# A link that shows nothing: a forum post's avatar (Discourse's ``<a href="/u/alice"><img
# alt=""></a>``). Dropped from the Markdown, not from the page before extraction: there,
# taking a thread's avatar links away made trafilatura take the first post for the article
# and drop the replies (one in a paragraph's line goes before: _drop_empty_inline).
_EMPTY_LINK = re.compile(r"(?<![!\\])\[\]\([^()\s]*\) ?")
# Where tidy_markdown looks whether a reading holds an empty link's start, or a blank run.
_EMPTY_LINK_START = re.compile(r"\[\]\(")
_BLANK_RUN_START = re.compile("\n\n\n")


def _without_empty_links(line: str) -> str:
    """``line`` without its empty links (:data:`_EMPTY_LINK`), unless it holds inline code,
    where ``[](`` is code's own (C++'s ``[](){ … }``)."""
    return _EMPTY_LINK.sub("", line) if "[](" in line and "`" not in line else line


def tidy_markdown(markdown: str) -> str:
    """Trailing spaces off, at most one blank line in a row, a blank line after a closing code
    fence, control characters out. Code blocks keep their lines as they are."""
    if not markdown:
        return ""
    if "\r" in markdown:
        markdown = markdown.replace("\r\n", "\n").replace("\r", "\n")
    if _has_control(markdown):  # (most readings hold none: asked in C, see there)
        if markdown.isascii():  # one byte pass rather than a regex scan
            markdown = markdown.encode("ascii").translate(None, _CONTROL_BYTES).decode("ascii")
        else:
            markdown = _CONTROL.sub("", markdown)
    # A search for one character runs at memory speed, one for a few characters at about a
    # nanosecond a character (0.05 ms for a reading of 100 kB, each): the fences' characters
    # are looked for first, and the two searches of frequent characters are the regex's,
    # which runs twice as fast.
    if ("`" not in markdown or "```" not in markdown) and (
        "~" not in markdown or "~~~" not in markdown
    ):
        # No code block: the same, without a branch per line (a reading of 400,000 short
        # lines took 0.25 s in the loop). No regex strips the spaces: "\s+$" backtracks
        # through every run of spaces that does not end its line, quadratic in its length.
        if _EMPTY_LINK_START.search(markdown):
            lines = "\n".join(
                [_without_empty_links(line).rstrip() for line in markdown.split("\n")]
            )
        else:
            lines = "\n".join([line.rstrip() for line in markdown.split("\n")])
        if _BLANK_RUN_START.search(lines):  # (_BLANK_RUN tries every position: 0.4 ms for 100 kB)
            lines = _BLANK_RUN.sub("\n\n", lines)
        return lines.strip("\n")
    out: list[str] = []
    fence = ""  # the open code block's fence; "" outside one
    for raw in markdown.split("\n"):
        if fence:
            out.append(raw)
            # CommonMark: a block ends only at a fence of its own character, at least as
            # long, with nothing after it; a shorter or other fence is a line of the code.
            closing = _FENCE.match(raw)
            if closing and closing.group(1).startswith(fence) and not raw[closing.end() :].strip():
                fence = ""
                out.append("")  # a closing fence glued to the next paragraph misrenders
            continue
        line = _without_empty_links(raw).rstrip()
        if not line and (not out or not out[-1]):
            continue  # no leading blank lines, no runs of them
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
        out.append(line)
    return "\n".join(out).strip("\n")


# --------------------------------------------------------------------------------------------
# dispatch: the entry point


@dataclass(frozen=True)
class Converted:
    """A response body made ready for a model; not yet windowed or enveloped."""

    kind: str  # "text" | "image" | "document"
    media_type: str  # normalised, after sniffing
    title: str
    text: str  # Markdown / text; for binary kinds the short text header
    parts: tuple[Part, ...]
    links: tuple[Link, ...]  # empty unless include_links
    truncated: bool
    # A scant reading's words from the page's header, menus, sidebars and footer, when it has
    # enough of them (see _scant_reading): what the fetch core hands over, with a note, if no
    # render finds the page any text of its own, rather than an empty reading.
    furniture: str = ""


def _as_utf8_xml(body: bytes, charset: str | None) -> bytes:
    """``body`` for an XML parser: as it is when it says its own encoding (a declaration, a
    byte-order mark) or names none; else decoded by the header's charset and made UTF-8
    (a Latin-1 feed with no declaration came out as "Caf\ufffd")."""
    if (
        charset is None
        or _XML_ENCODING_DECL.match(body[:200])
        or body[:2] in (b"\xff\xfe", b"\xfe\xff")
    ):
        return body
    text, _ = decode_text(body, charset)
    return text.removeprefix("\ufeff").encode("utf-8")


_XML_ENCODING_DECL = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*+<\?xml[^>]*?\bencoding\s*+=")


# An XML prolog, then a root that is no <html>: XML, whatever its declared type.
_XML_NOT_HTML = re.compile(
    rb"\A(?:\xef\xbb\xbf)?\s*+<\?xml[^>]*+>\s*+" + XML_MISC + rb"<(?![!?]|html\b)",
    re.DOTALL | re.IGNORECASE,
)


def convert(
    body: bytes,
    content_type: str | None,
    final_url: str,
    *,
    truncated: bool,
    include_links: bool,
    limits: LimitsSettings,
) -> Converted:
    """Turn a response body into what the model reads. Pure: no I/O.

    ``truncated`` says the fetch core stopped at the text byte cap; the text then ends with
    ``[truncated at 1 MB]``. Raises only :class:`~webward.Refused`: ``too_large`` for an image
    or PDF over its cap (or one cut by the text cap because it was not declared as such),
    ``unsupported_type`` for other images and binary types.
    """
    declared = _content.media_type_of(content_type)
    charset = _content.charset_of(content_type)
    media_type = _content.sniff(body, declared, charset)

    if not body.strip() and not truncated:
        # Said, so that an agent does not take an empty window for a tool's fault or a page
        # it failed to read (an HTTP 204, an empty 200).
        return Converted("text", media_type, "", EMPTY_BODY, (), (), False)
    binary = media_type in IMAGE_TYPES or media_type == _content.PDF
    read_cap, _ = _content.body_cap(declared, limits)
    if read_cap > limits.max_read_bytes and not binary and len(body) > limits.max_read_bytes:
        # Read under its declared type's cap, an image's or a PDF's (5 and 10 MiB; the larger
        # for a type that says nothing), and text after all: only the text cap of it, as
        # under a text type. A page of tiny elements
        # sent as image/png was converted whole, 4.9 MB past the 512 MiB a worker has, and
        # 9.5 MB of paragraphs as application/pdf took 2.4 s and read as 4 million characters.
        body, truncated = body[: limits.max_read_bytes], True
    if binary:
        cap, _ = _content.body_cap(media_type, limits)
        if truncated or len(body) > cap:
            read = None if truncated else len(body)
            raise _content.too_large(media_type, limits, read, read_cap)
        if media_type == _content.PDF:
            return _document(body, final_url, limits)
        if image_damaged(body, media_type):
            raise Refused(
                f"refused: the {media_type} image could not be read (it is damaged or cut "
                "short), so it is not handed to the model",
                code="unsupported_type",
                reason=Reason.UNSUPPORTED_IMAGE,
            )
        size = image_size(body, media_type)
        if size is not None and (max(size) > MAX_IMAGE_SIDE or min(size) == 0):
            raise Refused(
                f"refused: the {media_type} image is {size[0]}\u00d7{size[1]} pixels, which no "
                f"model provider takes (at most {MAX_IMAGE_SIDE} on a side), so it is not handed "
                "to the model",
                code="too_large" if min(size) else "unsupported_type",
                reason=Reason.TOO_LARGE if min(size) else Reason.UNSUPPORTED_IMAGE,
            )
        part = image_part(body, media_type, final_url)
        shown = f", {size[0]}\u00d7{size[1]} pixels" if size else ""
        header = f"{media_type} image, {len(body)} bytes{shown}, from {summary_url(final_url)}"
        return Converted("image", media_type, part.name, header, (part,), (), False)
    if not _content.is_text_type(media_type):
        raise _content.not_readable(media_type, declared)

    if (media_type in _content.HTML_TYPES or media_type.endswith("xml")) and is_feed(body):
        feed = read_feed(_as_utf8_xml(body, charset), lambda href: _link_url(href, final_url))
        if feed is not None:
            listed = feed.text
            if truncated:  # what was read of it: the items before the cut
                listed = f"{listed}\n\n{_content.truncation_marker(limits)}"
            kept = feed.links[:MAX_LINKS] if include_links else ()  # as a page's
            return Converted("text", media_type, feed.title, listed, (), kept, truncated)
    # XML with a root of its own, sent as HTML (a data file, a sitemap's stylesheet gone):
    # read as the text it is, not mashed by an HTML extractor into one run of words.
    is_html = media_type in _content.HTML_TYPES and not _XML_NOT_HTML.match(body[:4096])
    text, _codec = decode_text(body, charset, html=is_html, truncated=truncated)
    title = furniture = ""
    links: tuple[Link, ...] = ()
    if is_html:
        result = html_to_markdown(text, final_url, include_links=include_links)
        page, text, title, links = text, result.markdown, result.title, result.links
        if len(text) > MAX_READING_CHARS:
            text = f"{text[:MAX_READING_CHARS]}\n\n{_CUT_NOTE}"
        if _shell.scant(text):
            text, furniture = _scant_reading(
                page, text, truncated, limits, result.rules, result.words
            )
        if result.refresh:  # first: the page a reader actually reads is there
            text = f"{result.refresh}\n\n{text}" if text else result.refresh
    else:
        text = text.removeprefix("\ufeff")
        if media_type in _content.MARKDOWN_TYPES:
            title = _markdown_title(text)
            text, links = _markdown_links(text, final_url, include_links)
    if truncated:
        marker = _content.truncation_marker(limits)
        text = f"{text}\n\n{marker}" if text else marker
    return Converted("text", media_type, title, text, (), links, truncated, furniture)


def _scant_reading(
    page: str,
    reading: str,
    truncated: bool,
    limits: LimitsSettings,
    rules: StyleRules | None = None,
    words: str | None = None,
) -> tuple[str, str]:
    """What to hand over when the extractors kept (nearly) nothing (see :mod:`webward._shell`):
    the body's own words when it has some (its text was only hard to extract), else, for a
    page cut at the byte cap, a note that its text lies past the cut; else, for a page without
    scripts, its words with the furniture's when they are more; else the reading as it is (a
    script shell's, which the fetch core renders), with the furniture's words when there are
    enough of them (:attr:`Converted.furniture`), for the fetch core to fall back on. What the
    page's own stylesheets hide (``rules``) stays out of all of these, as out of the reading.
    ``words``: the page's words, when the reading was made of them (a "plain" reading): the
    words of its body, which hold no more, are not read again (each reading of 1 MB of
    hidden elements took a third of a second)."""
    start = _BODY_START.search(page)
    body = page[start.start() if start else 0 :]
    hidden_by: dict[str, int] = {}  # the readings below read the same tags
    # All the body's words first: its words without the furniture (_NOT_WORDS skips more)
    # are no more, so they need no reading of their own when all of them are too few (a
    # page of 1 MB of hidden elements was read twice more for nothing).
    all_words = words if words is not None else _plain_text(body, rules=rules, hidden_by=hidden_by)
    words = ""
    if _shell.solid(all_words) >= _shell.WORDY_BODY_CHARS:
        words = _plain_text(body, _NOT_WORDS, rules, hidden_by)
    if _shell.solid(words) >= _shell.WORDY_BODY_CHARS:
        return words, ""
    # What the page shows a reader without scripts, as webward is one: an article kept in
    # <noscript> (a "please enable JavaScript" line is too short to count).
    words = _plain_text(_noscript_html(body), _NOT_WORDS, rules, hidden_by)
    if _shell.solid(words) >= _shell.WORDY_BODY_CHARS:
        return words, ""
    if truncated:
        return _shell.cut_note(limits), ""
    words = all_words
    if "<script" not in page.lower():
        # No scripts: no shell to render, so words the extractors took for page furniture
        # (a page written wholly in <header>s, say) are the reading rather than nothing.
        return (words if _shell.solid(words) > _shell.solid(reading) else reading), ""
    # Scripts: maybe a shell whose server-made menus are all its words, maybe a page whose
    # text sits in its header or footer. The render decides; its furniture is kept for after.
    return reading, (words if _shell.solid(words) >= _shell.WORDY_BODY_CHARS else "")


def _noscript_html(body: str) -> str:
    """The markup inside the body's ``<noscript>`` elements, joined; plain ``find``s keep it
    linear."""
    lowered = body.lower()
    pieces: list[str] = []
    pos = 0
    while (opening := lowered.find("<noscript", pos)) >= 0:
        inside = lowered.find(">", opening)
        if inside < 0:
            break
        close = lowered.find("</noscript", inside)
        pieces.append(body[inside + 1 : close if close >= 0 else len(body)])
        if close < 0:
            break
        pos = close + 1
    return "\n".join(pieces)


# The heading's text is the rest of its line, closing #s stripped in Python: a lazy group
# before "[ \t#]*$" retried the trailing run at every character (0.7 s on one line of "# ").
_MD_HEADING = re.compile(r"^#{1,2}[ \t]+([^\n]+)", re.MULTILINE)


# A Markdown link or image, inline ([text](url "title"), ![alt](<url>)), or a reference
# definition ([id]: url): the URL is group "url" (or "ref"). A link's text holds brackets
# only in pairs, up to three of them, as CommonMark's does ([see [1]](url)), each run of it
# possessive and bounded: a text that may hold any "[" was scanned again from every "[" of a
# page of them (1 s for 990 kB).
_MD_TEXT_RUN = r"[^\[\]\n]{0,300}+"
_MD_LINK = re.compile(
    rf"(?P<bang>!?)\[(?P<text>{_MD_TEXT_RUN}(?:\[{_MD_TEXT_RUN}\]{_MD_TEXT_RUN}){{0,3}}+)\]"
    r"\(\s*(?P<open><?)(?P<url>[^\s()<>]{1,4096})>?"
    r"(?P<rest>(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\))"
    r"|^(?P<lead> {0,3}\[(?P<id>[^\]\n]{1,300})\]:[ \t]*)<?(?P<ref>[^\s<>]{1,4096})>?",
    re.MULTILINE,
)


# Markdown's code, where nothing is a link: fenced blocks, indented blocks (after a blank
# line) and inline spans.
_MD_CODE_BLOCK = re.compile(
    r"^ {0,3}(?P<fence>`{3,}+|~{3,}+)[^\n]*+\n.*?(?:^ {0,3}(?P=fence)[ \t]*$|\Z)"
    r"|(?:(?<=\n\n)|\A)(?:(?: {4}|\t)[^\n]*+(?:\n|\Z))++",
    re.MULTILINE | re.DOTALL,
)
_BACKTICKS = re.compile(r"`+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Where Markdown's code is, in order: fenced and indented blocks, and inline spans as
    CommonMark pairs them (a run of N backticks closes at the next run of exactly N, within
    its paragraph; a span may hold shorter or longer runs). Linear in the text's length."""
    blocks = [m.span() for m in _MD_CODE_BLOCK.finditer(text)]
    block_ends = [end for _, end in blocks]
    blanks = [m.start() for m in _BLANK_LINE.finditer(text)]
    runs = [
        m.span() for m in _BACKTICKS.finditer(text) if not _inside(blocks, block_ends, m.start())
    ]
    by_length: dict[int, list[int]] = {}  # run length -> indices of runs, in order
    for i, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(i)
    cursor = dict.fromkeys(by_length, 0)  # per length, the first index not yet passed
    spans = list(blocks)
    i = 0
    while i < len(runs):
        start, end = runs[i]
        same, at = by_length[end - start], cursor[end - start]
        while at < len(same) and same[at] <= i:
            at += 1
        cursor[end - start] = at
        close = same[at] if at < len(same) else None
        paragraph_end = (
            blanks[bisect.bisect_left(blanks, end)] if blanks and blanks[-1] >= end else len(text)
        )
        if close is not None and runs[close][0] < paragraph_end:
            spans.append((start, runs[close][1]))
            i = close + 1
        else:
            i += 1
    return sorted(spans)


def _inside(spans: list[tuple[int, int]], ends: list[int], at: int) -> bool:
    k = bisect.bisect_right(ends, at)
    return k < len(spans) and spans[k][0] <= at


def _markdown_links(text: str, base: str, collect: bool) -> tuple[str, tuple[Link, ...]]:
    """A Markdown page's links made absolute, as an HTML page's are (a site serving Markdown
    for agents writes "/guide/start", which a model cannot follow), and, if asked, its
    outbound links listed; a link to no usable URL (javascript:) keeps its text only. Past
    :data:`_LINK_URL_BUDGET` characters of URLs written, links stay as the page wrote them:
    "[a](#)" made absolute against a long URL, 140,000 times, made a reading of 287 MB."""
    if "](" not in text and "]:" not in text:
        return text, ()  # no link to make absolute: the code need not be found either
    links: list[Link] = []
    seen: set[str] = set()
    link_url = _LinkUrls(base)
    budget = _LINK_URL_BUDGET
    page = base.split("#", 1)[0]
    code = _code_spans(text)  # in order, not overlapping
    spans = iter(code)
    current = next(spans, None)

    def in_code(at: int) -> bool:
        nonlocal current
        while current is not None and current[1] <= at:
            current = next(spans, None)
        return current is not None and current[0] <= at

    def absolute(match: re.Match[str]) -> str:
        nonlocal budget
        if budget <= 0 or in_code(match.start()):
            return match.group()  # code that looks like a link: f"[{name}]({url})"
        url = link_url(match.group("url") or match.group("ref"))
        if url == "":
            return match.group()  # as the page wrote it (see _SLOW_LINKS)
        budget -= len(url or "")
        if url is None or len(url) > _MAX_LINK_URL:
            return (match.group("text") or "") if match.group("url") else match.group()
        target = url.split("#", 1)[0]
        label = match.group("text") if match.group("url") else ""
        outbound = not match.group("bang") and target != page and target not in seen
        if collect and outbound and len(links) < MAX_LINKS:
            seen.add(target)
            links.append(Link(url=target, text=_collapse(label or "", _MAX_LINK_TEXT)))
        if match.group("url"):
            return f"{match.group('bang')}[{label}]({url}{match.group('rest')}"
        return f"{match.group('lead')}{url}"

    return _MD_LINK.sub(absolute, text), tuple(links)


def _markdown_title(text: str) -> str:
    match = _MD_HEADING.search(text[:20_000])
    if match is None:
        return ""
    line = match.group(1)
    return " ".join((line.rstrip(" \t#") or line[:1]).split())[:300]


def _document(body: bytes, final_url: str, limits: LimitsSettings) -> Converted:
    # A PDF reads as a header line and its extracted text, windowed like any page's text
    # (see _parts.pdf_reading); the document part carries the file itself.
    title, text, part = pdf_reading(body, final_url, limits)
    return Converted("document", _content.PDF, title, text, (part,), (), False)
