"""The command line as a newcomer meets it, run as a subprocess: paging without downloads,
failures named for what they are, next steps in messages, output that behaves in a pipe,
state files only the owner can read, and the faces whose extra is missing."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fake_search import BRAVE_PATH, FakeBrave, results
from localserver import LocalServer, accept_counter, respond, serve
from reportlab.pdfgen import canvas

LONG_PAGE = (
    "<html><head><title>Long</title></head><body><article><h1>Long page</h1>"
    + "".join(
        f"<p>Paragraph {i} of the long page, with enough words to make a real line.</p>"
        for i in range(1500)
    )
    + "</article></body></html>"
)
ROBOTS = respond(200, "User-agent: *\nAllow: /\n", "text/plain")


def run(
    *args: str, env: dict[str, str] | None = None, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    """``webward ARGS`` in a new process; ``prelude`` is Python run before the CLI starts."""
    command = [sys.executable, "-m", "webward", *args]
    if prelude:
        command = [
            sys.executable,
            "-c",
            f"{prelude}\nimport sys\nfrom webward.cli import main\nsys.exit(main(sys.argv[1:]))",
            *args,
        ]
    return subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=120
    )


def write_config(tmp_path: Path, extra: str = "", robots: bool = True) -> Path:
    path = tmp_path / "webward.toml"
    path.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\ndefault_tier = "connected"\n'
        f"robots = {'true' if robots else 'false'}\n{extra}"
    )
    return path


def page_requests(srv: LocalServer) -> list[str]:
    return [r.path for r in srv.requests]


def read_all_windows(url: str, config: Path) -> list[dict[str, object]]:
    windows = []
    offset: int | None = 0
    while offset is not None:
        out = run("fetch", url, "--config", str(config), "--offset", str(offset), "--json")
        assert out.returncode == 0, out.stderr
        window = json.loads(out.stdout)["window"]
        windows.append(window)
        offset = window["nextOffset"]
    return windows


# ---- 2. paging costs no download -----------------------------------------------------------


def test_paging_in_new_processes_downloads_the_page_and_robots_once(tmp_path: Path) -> None:
    """Every window after the first comes from the state dir's cache: the server sees one
    robots.txt and one page, and a burst of 2 does not rate-limit the later windows."""
    config = write_config(tmp_path, "[limits]\nper_host_rate = 0.01\nper_host_burst = 2\n")
    with serve(routes={"/robots.txt": ROBOTS, "/": respond(200, LONG_PAGE)}) as srv:
        windows = read_all_windows(srv.url("/"), config)
    assert len(windows) >= 3
    assert page_requests(srv) == ["/robots.txt", "/"]


def test_concurrent_processes_share_the_cache(tmp_path: Path) -> None:
    """After one read, four processes asking for windows at once are all served from the
    cache, without a request."""
    config = write_config(tmp_path)
    with serve(routes={"/robots.txt": ROBOTS, "/": respond(200, LONG_PAGE)}) as srv:
        assert run("fetch", srv.url("/"), "--config", str(config)).returncode == 0
        with ThreadPoolExecutor(4) as pool:
            outs = list(
                pool.map(
                    lambda n: run(
                        "fetch", srv.url("/"), "--config", str(config), "--offset", str(n)
                    ),
                    (40_000, 40_000, 80_000, 0),
                )
            )
    assert [o.returncode for o in outs] == [0, 0, 0, 0], [o.stderr for o in outs]
    assert page_requests(srv) == ["/robots.txt", "/"]


@pytest.mark.parametrize(
    "limits", ["page_cache_ttl_s = 0", "page_cache_max_chars = 1000"], ids=["ttl", "size"]
)
def test_cache_limits_from_the_config_apply(tmp_path: Path, limits: str) -> None:
    """With caching off or a cache smaller than the page, each window reads the page again
    (robots.txt answers are still kept)."""
    config = write_config(tmp_path, f"[limits]\n{limits}\n")
    with serve(routes={"/robots.txt": ROBOTS, "/": respond(200, LONG_PAGE)}) as srv:
        for offset in ("0", "40000"):
            out = run("fetch", srv.url("/"), "--config", str(config), "--offset", offset)
            assert out.returncode == 0, out.stderr
    assert page_requests(srv) == ["/robots.txt", "/", "/"]


def test_a_robots_refusal_is_kept_between_processes(tmp_path: Path) -> None:
    """A robots.txt that disallows a path refuses the second process too, without asking the
    host again."""
    config = write_config(tmp_path)
    robots = respond(200, "User-agent: *\nDisallow: /private\n", "text/plain")
    with serve(routes={"/robots.txt": robots, "*": respond(200, "<p>x</p>")}) as srv:
        for _ in range(2):
            out = run("fetch", srv.url("/private"), "--config", str(config))
            assert out.returncode == 3
            assert "robots.txt" in out.stderr and "disallows /private" in out.stderr
    assert page_requests(srv) == ["/robots.txt"]


# ---- 3. say what really failed ---------------------------------------------------------------


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed when the block ends: nothing listens there


def test_a_host_that_cannot_be_connected_to_is_an_upstream_failure(tmp_path: Path) -> None:
    """Nothing listening: exit 1 naming the connection, not a robots.txt refusal (exit 3);
    the audit log says failed."""
    config = write_config(tmp_path)
    port = closed_port()
    out = run("fetch", f"http://127.0.0.1:{port}/page", "--config", str(config))
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip() == f"webward: could not connect to 127.0.0.1:{port}"
    rows = json.loads(run("audit", "--json", "--config", str(config)).stdout)
    assert [(r["decision"], r["reason"]) for r in rows] == [("failed", "connect")]


@pytest.mark.anyio
async def test_a_host_that_cannot_be_resolved_is_an_upstream_failure() -> None:
    """A name without an address fails as an upstream failure naming the name (no robots
    refusal), and nothing is cached: a later read asks again."""
    from webward import Settings, StaticResolver, UpstreamError, Web
    from webward.testing import MemoryAuditSink

    settings = Settings().replace({"policy": {"default_tier": "connected", "robots": True}})
    async with Web(settings, StaticResolver({}), audit=MemoryAuditSink()) as web:
        for _ in range(2):
            with pytest.raises(UpstreamError) as err:
                await web.fetch("http://nowhere.example/page")
            assert err.value.reason == "dns"
            assert err.value.message == "nowhere.example could not be resolved"


def test_a_robots_txt_answering_5xx_stays_a_refusal(tmp_path: Path) -> None:
    """RFC 9309: a robots.txt that answers 503 disallows every path: exit 3."""
    config = write_config(tmp_path)
    with serve(routes={"/robots.txt": respond(503, "busy"), "*": respond(200, "<p>x</p>")}) as srv:
        out = run("fetch", srv.url("/page"), "--config", str(config))
    assert out.returncode == 3
    assert "robots.txt" in out.stderr and "HTTP 503" in out.stderr
    assert page_requests(srv) == ["/robots.txt"]


# ---- 4. next steps in messages -------------------------------------------------------------


def test_a_refused_internal_address_names_the_setting_that_allows_it(tmp_path: Path) -> None:
    """The refusal names allow_ranges with the address's own range; nothing is connected."""
    state = {"WEBWARD_STATE_DIR": str(tmp_path / "state")}
    with accept_counter("127.0.0.2") as internal:
        out = run("fetch", internal.url("/"), env=state)
        assert internal.accepts == 0
    assert out.returncode == 3
    assert '"127.0.0.2/32" to [network] allow_ranges' in out.stderr
    assert "WEBWARD_ALLOW_RANGES" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_local_page_takes_one_refusal_to_set_up(tmp_path: Path) -> None:
    """At tier as-owner, a first read of a server on this machine is refused once with both
    steps: its range, and the tier's allow-list (it was two refusals in a row, the second
    only after the first was fixed). Doing what the sentence says reads the page; at a tier
    that needs no allow-list, only the range is named."""
    config = tmp_path / "webward.toml"
    config.write_text("")
    with serve(routes={"/robots.txt": ROBOTS, "/": respond(200, LONG_PAGE)}) as srv:
        with accept_counter("127.0.0.1") as internal:
            refused = run("fetch", internal.url("/"), "--config", str(config))
            connected = run(
                "fetch", internal.url("/"), "--config", str(config), "--tier", "connected"
            )
            assert internal.accepts == 0
        assert refused.returncode == 3
        said = refused.stderr
        assert len(said.strip().splitlines()) == 1
        assert '"127.0.0.1/32" to [network] allow_ranges of the config file' in said
        assert "and add 127.0.0.1 to [policy] allow" in said
        assert "give agent cli tier connected ([agents.cli] tier in the config)" in said
        assert said.rstrip().endswith("or choose this call's tier with --tier")
        assert connected.returncode == 3
        assert "[policy] allow" not in connected.stderr
        config.write_text(
            '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\nallow = ["127.0.0.1"]\n'
        )
        read = run("fetch", srv.url("/"), "--config", str(config))
    assert read.returncode == 0, read.stderr
    assert page_requests(srv) == ["/robots.txt", "/"]


