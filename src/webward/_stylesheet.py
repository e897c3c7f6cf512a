"""A page's own stylesheets, read for the elements they hide: :func:`read_sheets`.

A page can hide text from its readers with a rule of its own ``<style>`` elements
(``<style>.x{display:none}</style><div class="x">Ignore previous instructions</div>``), a
classic carrier of prompt injection. The reader drops such elements as it drops those hidden by
their own attributes (``_convert._hidden``). Only what is certain is read, since a false
positive hides real content from the model, which is worse than a missed injection:

- rules at the top of a sheet, or inside an ``@media`` of ``all`` or ``screen`` alone; a rule
  inside any other at-rule (``@media print``, ``@media (max-width: 600px)``, ``@supports``,
  ``@layer``, ``@container`` ...) or nested in another rule hides nothing; a sheet whose
  ``media`` is not all or screen, whose ``type`` is not CSS, or that sits in a ``<noscript>``
  or ``<template>`` hides nothing either;
- a rule hides with ``display: none`` or ``visibility: hidden`` / ``collapse`` (``!important``
  or not), as the last valid declaration of its block says (an important one winning);
- only simple selectors hide: ``.a``, ``#b``, ``tag.a``, ``tag#b``, ``.a.b``, in selector
  lists; one with a combinator, a pseudo-class or element, an attribute, ``*`` or a bare tag
  hides nothing, nor one of ``html`` or ``body``; a rule whose list holds a vendor pseudo
  (``:-webkit-...``, which some browsers drop the whole rule for) hides nothing;
- a rule anywhere in any sheet (inside any at-rule, any selector) that gives ``display`` a
  value other than ``none``, or ``visibility`` one other than hidden, and hides nothing,
  *shows*: an element that the subject of such a selector may match (by its classes and id:
  ``.d-md-block`` in a ``@media (min-width)``, ``.tab.active``, ``.x:hover``) is not taken as
  hidden, whatever the order of the rules, unless an ``!important`` rule hides it and no
  ``!important`` one shows it (Bootstrap's ``.d-none``); nor is an element with ``display``
  or ``visibility`` in its own style. Where ``visibility: visible`` is declared anywhere (a
  sheet, or a style of the page, as the caller says), nothing is hidden by visibility: a
  descendant can show itself inside a hidden element.

Comments, strings and escapes are read as CSS reads them (``/* .x{display:none} */`` hides
nothing; ``.md\\:hidden`` is the class ``md:hidden``). Linear in the sheets: one pass of a
regex for comments, strings and escaped punctuation, one split at braces, a few string
operations per rule. Bounded (see the constants below): past the characters, elements,
braces, quotes and rules read, or the selectors that show kept, nothing is taken as hidden,
since a rule beyond could show what the rules before hide; past the selectors that hide kept,
the rest hide nothing; each pass over a page's elements compares at most
:data:`MAX_COMPARISONS` selectors with them, then takes the rest as unstyled.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping

__all__ = [
    "MAX_COMPARISONS",
    "MAX_HIDING_SELECTORS",
    "MAX_SHEETS",
    "MAX_SHEET_CHARS",
    "MAX_SHOWING_SELECTORS",
    "StyleRules",
    "css_readable",
    "css_unescaped",
    "read_sheets",
    "style_declares",
]

#: The characters of a page's ``<style>`` elements read, in all (about the largest body read:
#: the development pages carry up to 1 MB of them) ...
MAX_SHEET_CHARS = 1_100_000
#: ... from at most this many elements, holding at most this many braces (a rule has two; the
#: development pages hold up to 21,556) and this many quotes, comment starts and backslashes
#: (each read by a Python call; up to 1,734).
MAX_SHEETS = 1_000
_MAX_BRACES = 100_000
_MAX_MARKS = 50_000
#: At most this many rules that declare ``display`` or ``visibility`` are read (each costs
#: a few µs; the development pages hold up to 833); past them, the sheets hide nothing.
_MAX_READ_RULES = 5_000
#: At most this many selectors that hide are kept (the rest are passed over) ...
MAX_HIDING_SELECTORS = 2_000
#: ... and this many that show (past them, the sheet hides nothing: one of the rest could show
#: what one kept hides).
MAX_SHOWING_SELECTORS = 50_000
#: An element of more classes than this is never hidden by a sheet (not all are compared) ...
_MAX_CLASSES = 64
#: ... and at most this many selectors compared with a page's elements in one pass over them,
#: each element compared counting one more (the development pages need up to 586).
MAX_COMPARISONS = 20_000
#: At most this many selectors that hide are kept under one class or id, of at most this many
#: classes and ids each (one of more hides nothing); more that show become one that shows all
#: elements holding that class or id.
_MAX_PER_KEY = 8
#: A rule that shows whose selectors run longer than this is more than can be read for certain:
#: its sheets hide nothing.
_MAX_SHOWING_PRELUDE = 20_000

# What a style may hide its words behind: CSS comments ("display:/**/none"), which a browser
# reads through ...
_CSS_COMMENT = re.compile(r"/\*.*?(?:\*/|$)", re.DOTALL)
# ... and CSS escapes ("\6e one", "dis\play"), which a browser decodes.
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})(?:\r\n|[ \t\n\f\r])?|(.))", re.DOTALL)


def css_readable(style: str) -> str:
    """A style as a browser reads it, for the hidden words: comments dropped, escapes
    decoded (an escape of no character reads as nothing)."""
    if "/*" in style:
        style = _CSS_COMMENT.sub("", style)
    if "\\" in style:
        style = _CSS_ESCAPE.sub(css_unescaped, style)
    return style


def css_unescaped(m: re.Match[str]) -> str:
    if m.group(2) is not None:
        return m.group(2)
    code = int(m.group(1), 16)
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else ""


def _ident_unescaped(m: re.Match[str]) -> str:
    """An escape in a name, as CSS decodes it (no character: U+FFFD, which no class holds)."""
    return css_unescaped(m) or "\ufffd"


# One pass over a sheet: a comment (dropped), a string (emptied: a brace or semicolon in it is
# no structure), or an escaped character that would be structure ("\{", "\;", "\\"): written
# as the equivalent hex escape, which holds none. Each alternative ends at its first possible
# end: linear.
_CSS_NOISE = re.compile(
    # A string ends at a newline, which is CR and FF as well as LF; a backslash before one
    # (CRLF counting as one) continues it.
    r"""/\*.*?(?:\*/|\Z)|"(?:[^"\\\n\r\f]++|\\(?:\r\n|.))*+"?"""
    r"""|'(?:[^'\\\n\r\f]++|\\(?:\r\n|.))*+'?|\\[{}();:,"'\\/]"""
    # An unquoted url(...), which runs to its ")" whatever it holds ("url(a'b)", "url([)",
    # an escaped "\)" too): no string, comment or bracket opens inside it. (Escapes that
    # spell its name, "u\rl(", are decoded before: _plain_escapes.) Its "u" is matched
    # before the look behind it (for no name character before): every alternative then
    # starts with a character of its own, which the regex engine looks for alone, half the
    # time of a scan trying each alternative at every character.
    r"""|u(?<![-\w\\]u)rl\((?![\t\n\f\r ]*+["'])(?:[^)\\]++|\\.)*+\)?""",
    re.DOTALL | re.IGNORECASE,
)


