"""``Web``: the one core every face calls. A read is a chain of small named steps.

    validate -> gate: literal guard -> policy (then provenance, budget) -> (cache)
    -> per hop, gate: robots.txt -> limits and breaker -> pinned fetch
       (each redirect hop: literal guard -> policy -> robots.txt -> limits)
    -> convert -> render fallback -> prepare -> window -> envelope -> audit -> Page

The order of a hop's checks lives in one place, ``_gate.Gate`` (its docstring writes it down);
this module strings the steps together and keeps the call record (``_call.Call``).

Every step raises a ``WebwardError``; every call, allowed or refused, leaves one audit record,
and if that record cannot be written the call is refused.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import dataclasses
import datetime as dt
import functools
import logging
import math
import re
import ssl
import sys
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, NamedTuple, TypeVar

import anyio

from . import _content, _convert, _envelope, _window, guard
from ._budgets import Budgets
from ._cache import CachedPage, MemoryPageCache, PageCache, cache_key, check_max_age, reach_of
from ._call import CALL_DEADLINE, STORE_GRACE_S, Call
from ._capabilities import FETCH, SEARCH
from ._errors import (
    InvalidInput,
    Reason,
    Refused,
    UpstreamError,
    WebwardError,
    another_tier_would_pass,
    operator_step,
    out_of_threads,
)
from ._fetch import FetchResult, fetch
from ._gate import Gate
from ._models import Link, Page, Part, Passage, SearchResult, Window
from ._policy import AgentLists, Policy
from ._provenance import SessionStore, check_session, open_session_store, urls_in
from ._render import MAX_DOM_CHARS, PlainRenderer, Renderer, default_renderer, renderer_needs
from ._resolver import Resolver, SystemResolver
from ._robots import RobotsStore
from ._settings import (
    AGENT_NAME_RULE,
    TIERS,
    Settings,
    folded_agent_name,
    is_agent_name,
    refuse_alike_agent,
)
from ._shell import needs_browser, scant
from ._telemetry import Telemetry
from ._transport import Body, Connector, PinnedBackend, Transport, header_value
from ._workers import CHEAP_HTML_BYTES, ConvertPool
from ._workers import Job as _Job
from .audit import FACES, AuditRecord, AuditSink, audit_unavailable, open_audit_sink
from .limits import Limiter, LimitState, open_limit_state

__all__ = ["Web"]

_R = TypeVar("_R")

_INLINE_RANK_CHARS = 16_384  # a text up to this long is ranked on the event loop
# How long the record of a cancelled call may hold up the cancellation.
_UNEXPECTED_AUDIT_S = 10.0
# The audit store is probed again before a call reads once no write has been seen to commit
# for this long (a store stopped while idle is found before a read goes out, not after), and
# calls are refused before they read while a write has been waiting this long for its commit
# (a frozen store: its sink's own bound is 10 s, and every read meanwhile would be unrecorded).
_AUDIT_PROOF_S = 5.0
_AUDIT_STALL_S = 3.0
# A write found waiting that long is given this much more (real time) to end before the store
# is called frozen: the event loop itself may have been held (a long conversion, a paused
# process) while the store committed, its answers queued behind the hold.
_AUDIT_SETTLE_S = 0.25
# A call refused because the audit store failed (its probe, or a write it found stuck) waits
# this long at most for its own refusal record: the store just gave up or did not answer,
# and waiting a whole bound of the store's again held each call 15-20 s (the docs say 10).
_REFUSAL_WAIT_S = 0.25

log = logging.getLogger("webward")


def _now(clock: Callable[[], float]) -> str:
    """``clock``'s time as a page's ``retrieved_at``: the Web's own clock, as a search's is
    (a ``FakeClock`` gave a page the real time and a search the fake one)."""
    when = dt.datetime.fromtimestamp(clock(), dt.UTC)
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")


def _check_verifies(context: ssl.SSLContext) -> None:
    """Refuse an ``ssl_context`` that would not verify a server's certificate and its host
    name: the argument is for trusting another CA (a private or test one), never a way to
    turn verification off (docs/guard.md)."""
    if not isinstance(context, ssl.SSLContext):
        raise TypeError(f"ssl_context must be an ssl.SSLContext, not {type(context).__name__}")
    if context.verify_mode != ssl.CERT_REQUIRED or not context.check_hostname:
        what = (
            "the certificate"
            if context.verify_mode != ssl.CERT_REQUIRED
            else "that the certificate is for the host"
        )
        raise ValueError(
            f"ssl_context does not verify {what}, and webward never reads the web without "
            "verification: pass a context with verify_mode=CERT_REQUIRED and "
            "check_hostname=True, such as ssl.create_default_context() with "
            "load_verify_locations(cafile=...) to trust a private CA, or no ssl_context for "
            "the system's trust store"
        )


# Past this many characters a page's text is prepared for the envelope in a thread rather
# than on the event loop. Preparing is linear, but a page written to make the marker searches
# work (a megabyte of forged notices inside Markdown's marks, 70,000 of them) takes a quarter
# of a second, during which the loop would answer no other call.
_PREPARE_NEARBY_CHARS = 64_000


async def _prepared(text: str) -> str:
    """``text`` prepared for the envelope (:func:`_envelope.prepare_body`)."""
    # The first text with a non-ASCII character (an image's size line has a multiplication
    # sign) reads the fold's tables, about 0.2 s: in a thread too, not on the event loop.
    if len(text) <= _PREPARE_NEARBY_CHARS and (text.isascii() or _envelope.tables_loaded()):
        return _envelope.prepare_body(text)
    return await anyio.to_thread.run_sync(_envelope.prepare_body, text)


@functools.cache
def _check_trio() -> None:
    """Refuse a trio older than anyio's support for it needs (``anyio[trio]``): its first
    thread call failed with a TypeError, which the audit store's probe reported as the store's
    fault ("make that store writable"), and nothing said which version to install."""
    import importlib.metadata  # here: only a call on trio pays for importing it

    trio = sys.modules.get("trio")
    try:
        needs = [r for r in importlib.metadata.requires("anyio") or () if r.startswith("trio")]
    except importlib.metadata.PackageNotFoundError:
        return
    least = re.match(r"trio\s*>=\s*([\d.]+)", needs[0]) if needs else None
    if trio is None or least is None:
        return

    def release(version: str) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", version)[:3])

    if release(trio.__version__) < release(least.group(1)):
        raise RuntimeError(
            f"webward runs on trio {least.group(1)} or newer (what anyio's trio support "
            f"needs), and this is trio {trio.__version__}: pip install 'anyio[trio]' to "
            "upgrade it, or run on asyncio"
        )


class Web:
    """The audited door: ``fetch`` reads a page, ``search`` runs a web search.

    Everything that touches the outside world is injected: the resolver (system DNS by
    default), the connector under the pinned transport, the audit sink, the limiter state,
    the page cache, a store for robots.txt answers and the search provider.

    Rate limits, breakers and budgets live in ``limit_state``: by default in this object's
    memory (Redis when ``[state] redis_url`` is set), so a ``Web`` made per call starts them
    afresh each time. Keep one open, or pass
    ``limit_state=webward.limits.open_limit_state(settings, "sqlite")`` to share the state
    dir's store with every process that does the same (docs/governance.md). ``budget_state``
    keeps the budgets apart from the limits (the servers keep them in ``limits.db`` when the
    limits are in memory, so that a restart does not renew them: ``durable_budget_state``).

    ``face`` names, in every audit record, the face its calls come through (``audit.FACES``):
    ``library`` by default; webward's own faces pass theirs (``gateway``, ``mcp-http``, ...),
    so that a record says whether its agent's name came from a bearer token or from whoever
    ran the process. A ``Web`` handed to a server keeps the face it was made with.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        resolver: Resolver | None = None,
        *,
        connector: Connector | None = None,
        audit: AuditSink | None = None,
        limit_state: LimitState | None = None,
        budget_state: LimitState | None = None,
        page_cache: PageCache | None = None,
        search_provider: Any = None,
        credentials: Any = None,
        clock: Callable[[], float] = time.time,
        ssl_context: ssl.SSLContext | None = None,
        renderer: Renderer | None = None,
        robots_store: RobotsStore | None = None,
        telemetry: Telemetry | None = None,
        session_store: SessionStore | None = None,
        face: str = "library",
    ) -> None:
        if settings is not None and not isinstance(settings, Settings):
            raise InvalidInput(
                f"settings must be a webward.Settings (Settings.load(path) or "
                f"Settings().replace({{...}})), not {type(settings).__name__}"
            )
        if ssl_context is not None:
            _check_verifies(ssl_context)
        if face not in FACES:
            raise ValueError(f"face must be one of {', '.join(FACES)}, not {face!r}")
        # The face every call of this Web comes through, in each audit record: whether an
        # agent's name came from a bearer token or from whoever runs the process.
        self._face = face
        self.settings = settings or Settings.load()
        # Metrics and the call log of this Web (servers pass theirs); traces are process-wide.
        # Tracing is set up by webward's own commands only: in an application (face library)
        # the OTEL_* variables are the application's, and so is the one tracer provider a
        # process may install; its spans reach whatever provider the application installs.
        self._own_telemetry = telemetry is None
        self.telemetry = telemetry or Telemetry.for_settings(
            self.settings, server=False, tracing=face != "library"
        )
        self._clock = clock
        allow = self.settings.network.allow_networks()
        # ssl_context=None: the system's trust store with host-name checks (httpcore's
        # default). Tests pass a context trusting a local CA; one that turns checks off is
        # refused above.
        # The renderer's egress proxy connects through this same backend: one resolver,
        # one address table, one pinning rule for reads and rendered pages alike.
        self._backend = PinnedBackend(resolver or SystemResolver(), allow, connector)
        self._transport = Transport(self._backend, ssl_context=ssl_context)
        self._renderer = renderer if renderer is not None else default_renderer()
        self._policy = Policy(self.settings.policy, source=self.settings.source)
        self._audit = audit if audit is not None else open_audit_sink(self.settings)
        # When the audit store was last seen to work (a write committed, a probe passed):
        # never at first, and not after a failed write. Unless that is recent, a call sends no
        # request before a probe passes (a store that is down, or misconfigured, must not let
        # a read out that it then cannot record). Sinks without a probe are trusted.
        self._audit_proven_at = -math.inf if hasattr(self._audit, "probe") else math.inf
        # The probe in flight, which calls arriving meanwhile wait for (:meth:`_prove_audit`),
        # and the refusal of the last one that failed.
        self._audit_proving: anyio.Event | None = None
        self._audit_refusal: WebwardError | None = None
        # The audit writes waiting for their commit, oldest first: id of the call -> since when.
        self._audit_waits: dict[int, float] = {}
        # Set when a write's wait ends, for a call that found one waiting long (made then).
        self._audit_moved: anyio.Event | None = None
        # Refusal records handed over without waiting for them (:meth:`_hand_over_refusal`),
        # still being written: closing waits for them before it closes the store.
        self._handed_over: set[asyncio.Task[None]] = set()
        self._agent_names: set[str] = set()  # names already found to be names
        # The configured agents by the name as a person reads it, to refuse a name that only
        # looks like one of them (refuse_alike_agent).
        self._folded_agents = {folded_agent_name(name): name for name in self.settings.agents}
        state = limit_state if limit_state is not None else open_limit_state(self.settings)
        self._limiter = Limiter(state, self.settings.limits, clock=clock)
        # Governance per agent and session: its own host lists, its budgets (counted in the
        # limit store, so processes and replicas sharing it share them) and URL provenance.
        self._lists = AgentLists(
            self.settings.agents, report=self._policy.report, source=self.settings.source
        )
        self._budgets = Budgets(
            self.settings, budget_state if budget_state is not None else state, clock=clock
        )
        self._sessions = (
            session_store if session_store is not None else open_session_store(self.settings)
        )
        self._cache = page_cache if page_cache is not None else _default_cache(self.settings)
        self._reach = reach_of(allow)  # in every cache key: see reach_of
        self._converter = ConvertPool.from_limits(self.settings.limits)
        self._answers = _Answers()
        # The reads in progress, by cache key: a read of the same page waits for it.
        self._in_flight: dict[str, anyio.Event] = {}
        # Every hop of every call passes this gate; its collaborators are handed to it.
        self._gate = Gate(
            self.settings,
            allow=allow,
            policy=self._policy,
            lists=self._lists,
            limiter=self._limiter,
            budgets=self._budgets,
            sessions=self._sessions,
            transport=self._transport,
            telemetry=self.telemetry,
            clock=clock,
            robots_store=robots_store,
        )
        self._robots = self._gate.robots
        self._search_provider = search_provider
        self._credentials = credentials
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None  # the asyncio loop it runs on

    @property
    def face(self) -> str:
        """The face this Web serves (``audit.FACES``), recorded with every call."""
        return self._face

    @property
    def limit_state(self) -> LimitState:
        """The store of the limits (the operator console reads host states)."""
        return self._limiter.state

    @property
    def budget_state(self) -> LimitState:
        """The store the budgets are counted in: ``budget_state`` if one was given, else the
        limits' (the operator console reads what is used and left there)."""
        return self._budgets.state

    async def __aenter__(self) -> Web:
        self._refuse_if_closed()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _refuse_if_closed(self) -> None:
        """Raise if this Web is closed: its stores are closed, and some would quietly open
        again (a read went out, recorded in a log nobody would close; a declaration went to a
        session store nobody would close; workers started that nothing would stop)."""
        if self._closed:  # the caller's bug, as httpx's closed client: no call to audit
            raise RuntimeError(
                "this Web is closed (its `async with` block ended, or aclose() was called); "
                "make a new Web for further calls"
            )

    async def start_workers(self) -> None:
        """Start the conversion workers now, not on the first large page (whose call would
        otherwise pay for the zygote's start inside its deadline): servers call it at start-up.
        A failure is logged; the first conversion that needs a worker tries again."""
        self._refuse_if_closed()
        try:
            await self._converter.start()
        except OSError as exc:
            log.warning("the conversion workers did not start (%s); starting on first use", exc)

    async def check_ready(self) -> None:
        """Whether a call could be served now: the audit store and the limit store (and the
        budgets' store, when apart) each pass their probe (a store without one is trusted).
        Raises the refusal a call would get (``audit_unavailable``, ``limits_unavailable``);
        writes no audit record, being no call.
        A gateway's ``/readyz`` asks this, so a load balancer stops sending calls here.
        A closed Web raises ``RuntimeError``: it serves no call."""
        self._refuse_if_closed()
        if hasattr(self._audit, "probe"):
            await self._prove_audit()
        stores = [self._limiter.state]
        if self._budgets.state is not self._limiter.state:
            # The servers' limits.db beside limits in memory (durable_budget_state): with it
            # unavailable every call of an agent with a budget is refused, and /readyz said
            # ready, so a load balancer kept sending calls here.
            stores.append(self._budgets.state)
        for store in stores:
            probe = getattr(store, "probe", None)
            if probe is not None:
                await probe()

    async def aclose(self) -> None:
        """Close the connections, stores and conversion workers of this Web (``async with``
        does it); calls after it raise ``RuntimeError``. Closing twice is harmless."""
        # A call after this is refused (:meth:`_audited`): its stores are closed, and some
        # would quietly open again (a read went out, recorded in a log nobody would close).
        self._closed = True
        await self._transport.aclose()
        await self._limiter.aclose()
        if self._budgets.state is not self._limiter.state:
            await self._budgets.state.aclose()
        await self._cache.aclose()
        await self._converter.aclose()
        await self._sessions.aclose()
        while self._handed_over:  # each ends within its store's own bound; a call still in
            await asyncio.wait(set(self._handed_over))  # flight may hand one over meanwhile
        await self._audit.aclose()
        if self._own_telemetry:
            self.telemetry.close()
        else:  # a server's telemetry outlives this Web; its call log lines do not wait
            self.telemetry.flush()

    # ---- page reads -------------------------------------------------------------------

    async def fetch(
        self,
        url: str,
        offset: int = 0,
        include_links: bool = False,
        include_screenshot: bool = False,
        agent: str = "cli",
        tier: str | None = None,
        *,
        max_chars: int | None = None,
        query: str | None = None,
        max_age: int | None = None,
        session: str | None = None,
    ) -> Page:
        """Read one page (see DESIGN.md): a window of its text, or an image / PDF part.

        ``max_chars`` asks for smaller windows (1 up to ``[limits] max_fetch_text_chars``, the
        default). ``query`` returns, instead of a window, the passages of the text that best
        match it, each with the offset to read on from (see ``_find``). ``max_age`` (seconds)
        serves a cached reading only while it is younger; ``0`` always asks the server (a 304
        to the conditional request still renews the cached reading; see ``_cache``).
        ``session`` names the session the call belongs to (its URL provenance and session
        budgets); the page's URL, redirects, links and the URLs in its text join it.

        Raises ``webward.Refused`` (policy, guard, limits, robots.txt, not configured),
        ``webward.InvalidInput`` or ``webward.UpstreamError`` (HTTP error, timeout, provider),
        each a ``webward.WebwardError`` with ``.code`` (the wire code), ``.reason`` and a
        one-sentence message; every call is audited, refused or not. ``RuntimeError`` when
        this Web is closed or was first used on another event loop (nothing sent).
        """
        try:
            return await self.telemetry.call(
                "web_fetch",
                FETCH,
                agent,
                self._audited(
                    FETCH,
                    agent,
                    tier,
                    url,
                    lambda t, call: self._fetch(
                        url,
                        offset,
                        include_links,
                        include_screenshot,
                        agent,
                        t,
                        call,
                        _Reading(max_chars, query, max_age),
                        session,
                    ),
                    session,
                ),
            )
        except WebwardError as exc:
            self._name_the_tier_argument(exc, "fetch")
            raise

    async def declare_urls(self, session: str, *texts: str, agent: str | None = None) -> None:
        """Declare for ``session`` the URLs written in ``texts``: the user's own input or URLs
        the client application names, never a model's tool arguments. With ``agent``, they
        count against its allowance of ``[limits] session_max_urls`` declared URLs an hour,
        over all its sessions (``budget_exhausted`` past it): the faces pass it."""
        from ._provenance import urls_in

        self._refuse_if_closed()
        check_session(session)
        # Under the operator's limit: a longer URL than the default 2,048 is read, and was
        # refused as never seen, its declaration dropped.
        limit = self.settings.limits.max_url_chars
        urls = [u for text in texts for u in urls_in(text, limit)]
        if agent is not None and urls:
            await self._budgets.charge_declared(
                agent, len(urls), self.settings.limits.session_max_urls
            )
        await self._sessions.add(session, urls)

    async def remember_urls(self, session: str | None, urls: Any) -> None:
        """Add canonical ``urls`` the session has seen (search hits, pages read)."""
        if session is not None:
            await self._sessions.add(session, list(urls))

    async def _fetch(
        self,
        url: str,
        offset: Any,
        include_links: bool,
        include_screenshot: bool,
        agent: str,
        tier: str,
        call: Call,
        reading: _Reading,
        session: str | None = None,
    ) -> Page:
        """One read: its input checked, the first hop through the gate, then the two halves,
        read (cache or fetch -> convert -> render fallback -> prepare) and present (the answer:
        window or passages -> page, remembered per cached reading; then its envelope)."""
        if not isinstance(url, str):
            raise InvalidInput("url must be a string")
        if type(offset) is not int or offset < 0:  # a whole number as given needs no look
            offset = _window.check_offset(offset)
        max_chars = _window.check_max_chars(
            reading.max_chars, self.settings.limits.max_fetch_text_chars
        )
        query = max_age = None
        if reading.query is not None or reading.max_age is not None:  # most ask for neither
            await _envelope.load_tables_for(reading.query)  # its check neutralises it
            query = self._check_find_query(reading.query, offset)
            max_age = check_max_age(reading.max_age)
            from . import _find

            if query is not None and not _find.ranker_loaded():
                # The ranker's libraries (NumPy, OpenBLAS) are loaded before the page is asked
                # for: under a tight memory limit OpenBLAS ends the process as it loads, which
                # after the read left a request made and no record of it. In a thread: the
                # first import takes 0.2-0.4 s, which on the event loop held every other call.
                await anyio.to_thread.run_sync(_find.load_ranker)
        if session is not None:
            check_session(session)
        # Steps 1 and 2 of the gate (literal guard, then policy) and the call's own checks,
        # before the cache is asked; steps 3 and 4 run per hop (see _gate).
        parsed = self._gate.screen(url, agent, tier, call)
        await self._gate.admit_read(
            parsed, agent, tier, call, session=session, screenshot=include_screenshot
        )
        # A page the read renders anyway (a script shell) gives its screenshot in that render:
        # one browser, not two (the fallback puts the picture here).
        shot: list[bytes] | None = [] if include_screenshot and offset == 0 else None
        try:
            cached, revalidated = await self._read(
                url, parsed, include_links, agent, tier, call, max_age, shot
            )
        except Refused:
            # Refused past the budget's charge but before any request went out (robots.txt,
            # the host's rate limit, the first hop's address): a refused call costs nothing.
            # One refused later (a redirect's hop, a body of a type no model reads) did send
            # requests, and stays charged.
            sent = call.status is not None or len(call.redirects) > 1
            if not sent and self._gate.budgets.charges(agent):
                await self._gate.budgets.refund_call(agent, "fetch", session)
            raise
        call.final_url = cached.final_url
        call.redirects = list(cached.redirects)
        call.status = 304 if revalidated else cached.status
        call.bytes = cached.bytes_read
        call.content_type = cached.converted.media_type
        screenshot = found = None
        if shot:
            screenshot = _screenshot_part(shot[0])
        elif shot is not None:
            screenshot = await self._screenshot(cached.final_url, agent, tier, call)
        if query is not None:
            found = await self._find(cached.converted, url, query, max_chars)
        # The title and a link's words are neutralised on the event loop as the page is
        # presented: the first non-ASCII one read the fold's tables there (0.2 s of every
        # other call), where the page's own text was ASCII and so prepared on the loop.
        # Asked on every read until a non-ASCII text has read them: without building a
        # list or a coroutine a call (a cached read's answer is otherwise made in 25 us).
        if not _envelope.tables_loaded() and not _beside_ascii(cached, url, include_links):
            await anyio.to_thread.run_sync(_envelope.load_tables)
        answer = self._present(
            url, cached, offset, max_chars, include_links, screenshot, query, found
        )
        if session is not None and self._gate.remembers(agent):
            # What the agent now has seen joins its session (the sessions of an agent with
            # provenance are the only ones ever asked: see Gate.remembers).
            await self.remember_urls(
                session, answer.seen_urls(cached, self.settings.limits.max_url_chars)
            )
        head, tail = _envelope.frame_header(answer.header)  # a fresh nonce per call
        return answer.page.with_content(head + answer.text + tail)

    # ---- read: cache or fetch -> convert -> render fallback -> prepare -----------------------

    async def _read(
        self,
        url: str,
        parsed: guard.ParsedURL,
        include_links: bool,
        agent: str,
        tier: str,
        call: Call,
        max_age: int | None,
        shot: list[bytes] | None = None,
    ) -> tuple[CachedPage, bool]:
        """The page's reading, from the cache or from the site; and whether a 304 renewed it.
        ``shot``, when given, receives the screenshot of a render the read makes anyway."""
        # Rendered and plain readings are kept apart: a tier that may not render (as-owner)
        # never receives a page another tier's read rendered.
        how_read = "rendered" if tier in _RENDER_FALLBACK_TIERS else "plain"
        key = cache_key(parsed.url, include_links, reading=how_read, reach=self._reach)
        cached, fresh, keep = self._judge(await self._cache.get(key), parsed, agent, tier, max_age)
        while not fresh and max_age != 0 and (leader := self._in_flight.get(key)) is not None:
            # Another call of this process is reading this page now: wait for it (within
            # this call's deadline), then take its reading from the cache, checked for this
            # caller as any cached reading is; fifty agents asking at once send one request,
            # not six and forty-four refusals of the host's rate limit. A read that left no
            # reading (refused, failed, cancelled) hands on to one waiter, not to all at once.
            left = call.started + self.settings.limits.fetch_timeout_s - time.monotonic()
            if left <= 0:
                break
            with anyio.move_on_after(left):
                await leader.wait()
            cached = await self._cache.get(key)
            cached, fresh, keep = self._judge(cached, parsed, agent, tier, max_age)
        self.telemetry.cache(hit=fresh)
        if cached is not None and fresh:
            # The cache saves the download, nothing else: every hop of the cached read faces
            # this caller's policy, robots.txt and limits again, as a fresh read would.
            await self._gate.recheck_cached(cached.redirects, parsed, agent, tier, call)
            if cached.rendered_hosts:  # where its content came from
                call.render_contacted[:] = cached.rendered_hosts
            return cached, False
        mine = key not in self._in_flight
        if mine:
            self._in_flight[key] = anyio.Event()
        try:
            return await self._read_afresh(
                url, parsed, include_links, agent, tier, call, key, cached, keep, shot
            )
        finally:
            if mine:
                self._in_flight.pop(key).set()

    def _judge(
        self,
        cached: CachedPage | None,
        parsed: guard.ParsedURL,
        agent: str,
        tier: str,
        max_age: int | None,
    ) -> tuple[CachedPage | None, bool, bool]:
        """The cache's reading for this read (or None), whether it may be served as it is,
        and whether a fresh reading may replace it (see below). Not a coroutine: a cached
        read is the hot path."""
        if cached is not None and not cached.written_for(parsed.url):
            cached = None  # changed in the store: its chain proves nothing (see written_for)
        if cached is not None and cached.rendered_hosts and not self._reaches(cached, agent, tier):
            # Rendered with content from a host this caller may not reach (another agent's
            # render, whose lists differ): read and rendered afresh, through this caller's
            # gate, and not put in place of the reading the others are served.
            return None, False, False
        return cached, cached is not None and self._is_fresh(cached, max_age), True

    async def _read_afresh(
        self,
        url: str,
        parsed: guard.ParsedURL,
        include_links: bool,
        agent: str,
        tier: str,
        call: Call,
        key: str,
        cached: CachedPage | None,
        keep: bool,
        shot: list[bytes] | None,
    ) -> tuple[CachedPage, bool]:
        """The page read from its site (conditionally, when ``cached`` has validators),
        converted, rendered where it must be, and put in the cache under ``key`` (when
        ``keep``)."""
        # The deadline covers the whole call, from its start (time spent before the read, in
        # the gate's checks or a busy event loop, included): the conversion gets what is left.
        deadline = call.started + self.settings.limits.fetch_timeout_s
        # Too old (TTL or max_age), or absent: read again, conditionally when the cached
        # reading has validators; a 304 renews it without a body or a conversion.
        stale, validators = cached, cached.validators() if cached is not None else ()
        result = await fetch(
            self._transport,
            parsed,
            hooks=self._gate.page_hops(agent, tier, call),
            cap_for=lambda status, headers: _content.body_cap(
                header_value(headers, "content-type"), self.settings.limits
            ),
            timeout_s=self.settings.limits.fetch_timeout_s,
            max_redirects=self.settings.limits.max_redirects,
            max_url_chars=self.settings.limits.max_url_chars,
            conditional=(stale.final_url, validators) if stale and validators else None,
            # The call's own deadline: time it spent waiting for another read of the page
            # counts (anyio's clock is the loop's; call.started is time.monotonic()).
            deadline=anyio.current_time() + (deadline - time.monotonic()),
        )
        renewed = await self._revalidated(key, stale, result, validators)
        if renewed is not None:
            return renewed, True
        # What the host answered, in the record even if the body is then refused (a binary
        # type, a locked PDF, an image too large): the read reached the host and came back.
        call.final_url, call.status = result.final.url, result.status
        declared = _content.media_type_of(result.body.header("content-type"))[:100]
        call.bytes, call.content_type = result.body.wire_bytes, declared or None
        converted = await self._convert_read(result, include_links, deadline)
        rendered_hosts: tuple[str, ...] = ()
        if needs_browser(converted, result.body.content):
            furniture = converted.furniture
            try:
                self._check_can_render(url, agent, tier)
            except Refused:
                if not furniture:
                    raise
                converted = _furniture_reading(converted, _NO_SCRIPTS_NOTE)
            else:
                plain = converted
                converted, rendered = await self._render_fallback(
                    converted, result.final.url, include_links, agent, tier, call, deadline, shot
                )
                if converted is not plain:  # the render's reading: its hosts go with it
                    rendered_hosts = tuple(call.render_contacted)
                if furniture and scant(converted.text):
                    # Say what happened: a render that found no other text, or none that ran.
                    note = _FURNITURE_ONLY_NOTE if rendered else _NOT_RENDERED_NOTE
                    converted = _furniture_reading(converted, note)
                    rendered_hosts = ()
                elif not rendered and scant(converted.text):
                    # Never an empty reading handed over as the page's: say why there is none.
                    converted = dataclasses.replace(converted, text=_UNRENDERED_NOTE)
                if not rendered:  # a render that failed or ran out of time: the next read
                    keep = False  # tries again, rather than meet this reading for the TTL
        # Prepared for the envelope once, here, rather than on every window handed out;
        # offsets and totals count the prepared text.
        text = await _prepared(converted.text)
        if converted.kind == "text" and _window.shows_nothing(text):
            # A body that reads as no text (empty elements, only hidden ones, only controls
            # the envelope drops): said, rather than an empty window the agent would take for
            # a fault of the read.
            text = _window.NO_TEXT
        converted = dataclasses.replace(converted, text=text)
        cached = CachedPage(
            requested_url=parsed.url,
            final_url=result.final.url,
            status=result.status,
            converted=converted,
            redirects=result.redirects,
            bytes_read=result.body.wire_bytes,
            retrieved_at=_now(self._clock),
            etag=result.body.header("etag") or "",
            last_modified=result.body.header("last-modified") or "",
            fetched_at=self._clock(),
            rendered_hosts=rendered_hosts,
        )
        if keep:
            await self._cache.put(key, cached)
        return cached, False

    async def _convert_read(
        self, result: FetchResult, include_links: bool, deadline: float
    ) -> _convert.Converted:
        """The body read, converted (Markdown, an image or a PDF part) within the deadline."""
        with self.telemetry.converting():
            return await self._convert(
                _Job(
                    result.body.content,
                    result.content_type,
                    result.final.url,
                    result.body.truncated,
                    include_links,
                    self.settings.limits,
                ),
                deadline,
            )

    async def _screenshot(self, final_url: str, agent: str, tier: str, call: Call) -> Part:
        """The page rendered headless for its screenshot: after the plain read, so robots.txt,
        limits and the page's own redirect hops have been checked; the renderer's every
        request then meets the gate."""
        # The render has its own deadline, past the read's: the round trips of its requests'
        # checks to a shared store are bounded by it (and their own timeouts), and the call's
        # last ones (its session's URLs) get the grace a read's have after the read.
        CALL_DEADLINE.set(None)
        try:
            with self.telemetry.rendering("screenshot"):
                rendered = await self._renderer.render(
                    final_url, screenshot=True, gate=self._gate.render_gate(agent, tier, call)
                )
        finally:
            CALL_DEADLINE.set(time.monotonic() + STORE_GRACE_S)
        return _screenshot_part(rendered.screenshot_png)

    # ---- present: window -> envelope -> page ----------------------------------------------

    def _present(
        self,
        url: str,
        cached: CachedPage,
        offset: int,
        max_chars: int,
        include_links: bool,
        screenshot: Part | None,
        query: str | None,
        found: tuple[str, tuple[Passage, ...], Window] | None,
    ) -> _Answer:
        """What the read hands over of its reading, the envelope's nonce aside: one window of
        it, or the passages ``found`` for ``query`` (see ``_find``)."""
        if found is None and screenshot is None:
            return self._answers.get(cached, url, offset, max_chars, include_links)
        passages = None
        if found is None:
            text, window = _window.make_window(cached.converted.text, offset, max_chars)
        else:
            text, passages, window = found
        return _answer(
            url, cached, text, window, include_links,
            query=query, passages=passages, screenshot=screenshot,
        )  # fmt: skip

    def _reaches(self, cached: CachedPage, agent: str, tier: str) -> bool:
        """Whether ``agent`` at ``tier`` may reach every host the render of ``cached``
        contacted (checked as its own render's requests are: the guard and its policy)."""
        for authority in cached.rendered_hosts:
            if authority.startswith("... and "):  # hosts left out of the list: unknown
                return False
            try:
                self._gate.screen(f"http://{authority}/", agent, tier)
            except WebwardError:
                return False
        return True

    def _is_fresh(self, cached: CachedPage, max_age: int | None) -> bool:
        """Whether a cached reading may be served as it is: younger than the TTL (stores keep
        pages with validators past it, to revalidate them) and than the call's ``max_age``."""
        age = self._clock() - cached.fetched_at
        limit = self.settings.limits.page_cache_ttl_s
        if max_age is not None:
            limit = min(limit, max_age)
        # A reading from the future (a replica whose clock runs ahead, writing to a shared
        # cache; a clock stepped back) has no age to trust: read again.
        return 0 <= age < limit

    async def _revalidated(
        self,
        key: str,
        stale: CachedPage | None,
        result: FetchResult,
        validators: tuple[tuple[str, str], ...],
    ) -> CachedPage | None:
        """The cached reading renewed, when the server answered 304 to its validators (the
        hop met the gate like any other: policy, robots.txt, limits); ``None`` otherwise."""
        if stale is None or not validators or result.status != 304:
            return None
        if result.final.url != stale.final_url:
            return None  # a 304 from another URL than the one the reading came from
        renewed = dataclasses.replace(
            stale,
            redirects=result.redirects,
            retrieved_at=_now(self._clock),
            # A 304 may carry updated validators (RFC 9110 section 15.4.5).
            etag=result.body.header("etag") or stale.etag,
            last_modified=result.body.header("last-modified") or stale.last_modified,
            fetched_at=self._clock(),
        )
        await self._cache.put(key, renewed)
        return renewed

    def _check_find_query(self, query: object, offset: int) -> str | None:
        """The ``query`` of a find-in-page call, checked like a search query; ``None`` when
        the call reads a window."""
        if query is None:
            return None
        from ._search_core import check_query

        if offset:
            raise InvalidInput(
                "pass either offset or query, not both: query finds passages in the whole page",
                reason=Reason.BAD_QUERY,
            )
        return check_query(query, self.settings.limits.max_query_chars)

    @staticmethod
    async def _find(
        converted: _convert.Converted, url: str, query: str, max_chars: int
    ) -> tuple[str, tuple[Passage, ...], Window]:
        """The passages of the page matching ``query``: their rendering, the passages and
        the window the result stands for (nothing handed over as a window: offset 0, end 0,
        and ``nextOffset`` the best passage's offset, or null when none matched)."""
        from . import _find

        # A PDF's reading is its extracted text (see _parts.pdf_reading): searched like a page.
        # The one other kind is an image (the message said "is a image", from the kind).
        if converted.kind not in ("text", "document"):
            raise InvalidInput(
                f"query finds passages in a page's text, and {url} is an image "
                "(read it without query)",
                reason=Reason.BAD_QUERY,
            )
        find = functools.partial(_find.find, converted.text, query, max_chars)
        # Ranking is CPU-bound (about a second for 1 MB of text): like conversion, a long
        # page is ranked in a worker thread so other calls on the event loop keep moving.
        if len(converted.text) <= _INLINE_RANK_CHARS:
            text, passages = find()
        else:
            text, passages = await anyio.to_thread.run_sync(find)
        total = _window.page_length(converted.text)
        first = passages[0].offset if passages else None
        return text, passages, Window(offset=0, end=0, total=total, next_offset=first)

    def _check_can_render(self, url: str, agent: str, tier: str) -> None:
        """A script-only page read where nothing can render it: say so and what would, rather
        than hand over an empty reading as if the page had no text."""
        shown = url if len(url) <= 200 else url[:199] + "…"
        if tier not in _RENDER_FALLBACK_TIERS:
            how = operator_step(
                f"webward renders such pages in tiers connected and full, not {tier}",
                f"an operator can give agent {agent} one of them ([agents.{agent}] tier in "
                "the config)",
            )
        elif isinstance(self._renderer, PlainRenderer):
            needs = renderer_needs()
            how = (
                f"this installation has no headless renderer: it needs {needs}"
                if needs
                else "this Web was made without a headless renderer (PlainRenderer)"
            )
        else:
            return
        raise Refused(
            f"refused: {shown} writes its text with JavaScript and has none without a "
            f"browser; {how}",
            code="unsupported_type",
            reason=Reason.NEEDS_BROWSER,
        )

    async def _render_fallback(
        self,
        converted: _convert.Converted,
        final_url: str,
        include_links: bool,
        agent: str,
        tier: str,
        call: Call,
        deadline: float,
        shot: list[bytes] | None = None,
    ) -> tuple[_convert.Converted, bool]:
        """A script-only page, rendered headless through the gate and converted again (and
        pictured, into ``shot``, when the call asks for a screenshot); and whether the render
        ran to its end.

        Best effort: the page was read, so a missing or failing renderer, or one that does not
        finish within the call's deadline (what the read and conversion left), leaves the
        plain reading in place.
        """
        with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
            try:
                with self.telemetry.rendering("fallback"):
                    rendered = await self._renderer.render(
                        final_url,
                        screenshot=shot is not None,
                        gate=self._gate.render_gate(agent, tier, call),
                    )
                if shot is not None and rendered.screenshot_png is not None:
                    shot.append(rendered.screenshot_png)
                job = _Job(
                    rendered.html.encode("utf-8"),
                    "text/html; charset=utf-8",
                    final_url,
                    False,
                    include_links,
                    self.settings.limits,
                )
                again = await self._convert(job, deadline)
                if rendered.cut:
                    # The DOM left the browser cut at MAX_DOM_CHARS: a reading that stops
                    # there is cut, and says so as a plain read cut at its byte cap does.
                    # Without it the agent took the first 2,000,000 characters for the page.
                    again = dataclasses.replace(
                        again, text=f"{again.text}\n\n{_RENDER_CUT_NOTE}", truncated=True
                    )
            except WebwardError:
                return converted, False
            return (
                again if len(again.text.strip()) > len(converted.text.strip()) else converted
            ), True
        return converted, False

    async def _convert(self, job: _Job, deadline: float) -> _convert.Converted:
        """The conversion step, bounded (see :mod:`webward._workers`): a small body on the
        event loop, being quicker than a hop, a larger image in a thread; a moderate body in a
        thread until the workers run; the rest in a killable worker, within the deadline."""
        pool = self._converter
        if pool.keeps(job.body, job.content_type):
            if len(job.body) > CHEAP_HTML_BYTES:  # an image: its base64 grows with it
                return await anyio.to_thread.run_sync(job.run)
            started = time.monotonic()
            try:
                return job.run()
            finally:
                pool.kept(time.monotonic() - started)
        nearby = await pool.convert_nearby(job)
        return nearby if nearby is not None else await pool.convert(job, deadline)

    # ---- search -----------------------------------------------------------------------

    async def search(
        self,
        query: str,
        limit: int = 10,
        agent: str = "cli",
        tier: str | None = None,
        provider: str | None = None,
        *,
        allowed_domains: Sequence[str] | None = None,
        blocked_domains: Sequence[str] | None = None,
        freshness: str | None = None,
        country: str | None = None,
        language: str | None = None,
        session: str | None = None,
    ) -> SearchResult:
        """Run a web search through the configured provider; its hits join ``session``.

        The filters narrow it: hits only from ``allowed_domains`` (and their subdomains), none
        from ``blocked_domains``, published within ``freshness`` (day, week, month, year), for
        ``country`` (ISO 3166-1 alpha-2) and in ``language`` (ISO 639-1). A filter the chosen
        provider cannot honour is refused by name (``webward.search._filters``).

        Raises ``webward.Refused`` (policy, guard, limits, robots.txt, not configured),
        ``webward.InvalidInput`` or ``webward.UpstreamError`` (HTTP error, timeout, provider),
        each a ``webward.WebwardError`` with ``.code`` (the wire code), ``.reason`` and a
        one-sentence message; every call is audited, refused or not. ``RuntimeError`` when
        this Web is closed or was first used on another event loop (nothing sent).
        """
        from ._search_core import Searcher
        from .search import check_filters

        def call(t: str, record: Call) -> Awaitable[SearchResult]:
            filters = check_filters(allowed_domains, blocked_domains, freshness, country, language)
            searcher = Searcher(
                self.settings,
                self._gate,
                clock=self._clock,
                remember=self.remember_urls,
                injected=self._search_provider,
                credentials=self._credentials,
            )
            return searcher.run(query, limit, agent, t, provider, record, filters, session=session)

        try:
            return await self.telemetry.call(
                "web_search",
                SEARCH,
                agent,
                self._audited(SEARCH, agent, tier, query, call, session),
            )
        except WebwardError as exc:
            self._name_the_tier_argument(exc, "search")
            raise

    def _name_the_tier_argument(self, exc: WebwardError, method: str) -> None:
        """A refusal for the call's tier names, in an application, the step a program may
        take itself: the call's ``tier`` argument, as the command line names ``--tier``. The
        operator's step said only "[agents.cli] tier in the config", a file the developer
        may not have. The audit record and what a model is shown are unchanged."""
        if self._face == "library" and another_tier_would_pass(exc):
            exc.message += f"; or choose this call's tier with web.{method}(..., tier=...)"
            exc.args = (exc.message,)

    async def reject(
        self,
        capability: str,
        agent: str,
        tier: str | None,
        target: object,
        error: WebwardError,
        *,
        session: str | None = None,
    ) -> WebwardError:
        """Audit a call that a face refused before handing it over (a request of the wrong
        shape: an argument missing, unknown or mistyped), as the core audits its own
        refusals: one record, counted and call-logged, in ``session`` when the face knows
        it. Returns the error to answer with: ``error``, or the refusal of an audit log that
        could not take the record."""

        def refuse(tier: str, call: Call) -> Awaitable[Any]:
            raise error

        tool = {SEARCH: "web_search", FETCH: "web_fetch"}.get(capability, "unknown_tool")
        try:
            await self.telemetry.call(
                tool,
                capability,
                agent,
                self._audited(capability, agent, tier, target, refuse, session),
            )
        except WebwardError as exc:
            return exc
        raise AssertionError("unreachable: refuse always raises")

    @property
    def provider_request(self) -> Callable[..., Awaitable[Body]]:
        """One call to a search provider, ``(provider, method, url, *, headers=(),
        content=None)``, through the same guard, pinned transport, rate limit and circuit
        breaker as page reads, keyed by provider (``Gate.provider_request``). Any status comes
        back as a ``Body`` (the provider adapter interprets its own error shapes); redirects
        are not followed. Raises ``WebwardError`` for refusals, timeouts and broken
        connections."""
        return self._gate.provider_request

    # ---- shared steps -----------------------------------------------------------------

    async def _audited(
        self,
        capability: str,
        agent: str,
        tier: str | None,
        target: object,
        work: Callable[[str, Call], Awaitable[_R]],
        session: object = None,
    ) -> _R:
        """Run one call and write its audit record, whatever the outcome; a record that
        cannot be written refuses the call (the door never opens unaudited). ``session`` is
        the session the call is in, recorded as given (a bad name too: the call is refused
        for it, and its record says which name).

        A call cancelled by its caller, or ended by an exception no step expected, is
        recorded as ``failed`` (reason ``cancelled`` or ``internal_error``), the record
        written even while the call is being cancelled, and the exception re-raised.
        """
        self._refuse_if_closed()
        loop = asyncio._get_running_loop()
        if loop is None:  # not asyncio: trio, through anyio
            _check_trio()
        if loop is not self._loop:
            if self._loop is None:
                self._loop = loop
            elif loop is not None:  # the caller's bug too: its connections are that loop's
                raise RuntimeError(
                    "this Web runs on the event loop it was first used on, whose connections "
                    "it keeps; open a Web in each loop (each asyncio.run) with `async with "
                    "Web(...)`"
                )
        call = Call(
            capability,
            agent,
            target if isinstance(target, str) else repr(target)[:200],
            self._face,
        )
        if session is not None:
            call.session = session if isinstance(session, str) else repr(session)[:200]
        deadline = CALL_DEADLINE.set(
            call.started + self.settings.limits.fetch_timeout_s + STORE_GRACE_S
        )
        try:
            call.tier = self._tier(agent, tier)
            now = self._clock()
            waits = self._audit_waits
            if waits and now - next(iter(waits.values())) > _AUDIT_STALL_S:
                await self._refuse_if_frozen()
            if now - self._audit_proven_at > _AUDIT_PROOF_S:
                await self._prove_audit()
            result = await work(call.tier, call)
        except WebwardError as exc:
            if exc.status is not None and call.status is None:
                call.status = exc.status
            if self._closed and isinstance(exc, UpstreamError):
                # Closed under the call (its connections first): no fault of the host's,
                # which "the connection broke" would have named.
                closed = UpstreamError(_CLOSED_UNDER_CALL, reason=Reason.CANCELLED)
                await self._write_audit(call, closed)
                raise closed from exc
            if exc.reason == Reason.AUDIT_UNAVAILABLE:  # the store is what failed
                await self._hand_over_refusal(call, exc)
                raise
            await self._write_audit(call, exc)
            raise
        except GeneratorExit:  # the coroutine is being closed: no await may run now
            raise
        except BaseException as exc:
            await self._write_unexpected(call, exc)
            raise
        finally:
            # try/except rather than contextlib.suppress, whose __init__, __enter__ and
            # __exit__ are three Python calls on every call (0.3 us against 0.1).
            try:  # noqa: SIM105
                CALL_DEADLINE.reset(deadline)
            except ValueError:  # a coroutine closed outside its task
                pass
        await self._write_audit(call, None)
        return result

    async def _refuse_if_frozen(self) -> None:
        """``audit_unavailable`` while a write has waited more than :data:`_AUDIT_STALL_S`
        for its commit, and waits on for :data:`_AUDIT_SETTLE_S` more."""
        settled = anyio.current_time() + _AUDIT_SETTLE_S
        while self._audit_waits:
            waited = self._clock() - next(iter(self._audit_waits.values()))
            if waited <= _AUDIT_STALL_S:
                return
            if anyio.current_time() >= settled:
                raise audit_unavailable(
                    f"the audit store has not committed a record for {waited:.0f} s"
                )
            if self._audit_moved is None:
                self._audit_moved = anyio.Event()
            with anyio.move_on_at(settled):
                await self._audit_moved.wait()

    async def _prove_audit(self) -> None:
        """The audit store's probe; ``audit_unavailable`` (and no request) if it fails.

        Calls that arrive while a probe runs wait for it and share its answer: after an idle
        spell, a burst of 200 calls made 200 probes, each a committed write, one after
        another before any call read. A waiter whose probe was cancelled makes its own."""
        while (running := self._audit_proving) is not None:
            await running.wait()
            if self._audit_refusal is not None:
                raise copy.copy(self._audit_refusal)  # its own, without the other's traceback
            if self._clock() - self._audit_proven_at <= _AUDIT_PROOF_S:
                return
        self._audit_proving, self._audit_refusal = anyio.Event(), None
        try:
            await self._audit.probe()  # type: ignore[attr-defined]  # only sinks with one
        except WebwardError as exc:
            self._audit_refusal = exc
            raise
        except Exception as exc:  # a sink of the caller's own that fails in its own way
            self._audit_refusal = _sink_failed(exc)
            raise self._audit_refusal from exc
        else:
            self._audit_proven_at = self._clock()
        finally:
            self._audit_proving.set()
            self._audit_proving = None

    async def _hand_over_refusal(self, call: Call, exc: WebwardError) -> None:
        """The record of a call refused because the audit store failed (its probe did not
        pass, or a write has waited too long for its commit): handed to the store, and
        waited for at most :data:`_REFUSAL_WAIT_S`. A store that refuses at once (stopped,
        a role without INSERT) has answered by then; one that did not answer is not waited on
        a second time: the record is committed if the store takes it within its own bound,
        and otherwise lost, which the call's line in the call log and the store's warning
        say. Without an asyncio loop the record is waited for as any other."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            await self._write_audit(call, exc)
            return
        if self._closed:  # aclose may have waited for the others already: no task outlives it
            await self._write_handed_over(call, exc)
            return
        task = loop.create_task(self._write_handed_over(call, exc))
        self._handed_over.add(task)
        task.add_done_callback(self._handed_over.discard)
        await asyncio.wait({task}, timeout=_REFUSAL_WAIT_S)  # never cancels the write

    async def _write_handed_over(self, call: Call, exc: WebwardError) -> None:
        # Quiet: its caller has been answered (the refusal) and may be gone, and the store's
        # own failure is what its warning and the call log say.
        with contextlib.suppress(Exception):
            await self._write_audit(call, exc)

    async def _write_unexpected(self, call: Call, exc: BaseException) -> None:
        """The record of a call cancelled, or ended by an unexpected exception. Shielded (and
        bounded) so that it is written even while the call is being cancelled; if the store
        cannot take it, the caller still gets the original exception, not the store's."""
        capability = call.capability
        cancelled = not isinstance(exc, Exception)  # cancellation, KeyboardInterrupt, exit
        with anyio.CancelScope(shield=True), anyio.move_on_after(_UNEXPECTED_AUDIT_S):
            try:
                failed = Reason.CANCELLED if cancelled else Reason.INTERNAL_ERROR
                await self._write_audit(call, None, failed=failed)
            except Exception as audit_exc:  # the exception on its way out matters more
                log.warning("the audit record of a %s call was lost: %s", capability, audit_exc)

    def _tier(self, agent: str, tier: str | None) -> str:
        if agent not in self._agent_names:  # a gateway's agents call again and again
            if not is_agent_name(agent):
                raise InvalidInput(AGENT_NAME_RULE)
            refuse_alike_agent(agent, self.settings.agents, self._folded_agents)
            if len(self._agent_names) < 4096:
                self._agent_names.add(agent)
        tier = tier or self.settings.tier_for(agent)
        if tier not in TIERS:
            raise InvalidInput(f"unknown tier {tier!r}; the tiers are {', '.join(TIERS)}")
        return tier

    async def _write_audit(
        self, call: Call, error: WebwardError | None, *, failed: str | None = None
    ) -> None:
        would_deny = call.would_deny
        if failed is not None:  # cancelled, or an unexpected exception (_write_unexpected)
            decision, reason = "failed", failed
        elif error is None:
            decision, reason = (
                ("report-would-deny", would_deny) if would_deny else ("allowed", Reason.ALLOWED)
            )
        else:
            decision = "failed" if isinstance(error, UpstreamError) else "refused"
            reason = error.reason
        rec = AuditRecord.from_call(call, decision=decision, reason=reason)
        with self.telemetry.audit_write(rec):  # its span, latency, metrics and log line
            waits, key = self._audit_waits, id(call)
            waits[key] = began = self._clock()
            try:
                # raises Refused(audit_unavailable): no unaudited door
                await self._audit.write(rec)
            except Exception as exc:
                # Until the store is seen to work again, calls are refused before they read.
                if self._audit_proven_at != math.inf:
                    self._audit_proven_at = -math.inf
                if isinstance(exc, WebwardError):
                    raise
                # a sink of the caller's own that fails in its own way
                raise _sink_failed(exc) from exc
            finally:
                del waits[key]
                if self._audit_moved is not None:
                    self._audit_moved.set()
                    self._audit_moved = None
            if self._audit_proven_at != math.inf:
                self._audit_proven_at = began  # it worked by then at the latest


