"""The run loop against local fakes of the Anthropic and OpenAI APIs, first with a tiny in-test
web capability, then end to end through ``webward.Web`` and ``webward ask`` with pages, an image
and a PDF served on loopback and a fake Brave search."""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fake_models import (
    API_KEY,
    ErrorReply,
    FakeModelAPI,
    anthropic_reply,
    fake_model_api,
    openai_reply,
    pdf_bytes,
    png_bytes,
)
from fake_search import BRAVE_PATH, FakeBrave
from localserver import LocalServer, respond, serve

from webward import InvalidInput, Page, Refused, Settings, UpstreamError, Web, Window
from webward._models import Hit, SearchResult
from webward._parts import document_part, image_part
from webward.agents import (
    GENERAL,
    NO_WEB_MESSAGE,
    RESEARCH,
    AnthropicClient,
    CallRecord,
    OpenAIClient,
    ToolContext,
    _http,
    run_agent,
)
from webward.cli import main

VENDORS = ["anthropic", "openai"]


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model client's retries wait 10 ms rather than 1 s and 2 s: what the tests check is
    that they happen, and what a run says when they run out."""
    monkeypatch.setattr(_http, "_BACKOFF_S", 0.01)


def reply(
    vendor: str, text: str = "", calls: list[tuple[str, str, Any]] | None = None
) -> dict[str, Any]:
    """A scripted model turn in ``vendor``'s wire format."""
    if vendor == "anthropic":
        return anthropic_reply(text, calls or [])
    return openai_reply(text or None, calls or [])


def client_for(fake: FakeModelAPI) -> AnthropicClient | OpenAIClient:
    if fake.vendor == "anthropic":
        return AnthropicClient(API_KEY, "fake-model", base_url=fake.base_url)
    return OpenAIClient(API_KEY, "fake-model", base_url=fake.base_url)


def tool_results(fake: FakeModelAPI, request: int) -> list[dict[str, Any]]:
    """What webward handed back before the ``request``-th model call (0-based), flattened:
    Anthropic: the blocks of the last user turn; OpenAI: the messages after the last assistant."""
    messages = fake.messages(request)
    if fake.vendor == "anthropic":
        content: list[dict[str, Any]] = messages[-1]["content"]
        return content
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return messages[last + 1 :]


def result_text(fake: FakeModelAPI, item: dict[str, Any]) -> str:
    """The text of one tool result, whichever vendor's shape it has."""
    content = item["content"]
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content if b["type"] == "text")


def make_page(url: str, content: str, parts: tuple[Any, ...] = ()) -> Page:
    return Page(
        requested_url=url,
        final_url=url,
        status=200,
        title="",
        content_type="text/html",
        content=content,
        window=Window(0, len(content), len(content), None),
        truncated=False,
        retrieved_at="2025-01-15T10:00:00Z",
        parts=parts,
    )


class TableWeb:
    """An in-test web capability answering from a table of pages; ``gates`` makes a read wait
    until another read has started, which only concurrent execution can satisfy."""

    def __init__(self, pages: dict[str, Page], wait_for: dict[str, str] | None = None) -> None:
        self.pages = pages
        self.wait_for = wait_for or {}
        self.started: dict[str, anyio.Event] = {url: anyio.Event() for url in pages}
        self.fetched: list[str] = []

    async def fetch(
        self,
        url: str,
        offset: int = 0,
        include_links: bool = False,
        include_screenshot: bool = False,
        agent: str = "cli",
        tier: str | None = None,
    ) -> Page:
        if url not in self.pages:
            raise Refused(f"refused: {url} is not in the test table")
        self.started[url].set()
        if url in self.wait_for:
            await self.started[self.wait_for[url]].wait()
        self.fetched.append(url)
        return self.pages[url]

    async def search(
        self, query: str, limit: int = 10, agent: str = "cli", tier: str | None = None
    ) -> SearchResult:
        return SearchResult(
            "null",
            query,
            (Hit("A", "https://a.example/", "s"),),
            f"HITS FOR {query}",
            "2025-01-15T10:00:00Z",
        )


