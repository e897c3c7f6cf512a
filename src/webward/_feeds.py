"""Feeds and sitemaps as a reader lists them: RSS 2.0, RSS 1.0 (RDF) and Atom as their
items (title, link, date, summary), a sitemap or sitemap index as its URLs. Pure, no I/O.

Served under any type (``application/rss+xml``, ``text/xml``, and often ``text/html``),
a feed read as HTML came out as one run of titles, URLs and dates with no break between
them (and as raw XML under an XML type). Parsed by lxml with entities, DTDs and the network
off, so neither a billion laughs nor an external entity reaches anything.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._models import Link

__all__ = ["XML_MISC", "FeedReading", "is_feed", "read_feed"]

#: What may stand between an XML declaration and the root element: comments, processing
#: instructions and a doctype (with no internal subset), and spaces. Possessive throughout:
#: a head of 400 comments took minutes when each could be read as running on to a later
#: one's end. Use with re.DOTALL.
XML_MISC = rb"(?:(?:<!--(?:(?!-->).)*+-->|<\?[^>]*+>|<!DOCTYPE[^>\[]*+>)\s*+)*+"
# The first element after the prolog: a feed's or a sitemap's root.
_ROOT_RE = re.compile(
    rb"\A(?:\xef\xbb\xbf)?\s*+(?:<\?xml[^>]*+>\s*+)?+"
    + XML_MISC
    + rb"<(?:[A-Za-z_][\w.-]*+:)?(rss|feed|RDF|urlset|sitemapindex)\b",
    re.DOTALL | re.IGNORECASE,
)
# A character reference to a surrogate (U+D800 to U+DFFF), which no XML text may hold: lxml in
# recover mode keeps it as bytes that are no UTF-8, and reading the text then raises. Read
# as U+FFFD, as an HTML parser reads it.
_SURROGATE_REF = re.compile(
    rb"&#(?:[xX]0*[dD][89a-fA-F][0-9a-fA-F]{2}"
    rb"|0*(?:5529[6-9]|55[3-9][0-9]{2}|56[0-9]{3}|57[0-2][0-9]{2}|573[0-3][0-9]|5734[0-3]));"
)
# What ends a Markdown link's text early: a bracket, or a backslash before one. An item's
# title is escaped there as the HTML reading escapes a link's text, so that "Docs](javascript:
# alert(1)) [more" is no link to javascript: with the item's own link moved to its last word.
_LINK_TEXT_SPECIAL = re.compile(r"[\\\[\]]")
# Enough for any feed under the 1 MB cap; the Markdown is windowed like any reading.
_MAX_ITEMS = 20_000
_MAX_SUMMARY = 500
_MAX_FIELD = 300


@dataclass(frozen=True)
class FeedReading:
    title: str
    text: str  # Markdown: the feed's title and description, then one section per item
    links: tuple[Link, ...]


def is_feed(head: bytes) -> bool:
    """Whether ``head`` (a body's first bytes) opens a feed or a sitemap."""
    return _ROOT_RE.match(head[:4096]) is not None


def read_feed(body: bytes, link_url: Callable[[str], str | None]) -> FeedReading | None:
    """The feed or sitemap in ``body`` (UTF-8, or as its XML declaration says), its links
    made absolute by ``link_url`` (``None`` drops one); ``None`` when ``body`` is no feed
    webward reads."""
    import lxml.etree  # type: ignore[import-untyped]  # lxml ships no type stubs

    parser = lxml.etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, recover=True
    )
    try:
        root = lxml.etree.fromstring(_SURROGATE_REF.sub(b"&#xFFFD;", body), parser)
    except (lxml.etree.XMLSyntaxError, ValueError):
        return None
    if root is None:
        return None
    try:
        return _reading(root, link_url)
    except UnicodeDecodeError:  # text lxml kept undecodable (another encoding's references)
        return None  # read as a page instead, whose parser replaces what it cannot decode


def _reading(root: Any, link_url: Callable[[str], str | None]) -> FeedReading | None:
    kind = _local(root)
    if kind in ("urlset", "sitemapindex"):
        return _sitemap(root, link_url)
    if kind == "rss":
        channel = _child(root, "channel")
        return _items(
            channel if channel is not None else root, _children(channel, "item"), link_url
        )
    if kind == "RDF":
        return _items(_child(root, "channel"), _children(root, "item"), link_url)
    if kind == "feed":
        return _items(root, _children(root, "entry"), link_url)
    return None


