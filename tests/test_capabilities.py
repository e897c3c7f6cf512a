"""The capability catalogue: every face describes web_fetch and web_search from one place,
bounded by the operator's [limits], and refuses a value over them with the same sentence.

The faces are driven as their users drive them: the MCP server through the official MCP client,
the gateway's OpenAPI document and capability routes over real HTTP on loopback, the agent tool
specs validated against the official ``anthropic`` / ``openai`` SDK types, and the command line
as a process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic.types
import httpx
import jsonschema
import openai.types.chat
import pytest
from fake_models import sdk_problems
from localserver import accept_counter, respond, serve
from mcp import Client
from mcp.types import TextContent
from openai.types.responses import FunctionToolParam
from pydantic import TypeAdapter
from test_gateway import auth, load, loopback_web, running_gateway

import webward
from webward import Settings
from webward._capabilities import FETCH, SEARCH, capabilities
from webward._gateway import FETCH_PATH, SEARCH_PATH, openapi_document
from webward._mcp import build_server
from webward.agents import (
    RESEARCH,
    WEB_FETCH,
    WEB_SEARCH,
    ToolContext,
    anthropic_tools,
    execute_tool,
    openai_responses_tools,
    openai_tools,
    tool_specs,
)
from webward.testing import MemoryAuditSink

# Not the defaults (2048, 512, 40,000), so that a face still stating those is caught.
URL_CHARS, QUERY_CHARS, WINDOW = 300, 40, 5_000
LIMITS = {
    "max_url_chars": URL_CHARS,
    "max_query_chars": QUERY_CHARS,
    "max_fetch_text_chars": WINDOW,
}
SRC = Path(webward.__file__).resolve().parents[1]


def check_fetch_schema(schema: Any, *, url: str, max_chars: str, query: str = "query") -> None:
    """A fetch input schema states this test's limits (and none of the defaults)."""
    jsonschema.Draft202012Validator.check_schema(schema)
    properties = schema["properties"]
    assert properties[url]["maxLength"] == URL_CHARS
    assert f"at most {URL_CHARS} characters" in properties[url]["description"]
    assert properties[max_chars]["maximum"] == WINDOW
    assert properties[query]["maxLength"] == QUERY_CHARS
    base = "https://example.org/"
    jsonschema.validate({url: base + "a" * (URL_CHARS - len(base))}, schema)
    with pytest.raises(jsonschema.ValidationError):  # the schema refuses what the core does
        jsonschema.validate({url: ""}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({url: base + "a" * (URL_CHARS + 1 - len(base))}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({url: base, max_chars: WINDOW + 1}, schema)


def check_search_schema(schema: Any) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["query"]["maxLength"] == QUERY_CHARS
    assert schema["properties"]["limit"]["maximum"] == 50
    jsonschema.validate({"query": "q" * QUERY_CHARS}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"query": "q" * (QUERY_CHARS + 1)}, schema)


def check_fetch_description(text: str) -> None:
    """The window the model is told of is the operator's."""
    assert f"at most {WINDOW:,} characters" in text
    assert f"pass offset={WINDOW} to continue" in text
    assert "40,000" not in text and "offset=40000" not in text


@pytest.mark.anyio
async def test_the_limits_in_force_rule_every_face(tmp_path: Path) -> None:
    """Change [limits] max_url_chars, max_query_chars and the window in a config: the MCP tool
    list, the gateway's OpenAPI document and the Anthropic / OpenAI tool specs all follow."""
    settings = load(tmp_path, limits=LIMITS)
    assert (settings.limits.max_url_chars, settings.limits.max_query_chars) == (300, 40)

    # MCP, through the official client.
    async with (
        loopback_web(settings, MemoryAuditSink()) as web,
        Client(build_server(web, tier="connected")) as client,
    ):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    check_fetch_schema(tools["web_fetch"].input_schema, url="url", max_chars="max_chars")
    check_search_schema(tools["web_search"].input_schema)
    check_fetch_description(tools["web_fetch"].description or "")

    # The gateway's OpenAPI document, as it serves it.
    with running_gateway(settings, lambda: loopback_web(settings, MemoryAuditSink())) as base:
        async with httpx.AsyncClient(trust_env=False, timeout=20) as http:
            served = (await http.get(base + "/openapi.json")).json()
    bodies = served["components"]["schemas"]
    check_fetch_schema(bodies["FetchRequest"], url="url", max_chars="maxChars")
    check_search_schema(bodies["SearchRequest"])
    assert served == openapi_document(settings)
    assert served != openapi_document()  # the defaults state other numbers

    # The agent tool specs, in each SDK's own type.
    fetch, search = tool_specs(settings)
    assert RESEARCH.for_settings(settings).tools == (fetch, search)
    messages_api = anthropic_tools([fetch, search])
    for tool in messages_api:
        assert sdk_problems(TypeAdapter(anthropic.types.ToolParam), tool) == []
    check_fetch_schema(messages_api[0]["input_schema"], url="url", max_chars="max_chars")
    check_search_schema(messages_api[1]["input_schema"])
    check_fetch_description(messages_api[0]["description"])
    chat = openai_tools([fetch, search])
    for tool in chat:
        assert (
            sdk_problems(TypeAdapter(openai.types.chat.ChatCompletionFunctionToolParam), tool) == []
        )
    check_fetch_schema(chat[0]["function"]["parameters"], url="url", max_chars="max_chars")
    check_search_schema(chat[1]["function"]["parameters"])
    responses = openai_responses_tools([fetch, search])
    for tool in responses:
        assert sdk_problems(TypeAdapter(FunctionToolParam), tool) == []
    check_fetch_schema(responses[0]["parameters"], url="url", max_chars="max_chars")


def test_the_defaults_state_the_default_limits() -> None:
    """With default settings every face states 2048, 512 and 40,000, as before the catalogue."""
    for schema in (WEB_FETCH.input_schema, openapi_document()["components"]["schemas"]):
        text = json.dumps(schema)
        assert '"maxLength": 2048' in text and '"maxLength": 512' in text
        assert '"maximum": 40000' in text
    assert WEB_SEARCH.input_schema["properties"]["query"]["maxLength"] == 512
    assert tool_specs(Settings()) == (WEB_FETCH, WEB_SEARCH)


def test_one_id_and_one_description_per_capability() -> None:
    """The ids, tool names and descriptions every face uses are the catalogue's."""
    catalogue = capabilities()
    assert [c.id for c in catalogue] == [FETCH, SEARCH]
    assert (FETCH_PATH, SEARCH_PATH) == (
        "/v1/capabilities/web:page.fetch@1",
        "/v1/capabilities/web:search.query@1",
    )
    assert (WEB_FETCH.name, WEB_SEARCH.name) == ("web_fetch", "web_search")
    assert WEB_FETCH.description == catalogue.fetch.description
    doc = openapi_document()
    assert doc["paths"][FETCH_PATH]["post"]["summary"] == catalogue.fetch.summary
    # The faces differ only in which arguments they offer and how they spell them.
    assert list(WEB_FETCH.input_schema["properties"]) == [
        "url",
        "offset",
        "max_chars",
        "query",
        "max_age",
    ]
    assert list(doc["components"]["schemas"]["FetchRequest"]["properties"]) == [
        "url",
        "offset",
        "includeLinks",
        "includeScreenshot",
        "maxChars",
        "query",
        "maxAge",
    ]


def text_of(content: Any) -> str:
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


@pytest.mark.anyio
async def test_a_value_over_the_limit_is_refused_alike_at_every_face(tmp_path: Path) -> None:
    """A URL longer than the new max_url_chars (but well under the default 2048), and a query
    longer than the new max_query_chars, are refused with the same one sentence by MCP, the
    gateway, the agent tools and the command line; each call is audited, none connects."""
    settings = load(tmp_path, limits=LIMITS)
    config = tmp_path / "webward.toml"
    audit = MemoryAuditSink()
    messages: dict[str, list[str]] = {}
    with accept_counter() as counter:
        url = counter.url("/" + "a" * URL_CHARS)
        assert URL_CHARS < len(url) < 2048
        query = "owls " * QUERY_CHARS
        async with (
            loopback_web(settings, audit) as web,
            Client(build_server(web, tier="connected")) as client,
        ):
            fetched = await client.call_tool("web_fetch", {"url": url})
            searched = await client.call_tool("web_search", {"query": query})
            assert fetched.is_error and searched.is_error
            messages["mcp"] = [text_of(fetched.content), text_of(searched.content)]

            context = ToolContext(web, "research", "connected")
            tool_fetch = await execute_tool("web_fetch", {"url": url}, context)
            tool_search = await execute_tool("web_search", {"query": query}, context)
            assert tool_fetch.is_error and tool_search.is_error
            messages["tools"] = [tool_fetch.text, tool_search.text]

        with running_gateway(settings, lambda: loopback_web(settings, audit)) as base:
            async with httpx.AsyncClient(trust_env=False, timeout=20) as http:
                answers = [
                    await http.post(base + FETCH_PATH, json={"url": url}, headers=auth("alice")),
                    await http.post(
                        base + SEARCH_PATH, json={"query": query}, headers=auth("alice")
                    ),
                ]
        assert [a.status_code for a in answers] == [400, 400]
        assert [a.json()["error"]["code"] for a in answers] == ["invalid_input"] * 2
        messages["gateway"] = [a.json()["error"]["message"] for a in answers]

        env = {**os.environ, "PYTHONPATH": str(SRC)}
        runs = [
            subprocess.run(
                [sys.executable, "-m", "webward", *args, "--config", str(config)],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            for args in (("fetch", url), ("search", query))
        ]
        assert [r.returncode for r in runs] == [2, 2]
        messages["cli"] = [r.stderr.strip().removeprefix("webward: ") for r in runs]
    assert counter.accepts == 0

    shorten = "shorten it, for example by leaving out tracking parameters (utm_*) and the #fragment"
    expected = [
        f"the URL is longer than {URL_CHARS} characters; {shorten}",
        f"query must be at most {QUERY_CHARS} characters (it has {len(query.strip())})",
    ]
    # The same sentence, each face naming the value as its caller gave it: the command line
    # its QUERY argument (and flags by their names: --max-chars), the others the field; and
    # the command line, whoever runs webward, also the operator's step.
    cli = [
        f"{expected[0]}; an operator can raise [limits] max_url_chars",
        expected[1].replace("query must", "QUERY must"),
    ]
    assert messages == {"mcp": expected, "tools": expected, "gateway": expected, "cli": cli}
    # Every in-process call was audited as refused for its length.
    assert [(r.capability, r.decision) for r in audit.records] == [
        (FETCH, "refused"),
        (SEARCH, "refused"),
    ] * 3


@pytest.mark.anyio
async def test_a_whole_number_written_as_a_float_is_read_alike_at_every_face(
    tmp_path: Path,
) -> None:
    """``offset: 10.0`` (JSON Schema's integer, and what some models write) reads the same
    window as ``10`` through MCP, the agent tools and the gateway; ``10.5`` is refused alike."""
    settings = load(tmp_path)
    audit = MemoryAuditSink()
    body = "0123456789abcdefghijKLMNOPQRSTUVWXYZ" * 2
    whole = {"offset": 10.0, "max_chars": 10.0}
    torn = {"offset": 10.5}
    with serve(routes={"/p": respond(200, body, "text/plain; charset=utf-8")}) as site:
        url = site.url("/p")
        async with (
            loopback_web(settings, audit) as web,
            Client(build_server(web, tier="connected")) as client,
        ):
            mcp_ok = await client.call_tool("web_fetch", {"url": url, **whole})
            mcp_bad = await client.call_tool("web_fetch", {"url": url, **torn})
            context = ToolContext(web, "research", "connected")
            tool_ok = await execute_tool("web_fetch", {"url": url, **whole}, context)
            tool_bad = await execute_tool("web_fetch", {"url": url, **torn}, context)
        with running_gateway(settings, lambda: loopback_web(settings, audit)) as base:
            async with httpx.AsyncClient(trust_env=False, timeout=20) as http:
                wire = {"url": url, "offset": 10.0, "maxChars": 10.0}
                gateway_ok = await http.post(base + FETCH_PATH, json=wire, headers=auth("alice"))
                gateway_bad = await http.post(
                    base + FETCH_PATH, json={"url": url, **torn}, headers=auth("alice")
                )
    assert not mcp_ok.is_error and not tool_ok.is_error and gateway_ok.status_code == 200
    assert mcp_ok.meta is not None
    for window in (mcp_ok.meta["webward/result"]["window"], gateway_ok.json()["window"]):
        assert (window["offset"], window["end"]) == (10, 20)
    for text in (text_of(mcp_ok.content), tool_ok.text, gateway_ok.json()["content"]):
        assert "abcdefghij" in text and "0123456789" not in text and "KLMN" not in text
    refusals = [text_of(mcp_bad.content), tool_bad.text, gateway_bad.json()["error"]["message"]]
    assert mcp_bad.is_error and tool_bad.is_error and gateway_bad.status_code == 400
    assert all("offset must be a non-negative whole number" in r for r in refusals)
