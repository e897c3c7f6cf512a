"""What every provider adapter shares: the HTTP seam, text cleaning, hit collection,
JSON reading and the rate-limit answer.

Adapters never echo a provider's error body: they read its error *code* to classify the
failure and then say what happened in their own words.
"""

from __future__ import annotations

import email.utils
import html
import itertools
import json
import re
import time
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from .. import _urls as urls
from .._credentials import Secret
from .._errors import Reason, Refused, UpstreamError, WebwardError, human_wait, operator_step
from .._models import Hit
from ..limits import MAX_BACKPRESSURE_S, retry_after_from_headers

__all__ = [
    "Http",
    "Response",
    "clean_text",
    "clean_url",
    "collect",
    "rate_headers",
    "rate_limited",
    "read_json",
    "retry_after",
]

#: Set by an adapter whose later page of results failed: the first pages' hits stand, and the
#: search's result says why there are fewer than asked for (``_search_core`` reads it).
CUT_SHORT: ContextVar[str | None] = ContextVar("webward_search_cut_short", default=None)


def later_page_failed(exc: WebwardError) -> None:
    CUT_SHORT.set(exc.for_model)  # the result is the model's: no operator step


MAX_TITLE_CHARS = 300
MAX_SNIPPET_CHARS = 1000
MAX_PUBLISHED_CHARS = 40
MAX_HIT_URL_CHARS = 2048
# Quota resets can be a month away; anything further is a provider's mistake.
_MAX_RETRY_AFTER_S = 32 * 24 * 3600.0
#: Tavily's documented quota answers, 432 (plan limit) and 433 (pay-as-you-go limit): its
#: 429s for a quota. No other provider sends them. ``Gate.provider_request`` holds the
#: provider on them as on a 429: asked again at once, each would cost a call and say the same.
QUOTA_STATUSES = frozenset({432, 433})


class Response(Protocol):
    """What a provider call returns (``webward._transport.Body`` has this shape)."""

    @property
    def status(self) -> int: ...

    @property
    def content(self) -> bytes: ...

    def header(self, name: str) -> str | None: ...


class Http(Protocol):
    """One HTTP call to a provider: ``Web.provider_request`` with the provider bound."""

    def __call__(
        self,
        method: str,
        url: str,
        *,
        headers: tuple[tuple[str, str], ...] = (),
        content: bytes | None = None,
    ) -> Awaitable[Response]: ...


# Tags as providers send them (highlight markup, stray paragraph tags), before unescaping.
_TAG = re.compile(r"<[A-Za-z/!][^<>]{0,500}>")
# After unescaping, only the markup providers use for highlights: ``&lt;b&gt;`` style
# double-encoding, without eating text such as "a <b and c> d" wholesale.
_INLINE_TAG = re.compile(
    r"</?(?:strong|b|em|i|mark|span|u|small|br|p|a|sup|sub|code)\b[^<>]{0,200}>", re.I
)


def clean_text(value: Any, max_chars: int) -> str:
    """Provider text as one plain line: tags stripped, entities decoded, control and
    invisible characters dropped, whitespace collapsed, cut at ``max_chars``."""
    if not isinstance(value, str):
        return ""
    text = _TAG.sub("", value)
    # Providers pass on text a site escaped twice ("AT&amp;amp;T"): decoded until it holds
    # no more entities, a few times at most.
    for _ in range(3):
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    return plain_line(_INLINE_TAG.sub("", text), max_chars)


def plain_line(value: Any, max_chars: int) -> str:
    """Text as one plain line (the part of :func:`clean_text` that does not read markup, so
    that text made by it comes out the same): control and invisible characters dropped,
    whitespace collapsed, cut at ``max_chars``; ``""`` for what is not text."""
    if not isinstance(value, str):
        return ""
    text = value[: max_chars * 4]  # a line far past its cap is cut before it is walked
    text = "".join(
        " " if ch.isspace() else ch
        for ch in text
        if unicodedata.category(ch) not in ("Cc", "Cf") or ch.isspace()
    )
    text = " ".join(text.split())
    if len(text) > max_chars:
        text = text[: max_chars - 1].rstrip() + "…"
    return text


