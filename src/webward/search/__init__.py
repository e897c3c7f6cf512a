"""The ``web_search`` seam: one small Protocol, one module per vendor wire shape.

    SearchProvider            name + async search(query, limit, filters=None) -> list[Hit]
     ├── BraveProvider        Brave Search API          (_brave.py)
     ├── TavilyProvider       Tavily                    (_tavily.py)
     ├── SearxngProvider      a self-hosted SearXNG     (_searxng.py)
     └── NullProvider         none configured: refuses with how to configure one (_null.py)

Adapters make their HTTP calls through an :class:`Http` callable — in webward that is
``Web.provider_request`` with the provider's name bound, so provider calls pass the same
guard, pinned transport, rate limit and circuit breaker as page reads. Adapters return hits
whose text is cleaned (tags stripped, entities decoded); ``webward._search_core`` neutralises,
de-duplicates, cuts, envelopes and audits. Search filters (domains, freshness, country,
language) are validated in :mod:`._filters` and mapped by each adapter (see the table there).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from .._credentials import ChainedStore, CredentialStore, Secret, fits_a_header
from .._errors import InvalidInput
from .._models import Hit
from .._settings import SearchSettings
from ._brave import BraveProvider
from ._common import Http, Response
from ._filters import SearchFilters, check_filters
from ._null import NOT_CONFIGURED, NullProvider, not_configured
from ._searxng import SearxngProvider
from ._tavily import TavilyProvider

__all__ = [
    "KEY_NAMES",
    "NOT_CONFIGURED",
    "PROVIDERS",
    "BraveProvider",
    "Http",
    "NullProvider",
    "Response",
    "SearchFilters",
    "SearchProvider",
    "SearxngProvider",
    "TavilyProvider",
    "check_filters",
    "check_provider_name",
    "choose_provider",
    "chosen_provider",
]

#: Every provider name ``[search] provider``, ``WEBWARD_SEARCH_PROVIDER`` and ``--provider`` take.
PROVIDERS = ("brave", "tavily", "searxng", "none")

#: The credential each keyed provider reads.
KEY_NAMES = {"brave": "BRAVE_SEARCH_API_KEY", "tavily": "TAVILY_API_KEY"}


@runtime_checkable
class SearchProvider(Protocol):
    """A web search backend: ``name`` for the audit record and the envelope, and ``search``.

    ``search`` returns at most ``limit`` hits, raises ``Refused`` (rate limited, not
    configured) or ``UpstreamError`` (key rejected, provider failure), and never returns an
    empty list to mean "not configured". ``filters`` is passed only when the call sets one;
    a filter the provider cannot honour raises ``InvalidInput`` naming it.
    """

    name: str

    async def search(self, query: str, limit: int) -> list[Hit]: ...


def check_provider_name(value: object, *, where: str = "") -> str | None:
    """The provider name normalised (None for "choose for me"), or ``InvalidInput``.

    An empty setting (``where`` names it) is unset, as an empty environment variable is;
    an empty provider asked for by a call is refused, since ``--provider ""`` asks for no
    provider rather than for the configured one."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"the search provider{where} must be one of {', '.join(PROVIDERS)}")
    name = value.strip().lower()
    if not name:
        if where:
            return None
        raise InvalidInput(
            f"the search provider is empty; name one of {', '.join(PROVIDERS)}, or leave it "
            "out for the configured one"
        )
    if name not in PROVIDERS:
        raise InvalidInput(
            f"unknown search provider {value[:40]!r}{where}; choose one of {', '.join(PROVIDERS)}"
        )
    return name


