"""``webward fetch URL``: read one page through the audited door."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when the command runs, not for `webward --help`
    from ._settings import Settings

HELP = "read one public page (text window, image or PDF) through the guard"
DESCRIPTION = """\
Read one page through webward's guard, policy, limits and audit. HTML comes back as readable
Markdown in windows of at most [limits] max_fetch_text_chars characters (40,000 by default):
pass --offset to continue where the header says (--max-chars asks for smaller windows), or
pass --query to get the passages that best match some words, each with the offset to read on
from. The page waits in the state dir's cache ([limits] page_cache_ttl_s), so later windows
and queries send no request; --max-age N serves it only while younger than N seconds (0 asks
the server again; a page with an ETag or Last-Modified is revalidated, and a 304 renews it
without a download). Images and PDFs come back as parts (their bytes only with --json; a
PDF's text is printed)."""


# The core's argument names, as its messages say them, and the flags a person typed.
FLAG_NAMES = {
    "offset": "--offset",
    "max_chars": "--max-chars",
    "max_age": "--max-age",
    "query": "--query",
    "agent": "--agent",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", metavar="URL", help="an absolute http:// or https:// URL")
    p.add_argument(
        "--offset", default="0", metavar="N", help="start of the window, in characters (default 0)"
    )
    p.add_argument(
        "--max-chars",
        metavar="N",
        help="the most characters per window, 1 to [limits] max_fetch_text_chars (the default)",
    )
    p.add_argument(
        "--query",
        metavar="WORDS",
        help="find in page: print the passages best matching WORDS, with their offsets",
    )
    p.add_argument(
        "--max-age",
        metavar="S",
        help="serve the cached reading only if younger than S seconds (0: ask the server again)",
    )
    p.add_argument("--links", action="store_true", help="also list the page's outbound links")
    p.add_argument(
        "--screenshot",
        action="store_true",
        help="also return a 1280x800 PNG screenshot (tier full; needs Debian's chromium and "
        "pip install 'webward[render]')",
    )
    p.add_argument(
        "--tier", metavar="T", help="reach tier: as-owner, connected or full (default: the agent's)"
    )
    p.add_argument("--agent", default="cli", metavar="NAME", help="the agent acting (default cli)")
    p.add_argument(
        "--session",
        metavar="NAME",
        help="the session of this call (the URLs it has seen, its session budgets); the URL "
        "typed here joins it",
    )
    p.add_argument("--json", action="store_true", help="print the result model as JSON")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from .cli import run_call  # Ctrl-C pressed again cannot cut the cancelled call's record

    return run_call(_run, args, settings)


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from ._capabilities import FETCH
    from ._errors import WebwardError
    from ._parts import part_summary, tool_result_text
    from ._state_cache import SQLitePageCache, SQLiteRobotsStore, StateCache
    from ._web import Web
    from .cli import empty_tier, print_json, refuse_call_log_on_json_stdout
    from .limits import open_limit_state

    # The string goes to Web.fetch as it is: check_offset accepts ASCII digit strings and
    # refuses the rest by name (str.isdigit() + int() would take "١٢" and crash on "²").
    offset: object = args.offset
    # Each command is a new process: pages and robots.txt answers wait in the state dir for
    # the next --offset (replicas sharing a Redis share its page cache instead).
    store = StateCache(settings.state.path())
    page_cache = (
        None if settings.state.redis_url else SQLitePageCache.from_limits(store, settings.limits)
    )
    # A URL pasted with a space or a newline around it, read as every face reads one (the
    # agent tools, MCP, the gateway); the Python API takes a URL as given.
    args.url = args.url.strip() or args.url
    try:
        async with Web(
            settings,
            limit_state=open_limit_state(settings, kind="sqlite"),
            page_cache=page_cache,
            robots_store=SQLiteRobotsStore(store),
            face="cli",  # the agent named by --agent, asserted by whoever runs the command
        ) as web:
            refuse_call_log_on_json_stdout(args.json, web, settings)
            refusal = empty_tier(args.tier)
            if refusal is not None:  # refused as the core refuses --tier bogus: audited
                raise await web.reject(
                    FETCH, args.agent, None, args.url, refusal, session=args.session
                )
            if args.session is not None:  # the user typed the URL: it is the session's own input
                try:
                    await web.declare_urls(args.session, args.url, agent=args.agent)
                except WebwardError as exc:  # a bad --session: refused, and audited as the call
                    raise await web.reject(
                        FETCH, args.agent, args.tier, args.url, exc, session=args.session
                    ) from None
            page = await web.fetch(
                args.url,
                offset=offset,  # type: ignore[arg-type]
                include_links=args.links,
                include_screenshot=args.screenshot,
                agent=args.agent,
                tier=args.tier,
                # Strings go through as they are: the core takes ASCII digits and refuses the rest.
                max_chars=args.max_chars,
                query=args.query,
                session=args.session,
                max_age=args.max_age,
            )
    finally:
        await store.aclose()  # also when Redis holds the pages and robots.txt used it
    if args.json:
        print_json(page.to_wire(), indent=2)
        return 0
    print(f"{page.final_url}  {page.status}  {page.content_type}")
    if page.title:
        print(f"title: {page.title}")
    for part in page.parts:
        print(tool_result_text([part]))
    if page.screenshot is not None:  # the PNG itself only with --json
        print(f"screenshot: {part_summary(page.screenshot)}")
    elif args.screenshot and page.window.offset > 0:
        print("webward: no screenshot: it comes with the first window (offset 0)", file=sys.stderr)
    print()
    print(page.content)
    for part in page.parts:
        extracted = page.document_text(part)  # a PDF's text, in its own envelope
        if extracted is not None:
            print()
            print(extracted)
    links = page.links_text()  # the anchors' text is the page's: in its own envelope
    if links is not None:
        print()
        print(links)
    # A summary line is all a terminal gets of an image: say where its bytes are.
    if any(part.type == "image" for part in page.parts):
        print("webward: the image's bytes come with --json (base64, parts[].data)", file=sys.stderr)
    if page.screenshot is not None:
        print(
            "webward: the screenshot's PNG comes with --json (base64, screenshot.data)",
            file=sys.stderr,
        )
    if page.window.next_offset is not None:
        # The header speaks to a model ("pass offset=N"); a person types the flags, and the
        # window size asked for with them (without it, the next window is the default's).
        keep = f" --max-chars {args.max_chars}" if args.max_chars is not None else ""
        if args.query is not None:  # passages, each with the offset to read on from
            hint = f"read the page on from a passage with --offset N{keep}, N as it names"
        else:
            hint = f"more of this page with --offset {page.window.next_offset}{keep}"
        print(f"webward: {hint}", file=sys.stderr)
    return 0