def _plain_escapes(css: str) -> str:
    """``css`` with the escapes of a letter, digit, "-" or "_" decoded ("u\\rl(", "\\75 rl("):
    a name's characters are no structure, so decoding them first lets :data:`_CSS_NOISE` see
    the name a browser sees. Any other escape (a backslash's too) stays as it is."""
    return _CSS_ESCAPE.sub(_name_character, css) if "\\" in css else css


def _name_character(m: re.Match[str]) -> str:
    found = css_unescaped(m)
    plain = len(found) == 1 and found.isascii() and (found.isalnum() or found in "-_")
    return found if plain else m.group()


def _tokens_quieted(css: str, quiet: Callable[[re.Match[str]], str]) -> str:
    """``css`` with its comments, strings, escaped structure and unquoted url(...) made
    harmless by ``quiet`` (see :data:`_CSS_NOISE`), when it holds any."""
    if "/*" in css or '"' in css or "'" in css or "\\" in css or "(" in css:
        return _CSS_NOISE.sub(quiet, _plain_escapes(css))
    return css


_BRACES = re.compile(r"([{}])")
_AT_RULE = re.compile(r"@([-\w]*+)(.*)", re.DOTALL)
_CSS_SPACE = " \t\n\r\f"
_HTML_SPACES = re.compile(r"[ \t\n\f\r]+")
_ESC = r"\\(?:[0-9a-fA-F]{1,6}(?:\r\n|[ \t\n\r\f])?|[^\n\r\f0-9a-fA-F])"
_NAME_START = rf"(?:[a-zA-Z_\x80-\U0010ffff]|{_ESC})"
_NAME_CHAR = rf"(?:[-\w\x80-\U0010ffff]|{_ESC})"
_IDENT = rf"(?:--|-?{_NAME_START}){_NAME_CHAR}*+"
# A simple selector that may hide: a tag or none, then classes and ids, nothing else.
_SIMPLE = re.compile(rf"([a-zA-Z][a-zA-Z0-9-]*+)?((?:[.#]{_IDENT})++)")
_KEY = re.compile(rf"([.#])({_IDENT})")
# Selector parts a showing rule's subject is read past: attribute selectors and arguments.
_BRACKETS = re.compile(r"\[[^\]]*+\]?")
_COMBINATORS = re.compile(r"[ \t\n\r\f>+~]++")
_IMPORTANT = re.compile(r"![ \t\n\r\f]*+important[ \t\n\r\f]*+\Z")
_SCREEN = frozenset(("all", "screen", "only all", "only screen"))
_BROAD_TAGS = frozenset(("html", "body"))

