"""The console's pages: server-rendered HTML and SVG, no script, one stylesheet.

Everything shown comes from the audit log, which holds attacker-chosen text (URLs, queries,
agent names, reasons): Jinja2 escapes every value (autoescape), the ``shown`` filter writes
control and bidi characters out as escapes, and the Content-Security-Policy allows nothing
but this app's own stylesheet, so even a missed escape could run nothing and load nothing.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

import anyio
import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._cmd_audit import cell, name_cell, parse_since, refused_hosts
from .._errors import InvalidInput, WebwardError
from .._settings import TIERS, Settings
from .._tokens import bearer_token
from .._urls import ascii_host
from ..audit import (
    DECISIONS,
    FACES,
    AuditRecord,
    shared_target,
    shared_wire,
    unreadable_note,
)
from ..limits import HostState, LimitState
from ._auth import LIVE_KEEP_S, Check, ConsoleAuth
from ._charts import line_chart, reason_rows, stacked_chart
from ._queries import FETCH, SEARCH, AuditFilter, AuditReader, HostCount

__all__ = ["COOKIE", "CSP", "Console"]

COOKIE = "webward_console"
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'none'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would make the form's Origin "null"
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
_RAW_HEADERS = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in _HEADERS.items()]


class _SecureHeaders:
    """Every answer of the console carries :data:`_HEADERS`, views' and Starlette's alike
    (404, 405, redirects, a 500); a view's own value of one stays (the stylesheet's
    Cache-Control)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                have = {name.lower() for name, _ in headers}
                headers += [(k, v) for k, v in _RAW_HEADERS if k not in have]
                message = {**message, "headers": headers}
            await send(message)

        await self._app(scope, receive, secured)


PAGE_SIZE = 50
#: Agents drawn as lines of their own on the usage chart (the palette's eight colours): past
#: that, the busiest seven and one line for the others, in the last colour (grey). A library
#: caller or an MCP client may name agents freely: 100,000 of them in a day made a 41 MB page
#: that took seconds to serve and more to draw.
AGENT_LINES = 8
_MAX_FIELD = 2048
_MAX_FORM_BYTES = 4096
#: Usage windows: name -> (bucket seconds, buckets).
RANGES = {"1h": (60, 60), "24h": (3600, 24), "7d": (3600 * 6, 28)}
_CAPABILITIES = {"fetch": FETCH, "search": SEARCH}


def _busiest(by_agent: dict[str, list[int]]) -> dict[str, list[int]]:
    """Every agent by name, or past :data:`AGENT_LINES` the busiest but one and the rest summed."""
    if len(by_agent) <= AGENT_LINES:
        return dict(sorted(by_agent.items()))
    ranked = sorted(by_agent.items(), key=lambda item: (-sum(item[1]), item[0]))
    shown = dict(sorted(ranked[: AGENT_LINES - 1]))
    rest = [counts for _, counts in ranked[AGENT_LINES - 1 :]]
    shown[f"{len(rest):,} other agents"] = [sum(bucket) for bucket in zip(*rest, strict=True)]
    return shown


def _time(value: dt.datetime | float | None) -> str:
    if value is None or value == 0:
        return "-"
    when = value if isinstance(value, dt.datetime) else dt.datetime.fromtimestamp(value, dt.UTC)
    return when.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("webward.console", "templates"),
        autoescape=True,  # every value, in every template
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shown"] = lambda v: cell("" if v is None else str(v))
    # A record's target: a fetched URL's secret query values REDACTED (see record.html), its
    # host in the ASCII form the read named (a host in Cyrillic letters read as google.com).
    env.filters["target"] = lambda r: cell(_shown_target(r))
    # An agent's or a session's name: quoted, with escapes, when it has outer white space or
    # a space that is not a plain one, so that `bob ` is not read as `bob`.
    env.filters["name"] = lambda v: "-" if v is None else name_cell(str(v))
    env.filters["when"] = _time
    # How many hosts a render's gate refused (how many of them internal): a call whose page
    # tried an internal address is "allowed" and would show nothing else in the list.
    env.filters["refused_hosts"] = refused_hosts
    # A record id in a link's path: every character but letters and digits escaped (an id
    # another process wrote may hold "/", "?" or "..").
    env.filters["record_link"] = _record_link
    return env