# ---- the loop with an in-test capability --------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_run_calls_tools_and_returns_the_answer(vendor: str) -> None:
    """Search, then read, then answer: each turn hands the results back as the vendor expects."""
    web = TableWeb({"https://a.example/": make_page("https://a.example/", "PAGE A")})
    script = [
        reply(vendor, "Searching.", [("c1", "web_search", {"query": "what is a"})]),
        reply(vendor, "", [("c2", "web_fetch", {"url": "https://a.example/"})]),
        reply(vendor, "A is a page. Source: https://a.example/"),
    ]
    records: list[CallRecord] = []
    with fake_model_api(vendor, script) as fake:
        async with client_for(fake) as client:
            result = await run_agent(
                client,
                RESEARCH,
                "What is A?",
                ToolContext(web, "research", "connected"),
                on_call=records.append,
            )
    assert fake.problems == []
    assert result.answer == "A is a page. Source: https://a.example/"
    assert (result.turns, result.stopped_at_ceiling) == (3, False)
    assert [(r.turn, r.name, r.summary) for r in records] == [
        (1, "web_search", "ok, 18 characters of text"),
        (2, "web_fetch", "ok, 6 characters of text"),
    ]
    assert list(result.calls) == records
    first = fake.bodies[0]
    assert [
        t["name"] if vendor == "anthropic" else t["function"]["name"] for t in first["tools"]
    ] == ["web_fetch", "web_search"]
    if vendor == "anthropic":
        assert first["system"] == RESEARCH.system_prompt
        assert first["messages"] == [{"role": "user", "content": "What is A?"}]
    else:
        assert first["messages"] == [
            {"role": "system", "content": RESEARCH.system_prompt},
            {"role": "user", "content": "What is A?"},
        ]
    assert [result_text(fake, r) for r in tool_results(fake, 1)] == ["HITS FOR what is a"]
    assert [result_text(fake, r) for r in tool_results(fake, 2)] == ["PAGE A"]
    assert len(fake.messages(2)) == len(fake.messages(1)) + 2  # the conversation grows turn by turn


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
async def test_calls_in_one_turn_run_concurrently_and_keep_their_order(vendor: str) -> None:
    """Two reads in one turn: the first waits for the second to start, so only concurrent
    execution finishes; the results still come back in call order."""
    pages = {u: make_page(u, f"PAGE {u[8]}") for u in ("https://a.example/", "https://b.example/")}
    web = TableWeb(pages, wait_for={"https://a.example/": "https://b.example/"})
    script = [
        reply(
            vendor,
            "",
            [
                ("ca", "web_fetch", {"url": "https://a.example/"}),
                ("cb", "web_fetch", {"url": "https://b.example/"}),
            ],
        ),
        reply(vendor, "done"),
    ]
    with fake_model_api(vendor, script) as fake:
        async with client_for(fake) as client:
            with anyio.fail_after(20):  # a guard against a deadlock, not a timing assertion
                result = await run_agent(
                    client, RESEARCH, "Read both.", ToolContext(web, "research")
                )
    assert fake.problems == []
    assert web.fetched == ["https://b.example/", "https://a.example/"]  # b finished first
    handed_back = tool_results(fake, 1)
    ids = [r["tool_use_id"] if vendor == "anthropic" else r["tool_call_id"] for r in handed_back]
    assert ids == ["ca", "cb"]
    assert [result_text(fake, r) for r in handed_back] == ["PAGE a", "PAGE b"]
    assert [c.id for c in result.calls] == ["ca", "cb"]


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
async def test_the_turn_ceiling_stops_the_run_and_says_so(vendor: str) -> None:
    """A model that never stops calling tools is asked max_turns times; the answer says why."""
    web = TableWeb({"https://a.example/": make_page("https://a.example/", "PAGE A")})
    script = [
        reply(vendor, f"still looking {i}", [(f"c{i}", "web_fetch", {"url": "https://a.example/"})])
        for i in range(5)
    ]
    with fake_model_api(vendor, script) as fake:
        async with client_for(fake) as client:
            result = await run_agent(
                client, RESEARCH, "Loop.", ToolContext(web, "research"), max_turns=3
            )
    assert fake.problems == []
    assert len(fake.bodies) == 3
    assert result.stopped_at_ceiling and result.turns == 3
    assert result.answer == (
        "still looking 2\n\n[stopped: the run reached its limit of 3 turns before the model gave a "
        "final answer; raise max_turns to let it go on]"
    )
    # The last turn's call is not run, yet listed, as refused for the turn limit.
    assert [(c.turn, c.id, c.is_error) for c in result.calls] == [
        (1, "c0", False),
        (2, "c1", False),
        (3, "c2", True),
    ]
    assert result.calls[2].summary == (
        "error: not run: the run reached its limit of 3 turns before the model gave a final "
        "answer; raise max_turns to let it go on"
    )
    assert web.fetched == ["https://a.example/"] * 2


