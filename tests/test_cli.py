"""The command line: `webward fetch` against loopback, exit codes, --json, --help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from localserver import accept_counter, respond, serve


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


def test_fetch_prints_the_page(config: Path) -> None:
    """A local page is printed for people, exit 0."""
    with serve(
        routes={"/": respond(200, "<html><title>T</title><body><p>hello cli</p></body></html>")}
    ) as srv:
        out = run("fetch", srv.url("/"), "--config", str(config))
    assert out.returncode == 0, out.stderr
    assert "hello cli" in out.stdout


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


def test_bad_input_exits_2(config: Path) -> None:
    """A bad offset or a bad config is exit 2."""
    out = run("fetch", "http://127.0.0.1:9/", "--offset", "-4", "--config", str(config))
    assert out.returncode == 2
    assert "offset must be a non-negative whole number" in out.stderr
    bad = config.parent / "bad.toml"
    bad.write_text("[policy\n")
    assert run("fetch", "http://127.0.0.1:9/", "--config", str(bad)).returncode == 2


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
