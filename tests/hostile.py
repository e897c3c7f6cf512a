"""A hostile-page corpus, generated in code (small, nothing stored): PDF and HTML bombs.

Each function returns the bytes of one page webward must read within its deadline and memory
limit. Used by the tests (bounds asserted) and by ``bench/convert.py`` (figures printed).
"""

from __future__ import annotations

import zlib

__all__ = [
    "attributes_html",
    "backtick_run",
    "base_href_html",
    "blanks_beside_cell_lines_html",
    "class_names_html",
    "deep_html",
    "deep_list_html",
    "deep_quote_html",
    "delimiters_html",
    "feed_xml",
    "fragment_links_html",
    "huge_line_html",
    "kinds_named_html",
    "many_pages_pdf",
    "markdown_chars_html",
    "markdown_links",
    "page_tree_pdf",
    "paragraphs_html",
    "shared_stream_pdf",
    "slow_html",
    "span_html",
    "stray_end_tags_html",
    "styled_elements_html",
    "stylesheet_html",
    "table_html",
    "tiny_elements_html",
]

_WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "the",
    "committee",
    "debates",
    "the",
    "finer",
    "points",
    "of",
    "procedure",
    "and",
    "nobody",
    "remembers",
    "who",
    "called",
    "the",
    "meeting",
]


def _words(n: int, start: int = 0) -> str:
    return " ".join(_WORDS[(start + i) % len(_WORDS)] for i in range(n))


def deep_html(depth: int = 100_000) -> bytes:
    """Text at the bottom of ``depth`` nested ``<div>``s, and a paragraph before them."""
    return (
        b"<html><head><title>Deep</title></head><body><p>"
        + b"Opening words before the nesting begins. " * 8
        + b"</p>"
        + b"<div>" * depth
        + b"DEEPEST-WORDS at the bottom of the nesting."
        + b"</div>" * depth
        + b"</body></html>"
    )


def table_html(size: int = 960_000) -> bytes:
    """A page that is almost all table: rows of short cells up to ``size`` bytes."""
    head = b"<html><head><title>Table</title></head><body><h1>Figures</h1><table>"
    rows = []
    total = len(head)
    i = 0
    while total < size - 40:
        row = "<tr>" + "".join(f"<td>r{i}c{j} {_WORDS[(i + j) % 20]}</td>" for j in range(8))
        row += "</tr>"
        rows.append(row.encode())
        total += len(rows[-1])
        i += 1
    return head + b"".join(rows) + b"</table></body></html>"