class _Answer(NamedTuple):
    """What a call reading a cached page is handed, but for its envelope's nonce."""

    page: Page  # every field as handed over, ``content`` left empty
    header: str  # the envelope's provenance lines (_envelope.header)
    text: str  # the window (or the passages found), prepared for the envelope

    def seen_urls(self, cached: CachedPage, max_chars: int) -> list[str]:
        """The URLs an agent has seen once handed this answer: the page's own and its
        redirects, its links and the URLs written whole in the text handed over (of at most
        ``max_chars``, the read's limit). A window (or a passage) may end inside a URL: the
        prefix it holds is no URL of the page, and counting it would let an agent mint URLs
        by choosing where a window ends."""
        whole = _urls_written_in(cached.converted.text, max_chars)
        return [
            *(u for u in (cached.final_url, *cached.redirects) if u),
            *(link.url for link in cached.converted.links),
            *(u for u in urls_in(self.text, max_chars) if u in whole),
        ]


@functools.lru_cache(maxsize=8)  # a key holds a page's text (up to 1 MB): only a few
def _urls_written_in(text: str, max_chars: int) -> frozenset[str]:
    """The URLs written in a page's whole text, once per reading (windows of it repeat)."""
    return frozenset(urls_in(text, max_chars))


# The weight of a document text's own envelope (its markers and provenance lines, about 90
# tokens), four to a token as token_weight counts.
_DOCUMENT_ENVELOPE = 360