@pytest.mark.anyio
async def test_calls_at_the_turn_ceiling_are_audited_refused_and_never_run(
    tmp_path: Path,
) -> None:
    """Every call the model asks for on the last allowed turn, whatever it asks, is one
    audit record, refused with reason turn_limit under its capability and target, and
    one CallRecord handed to on_call; none reaches the far side or the model."""
    from webward.testing import MemoryAuditSink

    audit = MemoryAuditSink()
    settings = Settings().replace(web_settings(None))
    seen: list[CallRecord] = []
    with serve(routes={"/page": respond(200, "<p>never read</p>")}) as site:
        calls = [
            ("c1", "web_fetch", {"url": "  " + site.url("/page") + " "}),
            ("c2", "web_fetch", {"url": "http://10.0.0.1/"}),
            ("c3", "web_search", {"query": "owls"}),
            ("c4", "shell_exec", {"cmd": "id"}),
            ("c5", "web_fetch", "{not json"),
        ]
        script = [reply("openai", "still looking", calls)]
        async with Web(settings, audit=audit) as web:
            with fake_model_api("openai", script) as fake:
                async with client_for(fake) as client:
                    result = await run_agent(
                        client,
                        RESEARCH,
                        "Read.",
                        ToolContext(web, "research", "connected"),
                        max_turns=1,
                        on_call=seen.append,
                    )
        assert site.requests == []
    assert fake.problems == [] and len(fake.bodies) == 1
    assert result.stopped_at_ceiling
    assert [(r.capability, r.target, r.agent, r.decision, r.reason) for r in audit.records] == [
        ("web:page.fetch@1", site.url("/page"), "research", "refused", "turn_limit"),
        ("web:page.fetch@1", "http://10.0.0.1/", "research", "refused", "turn_limit"),
        ("web:search.query@1", "owls", "research", "refused", "turn_limit"),
        ("agent:tool.unknown@1", "shell_exec", "research", "refused", "turn_limit"),
        ("web:page.fetch@1", "", "research", "refused", "turn_limit"),
    ]
    assert [(c.turn, c.id, c.is_error) for c in result.calls] == [
        (1, f"c{i}", True) for i in range(1, 6)
    ]
    assert seen == list(result.calls)
    assert {c.summary for c in result.calls} == {
        "error: not run: the run reached its limit of 1 turn before the model gave a final "
        "answer; raise max_turns to let it go on"
    }


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_run_without_a_capability_is_told_web_access_is_unavailable(vendor: str) -> None:
    """With no web capability injected, both tools answer with one message; the run goes on."""
    script = [
        reply(
            vendor,
            "",
            [
                ("c1", "web_search", {"query": "x"}),
                ("c2", "web_fetch", {"url": "https://a.example/"}),
            ],
        ),
        reply(vendor, "I cannot reach the web in this run."),
    ]
    with fake_model_api(vendor, script) as fake:
        async with client_for(fake) as client:
            result = await run_agent(client, RESEARCH, "Anything?", ToolContext(None, "research"))
    assert fake.problems == []
    assert result.answer == "I cannot reach the web in this run."
    handed_back = tool_results(fake, 1)
    assert [result_text(fake, r) for r in handed_back] == [NO_WEB_MESSAGE, NO_WEB_MESSAGE]
    if vendor == "anthropic":
        assert all(r["is_error"] is True for r in handed_back)
    assert [c.summary for c in result.calls] == [f"error: {NO_WEB_MESSAGE}"] * 2


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_tool_outside_the_agents_toolset_is_refused_by_name(vendor: str) -> None:
    """The general agent is offered web_fetch only; a web_search call is answered, not run."""
    web = TableWeb({})
    script = [reply(vendor, "", [("c1", "web_search", {"query": "x"})]), reply(vendor, "ok")]
    with fake_model_api(vendor, script) as fake:
        async with client_for(fake) as client:
            await run_agent(client, GENERAL, "Search for x.", ToolContext(web, "general"))
    assert fake.problems == []
    tools = fake.bodies[0]["tools"]
    assert len(tools) == 1
    assert [result_text(fake, r) for r in tool_results(fake, 1)] == [
        "the tool 'web_search' is not available to the general agent; its tools are web_fetch"
    ]