def huge_line_html(size: int = 990_000) -> bytes:
    """One paragraph on one line, ``size`` bytes long, with no markup inside."""
    head = b"<html><head><title>Line</title></head><body><p>"
    tail = b"</p></body></html>"
    text = (_words(size // 5) + " ").encode()[: size - len(head) - len(tail)]
    return head + text + tail


def slow_html(size: int = 990_000) -> bytes:
    """About 1 MB of many small nested blocks with links and inline markup: a layout that keeps
    a main-content extractor scoring candidates for a long time."""
    head = b"<html><head><title>Slow</title></head><body>"
    parts = []
    total = len(head)
    i = 0
    while total < size - 40:
        block = (
            f'<div class="c{i % 7}"><section><p>{_words(6, i)} <a href="/p{i}">link {i}</a> '
            f"<b>{_words(3, i + 1)}</b> <i>{_words(2, i + 2)}</i></p>"
            f"<ul><li>{_words(3, i)}</li><li><span>{_words(2, i)}</span></li></ul></section></div>"
        ).encode()
        parts.append(block)
        total += len(block)
        i += 1
    return head + b"".join(parts) + b"</body></html>"


def paragraphs_html(size: int = 990_000, words: int = 40) -> bytes:
    """A book on one page: plain paragraphs of ``words`` words up to ``size`` bytes, 4,000 of
    them for 1 MB (1.1 s through trafilatura, which costs 100 to 250 µs a paragraph)."""
    head = b"<html><head><title>Book</title></head><body><article><h1>Chapter one</h1>"
    tail = b"</article></body></html>"
    parts = []
    total = len(head) + len(tail)
    i = 0
    while True:
        paragraph = f"<p>{i}. {_words(words, i)}.</p>".encode()
        if total + len(paragraph) > size:
            break
        parts.append(paragraph)
        total += len(paragraph)
        i += 1
    return head + b"".join(parts) + tail


def markdown_chars_html(size: int = 990_000) -> bytes:
    """Text made of the characters a Markdown reading escapes (``*_`~[]<``), 420 of them in
    each of about 800 paragraphs: trafilatura escapes each with a Python call (1.2 s for
    700,000)."""
    return _fill(_HEAD, b"<p>" + b"a*b_c`d~e[f]g&lt;h " * 60 + b"</p>", size)


# Pages made to grow: each reads (before webward bounded them) to many times its size, up to
# 220 MB, from a page of 1 MB or much less.

_HEAD = b"<html><head><title>Grow</title></head><body>"
_TAIL = b"</body></html>"


def _fill(head: bytes, unit: bytes, size: int, tail: bytes = _TAIL) -> bytes:
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


def fragment_links_html(size: int = 990_000) -> bytes:
    """Links to "#" (this very page): each is written out with the page's whole URL, so a
    page with a long URL grows by that much per 18 bytes (221 MB for a 4,000-character URL)."""
    return _fill(_HEAD, b'<a href="#">x</a> ', size)


def base_href_html(links: int = 2_000, base_chars: int = 50_000) -> bytes:
    """A ``<base href>`` of ``base_chars`` characters and ``links`` relative links, each of
    which resolves to a URL that long (100 MB from 86 kB)."""
    base = b"https://example.com/" + b"a" * base_chars + b"/"
    return (
        b'<html><head><base href="'
        + base
        + b'"></head><body>'
        + b'<a href="x">y</a> ' * links
        + _TAIL
    )


def deep_list_html(depth: int = 250, size: int = 990_000) -> bytes:
    """Many short items in a list nested ``depth`` deep: each line carries one indent per
    level (50 MB)."""
    head = _HEAD + b"<ul><li>" * depth
    return _fill(head, b"<li>x</li>", size, b"</li></ul>" * depth + _TAIL)


def deep_quote_html(depth: int = 100, size: int = 990_000) -> bytes:
    """Many short paragraphs in quotes nested ``depth`` deep: each line carries one "> " per
    level (50 MB, 6 s for depth 100; 124 MB and 38 s for 250)."""
    head = _HEAD + b"<blockquote>" * depth
    return _fill(head, b"<p>x</p>", size, b"</blockquote>" * depth + _TAIL)


def span_html(rows: int = 1_600, span: bytes = b'rowspan="65534"') -> bytes:
    """A short article over a table whose cells span many rows or columns: each span is
    written out as that many empty cells, a rowspan in every row below it (1.2 s for 62 kB)."""
    cells = b"".join(b"<tr><td " + span + b">r%d</td></tr>" % i for i in range(rows))
    return (
        _HEAD
        + b"<h1>Spans</h1><p>"
        + b"words before the table " * 30
        + b"</p><table>"
        + cells
        + b"</table>"
        + _TAIL
    )


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF file of ``objects`` (object 1 must be the catalog), with a valid xref table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _stream(data: bytes) -> bytes:
    packed = zlib.compress(data, 9)
    return (
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + (b"\nendstream")
    )


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def shared_stream_pdf(pages: int = 2_000, inflated: int = 8_000_000) -> bytes:
    """``pages`` pages that all draw one content stream, which inflates to ``inflated`` bytes
    of text operators: a few kB on the wire, hours of pypdf time unbounded."""
    line = b"BT /F1 12 Tf 72 720 Td (spam spam spam spam spam spam) Tj ET\n"
    content = line * (inflated // len(line))
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
        _stream(content),
        _FONT,
    ]
    for _ in range(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
            b"/Resources << /Font << /F1 4 0 R >> >> >>"
        )
    return _pdf(objects)


def form_xobject_pdf(
    inflated: int = 100_000,
    nest: int = 3,
    fan: int = 10,
    draw: bytes = b"/X%d Do\n",
    *,
    inherit: bool = False,
) -> bytes:
    """One page whose content only draws Form XObject X0; each Form draws the next ``fan``
    times (each draw written as ``draw`` names it), ``nest`` levels down to one holding
    ``inflated`` bytes of text operators. 1.8 kB on the wire; pypdf parses every draw of
    the last Form again: ``fan ** nest * inflated`` bytes (1 GB, 50 s, by default).
    ``inherit``: the Forms have no resources of their own but a ``/Parent`` whose resources
    name them all, which pypdf follows (as it does a page's)."""
    if inherit:
        return _inheriting_forms_pdf(inflated, nest, fan, draw)
    line = b"BT /F1 12 Tf 72 720 Td (spam spam spam spam spam spam) Tj ET\n"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
        _FONT,
        _stream(b"q " + draw % 0 + b" Q\n"),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 3 0 R >> /XObject << /X0 6 0 R >> >> >>",
    ]
    for level in range(nest + 1):
        resources = b"/Font << /F1 3 0 R >>"
        if level < nest:
            data = b"q " + draw % (level + 1) * fan + b" Q\n"
            resources += b" /XObject << /X%d %d 0 R >>" % (level + 1, 7 + level)
        else:
            data = line * (inflated // len(line))
        stream = _stream(data)
        objects.append(
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << "
            + resources
            + b" >> "
            + stream[3:]  # the stream's own dictionary entries, then its data
        )
    return _pdf(objects)


def _inheriting_forms_pdf(inflated: int, nest: int, fan: int, draw: bytes) -> bytes:
    line = b"BT /F1 12 Tf 72 720 Td (spam spam spam spam spam spam) Tj ET\n"
    holder = 7 + nest + 1  # the object the Forms name as their /Parent
    names = b" ".join(b"/X%d %d 0 R" % (level, 7 + level) for level in range(nest + 1))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
        _FONT,
        _stream(b"q " + draw % 0 + b" Q\n"),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources 6 0 R >>",
        b"<< /Font << /F1 3 0 R >> /XObject << " + names + b" >> >>",
    ]
    for level in range(nest + 1):
        data = (
            b"q " + draw % (level + 1) * fan + b" Q\n"
            if level < nest
            else line * (inflated // len(line))
        )
        objects.append(
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Parent %d 0 R " % holder
            + _stream(data)[3:]
        )
    objects.append(b"<< /Resources 6 0 R >>")
    return _pdf(objects)


def wide_form_tree_pdf(width: int = 3, depth: int = 14) -> bytes:
    """A page drawing Form C0 of ``width`` Forms, each of whose resources name the ``width``
    Forms of the next level and itself, ``depth`` levels down to a word of text. pypdf draws
    one chain; a count that walks every Form of every level from each (a cycle kept it from
    remembering one) took ``width ** depth`` steps: 17 s at 3 and 14."""
    first = 6

    def number(level: int, index: int) -> int:
        return first + level * width + index

    def kids(level: int) -> bytes:
        return b" ".join(b"/C%d %d 0 R" % (k, number(level, k)) for k in range(width))

    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
        _FONT,
        _stream(b"/C0 Do\n"),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 3 0 R >> /XObject << " + kids(0) + b" >> >> >>",
    ]
    for level in range(depth):
        for index in range(width):
            if level < depth - 1:
                more = (
                    b"/XObject << " + kids(level + 1) + b" /Self %d 0 R >>" % number(level, index)
                )
                data = b"/C0 Do\n"
            else:
                more, data = b"", b"BT /F1 12 Tf (leaf) Tj ET\n"
            objects.append(
                b"<< /Type /XObject /Subtype /Form /BBox [0 0 1 1] /Resources << /Font << "
                b"/F1 3 0 R >> " + more + b" >> " + _stream(data)[3:]
            )
    return _pdf(objects)


def many_pages_pdf(pages: int = 5_000) -> bytes:
    """``pages`` small pages, each with its own short line of text."""
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
        _FONT,
    ]
    for i in range(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 3 0 R >> >> >>" % (5 + 2 * i)
        )
        objects.append(_stream(b"BT /F1 12 Tf 72 720 Td (Page %d words) Tj ET" % i))
    return _pdf(objects)


