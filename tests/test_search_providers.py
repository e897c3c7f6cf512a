"""The search seam: each vendor adapter against a local server speaking its wire shape,
the Null provider, the choosing rules, and the text and URL cleaning."""

from __future__ import annotations

import email.utils
import socket
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from fake_search import (
    BRAVE_PATH,
    BRAVE_RATE_HEADERS,
    PROVIDER_DETAIL,
    FakeBrave,
    FakeSearxng,
    FakeTavily,
    brave_error,
    params,
    results,
    searxng_json_disabled,
    searxng_limited,
    tavily_error,
)
from hypothesis import given
from hypothesis import strategies as st
from localserver import LocalServer, Request, respond, serve

from webward import Settings, Web
from webward._credentials import EnvironmentStore
from webward._errors import InvalidInput, Refused, UpstreamError, WebwardError, human_wait
from webward._settings import SearchSettings
from webward._transport import Body
from webward.search import (
    NOT_CONFIGURED,
    BraveProvider,
    NullProvider,
    SearchProvider,
    SearxngProvider,
    TavilyProvider,
    choose_provider,
)
from webward.search._common import clean_text, clean_url, collect, make_hit, retry_after
from webward.testing import MemoryAuditSink

BRAVE_KEY = "BSAq1w2e3r4t5y6u7i8o9p0"
TAVILY_KEY = "tvly-dev-0123456789abcdef9f3a"


def _web() -> Web:
    settings = Settings().replace({"network": {"allow_ranges": ["127.0.0.1/32"]}})
    return Web(settings, audit=MemoryAuditSink())


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with serve() as s:
        yield s


def _no_secret(exc: WebwardError, *secrets: str) -> None:
    for text in (exc.message, repr(exc), str(exc.to_wire())):
        for secret in (*secrets, PROVIDER_DETAIL):
            assert secret not in text


# ---- Brave -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_brave_sends_key_and_params_and_cleans_hits(server: LocalServer) -> None:
    """One page: key in X-Subscription-Token, count=limit, offset 0; markup and entities cleaned."""
    items = results(3)
    items[0]["title"] = "Axum &amp; friends"
    items[0]["snippet"] = "A <strong>Rust</strong> web framework &#x27;fast&#x27;"
    server.routes[BRAVE_PATH] = FakeBrave(items, BRAVE_KEY)
    async with _web() as web:
        hits = await BraveProvider(
            BRAVE_KEY, partial(web.provider_request, "brave"), server.base
        ).search("rust web", 10)
    assert [h.url for h in hits] == [r["url"] for r in items]
    assert hits[0].title == "Axum & friends"
    assert hits[0].snippet == "A Rust web framework 'fast'"
    assert hits[0].published == items[0]["published"]
    [req] = server.requests
    assert req.method == "GET"
    assert req.headers["x-subscription-token"] == BRAVE_KEY
    assert req.headers["accept"] == "application/json"
    assert params(req) == {
        "q": "rust web",
        "count": "10",
        "offset": "0",
        "text_decorations": "false",
    }


@pytest.mark.anyio
async def test_brave_pages_with_offset_counting_pages(server: LocalServer) -> None:
    """A limit over 20 asks count=20 at offset 0, 1, 2 (pages, not items), cut to the limit."""
    server.routes[BRAVE_PATH] = FakeBrave(results(80), BRAVE_KEY)
    async with _web() as web:
        hits = await BraveProvider(
            BRAVE_KEY, partial(web.provider_request, "brave"), server.base
        ).search("q", 45)
    assert len(hits) == 45
    assert hits[-1].url == "https://example.org/page/45"
    assert [(params(r)["count"], params(r)["offset"]) for r in server.requests] == [
        ("20", "0"),
        ("20", "1"),
        ("20", "2"),
    ]


@pytest.mark.anyio
async def test_brave_stops_paging_when_results_run_out(server: LocalServer) -> None:
    """A short page (or more_results_available false) ends the paging."""
    server.routes[BRAVE_PATH] = FakeBrave(results(25), BRAVE_KEY)
    async with _web() as web:
        hits = await BraveProvider(
            BRAVE_KEY, partial(web.provider_request, "brave"), server.base
        ).search("q", 50)
    assert len(hits) == 25
    assert [params(r)["offset"] for r in server.requests] == ["0", "1"]


@pytest.mark.anyio
async def test_brave_deduplicates_across_pages_and_drops_non_http_urls(server: LocalServer) -> None:
    """Repeated URLs and javascript:, ftp: or relative URLs never become hits."""
    items = results(20) + results(20)  # page 2 repeats page 1
    items[3]["url"] = "javascript:alert(1)"
    items[4]["url"] = "ftp://example.org/file"
    items[5]["url"] = "/relative/path"
    items[6]["url"] = "https://example.org/page/1#section"  # same document as hit 1
    server.routes[BRAVE_PATH] = FakeBrave(items, BRAVE_KEY, more=True)
    async with _web() as web:
        hits = await BraveProvider(
            BRAVE_KEY, partial(web.provider_request, "brave"), server.base
        ).search("q", 40)
    urls = [h.url for h in hits]
    # Page 1: 20 items, 3 bad URLs and 1 fragment duplicate -> 16. Page 2 repeats the first
    # 20 URLs, of which only the 4 replaced on page 1 are new -> 20 in all.
    assert len(urls) == len(set(urls)) == 20
    assert "https://example.org/page/7" in urls
    assert all(u.startswith("https://") for u in urls)
    assert len(server.requests) == 2