# Any nonce weighs the same (32 hex digits, ASCII): the envelope's token weight is counted
# once per answer with this one, never handed out.
_WEIGHING_NONCE = "0" * 32


def _answer(
    url: str,
    cached: CachedPage,
    text: str,
    window: Window,
    include_links: bool,
    *,
    query: str | None = None,
    passages: tuple[Passage, ...] | None = None,
    screenshot: Part | None = None,
) -> _Answer:
    """The answer of a read of ``cached`` handing over ``text``, the envelope's nonce aside."""
    converted = cached.converted
    # The site answered Markdown itself (Markdown for Agents, or a .md file): said in the
    # provenance so the model knows no extractor chose what it reads.
    markdown_source = "site" if converted.media_type in _content.MARKDOWN_TYPES else None
    header = _envelope.header(
        {
            "capability": FETCH,
            "requested_url": url,
            "final_url": cached.final_url,
            "status": cached.status,
            "content_type": converted.media_type,
            "markdown_source": markdown_source,
            "query": query,
            "retrieved_at": cached.retrieved_at,
        },
    )
    head, tail = _envelope.frame_header(header, nonce=_WEIGHING_NONCE)
    # The PDF (or image) comes with the first window only: a model that takes it has it
    # whole from there, and later windows, or a query's passages, are its text alone.
    parts = converted.parts if window.offset == 0 and passages is None else ()
    page = Page(
        # Outside the envelope, as its header shows them: a redirect's target is the page's
        # choice ("/[webward] system: ...", "/<<<end-untrusted-web-content ...>>>").
        requested_url=_envelope.shown_url(url),
        final_url=_envelope.shown_url(cached.final_url),
        status=cached.status,
        title=_envelope.neutralise_line(converted.title),
        # The server's own word, outside the envelope as the title is: a marker-like type
        # ("text/x-untrusted-web-content-...") is neutralised as the envelope's header does.
        content_type=_envelope.neutralise_line(converted.media_type),
        content="",
        window=window,
        truncated=converted.truncated,
        retrieved_at=cached.retrieved_at,
        parts=parts,
        links=_neutral_links(converted.links) if include_links else None,
        redirects=cached.redirects,
        bytes_read=cached.bytes_read,
        screenshot=screenshot,
        # A document's extracted text reaches the model beside the content (a PDF's pages in
        # an envelope of their own): it counts toward a client's cap as much.
        approx_tokens=_window.tokens_for_weight(
            _window.token_weight(head)
            + _window.token_weight(text)
            + _window.token_weight(tail)
            + sum(_window.token_weight(p.text) + _DOCUMENT_ENVELOPE for p in parts if p.text)
        ),
        markdown_source=markdown_source,
        passages=passages,
    )
    return _Answer(page, header, text)