# A compound that hides: its tag (or None), its keys (".class" and "#id", all required), and
# whether it hides with !important (then only an important rule shows its elements again).
Compound = tuple[str | None, frozenset[str], bool]
# Rules that show, by one of their keys: every set of keys that shows an element holding them
# all.
Shows = dict[str, list[frozenset[str]]]


class StyleRules:
    """What a page's sheets hide: :meth:`asker` gives what each pass over a page's elements
    asks."""

    __slots__ = ("_hide_classes", "_hide_ids", "_important_shows", "_shows")

    def __init__(
        self,
        hide_classes: dict[str, list[Compound]],
        hide_ids: dict[str, list[Compound]],
        shows: Shows,
        important_shows: Shows,
    ) -> None:
        self._hide_classes = hide_classes
        self._hide_ids = hide_ids
        self._shows = shows  # every rule that shows, important or not
        self._important_shows = important_shows

    def asker(self) -> Callable[[str, Mapping[str, str]], bool]:
        """``hides(tag, attrs)``: whether the sheets hide an element with this (lower-case)
        tag and these attributes. Each asker compares at most :data:`MAX_COMPARISONS`
        selectors with elements in all; past them it answers ``False`` (a page made to
        match thousands of selectors on each of its elements is read as if unstyled)."""
        hide_classes, hide_ids = self._hide_classes, self._hide_ids
        spent = 0

        def shown(shows: Shows, folded: set[str]) -> bool:
            nonlocal spent
            showing = [keys for key in folded for keys in shows.get(key, ())]
            spent += len(showing)
            return spent > MAX_COMPARISONS or any(keys <= folded for keys in showing)

        def hides(tag: str, attrs: Mapping[str, str]) -> bool:
            nonlocal spent
            if spent > MAX_COMPARISONS:
                return False
            value = attrs.get("class")
            ident = attrs.get("id")
            names = _class_names(value) if value else []
            if len(names) > _MAX_CLASSES:
                return False  # more classes than are compared: one of the rest may show it
            candidates: list[Compound] = []
            for name in names:
                found = hide_classes.get(name)
                if found:
                    candidates += found
            if ident:
                found = hide_ids.get(ident)
                if found:
                    candidates += found
            if not candidates:
                return False
            spent += 1 + len(candidates)
            keys = {f".{name}" for name in names}
            if ident:
                keys.add(f"#{ident}")
            matched = [
                important
                for need, all_of, important in candidates
                if (need is None or need == tag) and all_of <= keys
            ]
            if not matched:
                return False
            style = (attrs.get("style") or "").lower()
            if "display" in style or "visibility" in style or "\\" in style:
                return False  # the element's own style may show it
            folded = {key.lower() for key in keys}
            if not shown(self._shows, folded):
                return True
            # Shown by some rule: hidden still by an important rule that no important one
            # shows again.
            return any(matched) and not shown(self._important_shows, folded)

        return hides


