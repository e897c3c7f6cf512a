"""Policy: reach tiers x host patterns x capabilities, report mode, and broken policy files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webward._errors import OPERATOR_ONLY, InvalidInput, Refused, operator_step
from webward._policy import (
    REASON_ALLOWED,
    REASON_HOST_DENIED,
    REASON_HOST_NOT_ALLOWED,
    REASON_SCREENSHOT_TIER,
    REASON_SEARCH_TIER,
    Decision,
    HostPattern,
    Policy,
    normalise_host,
)
from webward._settings import PolicySettings, Settings

TIERS = ("as-owner", "connected", "full")


def load(tmp_path: Path, toml: str) -> Settings:
    path = tmp_path / "webward.toml"
    path.write_text(toml, encoding="utf-8")
    return Settings.load(path, environ={})


POLICY_TOML = """
[policy]
allow = ["docs.python.org", "*.example.org", "Bücher.example.", "127.0.0.1"]
deny = ["evil.example.org", "*.ads.example.com"]
[agents.research]
tier = "connected"
[agents.shooter]
tier = "full"
"""

# (host, as-owner, connected, full) -> the reason each tier gives.
FETCH_MATRIX = [
    ("docs.python.org", REASON_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("DOCS.Python.ORG.", REASON_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("python.org", REASON_HOST_NOT_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("www.docs.python.org", REASON_HOST_NOT_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("a.example.org", REASON_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("a.b.example.org", REASON_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("example.org", REASON_HOST_NOT_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("notexample.org", REASON_HOST_NOT_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("evil.example.org", REASON_HOST_DENIED, REASON_HOST_DENIED, REASON_HOST_DENIED),
    ("EVIL.example.org.", REASON_HOST_DENIED, REASON_HOST_DENIED, REASON_HOST_DENIED),
    ("x.ads.example.com", REASON_HOST_DENIED, REASON_HOST_DENIED, REASON_HOST_DENIED),
    ("ads.example.com", REASON_HOST_NOT_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("bücher.example", REASON_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("xn--bcher-kva.example", REASON_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("127.0.0.1", REASON_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
    ("[::1]", REASON_HOST_NOT_ALLOWED, REASON_ALLOWED, REASON_ALLOWED),
]


@pytest.mark.parametrize(("host", "as_owner", "connected", "full"), FETCH_MATRIX)
def test_fetch_matrix(tmp_path: Path, host: str, as_owner: str, connected: str, full: str) -> None:
    """Each tier gives the expected decision for each host; the deny list wins everywhere."""
    policy = Policy(load(tmp_path, POLICY_TOML).policy)
    for tier, expected in zip(TIERS, (as_owner, connected, full), strict=True):
        decision = policy.check_fetch(host, tier, "cli")
        assert decision.reason == expected, (host, tier)
        assert decision.allowed is (expected == REASON_ALLOWED)
        assert decision.would_deny is False


def test_capability_matrix(tmp_path: Path) -> None:
    """Search needs connected or full; screenshots need full; each agent has its own tier."""
    settings = load(tmp_path, POLICY_TOML)
    policy = Policy(settings.policy)
    expected = {
        "as-owner": (False, False),
        "connected": (True, False),
        "full": (True, True),
    }
    for agent, tier in (("cli", "as-owner"), ("research", "connected"), ("shooter", "full")):
        assert settings.tier_for(agent) == tier
        search, shot = expected[tier]
        assert policy.check_search(tier, agent).allowed is search
        assert policy.check_screenshot(tier, agent).allowed is shot


def test_refusal_messages_name_host_tier_reason_and_remedy() -> None:
    """Refusals are one sentence that says what, why and how to allow it; a model is shown the
    what and why only (``for_model``): the setting that would let it through is the operator's."""
    policy = Policy(PolicySettings(allow=("docs.python.org",), deny=("*.bad.example",)))
    d = policy.check_fetch("Example.org", "as-owner", "cli")
    assert d == Decision(
        False,
        REASON_HOST_NOT_ALLOWED,
        operator_step(
            "refused: example.org is not on the allow-list of tier as-owner",
            "an operator can add it to [policy] allow, or give agent cli tier connected "
            "([agents.cli] tier in the config)",
        ),
    )
    cases = [
        (
            policy.check_fetch("Example.org", "as-owner", "cli"),
            REASON_HOST_NOT_ALLOWED,
            "refused: example.org is not on the allow-list of tier as-owner",
            "an operator can add it to [policy] allow, or give agent cli tier connected "
            "([agents.cli] tier in the config)",
        ),
        (
            policy.check_fetch("x.bad.example", "full", "bot"),
            REASON_HOST_DENIED,
            "refused: x.bad.example is on the deny-list, which holds in every tier (agent bot "
            "has tier full)",
            "remove *.bad.example from [policy] deny to allow it",
        ),
        (
            policy.check_search("as-owner", "cli"),
            REASON_SEARCH_TIER,
            "refused: web search needs tier connected or full, and agent cli has tier as-owner",
            "an operator can give it one ([agents.cli] tier in the config)",
        ),
        (
            policy.check_screenshot("connected", "research"),
            REASON_SCREENSHOT_TIER,
            "refused: screenshots need tier full, and agent research has tier connected",
            "an operator can give it that tier ([agents.research] tier in the config)",
        ),
    ]
    for decision, reason, why, step in cases:
        assert decision.reason == reason
        with pytest.raises(Refused) as info:
            decision.raise_if_denied()
        assert info.value.message == f"{why}; {step}"
        assert info.value.for_model == f"{why}; {OPERATOR_ONLY}"
        assert info.value.to_wire()["error"]["message"] == info.value.for_model
        assert info.value.to_wire(for_model=False)["error"]["message"] == info.value.message


