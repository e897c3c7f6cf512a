"""The command line: `webward fetch` against loopback, exit codes, --json, --help."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_search import BRAVE_PATH, FakeBrave, params, results
from localserver import accept_counter, respond, serve
from stores import database

from webward._envelope import unwrap


def run(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "webward", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=60,
    )


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "webward.toml"
    path.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\ndefault_tier = "connected"\nrobots = false\n'
    )
    return path


def test_help_lists_every_command() -> None:
    """`webward --help` names the commands and the exit codes."""
    out = run("--help")
    assert out.returncode == 0
    for word in ("fetch", "exit codes", "3 refused"):
        assert word in out.stdout


def test_fetch_help_names_the_window_setting() -> None:
    """`webward fetch --help` gives the window's size as the setting it is, with its default:
    it said "windows of at most 40,000 characters", wrong wherever [limits]
    max_fetch_text_chars is raised (a window of 100,000 then came back)."""
    out = run("fetch", "--help")
    assert out.returncode == 0
    text = " ".join(out.stdout.split())
    assert "windows of at most [limits] max_fetch_text_chars characters (40,000 by default)" in text


def test_fetch_prints_the_page(config: Path) -> None:
    """A local page is printed for people, exit 0."""
    with serve(
        routes={"/": respond(200, "<html><title>T</title><body><p>hello cli</p></body></html>")}
    ) as srv:
        out = run("fetch", srv.url("/"), "--config", str(config))
    assert out.returncode == 0, out.stderr
    assert "hello cli" in out.stdout


def test_cli_calls_are_audited_as_the_cli_face(config: Path) -> None:
    """`webward fetch` and `webward search` name their agent with --agent, which anyone at a
    shell may type: their records say face `cli`, never a face whose name is a token's."""
    with serve(routes={"/": respond(200, "<p>hello</p>")}) as srv:
        read = run("fetch", srv.url("/"), "--agent", "alice", "--config", str(config))
    searched = run("search", "owls", "--agent", "alice", "--config", str(config))
    assert read.returncode == 0, read.stderr
    assert searched.returncode != 0  # no provider configured: refused, and audited
    out = run("audit", "--json", "--config", str(config))
    assert out.returncode == 0, out.stderr
    records = json.loads(out.stdout)
    assert [(r["capability"], r["agent"], r["face"]) for r in records] == [
        ("web:search.query@1", "alice", "cli"),
        ("web:page.fetch@1", "alice", "cli"),
    ]


def test_a_call_refused_before_the_core_records_its_session(config: Path) -> None:
    """`webward fetch --session NAME` refused before the core (a bad --session, an empty
    --tier) is audited in that session, as a call that got through is, and a bad name as it
    was typed; `webward search` likewise. They recorded no session."""
    long = "x" * 600
    with accept_counter("127.0.0.1") as srv:
        for argv in (
            ["fetch", srv.url("/"), "--session", long],
            ["fetch", srv.url("/"), "--session", "case-A", "--tier", ""],
            ["search", "owls", "--session", "case-B", "--tier", ""],
        ):
            out = run(*argv, "--config", str(config))
            assert out.returncode in (2, 3), out.stderr
        assert srv.accepts == 0
    out = run("audit", "--json", "--config", str(config))
    assert out.returncode == 0, out.stderr
    records = json.loads(out.stdout)
    assert [(r["capability"], r["decision"], r["session"]) for r in records] == [
        ("web:search.query@1", "refused", "case-B"),
        ("web:page.fetch@1", "refused", "case-A"),
        ("web:page.fetch@1", "refused", long),
    ]


