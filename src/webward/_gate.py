"""The gate: the checks of one hop, in the one order they run, written down here only.

Every request webward sends for a caller passes the same ``Gate``: a page read's first hop and
each of its redirect hops, a robots.txt fetch and its redirect hops, the per-hop recheck of a
window served from the page cache, a search provider's request, and every request a headless
render makes through the egress proxy. The checks of one hop, in this order:

1. **Literal guard** (``guard.assert_url_allowed``): the URL as written: its scheme, user
   info, port, internal addresses in every spelling (metadata addresses even inside
   ``[network] allow_ranges``) and internal names. It runs first, so an internal target is
   refused as ``internal_address`` / ``internal_name`` on every hop, in every tier and
   mode, before any policy is asked.
2. **Reach-tier policy** (``Policy.check_fetch``, then ``AgentLists.check_fetch``): the
   ``[policy]`` deny list, the allow-list of tier as-owner, then the agent's own
   ``[agents.NAME]`` lists. Report mode lets a would-deny through and the call record notes
   it. A search provider's request skips this step: the operator configured that host, the
   agent did not choose it.
3. **robots.txt** (``RobotsChecker``), when the hop's tier consults it; a robots.txt fetch
   does not consult robots.txt, nor does a provider's API request.
4. **Limits and breaker** (``Limiter.acquire``): a concurrency slot, a token from the host's
   bucket (what the tier spends), the host's circuit. A window served from the cache spends
   no token: nothing is sent.

Then the pinned transport (``_transport``) resolves the name, checks every answer against the
same ranges and connects to the checked address only.

On a page read's first hop steps 1 and 2 run before the page cache is asked, followed by the
checks of the call itself (URL provenance, the screenshot tier, the agent's budget); steps 3
and 4 run as each hop is sent. The gate's collaborators are passed in: it never sees ``Web``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from urllib.parse import urlsplit

import anyio

from . import guard
from ._addresses import IPNetwork
from ._budgets import Budgets
from ._call import Call
from ._errors import Reason, Refused, UpstreamError, WebwardError, operator_step
from ._fetch import fetch
from ._policy import AgentLists, Decision, Policy, normalise_host
from ._provenance import SessionStore, refusal_message
from ._robots import FetchRobots, RobotsChecker, RobotsStore
from ._settings import Settings
from ._telemetry import Telemetry, span
from ._transport import Body, CapFor, Transport
from .limits import Limiter, Ticket, retry_after_from_headers

__all__ = ["Gate", "PageHops", "RenderGate"]

_ROBOTS_MAX_BYTES = 512 * 1024
_ROBOTS_MAX_REDIRECTS = 5
_PROVIDER_MAX_URL_CHARS = 8192
_PROVIDER_MAX_BYTES = 4_000_000
_MAX_SCREENED = 4096  # URLs remembered as screened (per agent and tier); cleared when full


class Gate:
    """The checks of one hop (see the module docstring for their order), for every hop kind.

    The differences between hop kinds are arguments: whether the policy is asked (and whether
    a would-deny lands in a call record), whether robots.txt is consulted, and what a hop
    spends from its host's bucket (``cost=None``: no token, nothing will be sent).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        allow: tuple[IPNetwork, ...],
        policy: Policy,
        lists: AgentLists,
        limiter: Limiter,
        budgets: Budgets,
        sessions: SessionStore,
        transport: Transport,
        telemetry: Telemetry,
        clock: Callable[[], float],
        robots_store: RobotsStore | None = None,
    ) -> None:
        self.settings = settings
        self.limits = settings.limits
        self.allow = allow
        # A URL as the caller wrote it, remembered once it passed the guard (which is pure);
        # keyed by the URL alone: hashing ``allow``'s networks cost more than the lookup.
        self._guarded = functools.lru_cache(maxsize=4096)(self._guard)
        # URLs that passed steps 1 and 2 for an agent at a tier (screen), and what report
        # mode noted: (parsed URL, would-deny reason or None).
        self._screened: dict[tuple[str, str, str], tuple[guard.ParsedURL, str | None]] = {}
        self.policy = policy
        # The agents that read only URLs their session has seen ([agents.NAME] provenance).
        self._provenance_agents = frozenset(
            name for name, entry in settings.agents.items() if entry.provenance == "session"
        )
        self.lists = lists
        self.limiter = limiter
        self.budgets = budgets
        self.sessions = sessions
        self.transport = transport
        self.telemetry = telemetry
        self.robots = RobotsChecker(self.fetch_robots, clock=clock, store=robots_store)

    # ---- steps 1 to 4 -----------------------------------------------------------------

    def screen(
        self,
        url: str | guard.ParsedURL,
        agent: str,
        tier: str,
        call: Call | None = None,
    ) -> guard.ParsedURL:
        """Steps 1 and 2: the literal guard, then the reach policy of ``agent`` at ``tier``.

        With ``call``, a report-mode would-deny is noted in it; without (robots.txt hops, a
        render's requests) report mode lets the host through unnoted."""
        if call is not None and isinstance(url, str):
            # Steps 1 and 2 are pure (the settings do not change while a Web lives): a URL
            # an agent may read at a tier is remembered with what report mode noted of it.
            passed = self._screened.get((url, agent, tier))
            if passed is not None:
                parsed, would_deny = passed
                if would_deny is not None:
                    call.would_deny = would_deny
                return parsed
        try:
            parsed = self.literal_guard(url)
        except Refused as exc:
            more = self._tier_step(exc, url, agent, tier)
            if more:
                raise exc.with_more_step(more) from None
            raise
        decisions = (
            self.policy.check_fetch(parsed.host, tier, agent),
            self.lists.check_fetch(parsed.host, agent),
        )
        for decision in decisions:
            if call is not None:
                call.check(decision)
            else:
                decision.raise_if_denied()
        if call is not None and isinstance(url, str):
            if len(self._screened) >= _MAX_SCREENED:
                self._screened.clear()
            noted = [d.reason for d in decisions if d.would_deny]
            self._screened[(url, agent, tier)] = (parsed, noted[0] if noted else None)
        return parsed

    def _tier_step(self, exc: Refused, url: str | guard.ParsedURL, agent: str, tier: str) -> str:
        """The step of the refusal a server on this machine would meet once its range is
        allowed: its host is not on the allow-list of the tier. Said with the range's step, so
        that a first read of a local page takes one refusal to set up, not two in a row."""
        if tier != "as-owner" or exc.reason not in (Reason.INTERNAL_ADDRESS, Reason.INTERNAL_NAME):
            return ""
        # The host as the guard read it (127.0.2, 0x7f000002 and %31%32%37.0.0.2 are
        # 127.0.0.2), the one the policy is asked about: urllib's reading named the spelling.
        # (It parsed: the refusal is of its host. Its length was checked against the limit.)
        host = (
            url.host
            if isinstance(url, guard.ParsedURL)
            else guard.parse_url(url, max_chars=len(url)).host
        )
        if exc.reason == Reason.INTERNAL_NAME:
            # Only localhost's step names an address (use 127.0.0.1 instead): that one is
            # the host the next read asks for.
            if host != "localhost" and not host.endswith(".localhost"):
                return ""
            host = "127.0.0.1"
        try:
            decision = self.policy.check_fetch(host, tier, agent)
        except WebwardError:  # no host the policy can name: the guard's step alone
            return ""
        if decision.allowed or decision.reason != Reason.HOST_NOT_ALLOWED:
            return ""
        return (
            f", and add {normalise_host(host)} to [policy] allow (tier as-owner reads only the hosts "
            f"listed there) or give agent {agent} tier connected ([agents.{agent}] tier in "
            "the config)"
        )

    def literal_guard(
        self, url: str | guard.ParsedURL, max_chars: int | None = None
    ) -> guard.ParsedURL:
        """Step 1 alone. A URL as the caller wrote it is remembered once it passed (the
        guard is pure, so paging through a page does not pay for it again)."""
        if isinstance(url, str):
            return self._guarded(url, max_chars or self.limits.max_url_chars)
        return guard.assert_url_allowed(url, allow_ranges=self.allow)

    def _guard(self, url: str, max_chars: int) -> guard.ParsedURL:
        # Only successes are remembered (lru_cache does not keep exceptions); refusals re-run.
        return guard.assert_url_allowed(url, allow_ranges=self.allow, max_chars=max_chars)

    async def admit(
        self,
        url: guard.ParsedURL,
        agent: str,
        tier: str,
        *,
        robots: bool = True,
        cost: float | None,
        max_wait_s: float = 0.0,
        call: Call | None = None,
    ) -> Ticket | None:
        """Steps 3 and 4: robots.txt (when ``robots`` and the tier consults it), then the
        host's limits and breaker; returns the ticket to record the hop's outcome on, or
        ``None`` when ``cost`` is ``None`` (nothing is sent, no token spent). ``call``, the
        read's, notes what report mode let a robots.txt redirect through."""
        if robots and self.policy.robots_enabled(tier):
            with span("robots.txt", {"server.address": url.host}):
                await self.robots.check(url, via=self.robots_fetch(agent, tier, call))
        if cost is None:
            return None
        return await self.limiter.acquire(url.host, cost=cost, max_wait_s=max_wait_s, agent=agent)

    def cost_for(self, tier: str) -> float:
        """The tokens one request by ``tier`` spends from its host's bucket."""
        return self.limiter.cost_for(tier)

    async def finish(
        self,
        url: guard.ParsedURL,
        ticket: Ticket | None,
        status: int | None,
        error: WebwardError | None,
        retry_after: float | None,
    ) -> None:
        """A hop ended: its host's metrics, and its outcome on the host's breaker."""
        self.telemetry.hop(url.host, status, error)
        if ticket is not None:
            await self.limiter.record(ticket, status, error, retry_after)

    # ---- the checks of a call, on its first hop -----------------------------------------

    async def admit_read(
        self,
        parsed: guard.ParsedURL,
        agent: str,
        tier: str,
        call: Call,
        *,
        session: str | None,
        screenshot: bool,
    ) -> None:
        """After steps 1 and 2 of a read's first hop: the URL's provenance (agents that
        read only what their session has seen), the screenshot's tier, and the agent's
        budget (a call refused before this costs nothing)."""
        # Most agents read what they like and have no budget: those steps are not entered.
        if agent in self._provenance_agents:
            await self._check_provenance(parsed, agent, session, call)
        if screenshot:
            call.check(self.policy.check_screenshot(tier, agent))
        if self.budgets.charges(agent):
            await self.budgets.charge_call(agent, "fetch", session)

    def remembers(self, agent: str) -> bool:
        """Whether the URLs ``agent`` sees join its session: only an agent with provenance
        ever has its session asked, so only its sessions keep them. Every agent's were kept,
        and one token without provenance, reading a page of 200 long links under a new
        session name per request, put 125 MB in a shared Redis in 3 s (kept a day), past
        whose ``maxmemory`` every other agent was refused ``limits_unavailable``."""
        return agent in self._provenance_agents

    async def _check_provenance(
        self, parsed: guard.ParsedURL, agent: str, session: str | None, call: Call
    ) -> None:
        if self.policy.on_allow_list(parsed.host):
            return
        if session is not None and await self.sessions.has(session, parsed.url):
            return
        report = self.policy.report
        message = refusal_message(parsed.url, agent, session)
        call.check(Decision(report, Reason.URL_NOT_IN_SESSION, message, report))

    def check_search(self, agent: str, tier: str, call: Call) -> None:
        """May ``agent`` at ``tier`` search at all (tiers connected and full)?"""
        call.check(self.policy.check_search(tier, agent))

    async def charge_call(self, agent: str, capability: str, session: str | None) -> None:
        """One call against the agent's (and its session's) call budget."""
        await self.budgets.charge_call(agent, capability, session)

    async def charge_spend(self, agent: str, provider: str, session: str | None) -> None:
        """One provider request's cost against the agent's spend budget."""
        await self.budgets.charge_spend(agent, provider, session)

    async def refund_spend(self, agent: str, provider: str, session: str | None) -> None:
        """Give back a provider request's cost: it was refused before it was sent."""
        await self.budgets.refund_spend(agent, provider, session)

    # ---- hop kinds ----------------------------------------------------------------------

    def page_hops(self, agent: str, tier: str, call: Call, *, spend: bool = True) -> PageHops:
        """The hooks around every hop of a page read (``spend=False``: a cached window)."""
        return PageHops(self, agent, tier, call, spend=spend)

    def render_gate(self, agent: str, tier: str, call: Call) -> RenderGate:
        """The egress proxy's gate for one render on behalf of ``agent``."""
        return RenderGate(self, agent, tier, call)

    async def recheck_cached(
        self,
        redirects: Sequence[str],
        parsed: guard.ParsedURL,
        agent: str,
        tier: str,
        call: Call,
    ) -> None:
        """The hops of a page served from the cache, checked again for this caller.

        The cache key holds neither the agent nor the tier (only plain or rendered), and a
        cached page may have been reached through redirects to other hosts: without this, an
        agent could read through the cache a page its own policy or robots.txt would refuse.
        Nothing is sent to the host, so no token is spent: paging through a long page stays
        quick."""
        # What PageHops(spend=False).before and .after do around each hop, inline: a
        # cached read is the hot path, and no hop here holds a ticket.
        robots = self.policy.robots_enabled(tier)
        try:
            for i, hop_url in enumerate(redirects or (parsed.url,)):
                # Under the operator's limit, as the read that followed the hop was: the
                # default 2,048 refused a long Location's page at its next window.
                hop = (
                    parsed
                    if i == 0
                    else guard.parse_url(hop_url, max_chars=self.limits.max_url_chars)
                )
                call.redirects.append(hop.url)  # the chain so far, if a hop is refused
                if i:  # the first hop was screened before the cache lookup
                    self.screen(hop, agent, tier, call)
                if robots:
                    await self.admit(hop, agent, tier, cost=None, call=call)  # robots.txt only
                self.telemetry.hop(hop.host, None, None)
        except BaseException:
            # Refused at its first hop (this caller's robots.txt): nothing was sent, and
            # nothing of the cached reading handed over, so no URL was visited, as PageHops
            # says. (Refused at a later hop, the chain is the cached reading's up to that hop,
            # as a fresh read's is up to where its redirect led.)
            if len(call.redirects) == 1:
                call.redirects.clear()
            raise

    async def fetch_robots(
        self,
        robots_url: str,
        agent: str = "robots.txt",
        tier: str = "full",
        call: Call | None = None,
    ) -> tuple[int, bytes]:
        """A robots.txt, through the same guard, pinned transport and redirect rules; every
        redirect hop meets the reading agent's tier and policy (noted in ``call``, the read's,
        when report mode lets it through)."""
        parsed = guard.assert_url_allowed(robots_url, allow_ranges=self.allow)
        try:
            result = await fetch(
                self.transport,
                parsed,
                hooks=_RobotsHops(self, agent, tier, call),
                cap_for=lambda status, headers: (_ROBOTS_MAX_BYTES, True),
                timeout_s=self.limits.fetch_timeout_s,
                max_redirects=_ROBOTS_MAX_REDIRECTS,
                headers=(("Accept", "text/plain,*/*;q=0.5"),),
            )
        except UpstreamError as exc:
            if exc.status is not None:
                return exc.status, b""
            raise
        return result.status, result.body.content

    def robots_fetch(self, agent: str, tier: str, call: Call | None = None) -> FetchRobots:
        """The robots.txt fetch for one reading agent: its tier decides every redirect hop."""
        return functools.partial(self.fetch_robots, agent=agent, tier=tier, call=call)

    async def provider_request(
        self,
        provider: str,
        method: str,
        url: str,
        *,
        headers: tuple[tuple[str, str], ...] = (),
        content: bytes | None = None,
    ) -> Body:
        """One request to a search provider: the literal guard, then the limits and breaker
        keyed by provider (no reach policy, no robots.txt: an API the operator configured),
        then the pinned transport. Redirects are not followed.

        The provider's URL is the operator's configuration (an intranet address, a secret
        path): a failure names it, or its host, only in the operator's part of the message
        (``operator_step``), and the query never. A provider that could not be reached and
        one that answered something unreadable are told apart."""
        try:
            parsed = self.literal_guard(url, _PROVIDER_MAX_URL_CHARS)
        except Refused as exc:
            raise _unreachable(provider, url, exc) from None
        key = f"provider:{provider}"
        timeout_s = self.limits.fetch_timeout_s
        deadline = SEARCH_DEADLINE.get()
        if deadline is not None:  # a search's pages share its one deadline, as a read's hops do
            timeout_s = min(timeout_s, max(0.0, deadline - time.monotonic()))

        def timed_out() -> UpstreamError:
            return UpstreamError(
                operator_step(
                    f"the {provider} search provider did not answer within "
                    f"{self.limits.fetch_timeout_s:g} s; try again later",
                    "an operator can raise [limits] fetch_timeout_s",
                    model="",
                ),
                code="timeout",
                reason=Reason.TIMEOUT,
            )

        ends = time.monotonic() + timeout_s
        label = f"the {provider} search provider"
        try:
            # The wait for one of the provider's slots counts against the deadline, as a
            # read's wait for its host's does: queued behind stalled searches, each search
            # waited its turn, then a deadline of its own (40 at once ran 50 s against 5).
            async with self.limiter.guard(key, label=label, within_s=timeout_s) as ticket:
                try:
                    with anyio.fail_after(max(0.0, ends - time.monotonic())):
                        body = await self.transport.request(
                            method,
                            parsed,
                            headers=headers,
                            content=content,
                            cap_for=lambda status, hdrs: (_PROVIDER_MAX_BYTES, True),
                            timeout=timeout_s,
                        )
                except TimeoutError:
                    raise timed_out() from None
                except Refused as exc:  # its name resolved to an address the guard refuses
                    raise _unreachable(provider, parsed.url, exc) from None
                except UpstreamError as exc:
                    raise _provider_fault(provider, parsed.url, exc) from None
                status = body.status
                # An invalid Retry-After (inf, 1e308) is none: the default hold, not the cap.
                # (Imported here: a page read loads none of the search package.)
                from .search._common import QUOTA_STATUSES, rate_headers, unavailable_for

                # A 503 naming a time holds the provider too, as it holds a host for reads
                # (and is a failure as well): asked again at once, it would fail again.
                # Tavily's quota answers (432, 433) are its 429s, and hold it the same way.
                if status in QUOTA_STATUSES:
                    status = 429
                if status == 429:
                    retry_after = retry_after_from_headers(rate_headers(body.headers))
                else:
                    retry_after = unavailable_for(body) if status == 503 else None
                await self.limiter.record(ticket, status, None, retry_after)
        except TimeoutError:  # no slot came free in time
            raise timed_out() from None
        if body.truncated:  # cut at the cap: what is left is no JSON, and no reason to say so
            raise UpstreamError(
                f"the {provider} search provider sent a response larger than "
                f"{_PROVIDER_MAX_BYTES // 1_000_000} MB, more than any page of results needs",
                reason=Reason.PROVIDER_MALFORMED,
                status=body.status,
            )
        return body


