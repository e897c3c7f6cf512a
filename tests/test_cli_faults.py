"""The command line under faults an outside tester found: Ctrl-C pressed again and again, an
output encoding that cannot hold the page, --json usage errors, flags named as typed, paging
hints, bad flag values refused up front, and advice that names what is actually set."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_models import API_KEY, anthropic_reply, fake_model_api
from localserver import LocalServer, Request, respond, serve
from stores import stored_records

from webward import Settings
from webward._errors import InvalidInput
from webward._gateway import bind_socket
from webward.audit import SQLiteAuditSink
from webward.cli import main


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The state dir the records are read from (conftest points it elsewhere)."""
    monkeypatch.setenv("WEBWARD_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def write_config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "cli.toml"
    path.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\ndefault_tier = "connected"\n'
        f"robots = false\n[state]\ndir = {json.dumps(str(tmp_path / 'state'))}\n{extra}",
        encoding="utf-8",
    )
    return path


def records(tmp_path: Path) -> list[tuple[str, str]]:
    found = stored_records(SQLiteAuditSink(tmp_path / "state"))
    return [(r.decision, r.reason) for r in found]


@contextmanager
def stalled_site() -> Iterator[LocalServer]:
    """A loopback server that takes the request and answers nothing until the test ends."""
    release = threading.Event()

    def stall(req: Request, sock: socket.socket) -> None:
        release.wait(60)

    with serve(routes={"/slow": stall}) as site:
        try:
            yield site
        finally:
            release.set()


def fetching(
    site: LocalServer, config: Path, env: dict[str, str], *extra: str
) -> subprocess.Popen[bytes]:
    """`webward fetch` of the stalled page, once its request has reached the server."""
    before = len(site.requests)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "webward",
            "fetch",
            site.url("/slow"),
            "--config",
            str(config),
            *extra,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # As from a terminal (a suite run in the background hands SIGINT ignored, one run
        # under nohup SIGHUP).
        preexec_fn=lambda: [
            signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGHUP)
        ],
    )
    deadline = time.monotonic() + 30
    while len(site.requests) == before and time.monotonic() < deadline:  # bounded poll
        time.sleep(0.01)
    assert len(site.requests) > before, "the request never reached the server"
    return process


@pytest.mark.parametrize("gap", [0.0005, 0.01])
def test_ctrl_c_pressed_again_still_ends_130_with_one_record(tmp_path: Path, gap: float) -> None:
    """Three quick Ctrl-Cs while `webward fetch` waits on a page: exit 130, no traceback, and
    exactly one `cancelled` record each time (a second Ctrl-C raised KeyboardInterrupt inside
    the record's write, or inside anyio's cancellation: no record, a traceback, or a hang)."""
    config = write_config(tmp_path)
    env = {**os.environ, "WEBWARD_STATE_DIR": str(tmp_path / "state")}
    with stalled_site() as site:
        for attempt in range(3):
            process = fetching(site, config, env)
            for _ in range(3):
                process.send_signal(signal.SIGINT)
                time.sleep(gap)  # the gap between key presses under test, not a wait for luck
            try:
                _, err = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                pytest.fail(f"attempt {attempt}: the interrupted command never exited")
            assert process.returncode == 130, err.decode()
            assert b"Traceback" not in err, err.decode()
            assert records(tmp_path) == [("failed", "cancelled")] * (attempt + 1)


@pytest.mark.parametrize("gap", [0.0005, 0.01])
def test_ask_interrupted_again_during_a_read_ends_130_with_its_record(
    tmp_path: Path, gap: float
) -> None:
    """`webward ask` runs its tool calls as fetch does: three quick Ctrl-Cs while the
    model's web_fetch waits on a page end 130, with no traceback and that call's one record
    (a second Ctrl-C could cut the record's write, or hang anyio's cancellation)."""
    config = write_config(tmp_path)
    env = {**os.environ, "WEBWARD_STATE_DIR": str(tmp_path / "state"), "ANTHROPIC_API_KEY": API_KEY}
    with stalled_site() as site:
        reads = [anthropic_reply(calls=[("c1", "web_fetch", {"url": site.url("/slow")})])]
        with fake_model_api("anthropic", reads) as model:
            process = subprocess.Popen(
                [sys.executable, "-m", "webward", "ask", "Owls?", "--provider", "anthropic",
                 "--model", "m", "--base-url", model.base_url, "--config", str(config)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                preexec_fn=as_at_a_terminal,
            )  # fmt: skip
            deadline = time.monotonic() + 30
            while not site.requests and time.monotonic() < deadline:  # bounded poll
                time.sleep(0.01)
            assert site.requests, "the model's web_fetch never reached the page"
            for _ in range(3):
                process.send_signal(signal.SIGINT)
                time.sleep(gap)  # the gap between key presses under test, not a wait for luck
            _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err.decode()
    assert b"Traceback" not in err, err.decode()
    assert records(tmp_path) == [("failed", "cancelled")]


@pytest.mark.parametrize(
    ("sent", "code", "said"),
    [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGHUP, 129, "hung up (SIGHUP)")],
    ids=["sigterm", "sighup"],
)
def test_interrupted_json_call_answers_on_stdout(
    tmp_path: Path, sent: signal.Signals, code: int, said: str
) -> None:
    """SIGTERM (or SIGHUP: the terminal closed) to `webward fetch --json`: exit 143 (129)
    and one JSON error on stdout, so a script reading stdout is not left with nothing."""
    config = write_config(tmp_path)
    env = {**os.environ, "WEBWARD_STATE_DIR": str(tmp_path / "state")}
    with stalled_site() as site:
        process = fetching(site, config, env, "--json")
        process.send_signal(sent)
        out, err = process.communicate(timeout=30)
    assert process.returncode == code, err.decode()
    error = json.loads(out)["error"]
    assert error["code"] == "cancelled" and error["message"].startswith(said)
    assert records(tmp_path) == [("failed", "cancelled")]