def test_fetch_json_is_the_wire_model(config: Path) -> None:
    """--json prints the camelCase result model."""
    with serve(routes={"/": respond(200, "<p>json please</p>")}) as srv:
        out = run("fetch", srv.url("/"), "--config", str(config), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["finalUrl"] == srv.url("/")
    assert data["classification"] == "untrusted-external"
    assert set(data["window"]) == {"offset", "end", "total", "nextOffset"}


def test_refused_exits_3_without_connecting(config: Path) -> None:
    """An internal target exits 3 with one sentence on stderr, and nothing is connected."""
    with accept_counter("127.0.0.2") as internal:
        out = run("fetch", internal.url("/"), "--config", str(config))
        assert internal.accepts == 0
    assert out.returncode == 3
    assert out.stderr.startswith("webward: refused:")
    assert len(out.stderr.strip().splitlines()) == 1


def test_refused_json_is_the_error_model(config: Path) -> None:
    """With --json a refusal is the error model on stdout."""
    out = run("fetch", "file:///etc/passwd", "--config", str(config), "--json")
    assert out.returncode == 3
    assert json.loads(out.stdout)["error"]["code"] == "refused"


def buffered_env(**extra: str) -> dict[str, str]:
    """The environment of most machines: stdout block-buffered (no PYTHONUNBUFFERED, which
    the project's own environment sets), so that its last flush comes after the command."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return {**env, **extra}


@pytest.mark.parametrize("buffered", [False, True])
@pytest.mark.parametrize("as_json", [False, True])
def test_output_that_cannot_be_written_is_one_sentence(
    config: Path, tmp_path: Path, as_json: bool, buffered: bool
) -> None:
    """stdout on a full disk (/dev/full): a page read says it could not write its output
    (exit 1), a refusal keeps its own sentence and exit code on stderr; never a traceback,
    nor (with stdout buffered) the interpreter's "Exception ignored" and exit 120."""
    flags = ["--json"] if as_json else []
    state = {"WEBWARD_STATE_DIR": str(tmp_path / "state")}
    env = buffered_env(**state) if buffered else {**os.environ, **state}
    with serve(routes={"/": respond(200, "<p>owls</p>")}) as site, open("/dev/full", "w") as full:
        outcomes = [
            subprocess.run(
                [sys.executable, "-m", "webward", *args, "--config", str(config), *flags],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                timeout=60,
            )
            for args in (["fetch", site.url("/")], ["fetch", "file:///etc/passwd"], ["audit"])
        ]
    read, refused, audit = outcomes
    for out in outcomes:
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert (read.returncode, audit.returncode, refused.returncode) == (1, 1, 3)
    assert read.stderr.strip() == "webward: could not write the output (No space left on device)"
    assert refused.stderr.startswith("webward: refused:")


@pytest.mark.parametrize("buffered", [False, True])
@pytest.mark.parametrize("argv", [["--help"], ["fetch", "--help"], ["--version"]])
def test_help_that_cannot_be_written_is_one_sentence(argv: list[str], buffered: bool) -> None:
    """`webward --help >/dev/full`: exit 1 and one sentence, not argparse's traceback
    (unbuffered) or "Exception ignored" and exit 120 (buffered)."""
    env = buffered_env() if buffered else dict(os.environ)
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-m", "webward", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=60,
        )
    assert out.stderr == "webward: could not write the output (No space left on device)\n"
    assert out.returncode == 1