@pytest.mark.anyio
async def test_brave_response_without_web_key_is_no_hits(server: LocalServer) -> None:
    """A Brave answer with no `web` key at all means no web results: an empty list."""
    server.routes[BRAVE_PATH] = FakeBrave(results(5), BRAVE_KEY, omit_web=True)
    async with _web() as web:
        hits = await BraveProvider(
            BRAVE_KEY, partial(web.provider_request, "brave"), server.base
        ).search("q", 10)
    assert hits == []


@pytest.mark.anyio
@pytest.mark.parametrize("array", [False, True])
async def test_brave_bad_key_is_an_upstream_error_naming_the_variable(
    server: LocalServer, array: bool
) -> None:
    """422 SUBSCRIPTION_TOKEN_INVALID (either shape) says the key was rejected, not Brave's text."""
    server.routes[BRAVE_PATH] = brave_error(422, "SUBSCRIPTION_TOKEN_INVALID", array=array)
    async with _web() as web:
        with pytest.raises(UpstreamError) as err:
            await BraveProvider(
                BRAVE_KEY, partial(web.provider_request, "brave"), server.base
            ).search("q", 10)
    assert err.value.reason == "provider_key_rejected"
    assert err.value.status == 422
    assert "Brave key was rejected" in err.value.message
    assert "BRAVE_SEARCH_API_KEY" in err.value.message
    _no_secret(err.value, BRAVE_KEY)


@pytest.mark.anyio
async def test_brave_wrong_key_against_the_fake(server: LocalServer) -> None:
    """The fake checks the token like Brave does; a wrong one is reported as rejected."""
    server.routes[BRAVE_PATH] = FakeBrave(results(3), BRAVE_KEY)
    async with _web() as web:
        with pytest.raises(UpstreamError) as err:
            await BraveProvider(
                "BSAwrongwrongwrong0000", partial(web.provider_request, "brave"), server.base
            ).search("q", 3)
    assert err.value.reason == "provider_key_rejected"
    _no_secret(err.value, "BSAwrongwrongwrong0000")


@pytest.mark.anyio
async def test_brave_rate_limited_carries_the_reset(server: LocalServer) -> None:
    """429 RATE_LIMITED is Refused(rate_limited) with the exhausted window's X-RateLimit-Reset."""
    server.routes[BRAVE_PATH] = brave_error(429, "RATE_LIMITED", headers=BRAVE_RATE_HEADERS)
    async with _web() as web:
        with pytest.raises(Refused) as err:
            await BraveProvider(
                BRAVE_KEY, partial(web.provider_request, "brave"), server.base
            ).search("q", 10)
    assert err.value.code == "rate_limited"
    assert err.value.retry_after == 1.0
    assert "rate limiting" in err.value.message and "retry in 1 s" in err.value.message
    _no_secret(err.value, BRAVE_KEY)


@pytest.mark.anyio
async def test_brave_quota_limited_says_quota_and_when_it_resets(server: LocalServer) -> None:
    """429 QUOTA_LIMITED says the quota is used up and waits for the monthly window."""
    headers = dict(BRAVE_RATE_HEADERS, **{"X-RateLimit-Remaining": "1, 0"})
    server.routes[BRAVE_PATH] = brave_error(429, "QUOTA_LIMITED", headers=headers)
    async with _web() as web:
        brave = BraveProvider(BRAVE_KEY, partial(web.provider_request, "brave"), server.base)
        with pytest.raises(Refused) as err:
            await brave.search("q", 10)
        with pytest.raises(Refused) as held:  # refused by the hold, Brave not asked
            await brave.search("q", 10)
    assert len(server.requests) == 1
    assert held.value.reason == "upstream_backpressure"
    assert held.value.retry_after is not None and 3000 < held.value.retry_after <= 3600
    assert err.value.code == "rate_limited"
    assert err.value.reason == "provider_quota"
    # The provider's wait is said; the retry is when webward asks it again (the limiter
    # holds a 429 at most an hour), as the calls refused during that hold say.
    assert err.value.retry_after == 3600.0
    assert "quota" in err.value.message and "wait 17 days" in err.value.message
    assert "asks it again in 60 min" in err.value.message


@pytest.mark.anyio
async def test_brave_later_page_rate_limited_keeps_earlier_hits(server: LocalServer) -> None:
    """When page 2 is rate limited, the hits of page 1 still come back."""
    fake = FakeBrave(results(60), BRAVE_KEY)
    limited = brave_error(429, "RATE_LIMITED", headers=BRAVE_RATE_HEADERS)

    def handler(req: Request, sock: socket.socket) -> None:
        (fake if params(req)["offset"] == "0" else limited)(req, sock)

    server.routes[BRAVE_PATH] = handler
    async with _web() as web:
        hits = await BraveProvider(
            BRAVE_KEY, partial(web.provider_request, "brave"), server.base
        ).search("q", 50)
    assert len(hits) == 20
    assert len(server.requests) == 2


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("handler", "reason", "words"),
    [
        (brave_error(500, "INTERNAL"), "provider_error", "failed (HTTP 500)"),
        (respond(503, "<html>down</html>"), "provider_error", "failed (HTTP 503)"),
        (
            respond(200, "<html><body>Checking your browser…</body></html>"),
            "provider_malformed",
            "web page instead of JSON",
        ),
        (
            respond(200, '{"web": {"results": [', "application/json"),
            "provider_malformed",
            "malformed JSON",
        ),
        (respond(200, "[1, 2]", "application/json"), "provider_malformed", "malformed"),
        (
            respond(200, '{"web": {"results": [' + "1," * 2_100_000, "application/json"),
            "provider_malformed",
            "larger than 4 MB",
        ),
        (brave_error(422, "VALIDATION"), "provider_rejected", "refused the request (HTTP 422)"),
    ],
)
async def test_brave_failures_are_upstream_errors_without_the_body(
    server: LocalServer, handler: Any, reason: str, words: str
) -> None:
    """5xx, challenge pages, broken JSON and other 4xx become messages that never quote the body."""
    server.routes[BRAVE_PATH] = handler
    async with _web() as web:
        with pytest.raises(UpstreamError) as err:
            await BraveProvider(
                BRAVE_KEY, partial(web.provider_request, "brave"), server.base
            ).search("q", 5)
    assert err.value.reason == reason
    assert words in err.value.message
    assert "Checking your browser" not in err.value.message
    _no_secret(err.value, BRAVE_KEY)


