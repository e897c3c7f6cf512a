"""SearXNG (the operator's own instance): ``GET /search?format=json``.

Wire shape (docs.searxng.org/dev/search_api.html): ``q``, ``format=json``, ``pageno``
(1, 2, …; about 20 results a page, no count parameter); results are ``results[]`` with
``url``, ``title``, ``content`` and ``publishedDate`` (ISO or null). JSON output must be
enabled in the instance's ``search.formats`` or it answers 403; its bot limiter answers a
plain-text 429.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from .._errors import Reason, Refused, UpstreamError, operator_step
from .._models import Hit
from ._common import (
    Http,
    Response,
    collect,
    later_page_failed,
    make_hit,
    provider_failed,
    rate_limited,
    read_json,
)
from ._filters import SearchFilters, site_operators, unsupported

__all__ = ["SearxngProvider"]

PAGE_SIZE = 20  # what an instance usually returns per page; it varies with the engines
MAX_PAGES = 5  # 50 hits need 3 full pages; a few more cover duplicates across pages
TIME_RANGES = ("day", "month", "year")  # the search API's documented time_range values


class SearxngProvider:
    """Searches through a SearXNG instance the operator runs."""

    name = "searxng"

    def __init__(
        self, base_url: str, http: Http, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._endpoint = base_url.rstrip("/") + "/search"
        self._http = http
        self._clock = clock

    def __repr__(self) -> str:
        return f"SearxngProvider(endpoint={self._endpoint!r})"

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Hit]:
        """Up to ``limit`` hits, fetching ``pageno`` 1, 2, … until there are enough.

        Filters: ``time_range`` (day, month or year: the search API documents no week),
        ``language`` (``de``, or ``de-CH`` with a country; a country alone has no parameter)
        and the domains as ``site:`` operators in ``q``, which the instance passes on to its
        engines."""
        filters = filters or SearchFilters()
        query = site_operators(query, filters)
        extra = _filter_params(filters)
        hits: list[Hit] = []
        seen: set[str] = set()
        for pageno in range(1, MAX_PAGES + 1):
            try:
                results = await self._page(query, pageno, extra)
            except (Refused, UpstreamError) as exc:
                # A later page that fails (rate limited, a server error) leaves the first
                # pages' hits, and the result says why there are fewer.
                if pageno > 1:
                    later_page_failed(exc)
                    break
                raise
            added = collect(hits, seen, (_hit(r) for r in results), limit)
            if len(hits) >= limit or not results or added == 0:
                break
        return hits

    async def _page(self, query: str, pageno: int, extra: dict[str, str]) -> list[Any]:
        params = {"q": query, "format": "json", "pageno": str(pageno), **extra}
        body = await self._http(
            "GET",
            f"{self._endpoint}?{urlencode(params)}",
            headers=(("Accept", "application/json"),),
        )
        if body.status != 200:
            raise self._error(body)
        data = read_json(body, "SearXNG")
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise UpstreamError(
                "the SearXNG search provider sent a malformed response",
                reason=Reason.PROVIDER_MALFORMED,
                status=200,
            )
        failed, engines = _unresponsive(data.get("unresponsive_engines"))
        if not results and failed:
            # No result because the engines behind the instance failed (suspended after a
            # CAPTCHA or a 429, timed out) is no "nothing matched": said so, the agent
            # would stop looking for what a search never ran to find.
            named = ", ".join(engines[:_ENGINES_NAMED]) or "them"
            if len(engines) > _ENGINES_NAMED:
                named += f" and {len(engines) - _ENGINES_NAMED} more"
            raise UpstreamError(
                operator_step(
                    f"the SearXNG search provider found nothing, and {failed} of the search "
                    "engines behind it failed to answer; try again later",
                    f"check {named} on the instance's /stats page: SearXNG suspends an "
                    "engine after a CAPTCHA or a rate limit",
                    model="",
                ),
                reason=Reason.PROVIDER_ERROR,
                status=200,
            )
        return results

    def _error(self, body: Response) -> Exception:
        if body.status == 403:
            return UpstreamError(
                operator_step(
                    "the SearXNG instance refused JSON output (HTTP 403)",
                    "enable it by adding json to search.formats in the instance's settings.yml",
                ),
                reason=Reason.PROVIDER_JSON_DISABLED,
                status=403,
            )
        if body.status == 429:
            return rate_limited(
                "the SearXNG instance's bot limiter is refusing webward",
                body,
                self._clock,
                step="turn the instance's limiter off for webward's address",
            )
        if 400 <= body.status < 500:
            return UpstreamError(
                f"the SearXNG search provider refused the request (HTTP {body.status})",
                reason=Reason.PROVIDER_REJECTED,
                status=body.status,
            )
        return provider_failed("SearXNG", body, self._clock)


def _filter_params(filters: SearchFilters) -> dict[str, str]:
    params: dict[str, str] = {}
    if filters.freshness:
        if filters.freshness not in TIME_RANGES:
            raise unsupported(
                "searxng",
                f"freshness {filters.freshness}",
                "its time_range takes day, month or year",
            )
        params["time_range"] = filters.freshness
    if filters.country and not filters.language:
        raise unsupported(
            "searxng",
            f"country {filters.country} alone",
            "it takes a country only with a language, as in language=de and country=CH",
        )
    if filters.language:
        params["language"] = (
            f"{filters.language}-{filters.country}" if filters.country else filters.language
        )
    return params


_ENGINES_NAMED = 5
_ENGINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,39}")


def _unresponsive(value: Any) -> tuple[int, list[str]]:
    """How many engines ``unresponsive_engines`` (``[[name, why], ...]``) lists, and the
    names among them that read as an engine's name (another text is the instance's, not
    passed on; nor is why each failed)."""
    if not isinstance(value, list):
        return 0, []
    names: list[str] = []
    for entry in value:
        name = entry[0] if isinstance(entry, list) and entry else entry
        if isinstance(name, str) and _ENGINE_NAME.fullmatch(name) and name not in names:
            names.append(name)
    return len(value), names


def _hit(item: Any) -> Hit | None:
    if not isinstance(item, dict):
        return None
    return make_hit(
        item.get("title"), item.get("url"), item.get("content"), item.get("publishedDate")
    )