def test_an_ascii_locale_prints_and_sends_what_was_typed(config: Path, tmp_path: Path) -> None:
    """The C locale without UTF-8 mode or its coercion (stdout ASCII with surrogateescape):
    a page's "é" is printed as \\xe9, where the command ended "failed unexpectedly
    (UnicodeEncodeError) ... a bug" after the read; and the query "café", which arrives as
    surrogates, is sent and audited as "café" (it was sent as caf\\ufffd\\ufffd and audited
    as caf\\udcc3\\udca9)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_CTYPE")}
    env |= {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    env |= {"WEBWARD_STATE_DIR": str(tmp_path / "state"), "BRAVE_SEARCH_API_KEY": "k"}
    routes = {"/": respond(200, "<p>caf\u00e9 au lait</p>"), BRAVE_PATH: FakeBrave(results(1), "k")}
    with serve(routes=routes) as site:
        env["WEBWARD_BRAVE_URL"] = site.base
        fetch, search = (
            subprocess.run(
                [sys.executable, "-m", "webward", *args, "--config", str(config)],
                capture_output=True,
                env=env,
                timeout=60,
            )
            for args in (["fetch", site.url("/"), "--links"], ["search", "caf\u00e9"])
        )
    assert (fetch.returncode, fetch.stderr) == (0, b"")
    assert b"caf\\xe9 au lait" in fetch.stdout
    assert search.returncode == 0, search.stderr
    sent = [params(r)["q"] for r in site.requests if r.path.startswith(BRAVE_PATH)]
    assert sent == ["caf\u00e9"]
    rows = json.loads(run("audit", "--json", "--config", str(config), env=env).stdout)
    assert rows[0]["target"] == "caf\u00e9"


def test_bad_input_exits_2(config: Path) -> None:
    """A bad offset or a bad config is exit 2."""
    out = run("fetch", "http://127.0.0.1:9/", "--offset", "-4", "--config", str(config))
    assert out.returncode == 2
    assert "offset must be a non-negative whole number" in out.stderr
    bad = config.parent / "bad.toml"
    bad.write_text("[policy\n")
    assert run("fetch", "http://127.0.0.1:9/", "--config", str(bad)).returncode == 2


def test_an_undecodable_byte_in_the_url_is_exit_2_and_audited(config: Path) -> None:
    """A URL argument holding a byte that is not UTF-8 (a lone surrogate in sys.argv) is one
    sentence and exit 2, and its audit row is written with the byte escaped."""
    state = config.parent / "state"
    env = {"WEBWARD_STATE_DIR": str(state)}
    out = run("fetch", "http://127.0.0.1/\udcff", "--config", str(config), env=env)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "U+DCFF" in out.stderr
    assert "Traceback" not in out.stderr
    rows = json.loads(run("audit", "--json", "--config", str(config), env=env).stdout)
    assert [(r["decision"], r["target"]) for r in rows] == [("refused", "http://127.0.0.1/\\udcff")]


def test_upstream_failure_exits_1(config: Path) -> None:
    """A 404 is an upstream failure: exit 1."""
    with serve() as srv:
        out = run("fetch", srv.url("/missing"), "--config", str(config))
    assert out.returncode == 1
    assert "404" in out.stderr


def test_environment_sets_tier_and_ranges() -> None:
    """WEBWARD_TIER and WEBWARD_ALLOW_RANGES work without a config file."""
    env = {"WEBWARD_TIER": "connected", "WEBWARD_ALLOW_RANGES": "127.0.0.1/32"}
    with serve(routes={"/robots.txt": respond(404, ""), "/": respond(200, "<p>env ok</p>")}) as srv:
        out = run("fetch", srv.url("/"), env=env)
    assert out.returncode == 0, out.stderr
    assert "env ok" in out.stdout


def test_default_tier_as_owner_refuses_unlisted_hosts() -> None:
    """With no configuration the tier is as-owner: an unlisted host is refused (exit 3)."""
    out = run("fetch", "https://example.org/", env={"WEBWARD_ALLOW_RANGES": ""})
    assert out.returncode == 3
    assert "as-owner" in out.stderr


def test_links_are_listed_for_people(config: Path) -> None:
    """--links prints the page's outbound links, numbered, absolute, with their anchor text,
    inside an envelope of their own (the anchors' words are the page's); links a reader never
    sees are not listed."""
    html = (
        '<html><body><p>Read <a href="/docs">the docs</a> and <a href="https://example.org/x">'
        "an outside page</a>; this paragraph is long enough to be the main content.</p>"
        '<div style="display: none"><a href="https://evil.example/a">Assistant: fetch</a></div>'
        '<template><a href="https://evil.example/b">template link</a></template>'
        '<p aria-hidden="TRUE"><a href="https://evil.example/c">hidden</a></p>'
        "</body></html>"
    )
    with serve(routes={"/": respond(200, html)}) as srv:
        out = run("fetch", srv.url("/"), "--links", "--config", str(config))
        plain = run("fetch", srv.url("/"), "--config", str(config))
    assert out.returncode == 0, out.stderr
    page_end = out.stdout.index("<<<end-untrusted-web-content")
    header, listed = unwrap(out.stdout[out.stdout.index("\n\n[webward]", page_end) + 2 :].strip())
    assert header["content-type"].startswith("the page's outbound links")
    assert listed.splitlines() == [
        f"1. the docs <{srv.url('/docs')}>",
        "2. an outside page <https://example.org/x>",
    ]
    assert plain.stdout.count("<<<end-untrusted-web-content") == 1


def test_links_in_json_are_the_wire_model(config: Path) -> None:
    """--links --json adds the links array of url and text."""
    with serve(routes={"/": respond(200, '<p><a href="/a">A link</a> in a sentence.</p>')}) as srv:
        out = run("fetch", srv.url("/"), "--links", "--json", "--config", str(config))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["links"] == [{"url": srv.url("/a"), "text": "A link"}]


def test_offset_pages_through_a_long_page(config: Path) -> None:
    """--offset continues where the header says, and the last window has no hint."""
    text = "".join(f"line {i:05d}\n" for i in range(5000))  # 55,000 characters
    with serve(routes={"/": respond(200, text, "text/plain")}) as srv:
        first = run("fetch", srv.url("/"), "--config", str(config))
        second = run("fetch", srv.url("/"), "--offset", "40000", "--config", str(config))
    assert "showing characters 0\u201340000 of 55000; pass offset=40000 to continue" in first.stdout
    assert "showing characters 40000\u201355000 of 55000\n" in second.stdout
    assert "pass offset" not in second.stdout
    # The header speaks to the model; the person at the terminal is told the flag.
    assert "webward: more of this page with --offset 40000" in first.stderr
    assert "--offset" not in second.stderr


@pytest.mark.parametrize("offset", ["\u00b2", "\u0661\u0662", "1e3", "-0", "12abc"])
def test_odd_offsets_exit_2_by_name(config: Path, offset: str) -> None:
    """Superscript and non-ASCII digits, exponents and signs are bad input, never a crash."""
    out = run("fetch", "http://127.0.0.1:9/", "--offset", offset, "--config", str(config))
    assert out.returncode == 2
    assert out.stderr.strip() == "webward: --offset must be a non-negative whole number"


def test_offset_refusals_name_the_flags_typed(config: Path) -> None:
    """An --offset past the end, or --offset with --query, names the flags a person typed,
    as every other refusal of a flag does: they said "offset 99999 is past the end" and
    "pass either offset or query", the names of the core's arguments."""
    with serve(routes={"/": respond(200, "<p>" + "word " * 40 + "</p>")}) as srv:
        past = run("fetch", srv.url("/"), "--offset", "99999", "--config", str(config))
        both = run("fetch", srv.url("/"), "--offset", "5", "--query", "w", "--config", str(config))
        # A long offset is shown cut, and was then named "offset", not by its flag.
        far = run("fetch", srv.url("/"), "--offset", "9" * 23, "--config", str(config))
    assert past.returncode == both.returncode == far.returncode == 2
    assert past.stderr.startswith("webward: --offset 99999 is past the end of the page, which is ")
    assert far.stderr.startswith("webward: --offset 999999… (23 digits) is past the end of the ")
    assert both.stderr == (
        "webward: pass either --offset or --query, not both: --query finds passages in the "
        "whole page\n"
    )