# A provider that answered, but with something no HTTP client can read (a status line that is
# not HTTP, oversized headers, a body that does not decompress, stacked encodings): it was
# reached, and its URL and this machine's network are not what to check.
_MALFORMED_ANSWER = frozenset({Reason.PROTOCOL, Reason.ENCODING})


def _endpoint(url: str) -> str:
    """A provider request's URL without its query (the agent's search terms) or fragment."""
    try:
        return urlsplit(url)._replace(query="", fragment="").geturl()
    except ValueError:
        return "its URL"


def _operator_detail(message: str, url: str) -> str:
    """A transport's or the guard's message for the operator: the request's URL (the query
    in it) said as the endpoint, the leading "refused: " dropped."""
    detail = message.removeprefix("refused: ")
    return detail.replace(url, _endpoint(url)) if url else detail


def _unreachable(provider: str, url: str, exc: WebwardError) -> WebwardError:
    """The guard refused the provider's configured URL (or the address its name resolved
    to): the model is told the provider is not reachable, the operator which setting and
    why."""
    from .search._common import url_setting  # (a page read loads none of the search package)

    return Refused(
        operator_step(
            f"refused: the {provider} search provider is not reachable from webward",
            f"{url_setting(provider)} was refused: {_operator_detail(exc.message, url)}",
        ),
        code=exc.code,
        reason=exc.reason,
        status=exc.status,
    )