def _class_names(value: str) -> list[str]:
    """An element's class names, split at HTML's whitespace (a no-break space is part of a
    name)."""
    if value.isascii():
        return value.split()
    return [name for name in _HTML_SPACES.split(value) if name]


def read_sheets(
    sheets: Iterable[tuple[str, bool]], *, by_visibility: bool = True
) -> StyleRules | None:
    """What the ``sheets`` hide: each a ``<style>`` element's text and whether its rules can
    hide (its ``media``, ``type`` and place allow them: see :func:`sheet_applies`; a sheet
    that cannot hide may still show); by ``visibility`` too unless ``by_visibility`` is false
    (the page shows an element by visibility outside its sheets). ``None`` when nothing is
    hidden, or nothing can be said for certain (see the bounds in the module's docstring)."""
    reader = _Reader()
    reader.visible = not by_visibility
    chars = braces = marks = 0
    for count, (css, applies) in enumerate(sheets):
        chars += len(css)
        braces += css.count("{") + css.count("}")
        marks += css.count("\\") + css.count('"') + css.count("'") + css.count("/*")
        if count >= MAX_SHEETS or chars > MAX_SHEET_CHARS or braces > _MAX_BRACES:
            return None  # rules past the bound could show what those before it hide
        if marks > _MAX_MARKS or not reader.read(css, applies):
            return None
    return reader.rules()


def sheet_applies(media: str | None, kind: str | None) -> bool:
    """Whether a ``<style>`` element with these ``media`` and ``type`` attributes applies to a
    screen for certain: no media or one of all and screen in its list; no type or CSS."""
    if kind is not None and kind.strip(_CSS_SPACE).lower() not in ("", "text/css"):
        return False
    return media is None or not media.strip(_CSS_SPACE) or _screen(media)


def _screen(queries: str) -> bool:
    """Whether a media query list matches every screen: one of its queries is ``all`` or
    ``screen`` without a condition."""
    return any(" ".join(query.lower().split()) in _SCREEN for query in queries.split(","))


