"""One web search, as ``Web.search`` runs it:

    validate (query 1..512 chars, limit 1..50) -> policy (tier connected or full)
    -> choose the provider (call, config, credential store) -> provider call(s) through
    ``Gate.provider_request`` -> hits: http(s) only, de-duplicated, cut, neutralised
    -> envelope -> SearchResult

The audit record gets the provider's name and the last HTTP status; never a key.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import inspect
import logging
import time
import unicodedata
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from . import _envelope
from ._capabilities import MAX_LIMIT, SEARCH, whole_number
from ._credentials import CredentialStore, default_store
from ._errors import InvalidInput, Reason, Refused, UpstreamError, WebwardError
from ._gate import SEARCH_DEADLINE
from ._models import Hit, SearchResult
from ._provenance import canonical, check_session
from ._telemetry import span
from ._unicode import replace_surrogates
from .search import (
    Http,
    Response,
    SearchFilters,
    SearchProvider,
    check_provider_name,
    choose_provider,
)
from .search._common import (
    CUT_SHORT,
    MAX_PUBLISHED_CHARS,
    MAX_SNIPPET_CHARS,
    MAX_TITLE_CHARS,
    clean_url,
    collect,
    plain_line,
)

if TYPE_CHECKING:
    from ._call import Call
    from ._gate import Gate
    from ._settings import Settings

__all__ = ["MAX_LIMIT", "SEARCH", "Searcher", "check_limit", "check_query", "render_hits"]

log = logging.getLogger("webward")


def _shows_nothing(text: str) -> bool:
    """Whether ``text`` holds nothing the envelope's one-line fields would show (what they
    strip: format characters, bidi controls, tags, fillers, blanks): such a query is an empty
    one, which sent would cost a provider call and the agent's spend."""
    shown = _envelope.neutralise_line(text)
    return all(unicodedata.category(ch) in _NOTHING_SHOWN for ch in shown)


# What a character that still stands after the neutraliser may be and show nothing: a space,
# an unassigned or private code point, a format character it keeps (U+1D173 and the like).
_NOTHING_SHOWN = frozenset(("Zs", "Cn", "Co", "Cf"))


def check_query(query: object, max_chars: int) -> str:
    """The query with its whitespace collapsed, or ``InvalidInput``."""
    if not isinstance(query, str):
        raise InvalidInput("query must be a string")
    if any(unicodedata.category(ch) == "Cc" and not ch.isspace() for ch in query):
        raise InvalidInput("query must not contain control characters")
    # A lone surrogate (a byte of argv that was not UTF-8, a model's "\ud800") cannot be sent
    # to a provider: it becomes U+FFFD, as in every text webward hands on.
    query = replace_surrogates(query)
    text = " ".join(query.split())
    if _shows_nothing(text):  # "" too; and "\u200b\u200b" or "\u202e" read as nothing
        raise InvalidInput("query must not be empty: give the words to search for")
    if len(text) > max_chars:
        raise InvalidInput(f"query must be at most {max_chars} characters (it has {len(text)})")
    return text