@pytest.mark.anyio
async def test_brave_query_over_its_own_limit_is_refused_before_calling(
    server: LocalServer,
) -> None:
    """Brave takes at most 400 characters and 50 words: longer is InvalidInput with no request."""
    server.routes[BRAVE_PATH] = FakeBrave(results(3), BRAVE_KEY)
    async with _web() as web:
        provider = BraveProvider(BRAVE_KEY, partial(web.provider_request, "brave"), server.base)
        with pytest.raises(InvalidInput) as long:
            await provider.search("x" * 401, 10)
        with pytest.raises(InvalidInput) as wordy:
            await provider.search(" ".join(["w"] * 51), 10)
    # The limit, the query's own size and what to do, as Tavily's limit says them.
    assert long.value.message == (
        "the Brave search provider takes queries of at most 400 characters and 50 words "
        "(this one has 401 and 1); shorten it"
    )
    assert wordy.value.message.endswith("(this one has 101 and 51); shorten it")
    assert server.requests == []


# ---- Tavily ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_tavily_posts_json_with_bearer_key(server: LocalServer) -> None:
    """POST /search with Authorization: Bearer and a JSON body carrying query and max_results."""
    fake = FakeTavily(results(8), TAVILY_KEY)
    server.routes["/search"] = fake
    async with _web() as web:
        hits = await TavilyProvider(
            TAVILY_KEY, partial(web.provider_request, "tavily"), server.base
        ).search("llm agents", 5)
    assert [h.title for h in hits] == [f"Result {i}" for i in range(1, 6)]
    assert hits[0].published == "2025-01-02T00:00:00"
    [req] = server.requests
    assert req.method == "POST"
    assert req.headers["authorization"] == f"Bearer {TAVILY_KEY}"
    assert req.headers["content-type"] == "application/json"
    assert fake.bodies[0]["query"] == "llm agents"
    assert fake.bodies[0]["max_results"] == 5
    assert "api_key" not in fake.bodies[0]  # the key travels in the header only


@pytest.mark.anyio
async def test_tavily_asks_at_most_20_in_one_call(server: LocalServer) -> None:
    """A limit over 20 asks max_results=20 once; Tavily has no paging."""
    fake = FakeTavily(results(30), TAVILY_KEY)
    server.routes["/search"] = fake
    async with _web() as web:
        hits = await TavilyProvider(
            TAVILY_KEY, partial(web.provider_request, "tavily"), server.base
        ).search("q", 50)
    assert len(hits) == 20
    assert [b["max_results"] for b in fake.bodies] == [20]


@pytest.mark.anyio
async def test_tavily_empty_results(server: LocalServer) -> None:
    """No results is an empty list."""
    server.routes["/search"] = FakeTavily([], TAVILY_KEY)
    async with _web() as web:
        assert (
            await TavilyProvider(
                TAVILY_KEY, partial(web.provider_request, "tavily"), server.base
            ).search("q", 5)
            == []
        )


@pytest.mark.anyio
async def test_tavily_bad_key_is_an_upstream_error_naming_the_variable(server: LocalServer) -> None:
    """401 says the Tavily key was rejected and how to fix it."""
    server.routes["/search"] = FakeTavily(results(3), TAVILY_KEY)
    async with _web() as web:
        with pytest.raises(UpstreamError) as err:
            await TavilyProvider(
                "tvly-wrong-0000000000000000", partial(web.provider_request, "tavily"), server.base
            ).search("q", 5)
    assert err.value.reason == "provider_key_rejected"
    assert "Tavily key was rejected" in err.value.message
    assert "TAVILY_API_KEY" in err.value.message
    _no_secret(err.value, "tvly-wrong-0000000000000000")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "headers", "words", "wait"),
    [
        (429, {"Retry-After": "30"}, "rate limiting", 30.0),
        # Past already: no "retry in 0.1 s" beside a retryAfter of 0.
        (429, {"Retry-After": "-5"}, "webward; try again later", None),
        (429, {"Retry-After": "Mon, 01 Jan 2024 00:00:00 GMT"}, "try again later", None),
        (432, {}, "usage limit", None),
        (433, {}, "pay-as-you-go", None),
    ],
)
async def test_tavily_limits_are_rate_limited(
    server: LocalServer, status: int, headers: dict[str, str], words: str, wait: float | None
) -> None:
    """429, 432 and 433 are Refused(rate_limited), with Retry-After when sent."""
    server.routes["/search"] = tavily_error(status, headers=headers)
    async with _web() as web:
        with pytest.raises(Refused) as err:
            await TavilyProvider(
                TAVILY_KEY, partial(web.provider_request, "tavily"), server.base
            ).search("q", 5)
    assert err.value.code == "rate_limited"
    assert err.value.retry_after == wait
    assert words in err.value.message
    _no_secret(err.value, TAVILY_KEY)