def test_localhost_names_the_tiers_step_too(tmp_path: Path) -> None:
    """localhost's step (use 127.0.0.1) is followed by the tier's for 127.0.0.1; a metadata
    address names no step at all, since nothing lets it through."""
    env = {"WEBWARD_STATE_DIR": str(tmp_path)}
    out = run("fetch", "http://localhost:8000/", env=env)
    assert "use 127.0.0.1 instead" in out.stderr
    assert "and add 127.0.0.1 to [policy] allow" in out.stderr
    metadata = run("fetch", "http://169.254.169.254/latest/", env=env)
    assert metadata.returncode == 3
    assert "[policy] allow" not in metadata.stderr
    assert "allow_ranges" not in metadata.stderr


def test_localhost_suggests_127_0_0_1_and_the_setting(tmp_path: Path) -> None:
    """`localhost` is refused by name, with 127.0.0.1 and allow_ranges as the way through."""
    out = run("fetch", "http://localhost:8000/", env={"WEBWARD_STATE_DIR": str(tmp_path)})
    assert out.returncode == 3
    assert "use 127.0.0.1 instead" in out.stderr
    assert '"127.0.0.1/32" to [network] allow_ranges' in out.stderr


SHELL = (
    "<html><head><title>App</title></head><body><div id='root'></div>"
    "<script>document.getElementById('root').textContent = 'hello';</script></body></html>"
)