@pytest.mark.anyio
async def test_calls_refused_before_the_core_are_audited(tmp_path: Path) -> None:
    """In a run, a call whose arguments are not JSON, one the agent's toolset does not offer
    and one without its url are each one audited refusal of their capability."""
    from webward.testing import MemoryAuditSink

    audit = MemoryAuditSink()
    settings = Settings.load(None, environ={"WEBWARD_STATE_DIR": str(tmp_path)})
    calls = [
        ("c1", "web_fetch", "{not json"),
        ("c2", "web_search", {"query": "owls"}),
        ("c3", "web_fetch", {}),
    ]
    script = [reply("openai", "", calls), reply("openai", "ok")]
    async with Web(settings, audit=audit) as web:
        with fake_model_api("openai", script) as fake:
            async with client_for(fake) as client:
                await run_agent(client, GENERAL, "Read.", ToolContext(web, "general", "connected"))
    assert sorted((r.capability, r.agent, r.decision) for r in audit.records) == [
        ("web:page.fetch@1", "general", "refused"),
        ("web:page.fetch@1", "general", "refused"),
        ("web:search.query@1", "general", "refused"),
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
async def test_long_tool_results_are_cut_with_a_note(vendor: str) -> None:
    """A result longer than the cap (max_result_chars, or a whole window in its envelope
    when that is more: 40,000 + 2 x 2,048 + 8,000 by default) is cut there and says what
    the cut dropped."""
    web = TableWeb({"https://a.example/": make_page("https://a.example/", "x" * 60_000)})
    script = [
        reply(vendor, "", [("c1", "web_fetch", {"url": "https://a.example/"})]),
        reply(vendor, "ok"),
    ]
    with fake_model_api(vendor, script) as fake:
        async with client_for(fake) as client:
            await run_agent(client, RESEARCH, "Read.", ToolContext(web, "research"))
    text = result_text(fake, tool_results(fake, 1)[0])
    assert text == "x" * 52_096 + (
        "\n[webward cut this tool result at 52,096 of its 60,000 characters: the last 7,904 "
        "were not handed over, the envelope's end marker and any text after it among them; an "
        "offset in the header above does not follow on from here. Ask for less, with a smaller "
        "max_chars or limit]"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
async def test_images_and_pdfs_reach_the_model_in_each_vendors_shape(vendor: str) -> None:
    """One turn reads a page, an image and a PDF; the next request carries them as documented."""
    image = image_part(png_bytes(), "image/png", "https://a.example/chart.png")
    pdf = document_part(pdf_bytes(), "https://a.example/report.pdf", "revenue grew 12 percent")
    web = TableWeb(
        {
            "https://a.example/report.pdf": make_page(
                "https://a.example/report.pdf", "PDF ENVELOPE", (pdf,)
            ),
            "https://a.example/chart.png": make_page(
                "https://a.example/chart.png", "IMG ENVELOPE", (image,)
            ),
            "https://a.example/": make_page("https://a.example/", "PAGE A"),
        }
    )
    calls = [
        ("c1", "web_fetch", {"url": u})
        for u in (
            "https://a.example/report.pdf",
            "https://a.example/chart.png",
            "https://a.example/",
        )
    ]
    records: list[CallRecord] = []
    with fake_model_api(vendor, [reply(vendor, "", calls), reply(vendor, "seen")]) as fake:
        calls_with_ids = [(f"c{i}", n, a) for i, (_, n, a) in enumerate(calls)]
        fake.replies[0] = reply(vendor, "", calls_with_ids)
        async with client_for(fake) as client:
            await run_agent(
                client, RESEARCH, "Look.", ToolContext(web, "research"), on_call=records.append
            )
    assert fake.problems == []
    handed_back = tool_results(fake, 1)
    if vendor == "anthropic":
        assert [b["type"] for b in handed_back] == ["tool_result"] * 3 + ["document"]
        assert handed_back[1]["content"][1] == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": image.data},
        }
        assert (
            handed_back[3]["source"]["data"] == pdf.data and handed_back[3]["title"] == "report.pdf"
        )
        assert handed_back[2]["content"] == "PAGE A"
    else:
        assert [m["role"] for m in handed_back] == ["tool", "tool", "tool", "user"]
        assert "revenue grew 12 percent" in handed_back[0]["content"]
        assert (
            handed_back[3]["content"][1]["image_url"]["url"]
            == f"data:image/png;base64,{image.data}"
        )
        assert "c1" in handed_back[3]["content"][0]["text"]
    assert [r.summary for r in records] == [
        f"ok, 12 characters of text [document report.pdf, {pdf.bytes} bytes]",
        f"ok, 12 characters of text [image image/png, {image.bytes} bytes]",
        "ok, 6 characters of text",
    ]


# ---- model API failures ------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (
            ErrorReply(
                401,
                {
                    "type": "error",
                    "error": {"type": "authentication_error", "message": "invalid x-api-key"},
                },
            ),
            "the {v} API refused the key (HTTP 401): invalid x-api-key; check {var}",
        ),
        (
            ErrorReply(429, {"error": {"message": "Rate limit exceeded."}}, {"Retry-After": "7"}),
            "the {v} API is rate limiting requests (HTTP 429): Rate limit exceeded; retry in 7 s",
        ),
        (
            ErrorReply(
                529,
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ),
            "the {v} API failed (HTTP 529): Overloaded",
        ),
        (ErrorReply(500, b"<html>oops</html>"), "the {v} API failed (HTTP 500)"),
        (
            ErrorReply(400, {"error": {"message": "model 'nope' not found"}}),
            "the {v} API rejected the request (HTTP 400): model 'nope' not found",
        ),
        (
            ErrorReply(200, b"{not json"),
            "the {v} API returned a response that is not a JSON object",
        ),
        (ErrorReply(200, {"unexpected": True}), "the {v} API returned a "),
    ],
)
async def test_model_api_failures_are_one_sentence_upstream_errors(
    vendor: str, failure: ErrorReply, message: str
) -> None:
    """HTTP errors, rate limits and bad bodies from the model API become one UpstreamError."""
    var = "ANTHROPIC_API_KEY" if vendor == "anthropic" else "OPENAI_API_KEY"
    with fake_model_api(vendor, [failure]) as fake:
        async with client_for(fake) as client:
            with pytest.raises(UpstreamError) as caught:
                await run_agent(client, RESEARCH, "Q?", ToolContext(None, "research"))
    assert caught.value.message.startswith(message.format(v=vendor, var=var))
    assert "\n" not in caught.value.message