def clean_url(value: Any) -> str | None:
    """A hit's URL as an absolute http(s) URL in ASCII form, or None to drop the hit."""
    return urls.clean_url(value, MAX_HIT_URL_CHARS)


def _dedupe_key(url: str) -> str:
    # The fragment never names a different document; a trailing slash rarely does; the
    # scheme's default port written out (``https://host:443/``) never does.
    base = url.split("#", 1)[0]
    parts = urlsplit(base)
    if (parts.scheme, parts.port) in (("http", 80), ("https", 443)):
        base = parts._replace(netloc=parts.netloc.rsplit(":", 1)[0]).geturl()
    return base[:-1] if base.endswith("/") else base


def make_hit(title: Any, url: Any, snippet: Any, published: Any = None) -> Hit | None:
    """A cleaned hit, or None when its URL is not an absolute http(s) URL."""
    clean = clean_url(url)
    if clean is None:
        return None
    pub = clean_text(published, MAX_PUBLISHED_CHARS) or None
    return Hit(
        title=clean_text(title, MAX_TITLE_CHARS) or clean,
        url=clean,
        snippet=clean_text(snippet, MAX_SNIPPET_CHARS),
        published=pub,
    )


#: Results read from one page at most, whatever it holds: no provider's page holds more than a
#: few dozen (Brave's and Tavily's at most 20, SearXNG's about 20), so the rest is padding.
MAX_RESULTS_READ = 200


def collect(into: list[Hit], seen: set[str], hits: Iterable[Hit | None], limit: int) -> int:
    """Append new hits (de-duplicated by URL) until ``limit``; returns how many were new.

    ``hits`` is read no further than the hit that reaches ``limit``, nor past
    :data:`MAX_RESULTS_READ`: the adapters clean each result as it is read (tags, entities,
    IDNA), and a provider answering with thousands of results for a count of 10 held the
    event loop for a second cleaning hits to discard; thousands it had padded with what
    is no hit (``javascript:`` URLs, repeats), which reach no limit, held it 0.4 s a page."""
    added = 0
    if len(into) >= limit:
        return added
    for hit in itertools.islice(hits, MAX_RESULTS_READ):
        if hit is None:
            continue
        key = _dedupe_key(hit.url)
        if key in seen:
            continue
        seen.add(key)
        into.append(hit)
        added += 1
        if len(into) >= limit:
            break
    return added


# A key shorter than this is no real provider's (Brave's are 31 characters, Tavily's 37 or
# more): one that short would be found in innocent text, and fail every search holding it.
_MIN_ECHOED_KEY_CHARS = 8
# How much of a key, in one piece, counts as the key shown: a field's cap cuts an echoed key
# short ("…tvly-dev-0123456789ab…"), and what is left still gives most of it away. Sixteen
# characters hold at least seven of the key's random ones past any vendor prefix
# ("tvly-dev-"), which no innocent text spells by chance.
_ECHOED_KEY_PIECE = 16


def holds_key(text: str, key: Secret) -> bool:
    """Whether ``text`` shows ``key``, or a piece of it of :data:`_ECHOED_KEY_PIECE`
    characters, case folded."""
    secret = key.reveal().casefold()
    if len(secret) < _MIN_ECHOED_KEY_CHARS:
        return False
    size = min(len(secret), _ECHOED_KEY_PIECE)
    folded = text.casefold()
    return any(secret[i : i + size] in folded for i in range(len(secret) - size + 1))


def refuse_echoed_key(hits: Iterable[Hit], key: Secret, provider: str) -> None:
    """An ``UpstreamError`` when a hit holds ``key`` (:func:`holds_key`), the key webward
    sent the provider.

    No provider echoes its key into its results: an endpoint that does is not the provider's
    API (``[search] <provider>_url`` pointing at an echo service, a proxy's or an attacker's
    server), and what it answers would hand the key to the model, its transcripts and every
    face that shows hits. The whole answer goes: a key split across fields would slip past a
    check of single hits. Looked for as the hits show it (tags, entities and invisible
    characters already gone, cut at each field's cap), and in the URL with its percent
    escapes decoded."""
    for hit in hits:
        for text in (hit.title, hit.url, unquote(hit.url), hit.snippet, hit.published or ""):
            if holds_key(text, key):
                raise UpstreamError(
                    operator_step(
                        f"the {provider} search provider's answer held webward's key for it, "
                        "so none of it is shown",
                        f"check that {url_setting(provider)} points at {provider}'s API, and "
                        "replace the key: it went to whatever answered",
                        model="",
                    ),
                    reason=Reason.PROVIDER_MALFORMED,
                    status=200,
                )