def _provider_fault(provider: str, url: str, exc: UpstreamError) -> UpstreamError:
    """A transport failure of a provider request, in the provider's name. The host and the
    setting to check are the operator's; a model is told to try again later."""
    from .search._common import url_setting  # (a page read loads none of the search package)

    detail = _operator_detail(exc.message, url)
    setting = url_setting(provider)
    if exc.reason in _MALFORMED_ANSWER:
        why = f"the {provider} search provider sent a malformed answer"
        step = f"{detail}; check that {setting} points at a {provider} search API"
    else:  # no answer: refused, reset, a failed TLS handshake
        why = f"the {provider} search provider could not be reached"
        step = f"check {setting} and this machine's network ({detail})"
    return UpstreamError(
        operator_step(why, step, model="try again later"),
        code=exc.code,
        reason=exc.reason,
        status=exc.status,
    )


#: When the search in progress must be done (``time.monotonic()``), set by the search core:
#: a provider's pages share the read deadline ([limits] fetch_timeout_s) rather than each
#: having their own (five slow SearXNG pages took a minute).
SEARCH_DEADLINE: ContextVar[float | None] = ContextVar("webward_search_deadline", default=None)


class PageHops:
    """The hooks ``_fetch.fetch`` calls around every hop of a page read, keeping the call's
    chain to what was sent.

    Each hop's URL goes into the call's chain before the hop's checks, so that a read
    refused at a redirect's hop says where the redirect led. A first hop those checks refuse
    (rate limit, breaker, robots.txt, a concurrency slot, the deadline while waiting for one)
    sent nothing, and its URL leaves the chain: ``redirects`` holds the URLs the read went to
    the network for and, last, where a redirect led if that hop was refused; never a URL of a
    read that sent nothing. ``status`` follows the answers as they come, so a read refused at
    a redirect's hop keeps the 3xx that led there.
    """

    def __init__(self, gate: Gate, agent: str, tier: str, call: Call, *, spend: bool) -> None:
        self._gate, self._agent, self._tier, self._call = gate, agent, tier, call
        self._spend = spend  # False for a window served from the cache: no request is sent
        self._first = True
        self._ticket: Ticket | None = None  # hops are sequential: one ticket at a time

    async def before(self, url: guard.ParsedURL) -> None:
        call, first = self._call, self._first
        call.redirects.append(url.url)  # the chain so far, if a hop is refused
        try:
            if not first:  # the first hop was screened before the cache lookup
                self._gate.screen(url, self._agent, self._tier, call)
            self._first = False
            cost = self._gate.cost_for(self._tier) if self._spend else None
            self._ticket = await self._gate.admit(
                url, self._agent, self._tier, cost=cost, call=call
            )
        except BaseException:
            if first:
                call.redirects.clear()  # the first hop: only its own URL, never sent
            raise

    async def after(
        self,
        url: guard.ParsedURL,
        status: int | None,
        error: WebwardError | None,
        retry_after: float | None,
    ) -> None:
        if status is not None:
            self._call.status = status  # the last answer so far (the read's end sets its own)
        ticket, self._ticket = self._ticket, None
        await self._gate.finish(url, ticket, status, error, retry_after)

    def led_to(self, location: str) -> None:
        # As a hop's URL: the record drops its credentials, as from every URL it holds.
        self._call.redirects.append(location)


