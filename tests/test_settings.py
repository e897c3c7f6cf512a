"""Settings: defaults, the config file search order, environment overrides, bad files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from webward import InvalidInput, Settings
from webward._settings import TIERS


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "webward.toml"
    path.write_text(text)
    return path


def test_defaults_match_the_design() -> None:
    """The limits table of DESIGN.md is the default."""
    s = Settings()
    assert s.limits.max_url_chars == 2048
    assert s.limits.max_read_bytes == 1_000_000
    assert s.limits.max_fetch_text_chars == 40_000
    assert s.limits.max_image_bytes == 5 * 1024 * 1024
    assert s.limits.max_pdf_bytes == 10 * 1024 * 1024
    assert s.limits.fetch_timeout_s == 12
    assert s.limits.max_redirects == 10
    assert s.limits.session_memory_max_bytes == 64 * 1024 * 1024
    assert s.policy.default_tier == "as-owner"
    assert s.network.allow_ranges == ()


def test_file_then_environment_then_overrides(tmp_path: Path) -> None:
    """Environment beats the file, and overrides beat both."""
    path = write(
        tmp_path,
        '[policy]\ndefault_tier = "full"\nallow = ["docs.python.org"]\n[limits]\nper_host_rate = 1.5\n',
    )
    env = {"WEBWARD_TIER": "connected", "WEBWARD_ALLOW_RANGES": "127.0.0.1/32, ::1/128"}
    s = Settings.load(path, environ=env)
    assert s.policy.default_tier == "connected"
    assert s.policy.allow == ("docs.python.org",)
    assert s.limits.per_host_rate == 1.5
    assert s.network.allow_ranges == ("127.0.0.1/32", "::1/128")
    s2 = Settings.load(path, {"policy": {"default_tier": "as-owner"}}, environ=env)
    assert s2.policy.default_tier == "as-owner"
    assert s2.source == str(path)


def test_an_empty_variable_is_unset_and_the_files_value_stands(tmp_path: Path) -> None:
    """WEBWARD_SEARCH_PROVIDER='' sent queries to another vendor than the file named, and an
    empty WEBWARD_BRAVE_URL made every search a bad query. Empty is unset, as the docs say;
    but an empty WEBWARD_ALLOW_RANGES is the empty list, which narrows the file's."""
    path = write(
        tmp_path,
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\ndefault_tier = "full"\n'
        '[search]\nprovider = "tavily"\nsearxng_url = "http://127.0.0.1:8888"\n',
    )
    empty = {var: " " for var in ("WEBWARD_SEARCH_PROVIDER", "WEBWARD_BRAVE_URL",
                                  "WEBWARD_TAVILY_URL", "WEBWARD_SEARXNG_URL", "WEBWARD_TIER")}  # fmt: skip
    s = Settings.load(path, environ={**empty, "WEBWARD_ALLOW_RANGES": ""})
    assert (s.search.provider, s.search.searxng_url) == ("tavily", "http://127.0.0.1:8888")
    assert s.search.brave_url == "https://api.search.brave.com" and s.policy.default_tier == "full"
    assert s.network.allow_ranges == ()