@pytest.mark.anyio
async def test_an_unreachable_model_api_is_an_upstream_error() -> None:
    """A base URL nothing listens on is reported as unreachable, naming the origin."""
    with serve() as server:
        base = server.base  # the port is closed again after the block
    async with OpenAIClient("k", "m", base_url=base + "/v1") as client:
        with pytest.raises(UpstreamError, match=f"could not connect to the openai API at {base}"):
            await run_agent(client, RESEARCH, "Q?", ToolContext(None, "research"))


# ---- end to end: webward.Web and `webward ask` ---------------------------------------------

ARTICLE = """<!doctype html><html><head><title>Quarterly results</title></head><body><main>
<h1>Quarterly results</h1>
<p>The company reported that revenue grew twelve percent in the quarter, driven by strong demand
for its products in every region. The full report is available as a PDF, and the chart shows the
trend over the last eight quarters. Analysts had expected growth of about nine percent.</p>
<p>Operating costs stayed flat, and the board kept its outlook for the year unchanged.</p>
</main></body></html>"""


@pytest.fixture
def site() -> Iterator[LocalServer]:
    """The public web, played by a loopback server: an article, a chart and a PDF report."""
    routes = {
        "/results": respond(200, ARTICLE),
        "/chart.png": respond(200, png_bytes(), "image/png"),
        "/report.pdf": respond(200, pdf_bytes("Revenue grew twelve percent."), "application/pdf"),
    }
    with serve(routes=routes) as server:
        yield server


@pytest.fixture
def brave(site: LocalServer) -> Iterator[LocalServer]:
    """A fake Brave Search API whose hits point at the loopback site."""
    items = [
        {
            "title": "Quarterly results",
            "url": site.url("/results"),
            "snippet": "Revenue grew.",
            "published": None,
        }
    ]
    with serve(routes={BRAVE_PATH: FakeBrave(items, "brave-key")}) as server:
        yield server


def web_settings(brave_url: str | None) -> dict[str, Any]:
    search: dict[str, Any] = (
        {"provider": "brave", "brave_url": brave_url} if brave_url else {"provider": "none"}
    )
    return {
        "network": {"allow_ranges": ["127.0.0.1/32"]},
        "policy": {"default_tier": "connected", "robots": False},
        "search": search,
    }