class _RobotsHops(PageHops):
    """robots.txt hops: every hop screened (the reading agent's tier and lists decide where
    a robots.txt redirect may carry webward) and one token from the host's bucket; no
    robots.txt of robots.txt, and no hops of its own in a call record (the read's record has
    the read). What report mode lets through is noted in the read's call: unnoted, the read
    was recorded allowed while its robots.txt was fetched from a denied host."""

    def __init__(self, gate: Gate, agent: str, tier: str, reading: Call | None) -> None:
        super().__init__(gate, agent, tier, Call("", agent, ""), spend=True)
        self._reading = reading

    async def before(self, url: guard.ParsedURL) -> None:
        self._gate.screen(url, self._agent, self._tier, self._reading)
        self._ticket = await self._gate.admit(url, self._agent, self._tier, robots=False, cost=1.0)


class RenderGate:
    """The egress proxy's gate for one render, bound to the calling agent and its call.

    Every request the page makes passes the gate's steps as a page read's hop does (the
    literal guard, the agent's reach policy, robots.txt for the agent's tier, the host's
    limits and breaker, waiting up to a second for a token), then the pinned transport. On
    top, only GET and HEAD, and at most ``limits.render_max_requests`` requests per render.
    The hosts the render contacted and those refused (with the reason) go into the call
    record, at most ``_MAX_LISTED`` of each and then a last entry counting the rest
    (:class:`_HostList`).
    """

    _METHODS = ("GET", "HEAD")
    _MAX_LISTED = 50  # hosts kept per list in the audit record: a record stays small
    _MAX_WAIT_S = 1.0  # a subresource may wait this long for its host's rate budget

    def __init__(self, gate: Gate, agent: str, tier: str, call: Call) -> None:
        self._gate, self._agent, self._tier = gate, agent, tier
        self._contacted = _HostList(call.render_contacted, self._MAX_LISTED)
        self._refused = _HostList(call.render_refused, self._MAX_LISTED)
        self.requests = 0
        self.exhausted = anyio.Event()  # set once the request cap refused a request

    async def check_tunnel(self, url: str) -> guard.ParsedURL:
        # Opening a tunnel connects nowhere (the proxy ends its TLS): the name is resolved
        # and its addresses checked for each request inside, when one is sent.
        try:
            return self._screen(url)
        except WebwardError as exc:
            self._refuse(_authority_of(url), exc)
            raise

    def refuse(self, url: str, exc: WebwardError) -> None:
        self._refuse(_authority_of(url), exc)

    async def request(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], cap_for: CapFor
    ) -> Body:
        gate = self._gate
        self.requests += 1
        try:
            # The target is screened first (pure: no connection, no name resolved), so that a
            # request refused anyway for its method or past the cap is still recorded as the
            # internal target it is, and keeps its place in a full list: a page could
            # otherwise hide a beacon to the metadata address behind 50 junk POSTs.
            limit = gate.limits.render_max_requests
            if self.requests > limit:
                self.exhausted.set()
            parsed = self._screen(url)
            if self.requests > limit:
                # The proxy answers a refusal with the model's message, which a refused frame
                # of the page's own origin shows in the page's text: it names no setting.
                raise Refused(
                    operator_step(
                        f"refused: a render may send at most {limit} requests",
                        "raise [limits] render_max_requests",
                        model="",
                    ),
                    reason=Reason.RENDER_REQUESTS,
                )
            if method not in self._METHODS:
                raise Refused(
                    f"refused: the renderer sends only GET and HEAD requests, not {method[:20]}",
                    reason=Reason.RENDER_METHOD,
                )
            ticket = await gate.admit(
                parsed,
                self._agent,
                self._tier,
                cost=gate.cost_for(self._tier),
                max_wait_s=self._MAX_WAIT_S,
            )
            assert ticket is not None  # a cost was given
        except WebwardError as exc:
            self._refuse(_authority_of(url), exc)
            raise
        try:
            body = await gate.transport.request(
                method,
                parsed,
                headers=headers,
                cap_for=cap_for,
                timeout=gate.limits.fetch_timeout_s,
            )
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                if isinstance(exc, WebwardError):
                    await gate.limiter.record(ticket, exc.status, exc, None)
                else:
                    await gate.limiter.release(ticket)
            if isinstance(exc, Refused):  # the resolver's answer was internal: no connection
                self._refuse(parsed.authority, exc)
            else:
                self._contacted.note(parsed.authority)  # tried, at least
            raise
        self._contacted.note(parsed.authority)
        retry_after = retry_after_from_headers(body.headers) if body.status == 429 else None
        await gate.limiter.record(ticket, body.status, None, retry_after)
        return body

    def _screen(self, url: str) -> guard.ParsedURL:
        """Steps 1 and 2; report mode lets a would-deny host through, as it does a page
        read's, without a note (the render's hosts are listed in the record)."""
        return self._gate.screen(url, self._agent, self._tier)

    def _refuse(self, authority: str, exc: WebwardError) -> None:
        # An internal target the page tried is what an operator most needs to see: it keeps
        # its place in a full list ahead of other refused hosts.
        internal = exc.reason in (Reason.INTERNAL_ADDRESS, Reason.INTERNAL_NAME)
        self._refused.note(f"{authority} ({exc.reason})", keep=internal)


