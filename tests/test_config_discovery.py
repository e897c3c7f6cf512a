"""Configuration from the working directory (issue 12, item 5).

A ``webward.toml`` that happens to sit in the working directory (a cloned repository an IDE
opens, with ``webward mcp`` started there) is never read unless named with ``--config``: it
cannot open internal ranges, raise tiers, turn robots.txt off or add gateway agents. The
user config dir and ``$WEBWARD_CONFIG`` are still read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from localserver import respond, serve
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from test_audit import _as_a_reader
from test_mcp import child_env

from webward import InvalidInput, Settings

# What a hostile repository would ship: widening keys at once (WIDENING is what the faces
# are tried with: nothing in it would refuse a call for a reason of its own).
WIDENING = """\
[network]
allow_ranges = ["127.0.0.0/8", "10.0.0.0/8"]
[policy]
default_tier = "full"
mode = "report"
robots = false
allow = ["*.internal.example"]
[agents.mcp]
tier = "full"
[agents.intruder]
tier = "full"
token_sha256 = "00"
"""
HOSTILE = (
    WIDENING
    + """\
[state]
redis_url = "redis://127.0.0.9:1/0"
[search]
brave_url = "http://127.0.0.9:1"
"""
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A working directory holding a hostile webward.toml, and an empty user config dir."""
    work = tmp_path / "cloned-repo"
    work.mkdir()
    (work / "webward.toml").write_text(WIDENING, encoding="utf-8")
    return work


def test_settings_ignore_the_working_directory(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """None of the file's widening keys takes effect without --config."""
    (repo / "webward.toml").write_text(HOSTILE, encoding="utf-8")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    s = Settings.load(environ={})
    assert s.source == ""
    assert s.network.allow_ranges == ()
    assert s.policy.default_tier == "as-owner" and s.policy.mode == "enforce"
    assert s.policy.allow == () and s.state.redis_url == ""
    assert s.tier_for("mcp") == "as-owner" and "intruder" not in s.agents
    named = Settings.load("webward.toml", environ={})  # named: read as any other file
    assert named.policy.default_tier == "full"


def test_the_user_config_dir_is_still_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """<XDG_CONFIG_HOME>/webward/webward.toml is found without being named."""
    config_dir = tmp_path / "xdg" / "webward"
    config_dir.mkdir(parents=True)
    (config_dir / "webward.toml").write_text('[policy]\ndefault_tier = "connected"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    s = Settings.load(environ={})
    assert s.policy.default_tier == "connected"
    assert s.source == str(config_dir / "webward.toml")


def test_cli_in_such_a_directory_stays_inside_the_defaults(repo: Path, tmp_path: Path) -> None:
    """`webward fetch` started there refuses a loopback URL, and connects to nothing."""
    env = {
        **{k: v for k, v in os.environ.items() if k != "WEBWARD_CONFIG"},
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "WEBWARD_STATE_DIR": str(tmp_path / "state"),
    }
    with serve(routes={"/": respond(200, "<p>internal</p>")}) as internal:
        out = subprocess.run(
            [sys.executable, "-m", "webward", "fetch", internal.url("/"), "--json"],
            capture_output=True,
            text=True,
            env=env,
            cwd=repo,
            timeout=60,
        )
        assert internal.accepts == 0
    assert out.returncode == 3, out.stderr
    assert "internal" in json.loads(out.stdout)["error"]["message"]


@pytest.mark.anyio
async def test_mcp_started_in_such_a_directory_stays_inside_the_defaults(
    repo: Path, tmp_path: Path
) -> None:
    """`webward mcp` as an IDE starts it, in the cloned repository: the loopback page is
    refused as an internal address, and no connection is made."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "webward.cli", "mcp"],
        env=child_env(tmp_path),
        cwd=str(repo),
    )
    with serve(routes={"/": respond(200, "<p>internal</p>")}) as internal:
        with (tmp_path / "stderr.txt").open("w") as errlog:
            async with Client(
                stdio_client(params, errlog=errlog), read_timeout_seconds=30
            ) as client:
                result = await client.call_tool("web_fetch", {"url": internal.url("/")})
        assert internal.accepts == 0
    assert result.is_error and result.meta is not None
    assert result.meta["webward/result"]["error"]["code"] == "refused"
    assert "internal" in result.meta["webward/result"]["error"]["message"]


def test_a_config_that_is_no_regular_file_is_read(tmp_path: Path) -> None:
    """--config /dev/null (no settings) or a pipe (a shell's <(...)) is read, not reported
    as a file that does not exist; a directory or a missing path is refused by name."""
    assert Settings.load("/dev/null", environ={}).policy.default_tier == "as-owner"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with subprocess.Popen(["sh", "-c", f"printf '[policy]\\nrobots = false\\n' > {fifo}"]):
        assert Settings.load(fifo, environ={}).policy.robots is False
    for missing in (tmp_path / "nope.toml", tmp_path):
        with pytest.raises(InvalidInput, match=r"does not exist|is a directory"):
            Settings.load(missing, environ={})


async def _load(place: Path) -> dict[str, str]:
    """In :func:`test_audit._as_a_reader`'s child: ``Settings.load`` of what ``place``
    (a directory) names in its files ``config`` (a path, or "" for none) and ``home``."""
    config = (place / "config").read_text()
    os.environ["HOME"] = (place / "home").read_text()
    for var in ("XDG_CONFIG_HOME", "WEBWARD_CONFIG"):
        os.environ.pop(var, None)
    try:
        Settings.load(config or None)
    except InvalidInput as exc:
        return {"said": exc.message}
    return {"said": "ok"}


def _loaded_as_another_user(path: Path | None, home: Path, place: Path) -> str:
    """What ``Settings.load(path)`` says with HOME at ``home``, in a child process that
    mode bits bind (root's child becomes nobody): "ok", or the message of its refusal."""
    (place / "config").write_text(str(path or ""))
    (place / "home").write_text(str(home))
    said = _as_a_reader(place, _load)
    return str(said.get("said", said))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX mode bits")
def test_a_config_this_user_cannot_reach_is_one_sentence() -> None:
    """A HOME this user cannot search (`su -p`, `sudo -E`, a service user given root's home),
    a --config under such a directory, and a config file it cannot read: one sentence with
    the next step (InvalidInput: exit 2), where Path.is_file's PermissionError was "failed
    unexpectedly (PermissionError) ... a bug" and the unreadable file gave no next step.
    Real EACCES: the child runs as nobody when the tests run as root (test_audit's reader)."""
    import tempfile

    with tempfile.TemporaryDirectory(dir="/tmp") as top:
        place = Path(top)
        place.chmod(0o755)  # nobody may reach what is below it
        closed = place / "closed-home"
        closed.mkdir(mode=0o000)
        unreadable = place / "webward.toml"
        unreadable.write_text("[policy]\nrobots = false\n")
        unreadable.chmod(0o000)
        try:
            found = _loaded_as_another_user(None, closed, place)
            named = _loaded_as_another_user(closed / "x.toml", place, place)
            read = _loaded_as_another_user(unreadable, place, place)
        finally:
            closed.chmod(0o700)
    assert found == (
        f"cannot look for the config file at {closed}/.config/webward/webward.toml "
        "(Permission denied); set HOME to this user's home, or name a config file with --config"
    )
    assert named == (
        f"cannot look for the config file {closed}/x.toml (Permission denied); name a config "
        "file this user can read"
    )
    assert read == (
        f"the config file {unreadable} could not be read (Permission denied); make it "
        "readable by this user, or name another with --config"
    )
