"""Structure that changes what a page says, kept through HTML-to-Markdown conversion.

trafilatura's Markdown read a ``<blockquote>`` as a plain paragraph (a model took someone
else's words for the author's), numbered every ordered list from 1 (``<ol start="5">``,
``<li value>`` and ``reversed`` lost), turned a definition list into bare bullets (terms and
definitions no longer paired) and dropped MathML (``Math: <math>..</math> holds.`` read
"Math: holds."). html-to-markdown (the whole-page reading) keeps quotes and ``start`` but
pairs no definitions and runs a formula's tokens together (``a<sub>1</sub>=2`` read "a1=2").

What is done, on the cleaned lxml tree, before a converter sees it:

- :func:`prepare` (once, on the tree every reading is made from): characters used as marks
  below are taken out of the page's text and attributes, so that a page cannot write a mark;
  an ordered list whose numbers are not 1, 2, 3 ... gets its number (or letters, numeral)
  marked at the start of each item's text (``␝5␝``, ``␝b␝``); a definition list becomes a
  list of its terms in bold, each followed by its definition (``- **Talons**: Sharp claws
  ...``), or, where a definition holds blocks (paragraphs, code, lists: an API reference), a
  bold paragraph per term followed by its definition's blocks as they are;
  a table laying out the page becomes the blocks it lays out (:func:`layout_tables`);
  the blocks in a table cell (paragraphs, lists, line breaks, a nested table) become the
  cell's lines, a mark between them (:func:`_cell_lines`: ``<br>`` once restored; a table
  laying out the page is left as it is); a superscript or subscript starts with its mark
  (``x^2``, ``H_2O``, ``x^(n+1)``); a LaTeXML paper's display equation laid out as a table
  becomes a paragraph a row, and its paragraph wrappers go (:func:`_equation_lines`);
- :func:`mark_quotes` (for trafilatura only; html-to-markdown writes quotes itself): every
  text inside a quote starts with one mark per level of quote;
- :func:`header_rows` and :func:`mark_joiners` (for trafilatura only): a table's first row
  is its header row, its caption a paragraph before it and its spans written out as cells;
  zero-width joiners and non-joiners become marks (trafilatura drops them);
- :func:`math_to_text`: each ``<math>`` becomes its text: its ``alttext``, else its TeX
  annotation, both as ``$...$``, else its tokens' text joined as the formula reads
  (``x = 2``, ``x^2``, ``(a)/(b)``);
- :func:`restore` (on each converter's Markdown): scripts' marks become ``^`` and ``_``,
  joiners' the joiners, a run of a cell's line-break marks one ``<br>`` (none at a cell's
  edge); a line whose text starts with marks gets a ``> `` per level of quote (after its
  list marker when the quote is inside the list item), the item its marked number (a letter
  or numeral: a bullet starting ``b.``), and the blank lines inside a quote a ``>``; every
  other mark is deleted. Marks are printable symbols (Control Pictures) that trafilatura
  neither drops (it keeps only printable characters), escapes nor normalises.

Each pass is one walk over the tree or one pass over the lines.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "MARKS",
    "header_rows",
    "mark_joiners",
    "mark_quotes",
    "math_to_text",
    "prepare",
    "restore",
    "script_marks",
]

#: One level of quote around the line.
QUOTE = "\u241f"  # SYMBOL FOR UNIT SEPARATOR
#: One level of quote inside the line's list item.
ITEM_QUOTE = "\u241e"  # SYMBOL FOR RECORD SEPARATOR
#: Around a list item's number: ``␝5␝``.
NUMBER = "\u241d"  # SYMBOL FOR GROUP SEPARATOR
#: A superscript's start, written ``^``; a subscript's, written ``_``.
SUPER = "\u241c"  # SYMBOL FOR FILE SEPARATOR
SUB = "\u241b"  # SYMBOL FOR ESCAPE
#: A line's end inside a table cell, written ``<br>`` (a Markdown table's cell is one line).
CELL_BREAK = "\u241a"  # SYMBOL FOR SUBSTITUTE
#: A zero-width joiner and non-joiner, which trafilatura drops from a long text (it keeps only
#: printable characters): an emoji sequence fell apart (a family into four people), a Persian
#: word into letters joined otherwise.
JOINER = "\u2419"  # SYMBOL FOR END OF MEDIUM
NON_JOINER = "\u2418"  # SYMBOL FOR CANCEL
MARKS = QUOTE + ITEM_QUOTE + NUMBER + SUPER + SUB + CELL_BREAK + JOINER + NON_JOINER
_SCRIPT_MARKS = str.maketrans({SUPER: "^", SUB: "_", JOINER: "\u200d", NON_JOINER: "\u200c"})
_JOINERS = str.maketrans({"\u200d": JOINER, "\u200c": NON_JOINER})
_JOINED_TEXTS = "//text()[contains(., '\u200d') or contains(., '\u200c')]"

# (One translate() a node rather than a contains() for each mark: with six marks, the texts
# of a page of 1 MB took 25 ms to search, 17 ms so; and the texts are searched only when the
# page's text, joined by libxml2 in 2 ms, holds a mark at all.)
_HAS_MARK = f"translate(., '{MARKS}', '') != ."
_MARKED_TEXTS = f"//text()[{_HAS_MARK}]"
_MARKED_ATTRIBUTES = f"//@*[{_HAS_MARK}]"
_UNMARK = str.maketrans(dict.fromkeys(MARKS, ""))


def _holds_mark(text: str) -> bool:
    """Whether ``text`` holds one of the marks: a search in C for each, answered at once for a
    text of Latin-1 alone (Python knows each string's widest character). One regex pass took
    0.25 ms over a page's 100 kB of English text, 0.35 ms over Chinese; these, 0.3 and 10 us."""
    return any(mark in text for mark in MARKS)


# An item's label: its number, letters or roman numeral (_item_labels).
_LABEL = r"(?:\d{1,9}|[a-zA-Z]{1,15})"
_ANY_MARK = re.compile(f"{NUMBER}{_LABEL}{NUMBER}|[{MARKS}]")
_A_MARK = re.compile(f"[{MARKS}]")
# A line that starts with marks: its indent, list marker, heading marker, opening emphasis,
# code or link bracket, then the marks. Nothing in it repeats over what follows, so a line
# is matched once, in time linear in its length.
_LEAD = re.compile(
    r"(?P<quote>(?:> ?)*)"  # html-to-markdown's own quotes (trafilatura's are marks)
    r"(?P<indent> {0,12})"
    r"(?P<item>(?:[-+*]|(?P<number>\d{1,9})(?P<delimiter>[.)]))(?P<gap> +))?"
    r"(?P<heading>#{1,6} +)?"
    r"(?P<opening>(?:[*_~`\[]|<(?:sup|sub|u)>)*)"
    f"(?P<marks>(?:[{QUOTE}{ITEM_QUOTE}]|{NUMBER}{_LABEL}{NUMBER})+)"
)
_LEADING_MARKS = re.compile(f"[ \t]*([{QUOTE}{ITEM_QUOTE}]+)")
# A code block's fence (as tidy_markdown reads them).
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# A fence that opens a block after an item's words, on their line (see restore).
_GLUED_OPENING = re.compile(r"[^\s`][ \t]*(`{3,})[ \t]*$")
_NUMBER_MARK = re.compile(f"{NUMBER}({_LABEL}){NUMBER}")
# What would start a block at the start of a line (trafilatura's _BLOCK_START_RES): a
# paragraph's or item's text starting so is escaped by the converters, but not when a mark
# stood before it; restore() escapes it as they would have.
_BLOCK_START = re.compile(r"#{1,6}(?=[ \t]|$)|>|[-+*](?=[ \t]|$)|\d{1,9}(?=[.)](?:[ \t]|$))")

# (Ten digits at most, leading zeros left out: any more make a number past the largest, and
# Python refuses to read a string of over 4,300 digits as an int.)
_INTEGER = re.compile(r"[\t\n\f\r ]*([-+]?)0*(\d{1,10})")
_MAX_NUMBER = 999_999_999  # CommonMark's largest list number
# The list-style-type keywords of letters and roman numerals, and decimal's.
_CSS_LIST_STYLES = {
    "lower-alpha": "a", "lower-latin": "a", "upper-alpha": "A", "upper-latin": "A",
    "lower-roman": "i", "upper-roman": "I", "decimal": None,
}  # fmt: skip
_ROMAN = (
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
)  # fmt: skip
# The tables LaTeXML lays a display equation out in (one formula, or an aligned group).
# (Each class first asked whether it holds "ltx_e" or "ltx_para" at all, which libxml2 answers
# quicker than it normalizes the class's spaces.)
_EQUATION_TABLES = (
    "//table[contains(@class, 'ltx_e') and ("
    "contains(concat(' ', normalize-space(@class), ' '), ' ltx_equation ')"
    " or contains(concat(' ', normalize-space(@class), ' '), ' ltx_equationgroup ')"
    " or contains(concat(' ', normalize-space(@class), ' '), ' ltx_eqn_table '))]"
)
# What a cell of an equation's table never holds: a table of them holding one is left as is.
_EQUATION_BLOCKS = ("table", "p", "div", "ul", "ol", "dl", "pre", "blockquote")
_LATEXML_PARAGRAPHS = (
    "//div[contains(@class, 'ltx_para')"
    " and contains(concat(' ', normalize-space(@class), ' '), ' ltx_para ')]"
)
_UNWRAPPED = "webward-unwrapped"
# What ends the search for an item's first words: its own sub-blocks (their words are not
# the item's first).
_ITEM_BLOCKS = frozenset(("ul", "ol", "dl", "li", "table", "pre", "blockquote"))

# Table cells: what reads as a line of its own inside one (see _cell_lines). A <pre> keeps
# its own lines, and a mark inside it would be code.
_CELL_BLOCKS = frozenset((
    "address", "article", "aside", "blockquote", "caption", "center", "details", "dd", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5",
    "h6", "header", "hgroup", "li", "main", "menu", "ol", "p", "section", "summary", "table",
    "tr", "ul",
))  # fmt: skip
_CELL_LINE_TAGS = (*sorted(_CELL_BLOCKS), "br", "hr")
#: A table cell of this many characters lays out a page (see _Layout).
_LAYOUT_CELL_CHARS = 1_000
# Layout tables (see _lays_out): a table of this many rows or columns holds data; these
# parts of a table mark it as data; these tags are counted as a cell's blocks.
_DATA_ROWS = 10
_DATA_COLUMNS = 5
_DATA_PARTS = ("caption", "thead", "tfoot", "colgroup", "col")
_OWN_HEADER_CELL = "boolean(tr/th | */tr/th)"
# A cell framing a page of divs: nothing but divs and tables, and no words of its own (Tumblr's
# theme frames its posts and sidebar so). Read as a table row, trafilatura's first reading came
# out deficient and the second found the posts with their titles; as divs, the first stood
# and had dropped the titles.
_FRAME = "*[div and not(*[not(self::div or self::table)]) and not(text()[normalize-space()])]"
_OWN_FRAME = f"boolean(tr/{_FRAME} | */tr/{_FRAME})"
_OWN_SECOND_CELL = "boolean(tr/*[self::td or self::th][2] | */tr/*[self::td or self::th][2])"
_OWN_DATA_COLUMN = (
    f"boolean(tr/*[self::td or self::th][{_DATA_COLUMNS}]"
    f" | */tr/*[self::td or self::th][{_DATA_COLUMNS}])"
)
_LAYOUT_TAGS = (
    "td", "th", "p", "ul", "ol", "dl", "blockquote", "br", "h1", "h2", "h3", "h4", "h5", "h6",
)  # fmt: skip
# What ends a run of words in a layout table's cell (see _runs_as_paragraphs).
_CELL_RUN_ENDS = _CELL_BLOCKS | {"pre", "hr", "form", "nav", "noscript", "iframe", "video"}
#: A table whose first rows hold such a cell lays out a page: this many of them are read.
_LAYOUT_CELLS = 64
# A table's own rows (as trafilatura reads them: thead, tbody and tfoot taken out), and its
# own cells that span columns or rows.
_OWN_ROWS = "tr | thead/tr | tbody/tr | tfoot/tr"
_OWN_SPANS = "boolean(tr/*[@colspan or @rowspan] | */tr/*[@colspan or @rowspan])"
_CELL_TAGS = _CELL_BLOCKS | {"br", "hr", "td", "th", "tbody", "thead", "tfoot"}
# A table row's cell edge, not an escaped pipe ("\|" in a cell's words).
_CELL_EDGE_BEFORE = re.compile(f"(?<!\\\\)(\\|)[ \t]*{CELL_BREAK}")
_CELL_EDGE_AFTER = re.compile(f"{CELL_BREAK}[ \t]*((?<!\\\\)\\|)")
_EDGE_BREAK = re.compile(f"^([ \t]*){CELL_BREAK}|{CELL_BREAK}$", re.MULTILINE)

# Scripts: a superscript that ends an ordinal number ("1<sup>st</sup>"), and a script's text
# of one term (a sign, then no space nor operator), written without brackets.
_ORDINALS = frozenset(("st", "nd", "rd", "th"))
_ONE_TERM = re.compile("[-+\u2212]?[^\\s+\\-\u2212*/=,;:]+")

# MathML.
_TEX_ENCODINGS = frozenset(
    ("application/x-tex", "text/x-tex", "tex", "latex", "application/x-latex")
)
_TEX_STYLE = re.compile(r"\{\\(?:display|text)style\b(.*)\}", re.DOTALL)
_MATH_TOKENS = frozenset(("mi", "mn", "mtext", "ms"))
# Operators written without spaces around them (brackets, separators) and invisible ones.
_TIGHT_OPERATORS = frozenset("()[]{}|\u2016\u27e8\u27e9,;.!'\u2032")
_INVISIBLE_OPERATORS = {"\u2061": "", "\u2062": "", "\u2063": ", ", "\u2064": "+"}
# Spaces a script's end left inside brackets or before punctuation.
_MATH_SPACES = re.compile(r"(?<=[(\[]) | (?=[)\],;.])")
_SCRIPTED = frozenset(("msup", "msub", "msubsup", "mover", "munder", "munderover"))
_RELATIONS = frozenset("=<>\u2260\u2264\u2265\u2248\u2261\u223c\u2192\u21d2")
_SKIPPED_MATH = frozenset(("annotation", "annotation-xml", "none", "mprescripts", "mspace"))
# Past this depth a formula's elements are read as their plain text (a hostile page nests).
_MAX_MATH_DEPTH = 32


def _iterwalk(tree: Any, events: tuple[str, ...], tag: Any = None) -> Any:
    import lxml.etree  # type: ignore[import-untyped]  # lxml ships no type stubs

    return lxml.etree.iterwalk(tree, events=events, tag=tag or lxml.etree.Element)


@functools.cache
def compiled(path: str) -> Any:
    """XPath ``path`` compiled once per process (module constants only: the cache keeps
    each): a table's own paths, asked of every table, took twice as long compiled anew on
    each call (3 to 6 us each, 1 to 3 compiled), and the bounds' paths of hundreds of steps
    as long to compile on every page as to run (20 us for a thousand steps)."""
    import lxml.etree

    return lxml.etree.XPath(path)


def _set_text(node: Any, value: str) -> None:
    """Set the text an XPath text() result ``node`` stands for."""
    parent = node.getparent()
    if node.is_tail:
        parent.tail = value
    else:
        parent.text = value


def _marked(text: str | None, mark: str) -> str | None:
    """``text`` with ``mark`` before its first character that is not a space; whitespace alone
    is left as it is (the converters drop it, and a mark would make it words)."""
    if not text or text.isspace():
        return text
    start = len(text) - len(text.lstrip())
    return f"{text[:start]}{mark}{text[start:]}"


# --------------------------------------------------------------------------------------------
# the tree: before conversion


def prepare(tree: Any) -> None:
    """Take the marks out of the page (its text and attributes), pair each definition list's
    terms with their definitions, read each layout table as its blocks and each other table
    cell's blocks as its lines, mark the numbers of lists not numbered 1, 2, 3 ... and the
    start of each script."""
    text = tree.xpath("string()")
    for node in tree.xpath(_MARKED_TEXTS) if _holds_mark(text) else ():
        _set_text(node, node.translate(_UNMARK))
    # The same for the attributes: their values joined (as plain strings, which cost less to
    # make than lxml's own) searched first, a third of what the search of each value costs.
    values = "".join(tree.xpath("//@*", smart_strings=False))
    for value in tree.xpath(_MARKED_ATTRIBUTES) if _holds_mark(values) else ():
        value.getparent().set(value.attrname, value.translate(_UNMARK))
    _pair_definitions(tree)
    _equation_lines(tree)  # before the cells: an equation's table is no table of data
    layout_tables(tree)  # before the cells: a layout table's cells are no table's
    if "list-style" in values or "LIST-STYLE" in values:  # (on the lists' or items' styles)
        _numbered_bullets(tree)  # before the cells' lines and the numbers: an ordered list now
    _cell_lines(tree)  # before the numbers: a list in a cell is numbered there
    _number_items(tree)
    _mark_scripts(tree)


def _integer(value: str | None) -> int | None:
    """An integer attribute as HTML parses it (leading spaces, a sign, digits), else None."""
    if value is None:
        return None
    if len(value) <= 10 and value.isascii() and value.isdigit():
        return int(value)  # the common case, as the pattern reads it, without matching it
    match = _INTEGER.match(value)
    if match is None:
        return None
    number = int(match.group(2))
    return -number if match.group(1) == "-" else number


def _numbered_bullets(tree: Any) -> None:
    """Read a ``<ul>`` its style numbers as the ordered list it shows: WP Recipe Maker writes a
    recipe's steps as ``<ul class="wprm-recipe-instructions">`` of ``<li
    style="list-style-type: decimal;">``, which a browser numbers 1, 2, 3, and the steps
    read as bullets, their order unsaid. A ``<ul>`` whose own style, or every item's, names a
    numbered ``list-style-type`` (decimal, letters, roman numerals; the last declaration
    wins) becomes an ``<ol>`` of that type."""
    for ul in itertools.islice(compiled(_STYLED_BULLETS)(tree), _MAX_STYLED_LISTS):
        kind = _declared_list_type(ul.get("style"))
        if kind is None:
            items = list(itertools.islice(ul.iterchildren("li"), _MAX_STYLED_ITEMS + 1))
            if not items or len(items) > _MAX_STYLED_ITEMS:
                continue
            kinds = {_declared_list_type(item.get("style")) for item in items}
            if len(kinds) != 1:
                continue
            kind = kinds.pop()
        if kind not in _CSS_LIST_STYLES:
            continue
        ul.tag = "ol"
        if kind != "decimal":  # (read by _list_style)
            ul.set("style", f"list-style-type: {kind}")


# A list of bullets with a style of its own or its items' (found by libxml2 in one pass), and
# how many such lists, and items of one, are read (a page of 45,000 lists of styled items
# would spend a few tenths of a second reading their styles).
_STYLED_BULLETS = "//ul[@style or li/@style]"
_MAX_STYLED_LISTS = 1_000
_MAX_STYLED_ITEMS = 1_000


def _declared_list_type(style: str | None) -> str | None:
    """The list style type the last ``list-style-type`` or ``list-style`` declaration of
    ``style`` names (one of :data:`_CSS_LIST_STYLES`' names, or "" for another: ``disc``,
    ``none``), None where it declares none (within its first 1,000 characters)."""
    style = (style or "")[:1000]
    if "list-style" not in style.lower():
        return None
    kind = None
    for declaration in style.split(";"):
        name, colon, value = declaration.partition(":")
        if colon and name.strip().lower() in ("list-style", "list-style-type"):
            words = value.lower().split()
            kind = next((word for word in words if word in _CSS_LIST_STYLES), "")
    return kind


def _number_items(tree: Any) -> None:
    """Mark each item of an ordered list numbered otherwise than 1, 2, 3 ... (``start``,
    ``reversed``, an item's ``value``, letters or roman numerals) with its label, at the start
    of its first words. A list with a number Markdown cannot write (negative, past
    999,999,999) is left as it is."""
    for ol in tree.xpath("//ol[@start or @reversed or @type or @style or li/@value]"):
        labels = _item_labels(ol)
        if labels is None:
            continue
        for item, label in labels.items():
            if (item.text or "").strip() or len(item):  # an empty item is dropped anyway
                _mark_first_words(item, f"{NUMBER}{label}{NUMBER}")


def _mark_first_words(item: Any, mark: str) -> None:
    """Put ``mark`` before the first words of ``item`` (in a link or emphasis, perhaps), or
    at its start when a sub-block comes before any."""
    if (item.text or "").strip():  # (as the walk's first step finds, without starting one)
        item.text = _marked(item.text, mark)
        return
    for event, element in _iterwalk(item, ("start", "end")):
        if event == "start":
            if element is not item and element.tag in _ITEM_BLOCKS:
                break
            if (element.text or "").strip():
                element.text = _marked(element.text, mark)
                return
        elif element is not item and (element.tail or "").strip():
            element.tail = _marked(element.tail, mark)
            return
    item.text = mark + (item.text or "")


def _item_labels(ol: Any, *, plain: bool = False) -> dict[Any, str] | None:
    """The label of each item of an ordered list, as a browser writes it (``start``,
    ``reversed``, an item's ``value``; its ``type`` or ``list-style-type``: ``b``, ``iv``);
    None when they are 1, 2, 3 ... (unless ``plain``) or a number Markdown cannot write.

    A letter or roman numeral is written where a browser writes one: a letter for 1 and up,
    a roman numeral for 1 to 3,999, the number itself otherwise (CSS's fallback)."""
    items = list(ol.iterchildren("li"))
    step = -1 if "reversed" in ol.attrib else 1
    start = _integer(ol.get("start"))
    number = start if start is not None else (len(items) if step < 0 else 1)
    style = _list_style(ol)
    labels: dict[Any, str] = {}
    natural = style is None
    for i, item in enumerate(items, 1):
        value = _integer(item.get("value"))
        if value is not None:
            number = value
        label = _label(number, style)
        if not plain and label[-1].isdigit() and not 0 <= number <= _MAX_NUMBER:
            return None  # in a cell it is words; as an item's number, Markdown cannot write it
        natural = natural and number == i
        labels[item] = label
        number += step
    return None if natural and not plain else labels


def _list_style(ol: Any) -> str | None:
    """The letters or numerals an ordered list is numbered with (``a``, ``A``, ``i``, ``I``),
    from the last ``list-style-type`` or ``list-style`` declaration of its ``style`` (which
    wins, as CSS does; a shorthand without a type sets none) or its ``type``; None for
    numbers. Declarations are split at ``;`` and named whole (``--list-style`` and
    ``url(lower-alpha.png)`` name no type), within the style's first 1,000 characters."""
    style = (ol.get("style") or "")[:1000]
    if "list-style" in style.lower():
        declared = False
        kind = None
        for declaration in style.split(";"):
            name, colon, value = declaration.partition(":")
            if colon and name.strip().lower() in ("list-style", "list-style-type"):
                declared = True
                words = value.lower().split()
                kind = next((_CSS_LIST_STYLES[w] for w in words if w in _CSS_LIST_STYLES), None)
        if declared:
            return kind
    kind = (ol.get("type") or "").strip()
    return kind if kind in ("a", "A", "i", "I") else None


def _label(number: int, style: str | None) -> str:
    """``number`` written in ``style`` (:func:`_list_style`)."""
    if style in ("a", "A") and number >= 1:
        letters = ""
        while number:
            number, rest = divmod(number - 1, 26)
            letters = chr(ord(style) + rest) + letters
        return letters
    if style in ("i", "I") and 1 <= number <= 3999:
        numeral = ""
        for value, symbol in _ROMAN:
            count, number = divmod(number, value)
            numeral += symbol * count
        return numeral if style == "I" else numeral.lower()
    return str(number)


def _equation_lines(tree: Any) -> None:
    """A display equation that LaTeXML lays out as a table (arXiv's and ar5iv's papers:
    ``<table class="ltx_equation">``, one row per line of an aligned group, the formula's
    parts and its number ``(1)`` in cells) becomes a paragraph per row: its formulas and its
    number, in order. As a table it read ``|  | $h=...$ |  | (1) |``, and trafilatura's
    precision mode dropped the paragraph that followed it."""
    import lxml.etree

    # Each paragraph of a LaTeXML paper sits alone in a <div class="ltx_para">: trafilatura's
    # precision mode deletes a div under 200 characters that holds a link, so every short
    # paragraph citing a reference or an equation went ("Equation 1 shows the forward pass").
    # The wrappers go, their paragraphs stay where they were.
    wrappers = compiled(_LATEXML_PARAGRAPHS)(tree)
    for wrapper in wrappers:
        wrapper.tag = _UNWRAPPED
    if wrappers:
        lxml.etree.strip_tags(tree, _UNWRAPPED)
    for table in compiled(_EQUATION_TABLES)(tree):
        if next(table.iterdescendants(_EQUATION_BLOCKS), None) is not None:
            continue  # a table or paragraphs in it: a layout around more than an equation
        block = table.makeelement("div", {"class": "ltx_equation"})
        caption = table.find("caption")
        if caption is not None:
            caption.tag, caption.tail = "p", None
            block.append(caption)
        block.extend(_equation_line(row) for row in table.xpath("./tr | ./*/tr"))
        block.tail = table.tail
        table.getparent().replace(table, block)


def _equation_line(row: Any) -> Any:
    """A ``<p>`` of the row's cells that hold something, a space between them. Each text is
    added once, where the next element or the end comes: a row of 45,000 cells written into
    the paragraph's text cell by cell took 15 s."""
    line = row.makeelement("p", {})
    pending: list[str] = []
    for cell in row.iterchildren("td", "th"):
        if not (cell.text or "").strip() and not len(cell):
            continue  # the layout's padding
        if pending or len(line):
            pending.append(" ")
        pending.append(cell.text or "")
        for child in list(cell):
            _append_text(line, line[-1] if len(line) else None, pending)
            pending = []
            line.append(child)  # its tail goes with it
    _append_text(line, line[-1] if len(line) else None, pending)
    return line


def _cell_lines(tree: Any) -> None:
    """The blocks inside each table cell (paragraphs, lists, line breaks, a table nested in
    it) read as the cell's lines: a Markdown table's cell is one line, so each block's start
    and end gets a :data:`CELL_BREAK` (``<br>`` once restored, a run of them one, none at the
    cell's edges), a list's items their ``- `` or number, a nested table's cells a ``; ``
    between them, and the blocks become ``<span>``s. trafilatura dropped a list in a cell
    (``| mode |  |``), kept a cell's paragraphs as one run of words, and moved a nested table
    out of its cell, after the table, which then had no header row; html-to-markdown ran the
    items into one line of words.

    Only cells that hold a block are walked (one ``iter`` in C for each other one), each
    outermost one once with all it holds: linear, however the tables nest."""
    import lxml.etree

    # Cells holding an element, found by libxml2: on a table of 30,000 cells of words alone,
    # whether there is one takes 1 ms, listing them 10 ms, and a loop over the cells 25 ms.
    if not tree.xpath("boolean(/descendant::*[(self::td or self::th) and *])"):
        return
    # A cell holding code is left as it is: its lines are the code's, and trafilatura dropped
    # what followed a <pre> once the cell's blocks were spans.
    cells = [
        cell
        for cell in tree.xpath("/descendant::*[(self::td or self::th) and *]")
        if next(cell.iterdescendants(*_CELL_LINE_TAGS), None) is not None
        and next(cell.iterdescendants("pre"), None) is None
    ]
    layout = _Layout(tree)
    layout.measure(cells)
    inner: set[Any] = set()  # cells inside a cell walked already
    for cell in cells:
        if cell in inner or layout.lays_out(_table_of(cell)):
            continue
        spans: list[Any] = []
        breaks: dict[Any, str] = {}
        numbers: dict[Any, str] = {}
        for event, element in lxml.etree.iterwalk(
            cell, events=("start", "end"), tag=lxml.etree.Element
        ):
            tag = element.tag
            if element is cell or tag not in _CELL_TAGS:
                continue
            if event == "end":
                if tag in _CELL_BLOCKS:
                    element.tail = CELL_BREAK + (element.tail or "")
                continue
            if tag == "br" or tag == "hr":
                breaks[element] = CELL_BREAK
                continue
            spans.append(element)
            if tag in ("td", "th"):
                inner.add(element)
                if element.getprevious() is not None:
                    element.text = f"; {element.text or ''}"
                continue
            if tag not in _CELL_BLOCKS:
                continue  # tbody, thead, tfoot: the rows are what counts
            lead = ""
            if tag == "ol":
                numbers.update(_item_labels(element, plain=True) or {})
            elif tag == "li":
                number = numbers.get(element)
                lead = "- " if number is None else f"{number}. "
            element.text = f"{CELL_BREAK}{lead}{(element.text or '').lstrip()}"
        replace_by_texts(breaks)
        for element in spans:
            element.tag = "span"
            element.attrib.clear()


def layout_tables(tree: Any) -> None:
    """Each table that lays the page out, not data, becomes the blocks it lays out: the
    table, its rows and its cells become divs, a cell's runs of words paragraphs (see
    :func:`_lays_out`). A one-cell table holding an essay read as one table row, its
    paragraphs run together, and a list in a newsletter's cell was lost. Each table is
    judged on its own rows (XPath in libxml2), innermost first, and, only where it must be,
    on its cells' blocks, counted for the whole page in one walk: linear, however they nest
    (a table's ancestors are walked to the one it sits in, 256 levels at most)."""
    tables = list(tree.iter("table"))
    if not tables:
        return
    # Only if a table needs them:
    blocks = functools.cache(lambda: _cell_blocks(tree))
    threads = functools.cache(lambda: _around_comments(tree))
    nests_layout: set[Any] = set()
    laid_out: list[tuple[Any, list[Any]]] = []
    for table in reversed(tables):  # a nested table before the one it sits in
        rows = compiled(_OWN_ROWS)(table)
        if _lays_out(table, rows, table in nests_layout, blocks) and table not in threads():
            laid_out.append((table, rows))
            # (the parser nests at most 256 levels deep)
            nests_layout.add(next(table.iterancestors("table"), None))
    for table, rows in laid_out:
        for row in rows:
            for cell in row.iterchildren("td", "th"):
                _as_div(cell)
                _runs_as_paragraphs(cell)
            _as_div(row)
        for part in table.iterchildren("tbody", "thead", "tfoot"):
            _as_div(part)
        _as_div(table)


def _as_div(element: Any) -> None:
    """``element`` (a layout table's part) as a ``<div>`` without its class, which named the
    table's part, not the page's: trafilatura drops a div of a class it takes for comments
    or boilerplate. (An id stays: Mailchimp's ``templateFooter`` is the page's footer.)"""
    element.tag = "div"
    element.attrib.pop("class", None)


def _runs_as_paragraphs(cell: Any) -> None:
    """Each run of words and inline elements among ``cell``'s blocks becomes a ``<p>``:
    trafilatura's precision mode dropped words written straight into a ``<div>`` (an essay
    in a ``<font>`` in the cell, its paragraphs ``<br><br>``), or made each link among them
    a paragraph of its own; in a paragraph it reads them whole, a paragraph a ``<br><br>``."""
    import lxml.etree

    run = None  # the paragraph being filled
    if (cell.text or "").strip():
        run = lxml.etree.Element("p")
        run.text, cell.text = cell.text, None
        cell.insert(0, run)
    for child in list(cell):
        if child is run:
            continue
        if not isinstance(child.tag, str) or child.tag in _CELL_RUN_ENDS:
            run = None
            if (child.tail or "").strip():
                run = lxml.etree.Element("p")
                run.text, child.tail = child.tail, None
                child.addnext(run)
            continue
        if run is None:
            run = lxml.etree.Element("p")
            child.addprevious(run)
        run.append(child)  # its tail goes with it


def _around_comments(tree: Any) -> set[Any]:
    """The tables around a section trafilatura drops as comments (its own XPath): they stay
    tables. Hacker News lays its thread out in tables, each comment a ``<div
    class="comment">``; read as a table's cells the comments were kept, as divs trafilatura
    dropped them all."""
    from trafilatura.xpaths import REMOVE_COMMENTS_XPATH

    return _tables_around(
        itertools.chain(*(expression(tree) for expression in REMOVE_COMMENTS_XPATH))
    )


def _tables_around(elements: Any) -> set[Any]:
    """The tables around any of ``elements``: each ancestor is walked once (up to the first
    one walked already), linear however they nest."""
    tables: set[Any] = set()
    seen: set[Any] = set()
    for element in elements:
        for ancestor in element.iterancestors():
            if ancestor in seen:
                break
            seen.add(ancestor)
            if ancestor.tag == "table":
                tables.add(ancestor)
    return tables


def _cell_blocks(tree: Any) -> dict[Any, int]:
    """How many blocks each table cell holds of its own (paragraphs, lists, quotes, a break
    after a break), in one walk."""
    counts: dict[Any, int] = {}
    cells: list[Any] = []
    for event, element in _iterwalk(tree, ("start", "end"), _LAYOUT_TAGS):
        tag = element.tag
        if tag == "td" or tag == "th":
            if event == "start":
                cells.append(element)
            else:
                cells.pop()
        elif event == "start" and cells:
            if tag == "br":
                before = element.getprevious()
                if before is None or before.tag != "br" or (before.tail or "").strip():
                    continue
            counts[cells[-1]] = counts.get(cells[-1], 0) + 1
    return counts


def _lays_out(
    table: Any, rows: list[Any], nests_layout: bool, blocks: Callable[[], dict[Any, int]]
) -> bool:
    """Whether ``table`` lays the page out (after Readability's ``_isDataTable``): marked so
    (``role="presentation"``), else not when it has a mark of data (a summary, a caption,
    a head or foot, columns, a header cell in its own rows); else it does when it holds a
    table laying out, else not when a cell frames a page of divs (:data:`_OWN_FRAME`);
    else it does when it has one column, or, with fewer than :data:`_DATA_ROWS` rows and
    :data:`_DATA_COLUMNS` columns, a cell of two blocks or more (:func:`_cell_blocks`) and
    :data:`_LAYOUT_CELL_CHARS` characters. A row of short cells (a man page's header line,
    Doxygen's parameters) is no layout: as lines it read no better, and as blocks a
    layout's boilerplate footer made the first reading look whole (see
    ``_convert._deficient``)."""
    if (table.get("role") or "").strip().lower() in ("presentation", "none"):
        return True
    if table.get("datatable") == "0":
        return True
    if (table.get("summary") or "").strip() or any(True for _ in table.iterchildren(*_DATA_PARTS)):
        return False
    if compiled(_OWN_HEADER_CELL)(table):
        return False
    if nests_layout:
        return True
    if not rows:
        return False
    one_column = not compiled(_OWN_SECOND_CELL)(table)
    if not one_column and (len(rows) >= _DATA_ROWS or compiled(_OWN_DATA_COLUMN)(table)):
        return False
    if compiled(_OWN_FRAME)(table):
        return False
    if one_column:
        return True
    counts = blocks()
    return any(counts.get(cell, 0) >= 2 and _long(cell) for row in rows for cell in row)


def _table_of(cell: Any) -> Any:
    """The table a cell is in (``td`` < ``tr`` < perhaps ``tbody`` < ``table``), else None."""
    for _ in range(3):
        cell = cell.getparent()
        if cell is None or cell.tag == "table":
            return cell
    return None


class _Layout:
    """Which tables lay a page out rather than hold data: one holding a heading, or a cell of
    :data:`_LAYOUT_CELL_CHARS` characters or more (an article, a sidebar) among those
    :func:`_cell_lines` would rewrite or in the first rows. trafilatura reads the article in
    such a table's cell as its own paragraphs; read as a cell's lines, it became one table
    row (:func:`_cell_lines` leaves them as they are, and :func:`header_rows` gives them no
    header row). Linear: each heading's ancestors are walked up to the first one walked
    already, and a cell's text is read up to the bound, each cell once."""

    def __init__(self, tree: Any) -> None:
        # tables known to lay out the page
        self._tables = _tables_around(tree.iter("h1", "h2", "h3", "h4", "h5", "h6"))

    def measure(self, cells: Any) -> None:
        """Note the table of each of ``cells`` that is long."""
        for cell in cells:
            table = _table_of(cell)
            if table is not None and table not in self._tables and _long(cell):
                self._tables.add(table)

    def lays_out(self, table: Any) -> bool:
        return table in self._tables


def _long(cell: Any) -> bool:
    """Whether ``cell`` holds :data:`_LAYOUT_CELL_CHARS` characters or more, read up to that
    many (or that many texts)."""
    size = 0
    for count, text in enumerate(cell.itertext()):
        size += len(text)
        if size >= _LAYOUT_CELL_CHARS or count >= _LAYOUT_CELL_CHARS:
            return True
    return False


def header_rows(tree: Any) -> None:
    """For trafilatura: a table whose first row holds no header cell gets one, its cells
    ``<th>``. Markdown has no table without a header row, and trafilatura drew the line under
    it (``|---|``) only under the first row holding a ``<th>``: under none, the rows read as
    lines of text, not a table; under a later one, the rows above it were left out of it. A
    table's caption becomes a paragraph before it: trafilatura made it a header row of its
    own, a second one over a header row. (html-to-markdown takes the first row for the header
    whatever its cells, and writes the caption before the table.) A table of one cell (a
    box, a pull quote) and one laying out the page are left as they are."""
    if next(tree.iter("table"), None) is None:
        return
    layout = _Layout(tree)
    for table in list(tree.iter("table")):
        for caption in table.findall("caption"):
            before = caption.getprevious()
            if caption.tail:  # (words foster-parented after it stay where they were)
                if before is None:
                    table.text = (table.text or "") + caption.tail
                else:
                    before.tail = (before.tail or "") + caption.tail
            caption.tail = None
            caption.tag = "p"
            table.addprevious(caption)
        rows = compiled(_OWN_ROWS)(table)
        if not rows:
            continue
        layout.measure(itertools.islice(itertools.chain(*rows[:2]), _LAYOUT_CELLS))
        if layout.lays_out(table):
            continue
        if compiled(_OWN_SPANS)(table):
            _expand_spans(rows)
        _unwrap_labels(table, rows)
        if any(True for _ in rows[0].iterchildren("th")):
            continue
        if len(rows) == 1 and len(compiled("td")(rows[0])) < 2:
            continue  # a box (a pull quote, a notice), not a table of data
        for cell in rows[0].iterchildren("td"):
            cell.tag = "th"


def _unwrap_labels(table: Any, rows: list[Any]) -> None:
    """A table of labelled rows (each row's first cell a label, "Subjects:", or empty under
    one) alone in a ``<div>``: the div goes, its table in its place. trafilatura drops a div
    whose class holds "meta" (or "rating", "widget"...) as boilerplate, and one of under 200
    characters holding a link: arXiv's ``<div class="metatable">``, a paper's subjects, its
    "Cite as" and DOI, went whole."""
    wrapper = table.getparent()
    if wrapper is None or wrapper.tag != "div" or len(wrapper) != 1 or len(rows) < 2:
        return
    if (wrapper.text or "").strip() or (table.tail or "").strip():
        return
    labelled = 0
    for row in rows:
        first = next(row.iterchildren("td", "th"), None)
        label = first.text_content().strip() if first is not None else ""
        if label.endswith(":"):
            labelled += 1
        elif label:
            return
    if labelled >= 2:
        wrapper.drop_tag()


def _spanned(cell: Any, name: str) -> int:
    """A cell's colspan or rowspan (bounded by the cleaning pass, which leaves digits)."""
    value = cell.get(name)
    if value is None:
        return 1
    del cell.attrib[name]
    return int(value) if value.isdigit() and int(value) > 0 else 1


def _expand_spans(rows: list[Any]) -> None:
    """Each cell spanning columns or rows written out as that many cells, the others holding
    a :data:`CELL_BREAK` alone (an empty cell once restored): trafilatura wrote a table with
    spans ragged ("| Merged header | C |" over "| Tall | b1 | c1 |", then "| b2 | c2 |"), its
    values under the wrong headings. The cleaning pass bounded the spans (32 columns and rows
    a cell, 10,000 cells a page)."""
    covered: dict[int, int] = {}  # column -> rows a cell above still spans
    for row in rows:
        below: dict[int, int] = {}  # the same, for the next row
        column = 0
        for cell in [child for child in row if child.tag in ("td", "th")]:
            while covered.get(column, 0) > 0:  # under a cell above
                below[column] = covered[column] - 1
                cell.addprevious(_padding("td"))
                column += 1
            columns, spanned = _spanned(cell, "colspan"), _spanned(cell, "rowspan")
            for n in range(columns):
                below[column + n] = spanned - 1
            for _ in range(columns - 1):
                padding = _padding(cell.tag)
                padding.tail, cell.tail = cell.tail, None
                cell.addnext(padding)
            column += columns
        last = max((c for c, left in covered.items() if left > 0), default=-1)
        for past in range(column, last + 1):  # under cells above, past the row's own
            below[past] = covered.get(past, 1) - 1
            row.append(_padding("td"))
        covered = below


def _padding(tag: str) -> Any:
    import lxml.etree

    padding = lxml.etree.Element(tag)
    padding.text = CELL_BREAK
    return padding


def script_marks(text: str, tag: str) -> tuple[str, str]:
    """What goes before and after a ``<sup>`` (or ``<sub>``) of ``text``: ``^`` (``_``), and
    brackets around a text of more than one term (``x^(n+1)``, ``a_(i,j)``); nothing around an
    ordinal's ending ("1st") or a text without a letter or digit (a footnote's "*", "®")."""
    text = text.strip()
    if not any(ch.isalnum() for ch in text) or (tag == "sup" and text in _ORDINALS):
        return "", ""
    mark = "^" if tag == "sup" else "_"
    return (mark, "") if _ONE_TERM.fullmatch(text) else (f"{mark}(", ")")


def _script_text(text: str, tag: str) -> tuple[str, str]:
    """:func:`script_marks`, the mark written as a mark (a converter would escape ``_``)."""
    opening, closing = script_marks(text, tag)
    return opening.replace("^", SUPER).replace("_", SUB), closing


def _mark_scripts(tree: Any) -> None:
    """Each superscript and subscript read as its mark (``x^2``, ``10^-3``, ``H_2O``, see
    :func:`_script_text`) and its text, the element a ``<span>``: trafilatura kept the tags as
    HTML (``x<sup>2</sup>``) and html-to-markdown ran the text into the word before it
    ("x2"). A script inside another is judged by its own text (its words before any element
    in it): the text of every outermost one is read once, so the pass stays linear however
    deep they nest."""
    if next(tree.iter("sup", "sub"), None) is None:
        return  # (known in C: a walk visits every element)
    depth = 0
    scripts: list[tuple[Any, bool]] = []  # each script, and whether it is outermost
    for event, element in _iterwalk(tree, ("start", "end"), ("sup", "sub")):
        if event == "end":
            depth -= 1
            continue
        scripts.append((element, not depth))
        depth += 1
    for element, outermost in scripts:
        if not len(element):
            opening, closing = _script_text(element.text or "", element.tag)
        elif outermost:
            opening, closing = _script_text(element.text_content(), element.tag)
        else:  # its elements' text is not read again: bracketed whatever it holds
            opening, closing = _script_text(f"{element.text or ''}+", element.tag)
        element.tag = "span"
        if not opening:
            continue
        lead = element.text or ""
        start = len(lead) - len(lead.lstrip())
        element.text = f"{lead[:start]}{opening}{lead[start:]}"
        if not closing:
            continue
        if len(element):
            element[-1].tail = f"{element[-1].tail or ''}{closing}"
        else:
            words = element.text.rstrip()
            element.text = f"{words}{closing}{element.text[len(words) :]}"


def _pair_definitions(tree: Any) -> None:
    """Each ``<dl>`` of terms and definitions alone (perhaps grouped in ``<div>`` elements): a list
    of its terms in bold, each followed by a colon and its definition, or, for a term of
    several, by a list of them. A definition's blocks (paragraphs, code, lists) stay in its
    item. A ``<dl>`` holding anything else is left as it is."""
    for dl in tree.xpath("//dl"):
        entries: list[Any] = []
        regular = not (dl.text or "").strip()
        for child in dl:
            if child.tag in ("dt", "dd"):
                entries.append(child)
            elif child.tag == "div":  # HTML lets a <div> group a term with its definitions
                regular = regular and not (child.text or "").strip()
                for grouped in child:
                    if grouped.tag in ("dt", "dd"):
                        entries.append(grouped)
                    elif isinstance(grouped.tag, str):
                        regular = False
                    regular = regular and not (grouped.tail or "").strip()
            elif isinstance(child.tag, str):  # (a comment is no content)
                regular = False
            regular = regular and not (child.tail or "").strip()
        if entries and regular:
            _definitions_as_list(dl, entries)


def _unwrap_leading_paragraph(element: Any) -> None:
    """A definition's first paragraph, if it starts with one, becomes the item's line; so does
    a first ``<div>`` of inline words (a term written ``<dt><div>Option</div></dt>``: a block
    in the bold term lost every term and definition of the list)."""
    if (element.text or "").strip() or not len(element):
        return
    paragraph = element[0]
    if paragraph.tag != "p" and not (
        paragraph.tag == "div"
        and not any(
            inner.tag in _CELL_BLOCKS or inner.tag == "pre" for inner in paragraph.iterdescendants()
        )
    ):
        return
    element.text = paragraph.text
    element.remove(paragraph)  # (its tail goes with it: put back below)
    children = list(paragraph)
    for n, child in enumerate(children):
        element.insert(n, child)
    if children:
        children[-1].tail = f"{children[-1].tail or ''}{paragraph.tail or ''}"
    else:
        element.text = f"{element.text or ''}{paragraph.tail or ''}"


_COLONS = (":", "\uff1a", "\ufe55")  # and the full-width and small colons


def _definitions_as_list(dl: Any, entries: list[Any]) -> None:
    import lxml.etree

    groups: list[tuple[list[Any], list[Any]]] = []
    for entry in entries:
        # (its own text first: each text_content() is an XPath evaluation, 22,000 terms'
        # 0.02 s where their texts answer)
        if (
            entry.tag == "dt"
            and not (entry.text or "").strip()
            and not entry.text_content().strip()
        ):
            continue  # an empty term would be an empty "****"
        if not groups or (entry.tag == "dt" and groups[-1][1]):
            groups.append(([], []))
        groups[-1][0 if entry.tag == "dt" else 1].append(entry)
    for child in list(dl):
        dl.remove(child)
    dl.text = None
    dl.tag = "ul"
    # An anchor with nothing in it (an index entry's target) shows nothing; at the start of a
    # list item trafilatura dropped the words after it, and the items after those. Dropped
    # together (their tails stay): one by one, 36,000 of them in a definition took 13 s.
    replace_by_texts(
        {a: "" for entry in entries for a in entry.iter("a") if not a.text and not len(a)}
    )
    for terms, definitions in groups:
        item = lxml.etree.SubElement(dl, "li")
        last = None
        for term in terms:
            if last is not None:
                last.tail = ", "
            _unwrap_leading_paragraph(term)
            term.tag = "strong"
            term.attrib.clear()
            # The term's own spaces go: html-to-markdown writes them before the "**".
            term.text = (term.text or "").lstrip()
            if len(term):
                term[-1].tail = (term[-1].tail or "").rstrip()
            else:
                term.text = term.text.rstrip()
            item.append(term)
            term.tail = None
            last = term
        for definition in definitions:
            _unwrap_leading_paragraph(definition)
        # A term that ends in its own colon ("Synonyms:", Wiktionary's) gets no second one.
        said = None if last is None else last.text_content() if len(last) else last.text or ""
        colon = "" if said is not None and said.rstrip().endswith(_COLONS) else ":"
        if len(definitions) == 1:
            definition = definitions[0]
            words = (definition.text or "").lstrip()
            if last is None:
                item.text = words
            else:
                last.tail = f"{colon} {words}"
            item.extend(list(definition))
        elif definitions:
            if last is not None:
                last.tail = colon
            sublist = lxml.etree.SubElement(item, "ul")
            for definition in definitions:
                definition.tag = "li"
                definition.attrib.clear()
                sublist.append(definition)
                definition.tail = None


def mark_joiners(tree: Any) -> None:
    """For trafilatura: each zero-width joiner and non-joiner in the page's text written as
    its mark (:data:`JOINER`, :data:`NON_JOINER`), which :func:`restore` writes back."""
    text = tree.xpath("string()")
    if "\u200d" not in text and "\u200c" not in text:
        return
    for node in tree.xpath(_JOINED_TEXTS):
        _set_text(node, node.translate(_JOINERS))


def mark_quotes(tree: Any) -> None:
    """Start each text inside a quote with a mark per level of quote: :data:`QUOTE` for a
    quote around the list item the text is in (or around the text, outside lists),
    :data:`ITEM_QUOTE` for one inside that item."""
    if tree.find(".//blockquote") is None:
        return
    levels: list[str] = []  # "q" for each open quote, "l" for each open list item
    mark = ""
    for event, element in _iterwalk(tree, ("start", "end")):
        tag = element.tag
        if event == "start":
            if tag in ("blockquote", "li"):
                levels.append("q" if tag == "blockquote" else "l")
                mark = _quote_mark(levels)
            if mark:
                element.text = _marked(element.text, mark)
            continue
        if tag in ("blockquote", "li"):
            levels.pop()
            mark = _quote_mark(levels)
        if mark and element.getparent() is not None:
            element.tail = _marked(element.tail, mark)


def _quote_mark(levels: list[str]) -> str:
    if "q" not in levels:
        return ""
    item = len(levels) - 1 - levels[::-1].index("l") if "l" in levels else -1
    outside = levels[:item].count("q") if item >= 0 else levels.count("q")
    inside = levels[item + 1 :].count("q") if item >= 0 else 0
    return QUOTE * outside + ITEM_QUOTE * inside


def math_to_text(tree: Any, opening: str, closing: str, *, keep: bool = False) -> None:
    """Replace each ``<math>`` by its text: its ``alttext``, else its TeX annotation, between
    ``opening`` and ``closing`` (each converter has its own math delimiters: trafilatura
    writes ``\\(...\\)`` as ``$...$`` and leaves the TeX in it unescaped; html-to-markdown
    escapes nothing in ``$...$`` but a backslash before punctuation), else the text of its
    tokens. TeX holding a delimiter is read from the tokens instead.

    trafilatura drops a ``<math>`` whole, so for it the text takes the element's place; with
    ``keep`` (for html-to-markdown and readability-lxml, whose pass over unlikely blocks spares
    those holding a formula) the element stays, holding the text alone, its TeX in its
    ``alttext`` (a later call reads the same formula)."""
    # Outermost formulas only: one nested in another is read as a part of it (as it would
    # read alone), in the same walk. Read innermost first, each level read again the text of
    # all those inside it (200 nested formulas around 1 MB of text took 3 s).
    replaced = {}
    for math in _outermost(tree, "math"):
        tex = _tex(math)
        text = _formula(math, tex, opening, closing)
        if not keep:
            replaced[math] = text
            continue
        for child in list(math):
            math.remove(child)
        math.text = text
        if tex:
            math.set("alttext", tex)
    replace_by_texts(replaced)


def _outermost(tree: Any, tag: str) -> list[Any]:
    """The elements of ``tree`` with ``tag`` that no other one holds, in document order."""
    outermost = []
    depth = 0
    for event, element in _iterwalk(tree, ("start", "end"), tag):
        if event == "end":
            depth -= 1
            continue
        if not depth:
            outermost.append(element)
        depth += 1
    return outermost


def _formula(math: Any, tex: str, opening: str, closing: str) -> str:
    """A ``<math>``'s text (see :func:`math_to_text`), given its TeX."""
    if tex and opening not in tex and closing not in tex:
        return f"{opening}{tex}{closing}"
    return _MATH_SPACES.sub("", " ".join(_mathml_text(math, 0, (opening, closing)).split()))


def _tex(math: Any) -> str:
    tex = math.get("alttext") or ""
    if not tex.strip():
        # Its own annotations, not those of a formula nested in it.
        nested = 0
        for event, element in _iterwalk(math, ("start", "end"), ("math", "annotation")):
            if element.tag == "math" and element is not math:
                nested += 1 if event == "start" else -1
            elif (
                event == "start"
                and element.tag == "annotation"
                and not nested
                and (element.get("encoding") or "").strip().lower() in _TEX_ENCODINGS
            ):
                tex = element.text_content()
                break
    tex = " ".join(tex.split())
    styled = _TEX_STYLE.fullmatch(tex)
    return styled.group(1).strip() if styled else tex


def replace_by_texts(replacements: dict[Any, str]) -> None:
    """Replace each element of ``replacements`` (but a root) by its text, with all it holds:
    the text and its tail joined to the text before it. Each parent's texts are rebuilt once,
    in time linear in its children: one by one, each replacement read and wrote the whole
    text before it, which grows with each (950 formulas in a paragraph of 1 MB took 0.8 s,
    25,000 hidden ``<span>``s dropped that way 36 s)."""
    holders: dict[Any, None] = {}  # the parents, in order, each once
    for element in replacements:
        parent = element.getparent()
        if parent is not None:
            holders[parent] = None
    for parent in holders:
        kept = None  # the last child kept (None: the parent, whose text comes first)
        pieces: list[str] = []  # what the children replaced since then leave
        for child in list(parent):
            text = replacements.get(child)
            if text is None:
                if pieces:
                    _append_text(parent, kept, pieces)
                    pieces = []
                kept = child
                continue
            pieces.append(text)
            if child.tail:
                pieces.append(child.tail)
                child.tail = None
            parent.remove(child)
        if pieces:
            _append_text(parent, kept, pieces)


def _append_text(parent: Any, kept: Any, pieces: list[str]) -> None:
    """``pieces`` appended to ``kept``'s tail, or to ``parent``'s text if ``kept`` is None;
    nothing is written when they are all empty (as an element dropped without a tail)."""
    joined = "".join(pieces)
    if not joined:
        return
    if kept is None:
        parent.text = (parent.text or "") + joined
    else:
        kept.tail = (kept.tail or "") + joined


def _grouped(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 1 or text.isdigit() else f"({text})"


def _mathml_text(element: Any, depth: int, delimiters: tuple[str, str]) -> str:
    """A formula's tokens as it reads: ``x = 2``, ``x^2``, ``a_i``, ``(a + b)/(c)``, ``√(x)``;
    a formula nested in it (``depth`` > 0) reads its TeX between ``delimiters`` if it has some
    (as it would alone), else its tokens, as a row."""
    tag = element.tag if isinstance(element.tag, str) else ""
    if tag in _SKIPPED_MATH or not tag:
        return ""
    if tag == "math" and depth and depth <= _MAX_MATH_DEPTH:
        tex = _tex(element)
        opening, closing = delimiters
        if tex and opening not in tex and closing not in tex:
            return f"{opening}{tex}{closing}"
    if depth > _MAX_MATH_DEPTH or tag in _MATH_TOKENS:
        token = " ".join(element.text_content().split())
        return f" {token} " if tag == "mtext" and token[:1].isalpha() else token  # words
    if tag == "mo":
        operator = " ".join(element.text_content().split())
        if operator in _INVISIBLE_OPERATORS:
            return _INVISIBLE_OPERATORS[operator]
        if operator in (",", ";"):
            return f"{operator} "
        return operator if operator in _TIGHT_OPERATORS else f" {operator} "
    if tag == "semantics":  # its first child is the formula, the rest annotations of it
        first = next(iter(element), None)
        return _mathml_text(first, depth + 1, delimiters) if first is not None else ""
    parts = [_mathml_text(child, depth + 1, delimiters) for child in element]
    if parts and tag in _SCRIPTED:
        parts[0] = parts[0].strip()  # the base of a script is no operator between two terms
    # A script ends a term: what follows is spaced from it ("a_k b_k", not "a_kb_k").
    if tag in ("msup", "mover") and len(parts) >= 2:
        return f"{parts[0]}^{_grouped(parts[1])} "
    if tag in ("msub", "munder") and len(parts) >= 2:
        return f"{parts[0]}_{_grouped(parts[1])} "
    if tag in ("msubsup", "munderover") and len(parts) >= 3:
        return f"{parts[0]}_{_grouped(parts[1])}^{_grouped(parts[2])} "
    if tag == "mfrac" and len(parts) >= 2:
        return f"{_grouped(parts[0])}/{_grouped(parts[1])}"
    if tag == "msqrt":
        return f"√({''.join(parts).strip()})"
    if tag == "mroot" and len(parts) >= 2:
        return f"√[{parts[1].strip()}]({parts[0].strip()})"
    if tag == "mtr":  # a matrix's row, "a, b"; an aligned equation's, "x = 1"
        row = ""
        for cell in (part.strip() for part in parts):
            if row and cell:
                row += " " if cell[0] in _RELATIONS else ", "
            row += cell
        return row
    if tag == "mtable":
        return "; ".join(part.strip() for part in parts)
    if tag == "mfenced":
        separator = (element.get("separators") or ",").strip()[:1]
        inner = f"{separator} ".join(part.strip() for part in parts)
        return f"{element.get('open', '(')}{inner}{element.get('close', ')')}"
    # A row, a style, the formula itself: its parts in order, with any words written
    # between them.
    # (Whitespace between a formula's elements is not part of it.)
    pieces = [(element.text or "").strip()]
    for child, part in zip(element, parts, strict=True):
        pieces.append(part)
        pieces.append((child.tail or "").strip())
    return "".join(pieces)


# --------------------------------------------------------------------------------------------
# the Markdown: after conversion


def restore(markdown: str) -> str:
    """Write the marked structure of a converter's Markdown as Markdown, and delete every
    other mark: a line whose text starts with quote marks gets a ``> `` per level (outside its
    list marker, or inside it for a quote inside the item), a marked item its number, and a
    blank line between two quoted lines a ``>`` (a line right after a quote, one of its own)."""
    if not any(mark in markdown for mark in MARKS):
        return markdown
    markdown = markdown.translate(_SCRIPT_MARKS)  # first: a script may start a marked line
    if CELL_BREAK in markdown:
        markdown = _cell_breaks(markdown)
    lines = markdown.split("\n")
    depths: list[int | None] = []  # quote levels of each line; None for a blank one
    closers: dict[str, int] = {}  # filled by _closed_later on first need
    n = 0
    while n < len(lines):
        line = lines[n]
        fence = _FENCE.match(line)
        if fence:
            n = _restore_code(lines, depths, n, fence.group(1))
            continue
        depth = 0
        if _A_MARK.search(line):
            match = _LEAD.match(line)
            if match:
                line, depth = _rewrite_lead(match, line)
            line = lines[n] = _ANY_MARK.sub("", line)
        depths.append(depth if line.strip() else None)
        n += 1
        # A block opened at the end of its item's line ("1. ```": a <pre> first in an <li>)
        # runs to its own closing fence, which must not read as the opening of another.
        glued = "```" in line and _GLUED_OPENING.search(line)
        if glued and _closed_later(lines, n, glued.group(1), closers):
            n = _restore_code(lines, depths, n, glued.group(1), opened=True)
    if QUOTE not in markdown and ITEM_QUOTE not in markdown:
        return "\n".join(lines)  # every depth 0: no line quoted, none between quotes
    # A blank line between two quoted lines is one of the quote ("> a\n>\n> b"), at the
    # lesser depth; a run of them is one.
    following = [0] * len(lines)
    upcoming = 0
    for n in range(len(lines) - 1, -1, -1):
        level = depths[n]
        if level is None:
            following[n] = upcoming
        else:
            upcoming = level
    out: list[str] = []
    previous = 0
    for n, line in enumerate(lines):
        level = depths[n]
        if level is not None:
            if level < previous and depths[n - 1] is not None:
                # A line right after a quote's would read as part of it (a lazy continuation).
                out.append(" ".join(">" * level))
            previous = level
            out.append(line)
            continue
        level = min(previous, following[n])
        if not level:
            out.append(line)
        elif depths[n - 1] is not None:  # the first blank line of a run (n > 0: previous > 0)
            out.append(" ".join(">" * level))
    return "\n".join(out)


def _cell_breaks(markdown: str) -> str:
    """Each run of :data:`CELL_BREAK` (with the spaces around it) written ``<br>``, but at a
    cell's edge or a line's, where it goes."""
    markdown = _one_break_a_run(markdown)
    markdown = _CELL_EDGE_BEFORE.sub(r"\1 ", markdown)
    markdown = _CELL_EDGE_AFTER.sub(r" \1", markdown)
    markdown = _EDGE_BREAK.sub(r"\1", markdown)
    return markdown.replace(CELL_BREAK, "<br>")


def _one_break_a_run(markdown: str) -> str:
    """Each run of :data:`CELL_BREAK` with the blanks around and between its marks made one
    mark: a split, not a pattern, which tried every blank of a long run of them (a code
    block's) and took seconds on a page of 60 kB."""
    if CELL_BREAK not in markdown:
        return markdown
    pieces = markdown.split(CELL_BREAK)
    kept = [pieces[0].rstrip(" \t")]
    last = len(pieces) - 1
    for i in range(1, len(pieces)):
        piece = pieces[i].lstrip(" \t") if i == last else pieces[i].strip(" \t")
        if piece or i == last:  # blanks alone between two marks: the marks are one
            kept.append(piece)
    return CELL_BREAK.join(kept)


def _restore_code(
    lines: list[str], depths: list[int | None], start: int, fence: str, *, opened: bool = False
) -> int:
    """The code block opening at ``lines[start]`` (``opened``: at the end of the line before
    it), quoted whole at the depth its first marked line has (its lines are the code's own,
    written out as they are, marks deleted); the index of the line after it."""
    end = start if opened else start + 1
    depth = -1
    while end < len(lines):
        line = lines[end]
        closing = _FENCE.match(line)
        if closing and closing.group(1).startswith(fence) and not line[closing.end() :].strip():
            break
        if depth < 0 and (marks := _LEADING_MARKS.match(line)):
            depth = len(marks.group(1))
        end += 1
    depth = max(depth, 0)
    prefix = "> " * depth
    for n in range(start, min(end + 1, len(lines))):
        line = _ANY_MARK.sub("", lines[n])
        lines[n] = f"{prefix}{line}" if line else prefix.rstrip()
        depths.append(depth)
    return end + 1


def _closed_later(lines: list[str], start: int, fence: str, closers: dict[str, int]) -> bool:
    """Whether a line from ``start`` on closes a block ``fence`` opened. ``closers`` (empty
    until the first question) holds the last closing line of each fence found, so that lines
    ending in backticks with nothing to close them cost one pass over the page, not one each."""
    if not closers:
        closers[""] = -1
        for n, line in enumerate(lines):
            found = _FENCE.match(line)
            if found and not line[found.end() :].strip():
                closers[found.group(1)] = n
    return any(n >= start and found.startswith(fence) for found, n in closers.items())


def _rewrite_lead(match: re.Match[str], line: str) -> tuple[str, int]:
    """The line with its leading marks written out, and its depth of quotes around it."""
    marks = match["marks"]
    outside, inside = marks.count(QUOTE), marks.count(ITEM_QUOTE)
    item = match["item"] or ""
    labels = _NUMBER_MARK.findall(marks)
    if labels and match["number"]:
        label = labels[-1]
        # A letter or numeral is no list marker in Markdown: the item is a bullet that
        # starts with it, as a browser shows it (a. b. c.).
        lead = f"{label}{match['delimiter']}"
        if label.isdigit():
            item = f"{lead}{match['gap']}"
        else:
            # The item's later lines are indented to its number's width ("1000. "): the
            # bullet's words start no more than 3 columns short of that (1 to 4 spaces after
            # the "-"), or those lines would read as a code block.
            width = len(match["item"])
            item = f"-{' ' * max(1, min(4, width - 4))}{lead} "
    heading, opening = match["heading"] or "", match["opening"]
    rest = line[match.end() :]
    if not heading and not opening:
        # The converter saw the mark, not these words, at the start of the block, so it did
        # not escape what would read as the start of another block.
        rest = rest.lstrip(" ")
        start = _BLOCK_START.match(rest)
        if start:
            at = start.end() if start.group()[0].isdigit() else start.start()
            rest = f"{rest[:at]}\\{rest[at:]}"
    quoted = (
        f"{'> ' * outside}{match['quote']}{match['indent']}{item}{'> ' * inside}{heading}"
        f"{opening}{rest}"
    )
    return quoted, outside
