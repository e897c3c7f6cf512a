"""The guarded read: redirects followed by webward itself, under one deadline.

Every hop — the first included — goes through ``hooks.before`` (literal guard, policy,
rate limit, circuit breaker, robots.txt) and the pinned transport; ``hooks.after`` learns how
the hop went (for the breaker). No cookies or credentials are ever sent, so none can cross
origins. A redirect loop, too many hops and a slow server are refused by name.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from dataclasses import dataclass
from typing import Protocol

import anyio

from . import guard
from ._addresses import quoted
from ._errors import (
    InvalidInput,
    Reason,
    Refused,
    UpstreamError,
    WebwardError,
    http_status_reason,
    human_wait,
    operator_step,
)
from ._redact import drop_userinfo
from ._transport import Body, CapFor, Transport
from .limits import parse_retry_after

__all__ = ["PAGE_ACCEPT", "FetchResult", "Hooks", "fetch"]

_REDIRECTS = {301, 302, 303, 307, 308}

#: What a page read asks for: Markdown alongside HTML (Cloudflare's "Markdown for Agents" and
#: sites like it answer ``text/markdown`` to a request that lists it; the rest send HTML).
PAGE_ACCEPT = "text/markdown,text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8"


class Hooks(Protocol):
    """What runs around each hop of a read."""

    async def before(self, url: guard.ParsedURL) -> None:
        """Refuse (raise) or let the hop go ahead."""
        ...

    async def after(
        self,
        url: guard.ParsedURL,
        status: int | None,
        error: WebwardError | None,
        retry_after: float | None,
    ) -> None:
        """Record how the hop went (status, or the error that ended it)."""
        ...

    def led_to(self, location: str) -> None:
        """Record where a redirect led when that is refused before it is a hop (another
        scheme, credentials in the URL): the chain the call records ends there."""
        ...


@dataclass(frozen=True)
class FetchResult:
    final: guard.ParsedURL
    body: Body
    redirects: tuple[str, ...]  # every URL visited, the requested one first

    @property
    def status(self) -> int:
        return self.body.status

    @property
    def content_type(self) -> str | None:
        return self.body.header("content-type")


async def fetch(
    transport: Transport,
    url: guard.ParsedURL,
    *,
    hooks: Hooks,
    cap_for: CapFor,
    timeout_s: float,
    max_redirects: int,
    max_url_chars: int = guard.DEFAULT_MAX_URL_CHARS,
    headers: tuple[tuple[str, str], ...] = (("Accept", PAGE_ACCEPT),),
    conditional: tuple[str, tuple[tuple[str, str], ...]] | None = None,
    deadline: float | None = None,
) -> FetchResult:
    """GET ``url`` following redirects; the whole read has ``timeout_s`` seconds, or until
    ``deadline`` (``anyio.current_time()``) when the call began earlier (a read that waited
    for another of the same page first).

    ``conditional`` is ``(url, validators)``: the hop to that URL (where a cached page was
    read) also sends the validators (``If-None-Match`` / ``If-Modified-Since``), and may come
    back 304. Other hops never carry them: they describe that one response.
    """
    chain: list[str] = [url.url]
    current = url
    if deadline is None:
        deadline = anyio.current_time() + timeout_s
    admitting: guard.ParsedURL | None = None  # the hop whose checks are running, if any
    try:
        with anyio.fail_at(deadline) as deadline_scope:
            while True:
                admitting = current
                await hooks.before(current)  # robots.txt and the host's limits
                admitting = None
                hop_headers = headers
                asked_if_changed = False
                if conditional is not None and current.url == conditional[0]:
                    hop_headers = headers + conditional[1]
                    asked_if_changed = True
                body = await _hop(
                    transport, current, hooks, cap_for, timeout_s, hop_headers, deadline_scope
                )
                if body.status == 304 and not asked_if_changed:
                    # Only a conditional request may be answered "not modified": to any other
                    # there is no page to read, and an empty success would hide that.
                    raise _no_page(current, body.status, "to a request that was not conditional")
                if body.status == 206:
                    # Part of a page to a request that asked for no range: read as the page,
                    # what is missing would go unsaid.
                    raise _no_page(current, body.status, "to a request for the whole page")
                if body.status not in _REDIRECTS:
                    return FetchResult(current, body, tuple(chain))
                location = body.header("location")
                if not location:
                    raise _no_page(current, body.status, "without a Location header")
                # Two different Locations name no one page: the first was followed, and a cache
                # or proxy on the way may follow the other (browsers refuse such an answer).
                locations = {v.strip() for k, v in body.headers if k.lower() == "location"}
                if len(locations) > 1:
                    raise _no_page(
                        current, body.status, f"with {len(locations)} different Location headers"
                    )
                nxt = _follow(current, body.status, location, max_url_chars, hooks)
                if nxt.url in chain:
                    raise Refused(
                        f"refused: {url.url} redirects in a loop (back to {nxt.url})",
                        reason=Reason.REDIRECT_LOOP,
                    )
                if len(chain) > max_redirects:
                    raise Refused(
                        f"refused: {url.url} redirected more than {max_redirects} times",
                        reason=Reason.TOO_MANY_REDIRECTS,
                    )
                chain.append(nxt.url)
                current = nxt
    except TimeoutError:
        # Time spent before a hop's request went out is not the page's: a robots.txt that
        # never answers was blamed on the page itself.
        where = (
            ""
            if admitting is None
            else f" (still waiting for robots.txt or a rate-limit slot of {admitting.host})"
        )
        raise UpstreamError(
            operator_step(
                f"reading {url.url} took longer than {timeout_s:g} s{where} and was stopped; "
                "try again later",
                "an operator can raise [limits] fetch_timeout_s",
                model="",
            ),
            code="timeout",
            reason=Reason.DEADLINE,
        ) from None


async def _hop(
    transport: Transport,
    url: guard.ParsedURL,
    hooks: Hooks,
    cap_for: CapFor,
    timeout_s: float,
    headers: tuple[tuple[str, str], ...],
    deadline: anyio.CancelScope,
) -> Body:
    try:
        body = await transport.request(
            "GET",
            url,
            headers=headers,
            cap_for=cap_for,
            timeout=timeout_s,
            read_body=lambda status: status not in _REDIRECTS and status < 400,
        )
    except BaseException as exc:
        # Whatever ends the hop — an error, the deadline's cancellation, a bug — the hooks
        # hear of it, so a concurrency slot is never leaked and the breaker counts failures.
        error: WebwardError | None = None
        if isinstance(exc, WebwardError):
            error = exc
        elif isinstance(exc, anyio.get_cancelled_exc_class()) and deadline.cancel_called:
            error = UpstreamError(
                f"{url.host} did not answer in time", code="timeout", reason=Reason.TIMEOUT
            )
        # Else the caller's cancellation (a client that left, Ctrl-C) or a bug of webward's:
        # it says nothing of the host, and ends the hop as no answer does (neutral). Counted
        # as the host's failure, five readers that gave up opened its circuit for everyone.
        with anyio.CancelScope(shield=True):
            await hooks.after(url, None, error, None)
        raise
    retry_after = (
        parse_retry_after(body.header("retry-after")) if body.status in (429, 503) else None
    )
    await hooks.after(url, body.status, None, retry_after)
    if body.status >= 400:
        raise _http_error(url, body.status, retry_after)
    return body


def _follow(
    current: guard.ParsedURL, status: int, location: str, max_url_chars: int, hooks: Hooks
) -> guard.ParsedURL:
    """The URL a redirect's ``Location`` leads to (the next hop then meets the guard, the
    policy and the rest in ``hooks.before``, like the first).

    The transport reads header bytes as latin-1, one character per byte; browsers read a
    Location as UTF-8, so /café sent raw is /caf%C3%A9 and not /caf%C3%83%C2%A9. A Location
    that is no URL at all is the server's fault, not the caller's: an upstream error that says
    so. A Location the guard refuses (another scheme, credentials) stays refused.
    """
    with contextlib.suppress(UnicodeError):  # not UTF-8: each byte stays its latin-1 character
        location = location.encode("latin-1").decode("utf-8")
    try:
        return current.join(location, max_chars=max_url_chars)
    except Refused as exc:
        # The caller asked for an http(s) URL: "the scheme file: is not allowed" alone left
        # them to guess where file: came from. Named as the redirect it was, and recorded.
        # Credentials go before the join too: urllib reads http:\\user:pw@host (an authority
        # to WHATWG, and to the guard, which refused it) as a path, a password kept in it.
        given, location = location, drop_userinfo(location)
        with contextlib.suppress(ValueError):  # recorded where it leads, as hops are
            location = urllib.parse.urljoin(current.url, location)
        hooks.led_to(location)
        shown = drop_userinfo(location)
        dropped = shown != location or given != drop_userinfo(given)
        left_out = " (its credentials left out here)" if dropped else ""
        raise Refused(
            f"refused: {current.url} redirected to {quoted(shown)}{left_out}, and "
            f"{exc.message.removeprefix('refused: ')}",
            code=exc.code,
            reason=exc.reason,
        ) from None
    except InvalidInput as exc:
        raise UpstreamError(
            f"{current.url} answered HTTP {status} with a redirect Location that is not a "
            f"usable URL ({quoted(drop_userinfo(location))}): {exc.message.rstrip('.')}",
            reason=Reason.PROTOCOL,
        ) from exc


def _no_page(url: guard.ParsedURL, status: int, why: str) -> UpstreamError:
    """A 3xx the read cannot go on from: nothing to follow, no page to read."""
    return UpstreamError(
        f"{url.url} answered HTTP {status}{_phrase(status)} {why}, so there is no page to read",
        reason=Reason.PROTOCOL,
        # The status goes on the record; robots.txt reads it as before (3xx: allow all).
        status=status,
    )


def _phrase(status: int) -> str:
    from http import HTTPStatus

    try:
        return f" {HTTPStatus(status).phrase}"
    except ValueError:
        return ""


# What an error status means for whoever reads the message, and what to do next: a bare
# "answered HTTP 401 Unauthorized" left a model to guess whether to retry, log in or move on.
_NEXT_STEP = {
    401: "the page needs a login, which webward never sends; find the content at a public URL",
    403: "the site does not serve this page to webward; find the content elsewhere",
    404: "there is no page at this URL; check it for typos or find the page's current address",
    # Not refused for what was asked, but for when: the same request may well pass later.
    408: "the site gave up waiting for the request; try again in a moment",
    410: "the site has removed this page; find the content elsewhere",
    425: "the site would not take the request this early; try again in a moment",
    429: "the site is limiting how often it is read; wait a little before reading it again",
    451: "the site withholds this page for legal reasons; find the content elsewhere",
}


def _next_step(status: int, retry_after: float | None) -> str:
    if retry_after is not None:  # the site said when (429, 503)
        return f"; retry in {human_wait(retry_after)}"
    if status in _NEXT_STEP:
        return f": {_NEXT_STEP[status]}"
    if 500 <= status < 600:
        return ": the site failed to serve it; try again later"
    if status < 500:
        return ": the site refused the request, and the same request will be refused again"
    return ": that is no HTTP status a page is served with; find the content elsewhere"


def _http_error(url: guard.ParsedURL, status: int, retry_after: float | None) -> UpstreamError:
    return UpstreamError(
        f"{url.url} answered HTTP {status}{_phrase(status)}{_next_step(status, retry_after)}",
        reason=http_status_reason(status),
        status=status,
        retry_after=retry_after,
    )