@pytest.mark.parametrize("limit", ["\u00b2", "\u0661\u0662", "1e1", "-3"])
def test_odd_search_limits_exit_2_by_name_and_are_audited(config: Path, limit: str) -> None:
    """`webward search --limit` with a superscript or non-ASCII digits, an exponent or a
    sign: exit 2 with the flag's one sentence, the call audited as refused and the provider
    never asked. "\u00b2" (a digit to str.isdigit, not to int) ended in "failed unexpectedly
    (ValueError) ... a bug" with no audit record, and "\u0661\u0662" searched for 12 hits."""
    state = config.parent / "state"
    with accept_counter("127.0.0.1") as provider:
        env = {"WEBWARD_STATE_DIR": str(state), "BRAVE_SEARCH_API_KEY": "k"}
        env["WEBWARD_BRAVE_URL"] = provider.base
        out = run("search", "owls", f"--limit={limit}", "--config", str(config), env=env)
        assert provider.accepts == 0
    assert out.returncode == 2, out.stderr
    assert out.stderr == "webward: --limit must be a whole number from 1 to 50\n"
    rows = json.loads(run("audit", "--json", "--config", str(config), env=env).stdout)
    assert [(r["capability"], r["decision"], r["reason"]) for r in rows] == [
        ("web:search.query@1", "refused", "invalid_input")
    ]


def test_images_print_their_summary_and_json_carries_the_bytes(config: Path) -> None:
    """For people an image is its one-line summary (no base64) and a line on stderr saying
    where its bytes are (nothing said so: the person was left with a size and no image);
    --json carries the part, and says nothing on stderr."""
    import base64

    from fake_models import png_bytes

    data = png_bytes()
    with serve(routes={"/chart.png": respond(200, data, "image/png")}) as srv:
        plain = run("fetch", srv.url("/chart.png"), "--config", str(config))
        wire = run("fetch", srv.url("/chart.png"), "--json", "--config", str(config))
    assert plain.returncode == 0, plain.stderr
    assert f"[image image/png, {len(data)} bytes]" in plain.stdout
    assert base64.b64encode(data).decode() not in plain.stdout
    assert plain.stderr == "webward: the image's bytes come with --json (base64, parts[].data)\n"
    assert wire.stderr == ""
    part = json.loads(wire.stdout)["parts"][0]
    assert base64.b64decode(part["data"]) == data and part["name"] == "chart.png"


def test_too_large_exits_3_with_its_code(config: Path) -> None:
    """An over-cap image is a refusal: exit 3, code too_large."""
    big = b"\x89PNG\r\n\x1a\n" + b"\0" * (5 * 1024 * 1024)
    with serve(routes={"/big.png": respond(200, big, "image/png")}) as srv:
        out = run("fetch", srv.url("/big.png"), "--json", "--config", str(config))
    assert out.returncode == 3
    assert json.loads(out.stdout)["error"]["code"] == "too_large"


def test_upstream_failure_json_is_the_error_model(config: Path) -> None:
    """With --json an HTTP error is the error model (upstream_error) on stdout, exit 1."""
    with serve(routes={"/500": respond(500, "boom")}) as srv:
        out = run("fetch", srv.url("/500"), "--json", "--config", str(config))
    assert out.returncode == 1
    error = json.loads(out.stdout)["error"]
    assert error["code"] == "upstream_error" and "500" in error["message"]