def test_search_order_uses_webward_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$WEBWARD_CONFIG is read when no path is given; ./webward.toml is never read unnamed."""
    path = write(tmp_path, '[policy]\ndefault_tier = "full"\n')
    assert Settings.load(environ={"WEBWARD_CONFIG": str(path)}).policy.default_tier == "full"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert Settings.load(environ={}).policy.default_tier == "as-owner"
    assert Settings.load("webward.toml", environ={}).policy.default_tier == "full"


def test_agents_map_to_tiers(tmp_path: Path) -> None:
    """[agents.NAME] tier is the agent's tier; others get the default."""
    path = write(tmp_path, '[agents.research]\ntier = "connected"\ntoken_sha256 = "ab"\n')
    s = Settings.load(path, environ={})
    assert s.tier_for("research") == "connected"
    assert s.tier_for("someone") == "as-owner"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[policy\n", "not valid TOML"),
        ("[nope]\n", "unknown config section [nope]"),
        ("[policy]\ncolour = 1\n", "unknown config key policy.colour"),
        ("[polcy]\nrobots = false\n", "webward.toml; did you mean [policy]?"),
        ("[limits]\nmax_read_byte = 1\n", "max_read_byte in"),
        ("[limits]\nmax_read_byte = 1\n", "; did you mean max_read_bytes?"),
        ('[policy]\ndefault_tier = "god"\n', "unknown tier"),
        ('[limits]\nper_host_rate = "fast"\n', "wrong type"),
        ('[network]\nallow_ranges = ["not-a-cidr"]\n', "not a CIDR"),
        ('[network]\nallow_ranges = ["127.0.0.1/0"]\n', "write '0.0.0.0/0' for the whole range"),
        ('[network]\nallow_ranges = ["10.0.0.5/8"]\n', "or '10.0.0.5/32' for the one address"),
        ('[network]\nallow_ranges = ["fd00::1/8"]\n', "'fd00::1/128'"),
        ("[policy]\nrobots = 3\n", "wrong type"),
        ("[limits]\nmax_read_bytes = inf\n", "wrong type (inf); it takes a whole number"),
        ("[limits]\nmax_read_bytes = 1.9\n", "wrong type (1.9); it takes a whole number"),
        ("[limits]\nfetch_timeout_s = inf\n", "wrong type (inf); it takes a finite number"),
        ("[limits]\nbreaker_open_s = -inf\n", "it takes a finite number"),
        ("[policy.tiers.full]\nrobotz = false\n", "unknown config key policy.tiers.full.robotz"),
        ('[policy.tiers.full]\nrobots = "no"\n', "policy.tiers.full.robots in"),
        ("[policy]\ntiers = {full = 1}\n", "[policy.tiers.full] in"),
        ('[agents."a\\u202eb"]\ntier = "full"\n', "1 to 200 characters, with no control, bidi"),
        ('[agents."a\\nb"]\ntier = "full"\n', "1 to 200 characters, with no control, bidi"),
        ("[agents]\nx = 1\n", "must be a table"),
    ],
)
def test_broken_files_are_refused_by_name(tmp_path: Path, text: str, needle: str) -> None:
    """A broken config file is one InvalidInput that says what is wrong."""
    with pytest.raises(InvalidInput) as err:
        Settings.load(write(tmp_path, text), environ={})
    assert needle in err.value.message


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("max_fetch_text_chars = 0", "limits.max_fetch_text_chars in "),
        ("max_fetch_text_chars = -5", "must be greater than 0 (it is -5)"),
        ("max_query_chars = 0", "limits.max_query_chars"),
        ("max_read_bytes = 0", "limits.max_read_bytes"),
        ("fetch_timeout_s = 0", "limits.fetch_timeout_s"),
        ("fetch_timeout_s = nan", "limits.fetch_timeout_s"),
        ("page_cache_ttl_s = -1", "limits.page_cache_ttl_s in "),
        ("max_redirects = -1", "must be 0 or more"),
        ("convert_memory_mb = 10", "must be at least 64"),
        ("max_pdf_pages = 0", "limits.max_pdf_pages"),
        ("session_max_urls = 0", "limits.session_max_urls"),
        ("session_memory_max_bytes = 0", "limits.session_memory_max_bytes in "),
        ("session_memory_max_bytes = -1", "must be at least 1048576 (it is -1)"),
        ("session_memory_max_bytes = 64", "must be at least 1048576 (it is 64)"),
        ("per_host_rate = 0", "limits.per_host_rate"),
    ],
)
def test_limits_out_of_range_are_refused_when_loaded(
    tmp_path: Path, line: str, needle: str
) -> None:
    """A [limits] value no read could work with is refused as the file is read, naming the
    key and the file, instead of failing every read later (max_fetch_text_chars = 0 made
    each one an internal error)."""
    with pytest.raises(InvalidInput) as err:
        Settings.load(write(tmp_path, f"[limits]\n{line}\n"), environ={})
    assert needle in err.value.message
    assert str(tmp_path) in err.value.message


def test_limits_where_zero_means_something_take_it(tmp_path: Path) -> None:
    """0 redirects, no page cache, a worker per core and no waiting queue are settings."""
    text = (
        "[limits]\nmax_redirects = 0\npage_cache_ttl_s = 0\npage_cache_max_chars = 0\n"
        "convert_workers = 0\nconvert_queue = 0\n"
    )
    limits = Settings.load(write(tmp_path, text), environ={}).limits
    assert (limits.max_redirects, limits.page_cache_ttl_s, limits.convert_queue) == (0, 0, 0)