def check_limit(limit: object) -> int:
    """``limit`` if it is a whole number from 1 to 50 (``_capabilities.whole_number``)."""
    number = whole_number(limit)
    if number is None or not 1 <= number <= MAX_LIMIT:
        raise InvalidInput(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return number


def finish_hits(hits: Any, limit: int, filters: SearchFilters | None = None) -> tuple[Hit, ...]:
    """Drop what is not an absolute http(s) URL, duplicates and hits the domain filters
    exclude, cut to ``limit``, and make every field one plain line within its cap,
    neutralised. Our adapters' hits are clean already (``make_hit``) and come out the same; a
    provider adapter we did not write gets the same treatment, and one that answers with no
    list is the provider's failure, not webward's."""
    if not isinstance(hits, (list, tuple)):
        raise UpstreamError(
            f"the search provider answered with {type(hits).__name__}, not a list of hits",
            reason=Reason.PROVIDER_MALFORMED,
        )
    keeps = filters.keeps if filters else (lambda url: True)
    line = _envelope.neutralise_line

    def cleaned() -> Iterator[Hit]:
        for h in hits:
            url = clean_url(h.url) if isinstance(h, Hit) else None
            if url is None or not keeps(url):
                continue
            # Shown outside the envelope too, and fetched as it is: marker words in it are
            # percent-encoded (the same URL), never replaced by "[marker removed]" (no URL).
            shown = _envelope.neutral_url(url)
            if shown is None:  # a marker in the host name: no URL of that host is handed on
                continue
            published = plain_line(h.published, MAX_PUBLISHED_CHARS)
            yield Hit(
                title=line(plain_line(h.title, MAX_TITLE_CHARS) or shown),
                url=shown,
                snippet=line(plain_line(h.snippet, MAX_SNIPPET_CHARS)),
                published=line(published) if published else None,
            )

    kept: list[Hit] = []
    collect(kept, set(), cleaned(), limit)
    return tuple(kept)


def render_hits(hits: Sequence[Hit]) -> str:
    """The numbered list the model reads inside the envelope."""
    if not hits:
        return "No results for this query."
    lines: list[str] = []
    for i, hit in enumerate(hits, 1):
        lines.append(f"{i}. {hit.title}")
        lines.append(f"   {hit.url}")
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
        if hit.published:
            lines.append(f"   published: {hit.published}")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def _takes_filters(provider: SearchProvider) -> bool:
    """Whether a provider's ``search`` takes the third argument, ``filters`` (an adapter of
    one's own written before filters existed may not)."""
    try:
        parameters = inspect.signature(provider.search).parameters
    except (TypeError, ValueError):
        return False
    return "filters" in parameters or len(parameters) >= 3


def _hit_host(hit: Hit) -> str | None:
    url = canonical(hit.url)
    return None if url is None else urllib.parse.urlsplit(url).hostname


def _timestamp(now: float) -> str:
    when = dt.datetime.fromtimestamp(now, dt.UTC)
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Searcher:
    """One ``Web``'s searches: its settings, its gate (policy, budgets, the guarded provider
    requests) and what else a search needs, handed over rather than reached for."""

    settings: Settings
    gate: Gate
    clock: Callable[[], float]
    remember: Callable[[str | None, Iterable[str]], Awaitable[None]]  # hits join the session
    injected: SearchProvider | None = None  # a provider passed to ``Web`` (tests, embedders)
    credentials: CredentialStore | None = None

    def _provider_for(
        self, name: str | None, call: Call, agent: str, session: str | None
    ) -> SearchProvider:
        """The configured provider ``name`` (or the default), with its key and HTTP; the
        injected one is taken by :meth:`run` before this, which reads the key store."""
        credentials = self.credentials if self.credentials is not None else default_store()
        gate = self.gate

        def http_for(provider: str) -> Http:
            async def request(
                method: str,
                url: str,
                *,
                headers: tuple[tuple[str, str], ...] = (),
                content: bytes | None = None,
            ) -> Response:
                # Each provider call costs what [search.<provider>] cost says, against the
                # agent's spend budget; past it nothing is sent.
                await gate.charge_spend(agent, provider, session)
                try:
                    with span("search provider", {"webward.provider": provider}):
                        body = await gate.provider_request(
                            provider, method, url, headers=headers, content=content
                        )
                except Refused:  # by the guard or the provider's limits, before it was sent
                    # The refusal is what the caller hears, whether or not the refund lands.
                    with contextlib.suppress(WebwardError):
                        await gate.refund_spend(agent, provider, session)
                    raise
                call.status = body.status  # sent: the call is the provider's, and costs
                return body

            return request

        return choose_provider(self.settings.search, credentials, http_for, name, clock=self.clock)

    async def run(
        self,
        query: object,
        limit: object,
        agent: str,
        tier: str,
        provider: str | None,
        call: Call,
        filters: SearchFilters | None = None,
        *,
        session: str | None = None,
    ) -> SearchResult:
        """One search for ``agent`` at ``tier``; fills ``call`` with ``provider`` and ``status``.

        ``filters`` (already validated by ``search.check_filters``) go to the provider only
        when one is set, so a provider that takes none keeps working for unfiltered searches."""
        # A query's check neutralises it: a non-ASCII one ("caf\u00e9") read the fold's tables
        # on the event loop, before the hits' reading of them in a thread below.
        await _envelope.load_tables_for(query)
        text = check_query(query, self.settings.limits.max_query_chars)
        count = check_limit(limit)
        name = check_provider_name(provider)
        check_session(session)
        self.gate.check_search(agent, tier, call)
        injected = self.injected
        if injected is not None and (name is None or name == injected.name):
            chosen: SearchProvider = injected
        else:
            # Choosing reads the provider's key, from the OS keyring too, whose backend may
            # block (a locked Secret Service waits on its unlock prompt, D-Bus on a timeout):
            # in a thread, not on the event loop every other call needs.
            chosen = await anyio.to_thread.run_sync(self._provider_for, name, call, agent, session)
        call.provider = chosen.name
        await self.gate.charge_call(agent, "search", session)  # a configured search only
        cut = CUT_SHORT.set(None)
        deadline = SEARCH_DEADLINE.set(time.monotonic() + self.settings.limits.fetch_timeout_s)
        try:
            if filters and not _takes_filters(chosen):
                raise InvalidInput(
                    f"the {chosen.name} search provider takes no filters; leave them out",
                    reason=Reason.FILTER_UNSUPPORTED,
                )
            if filters:
                found = await chosen.search(text, count, filters)  # type: ignore[call-arg]
            else:
                found = await chosen.search(text, count)
            cut_short = CUT_SHORT.get()
        except WebwardError as exc:
            # Refused before its provider was sent anything (a filter it cannot honour, its
            # rate limit or 429 hold): a refused call costs nothing. One it failed, or that
            # failed on a later page, was the provider's, and counts.
            unsent = call.status is None and not isinstance(exc, UpstreamError)
            if unsent and self.gate.budgets.charges(agent):
                with contextlib.suppress(WebwardError):  # the refusal is what is said
                    await self.gate.budgets.refund_call(agent, "search", session)
            raise
        finally:
            CUT_SHORT.reset(cut)
            SEARCH_DEADLINE.reset(deadline)
        if not _envelope.tables_loaded():
            # Hits are neutralised and wrapped on the event loop, and the first non-ASCII text
            # folded reads the fold's tables (about 0.2 s): read here in a thread instead.
            await anyio.to_thread.run_sync(_envelope.load_tables)
        hits = finish_hits(found, count, filters)
        # The agent's own search lists ([agents.NAME] search_allow / search_deny) drop hits;
        # report mode drops none, and its record says what enforce mode would have dropped.
        # Either way the record counts them (hits_dropped), so the audit alone says that a
        # search's answer was cut, and by how much.
        lists = self.gate.lists
        kept, dropped = lists.filter_hits(hits, _hit_host, agent)
        call.hits_dropped = sum(dropped.values())
        if dropped:
            call.check(lists.hits_verdict(dropped, agent))
            if len(kept) < len(hits):  # enforce mode: gone; also said to a log shown at INFO
                log.info(
                    "search by agent %s: %s",
                    agent,
                    ", ".join(f"{n} hit(s) dropped by {key}" for key, n in sorted(dropped.items())),
                )
        hits = tuple(kept)
        if self.gate.remembers(agent):  # only sessions that are asked keep URLs
            await self.remember(session, (u for u in map(canonical, (h.url for h in hits)) if u))
        retrieved_at = _timestamp(self.clock())
        listed = render_hits(hits)
        if cut_short is not None and len(hits) < count:
            listed += (
                f"\n\n[fewer hits than asked for: a later page of results failed ({cut_short})]"
            )
        content = _envelope.wrap(
            listed,
            {
                "capability": SEARCH,
                "query": text,
                "provider": chosen.name,
                "retrieved_at": retrieved_at,
            },
        )
        return SearchResult(
            provider=chosen.name,
            # Handed over outside the envelope: without bidi controls or zero-width
            # characters, as the envelope's header says it.
            query=_envelope.neutralise_line(text),
            hits=hits,
            content=content,
            retrieved_at=retrieved_at,
        )