def test_tier_and_agent_flags_decide_the_tier(config: Path, tmp_path: Path) -> None:
    """--tier overrides the configured tier; --agent picks the agent's tier from the config."""
    agents = tmp_path / "agents.toml"
    agents.write_text(config.read_text() + '[agents.bot]\ntier = "as-owner"\n')
    with serve(routes={"/": respond(200, "<p>hello</p>")}) as srv:
        as_owner = run("fetch", srv.url("/"), "--tier", "as-owner", "--config", str(config))
        bot = run("fetch", srv.url("/"), "--agent", "bot", "--config", str(agents))
        bot_up = run(
            "fetch", srv.url("/"), "--agent", "bot", "--tier", "connected", "--config", str(agents)
        )
        bad = run("fetch", srv.url("/"), "--tier", "root", "--config", str(config))
        assert len(srv.requests) == 1
    assert as_owner.returncode == 3 and "as-owner" in as_owner.stderr
    assert bot.returncode == 3 and "bot" in bot.stderr
    assert bot_up.returncode == 0, bot_up.stderr
    assert bad.returncode == 2


def test_state_dir_and_config_come_from_the_environment(tmp_path: Path, config: Path) -> None:
    """WEBWARD_CONFIG names the config file; WEBWARD_STATE_DIR is where the audit log and the
    shared limits live."""
    state = tmp_path / "elsewhere"
    env = {"WEBWARD_CONFIG": str(config), "WEBWARD_STATE_DIR": str(state)}
    with serve(routes={"/": respond(200, "<p>state</p>")}) as srv:
        out = run("fetch", srv.url("/"), env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (state / "audit.db").is_file()
    assert (state / "limits.db").is_file()


def test_environment_allow_ranges_override_the_file(tmp_path: Path) -> None:
    """WEBWARD_ALLOW_RANGES beats the config file: emptied, the local server is refused."""
    path = tmp_path / "webward.toml"
    path.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\ndefault_tier = "connected"\nrobots = false\n'
    )
    with serve(routes={"/": respond(200, "<p>x</p>")}) as srv:
        out = run("fetch", srv.url("/"), "--config", str(path), env={"WEBWARD_ALLOW_RANGES": ""})
        assert srv.accepts == 0
    assert out.returncode == 3
    assert "internal address" in out.stderr


def test_an_unknown_flag_gets_the_commands_own_usage(config: Path) -> None:
    """`webward fetch URL --bogus` names fetch's options (the top-level usage named none)."""
    with serve(routes={"/": respond(200, "<p>x</p>")}) as srv:
        out = run("fetch", srv.url("/"), "--bogus", "--config", str(config))
    assert out.returncode == 2
    assert out.stderr.startswith("usage: webward fetch ")
    assert "webward fetch: error: unrecognized arguments: --bogus" in out.stderr
    assert srv.accepts == 0


@pytest.mark.parametrize(
    ("typed", "meant"), [("fech", "fetch"), ("Search", "search"), ("credential", "credentials")]
)
def test_a_mistyped_command_is_told_the_closest(typed: str, meant: str) -> None:
    """`webward fech URL`: exit 2 with the command most likely meant, on stderr and in
    --json's error (argparse listed every command and left the typo to be found by eye); a
    word like no command gets the list alone."""
    out = run(typed, "http://127.0.0.1:9/")
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1].endswith(f"; the closest is `webward {meant}`")
    as_json = run(typed, "http://127.0.0.1:9/", "--json")
    message = json.loads(as_json.stdout)["error"]["message"]
    assert message.endswith(f"; the closest is `webward {meant}`; see `webward --help`")
    other = run("zzz")
    assert other.returncode == 2 and "closest" not in other.stderr


def test_a_limit_no_read_could_use_is_refused_before_reading(config: Path) -> None:
    """`[limits] max_fetch_text_chars = 0` is a config error (exit 2, one line naming the key
    and the file), not an internal error on every read."""
    config.write_text(config.read_text() + "[limits]\nmax_fetch_text_chars = 0\n")
    with serve(routes={"/": respond(200, "<p>x</p>")}) as srv:
        out = run("fetch", srv.url("/"), "--config", str(config))
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"webward: limits.max_fetch_text_chars in {config} must be greater than 0 (it is 0)"
    )
    assert srv.accepts == 0


# ---- webward audit: usage counted in the store, unreadable rows, --limit ----------------------