def test_a_key_in_the_config_is_refused_without_echoing_it(tmp_path: Path) -> None:
    """Credentials never live in the config; the message says where they belong."""
    path = write(tmp_path, '[search]\nbrave_api_key = "BSAsecret123"\n')
    with pytest.raises(InvalidInput) as err:
        Settings.load(path, environ={})
    assert "credential store" in err.value.message
    assert "BSAsecret123" not in err.value.message


def test_missing_config_file_is_invalid_input(tmp_path: Path) -> None:
    """--config naming a missing file is a clear error; naming a directory says so."""
    with pytest.raises(InvalidInput) as err:
        Settings.load(tmp_path / "absent.toml", environ={})
    assert "does not exist" in err.value.message
    with pytest.raises(InvalidInput) as err:
        Settings.load(tmp_path, environ={})
    assert err.value.message == (
        f"the config file {tmp_path} is a directory; name the TOML file itself (for example "
        f"{tmp_path / 'webward.toml'})"
    )
    with pytest.raises(InvalidInput) as err:
        Settings.load(None, environ={"WEBWARD_CONFIG": str(tmp_path)})
    assert "named by WEBWARD_CONFIG is a directory" in err.value.message


def test_robots_off_per_tier(tmp_path: Path) -> None:
    """[policy.tiers.NAME] robots = false turns robots off for that tier only."""
    path = write(tmp_path, "[policy.tiers.full]\nrobots = false\n")
    assert Settings.load(path, environ={}).policy.robots_off_tiers == ("full",)


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        (
            "WEBWARD_ALLOW_RANGES",
            "garbage",
            "network.allow_ranges in WEBWARD_ALLOW_RANGES holds 'garbage', which is not a CIDR",
        ),
        (
            "WEBWARD_TIER",
            "god",
            "unknown tier 'god' in WEBWARD_TIER; the tiers are as-owner, connected, full",
        ),
    ],
)
def test_a_bad_environment_value_is_named_by_its_variable(
    tmp_path: Path, var: str, value: str, message: str
) -> None:
    """A bad WEBWARD_* value is blamed on its variable, not on the config file read first."""
    path = write(tmp_path, "[policy]\nrobots = true\n")
    with pytest.raises(InvalidInput) as err:
        Settings.load(path, environ={var: value})
    assert err.value.message == message


@pytest.mark.parametrize(
    ("key", "url", "problem"),
    [
        ("brave_url", "not-a-url", "an http:// or https:// URL with a host"),
        ("tavily_url", "ftp://files.example", "an http:// or https:// URL with a host"),
        ("searxng_url", "https://sx.example:99999", "an http:// or https:// URL with a host"),
        ("brave_url", "https://api.example/?key=Zq-secret", "without a query"),
        ("tavily_url", "https://u:Zq-secret@api.example", "credentials"),
        ("brave_url", "", "leave it out for the provider's own"),
    ],
)
def test_a_provider_url_no_search_could_use_is_refused_when_loaded(
    tmp_path: Path, key: str, url: str, problem: str
) -> None:
    """A [search] base URL is checked as the config loads, named by its key and never
    echoed; at the first search it read as a bad query and echoed the query."""
    with pytest.raises(InvalidInput) as err:
        Settings.load(write(tmp_path, f'[search]\n{key} = "{url}"\n'), environ={})
    assert err.value.message.startswith(f"search.{key} in {tmp_path}")
    assert problem in err.value.message and "Zq-secret" not in err.value.message
    for good in ("http://127.0.0.1:8080", "https://search.example/prefix/"):
        Settings.load(write(tmp_path, f'[search]\n{key} = "{good}"\n'), environ={})
    with pytest.raises(InvalidInput) as env_err:
        Settings.load(write(tmp_path, ""), environ={"WEBWARD_BRAVE_URL": "not-a-url"})
    assert "WEBWARD_BRAVE_URL" in env_err.value.message


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("redis://:Zq-secret@127.0.0.1:notaport/0", "its port is not a number"),
        ("http://127.0.0.1:6379/0", "its scheme is not redis://"),
        ("redis://", "it names no host"),
        ("redis://:Zq-secret@127.0.0.1:6379/l", "its path is not a database number"),
        # A digit to str.isdigit(), not to int(): redis-py read it as database 0, silently.
        ("redis://:Zq-secret@127.0.0.1:6379/\u00b2", "its path is not a database number"),
        ("redis://:Zq-secret@127.0.0.1:6379/0?db=x", "a value redis-py cannot read"),
        ("redis://:Zq-secret@127.0.0.1:6379/0?timeout=3", "names timeout, which is no option"),
    ],
)
def test_a_redis_url_redis_cannot_read_is_refused_when_loaded(
    tmp_path: Path, url: str, problem: str
) -> None:
    """A malformed [state] redis_url is one sentence as the config loads (a bad port was a
    traceback at the first request; an option in the query redis-py does not take, or cannot
    read, was "webward failed unexpectedly" at the first call; a path that is no number was
    database 0, silently), and never echoes the URL or its password."""
    with pytest.raises(InvalidInput) as err:
        Settings.load(write(tmp_path, f'[state]\nredis_url = "{url}"\n'), environ={})
    assert err.value.message.startswith(f"state.redis_url in {tmp_path}")
    assert problem in err.value.message
    assert "Zq-secret" not in err.value.message and "127.0.0.1" not in err.value.message
    for good in (
        "redis://:pw@127.0.0.1:6379/0",
        "rediss://h.example:6380",
        "unix:///run/r.sock",
        "redis://127.0.0.1:6379/?db=2&socket_keepalive=true",
    ):
        Settings.load(write(tmp_path, f'[state]\nredis_url = "{good}"\n'), environ={})