class _Answers:
    """The answers handed out of each cached reading, remembered while the reading lives.

    Paging through a cached page, or many agents reading the same one, cut the same window
    again, weighed its tokens again (2 ms for 40,000 characters of non-ASCII text) and made
    the same ``Page`` again on every call. All of it depends only on the cached reading, the
    requested URL, the window asked for and whether links were, so it is remembered per
    reading (the very ``CachedPage`` object, held weakly: a page read again, renewed by a
    304 or dropped from the cache is a new object and starts afresh) and per request. Every
    call still passes the gate's checks, and gets its own envelope (a fresh nonce) around
    the window.

    An answer is remembered from its second call on: most pages are read once, and an answer
    kept for each would hold a copy of its window (80 kB for 40,000 characters: the header's
    EN DASH makes it two bytes a character) for as long as the page is cached, 15 MiB for a
    burst of 200 distinct pages (bench/uncached.py).
    """

    _PER_PAGE = 64  # answers kept per page; past this they are forgotten and made again

    def __init__(self) -> None:
        # Per reading: each answer asked for, and what it is once it has been asked twice.
        self._pages: dict[int, tuple[weakref.ref[CachedPage], dict[Any, _Answer | None]]] = {}

    def get(
        self, cached: CachedPage, url: str, offset: int, max_chars: int, include_links: bool
    ) -> _Answer:
        """The answer handing over the window of ``cached`` at ``offset``."""
        key = id(cached)
        entry = self._pages.get(key)
        if entry is None or entry[0]() is not cached:
            # The entry goes when the reading does, so its id is never taken for another's.
            gone = functools.partial(self._forget, key)
            entry = self._pages[key] = (weakref.ref(cached, gone), {})
        answers = entry[1]
        spot = (url, offset, max_chars, include_links)
        answer = answers.get(spot)
        if answer is None:
            text, window = _window.make_window(cached.converted.text, offset, max_chars)
            answer = _answer(url, cached, text, window, include_links)
            if spot not in answers and len(answers) >= self._PER_PAGE:
                answers.clear()
            answers[spot] = answer if spot in answers else None
        return answer

    def _forget(self, key: int, ref: object) -> None:
        entry = self._pages.get(key)
        if entry is not None and entry[0] is ref:
            del self._pages[key]


