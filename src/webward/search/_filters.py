"""Search filters: allowed and blocked domains, a freshness window, a country and a language.

:func:`check_filters` validates what a call passes (every face sends the same five values;
their schemas and bounds are in the capability catalogue, ``_capabilities``);
each provider adapter maps the filters to its own documented parameters, or to query
operators where it has none, and refuses by name a filter it cannot honour
(:func:`unsupported`). Whatever the provider does with the domain filters, the core drops
every hit they exclude (:meth:`SearchFilters.keeps`), so a blocked domain never reaches the
model.

    filter      Brave                Tavily                 SearXNG
    allowed     (site:a OR site:b)   include_domains        (site:a OR site:b)
    blocked     -site:c              exclude_domains        -site:c
    freshness   freshness=pd|pw|pm|py time_range            time_range=day|month|year (no week)
    country     country=CC           country=<name>         with a language: language=ll-CC
    language    search_lang          refused                language=ll

A domain is a host name (``example.org``) and covers its subdomains (``docs.example.org``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import idna

from .._addresses import shorten
from .._capabilities import FRESHNESS, MAX_DOMAINS
from .._errors import InvalidInput, Reason

__all__ = [
    "FRESHNESS",
    "MAX_DOMAINS",
    "SearchFilters",
    "check_filters",
    "site_operators",
    "unsupported",
]

_HOST = re.compile(r"(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}")
_TWO_LETTERS = re.compile(r"[A-Za-z]{2}")


@dataclass(frozen=True)
class SearchFilters:
    """What a search is narrowed to; every field empty means "no filter"."""

    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    freshness: str | None = None  # day | week | month | year
    country: str | None = None  # ISO 3166-1 alpha-2, upper case
    language: str | None = None  # ISO 639-1, lower case

    def __bool__(self) -> bool:
        return bool(
            self.allowed_domains
            or self.blocked_domains
            or self.freshness
            or self.country
            or self.language
        )

    def keeps(self, url: str) -> bool:
        """Whether a hit at ``url`` passes the domain filters."""
        try:
            host = (urlsplit(url).hostname or "").rstrip(".").lower()
        except ValueError:
            return False
        if self.allowed_domains and not any(_under(host, d) for d in self.allowed_domains):
            return False
        return not any(_under(host, d) for d in self.blocked_domains)


def _under(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)


def _domains(value: object, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInput(f"{name} must be a list of domain names such as example.org")
    if len(value) > MAX_DOMAINS:
        raise InvalidInput(f"{name} takes at most {MAX_DOMAINS} domains (it has {len(value)})")
    out: list[str] = []
    for item in value:
        shown = shorten(repr(item), 60)  # the cut marked, not a quote left open
        if not isinstance(item, str):
            raise InvalidInput(f"{name} must be a list of domain names such as example.org")
        host = item.strip().rstrip(".").lower()
        if host and not host.isascii():
            try:
                host = idna.encode(host, uts46=True).decode("ascii")
            except idna.IDNAError:
                host = ""
        if not _HOST.fullmatch(host):
            raise InvalidInput(
                f"{name} takes domain names such as example.org (no scheme, path or "
                f"wildcard), not {shown}"
            )
        if host not in out:
            out.append(host)
    return tuple(out)


def check_filters(
    allowed_domains: object = None,
    blocked_domains: object = None,
    freshness: object = None,
    country: object = None,
    language: object = None,
) -> SearchFilters:
    """The filters of one search call, validated and normalised, or ``InvalidInput``."""
    allowed = _domains(allowed_domains, "allowed_domains")
    blocked = _domains(blocked_domains, "blocked_domains")
    both = [d for d in allowed if d in blocked]
    if both:
        raise InvalidInput(f"{both[0]} is both an allowed and a blocked domain; choose one")
    if isinstance(freshness, str):  # any case, as country and language take theirs
        freshness = freshness.strip().lower()
    if freshness is not None and freshness not in FRESHNESS:
        raise InvalidInput(f"freshness must be one of {', '.join(FRESHNESS)}")
    if country is not None and not (isinstance(country, str) and _TWO_LETTERS.fullmatch(country)):
        raise InvalidInput("country must be a two-letter ISO 3166-1 code such as US or DE")
    if language is not None and not (
        isinstance(language, str) and _TWO_LETTERS.fullmatch(language)
    ):
        raise InvalidInput("language must be a two-letter ISO 639-1 code such as en or de")
    return SearchFilters(
        allowed_domains=allowed,
        blocked_domains=blocked,
        freshness=freshness if isinstance(freshness, str) else None,
        country=country.upper() if isinstance(country, str) else None,
        language=language.lower() if isinstance(language, str) else None,
    )


def site_operators(query: str, filters: SearchFilters) -> str:
    """``query`` with the domain filters as ``site:`` operators, for providers without
    domain parameters: ``query (site:a OR site:b) -site:c``."""
    parts = [query]
    allowed = [f"site:{d}" for d in filters.allowed_domains]
    if len(allowed) == 1:
        parts.append(allowed[0])
    elif allowed:
        parts.append("(" + " OR ".join(allowed) + ")")
    parts.extend(f"-site:{d}" for d in filters.blocked_domains)
    return " ".join(parts)


def unsupported(provider: str, what: str, why: str = "") -> InvalidInput:
    """The refusal of a filter the provider cannot honour, naming both."""
    tail = f" ({why})" if why else ""
    return InvalidInput(
        f"the {provider} search provider cannot filter by {what}{tail}; leave it out or "
        "choose another provider",
        reason=Reason.FILTER_UNSUPPORTED,
    )
