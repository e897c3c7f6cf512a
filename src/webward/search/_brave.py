"""Brave Search API (web): ``GET /res/v1/web/search``.

Wire shape (api-dashboard.search.brave.com/app/documentation/web-search): the key goes in
``X-Subscription-Token``; ``count`` is 1..20 and ``offset`` counts *pages* of ``count``
(0..9); results sit at ``web.results[]`` (``title``, ``url``, ``description``, ``page_age``),
and a response may have no ``web`` key at all. Errors are ``{"type": "ErrorResponse",
"error": {"code", ...}}`` (some examples use an ``errors`` array): a bad key is 422
``SUBSCRIPTION_TOKEN_INVALID``, limits are 429 ``RATE_LIMITED`` / ``QUOTA_LIMITED`` with
``X-RateLimit-Reset`` in seconds per window.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from .._credentials import Secret
from .._errors import InvalidInput, Reason, Refused, UpstreamError, operator_step
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
    refuse_echoed_key,
    try_json,
    web_page,
)
from ._filters import SearchFilters, site_operators, unsupported

__all__ = ["BraveProvider"]

PAGE_MAX = 20  # count
OFFSET_MAX = 9  # pages
MAX_QUERY_CHARS = 400
MAX_QUERY_WORDS = 50
KEY_NAME = "BRAVE_SEARCH_API_KEY"
# freshness: pd / pw / pm / py (past day, week, month, year).
_FRESHNESS = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}
# The search_lang codes Brave takes (its documentation's list); another is refused by Brave
# with a 422 after the call, so webward refuses it by name before. Codes that are not the ISO
# 639-1 code: Japanese is "jp", Norwegian "nb"; Chinese and Portuguese come in two variants
# (the simplified and the European one stand for the bare code).
_SEARCH_LANGS = frozenset((
    "ar", "eu", "bn", "bg", "ca", "zh-hans", "zh-hant", "hr", "cs", "da", "nl", "en",
    "en-gb", "et", "fi", "fr", "gl", "de", "el", "gu", "he", "hi", "hu", "is",
    "it", "jp", "kn", "ko", "lv", "lt", "ms", "ml", "mr", "nb", "pl", "pt-br",
    "pt-pt", "pa", "ro", "ru", "sr", "sk", "sl", "es", "sv", "ta", "te", "th",
    "tr", "uk", "vi",
))  # fmt: skip
_SEARCH_LANG = {"ja": "jp", "zh": "zh-hans", "pt": "pt-pt", "no": "nb"}
# The country codes Brave takes (its documentation's list; ALL is every region).
_COUNTRIES = frozenset((
    "AR", "AU", "AT", "BE", "BR", "CA", "CL", "DK", "FI", "FR", "DE", "GR", "HK", "IN",
    "ID", "IT", "JP", "KR", "MY", "MX", "NL", "NZ", "NO", "CN", "PL", "PT", "PH", "RU",
    "SA", "ZA", "ES", "SE", "CH", "TW", "TR", "GB", "US", "ALL",
))  # fmt: skip


class BraveProvider:
    """Searches through the Brave Search API."""

    name = "brave"

    def __init__(
        self,
        api_key: str | Secret,
        http: Http,
        base_url: str = "https://api.search.brave.com",
        *,
        clock: Callable[[], float] = time.time,
        key_step: str = "",
    ) -> None:
        self._key = api_key if isinstance(api_key, Secret) else Secret(api_key)
        # What fixes a rejected key depends on where it came from (``choose_provider`` knows):
        # storing a new one changes nothing while the environment variable is set.
        self._key_step = key_step or f"check {KEY_NAME} or run `webward credentials set {KEY_NAME}`"
        self._http = http
        self._endpoint = base_url.rstrip("/") + "/res/v1/web/search"
        self._clock = clock

    def __repr__(self) -> str:
        return f"BraveProvider(endpoint={self._endpoint!r})"

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Hit]:
        """Up to ``limit`` hits, paging with ``offset`` when ``limit`` is over 20.

        Filters: ``freshness``, ``country`` and ``search_lang`` parameters; the domains as
        ``site:`` operators in the query (Brave has no domain parameter)."""
        filters = filters or SearchFilters()
        query = site_operators(query, filters)
        words = len(query.split())
        if len(query) > MAX_QUERY_CHARS or words > MAX_QUERY_WORDS:
            sites = filters.allowed_domains or filters.blocked_domains
            with_sites = ", the domain filters counting as site: operators" if sites else ""
            raise InvalidInput(
                f"the Brave search provider takes queries of at most {MAX_QUERY_CHARS} characters "
                f"and {MAX_QUERY_WORDS} words (this one has {len(query)} and {words}"
                f"{with_sites}); shorten it"
            )
        extra: dict[str, str] = {}
        if filters.freshness:
            extra["freshness"] = _FRESHNESS[filters.freshness]
        if filters.country:
            if filters.country.upper() not in _COUNTRIES:
                raise unsupported(
                    "brave", f"country {filters.country}", "it is not one of Brave's countries"
                )
            extra["country"] = filters.country.upper()
        if filters.language:
            lang = _SEARCH_LANG.get(filters.language, filters.language)
            if lang not in _SEARCH_LANGS:
                raise unsupported(
                    "brave", f"language {filters.language}", "it is not one of Brave's languages"
                )
            extra["search_lang"] = lang

        count = min(limit, PAGE_MAX)
        pages = min(math.ceil(limit / count), OFFSET_MAX + 1)
        hits: list[Hit] = []
        seen: set[str] = set()
        for offset in range(pages):
            try:
                data = await self._page(query, count, offset, extra)
            except (Refused, UpstreamError) as exc:
                # A later page that fails (rate limited, a server error) leaves the first
                # pages' hits, and the result says why there are fewer.
                if offset > 0:
                    later_page_failed(exc)
                    break
                raise
            results, more = _results(data)
            collect(hits, seen, (_hit(r) for r in results), limit)
            if len(hits) >= limit or len(results) < count or not more:
                break
        refuse_echoed_key(hits, self._key, "Brave")
        return hits

    async def _page(self, query: str, count: int, offset: int, extra: dict[str, str]) -> Any:
        params = {
            "q": query,
            "count": str(count),
            "offset": str(offset),
            "text_decorations": "false",
            **extra,
        }
        body = await self._http(
            "GET",
            f"{self._endpoint}?{urlencode(params)}",
            headers=(("Accept", "application/json"), ("X-Subscription-Token", self._key.reveal())),
        )
        if body.status != 200:
            raise self._error(body)
        data = read_json(body, "Brave")
        if not isinstance(data, dict):
            raise UpstreamError(
                "the Brave search provider sent a malformed response",
                reason=Reason.PROVIDER_MALFORMED,
                status=200,
            )
        if data.get("type") == "ErrorResponse":
            raise self._error(body)
        return data

    def _error(self, body: Response) -> Exception:
        code = _error_code(try_json(body))
        if body.status in (401, 403) and (page := web_page(body, "Brave")) is not None:
            # Brave answers a bad key in JSON: a web page is a proxy's or a bot check's,
            # and a new key would not get past it.
            return page
        if code == "SUBSCRIPTION_TOKEN_INVALID" or body.status in (401, 403):
            return UpstreamError(
                operator_step(
                    "the Brave key was rejected",
                    self._key_step,
                ),
                reason=Reason.PROVIDER_KEY_REJECTED,
                status=body.status,
            )
        if code == "QUOTA_LIMITED":
            return rate_limited(
                "the Brave plan's search quota is used up",
                body,
                self._clock,
                reason=Reason.PROVIDER_QUOTA,
            )
        if body.status == 429 or code == "RATE_LIMITED":
            return rate_limited(
                "the Brave search provider is rate limiting webward", body, self._clock
            )
        if 400 <= body.status < 500:
            return UpstreamError(
                f"the Brave search provider refused the request (HTTP {body.status})",
                reason=Reason.PROVIDER_REJECTED,
                status=body.status,
            )
        return provider_failed("Brave", body, self._clock, key=self._key)


def _error_code(data: Any) -> str | None:
    """``error.code`` or ``errors[0].code``, whichever the body carries."""
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if not isinstance(error, dict):
        errors = data.get("errors")
        error = errors[0] if isinstance(errors, list) and errors else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


def _results(data: dict[str, Any]) -> tuple[list[Any], bool]:
    """``web.results`` (empty when there is no ``web`` key: Brave leaves it out when nothing
    matched) and whether more may follow; a ``web`` of another shape is malformed."""
    web = data.get("web", {})
    results = web.get("results", []) if isinstance(web, dict) else None
    if not isinstance(results, list):
        raise UpstreamError(
            "the Brave search provider sent a malformed response",
            reason=Reason.PROVIDER_MALFORMED,
            status=200,
        )
    query = data.get("query")
    more = query.get("more_results_available", True) if isinstance(query, dict) else True
    return results, more is not False


def _hit(item: Any) -> Hit | None:
    if not isinstance(item, dict):
        return None
    return make_hit(
        item.get("title"), item.get("url"), item.get("description"), item.get("page_age")
    )