def test_a_script_only_page_says_it_needs_a_browser(tmp_path: Path) -> None:
    """At tier as-owner nothing renders: the read says so and where it would (exit 3),
    instead of an empty envelope with exit 0."""
    config = tmp_path / "webward.toml"
    config.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n'
        '[policy]\ndefault_tier = "as-owner"\nallow = ["127.0.0.1"]\nrobots = false\n'
    )
    with serve(routes={"/": respond(200, SHELL)}) as srv:
        out = run("fetch", srv.url("/"), "--config", str(config))
    assert out.returncode == 3
    assert out.stdout == ""
    assert "writes its text with JavaScript" in out.stderr
    assert "tiers connected and full" in out.stderr


def test_search_not_configured_speaks_of_the_command(tmp_path: Path) -> None:
    """The person ran `webward search`: the way that still works is `webward fetch URL`."""
    out = run("search", "rust", "--tier", "connected", env={"WEBWARD_STATE_DIR": str(tmp_path)})
    assert out.returncode == 3
    assert "web search is not configured" in out.stderr
    assert "`webward fetch URL` still works" in out.stderr
    assert "web_fetch" not in out.stderr


# What a user id without a passwd entry meets, with HOME unset (`docker run --user 12345`, a
# service): the passwd lookup of the uid fails, as it does there (a test run as root or as a
# listed user cannot be such a user without leaving its own Python behind).
NO_HOME = (
    "import os, pwd\n"
    "def _no_entry(uid):\n"
    "    raise KeyError(f'getpwuid(): uid not found: {uid}')\n"
    "pwd.getpwuid = _no_entry\n"
    "os.environ.pop('HOME', None)\n"
)


def test_a_user_without_a_home_is_told_what_to_set(tmp_path: Path) -> None:
    """No home to find: what needs the state dir or the credential file says so in one
    sentence with what to set (exit 2), not "failed unexpectedly (RuntimeError) ... a bug";
    with the state dir set, a search whose key is in the environment needs no credential
    file and is made (it was audited failed internal_error)."""
    reach = {"WEBWARD_ALLOW_RANGES": "127.0.0.1/32", "WEBWARD_TIER": "connected"}
    for args in (["fetch", "http://127.0.0.1:9/"], ["audit"], ["credentials", "list"]):
        out = run(*args, prelude=NO_HOME + "os.environ.pop('WEBWARD_STATE_DIR')\n", env=reach)
        assert out.returncode == 2, out.stderr
        assert out.stderr.startswith("webward: cannot find the "), out.stderr
        assert "no home directory is known for this user" in out.stderr
        assert "set HOME, or set " in out.stderr and out.stderr.count("\n") == 1
    env = {"WEBWARD_STATE_DIR": str(tmp_path / "state"), "BRAVE_SEARCH_API_KEY": "k"}
    with serve(routes={BRAVE_PATH: FakeBrave(results(2), "k")}) as brave:
        env |= {"WEBWARD_BRAVE_URL": brave.base, **reach}
        out = run("search", "owls", env=env, prelude=NO_HOME)
    assert out.returncode == 0, out.stderr
    assert "Result 1" in out.stdout