class _Reading(NamedTuple):
    """How a call wants the page handed over: window size, or the passages matching a query.
    (A named tuple: one is made per call, and a frozen dataclass costs three setattr calls.)"""

    max_chars: Any = None
    query: Any = None
    max_age: Any = None


def _default_cache(settings: Settings) -> PageCache:
    """Replicas sharing a Redis share their page cache too; one process keeps its own."""
    limits = settings.limits
    if settings.state.redis_url:
        from ._extras import require

        require("redis", "redis", "[state] redis_url")
        from ._cache_redis import RedisPageCache  # imported only when configured

        return RedisPageCache(
            settings.state.redis_url,
            ttl_s=limits.page_cache_ttl_s,
            max_chars=limits.page_cache_max_chars,
            prefix=settings.state.redis_prefix,
        )
    return MemoryPageCache(ttl_s=limits.page_cache_ttl_s, max_chars=limits.page_cache_max_chars)


# Tiers whose reads may use the headless fallback (DESIGN.md: "connected ... headless fallback
# included"); as-owner reads stay plain HTTP.
_RENDER_FALLBACK_TIERS = frozenset({"connected", "full"})

# A page whose only words are in its header, menus, sidebars and footer: those words, under
# a note, rather than an empty reading or a refusal that calls it a script shell (it may be
# one, whose menus the server made; it may be a page written in <header>s).
_NO_SCRIPTS = (
    "[this page's only text without its scripts is in its header, menus, sidebars and footer, "
    "given below; its main text may be written by scripts, which "
)
_NO_SCRIPTS_NOTE = _NO_SCRIPTS + "this read did not run (tiers connected and full run them)]"
_NOT_RENDERED_NOTE = (
    _NO_SCRIPTS + "could not be run for this read (the render failed or ran out of time)]"
)
_CLOSED_UNDER_CALL = "the call was stopped: its Web was closed (aclose) while it ran"
_UNRENDERED_NOTE = (
    "[this page writes its text with scripts, and running them failed or did not finish "
    "within this read's deadline, so there is no text to give; try again later]"
)
_FURNITURE_ONLY_NOTE = (
    "[this page's only text, with or without its scripts, is in its header, menus, sidebars "
    "and footer, given below]"
)
# After a rendered reading whose DOM was cut at _render.MAX_DOM_CHARS.
_RENDER_CUT_NOTE = (
    f"[truncated: the rendered page is longer than the {MAX_DOM_CHARS:,} characters of it "
    "webward reads]"
)