def test_raise_if_denied_raises_refused_with_reason() -> None:
    """A denied decision raises Refused carrying its reason and message; an allowed one does not."""
    policy = Policy(PolicySettings())
    policy.check_fetch("docs.python.org", "connected", "cli").raise_if_denied()
    with pytest.raises(Refused) as info:
        policy.check_fetch("docs.python.org", "as-owner", "cli").raise_if_denied()
    assert info.value.code == "refused"
    assert info.value.reason == REASON_HOST_NOT_ALLOWED
    assert "docs.python.org" in info.value.message


def test_as_owner_is_the_default_and_reaches_nothing_unlisted(tmp_path: Path) -> None:
    """With no tier stated and an empty allow list, no host is readable and search is refused."""
    settings = load(tmp_path, "")
    tier = settings.tier_for("anyone")
    assert tier == "as-owner"
    policy = Policy(settings.policy)
    for host in ("example.org", "docs.python.org", "localhost", "127.0.0.1"):
        assert not policy.check_fetch(host, tier, "anyone").allowed
    assert not policy.check_search(tier, "anyone").allowed


def test_report_mode_lets_through_and_records_would_deny(tmp_path: Path) -> None:
    """In report mode every refusal becomes allowed with would_deny and the refusal's reason."""
    settings = load(
        tmp_path, '[policy]\nmode = "report"\nallow = ["docs.python.org"]\ndeny = ["bad.example"]\n'
    )
    policy = Policy(settings.policy)
    ok = policy.check_fetch("docs.python.org", "as-owner", "cli")
    assert ok.allowed and not ok.would_deny
    for decision, reason in (
        (policy.check_fetch("example.org", "as-owner", "cli"), REASON_HOST_NOT_ALLOWED),
        (policy.check_fetch("bad.example", "full", "cli"), REASON_HOST_DENIED),
        (policy.check_search("as-owner", "cli"), REASON_SEARCH_TIER),
        (policy.check_screenshot("connected", "cli"), REASON_SCREENSHOT_TIER),
    ):
        assert decision.allowed and decision.would_deny
        assert decision.reason == reason
        assert decision.message.startswith("refused: ")
        decision.raise_if_denied()  # report mode never raises


def test_robots_switches(tmp_path: Path) -> None:
    """robots.txt is on by default, off for all with robots = false, or per tier."""
    assert all(Policy(PolicySettings()).robots_enabled(t) for t in TIERS)
    assert not any(Policy(PolicySettings(robots=False)).robots_enabled(t) for t in TIERS)
    settings = load(tmp_path, "[policy.tiers.full]\nrobots = false\n")
    policy = Policy(settings.policy)
    assert policy.robots_enabled("as-owner") and policy.robots_enabled("connected")
    assert not policy.robots_enabled("full")