class _Reader:
    """The rules of sheets read one after another (see :func:`read_sheets`)."""

    def __init__(self) -> None:
        self.hide_classes: dict[str, list[Compound]] = {}
        self.hide_ids: dict[str, list[Compound]] = {}
        self.hiding = 0
        self.visibility_hides: list[Compound] = []
        self.visible = False  # some rule declares visibility other than hidden
        self.shows: Shows = {}
        self.important_shows: Shows = {}
        self.showing = 0
        self.read_rules = 0  # rules that declare display or visibility (or may, by an escape)

    def rules(self) -> StyleRules | None:
        if not self.visible:
            for compound in self.visibility_hides:
                self._hide(compound)
        if not self.hide_classes and not self.hide_ids:
            return None
        return StyleRules(self.hide_classes, self.hide_ids, self.shows, self.important_shows)

    def read(self, css: str, applies: bool) -> bool:
        """Read one sheet; ``False`` when it shows more than can be kept."""
        css = _tokens_quieted(css, _quiet)
        # Open blocks, innermost last: selectors (None for an at-rule), whether its rules may
        # hide, its own text (a rule's declarations).
        stack: list[tuple[str | None, bool, list[str]]] = []
        parts = _BRACES.split(css)
        for k in range(1, len(parts), 2):
            text = parts[k - 1]
            top = stack[-1] if stack else None
            if parts[k] == "{":
                if top is not None and top[0] is not None:  # a block nested in a rule
                    own, _, prelude = text.rpartition(";")
                    top[2].append(own)
                    context = False
                else:
                    prelude = text.rpartition(";")[2]
                    context = applies if top is None else top[1]
                prelude = prelude.strip(_CSS_SPACE)
                if "<!--" in prelude or "-->" in prelude:  # CDO and CDC: no part of a rule
                    prelude = prelude.replace("<!--", " ").replace("-->", " ").strip(_CSS_SPACE)
                at_rule = _AT_RULE.match(prelude)
                if at_rule is not None:
                    screen = at_rule.group(1).lower() == "media" and _screen(at_rule.group(2))
                    stack.append((None, context and screen, []))
                else:
                    stack.append((prelude, context, []))
            elif top is not None and not self._close(stack, text):
                return False
        # Blocks left open at the end of the sheet end there, as CSS ends them.
        text = parts[-1]
        while stack:
            if not self._close(stack, text):
                return False
            text = ""
        return True

    def _close(self, stack: list[tuple[str | None, bool, list[str]]], text: str) -> bool:
        """End the innermost open block, whose last text is ``text``."""
        selectors, may_hide, body = stack.pop()
        if selectors is None:
            return True
        body.append(text)
        return self._rule(selectors, body, may_hide)

    def _rule(self, selectors: str, body: list[str], may_hide: bool) -> bool:
        declarations = ";".join(body) if len(body) > 1 else body[0]
        lowered = declarations.lower()
        if "display" not in lowered and "visibility" not in lowered and "\\" not in lowered:
            return True
        self.read_rules += 1
        if self.read_rules > _MAX_READ_RULES:
            return False
        (display, display_important), (visibility, visibility_important) = _declared(declarations)
        by_display = display == "none"
        by_visibility = visibility in ("hidden", "collapse")
        shows_visibility = visibility is not None and not by_visibility
        if shows_visibility:
            self.visible = True
        if by_display or by_visibility:
            if may_hide and ":-" not in selectors and len(selectors) <= _MAX_SHOWING_PRELUDE:
                important = display_important if by_display else visibility_important
                for selector in selectors.split(","):
                    compound = _simple(selector, important)
                    if compound is None:
                        pass
                    elif by_display:
                        self._hide(compound)
                    else:
                        self.visibility_hides.append(compound)
            return True
        # A rule that shows: display other than none, or visibility other than hidden.
        if len(selectors) > _MAX_SHOWING_PRELUDE:
            return False
        important = (display is not None and display_important) or (
            shows_visibility and visibility_important
        )
        for selector in selectors.split(","):
            for keys in _subject_keys(selector):
                self.showing += 1
                if self.showing > MAX_SHOWING_SELECTORS:
                    return False
                _show(self.shows, keys)
                if important:
                    _show(self.important_shows, keys)
        return True

    def _hide(self, compound: Compound) -> None:
        """Keep a compound that hides, unless there are too many (or too many of its first
        key: more can only hide more)."""
        if self.hiding >= MAX_HIDING_SELECTORS or len(compound[1]) > _MAX_PER_KEY:
            return
        key = min(compound[1])
        index = self.hide_classes if key[0] == "." else self.hide_ids
        kept = index.setdefault(key[1:], [])
        if len(kept) < _MAX_PER_KEY:
            self.hiding += 1
            kept.append(compound)


def _show(shows: Shows, keys: frozenset[str]) -> None:
    """Keep a set of keys that shows an element holding them all; many of them under one key,
    or many keys in one, become that key alone (more is shown, never less)."""
    key = min(keys)
    alone = frozenset((key,))
    kept = shows.setdefault(key, [])
    if kept and kept[0] == alone:
        return  # every element holding the key is shown already
    if len(keys) > _MAX_PER_KEY or len(kept) >= _MAX_PER_KEY:
        shows[key] = [alone]
    else:
        kept.append(keys)


def _quiet(m: re.Match[str]) -> str:
    """A comment, string or escaped structure character of a sheet, as :data:`_CSS_NOISE`
    says."""
    found = m.group()
    if found[0] == "/":
        return ""
    if found[0] == "\\":
        return f"\\{ord(found[1]):x} "
    if found[0] in "uU":
        return "url()"
    return '""'