def chosen_provider(
    settings: SearchSettings, credentials: CredentialStore, provider: str | None = None
) -> str | None:
    """The name of the provider :func:`choose_provider` uses: ``provider``, else
    ``[search] provider``, else the first with a credential (Brave, Tavily), else SearXNG
    when its URL is set; ``None`` when nothing is configured (``"none"`` when that is set)."""
    name = check_provider_name(provider)
    if name is None:
        name = check_provider_name(
            settings.provider, where=" in [search] provider (or WEBWARD_SEARCH_PROVIDER)"
        )
    if name is None:
        for candidate in ("brave", "tavily"):
            if credentials.get(KEY_NAMES[candidate]):
                return candidate
        return "searxng" if settings.searxng_url.strip() else None
    return name


def choose_provider(
    settings: SearchSettings,
    credentials: CredentialStore,
    http_for: Callable[[str], Http],
    provider: str | None = None,
    *,
    clock: Callable[[], float] = time.time,
) -> SearchProvider:
    """The provider for one search.

    ``provider`` (the call's or the CLI's ``--provider``) wins over ``settings.provider``
    (``[search] provider`` / ``WEBWARD_SEARCH_PROVIDER``). Neither set: the first provider
    with a credential — Brave, then Tavily, then SearXNG when ``searxng_url`` is set — else
    :class:`NullProvider`. A chosen provider without its key or URL is a ``NullProvider``
    whose message names what is missing. ``http_for(name)`` gives the HTTP callable for a
    provider.
    """
    name = chosen_provider(settings, credentials, provider)
    if name is None:
        return NullProvider()
    if name == "none":
        return NullProvider(
            not_configured(
                ': the search provider is set to "none"',
                "set `[search] provider` to brave, tavily or searxng to turn it on",
            )
        )
    if name == "searxng":
        url = settings.searxng_url.strip()
        if not url:
            return NullProvider(
                not_configured(
                    ": the searxng provider is chosen but `[search] searxng_url` is not set",
                    "point it (or WEBWARD_SEARXNG_URL) at your SearXNG instance",
                )
            )
        return SearxngProvider(url, http_for(name), clock=clock)
    key_name = KEY_NAMES[name]
    # The key and the store it came from, in one look (a keyring may be a D-Bus call).
    if isinstance(credentials, ChainedStore):
        found = credentials.lookup(key_name)
        key, source = (found[0], _kind(found[1])) if found else (None, "")
    else:
        key, source = credentials.get(key_name), _kind(credentials)
    if not key:
        return NullProvider(
            not_configured(
                f": the {name} provider is chosen but {key_name} is not set",
                f"set it or run `webward credentials set {key_name}`",
            )
        )
    if not fits_a_header(key):
        # Say so, rather than fail in the HTTP client or send a header a line break splits;
        # and say where to fix it: the environment is read first, so storing the key again
        # changes nothing while the variable is set.
        fix = (
            f"fix or unset the environment variable {key_name}"
            if source == "environment"
            else f"set it again with `webward credentials set {key_name}`"
        )
        return NullProvider(
            not_configured(
                f": {key_name} holds characters no API key has (spaces, control or "
                "non-ASCII characters)",
                fix,
            )
        )
    step = _rejected_key_step(source, key_name)
    if name == "brave":
        return BraveProvider(
            Secret(key), http_for(name), settings.brave_url, clock=clock, key_step=step
        )
    return TavilyProvider(
        Secret(key), http_for(name), settings.tavily_url, clock=clock, key_step=step
    )


def _kind(store: CredentialStore) -> str:
    """A store's ``kind``: environment, keyring or file (another store may have none)."""
    return str(getattr(store, "kind", ""))


def _rejected_key_step(source: str, key_name: str) -> str:
    """What fixes a key the provider rejected, where it was found: the environment is read
    before the keyring and the file, so while the variable is set a key stored with
    ``webward credentials set`` is never used; and ``set`` writes the file, which the
    keyring comes before."""
    if source == "environment":
        return (
            f"fix or unset the environment variable {key_name}, which is read before any stored key"
        )
    if source == "keyring":
        return f"store a valid one with `webward credentials set {key_name} --keyring`"
    return f"store a valid one with `webward credentials set {key_name}`"