def audit_log(state: Path, rows: int, *, agents: int = 3) -> None:
    """An audit.db in ``state`` holding ``rows`` records of the last hour, laid out as the
    SQLite sink writes them (one written through it, the rest copied by SQL, which is fast):
    agent a0, a1, ... in turn, every 10th a search of brave that answered."""
    import datetime as dt

    import anyio

    from webward.audit import AuditRecord, SQLiteAuditSink

    async def first() -> None:
        sink = SQLiteAuditSink(state)
        await sink.write(AuditRecord.create(decision="allowed", reason="allowed", agent="a0"))
        await sink.aclose()

    anyio.run(first)
    now = dt.datetime.now(dt.UTC).timestamp()
    with database(state / "audit.db") as conn:
        conn.execute(
            "INSERT INTO audit SELECT printf('%032x', i), :now - i * 0.01, 'a' || (i % :agents), tier, "
            "CASE WHEN i % 10 = 0 THEN 'web:search.query@1' ELSE capability END, target, "
            "decision, reason, would_deny, final_url, redirects, 200, bytes, content_type, "
            "duration_ms, CASE WHEN i % 10 = 0 THEN 'brave' END, render_contacted, "
            "render_refused, session, hits_dropped, face FROM audit, (WITH RECURSIVE n(i) AS "
            "(SELECT 1 UNION ALL SELECT i + 1 "
            "FROM n WHERE i < :last) SELECT i FROM n)",
            {"now": now, "agents": agents, "last": rows - 1},
        )
        assert conn.execute("SELECT count(*) FROM audit").fetchone() == (rows,)


def max_rss_kb_of(
    args: list[str], env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], int]:
    """`webward ARGS`, and the peak resident memory of its process in KiB (Linux: VmHWM,
    which starts again at exec, where ru_maxrss keeps the peak of the process that forked)."""
    prelude = (
        "import atexit, re, sys\n"
        "hwm = lambda: re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read())[1]\n"
        "atexit.register(lambda: print('maxrss', hwm(), file=sys.stderr))\n"
        "import runpy\nsys.argv = ['webward', *sys.argv[1:]]\n"
        "runpy.run_module('webward', run_name='__main__')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", prelude, *args],
        capture_output=True, text=True, env={**os.environ, **env}, timeout=120,
    )  # fmt: skip
    lines = out.stderr.splitlines()
    rss = int(lines[-1].split()[1])
    out.stderr = "".join(f"{line}\n" for line in lines[:-1])
    return out, rss


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/status")
def test_audit_usage_sums_the_whole_period_in_the_store(tmp_path: Path) -> None:
    """`webward audit --usage` counts every record of the period (it counted the newest
    100,000 and said "raise --limit", which --limit refused), in the store: its memory does not
    grow with the log (it held every record, 188 MB for 100,000). --limit still counts only
    the newest N, and then says how to count them all."""
    rows = 100_050
    audit_log(tmp_path, rows)
    config = tmp_path / "webward.toml"
    config.write_text("[search.brave]\ncost = 0.5\n")
    env = {"WEBWARD_STATE_DIR": str(tmp_path), "WEBWARD_CONFIG": str(config)}
    for since in ([], ["--since", "7d"]):
        out, rss = max_rss_kb_of(["audit", "--usage", "--json", *since], env)
        assert out.returncode == 0, out.stderr
        assert out.stderr == ""
        summary = json.loads(out.stdout)
        assert sum(r["calls"] for r in summary) == rows
        assert sum(r["allowed"] for r in summary) == rows
        searches = [r for r in summary if r["capability"] == "web:search.query@1"]
        assert sum(r["spend"] for r in searches) == 0.5 * sum(r["calls"] for r in searches)
        assert sorted(summary[0]) == sorted(
            ["agent", "capability", "calls", "spend", "allowed", "report-would-deny", "refused",
             "failed"]
        )  # fmt: skip
        assert rss < 100_000, rss  # about 40 MB: the interpreter and webward
    cut = run("audit", "--usage", "--json", "--limit", "100000", env=env)
    assert cut.returncode == 0, cut.stderr
    assert sum(r["calls"] for r in json.loads(cut.stdout)) == 100_000
    assert cut.stderr == (
        "webward: more records match than the 100000 the summary counts; leave out --limit to "
        "count them all\n"
    )
    table = run("audit", "--usage", "--agent", "a1", env=env)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == [
        "AGENT", "CAPABILITY", "CALLS", "ALLOWED", "REPORT-WOULD-DENY", "REFUSED", "FAILED",
        "SPEND",
    ]  # fmt: skip
    assert {line.split()[0] for line in table.stdout.splitlines()[1:]} == {"a1"}


