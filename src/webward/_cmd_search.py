"""``webward search QUERY``: run a web search through the configured provider."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when the command runs, not for `webward --help`
    from ._settings import Settings

HELP = "run a web search through the configured provider (tier connected or full)"
DESCRIPTION = """\
Run a web search through webward's policy, limits and audit. The provider is --provider, else
[search] provider / WEBWARD_SEARCH_PROVIDER, else the first with a credential (Brave, Tavily,
then SearXNG when [search] searxng_url is set). Keys come from BRAVE_SEARCH_API_KEY /
TAVILY_API_KEY, the OS keyring or `webward credentials set NAME`. Search needs the tier
connected or full. --allow-domain, --block-domain, --freshness, --country and --language narrow
the search; a filter the provider cannot honour is refused by name. The hits (titles, URLs,
snippets: the web's words) are printed inside the untrusted-content envelope, as a model reads
them, after one line of webward's own; --json prints the result model, whose content is that
envelope."""


# The core's argument names, as its messages say them, and the flags a person typed.
FLAG_NAMES = {
    "query": "QUERY",
    "limit": "--limit",
    "allowed_domains": "--allow-domain",
    "blocked_domains": "--block-domain",
    "freshness": "--freshness",
    "country": "--country",
    "language": "--language",
    "agent": "--agent",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .search import PROVIDERS

    p.add_argument(
        "query",
        metavar="QUERY",
        help="what to search for (1 to [limits] max_query_chars characters, 512 by default)",
    )
    p.add_argument("--limit", default="10", metavar="N", help="how many hits, 1 to 50 (default 10)")
    # Checked by the core (any case; an unknown name is refused in one sentence, audited,
    # and in the JSON error shape with --json), not by argparse's usage error.
    p.add_argument("--provider", metavar="P", help=f"one of {', '.join(PROVIDERS)}")
    p.add_argument(
        "--allow-domain",
        action="append",
        metavar="DOMAIN",
        help="only hits from DOMAIN and its subdomains (repeat for more)",
    )
    p.add_argument(
        "--block-domain",
        action="append",
        metavar="DOMAIN",
        help="no hits from DOMAIN or its subdomains (repeat for more)",
    )
    p.add_argument(
        "--freshness",
        metavar="WINDOW",
        help="only pages from the past day, week, month or year",
    )
    p.add_argument("--country", metavar="CC", help="a two-letter ISO 3166-1 code such as US")
    p.add_argument("--language", metavar="LL", help="a two-letter ISO 639-1 code such as en")
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
    from .cli import run_call  # Ctrl-C pressed again cannot cut the cancelled call's record

    return run_call(_run, args, settings)


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from ._capabilities import SEARCH
    from ._errors import Refused
    from ._web import Web
    from .cli import empty_tier, print_json, refuse_call_log_on_json_stdout
    from .limits import open_limit_state

    # The string goes through as it is: the core takes ASCII digits and refuses the rest by
    # name, audited (str.isdigit() + int() took "١٢" and crashed, unaudited, on "²").
    limit: object = args.limit
    async with Web(
        settings,
        limit_state=open_limit_state(settings, kind="sqlite"),
        face="cli",  # the agent named by --agent, asserted by whoever runs the command
    ) as web:
        refuse_call_log_on_json_stdout(args.json, web, settings)
        refusal = empty_tier(args.tier)
        if refusal is not None:  # refused as the core refuses --tier bogus: audited
            raise await web.reject(
                SEARCH, args.agent, None, args.query, refusal, session=args.session
            )
        try:
            result = await web.search(
                args.query,
                limit=limit,  # type: ignore[arg-type]
                agent=args.agent,
                tier=args.tier,
                provider=args.provider,
                allowed_domains=args.allow_domain,
                blocked_domains=args.block_domain,
                freshness=args.freshness,
                country=args.country,
                language=args.language,
                session=args.session,
            )
        except Refused as exc:
            if exc.code != "not_configured":
                raise
            # The core's message names the agents' tool; here the person ran a command.
            raise Refused(
                exc.message.replace("with web_fetch", "with `webward fetch URL`"),
                code=exc.code,
                reason=exc.reason,
            ) from None
    if args.json:
        print_json(result.to_wire(), indent=2)
        return 0
    # Titles, snippets and even URLs are the provider's words (and the pages'): they come
    # inside the untrusted-content envelope the model reads, as `webward fetch` prints a page.
    # Outside it only webward's own line: the count, the provider and the query as typed.
    noun = "hit" if len(result.hits) == 1 else "hits"
    print(f"{len(result.hits)} {noun} from {result.provider} for {result.query!r}")
    print()
    print(result.content)
    return 0