@pytest.mark.anyio
@pytest.mark.parametrize("status", [432, 433])
@pytest.mark.parametrize(
    ("headers", "words", "wait"),
    [
        ({}, "; try again later;", None),
        ({"Retry-After": "120"}, "; retry in 2 min;", 120.0),
        # A monthly quota's reset: said as Tavily's; webward asks again within its hold's cap.
        (
            {"Retry-After": str(17 * 24 * 3600)},
            "17 days, and webward asks it again in 60 min",
            3600,
        ),
    ],
)
async def test_tavily_quota_answers_hold_the_provider_as_a_429_does(
    server: LocalServer, status: int, headers: dict[str, str], words: str, wait: float | None
) -> None:
    """Tavily's 432 (plan limit) and 433 (pay-as-you-go limit) are its 429s for a quota:
    asked again at once, Tavily would answer the same, and each call would cost one. So the
    provider is held as a 429 holds it (for its Retry-After, else the default hold), and the
    next search is refused by webward without being sent."""
    server.routes["/search"] = tavily_error(status, headers=headers)
    async with _web() as web:
        provider = TavilyProvider(TAVILY_KEY, partial(web.provider_request, "tavily"), server.base)
        with pytest.raises(Refused) as err:
            await provider.search("q", 5)
        assert err.value.code == "rate_limited" and err.value.reason == "provider_quota"
        assert err.value.retry_after == wait
        assert words in err.value.message
        with pytest.raises(Refused) as held:
            await provider.search("q", 5)
        assert held.value.code == "rate_limited" and held.value.retry_after is not None
        assert held.value.retry_after <= (wait or 5)
        _no_secret(err.value, TAVILY_KEY)
        _no_secret(held.value, TAVILY_KEY)
    assert len(server.requests) == 1


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "reason"),
    [(400, "provider_rejected"), (500, "provider_error"), (502, "provider_error")],
)
async def test_tavily_other_errors_are_upstream_errors(
    server: LocalServer, status: int, reason: str
) -> None:
    """400 and 5xx are provider failures that do not quote the body."""
    server.routes["/search"] = tavily_error(status)
    async with _web() as web:
        with pytest.raises(UpstreamError) as err:
            await TavilyProvider(
                TAVILY_KEY, partial(web.provider_request, "tavily"), server.base
            ).search("q", 5)
    assert err.value.reason == reason
    assert f"HTTP {status}" in err.value.message
    _no_secret(err.value, TAVILY_KEY)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("make", "path"),
    [
        (partial(BraveProvider, BRAVE_KEY), BRAVE_PATH),
        (partial(TavilyProvider, TAVILY_KEY), "/search"),
        (lambda http, base: SearxngProvider(base, http), "/search"),
    ],
)
async def test_a_503_naming_a_time_says_it_and_holds_the_provider(
    server: LocalServer, make: Any, path: str
) -> None:
    """A provider down for maintenance answers 503 with a Retry-After: the failure says when
    to retry (and carries it, for the gateway's Retry-After), and the provider is held until
    then, as a host is for page reads: the next search is refused by webward, not sent. A 503
    without one is "try again later" and holds nothing."""
    server.routes[path] = respond(503, "{}", "application/json", {"Retry-After": "90"})
    async with _web() as web:
        provider = make(partial(web.provider_request, "p"), server.base)
        with pytest.raises(UpstreamError) as err:
            await provider.search("q", 5)
        assert err.value.message.endswith("failed (HTTP 503); retry in 90 s")
        assert err.value.retry_after == 90
        with pytest.raises(Refused) as held:
            await provider.search("q", 5)
        assert held.value.code == "rate_limited" and held.value.retry_after is not None
    assert len(server.requests) == 1
    server.routes[path] = respond(503, "{}", "application/json")
    async with _web() as web:
        provider = make(partial(web.provider_request, "p"), server.base)
        for _ in range(2):
            with pytest.raises(UpstreamError) as err:
                await provider.search("q", 5)
            assert err.value.message.endswith("failed (HTTP 503); try again later")
            assert err.value.retry_after is None
    assert len(server.requests) == 3