def _items(head: Any, items: list[Any], link_url: Callable[[str], str | None]) -> FeedReading:
    title = _text(_child(head, "title"))
    about = _plain(_first_text(head, "description", "subtitle"))
    lines = [f"# {title}" if title else "", about]
    links: list[Link] = []
    for item in items[:_MAX_ITEMS]:
        name = _text(_child(item, "title")) or "(untitled)"
        href = _item_link(item)
        url = link_url(href) if href else None
        when = _first_text(item, "pubDate", "updated", "published", "date")
        summary = _plain(_first_text(item, "description", "summary", "encoded", "content"))
        if len(summary) > _MAX_SUMMARY:
            summary = summary[: _MAX_SUMMARY - 1].rstrip() + "…"
        lines.append(f"## [{_link_text(name)}]({url})" if url else f"## {name}")
        lines.append(when[:_MAX_FIELD])
        lines.append(summary)
        href, kind = _enclosure(item)
        attached = link_url(href) if href else None
        if attached:
            lines.append(f"attached: {attached}" + (f" ({kind[:_MAX_FIELD]})" if kind else ""))
        if url:
            links.append(Link(url=url, text=name[:_MAX_FIELD]))
    if len(items) > _MAX_ITEMS:
        lines.append(f"[{len(items) - _MAX_ITEMS} more items not shown]")
    return FeedReading(
        title[:_MAX_FIELD], "\n\n".join(line for line in lines if line), tuple(links)
    )


def _sitemap(root: Any, link_url: Callable[[str], str | None]) -> FeedReading:
    entries = _children(root, "url") or _children(root, "sitemap")
    lines, links = ["# Sitemap"], []
    for entry in entries[:_MAX_ITEMS]:
        loc = _text(_child(entry, "loc"))
        url = link_url(loc) if loc else None
        if url:
            when = _text(_child(entry, "lastmod"))
            lines.append(f"- {url}" + (f" ({when[:_MAX_FIELD]})" if when else ""))
            links.append(Link(url=url, text=""))
    if len(entries) > _MAX_ITEMS:
        lines.append(f"[{len(entries) - _MAX_ITEMS} more URLs not shown]")
    return FeedReading("", "\n".join(lines), tuple(links))


def _enclosure(item: Any) -> tuple[str, str]:
    """A file the item carries (a podcast's episode, say) and its type: RSS
    ``<enclosure url=...>``, Atom ``<link rel="enclosure">``; ``("", "")`` when none."""
    rss = _child(item, "enclosure")
    if rss is not None and rss.get("url"):
        return str(rss.get("url")), str(rss.get("type") or "")
    for link in _children(item, "link"):
        if link.get("rel") == "enclosure" and link.get("href"):
            return str(link.get("href")), str(link.get("type") or "")
    return "", ""


def _item_link(item: Any) -> str:
    # RSS: <link>URL</link> (before an atom:link beside it, which is often the feed's own);
    # Atom: <link href="URL" rel="alternate"/> (the first such, else the first link but the
    # feed's own); RSS without a link: a permalink <guid>.
    links = _children(item, "link")
    for e in links:
        if not e.get("href") and _text(e):
            return _text(e)
    atom = [e for e in links if e.get("href") and e.get("rel") not in ("self", "enclosure")]
    for e in atom:
        if e.get("rel", "alternate") == "alternate":
            return str(e.get("href"))
    if atom:
        return str(atom[0].get("href"))
    guid = _child(item, "guid")
    return _text(guid) if guid is not None and guid.get("isPermaLink", "true") != "false" else ""


def _link_text(text: str) -> str:
    """``text`` escaped to stand as a Markdown link's text (:data:`_LINK_TEXT_SPECIAL`)."""
    return _LINK_TEXT_SPECIAL.sub(lambda m: "\\" + m.group(), text)


def _plain(markup: str) -> str:
    """A field's words: feeds put HTML in descriptions (escaped, or in CDATA)."""
    if "<" in markup:
        import lxml.etree
        import lxml.html  # type: ignore[import-untyped]

        with contextlib.suppress(lxml.etree.ParserError, ValueError):
            markup = lxml.html.fragment_fromstring(markup, create_parent="div").text_content()
    return " ".join(markup.split())


def _local(element: Any) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _children(element: Any, name: str) -> list[Any]:
    if element is None:
        return []
    return [e for e in element if _local(e) == name]


def _child(element: Any, name: str) -> Any:
    found = _children(element, name)
    return found[0] if found else None


def _first_text(element: Any, *names: str) -> str:
    # Not `_child(a) or _child(b)`: an lxml element with no children is false.
    for name in names:
        text = _text(_child(element, name))
        if text:
            return text
    return ""


def _text(element: Any) -> str:
    if element is None:
        return ""
    return " ".join("".join(element.itertext()).split())