def _shown_target(record: AuditRecord) -> str:
    """A record's target as the pages show it: secret values REDACTED, and a URL's host not
    ASCII in the ASCII form a read resolves (``https://xn--ggle-55da.com/``), so that a host
    in letters of another script cannot pass for the one it imitates."""
    target = shared_target(record)
    return target if record.capability == SEARCH else ascii_host(target)


def _record_link(record_id: object) -> str:
    """The console-relative link of a record's page: ``audit/<id>``, every character of the
    id but letters and digits escaped (an id another process wrote may hold "?" or ".."); an
    id holding a "/" goes in the query (``audit?id=``), since an escaped one in a path is
    refused by the gateway (a proxy's rule on a path must not be passed by %2F)."""
    text = str(record_id)
    quoted = quote(text, safe="")
    return f"audit?id={quoted}" if "/" in text else f"audit/{quoted}"


@dataclass(frozen=True)
class HostRow:
    """A top host with its limiter and breaker state, ready to show."""

    host: str
    calls: int
    refused: int
    failed: int
    tokens: str
    breaker: str
    breaker_css: str
    failures: int
    held: str


def describe_state(
    state: HostState | None, settings: Settings, now: float
) -> tuple[str, str, str, int, str]:
    """Tokens left, breaker text and CSS class, consecutive failures, hold: for one key."""
    limits = settings.limits
    if state is None:
        return f"{limits.per_host_burst:g} of {limits.per_host_burst:g}", "closed", "ok", 0, "-"
    tokens = min(
        limits.per_host_burst, state.tokens + max(0.0, now - state.updated) * limits.per_host_rate
    )
    if state.open_until == 0:
        breaker, css = "closed", "ok"
    elif now < state.open_until:
        breaker, css = f"open until {_time(state.open_until)}", "bad"
    else:
        breaker, css = "half-open (one probe may pass)", "warn"
    held = _time(state.hold_until) if state.hold_until > now else "-"
    return f"{round(tokens, 1):g} of {limits.per_host_burst:g}", breaker, css, state.failures, held