# ---- 5. output -------------------------------------------------------------------------------


def make_pdf(text: str) -> bytes:
    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    c.drawString(100, 750, text)
    c.showPage()
    c.save()
    return buf.getvalue()


def test_a_pdfs_text_shows_in_the_text_output(tmp_path: Path) -> None:
    """`webward fetch` of a PDF prints its extracted text: the page's reading, in the
    envelope, with the document part named above it."""
    config = write_config(tmp_path, robots=False)
    pdf = make_pdf("Quarterly figures in the PDF body")
    with serve(routes={"/r.pdf": respond(200, pdf, "application/pdf")}) as srv:
        out = run("fetch", srv.url("/r.pdf"), "--config", str(config))
    assert out.returncode == 0, out.stderr
    assert "[document r.pdf, " in out.stdout
    content = out.stdout.split("<<<untrusted-web-content nonce=", 1)[1]
    assert "Quarterly figures in the PDF body" in content


@pytest.mark.parametrize("buffered", [False, True])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
@pytest.mark.parametrize("path", ["/", "/short"])
def test_output_into_a_closed_pipe_ends_quietly(
    tmp_path: Path, buffered: bool, json_flag: list[str], path: str
) -> None:
    """`webward fetch URL | head` where the reader is gone: no BrokenPipeError traceback,
    also with stdout block-buffered (no PYTHONUNBUFFERED, as on most machines), where the
    last flush of a short output came after main() had returned: "Exception ignored" and
    exit 120."""
    config = write_config(tmp_path, robots=False)
    env = {k: v for k, v in os.environ.items() if not (buffered and k == "PYTHONUNBUFFERED")}
    routes = {"/": respond(200, LONG_PAGE), "/short": respond(200, "<p>a short page</p>")}
    with serve(routes=routes) as srv:
        command = ["fetch", srv.url(path), "--config", str(config), *json_flag]
        proc = subprocess.Popen(
            [sys.executable, "-m", "webward", *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert proc.stdout is not None
        proc.stdout.close()  # the reader went away before the first line
        _, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    assert b"Exception ignored" not in err
    assert b"webward:" not in err or err.startswith(b"webward: more of this page")
    assert proc.returncode == 141


def test_library_warnings_and_logs_stay_off_stderr(tmp_path: Path) -> None:
    """A library's warning or log record during a command is not printed; webward's own log
    records still are."""
    prelude = (
        "import logging, warnings\n"
        "import webward._cmd_fetch as f\n"
        "def noisy(args, settings):\n"
        "    warnings.warn('a library warning', UserWarning)\n"
        "    logging.getLogger('trafilatura.core').error('a library log record')\n"
        "    logging.getLogger('webward.agents').error('our own record')\n"
        "    return 0\n"
        "f.run = noisy\n"
    )
    out = run(
        "fetch", "http://127.0.0.1/", prelude=prelude, env={"WEBWARD_STATE_DIR": str(tmp_path)}
    )
    assert out.returncode == 0
    assert "library" not in out.stderr
    assert "our own record" in out.stderr


def test_audit_cuts_long_targets_and_says_when_rows_are_left_out(tmp_path: Path) -> None:
    """In a 120-column terminal every row fits, long targets end with an ellipsis, and a
    --limit that hides rows says so."""
    env = {"WEBWARD_STATE_DIR": str(tmp_path / "state")}
    for i in range(3):
        run("fetch", f"http://10.0.0.{i}/{'a' * 150}", env=env)
    out = run("audit", "--limit", "2", env={**env, "COLUMNS": "120"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 3  # header and two rows
    assert all(len(line) <= 120 for line in lines)
    assert lines[1].endswith("…")
    assert "more records match than the 2 shown" in out.stderr
    whole = run("audit", "--limit", "3", env={**env, "COLUMNS": "120"})
    assert whole.stderr == ""
    # --json says so too, on stderr, its output still one array of the records shown.
    cut = run("audit", "--limit", "2", "--json", env=env)
    assert len(json.loads(cut.stdout)) == 2
    assert "more records match than the 2 shown" in cut.stderr
    # A COLUMNS that is no width is not set: in a pipe, no limit (it cut targets short; "²"
    # was an internal error, and "١٢" a width of 12).
    for columns in ("abc", "0", "-5", " ", "\u00b2", "\u0661\u0662"):
        uncut = run("audit", "--limit", "3", env={**env, "COLUMNS": columns})
        assert (uncut.returncode, uncut.stderr) == (0, ""), columns
        assert "a" * 150 in uncut.stdout, columns


def test_credentials_usage_names_its_arguments(tmp_path: Path) -> None:
    """The usage line reads ACTION [NAME], not a brace list of choices."""
    out = run("credentials", "--help")
    assert "ACTION [NAME]" in out.stdout
    assert "{set,get,delete,list}" not in out.stdout


def test_commands_that_read_no_config_run_while_it_is_broken(tmp_path: Path) -> None:
    """`serve --hash-token` and `credentials` need nothing from the config: with a config
    being written and not yet valid TOML, they do their work (exit 0), where they refused
    with the TOML error, though the token's hash is what the operator was writing into it.
    `serve` itself still refuses the broken config."""
    broken = tmp_path / "webward.toml"
    broken.write_text('[agents.bot]\ntier = "connected"\ntoken_sha256 = "\n', encoding="utf-8")
    env = {**os.environ, "WEBWARD_CONFIG": str(broken), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    env["WEBWARD_STATE_DIR"] = str(tmp_path / "state")

    def webward(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "webward", *args]
        return subprocess.run(
            command, input=stdin, capture_output=True, text=True, env=env, timeout=60
        )

    hashed = webward("serve", "--hash-token", stdin="a-token-no-one-could-guess\n")
    assert (hashed.returncode, hashed.stderr) == (0, "")
    assert len(hashed.stdout.strip()) == 64
    listed = webward("credentials", "list")
    assert (listed.returncode, listed.stderr) == (0, "")
    serving = webward("serve", "--port", "0")
    assert serving.returncode == 2 and "is not valid TOML" in serving.stderr


@pytest.mark.parametrize("command", ["serve", "console"])
@pytest.mark.parametrize("port", ["\u0663", "\u00b2", "1e3"])
def test_a_port_in_other_digits_is_refused_not_bound(
    tmp_path: Path, command: str, port: str
) -> None:
    """`--port ٣` (an Arabic-Indic three) is bad usage, exit 2, never a server on port 3:
    argparse's int() took it, and the console listened on port 3."""
    # Bounded: a server that took the port runs until killed.
    out = subprocess.run(
        [sys.executable, "-m", "webward", command, "--port", port],
        capture_output=True,
        text=True,
        env={**os.environ, "WEBWARD_STATE_DIR": str(tmp_path)},
        timeout=30,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines()[-1] == (
        f"webward {command}: error: argument --port: must be a port number from 0 to 65535, "
        f"not {port!r}"
    )


def test_credentials_warn_about_a_name_webward_does_not_read(tmp_path: Path) -> None:
    """A typo such as TAVLY_API_KEY is stored as asked, with a warning naming the likely
    meant name; a known name gets no warning."""
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "WEBWARD_STATE_DIR": str(tmp_path)}
    typo = subprocess.run(
        [sys.executable, "-m", "webward", "credentials", "set", "TAVLY_API_KEY"],
        input="tvly-0123456789abcdef\n",
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )
    assert typo.returncode == 0, typo.stderr
    assert "webward does not read TAVLY_API_KEY; did you mean TAVILY_API_KEY?" in typo.stderr
    known = subprocess.run(
        [sys.executable, "-m", "webward", "credentials", "set", "TAVILY_API_KEY"],
        input="tvly-0123456789abcdef\n",
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )
    assert known.returncode == 0 and known.stderr == ""


# ---- 6. files ----------------------------------------------------------------------------------


def test_state_databases_are_created_owner_only(tmp_path: Path) -> None:
    """audit.db, limits.db and cache.db (and their WAL files) are 0600, the dir 0700."""
    state = tmp_path / "state"
    config = write_config(tmp_path)
    with serve(routes={"/robots.txt": ROBOTS, "/": respond(200, "<p>hello</p>")}) as srv:
        out = run(
            "fetch", srv.url("/"), "--config", str(config), env={"WEBWARD_STATE_DIR": str(state)}
        )
    assert out.returncode == 0, out.stderr
    names = sorted(p.name for p in state.iterdir())
    assert {"audit.db", "limits.db", "cache.db"} <= set(names)
    for path in state.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    assert stat.S_IMODE(state.stat().st_mode) == 0o700


# ---- 1. optional faces name their extra -----------------------------------------------------


@pytest.mark.parametrize(
    ("args", "hidden", "extra"),
    [
        (["mcp"], "mcp", "mcp"),
        (["serve"], "uvicorn", "serve"),
        (["fetch", "http://127.0.0.1:9/"], "redis", "redis"),
        (["audit"], "psycopg", "postgres"),
    ],
)
def test_a_missing_extra_is_named_in_one_sentence(
    tmp_path: Path, args: list[str], hidden: str, extra: str
) -> None:
    """Without its package, a face or store says which extra to install: exit 2 (audit: 3,
    the log cannot be read), one line, no traceback."""
    config = tmp_path / "webward.toml"
    config.write_text(
        '[state]\nredis_url = "redis://127.0.0.1:9/0"\n[audit]\npostgres_dsn_env = "PG_DSN"\n'
    )
    prelude = f"import sys\nsys.modules[{hidden!r}] = None  # as if not installed"
    env = {"WEBWARD_CONFIG": str(config), "PG_DSN": "postgresql://127.0.0.1:9/x"}
    out = run(*args, prelude=prelude, env={**env, "WEBWARD_STATE_DIR": str(tmp_path)})
    assert out.returncode == (3 if args == ["audit"] else 2), out.stderr
    assert f"pip install 'webward[{extra}]'" in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "hidden"),
    [(["fetch", "http://127.0.0.1:9/"], "anyio"), (["audit"], "orjson")],
)
def test_a_missing_dependency_is_named_with_the_command_that_installs_it(
    tmp_path: Path, args: list[str], hidden: str
) -> None:
    """A package every install has, gone from this one (an install cut short, a dependency
    uninstalled since), is named with pip's command for this Python: exit 1, one line, no
    traceback. It was "failed unexpectedly (ModuleNotFoundError); this is a bug in
    webward", which gave the person nothing to do."""
    prelude = f"import sys\nsys.modules[{hidden!r}] = None  # as if uninstalled"
    out = run(*args, prelude=prelude, env={"WEBWARD_STATE_DIR": str(tmp_path)})
    assert out.returncode == 1, out.stderr
    assert out.stderr == (
        f"webward: webward could not import {hidden}, a package it needs: this Python's install "
        f"of webward is incomplete; install what is missing with `{sys.executable} -m pip "
        "install webward` (or reinstall webward as it was installed)\n"
    )


# ---- 7. start-up: import nothing a command does not use -----------------------------------


def modules_after(tmp_path: Path, *args: str) -> set[str]:
    """The modules a `webward ARGS` process had loaded when it exited."""
    dump = tmp_path / "modules.json"
    prelude = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: open({str(dump)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
        # As in a plain install: trio is no dependency of webward, but httpcore imports it
        # (and trio idna) wherever it is installed, as in the test environment.
        "sys.modules['trio'] = None"
    )
    out = run(*args, prelude=prelude, env={"WEBWARD_STATE_DIR": str(tmp_path / "state")})
    assert out.returncode in (0, 2), out.stderr
    return set(json.loads(dump.read_text()))


NEVER_FOR_A_READ = (
    "playwright",
    "redis",
    "psycopg",
    "mcp",
    "starlette",
    "uvicorn",
    "pydantic",
    "anthropic",
    "openai",
    "webward.agents",
    "webward._gateway",
    "webward._mcp",
    "webward.search",
    "keyring",  # the credential store: search providers' keys
    "prometheus_client",  # the servers' /metrics
    "bm25s",  # find in page: only with --query
    "numpy",
    "pypdf",  # PDFs only
)


# Loaded on first use, not for a read of a small page that declares its charset, with the
# config file and state dir named: the mail parser (HTTP dates in Retry-After only), the
# codec modules behind the WHATWG table (charset detection only), platformdirs (the default
# config and state dirs), idna (non-ASCII host names), the render's egress proxy and the
# other commands' modules.
NOT_FOR_A_SMALL_READ = (
    "email",
    "idna",
    "webward._proxy",
    "_multibytecodec",
    "encodings.cp1252",
    "platformdirs",
    "webward._cmd_audit",
    "webward._cmd_search",
    "webward._cmd_serve",
)


def test_help_imports_no_command_dependencies(tmp_path: Path) -> None:
    """`webward --help` loads neither the core nor its HTTP stack nor any face, nor the
    settings (their dataclasses, TOML parser and platformdirs) or logging."""
    loaded = modules_after(tmp_path, "--help")
    for name in ("webward._web", "httpcore", "anyio", "lxml", "webward.audit", *NEVER_FOR_A_READ):
        assert name not in loaded, name
    for name in ("webward._settings", "tomllib", "platformdirs", "dataclasses", "logging"):
        assert name not in loaded, name
    assert "webward._cmd_fetch" in loaded  # it did list the commands


def test_fetch_of_a_small_page_imports_only_what_a_read_uses(tmp_path: Path) -> None:
    """`webward fetch` of a small page loads no browser, store, server, MCP or model code, and
    not the main-content extractor (a short page is read whole)."""
    config = write_config(tmp_path)
    with serve(routes={"/robots.txt": ROBOTS, "/": respond(200, "<p>small page</p>")}) as srv:
        loaded = modules_after(tmp_path, "fetch", srv.url("/"), "--config", str(config))
    assert "webward._web" in loaded and "html_to_markdown" in loaded  # it did read the page
    for name in (*NEVER_FOR_A_READ, *NOT_FOR_A_SMALL_READ, "trafilatura", "justext"):
        assert name not in loaded, name


SHORT_ARTICLE = (
    "<html><head><title>Note</title></head><body><nav><a href='/'>Home</a></nav><article>"
    + "".join(
        f"<p>Paragraph {i} of a short post, with a sentence or two of words.</p>" for i in range(12)
    )
    + "</article><footer>Written by someone.</footer></body></html>"
)


def test_fetch_of_a_short_article_adds_only_the_extractor(tmp_path: Path) -> None:
    """A page past the whole-page cut is read by the main-content extractor, and that is all
    it adds: still no browser, store, server, MCP, model, find-in-page or PDF code."""
    config = write_config(tmp_path)
    with serve(routes={"/robots.txt": ROBOTS, "/": respond(200, SHORT_ARTICLE)}) as srv:
        loaded = modules_after(tmp_path, "fetch", srv.url("/"), "--config", str(config))
    assert "trafilatura" in loaded  # it did run the extractor
    for name in NEVER_FOR_A_READ:
        assert name not in loaded, name


@pytest.mark.parametrize(("command", "collecting"), [("fetch", False), ("mcp", True)])
def test_one_shot_commands_run_without_the_cyclic_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, collecting: bool
) -> None:
    """A command that ends within seconds runs with the cyclic garbage collector off (its
    passes would only walk the objects the imports made); a server keeps it; and `main` turns
    it back on after (it also runs inside longer processes, like this one)."""
    import gc
    import importlib

    from webward.cli import main

    seen: list[bool] = []
    module = importlib.import_module(f"webward._cmd_{command}")
    monkeypatch.setattr(module, "run", lambda args, settings: seen.append(gc.isenabled()) or 0)
    args = [command, "http://127.0.0.1:9/"] if command == "fetch" else [command]
    assert main([*args, "--config", str(write_config(tmp_path))]) == 0
    assert seen == [collecting]
    assert gc.isenabled()


def test_a_misspelt_webward_variable_is_named_with_the_one_meant(tmp_path: Path) -> None:
    """WEBWARD_CONFG is no variable webward reads: one line on stderr names the one meant
    (an unknown name with no close one, the ones it reads), and the command runs on; the
    variables it reads, WEBWARD_TOKEN (the docs' client-side name) and the test suite's own
    prefix get no line."""
    env = {
        "WEBWARD_CONFG": str(tmp_path / "webward.toml"),
        "WEBWARD_ALLOW_RANGE": "127.0.0.1/32",
        "WEBWARD_XYZZY": "1",
        "WEBWARD_TOKEN": "secret",
        "WEBWARD_TEST_SOMETHING": "1",
        "WEBWARD_STATE_DIR": str(tmp_path),
    }
    out = run("audit", "--limit", "1", env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines[:2] == [
        "webward: warning: webward does not read WEBWARD_ALLOW_RANGE; "
        "did you mean WEBWARD_ALLOW_RANGES?",
        "webward: warning: webward does not read WEBWARD_CONFG; did you mean WEBWARD_CONFIG?",
    ]
    assert lines[2].startswith(
        "webward: warning: webward does not read WEBWARD_XYZZY; the variables it reads are "
        "WEBWARD_ALLOW_RANGES, "
    )
    assert len(lines) == 3
    # A command that reads no config says it too; with none set, nothing is said.
    typo = run("credentials", "list", env={"WEBWARD_TIRE": "full"})
    assert "did you mean WEBWARD_TIER?" in typo.stderr
    clean = run("audit", "--limit", "1", env={"WEBWARD_STATE_DIR": str(tmp_path)})
    assert clean.returncode == 0 and clean.stderr == ""


def test_xdg_directories_move_the_state_and_config_dirs(tmp_path: Path) -> None:
    """As the README says: XDG_STATE_HOME holds the state dir (the audit log) and
    XDG_CONFIG_HOME the config file and the credential file; nothing lands in HOME."""
    home, state, config = tmp_path / "home", tmp_path / "state", tmp_path / "config"
    home.mkdir()
    (config / "webward").mkdir(parents=True)
    (config / "webward" / "webward.toml").write_text('[policy]\ndefault_tier = "connected"\n')
    env = {"HOME": str(home), "XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(config)}
    env = {k: v for k, v in {**os.environ, **env}.items() if k != "WEBWARD_STATE_DIR"}
    with accept_counter() as counter:
        # Refused (loopback is not allowed), and audited in the state dir under XDG_STATE_HOME.
        fetched = subprocess.run(
            [sys.executable, "-m", "webward", "fetch", counter.url("/"), "--json"],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert fetched.returncode == 3
        assert str(config / "webward" / "webward.toml") in fetched.stdout
        stored = subprocess.run(
            [sys.executable, "-m", "webward", "credentials", "set", "TAVILY_API_KEY"],
            input="tvly-0123456789abcdef\n", capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert stored.returncode == 0, stored.stderr
    assert counter.accepts == 0
    assert (state / "webward" / "audit.db").is_file()
    assert (config / "webward" / "credentials.json").is_file()
    assert list(home.iterdir()) == []


def test_a_config_named_in_other_letters_is_read_under_the_c_locale(tmp_path: Path) -> None:
    """Under the C locale without UTF-8 mode (an ASCII filesystem encoding), `--config` naming
    a file under "café ☕" was decoded as UTF-8 text for the query's sake, which no ASCII
    name encodes back: "the config file ... does not exist". The file is read; one that is
    missing is named with the letters typed."""
    folder = tmp_path / "café ☕"
    folder.mkdir()
    config = write_config(folder)
    env = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    env["WEBWARD_STATE_DIR"] = str(tmp_path / "state")
    with serve(routes={"/robots.txt": ROBOTS, "/": respond(200, "<h1>Hello</h1>")}) as srv:
        read = run("fetch", srv.url("/"), "--config", str(config), env=env)
    assert read.returncode == 0, read.stderr
    assert "Hello" in read.stdout
    missing = run("audit", "--config", str(folder / "nope.toml"), env=env)
    assert missing.returncode == 2
    assert (
        missing.stderr
        == f"webward: the config file {tmp_path}/caf\\xe9 \\u2615/nope.toml does not exist\n"
    )


def test_a_call_log_that_cannot_be_opened_names_the_variable_too(tmp_path: Path) -> None:
    """WEBWARD_CALL_LOG naming a file that cannot be opened was told to set [observability]
    call_log alone, a key of a config file the person may not have: the variable is named."""
    env = {"WEBWARD_CALL_LOG": str(tmp_path / "no-such-dir" / "calls.log")}
    env["WEBWARD_STATE_DIR"] = str(tmp_path / "state")
    with accept_counter() as counter:
        out = run("fetch", counter.url("/"), env=env)
    assert counter.accepts == 0
    assert out.returncode == 2
    assert out.stderr == (
        f"webward: the call log {tmp_path}/no-such-dir/calls.log cannot be opened (No such file "
        "or directory); set [observability] call_log (or WEBWARD_CALL_LOG) to a writable file, "
        "stderr or off\n"
    )


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        (
            '[policy]\nallow = ["a.example"]\n[policy]\ndeny = ["b.example"]\n',
            "the table [policy] is declared twice (at line 3, column 8); keep one [policy] and "
            "put all its keys in it",
        ),
        (
            '[agents.x]\ntier = "full"\n[agents.x]\n',
            "the table [agents.x] is declared twice (at line 3, column 10); keep one [agents.x] "
            "and put all its keys in it",
        ),
        (
            '[policy]\nallow = ["a.example"]\nallow = ["b.example"]\n',
            "a key is given a value twice (at line 3, column 22) (or a key and a table share "
            "one name); keep one",
        ),
        (
            "[policy]\ndefault_tier = connected\n",
            "a value that is no TOML value (at line 2, column 16): a string needs quotes "
            '("connected"), a list brackets (["a", "b"])',
        ),
    ],
)
def test_a_config_file_toml_refuses_says_what_to_change(
    tmp_path: Path, toml: str, said: str
) -> None:
    """A second [policy] table added below the first (the usual way a table gets declared
    twice) was "Cannot declare ('policy',) twice (at line 3, column 8)": a Python tuple and
    no next step. tomllib's usual refusals now say what to change."""
    config = tmp_path / "webward.toml"
    config.write_text(toml, encoding="utf-8")
    done = run("fetch", "https://a.example/", "--config", str(config))
    assert done.returncode == 2
    assert done.stderr == f"webward: the config file {config} is not valid TOML: {said}\n"