@pytest.mark.parametrize(
    ("sent", "code", "said"),
    [(signal.SIGINT, 130, "interrupted (Ctrl-C)"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
    ids=["ctrl-c", "sigterm"],
)
def test_interrupted_call_says_one_sentence_on_stderr(
    tmp_path: Path, sent: signal.Signals, code: int, said: str
) -> None:
    """Ctrl-C (or SIGTERM) to `webward fetch` without --json: besides exit 130 (143), one
    sentence on stderr saying the call was cancelled and audited as such, and nothing on
    stdout. The command ended in silence: the person at the terminal, or a supervisor's log,
    could not tell a call audited as cancelled from one lost."""
    config = write_config(tmp_path)
    env = {**os.environ, "WEBWARD_STATE_DIR": str(tmp_path / "state")}
    with stalled_site() as site:
        process = fetching(site, config, env)
        process.send_signal(sent)
        out, err = process.communicate(timeout=30)
    assert process.returncode == code, err.decode()
    assert out == b""
    assert err.decode().splitlines() == [
        f"webward: {said}: stopped; a call in flight, if any, was cancelled and audited as "
        "cancelled"
    ]
    assert records(tmp_path) == [("failed", "cancelled")]


@pytest.mark.parametrize("store", ["audit.db", "limits.db"])
def test_a_state_file_that_is_no_database_is_told_to_be_moved_aside(
    tmp_path: Path, store: str
) -> None:
    """An audit log or limit store in the state dir that is no SQLite database (written
    over, cut short): the read is refused before any request (exit 3) with the step that
    helps, moving the file aside. It was told "make that store writable" (the audit log) or
    "bring it back" (the limits), neither of which does anything for such a file."""
    config = write_config(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    (state / store).write_bytes(b"not a database, whatever its name says\n" * 100)
    env = {**os.environ, "WEBWARD_STATE_DIR": str(state)}
    with serve(routes={"/": respond(200, "<p>words</p>")}) as site:
        out = subprocess.run(
            [sys.executable, "-m", "webward", "fetch", site.url("/"), "--config", str(config)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert site.requests == []
    assert out.returncode == 3, out.stderr
    assert out.stderr.endswith(
        "(file is not a database); it is no SQLite database: move it aside (webward starts a "
        "new one), or point [state] dir (WEBWARD_STATE_DIR) at another directory\n"
        if store == "limits.db"
        else f"{state / store}: file is not a database; it is no SQLite database: move it "
        "aside (webward starts a new one), or point [state] dir (WEBWARD_STATE_DIR) at another "
        "directory\n"
    ), out.stderr
    assert len(out.stderr.splitlines()) == 1


def test_unencodable_output_is_replaced_not_a_bug(tmp_path: Path) -> None:
    """An ASCII-only stdout and a page with "é": the page is printed with the character
    escaped, exit 0, never "failed unexpectedly (UnicodeEncodeError)"."""
    config = write_config(tmp_path)
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "WEBWARD_STATE_DIR": str(tmp_path / "s")}
    with serve(routes={"/": respond(200, "<p>caf\u00e9 cr\u00e8me</p>")}) as site:
        out = subprocess.run(
            [sys.executable, "-m", "webward", "fetch", site.url("/"), "--config", str(config)],
            env=env,
            capture_output=True,
            timeout=60,
        )
    assert out.returncode == 0, out.stderr.decode()
    assert b"caf\\xe9 cr\\xe8me" in out.stdout
    assert b"unexpectedly" not in out.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["ask", "hi", "--json"],  # --model missing
        ["fetch", "http://127.0.0.1:1/", "--json", "--bogus"],
        ["audit", "--json", "--since", "--usage"],  # a flag where its value belongs
    ],
    ids=["missing", "unknown", "value-like-a-flag"],
)
def test_json_usage_error_answers_on_stdout(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A usage error under --json: exit 2, the usage on stderr, and the error model (code
    invalid_input) on stdout, as `ask --help` promises."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    assert info.value.code == 2
    assert json.loads(out.out)["error"]["code"] == "invalid_input"
    assert "usage:" in out.err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["search", "-x"],
            "the following arguments are required: QUERY; '-x' was taken for an option: a "
            "QUERY that begins with - goes after --, as in `webward search -- -x`",
        ),
        (
            ["fetch", "--bogus"],
            "the following arguments are required: URL; `webward fetch` has no option '--bogus'",
        ),
        (["fetch"], "the following arguments are required: URL"),
        # "-1" is --freshness's value (a minus and a digit is one), not taken for an option.
        (["search", "--freshness", "-1"], "the following arguments are required: QUERY"),
    ],
)
def test_a_dash_word_where_the_value_belongs_is_named(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`webward search -x` was told only that QUERY is required, "-x" dropped as if it were
    not there: the word is named, with how to search for it (after --), or as no option."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"webward {argv[0]}: error: {said}"


def test_flags_are_named_as_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refusals name the flags typed (--max-chars, --allow-domain, --limit), not the core's
    argument names."""
    monkeypatch.setenv("WEBWARD_SEARXNG_URL", "http://127.0.0.1:1")
    config = str(write_config(tmp_path))
    said = []
    for argv in (
        ["fetch", "http://127.0.0.1:1/", "--max-chars", "0"],
        ["fetch", "http://127.0.0.1:1/", "--max-age", "x"],
        ["search", "hi", "--allow-domain", "http://x.org/"],
        ["search", "hi", "--block-domain", "127.0.0.1"],
        ["search", "hi", "--limit", "99"],
    ):
        assert main([*argv, "--config", config]) == 2
        said.append(capsys.readouterr().err)
    for err, flag in zip(
        said,
        ["--max-chars", "--max-age", "--allow-domain", "--block-domain", "--limit"],
        strict=True,
    ):
        assert err.startswith(f"webward: {flag} "), err


def test_paging_hints_keep_the_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After --max-chars 1000 the hint keeps --max-chars (following it gives the next 1000);
    after --query it says to read on from a passage's offset, not "--offset 0"."""
    config = str(write_config(tmp_path))
    body = "".join(f"<p>para {i} marker{i} " + "x" * 80 + "</p>" for i in range(100))
    with serve(routes={"/big": respond(200, body)}) as site:
        assert main(["fetch", site.url("/big"), "--max-chars", "1000", "--config", config]) == 0
        paged = capsys.readouterr().err
        assert main(["fetch", site.url("/big"), "--query", "marker7", "--config", config]) == 0
        queried = capsys.readouterr().err
    assert "--offset 1000 --max-chars 1000" in paged
    assert "--offset 0" not in queried and "from a passage with --offset N" in queried


def test_empty_session_is_audited(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`fetch --session ""` is refused (exit 2) and, like every fetch, leaves one record."""
    config = str(write_config(tmp_path))
    assert main(["fetch", "http://127.0.0.1:1/", "--session", "", "--config", config]) == 2
    assert records(tmp_path) == [("refused", "invalid_input")]


def test_empty_tier_is_refused_and_audited(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--tier ""` is refused as `--tier bogus` is, not silently the default tier."""
    config = str(write_config(tmp_path))
    assert main(["fetch", "http://127.0.0.1:1/", "--tier", "", "--config", config]) == 2
    assert "--tier is empty" in capsys.readouterr().err
    assert records(tmp_path) == [("refused", "invalid_input")]


@pytest.mark.parametrize("agent", ["bad\nname", ""])
def test_mcp_refuses_a_bad_agent_at_start(
    tmp_path: Path, agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`mcp --agent` with a control character, or empty, is refused before serving."""
    assert main(["mcp", "--agent", agent, "--config", str(write_config(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("webward: --agent must be a name") and len(err.splitlines()) == 1


@pytest.mark.parametrize("command", ["fetch", "search"])
def test_fetch_and_search_name_a_bad_agent_by_its_flag(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fetch --agent` and `search --agent` with a control character said "agent must be",
    where `mcp` and `audit` say "--agent must be": the flag the person typed."""
    target = "http://127.0.0.1:1/" if command == "fetch" else "owls"
    config = str(write_config(tmp_path))
    assert main([command, target, "--agent", "bad\nname", "--config", config]) == 2
    err = capsys.readouterr().err
    assert err.startswith("webward: --agent must be a name") and len(err.splitlines()) == 1
    assert records(tmp_path) == [("refused", "invalid_input")]


def test_first_run_refusal_names_the_config_file(tmp_path: Path) -> None:
    """No config yet: the refusal of a loopback address names the file to add the range to."""
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "conf"),
        "WEBWARD_STATE_DIR": str(tmp_path / "state"),
    }
    env.pop("WEBWARD_CONFIG", None)
    out = subprocess.run(
        [sys.executable, "-m", "webward", "fetch", "http://127.0.0.1:1/", "--tier", "connected"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 3
    assert str(Path("~") / "conf" / "webward" / "webward.toml") in out.stderr or str(
        tmp_path / "conf" / "webward" / "webward.toml"
    ) in out.stderr.replace("~", str(tmp_path)), out.stderr


def test_usage_counts_an_explicit_default_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`audit --usage --limit 50` counts 50 records, as --limit 49 counts 49."""
    config = str(write_config(tmp_path))
    for _ in range(51):
        main(["fetch", "file:///x", "--config", config])
    capsys.readouterr()
    assert main(["audit", "--usage", "--limit", "50", "--json", "--config", config]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["calls"] == 50


def test_listen_errors_advise_by_cause() -> None:
    """A host that is no address here is blamed, not the port; a port in use says --port."""
    with pytest.raises(InvalidInput) as bad_host:
        bind_socket("256.1.1.1", 0, port_advice="PORT", host_advice="HOST")
    assert bad_host.value.message.endswith("HOST") and "PORT" not in bad_host.value.message
    taken = bind_socket("127.0.0.1", 0)
    try:
        with pytest.raises(InvalidInput) as in_use:
            bind_socket("127.0.0.1", taken.getsockname()[1], port_advice="choose another --port")
    finally:
        taken.close()
    assert "in use; choose another --port" in in_use.value.message


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ('[search]\nprovider = "google"\n', "search.provider"),
        ('[observability]\ncall_log = "stdout"\n', "observability.call_log"),
        ('[observability]\ncall_log = "on"\n', "observability.call_log"),
    ],
)
def test_config_values_checked_at_load(tmp_path: Path, extra: str, named: str) -> None:
    """An unknown search provider, and a call_log that reads as a keyword, are refused as
    the config loads, naming the file and the key."""
    config = write_config(tmp_path, extra)
    with pytest.raises(InvalidInput) as info:
        Settings.load(config)
    assert named in info.value.message and str(config) in info.value.message
    assert not (Path.cwd() / "stdout").exists()


def test_config_providers_match_the_search_package() -> None:
    from webward._settings import SEARCH_PROVIDERS
    from webward.search import PROVIDERS

    assert SEARCH_PROVIDERS == PROVIDERS


def test_otel_advice_names_only_what_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only an endpoint set, and no SDK: the advice names the endpoint variable, not
    OTEL_TRACES_EXPORTER, which is not set."""
    import builtins

    import webward._telemetry as telemetry

    real_import = builtins.__import__

    def no_sdk(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("opentelemetry"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(telemetry, "_configured", False)
    monkeypatch.setattr(builtins, "__import__", no_sdk)
    with pytest.raises(InvalidInput) as info:
        telemetry.configure_tracing({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert "unset OTEL_EXPORTER_OTLP_ENDPOINT" in info.value.message
    assert "OTEL_TRACES_EXPORTER" not in info.value.message


def test_state_dir_that_is_a_file_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """fetch says what `webward audit` says: the state dir is not a directory, no errno."""
    state = tmp_path / "state_is_file"
    state.write_text("")
    monkeypatch.setenv("WEBWARD_STATE_DIR", str(state))
    config = tmp_path / "c.toml"
    config.write_text('[network]\nallow_ranges = ["127.0.0.1/32"]\n', encoding="utf-8")
    assert main(["fetch", "http://127.0.0.1:1/", "--config", str(config)]) == 3
    err = capsys.readouterr().err
    assert f"{state} is not a directory" in err and "Errno" not in err


def test_a_url_pasted_with_whitespace_around_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`webward fetch " URL\n"` (pasted with a space and a newline) is read as the agent
    tools, MCP and the gateway read it; it was refused for its whitespace."""
    config = write_config(tmp_path)
    with serve(routes={"/": respond(200, "<p>owls at night</p>")}) as site:
        code = main(["fetch", f" {site.url('/')}\n", "--config", str(config)])
    assert code == 0, capsys.readouterr().err
    assert "owls at night" in capsys.readouterr().out


def test_a_signal_the_call_finishes_before_is_no_interruption() -> None:
    """A SIGTERM that arrives as the call ends, before its cancellation can reach it, ended
    nothing: the call's own answer stands (it was said to be cancelled, exit 143, while its
    record said it was allowed)."""
    from webward.cli import run_call

    async def answered_then_signalled() -> int:
        os.kill(os.getpid(), signal.SIGTERM)  # handled at once: the cancel is only scheduled
        return 0

    assert run_call(answered_then_signalled) == 0
    assert signal.getsignal(signal.SIGTERM) is not None  # the handler before it, restored


def _webward(
    tmp_path: Path, *args: str, close: tuple[int, ...] = (), encoding: str | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`webward ARGS` with the file descriptors ``close`` closed (``>&-``, ``2>&-``) and,
    given ``encoding``, stdout and stderr in it (PYTHONIOENCODING)."""
    env = {**os.environ, "WEBWARD_STATE_DIR": str(tmp_path / "state")}
    if encoding is not None:
        env["PYTHONIOENCODING"] = encoding
    return subprocess.run(
        [sys.executable, "-m", "webward", *args],
        env=env,
        stdout=None if 1 in close else subprocess.PIPE,
        stderr=None if 2 in close else subprocess.PIPE,
        # Closed in the child only, after the pipes are in place: the process starts as one
        # run with `>&-` does, sys.stdout (or sys.stderr) None.
        preexec_fn=lambda: [os.close(fd) for fd in close],  # type: ignore[func-returns-value]
        timeout=60,
    )


PAGE_TITLE = "Caf\u00e9 \u2713 \U0001f600"


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "utf-8"])
def test_json_is_valid_json_whatever_the_output_encoding(tmp_path: Path, encoding: str) -> None:
    """--json on a stdout that cannot encode the page ("é", "✓", an emoji): one valid JSON
    document that reads back to the same values, for a page, a refusal and the audit log (it
    held Python's ``\\xe9`` escapes, which JSON has not)."""
    config = write_config(tmp_path)
    page = f"<html><title>{PAGE_TITLE}</title><body><p>cr\u00e8me \u2713</p></body></html>"
    with serve(routes={"/": respond(200, page)}) as site:
        read = _webward(tmp_path, "fetch", site.url("/"), "--config", str(config), "--json",
                        encoding=encoding)  # fmt: skip
    refused = _webward(tmp_path, "fetch", "http://127.0.0.2/caf\u00e9", "--config", str(config),
                       "--json", encoding=encoding)  # fmt: skip
    audit = _webward(tmp_path, "audit", "--config", str(config), "--json", encoding=encoding)
    for out in (read, refused, audit):
        assert b"Traceback" not in out.stderr and b"unexpectedly" not in out.stderr
        out.stdout.decode(encoding)  # nothing the stream could not carry
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout.decode(encoding))["title"] == PAGE_TITLE
    assert refused.returncode == 3
    assert json.loads(refused.stdout.decode(encoding))["error"]["code"] == "refused"
    assert audit.returncode == 0, audit.stderr
    targets = [r["target"] for r in json.loads(audit.stdout.decode(encoding))]
    assert targets == ["http://127.0.0.2/caf\u00e9", site.url("/")]


@pytest.mark.parametrize("as_json", [False, True])
def test_a_closed_stdout_is_said_and_exits_1(tmp_path: Path, as_json: bool) -> None:
    """`webward fetch URL >&-`: the page cannot be written, so the command says so in one
    sentence on stderr and exits 1, as into /dev/full (it exited 0 with the page lost); the
    call is audited all the same. A refusal keeps its own sentence and exit code."""
    config = write_config(tmp_path)
    flags = ["--json"] if as_json else []
    with serve(routes={"/": respond(200, "<p>owls</p>")}) as site:
        read = _webward(tmp_path, "fetch", site.url("/"), "--config", str(config), *flags,
                        close=(1,))  # fmt: skip
    assert read.returncode == 1
    assert read.stderr.decode() == "webward: could not write the output (stdout is closed)\n"
    assert [decision for decision, _ in records(tmp_path)] == ["allowed"]
    refused = _webward(tmp_path, "fetch", "file:///etc/passwd", "--config", str(config), *flags,
                       close=(1,))  # fmt: skip
    assert refused.returncode == 3
    assert refused.stderr.decode().startswith("webward: refused:")
    assert len(refused.stderr.splitlines()) == 1
    audit = _webward(tmp_path, "audit", "--config", str(config), *flags, close=(1,))
    assert audit.returncode == 1
    assert audit.stderr.decode() == "webward: could not write the output (stdout is closed)\n"


@pytest.mark.parametrize("as_json", [False, True])
def test_a_closed_stderr_leaves_stdout_as_it_is(tmp_path: Path, as_json: bool) -> None:
    """`webward ... 2>&-`: the notes and sentences meant for stderr are dropped, never
    printed on stdout in their place (where they spoiled the page or the JSON), and the exit
    code still says what happened."""
    config = write_config(tmp_path)
    flags = ["--json"] if as_json else []
    refused = _webward(tmp_path, "fetch", "file:///etc/passwd", "--config", str(config), *flags,
                       close=(2,))  # fmt: skip
    assert refused.returncode == 3
    if as_json:
        assert json.loads(refused.stdout)["error"]["code"] == "refused"
    else:
        assert refused.stdout == b""
    with serve(routes={"/": respond(200, "<p>" + "owls at night " * 20 + "</p>")}) as site:
        read = _webward(tmp_path, "fetch", site.url("/"), "--max-chars", "40",
                        "--config", str(config), *flags, close=(2,))  # fmt: skip
    assert read.returncode == 0
    assert b"webward: more of this page" not in read.stdout  # the paging hint is stderr's
    if as_json:
        assert json.loads(read.stdout)["window"]["nextOffset"] == 40
    assert [decision for decision, _ in records(tmp_path)] == ["allowed", "refused"]


def test_json_escapes_cover_every_invisible_character() -> None:
    """Every control, format, line and paragraph separator and surrogate code point of this
    Python's Unicode is written as a \\u escape by the command line's JSON, and reads back."""
    import unicodedata

    from webward.cli import _ESCAPED_IN_JSON, json_text

    every = [
        chr(n)
        for n in range(0x7F, 0x110000)
        if unicodedata.category(chr(n)) in ("Cc", "Cf", "Zl", "Zp", "Cs")
    ]
    # And what shows as nothing without being a format character: the grapheme joiner,
    # Hangul fillers, the blank Braille pattern, variation selectors (which can carry bytes).
    every += ["\u034f", "\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\ufe0f", "\U000e0100"]
    assert [c for c in every if not _ESCAPED_IN_JSON.fullmatch(c)] == []
    # (Surrogates one by one: JSON reads a high one's escape and a low one's as one pair.)
    value = {"k\u202e": "".join(c for c in every if not "\ud800" <= c <= "\udfff")}
    value["e"] = "\u00e9\U0001f600 \ud800 x"
    text = json_text(value, encoding="utf-8")
    assert text.isascii() is False and "\u00e9\U0001f600" in text
    assert not [c for c in every if c in text]
    assert json.loads(text) == value
    assert json.loads(json_text(["\u00e9\x7f"], encoding="ascii")) == ["\u00e9\x7f"]
    assert json_text(["\u00e9\x7f"], encoding="ascii") == '["\\u00e9\\u007f"]'


def test_json_any_command_prints_is_valid_on_an_ascii_stdout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under --json, JSON a command writes itself (not through print_json: `ask --json`) is
    still valid on a stdout that cannot encode it: what the stream cannot hold is written as
    JSON's \\u escapes, not Python's \\xe9. Without --json, the \\xe9 of people's output."""
    import io

    from webward.cli import _replace_unencodable

    for as_json, expected in ((True, b'{"t": "caf\\u00e9 \\ud83d\\ude00"}\n'),
                              (False, b'{"t": "caf\\xe9 \\U0001f600"}\n')):  # fmt: skip
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
        monkeypatch.setattr(sys, "stdout", stream)
        _replace_unencodable(as_json)
        print(json.dumps({"t": "caf\u00e9 \U0001f600"}, ensure_ascii=False), flush=True)
        monkeypatch.undo()
        assert raw.getvalue() == expected
        if as_json:
            assert json.loads(raw.getvalue()) == {"t": "caf\u00e9 \U0001f600"}


# A full state dir, for real: a 1 MiB tmpfs in a mount namespace of the script's own (root in
# CI; elsewhere a user namespace maps this user to root), filled after one audited call.
_FULL_DISK_SCRIPT = """
set -u
mount -t tmpfs -o size=1m tmpfs "$FULL"
ww() { "$PYTHON" -m webward "$@" --config "$CONFIG"; }
ww fetch file:///before-full >/dev/null 2>&1
dd if=/dev/zero of="$FULL/filler" bs=1k >/dev/null 2>&1
ww fetch file:///when-full >/dev/null 2>"$OUT/fetch.err"; echo $? >"$OUT/fetch.rc"
ww fetch file:///when-full --json >"$OUT/fetch.json" 2>"$OUT/fetch-json.err"
ww audit --json >"$OUT/audit.json" 2>"$OUT/audit.err"; echo $? >"$OUT/audit.rc"
"""


def _run_with_a_mount(script: str, place: Path, out: Path, tmp_path: Path) -> None:
    """``script`` in a mount namespace of its own, as root (in CI; elsewhere a user namespace
    maps this user to root), with $FULL the directory ``place`` it mounts on, $OUT ``out`` for
    what it keeps, and $CONFIG a config whose state dir is ``place``/state."""
    config = tmp_path / "c.toml"
    config.write_text(f"[state]\ndir = {json.dumps(str(place / 'state'))}\n", encoding="utf-8")
    namespace = ["--mount"] if os.geteuid() == 0 else ["--mount", "--map-root-user"]
    env = {
        **os.environ,
        "FULL": str(place),
        "OUT": str(out),
        "CONFIG": str(config),
        "PYTHON": sys.executable,
    }
    env.pop("WEBWARD_STATE_DIR", None)
    ran = subprocess.run(
        ["unshare", *namespace, "bash", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr


def test_a_full_disk_is_said_and_the_log_still_reads(tmp_path: Path) -> None:
    """With the state dir's disk full, a call is refused in one line that says the disk is
    full and to free space (not "make that store writable", no log line before it), and
    `webward audit` still lists the records (it failed, exit 3, "move it aside")."""
    full, out = tmp_path / "full", tmp_path / "out"
    full.mkdir()
    out.mkdir()
    _run_with_a_mount(_FULL_DISK_SCRIPT, full, out, tmp_path)
    said = (out / "fetch.err").read_text()
    assert (out / "fetch.rc").read_text().strip() == "3", said
    assert len(said.splitlines()) == 1, said
    assert said.startswith("webward: refused: audit unavailable;"), said
    assert "is full" in said and "free space" in said and "writable" not in said, said
    assert (out / "fetch-json.err").read_text() == ""  # the refusal is the JSON on stdout
    assert "is full" in json.loads((out / "fetch.json").read_text())["error"]["message"]
    listed = (out / "audit.json").read_text()
    assert (out / "audit.rc").read_text().strip() == "0", (out / "audit.err").read_text()
    assert [r["target"] for r in json.loads(listed)] == ["file:///before-full"]


def test_a_read_only_filesystem_is_said_as_one(tmp_path: Path) -> None:
    """A state dir on a filesystem mounted read-only (root included, whom mode bits do not
    stop): the refusal says "is on a read-only filesystem", not "is not writable by this
    user", which chmod or another user cannot fix."""
    place, out = tmp_path / "ro", tmp_path / "out"
    place.mkdir()
    out.mkdir()
    script = (
        'set -u\nmount -t tmpfs -o size=1m,ro tmpfs "$FULL"\n'
        '"$PYTHON" -m webward fetch file:///x --config "$CONFIG" 2>"$OUT/fetch.err"\n'
        'echo $? >"$OUT/fetch.rc"\n'
    )
    _run_with_a_mount(script, place, out, tmp_path)
    said = (out / "fetch.err").read_text()
    assert (out / "fetch.rc").read_text().strip() == "3", said
    assert len(said.splitlines()) == 1, said
    assert f"cannot be written ({place} is on a read-only filesystem)" in said, said


@pytest.mark.parametrize("store", ["redis", "postgres"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_store_failure_is_one_sentence_on_stderr(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    store: str,
    as_json: bool,
) -> None:
    """Redis down, or PostgreSQL's DSN unset: the refusal alone, as the README promises,
    with --json nothing on stderr; the store's log line ("the Redis at ... failed", "audit
    records cannot be written") came first and said the same."""
    with socket.socket() as unanswered:  # bound, never listening: connections are refused
        unanswered.bind(("127.0.0.1", 0))
        port = unanswered.getsockname()[1]
        if store == "redis":
            extra = f'redis_url = "redis://127.0.0.1:{port}/0"\n'
            config = write_config(tmp_path).read_text().replace("[state]\n", f"[state]\n{extra}")
        else:
            monkeypatch.delenv("WW_PG_UNSET_FOR_TEST", raising=False)
            config = write_config(tmp_path, '[audit]\npostgres_dsn_env = "WW_PG_UNSET_FOR_TEST"\n')
            config = config.read_text()
        path = tmp_path / "store.toml"
        path.write_text(config, encoding="utf-8")
        argv = ["fetch", f"http://127.0.0.1:{port}/", "--config", str(path)]
        code = main([*argv, "--json"] if as_json else argv)
    out, err = capsys.readouterr()
    assert code == 3, err
    if as_json:
        assert err == "" and json.loads(out)["error"]["code"] == "refused"
    else:
        assert len(err.splitlines()) == 1 and err.startswith("webward: refused: "), err


@pytest.mark.parametrize("command", ["fetch", "search", "ask"])
def test_an_empty_session_names_the_flag(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    """`--session ''` is refused naming --session, as --agent names its flag; it said only
    "session must be a name of ..." (no flag). The model API is never reached: the ask is refused
    before its first turn."""
    monkeypatch.setenv("WEBWARD_SEARXNG_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    argv = {
        "fetch": ["fetch", "http://127.0.0.1:1/"],
        "search": ["search", "words", "--provider", "searxng"],
        "ask": ["ask", "Q?", "--provider", "openai", "--model", "m"],
    }[command]
    with fake_model_api("openai", []) as fake:
        extra = ["--base-url", fake.base_url] if command == "ask" else []
        code = main([*argv, *extra, "--session", "", "--config", str(write_config(tmp_path))])
        assert fake.bodies == []
    err = capsys.readouterr().err
    assert code == 2, err
    assert err == ("webward: --session must be a name of 1 to 512 printable characters\n")


def as_at_a_terminal() -> None:
    """A child's ``preexec_fn``: Ctrl-C's default action, as a shell at a terminal leaves it
    (the test runner's may not)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def hooked_env(tmp_path: Path, hook_source: str, **more: str) -> dict[str, str]:
    """The environment of a ``python -m webward`` child that runs ``hook_source`` first (its
    sitecustomize), with this checkout's source and its state in ``tmp_path``."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(hook_source, encoding="utf-8")
    src = str(Path(__file__).resolve().parents[1] / "src")
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hook), src]),
        "WEBWARD_STATE_DIR": str(tmp_path / "state"),
        **more,
    }


# Ctrl-C while the program is still loading: sent by the process to itself the moment a
# module is imported (a finder on sys.meta_path), as a person pressing it a moment after Enter
# does, without a race.
_CTRL_C_ON_IMPORT = """
import os, signal, sys

class _CtrlCOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, _CtrlCOnImport())
"""


def ctrl_c_on_import(module: str) -> str:
    """A sitecustomize that presses Ctrl-C as ``module`` is imported."""
    return f"MODULE = {module!r}\n" + _CTRL_C_ON_IMPORT


@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_while_the_program_loads_is_one_sentence_and_130(
    tmp_path: Path, as_json: bool
) -> None:
    """Ctrl-C during the 100-300 ms of imports before the command line's handling begins
    printed Python's traceback through the import machinery and exited -2 (killed by
    SIGINT), where the README promises 130 and one sentence; with --json, one JSON object."""
    env = hooked_env(tmp_path, ctrl_c_on_import("webward.cli"))
    command = [sys.executable, "-m", "webward", "fetch", "http://127.0.0.1:9/"]
    done = subprocess.run(
        command + (["--json"] if as_json else []),
        env=env,
        capture_output=True,
        timeout=60,
        preexec_fn=as_at_a_terminal,
    )
    err = done.stderr.decode()
    assert done.returncode == 130, err
    assert "Traceback" not in err, err
    said = "interrupted (Ctrl-C): stopped before any call began"
    if as_json:
        assert json.loads(done.stdout) == {"error": {"code": "cancelled", "message": said}}
        assert err == ""
    else:
        assert done.stdout == b""
        assert err == f"webward: {said}\n"
    assert not (tmp_path / "state").exists()  # nothing began: no store was opened


# Ctrl-C arriving while Python runs a weakref callback (the import system's module locks have
# one): its KeyboardInterrupt cannot propagate from there. Made to happen so, the moment a
# command's module is imported, by the process signalling itself inside such a callback.
_CTRL_C_IN_A_CALLBACK = """
import os, signal, sys, weakref

class _Object:
    pass

class _CtrlCInACallback:
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            sys.meta_path.remove(self)
            thing = _Object()
            ref = weakref.ref(thing, lambda _: os.kill(os.getpid(), signal.SIGINT))
            del thing  # the callback runs here, and Python drops its KeyboardInterrupt
        return None

sys.meta_path.insert(0, _CtrlCInACallback())
"""


def ctrl_c_in_a_callback(module: str) -> str:
    """A sitecustomize that presses Ctrl-C inside a weakref callback as ``module`` is
    imported."""
    return f"MODULE = {module!r}\n" + _CTRL_C_IN_A_CALLBACK


def test_ctrl_c_python_drops_in_a_callback_still_stops_the_fetch(tmp_path: Path) -> None:
    """A Ctrl-C whose KeyboardInterrupt Python raised inside a callback printed "Exception
    ignored in: ... KeyboardInterrupt" and was lost: the fetch went on, read the page and
    exited 0. It now stops the command before its call begins: 130, one sentence, no
    request sent and nothing to audit."""
    env = hooked_env(tmp_path, ctrl_c_in_a_callback("webward._cmd_fetch"))
    config = write_config(tmp_path)
    with serve(routes={"/": respond(body=b"<p>the page</p>")}) as site:
        done = subprocess.run(
            [sys.executable, "-m", "webward", "fetch", site.url("/"), "--config", str(config)],
            env=env,
            capture_output=True,
            timeout=60,
            preexec_fn=as_at_a_terminal,
        )
        assert site.requests == []
    err = done.stderr.decode()
    assert done.returncode == 130, err
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert err.startswith("webward: interrupted (Ctrl-C): stopped"), err
    assert err.count("\n") == 1, err
    assert done.stdout == b""
    assert not (tmp_path / "state" / "audit.db").exists() or records(tmp_path) == []


@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_python_drops_in_a_command_that_answers_anyway_keeps_one_answer(
    tmp_path: Path, as_json: bool
) -> None:
    """A Ctrl-C Python dropped while a command that runs no call (webward audit) loaded: the
    command answered all the same, and was then ended as interrupted with the cancelled
    call's words, and, with --json, a second JSON object after its answer on stdout. Its
    answer stays the one thing on stdout; stderr says it was interrupted after its answer;
    130."""
    env = hooked_env(tmp_path, ctrl_c_in_a_callback("webward._cmd_audit"))
    config = write_config(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "webward", "audit", "--since", "1h", "--config", str(config)]
        + (["--json"] if as_json else []),
        env=env,
        capture_output=True,
        timeout=60,
        preexec_fn=as_at_a_terminal,
    )
    err = done.stderr.decode()
    assert done.returncode == 130, err
    assert err == "webward: interrupted (Ctrl-C) as the command ended, after its answer\n"
    if as_json:
        assert json.loads(done.stdout) == []
    else:
        assert done.stdout == b"no audit records match\n"


# The operating system's resolver on a network whose DNS is gone: a lookup of the test's name
# that never answers (it says where it is first, in a file the test waits for).
_DNS_GONE = """
import os, socket, threading

_real = socket.getaddrinfo

def _getaddrinfo(host, *args, **kwargs):
    if host in ("stalled.example.com", b"stalled.example.com"):
        with open(os.environ["DNS_ASKED"], "w") as f:
            f.write("asked")
        threading.Event().wait()  # the resolver never answers
    return _real(host, *args, **kwargs)

socket.getaddrinfo = _getaddrinfo
"""


def test_ctrl_c_during_a_lookup_that_never_answers_ends_at_once(tmp_path: Path) -> None:
    """Ctrl-C while the host name was being looked up, on a network whose DNS does not
    answer: the call was audited as cancelled at once, but the lookup went on in a pool
    thread that the loop's close and the interpreter's exit both waited for, so the command
    ended only when the resolver gave up (5 to 20 s), or here, never answering, when the
    grace ran out ("did not end within 20 s"). Now it ends with the one sentence."""
    asked = tmp_path / "asked"
    env = hooked_env(tmp_path, _DNS_GONE, DNS_ASKED=str(asked))
    config = write_config(tmp_path)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "webward",
            "fetch",
            "http://stalled.example.com/",
            "--config",
            str(config),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=as_at_a_terminal,
    )
    deadline = time.monotonic() + 30
    while not asked.exists() and time.monotonic() < deadline:  # bounded poll
        time.sleep(0.01)
    assert asked.exists(), "the lookup was never asked"
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail("the interrupted command never exited")
    assert process.returncode == 130, err.decode()
    assert err.decode() == (
        "webward: interrupted (Ctrl-C): stopped; a call in flight, if any, was cancelled and "
        "audited as cancelled\n"
    )
    assert records(tmp_path) == [("failed", "cancelled")]


# What pydantic-core raised when Ctrl-C struck while `webward mcp` imported the MCP SDK (it
# builds each model's schema as its class is made): the KeyboardInterrupt, inside its Rust
# code, became this SchemaError, its words as observed. Raised where that import happens.
_CTRL_C_IN_PYDANTIC = """
import sys

class _SchemaBuildInterrupted:
    def find_spec(self, name, path=None, target=None):
        if name == "webward._mcp":
            sys.meta_path.remove(self)
            from pydantic_core import SchemaError
            raise SchemaError(
                "Error building `model` serializer:\\n  SchemaError: Error building `literal` "
                "serializer:\\n  KeyboardInterrupt: "
            )
        return None

sys.meta_path.insert(0, _SchemaBuildInterrupted())
"""


def test_ctrl_c_a_library_reports_as_its_own_error_is_an_interrupt(tmp_path: Path) -> None:
    """Ctrl-C while `webward mcp` loaded the MCP SDK reached the command as pydantic-core's
    SchemaError naming the KeyboardInterrupt: "webward failed unexpectedly (SchemaError);
    this is a bug in webward", exit 1. It is the interrupt: 130 and the one sentence."""
    env = hooked_env(tmp_path, _CTRL_C_IN_PYDANTIC)
    done = subprocess.run(
        [sys.executable, "-m", "webward", "mcp", "--config", str(write_config(tmp_path))],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr == (
        "webward mcp: interrupted (Ctrl-C): stopped; calls in flight were answered, or "
        "cancelled, and audited\n"
    )


# Ctrl-C that strikes inside an exec() of a string, as the imports of a command's first moments
# run them (dataclasses make their methods so): the process signals itself in one, the moment
# the settings module is imported (after the command's own handling began).
_CTRL_C_IN_AN_EXEC = """
import sys

class _CtrlCInAnExec:
    def find_spec(self, name, path=None, target=None):
        if name == "webward._settings":
            sys.meta_path.remove(self)
            exec("import os, signal\\nos.kill(os.getpid(), signal.SIGINT)\\nx = 1")
        return None

sys.meta_path.insert(0, _CtrlCInAnExec())
"""


def test_ctrl_c_inside_an_exec_still_exits_130_not_killed(tmp_path: Path) -> None:
    """A KeyboardInterrupt that left an exec() of a string is noted by CPython, caught or not,
    and at exit the process killed itself with SIGINT in place of the code it gave: the
    sentence was said, and the exit was -2, not the README's 130."""
    env = hooked_env(tmp_path, _CTRL_C_IN_AN_EXEC)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "webward",
            "fetch",
            "http://127.0.0.1:9/",
            "--config",
            str(write_config(tmp_path)),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=as_at_a_terminal,
    )
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr == (
        "webward: interrupted (Ctrl-C): stopped; a call in flight, if any, was cancelled and "
        "audited as cancelled\n"
    )


def test_a_file_size_limit_is_named_not_taken_for_a_broken_log(tmp_path: Path) -> None:
    """Under a file size limit (`ulimit -f`, a service's LimitFSIZE=) the audit log cannot
    grow, and SQLite says only "disk I/O error": a call was refused with "make that store
    writable", and `webward audit` (whose read writes the -shm beside the log) with "if it is
    no SQLite database, move it aside", a step that hides a sound log. Both now name the
    limit and say to raise it."""
    import resource

    config = write_config(tmp_path)
    env = {**os.environ, "WEBWARD_STATE_DIR": str(tmp_path / "state")}
    page = {"/": respond(body=b"<p>the page</p>")}

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, resource.RLIM_INFINITY))

    with serve(routes=page) as site:
        first = subprocess.run(
            [sys.executable, "-m", "webward", "fetch", site.url("/"), "--config", str(config)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert first.returncode == 0, first.stderr
        (tmp_path / "state" / "audit.db-wal").unlink(missing_ok=True)  # as after a checkpoint
        (tmp_path / "state" / "audit.db-shm").unlink(missing_ok=True)
        fetched = subprocess.run(
            [
                sys.executable,
                "-m",
                "webward",
                "fetch",
                site.url("/?again"),
                "--config",
                str(config),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=limited,
        )
    listed = subprocess.run(
        [sys.executable, "-m", "webward", "audit", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limited,
    )
    assert fetched.returncode == 3, fetched.stderr
    assert "this process's file size limit (ulimit -f), 8,192 bytes" in fetched.stderr
    assert "raise that limit" in fetched.stderr
    assert listed.returncode == 3, listed.stderr
    assert "file size limit (ulimit -f), 8,192 bytes" in listed.stderr
    assert "move it aside" not in listed.stderr


@pytest.mark.parametrize("fd", [0, 1])
def test_mcp_started_without_stdin_or_stdout_says_so(tmp_path: Path, fd: int) -> None:
    """`webward mcp >&-` (or `<&-`): the stdio server has no pipe to speak on, which is said in
    one sentence with the next step, exit 2 (stdout closed failed as a bug, "failed
    unexpectedly (AttributeError)", and stdin closed exited 0 in silence)."""
    closed = _webward(tmp_path, "mcp", close=(fd,))
    name = "stdin" if fd == 0 else "stdout"
    assert closed.returncode == 2
    assert closed.stderr.decode() == (
        f"webward: {name} is closed, and without --http MCP runs on stdin and stdout; start "
        "`webward mcp` from an MCP client (which gives it both pipes), or serve over HTTP "
        "with --http 127.0.0.1:8765\n"
    )