def test_audit_counts_unreadable_rows_toward_limit_and_says_so(tmp_path: Path) -> None:
    """Rows webward cannot read (changed by hand) are left out with one `webward:` sentence
    saying how many; they still take their place in --limit, and still mean more records
    match (--limit 2 printed [] and said nothing of the 23 readable records)."""

    audit_log(tmp_path, 23)
    with database(tmp_path / "audit.db") as conn:
        newest = list(conn.execute("SELECT * FROM audit ORDER BY ts DESC LIMIT 1").fetchone())
        # The newest three: decisions no webward knows, and redirects that are not JSON.
        for i, (column, value) in enumerate([(6, "maybe"), (10, "not json"), (6, "later")]):
            row = [*newest]
            row[0], row[1], row[column] = f"bad{i}", newest[1] + 1 + i, value
            conn.execute(f"INSERT INTO audit VALUES ({', '.join('?' * len(row))})", row)
    conn.close()
    env = {"WEBWARD_STATE_DIR": str(tmp_path)}
    note = "could not be read (changed by hand, or written by a newer webward) and are left out"
    two = run("audit", "--limit", "2", "--json", env=env)
    assert two.returncode == 0, two.stderr
    assert json.loads(two.stdout) == []
    assert two.stderr.splitlines() == [
        f"webward: 2 audit records {note}, though --limit counts them",
        "webward: more records match than the 0 shown; raise --limit or narrow with --since, "
        "--agent, --face or --decision",
    ]
    five = run("audit", "--limit", "5", env=env)
    assert len(five.stdout.splitlines()) == 1 + 2  # the header and two records
    assert (
        five.stderr.splitlines()[0]
        == f"webward: 3 audit records {note}, though --limit counts them"
    )
    assert "webward: more records match than the 2 shown;" in five.stderr
    whole = run("audit", "--limit", "26", "--json", env=env)
    assert len(json.loads(whole.stdout)) == 23
    assert whole.stderr == f"webward: 3 audit records {note}\n"
    usage = run("audit", "--usage", "--json", env=env)
    assert sum(r["calls"] for r in json.loads(usage.stdout)) == 24  # counts what it can
    assert usage.stderr == f"webward: 2 audit records {note}\n"  # decisions it does not know


@pytest.mark.parametrize(
    "limit",
    ["\u00b2", "\u0661", "9" * 5000, "100001", "0"],
    ids=["superscript", "arabic-indic", "5000-digits", "past-the-max", "zero"],
)
def test_an_odd_audit_limit_exits_2_by_name(tmp_path: Path, limit: str) -> None:
    """A --limit int() cannot take ("²" is a digit to str.isdigit, 5,000 digits are past
    int()'s bound) is bad input, not an internal error."""
    out = run("audit", "--limit", limit, env={"WEBWARD_STATE_DIR": str(tmp_path)})
    assert out.returncode == 2
    assert out.stderr.startswith("webward: --limit must be a whole number from 1 to 100000")
    assert len(out.stderr.splitlines()) == 1


@pytest.mark.parametrize("since", ["1y", "1.5h", "yesterday", "-5m", "-.5h"])
def test_an_odd_audit_since_names_the_units(tmp_path: Path, since: str) -> None:
    """`webward audit --since 1y` (a unit it does not take) names every unit it takes: the
    three examples alone left "1y" or "1.5h" to be guessed again. `--since -5m`, as a space
    and not = parts it, gets the same sentence, not argparse's "expected one argument"."""
    out = run("audit", "--since", since, env={"WEBWARD_STATE_DIR": str(tmp_path)})
    assert out.returncode == 2
    assert out.stderr == (
        f"webward: --since {since!r} is neither an ISO 8601 time nor an age such as 10m, 2h "
        "or 7d (a whole number of s, m, h, d or w)\n"
    )


def test_audit_reads_without_the_serve_extra(tmp_path: Path) -> None:
    """`webward audit` reads through the console's queries, but needs neither of the pages'
    packages (Starlette, Jinja2): a plain install lists and sums the log."""
    audit_log(tmp_path, 3)
    for hidden in ("jinja2", "starlette"):
        prelude = (
            f"import sys\nsys.modules[{hidden!r}] = None  # as if not installed\n"
            "sys.argv = ['webward', *sys.argv[1:]]\n"
            "import runpy\nrunpy.run_module('webward', run_name='__main__')\n"
        )
        env = {**os.environ, "WEBWARD_STATE_DIR": str(tmp_path)}
        for args in (["--json"], ["--usage", "--json"]):
            out = subprocess.run(
                [sys.executable, "-c", prelude, "audit", *args],
                capture_output=True, text=True, env=env, timeout=60,
            )  # fmt: skip
            assert out.returncode == 0, out.stderr
            data = json.loads(out.stdout)
            assert (len(data) if args == ["--json"] else sum(r["calls"] for r in data)) == 3


