"""Search filters (allowed / blocked domains, freshness, country, language) through
``Web.search`` against the providers' local fakes: each mapped to the provider's documented
parameters or to query operators, refused by name where the provider cannot honour one, and
enforced on the hits whatever the provider did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_search import BRAVE_PATH, FakeBrave, FakeSearxng, FakeTavily, params, results
from localserver import LocalServer, serve

from webward import Settings, Web
from webward._credentials import EnvironmentStore
from webward._errors import InvalidInput, Refused
from webward.search import check_filters
from webward.testing import MemoryAuditSink

BRAVE_KEY = "BSAq1w2e3r4t5y6u7i8o9p0"
TAVILY_KEY = "tvly-dev-0123456789abcdef9f3a"

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with serve() as s:
        yield s


def _items() -> list[dict[str, Any]]:
    """Hits from three sites: docs.python.org, python.org itself and a blog elsewhere."""
    return (
        results(2, host="docs.python.org", prefix="Docs")
        + results(2, host="python.org", prefix="Home")
        + results(2, host="blog.example", prefix="Blog")
    )


def _web(server: LocalServer, provider: str, sink: MemoryAuditSink | None = None) -> Web:
    settings = Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected"},
            "search": {
                "provider": provider,
                "brave_url": server.base,
                "tavily_url": server.url("/tv"),
                "searxng_url": server.url("/sx"),
            },
        }
    )
    creds = EnvironmentStore({"BRAVE_SEARCH_API_KEY": BRAVE_KEY, "TAVILY_API_KEY": TAVILY_KEY})
    return Web(settings, audit=sink or MemoryAuditSink(), credentials=creds)


def _hosts(result: Any) -> set[str]:
    return {h.url.split("/")[2] for h in result.hits}


# ---- validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"allowed_domains": "python.org"}, "allowed_domains must be a list of domain names"),
        ({"blocked_domains": [5]}, "blocked_domains must be a list of domain names"),
        ({"allowed_domains": ["https://python.org/x"]}, "allowed_domains takes domain names"),
        ({"allowed_domains": ["*.python.org"]}, "allowed_domains takes domain names"),
        ({"allowed_domains": ["localhost"]}, "allowed_domains takes domain names"),
        (
            {"allowed_domains": [f"d{i}.example" for i in range(21)]},
            "allowed_domains takes at most 20",
        ),
        (
            {"allowed_domains": ["python.org"], "blocked_domains": ["Python.org."]},
            "python.org is both an allowed and a blocked domain",
        ),
        ({"freshness": "hour"}, "freshness must be one of day, week, month, year"),
        ({"country": "USA"}, "country must be a two-letter ISO 3166-1 code"),
        ({"language": "english"}, "language must be a two-letter ISO 639-1 code"),
    ],
)
async def test_bad_filters_are_refused_in_one_sentence_before_any_call(
    server: LocalServer, kwargs: dict[str, Any], message: str
) -> None:
    server.routes[BRAVE_PATH] = FakeBrave(_items(), BRAVE_KEY)
    sink = MemoryAuditSink()
    async with _web(server, "brave", sink) as web:
        with pytest.raises(InvalidInput) as exc:
            await web.search("python", **kwargs)
    assert str(exc.value).startswith(message)
    assert "\n" not in str(exc.value)
    assert server.requests == []
    assert [r.decision for r in sink.records] == ["refused"]


def test_a_long_bad_domain_is_shown_cut_with_a_mark() -> None:
    """A long value in a refusal is cut where an ellipsis says so, not mid-quote."""
    with pytest.raises(InvalidInput) as exc:
        check_filters(["0" * 253 + "!"])
    assert exc.value.message.endswith("…")


def test_filters_are_normalised() -> None:
    f = check_filters(["Docs.Python.org.", "bücher.example"], None, " WEEK", "de", "DE")
    assert f.allowed_domains == ("docs.python.org", "xn--bcher-kva.example")
    assert (f.freshness, f.country, f.language) == ("week", "DE", "de")
    assert f.keeps("https://a.docs.python.org/x") and not f.keeps("https://python.org/")
    assert not check_filters()


# ---- Brave: parameters for freshness, country and language; site: operators ---------------


async def test_brave_maps_every_filter(server: LocalServer) -> None:
    server.routes[BRAVE_PATH] = FakeBrave(_items(), BRAVE_KEY)
    async with _web(server, "brave") as web:
        result = await web.search(
            "asyncio tutorial",
            allowed_domains=["python.org", "blog.example"],
            blocked_domains=["docs.python.org"],
            freshness="week",
            country="de",
            language="ja",
        )
    [req] = server.requests
    p = params(req)
    assert p["q"] == "asyncio tutorial (site:python.org OR site:blog.example) -site:docs.python.org"
    assert (p["freshness"], p["country"], p["search_lang"]) == ("pw", "DE", "jp")
    assert _hosts(result) == {"python.org", "blog.example"}
    assert result.query == "asyncio tutorial"  # the operators are the adapter's, not the query


@pytest.mark.parametrize(
    ("filters", "named"),
    [
        ({"language": "sw"}, "language sw"),
        ({"language": "fa"}, "language fa"),
        ({"country": "KE"}, "country KE"),
    ],
)
async def test_brave_refuses_a_language_or_country_it_does_not_take_before_calling(
    server: LocalServer, filters: dict[str, str], named: str
) -> None:
    """A well-formed code Brave does not list would come back as a 422 after the call: it is
    refused by name before; Greek (el) and Norwegian (no, Brave's nb) are Brave's."""
    server.routes[BRAVE_PATH] = FakeBrave(_items(), BRAVE_KEY)
    async with _web(server, "brave") as web:
        with pytest.raises(InvalidInput, match=f"cannot filter by {named}"):
            await web.search("python", **filters)
        assert server.requests == []
        await web.search("python", language="el", country="gr")
        await web.search("python", language="no")
    assert [params(r)["search_lang"] for r in server.requests] == ["el", "nb"]
    assert params(server.requests[0])["country"] == "GR"


@pytest.mark.parametrize(("freshness", "code"), [("day", "pd"), ("month", "pm"), ("year", "py")])
async def test_brave_freshness_codes(server: LocalServer, freshness: str, code: str) -> None:
    server.routes[BRAVE_PATH] = FakeBrave(_items(), BRAVE_KEY)
    async with _web(server, "brave") as web:
        await web.search("python", freshness=freshness)
    assert params(server.requests[0])["freshness"] == code


async def test_brave_refuses_domains_that_push_the_query_past_its_limit(
    server: LocalServer,
) -> None:
    server.routes[BRAVE_PATH] = FakeBrave(_items(), BRAVE_KEY)
    many = [f"site{i}-with-a-long-name.example" for i in range(20)]
    async with _web(server, "brave") as web:
        with pytest.raises(InvalidInput, match="the domain filters counting as site: operators"):
            await web.search("python", allowed_domains=many)
    assert server.requests == []


async def test_an_unfiltered_brave_search_sends_no_filter_parameters(server: LocalServer) -> None:
    server.routes[BRAVE_PATH] = FakeBrave(_items(), BRAVE_KEY)
    async with _web(server, "brave") as web:
        result = await web.search("python")
    p = params(server.requests[0])
    assert p["q"] == "python"
    assert not {"freshness", "country", "search_lang"} & set(p)
    assert len(result.hits) == 6


# ---- Tavily: its own domain, time and country fields; no language -------------------------


async def test_tavily_maps_domains_freshness_and_country(server: LocalServer) -> None:
    fake = FakeTavily(_items(), TAVILY_KEY)
    server.routes["/tv/search"] = fake
    async with _web(server, "tavily") as web:
        result = await web.search(
            "python",
            allowed_domains=["python.org"],
            blocked_domains=["docs.python.org"],
            freshness="month",
            country="US",
        )
    [body] = fake.bodies
    assert body["query"] == "python"
    assert body["include_domains"] == ["python.org"]
    assert body["exclude_domains"] == ["docs.python.org"]
    assert (body["time_range"], body["country"]) == ("month", "united states")
    assert _hosts(result) == {"python.org"}


async def test_tavily_refuses_a_language_and_an_unmapped_country_by_name(
    server: LocalServer,
) -> None:
    server.routes["/tv/search"] = FakeTavily(_items(), TAVILY_KEY)
    async with _web(server, "tavily") as web:
        with pytest.raises(InvalidInput) as lang:
            await web.search("python", language="de")
        with pytest.raises(InvalidInput) as country:
            await web.search("python", country="AQ")
    assert str(lang.value).startswith("the tavily search provider cannot filter by language (de)")
    assert str(country.value).startswith("the tavily search provider cannot filter by country AQ")
    assert server.requests == []


# ---- SearXNG: time_range and language; site: operators; week and a bare country refused ----


async def test_searxng_maps_freshness_language_country_and_domains(server: LocalServer) -> None:
    server.routes["/sx/search"] = FakeSearxng(_items())
    async with _web(server, "searxng") as web:
        result = await web.search(
            "python",
            blocked_domains=["blog.example"],
            freshness="year",
            language="de",
            country="ch",
        )
    p = params(server.requests[0])
    assert p["q"] == "python -site:blog.example"
    assert (p["time_range"], p["language"]) == ("year", "de-CH")
    assert "blog.example" not in _hosts(result)


async def test_searxng_refuses_week_and_a_country_without_language_by_name(
    server: LocalServer,
) -> None:
    server.routes["/sx/search"] = FakeSearxng(_items())
    async with _web(server, "searxng") as web:
        with pytest.raises(InvalidInput) as week:
            await web.search("python", freshness="week")
        with pytest.raises(InvalidInput) as country:
            await web.search("python", country="CH")
    assert str(week.value).startswith("the searxng search provider cannot filter by freshness week")
    assert str(country.value).startswith(
        "the searxng search provider cannot filter by country CH alone"
    )
    assert server.requests == []


async def test_hits_outside_the_domain_filters_never_reach_the_model(server: LocalServer) -> None:
    """Engines behind a SearXNG instance may ignore site: operators: the core drops the hits
    the filters exclude all the same."""
    server.routes["/sx/search"] = FakeSearxng(_items(), honour_sites=False)
    async with _web(server, "searxng") as web:
        allowed = await web.search("python", allowed_domains=["python.org"])
        blocked = await web.search("python", blocked_domains=["python.org"])
    assert _hosts(allowed) == {"docs.python.org", "python.org"}
    assert _hosts(blocked) == {"blog.example"}
    assert "blog.example" not in allowed.content
    assert "python.org" not in json.dumps(blocked.to_wire())


async def test_no_provider_is_still_not_configured_with_filters(tmp_path: Path) -> None:
    settings = Settings().replace({"policy": {"default_tier": "connected"}})
    async with Web(settings, audit=MemoryAuditSink(), credentials=EnvironmentStore({})) as web:
        with pytest.raises(Refused, match="web search is not configured"):
            await web.search("python", freshness="day")


def test_cli_search_filters(tmp_path: Path, server: LocalServer) -> None:
    """`webward search` passes its filter flags to the provider and refuses bad ones by name."""
    server.routes[BRAVE_PATH] = FakeBrave(_items(), BRAVE_KEY)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("WEBWARD_", "BRAVE_"))},
        "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"),
        "HOME": str(tmp_path),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "WEBWARD_STATE_DIR": str(tmp_path / "state"),
        "WEBWARD_ALLOW_RANGES": "127.0.0.1/32",
        "WEBWARD_TIER": "connected",
        "WEBWARD_BRAVE_URL": server.base,
        "BRAVE_SEARCH_API_KEY": BRAVE_KEY,
    }

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "webward", "search", "python", *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )

    ok = cli(
        "--allow-domain", "python.org", "--block-domain", "docs.python.org",
        "--freshness", "day", "--country", "gb", "--language", "en", "--json",
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert {h["url"].split("/")[2] for h in json.loads(ok.stdout)["hits"]} == {"python.org"}
    p = params(server.requests[-1])
    assert p["q"] == "python site:python.org -site:docs.python.org"
    assert (p["freshness"], p["country"], p["search_lang"]) == ("pd", "GB", "en")
    bad = cli("--freshness", "hour")
    assert bad.returncode == 2
    assert bad.stderr.strip() == "webward: --freshness must be one of day, week, month, year"


async def test_the_agent_tool_passes_the_filters(server: LocalServer) -> None:
    from webward.agents import ToolContext, execute_tool

    server.routes[BRAVE_PATH] = FakeBrave(_items(), BRAVE_KEY)
    async with _web(server, "brave") as web:
        context = ToolContext(web, "research", "connected")
        ok = await execute_tool(
            "web_search",
            {"query": "python", "blocked_domains": ["python.org"], "freshness": None},
            context,
        )
        bad = await execute_tool("web_search", {"query": "python", "country": "usa"}, context)
    assert not ok.is_error and "blog.example" in ok.text and "python.org/" not in ok.text
    assert params(server.requests[0])["q"] == "python -site:python.org"
    assert bad.is_error and bad.text.startswith("country must be a two-letter ISO 3166-1 code")


async def test_a_provider_without_filters_refuses_them_by_name() -> None:
    """An injected adapter written before filters existed still serves unfiltered searches,
    and a filtered one is refused by name rather than crashing."""
    from webward._models import Hit

    class OldProvider:
        name = "old"

        async def search(self, query: str, limit: int) -> list[Hit]:
            return [Hit("T", "https://example.org/", "s")]

    settings = Settings().replace({"policy": {"default_tier": "connected"}})
    async with Web(settings, audit=MemoryAuditSink(), search_provider=OldProvider()) as web:
        assert len((await web.search("python")).hits) == 1
        with pytest.raises(InvalidInput, match=r"^the old search provider takes no filters"):
            await web.search("python", freshness="day")


async def test_an_injected_providers_hits_are_cleaned_as_ours_are() -> None:
    """An adapter of one's own may hand back anything: a URL with a line break or no host, a
    title of ten million characters or None, an answer that is no list. Its hits get what our
    adapters' get (one line each, within its cap; a hit without a usable URL dropped), and an
    answer that is no list is the provider's failure, audited, never a bare TypeError."""
    from webward import UpstreamError
    from webward._models import Hit

    answers: list[Any] = [
        [
            Hit("Split", "http://x.org\njavascript:alert(1)", "s"),
            Hit("No host", "http://", "s"),
            Hit("T" * 10_000_000, "https://example.org/long", "snippet\nwith a break"),
            Hit(None, "https://example.org/none", None),  # type: ignore[arg-type]
        ],
        None,
    ]

    class OwnProvider:
        name = "own"

        async def search(self, query: str, limit: int) -> Any:
            return answers.pop(0)

    settings = Settings().replace({"policy": {"default_tier": "connected"}})
    audit = MemoryAuditSink()
    async with Web(settings, audit=audit, search_provider=OwnProvider()) as web:
        result = await web.search("python")
        with pytest.raises(UpstreamError, match="answered with NoneType, not a list of hits"):
            await web.search("python")
    urls = [hit.url for hit in result.hits]
    assert "http://" not in urls and all("\n" not in u and " " not in u for u in urls)
    long, none = [h for h in result.hits if h.url.startswith("https://example.org/")]
    assert len(long.title) == 300 and long.snippet == "snippet with a break"
    assert none.title == "https://example.org/none" and none.snippet == ""
    assert [(r.decision, r.reason) for r in audit.records] == [
        ("allowed", "allowed"),
        ("failed", "provider_malformed"),
    ]