BROKEN_POLICIES = [
    ('allow = ["*"]', "'*'"),
    ('allow = ["*."]', "'*.'"),
    ('deny = ["*"]', "'*'"),
    ('allow = ["docs.*.org"]', "'docs.*.org'"),
    ('allow = ["*docs.python.org"]', "'*docs.python.org'"),
    ('allow = ["docs.python.*"]', "'docs.python.*'"),
    ('allow = ["*.*.python.org"]', "'*.*.python.org'"),
    ('allow = ["*.org"]', "'*.org'"),
    ('allow = ["https://docs.python.org"]', "'https://docs.python.org'"),
    ('allow = ["docs.python.org/3/"]', "'docs.python.org/3/'"),
    ('allow = ["docs.python.org:443"]', "'docs.python.org:443'"),
    ('allow = ["user@docs.python.org"]', "'user@docs.python.org'"),
    ('allow = [""]', "''"),
    ('allow = ["exa mple.org"]', "'exa mple.org'"),
    ('allow = ["a..b.org"]', "'a..b.org'"),
    ('deny = ["*.10.0.0.1"]', "'*.10.0.0.1'"),
]


@pytest.mark.parametrize(("line", "named"), BROKEN_POLICIES)
def test_broken_policy_files_are_refused_on_load(tmp_path: Path, line: str, named: str) -> None:
    """A bad pattern fails when the policy loads, with a message naming the pattern."""
    settings = load(tmp_path, f"[policy]\n{line}\n")
    with pytest.raises(InvalidInput) as info:
        Policy(settings.policy, source=settings.source)
    assert named in info.value.message
    assert info.value.code == "invalid_input"
    assert str(tmp_path / "webward.toml") in info.value.message


def test_broken_policy_settings_beyond_patterns(tmp_path: Path) -> None:
    """An unknown policy version, or robots switched off for an unknown tier, is refused."""
    with pytest.raises(InvalidInput, match="version"):
        Policy(load(tmp_path, "[policy]\nversion = 2\n").policy)
    with pytest.raises(InvalidInput, match=r"policy\.tiers\.owner in .* is not a tier"):
        load(tmp_path, "[policy.tiers.owner]\nrobots = false\n")  # as the file loads
    with pytest.raises(InvalidInput, match="mode"):
        load(tmp_path, '[policy]\nmode = "open"\n')


def test_a_web_names_the_file_of_a_bad_policy(tmp_path: Path) -> None:
    """Opening a Web on such settings names the config file, as every other config error does."""
    from webward import Web

    settings = load(tmp_path, "[policy]\nversion = 2\n")
    with pytest.raises(InvalidInput) as info:
        Web(settings)
    assert info.value.message == (
        f"policy.version in {tmp_path / 'webward.toml'} is 2; this webward reads version 1"
    )


def test_unknown_tier_and_bad_host_are_invalid_input() -> None:
    """An unknown tier or a host that is not a host name is InvalidInput, never a crash."""
    policy = Policy(PolicySettings(allow=("docs.python.org",)))
    with pytest.raises(InvalidInput, match="unknown tier"):
        policy.check_fetch("docs.python.org", "owner", "cli")
    with pytest.raises(InvalidInput, match="unknown tier"):
        policy.check_search("root", "cli")
    for bad in ("", ".", "exa mple.org", "a/b", "\u2028", "x" * 300):
        with pytest.raises(InvalidInput):
            policy.check_fetch(bad, "connected", "cli")


def test_remembered_decisions_stay_per_host_tier_and_agent() -> None:
    """Decisions are remembered per (host, tier, agent): asked again, in any order, each answer
    names its own agent and tier, and bad input is refused every time, never remembered."""
    policy = Policy(PolicySettings(allow=("docs.python.org",)))
    asks = [("example.org", "as-owner", a) for a in ("cli", "bot")] + [
        ("example.org", "connected", "cli"),
        ("docs.python.org", "as-owner", "bot"),
    ]
    first = [policy.check_fetch(*ask) for ask in asks]
    again = [policy.check_fetch(*ask) for ask in reversed(asks)][::-1]
    assert again == first
    assert [d.allowed for d in first] == [False, False, True, True]
    assert "[agents.cli] tier" in first[0].message
    assert "[agents.bot] tier" in first[1].message
    for _ in range(2):
        with pytest.raises(InvalidInput):
            policy.check_fetch("exa mple.org", "connected", "cli")
        with pytest.raises(InvalidInput):
            policy.check_fetch(["example.org"], "connected", "cli")  # type: ignore[arg-type]