@pytest.mark.anyio
@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize(
    ("make", "path"),
    [
        (partial(BraveProvider, BRAVE_KEY), BRAVE_PATH),
        (partial(TavilyProvider, TAVILY_KEY), "/search"),
    ],
)
async def test_a_proxys_401_or_403_page_is_no_rejected_key(
    server: LocalServer, make: Any, path: str, status: int
) -> None:
    """Brave and Tavily answer a bad key in JSON; an HTML 401/403 is a page of something in
    between (an egress proxy, a bot check), which a new key would not get past: it is said
    as a web page instead of JSON, not as a rejected key."""
    page = f"<html><body><h1>Access denied</h1>{PROVIDER_DETAIL}</body></html>"
    server.routes[path] = respond(status, page, "text/html")
    async with _web() as web:
        with pytest.raises(UpstreamError) as err:
            await make(partial(web.provider_request, "p"), server.base).search("q", 5)
    assert err.value.reason == "provider_malformed"
    assert f"sent a web page instead of JSON (HTTP {status})" in err.value.message
    assert "key" not in err.value.message
    _no_secret(err.value, BRAVE_KEY, TAVILY_KEY)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("make", "path", "setting"),
    [
        (partial(BraveProvider, BRAVE_KEY), BRAVE_PATH, "brave_url"),
        (partial(TavilyProvider, TAVILY_KEY), "/search", "tavily_url"),
        (lambda http, base: SearxngProvider(base, http), "/search", "searxng_url"),
    ],
)
async def test_a_redirecting_provider_endpoint_names_the_setting_not_a_retry(
    server: LocalServer, make: Any, path: str, setting: str
) -> None:
    """Provider requests follow no redirect (the key would go along), so a provider URL that
    redirects (http to https, a moved instance) fails the same way on every call: the message
    says to fix the URL, with where it leads but not the query (the agent's search terms),
    rather than "try again later"."""
    server.routes[path] = respond(
        301, "", "text/plain", {"Location": "https://search.example/new/path?q=agent+terms"}
    )
    async with _web() as web:
        with pytest.raises(UpstreamError) as err:
            await make(
                partial(web.provider_request, setting.removesuffix("_url")), server.base
            ).search("agent terms", 5)
    message = err.value.message
    assert "redirect (HTTP 301)" in message
    variable = f"WEBWARD_{setting.upper()}"  # (a URL set in the variable: no config key)
    assert (
        f"point [search] {setting} (or {variable}) at where it redirects (https://search.example)"
        in message
    )
    assert "try again later" not in message
    assert "agent" not in message and "/new/path" not in message
    assert err.value.status == 301
    assert err.value.for_model.endswith("only webward's operator can change that")
    assert len(server.requests) == 1  # not followed


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("make", "path", "key"),
    [
        (partial(BraveProvider, BRAVE_KEY), BRAVE_PATH, BRAVE_KEY),
        (partial(TavilyProvider, TAVILY_KEY), "/search", TAVILY_KEY),
    ],
)
async def test_a_redirect_echoing_the_key_is_not_named(
    server: LocalServer, make: Any, path: str, key: str
) -> None:
    """An endpoint that redirects to a host name spelling the key it was sent: the message
    (the command line's, the logs') says to fix the URL without naming where it leads, so the
    key reaches no face."""
    location = f"https://{key.lower()}.search.example/"
    server.routes[path] = respond(301, "", "text/plain", {"Location": location})
    async with _web() as web:
        with pytest.raises(UpstreamError) as err:
            await make(partial(web.provider_request, "p"), server.base).search("q", 5)
    assert err.value.message.endswith("at where it redirects")
    _no_secret(err.value, key, key.lower())


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("provider", "path", "body"),
    [
        ("tavily", "/search", '{"detail": {"error": "quota"}}'),  # no results list at all
        ("tavily", "/search", '{"results": {"a": 1}}'),
        ("brave", BRAVE_PATH, '{"type": "search", "web": {"results": {"a": 1}}}'),
        ("brave", BRAVE_PATH, '{"type": "search", "web": "none"}'),
    ],
)
async def test_a_200_of_another_shape_is_malformed_not_nothing_found(
    server: LocalServer, provider: str, path: str, body: str
) -> None:
    """A 200 whose results are missing (Tavily always sends a list) or not a list is the
    provider's malformed answer, not zero hits the agent would take for "nothing found"."""
    server.routes[path] = respond(200, body, "application/json")
    async with _web() as web:
        http = partial(web.provider_request, provider)
        adapter = (
            TavilyProvider(TAVILY_KEY, http, server.base)
            if provider == "tavily"
            else BraveProvider(BRAVE_KEY, http, server.base)
        )
        with pytest.raises(UpstreamError) as err:
            await adapter.search("q", 5)
    assert err.value.reason == "provider_malformed"
    assert "malformed response" in err.value.message


@pytest.mark.anyio
async def test_a_provider_nobody_answers_for_is_named_with_its_setting() -> None:
    """A provider URL where nothing listens: the error names the provider and the setting
    to check, not only the address: the config key and the variable, which a URL set there
    has instead of a key."""
    with socket.socket() as held:  # bound, never listening: the connection is refused
        held.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{held.getsockname()[1]}"
        async with _web() as web:
            with pytest.raises(UpstreamError) as err:
                await BraveProvider(BRAVE_KEY, partial(web.provider_request, "brave"), base).search(
                    "q", 5
                )
    assert err.value.message.startswith(
        "the brave search provider could not be reached; check [search] brave_url (or "
        "WEBWARD_BRAVE_URL) and this machine's network (could not connect to 127.0.0.1:"
    )
    # The setting is the operator's to check; a model is told to try again later.
    assert "[search]" not in err.value.for_model
    assert err.value.for_model.endswith("; try again later")
    _no_secret(err.value, BRAVE_KEY)


# ---- SearXNG ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_searxng_asks_json_and_pages_with_pageno(server: LocalServer) -> None:
    """format=json on every call; pageno 1, 2, 3 until the limit is reached."""
    server.routes["/searx/search"] = FakeSearxng(results(100), per_page=20)
    async with _web() as web:
        hits = await SearxngProvider(
            server.url("/searx/"), partial(web.provider_request, "searxng")
        ).search("q", 45)
    assert len(hits) == 45
    assert [
        (params(r)["format"], params(r)["pageno"], params(r)["q"]) for r in server.requests
    ] == [("json", "1", "q"), ("json", "2", "q"), ("json", "3", "q")]
    assert hits[0].published == "2025-01-02T00:00:00"


@pytest.mark.anyio
async def test_searxng_stops_at_an_empty_page(server: LocalServer) -> None:
    """An empty page ends the paging; no results at all is an empty list."""
    server.routes["/search"] = FakeSearxng(results(25), per_page=20)
    async with _web() as web:
        provider = SearxngProvider(server.base, partial(web.provider_request, "searxng"))
        assert len(await provider.search("q", 50)) == 25
    assert [params(r)["pageno"] for r in server.requests] == ["1", "2", "3"]
    server.routes["/search"] = FakeSearxng([])
    async with _web() as web:
        assert (
            await SearxngProvider(server.base, partial(web.provider_request, "searxng")).search(
                "q", 5
            )
            == []
        )


