"""``webward mcp``: serve the web_fetch and web_search tools to an MCP client."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when the command runs, not for `webward --help`
    from ._settings import Settings

HELP = "serve web_fetch and web_search over MCP (stdio, or streamable HTTP with --http)"
DESCRIPTION = """\
Serve the tools web_fetch and web_search to an MCP client (a desktop assistant or an IDE
agent). By default the protocol runs on stdin/stdout: register `webward mcp` as the server's
command. With --http HOST:PORT it serves streamable HTTP at http://HOST:PORT/mcp instead
(127.0.0.1 unless named; DNS-rebinding protection is always on).

The agent name and reach tier come from these flags or the config file, never from the
client. Over HTTP, when config gives agents bearer tokens ([agents.NAME] token_sha256, as for
`webward serve`), every request must carry one and runs as that token's agent and tier; the
metadata clients discover it by is at /.well-known/oauth-protected-resource/mcp. Without
tokens, --http listens on loopback only.

One process keeps one set of rate limits, circuit breakers, page cache and audit log for all
its sessions. Each call writes one JSON line to stderr ([observability] call_log); with
--http, GET /metrics serves Prometheus metrics (see docs/operations.md). Needs the mcp extra:
pip install 'webward[mcp]'."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ._settings import TIERS

    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP on HOST:PORT (for example 127.0.0.1:8000) instead of stdio",
    )
    p.add_argument(
        "--agent",
        metavar="NAME",
        help="the agent acting, for policy and audit (default mcp; not with HTTP tokens)",
    )
    p.add_argument(
        "--tier",
        choices=TIERS,
        metavar="T",
        help="reach tier: as-owner, connected or full (default: the agent's tier in config; "
        "not with HTTP tokens)",
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ._errors import InvalidInput
    from ._settings import AGENT_NAME_RULE, is_agent_name, refuse_alike_agent

    # Checked before the server starts: a bad name started it, then refused every tool call;
    # an empty one ran it as "mcp" in silence.
    if args.agent is not None and (not args.agent.strip() or not is_agent_name(args.agent)):
        raise InvalidInput(f"--{AGENT_NAME_RULE}")
    if args.agent is not None:  # a near miss of a configured agent: before the server starts
        refuse_alike_agent(args.agent, settings.agents)
    from ._extras import require

    require("mcp", "mcp", "`webward mcp`")
    from ._serving import asyncio_only

    with asyncio_only():
        from ._mcp import run as run_mcp

    from .cli import is_closed

    if args.http is None and (sys.stdin is None or is_closed(sys.stdout)):
        # Started without the pipe a client speaks on (`webward mcp >&-`, `<&-`): stdout
        # closed failed in the MCP library as a bug (AttributeError), stdin closed served
        # nothing and exited 0 in silence. No call was made, so there is none to audit.
        closed = "stdin" if sys.stdin is None else "stdout"
        raise InvalidInput(
            f"{closed} is closed, and without --http MCP runs on stdin and stdout; start "
            "`webward mcp` from an MCP client (which gives it both pipes), or serve over "
            "HTTP with --http 127.0.0.1:8765"
        )
    if args.http is None and sys.stdin is not None and sys.stdin.isatty():
        # Started at a terminal (a person trying the command): the protocol waits on stdin
        # in silence, which looked like a hang. Said on stderr, which no client reads as MCP.
        print(
            "webward mcp: serving MCP on stdin and stdout, for an MCP client that starts "
            "`webward mcp` itself (register it as the server's command); stop with Ctrl-D "
            "or Ctrl-C",
            file=sys.stderr,
            flush=True,
        )
    run_mcp(settings, http=args.http, agent=args.agent, tier=args.tier)
    return 0
