"""The credential store: environment, OS keyring, 0600 file, the chain, and the CLI."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail
from keyring.errors import KeyringError, PasswordDeleteError

from webward import cli
from webward._credentials import (
    KNOWN_NAMES,
    ChainedStore,
    EnvironmentStore,
    FileStore,
    KeyringStore,
    Secret,
    check_name,
    default_credentials_path,
    default_store,
    mask,
)
from webward._errors import InvalidInput, Refused
from webward._settings import Settings

TAVILY_KEY = "tvly-dev-0123456789abcdef9f3a"
BRAVE_KEY = "BSAq1w2e3r4t5y6u7i8o9p0"


class MemoryKeyring(KeyringBackend):
    """A real keyring backend (keyring's own interface) that keeps entries in a dict."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.entries:
            raise PasswordDeleteError("not found")
        del self.entries[(service, username)]


class BrokenKeyring(MemoryKeyring):
    """A backend whose every call fails, as a locked or unreachable keyring does."""

    def get_password(self, service: str, username: str) -> str | None:
        raise KeyringError("the collection is locked")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise KeyringError("the collection is locked")

    def delete_password(self, service: str, username: str) -> None:
        raise KeyringError("the collection is locked")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary home: HOME and XDG_CONFIG_HOME point inside tmp_path; cwd is tmp_path."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---- names, masking, Secret ------------------------------------------------------------


def test_mask_shows_only_the_ends_of_a_long_key() -> None:
    """A long key shows four characters at each end; shorter ones show less or nothing."""
    assert mask(TAVILY_KEY) == "tvly…9f3a"
    assert mask("abcdefghijkl") == "…ijkl"
    assert mask("short") == "…"


def test_secret_never_shows_its_value() -> None:
    """repr, str and f-strings of a Secret are masked; reveal() gives the value."""
    secret = Secret(TAVILY_KEY)
    assert TAVILY_KEY not in repr(secret)
    assert TAVILY_KEY not in str(secret)
    assert TAVILY_KEY not in f"{secret} {[secret]}"
    assert secret.reveal() == TAVILY_KEY
    assert secret.masked() == "tvly…9f3a"
    with pytest.raises(TypeError):
        __import__("pickle").dumps(secret)


@pytest.mark.parametrize("name", ["", "lower_case", "WITH SPACE", "1ABC", "A" * 65, None, 3])
def test_bad_credential_names_are_invalid_input(name: Any) -> None:
    """A name must be UPPER_SNAKE_CASE of at most 64 characters."""
    with pytest.raises(InvalidInput):
        check_name(name)


# ---- environment -----------------------------------------------------------------------


def test_environment_store_reads_and_refuses_writes() -> None:
    """The environment store reads variables (blank is unset) and never writes them."""
    store = EnvironmentStore({"TAVILY_API_KEY": TAVILY_KEY, "BRAVE_SEARCH_API_KEY": "  "})
    assert store.get("TAVILY_API_KEY") == TAVILY_KEY
    assert store.get("BRAVE_SEARCH_API_KEY") is None
    assert store.get("OPENAI_API_KEY") is None
    with pytest.raises(Refused) as set_error:
        store.set("TAVILY_API_KEY", "other")
    with pytest.raises(Refused):
        store.delete("TAVILY_API_KEY")
    assert TAVILY_KEY not in set_error.value.message
    assert TAVILY_KEY not in repr(store)


# ---- file ------------------------------------------------------------------------------


def test_file_store_round_trip_with_mode_0600(tmp_path: Path) -> None:
    """set, get, names and delete round-trip through a file created with mode 0600."""
    path = tmp_path / "cfg" / "webward" / "credentials.json"
    store = FileStore(path)
    assert store.get("TAVILY_API_KEY") is None
    store.set("TAVILY_API_KEY", TAVILY_KEY)
    store.set("BRAVE_SEARCH_API_KEY", Secret(BRAVE_KEY))
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert FileStore(path).get("TAVILY_API_KEY") == TAVILY_KEY
    assert store.names() == ["BRAVE_SEARCH_API_KEY", "TAVILY_API_KEY"]
    assert json.loads(path.read_text())["credentials"]["BRAVE_SEARCH_API_KEY"] == BRAVE_KEY
    assert store.delete("TAVILY_API_KEY") is True
    assert store.delete("TAVILY_API_KEY") is False
    assert store.get("TAVILY_API_KEY") is None
    assert _mode(path) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "credentials.json"
    ]  # no temp files left
    assert TAVILY_KEY not in repr(store)


