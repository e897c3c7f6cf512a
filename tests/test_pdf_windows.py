"""A PDF's extracted text is windowed like a long page's: offsets, max_chars and query reach
every page of it, the PDF itself comes with the first window only, and the note where the
text ends is true for a model without the PDF as for one with it. Loopback servers only."""

from __future__ import annotations

from typing import Any

import pytest
from hostile import many_pages_pdf
from localserver import respond, serve

from webward import Settings, StaticResolver, Web
from webward._envelope import unwrap
from webward.agents import ToolCall, ToolContext, execute_tool
from webward.agents._openai import tool_result_messages
from webward.testing import MemoryAuditSink

pytestmark = pytest.mark.anyio

# 500 pages are read (max_pdf_pages), about 8,400 characters of "Page N words" lines.
PAGES = 700
STOP = (
    "[PDF text stops at the first 500 pages; the pages after it are in the PDF itself "
    "(attached at offset 0), not in this text]"
)


def web() -> Web:
    settings = Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected", "robots": False},
            "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
        }
    )
    return Web(settings, StaticResolver({}), audit=MemoryAuditSink())


def body(content: str) -> str:
    """A window's text without its envelope and its paging header."""
    _, text = unwrap(content)
    return text.partition("\n\n")[2] if text.startswith("showing characters ") else text


async def test_a_pdfs_text_pages_through_windows_to_its_last_page() -> None:
    with serve(routes={"/r.pdf": respond(200, many_pages_pdf(PAGES), "application/pdf")}) as srv:
        async with web() as w:
            first = await w.fetch(srv.url("/r.pdf"), max_chars=1_000)
            windows: list[Any] = [first]
            while windows[-1].window.next_offset is not None:
                offset = windows[-1].window.next_offset
                windows.append(await w.fetch(srv.url("/r.pdf"), offset, max_chars=1_000))
            whole = await w.fetch(srv.url("/r.pdf"), max_chars=40_000)
    assert len(windows) > 5, "a PDF of 500 pages read should need several 1,000-character windows"
    assert [p.type for p in first.parts] == ["document"], "the first window should carry the PDF"
    assert all(not p.parts for p in windows[1:]), "later windows should not carry the PDF again"
    text = "".join(body(p.content) for p in windows)
    assert text == body(whole.content), "the windows should tile the PDF's whole text"
    assert text.startswith(f"application/pdf document r.pdf, {len(many_pages_pdf(PAGES))} bytes")
    assert "Page 0 words" in text and "Page 499 words" in text and "Page 500 words" not in text
    assert text.endswith(STOP), "the text should end saying where the rest of the PDF is"


async def test_an_offset_past_the_pdfs_header_reads_its_text() -> None:
    """Offset 100 was refused as past the end: a PDF's answer was only its one-line header."""
    with serve(routes={"/r.pdf": respond(200, many_pages_pdf(PAGES), "application/pdf")}) as srv:
        async with web() as w:
            page = await w.fetch(srv.url("/r.pdf"), 100, max_chars=500)
    assert page.window.offset == 100 and page.window.end == 600
    assert "Page" in body(page.content) and not page.parts


async def test_a_query_finds_a_passage_on_a_late_page_of_a_pdf() -> None:
    with serve(routes={"/r.pdf": respond(200, many_pages_pdf(PAGES), "application/pdf")}) as srv:
        async with web() as w:
            found = await w.fetch(srv.url("/r.pdf"), query="Page 421 words")
            assert found.passages, "a query should find passages in a PDF's text"
            offset = found.passages[0].offset
            there = await w.fetch(srv.url("/r.pdf"), offset, max_chars=2_000)
    assert not found.parts, "a query's passages should come without the PDF"
    assert "Page 421 words" in body(there.content)


async def test_the_openai_chat_message_for_a_long_pdf_says_how_to_read_on() -> None:
    """A chat-completions model cannot take the PDF: its message holds the text's first
    window, says which offset to pass next, and never points at a part it does not get."""
    with serve(routes={"/r.pdf": respond(200, many_pages_pdf(PAGES), "application/pdf")}) as srv:
        async with web() as w:
            url = srv.url("/r.pdf")
            context = ToolContext(w, "research", "connected")
            result = await execute_tool("web_fetch", {"url": url, "max_chars": 1_000}, context)
    [message] = tool_result_messages([(ToolCall("c1", "web_fetch", {"url": url}), result)])
    content = message["content"]
    assert "pass offset=1000 to continue" in content and "Page 0 words" in content
    assert "document part" not in content, "a text-only model never receives a document part"
    assert "not shown: this model cannot take PDFs" in content
