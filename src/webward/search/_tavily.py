"""Tavily: ``POST /search`` with a JSON body.

Wire shape (docs.tavily.com/documentation/api-reference/endpoint/search): the key goes in
``Authorization: Bearer tvly-…``; the body carries ``query`` and ``max_results`` (at most 20,
so one call); results are ``results[]`` with ``title``, ``url``, ``content`` and sometimes
``published_date``. Errors: 400 bad request, 401 missing or invalid key, 429 too many
requests, 432 plan limit, 433 pay-as-you-go limit, 5xx; bodies like
``{"detail": {"error": "…"}}``, which are never shown to the model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from .._credentials import Secret
from .._errors import InvalidInput, Reason, UpstreamError, operator_step
from .._models import Hit
from ._common import (
    Http,
    Response,
    collect,
    make_hit,
    provider_failed,
    rate_limited,
    read_json,
    refuse_echoed_key,
    web_page,
)
from ._filters import SearchFilters, unsupported

__all__ = ["TavilyProvider"]

MAX_RESULTS = 20
# Tavily answers a longer query 400 "Query is too long. Max query length is 400 characters."
# (its reference page does not say so; clients' bug reports quote the answer).
MAX_QUERY_CHARS = 400
KEY_NAME = "TAVILY_API_KEY"

#: ISO 3166-1 codes and the country names Tavily's ``country`` takes (lower case, its spelling).
COUNTRIES = {
    "AE": "united arab emirates",
    "AR": "argentina",
    "AT": "austria",
    "AU": "australia",
    "BD": "bangladesh",
    "BE": "belgium",
    "BG": "bulgaria",
    "BR": "brazil",
    "CA": "canada",
    "CH": "switzerland",
    "CL": "chile",
    "CN": "china",
    "CO": "colombia",
    "CZ": "czech republic",
    "DE": "germany",
    "DK": "denmark",
    "EE": "estonia",
    "EG": "egypt",
    "ES": "spain",
    "FI": "finland",
    "FR": "france",
    "GB": "united kingdom",
    "GR": "greece",
    "HR": "croatia",
    "HU": "hungary",
    "ID": "indonesia",
    "IE": "ireland",
    "IL": "israel",
    "IN": "india",
    "IS": "iceland",
    "IT": "italy",
    "JP": "japan",
    "KE": "kenya",
    "KR": "south korea",
    "LT": "lithuania",
    "LU": "luxembourg",
    "LV": "latvia",
    "MA": "morocco",
    "MX": "mexico",
    "MY": "malaysia",
    "NG": "nigeria",
    "NL": "netherlands",
    "NO": "norway",
    "NZ": "new zealand",
    "PE": "peru",
    "PH": "philippines",
    "PK": "pakistan",
    "PL": "poland",
    "PT": "portugal",
    "RO": "romania",
    "RS": "serbia",
    "RU": "russia",
    "SA": "saudi arabia",
    "SE": "sweden",
    "SG": "singapore",
    "SI": "slovenia",
    "SK": "slovakia",
    "TH": "thailand",
    "TR": "turkey",
    "TW": "taiwan",
    "UA": "ukraine",
    "US": "united states",
    "VN": "vietnam",
    "ZA": "south africa",
}


class TavilyProvider:
    """Searches through the Tavily API."""

    name = "tavily"

    def __init__(
        self,
        api_key: str | Secret,
        http: Http,
        base_url: str = "https://api.tavily.com",
        *,
        clock: Callable[[], float] = time.time,
        key_step: str = "",
    ) -> None:
        self._key = api_key if isinstance(api_key, Secret) else Secret(api_key)
        # What fixes a rejected key depends on where it came from (``choose_provider`` knows):
        # storing a new one changes nothing while the environment variable is set.
        self._key_step = key_step or f"check {KEY_NAME} or run `webward credentials set {KEY_NAME}`"
        self._http = http
        self._endpoint = base_url.rstrip("/") + "/search"
        self._clock = clock

    def __repr__(self) -> str:
        return f"TavilyProvider(endpoint={self._endpoint!r})"

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Hit]:
        """Up to ``min(limit, 20)`` hits in one call (Tavily has no paging).

        Filters: ``include_domains``, ``exclude_domains``, ``time_range`` and ``country`` (a
        country name from Tavily's list); Tavily has no language filter, so one is refused.

        A query over Tavily's 400 characters is refused before the call, as Brave's over its
        own limit is: Tavily's 400 answer would cost the call and tell the model nothing."""
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidInput(
                f"the Tavily search provider takes queries of at most {MAX_QUERY_CHARS} "
                f"characters (this one has {len(query)}); shorten it"
            )
        payload: dict[str, Any] = {
            "query": query,
            "max_results": min(limit, MAX_RESULTS),
            "search_depth": "basic",
            "include_answer": False,
            "include_raw_content": False,
        }
        if filters:
            payload.update(_filter_fields(filters))
        body = await self._http(
            "POST",
            self._endpoint,
            headers=(
                ("Accept", "application/json"),
                ("Content-Type", "application/json"),
                ("Authorization", f"Bearer {self._key.reveal()}"),
            ),
            content=json.dumps(payload).encode("utf-8"),
        )
        if body.status != 200:
            raise self._error(body)
        data = read_json(body, "Tavily")
        # Tavily's answer always holds a results list (empty when nothing matched): a 200
        # without one (an error-shaped body) is no "nothing found".
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise UpstreamError(
                "the Tavily search provider sent a malformed response",
                reason=Reason.PROVIDER_MALFORMED,
                status=200,
            )
        hits: list[Hit] = []
        collect(hits, set(), (_hit(r) for r in results), limit)
        refuse_echoed_key(hits, self._key, "Tavily")
        return hits

    def _error(self, body: Response) -> Exception:
        if body.status in (401, 403) and (page := web_page(body, "Tavily")) is not None:
            # Tavily answers a bad key in JSON: a web page is a proxy's or a bot check's,
            # and a new key would not get past it.
            return page
        if body.status in (401, 403):
            return UpstreamError(
                operator_step(
                    "the Tavily key was rejected",
                    self._key_step,
                ),
                reason=Reason.PROVIDER_KEY_REJECTED,
                status=body.status,
            )
        if body.status == 429:
            return rate_limited(
                "the Tavily search provider is rate limiting webward", body, self._clock
            )
        if body.status == 432:
            return rate_limited(
                "the Tavily plan's usage limit is reached",
                body,
                self._clock,
                reason=Reason.PROVIDER_QUOTA,
                step="raise the plan in the Tavily dashboard, or wait for it to reset",
            )
        if body.status == 433:
            return rate_limited(
                "the Tavily pay-as-you-go spending limit is reached",
                body,
                self._clock,
                reason=Reason.PROVIDER_QUOTA,
                step="raise it in the Tavily dashboard",
            )
        if 400 <= body.status < 500:
            return UpstreamError(
                f"the Tavily search provider refused the request (HTTP {body.status})",
                reason=Reason.PROVIDER_REJECTED,
                status=body.status,
            )
        return provider_failed("Tavily", body, self._clock, key=self._key)


def _filter_fields(filters: SearchFilters) -> dict[str, Any]:
    if filters.language:
        raise unsupported(
            "tavily", f"language ({filters.language})", "it has no language parameter"
        )
    fields: dict[str, Any] = {}
    if filters.allowed_domains:
        fields["include_domains"] = list(filters.allowed_domains)
    if filters.blocked_domains:
        fields["exclude_domains"] = list(filters.blocked_domains)
    if filters.freshness:
        fields["time_range"] = filters.freshness
    if filters.country:
        name = COUNTRIES.get(filters.country)
        if name is None:
            raise unsupported(
                "tavily",
                f"country {filters.country}",
                "it is not one of the countries webward maps to Tavily's names",
            )
        fields["country"] = name
    return fields


def _hit(item: Any) -> Hit | None:
    if not isinstance(item, dict):
        return None
    return make_hit(
        item.get("title"), item.get("url"), item.get("content"), item.get("published_date")
    )