def test_wildcard_matches_subdomains_only() -> None:
    """*.python.org matches docs.python.org and a.b.python.org, not python.org or xpython.org."""
    pattern = HostPattern.parse("*.Python.ORG.", "policy.allow")
    assert pattern.matches("docs.python.org")
    assert pattern.matches("a.b.python.org")
    assert not pattern.matches("python.org")
    assert not pattern.matches("xpython.org")
    assert not pattern.matches("python.org.evil.example")


def test_normalise_host() -> None:
    """Case, the trailing dot, IDNA and IP literal forms are normalised."""
    assert normalise_host("Docs.Python.Org.") == "docs.python.org"
    assert normalise_host("BÜCHER.example") == "xn--bcher-kva.example"
    assert normalise_host("example\u3002org") == "example.org"  # ideographic full stop
    assert normalise_host("[::1]") == "::1"
    assert normalise_host("0:0::1") == "::1"


_label = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)


@given(
    sub=st.lists(_label, min_size=0, max_size=3),
    # A name: its last label no number (a host ending in one is an IPv4 address, or none).
    domain=st.lists(_label, min_size=2, max_size=3).filter(lambda ls: ls[-1][0].isalpha()),
    upper=st.booleans(),
    dot=st.booleans(),
)
def test_property_wildcard_and_exact(
    sub: list[str], domain: list[str], upper: bool, dot: bool
) -> None:
    """For any host: *.D matches exactly the subdomains of D; an exact pattern only itself."""
    d = ".".join(domain)
    host = ".".join([*sub, d])
    written = (host.upper() if upper else host) + ("." if dot else "")
    policy = Policy(PolicySettings(allow=(f"*.{d}",), deny=()))
    assert policy.check_fetch(written, "as-owner", "cli").allowed is bool(sub)
    exact = Policy(PolicySettings(allow=(d,)))
    assert exact.check_fetch(written, "as-owner", "cli").allowed is (not sub)
    denied = Policy(PolicySettings(allow=(d, f"*.{d}"), deny=(host,)))
    for tier in TIERS:
        assert denied.check_fetch(written, tier, "cli").reason == REASON_HOST_DENIED


@pytest.mark.parametrize(
    ("pattern", "host"),
    [
        # An IPv4 address in a spelling the guard reads as that address in a URL.
        ("8.8.2056", "8.8.8.8"),
        ("0x8.0x8.0x8.0x8", "8.8.8.8"),
        ("134744072", "8.8.8.8"),
        ("010.010.010.010", "8.8.8.8"),
        ("\uff18.\uff18.\uff18.\uff18", "8.8.8.8"),  # full-width digits
        # A name the guard reads (UTS #46, as browsers): an emoji label.
        ("🍕.ws", "xn--vi8h.ws"),
    ],
)
def test_a_pattern_names_the_host_the_guard_reads(pattern: str, host: str) -> None:
    """Patterns are normalised as the guard reads a URL's host (docs/governance.md: "patterns
    and hosts are normalised the same way"): '134744072' on a deny-list was kept as a name,
    which no host the guard hands the policy (always 8.8.8.8) matched, so the list denied
    nothing, without a word; an emoji name the guard reads was refused as no host name."""
    assert normalise_host(pattern) == host
    policy = Policy(PolicySettings(deny=(pattern,)))
    assert policy.check_fetch(host, "full", "cli").reason == REASON_HOST_DENIED


@pytest.mark.parametrize("pattern", ["1.2.3.999", "example.123", "1.2.3.4.5", "0x1g.example.7"])
def test_a_pattern_ending_in_a_number_that_is_no_address_is_refused(pattern: str) -> None:
    """A host ending in a number that is no IPv4 address is no host a URL can name (the guard
    refuses it): as a pattern it could never match, so the policy refuses it when it loads."""
    with pytest.raises(InvalidInput, match="is not a host name"):
        normalise_host(pattern)
