"""``webward search QUERY``: run a web search through the configured provider."""

from __future__ import annotations

import argparse
import json

import anyio

from ._settings import Settings
from .search import PROVIDERS

HELP = "run a web search through the configured provider (tier connected or full)"
DESCRIPTION = """\
Run a web search through webward's policy, limits and audit. The provider is --provider, else
[search] provider / WEBWARD_SEARCH_PROVIDER, else the first with a credential (Brave, Tavily,
then SearXNG when [search] searxng_url is set). Keys come from BRAVE_SEARCH_API_KEY /
TAVILY_API_KEY, the OS keyring or `webward credentials set NAME`. Search needs the tier
connected or full."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", metavar="QUERY", help="what to search for (1 to 512 characters)")
    p.add_argument("--limit", default="10", metavar="N", help="how many hits, 1 to 50 (default 10)")
    p.add_argument(
        "--provider", choices=PROVIDERS, metavar="P", help=f"one of {', '.join(PROVIDERS)}"
    )
    p.add_argument(
        "--tier", metavar="T", help="reach tier: as-owner, connected or full (default: the agent's)"
    )
    p.add_argument("--agent", default="cli", metavar="NAME", help="the agent acting (default cli)")
    p.add_argument(
        "--session",
        metavar="NAME",
        help="the session of this call (its session budgets); the hits join the URLs it has seen",
    )
    p.add_argument("--json", action="store_true", help="print the result model as JSON")


def run(args: argparse.Namespace, settings: Settings) -> int:
    return anyio.run(_run, args, settings)


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from ._limits import open_limit_state
    from ._web import Web

    # A string that is not a whole number goes through as is, so the core refuses it by name.
    limit: object = int(args.limit) if args.limit.isdigit() else args.limit
    async with Web(settings, limit_state=open_limit_state(settings, kind="sqlite")) as web:
        result = await web.search(
            args.query,
            limit=limit,  # type: ignore[arg-type]
            agent=args.agent,
            tier=args.tier,
            provider=args.provider,
            session=args.session,
        )
    if args.json:
        print(json.dumps(result.to_wire(), ensure_ascii=False, indent=2))
        return 0
    noun = "hit" if len(result.hits) == 1 else "hits"
    print(f"{len(result.hits)} {noun} from {result.provider} for {result.query!r}")
    for i, hit in enumerate(result.hits, 1):
        print()
        print(f"{i:>3}. {hit.title}")
        print(f"     {hit.url}")
        if hit.snippet:
            print(f"     {hit.snippet}")
        if hit.published:
            print(f"     published: {hit.published}")
    return 0