class _HostList:
    """One of a render's host lists in its call record (``into``, updated in place):
    distinct entries, at most ``cap`` of them, then a last entry saying how many more there
    were, so that a page cannot hide a host unseen by touching many others first. In a full
    list, an entry to ``keep`` takes the place of the latest one not kept."""

    _MAX_SEEN = 10_000  # distinct entries remembered; past it, left-out ones are not counted

    def __init__(self, into: list[str], cap: int) -> None:
        self._into, self._cap = into, cap
        self._listed: list[tuple[str, bool]] = []  # (entry, keep)
        self._seen: set[str] = set()
        self._more = 0  # distinct entries left out

    def note(self, entry: str, *, keep: bool = False) -> None:
        if entry in self._seen or any(entry == listed for listed, _ in self._listed):
            return
        counting = len(self._seen) < self._MAX_SEEN
        if counting:
            self._seen.add(entry)
        if len(self._listed) < self._cap:
            self._listed.append((entry, keep))
        else:
            if counting:  # one entry more is left out: this one, or the one it replaces
                self._more += 1
            others = [i for i, (_, kept) in enumerate(self._listed) if not kept] if keep else []
            if others:
                del self._listed[others[-1]]
                self._listed.append((entry, keep))
        self._into[:] = [listed for listed, _ in self._listed]
        if self._more:
            over = "" if counting else "over "
            self._into.append(f"... and {over}{self._more} more host{'s' * (self._more > 1)}")


def _authority_of(url: str) -> str:
    """``host[:port]`` of a URL for the audit record, without any user info."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = parts.port
    except ValueError:
        return "?"
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port}" if port is not None else host