@pytest.mark.parametrize("prefix", ["", "staging :", "stag*", "st\\u00e4ging:", "x" * 65])
def test_a_redis_prefix_a_key_pattern_cannot_name_is_refused_when_loaded(
    tmp_path: Path, prefix: str
) -> None:
    """[state] redis_prefix begins every Redis key a deployment writes: an empty one (keys
    named only by agents and hosts), or one with spaces, glob characters or past ASCII, which
    an ACL key pattern or redis-cli cannot name as written, is refused as the config loads;
    WEBWARD_REDIS_PREFIX sets it as the file does."""
    with pytest.raises(InvalidInput) as err:
        Settings.load(write(tmp_path, f'[state]\nredis_prefix = "{prefix}"\n'), environ={})
    assert err.value.message.startswith(f"state.redis_prefix in {tmp_path}")
    assert 'such as "staging:"' in err.value.message
    assert Settings.load(None, environ={}).state.redis_prefix == "webward:"
    by_env = Settings.load(None, environ={"WEBWARD_REDIS_PREFIX": "staging:"})
    assert by_env.state.redis_prefix == "staging:"


def test_an_agent_entry_without_a_tier_keeps_the_default_tier(tmp_path: Path) -> None:
    """An [agents.NAME] entry that sets only governance (provenance, a budget, a token) has
    [policy] default_tier, as the docs say, rather than dropping to as-owner; a tier it names
    wins. The gateway's token table agrees."""
    from webward._tokens import TokenTable, hash_token

    text = (
        '[policy]\ndefault_tier = "connected"\n'
        f'[agents.mcp]\nprovenance = "session"\ntoken_sha256 = "{hash_token("t-mcp")}"\n'
        '[agents.owner]\ntier = "as-owner"\n'
    )
    settings = Settings.load(write(tmp_path, text), environ={})
    assert settings.tier_for("mcp") == "connected"
    assert settings.tier_for("owner") == "as-owner"
    assert settings.tier_for("unlisted") == "connected"
    found = TokenTable(settings).lookup("t-mcp")
    assert found is not None and found.tier == "connected"


def test_settings_of_the_wrong_kind_are_one_sentence() -> None:
    """A dict where a Settings goes (overrides are dicts, so the mistake is natural), or
    overrides that are no dict, are InvalidInput saying what to pass, not an AttributeError."""
    from webward import Web

    for wrong in ({"network": {"allow_ranges": []}}, "/tmp/webward.toml", Settings):
        with pytest.raises(InvalidInput, match=r"settings must be a webward\.Settings"):
            Web(wrong)  # type: ignore[arg-type]
    for overrides in (None, [1, 2], "policy"):
        with pytest.raises(InvalidInput, match="overrides must be a dict shaped like the TOML"):
            Settings().replace(overrides)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="overrides must be a dict"):
        Settings.load(None, [1, 2], environ={})  # type: ignore[arg-type]