def test_file_store_writes_0600_under_a_permissive_umask(tmp_path: Path) -> None:
    """The file is 0600 from its first byte, and every dir made for it 0700 (a parent was
    0777), whatever the umask."""
    old = os.umask(0)
    path = tmp_path / "config" / "webward" / "credentials.json"
    try:
        FileStore(path).set("OPENAI_API_KEY", "sk-0123456789abcdefghij")
    finally:
        os.umask(old)
    assert _mode(path) == 0o600
    assert [_mode(d) for d in (path.parent.parent, path.parent)] == [0o700, 0o700]


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_file_store_refuses_a_file_others_can_read(tmp_path: Path, mode: int) -> None:
    """A credential file readable by group or others is refused, with the chmod to fix it."""
    path = tmp_path / "credentials.json"
    FileStore(path).set("TAVILY_API_KEY", TAVILY_KEY)
    path.chmod(mode)
    with pytest.raises(Refused) as err:
        FileStore(path).get("TAVILY_API_KEY")
    assert err.value.reason == "credentials_file_mode"
    assert f"chmod 600 {path}" in err.value.message
    assert TAVILY_KEY not in err.value.message


def test_file_store_refuses_a_corrupt_file_without_echoing_it(tmp_path: Path) -> None:
    """A file that is not webward's JSON is refused by name, its content not repeated."""
    path = tmp_path / "credentials.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, f"TAVILY_API_KEY={TAVILY_KEY}\n".encode())
    os.close(fd)
    with pytest.raises(InvalidInput) as err:
        FileStore(path).get("TAVILY_API_KEY")
    assert str(path) in err.value.message
    assert TAVILY_KEY not in err.value.message


def test_file_store_rejects_multi_line_values(tmp_path: Path) -> None:
    """A value with a newline or NUL is refused before anything is written."""
    store = FileStore(tmp_path / "credentials.json")
    for value in ("abc\ndef", "abc\x00", ""):
        with pytest.raises(InvalidInput):
            store.set("TAVILY_API_KEY", value)
    assert not (tmp_path / "credentials.json").exists()


def test_a_key_stored_with_surrounding_whitespace_is_read_as_the_environment_reads_it(
    tmp_path: Path,
) -> None:
    """A key written by hand into the file, or by another tool into the keyring from a pipe
    (`echo KEY | secret-tool store ...`), may end in a newline or spaces: it is read without
    them, as a variable's is, rather than refused as holding characters no API key has;
    blank is unset."""
    path = tmp_path / "credentials.json"
    FileStore(path).set("OPENAI_API_KEY", "sk-placeholder")  # the file, made 0600
    data = json.loads(path.read_text())
    data["credentials"] = {"TAVILY_API_KEY": f" {TAVILY_KEY}\n", "BRAVE_SEARCH_API_KEY": " \n"}
    path.write_text(json.dumps(data))
    assert FileStore(path).get("TAVILY_API_KEY") == TAVILY_KEY
    assert FileStore(path).get("BRAVE_SEARCH_API_KEY") is None
    backend = MemoryKeyring()
    backend.set_password("webward", "TAVILY_API_KEY", f"{TAVILY_KEY}\n")
    backend.set_password("webward", "BRAVE_SEARCH_API_KEY", "  ")
    assert KeyringStore(backend).get("TAVILY_API_KEY") == TAVILY_KEY
    assert KeyringStore(backend).get("BRAVE_SEARCH_API_KEY") is None


def test_default_credentials_path_is_in_the_user_config_dir(home: Path) -> None:
    """Without a path the file lives at <XDG_CONFIG_HOME>/webward/credentials.json."""
    assert default_credentials_path() == home / ".config" / "webward" / "credentials.json"
    assert FileStore().path == default_credentials_path()