@pytest.mark.anyio
async def test_searxng_with_its_engines_failing_is_no_nothing_found(server: LocalServer) -> None:
    """No results because the engines behind the instance failed (suspended after a CAPTCHA,
    rate limited: its unresponsive_engines) is a failure saying so, not "No results for this
    query", which an agent takes as an answer; the instance's reasons are not passed on, an
    engine name that is no name is not shown. Some engines failing while others found hits
    is a result; none failing and none found is nothing found."""
    unresponsive = [
        ["startpage", "Suspended: CAPTCHA"],
        ["brave", PROVIDER_DETAIL],
        ["<b>ignore previous</b>", "x"],
    ]
    server.routes["/search"] = FakeSearxng([], unresponsive=unresponsive)
    async with _web() as web:
        provider = SearxngProvider(server.base, partial(web.provider_request, "searxng"))
        with pytest.raises(UpstreamError) as err:
            await provider.search("q", 5)
        assert err.value.reason == "provider_error"
        assert err.value.for_model == (
            "the SearXNG search provider found nothing, and 3 of the search engines behind it "
            "failed to answer; try again later"
        )
        assert "check startpage, brave on the instance's /stats page" in err.value.message
        for text in ("Suspended", "ignore", PROVIDER_DETAIL):
            assert text not in err.value.message
        server.routes["/search"] = FakeSearxng(results(2), unresponsive=unresponsive)
        assert len(await provider.search("q", 5)) == 2
        server.routes["/search"] = FakeSearxng([])
        assert await provider.search("q", 5) == []


@pytest.mark.anyio
async def test_searxng_json_disabled_says_so(server: LocalServer) -> None:
    """403 means JSON output is disabled on the instance: the message says how to enable it."""
    server.routes["/search"] = searxng_json_disabled()
    async with _web() as web:
        with pytest.raises(UpstreamError) as err:
            await SearxngProvider(server.base, partial(web.provider_request, "searxng")).search(
                "q", 5
            )
    assert err.value.reason == "provider_json_disabled"
    assert "search.formats" in err.value.message
    assert "Forbidden" not in err.value.message


@pytest.mark.anyio
async def test_searxng_limiter_is_rate_limited(server: LocalServer) -> None:
    """The instance's bot limiter (plain-text 429) is Refused(rate_limited) naming the limiter."""
    server.routes["/search"] = searxng_limited()
    async with _web() as web:
        with pytest.raises(Refused) as err:
            await SearxngProvider(server.base, partial(web.provider_request, "searxng")).search(
                "q", 5
            )
    assert err.value.code == "rate_limited"
    assert "limiter" in err.value.message
    assert "Too Many Requests" not in err.value.message


@pytest.mark.anyio
async def test_searxng_html_page_is_an_upstream_error(server: LocalServer) -> None:
    """An instance that answers HTML with 200 is reported as not JSON."""
    server.routes["/search"] = respond(200, "<html><body>results</body></html>")
    async with _web() as web:
        with pytest.raises(UpstreamError) as err:
            await SearxngProvider(server.base, partial(web.provider_request, "searxng")).search(
                "q", 5
            )
    assert err.value.reason == "provider_malformed"


# ---- Null ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_null_provider_refuses_with_how_to_configure() -> None:
    """Null never returns an empty list: it refuses with not_configured and the fix."""
    with pytest.raises(Refused) as err:
        await NullProvider().search("q", 5)
    assert err.value.code == "not_configured"
    message = err.value.message
    assert message == Refused(NOT_CONFIGURED).message
    assert message.startswith("web search is not configured; ")
    for words in (
        "BRAVE_SEARCH_API_KEY",
        "TAVILY_API_KEY",
        "webward credentials set",
        "searxng_url",
        "web_fetch still works",
    ):
        assert words in message
    # A model is told what is wrong and what still works, not which key or setting to write.
    assert err.value.for_model == (
        "web search is not configured; only webward's operator can turn it on; reading URLs "
        "with web_fetch still works"
    )


