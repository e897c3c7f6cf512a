"""JSON over HTTP to a model vendor's API, with every failure as one ``UpstreamError``.

Model API calls are not web reads: they go to the configured vendor base URL (a hosted API or a
local OpenAI-compatible server), not through the guard, the tiers or the audit log. They use
httpcore (already a runtime dependency), which never reads proxy settings from the environment.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import httpcore

from .._credentials import mask
from .._envelope import neutralise_line
from .._errors import InvalidInput, Reason, UpstreamError, human_wait
from .._unicode import replace_surrogates_in
from ..limits import MAX_BACKPRESSURE_S, parse_retry_after

__all__ = ["JsonClient"]

# A model turn with a long answer can take minutes; connecting should not. The whole call
# (all its reads: a server sending a byte a minute is cut off too) has _CALL_S.
_TIMEOUTS = {"connect": 15.0, "read": 600.0, "write": 60.0, "pool": 15.0}
_CALL_S = 600.0
# A model's answer, tool calls included, is far smaller; a server sending more is refused
# before it fills the memory.
_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
# Answers worth another try, as the vendors' own SDKs retry them: timeout, rate limited,
# the server's failures and Anthropic's "overloaded"; and a connection refused or cut. At
# most _RETRIES more tries, after the server's Retry-After when it names one within
# _MAX_RETRY_WAIT_S (a longer wait is the caller's to decide: the message names it), else
# _BACKOFF_S, then twice that.
_RETRY_STATUSES = frozenset((408, 429, 500, 502, 503, 504, 529))
_RETRIES = 2
_MAX_RETRY_WAIT_S = 5.0
_BACKOFF_S = 1.0
_MAX_MESSAGE = 300
# A vendor's error text is looked at this far (the key search is quadratic in it).
_MAX_VENDOR_TEXT = 2_000
# A run of this many characters of the key, anywhere in a vendor's text, is taken for the key.
_KEY_FRAGMENT = 8


class JsonClient:
    """POSTs JSON to one vendor and returns the decoded object, or raises ``UpstreamError``."""

    def __init__(self, vendor: str, key_variable: str, key: str | None = None) -> None:
        """``key`` is the API key the requests carry: never repeated in a message."""
        self._vendor = vendor
        self._key_variable = key_variable
        self._key = key or None
        self._pool = httpcore.AsyncConnectionPool(max_connections=4)

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def post(
        self, url: str, headers: Sequence[tuple[str, str]], body: Mapping[str, Any]
    ) -> dict[str, Any]:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        all_headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
            ("User-Agent", "webward-agents/0.1"),
            *headers,
        ]
        # The whole call, its retries included, within _CALL_S: a vendor answering 503 after
        # 590 s does not hold a call three times as long.
        deadline = anyio.current_time() + _CALL_S
        for attempt in range(_RETRIES + 1):
            try:
                status, response_headers, content = await self._send(
                    url, all_headers, data, deadline
                )
            except UpstreamError as exc:
                if attempt == _RETRIES or exc.reason != Reason.MODEL_UNREACHABLE:
                    raise
                await anyio.sleep(_BACKOFF_S * 2**attempt)
                continue
            parsed = _decode(content)
            if status < 400:
                break
            error = self._status_error(status, parsed, response_headers)
            wait = _retry_after(response_headers)
            wait = _BACKOFF_S * 2**attempt if wait is None else wait
            if (
                attempt == _RETRIES
                or status not in _RETRY_STATUSES
                or wait > _MAX_RETRY_WAIT_S
                or anyio.current_time() + wait >= deadline
            ):
                raise error
            await anyio.sleep(wait)
        if not isinstance(parsed, dict):
            raise UpstreamError(
                f"the {self._vendor} API returned a response that is not a JSON object",
                reason=Reason.MODEL_BAD_RESPONSE,
            )
        return parsed

    async def _send(
        self, url: str, headers: list[tuple[str, str]], data: bytes, deadline: float
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """One POST: its status, headers and body, read by ``deadline`` (the whole call's)
        and within _MAX_RESPONSE_BYTES."""
        where = _origin(url)
        try:
            with anyio.fail_at(deadline):
                async with self._pool.stream(
                    "POST", url, headers=headers, content=data, extensions={"timeout": _TIMEOUTS}
                ) as response:
                    chunks: list[bytes] = []
                    size = 0
                    async for chunk in response.aiter_stream():
                        size += len(chunk)
                        if size > _MAX_RESPONSE_BYTES:
                            raise UpstreamError(
                                f"the {self._vendor} API at {where} sent a response over "
                                f"{_MAX_RESPONSE_BYTES // (1024 * 1024)} MB, far more than a "
                                "model's answer; check the base URL",
                                reason=Reason.MODEL_BAD_RESPONSE,
                            )
                        chunks.append(chunk)
                    return response.status, list(response.headers), b"".join(chunks)
        except (httpcore.TimeoutException, TimeoutError):
            raise UpstreamError(
                f"the {self._vendor} API at {where} did not answer within {_CALL_S:g} s; "
                "try again later, or a smaller question or model",
                code="timeout",
                reason=Reason.MODEL_TIMEOUT,
            ) from None
        except (httpcore.LocalProtocolError, httpcore.UnsupportedProtocol, ValueError, TypeError):
            # Our side could not form the request: a key or URL HTTP cannot carry.
            raise InvalidInput(
                f"the request to the {self._vendor} API could not be sent: check the base URL "
                f"(and {self._key_variable}, if it holds unusual characters)"
            ) from None
        except httpcore.ConnectError:
            raise UpstreamError(
                f"could not connect to the {self._vendor} API at {where}; check the base URL "
                "and that the server is running",
                reason=Reason.MODEL_UNREACHABLE,
            ) from None
        except (httpcore.ProtocolError, httpcore.NetworkError, OSError):
            raise UpstreamError(
                f"the connection to the {self._vendor} API at {where} broke before its answer "
                "ended; try again later",
                reason=Reason.MODEL_UNREACHABLE,
            ) from None

    def _status_error(
        self, status: int, parsed: Any, headers: Sequence[tuple[bytes, bytes]]
    ) -> UpstreamError:
        # Vendors echo the key they refused ("Incorrect API key provided: sk-..."): the message
        # reaches a terminal, a log, a CI transcript.
        detail = _without_key(_vendor_message(parsed), self._key)[:_MAX_MESSAGE]
        suffix = f": {detail}" if detail else ""
        # A rate limit or a server's failure may say when to come back.
        retry = _retry_after(headers) if status == 429 or status >= 500 else None
        when = f"; retry in {human_wait(retry)}" if retry is not None else ""
        if status in (401, 403):
            message = (
                f"the {self._vendor} API refused the key (HTTP {status}){suffix}; "
                f"check {self._key_variable}"
            )
        elif status == 429:
            when = when or "; retry later"
            message = f"the {self._vendor} API is rate limiting requests (HTTP 429){suffix}{when}"
        elif status >= 500:
            when = when or "; try again later"
            message = f"the {self._vendor} API failed (HTTP {status}){suffix}{when}"
        else:
            message = f"the {self._vendor} API rejected the request (HTTP {status}){suffix}"
        return UpstreamError(
            message, reason=Reason.MODEL_HTTP_ERROR, status=status, retry_after=retry
        )


def _finite_or_text(literal: str) -> float | str:
    """A JSON number as a float when it is one (``1e400`` is not: it overflows to infinity),
    else its own text, which a tool refuses as it refuses any bad argument; so no NaN or
    Infinity reaches a tool, ``--json`` (where it is no JSON) or the next request."""
    value = float(literal)
    return value if math.isfinite(value) else literal


def _decode(content: bytes) -> Any:
    try:
        text = content.decode("utf-8")
        parsed = json.loads(text, parse_float=_finite_or_text, parse_constant=str)
    except ValueError:  # not UTF-8, not JSON, or an integer past Python's 4,300 digits
        return None
    # JSON can spell a lone surrogate ("\ud800"): none may reach a reply, a tool call or a print.
    return replace_surrogates_in(parsed) if "\\u" in text else parsed


def _vendor_message(parsed: Any) -> str:
    """The vendor's own error text (Anthropic and OpenAI both use ``error.message``), on one
    line, without control characters: neutralised before the key is looked for, so that no
    character dropped later can join two pieces of the key."""
    text = ""
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
    return neutralise_line(text[:_MAX_VENDOR_TEXT]).rstrip(".")


def _without_key(text: str, key: str | None) -> str:
    """``text`` with every run of at least ``_KEY_FRAGMENT`` characters of ``key`` (the key
    itself, a long prefix, a middle or a tail) replaced by the key's masked form."""
    if not key or not text:
        return text
    shortest = min(_KEY_FRAGMENT, len(key))
    out: list[str] = []
    i = 0
    while i < len(text):
        end = i + shortest
        if end <= len(text) and text[i:end] in key:
            while end < len(text) and text[i : end + 1] in key:
                end += 1
            out.append(mask(key))
            i = end
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _retry_after(headers: Sequence[tuple[bytes, bytes]]) -> float | None:
    """Seconds to wait, from delta-seconds or an HTTP date, capped at an hour as search
    providers' are (a server's "retry in 10^308 s" is no advice)."""
    for name, value in headers:
        if name.lower() == b"retry-after":
            return parse_retry_after(value.decode("latin-1"), cap=MAX_BACKPRESSURE_S)
    return None


def _origin(url: str) -> str:
    """The URL for messages as the person gave it (``/v1`` of a base URL kept), without
    what may hold a secret: user info, query and fragment."""
    scheme, _, rest = url.partition("://")
    rest = rest.split("#", 1)[0].split("?", 1)[0]
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"