def test_without_a_home_a_key_in_the_environment_needs_no_credential_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No home to find (HOME unset, the user id without a passwd entry: the lookup of the
    uid fails, as it does there): the chain still reads the environment, the file holds
    nothing, and what needs the file says what to set in one sentence (platformdirs'
    RuntimeError was "a bug in webward", and search failed although its key was set)."""

    def no_entry(uid: int) -> Any:
        raise KeyError(uid)

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setattr("pwd.getpwuid", no_entry)
    store = default_store({"BRAVE_SEARCH_API_KEY": BRAVE_KEY}, keyring_backend=fail.Keyring())
    assert store.get("BRAVE_SEARCH_API_KEY") == BRAVE_KEY
    assert store.get("TAVILY_API_KEY") is None
    with pytest.raises(InvalidInput, match=r"^cannot find the credential file: .*; set HOME"):
        store.names()
    with pytest.raises(InvalidInput, match="set XDG_CONFIG_HOME"):
        store.set("TAVILY_API_KEY", TAVILY_KEY)


def test_a_credential_file_that_cannot_be_reached_says_what_to_do(tmp_path: Path) -> None:
    """A credential file this user cannot open or write (its directory another user's, as
    after `su -p`; here under a regular file, or under /proc, which fail for root too): the
    refusal names the next step, where it ended at the OS's reason."""
    (tmp_path / "a-file").write_text("")
    store = FileStore(tmp_path / "a-file" / "credentials.json")
    with pytest.raises(Refused) as read:
        store.get("TAVILY_API_KEY")
    assert str(read.value).endswith(
        "could not be opened (Not a directory); set HOME to this user's home, or "
        "XDG_CONFIG_HOME to a directory it can write, or give the key in its environment "
        "variable"
    )
    with pytest.raises(Refused) as written:  # no file to read, and none can be made (root too)
        FileStore("/proc/webward-nowhere/credentials.json").set("TAVILY_API_KEY", "v")
    assert "could not be written (No such file or directory); set HOME to this user's" in str(
        written.value
    )
    assert str(written.value).endswith("(`webward credentials set NAME --keyring`)")


# ---- keyring ---------------------------------------------------------------------------


def test_keyring_store_round_trip_with_a_working_backend() -> None:
    """With a usable backend, entries go under the service 'webward'."""
    backend = MemoryKeyring()
    store = KeyringStore(backend)
    assert store.available()
    store.set("TAVILY_API_KEY", TAVILY_KEY)
    assert backend.entries == {("webward", "TAVILY_API_KEY"): TAVILY_KEY}
    assert store.get("TAVILY_API_KEY") == TAVILY_KEY
    assert store.delete("TAVILY_API_KEY") is True
    assert store.delete("TAVILY_API_KEY") is False
    assert store.get("TAVILY_API_KEY") is None


def test_keyring_fail_backend_counts_as_not_available() -> None:
    """keyring's fail backend reads as empty and refuses writes with a message."""
    store = KeyringStore(fail.Keyring())
    assert not store.available()
    assert store.get("TAVILY_API_KEY") is None
    assert store.delete("TAVILY_API_KEY") is False
    with pytest.raises(Refused) as err:
        store.set("TAVILY_API_KEY", TAVILY_KEY)
    assert "keyring" in err.value.message
    assert TAVILY_KEY not in err.value.message


def test_keyring_backend_errors_never_crash() -> None:
    """A backend that raises on every call reads as empty; a write is refused, not raised raw."""
    store = KeyringStore(BrokenKeyring())
    assert store.get("TAVILY_API_KEY") is None
    assert store.delete("TAVILY_API_KEY") is False
    with pytest.raises(Refused) as err:
        store.set("TAVILY_API_KEY", TAVILY_KEY)
    assert TAVILY_KEY not in err.value.message


def test_keyring_store_uses_the_system_backend_when_none_is_given(home: Path) -> None:
    """With no backend passed, the system's is used (here: the fail backend, so empty)."""
    store = KeyringStore()
    assert store.get("TAVILY_API_KEY") is None


