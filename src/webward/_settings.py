"""Settings: one frozen value object holding every limit, default and switch.

Only :meth:`Settings.load` reads files and the environment; everything else takes a
``Settings`` in its constructor. The search order of the config file is ``path``, then
``$WEBWARD_CONFIG``, then the user config dir (``<user config dir>/webward/webward.toml``).

A ``webward.toml`` in the working directory is never read unless named: the working directory
may be a repository someone else wrote (an IDE starting ``webward mcp`` in a cloned project), and
its file could otherwise open internal ranges, raise tiers or point search keys at its own
server without anyone noticing. Name it with ``--config ./webward.toml`` to use it.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import InvalidInput
from ._redact import redact_secrets
from ._unicode import BIDI_CONTROLS, BIDI_MARKS

__all__ = ["ROLES", "TIERS", "AgentSettings", "BudgetSettings", "Settings"]

TIERS = ("as-owner", "connected", "full")
#: Agent roles: none (the default, "") or "admin" (may open the operator console).
ROLES = ("", "admin")

# Config keys that look like credentials: refused on load, because keys belong in the
# credential store (environment, keyring or the 0600 file), never in a config file.
_CREDENTIAL_KEYS = {
    "api_key",
    "apikey",
    "key",
    "token",
    "secret",
    "password",
    "brave_api_key",
    "brave_search_api_key",
    "tavily_api_key",
    "anthropic_api_key",
    "openai_api_key",
}


@dataclass(frozen=True)
class NetworkSettings:
    """Where webward may connect beyond the public internet."""

    # CIDRs the operator lets through although they are not global (intranet, tests).
    allow_ranges: tuple[str, ...] = ()

    def allow_networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        return tuple(ipaddress.ip_network(r, strict=False) for r in self.allow_ranges)


@dataclass(frozen=True)
class PolicySettings:
    """Reach tiers: who may read what."""

    version: int = 1
    default_tier: str = "as-owner"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    robots: bool = True
    # Tiers for which robots.txt is not consulted (``[policy.tiers.NAME] robots = false``).
    robots_off_tiers: tuple[str, ...] = ()
    mode: str = "enforce"  # enforce | report


@dataclass(frozen=True)
class LimitsSettings:
    """Caps, deadlines and abuse protections."""

    max_url_chars: int = 2048
    max_query_chars: int = 512
    max_read_bytes: int = 1_000_000
    max_fetch_text_chars: int = 40_000
    max_image_bytes: int = 5 * 1024 * 1024
    max_pdf_bytes: int = 10 * 1024 * 1024
    fetch_timeout_s: float = 12.0
    max_redirects: int = 10
    per_host_rate: float = 2.0
    per_host_burst: int = 5
    # Tier full's larger budget: its page reads spend 1/full_tier_budget of a host's token, so
    # it gets this many times the rate and burst of the other tiers (search keys excepted).
    full_tier_budget: float = 4.0
    per_host_concurrency: int = 4
    breaker_failures: int = 5
    breaker_open_s: float = 30.0
    breaker_max_open_s: float = 300.0
    page_cache_ttl_s: float = 600.0
    page_cache_max_chars: int = 50_000_000
    # Requests one headless render may send (the page, subresources, redirect hops).
    render_max_requests: int = 150
    # Conversion (docs/reading.md, "Bounded conversion"): worker processes (0: one per core),
    # conversions waiting for one before the next is refused as overloaded whatever its
    # expected wait (a backstop: a read whose wait would pass its deadline is refused sooner),
    # each worker's address-space limit, and the caps on the text read from a PDF.
    convert_workers: int = 0
    convert_queue: int = 256
    convert_memory_mb: int = 512
    max_pdf_pages: int = 500
    # pypdf parses page content at 3.5 to 6 µs a byte: 256 kB is about a second at worst, and
    # holds a window's text (40,000 characters) of a text-dense document.
    max_pdf_inflated_bytes: int = 256_000
    # A session's URL memory (``provenance = "session"``): at most this many URLs per session,
    # the oldest forgotten first, and a session idle this long is forgotten whole.
    session_max_urls: int = 10_000
    session_max_age_s: float = 86_400.0
    # What all sessions of one process hold in memory together, in bytes (counted as each
    # URL's length plus a fixed overhead): past it the least recently used sessions are
    # forgotten first. Shared by every agent, so that none can grow the process without end.
    # Not used with [state] redis_url: Redis bounds itself (TTLs, maxmemory).
    session_memory_max_bytes: int = 64 * 1024 * 1024
    # New MCP sessions an agent may open a minute on `webward mcp --http` (as many at once):
    # the server holds 10,000 at most, each for up to 30 idle minutes, so one token holder
    # opening sessions in a loop would otherwise lock every other agent out.
    mcp_sessions_per_minute: int = 60


@dataclass(frozen=True)
class SearchSettings:
    """Which search provider, and where it lives."""

    provider: str = ""
    brave_url: str = "https://api.search.brave.com"
    tavily_url: str = "https://api.tavily.com"
    searxng_url: str = ""
    # What one call to each provider costs (``[search.<provider>] cost``), for spend budgets.
    costs: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StateSettings:
    """Where state lives: the audit database and caches."""

    dir: str = ""
    redis_url: str = ""
    # What every Redis key webward writes begins with: two deployments sharing one Redis
    # database each take a prefix of their own (their keys name agents, hosts and sessions,
    # never the deployment, so they shared budgets, breakers and session URLs).
    redis_prefix: str = "webward:"

    def __repr__(self) -> str:
        # The URL carries Redis's password when it has one (":PASSWORD@", the documented way
        # to give it): a Settings logged, or in a traceback's locals (an error tracker's),
        # showed it. The URL itself is left whole: the Redis client needs it.
        return (
            f"StateSettings(dir={self.dir!r}, redis_url={redact_secrets(self.redis_url)!r}, "
            f"redis_prefix={self.redis_prefix!r})"
        )

    def path(self) -> Path:
        if self.dir:
            return Path(self.dir)
        return user_dir("state")


@dataclass(frozen=True)
class AuditSettings:
    postgres_dsn_env: str = ""


@dataclass(frozen=True)
class ObservabilitySettings:
    """Metrics and the call log (docs/operations.md); traces follow the ``OTEL_*`` variables."""

    # One JSON line per call: "" (servers: stderr; command line and library: off), "off",
    # "stderr" or a file to append to.
    call_log: str = ""
    metrics: bool = True  # servers answer GET /metrics
    # The SHA-256 of the bearer token /metrics asks for; empty: loopback clients only.
    metrics_token_sha256: str = ""
    metrics_top_hosts: int = 20  # hosts beyond the busiest N are labelled host="other"


@dataclass(frozen=True)
class BudgetSettings:
    """``[agents.NAME.budget]``: calls per session, hour and day for each capability, and
    search spend (in the unit of ``[search.<provider>] cost``). 0 means no budget."""

    fetch_per_session: int = 0
    fetch_per_hour: int = 0
    fetch_per_day: int = 0
    search_per_session: int = 0
    search_per_hour: int = 0
    search_per_day: int = 0
    search_spend_per_session: float = 0.0
    search_spend_per_hour: float = 0.0
    search_spend_per_day: float = 0.0


@dataclass(frozen=True)
class AgentSettings:
    """One named agent: its reach tier, (for the gateway) its hashed bearer token, and its
    governance: URL provenance, its own host lists and its budgets."""

    # "" when the entry names none: the agent then has [policy] default_tier (an entry that
    # only sets a budget or host lists must not change the agent's reach).
    tier: str = ""
    token_sha256: str = ""
    # "admin": the agent's token also opens the operator console (/console) of the gateway.
    role: str = ""
    provenance: str = "off"  # off | session
    allow: tuple[str, ...] = ()  # fetch: only these hosts, on top of the tier's rule
    deny: tuple[str, ...] = ()  # fetch: never these hosts
    search_allow: tuple[str, ...] = ()  # search results: only these domains
    search_deny: tuple[str, ...] = ()  # search results: never these domains
    budget: BudgetSettings = field(default_factory=BudgetSettings)


@dataclass(frozen=True)
class Settings:
    """Every setting webward reads, with the defaults of DESIGN.md."""

    network: NetworkSettings = field(default_factory=NetworkSettings)
    policy: PolicySettings = field(default_factory=PolicySettings)
    limits: LimitsSettings = field(default_factory=LimitsSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    state: StateSettings = field(default_factory=StateSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)
    observability: ObservabilitySettings = field(default_factory=ObservabilitySettings)
    agents: Mapping[str, AgentSettings] = field(default_factory=dict)
    source: str = ""  # the config file the settings came from, for messages

    def tier_for(self, agent: str) -> str:
        """The reach tier of ``agent``: its entry's ``tier``, else ``[policy] default_tier``."""
        entry = self.agents.get(agent)
        return entry.tier if entry and entry.tier else self.policy.default_tier

    def replace(self, overrides: Mapping[str, Any]) -> Settings:
        """A copy with ``overrides`` (a nested dict shaped like the TOML) applied."""
        return _build(_merge(_to_dict(self), overrides), self.source)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        overrides: Mapping[str, Any] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> Settings:
        """The config file (see the module doc for the search order), then ``WEBWARD_*``
        variables, then ``overrides``."""
        env = os.environ if environ is None else environ
        data: dict[str, Any] = {}
        source = ""
        found = _find_config(path, env)
        if found is not None:
            source = shown_path(found)
            try:
                # utf-8-sig: a byte order mark, which Windows editors (Notepad) write at the
                # start of a UTF-8 file, is left out; TOML refused it at line 1, column 1.
                raw = _read_capped(found)
                data = tomllib.loads(_newlines(raw.decode("utf-8-sig")))
            except OSError as exc:
                raise InvalidInput(
                    f"the config file {source} could not be read ({exc.strerror or exc}); "
                    "make it readable by this user, or name another with --config"
                ) from exc
            except UnicodeDecodeError as exc:
                if raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # the byte order marks of UTF-16
                    raise InvalidInput(
                        f"the config file {source} is UTF-16 text (as Windows PowerShell's > "
                        "and Out-File write it), and webward reads UTF-8; save it as UTF-8"
                    ) from None
                raise InvalidInput(
                    f"the config file {source} could not be read: {exc}; save it as UTF-8"
                ) from exc
            except tomllib.TOMLDecodeError as exc:
                raise InvalidInput(
                    f"the config file {source} is not valid TOML: {_toml_error(str(exc))}"
                ) from exc
            _refuse_credentials(data, source)
        from_env = _from_environment(env)
        data = _merge(data, from_env)
        if overrides:
            data = _merge(data, overrides)
        try:
            return _build(data, source)
        except InvalidInput:
            # A bad value from a WEBWARD_* variable is named by it, not by the config file.
            for var, (section, key) in _ENV_KEYS.items():
                if var in env:
                    _build({section: {key: from_env[section][key]}}, var)
            raise


