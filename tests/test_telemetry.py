"""Observability: OpenTelemetry spans, Prometheus metrics and the call log line.

Spans are caught with the SDK's in-memory exporter (installed once for this process, and
listening only while a test asks), and once exported over OTLP/HTTP to a receiver on
127.0.0.1. Metrics are read with the Prometheus client's own parser.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fake_search import FakeSearxng, results
from localserver import LocalServer, Request, redirect, respond, send, serve
from mcp import Client
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient
from test_gateway import auth, load, loopback_web, running_gateway
from test_mcp import child_env, mcp_over_http

import webward
from webward import Settings, StaticResolver, Web
from webward._credentials import EnvironmentStore
from webward._errors import Refused, WebwardError
from webward._gateway import FETCH_PATH, create_app, hash_token
from webward._mcp import build_server
from webward._redact import redact_message, redact_secrets
from webward._telemetry import MetricsEndpoint, Telemetry, _HostMetrics
from webward.cli import main
from webward.testing import MemoryAuditSink

PAGE = (
    "<html><head><title>Owls</title></head><body><h1>Owls</h1>"
    + "".join(f"<p>Paragraph {i} about owls and SECRET-PAGE-TEXT.</p>" for i in range(20))
    + "</body></html>"
)
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"


# ---- the in-memory exporter ---------------------------------------------------------------


class _Listening(SimpleSpanProcessor):
    """Exports only while a test listens, so the rest of the suite leaves no spans behind."""

    on = False

    def on_end(self, span: ReadableSpan) -> None:
        if self.on:
            super().on_end(span)


_EXPORTER = InMemorySpanExporter()
_PROCESSOR = _Listening(_EXPORTER)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider (installed once) with this test's spans only."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(_PROCESSOR)
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    _PROCESSOR.on = True
    try:
        yield _EXPORTER
    finally:
        _PROCESSOR.on = False
        _EXPORTER.clear()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def one(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = named(exporter, name)
    assert len(found) == 1, [s.name for s in exporter.get_finished_spans()]
    return found[0]


def ancestors(exporter: InMemorySpanExporter, span: ReadableSpan) -> list[str]:
    """The names of ``span``'s ancestors among the exported spans, nearest first."""
    by_id = {s.context.span_id: s for s in exporter.get_finished_spans()}
    out: list[str] = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        span = by_id[parent.span_id]
        out.append(span.name)
        parent = span.parent
    return out


@pytest.fixture
def site() -> Iterator[LocalServer]:
    routes = {
        "/robots.txt": respond(200, "User-agent: *\nDisallow: /private\n", "text/plain"),
        "/page": respond(200, PAGE),
        "/broken": respond(500, "down"),
    }
    with serve(routes=routes) as server:
        yield server


def loopback_settings(tmp_path: Path, **extra: Any) -> Settings:
    return Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected"},
            "state": {"dir": str(tmp_path / "state")},
            "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
            **extra,
        }
    )


def web_for(settings: Settings, telemetry: Telemetry | None = None, **kwargs: Any) -> Web:
    return Web(
        settings,
        resolver=StaticResolver({}),
        audit=kwargs.pop("audit", MemoryAuditSink()),
        credentials=EnvironmentStore({}),
        telemetry=telemetry or Telemetry(),
        **kwargs,
    )


# ---- traces -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_read_is_one_call_span_with_a_child_per_step(
    tmp_path: Path, site: LocalServer, spans: InMemorySpanExporter
) -> None:
    """web_fetch joins the caller's span; robots.txt, connect, GET, read, convert and the
    audit write are its children, with HTTP and GenAI tool attributes."""
    tracer = trace.get_tracer("agent")
    async with web_for(loopback_settings(tmp_path)) as web:
        with tracer.start_as_current_span("agent step") as step:
            page = await web.fetch(site.url("/page"), agent="owl-agent")
    call = one(spans, "web_fetch")
    assert call.context.trace_id == step.get_span_context().trace_id
    assert ancestors(spans, call) == ["agent step"]
    attrs = dict(call.attributes or {})
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == "web_fetch"
    assert attrs["webward.capability"] == "web:page.fetch@1"
    assert attrs["webward.agent"] == "owl-agent"
    assert attrs["webward.tier"] == "connected"
    assert attrs["webward.decision"] == "allowed"
    assert attrs["webward.reason"] == "allowed"
    assert attrs["webward.status"] == 200
    assert attrs["webward.bytes"] == page.bytes_read > 0
    assert attrs["webward.window.total"] == page.window.total
    assert call.status.status_code is StatusCode.UNSET

    for step_name in ("robots.txt", "convert", "audit write"):
        assert ancestors(spans, one(spans, step_name))[0] == "web_fetch"
    gets = named(spans, "GET")
    urls = sorted(str((s.attributes or {})["url.full"]) for s in gets)
    assert urls == [site.url("/page"), site.url("/robots.txt")]
    page_get = next(s for s in gets if (s.attributes or {})["url.full"] == site.url("/page"))
    assert ancestors(spans, page_get)[0] == "web_fetch"
    hop = dict(page_get.attributes or {})
    assert hop["http.request.method"] == "GET"
    assert hop["server.address"] == "127.0.0.1"
    assert hop["http.response.status_code"] == 200
    robots_get = next(s for s in gets if s is not page_get)
    assert ancestors(spans, robots_get)[:2] == ["robots.txt", "web_fetch"]
    assert "read" in [s.name for s in spans.get_finished_spans()]
    connects = named(spans, "connect")  # one pooled connection serves both requests
    assert connects and all("web_fetch" in ancestors(spans, s) for s in connects)
    for read in named(spans, "read"):
        assert ancestors(spans, read)[0] == "GET"


@pytest.mark.anyio
async def test_a_refused_call_is_an_error_span_naming_its_reason(
    tmp_path: Path, site: LocalServer, spans: InMemorySpanExporter
) -> None:
    async with web_for(loopback_settings(tmp_path)) as web:
        with pytest.raises(Refused):
            await web.fetch(site.url("/private/x"))
    call = one(spans, "web_fetch")
    attrs = dict(call.attributes or {})
    assert attrs["webward.decision"] == "refused"
    assert attrs["error.type"] == attrs["webward.reason"] == "robots"
    assert call.status.status_code is StatusCode.ERROR
    robots = one(spans, "robots.txt")
    assert robots.status.status_code is StatusCode.ERROR
    assert (robots.attributes or {})["error.type"] == "robots"
    assert one(spans, "audit write")  # the refusal was audited inside the call's span