def twice_listed_pages_pdf(pages: int = 60) -> bytes:
    """``pages`` pages, each listed twice in the page tree, whose /Count says so: pypdf counts
    ``2 * pages``, a walk that skips a page met before counts ``pages``."""
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + kids
        + b" "
        + kids
        + b"] /Count %d " % (2 * pages)
        + b"/MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> >>",
        _FONT,
        _stream(b"BT /F1 12 Tf 72 720 Td (Twice listed words) Tj ET"),
    ]
    objects += [b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>"] * pages
    return _pdf(objects)


def page_tree_pdf(groups: int = 3, per_group: int = 2, cycle: bool = False) -> bytes:
    """A page tree of ``groups`` intermediate nodes of ``per_group`` pages each. The font and
    the media box are set on the root node only, so every page inherits them; ``cycle`` adds
    the root as a kid of the last node."""
    pages = groups * per_group
    first_page = 3 + groups  # objects: catalog, root, the groups, then page/content pairs
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (3 + g) for g in range(groups))
        + b"] /Count %d /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> >>"
        % (pages, first_page + 2 * pages),
    ]
    for g in range(groups):
        kids = [b"%d 0 R" % (first_page + 2 * (g * per_group + i)) for i in range(per_group)]
        if cycle and g == groups - 1:
            kids.append(b"2 0 R")
        objects.append(
            b"<< /Type /Pages /Parent 2 0 R /Kids ["
            + b" ".join(kids)
            + b"] /Count %d >>" % per_group
        )
    for i in range(pages):
        objects.append(
            b"<< /Type /Page /Parent %d 0 R /Contents %d 0 R >>"
            % (3 + i // per_group, first_page + 2 * i + 1)
        )
        objects.append(_stream(b"BT /F1 12 Tf 72 720 Td (Leaf %d words) Tj ET" % i))
    objects.append(_FONT)
    return _pdf(objects)


def tiny_elements_html(unit: bytes = b"<p>x", size: int = 990_000) -> bytes:
    """Elements of a letter or two, unclosed, up to ``size`` bytes: about 250,000 of them for
    ``<p>x``, each a paragraph (0.7 s through html-to-markdown and the passes before it)."""
    return _fill(_HEAD, unit, size)


def kinds_named_html(size: int = 990_000) -> bytes:
    """330,000 empty paragraphs after a line naming every word the kinds of pages
    (webward._kinds: answers, prices, live updates, contents, paywalls) are looked for by,
    and a JSON-LD block: each pass searches the whole tree (0.4 s for the five here)."""
    head = _HEAD + (
        b'<script type="application/ld+json">{"@type": "QAPage"}</script>'
        b'<p class="answer toc paywall"><time datetime="2026-01-01T00:00">answer</time></p>'
    )
    return _fill(head, b"<p>", size)


def attributes_html(per_tag: int = 90_000, size: int = 990_000, value: str = '"v"') -> bytes:
    """Elements carrying ``per_tag`` distinct attributes each (``a0=VALUE a1=VALUE ...``), a
    line of words in each, up to ``size`` bytes. libxml2 compares each attribute of a tag with
    every one before it: one tag of 90,000 took 81 s to parse; 587 tags of 200, 0.7 s through
    trafilatura."""
    attributes = " ".join(f"a{i}={value}" for i in range(per_tag)).encode()
    return _fill(_HEAD, b"<p " + attributes + b">" + _words(8).encode() + b"</p>", size)


def class_names_html(names: int = 200, size: int = 990_000) -> bytes:
    """Paragraphs of two words, each with ``names`` class names: 1 MB of class names, which
    trafilatura and the cleaning matched their patterns against (0.35 s)."""
    classes = " ".join(f"c{i}" for i in range(names)).encode()
    return _fill(_HEAD, b'<p class="' + classes + b'">' + _words(2).encode() + b"</p>", size)


def stylesheet_html(size: int = 990_000) -> bytes:
    """A ``<style>`` of rules that hide (``.c0{display:none}`` ...) up to ``size`` bytes, then
    a paragraph: every rule read and kept would cost a few µs (past their bounds, the
    sheet hides nothing)."""
    rules = b"".join(b".c%d{display:none}" % i for i in range(size // 12))
    tail = b"</style></head><body><p class=c1>a paragraph under a huge sheet</p>" + _TAIL
    return _HEAD.replace(b"</head><body>", b"<style>") + rules[: size - 60 - len(tail)] + tail


def styled_elements_html(unit: bytes, size: int = 990_000, sheet: bytes = b"") -> bytes:
    """``unit`` (each holding the class ``h``) up to ``size`` bytes under a sheet that hides
    ``.h`` and shows it again on hover (or ``sheet``): every element is compared with the
    sheet's selectors, and kept."""
    sheet = sheet or b".h{display:none}.h:hover{display:block}"
    return _fill(_HEAD.replace(b"</head>", b"<style>" + sheet + b"</style></head>"), unit, size)


def stray_end_tags_html(depth: int = 2_000, size: int = 990_000) -> bytes:
    """``depth`` open ``<div>``s, then words and end tags that close nothing open, up to
    ``size`` bytes: libxml2 searches its whole stack of open elements for each (0.57 s to
    parse at 2,000 levels)."""
    return _fill(_HEAD + b"<div>" * depth, b"word</a></li></x>", size)


def blanks_beside_cell_lines_html(size: int = 990_000) -> bytes:
    """A table cell of two paragraphs (read as the cell's lines, joined by marks the Markdown
    is then searched for) beside a code block of one run of blanks: a pattern that tried each
    blank for a mark made that search quadratic, 19.6 s at 59 kB."""
    head = (
        b"<html><head><title>Blanks</title></head><body><table><tr><th>k</th><th>v</th></tr>"
        b"<tr><td>mode</td><td><p>first line</p><p>second line</p></td></tr></table><pre>a"
    )
    tail = b"b</pre></body></html>"
    return head + b" " * (size - len(head) - len(tail)) + tail


def delimiters_html(kind: str, size: int = 990_000) -> bytes:
    """Text that trafilatura's Markdown pass scans again from each delimiter left open: math
    openers without closers (``paren``: "\\(", ``bracket``: "\\["), a run of backslashes
    that ends in no Markdown character (``backslashes``), or backtick runs of distinct lengths
    in the text of a link inside code (``backticks``). Time grows with the square of the text:
    80 kB of "\\(" took 3.2 s, 80,000 backslashes 2 s, 1 MB of link text 3.4 s."""
    prose = b"<p>Plain words of an article about rivers and owls, told at length.</p>" * 20
    head = b"<html><head><title>Delimiters</title></head><body><main>" + prose
    tail = b"</main></body></html>"
    if kind == "paren":
        return _fill(head + b"<p>", b"a \\( b ", size, b"</p>" + tail)
    if kind == "bracket":
        return _fill(head + b"<p>", b" \\[ b ", size, b"</p>" + tail)
    if kind == "backslashes":
        return _fill(head + b"<p>*", b"\\", size, b"</p>" + tail)
    if kind == "backticks":
        runs = b" ".join(b"`" * i + b" x" for i in range(1, 300))
        return _fill(
            head + b"<p>See <code><a href='/x'>" + runs, b" word", size, b"</a></code></p>" + tail
        )
    raise ValueError(kind)


_MARKS = {
    "link": b'<a href="/x">link</a>',
    "code": b"<code>c</code>",
    "emphasis": b"<em>e</em>",
}


def marked_line_html(mark: str, holder: bytes = b"p", size: int = 990_000) -> bytes:
    """One block (``holder``: ``p``, ``li``...) of words and inline marks (``link``, ``code``,
    ``emphasis``) on a single Markdown line: html-to-markdown's time grows with the square of
    a line's marks (36,000 links took 1.3 s in a paragraph, 3.1 s in a list item)."""
    opening = b"<ul><li>" if holder == b"li" else b"<" + holder + b">"
    return _fill(_HEAD + opening, b"word " + _MARKS[mark] + b" ", size)


def non_word_html(unit: bytes = b"#", size: int = 990_000) -> bytes:
    """A paragraph of one non-word character: trafilatura's text filter backs over the run once
    for each of its 24 patterns (0.16 s a pass for 1 MB, 0.7 s with the second readings)."""
    return _fill(_HEAD + b"<p>", unit, size)


def unclosed_tags_html(unit: bytes = b"<a", size: int = 990_000) -> bytes:
    """A short paragraph, then tags that never close: a reading that scans from each "<" to a
    ">" that never comes is quadratic (the parser-free reading took 9 s for 200 kB)."""
    return _fill(_HEAD + b"<p>a few words</p>", unit, size, b"")


def nested_unseen_html(opening: bytes = b"<svg>", closing: bytes = b"</svg>") -> bytes:
    """A short paragraph, then an element no reader sees (``opening``) over 90,000 more of
    its own kind nested in it, past the parser's depth: the parser-free reading matched each
    to its end by searching the rest of the text again (26 s for 1 MB)."""
    depth = 90_000
    return (
        _HEAD
        + b"<p>a few words</p>"
        + opening
        + b"<svg>" * depth
        + b"</svg>" * depth
        + closing
        + _TAIL
    )


def nested_paragraphs_html(levels: int = 10, words: int = 12_000) -> bytes:
    """``levels`` ``<div>``s nested, each holding a paragraph of ``words`` words: the second
    readings (trafilatura's fallback, readability-lxml) read each candidate's whole text, so
    their time grows with the text times its depth (1 s for ten paragraphs of 109 kB)."""
    text = " ".join(f"word{i}" for i in range(words)).encode()
    nest = b"".join(b"<div><p>" + text + b"</p>" for _ in range(levels)) + b"</div>" * levels
    return _HEAD + nest + _TAIL


def label_runs_html(runs: int = 50, words: int = 2_600) -> bytes:
    """Text after ``<label>``s, in no paragraph: trafilatura's quick reading is deficient, and
    its whole cascade falls back to justext, which normalises each token's whitespace with a
    Python call, five times over (0.95 s for 50 runs of 2,800 words)."""
    run = b" - ".join(b"w%d" % i for i in range(words))
    return _HEAD + (b"<label>x</label>" + run) * runs + _TAIL


def entity_text_html(repeats: int = 107_000, unit: bytes = b"w538&amp;") -> bytes:
    """One text of ``repeats`` entities after a block inside an inline element, on a page of
    more than 2,000 elements (read by html-to-markdown): its entity decoding grows with their
    number times the text's length (0.60 s for 107,000 through the whole converter)."""
    return _HEAD + b"<div>y</div>" * 2_100 + b"<x-app><div>x</div></x-app>" + unit * repeats + _TAIL


def nested_pre_html(depth: int = 900, size: int = 200_000) -> bytes:
    """``depth`` ``<pre>``s nested, each holding its share of ``size`` bytes of short lines:
    html-to-markdown reads each block inside the others again (0.7 s for 200 kB 900 deep)."""
    lines = b"w1 \n " * max(1, size // depth // 5)
    return _HEAD + (b"<pre>" + lines) * depth + b"</pre>" * depth + _TAIL


def dropped_between_words_html(
    unit: bytes = b"<img>", count: int = 49_000, word: bytes = b"y"
) -> bytes:
    """One paragraph in ``<main>``: ``count`` times an element the cleaning drops (``unit``)
    and a ``word`` after it. Stripped one by one, the elements left the paragraph holding
    ``count`` adjacent text nodes, over which each XPath ``text()`` query of trafilatura took
    seconds (6.4 s for 49,000 ``<img>``s); dropped one by one (a hidden element), each tail
    was appended to the whole text before it (36 s for 25,000 and 30 letters each)."""
    return b"<html><body><main><p>" + (unit + word) * count + b"</p></main></body></html>"


def nested_math_html(depth: int = 200, size: int = 990_000) -> bytes:
    """``depth`` formulas nested (``<math><mrow><mi>x</mi>``...) around ``size`` bytes of
    text: read innermost first, each level read all the text inside it again (3.2 s for 200)."""
    return (
        b"<html><body><p>"
        + b"<math><mrow><mi>x</mi>" * depth
        + b"x" * size
        + b"</mrow></math>" * depth
        + b"</p></body></html>"
    )


def nested_marks_html(depth: int = 200, size: int = 980_000, unit: bytes = b"b><i") -> bytes:
    """``depth`` times ``<b><i>`` nested around ``size`` bytes of text: html-to-markdown holds
    a copy of each one's content while it writes the ones around it (410 MB for 200, past the
    converter worker's 512 MiB with the rest of a read)."""
    opening = b"<" + unit + b">"
    closing = b"".join(b"</" + tag + b">" for tag in reversed(unit.split(b"><")))
    return b"<html><body><p>" + opening * depth + b"x" * size + closing * depth + _TAIL


def feed_xml(items: int = 7_000, size: int = 1_000_000) -> bytes:
    """An RSS feed of ``items`` entries (escaped HTML in each summary), cut at ``size`` bytes
    as the byte cap would cut it: read as its items (``_feeds``), whatever its declared type."""
    entries = "".join(
        f"<item><title>Item {i} &lt;T&gt;</title><link>/p/{i}</link><description>&lt;p&gt;"
        f"Summary {i} &lt;b&gt;bold&lt;/b&gt;&lt;/p&gt;</description>"
        "<pubDate>Mon, 01 Jan 2024 00:00:00 GMT</pubDate></item>"
        for i in range(items)
    )
    return (
        f'<?xml version="1.0"?><rss><channel><title>Big</title>{entries}</channel></rss>'.encode()[
            :size
        ]
    )


def markdown_links(size: int = 990_000) -> bytes:
    """A site's Markdown of relative links beside inline code that looks like links: each
    link made absolute, the code left alone (``_convert._markdown_links``)."""
    unit = "See [link {0}](/p/{0}) and `[x](y)` "
    return "".join(unit.format(i) for i in range(size // 30)).encode()[:size]


def backtick_run(size: int = 990_000) -> bytes:
    """One run of backticks: a fence of any length that never ends (a pattern that tries each
    shorter fence in turn took minutes)."""
    return b"`" * size


def markdown_brackets(size: int = 990_000) -> bytes:
    """Markdown of opening brackets, then of "](/": a link's text that may hold any "[" was
    scanned again from each of them (1 s)."""
    return (b"[" * (size // 2) + b"](/" * (size // 6))[:size]


def markdown_heading_line(pairs: int = 9_990) -> bytes:
    """One heading line of "# " pairs ending in a word: the title's pattern tried the trailing
    "#"s again at each character (0.7 s for 20 kB)."""
    return b"# " + b"# " * pairs + b"x\n"


def odd_links_html(unit: bytes = b"<a href='a/./%d'>a</a> ", size: int = 990_000) -> bytes:
    """Distinct links that urljoin must resolve one by one (a dot segment, a space): 70,000
    of them took 0.85 s (``_convert._SLOW_LINKS``)."""
    links = b"".join(unit % i for i in range(size // len(unit % 0)))
    return _HEAD + b"<p>" + links[: size - 100] + b"</p>" + _TAIL


def veils_left_open_html(size: int = 990_000) -> bytes:
    """Elements hidden by visibility, each holding one that shows itself again and is never
    closed: its end was looked for to the end of the page, for each (minutes)."""
    unit = b"<p style=visibility:hidden><i style=visibility:visible>"
    return _fill(_HEAD, unit, size)


def image_links_html(size: int = 686_000, words: bytes = b"w ") -> bytes:
    """One link of 49,000 images with alt text: whether the link held words was read again
    for each image, over the alt text written so far (27 s)."""
    return _fill(_HEAD + b"<p><a href=/x>", b"<img alt=ab>" + words, size, b"</a></p>" + _TAIL)


def definition_anchors_html(size: int = 990_000) -> bytes:
    """A definition of 36,000 empty anchors between words: each was dropped on its own, its
    tail joined to the growing text before it (13 s)."""
    unit = b"<a></a>word word word word "
    return _fill(_HEAD + b"<dl><dt>Term</dt><dd>", unit, size, b"</dd></dl>" + _TAIL)


def nested_terms_over_anchors_html(depth: int = 200, links: int = 30_000) -> bytes:
    """Unclosed terms, which the parser nests, over 30,000 links to an anchor: each term's
    search for its permalink went over every link below it again (11 s)."""
    return _HEAD + b"<div>" + b"<dt>" * depth + b'<a href="#x">x</a>' * links + b"</div>" + _TAIL


def gutter_of_many_blocks_html(blocks: int = 8_000) -> bytes:
    """A table row of a line-number gutter beside a cell of 8,000 code blocks: the gutter was
    read once for each block, before the cell was found to hold more than one (6 s)."""
    gutter = b"1 " * (blocks * 10)
    return (
        _HEAD
        + b"<table><tr><td>"
        + gutter
        + b"</td><td>"
        + b"<pre>x</pre>" * blocks
        + b"</td></tr></table>"
        + _TAIL
    )


def nested_blank_links_html(depth: int = 1_000, blank: int = 383_000) -> bytes:
    """Links to one target nested 1,000 deep around 380 kB of no-break spaces, then an
    article: the link's blank text was read again from each (1.3 s with links asked for)."""
    return (
        b"<html><head><meta charset=utf-8><title>T</title></head><body>"
        + b"<a href=/x><div>" * depth
        + "\xa0".encode() * blank
        + b"</div></a>" * depth
        + b"<p>real words of the article here</p>" * 2_500
        + _TAIL
    )


def reading_rules_html(kind: str, size: int = 990_000) -> bytes:
    """A page of one shape the reading rules of 2026-12-05 rewrite, over and over: headings in
    a step's header of their list item (``steps``), headings that are all link (``linked``),
    a code block of 80,000 line blocks (``lines``), inline quotations (``quotes``), buttons
    in table cells (``buttons``), headings in summaries (``summaries``); and of 2026-12-05's
    second round: a list numbered in letters (``letters``), LaTeXML's paragraph wrappers
    (``latexml``), equation tables (``equations``), numbered captions (``captions``), one
    equation row of cells (``equation row``), styles of "list-style:" over and over
    (``list styles``); and of 2026-12-05's third round: quotes in one figure (``figure
    quotes``), infobox asides nested as deep as the parser goes (``nested infoboxes``), lists
    of tabs over hidden panels (``tabs``), skip links (``skip links``), divs of emphasis
    (``emphasis``); and of 2026-12-06's: tweets in one embed's wrapper (``embedded posts``),
    cards of linked headings (``teaser cards``), a sharing widget's class 250 deep (``share
    widgets``), headings opening with an empty anchor (``heading anchors``), links of
    emphasised words (``emphasised links``), prose indented by the source (``indented
    prose``)."""
    head, unit, tail = {
        "steps": (b"<ol>", b"<li><div><span>S</span><h2>t</h2></div><div><p>w</p></div></li>",
                  b"</ol>"),
        "linked": (b"", b'<h2><a href="/x">title</a></h2><p>w</p>', b""),
        "lines": (b"<pre>", b"<div>x</div>", b"</pre>"),
        "quotes": (b"<p>", b"<q>a</q> ", b"</p>"),
        "buttons": (b"<table><tr>", b"<td><button>1</button></td>", b"</tr></table>"),
        "summaries": (b"", b"<details><summary><h2>s</h2></summary><p>x</p></details>", b""),
        "letters": (b'<ol type="a" start="700000">', b"<li>w</li>", b"</ol>"),
        "latexml": (b"", b'<div class="ltx_para"><p>w <a href="#e">1</a></p></div>', b""),
        "equations": (b"", b'<table class="ltx_equation"><tr><td></td><td><math alttext="x">'
                      b"<mi>x</mi></math></td><td>(1)</td></tr></table>", b""),
        "captions": (b"", b'<figure><img src="f.png"><figcaption class="caption">Figure 1: '
                     b"c</figcaption></figure>", b""),
        "equation row": (b'<table class="ltx_equation"><tr>', b"<td>wwwwwwwwwwwww</td>", b"</tr></table>"),
        "list styles": (b"", b'<ol style="' + b"list-style:" * 90 + b'"><li>w</li></ol>', b""),
        "figure quotes": (b"<figure>", b"<blockquote>q</blockquote>", b"<figcaption>c</figcaption></figure>"),
        "nested infoboxes": (b"", b'<aside class="portable-infobox"><div class="pi-data"><h3 '
                             b'class="pi-data-label">L</h3><div class="pi-data-value">v</div></div>', b""),
        "tabs": (b"", b'<ul role="tablist"><li role="tab">a</li><li role="tab">b</li></ul><div '
                 b'role="tabpanel"><p>x</p></div><div role="tabpanel" hidden><p>y</p></div>', b""),
        "skip links": (b"<p>", b'<a href="#main">Skip to main content</a> w ', b"</p>"),
        "emphasis": (b"", b"<div><div>words <b>bold</b> more words</div></div>", b""),
        "embedded posts": (b'<div class="embed">', b'<blockquote class="twitter-tweet"><p>w'
                           b"</p></blockquote>", b"</div>"),
        "teaser cards": (b"", b'<div><a href="/x"><h3>t</h3></a></div>', b""),
        "share widgets": (b'<div class="share">' * 250, b"<p>w</p>", b"</div>" * 250),
        "heading anchors": (b"", b'<h2><a id="x"></a>t</h2><p>w</p>', b""),
        "emphasised links": (b"<p>", b'<em>a</em> <a href="/x"><em>b</em></a> ', b"</p>"),
        "indented prose": (b"<p>", b'w <a href="/x">l</a>\n          w ', b"</p>"),
    }[kind]  # fmt: skip
    return _fill(_HEAD + head, unit, size, tail + _TAIL)


def layout_tables_html(cells: int = 10_000, depth: int = 80) -> bytes:
    """Tables that lay a page out, each read as its blocks: one column of ``cells`` cells of
    words and a break after a break (each cell's words become paragraphs), then ``depth``
    tables of one cell nested in one another (each judged after the one it holds)."""
    column = b"<table>" + b"<tr><td>w x<br><br>y z" * cells + b"</table>"
    nested = b"<table><tr><td>words<br><br>more words" * depth + b"</td></tr></table>" * depth
    return _HEAD + b"<h1>Layout</h1>" + column + nested + _TAIL


def numbered_units_html(unit: bytes, count: int, head: bytes = b"", tail: bytes = b"") -> bytes:
    """``count`` copies of ``unit``, each with its number wherever ``unit`` holds ``%d``: a
    page of elements each with an attribute of its own (an id, a start, a link's target),
    as many as fit under the element bound of the Markdown reading (50,000)."""
    units = b"".join(unit % ((i,) * unit.count(b"%d")) for i in range(count))
    return _HEAD + head + units + tail + _TAIL


def ids_html(count: int = 49_000) -> bytes:
    """A line of 49,000 bold words, each with an id of its own (the targets of a page's
    fragment links): libxml2 filed each id in the document's table of IDs, in parsing, in
    each copy and in freeing the tree."""
    return numbered_units_html(b"<b id=f%d>t</b> ", count)


def fragment_targets_html(count: int = 20_600) -> bytes:
    """20,600 links on one line, each to a word of the page with an id of its own."""
    return numbered_units_html(b"<a href='#f%d'>l</a> <span id=f%d>t</span> ", count)


def glossary_html(count: int = 21_200) -> bytes:
    """One definition list of 21,200 terms, each with an id, and their definitions."""
    return numbered_units_html(
        b"<dt id=t%d>term</dt><dd>definition text</dd>", count, b"<dl>", b"</dl>"
    )


def numbered_lists_html(count: int = 23_500) -> bytes:
    """23,500 ordered lists of one item, each with a ``start`` and the item a ``value``: every
    item's label is worked out and marked (a list not numbered 1, 2, 3 ...)."""
    return numbered_units_html(b"<ol start=%d><li value=%d>x</li></ol>", count)


def backlinks_html(count: int = 12_000) -> bytes:
    """A paragraph of 12,000 note links, each with an id, and the list of notes, each with an
    id and a link back to its note link."""
    return numbered_units_html(
        b"<a href=#r%d id=b%d>^</a> ",
        count,
        b"<p>",
        b"</p><ol>"
        + b"".join(b"<li id=r%d><a href=#b%d>back</a> note</li>" % (i, i) for i in range(count))
        + b"</ol>",
    )


def references_html(count: int = 7_000) -> bytes:
    """Wikipedia's references, 7,000 of them: a superscript link with an id after a word, and
    the list of references, each linking back."""
    refs = b"".join(
        b"<li id=cite_note-%d><a href=#cite_ref-%d>^</a> ref</li>" % (i, i) for i in range(count)
    )
    return numbered_units_html(
        b"word<sup id=cite_ref-%d class=reference><a href=#cite_note-%d>[%d]</a></sup> ",
        count,
        b"<div id=content><p>",
        b"</p><ol class=references>" + refs + b"</ol></div>",
    )


def aria_tabs_html(count: int = 9_000) -> bytes:
    """9,000 lists of one ARIA tab, each naming the panel after it."""
    return numbered_units_html(
        b"<div role=tablist><button role=tab aria-controls=p%d>T</button></div>"
        b"<div role=tabpanel id=p%d>panel</div>",
        count,
    )


def anchored_headings_html(count: int = 13_500) -> bytes:
    """13,500 headings, each with an id and a permalink to it, and a paragraph."""
    return numbered_units_html(
        b"<h2 id=h%d><a href=#h%d class=anchor>#</a>Title %d</h2><p>text</p>", count
    )


def code_blocks_html(size: int = 990_000) -> bytes:
    """20,000 code blocks of one line, each with its language."""
    return _fill(_HEAD, b"<pre><code class='language-py'>x = 1</code></pre>", size)


def highlighted_code_html(size: int = 990_000) -> bytes:
    """One code block of 18,000 lines, each of two highlighted tokens."""
    unit = b"<span class=k>def</span> <span class=n>f</span>()\n"
    return _fill(_HEAD + b"<pre><code>", unit, size, b"</code></pre>" + _TAIL)


def deep_wrappers_html(
    opening: bytes = b"<div>",
    closing: bytes = b"</div>",
    unit: bytes = b"<a href=#>w</a> ",
    count: int = 48_000,
    depth: int = 250,
    end: bytes = b"",
) -> bytes:
    """``count`` elements (links, by default) inside ``depth`` wrappers, just under the
    parser's limit of 256 levels and the Markdown reading's bound of 50,000 elements:
    html-to-markdown's time for each link (or emphasis, or span) grows with the levels
    above it (48,000 links: 0.08 s at the top, 0.23 s 250 levels down), and so do the
    passes before it that read ancestors or serialise the tree."""
    return _HEAD + opening * depth + unit * count + end + closing * depth + _TAIL


def unclosed_openings_html(unit: bytes = b"](x_ ", size: int = 990_000) -> bytes:
    """One paragraph of openings of a link's target (or an autolink's, ``&lt;a:x_``) that
    nothing closes, each beside an underscore at a word's edge: html-to-markdown's reading
    of a page is searched for such underscores, skipping link targets and autolinks, and
    each opening had the search run on to its line's (its word's) end: 200 kB took 12 s."""
    return _HEAD + b"<p>" + unit * (size // len(unit)) + b"</p>" + _TAIL