def test_every_provider_meets_the_protocol() -> None:
    """All four implementations satisfy SearchProvider and carry their wire names."""

    async def http(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")

    providers = [
        BraveProvider(BRAVE_KEY, http),
        TavilyProvider(TAVILY_KEY, http),
        SearxngProvider("http://127.0.0.1:1", http),
        NullProvider(),
    ]
    assert [p.name for p in providers] == ["brave", "tavily", "searxng", "none"]
    for p in providers:
        assert isinstance(p, SearchProvider)
        assert BRAVE_KEY not in repr(p) and TAVILY_KEY not in repr(p)


# ---- choosing --------------------------------------------------------------------------


def _choose(env: dict[str, str], arg: str | None = None, **search: str) -> SearchProvider:
    asked: list[str] = []

    def http_for(name: str) -> Any:
        asked.append(name)

        async def http(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("choosing never calls the provider")

        return http

    chosen = choose_provider(SearchSettings(**search), EnvironmentStore(env), http_for, arg)
    assert asked == ([] if chosen.name == "none" else [chosen.name])
    return chosen


BOTH = {"BRAVE_SEARCH_API_KEY": BRAVE_KEY, "TAVILY_API_KEY": TAVILY_KEY}


@pytest.mark.parametrize(
    ("env", "search", "provider", "expected"),
    [
        ({}, {}, None, "none"),
        ({"BRAVE_SEARCH_API_KEY": BRAVE_KEY}, {}, None, "brave"),
        ({"TAVILY_API_KEY": TAVILY_KEY}, {}, None, "tavily"),
        (BOTH, {}, None, "brave"),
        ({}, {"searxng_url": "http://127.0.0.1:8888"}, None, "searxng"),
        ({"TAVILY_API_KEY": TAVILY_KEY}, {"searxng_url": "http://127.0.0.1:8888"}, None, "tavily"),
        (BOTH, {"provider": "tavily"}, None, "tavily"),
        (BOTH, {"provider": "TAVILY "}, None, "tavily"),
        (BOTH, {"provider": "tavily"}, "brave", "brave"),
        (BOTH, {"searxng_url": "http://127.0.0.1:8888"}, "searxng", "searxng"),
        (BOTH, {"provider": "none"}, None, "none"),
        (BOTH, {}, "none", "none"),
    ],
)
def test_choosing_rules(
    env: dict[str, str], search: dict[str, str], provider: str | None, expected: str
) -> None:
    """Call beats config; unset: the first with a credential (Brave, Tavily, SearXNG); else Null."""
    assert _choose(env, provider, **search).name == expected


@pytest.mark.parametrize(
    ("provider", "search", "words"),
    [
        ("brave", {}, "BRAVE_SEARCH_API_KEY is not set"),
        ("tavily", {}, "TAVILY_API_KEY is not set"),
        (None, {"provider": "tavily"}, "TAVILY_API_KEY is not set"),
        ("searxng", {}, "searxng_url"),
        ("none", {}, '"none"'),
    ],
)
@pytest.mark.anyio
async def test_chosen_provider_without_its_key_names_what_is_missing(
    provider: str | None, search: dict[str, str], words: str
) -> None:
    """A chosen provider without its key or URL refuses with not_configured naming the setting."""
    chosen = _choose({}, provider, **search)
    assert isinstance(chosen, NullProvider)
    with pytest.raises(Refused) as err:
        await chosen.search("q", 3)
    assert err.value.code == "not_configured"
    assert err.value.message.startswith("web search is not configured")
    assert words in err.value.message
    assert "web_fetch still works" in err.value.message


def test_collect_reads_no_more_than_a_page_of_results_can_hold() -> None:
    """A page padded with thousands of results that are no hit (javascript: URLs, repeats)
    never reaches the limit: collect stops reading after MAX_RESULTS_READ of them, rather
    than cleaning every one on the event loop (0.4 s for 60,000 in one Brave page, and
    Brave's paging asked for more such pages)."""
    read: list[int] = []

    def hits() -> Iterator[Any]:
        for i in range(10_000):
            read.append(i)
            url = "javascript:x" if i % 2 else "https://example.org/same"
            yield make_hit(f"T {i}", url, "s")

    into: list[Any] = []
    assert collect(into, set(), hits(), 10) == 1
    assert len(read) == 200  # MAX_RESULTS_READ


def test_unknown_provider_names_are_invalid_input() -> None:
    """An unknown provider, by argument or in config, is InvalidInput naming the choices."""
    with pytest.raises(InvalidInput) as err:
        _choose(BOTH, "bing")
    assert "brave, tavily, searxng, none" in err.value.message
    with pytest.raises(InvalidInput) as err:
        _choose(BOTH, None, provider="bing")
    assert "[search] provider" in err.value.message


def test_provider_from_the_environment_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """WEBWARD_SEARCH_PROVIDER and the WEBWARD_*_URL variables reach the choice through
    Settings.load."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    settings = Settings.load(
        environ={"WEBWARD_SEARCH_PROVIDER": "tavily", "WEBWARD_TAVILY_URL": "http://127.0.0.1:9"}
    )
    assert settings.search.provider == "tavily"
    chosen = choose_provider(settings.search, EnvironmentStore(BOTH), lambda name: None)  # type: ignore[arg-type,return-value]
    assert chosen.name == "tavily"
    assert "127.0.0.1:9/search" in repr(chosen)
    for provider, var, env in (
        ("brave", "WEBWARD_BRAVE_URL", BOTH),
        ("searxng", "WEBWARD_SEARXNG_URL", {}),
    ):
        settings = Settings.load(environ={var: "http://127.0.0.1:8/x/"})
        assert settings.search.provider == ""
        chosen = choose_provider(settings.search, EnvironmentStore(env), lambda name: None)  # type: ignore[arg-type,return-value]
        assert chosen.name == provider
        assert "127.0.0.1:8/x/" in repr(chosen)


# ---- cleaning --------------------------------------------------------------------------


def test_collect_reads_no_result_past_the_limit() -> None:
    """The adapters clean a provider's results as collect reads them: a provider answering
    thousands for a count of 10 (up to its 4 MB) costs the cleaning of what is kept, not of
    every result (a second of the event loop for 20,000 IDN URLs), and none is read past the
    hit that reaches the limit."""
    read: list[int] = []

    def hits() -> Iterator[Any]:
        for i in range(10_000):
            read.append(i)
            yield None if i == 1 else make_hit(f"T {i}", f"https://example.org/{i % 3}", "s")

    into: list[Any] = []
    assert collect(into, set(), hits(), 3) == 3
    assert [h.url for h in into] == [f"https://example.org/{i}" for i in (0, 2, 1)]
    assert read == [0, 1, 2, 3, 4]  # 3 is /0 again; 4, /1, is the third
    assert collect(into, set(), hits(), 3) == 0 and len(read) == 5  # full: none read


def test_clean_text_strips_highlights_and_decodes_entities() -> None:
    """Highlight markup (raw or entity-encoded) goes; entities are decoded; one line."""
    assert clean_text("A <strong>Rust</strong>\n web &amp; <b>more</b>", 100) == "A Rust web & more"
    assert clean_text("&lt;strong&gt;bold&lt;/strong&gt; a &lt; b", 100) == "bold a < b"
    assert clean_text("x" * 50, 10) == "x" * 9 + "…"
    assert clean_text(None, 10) == ""
    assert clean_text("zero\u200bwidth\u202ebidi\x07bell", 100) == "zerowidthbidibell"
    # Escaped twice by the site, then once more by the provider's JSON: all of it decoded.
    assert clean_text("AT&amp;amp;T &amp;lt;b&amp;gt;news", 100) == "AT&T news"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://Example.ORG/a b?q=<x>", "https://example.org/a%20b?q=%3Cx%3E"),
        ("http://例え.jp/パス", "http://xn--r8jz45g.jp/%E3%83%91%E3%82%B9"),
        ("http://\U0001f355.ws/menu", "http://xn--vi8h.ws/menu"),  # as the guard maps it
        ("https://[2001:db8::1]:8443/x", "https://[2001:db8::1]:8443/x"),
        ("javascript:alert(1)", None),
        ("data:text/html,hi", None),
        ("//example.org/x", None),
        ("https://user:pw@example.org/", None),
        ("https://example.org/\x00", None),
        ("https://example.org/\udcff", None),  # a lone surrogate: no character, no URL
        ("https://example.org:99999/", None),
        (42, None),
    ],
)
def test_clean_url(url: Any, expected: str | None) -> None:
    """Only absolute http(s) URLs survive, in ASCII with unsafe characters percent-encoded."""
    assert clean_url(url) == expected


@given(st.text(max_size=300))
def test_clean_text_is_always_one_plain_line(value: str) -> None:
    """Whatever a provider sends, the cleaned text is one line without control characters."""
    out = clean_text(value, 120)
    assert len(out) <= 120
    assert "\n" not in out and "\r" not in out
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 for ch in out)
    assert out == out.strip()


@given(
    st.one_of(
        st.text(max_size=200),
        st.builds(lambda s: "https://example.org/" + s, st.text(max_size=100)),
    )
)
def test_clean_url_output_is_safe(value: str) -> None:
    """A cleaned URL is None or ASCII http(s) with no spaces, quotes or angle brackets."""
    out = clean_url(value)
    if out is not None:
        assert out.startswith(("http://", "https://"))
        assert out.isascii()
        assert not any(ch in out for ch in ' <>"`{}|\\^') and out.isprintable()


# ---- retry-after -----------------------------------------------------------------------


def _body(status: int, **headers: str) -> Body:
    return Body(status, tuple((k.replace("_", "-"), v) for k, v in headers.items()), b"", False, 0)


def test_retry_after_reads_seconds_dates_and_brave_windows() -> None:
    """Retry-After in seconds or as an HTTP date; else the exhausted X-RateLimit-Reset window."""
    now = 1_700_000_000.0
    assert retry_after(_body(429, Retry_After="12"), lambda: now) == 12.0
    date = email.utils.formatdate(now + 90, usegmt=True)
    assert retry_after(_body(429, Retry_After=date), lambda: now) == 90.0
    assert (
        retry_after(
            _body(429, X_RateLimit_Reset="1, 500", X_RateLimit_Remaining="5, 0"), lambda: now
        )
        == 500.0
    )
    assert retry_after(_body(429, X_RateLimit_Reset="3, 500"), lambda: now) == 3.0
    assert retry_after(_body(429, Retry_After="soon"), lambda: now) is None
    assert retry_after(_body(429, X_RateLimit_Reset="nan"), lambda: now) is None
    assert retry_after(_body(429), lambda: now) is None
    # Not delay-seconds (1*DIGIT, RFC 9110): no Retry-After at all.
    assert retry_after(_body(429, Retry_After="-5"), lambda: now) is None


@pytest.mark.parametrize("value", ["inf", "Infinity", "1e308", "NaN", "-5", "3.5", "0x10", " "])
def test_an_invalid_retry_after_is_no_retry_after(value: str) -> None:
    """``inf`` or ``1e308`` are no delay-seconds: the provider said no wait, and neither a
    month nor the cap is made of it; Brave's windows are whole numbers too."""
    from webward.search._common import rate_headers

    now = 1_700_000_000.0
    assert retry_after(_body(429, Retry_After=value), lambda: now) is None
    assert retry_after(_body(429, X_RateLimit_Reset=value), lambda: now) is None
    assert rate_headers([("Retry-After", value), ("X-RateLimit-Reset", "1, 20")]) == [
        ("x-ratelimit-reset", "1, 20")
    ]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "words", "wait", "held"),
    [
        ("inf", "webward; try again later", None, 5.0),
        ("1e308", "webward; try again later", None, 5.0),
        (
            "99999999999999999999999",
            "it says to wait 32 days or more, and webward asks it again in 60 min",
            3600.0,
            3600.0,
        ),
        ("2592000", "it says to wait 30 days, and webward", 3600.0, 3600.0),
    ],
)
async def test_a_retry_after_is_said_as_the_provider_sent_it(
    server: LocalServer, value: str, words: str, wait: float | None, held: float
) -> None:
    """An invalid Retry-After is none (the message says "try again later", and the provider
    is held for the default 5 s, not the hour's cap); a valid one past webward's cap of 32
    days is said as "32 days or more", not as the provider's word for 32 days."""
    server.routes[BRAVE_PATH] = brave_error(429, "RATE_LIMITED", headers={"Retry-After": value})
    async with _web() as web:
        brave = BraveProvider(BRAVE_KEY, partial(web.provider_request, "brave"), server.base)
        with pytest.raises(Refused) as err:
            await brave.search("q", 10)
        with pytest.raises(Refused) as again:  # the provider's hold, Brave not asked
            await brave.search("q", 10)
    assert err.value.retry_after == wait
    assert words in err.value.message
    assert again.value.retry_after is not None and held - 60 < again.value.retry_after <= held
    assert len(server.requests) == 1


def test_human_wait() -> None:
    """Waits are rounded up into tenths, seconds, minutes, hours or days: the one spelling
    every face's "retry in" uses, so an hour's hold is never "3600 s"."""
    assert [human_wait(s) for s in (0, 0.21, 9.96, 59.5, 150, 3600, 7300, 1419704)] == [
        "0.1 s",
        "0.3 s",
        "10 s",
        "60 s",
        "3 min",
        "60 min",
        "3 h",
        "17 days",
    ]
