"""``webward console``: the operator console for one person, on loopback."""

from __future__ import annotations

import argparse
import ipaddress
import sys
from typing import TYPE_CHECKING, Any

from ._errors import InvalidInput

if TYPE_CHECKING:  # imported when the command runs, not for `webward --help`
    from ._settings import Settings

HELP = "open the operator console (audit log, usage, hosts, policy) on loopback"
DESCRIPTION = """\
Serve the operator console for a local, single-user setup: the audit log with filters and
paging, usage charts, the top hosts with their limiter and breaker state, the policy in force
and the search provider. It listens on loopback only and prints a link holding a random
one-time token: the first visit trades it for a cookie, and the link stops working.

It reads the audit log the config names (audit.db in the state dir, or PostgreSQL with
[audit] postgres_dsn_env) and the limit state the command line writes (limits.db, or Redis
with [state] redis_url). A team gateway serves the same pages at /console to agents whose
[agents.NAME] has role = "admin" (`webward serve`)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .cli import port_number

    p.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="H",
        help="loopback address to listen on (default 127.0.0.1; ::1 also works)",
    )
    p.add_argument(
        "--port",
        default=0,
        type=port_number,
        metavar="P",
        help="port to listen on (default: any free one)",
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise InvalidInput(
            f"--host must be a loopback address such as 127.0.0.1, not {args.host!r}; to share "
            'the console, give an agent role = "admin" and use /console of `webward serve`'
        )
    if not 0 <= args.port <= 65535:
        raise InvalidInput(f"--port must be from 0 to 65535, not {args.port}")
    from ._extras import require

    for module in ("starlette", "uvicorn", "jinja2"):
        require(module, "serve", "`webward console`")
    import anyio

    anyio.run(_serve, settings, args.host, args.port)
    return 0


async def _serve(settings: Settings, host: str, port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import RedirectResponse
    from starlette.routing import Mount, Route

    from ._gateway import address_url, bind_socket
    from ._signals import stop_if_interrupted
    from .console import Console, OneTimeToken, open_audit_reader
    from .limits import open_limit_state

    # A Ctrl-C Python dropped while the console loaded: it never starts (anyio's loop takes
    # Ctrl-C from here on as a cancellation, which nothing drops).
    stop_if_interrupted()
    auth = OneTimeToken()
    # The limit store the command line's own reads use, so their breakers are the ones shown.
    state = open_limit_state(settings, "sqlite")
    reader = open_audit_reader(settings)
    # Built here, before anyone looks: on a large log this takes a while, and a page view
    # must not hold the audit's write lock (see AuditReader.prepare).
    await reader.prepare(build_large=True)
    console = Console(settings, reader, auth, lambda: state)

    async def home(request: object) -> RedirectResponse:
        return RedirectResponse("/console/", status_code=307)

    app = _this_machine_only(
        Starlette(routes=[Route("/", home), Mount("/console", app=console.app)])
    )
    sock = bind_socket(
        host,
        port,
        port_advice="choose another --port, or leave it out for a free one",
        host_advice="choose a loopback --host: 127.0.0.1 or ::1",
    )
    from .cli import is_closed

    print(
        f"webward console: open {address_url(sock)}/console/?token={auth.token}\n"
        "(the link works once; stop with Ctrl-C)",
        # The one way in: started without stderr (2>&-), it would be lost.
        file=sys.stdout if is_closed(sys.stderr) else sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        proxy_headers=False,
        server_header=False,
        lifespan="off",
    )
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        await console.aclose()
        await state.aclose()


def _this_machine_only(app: Any) -> Any:
    """``app`` answering only requests that name this machine (an address or ``localhost``)
    in their Host: a page the operator's browser opens elsewhere can reach the loopback
    console under a name of its own that resolves there (DNS rebinding)."""
    from starlette.responses import PlainTextResponse

    from ._addresses import names_this_machine

    refused = PlainTextResponse(
        "this console answers only to its loopback address, such as 127.0.0.1: open the link "
        "it printed",
        status_code=403,
    )

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not names_this_machine(scope):
            await refused(scope, receive, send)
            return
        await app(scope, receive, send)

    return guarded