def read_json(body: Response, provider: str) -> Any:
    """The body as JSON, or an ``UpstreamError`` that says what came instead (never what
    it said: an HTML challenge page or an error text is not shown to the model)."""
    page = web_page(body, provider)
    if page is not None:
        raise page
    try:
        return json.loads(body.content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise UpstreamError(
            f"the {provider} search provider sent a malformed JSON response (HTTP {body.status})",
            reason=Reason.PROVIDER_MALFORMED,
            status=body.status,
        ) from None


def web_page(body: Response, provider: str) -> UpstreamError | None:
    """The error for a web page where JSON belongs (a bot check, a proxy's own page), or
    None when the body is no HTML."""
    ctype = (body.header("content-type") or "").lower()
    if "html" not in ctype and body.content.lstrip()[:1] != b"<":
        return None
    return UpstreamError(
        f"the {provider} search provider sent a web page instead of JSON (HTTP {body.status}), "
        "perhaps a bot check; try again later",
        reason=Reason.PROVIDER_MALFORMED,
        status=body.status,
    )


def try_json(body: Response) -> Any:
    """The body as JSON, or None: for error bodies, read only to classify."""
    try:
        return json.loads(body.content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


_DIGITS = re.compile(r"[0-9]+")
_RATE_HEADERS = ("retry-after", "x-ratelimit-reset", "x-ratelimit-remaining")


def _valid_rate_header(name: str, value: str) -> bool:
    """Whether a provider's wait header says a wait: ``Retry-After`` is delay-seconds
    (``1*DIGIT``, RFC 9110 section 10.2.3) or an HTTP date; the ``X-RateLimit-*`` headers
    are whole numbers, one per window. ``inf``, ``1e308``, ``-5`` or ``NaN`` say none."""
    value = value.strip()
    if name == "retry-after":
        if _DIGITS.fullmatch(value):
            return True
        try:
            email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return False
        return True
    return all(_DIGITS.fullmatch(part.strip()) for part in value.split(","))


def rate_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """A provider's wait headers (``Retry-After``, ``X-RateLimit-Reset``/``-Remaining``) that
    say a wait, the first of each name: an invalid one is no header at all."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    found: dict[str, str] = {}
    for name, value in pairs:
        found.setdefault(name.lower(), value)
    return [
        (name, value)
        for name in _RATE_HEADERS
        if (value := found.get(name)) is not None and _valid_rate_header(name, value)
    ]


def retry_after(body: Response, now: Callable[[], float]) -> float | None:
    """Seconds until the provider lets us try again: ``Retry-After`` (seconds or an HTTP
    date), else Brave's ``X-RateLimit-Reset`` (one number per window, comma separated; the
    windows whose ``X-RateLimit-Remaining`` is 0 are the ones that matter). Never more than
    32 days (:data:`_MAX_RETRY_AFTER_S`); an invalid value is no value."""
    headers = rate_headers([(n, v) for n in _RATE_HEADERS if (v := body.header(n)) is not None])
    # Quotas reset monthly, so a provider's wait may be far longer than a host's hold.
    return retry_after_from_headers(headers, now(), cap=_MAX_RETRY_AFTER_S)


def rate_limited(
    what: str,
    body: Response,
    now: Callable[[], float],
    *,
    reason: str = Reason.PROVIDER_RATE_LIMITED,
    step: str = "",
) -> Refused:
    """``Refused(rate_limited)`` saying ``what`` and, when known, when to retry; ``step``,
    what the operator can do about it, is the operator's (``operator_step``): a model is
    told that only webward's operator can change that.

    A 429 holds the provider in the limiter for at most :data:`MAX_BACKPRESSURE_S`; past
    that webward asks it again. So a longer wait (a monthly quota's reset) is said as the
    provider's, and the retry is webward's: the calls refused during the hold then name
    the same time, counting down, rather than the first naming days and the next an hour.
    """
    wait = retry_after(body, now)
    if wait is not None and wait <= 0:  # a Retry-After already past says nothing of when
        wait = None
    if wait is None:
        when = "; try again later"
    elif (body.status == 429 or body.status in QUOTA_STATUSES) and wait > MAX_BACKPRESSURE_S:
        # At the cap, the provider said more (or a year): the cap is webward's, not its.
        said = human_wait(wait) + (" or more" if wait >= _MAX_RETRY_AFTER_S else "")
        when = (
            f"; it says to wait {said}, and webward asks it again in "
            f"{human_wait(MAX_BACKPRESSURE_S)}"
        )
        wait = MAX_BACKPRESSURE_S
    else:
        when = f"; retry in {human_wait(wait)}"
    message = f"rate limited: {what}{when}"
    return Refused(
        operator_step(message, step) if step else message,
        code="rate_limited",
        reason=reason,
        retry_after=wait,
        status=body.status,
    )


def url_setting(provider: str) -> str:
    """The provider's URL setting by both its names: a URL set in the variable has no config
    key to look at."""
    name = provider.lower()
    return f"[search] {name}_url (or WEBWARD_{name.upper()}_URL)"


def provider_failed(
    provider: str,
    body: Response,
    now: Callable[[], float] = time.time,
    *,
    key: Secret | None = None,
) -> UpstreamError:
    """The generic failure: the provider answered with an error status; a 503 with a
    ``Retry-After`` (maintenance, overload) says when, as a page read's does, and webward
    holds the provider until then (``Gate.provider_request``).

    A redirect is no failure to try again: provider requests do not follow redirects (the
    key would go wherever one points), so the same call is redirected every time until the
    operator points ``[search] <provider>_url`` at where it leads. ``key``, the key the request
    carried: a ``Location`` that holds it is not named (it would put the key in the logs)."""
    if 300 <= body.status < 400:
        where = _redirect_target(body.header("location"), key)
        return UpstreamError(
            operator_step(
                f"the {provider} search provider answered with a redirect (HTTP {body.status}), "
                "which webward does not follow for a provider",
                f"point {url_setting(provider)} at where it redirects{where}",
            ),
            reason=Reason.PROVIDER_ERROR,
            status=body.status,
        )
    wait = unavailable_for(body, now()) if body.status == 503 else None
    when = f"retry in {human_wait(wait)}" if wait else "try again later"
    return UpstreamError(
        f"the {provider} search provider failed (HTTP {body.status}); {when}",
        reason=Reason.PROVIDER_ERROR,
        retry_after=wait or None,
        status=body.status,
    )


def unavailable_for(body: Response, now: float | None = None) -> float | None:
    """Seconds a 503's valid ``Retry-After`` asks for (at most :data:`MAX_BACKPRESSURE_S`),
    or None. Only that header: Brave sends its ``X-RateLimit-*`` windows on every answer,
    and they say nothing of an outage."""
    value = body.header("retry-after")
    if value is None or not _valid_rate_header("retry-after", value):
        return None
    return retry_after_from_headers([("retry-after", value)], now)


def _redirect_target(location: str | None, key: Secret | None = None) -> str:
    """`` (scheme://host:port)`` of an absolute http(s) ``Location``, for the operator, or
    ``""``: the origin only, since its path holds the adapter's own endpoint and its query
    may echo the agent's search terms back; none when it holds ``key`` (an endpoint that
    echoes the key into the host name it redirects to)."""
    url = urls.clean_url(location, MAX_HIT_URL_CHARS) if location else None
    if url is None:
        return ""
    if key is not None and holds_key(unquote(url), key):
        return ""
    parts = urlsplit(url)
    return f" ({parts.scheme}://{parts.netloc})"
