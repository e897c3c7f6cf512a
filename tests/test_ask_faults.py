"""Faults an outside probe found in ``webward ask`` and the run loop, each pinned: the key in
vendor error text, the tool-result cap under a raised window, unaudited calls of unknown
tools, refusals and token-limit cuts, control sequences in the answer, Retry-After, base
URLs with a query or user info, --verbose timing, --json argument sizes, and the docs.

Everything runs against local fakes on loopback (fake_models, localserver)."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fake_models import ErrorReply, FakeModelAPI, anthropic_reply, fake_model_api, openai_reply
from localserver import LocalServer, respond, serve

from webward import Page, Settings, UpstreamError, Web, Window
from webward._credentials import mask
from webward._settings import AgentSettings
from webward.agents import (
    RESEARCH,
    UNKNOWN_TOOL,
    AnthropicClient,
    CallRecord,
    OpenAIClient,
    ToolContext,
    _http,
    run_agent,
)
from webward.cli import main

VENDORS = ["anthropic", "openai"]
KEY = "sk-SECRETKEY-abcdef0123456789"
VARIABLE = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model client's retries wait 10 ms rather than 1 s and 2 s: what the tests check is
    that they happen, and what a run says when they run out."""
    monkeypatch.setattr(_http, "_BACKOFF_S", 0.01)


def reply(vendor: str, text: str = "", calls: list[tuple[str, str, Any]] | None = None) -> Any:
    if vendor == "anthropic":
        return anthropic_reply(text, calls or [])
    return openai_reply(text or None, calls or [])


def client_for(fake: FakeModelAPI) -> AnthropicClient | OpenAIClient:
    cls = AnthropicClient if fake.vendor == "anthropic" else OpenAIClient
    return cls(fake.key, "fake-model", base_url=fake.base_url)


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config for loopback reads, and no credential of the machine's user."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("WEBWARD_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "webward.toml"
    path.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\ndefault_tier = "connected"\n'
        'robots = false\n[search]\nprovider = "none"\n',
        encoding="utf-8",
    )
    return path


def ask(vendor: str, fake: FakeModelAPI, config: Path, *extra: str) -> int:
    argv = ["ask", "Q?", "--provider", vendor, "--model", "m", "--base-url", fake.base_url]
    return main([*argv, "--config", str(config), *extra])


# ---- D1: the key never appears in a message ----------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize(
    ("status", "echo"),
    [
        (401, f"Incorrect API key provided: {KEY}. You can find your API key at https://x"),
        (401, f"Incorrect API key provided: {KEY[:20]}"),  # cut short by the vendor
        (403, f"key ...{KEY[5:]} is disabled"),  # a middle-to-end run
        (400, f"bad request for key={KEY}&x=1"),
        (429, f"Rate limit for {KEY}"),
    ],
)
async def test_a_vendor_message_echoing_the_key_is_repeated_without_it(
    vendor: str, status: int, echo: str
) -> None:
    """Any error text that repeats the key, or a long run of it, shows its masked form."""
    body = {"type": "error", "error": {"type": "authentication_error", "message": echo}}
    with fake_model_api(vendor, [ErrorReply(status, body)], key=KEY) as fake:
        async with client_for(fake) as client:
            with pytest.raises(UpstreamError) as caught:
                await run_agent(client, RESEARCH, "Q?", ToolContext(None, "research"))
    message = caught.value.message
    for i in range(len(KEY) - 8):
        assert KEY[i : i + 9] not in message, message
    assert mask(KEY) in message


@pytest.mark.parametrize("vendor", VENDORS)
def test_ask_prints_a_refused_key_masked(
    vendor: str,
    config: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(VARIABLE[vendor], KEY)
    failure = ErrorReply(401, {"error": {"message": f"Incorrect API key provided: {KEY}."}})
    with fake_model_api(vendor, [failure], key=KEY) as fake:
        code = ask(vendor, fake, config)
    out, err = capsys.readouterr()
    assert code == 1
    assert err == (
        f"webward: the {vendor} API refused the key (HTTP 401): Incorrect API key provided: "
        f"{mask(KEY)}; check {VARIABLE[vendor]}\n"
    )
    assert KEY[:10] not in out + err


# ---- D8: Retry-After --------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "said"),
    [("1e308", "retry in 60 min"), ("inf", "retry in 60 min"), ("7.2", "retry in 7.2 s")],
)
async def test_retry_after_is_capped_at_an_hour(value: str, said: str) -> None:
    failure = ErrorReply(429, {"error": {"message": "slow down"}}, {"Retry-After": value})
    with fake_model_api("openai", [failure]) as fake:
        async with client_for(fake) as client:
            with pytest.raises(UpstreamError) as caught:
                await run_agent(client, RESEARCH, "Q?", ToolContext(None, "research"))
    assert caught.value.message.endswith(f"(HTTP 429): slow down; {said}")
    assert caught.value.retry_after is not None and caught.value.retry_after <= 3600


