"""Feeds read through the library from a real server on loopback (``webward._feeds``): what
an item's words may and may not make of the Markdown webward writes around them."""

from __future__ import annotations

import pytest
from localserver import respond, serve

from webward import Settings, StaticResolver, Web
from webward._envelope import unwrap
from webward.testing import MemoryAuditSink

pytestmark = pytest.mark.anyio

SETTINGS = Settings().replace(
    {
        "network": {"allow_ranges": ["127.0.0.1/32"]},
        "policy": {"default_tier": "connected", "robots": False},
    }
)


async def test_an_item_title_cannot_move_the_items_link() -> None:
    """webward writes an item with a link as ``## [title](link)``. A title holding "](" closed
    that link text early: "Docs](javascript:alert(1)) [more" made a link to javascript: (which
    the reading never holds otherwise) and hung the item's link on the word "more". The
    title's brackets are escaped, as the HTML reading escapes a link's text."""
    title = "Docs](javascript:alert(1)) [more \\"
    feed = (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>'
        f"<item><title>{title}</title><link>https://example.org/a</link></item>"
        "</channel></rss>"
    )
    audit = MemoryAuditSink()
    with serve(routes={"/feed": respond(200, feed, "application/rss+xml")}) as srv:
        async with Web(SETTINGS, StaticResolver({}), audit=audit) as web:
            page = await web.fetch(srv.url("/feed"), include_links=True)
    _, text = unwrap(page.content)
    assert "## [Docs\\](javascript:alert(1)) \\[more \\\\](https://example.org/a)" in text
    assert "](javascript:" not in text.replace("\\](javascript:", "")
    assert [(link.url, link.text) for link in page.links] == [("https://example.org/a", title)]
    assert len(audit.records) == 1