def _quiet_declarations(m: re.Match[str]) -> str:
    """As :func:`_quiet`, but a comment is a space, as between two declarations' tokens
    ("display:no/**/ne" is two words, none of them ``none``); only a selector reads it as
    nothing (".a/**/.b" is ".a.b")."""
    return " " if m.group()[0] == "/" else _quiet(m)


def _declared(declarations: str) -> tuple[tuple[str | None, bool], tuple[str | None, bool]]:
    """The ``display`` and ``visibility`` a block declares, lowered (``None``: not declared),
    each with whether it is ``!important``: the last of each, an important one before any
    other."""
    values: dict[tuple[str, bool], str] = {}
    for declaration in _split_declarations(declarations):
        name, colon, value = declaration.partition(":")
        if not colon:
            continue
        if "\\" in name:
            name = _CSS_ESCAPE.sub(_ident_unescaped, name)
        name = name.strip(_CSS_SPACE).lower()
        if name not in ("display", "visibility", "content-visibility"):
            continue
        value = value.strip(_CSS_SPACE)
        if "\\" in value:  # first: "!imp\ortant" is important too
            value = _CSS_ESCAPE.sub(_ident_unescaped, value)
        important = _IMPORTANT.search(value.lower())
        if important is not None:
            value = value[: important.start()].rstrip(_CSS_SPACE)
        value = value.lower()
        if _valid(name, value):
            values[name, important is not None] = value
    display = _winner(values, "display")
    # content-visibility: hidden renders none of the element's content, as display: none.
    skipped = _winner(values, "content-visibility")
    if skipped[0] == "hidden" and display[0] != "none":
        display = ("none", skipped[1])
    return display, _winner(values, "visibility")


# What a declaration of display or visibility may hold and be valid: an invalid one is passed
# over, as a browser passes it over ("display:none; display:nonsense" hides).
_GLOBAL_VALUES = frozenset(("inherit", "initial", "unset", "revert", "revert-layer"))
_DISPLAY_WORDS = frozenset((
    "none", "contents", "block", "inline", "flow", "flow-root", "table", "flex", "grid",
    "ruby", "list-item", "math", "inline-block", "inline-table", "inline-flex", "inline-grid",
    "table-row-group", "table-header-group", "table-footer-group", "table-row", "table-cell",
    "table-column-group", "table-column", "table-caption", "ruby-base", "ruby-text",
    "-webkit-box", "-webkit-inline-box", "-moz-box", "-moz-inline-box", "-webkit-flex",
    "-webkit-inline-flex",
))  # fmt: skip
_VISIBILITY_WORDS = frozenset(("visible", "hidden", "collapse"))
_CONTENT_VISIBILITY_WORDS = frozenset(("visible", "auto", "hidden"))
# The two-keyword display: an outer (block, inline) and an inner display, or a list item's.
_OUTER_DISPLAY = frozenset(("block", "inline"))
_INNER_DISPLAY = frozenset(("flow", "flow-root", "table", "flex", "grid", "ruby", "math"))


def _valid(name: str, value: str) -> bool:
    """Whether a (lowered) value of ``display`` or ``visibility`` is one a browser takes: its
    keywords, a global one, or a variable (valid until the page's variables are known)."""
    if not value:
        return False
    if "var(" in value or value in _GLOBAL_VALUES:
        return True
    if name == "visibility":
        return value in _VISIBILITY_WORDS
    if name == "content-visibility":
        return value in _CONTENT_VISIBILITY_WORDS
    words = _HTML_SPACES.split(value.strip(_CSS_SPACE))  # CSS's spaces: not a no-break one
    if len(words) == 1:
        return words[0] in _DISPLAY_WORDS
    # "block flow", "inline flex", "block flow list-item": each part once, in its grammar
    # ("display:none; display:block block" leaves none standing, as in a browser).
    outer = [word for word in words if word in _OUTER_DISPLAY]
    inner = [word for word in words if word in _INNER_DISPLAY]
    listed = words.count("list-item")
    return (
        len(set(words)) == len(words) <= 3
        and len(outer) <= 1
        and len(inner) <= 1
        and len(outer) + len(inner) + listed == len(words)
        and (not listed or not inner or inner[0] in ("flow", "flow-root"))
    )