@pytest.mark.anyio
async def test_a_refused_calls_span_status_names_no_secret_query_value(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    """The span's status description is the refusal's message, which names the URL asked and
    where it redirected: their secret query values were exported whole, though url.full
    REDACTs them and the docs say no span carries credentials."""
    with serve() as site:
        site.routes["/go"] = redirect("file:///etc/passwd?X-Amz-Signature=HOP-SECRET")
        site.routes["/gone"] = respond(404, "no")
        async with web_for(loopback_settings(tmp_path)) as web:
            with pytest.raises(Refused):
                await web.fetch(site.url("/go?token=ASKED-SECRET&page=2"))
            with pytest.raises(WebwardError):
                await web.fetch(site.url("/gone?api_key=KEY-SECRET"))
    said = [s.status.description or "" for s in named(spans, "web_fetch")]
    assert len(said) == 2 and all("REDACTED" in d for d in said), said
    assert not any("SECRET" in d for d in said), said
    # The rest of the message stays readable: the next parameter, the sentence's comma.
    assert (
        "?token=REDACTED&page=2 redirected to file:///etc/passwd?X-Amz-Signature=REDACTED,"
        in said[0]
    )


@pytest.mark.anyio
async def test_a_call_that_fails_unexpectedly_names_its_reason_not_a_class(
    tmp_path: Path, site: LocalServer, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """error.type on the call's span is the reason code (internal_error), as for refusals,
    not the exception's class name."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(webward._convert, "convert", broken)
    async with web_for(loopback_settings(tmp_path)) as web:
        with pytest.raises(RuntimeError):
            await web.fetch(site.url("/page"))
    attrs = dict(one(spans, "web_fetch").attributes or {})
    assert attrs["error.type"] == attrs["webward.reason"] == "internal_error"


@pytest.mark.anyio
async def test_a_search_has_a_provider_span_around_its_http_request(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    with serve() as server:
        server.routes["/sx/search"] = FakeSearxng(results(3, host="searx.example"))
        settings = loopback_settings(tmp_path, search={"searxng_url": server.url("/sx")})
        async with web_for(settings) as web:
            await web.search("owls", limit=2, agent="finder")
    call = one(spans, "web_search")
    attrs = dict(call.attributes or {})
    assert attrs["gen_ai.tool.name"] == "web_search"
    assert attrs["webward.provider"] == "searxng"
    provider = one(spans, "search provider")
    assert ancestors(spans, provider)[0] == "web_search"
    assert (provider.attributes or {})["webward.provider"] == "searxng"
    [get] = named(spans, "GET")
    assert ancestors(spans, get)[0] == "search provider"
    assert str((get.attributes or {})["url.full"]).startswith(server.url("/sx/search"))


@pytest.mark.anyio
async def test_a_secret_of_a_url_searched_for_stays_out_of_the_providers_span(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    """The call log has a searched URL's secret values REDACTED; the provider's GET carries
    the query percent-encoded in ?q= (Brave's, SearXNG's), and its url.full kept them:
    ``q=...%3FX-Amz-Signature%3DSIGX``. An encoded pair's secret value is REDACTED there too."""
    query = "report https://bucket.example/o?X-Amz-Signature=SIGX&part=2"
    with serve() as server:
        server.routes["/sx/search"] = FakeSearxng(results(3, host="searx.example"))
        settings = loopback_settings(tmp_path, search={"searxng_url": server.url("/sx")})
        async with web_for(settings) as web:
            await web.search(query, limit=2)
    assert "SIGX" in server.requests[0].target  # the provider was asked the query as given
    [get] = named(spans, "GET")
    full = str((get.attributes or {})["url.full"])
    assert "SIGX" not in full
    assert "%3FX-Amz-Signature%3DREDACTED%26part%3D2" in full


def test_url_full_hides_the_secrets_of_a_url_given_percent_encoded_in_it() -> None:
    """A viewer's ?url= of a pre-signed URL, a proxy's path, a sign-in's ?next= encoded twice:
    the nested URL's secret values are REDACTED in their spelling, its other pairs kept, and
    the call log's and a message's redaction are the same."""
    viewer = (
        "https://docs.example/viewer?url=https%3A%2F%2Fb.example%2Fa.pdf%3FX-Amz-Credential"
        "%3DCRED%26X-Amz-Signature%3DSIGV%26part%3D2&embedded=true"
    )
    assert redact_secrets(viewer) == (
        "https://docs.example/viewer?url=https%3A%2F%2Fb.example%2Fa.pdf%3FX-Amz-Credential"
        "%3DREDACTED%26X-Amz-Signature%3DREDACTED%26part%3D2&embedded=true"
    )
    assert redact_secrets("https://p.example/https%3A%2F%2Fh%2Fx%3Faccess_token%3DAT") == (
        "https://p.example/https%3A%2F%2Fh%2Fx%3Faccess_token%3DREDACTED"
    )
    twice = "https://a.example/?next=https%253A%252F%252Fh%252F%253Ftoken%253DTWICE%2526x%253D1"
    assert redact_secrets(twice) == (
        "https://a.example/?next=https%253A%252F%252Fh%252F%253Ftoken%253DREDACTED%2526x%253D1"
    )
    assert "SIGV" not in redact_message(f"reading {viewer} took too long")
    # An encoded "=" that is no pair of a nested URL's query stays.
    for kept in ("https://a.example/?q=key%3Dvalue", "https://a.example/?q=a%26b%3Dc"):
        assert redact_secrets(kept) == kept


def test_url_full_never_carries_credentials() -> None:
    assert redact_secrets("https://user:pw@example.org/a?b=1") == "https://example.org/a?b=1"
    assert redact_secrets("https://example.org/@owl") == "https://example.org/@owl"
    # Secret query values (OpenTelemetry's list for url.full, and API-key names) are redacted;
    # other parameters, and the same words in a path, stay.
    assert (
        redact_secrets("https://s3.example/o?X-Amz-Signature=abc&page=2&api_key=k%20y&Sig=x#frag")
        == "https://s3.example/o?X-Amz-Signature=REDACTED&page=2&api_key=REDACTED&Sig=REDACTED#frag"
    )
    assert redact_secrets("https://example.org/token/key?q=key") == (
        "https://example.org/token/key?q=key"
    )
    # An OAuth callback's fragment holds its token (the console showed it whole).
    assert redact_secrets("https://app.example/cb#access_token=S2&token_type=bearer") == (
        "https://app.example/cb#access_token=REDACTED&token_type=bearer"
    )
    assert redact_secrets("https://example.org/a=token=1/b") == "https://example.org/a=token=1/b"
    # Tokens other services put in URLs: GitLab's API key, an OpenID Connect callback's.
    assert redact_secrets(
        "https://gitlab.example/api/v4/projects?private_token=glpat-x&page=2"
    ) == ("https://gitlab.example/api/v4/projects?private_token=REDACTED&page=2")
    assert redact_secrets("https://app.example/cb#id_token=eyJ.x.y&state=s") == (
        "https://app.example/cb#id_token=REDACTED&state=s"
    )
    # The same names spelt in camelCase, with hyphens or in capitals are the same names.
    for name in ("accessToken", "access-token", "ACCESS_TOKEN", "apiKey", "authToken", "pwd"):
        url = f"https://api.example/v1?{name}=Zq-secret&page=2"
        assert redact_secrets(url) == f"https://api.example/v1?{name}=REDACTED&page=2"
        assert "Zq" not in redact_message(f"could not read {url}, it timed out")


@pytest.mark.parametrize(
    "name",
    ["api_token", "apiToken", "x-api-key", "api_secret", "subscription-key", "sessionid",
     "session_id", "PHPSESSID", "jsessionid"],
)  # fmt: skip
def test_api_keys_and_session_ids_under_other_services_names_are_redacted(name: str) -> None:
    """Credentials under names the list did not hold (Todoist's api_token, the x-api-key some
    gateways take in the query, Azure API Management's subscription-key, a PHP or Java
    session id) showed whole on a console page shown to others, and in the call log."""
    url = f"https://api.example/v1?{name}=Zq-secret&page=2"
    assert redact_secrets(url) == f"https://api.example/v1?{name}=REDACTED&page=2"
    assert "Zq" not in redact_message(f"could not read {url}, it timed out")


def test_a_session_id_written_as_a_path_parameter_is_redacted() -> None:
    """A servlet container writes its session id into the path of every link for a client
    without cookies (``/cart;jsessionid=...``), the form jsessionid mostly takes in a URL;
    only query and fragment pairs were looked at, so it showed whole. A path parameter of a
    secret's name is REDACTED, in a URL and in a message; the others stay."""
    url = "https://shop.example/cart;jsessionid=Zq9SESSION/items;page=2?sort=asc"
    assert redact_secrets(url) == (
        "https://shop.example/cart;jsessionid=REDACTED/items;page=2?sort=asc"
    )
    said = "could not read https://shop.example/cart;JSESSIONID=Zq9SESSION, it timed out"
    assert redact_message(said) == said.replace("Zq9SESSION", "REDACTED")
    kept = "https://maps.example/m;lat=1.5;lon=2?z=3"
    assert redact_secrets(kept) == kept


def test_a_messages_url_in_brackets_or_after_an_equals_sign_loses_its_credentials() -> None:
    """A library's exception text (a traceback's last line, logged through redact_traceback)
    names a URL in parentheses or as ``url=...`` as often as after a space: there its
    user:password@ was kept. A message's own "(user:password@)", no URL, stays."""
    for said in (
        "could not convert (https://user:Zq-pw@example.org/x)",
        "ConnectError: [https://user:Zq-pw@example.org/x]",
        "request failed: url=https://user:Zq-pw@example.org/x",
        "tried 2 hosts,https://user:Zq-pw@example.org/x",
    ):
        assert "Zq" not in redact_message(said)
        assert "example.org/x" in redact_message(said)
    own = "refused: URLs with credentials (user:password@) are not allowed"
    assert redact_message(own) == own
    assert redact_message("(web:page.fetch@1, mailto:a@b.org)") == (
        "(web:page.fetch@1, mailto:a@b.org)"
    )


@pytest.mark.anyio
async def test_the_gateway_span_joins_the_callers_traceparent(
    tmp_path: Path, site: LocalServer, spans: InMemorySpanExporter
) -> None:
    settings = load(tmp_path)
    with running_gateway(settings, lambda: loopback_web(settings, MemoryAuditSink())) as base:
        async with httpx.AsyncClient(base_url=base, trust_env=False, timeout=30) as http:
            response = await http.post(
                FETCH_PATH,
                json={"url": site.url("/page")},
                headers={**auth("alice"), "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
            )
            garbled = await http.post(
                FETCH_PATH,
                json={"url": site.url("/page")},
                headers={**auth("dave"), "traceparent": "00-not-a-trace-01"},
            )
    assert response.status_code == 200
    assert garbled.status_code == 200  # a malformed traceparent starts a trace of its own
    [dave_call] = [
        s for s in named(spans, "web_fetch") if (s.attributes or {})["webward.agent"] == "dave"
    ]
    assert f"{dave_call.context.trace_id:032x}" != TRACE_ID
    assert ancestors(spans, dave_call) == [f"POST {FETCH_PATH}"]
    [server_span] = [
        s for s in named(spans, f"POST {FETCH_PATH}") if f"{s.context.trace_id:032x}" == TRACE_ID
    ]
    assert f"{server_span.context.trace_id:032x}" == TRACE_ID
    assert server_span.parent is not None and f"{server_span.parent.span_id:016x}" == PARENT_ID
    assert (server_span.attributes or {})["http.response.status_code"] == 200
    assert (server_span.attributes or {})["http.route"] == FETCH_PATH
    [call] = [
        s for s in named(spans, "web_fetch") if s.context.trace_id == server_span.context.trace_id
    ]
    assert ancestors(spans, call) == [f"POST {FETCH_PATH}"]
    assert (call.attributes or {})["webward.agent"] == "alice"


@pytest.mark.anyio
async def test_an_mcp_tool_call_joins_the_clients_trace_through_meta(
    tmp_path: Path, site: LocalServer, spans: InMemorySpanExporter
) -> None:
    """The client puts traceparent in the request's _meta; the server's web_fetch span is in
    the same trace, under the SDK's tools/call span."""
    tracer = trace.get_tracer("agent")
    web = web_for(loopback_settings(tmp_path))
    async with web, Client(build_server(web, agent="ide")) as client:
        with tracer.start_as_current_span("agent step") as step:
            result = await client.call_tool("web_fetch", {"url": site.url("/page")})
    assert not result.is_error
    call = one(spans, "web_fetch")
    assert call.context.trace_id == step.get_span_context().trace_id
    assert ancestors(spans, call)[0] == "tools/call web_fetch"
    assert ancestors(spans, call)[-1] == "agent step"


@pytest.mark.anyio
async def test_an_mcp_clients_own_method_or_tool_name_never_names_a_span(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    """The SDK names its span of each message by the method and tool (or prompt) name the
    client sent: a tool name of 5,000 characters and an escape sequence was a span name and
    a gen_ai.tool.name of its own in the operator's traces, a new one at each request. A
    name this server does not have is named as such, as the call's own span names it."""
    asked = "x" * 5000 + "\x1b[2J"
    web = web_for(loopback_settings(tmp_path))
    async with web, Client(build_server(web, agent="ide")) as client:
        result = await client.call_tool(asked, {})
        assert result.is_error
        with contextlib.suppress(Exception):
            await client.get_prompt(asked)
    finished = spans.get_finished_spans()
    for span in finished:
        assert "xxxxx" not in span.name
        assert not any("xxxxx" in str(v) for v in (span.attributes or {}).values()), span.name
    server_span = one(spans, "tools/call unknown_tool")
    assert (server_span.attributes or {})["gen_ai.tool.name"] == "unknown_tool"
    assert one(spans, "unknown_tool").parent == server_span.context
    assert named(spans, "prompts/get unknown_prompt")


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps each decoded export request."""

    got: list[ExportTraceServiceRequest]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).got.append(request)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:
        return


def _fetch_exporting_to(
    tmp_path: Path, site: LocalServer, endpoint: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """`webward fetch` of the site's page in a child process, exporting spans to
    ``endpoint`` over OTLP/HTTP (no other OTEL_* variable of the test run's own)."""
    config = tmp_path / "webward.toml"
    config.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\ndefault_tier = "connected"\n',
        encoding="utf-8",
    )
    child = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
        **child_env(tmp_path),
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "webward.cli", "fetch", site.url("/page"), "--config", str(config)],
        env=child,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_collector_that_is_down_costs_a_command_one_line(
    tmp_path: Path, site: LocalServer
) -> None:
    """With the collector down (a closed loopback port), the read is printed and the command
    exits once a bounded flush gives up: one exporter line on stderr, not the SDK's retries
    at exit (four unthrottled lines, and about 8 s)."""
    with socket.socket() as closed:  # bound, never listening: every connection is refused
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
        done = _fetch_exporting_to(tmp_path, site, endpoint)
    assert done.returncode == 0, done.stderr
    assert "untrusted-web-content" in done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) <= 1 and "Traceback" not in done.stderr, done.stderr


def test_otlp_http_export_to_a_local_receiver(tmp_path: Path, site: LocalServer) -> None:
    """`webward fetch` with OTEL_EXPORTER_OTLP_ENDPOINT set exports its spans over OTLP/HTTP."""
    handler = type("Receiver", (_Receiver,), {"got": []})
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=receiver.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{receiver.server_port}"
        done = _fetch_exporting_to(tmp_path, site, endpoint, OTEL_SERVICE_NAME="webward-test")
        assert done.returncode == 0, done.stderr
        assert "{" not in done.stderr  # the command line writes no call log unless asked
    finally:
        receiver.shutdown()
        receiver.server_close()
    exported = [
        (resource, s)
        for request in handler.got
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for s in scope.spans
    ]
    names = {s.name for _, s in exported}
    assert {"web_fetch", "robots.txt", "GET", "connect", "read", "convert", "audit write"} <= names
    resource, call = next((r, s) for r, s in exported if s.name == "web_fetch")
    service = {a.key: a.value.string_value for a in resource.resource.attributes}
    assert service["service.name"] == "webward-test"
    attrs = {a.key: a.value for a in call.attributes}
    assert attrs["gen_ai.tool.name"].string_value == "web_fetch"
    assert attrs["webward.decision"].string_value == "allowed"
    assert {s.trace_id for _, s in exported} == {call.trace_id}


def test_a_collector_answering_a_huge_body_is_read_only_to_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The OTLP/HTTP exporter read a collector's answer whole (and again at each retry): one
    answering a 1 GB body took a gateway past 2.9 GB of memory. Webward's exporter reads at
    most 64 KiB of it and closes the connection; the collector here gets to send at most
    what the sockets' buffers hold of its 64 MB."""
    from webward._telemetry import _exporter

    size = 64 * 1024 * 1024
    sent = [0]
    listener = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(65536)
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            body = head.split(b"\r\n\r\n", 1)[1]
            while len(body) < length:
                body += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 500 Oops\r\nContent-Length: %d\r\n\r\n" % size)
            chunk = b"A" * 65536
            with contextlib.suppress(OSError):
                while sent[0] < size:
                    conn.sendall(chunk)
                    sent[0] += len(chunk)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"http://127.0.0.1:{port}/v1/traces")
    exporter = _exporter("otlp", {})
    provider = TracerProvider()
    one_span = provider.get_tracer("t").start_span("call")
    one_span.end()
    try:
        exporter.export([one_span])  # type: ignore[list-item]
    finally:
        exporter.shutdown()
        thread.join(30)
        listener.close()
    assert not thread.is_alive()
    assert sent[0] < size // 4, sent[0]


@pytest.mark.parametrize(
    ("sampler_variable", "expected"),
    [(None, "AlwaysOnSampler"), ("parentbased_always_on", "ParentBased")],
)
def test_a_callers_not_sampled_flag_cannot_take_its_calls_out_of_the_traces(
    sampler_variable: str | None, expected: str
) -> None:
    """Under the SDK's default parent-based sampler, an agent sending a traceparent marked
    "not sampled" took its own calls out of the traces: webward samples every call unless
    the operator names a sampler (OTEL_TRACES_SAMPLER), which then rules. In a process of its
    own: the tracer provider is process-wide."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(Path(webward.__file__).resolve().parents[1])
    code = (
        "from opentelemetry import trace\n"
        "from webward._telemetry import configure_tracing\n"
        "import os\n"
        "assert configure_tracing(dict(os.environ, OTEL_TRACES_EXPORTER='console'))\n"
        "print(trace.get_tracer_provider().sampler.get_description())\n"
    )
    if sampler_variable is not None:
        env["OTEL_TRACES_SAMPLER"] = sampler_variable
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(expected), done.stdout


# ---- metrics ------------------------------------------------------------------------------


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text page, by name and sorted labels."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def calls(page: dict[Any, float], **labels: str) -> float:
    return sum(
        v
        for (name, ls), v in page.items()
        if name == "webward_calls_total" and labels.items() <= dict(ls).items()
    )


def test_hot_path_metrics_expose_what_the_prometheus_client_would() -> None:
    """The per-call counters and histograms, kept as plain numbers, are scraped as the same
    samples prometheus_client's own Counter and Histogram give for the same updates (bucket
    edges included: a value on a bound falls in that bound's bucket)."""
    import prometheus_client as prom

    from webward._telemetry import _CALL_BUCKETS, _Counter, _Histogram

    ours, theirs = prom.CollectorRegistry(), prom.CollectorRegistry()
    counter = _Counter("t_calls", "Calls.", ("agent",))
    histogram = _Histogram("t_seconds", "Seconds.", ("agent",), _CALL_BUCKETS)
    plain = _Counter("t_hits", "Hits.")
    for family in (counter, histogram, plain):
        ours.register(family)
    their_counter = prom.Counter("t_calls", "Calls.", ["agent"], registry=theirs)
    their_histogram = prom.Histogram(
        "t_seconds", "Seconds.", ["agent"], buckets=_CALL_BUCKETS, registry=theirs
    )
    their_plain = prom.Counter("t_hits", "Hits.", registry=theirs)
    for agent, value in [("a", 0.0), ("a", 0.005), ("b", 0.0051), ("a", 30.0), ("b", 99.0)]:
        counter.cell(agent).inc()
        their_counter.labels(agent).inc()
        histogram.cell(agent).observe(value)
        their_histogram.labels(agent).observe(value)
    plain.cell().inc(3)
    their_plain.inc(3)

    def without_created(registry: prom.CollectorRegistry) -> dict[Any, float]:
        page = samples(prom.generate_latest(registry).decode())
        assert {name for name, _ in page if name.endswith("_created")} == {
            "t_calls_created", "t_seconds_created", "t_hits_created"
        }  # fmt: skip
        return {key: v for key, v in page.items() if not key[0].endswith("_created")}

    assert without_created(ours) == without_created(theirs)


@pytest.mark.anyio
async def test_gateway_metrics_move_with_calls(tmp_path: Path, site: LocalServer) -> None:
    settings = load(tmp_path, limits={"breaker_failures": 1})

    def make_web() -> Web:
        return web_for(settings, Telemetry.for_settings(settings, server=True))

    with running_gateway(settings, make_web) as base:
        async with httpx.AsyncClient(base_url=base, trust_env=False, timeout=30) as http:
            before = samples((await http.get("/metrics")).text)
            for _ in range(2):
                ok = await http.post(
                    FETCH_PATH, json={"url": site.url("/page")}, headers=auth("alice")
                )
                assert ok.status_code == 200
            down = await http.post(
                FETCH_PATH, json={"url": site.url("/broken")}, headers=auth("dave")
            )
            assert down.status_code == 502
            fresh = site.url("/page?uncached")  # a cached page sends nothing: no breaker check
            open_ = await http.post(FETCH_PATH, json={"url": fresh}, headers=auth("dave"))
            assert open_.json()["error"]["code"] == "circuit_open"
            metrics = await http.get("/metrics")
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    after = samples(metrics.text)
    fetch = "web:page.fetch@1"
    assert calls(before) == 0
    assert calls(after, capability=fetch, decision="allowed", reason="allowed", agent="alice") == 2
    assert calls(after, decision="failed", reason="http_500", agent="dave") == 1
    assert calls(after, decision="refused", reason="circuit_open", agent="dave") == 1
    assert after[("webward_page_cache_hits_total", ())] == 1
    assert after[("webward_page_cache_misses_total", ())] == 3  # /page, /broken, ?uncached
    read = after[("webward_read_bytes_total", (("capability", fetch),))]
    assert read >= len(PAGE)
    latency = (
        "webward_call_duration_seconds_count",
        (("capability", fetch), ("decision", "allowed")),
    )
    assert after[latency] == 2
    assert after[("webward_audit_write_seconds_count", ())] == 4
    assert after[("webward_audit_queue_depth", ())] == 0
    assert after[("webward_conversions_in_flight", ())] == 0
    refusals = ("webward_host_refusals_total", (("host", "127.0.0.1"), ("reason", "circuit_open")))
    assert after[refusals] == 1
    assert after[("webward_breaker_open", (("host", "127.0.0.1"),))] == 1


@pytest.mark.anyio
async def test_call_duration_ends_where_the_audit_write_begins_as_its_help_says(
    tmp_path: Path, site: LocalServer
) -> None:
    """webward_call_duration_seconds times a call up to its audit write, which
    webward_audit_write_seconds times: its HELP says so, as docs/operations.md does (it said
    "audit write included")."""

    class SlowSink(MemoryAuditSink):
        async def write(self, record: Any) -> None:
            await anyio.sleep(0.5)
            await super().write(record)

    telemetry = Telemetry(metrics=True)
    async with web_for(loopback_settings(tmp_path), telemetry, audit=SlowSink()) as web:
        await web.fetch(site.url("/page"))
    assert telemetry.metrics is not None
    text = telemetry.metrics.exposition().decode()
    page = samples(text)
    call_s = sum(v for (name, _), v in page.items() if name == "webward_call_duration_seconds_sum")
    assert call_s < 0.5 <= page[("webward_audit_write_seconds_sum", ())]
    helps = {f.name: f.documentation for f in text_string_to_metric_families(text)}
    assert helps["webward_call_duration_seconds"] == (
        "How long calls took, up to their audit write (timed as webward_audit_write_seconds)."
    )


@pytest.mark.anyio
async def test_rate_limit_refusals_are_counted_per_host(tmp_path: Path, site: LocalServer) -> None:
    settings = loopback_settings(tmp_path).replace(
        {"limits": {"per_host_rate": 0.001, "per_host_burst": 1}, "policy": {"robots": False}}
    )
    telemetry = Telemetry(metrics=True)
    async with web_for(settings, telemetry) as web:
        await web.fetch(site.url("/page"))  # spends the only token
        with pytest.raises(Refused):
            await web.fetch(site.url("/page"), include_links=True)  # not cached: a new read
    assert telemetry.metrics is not None
    page = samples(telemetry.metrics.exposition().decode())
    key = ("webward_host_refusals_total", (("host", "127.0.0.1"), ("reason", "rate_limited")))
    assert page[key] == 1


def test_hosts_beyond_the_busiest_n_fold_into_other() -> None:
    hosts = _HostMetrics(top=2)
    for host, hops in (("a.example", 5), ("b.example", 4), ("c.example", 1), ("d.example", 1)):
        for _ in range(hops):
            hosts.hop(host, 200, None)
    for host in ("a.example", "c.example", "d.example"):
        hosts.refused(host, "rate_limited")
    hosts.refused("d.example", "circuit_open")
    got = {
        (m.name, tuple(sorted(s.labels.items()))): s.value
        for m in hosts.collect()
        for s in m.samples
    }
    labels = {dict(ls)["host"] for (_, ls) in got}
    assert labels == {"a.example", "b.example", "other"}
    assert got[("webward_host_refusals", (("host", "a.example"), ("reason", "rate_limited")))] == 1
    assert got[("webward_host_refusals", (("host", "other"), ("reason", "rate_limited")))] == 2
    assert got[("webward_breaker_open", (("host", "other"),))] == 1
    assert got[("webward_breaker_open", (("host", "a.example"),))] == 0


@pytest.mark.anyio
async def test_agents_beyond_the_label_bound_fold_into_other(tmp_path: Path) -> None:
    from webward._telemetry import MAX_AGENT_LABELS

    telemetry = Telemetry(metrics=True)
    async with web_for(loopback_settings(tmp_path), telemetry) as web:
        for i in range(MAX_AGENT_LABELS + 3):
            with pytest.raises(Exception):  # noqa: B017 - an invalid URL: refused, still counted
                await web.fetch("not a url", agent=f"agent-{i}")
    assert telemetry.metrics is not None
    page = samples(telemetry.metrics.exposition().decode())
    agents = {dict(ls)["agent"] for (name, ls) in page if name == "webward_calls_total"}
    assert len(agents) == MAX_AGENT_LABELS + 1
    assert calls(page, agent="other") == 3


@pytest.mark.anyio
async def test_an_unregistered_http_status_folds_into_its_class_as_a_label(
    tmp_path: Path,
) -> None:
    """A server may answer any three digits, and each failed read's reason (http_777) was a
    label value of its own per agent: a hostile site made hundreds of series at will, where
    the docs say reason is a fixed code. A status no registry knows is its class (http_7xx);
    the registered ones stay as they are, and the audit keeps the status as read."""

    def status(req: Request, sock: socket.socket) -> None:
        send(sock, int(req.path.rsplit("/", 1)[1]), b"x", "text/plain")

    telemetry = Telemetry(metrics=True)
    audit = MemoryAuditSink()
    settings = loopback_settings(
        tmp_path,
        policy={"default_tier": "connected", "robots": False},
        limits={"per_host_rate": 1000.0, "per_host_burst": 1000, "breaker_failures": 100},
    )
    with serve(routes={"*": status}) as site:
        async with web_for(settings, telemetry, audit=audit) as web:
            for code in (404, 503, 520, 599, 777, 778, 999):
                with pytest.raises(WebwardError):
                    await web.fetch(site.url(f"/s/{code}"))
    assert telemetry.metrics is not None
    page = samples(telemetry.metrics.exposition().decode())
    reasons = {
        dict(ls)["reason"]: v for (name, ls), v in page.items() if name == "webward_calls_total"
    }
    assert reasons == {"http_404": 1, "http_503": 1, "http_5xx": 2, "http_7xx": 2, "http_9xx": 1}
    assert "http_777" in {r.reason for r in audit.records}


@pytest.mark.anyio
async def test_a_refused_agent_name_is_one_label_value_and_no_escape_sequence(
    tmp_path: Path,
) -> None:
    """A library caller's agent name with an escape sequence or a bidi control is refused and
    audited as given; its label value was that name, raw on /metrics (valid Prometheus text,
    which a terminal reading `curl /metrics` ran), and one of the agents' label values each.
    Such names count as agent="invalid"; the audit keeps the name as given."""
    telemetry = Telemetry(metrics=True)
    audit = MemoryAuditSink()
    async with web_for(loopback_settings(tmp_path), telemetry, audit=audit) as web:
        for name in ("evil\x1b[2J", "rtl\u202etxt", "two\u2028lines"):
            with pytest.raises(webward.InvalidInput):
                await web.fetch("http://127.0.0.1:9/", agent=name)
    assert telemetry.metrics is not None
    text = telemetry.metrics.exposition().decode()
    assert "\x1b" not in text and "\u202e" not in text and "\u2028" not in text
    page = samples(text)
    assert {dict(ls)["agent"] for (name, ls) in page if name == "webward_calls_total"} == {
        "invalid"
    }
    assert calls(page, agent="invalid") == 3
    assert [r.agent for r in audit.records] == ["evil\x1b[2J", "rtl\u202etxt", "two\u2028lines"]


def auth_refusals(telemetry: Telemetry) -> dict[str, float]:
    """``webward_auth_refusals_total`` of ``telemetry``'s metrics, by reason."""
    assert telemetry.metrics is not None
    page = samples(telemetry.metrics.exposition().decode())
    return {
        dict(labels)["reason"]: value
        for (name, labels), value in page.items()
        if name == "webward_auth_refusals_total"
    }


def test_auth_refusals_are_counted_by_reason_from_zero_on_a_face_that_counts_them() -> None:
    """A request refused for its credentials names no agent, so it is no call and has no
    audit record: a counter of its own keeps them, by one of three reasons (a bounded label
    set). A face that counts them (the gateway) shows the three at zero from the start, so
    that the first refusal is seen by rate() and an alert; a face that does not is left
    without the series rather than shown a zero that would read as "no guessing here"."""
    telemetry = Telemetry(metrics=True)
    assert auth_refusals(telemetry) == {}
    telemetry.counts_auth_refusals()
    assert auth_refusals(telemetry) == {"missing": 0, "malformed": 0, "unknown": 0}
    for reason in ("unknown", "unknown", "missing"):
        telemetry.auth_refused(reason, "198.51.100.4")
    assert auth_refusals(telemetry) == {"missing": 1, "malformed": 0, "unknown": 2}
    Telemetry(metrics=False).auth_refused("unknown", "198.51.100.4")  # no metrics: logged only


def test_auth_refusal_lines_are_one_per_reason_per_quiet_period_with_the_rest_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A flood of refused credentials (a client guessing tokens, or an agent left with a
    rotated one) is one WARNING line per reason per quiet period on the ``webward`` logger;
    the next line of that reason says how many went unlogged since. The clock is the test's
    own: nothing sleeps, nothing is timed."""
    import logging

    from webward._telemetry import _AUTH_QUIET_S, _AuthRefusalLog

    now = [1000.0]
    said = _AuthRefusalLog(clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="webward")

    def lines() -> list[str]:
        found = [r for r in caplog.records if r.name == "webward" and "reason=" in r.getMessage()]
        assert all(r.levelno == logging.WARNING for r in found)
        return [r.getMessage() for r in found]

    for _ in range(50):
        said.refused("unknown", "198.51.100.4")
    said.refused("missing", "198.51.100.5")  # each reason has its own quiet period
    first, other = lines()
    assert "reason=unknown" in first and "198.51.100.4" in first and "more" not in first
    assert "reason=missing" in other and "198.51.100.5" in other
    now[0] += _AUTH_QUIET_S - 0.5  # still within the quiet period: counted, not logged
    said.refused("unknown", "198.51.100.4")
    assert len(lines()) == 2
    now[0] += 0.5
    said.refused("unknown", "203.0.113.9")
    third = lines()[2]
    assert "reason=unknown" in third and "203.0.113.9" in third
    assert "50 more" in third  # 49 of the flood and the one within the quiet period
    now[0] += _AUTH_QUIET_S
    said.refused("unknown", "203.0.113.9")
    assert "more" not in lines()[3]  # none held back since the last line


def test_an_auth_refusal_line_cannot_be_broken_by_the_client_address(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The address comes from the ASGI server; whatever it holds, the line stays one line."""
    import logging

    from webward._telemetry import _AuthRefusalLog

    caplog.set_level(logging.WARNING, logger="webward")
    _AuthRefusalLog(clock=lambda: 0.0).refused("malformed", "10.0.0.1\nreason=forged \x1b[2J")
    [record] = [r for r in caplog.records if "reason=" in r.getMessage()]
    message = record.getMessage()
    assert "\n" not in message and "\x1b" not in message
    assert message.count("reason=") == 1


async def _metrics_answer(
    endpoint: MetricsEndpoint,
    client: str,
    token: str | None,
    host: str = "127.0.0.1:8080",
    method: str = "GET",
    sent: list[dict[str, Any]] | None = None,
) -> int:
    """Drive the endpoint as ASGI with a given peer address: nothing is connected to."""
    headers = [(b"host", host.encode())]
    headers += [(b"authorization", f"Bearer {token}".encode())] if token else []
    scope = {"type": "http", "method": method, "path": "/metrics", "headers": headers,
             "client": (client, 40000)}  # fmt: skip
    sent = [] if sent is None else sent

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await endpoint(scope, receive, send)
    return int(sent[0]["status"])


@pytest.mark.anyio
async def test_metrics_are_loopback_only_unless_a_token_is_configured(tmp_path: Path) -> None:
    telemetry = Telemetry(metrics=True)
    open_ = MetricsEndpoint(loopback_settings(tmp_path), lambda: telemetry)
    assert await _metrics_answer(open_, "127.0.0.1", None) == 200
    assert await _metrics_answer(open_, "::1", None) == 200
    assert await _metrics_answer(open_, "10.1.2.3", None) == 403
    assert await _metrics_answer(open_, "::ffff:127.0.0.1", None) == 200
    for spoof in ("::1234:5678", "::1:0:0:0:1", "127.evil.example"):  # they start like loopback
        assert await _metrics_answer(open_, spoof, None) == 403, spoof
    guarded_settings = loopback_settings(
        tmp_path, observability={"metrics_token_sha256": hash_token("scrape-me")}
    )
    guarded = MetricsEndpoint(guarded_settings, lambda: telemetry)
    assert await _metrics_answer(guarded, "10.1.2.3", "scrape-me") == 200
    assert await _metrics_answer(guarded, "127.0.0.1", None) == 401
    assert await _metrics_answer(guarded, "127.0.0.1", "wrong") == 401
    # A guess at the metrics token was counted nowhere: it is a refused credential, as the
    # gateway's are (the token's right answers above count nothing).
    assert auth_refusals(telemetry) == {"missing": 1, "unknown": 1}
    off = MetricsEndpoint(loopback_settings(tmp_path), lambda: Telemetry(metrics=False))
    assert await _metrics_answer(off, "127.0.0.1", None) == 404


@pytest.mark.anyio
async def test_metrics_without_a_token_answer_only_a_request_for_this_machine(
    tmp_path: Path,
) -> None:
    """A loopback client asking under a name of its own (a page in the operator's browser,
    its name rebound to 127.0.0.1) is refused: only an address or localhost is this machine.
    A method other than GET is told which one to use."""
    telemetry = Telemetry(metrics=True)
    open_ = MetricsEndpoint(loopback_settings(tmp_path), lambda: telemetry)
    for host in ("127.0.0.1:9000", "localhost:8080", "LOCALHOST", "[::1]:8080", "10.0.0.5"):
        assert await _metrics_answer(open_, "127.0.0.1", None, host=host) == 200, host
    for host in ("attacker.example:8080", "attacker.example", "", "127.0.0.1.nip.io"):
        assert await _metrics_answer(open_, "127.0.0.1", None, host=host) == 403, host
    sent: list[dict[str, Any]] = []
    assert await _metrics_answer(open_, "127.0.0.1", None, method="POST", sent=sent) == 405
    assert (b"allow", b"GET") in sent[0]["headers"]


def test_the_gateway_serves_metrics_from_the_web_it_opens(tmp_path: Path) -> None:
    """create_app(settings) opens its own Web with server telemetry: metrics on by default."""
    settings = load(tmp_path)
    with TestClient(
        create_app(settings), base_url="http://localhost", client=("127.0.0.1", 5000)
    ) as http:
        response = http.get("/metrics")
    assert response.status_code == 200
    assert "# TYPE webward_calls_total counter" in response.text


@pytest.mark.anyio
async def test_mcp_http_serves_metrics_and_they_move(tmp_path: Path, site: LocalServer) -> None:
    async with mcp_over_http(tmp_path) as url:
        base = url.removesuffix("/mcp")
        async with httpx.AsyncClient(trust_env=False, timeout=20) as http:
            before = samples((await http.get(f"{base}/metrics")).text)
            async with Client(url, read_timeout_seconds=30) as client:
                result = await client.call_tool("web_fetch", {"url": site.url("/page")})
                assert not result.is_error
            after = samples((await http.get(f"{base}/metrics")).text)
    assert calls(before) == 0
    assert calls(after, capability="web:page.fetch@1", decision="allowed", agent="mcp") == 1


# ---- the call log -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_servers_log_one_json_line_per_call_with_the_audit_fields(
    tmp_path: Path, site: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = loopback_settings(tmp_path)
    audit = MemoryAuditSink()
    async with web_for(settings, Telemetry.for_settings(settings, server=True), audit=audit) as web:
        await web.fetch(site.url("/page"), agent="logger")
        with pytest.raises(Refused):
            await web.fetch(site.url("/private/x"), agent="logger")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    logged = [json.loads(line) for line in lines]
    for entry in logged:  # ids of the call's span, when an earlier test turned tracing on
        entry.pop("traceId", None), entry.pop("spanId", None)
    assert logged == [r.to_wire() for r in audit.records]
    assert [entry["decision"] for entry in logged] == ["allowed", "refused"]
    assert "SECRET-PAGE-TEXT" not in "".join(lines)


@pytest.mark.anyio
async def test_the_call_log_carries_the_trace_id_when_tracing(
    tmp_path: Path, site: LocalServer, spans: InMemorySpanExporter
) -> None:
    log = tmp_path / "calls.jsonl"
    settings = loopback_settings(tmp_path, observability={"call_log": str(log)})
    telemetry = Telemetry.for_settings(settings, server=False)
    async with web_for(settings, telemetry) as web:
        await web.fetch(site.url("/page"))
    telemetry.close()
    [entry] = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    call = one(spans, "web_fetch")
    assert entry["traceId"] == f"{call.context.trace_id:032x}"
    assert entry["target"] == site.url("/page")
    assert log.stat().st_mode & 0o777 == 0o600  # it holds what the audit log holds


@pytest.mark.anyio
async def test_the_call_log_hides_secret_query_values_and_keeps_one_line(
    tmp_path: Path, site: LocalServer
) -> None:
    """The call log leaves the process for a log pipeline, as a span does: a pre-signed URL a
    redirect led to had its credentials written in the clear (the span's url.full hid them),
    and a query's U+2028, NEL, C1 or bidi control was written raw (orjson does not escape
    them), so one record read as three lines and drove the terminal. The audit store keeps
    the URL as read."""
    secret = "/page?X-Amz-Credential=AKIAEXAMPLE&X-Amz-Signature=SIGX&part=2"
    site.routes["/signed"] = redirect(secret)
    log = tmp_path / "calls.jsonl"
    settings = loopback_settings(tmp_path, observability={"call_log": str(log)})
    telemetry = Telemetry.for_settings(settings, server=False)
    audit = MemoryAuditSink()
    async with web_for(settings, telemetry, audit=audit) as web:
        await web.fetch(site.url("/signed?access_token=TOKEN1"))
        with pytest.raises(WebwardError):
            await web.search("owls\u2028at\u0085night\u009b\u202e\u200f\u061c", limit=0)
    telemetry.close()
    text = log.read_text(encoding="utf-8")
    lines = text.splitlines()  # str.splitlines breaks at U+2028 and NEL too
    fetched, searched = (json.loads(line) for line in lines)
    assert fetched["target"] == site.url("/signed?access_token=REDACTED")
    assert fetched["finalUrl"] == site.url(
        "/page?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&part=2"
    )
    assert "AKIAEXAMPLE" not in text and "SIGX" not in text and "TOKEN1" not in text
    assert searched["target"] == "owls\u2028at\u0085night\u009b\u202e\u200f\u061c"  # escaped
    assert not set("\u2028\u0085\x9b\u202e\u200f\u061c") & set(text)
    assert audit.records[0].final_url == site.url(secret)


@pytest.mark.anyio
async def test_a_url_given_only_percent_encoded_has_its_secrets_hidden(tmp_path: Path) -> None:
    """A search query, or a message, whose only URL is percent-encoded (no plain "=" in the
    text: an agent pasting an encoded pre-signed URL, a proxy's path in a refusal) kept its
    secret values whole in the call log, the console and spans: the redaction of such text
    stopped at "no '=' here" before it looked for encoded pairs."""
    query = "owls https%3A%2F%2Fb.example%2Fa.pdf%3FX-Amz-Signature%3DSIGQ%26part%3D2"
    log = tmp_path / "calls.jsonl"
    settings = loopback_settings(tmp_path, observability={"call_log": str(log)})
    telemetry = Telemetry.for_settings(settings, server=False)
    async with web_for(settings, telemetry) as web:
        with pytest.raises(WebwardError):
            await web.search(query, limit=0)
    telemetry.close()
    [searched] = (json.loads(line) for line in log.read_text(encoding="utf-8").splitlines())
    assert searched["target"] == query.replace("SIGQ", "REDACTED")
    message = "refused: https://p.example/https%3A%2F%2Fh%2Fx%3Faccess_token%3DAT9 is denied"
    assert redact_message(message) == message.replace("AT9", "REDACTED")


@pytest.mark.anyio
async def test_the_call_log_writes_the_lines_of_a_burst_together(
    tmp_path: Path, site: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an asyncio loop the calls of a burst leave their records waiting (nothing is
    encoded or written during the call) and the flush writes all their lines in one write."""
    import webward._telemetry as telemetry_module

    monkeypatch.setattr(telemetry_module, "_CALL_LOG_DELAY_S", 3600.0)  # only flush() writes
    log = tmp_path / "calls.jsonl"
    settings = loopback_settings(tmp_path, observability={"call_log": str(log)})
    telemetry = Telemetry.for_settings(settings, server=True)
    writes: list[str] = []
    async with web_for(settings, telemetry) as web:
        stream: Any = telemetry._log._file  # type: ignore[union-attr]
        original = stream.write

        def counted(text: str) -> int:
            writes.append(text)
            return int(original(text))

        stream.write = counted
        for _ in range(3):
            await web.fetch(site.url("/page"))
        assert writes == []
        telemetry.flush()
    telemetry.close()
    assert len(writes) == 1  # one write for the three lines
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and all(json.loads(line)["decision"] == "allowed" for line in lines)


@pytest.mark.anyio
async def test_a_call_log_reader_that_stops_reading_holds_up_no_call(
    tmp_path: Path,
    site: LocalServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The call log goes to a pipe nobody reads (a log shipper under back-pressure): the
    calls still end, the writer thread waits alone, and past the bound the newest lines are
    dropped and counted rather than held. Once the reader reads, what was kept arrives."""
    import webward._telemetry as telemetry_module

    monkeypatch.setattr(telemetry_module, "_CALL_LOG_DELAY_S", 0.0)
    monkeypatch.setattr(telemetry_module, "_MAX_UNWRITTEN", 2)
    fifo = tmp_path / "calls.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    filler = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    for chunk in (65_536, 1):  # fill the pipe: any further write blocks
        with contextlib.suppress(BlockingIOError):
            while True:
                os.write(filler, b"x" * chunk)
    os.close(filler)
    settings = loopback_settings(tmp_path, observability={"call_log": str(fifo)})
    telemetry = Telemetry.for_settings(settings, server=True)
    received = bytearray()
    read_again, reading = threading.Event(), threading.Event()

    def drain() -> None:
        # Set when the calls are done; the timeout only keeps a regression (a write that
        # holds the event loop) from hanging the suite: it fails below instead.
        read_again.wait(30)
        reading.set()
        os.set_blocking(reader, True)
        while chunk := os.read(reader, 65_536):
            received.extend(chunk)

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    async with web_for(settings, telemetry) as web:
        for _ in range(5):
            await web.fetch(site.url("/page"))
            await anyio.sleep(0)  # the hand-over of this call's record runs
        stuck = not reading.is_set()  # the calls ended while nobody read the pipe
        log = telemetry._log
        assert log is not None and log._unwritten >= 1  # the writer waits on the full pipe
        read_again.set()  # the flush on closing can finish
    assert stuck
    telemetry.close()
    drainer.join(60)
    os.close(reader)
    lines = [json.loads(line) for line in received.lstrip(b"x").decode().splitlines()]
    dropped = [r for r in caplog.records if "the call log dropped" in r.getMessage()]
    assert lines and all(line["decision"] == "allowed" for line in lines)
    assert len(dropped) == 1 and len(lines) + dropped[0].args[0] == 5  # type: ignore[index]


@pytest.mark.anyio
async def test_a_call_that_loses_its_audit_is_logged_as_refused(
    tmp_path: Path, site: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = loopback_settings(tmp_path, observability={"call_log": "stderr"})
    telemetry = Telemetry.for_settings(settings, server=False)
    async with web_for(settings, telemetry, audit=MemoryAuditSink(broken=True)) as web:
        with pytest.raises(Refused):
            await web.fetch(site.url("/page"))
    [line] = capsys.readouterr().err.splitlines()
    entry = json.loads(line)
    assert (entry["decision"], entry["reason"]) == ("refused", "audit_unavailable")


@pytest.mark.anyio
@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
async def test_the_call_log_is_json_in_any_locale(
    tmp_path: Path, site: LocalServer, monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    """Under a locale whose stderr is not UTF-8 a line is still JSON and still UTF-8: what is
    past ASCII is escaped. An ASCII stderr wrote "caf\\xe9" (no JSON escape), a Latin-1 one
    the byte 0xE9 (no UTF-8): a log shipper lost those lines."""
    raw = io.BytesIO()
    stderr = io.TextIOWrapper(raw, encoding=encoding, errors="backslashreplace")
    monkeypatch.setattr(sys, "stderr", stderr)
    settings = loopback_settings(tmp_path, observability={"call_log": "stderr"})
    telemetry = Telemetry.for_settings(settings, server=False)
    async with web_for(settings, telemetry) as web:
        await web.fetch(site.url("/page?q=caf\u00e9-\U0001f600"))
    telemetry.close()
    stderr.flush()
    [entry] = [json.loads(line) for line in raw.getvalue().decode("utf-8").splitlines()]
    assert entry["target"].endswith("/page?q=caf\u00e9-\U0001f600")


def test_the_cli_logs_a_call_only_when_asked(
    tmp_path: Path, site: LocalServer, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    config = tmp_path / "webward.toml"
    config.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\ndefault_tier = "connected"\n'
        f"[state]\ndir = {json.dumps(str(tmp_path / 'state'))}\n",
        encoding="utf-8",
    )
    assert main(["fetch", site.url("/page"), "--config", str(config)]) == 0
    assert "{" not in capsys.readouterr().err
    monkeypatch.setenv("WEBWARD_CALL_LOG", "stderr")
    assert main(["fetch", site.url("/page"), "--config", str(config)]) == 0
    [line] = capsys.readouterr().err.splitlines()
    assert json.loads(line)["capability"] == "web:page.fetch@1"


@pytest.mark.parametrize(
    "command",
    [
        ["fetch", "PAGE"],
        ["search", "owls"],
        # no model is asked: the refusal comes first (nothing listens at port 9)
        [
            "ask",
            "Q?",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
    ],
)
def test_a_json_answer_is_alone_on_stdout_whatever_the_call_log(
    tmp_path: Path, site: LocalServer, command: list[str]
) -> None:
    """A call log at /dev/stdout (a gateway's container config reused at the command line)
    wrote its line before `--json`'s answer (fetch, search, ask): two JSON objects where a
    script reads one. The
    command refuses it, in its one JSON object, before any call; the MCP server likewise
    (tests/test_mcp.py)."""
    config = tmp_path / "webward.toml"
    config.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\ndefault_tier = "connected"\n',
        encoding="utf-8",
    )
    argv = [site.url("/page") if a == "PAGE" else a for a in command]
    run = subprocess.run(
        [sys.executable, "-m", "webward.cli", *argv, "--json", "--config", str(config)],
        env={**child_env(tmp_path), "WEBWARD_CALL_LOG": "/dev/stdout"},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert run.returncode == 2, run.stdout
    assert json.loads(run.stdout)["error"] == {
        "code": "invalid_input",
        "message": "the call log /dev/stdout is this command's stdout, which carries its JSON "
        "answer; set [observability] call_log (or WEBWARD_CALL_LOG) to stderr, off or a file",
    }
    assert site.accepts == 0


@pytest.mark.anyio
async def test_the_call_log_follows_its_file_through_a_rotation(tmp_path: Path) -> None:
    """logrotate's default renames the log and makes a new one: the lines after it went on
    into the renamed file, and nowhere once that was removed, while the new file stayed
    empty. The log opens the file at its path again when that is no longer the one open."""
    path = tmp_path / "calls.log"
    telemetry = Telemetry(call_log=str(path))

    async def calls(web: Web, count: int) -> None:
        for _ in range(count):
            with pytest.raises(WebwardError):
                await web.fetch("not a url", agent="rotated")
        telemetry.flush()

    async with web_for(loopback_settings(tmp_path), telemetry) as web:
        await calls(web, 2)
        path.rename(tmp_path / "calls.log.1")
        path.touch(mode=0o600)  # logrotate's `create`
        await calls(web, 3)
        assert len(path.read_text(encoding="utf-8").splitlines()) == 3
        assert len((tmp_path / "calls.log.1").read_text(encoding="utf-8").splitlines()) == 2
        (tmp_path / "calls.log.1").unlink()  # rotated away: the next file is made anew
        path.unlink()
        await calls(web, 1)
    telemetry.close()
    assert len(path.read_text(encoding="utf-8").splitlines()) == 1
    assert path.stat().st_mode & 0o777 == 0o600


def test_an_unwritable_call_log_is_one_sentence(tmp_path: Path) -> None:
    settings = loopback_settings(tmp_path, observability={"call_log": str(tmp_path / "no" / "x")})
    with pytest.raises(webward.InvalidInput, match="call log"):
        Telemetry.for_settings(settings, server=True)


def test_the_fetch_path_imports_no_tracing_or_metrics_library(tmp_path: Path) -> None:
    """With no OTEL_* variables, a Web is made and closed without importing OpenTelemetry or
    the Prometheus client: the command line's start-up does not pay for observability."""
    code = (
        "import sys, anyio\n"
        "from webward import Settings, Web\n"
        "async def main():\n"
        "    async with Web(Settings()):\n"
        "        pass\n"
        "anyio.run(main)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'opentelemetry', 'prometheus_client'}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(child_env(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_web_in_an_application_leaves_the_tracer_provider_to_it(tmp_path: Path) -> None:
    """OTEL_* variables set for the application's own tracing: a Web made before the
    application installs its tracer provider installed webward's SDK as the process's one (the
    application's was then refused, "Overriding of current TracerProvider is not allowed", and
    its spans went out as service "webward"), and with only the OpenTelemetry API installed
    Web() raised. A Web in an application installs nothing; its spans go to the provider the
    application installs. Never exported: the endpoint is a closed loopback port."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(child_env(tmp_path))
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{closed.getsockname()[1]}"
        later = (
            "import anyio, webward\n"
            "from opentelemetry import trace\n"
            "from opentelemetry.sdk.trace import TracerProvider\n"
            "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
            "from opentelemetry.sdk.trace.export.in_memory_span_exporter import (\n"
            "    InMemorySpanExporter)\n"
            "async def main():\n"
            "    async with webward.Web(webward.Settings()) as web:\n"
            "        exporter = InMemorySpanExporter()\n"
            "        mine = TracerProvider()\n"
            "        mine.add_span_processor(SimpleSpanProcessor(exporter))\n"
            "        trace.set_tracer_provider(mine)\n"
            "        print(trace.get_tracer_provider() is mine)\n"
            "        try:\n"
            "            await web.fetch('http://10.0.0.1/', agent='app')\n"
            "        except webward.Refused:\n"
            "            pass\n"
            "    print('web_fetch' in [s.name for s in exporter.get_finished_spans()])\n"
            "anyio.run(main)\n"
        )
        api_only = (
            "import sys\n"
            "sys.modules['opentelemetry.sdk'] = None  # the application has the API alone\n"
            "import anyio, webward\n"
            "async def main():\n"
            "    async with webward.Web(webward.Settings()):\n"
            "        pass\n"
            "anyio.run(main)\n"
            "print('made')\n"
        )
        runs = [
            subprocess.run(
                [sys.executable, "-c", code],
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,
            )
            for code in (later, api_only)
        ]
    assert runs[0].returncode == 0, runs[0].stderr
    assert runs[0].stdout.splitlines() == ["True", "True"], runs[0].stdout
    assert "Overriding" not in runs[0].stderr
    assert runs[1].returncode == 0, runs[1].stderr
    assert runs[1].stdout.strip() == "made"


def test_otel_variables_asking_for_an_unknown_exporter_are_one_sentence() -> None:
    from webward._telemetry import _exporters_asked

    assert _exporters_asked({}) == []
    assert _exporters_asked({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}) == ["otlp"]
    assert _exporters_asked({"OTEL_TRACES_EXPORTER": "none"}) == []
    assert _exporters_asked({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}) == []
    with pytest.raises(webward.InvalidInput, match="OTEL_TRACES_EXPORTER names 'zipkin'"):
        _exporters_asked({"OTEL_TRACES_EXPORTER": "zipkin"})


def test_a_failing_trace_exporter_line_names_no_collector_key(tmp_path: Path) -> None:
    """The exporter's failure line is urllib3's, naming the collector's URL with its query:
    a key there (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=...?api_key=) was printed whole on the
    command's stderr, a server's log. It is REDACTED as in a span's url.full; the rest of
    the line, which says what failed, stays."""
    with socket.socket() as closed:  # bound, never listening: every connection is refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        endpoint = f"http://127.0.0.1:{port}/v1/traces?api_key=COLLECTOR-KEY&region=eu"
        with serve() as site:
            site.routes["/page"] = respond(200, PAGE)
            done = _fetch_exporting_to(
                tmp_path, site, "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint
            )
    assert done.returncode == 0, done.stderr
    assert "COLLECTOR-KEY" not in done.stderr
    assert "/v1/traces?api_key=REDACTED&region=eu" in done.stderr, done.stderr


def test_collector_headers_the_exporter_cannot_read_are_refused_without_their_value(
    tmp_path: Path, site: LocalServer
) -> None:
    """ "Authorization: Bearer <token>" (a colon for the "=") is no header to the exporter: it
    logged the entry whole, so the collector's token reached the command's stderr (a server's
    log), and sent none. The command refuses it in one sentence naming the variable and the
    entry's place, never its value, before any call; a header it can read is sent."""
    site.routes["/page"] = respond(200, PAGE)
    done = _fetch_exporting_to(
        tmp_path,
        site,
        "http://127.0.0.1:9",
        OTEL_EXPORTER_OTLP_HEADERS="x-team=owls,Authorization: Bearer COLLECTOR-TOKEN",
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "webward: OTEL_EXPORTER_OTLP_HEADERS holds a header that is not name=value (entry 2 "
        "of 2); write each as name=value, the value URL-encoded (Authorization=Bearer%20TOKEN)\n"
    )
    assert site.accepts == 0
    _Receiver.got = []
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
        done = _fetch_exporting_to(
            tmp_path, site, endpoint, OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer%20T"
        )
    finally:
        receiver.shutdown()
        receiver.server_close()
    assert done.returncode == 0, done.stderr
    assert _Receiver.got


def test_a_failing_trace_exporter_is_said_once_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a command runs, only webward's own records reach stderr, and the trace
    exporter's failures (a collector down): one line a minute, not one a batch."""
    import logging

    from webward import cli

    monkeypatch.setattr(cli, "_exporter_said", [-cli._EXPORTER_QUIET_S])

    def record(name: str, level: int) -> logging.LogRecord:
        return logging.LogRecord(name, level, __file__, 1, "Failed to export batch", None, None)

    exporter = "opentelemetry.sdk._shared_internal"
    assert cli._own_records(record("webward.telemetry", logging.WARNING))
    assert cli._own_records(record(exporter, logging.ERROR))
    assert not cli._own_records(record(exporter, logging.ERROR))  # within the minute
    assert not cli._own_records(record("opentelemetry.context", logging.INFO))
    assert not cli._own_records(record("httpx", logging.WARNING))


def test_a_callers_malformed_tracestate_never_reaches_the_log_nor_silences_the_exporter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The OpenTelemetry API logs a malformed tracestate member as the caller sent it (a
    gateway header, an MCP request's _meta): an agent's escape sequences and forged lines
    reached the server's stderr, and took the minute's one line from the exporter's failure,
    which was then never said. Only the export pipeline's lines pass, one line each, with no
    control character and no traceback."""
    import logging

    from opentelemetry import propagate

    from webward import cli

    monkeypatch.setattr(cli, "_exporter_said", [-cli._EXPORTER_QUIET_S])
    shown: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            shown.append(self.format(record))

    handler = Collect(logging.WARNING)
    handler.addFilter(cli._own_records)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        propagate.extract(
            {
                "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01",
                "tracestate": "a=b,\n\x1b[31mFORGED webward: audit store disabled\x1b[0m",
            }
        )
        try:
            raise ConnectionError("the collector said \x1b[2Jno")
        except ConnectionError:
            logging.getLogger("opentelemetry.sdk._shared_internal").exception(
                "Exception while exporting %s.", "Span"
            )
    finally:
        root.removeHandler(handler)
    assert len(shown) == 1, shown
    assert shown[0] == (
        "Exception while exporting Span. (ConnectionError: the collector said \\x1b[2Jno)"
    )


@pytest.mark.anyio
async def test_the_call_log_hides_secret_values_of_a_url_searched_for(
    tmp_path: Path,
) -> None:
    """A query is free text, but an agent may search for a URL it was given, a pre-signed one
    included: the call log (and the console) have its secret values REDACTED, as they have a
    read's; the audit store keeps the query as asked, and a query's other "=" stay."""
    log = tmp_path / "calls.jsonl"
    settings = loopback_settings(tmp_path, observability={"call_log": str(log)})
    telemetry = Telemetry.for_settings(settings, server=False)
    audit = MemoryAuditSink()
    query = "https://bucket.example/o?X-Amz-Signature=SIGX&part=2 key=value nginx:1@sha256:0f"
    async with web_for(settings, telemetry, audit=audit) as web:
        with pytest.raises(WebwardError):
            await web.search(query)
    telemetry.close()
    [searched] = (json.loads(line) for line in log.read_text(encoding="utf-8").splitlines())
    assert (
        searched["target"]
        == "https://bucket.example/o?X-Amz-Signature=REDACTED&part=2 key=value nginx:1@sha256:0f"
    )
    assert audit.records[0].target == query
