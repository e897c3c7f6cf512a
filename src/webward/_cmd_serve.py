"""``webward serve``: the HTTP gateway many agents share."""

from __future__ import annotations

import argparse
import gc
import sys
from typing import TYPE_CHECKING

from ._errors import InvalidInput

if TYPE_CHECKING:  # imported when the command runs, not for `webward --help`
    from ._settings import Settings

if TYPE_CHECKING:
    from ._serving import Stack

HELP = "run the HTTP gateway (bearer tokens map to agents and tiers in config)"
DESCRIPTION = """\
Run the HTTP gateway: POST /v1/capabilities/web:page.fetch@1 and
POST /v1/capabilities/web:search.query@1, with the OpenAPI document at /openapi.json,
/healthz (liveness) and /readyz (503 while the audit or limit store does not answer: point a
load balancer's health check there). Each request names its agent with
`Authorization: Bearer <token>`; config keeps the token's SHA-256 as [agents.NAME]
token_sha256 beside the agent's tier.

Make a token's hash with `webward serve --hash-token` (reads the token on stdin). Serve on
loopback and put TLS and any public address on a reverse proxy in front. Needs the serve
extra: pip install 'webward[serve]'.

GET /metrics answers Prometheus metrics (loopback clients only, unless [observability]
metrics_token_sha256 names a token), and each call writes one JSON line to stderr
([observability] call_log). Traces go over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set.
See docs/operations.md.

The server parses HTTP with httptools and runs on uvloop when they are installed (the serve
extra brings them; uvloop is not on Windows), else on h11 and asyncio: the start-up line says
which."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .cli import port_number

    p.add_argument(
        "--host", default="127.0.0.1", metavar="H", help="address to listen on (default 127.0.0.1)"
    )
    p.add_argument(
        "--port",
        default=8080,
        type=port_number,
        metavar="P",
        help="port to listen on (default 8080)",
    )
    p.add_argument(
        "--hash-token",
        action="store_true",
        help="read a token on stdin, print its SHA-256 for [agents.NAME] token_sha256, and exit",
    )


CONFIG_HELP = "the config file (TOML) to read (not read with --hash-token)"


#: Below this many characters `--hash-token` warns that the token could be guessed
#: (``secrets.token_urlsafe(16)`` makes 22).
MIN_TOKEN_CHARS = 20


def reads_config(args: argparse.Namespace) -> bool:
    """Whether this command line reads the config: a token's hash needs none."""
    return not args.hash_token


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ._tokens import hash_token

    if args.hash_token:
        from ._cmd_credentials import read_stdin_line

        token = read_stdin_line("token").strip()
        if not token:
            raise InvalidInput(
                "no token on stdin: pipe the token in, for example "
                '`echo "$TOKEN" | webward serve --hash-token`'
            )
        print(hash_token(token))
        if len(token) < MIN_TOKEN_CHARS:
            # The gateway and its console's login take guesses as fast as they come (no
            # lockout: behind a proxy every agent shares one address, and one guesser would
            # lock them all out), so only a token nobody can guess keeps an agent's tier.
            print(
                f"webward serve: warning: a token of {len(token)} characters can be found by "
                "guessing, which the gateway and its console's login answer as fast as they "
                "come; use a random one, such as the output of `python3 -c 'import secrets; "
                "print(secrets.token_urlsafe(32))'`",
                file=sys.stderr,
            )
        return 0
    if not 0 <= args.port <= 65535:
        raise InvalidInput(f"--port must be from 0 to 65535, not {args.port}")
    from ._extras import require

    for module in ("starlette", "uvicorn", "jinja2"):
        require(module, "serve", "`webward serve`")
    from ._serving import fastest_stack, run_server

    stack = fastest_stack()
    run_server(stack, _serve, settings, args.host, args.port, stack)
    return 0


async def _serve(settings: Settings, host: str, port: int, stack: Stack) -> None:
    import uvicorn

    from ._serving import asyncio_only, http_protocol, serve

    with asyncio_only():
        from ._gateway import address_url, bind_socket, create_app, require_tokens

    require_tokens(settings)
    sock = bind_socket(
        host,
        port,
        port_advice="choose another --port (--port 0 picks a free one)",
        host_advice="choose another --host (127.0.0.1: this machine only; 0.0.0.0: every "
        "interface)",
    )

    from ._addresses import plain_http_warning

    warning = plain_http_warning(
        "webward serve", host, sock.getsockname()[1], "agents' bearer tokens and console logins"
    )
    if warning is not None:
        print(warning, file=sys.stderr, flush=True)
    from ._serving import few_files_warning

    few_files = few_files_warning("webward serve")
    if few_files is not None:
        print(few_files, file=sys.stderr, flush=True)

    def ready() -> None:  # once the Web is open and its workers started: ready to answer
        print(
            f"webward serve: gateway on {address_url(sock)} (openapi at /openapi.json; "
            f"{stack.describe()})",
            file=sys.stderr,
            flush=True,
        )

    app = create_app(settings, ready=ready)
    config = uvicorn.Config(
        app,
        http=http_protocol(stack),
        log_level="warning",
        access_log=False,  # at log level warning nothing would be printed; skip the call
        proxy_headers=False,  # behind a proxy, webward sees the proxy's address; no X-Forwarded-For
        server_header=False,
        ws="none",  # the gateway speaks no WebSocket: uvicorn need not import a library for it
        lifespan="on",
        timeout_graceful_shutdown=10,
    )
    # Everything loaded so far (modules, the converter's tables, the app) lives as long as
    # the server: moved out of the collector's sight, so that its full passes stop walking
    # it. Those passes were the gateway's slowest 1 % of answers (p99 27 ms -> 14 ms).
    gc.freeze()
    # SIGHUP and the rest of _signals.ENDING_SIGNALS shut it down as gracefully as SIGTERM does.
    await serve(config, [sock])
