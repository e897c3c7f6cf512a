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
  an ordered list whose numbers are not 1, 2, 3 ... gets its number marked at the start of
  each item's text (``␝5␝``); a definition list becomes a list of its terms in bold, each
  followed by its definition (``- **Talons**: Sharp claws ...``), or, where a definition holds
  blocks (paragraphs, code, lists: an API reference), a bold paragraph per term followed by
  its definition's blocks as they are;
- :func:`mark_quotes` (for trafilatura only; html-to-markdown writes quotes itself): every
  text inside a quote starts with one mark per level of quote;
- :func:`math_to_text`: each ``<math>`` becomes its text: its ``alttext``, else its TeX
  annotation, both as ``$...$``, else its tokens' text joined as the formula reads
  (``x = 2``, ``x^2``, ``(a)/(b)``);
- :func:`restore` (on each converter's Markdown): a line whose text starts with marks gets
  a ``> `` per level of quote (after its list marker when the quote is inside the list item),
  the item its marked number, and the blank lines inside a quote a ``>``; every other mark is
  deleted. Marks are printable symbols (Control Pictures) that trafilatura neither drops (it
  keeps only printable characters), escapes nor normalises.

Each pass is one walk over the tree or one pass over the lines.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MARKS", "mark_quotes", "math_to_text", "prepare", "restore"]

#: One level of quote around the line.
QUOTE = "\u241f"  # SYMBOL FOR UNIT SEPARATOR
#: One level of quote inside the line's list item.
ITEM_QUOTE = "\u241e"  # SYMBOL FOR RECORD SEPARATOR
#: Around a list item's number: ``␝5␝``.
NUMBER = "\u241d"  # SYMBOL FOR GROUP SEPARATOR
MARKS = QUOTE + ITEM_QUOTE + NUMBER

_HAS_MARK = " or ".join(f"contains(., '{mark}')" for mark in MARKS)
_MARKED_TEXTS = f"//text()[{_HAS_MARK}]"
_MARKED_ATTRIBUTES = f"//@*[{_HAS_MARK}]"
_UNMARK = str.maketrans(dict.fromkeys(MARKS, ""))
_ANY_MARK = re.compile(f"{NUMBER}\\d{{1,9}}{NUMBER}|[{MARKS}]")
# A line that starts with marks: its indent, list marker, heading marker, opening emphasis,
# code or link bracket, then the marks. Nothing in it repeats over what follows, so a line
# is matched once, in time linear in its length.
_LEAD = re.compile(
    r"(?P<indent> {0,12})"
    r"(?P<item>(?:[-+*]|(?P<number>\d{1,9})(?P<delimiter>[.)]))(?P<gap> +))?"
    r"(?P<heading>#{1,6} +)?"
    r"(?P<opening>(?:[*_~`\[]|<(?:sup|sub|u)>)*)"
    f"(?P<marks>(?:[{QUOTE}{ITEM_QUOTE}]|{NUMBER}\\d{{1,9}}{NUMBER})+)"
)
_LEADING_MARKS = re.compile(f"[ \t]*([{QUOTE}{ITEM_QUOTE}]+)")
# A code block's fence (as tidy_markdown reads them).
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_NUMBER_MARK = re.compile(f"{NUMBER}(\\d{{1,9}}){NUMBER}")
# What would start a block at the start of a line (trafilatura's _BLOCK_START_RES): a
# paragraph's or item's text starting so is escaped by the converters, but not when a mark
# stood before it; restore() escapes it as they would have.
_BLOCK_START = re.compile(r"#{1,6}(?=[ \t]|$)|>|[-+*](?=[ \t]|$)|\d{1,9}(?=[.)](?:[ \t]|$))")

# (Ten digits at most, leading zeros left out: any more make a number past the largest, and
# Python refuses to read a string of over 4,300 digits as an int.)
_INTEGER = re.compile(r"[\t\n\f\r ]*([-+]?)0*(\d{1,10})")
_MAX_NUMBER = 999_999_999  # CommonMark's largest list number
# What ends the search for an item's first words: its own sub-blocks (their words are not
# the item's first).
_ITEM_BLOCKS = frozenset(("ul", "ol", "dl", "li", "table", "pre", "blockquote"))

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
    """Take the marks out of the page (its text and attributes), mark the numbers of lists not
    numbered 1, 2, 3 ..., and pair each definition list's terms with their definitions."""
    for node in tree.xpath(_MARKED_TEXTS):
        _set_text(node, node.translate(_UNMARK))
    for value in tree.xpath(_MARKED_ATTRIBUTES):
        value.getparent().set(value.attrname, value.translate(_UNMARK))
    _number_items(tree)
    _pair_definitions(tree)


def _integer(value: str | None) -> int | None:
    """An integer attribute as HTML parses it (leading spaces, a sign, digits), else None."""
    match = _INTEGER.match(value or "")
    if match is None:
        return None
    number = int(match.group(2))
    return -number if match.group(1) == "-" else number


def _number_items(tree: Any) -> None:
    """Mark each item of an ordered list numbered otherwise than 1, 2, 3 ... (``start``,
    ``reversed``, an item's ``value``) with its number, at the start of its first words. A
    list with a number Markdown cannot write (negative, past 999,999,999) is left as it is."""
    for ol in tree.xpath("//ol[@start or @reversed or li/@value]"):
        items = list(ol.iterchildren("li"))
        step = -1 if "reversed" in ol.attrib else 1
        start = _integer(ol.get("start"))
        number = start if start is not None else (len(items) if step < 0 else 1)
        numbers = []
        for item in items:
            value = _integer(item.get("value"))
            if value is not None:
                number = value
            numbers.append(number)
            number += step
        if numbers == list(range(1, len(items) + 1)) or not all(
            0 <= n <= _MAX_NUMBER for n in numbers
        ):
            continue
        for item, n in zip(items, numbers, strict=True):
            if (item.text or "").strip() or len(item):  # an empty item is dropped anyway
                _mark_first_words(item, f"{NUMBER}{n}{NUMBER}")


def _mark_first_words(item: Any, mark: str) -> None:
    """Put ``mark`` before the first words of ``item`` (in a link or emphasis, perhaps), or
    at its start when a sub-block comes before any."""
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
    """A definition's first paragraph, if it starts with one, becomes the item's line."""
    if (element.text or "").strip() or not len(element) or element[0].tag != "p":
        return
    paragraph = element[0]
    element.text = paragraph.text
    element.remove(paragraph)  # (its tail goes with it: put back below)
    children = list(paragraph)
    for n, child in enumerate(children):
        element.insert(n, child)
    if children:
        children[-1].tail = f"{children[-1].tail or ''}{paragraph.tail or ''}"
    else:
        element.text = f"{element.text or ''}{paragraph.tail or ''}"


def _definitions_as_list(dl: Any, entries: list[Any]) -> None:
    import lxml.etree

    groups: list[tuple[list[Any], list[Any]]] = []
    for entry in entries:
        if entry.tag == "dt" and not entry.text_content().strip():
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
        if len(definitions) == 1:
            definition = definitions[0]
            words = (definition.text or "").lstrip()
            if last is None:
                item.text = words
            else:
                last.tail = f": {words}"
            item.extend(list(definition))
        elif definitions:
            if last is not None:
                last.tail = ":"
            sublist = lxml.etree.SubElement(item, "ul")
            for definition in definitions:
                definition.tag = "li"
                definition.attrib.clear()
                sublist.append(definition)
                definition.tail = None


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
    lines = markdown.split("\n")
    depths: list[int | None] = []  # quote levels of each line; None for a blank one
    n = 0
    while n < len(lines):
        line = lines[n]
        fence = _FENCE.match(line)
        if fence:
            n = _restore_code(lines, depths, n, fence.group(1))
            continue
        depth = 0
        if any(mark in line for mark in MARKS):
            match = _LEAD.match(line)
            if match:
                line, depth = _rewrite_lead(match, line)
            line = lines[n] = _ANY_MARK.sub("", line)
        depths.append(depth if line.strip() else None)
        n += 1
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


def _restore_code(lines: list[str], depths: list[int | None], start: int, fence: str) -> int:
    """The code block opening at ``lines[start]``, quoted whole at the depth its first marked
    line has (its lines are the code's own, written out as they are, marks deleted); the
    index of the line after it."""
    end = start + 1
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


def _rewrite_lead(match: re.Match[str], line: str) -> tuple[str, int]:
    """The line with its leading marks written out, and its depth of quotes around it."""
    marks = match["marks"]
    outside, inside = marks.count(QUOTE), marks.count(ITEM_QUOTE)
    item = match["item"] or ""
    numbers = _NUMBER_MARK.findall(marks)
    if numbers and match["number"]:
        item = f"{numbers[-1]}{match['delimiter']}{match['gap']}"
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
    quoted = f"{'> ' * outside}{match['indent']}{item}{'> ' * inside}{heading}{opening}{rest}"
    return quoted, outside