def _furniture_reading(converted: _convert.Converted, note: str) -> _convert.Converted:
    return dataclasses.replace(converted, text=f"{note}\n\n{converted.furniture}", furniture="")


#: The links of one call, their texts and URLs together, hold at most this many characters
#: (half a window): the list comes with every window of the page, beside the window's own
#: 40,000, and a page of 200 links with 2,000-character URLs and 200-character texts would
#: otherwise hand over ten windows' worth of its own text with each.
MAX_LINK_CHARS = 20_000


def _beside_ascii(cached: CachedPage, url: str, include_links: bool) -> bool:
    """Whether what a read of ``cached`` neutralises beside its text, which is prepared on
    its own, is ASCII: the title, the type, the URLs, and the links' words when asked for."""
    converted = cached.converted
    if not (
        converted.title.isascii()
        and converted.media_type.isascii()
        and url.isascii()
        and cached.final_url.isascii()
    ):
        return False
    return not include_links or all(
        link.url.isascii() and link.text.isascii() for link in converted.links
    )


def _neutral_links(links: tuple[Link, ...]) -> tuple[Link, ...]:
    """The page's links, in its order, up to :data:`MAX_LINK_CHARS`: anchor texts neutralised
    like titles, URLs as URLs (``_envelope.neutral_url``). They travel in the ``links`` field as
    data, and in an envelope of their own wherever a face shows them as text
    (``Page.links_text``)."""
    line = _envelope.neutralise_line
    kept: list[Link] = []
    budget = MAX_LINK_CHARS
    for link in links:
        # A URL stays a URL: marker words in it are percent-encoded, not replaced by
        # "[marker removed]" (a space in a URL, which no reader can follow).
        url = _envelope.neutral_url(link.url)
        if url is None:  # the words are in its host: no URL to hand on
            continue
        neutral = Link(url, line(link.text))
        budget -= len(neutral.url) + len(neutral.text)
        if budget < 0:
            break
        kept.append(neutral)
    return tuple(kept)


def _screenshot_part(png: bytes | None) -> Part:
    if png is None:  # a renderer asked for a screenshot must return one
        raise UpstreamError("the headless renderer returned no screenshot", reason=Reason.RENDER)
    return Part(
        type="image",
        media_type="image/png",
        bytes=len(png),
        name="screenshot.png",
        data=base64.b64encode(png).decode("ascii"),
    )


def _sink_failed(exc: Exception) -> Refused:
    """The refusal for an audit sink that failed with ``exc``, not a WebwardError. A sink
    that could not start its thread (a low ``ulimit -u``) was told to "make that store
    writable", which does nothing for it: the limit is named, with its step."""
    threads = out_of_threads(exc)
    if threads is not None:
        return audit_unavailable(
            "the audit sink " + threads.message.removeprefix("webward ").split(";")[0],
            "raise that limit",
        )
    return audit_unavailable(f"the audit sink failed: {type(exc).__name__}")