def _find_config(path: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path | None:
    if path is not None:
        return _named_config(Path(path), "")
    if env.get("WEBWARD_CONFIG"):
        return _named_config(Path(env["WEBWARD_CONFIG"]), " named by WEBWARD_CONFIG")
    # Never ./webward.toml: see the module docstring.
    try:
        candidate = user_dir("config") / "webward.toml"
    except NoHome:  # a user without a home has no config file there: the defaults hold
        return None
    try:
        return candidate if candidate.is_file() else None
    except OSError as exc:  # a HOME this user cannot search (`su -p`, `sudo -E`: root's)
        raise InvalidInput(
            f"cannot look for the config file at {candidate} ({exc.strerror or exc}); set "
            "HOME to this user's home, or name a config file with --config"
        ) from None


class NoHome(InvalidInput):
    """No home directory can be found for this user (HOME unset and the user id without a
    passwd entry: ``docker run --user 12345``, a service), and a default path needs one."""


# Each default path by what it is for: what it is called, and what names it instead of the
# home directory.
_INSTEAD_OF_HOME = {
    "config": (
        "config file",
        "name the config file with --config or WEBWARD_CONFIG, or set XDG_CONFIG_HOME",
    ),
    "state": (
        "state dir",
        "set WEBWARD_STATE_DIR (or [state] dir in the config), or XDG_STATE_HOME",
    ),
    "credentials": (
        "credential file",
        "set XDG_CONFIG_HOME, or give the key in its environment variable",
    ),
}


def user_dir(kind: str) -> Path:
    """webward's directory of ``kind`` ("config", "state", "credentials") under the user's home, as
    platformdirs finds it; :class:`NoHome` in one sentence with the next step when there is
    no home to find, where platformdirs raised RuntimeError (said to be a bug in webward)."""
    import platformdirs  # only when no path is set (6 ms of start-up)

    find = platformdirs.user_state_dir if kind == "state" else platformdirs.user_config_dir
    try:
        return Path(find("webward"))
    except RuntimeError:
        what, instead = _INSTEAD_OF_HOME[kind]
        raise NoHome(
            f"cannot find the {what}: no home directory is known for this user (HOME is not "
            f"an absolute path, and user id {os.getuid()} has no passwd entry); set HOME, or "
            f"{instead}"
        ) from None


def shown_path(path: Path) -> str:
    """``path`` as a person reads it: its bytes as UTF-8, those that are none as ``\\xNN``.
    Under an ASCII filesystem encoding (the C locale without UTF-8 mode) a name's other bytes
    are surrogates, which a message shows as U+FFFD: "caf\ufffd\ufffd" for café."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _named_config(p: Path, named_by: str) -> Path:
    try:
        if p.is_file() or (p.exists() and not p.is_dir()):  # also /dev/null, a pipe: <(...)
            return p
        is_dir = p.is_dir()
    except OSError as exc:  # a directory on the way this user cannot search
        raise InvalidInput(
            f"cannot look for the config file {shown_path(p)}{named_by} "
            f"({exc.strerror or exc}); name a config file this user can read"
        ) from None
    if is_dir:
        raise InvalidInput(
            f"the config file {shown_path(p)}{named_by} is a directory; name the TOML file "
            f"itself (for example {shown_path(p / 'webward.toml')})"
        )
    raise InvalidInput(f"the config file {shown_path(p)}{named_by} does not exist")


#: The most a config file may hold. Read up to this and no further: a name given by mistake
#: (a 300 MB file, an endless device such as /dev/zero) was read whole, into gigabytes of
#: memory, in one C call no signal could stop. The largest real config is a few kB.
MAX_CONFIG_BYTES = 1024 * 1024


def _read_capped(path: Path) -> bytes:
    """The bytes of the config file at ``path``, refused (``InvalidInput``) past
    :data:`MAX_CONFIG_BYTES`: a regular file by its size, before a byte is read; anything
    else (a pipe, /dev/null, a device) by reading one byte more than the cap at most."""
    with path.open("rb") as f:
        info = os.fstat(f.fileno())
        too_big = stat.S_ISREG(info.st_mode) and info.st_size > MAX_CONFIG_BYTES
        data = b"" if too_big else f.read(MAX_CONFIG_BYTES + 1)  # one more: past the cap
    if too_big or len(data) > MAX_CONFIG_BYTES:
        raise InvalidInput(
            f"the config file {shown_path(path)} is larger than "
            f"{MAX_CONFIG_BYTES // (1024 * 1024)} MiB, which no webward config is; name the TOML "
            "file itself"
        )
    return data


def _newlines(text: str) -> str:
    """``text`` with CR LF and a lone CR as LF, as ``Path.read_text`` read the file before
    its read was capped: a config with CR line endings (classic Mac, some editors and
    scripts) loaded then, and strict TOML refuses a lone CR."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _refuse_credentials(data: Mapping[str, Any], source: str, prefix: str = "") -> None:
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _refuse_credentials(value, source, f"{name}.")
        elif key.lower() in _CREDENTIAL_KEYS or key.lower().endswith("_api_key"):
            raise InvalidInput(
                f"the config file {source} holds a credential ({name}); credentials belong in "
                "the credential store: set the environment variable (for example "
                "BRAVE_SEARCH_API_KEY) or run `webward credentials set NAME`, and remove it "
                "from the file"
            )


_ENV_KEYS: dict[str, tuple[str, str]] = {
    "WEBWARD_ALLOW_RANGES": ("network", "allow_ranges"),
    "WEBWARD_TIER": ("policy", "default_tier"),
    "WEBWARD_STATE_DIR": ("state", "dir"),
    "WEBWARD_REDIS_URL": ("state", "redis_url"),
    "WEBWARD_REDIS_PREFIX": ("state", "redis_prefix"),
    "WEBWARD_SEARCH_PROVIDER": ("search", "provider"),
    "WEBWARD_BRAVE_URL": ("search", "brave_url"),
    "WEBWARD_TAVILY_URL": ("search", "tavily_url"),
    "WEBWARD_SEARXNG_URL": ("search", "searxng_url"),
    "WEBWARD_CALL_LOG": ("observability", "call_log"),
}


# WEBWARD_* names that are no setting but are not typos either: the config file's own
# variable, the bearer token the docs have clients keep in WEBWARD_TOKEN, and the prefixes of
# the test suite's and the benchmarks' variables.
_OTHER_VARIABLES = frozenset({"WEBWARD_CONFIG", "WEBWARD_TOKEN"})
_OWN_PREFIXES = ("WEBWARD_TEST_", "WEBWARD_BENCH_", "WEBWARD_CONSOLE_")


def unknown_variables(env: Mapping[str, str], also: tuple[str, ...] = ()) -> list[str]:
    """One sentence for each ``WEBWARD_*`` variable in ``env`` that webward does not read
    (``also``: those the config names, such as ``[audit] postgres_dsn_env``), with the name
    most likely meant. A typo (WEBWARD_CONFG, WEBWARD_ALLOW_RANGE) was ignored without a
    word, and the defaults it meant to change held: the file not read, the range refused."""
    read = sorted({*_ENV_KEYS, "WEBWARD_CONFIG"})
    known = {*read, *_OTHER_VARIABLES, *also}
    # Matched without the prefix every name shares, which made any name look close.
    suffixes = [name.removeprefix("WEBWARD_") for name in read]
    return [
        f"webward does not read {var}; "
        + _did_you_mean(
            var.removeprefix("WEBWARD_").upper(), suffixes, "variables it reads", "WEBWARD_{}"
        )
        for var in sorted(env)
        if var.startswith("WEBWARD_") and var not in known and not var.startswith(_OWN_PREFIXES)
    ]


def _from_environment(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for var, (section, key) in _ENV_KEYS.items():
        value: Any = env.get(var)
        if value is None:
            continue
        if key == "allow_ranges":  # a list: empty is the empty list, which narrows the file's
            value = [r.strip() for r in value.split(",") if r.strip()]
        elif not value.strip():  # empty is unset, as for any variable: the file's value stands
            continue
        out.setdefault(section, {})[key] = value
    return out


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(extra, Mapping):
        raise InvalidInput(
            "settings overrides must be a dict shaped like the TOML, such as "
            f'{{"policy": {{"default_tier": "connected"}}}}, not {type(extra).__name__}'
        )
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _to_dict(settings: Settings) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if f.name == "agents":
            out["agents"] = {name: dataclasses.asdict(a) for name, a in value.items()}
        elif dataclasses.is_dataclass(value):
            out[f.name] = dataclasses.asdict(value)  # type: ignore[arg-type]
    return out


_SECTIONS: dict[str, type[Any]] = {
    "network": NetworkSettings,
    "policy": PolicySettings,
    "limits": LimitsSettings,
    "search": SearchSettings,
    "state": StateSettings,
    "audit": AuditSettings,
    "observability": ObservabilitySettings,
}


def _build(data: Mapping[str, Any], source: str) -> Settings:
    where = f" in {source}" if source else ""
    kwargs: dict[str, Any] = {"source": source}
    for section, value in data.items():
        if section == "agents":
            kwargs["agents"] = _build_agents(value, where)
            continue
        cls = _SECTIONS.get(section)
        if cls is None:
            raise InvalidInput(
                f"unknown config section [{section}]{where}; "
                + _did_you_mean(section, [*_SECTIONS, "agents"], "sections", "[{}]")
            )
        if not isinstance(value, Mapping):
            raise InvalidInput(f"config section [{section}]{where} must be a table")
        kwargs[section] = _build_section(cls, section, dict(value), where)
    settings = Settings(**kwargs)
    _validate(settings, where)
    return settings


def _did_you_mean(given: str, known: list[str], what: str, form: str) -> str:
    """The next step for a name that is not known: the closest known one, else them all."""
    import difflib  # only when a config is wrong

    close = difflib.get_close_matches(str(given), known, n=1, cutoff=0.7)
    if close:
        return f"did you mean {form.format(close[0])}?"
    return f"the {what} are {', '.join(form.format(k) for k in sorted(known))}"


def _build_section(cls: type[Any], section: str, value: dict[str, Any], where: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if section == "policy" and isinstance(value.get("tiers"), Mapping):
        # [policy.tiers.NAME] robots = false turns robots.txt off for one tier.
        tiers = value.pop("tiers")
        for tier, cfg in tiers.items():
            if tier not in TIERS:  # there are no others: a misspelt "fulll" would change nothing
                raise InvalidInput(
                    f"policy.tiers.{tier}{where} is not a tier; the tiers are {', '.join(TIERS)}"
                )
            if not isinstance(cfg, Mapping):
                raise InvalidInput(f"[policy.tiers.{tier}]{where} must be a table")
            for key, item in cfg.items():  # a misspelt "robotz" must not pass unsaid
                if key != "robots":
                    raise InvalidInput(
                        f"unknown config key policy.tiers.{tier}.{key}{where}; a tier's table "
                        "takes robots = true or false"
                    )
                if not isinstance(item, bool):
                    raise InvalidInput(
                        f"config key policy.tiers.{tier}.robots{where} must be true or false"
                    )
        off = [t for t, cfg in tiers.items() if cfg.get("robots") is False]
        value["robots_off_tiers"] = tuple(off)
    if section == "search":
        value["costs"] = _search_costs(value, where)
    args: dict[str, Any] = {}
    for key, item in value.items():
        f = fields.get(key)
        if f is None:
            raise InvalidInput(
                f"unknown config key {section}.{key}{where}; "
                + _did_you_mean(key, [n for n in fields if not n.startswith("_")], "keys", "{}")
            )
        default = f.default if f.default is not dataclasses.MISSING else None
        args[key] = _coerce(item, default, f"{section}.{key}", where)
        if (section, key) in _PATH_KEYS:
            args[key] = _home_expanded(args[key], f"{section}.{key}", where)
    return cls(**args)


# Keys that name a file or directory: a leading ~ is the home directory, as in a shell.
_PATH_KEYS = {("state", "dir"), ("observability", "call_log")}


def _home_expanded(value: str, name: str, where: str) -> str:
    """``value`` with a leading ``~`` or ``~user`` expanded (``dir = "~/webward-state"``
    made a directory named ``~`` in whatever the working directory was, and the audit log
    moved with it); refused when there is no home to expand it to."""
    if not value.startswith("~"):
        return value
    expanded = os.path.expanduser(value)
    if expanded.startswith("~"):
        raise InvalidInput(
            f"{name}{where} is {value!r}, but no home directory is known to expand its ~ to; "
            "give an absolute path"
        )
    return expanded


def _search_costs(value: dict[str, Any], where: str) -> dict[str, float]:
    """``[search.<provider>] cost = 0.005`` tables, taken out of ``value``, plus ``costs``
    (the same, as ``Settings.replace`` hands it back)."""
    costs = dict(value.pop("costs", None) or {})
    for name in [k for k, v in value.items() if isinstance(v, Mapping)]:
        table = value.pop(name)
        unknown = set(table) - {"cost"}
        if unknown:
            raise InvalidInput(f"unknown config key search.{name}.{sorted(unknown)[0]}{where}")
        if "cost" in table:
            costs[name] = table["cost"]
    for name, cost in costs.items():
        _check_provider_name(name, where)
        if isinstance(cost, bool) or not isinstance(cost, int | float) or cost < 0:
            raise InvalidInput(f"config key search.{name}.cost{where} must be a number >= 0")
    return {name: float(cost) for name, cost in costs.items()}


# tomllib's words for the mistakes a person makes editing the file, and what to do about each.
# "Cannot declare ('policy',) twice" named the table as a Python tuple and said nothing of
# what to do (a second [policy] added below the first is the usual one).
_TOML_STEPS = (
    (
        re.compile(r"Cannot declare \((.*)\) twice"),
        "the table [{table}] is declared twice {at}; keep one [{table}] and put all its keys in it",
    ),
    (
        re.compile(r"Cannot overwrite a value"),
        "a key is given a value twice {at} (or a key and a table share one name); keep one",
    ),
    (
        re.compile(r"Invalid value"),
        'a value that is no TOML value {at}: a string needs quotes ("connected"), a list '
        'brackets (["a", "b"])',
    ),
)


def _toml_error(text: str) -> str:
    """tomllib's message for a file it could not parse, with the next step where it is
    one of the usual mistakes (its own words otherwise, which name the place)."""
    m = re.fullmatch(r"(.*?) \((at line \d+, column \d+|at end of document)\)", text)
    if m is None:
        return text
    what, at = m.groups()
    for pattern, step in _TOML_STEPS:
        found = pattern.fullmatch(what)
        if found is not None:
            # The table's keys as tomllib gives them: a tuple's repr, each quoted.
            keys = re.findall(r"'((?:[^'\\]|\\.)*)'", found.group(1)) if found.groups() else []
            table = ".".join(k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else f'"{k}"' for k in keys)
            return step.format(table=table, at=f"({at})")
    return text


def _check_provider_name(name: str, where: str) -> None:
    """Refuse ``[search.NAME]`` when NAME is a misspelling of a search provider's name: its cost
    would never be charged. Any other name stays allowed, as the name of a provider passed to
    ``Web(search_provider=...)``, which is charged at the cost of its own ``name``."""
    if name in SEARCH_PROVIDERS:
        return
    import difflib  # only when a name is not a built-in provider's

    close = difflib.get_close_matches(str(name).lower(), SEARCH_PROVIDERS, n=1, cutoff=0.8)
    if close:
        raise InvalidInput(
            f"search.{name}{where} is not a search provider (did you mean search.{close[0]}?); "
            f"the providers are {', '.join(SEARCH_PROVIDERS)}"
        )


def _coerce(item: Any, default: Any, name: str, where: str) -> Any:
    """Coerce a TOML or environment value to the type of the field's default."""
    try:
        if isinstance(default, bool):
            if isinstance(item, str):
                if item.lower() in ("1", "true", "yes", "on"):
                    return True
                if item.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(item)
            if not isinstance(item, bool):
                raise ValueError(item)
            return item
        if isinstance(default, tuple):
            if isinstance(item, str):
                item = [p.strip() for p in item.split(",") if p.strip()]
            if not isinstance(item, list | tuple) or not all(isinstance(i, str) for i in item):
                raise ValueError(item)
            return tuple(item)
        if isinstance(default, int) and not isinstance(default, bool):
            # A whole number: 1.9 is not cut to 1, nor is inf an OverflowError (a bug's words).
            if isinstance(item, int) and not isinstance(item, bool):
                return item
            if isinstance(item, str):  # an environment variable's
                return int(item.strip())
            if isinstance(item, float) and math.isfinite(item) and item.is_integer():
                return int(item)
            raise ValueError(item)
        if isinstance(default, float):
            if isinstance(item, bool) or not math.isfinite(float(item)):
                raise ValueError(item)
            return float(item)
        if isinstance(default, str):
            if not isinstance(item, str):
                raise ValueError(item)
            return item
    except (TypeError, ValueError, OverflowError):
        raise InvalidInput(
            f"config key {name}{where} has the wrong type ({item!r}); it takes "
            f"{_KINDS.get(type(default), 'a value of another kind')}"
        ) from None
    return item


_KINDS = {
    bool: "true or false",
    tuple: "a list of strings",
    int: "a whole number",
    float: "a finite number",
    str: "a string",
}


#: An agent's name: what the audit, the metrics and the console show and filter by.
MAX_AGENT_CHARS = 200
AGENT_NAME_RULE = (
    f"agent must be a name of 1 to {MAX_AGENT_CHARS} characters, with no control, bidi or "
    "line-separator character"
)
# What may not be in a name: control characters, bytes that are not UTF-8 (surrogates),
# line and paragraph separators, private-use and unassigned code points, and the bidi
# controls that reorder what is shown. Spaces of every kind, joiners (an emoji's ZWJ) and
# letters of every script are names' own.
_NOT_IN_NAMES = frozenset({"Cc", "Cs", "Zl", "Zp", "Co", "Cn"})
_BIDI = frozenset(BIDI_CONTROLS + BIDI_MARKS)


def is_agent_name(name: object) -> bool:
    """Whether ``name`` may name an agent: a control character, a bidi override or a byte
    that is not UTF-8 would reach the audit under a name no one could type or filter by."""
    if not isinstance(name, str) or not 0 < len(name) <= MAX_AGENT_CHARS:
        return False
    if name.isascii():
        return name.isprintable()
    import unicodedata  # only for names beyond ASCII

    return not any(c in _BIDI or unicodedata.category(c) in _NOT_IN_NAMES for c in name)


def folded_agent_name(name: str) -> str:
    """``name`` as a person reads it: Unicode compatibility form, case folded, runs of space
    made one and the ends trimmed. Two names alike here look like one agent."""
    import unicodedata

    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def refuse_alike_agent(
    agent: str, agents: Mapping[str, Any], folded: Mapping[str, str] | None = None
) -> None:
    """Refuse ``agent`` when it is not in ``agents`` (the config's) but reads as one of them
    (:func:`folded_agent_name`; ``folded`` maps folded names to configured ones, made once by
    a caller that asks often). "Research", "research " or an NFD "café" for a configured
    agent read with the default tier and none of that agent's lists, provenance or budgets,
    in silence: an ``--agent`` typed into a client's config is checked nowhere else."""
    if agent in agents:
        return
    if folded is None:
        folded = {folded_agent_name(name): name for name in agents}
    alike = folded.get(folded_agent_name(agent))
    if alike is not None:
        raise InvalidInput(
            f"agent {agent!r} is not in the config, but differs from agent {alike!r} only in "
            f"case, spacing or Unicode form, and would read without [agents.{alike}]'s tier, "
            "lists, provenance and budgets; name the agent exactly as the config does"
        )


def _build_agents(value: Any, where: str) -> dict[str, AgentSettings]:
    if not isinstance(value, Mapping):
        raise InvalidInput(f"config section [agents]{where} must be a table of agents")
    agents: dict[str, AgentSettings] = {}
    for name, cfg in value.items():
        if not is_agent_name(name):
            raise InvalidInput(f"[agents.{name!r}]{where}: an {AGENT_NAME_RULE}")
        if not isinstance(cfg, Mapping):
            raise InvalidInput(f"[agents.{name}]{where} must be a table")
        table = dict(cfg)
        budget = table.pop("budget", {})
        if not isinstance(budget, Mapping):
            raise InvalidInput(f"[agents.{name}.budget]{where} must be a table")
        agent = _build_section(AgentSettings, f"agents.{name}", table, where)
        agents[name] = dataclasses.replace(
            agent,
            budget=_build_section(BudgetSettings, f"agents.{name}.budget", dict(budget), where),
        )
    return agents


# The [limits] for which 0 means something (no redirect followed, no page cache, one worker
# per core, no conversion waiting): every other number must be above 0, or every read would
# fail on it later, far from the file that set it.
_LIMITS_ZERO_MEANS = frozenset(
    {
        "max_redirects",
        "page_cache_ttl_s",
        "page_cache_max_chars",
        "convert_workers",
        "convert_queue",
    }
)
# Lower bounds above that (a worker's address space below 64 MiB cannot hold the converters;
# sessions in less than 1 MiB would forget their URLs in a few pages, and a number that small
# is more likely meant as megabytes).
_LIMITS_AT_LEAST = {
    "full_tier_budget": 1,
    "per_host_burst": 1,
    "convert_memory_mb": 64,
    "session_memory_max_bytes": 1024 * 1024,
}


def _validate_limits(limits: LimitsSettings, where: str) -> None:
    for f in dataclasses.fields(limits):
        value = getattr(limits, f.name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if f.name in _LIMITS_AT_LEAST:
            least = _LIMITS_AT_LEAST[f.name]
            ok, bound = value >= least, f"at least {least}"
        elif f.name in _LIMITS_ZERO_MEANS:
            ok, bound = value >= 0, "0 or more"
        else:
            ok, bound = value > 0, "greater than 0"
        if not ok or value != value:  # NaN compares false either way
            raise InvalidInput(f"limits.{f.name}{where} must be {bound} (it is {value!r})")


def _check_redis_url(url: str, where: str) -> None:
    """The shape redis-py's ``from_url`` needs, checked as the config loads: a bad port was
    a traceback at the first request. The URL itself is never echoed (it may hold a
    password)."""
    if not url:
        return
    from urllib.parse import urlsplit

    problem = ""
    try:
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            problem = "its scheme is not redis://, rediss:// or unix://"
        elif parts.scheme != "unix" and not parts.hostname:
            problem = "it names no host"
        elif parts.scheme != "unix" and not _is_database(parts.path):
            # redis-py reads a path that is no number as database 0, silently: a typo
            # (``/l`` for ``/1``) put one deployment's limits into another's database.
            problem = "its path is not a database number"
        if not problem:
            parts.port  # noqa: B018  # raises ValueError for a port that is no number
    except ValueError:
        problem = "its port is not a number from 0 to 65535"
    problem = problem or _redis_options_problem(url)
    if problem:
        raise InvalidInput(
            f"state.redis_url{where} is not a Redis URL ({problem}); write it as "
            "redis://HOST:PORT/DB, a password (if any) before the host as :PASSWORD@"
        )


_REDIS_PREFIX_MAX = 64


def _check_redis_prefix(prefix: str, where: str) -> None:
    """A key prefix Redis, ``redis-cli`` and an ACL key pattern (``~staging:*``) all read as
    written: printable ASCII without spaces, and not empty (keys named only by agents and hosts
    would meet any other program's keys in that database)."""
    if (
        0 < len(prefix) <= _REDIS_PREFIX_MAX
        and prefix.isascii()
        and prefix.isprintable()
        and not any(c.isspace() or c in "*?[]" for c in prefix)
    ):
        return
    raise InvalidInput(
        f"state.redis_prefix{where} must be 1 to {_REDIS_PREFIX_MAX} printable ASCII "
        'characters without spaces or *?[] (a key pattern\'s), such as "staging:"'
    )


def _is_database(path: str) -> bool:
    """Whether a Redis URL's path names a database as redis-py reads it: none, or a number
    in ASCII digits ("/²" is a digit to str.isdigit(), not to redis-py's int(): database 0,
    silently)."""
    db = path.strip("/")
    return not db or (db.isascii() and db.isdigit())


def _redis_options_problem(url: str) -> str:
    """:func:`~webward._redis_client.url_options_problem`, when the redis extra is there."""
    try:
        from ._redis_client import url_options_problem
    except ImportError:  # the extra is missing: said where a store opens it
        return ""
    return url_options_problem(url)


def _check_provider_url(name: str, url: str, where: str) -> None:
    """A search provider's base URL, as the config loads: an http(s) URL with a host and
    nothing after its path (each adapter adds its own path and query). Checked at the first
    search, a bad one read as a bad query and echoed the query. Only SearXNG's may be empty
    (not configured): the others have their vendor's URL unless one is given."""
    if not url and name == "searxng_url":
        return
    from urllib.parse import SplitResult, urlsplit

    try:
        parts: SplitResult | None = urlsplit(url)
        port_ok = parts is not None and (parts.port is None or parts.port > 0)
    except ValueError:  # a broken IPv6 literal, a port that is no number or past 65535
        parts, port_ok = None, False
    if not url:
        problem = "a URL when given; leave it out for the provider's own"
    elif (
        parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok
    ):
        problem = "an http:// or https:// URL with a host, such as https://api.example.com"
    elif parts.query or parts.fragment or "@" in parts.netloc:
        problem = "a base URL without a query, a fragment or credentials"
    else:
        return
    raise InvalidInput(f"search.{name}{where} must be {problem}")


#: The search providers ``[search] provider`` may name (``webward.search.PROVIDERS``, kept
#: here too so that loading a config imports no provider adapter; a test keeps them equal).
SEARCH_PROVIDERS = ("brave", "tavily", "searxng", "none")
# Values of call_log that read as a keyword, not as a file name: taken as files, they made a
# file called "stdout" or "on" in the working directory. Only "stderr" and "off" are keywords.
_CALL_LOG_WORDS = frozenset(
    {"stdout", "stderr", "off", "on", "true", "false", "yes", "no", "1", "0", "none", "null", "-"}
)


def _check_call_log(value: str, where: str) -> None:
    if value in ("", "off", "stderr") or value.strip().lower() not in _CALL_LOG_WORDS:
        return
    raise InvalidInput(
        f"observability.call_log{where} is {value!r}, which is not a file name: set it to "
        "stderr, off, or a file path (./NAME for a file of that name in the working directory)"
    )


def _validate(settings: Settings, where: str) -> None:
    _validate_limits(settings.limits, where)
    _check_call_log(settings.observability.call_log, where)
    provider = settings.search.provider
    if provider.strip() and provider.strip().lower() not in SEARCH_PROVIDERS:
        raise InvalidInput(
            f"search.provider{where} is {provider[:40]!r}, which is no search provider; set it "
            f"to one of {', '.join(SEARCH_PROVIDERS)}, or leave it out to use the first with a key"
        )
    _check_redis_url(settings.state.redis_url, where)
    _check_redis_prefix(settings.state.redis_prefix, where)
    for name in ("brave_url", "tavily_url", "searxng_url"):
        _check_provider_url(name, getattr(settings.search, name), where)
    for tier in [
        settings.policy.default_tier,
        *(a.tier for a in settings.agents.values() if a.tier),
    ]:
        if tier not in TIERS:
            raise InvalidInput(f"unknown tier {tier!r}{where}; the tiers are {', '.join(TIERS)}")
    if settings.observability.metrics_top_hosts < 1:
        raise InvalidInput(f"observability.metrics_top_hosts{where} must be at least 1")
    digest = settings.observability.metrics_token_sha256
    if digest and not (len(digest) == 64 and all(c in "0123456789abcdefABCDEF" for c in digest)):
        raise InvalidInput(
            f"observability.metrics_token_sha256{where} must be 64 hex digits: make it with "
            "`webward serve --hash-token`"
        )
    for name, agent in settings.agents.items():
        if agent.provenance not in ("off", "session"):
            raise InvalidInput(f"agents.{name}.provenance{where} must be off or session")
        if any(v < 0 for v in dataclasses.astuple(agent.budget)):
            raise InvalidInput(f"[agents.{name}.budget]{where} holds a negative budget")
    if settings.policy.mode not in ("enforce", "report"):
        raise InvalidInput(f"policy.mode{where} must be enforce or report")
    for name, agent in settings.agents.items():
        if agent.role not in ROLES:
            raise InvalidInput(
                f'[agents.{name}] role{where} is {agent.role!r}; leave it out or set "admin"'
            )
    for r in settings.network.allow_ranges:
        try:
            network = ipaddress.ip_network(r, strict=False)
        except ValueError:
            raise InvalidInput(
                f"network.allow_ranges{where} holds {r!r}, which is not a CIDR"
            ) from None
        if "/" in r and network.network_address != ipaddress.ip_address(r.split("/")[0].strip()):
            # "127.0.0.1/0" is 0.0.0.0/0 to a lenient reading: a typo must not open every
            # range. Said, with both readings, rather than widened in silence.
            address = r.split("/")[0].strip()
            single = f"{address}/{network.max_prefixlen}"
            raise InvalidInput(
                f"network.allow_ranges{where} holds {r!r}, whose address has bits set past its "
                f"prefix; write {str(network)!r} for the whole range or {single!r} for the one "
                "address"
            )