def test_agent_names_of_every_script_and_space_are_names() -> None:
    """Ideographic and no-break spaces, an emoji's joiner and CJK letters name agents; a
    control, a bidi override or a line separator does not."""
    from webward._settings import is_agent_name

    for good in ("研究\u3000ボット", "Bot\u00a0One", "\U0001f469\u200d\U0001f4bb coder", "a.b-c d"):
        assert is_agent_name(good), good
    for bad in ("a\nb", "a\u202eb", "a\u2028b", "\udcff", "", "x" * 201, "a\x1bb"):
        assert not is_agent_name(bad), bad


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[policy.tiers.fulll]\nrobots = false\n",
            "policy.tiers.fulll in {path} is not a tier; the tiers are as-owner, connected, full",
        ),
        (
            "[search.brve]\ncost = 1\n",
            "search.brve in {path} is not a search provider (did you mean search.brave?); the "
            "providers are brave, tavily, searxng, none",
        ),
        (
            "[search.Tavily]\ncost = 1\n",
            "search.Tavily in {path} is not a search provider (did you mean search.tavily?); "
            "the providers are brave, tavily, searxng, none",
        ),
    ],
    ids=["tier", "provider", "provider-case"],
)
def test_a_misspelt_tier_or_provider_table_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    """A table named for a tier or provider that is not one changed nothing, silently
    (`[policy.tiers.fulll] robots = false` left robots on for full, `[search.brve] cost` never
    charged brave): it is refused, naming the key, the file and the names there are."""
    path = write(tmp_path, text)
    with pytest.raises(InvalidInput) as err:
        Settings.load(path, environ={})
    assert err.value.message == message.format(path=path)


def test_every_tier_and_a_provider_of_ones_own_take_their_tables(tmp_path: Path) -> None:
    """Each tier takes [policy.tiers.NAME]; a provider passed to Web(search_provider=...) is
    charged at [search.<its name>] cost, so a name no built-in provider is close to stays."""
    text = "".join(f"[policy.tiers.{t}]\nrobots = false\n" for t in TIERS) + (
        "[search.brave]\ncost = 0.5\n[search.in-house]\ncost = 0.25\n"
    )
    s = Settings.load(write(tmp_path, text), environ={})
    assert s.policy.robots_off_tiers == TIERS
    assert s.search.costs == {"brave": 0.5, "in-house": 0.25}


def test_a_config_file_past_the_cap_is_refused_unread(tmp_path: Path) -> None:
    """A config file is read up to a cap: a large file named by mistake (here sparse, 50 MiB)
    is refused by its size in one sentence, never read whole (a 300 MB one was, first)."""
    big = tmp_path / "big.toml"
    with big.open("wb") as f:
        f.truncate(50 * 1024 * 1024)
    with pytest.raises(InvalidInput) as info:
        Settings.load(big, environ={})
    assert info.value.message == (
        f"the config file {big} is larger than 1 MiB, which no webward config is; "
        "name the TOML file itself"
    )