def _endpoint(url: str) -> str:
    """A provider URL without user info, query or fragment: never a credential."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 address: bracketed, as in the URL
            host = f"[{host}]"
        if parts.port:
            host = f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:
        return "(not a URL)"


def _cookie_name(request: Request) -> str:
    """The session cookie's name for the console this request reached: browsers keep cookies
    by host, not port, so two consoles on one machine (``webward console`` and a local
    gateway's) would otherwise overwrite each other's."""
    port = request.url.port
    return f"{COOKIE}_{port}" if port else COOKIE


def _over_tls(request: Request) -> bool:
    """Whether the browser reached this console over https: directly, or through the TLS
    proxy the docs recommend (its Origin, or its X-Forwarded-Proto; either could only make
    the cookie stricter, never let it out over plain http)."""
    return (
        request.url.scheme == "https"
        or request.headers.get("origin", "").lower().startswith("https://")
        or request.headers.get("x-forwarded-proto", "").lower() == "https"
    )


class Console:
    """The console as a Starlette app (``.app``), to mount at ``/console``.

    ``limit_state`` returns the limiter store whose state the hosts view shows (the
    gateway's own ``Web``'s, or the store the command line writes); None if there is none yet.
    ``logout_state`` returns the store that keeps logouts, ``budget_state`` the one the
    budgets are counted in (each ``limit_state`` by default).
    ``unknown_token`` is told the client's address when a token (login form, bearer header
    or cookie) is one no agent holds: the gateway counts and logs it as a refused credential.
    """

    def __init__(
        self,
        settings: Settings,
        reader: AuditReader,
        auth: ConsoleAuth,
        limit_state: Callable[[], LimitState | None],
        *,
        clock: Callable[[], float] = time.time,
        unknown_token: Callable[[str], None] | None = None,
        logout_state: Callable[[], LimitState | None] | None = None,
        budget_state: Callable[[], LimitState | None] | None = None,
    ) -> None:
        self.settings = settings
        self._unknown_token = unknown_token
        self.reader = reader
        self.auth = auth
        self._limit_state = limit_state
        self._logout_state = logout_state or limit_state
        self._budget_state = budget_state or limit_state
        self._clock = clock
        self._env = _environment()
        self._css = resources.files("webward.console").joinpath("static/console.css").read_bytes()
        views: dict[str, Callable[[Request], Awaitable[Response]]] = {
            "/": self.audit,
            "/usage": self.usage,
            "/hosts": self.hosts,
            "/policy": self.policy,
            "/budgets": self.budgets,
        }
        routes = [Route(path, self._guarded(view), methods=["GET"]) for path, view in views.items()]
        routes += [
            Route("/audit/{record_id}", self._guarded(self.record), methods=["GET"]),
            Route("/audit", self._guarded(self.record), methods=["GET"]),  # ?id=: see record_link
            Route("/login", self.login_form, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/static/console.css", self.stylesheet, methods=["GET"]),
        ]
        pages = Starlette(routes=routes, exception_handlers={HTTPException: self._no_such_page})
        # A path with a slash too many is the console's 404, as the gateway's own: Starlette's
        # redirect names the request's Host over http:// (behind the TLS proxy, a downgrade
        # to plain http, and to whatever host the request named).
        pages.router.redirect_slashes = False
        self.app: ASGIApp = _SecureHeaders(pages)

    async def aclose(self) -> None:
        await self.reader.aclose()

    # ---- plumbing ----------------------------------------------------------------------

    def _render(self, request: Request, template: str, status: int = 200, **ctx: Any) -> Response:
        html = self._env.get_template(template).render(
            base=request.scope.get("root_path", ""),
            decisions=DECISIONS,
            faces=FACES,
            url_login=self.auth.url_login,
            who=getattr(request.state, "who", ""),
            **ctx,
        )
        return Response(html, status_code=status, media_type="text/html")

    async def _no_such_page(self, request: Request, exc: Exception) -> Response:
        """A page of the console's own for Starlette's 404 and 405 (they were its bare
        text/plain "Not Found"), with what to do instead."""
        assert isinstance(exc, HTTPException)
        if exc.status_code == 405:
            response = self._render(
                request, "error.html", 405, message=f"{request.method} is not allowed here"
            )
            response.headers["Allow"] = (exc.headers or {}).get("Allow", "")
            return response
        if exc.status_code == 404:
            message = "the console has no such page; start from its audit log"
            return self._render(request, "error.html", 404, message=message)
        return self._render(request, "error.html", exc.status_code, message=str(exc.detail))

    def _credential(self, request: Request) -> str:
        return bearer_token(request.headers.get("authorization", "")) or request.cookies.get(
            _cookie_name(request), ""
        )

    def _guarded(
        self, view: Callable[[Request], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            credential = self._credential(request)
            verdict = self.auth.check(credential)
            try:
                if verdict.status == 200 and await self._ended_elsewhere(credential):
                    verdict = Check(401, message="the console session has ended; log in again")
            except WebwardError as exc:  # the limit store is unavailable: no session is known
                return self._render(request, "error.html", 503, message=exc.message)
            # The printed link again, from a browser already logged in: the session stands.
            if verdict.status != 200 and self.auth.url_login and "token" in request.query_params:
                return await self._exchange(request, request.query_params["token"])
            if verdict.status != 200:
                return self._refused(request, verdict)
            request.state.who = verdict.who
            try:
                return await view(request)
            except InvalidInput as exc:
                return self._render(request, "error.html", 400, message=exc.message)
            except WebwardError as exc:  # the audit log or the limit store is unavailable
                return self._render(request, "error.html", 503, message=exc.message)

        return guarded

    def _live_key(self, credential: str) -> str:
        # A ConsoleAuth of the caller's own, written before live_key, keeps its sessions
        # itself, as it did.
        live_key = getattr(self.auth, "live_key", None)
        return live_key(credential) if live_key is not None else ""

    async def _ended_elsewhere(self, credential: str) -> bool:
        """Whether the limit store does not say this session is live: logged out (by
        another replica, or by this one before a restart), or forgotten. The signed cookie
        needs no shared store to be taken, so without one a logged-out copy opened every
        other replica for 12 hours; and a logout kept as a key of its own was forgotten with
        the store (a Redis restarted empty), which opened the console to the copy again."""
        key = self._live_key(credential)
        state = self._logout_state() if key else None
        if state is None:
            return False
        found = await state.get(key)
        return found is None or found.hold_until <= self._clock()

    async def _keep_live(self, key: str, until: float) -> None:
        """The session ``key`` names is live until ``until`` (0: ended), in the store that
        keeps sessions, if there is one."""
        state = self._logout_state() if key else None
        if state is not None:
            await state.update(key, lambda _: (HostState(0.0, until, hold_until=until), None))

    def _refused(self, request: Request, verdict: Check) -> Response:
        if verdict.unknown_token and self._unknown_token is not None:
            # The console's login was a way to guess the gateway's tokens (an agent's, at
            # that: a 403 says a token is valid) that no counter nor log line showed.
            self._unknown_token(request.client.host if request.client else "")
        if verdict.status == 403:
            return self._render(request, "error.html", 403, message=verdict.message)
        return self._render(request, "login.html", 401, message=verdict.message)

    async def _exchange(self, request: Request, token: str) -> Response:
        verdict, value = self.auth.login(token)
        if verdict.status != 200:
            return self._refused(request, verdict)
        try:
            await self._keep_live(self._live_key(value), self._clock() + LIVE_KEEP_S)
        except WebwardError as exc:  # no replica could take it, nor a logout end it
            return self._render(request, "error.html", 503, message=exc.message)
        base = request.scope.get("root_path", "")
        response = RedirectResponse(f"{base}/", status_code=303)
        response.set_cookie(
            _cookie_name(request),
            value,
            path=f"{base}/" if base else "/",
            max_age=self.auth.session_s,
            httponly=True,
            samesite="strict",
            secure=_over_tls(request),
        )
        return response

    def _same_origin(self, request: Request) -> bool:
        # Browsers send Origin with every form POST; a tool without it (curl) is let through.
        # Its host and port are compared, not its scheme: behind the TLS proxy the docs
        # recommend the browser's page is https and the gateway sees http.
        origin = request.headers.get("origin")
        if origin is None:
            return True
        try:
            return urlsplit(origin).netloc.lower() == request.url.netloc.lower()
        except ValueError:
            return False

    # ---- login -------------------------------------------------------------------------

    async def login_form(self, request: Request) -> Response:
        return self._render(request, "login.html", message="")

    async def login(self, request: Request) -> Response:
        if not self._same_origin(request):
            return self._render(
                request, "error.html", 403, message="a login must come from this console's own page"
            )
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > _MAX_FORM_BYTES:
                return self._render(
                    request, "login.html", 400, message="the login form is too large"
                )
        token = parse_qs(body.decode("utf-8", "replace")).get("token", [""])[0].strip()
        return await self._exchange(request, token)

    async def logout(self, request: Request) -> Response:
        base = request.scope.get("root_path", "")
        response: Response = RedirectResponse(f"{base}/login", status_code=303)
        if self._same_origin(request):
            credential = self._credential(request)
            key = self._live_key(credential)
            valid = bool(key) and self.auth.check(credential).status == 200  # a forged one: no key
            self.auth.logout(credential)  # a session of its own ends here
            if valid:  # and on every replica sharing the store, and after a restart
                try:
                    await self._keep_live(key, 0.0)
                except WebwardError:
                    response = self._render(
                        request,
                        "error.html",
                        503,
                        message="the session ended on this replica only, for the limit store "
                        "that tells the others is unavailable; log out again once it answers",
                    )
            response.delete_cookie(
                _cookie_name(request),
                path=f"{base}/" if base else "/",
                httponly=True,
                samesite="strict",
                secure=_over_tls(request),
            )
        return response

    async def stylesheet(self, request: Request) -> Response:
        return Response(
            self._css,
            media_type="text/css",
            headers={"Cache-Control": "max-age=3600"},  # the rest: _SecureHeaders
        )

    # ---- views -------------------------------------------------------------------------

    # Names are matched exactly, as `webward audit --agent` matches them: `bob ` and `bob` are
    # two agents, and trimming showed the one asked for the other's records.
    _EXACT = frozenset({"agent", "session"})

    def _filter(self, request: Request) -> tuple[AuditFilter, dict[str, str]]:
        raw = {
            k: (v if k in self._EXACT else v.strip())[:_MAX_FIELD]
            for k, v in request.query_params.items()
            if (v if k in self._EXACT else v.strip())
        }
        now = dt.datetime.fromtimestamp(self._clock(), dt.UTC)
        capability = raw.get("capability")
        if capability is not None and capability not in _CAPABILITIES:
            raise InvalidInput("capability must be fetch or search")
        if "decision" in raw and raw["decision"] not in DECISIONS:
            raise InvalidInput(f"decision must be one of {', '.join(DECISIONS)}")
        if "face" in raw and raw["face"] not in FACES:
            raise InvalidInput(f"face must be one of {', '.join(FACES)}")
        where = AuditFilter(
            agent=raw.get("agent"),
            session=raw.get("session"),
            face=raw.get("face"),
            capability=_CAPABILITIES.get(capability or ""),
            decision=raw.get("decision"),
            reason=raw.get("reason"),
            host=raw.get("host"),
            text=raw.get("q"),
            since=parse_since(raw["since"], now, "since") if "since" in raw else None,
            until=parse_since(raw["until"], now, "until") if "until" in raw else None,
        )
        return where, raw

    async def audit(self, request: Request) -> Response:
        where, raw = self._filter(request)
        cursor = raw.pop("cursor", None)
        page = await self.reader.page(where, cursor, PAGE_SIZE)
        older = f"?{urlencode({**raw, 'cursor': page.next_cursor})}" if page.next_cursor else ""
        newest = f"?{urlencode(raw)}" if raw else "?"
        return self._render(
            request,
            "audit.html",
            view="audit",
            records=page.records,
            form=raw,
            older=older,
            newest=newest if cursor else "",
            searched=page.searched,
            unreadable=page.unreadable,
            unreadable_note=unreadable_note(page.unreadable) if page.unreadable else "",
            agents=sorted(self.settings.agents),
        )

    async def record(self, request: Request) -> Response:
        record_id = request.path_params.get("record_id", request.query_params.get("id", ""))[:64]
        found = await self.reader.record(record_id)
        if found is None:
            return self._render(request, "error.html", 404, message="no audit record has that id")
        # A URL's secret query values REDACTED, as in the call log: a console page is shown
        # to others (a screen shared, a link sent); `webward audit --json` keeps the URL as
        # read. Hosts in the ASCII form the read named, as in the audit view.
        wire = shared_wire(found)
        wire["target"] = _shown_target(found)
        if found.final_url is not None:
            wire["finalUrl"] = ascii_host(wire["finalUrl"])
        wire["redirects"] = [ascii_host(url) for url in wire["redirects"]]
        return self._render(request, "record.html", view="audit", r=found, wire=wire)

    async def usage(self, request: Request) -> Response:
        name = request.query_params.get("range", "24h")
        if name not in RANGES:
            raise InvalidInput(f"range must be one of {', '.join(RANGES)}")
        bucket_s, buckets = RANGES[name]
        now = self._clock()
        start = (now // bucket_s + 1) * bucket_s - bucket_s * buckets  # whole buckets, now last
        u = await self.reader.usage(start, bucket_s, buckets)
        per = (
            "minute" if bucket_s == 60 else "hour" if bucket_s == 3600 else f"{bucket_s // 3600} h"
        )
        charts = [
            line_chart(f"Calls per {per}, by agent", start, bucket_s, _busiest(u.by_agent)),
            stacked_chart(
                f"Calls per {per}, by decision",
                start,
                bucket_s,
                {d: u.by_decision[d] for d in DECISIONS if d in u.by_decision},
            ),
            line_chart(
                "Latency (ms): p50 and p95",
                start,
                bucket_s,
                {"p50": u.p50_ms, "p95": u.p95_ms},
                unit="",
                css={"p50": "s0", "p95": "s3"},
            ),
        ]
        return self._render(
            request,
            "usage.html",
            view="usage",
            charts=charts,
            reasons=reason_rows(u.refusals),
            total=u.total,
            ranges=list(RANGES),
            current=name,
        )

    async def _provider(self) -> str | None:
        """The search provider a search would use now, as ``choose_provider`` picks it (by
        config, else by the credentials found); read in a worker thread (a keyring may be
        slow). A provider name the config gets wrong shows as it is written."""
        from .._credentials import default_store
        from ..search import chosen_provider

        def pick() -> str | None:
            try:
                return chosen_provider(self.settings.search, default_store())
            except WebwardError:
                return self.settings.search.provider or None

        return await anyio.to_thread.run_sync(pick)

    async def hosts(self, request: Request) -> Response:
        now = self._clock()
        counts = await self.reader.top_hosts(now - 86_400, 25)
        state = self._limit_state()
        rows = []
        keys = [(c.host, c.calls, c.refused, c.failed) for c in counts]
        # The providers searched in the window, and the one a search would use now (chosen by
        # config or by credential): a 429's hold or an open breaker shows here.
        searched = await self.reader.provider_counts(now - 86_400)
        provider = await self._provider()
        if provider not in (None, "none"):
            searched.setdefault(f"provider:{provider}", HostCount(f"provider:{provider}", 0, 0, 0))
        keys += [(c.host, c.calls, c.refused, c.failed) for c in searched.values()]
        for key, calls, refused, failed in keys:
            found = await state.get(key) if state is not None else None
            tokens, breaker, css, failures, held = describe_state(found, self.settings, now)
            rows.append(HostRow(key, calls, refused, failed, tokens, breaker, css, failures, held))
        return self._render(
            request,
            "hosts.html",
            view="hosts",
            rows=rows,
            limits=self.settings.limits,
            has_state=state is not None,
        )

    async def policy(self, request: Request) -> Response:
        s = self.settings
        p = s.policy
        tiers = [
            (
                "as-owner",
                "hosts on the allow list only",
                "no",
                "no",
                "as-owner" not in p.robots_off_tiers and p.robots,
            ),
            (
                "connected",
                "any public host not denied",
                "yes",
                "no",
                "connected" not in p.robots_off_tiers and p.robots,
            ),
            (
                "full",
                "any public host not denied; larger budget",
                "yes",
                "yes",
                "full" not in p.robots_off_tiers and p.robots,
            ),
        ]
        provider = await self._provider() or ""
        endpoint = ""
        if provider in ("brave", "tavily", "searxng"):
            endpoint = _endpoint(getattr(s.search, f"{provider}_url"))
        # Each agent's own governance beside its tier: its lists narrow what the tiers table
        # says (a `full` agent with its own allow list reads only those hosts), so the page
        # must show them for "what may this agent do" to be answered from it.
        agents = [
            _AgentPolicy(
                name=name,
                tier=s.tier_for(name),
                role=a.role or "-",
                token="yes" if a.token_sha256 else "no",
                allow=a.allow,
                deny=a.deny,
                search_allow=a.search_allow,
                search_deny=a.search_deny,
                provenance=a.provenance,
                budgets=_budget_lines(a.budget),
            )
            for name, a in sorted(s.agents.items())
        ]
        return self._render(
            request,
            "policy.html",
            view="policy",
            p=p,
            tiers=tiers,
            tier_names=TIERS,
            provider=provider,
            endpoint=endpoint,
            agents=agents,
            source=s.source,
            limits=s.limits,
        )

    async def budgets(self, request: Request) -> Response:
        # Used and left are read from the limit store the budgets are counted in (the live
        # Web's on the gateway); without one, the configured budgets are shown unused.
        from .._budgets import budget_usage
        from ..limits import MemoryLimitState

        state = self._budget_state()
        rows = await budget_usage(
            self.settings, state if state is not None else MemoryLimitState(), clock=self._clock
        )
        return self._render(
            request,
            "budgets.html",
            view="budgets",
            budgets=rows,
            has_state=state is not None,
        )


@dataclass(frozen=True)
class _AgentPolicy:
    """One ``[agents.NAME]`` entry as the Policy view shows it (never its token)."""

    name: str
    tier: str
    role: str
    token: str  # "yes" or "no": whether a gateway token is configured
    allow: tuple[str, ...]
    deny: tuple[str, ...]
    search_allow: tuple[str, ...]
    search_deny: tuple[str, ...]
    provenance: str
    budgets: tuple[str, ...]


def _budget_lines(budget: Any) -> tuple[str, ...]:
    """An agent's configured budgets, one line each (``fetch_per_day = 1``); 0 is none."""
    return tuple(
        f"{f.name} = {value:g}" for f in fields(budget) if (value := getattr(budget, f.name))
    )