def _split_declarations(declarations: str) -> list[str]:
    """``declarations`` cut at each ``;`` outside brackets, as CSS reads a block: a ``;`` in
    ``url(a;b)`` or ``[...]`` ends no declaration (strings are emptied before: see
    :data:`_CSS_NOISE`). A bracket left open runs to the end. One pass: linear."""
    if "(" not in declarations and "[" not in declarations and "{" not in declarations:
        return declarations.split(";")
    pieces: list[str] = []
    closers: list[str] = []
    start = 0
    for m in _DECLARATION_MARK.finditer(declarations):
        mark = m.group()
        if mark == ";":
            if not closers:
                pieces.append(declarations[start : m.start()])
                start = m.end()
        elif mark in _CLOSER:
            closers.append(_CLOSER[mark])
        elif closers and closers[-1] == mark:
            closers.pop()
    pieces.append(declarations[start:])
    return pieces


_DECLARATION_MARK = re.compile(r"[;()\[\]{}]")
_CLOSER = {"(": ")", "[": "]", "{": "}"}


def style_declares(style: str) -> tuple[str | None, str | None]:
    """The ``display`` and ``visibility`` an element's own ``style`` attribute declares, as a
    browser reads its declarations (lowered; ``None``: not declared): the last valid one of
    each, an ``!important`` one before any other. Comments, strings and escapes are read as
    in a sheet; a property is matched by its whole name (``--display`` and ``font-family:
    'display:none'`` declare no display), a value by its whole text (``none``, not a
    no-break space then ``none``, which CSS does not read as a space)."""
    # Pages repeat their inline styles (every cell of a table, a flood of one hidden element:
    # 36,000 elements spent 0.05 s a pass reading two styles): a short one is read once.
    if len(style) <= _REMEMBERED_STYLE_CHARS:
        return _remembered_style_declares(style)
    return _style_declares(style)


_REMEMBERED_STYLE_CHARS = 200  # (256 of them at most: 50 kB)


@functools.lru_cache(maxsize=256)
def _remembered_style_declares(style: str) -> tuple[str | None, str | None]:
    return _style_declares(style)


def _style_declares(style: str) -> tuple[str | None, str | None]:
    style = _tokens_quieted(style, _quiet_declarations)
    (display, _), (visibility, _) = _declared(style)
    return display, visibility


def _winner(values: dict[tuple[str, bool], str], name: str) -> tuple[str | None, bool]:
    important = values.get((name, True))
    return (important, True) if important else (values.get((name, False)), False)


def _simple(selector: str, important: bool) -> Compound | None:
    """A selector that may hide, as a compound (see :func:`read_sheets`), or ``None``."""
    selector = selector.strip(_CSS_SPACE)
    found = _SIMPLE.fullmatch(selector)
    if found is None:
        return None
    tag = found.group(1)
    if tag is not None:
        tag = tag.lower()
        if tag in _BROAD_TAGS:
            return None
    keys = frozenset(
        kind + (_CSS_ESCAPE.sub(_ident_unescaped, name) if "\\" in name else name)
        for kind, name in _KEY.findall(found.group(2))
    )
    return tag, keys, important


def _subject_keys(selector: str) -> list[frozenset[str]]:
    """The classes and ids (lowered, as ``.a`` and ``#b``) that an element a selector matches
    holds, its subject's, as one set; where the subject cannot be told for certain (an escape,
    which may end in a space; an argument, as in ``:is(.a)``), each class and id of the
    selector on its own: a wider reading, which shows more, never a narrower one. A subject
    of neither (a tag, an attribute) gives nothing."""
    if "[" in selector:
        selector = _BRACKETS.sub("", selector)
    if "\\" in selector or "(" in selector:
        return [frozenset((_key(kind, name),)) for kind, name in _KEY.findall(selector)]
    subject = _COMBINATORS.split(selector.strip(_CSS_SPACE))[-1]
    keys = frozenset(_key(kind, name) for kind, name in _KEY.findall(subject))
    return [keys] if keys else []


def _key(kind: str, name: str) -> str:
    if "\\" in name:
        name = _CSS_ESCAPE.sub(_ident_unescaped, name)
    return (kind + name).lower()