# ---- the chain -------------------------------------------------------------------------


def test_chain_reads_environment_then_keyring_then_file(tmp_path: Path) -> None:
    """The first store holding a name wins: environment, then keyring, then file."""
    backend = MemoryKeyring()
    file_store = FileStore(tmp_path / "credentials.json")
    env: dict[str, str] = {}
    chain = default_store(env, tmp_path / "credentials.json", keyring_backend=backend)
    file_store.set("TAVILY_API_KEY", "tvly-from-the-file-000000")
    assert chain.lookup("TAVILY_API_KEY") == ("tvly-from-the-file-000000", chain.stores[2])
    KeyringStore(backend).set("TAVILY_API_KEY", "tvly-from-the-keyring-000")
    assert chain.get("TAVILY_API_KEY") == "tvly-from-the-keyring-000"
    env["TAVILY_API_KEY"] = TAVILY_KEY
    found = chain.lookup("TAVILY_API_KEY")
    assert found is not None and found[0] == TAVILY_KEY
    assert isinstance(found[1], EnvironmentStore)
    secret = chain.get_secret("TAVILY_API_KEY")
    assert secret is not None and secret.reveal() == TAVILY_KEY


def test_chain_writes_to_the_file_and_deletes_everywhere_it_can(tmp_path: Path) -> None:
    """set writes the file; delete clears keyring and file but leaves the environment."""
    backend = MemoryKeyring()
    env = {"BRAVE_SEARCH_API_KEY": BRAVE_KEY}
    chain = default_store(env, tmp_path / "credentials.json", keyring_backend=backend)
    chain.set("BRAVE_SEARCH_API_KEY", "BSA-file-000000000000000")
    assert (
        FileStore(tmp_path / "credentials.json").get("BRAVE_SEARCH_API_KEY")
        == "BSA-file-000000000000000"
    )
    KeyringStore(backend).set("BRAVE_SEARCH_API_KEY", "BSA-ring-000000000000000")
    assert chain.delete("BRAVE_SEARCH_API_KEY") is True
    assert backend.entries == {}
    assert FileStore(tmp_path / "credentials.json").get("BRAVE_SEARCH_API_KEY") is None
    assert chain.get("BRAVE_SEARCH_API_KEY") == BRAVE_KEY
    assert BRAVE_KEY not in repr(chain)


def test_chain_names_lists_known_names_and_file_names(tmp_path: Path) -> None:
    """names() gives the known names plus any other name the file holds."""
    chain = ChainedStore([EnvironmentStore({}), FileStore(tmp_path / "c.json")])
    chain.set("MY_MODEL_KEY", "mk-0123456789abcdefghij")
    assert chain.names() == [*KNOWN_NAMES, "MY_MODEL_KEY"]


# ---- a key in the config file ----------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("search", "brave_api_key"),
        ("search", "tavily_api_key"),
        ("search", "api_key"),
        ("agents.bot", "token"),
    ],
)
def test_config_file_holding_a_key_is_refused(tmp_path: Path, section: str, key: str) -> None:
    """Settings.load refuses a credential in the config file, says where it belongs, and
    does not repeat it."""
    path = tmp_path / "webward.toml"
    path.write_text(f'[{section}]\n{key} = "{BRAVE_KEY}"\n', encoding="utf-8")
    with pytest.raises(InvalidInput) as err:
        Settings.load(path, environ={})
    message = err.value.message
    assert f"{section}.{key}" in message
    assert "credential store" in message
    assert "webward credentials set" in message
    assert BRAVE_KEY not in message
    assert BRAVE_KEY not in repr(err.value)