def test_an_endless_config_file_is_refused_not_read_for_ever(tmp_path: Path) -> None:
    """`--config /dev/zero` (an endless device) is read up to the cap and refused, exit 2,
    one sentence: it grew to 24 GB and ignored SIGTERM. Run with 1 GiB of address space, so
    that reading it whole fails (MemoryError) rather than eating the machine."""
    import resource
    import subprocess
    import sys

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    out = subprocess.run(
        [sys.executable, "-m", "webward", "fetch", "http://127.0.0.1:1/", "--config", "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=capped,
        env={**os.environ, "WEBWARD_STATE_DIR": str(tmp_path / "state")},
    )
    assert (out.returncode, out.stdout) == (2, ""), out.stderr
    assert out.stderr == (
        "webward: the config file /dev/zero is larger than 1 MiB, which no webward config is; "
        "name the TOML file itself\n"
    )


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
@pytest.mark.parametrize("newline", [b"\r", b"\r\n", b"\n"])
def test_a_config_file_of_any_line_ending_is_read(
    tmp_path: Path, newline: bytes, bom: bytes
) -> None:
    """Lines ended by CR alone (classic Mac, some editors and scripts) or CR LF are read as
    they were before the capped read (Path.read_text translated them): CR alone was refused
    as "not valid TOML". So is a file that starts with a UTF-8 byte order mark (Windows'
    Notepad writes one), refused before "at line 1, column 1"."""
    path = tmp_path / "webward.toml"
    lines = [b"[limits]", b"per_host_rate = 3.0", b'[agents."a b"]', b'tier = "full"', b""]
    path.write_bytes(bom + newline.join(lines))
    settings = Settings.load(path, environ={})
    assert settings.limits.per_host_rate == 3.0
    assert settings.agents["a b"].tier == "full"


def test_a_path_from_home_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`[state] dir = "~/x"`, WEBWARD_STATE_DIR='~/x' and a call log file under ~ are under
    the home directory, as in a shell: the state dir was a directory named ~ in whatever the
    working directory was, so `webward audit` run elsewhere found no records. A ~ with no
    home to expand it to is refused by name."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = tmp_path / "webward.toml"
    config.write_text('[state]\ndir = "~/ww-state"\n[observability]\ncall_log = "~/calls.log"\n')
    settings = Settings.load(config, environ={})
    assert settings.state.path() == tmp_path / "home" / "ww-state"
    assert settings.observability.call_log == str(tmp_path / "home" / "calls.log")
    from_env = Settings.load("/dev/null", environ={"WEBWARD_STATE_DIR": "~/elsewhere"})
    assert from_env.state.dir == str(tmp_path / "home" / "elsewhere")
    assert Settings.load("/dev/null", environ={"WEBWARD_STATE_DIR": "a/b~"}).state.dir == "a/b~"
    with pytest.raises(InvalidInput, match=r"^state.dir in WEBWARD_STATE_DIR is '~no-such-u"):
        Settings.load("/dev/null", environ={"WEBWARD_STATE_DIR": "~no-such-user-here/x"})


def test_unknown_webward_variables_are_named_and_known_ones_are_not() -> None:
    """A misspelt WEBWARD_* variable gets one sentence naming the one meant; the variables
    read, WEBWARD_TOKEN and the one the config names for the audit DSN get none."""
    from webward._settings import unknown_variables

    env = {
        "WEBWARD_STATEDIR": "/tmp/x",
        "WEBWARD_TIER": "full",
        "WEBWARD_TOKEN": "t",
        "WEBWARD_AUDIT_DSN": "host=db",
        "PATH": "/bin",
    }
    assert unknown_variables(env, ("WEBWARD_AUDIT_DSN",)) == [
        "webward does not read WEBWARD_STATEDIR; did you mean WEBWARD_STATE_DIR?"
    ]
    assert unknown_variables(env)[0].startswith(
        "webward does not read WEBWARD_AUDIT_DSN; the variables it reads are "
    )


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_config_file_is_named_as_such(tmp_path: Path, encoding: str) -> None:
    """A config saved as UTF-16 (Windows PowerShell's `>` and Out-File write it, with its
    byte order mark) was refused with Python's "'utf-8' codec can't decode byte 0xff in
    position 0": it is now named as UTF-16, with the step."""
    path = tmp_path / "webward.toml"
    text = '[policy]\ndefault_tier = "connected"\n'
    path.write_bytes(
        ("\ufeff" + text).encode(encoding) if encoding.endswith("be") else text.encode(encoding)
    )
    with pytest.raises(InvalidInput) as info:
        Settings.load(path, environ={})
    assert str(info.value) == (
        f"the config file {path} is UTF-16 text (as Windows PowerShell's > and Out-File write "
        "it), and webward reads UTF-8; save it as UTF-8"
    )


def test_a_settings_repr_shows_no_redis_password() -> None:
    """[state] redis_url carries Redis's password (":PASSWORD@", as docs/servers.md says to
    give it): a Settings logged, or in a traceback's locals as an error tracker records them,
    showed it. Its repr names the server without it; the setting itself is unchanged."""
    url = "rediss://app:hunter2@127.0.0.1:6380/1?password=hunter3"
    settings = Settings().replace({"state": {"redis_url": url}})
    for shown in (repr(settings), repr(settings.state), str(settings)):
        assert "hunter2" not in shown and "hunter3" not in shown
        assert "rediss://127.0.0.1:6380/1" in shown
    assert settings.state.redis_url == url
