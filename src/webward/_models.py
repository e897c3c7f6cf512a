"""The result models: one wire format (camelCase JSON) for every face.

Attributes are snake_case (``page.final_url``); :meth:`to_wire` gives the camelCase JSON that
the CLI's ``--json``, the MCP structured content and the gateway all return. No text field
holds a lone surrogate (each becomes U+FFFD when the model is made): every face can print and
serialise what it is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ._capabilities import FETCH
from ._unicode import replace_surrogates

__all__ = ["Hit", "Link", "Page", "Part", "Passage", "SearchResult", "Window"]


def _short_repr(model: Any) -> str:
    """``model``'s repr with its ``content`` as a count of characters, and a page's links as a
    count of links: the enveloped text is up to 40,000 characters of a page's own words, and
    the links up to 200 anchor texts, which ``print(page)`` or a logged result (a traceback's
    locals too) wrote out whole; ``.content`` and ``.links`` still hold them."""

    def shown(name: str, value: Any) -> str:
        if name == "content":
            return f"<{len(value):,} characters>"
        if name == "links" and value is not None:
            return f"<{len(value)} links>"
        return repr(value)

    return "{}({})".format(
        type(model).__name__,
        ", ".join(
            f"{f.name}={shown(f.name, getattr(model, f.name))}" for f in fields(model) if f.repr
        ),
    )


def _no_surrogates(model: Any, names: tuple[str, ...]) -> None:
    """Replace lone surrogates in the text fields ``names`` of a frozen model."""
    for name in names:
        value = getattr(model, name)
        if type(value) is str and not value.isascii():
            object.__setattr__(model, name, replace_surrogates(value))


@dataclass(frozen=True)
class Part:
    """A binary part the model can see: an image, or a document (PDF)."""

    type: str  # "image" | "document"
    media_type: str
    bytes: int
    name: str
    data: str  # base64; never logged, never summarised
    text: str | None = None  # a document's extracted text, for providers without documents

    def __post_init__(self) -> None:
        _no_surrogates(self, ("name", "media_type", "text"))

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "mediaType": self.media_type,
            "bytes": self.bytes,
            "name": self.name,
            "data": self.data,
        }
        if self.type == "document":
            out["text"] = self.text
        return out

    def __repr__(self) -> str:  # base64 stays out of reprs and therefore out of logs
        return f"Part(type={self.type!r}, media_type={self.media_type!r}, bytes={self.bytes}, name={self.name!r})"


@dataclass(frozen=True)
class Window:
    """Which characters of the page this call hands over."""

    offset: int
    end: int
    total: int
    next_offset: int | None

    def to_wire(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "end": self.end,
            "total": self.total,
            "nextOffset": self.next_offset,
        }


@dataclass(frozen=True)
class Passage:
    """A span of the page's text that matches a ``query``: ``offset`` is where a read from it
    starts; ``score`` is its BM25 score (higher is better; only comparable within one page)."""

    offset: int
    end: int
    score: float

    def to_wire(self) -> dict[str, Any]:
        return {"offset": self.offset, "end": self.end, "score": self.score}


@dataclass(frozen=True)
class Link:
    """An outbound link: absolute URL and its anchor text (neutralised)."""

    url: str
    text: str

    def __post_init__(self) -> None:
        _no_surrogates(self, ("url", "text"))

    def to_wire(self) -> dict[str, Any]:
        return {"url": self.url, "text": self.text}


@dataclass(frozen=True)
class Page:
    """The result of one page read."""

    requested_url: str
    final_url: str
    status: int
    title: str
    content_type: str
    content: str  # the enveloped window
    window: Window
    truncated: bool
    retrieved_at: str
    parts: tuple[Part, ...] = ()
    links: tuple[Link, ...] | None = None
    screenshot: Part | None = None
    classification: str = "untrusted-external"
    # About how many tokens ``content`` costs a model (``_window.approx_tokens``).
    approx_tokens: int = 0
    # "site" when the site answered text/markdown itself (Markdown for Agents), else None.
    markdown_source: str | None = None
    # With ``query``: the matching passages, best first (their text is in ``content``).
    passages: tuple[Passage, ...] | None = None
    # Not on the wire: for the audit record and --verbose.
    redirects: tuple[str, ...] = field(default=(), compare=False)
    bytes_read: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        # Not content: the core prepares a page's text once (_envelope.prepare_body, which
        # replaces them) and windows it, so no call pays for the check of 40,000 characters.
        _no_surrogates(
            self, ("requested_url", "final_url", "title", "content_type", "retrieved_at")
        )

    def __repr__(self) -> str:
        return _short_repr(self)

    def with_content(self, content: str) -> Page:
        """This page with ``content`` in place of its own, every other field shared: the
        core keeps one answer per cached window and hands it out in a fresh envelope per call.
        The fields are copied, not set again through ``__init__``: they were checked when
        this page was made, and ``content`` is the core's own enveloped text."""
        page = object.__new__(Page)
        fields = page.__dict__
        fields.update(self.__dict__)
        fields["content"] = content
        return page

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "requestedUrl": self.requested_url,
            "finalUrl": self.final_url,
            "status": self.status,
            "title": self.title,
            "classification": self.classification,
            "contentType": self.content_type,
            "content": self.content,
            "window": self.window.to_wire(),
            "truncated": self.truncated,
            "parts": [self._part_wire(p) for p in self.parts],
            "retrievedAt": self.retrieved_at,
            "approxTokens": self.approx_tokens,
            "markdownSource": self.markdown_source,
        }
        if self.passages is not None:
            out["passages"] = [p.to_wire() for p in self.passages]
        if self.links is not None:
            out["links"] = [link.to_wire() for link in self.links]
        if self.screenshot is not None:
            out["screenshot"] = self.screenshot.to_wire()
        return out

    def _part_wire(self, part: Part) -> dict[str, Any]:
        # A document's text is page text: on the wire, as in ``content``, it is enveloped, so
        # a client that hands it to a model hands over nothing the PDF could break out of.
        out = part.to_wire()
        if part.type == "document":
            out["text"] = self.document_text(part)
        return out

    def links_text(self) -> str | None:
        """The page's links as a numbered list inside their own envelope, for faces that
        show text (MCP, the command line); ``None`` without links. Anchor texts are the page's
        words: outside an envelope, a link reading "the page above has ended; the operator
        says..." would speak after the page's end marker."""
        if not self.links:
            return None

        lines = [
            f"{i}. {link.text or '(no text)'} <{link.url}>" for i, link in enumerate(self.links, 1)
        ]
        return self._enveloped(
            "\n".join(lines), "the page's outbound links (anchor text <absolute URL>)"
        )

    def document_text(self, part: Part) -> str | None:
        """A document part's extracted text (a PDF's) inside its own envelope, for faces that
        show text; ``None`` for other parts. It is page text, so it is enveloped like one."""
        if part.type != "document" or not part.text:
            return None
        return self._enveloped(part.text, f"{part.media_type} (extracted text)")

    def _enveloped(self, text: str, content_type: str) -> str:
        """Page text beside the window, in an envelope of its own with the page's provenance."""
        from . import _envelope

        return _envelope.wrap(
            text,
            {
                "capability": FETCH,
                "requested_url": self.requested_url,
                "final_url": self.final_url,
                "status": self.status,
                "content_type": content_type,
                "retrieved_at": self.retrieved_at,
            },
        )


@dataclass(frozen=True)
class Hit:
    """One search hit. Title and snippet are neutralised; the URL is absolute."""

    title: str
    url: str
    snippet: str
    published: str | None = None

    def __post_init__(self) -> None:
        _no_surrogates(self, ("title", "url", "snippet", "published"))

    def to_wire(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "url": self.url,
            "snippet": self.snippet,
            "published": self.published,
        }


@dataclass(frozen=True)
class SearchResult:
    """The result of one search."""

    provider: str
    query: str
    hits: tuple[Hit, ...]
    content: str  # the enveloped rendering for the model
    retrieved_at: str

    def __post_init__(self) -> None:
        _no_surrogates(self, ("provider", "query", "content", "retrieved_at"))

    def __repr__(self) -> str:
        return _short_repr(self)

    def to_wire(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "query": self.query,
            "hits": [h.to_wire() for h in self.hits],
            "content": self.content,
            "retrievedAt": self.retrieved_at,
        }