def test_cli_reports_a_key_in_the_config_file_as_bad_input(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`webward search --config FILE` with a key in FILE exits 2 without printing the key."""
    path = tmp_path / "webward.toml"
    path.write_text(f'[search]\nbrave_api_key = "{BRAVE_KEY}"\n', encoding="utf-8")
    assert cli.main(["search", "rust", "--config", str(path), "--json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["error"]["code"] == "invalid_input"
    assert BRAVE_KEY not in out + err


# ---- the command line ------------------------------------------------------------------


def _cli(args: list[str], monkeypatch: pytest.MonkeyPatch, stdin: str = "") -> int:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    return cli.main(["credentials", *args])


@pytest.mark.parametrize("bad", ["clé-non-ascii", "two words", "tab\there"])
def test_cli_set_refuses_a_key_no_http_header_can_carry(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    """A key travels in an HTTP header: one with spaces, controls or non-ASCII characters is
    refused as it is set (exit 2, the key not echoed), not at every search after."""
    assert _cli(["set", "TAVILY_API_KEY"], monkeypatch, bad + "\n") == 2
    out, err = capsys.readouterr()
    assert "printable ASCII" in err and bad not in out + err
    assert not (home / ".config" / "webward" / "credentials.json").exists()


def test_cli_set_get_list_delete_round_trip(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`set` reads stdin into a 0600 file; get and list show it masked; delete clears it."""
    path = home / ".config" / "webward" / "credentials.json"
    assert _cli(["set", "TAVILY_API_KEY"], monkeypatch, TAVILY_KEY + "\n") == 0
    assert _mode(path) == 0o600
    assert FileStore(path).get("TAVILY_API_KEY") == TAVILY_KEY
    assert _cli(["get", "TAVILY_API_KEY"], monkeypatch) == 0
    assert _cli(["list"], monkeypatch) == 0
    out, err = capsys.readouterr()
    assert "tvly…9f3a" in out
    assert f"TAVILY_API_KEY: tvly…9f3a (from file {path})" in out
    assert "BRAVE_SEARCH_API_KEY" in out and "(not set)" in out
    assert TAVILY_KEY not in out + err
    assert _cli(["delete", "TAVILY_API_KEY"], monkeypatch) == 0
    assert FileStore(path).get("TAVILY_API_KEY") is None
    assert _cli(["get", "TAVILY_API_KEY"], monkeypatch) == 3
    out, err = capsys.readouterr()
    assert "deleted TAVILY_API_KEY" in out
    assert "TAVILY_API_KEY is not set" in err


def test_cli_json_answers_each_action_with_one_document(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`credentials ... --json` prints one JSON document per action, keys masked (a script
    had only the aligned text of `list` to parse); an error is the error model on stdout."""
    path = str(home / ".config" / "webward" / "credentials.json")
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", BRAVE_KEY)
    answers = []
    for args, stdin, code in (
        (["set", "TAVILY_API_KEY"], TAVILY_KEY + "\n", 0),
        (["get", "TAVILY_API_KEY"], "", 0),
        (["list"], "", 0),
        (["delete", "TAVILY_API_KEY"], "", 0),
        (["get", "TAVILY_API_KEY"], "", 3),
    ):
        assert _cli([*args, "--json"], monkeypatch, stdin) == code
        out, err = capsys.readouterr()
        assert TAVILY_KEY not in out + err and BRAVE_KEY not in out + err
        answers.append(json.loads(out))
    tavily = {"name": "TAVILY_API_KEY", "set": True, "masked": "tvly…9f3a", "source": "file"}
    assert answers[0] == {
        "name": "TAVILY_API_KEY",
        "stored": True,
        "masked": "tvly…9f3a",
        "source": "file",
        "path": path,
        "environmentTakesPrecedence": False,
    }
    assert answers[1] == {**tavily, "path": path}
    assert answers[2] == [
        {
            "name": "BRAVE_SEARCH_API_KEY",
            "set": True,
            "masked": mask(BRAVE_KEY),
            "source": "environment",
            "path": None,
        },
        {**tavily, "path": path},
        {"name": "ANTHROPIC_API_KEY", "set": False, "masked": None, "source": None, "path": None},
        {"name": "OPENAI_API_KEY", "set": False, "masked": None, "source": None, "path": None},
    ]
    assert answers[3] == {"name": "TAVILY_API_KEY", "deleted": True, "stillInEnvironment": False}
    assert answers[4]["error"]["code"] == "not_configured"


def test_cli_get_finds_a_key_in_the_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`credentials get` names the environment as the source and masks the value."""
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", BRAVE_KEY)
    assert _cli(["get", "BRAVE_SEARCH_API_KEY"], monkeypatch) == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"BRAVE_SEARCH_API_KEY: {mask(BRAVE_KEY)} (from environment)"
    assert BRAVE_KEY not in out + err


def test_cli_never_takes_a_key_from_argv(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A key given on the command line is refused (exit 2), not stored and not echoed."""
    assert _cli(["set", "TAVILY_API_KEY", TAVILY_KEY], monkeypatch, "") == 2
    out, err = capsys.readouterr()
    assert "command line" in err
    assert TAVILY_KEY not in out + err
    assert not (home / ".config" / "webward" / "credentials.json").exists()


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["set", "TAVILY_API_KEY"], ""),
        (["set", "TAVILY_API_KEY"], "two words\n"),
        (["set"], "x\n"),
        (["set", "lower"], "x\n"),
        (["list", "TAVILY_API_KEY"], ""),
    ],
)
def test_cli_bad_usage_exits_2(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    stdin: str,
) -> None:
    """An empty or spaced key, a missing or malformed NAME, or a NAME for list: exit 2."""
    assert _cli(args, monkeypatch, stdin) == 2
    out, err = capsys.readouterr()
    assert "two words" not in out + err


@pytest.mark.parametrize(
    "args", [["get", "TAVILY_API_KEY"], ["delete", "TAVILY_API_KEY"], ["list"]]
)
def test_cli_keyring_flag_is_for_set_only(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """`--keyring` with get, delete or list is refused (exit 2) with what those actions
    read, rather than taken and ignored: `get --keyring` showed the file's key as though it
    came from the keyring's side, and `delete --keyring` deleted from the file too."""
    path = home / ".config" / "webward" / "credentials.json"
    assert _cli(["set", "TAVILY_API_KEY"], monkeypatch, TAVILY_KEY + "\n") == 0
    capsys.readouterr()
    assert _cli([*args, "--keyring"], monkeypatch) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"webward: --keyring applies to `webward credentials set` only; `{args[0]}` looks in "
        "the environment, the OS keyring and the credential file (leave --keyring out)\n"
    )
    assert FileStore(path).get("TAVILY_API_KEY") == TAVILY_KEY  # nothing deleted


def test_cli_set_interrupted_at_the_prompt_says_it_stopped(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C at `set`'s hidden prompt: exit 130, nothing stored, and one sentence that says
    only that it stopped (no call was in flight, so none was cancelled or audited)."""
    import getpass

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    def pressed_ctrl_c(prompt: str = "") -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(getpass, "getpass", pressed_ctrl_c)
    assert cli.main(["credentials", "set", "TAVILY_API_KEY"]) == 130
    out, err = capsys.readouterr()
    assert (out, err) == ("", "webward: interrupted (Ctrl-C): stopped\n")
    assert not (home / ".config" / "webward" / "credentials.json").exists()


def test_cli_set_into_a_missing_keyring_is_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`set --keyring` without a usable keyring exits 3 and writes nothing."""
    assert _cli(["set", "TAVILY_API_KEY", "--keyring"], monkeypatch, TAVILY_KEY + "\n") == 3
    out, err = capsys.readouterr()
    assert "keyring" in err
    assert TAVILY_KEY not in out + err
    assert not (home / ".config" / "webward" / "credentials.json").exists()


def test_cli_refuses_a_readable_credential_file(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`credentials get` against a world-readable file exits 3 with the chmod to run."""
    path = home / ".config" / "webward" / "credentials.json"
    FileStore(path).set("TAVILY_API_KEY", TAVILY_KEY)
    path.chmod(0o644)
    assert _cli(["get", "TAVILY_API_KEY"], monkeypatch) == 3
    out, err = capsys.readouterr()
    assert "chmod 600" in err
    assert TAVILY_KEY not in out + err


def test_credentials_without_an_action_names_only_the_action(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """argparse's usage error names ACTION, not the hidden argument that catches a key typed
    on the command line."""
    from webward.cli import main

    with pytest.raises(SystemExit) as done:
        main(["credentials"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "the following arguments are required: ACTION" in err and "extra" not in err