# ---- D3: a raised window is never cut --------------------------------------------------------

BIG_PAGE = (
    "<html><body>"
    + "".join(f"<p>para {i} " + "x" * 200 + "</p>" for i in range(2000))
    + "</body></html>"
)


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with serve(routes={"/big": respond(200, BIG_PAGE), "/p": respond(200, "<p>hello</p>")}) as s:
        yield s


@pytest.mark.anyio
async def test_a_raised_window_reaches_the_model_whole(site: LocalServer, tmp_path: Path) -> None:
    """With [limits] max_fetch_text_chars = 200,000, a 200,000-character window goes to the
    model whole, envelope end marker included: the cap follows the window."""
    settings = Settings.load(
        None,
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected", "robots": False},
            "limits": {"max_fetch_text_chars": 200_000},
        },
        environ={"WEBWARD_STATE_DIR": str(tmp_path)},
    )
    agent = RESEARCH.for_settings(settings)
    script = [
        reply("openai", "", [("b", "web_fetch", {"url": site.url("/big")})]),
        reply("openai", "ok"),
    ]
    with fake_model_api("openai", script) as fake:
        async with Web(settings) as web, client_for(fake) as client:
            await run_agent(client, agent, "Read.", ToolContext(web, "research", "connected"))
    text = fake.messages(1)[-1]["content"]
    assert "pass offset=200000 to continue" in text
    assert text.rstrip().endswith(">>>") and "end-untrusted-web-content" in text[-200:]
    assert "webward cut" not in text


# ---- D5: every tool call is audited ---------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
async def test_calls_of_unknown_tools_are_audited(
    vendor: str, site: LocalServer, tmp_path: Path
) -> None:
    """shell_exec and WEB_FETCH (no such tools) are each one refused record of the
    unknown-tool capability, the requested name the target; the real read is one more."""
    from webward.testing import MemoryAuditSink

    audit = MemoryAuditSink()
    settings = Settings.load(
        None,
        {"network": {"allow_ranges": ["127.0.0.1/32"]}, "policy": {"robots": False}},
        environ={"WEBWARD_STATE_DIR": str(tmp_path)},
    )
    calls = [
        ("a", "shell_exec", {"cmd": "id"}),
        ("b", "WEB_FETCH", {"url": site.url("/p")}),
        ("c", "web_fetch", {"url": site.url("/p")}),
    ]
    with fake_model_api(vendor, [reply(vendor, "", calls), reply(vendor, "done")]) as fake:
        async with Web(settings, audit=audit) as web, client_for(fake) as client:
            result = await run_agent(
                client, RESEARCH, "Q?", ToolContext(web, "research", "connected")
            )
    assert [c.is_error for c in result.calls] == [True, True, False]
    records = sorted((r.capability, r.target, r.decision) for r in audit.records)
    assert records == [
        (UNKNOWN_TOOL, "WEB_FETCH", "refused"),
        (UNKNOWN_TOOL, "shell_exec", "refused"),
        ("web:page.fetch@1", site.url("/p"), "allowed"),
    ]


# ---- D6: refusals and token-limit cuts --------------------------------------------------------


def anthropic_stopped(stop: str, text: str = "") -> dict[str, Any]:
    return {**anthropic_reply(text), "stop_reason": stop}


def openai_finished(finish: str, text: str | None, refusal: str | None = None) -> dict[str, Any]:
    body = openai_reply(text)
    body["choices"][0]["finish_reason"] = finish
    body["choices"][0]["message"]["refusal"] = refusal
    return body