def e2e_script(vendor: str, site: LocalServer) -> list[Any]:
    """Search, then read the article, the chart and the PDF in one turn, then answer."""
    urls = [site.url("/results"), site.url("/chart.png"), site.url("/report.pdf")]
    return [
        reply(vendor, "", [("s1", "web_search", {"query": "quarterly results revenue"})]),
        reply(vendor, "", [(f"f{i}", "web_fetch", {"url": u}) for i, u in enumerate(urls)]),
        reply(vendor, f"Revenue grew twelve percent. Sources: {urls[0]}"),
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
async def test_end_to_end_through_web_with_search_page_image_and_pdf(
    vendor: str, site: LocalServer, brave: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real core reads the loopback site; every request the fake model gets is valid and
    carries the search hits, the page text, the image and the PDF in the vendor's shape."""
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", "brave-key")
    settings = Settings().replace(web_settings(brave.base))
    with fake_model_api(vendor, e2e_script(vendor, site)) as fake:
        async with Web(settings) as web, client_for(fake) as client:
            result = await run_agent(
                client, RESEARCH, "How did revenue do?", ToolContext(web, "research", "connected")
            )
    assert fake.problems == []
    assert result.answer.startswith("Revenue grew twelve percent.")
    search_text = result_text(fake, tool_results(fake, 1)[0])
    assert "untrusted-web-content" in search_text and site.url("/results") in search_text
    handed_back = tool_results(fake, 2)
    png, pdf = png_bytes(), pdf_bytes("Revenue grew twelve percent.")
    if vendor == "anthropic":
        assert [b["type"] for b in handed_back] == ["tool_result"] * 3 + ["document"]
        assert [b["tool_use_id"] for b in handed_back[:3]] == ["f0", "f1", "f2"]
        assert "revenue grew twelve percent" in result_text(fake, handed_back[0])
        image_block = next(b for b in handed_back[1]["content"] if b["type"] == "image")
        assert image_block["source"]["media_type"] == "image/png"
        assert handed_back[3]["source"]["media_type"] == "application/pdf"
        assert handed_back[3]["title"] == "report.pdf"
    else:
        assert [m["role"] for m in handed_back] == ["tool", "tool", "tool", "user"]
        assert [m["tool_call_id"] for m in handed_back[:3]] == ["f0", "f1", "f2"]
        assert "Revenue grew twelve percent." in handed_back[2]["content"]
        assert handed_back[3]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    summaries = [c.summary for c in result.calls]
    assert f"[image image/png, {len(png)} bytes]" in summaries[2]
    assert f"[document report.pdf, {len(pdf)} bytes]" in summaries[3]


def write_config(tmp_path: Path, brave_url: str | None) -> Path:
    lines = [
        "[network]",
        'allow_ranges = ["127.0.0.1/32"]',
        "[policy]",
        'default_tier = "connected"',
        "robots = false",
        "[search]",
    ]
    lines += (
        ['provider = "brave"', f'brave_url = "{brave_url}"'] if brave_url else ['provider = "none"']
    )
    path = tmp_path / "webward.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def isolated_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No credential file or keyring of the machine's user leaks into a test."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


@pytest.mark.parametrize("vendor", VENDORS)
def test_ask_prints_the_answer_and_verbose_calls(
    vendor: str,
    site: LocalServer,
    brave: LocalServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    isolated_credentials: None,
) -> None:
    """`webward ask` runs the research agent, prints the answer, and with --verbose each call;
    no base64 reaches stdout, stderr or the log."""
    caplog.set_level(logging.DEBUG, logger="webward")
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", "brave-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY" if vendor == "anthropic" else "OPENAI_API_KEY", API_KEY)
    config = write_config(tmp_path, brave.base)
    with fake_model_api(vendor, e2e_script(vendor, site)) as fake:
        code = main(
            [
                "ask",
                "How did revenue do?",
                "--provider",
                vendor,
                "--model",
                "fake-model",
                "--base-url",
                fake.base_url,
                "--config",
                str(config),
                "--verbose",
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert fake.problems == []
    assert out.startswith("Revenue grew twelve percent. Sources: ")
    assert 'webward: turn 1: web_search {"query": "quarterly results revenue"} -> ok, ' in err
    assert "[image image/png, " in err and "[document report.pdf, " in err
    for data in (png_bytes(), pdf_bytes("Revenue grew twelve percent.")):
        encoded = base64.b64encode(data).decode()
        assert encoded[:24] not in out + err and encoded[-24:] not in out + err
    assert re.search(r"[A-Za-z0-9+/=]{100,}", out + err) is None  # no base64 of anything
    assert "base64" not in err
    # Nor in the log: the run loop logs each call's summary, never its content.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "web_fetch -> ok" in logged and "[image image/png, " in logged
    assert re.search(r"[A-Za-z0-9+/=]{100,}", logged) is None


def test_ask_json_reports_the_run(
    site: LocalServer,
    brave: LocalServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_credentials: None,
) -> None:
    """--json prints the answer, the turns and every tool call's summary, no base64."""
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", "brave-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    config = write_config(tmp_path, brave.base)
    with fake_model_api("anthropic", e2e_script("anthropic", site)) as fake:
        code = main(
            [
                "ask",
                "Q?",
                "--model",
                "fake-model",
                "--base-url",
                fake.base_url,
                "--config",
                str(config),
                "--json",
            ]
        )
    out, _ = capsys.readouterr()
    assert code == 0
    data = json.loads(out)
    assert (
        data["provider"] == "anthropic"
        and data["agent"] == "research"
        and data["tier"] == "connected"
    )
    assert data["turns"] == 3 and data["stoppedAtCeiling"] is False
    assert [c["name"] for c in data["toolCalls"]] == [
        "web_search",
        "web_fetch",
        "web_fetch",
        "web_fetch",
    ]
    assert all(c["isError"] is False for c in data["toolCalls"])
    assert len(out) < 5000  # summaries, never the image or PDF bytes


@pytest.mark.parametrize("vendor", VENDORS)
def test_ask_passes_model_tier_turns_and_tokens_through(
    vendor: str,
    site: LocalServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_credentials: None,
) -> None:
    """--tier as-owner makes the read a refusal the model is told about, --max-turns 2 stops a
    model that keeps calling tools, and --model / --max-tokens reach the request body."""
    monkeypatch.setenv("ANTHROPIC_API_KEY" if vendor == "anthropic" else "OPENAI_API_KEY", API_KEY)
    script = [
        reply(vendor, "", [(f"f{i}", "web_fetch", {"url": site.url("/results")})]) for i in range(3)
    ]
    with fake_model_api(vendor, script) as fake:
        code = main(
            [
                "ask",
                "Q?",
                "--provider",
                vendor,
                "--model",
                "my-model",
                "--base-url",
                fake.base_url,
                "--tier",
                "as-owner",
                "--max-turns",
                "2",
                "--max-tokens",
                "321",
                "--config",
                str(write_config(tmp_path, None)),
                "--json",
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert fake.problems == []
    assert len(fake.bodies) == 2
    assert {b["model"] for b in fake.bodies} == {"my-model"}
    token_field = "max_tokens" if vendor == "anthropic" else "max_completion_tokens"
    assert {b[token_field] for b in fake.bodies} == {321}
    data = json.loads(out)
    assert (data["tier"], data["turns"], data["stoppedAtCeiling"]) == ("as-owner", 2, True)
    assert [(c["turn"], c["isError"]) for c in data["toolCalls"]] == [(1, True), (2, True)]
    assert data["toolCalls"][0]["summary"].startswith("error: refused")
    assert data["toolCalls"][1]["summary"].startswith(
        "error: not run: the run reached its limit of 2 turns"
    )
    assert "[stopped: the run reached its limit of 2 turns" in data["answer"]
    assert site.requests == []  # the refused read never reached the site


def test_ask_without_a_search_provider_still_answers(
    site: LocalServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_credentials: None,
) -> None:
    """With no search configured, web_search's result says so and the run still answers."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    config = write_config(tmp_path, None)
    script = [
        openai_reply(None, [("s1", "web_search", {"query": "revenue"})]),
        openai_reply(None, [("f1", "web_fetch", {"url": site.url("/results")})]),
        openai_reply("Revenue grew twelve percent."),
    ]
    with fake_model_api("openai", script) as fake:
        code = main(
            [
                "ask",
                "Q?",
                "--provider",
                "openai",
                "--model",
                "m",
                "--base-url",
                fake.base_url,
                "--config",
                str(config),
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out == "Revenue grew twelve percent.\n"
    search_result = tool_results(fake, 1)[0]["content"]
    assert "web search is not configured" in search_result
    assert "revenue grew twelve percent" in tool_results(fake, 2)[0]["content"]


@pytest.mark.parametrize(
    ("vendor", "variable"), [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")]
)
@pytest.mark.parametrize("base_url", [None, "https://models.invalid/v1"])
def test_ask_without_a_key_exits_2_naming_the_variable(
    vendor: str,
    variable: str,
    base_url: str | None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    isolated_credentials: None,
) -> None:
    """A missing key for a hosted API (the default base URL, or any public host) is bad usage:
    exit 2 naming the variable, before any model client exists (``.invalid`` never resolves)."""
    argv = ["ask", "Q?", "--provider", vendor, "--model", "m"]
    argv += ["--config", str(write_config(tmp_path, None))]
    if base_url is not None:
        argv += ["--base-url", base_url]
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 2
    assert (
        err == f"webward: no key for the {vendor} API: set {variable} in the environment or run "
        f"`webward credentials set {variable}`\n"
    )


@pytest.mark.parametrize("vendor", VENDORS)
def test_ask_without_a_key_on_a_local_server_sends_no_key(
    vendor: str,
    site: LocalServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    isolated_credentials: None,
) -> None:
    """With --base-url on loopback (a local Ollama, vLLM ...) a missing key is fine: the run
    answers and the server sees no Authorization / x-api-key header at all."""
    script = [
        reply(vendor, "", [("f1", "web_fetch", {"url": site.url("/results")})]),
        reply(vendor, "Revenue grew twelve percent."),
    ]
    with fake_model_api(vendor, script, key=None) as fake:
        code = main(
            [
                "ask",
                "Q?",
                "--provider",
                vendor,
                "--model",
                "llama3",
                "--base-url",
                fake.base_url,
                "--config",
                str(write_config(tmp_path, None)),
                "--verbose",
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert fake.problems == []  # includes: no key header was sent
    assert len(fake.bodies) == 2
    assert out == "Revenue grew twelve percent.\n"
    variable = "ANTHROPIC_API_KEY" if vendor == "anthropic" else "OPENAI_API_KEY"
    assert f"webward: no {variable}; sending no key to the local server at {fake.base_url}" in err


@pytest.mark.parametrize(
    ("base_url", "optional"),
    [
        ("http://127.0.0.1:11434/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://10.0.0.7:8000/v1", True),
        ("http://192.168.1.20:1234/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://gpu-box:8000/v1", True),
        ("http://ollama.lan/v1", True),
        ("https://vllm.internal/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://openrouter.ai/api/v1", False),
        ("http://8.8.8.8/v1", False),
        ("http://[2606:4700::1111]/v1", False),
        ("https://user:pw@127.0.0.1/v1", False),
        (None, False),
        ("", False),
    ],
)
def test_a_key_is_optional_only_for_an_explicit_local_base_url(
    base_url: str | None, optional: bool
) -> None:
    """The decision alone (no DNS, no connection): loopback, private and internal names only."""
    from webward._cmd_ask import key_optional

    assert key_optional(base_url) is optional


def test_ask_model_api_error_exits_1_with_one_sentence(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_credentials: None,
) -> None:
    """A refused key at the model API is an upstream failure: exit 1, one line."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "wrong-key")
    failure = ErrorReply(
        401,
        {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        },
    )
    with fake_model_api("anthropic", [failure]) as fake:
        code = main(
            [
                "ask",
                "Q?",
                "--model",
                "m",
                "--base-url",
                fake.base_url,
                "--config",
                str(write_config(tmp_path, None)),
            ]
        )
    _, err = capsys.readouterr()
    assert code == 1
    assert (
        err == "webward: the anthropic API refused the key (HTTP 401): invalid x-api-key; "
        "check ANTHROPIC_API_KEY\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-turns", "0"], "webward: --max-turns must be a whole number, 1 to 100, not '0'\n"),
        (
            ["--base-url", "ftp://x"],
            "webward: --base-url must be an absolute http:// or https:// URL, not 'ftp://x'\n",
        ),
        (  # refused before any connection: the key would cross the network in clear
            ["--base-url", "http://api.example.com/v1"],
            "webward: --base-url is plain http:// to a host beyond this network, so "
            "ANTHROPIC_API_KEY would cross it unencrypted; use https://, or a server on this "
            "machine or network\n",
        ),
    ],
)
def test_ask_bad_options_exit_2(
    argv: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_credentials: None,
) -> None:
    """Bad option values are bad usage, named in one line."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    code = main(["ask", "Q?", "--model", "m", "--config", str(write_config(tmp_path, None)), *argv])
    assert code == 2
    assert capsys.readouterr().err == message


@pytest.mark.anyio
async def test_a_key_http_cannot_carry_is_bad_input_not_a_crash() -> None:
    """A key with a line break cannot go into a header: one InvalidInput, nothing sent."""
    with fake_model_api("openai", []) as fake:
        async with OpenAIClient("key\nX-Evil: 1", "m", base_url=fake.base_url) as client:
            with pytest.raises(
                InvalidInput, match=r"could not be sent: check the base URL \(and OPENAI_API_KEY"
            ):
                await run_agent(client, RESEARCH, "Q?", ToolContext(None, "research"))
        assert fake.bodies == []


@pytest.mark.parametrize("vendor", VENDORS)
def test_ask_at_its_turn_ceiling_names_the_flag(
    vendor: str,
    site: LocalServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_credentials: None,
) -> None:
    """`webward ask --max-turns 1` stopped "at its limit of 1 turns ...; raise max_turns": at
    the command line the limit is one turn and it is raised with --max-turns."""
    monkeypatch.setenv("ANTHROPIC_API_KEY" if vendor == "anthropic" else "OPENAI_API_KEY", API_KEY)
    script = [reply(vendor, "", [("f0", "web_fetch", {"url": site.url("/results")})])]
    with fake_model_api(vendor, script) as fake:
        code = main(
            [
                "ask",
                "Q?",
                "--provider",
                vendor,
                "--model",
                "m",
                "--base-url",
                fake.base_url,
                "--max-turns",
                "1",
                "--config",
                str(write_config(tmp_path, None)),
                "--json",
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    said = "the run reached its limit of 1 turn before the model gave a final answer; raise "
    assert data["answer"] == f"[stopped: {said}--max-turns to let it go on]"
    assert data["toolCalls"][0]["summary"] == f"error: not run: {said}--max-turns to let it go on"