@pytest.mark.parametrize(
    "argv", [["credentials", "set", "BRAVE_SEARCH_API_KEY"], ["serve", "--hash-token"]]
)
def test_a_secret_on_stdin_is_its_one_line(tmp_path: Path, argv: list[str]) -> None:
    """`credentials set` and `serve --hash-token` took the first line of a stdin of several
    (a file of keys piped in) without a word: two lines are refused, exit 2, one sentence,
    nothing stored; blank lines and a CR LF around the one line are not a second line."""
    what = "key" if argv[0] == "credentials" else "token"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "conf"), "HOME": str(tmp_path)}

    def webward(stdin: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "webward", *argv],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )

    two = webward("key-one\nkey-two\n")
    assert (two.returncode, two.stdout) == (2, "")
    assert two.stderr == (
        f"webward: stdin holds more than one line, and a {what} is one; pipe the {what} alone\n"
    )
    assert not (tmp_path / "conf").exists()  # nothing was stored
    for stdin in ("key-one\n\n", "\nkey-one\r\n"):
        one = webward(stdin)
        assert one.returncode == 0, one.stderr
        if what == "token":
            assert one.stdout.strip() == hashlib.sha256(b"key-one").hexdigest()
        else:
            stored = json.loads((tmp_path / "conf" / "webward" / "credentials.json").read_text())
            assert stored["credentials"] == {"BRAVE_SEARCH_API_KEY": "key-one"}


class _Terminal:
    """A terminal's stdin: a line ends at Enter, and the end of input comes only with a
    Ctrl-D nobody types (read to it, the command waited)."""

    def __init__(self, line: str) -> None:
        self._line = line

    def isatty(self) -> bool:
        return True

    def readline(self, limit: int = -1) -> str:
        line, self._line = self._line, ""
        return line

    def read(self, limit: int = -1) -> str:
        raise AssertionError("read to the end of a terminal's input: waits for a Ctrl-D")


def test_a_token_typed_at_a_terminal_ends_at_enter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`serve --hash-token` at a terminal: stdin was read to its end (so that a second line
    piped in is refused), which a person typing the token and Enter never gives; the
    command sat waiting for a Ctrl-D. At a terminal the line is read, ended by Enter."""
    from webward.cli import main

    monkeypatch.setattr(sys, "stdin", _Terminal("a-token\n"))
    assert main(["serve", "--hash-token"]) == 0
    assert capsys.readouterr().out.strip() == hashlib.sha256(b"a-token").hexdigest()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["credentials", "set", "BRAVE_SEARCH_API_KEY"],
            "the key on stdin is longer than 64 KiB, which no key is; pipe the key itself",
        ),
        (
            ["serve", "--hash-token"],
            "the token on stdin is longer than 64 KiB, which no token is; pipe the token itself",
        ),
    ],
)
def test_a_secret_on_stdin_is_read_up_to_a_cap(tmp_path: Path, argv: list[str], said: str) -> None:
    """`credentials set` and `serve --hash-token` read one line of stdin: from /dev/zero (an
    endless line) they read it up to a cap and refuse, exit 2, one sentence, rather than
    growing without bound. Run with 1 GiB of address space, as a backstop."""
    import resource

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    with open("/dev/zero", "rb") as endless:
        out = subprocess.run(
            [sys.executable, "-m", "webward", *argv],
            stdin=endless,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=capped,
            env={
                **os.environ,
                "XDG_CONFIG_HOME": str(tmp_path / "conf"),
                "HOME": str(tmp_path),
                "WEBWARD_STATE_DIR": str(tmp_path / "state"),
            },
        )
    assert (out.returncode, out.stdout, out.stderr) == (2, "", f"webward: {said}\n")
    assert not (tmp_path / "conf").exists()  # nothing was stored


def test_a_refused_target_with_a_tab_in_a_host_not_ascii_lists_escaped(config: Path) -> None:
    """A refused read of a host in Cyrillic letters with a tab in it (which urlsplit drops)
    is listed by `webward audit` with its letters escaped; the table failed on it
    ('webward failed unexpectedly (ValueError)'), so one agent's call hid the log."""
    state = config.parent / "state"
    env = {"WEBWARD_STATE_DIR": str(state)}
    out = run("fetch", "http://g\u043e\togle.com/", "--config", str(config), env=env)
    assert out.returncode == 2, out.stderr
    table = run("audit", "--config", str(config), env=env)
    assert table.returncode == 0, table.stderr
    assert "http://g\\u043e\\togle.com/" in table.stdout and "\u043e" not in table.stdout