@pytest.mark.parametrize(
    ("vendor", "body", "message"),
    [
        (
            "anthropic",
            anthropic_stopped("refusal"),
            "webward: the anthropic model refused to answer\n",
        ),
        (
            "anthropic",
            anthropic_stopped("refusal", "I can't \x1b[31mhelp\x1b[0m with that."),
            "webward: the anthropic model refused to answer: I can't [31mhelp[0m with that.\n",
        ),
        (
            "openai",
            openai_finished("stop", None, "I can't help with that."),
            "webward: the openai model refused to answer: I can't help with that.\n",
        ),
        (
            "openai",
            openai_finished("content_filter", None),
            "webward: the openai model refused to answer\n",
        ),
    ],
)
def test_a_refusal_is_a_failure_in_one_sentence(
    vendor: str,
    body: dict[str, Any],
    message: str,
    config: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(VARIABLE[vendor], "k")
    with fake_model_api(vendor, [body], key="k") as fake:
        code = ask(vendor, fake, config)
    out, err = capsys.readouterr()
    assert (code, out, err) == (1, "", message)


@pytest.mark.parametrize(
    ("vendor", "body"),
    [
        ("anthropic", anthropic_stopped("max_tokens", "The answer is")),
        ("openai", openai_finished("length", "The answer is")),
    ],
)
def test_an_answer_cut_at_the_token_limit_says_so(
    vendor: str,
    body: dict[str, Any],
    config: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(VARIABLE[vendor], "k")
    with fake_model_api(vendor, [body, body], key="k") as fake:
        assert ask(vendor, fake, config) == 0
        text_out = capsys.readouterr().out
        assert ask(vendor, fake, config, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    note = "[cut: the model's answer reached its token limit (max_tokens) and is incomplete"
    assert text_out.startswith("The answer is\n\n" + note)
    assert data["cutAtTokenLimit"] is True and note in data["answer"]


@pytest.mark.anyio
async def test_an_empty_answer_says_so() -> None:
    with fake_model_api("anthropic", [anthropic_reply("")]) as fake:
        async with client_for(fake) as client:
            result = await run_agent(client, RESEARCH, "Q?", ToolContext(None, "research"))
    assert result.answer == "[the model ended the run without an answer]"
    assert result.cut_at_token_limit is False


# ---- D7: no control sequences reach the terminal ---------------------------------------------


def test_the_answer_is_printed_without_control_sequences(
    config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    answer = "ok \x1b]0;pwned\x07\x1b[2J\nline two\tcell\r\nthree\x9b1m"
    with fake_model_api("anthropic", [anthropic_reply(answer)], key="k") as fake:
        assert ask("anthropic", fake, config) == 0
    assert capsys.readouterr().out == "ok ]0;pwned[2J\nline two\tcell\nthree1m\n"


# ---- D9: base URLs that cannot be a base ------------------------------------------------


@pytest.mark.parametrize(
    ("suffix", "userinfo"),
    [("?api-version=2024-06-01", False), ("#x", False), ("?", False), ("", True)],
)
def test_a_base_url_with_a_query_fragment_or_user_info_is_refused(
    suffix: str,
    userinfo: bool,
    config: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with fake_model_api("openai", [openai_reply("ok")], key="k") as fake:
        base = fake.base_url + suffix
        if userinfo:
            base = base.replace("://", "://me:hunter2pw@")
        code = main(["ask", "Q", "--provider", "openai", "--model", "m", "--base-url", base,
                     "--config", str(config)])  # fmt: skip
        assert fake.bodies == []  # nothing was sent
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("webward: --base-url must not ") and err.count("\n") == 1
    assert "hunter2pw" not in err


def test_a_non_http_base_url_with_user_info_is_not_echoed(
    config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    for base in ("ftp://me:hunter2pw@x/", "me:hunter2pw@x/v1"):
        assert main(["ask", "Q", "--model", "m", "--base-url", base, "--config", str(config)]) == 2
        assert "hunter2pw" not in capsys.readouterr().err


# ---- D10: --verbose as each call completes -------------------------------------------------


class GatedWeb:
    """Reads of /slow wait until the record of the /fast read has been handed to on_call:
    only a loop that reports each call as it completes can finish."""

    def __init__(self) -> None:
        self.fast_reported = anyio.Event()

    async def fetch(self, url: str, offset: int = 0, *args: Any, **kwargs: Any) -> Page:
        if url.endswith("/slow"):
            await self.fast_reported.wait()
        return Page(url, url, 200, "", "text/html", "TEXT", Window(0, 4, 4, None), False, "t")

    async def search(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")


@pytest.mark.anyio
async def test_on_call_sees_each_call_as_it_completes() -> None:
    web = GatedWeb()
    seen: list[str] = []

    def on_call(record: CallRecord) -> None:
        assert record.arguments is not None
        seen.append(record.arguments["url"])
        if record.arguments["url"].endswith("/fast"):
            web.fast_reported.set()

    calls = [
        ("s", "web_fetch", {"url": "https://a.example/slow"}),
        ("f", "web_fetch", {"url": "https://a.example/fast"}),
    ]
    with fake_model_api("anthropic", [anthropic_reply("", calls), anthropic_reply("ok")]) as fake:
        async with client_for(fake) as client:
            with anyio.fail_after(10):
                result = await run_agent(
                    client, RESEARCH, "Q?", ToolContext(web, "research"), on_call=on_call
                )
    assert seen == ["https://a.example/fast", "https://a.example/slow"]
    assert [c.id for c in result.calls] == ["s", "f"]  # the run's record keeps call order


# ---- D11: --json does not repeat huge arguments -------------------------------------------


def test_long_argument_values_are_cut_in_the_wire_record() -> None:
    record = CallRecord(
        1,
        "c",
        "web_search",
        {"query": "q" * 100_000, "allowed_domains": [f"d{i}.example" for i in range(1000)]},
        "error: too long",
        True,
    )
    wire = record.to_wire()["arguments"]
    assert wire["query"] == "q" * 300 + "… [99,700 more characters cut]"
    assert wire["allowed_domains"][-1] == "[980 more items cut]"
    assert len(wire["allowed_domains"]) == 21
    assert len(json.dumps(wire)) < 2000
    # The model chooses the name and the id too, and a refusal's summary repeats the name.
    named = CallRecord(1, "i" * 50_000, "n" * 100_000, None, "unknown tool " + "n" * 100_000, True)
    shown = named.to_wire()
    assert shown["name"] == "n" * 300 + "… [99,700 more characters cut]"
    assert shown["id"].endswith("… [49,700 more characters cut]")
    assert len(shown["summary"]) < 1100


def test_ask_json_is_small_when_the_model_sends_huge_arguments(
    config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    script = [
        openai_reply(None, [("c", "web_fetch", {"url": "https://a.example/" + "a" * 100_000})]),
        openai_reply("done"),
    ]
    with fake_model_api("openai", script, key="k") as fake:
        assert ask("openai", fake, config, "--json") == 0
    out = capsys.readouterr().out
    data = json.loads(out)
    assert data["toolCalls"][0]["arguments"]["url"].endswith("… [99,718 more characters cut]")
    assert len(out) < 3000


# ---- D12: --json errors, docs and --help --------------------------------------------------


def test_ask_json_model_failure_is_a_json_error_on_stdout(
    config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As every command's --json: the error object on stdout, exit 1."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    failure = ErrorReply(529, {"error": {"message": "Overloaded"}})
    with fake_model_api("anthropic", [failure], key="k") as fake:
        assert ask("anthropic", fake, config, "--json") == 1
    assert json.loads(capsys.readouterr().out) == {
        "error": {
            "code": "upstream_error",
            "message": "the anthropic API failed (HTTP 529): Overloaded; try again later",
        }
    }


def test_the_docs_usage_names_every_option_of_ask() -> None:
    from webward import _cmd_ask

    parser = argparse.ArgumentParser()
    _cmd_ask.add_arguments(parser)
    docs = (Path(__file__).parent.parent / "docs" / "agents.md").read_text(encoding="utf-8")
    usage = re.search(r"```\nwebward ask .*?```", docs, re.S)
    assert usage is not None
    options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    options.remove("--help")
    assert [o for o in options if o not in usage.group(0)] == []
    for text in ("600 s", "50,000", "cutAtTokenLimit", "refused to answer"):
        assert text in docs and text in _cmd_ask.DESCRIPTION


# ---- D2: an [agents.research] entry without a tier ----------------------------------------


def test_an_agent_entry_without_a_tier_keeps_the_research_default() -> None:
    settings = Settings().replace({"agents": {"research": {"provenance": "session"}}})
    assert isinstance(settings.agents["research"], AgentSettings)
    assert RESEARCH.tier_for(settings) == "connected"


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_failure_worth_retrying_is_retried_and_a_run_goes_on(vendor: str) -> None:
    """As the vendors' SDKs do: an overloaded API (529) and a rate limit that says to wait
    1 s are tried again, and the run answers; a wait longer than the client waits (7 s) is
    the caller's, named in the message, after one try."""
    overloaded = ErrorReply(529, {"error": {"message": "Overloaded"}}, persists=False)
    wait = ErrorReply(429, {"error": {"message": "slow"}}, {"Retry-After": "0.05"}, persists=False)
    with fake_model_api(vendor, [overloaded, wait, reply(vendor, "The answer.")]) as fake:
        async with client_for(fake) as client:
            result = await run_agent(client, RESEARCH, "Q?", ToolContext(None, "research"))
    assert result.answer == "The answer." and len(fake.bodies) == 3
    longer = ErrorReply(429, {"error": {"message": "slow"}}, {"Retry-After": "7"})
    with fake_model_api(vendor, [longer]) as fake:
        async with client_for(fake) as client:
            with pytest.raises(UpstreamError, match="retry in 7 s"):
                await run_agent(client, RESEARCH, "Q?", ToolContext(None, "research"))
    assert len(fake.bodies) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("vendor", VENDORS)
async def test_numbers_past_a_float_never_reach_a_tool_the_output_or_the_next_request(
    vendor: str, site: LocalServer
) -> None:
    """A model's tool call with 1e400 (infinity as a float) or NaN: the tool refuses the
    argument in one sentence, and the next request carries no Infinity (which is no JSON)."""
    calls = [("c1", "web_fetch", {"url": site.url("/p"), "offset": "__BIG__"})]
    first = json.dumps(reply(vendor, "", calls)).replace('"__BIG__"', "1e400").encode()
    with fake_model_api(vendor, [ErrorReply(200, first), reply(vendor, "Done.")]) as fake:
        settings = Settings().replace(
            {"network": {"allow_ranges": ["127.0.0.1/32"]}, "policy": {"default_tier": "connected"}}
        )
        async with Web(settings) as web, client_for(fake) as client:
            result = await run_agent(client, RESEARCH, "Q?", ToolContext(web, "research"))
    assert result.answer == "Done."
    (call,) = result.calls
    assert call.is_error and "offset" in call.summary
    second = json.dumps(fake.bodies[1], allow_nan=False)  # raises on Infinity or NaN
    assert "1e400" in second or "offset" in second


def test_ask_with_an_audit_log_it_cannot_write_refuses_before_any_model_call(
    config: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every read would be refused unaudited-able, and the model would answer from nothing
    (and be told the operator's paths): the run is refused before it starts, exit 3, and
    the model API is never called."""
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the state dir should be", encoding="utf-8")
    monkeypatch.setenv("WEBWARD_STATE_DIR", str(blocked / "state"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    with fake_model_api(
        "anthropic", [reply("anthropic", "An answer from nothing.")], key="k"
    ) as fake:
        assert ask("anthropic", fake, config, "--json") == 3
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "refused" and "audit" in error["message"]
    assert fake.bodies == []


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--tier", "root"], "--tier must be one of as-owner, connected, full"),
        (["--max-turns", "abc"], "--max-turns must be a whole number, 1 to 100"),
        (["--max-turns", "100000"], "--max-turns must be a whole number, 1 to 100"),
        (["--max-tokens", "-5"], "--max-tokens must be a whole number, at least 1"),
        (["--provider", "gemini"], "--provider must be anthropic or openai"),
        # An empty model was sent as "" (the API refused it once the run had begun).
        (["--model", " "], "--model must not be empty: name the model the API expects"),
    ],
)
def test_ask_options_with_json_are_json_errors(
    config: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    said: str,
) -> None:
    """A bad option is one sentence in the JSON error shape, as every command's input is,
    not argparse's usage text; nothing is sent."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    with fake_model_api("anthropic", [], key="k") as fake:
        assert main(["ask", "Q?", "--model", "m", "--base-url", fake.base_url,
                     "--config", str(config), "--json", *extra]) == 2  # fmt: skip
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "invalid_input" and error["message"].startswith(said)
    assert fake.bodies == []
