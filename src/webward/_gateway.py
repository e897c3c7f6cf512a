"""The HTTP gateway: many agents share one process's ``Web`` over HTTP.

    POST /v1/capabilities/web:page.fetch@1    {"url", "offset", "includeLinks", "includeScreenshot",
                                               "maxChars", "query", "maxAge"}
    POST /v1/capabilities/web:search.query@1  {"query", "limit", "allowedDomains",
                                               "blockedDomains", "freshness", "country", "language"}
    GET  /openapi.json                        the OpenAPI 3.1 document (_openapi, from the catalogue)
    GET  /healthz                             {"status": "ok"}: the process answers
    GET  /readyz                              {"status": "ready"}, or 503: its stores answer
    GET  /console/                            the operator console (agents with role = "admin")
    GET  /metrics                             Prometheus text (docs/operations.md)

Each request is checked in this order, and the first failure answers with the error model
(``{"error": {"code", "message"}}``): route (404), method (405), bearer token (401),
``Content-Type`` or a ``Content-Encoding`` (415), body size while reading the stream (413), JSON in UTF-8 with each
field named once (400), the body's shape:
missing, extra or mistyped fields (400), as the capability catalogue (``_capabilities``) names
and types them; a URL is read without the whitespace around it, as every face reads it, and a blank
one is missing. Values (a URL's form, an offset's range, a query's
length) are the core's to judge: it audits the call and answers with its own message. Once
the token names an agent, every request is a call and is audited, the ones refused for their
``Content-Type``, size, JSON or shape included (``Web.reject``). A request refused before
that (no token, a malformed ``Authorization`` or two, a token no agent holds) names no agent
and is no call: it is counted and logged instead, without its token
(``Telemetry.auth_refused``).

The token names the agent, and config names its tier (``[agents.NAME] tier``,
``token_sha256``). Tokens are kept as SHA-256 hex digests and compared in constant time against
every agent, so neither the time taken nor an early exit tells which agent came close.

A ``WebwardError`` becomes the status of :data:`STATUS_FOR_CODE`. Two choices worth naming:
``too_large`` (a fetched file over its cap) is 422, because 413 already means *this request's
body* is too large; ``unsupported_type`` (the fetched file's type) is 422 too, because 415 is
about the request's own ``Content-Type``. ``not_configured`` is 501: retrying will not help
until the operator configures a search provider, which 503 would wrongly suggest.

The two POST routes are the hot path, served by a plain ASGI handler in front of Starlette
(:class:`_Capability`): with one ``Web`` shared by many agents, a framework's request and
response objects and its middleware cost about as much as the core's cached read. Everything
else (health, OpenAPI, 404, 405, lifespan, a request under a ``root_path``) goes through
Starlette, which routes a capability request to the same handler. A client that disconnects
while its call runs cancels the call (:class:`_Running`, :func:`_watch_client`), at the cost of
a dict entry to a call answered within 25 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ._capabilities import DEFAULT_LIMIT, HTTP, Capability
from ._capabilities import capabilities as catalogue_of
from ._errors import (
    InvalidInput,
    Reason,
    Refused,
    WebwardError,
    out_of_files,
    out_of_threads,
)
from ._openapi import FETCH_PATH, SEARCH_PATH, openapi_document
from ._provenance import scoped_session
from ._redact import redact_traceback
from ._serving import LATE_BODY, content_length, late_body_message
from ._settings import Settings
from ._telemetry import AuthRefusal, MetricsEndpoint, Telemetry, server_span, tracing
from ._tokens import Agent, TokenTable, bearer_token, hash_token
from ._tokens import require_tokens as require_tokens
from ._web import Web
from .limits import LimitState, MemoryLimitState, SQLiteLimitState

if TYPE_CHECKING:
    from .console import Console

__all__ = [
    "FETCH_PATH",
    "MAX_BODY_BYTES",
    "SEARCH_PATH",
    "STATUS_FOR_CODE",
    "TokenTable",
    "bind_socket",
    "create_app",
    "hash_token",
    "openapi_document",
]

log = logging.getLogger("webward.gateway")

MAX_BODY_BYTES = 64 * 1024

#: The HTTP status for each wire code of a ``WebwardError``.
STATUS_FOR_CODE: Mapping[str, int] = {
    "invalid_input": 400,
    "refused": 403,
    "rate_limited": 429,
    "circuit_open": 503,
    "not_configured": 501,
    "too_large": 422,
    "unsupported_type": 422,
    "upstream_error": 502,
    "timeout": 504,
    "internal_error": 500,
    "overloaded": 503,
}

_JSON = "application/json"


# ---- the request body ------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    name: str  # wire name (camelCase)
    kind: type
    message: str
    required: bool = False


@dataclass(frozen=True)
class _Shape:
    """A capability's body: its fields, their names and the required ones (checked in C on
    every call), and the exact type a well-formed body's value has for each (JSON as parsed)."""

    capability: Capability
    fields: tuple[_Field, ...]
    names: frozenset[str]
    required: frozenset[str]
    exact: Mapping[str, type]
    url: str | None  # the field holding the URL to read (fetch), whitespace around it dropped


_URL = "url"
#: What a body without the field it reads is told (missing, or a URL of only whitespace).
_REQUIRED = {
    "url": "url is required: an absolute http:// or https:// URL to read",
    "query": "query is required: the words to search for",
}


def _shape(capability: Capability) -> _Shape:
    """The body fields of a capability, as the catalogue names and types them."""
    fields = tuple(
        _Field(a.wire_name, a.kind, a.type_message(HTTP), a.required)
        for a in capability.arguments_for(HTTP)
    )
    names = frozenset(f.name for f in fields)
    return _Shape(
        capability,
        fields,
        names,
        frozenset(f.name for f in fields if f.required),
        {f.name: f.kind for f in fields},
        _URL if _URL in names else None,
    )


def _url_read(data: dict[str, Any], field: str) -> dict[str, Any]:
    """``data`` with the whitespace around its URL dropped, as every face reads a URL
    (models paste one with a space or a newline around it); a blank one is a missing one."""
    url: str = data[field]
    stripped = url.strip()
    if not stripped:
        raise InvalidInput(_REQUIRED[field])
    if len(stripped) != len(url):
        data[field] = stripped
    return data


def _check_body(data: Any, shape: _Shape) -> dict[str, Any]:
    """The body's shape: a JSON object with exactly these fields, each of its JSON type."""
    # A well-formed body passes in one look at each value it has; any other is checked
    # field by field below, so that its first fault is named as it always was.
    if type(data) is dict and shape.names.issuperset(data) and shape.required <= data.keys():
        exact = shape.exact
        for key, value in data.items():
            if type(value) is not exact[key]:
                break
        else:
            return data if shape.url is None else _url_read(data, shape.url)
    if not isinstance(data, dict):
        raise InvalidInput("the request body must be a JSON object")
    if not shape.names.issuperset(data):
        for key in data:
            if key not in shape.names:
                raise InvalidInput(shape.capability.unknown(HTTP, key))
    for f in shape.fields:
        value = data.get(f.name, _ABSENT)
        if value is _ABSENT:
            if f.required:  # said as the tools say it, with what to send
                raise InvalidInput(_REQUIRED[f.name])
            continue
        if f.kind is int:
            # JSON true is not a number here, although Python's bool is an int; 40000.0 is
            # one (JSON Schema's integer), and the core reads it as 40000.
            whole = type(value) is float and value.is_integer()
            if not whole and (not isinstance(value, int) or isinstance(value, bool)):
                raise InvalidInput(f.message)
        elif not isinstance(value, f.kind):
            raise InvalidInput(f.message)
    return data if shape.url is None else _url_read(data, shape.url)


_ABSENT = object()


def _reject_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


class _BodyTooLarge(Exception):
    pass


class _Disconnected(Exception):
    pass


async def _read_body(receive: Receive, declared: bytes | None, limit: int) -> bytes:
    """The body, read from the stream and cut off past ``limit`` bytes whatever the headers say."""
    if declared is not None and content_length(declared) > limit:
        raise _BodyTooLarge  # an honest client's oversized body is refused before it is sent
    message = await receive()
    if message["type"] == "http.request" and not message.get("more_body", False):
        whole: bytes = message.get("body", b"")  # the usual small body: in one message
        if len(whole) > limit:
            raise _BodyTooLarge
        return whole
    chunks: list[bytes] = []
    size = 0
    while True:
        if message["type"] == "http.disconnect":
            raise _Disconnected
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
        message = await receive()


def field_named_twice(subject: str, name: str) -> str:
    """The sentence refusing JSON that names the field ``name`` twice (the gateway's body,
    an MCP message: ``subject``), a long name cut at 40 characters."""
    shown = name if len(name) <= 40 else name[:40] + "…"
    return f"{subject} names the field {shown!r} twice; send each once"


def _fields_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            raise InvalidInput(field_named_twice("the request body", name))
        seen.add(name)
    return dict(pairs)


# Built once: ``json.loads`` with a keyword builds a new decoder on every call.
_DECODER_ONCE = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_fields_once)


_FLAT = frozenset({str, int, bool, type(None)})
#: Where a member's name ends in a JSON object (RFC 8259: blanks may stand before the colon).
NAME_END = re.compile(rb'"[ \t\n\r]*:')
_NOT_UTF8 = "the request body is not UTF-8: send JSON in UTF-8, with no byte-order mark"


def _parse_json(body: bytes) -> Any:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        pass  # NaN, a lone surrogate, deep nesting, not UTF-8: the standard library decides
    else:
        # orjson reads an integer past 64 bits as a float. A body is one object of strings,
        # whole numbers and booleans; anything else (a float, a nested value, no object at
        # all) is read again, as json.loads would read it.
        if type(data) is dict and _FLAT.issuperset(map(type, data.values())):
            # A field named twice is read by whatever reads the body first (a proxy, a WAF)
            # perhaps as its first value, and by orjson as its last: refused. Counted in C: a
            # flat body holds one name's end ('"', JSON's blanks, ':') per field, unless a
            # string holds one too. Blanks count: '"url" :' was no '":', so a body naming
            # url twice that way was read as its last url.
            if len(NAME_END.findall(body)) > len(data):
                _DECODER_ONCE.decode(body.decode("utf-8", "surrogatepass"))
            return data
    if json.detect_encoding(body) != "utf-8":
        # JSON between systems is UTF-8 (RFC 8259, 8.1). Python's parser also reads UTF-16,
        # UTF-32 and a byte-order mark, which a proxy or WAF in front reading UTF-8 does not:
        # it would pass a URL it cannot see (the parser difference a field named twice is
        # refused for). The MCP faces refuse them too.
        raise InvalidInput(_NOT_UTF8)
    try:
        return _DECODER_ONCE.decode(body.decode("utf-8", "surrogatepass"))
    except RecursionError:
        raise InvalidInput("the request body is nested too deeply") from None
    except UnicodeDecodeError:
        raise InvalidInput(_NOT_UTF8) from None
    except json.JSONDecodeError:
        raise InvalidInput("the request body is not valid JSON") from None
    except ValueError:  # valid JSON: int() refuses a number past its 4,300 digits
        raise InvalidInput(
            "the request body holds a number of more than 4,300 digits, which webward does not read"
        ) from None


# ---- responses ---------------------------------------------------------------------------


def _dumps(payload: Mapping[str, Any]) -> bytes:
    try:
        return orjson.dumps(payload)  # compact UTF-8
    except orjson.JSONEncodeError:  # a lone surrogate echoed back, an integer past 64 bits
        return json.dumps(payload, separators=(",", ":")).encode("ascii")


def _json_response(
    status: int, payload: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> Response:
    hdrs = {"Cache-Control": "no-store", **(headers or {})}
    return Response(_dumps(payload), status_code=status, media_type=_JSON, headers=hdrs)


def _error_response(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    return _json_response(status, {"error": {"code": code, "message": message}}, headers)


# Refusals because a store this replica needs is down (the audit log, the shared limits):
# 503 with a Retry-After, so that a client retries and a load balancer sends the call to a
# replica that can serve it; 403 would read as a decision about the call itself.
_STORE_DOWN = frozenset({Reason.AUDIT_UNAVAILABLE, Reason.LIMITS_UNAVAILABLE})
_STORE_RETRY_S = "5"


def _error_status(error: WebwardError) -> tuple[int, dict[str, str]]:
    if error.reason in _STORE_DOWN:
        return 503, {"Retry-After": _STORE_RETRY_S}
    status = STATUS_FOR_CODE.get(error.code, 502)
    headers: dict[str, str] = {}
    if error.retry_after is not None:  # a 429 (ours, or the far side's: a 502), a 503
        headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
    return status, headers


_UNEXPECTED = "the gateway failed unexpectedly (internal_error); the error was logged"
_SHUTTING_DOWN = (
    "the gateway is shutting down and stopped this call before it finished; retry it, here "
    "once the gateway is back or on another replica"
)
_RETRY_SOON = [("Retry-After", _STORE_RETRY_S)]
_ENCODED_SLASH = "no such route: a path does not hold an encoded slash (%2F); see /openapi.json"
_BEARER_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="webward"'}


# ---- the application -------------------------------------------------------------------


class _Result(Protocol):
    """What a capability answers with (``Page``, ``SearchResult``)."""

    def to_wire(self) -> dict[str, Any]: ...


#: A capability's call into the core: the core's own coroutine, awaited by the route (a
#: coroutine around it would be one more frame for every call to resume after its audit).
Handler = Callable[[Web, Agent, dict[str, Any], str | None], Awaitable[_Result]]

#: The header naming the caller's session (URL provenance, session budgets), and the header
#: in which the client application declares URLs for it (space-separated; the user's own
#: input, never the model's tool arguments). Sessions are scoped to the token's agent.
SESSION_HEADER = b"webward-session"
SESSION_URLS_HEADER = b"webward-session-urls"


def _fetch(
    web: Web, agent: Agent, body: dict[str, Any], session: str | None = None
) -> Awaitable[_Result]:
    return web.fetch(
        body["url"],
        offset=body.get("offset", 0),
        include_links=body.get("includeLinks", False),
        include_screenshot=body.get("includeScreenshot", False),
        agent=agent.name,
        tier=agent.tier,
        max_chars=body.get("maxChars"),
        query=body.get("query"),
        session=session,
        max_age=body.get("maxAge"),
    )


def _search(
    web: Web, agent: Agent, body: dict[str, Any], session: str | None = None
) -> Awaitable[_Result]:
    return web.search(
        body["query"],
        limit=body.get("limit", DEFAULT_LIMIT),
        agent=agent.name,
        tier=agent.tier,
        allowed_domains=body.get("allowedDomains"),
        blocked_domains=body.get("blockedDomains"),
        freshness=body.get("freshness"),
        country=body.get("country"),
        language=body.get("language"),
        session=session,
    )


def _is_json(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (
        media.startswith(b"application/") and media.endswith(b"+json")
    )


class _Capability:
    """One capability route as a plain ASGI app (a class, so Starlette routes to it as ASGI).

    The two POST routes are the gateway's hot path: they read the three headers they need
    straight from the scope and answer with two ``send`` calls, without a framework's request
    and response objects or its middleware. Every check of the module docstring still runs,
    in the same order.
    """

    def __init__(
        self,
        handler: Handler,
        shape: _Shape,
        capability: str,
        tokens: TokenTable,
        holder: Mapping[str, Web],
        max_body_bytes: int,
    ) -> None:
        self._handler = handler
        self._shape = shape
        self._capability = capability
        self._tokens = tokens
        self._holder = holder
        self._max_body_bytes = max_body_bytes
        self._route = f"/v1/capabilities/{capability}"
        self._target_field = shape.fields[0].name  # what the call reads: url, or query
        self._running: _Running | None = None  # its calls running, on the loop serving them

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if tracing():
                with server_span("POST", self._route, scope["headers"]) as current:
                    answer = await self._answer(scope, receive)
                    if answer is None:
                        current.set_attribute("error.type", Reason.CANCELLED)
                    else:
                        current.set_attribute("http.response.status_code", answer[0])
            else:  # no span to open: the hot path skips the null one
                answer = await self._answer(scope, receive)
        except asyncio.CancelledError:
            # The server cancels the calls still running once its graceful shutdown has
            # waited long enough. The core has audited the call as cancelled; its caller gets
            # one sentence in the error model (not the server's plain-text 500 and a
            # traceback), and the server finishes shutting down.
            answer = _problem(503, "overloaded", _SHUTTING_DOWN, _RETRY_SOON)
        if answer is None:
            # The client disconnected while its call ran: the call was cancelled, and audited
            # as cancelled (_Running). Nobody is left to read an answer; none is sent.
            return
        status, payload, headers = answer
        try:
            body = _dumps(payload)
        except Exception as exc:  # a bug in a result model: answered like any other, and logged
            log.error(
                "the gateway could not encode its answer on %s: %s",
                self._capability,
                redact_traceback(exc),
            )
            status, payload, headers = _problem(500, "internal_error", _UNEXPECTED)
            body = _dumps(payload)
        raw_headers = [_CONTENT_TYPE, (b"content-length", b"%d" % len(body)), _NO_STORE]
        if headers:
            raw_headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        await send({"type": "http.response.start", "status": status, "headers": raw_headers})
        await send({"type": "http.response.body", "body": body})

    async def _answer(
        self, scope: Scope, receive: Receive
    ) -> tuple[int, Mapping[str, Any], list[tuple[str, str]]] | None:
        """The answer to a capability request, or None once its client has left mid-call."""
        found: dict[bytes, bytes] = {}
        declared: list[str] = []
        repeated: list[bytes] = []  # the headers of one value sent more than once
        # ASGI header names are lowercase bytes.
        for name, value in scope["headers"]:
            if name in _READ_HEADERS:
                if name == SESSION_URLS_HEADER:
                    declared.append(_header_text(value))
                elif name not in found:
                    found[name] = value
                elif name not in repeated:
                    repeated.append(name)
        if b"authorization" in repeated:
            # Two credentials: whose call is it? A proxy that adds its own token behind the
            # client's (or before it) must not be overridden by whichever comes first.
            self._refused_credentials(scope, "malformed")
            return _problem(
                400, "invalid_input", "send one Authorization header; this request sent more"
            )
        authorization = found.get(b"authorization")
        content_type = found.get(b"content-type")
        content_length = found.get(b"content-length")
        session_value = found.get(SESSION_HEADER)
        session_name = None if session_value is None else _header_text(session_value).strip()
        token = bearer_token((authorization or b"").decode("latin-1"))
        if not token:
            self._refused_credentials(scope, "missing" if authorization is None else "malformed")
            return _problem(
                401,
                "refused",
                "a bearer token is required: send Authorization: Bearer <token>",
                list(_BEARER_CHALLENGE.items()),
            )
        agent = self._tokens.lookup(token)
        if agent is None:
            self._refused_credentials(scope, "unknown")
            return _problem(
                401,
                "refused",
                "the bearer token is not known to this gateway",
                list(_BEARER_CHALLENGE.items()),
            )
        # From here on the caller is an agent: every request is a call, audited even when
        # its body never reaches the core, in the session it named: as the call would be run
        # in it (``gateway:<agent>:<name>``), or the name as sent when it is no session name
        # (the call is refused for it, once its body is read).
        session: str | None = None
        unnamed: InvalidInput | None = None
        if session_name:
            try:
                session = scoped_session("gateway", agent.name, session_name)
            except InvalidInput as exc:
                unnamed = exc
        named = session_name if unnamed is not None else session
        if repeated:  # one value each (RFC 9110): two are no answer to "which"
            name = repeated[0].decode("latin-1").title()
            message = f"send one {name} header; this request sent more"
            return await self._reject(agent, 400, InvalidInput(message), None, named)
        if not _is_json(content_type):
            message = "the request body must be JSON (Content-Type: application/json)"
            return await self._reject(agent, 415, InvalidInput(message), None, named)
        encoding = found.get(b"content-encoding")
        if encoding is not None and encoding.strip().lower() not in (b"", b"identity"):
            # The body is read as sent, never decoded: taken as it was, a gzip body was
            # "not UTF-8", and a plain one labelled gzip was read as JSON, which a proxy or
            # WAF in front that decodes it first (or refuses it) does not see (RFC 9110 8.4).
            message = (
                "the request body must not be compressed: send it without Content-Encoding "
                f"(this request's is {_header_text(encoding.strip())!r})"
            )
            return await self._reject(agent, 415, InvalidInput(message), None, named)
        try:
            raw = await _read_body(receive, content_length, self._max_body_bytes)
        except _Disconnected:  # the caller left mid-body, or the server cut a late one off
            if scope.get(LATE_BODY):  # answered 408 already (_serving.BODY_TIMEOUT_S)
                late = InvalidInput(late_body_message())
                return await self._reject(agent, 408, late, None, named)
            message = "the client disconnected before the body ended"
            return await self._reject(agent, 400, InvalidInput(message), None, named)
        except _BodyTooLarge:
            message = f"the request body is larger than {self._max_body_bytes // 1024} KiB"
            return await self._reject(agent, 413, InvalidInput(message), None, named)
        try:
            data: Any = None
            web = self._holder["web"]
            try:
                data = _parse_json(raw)
                body = _check_body(data, self._shape)
                if unnamed is not None:
                    raise unnamed
                if session is not None:
                    await web.declare_urls(session, *declared, agent=agent.name)
            except InvalidInput as exc:
                return await self._reject(agent, 400, exc, data, named)
            except WebwardError as exc:  # the session store down (limits_unavailable): a call
                return await self._reject(agent, _error_status(exc)[0], exc, data, named)
            # The call is cancelled if its client leaves while it runs (_Running).
            host = asyncio.current_task()
            assert host is not None  # an ASGI server runs each request in a task
            loop = host.get_loop()
            running = self._running
            if running is None or running.loop is not loop:
                running = self._running = _Running(loop)
            if not running.armed:
                running.arm()
            calls = running.calls
            calls[host] = (receive, host.cancelling(), running.sweeps)
            try:
                result = await self._handler(web, agent, body, session)
            except asyncio.CancelledError:
                if _client_left(host):  # nobody to answer
                    return None
                raise
            finally:
                calls.pop(host, None)
                if _watches:
                    _unwatch(host)
            return 200, result.to_wire(), []
        except WebwardError as exc:
            status, headers = _error_status(exc)
            wire = exc.to_wire()
            if isinstance(exc, InvalidInput):  # the core names arguments as the tools do
                wire["error"]["message"] = _spelled(self._shape.capability, exc.for_model)
            return status, wire, list(headers.items())
        except Exception as exc:  # a bug: logged with its traceback, answered without one
            if (limit := out_of_files(exc) or out_of_threads(exc)) is not None:  # no bug: said
                log.warning("the gateway %s", limit.message.removeprefix("webward "))
                return 500, limit.to_wire(), []
            log.error(
                "the gateway failed on %s for agent %s: %s",
                self._capability,
                agent.name,
                redact_traceback(exc),
            )
            return _problem(500, "internal_error", _UNEXPECTED)

    def _refused_credentials(self, scope: Scope, reason: AuthRefusal) -> None:
        """Count and log a request refused before its agent was known: with no agent it is
        no call and has no audit record, yet token guessing and an agent left with a rotated
        token must be seen. Only the reason and the client's address are handed on, never
        the token (behind a proxy the address is the proxy's: docs/servers.md)."""
        web = self._holder.get("web")
        if web is None:  # the gateway is starting or stopping: no telemetry to count with
            return
        client = scope.get("client")
        web.telemetry.auth_refused(reason, str(client[0]) if client else "")

    async def _reject(
        self,
        agent: Agent,
        status: int,
        error: WebwardError,
        data: Any,
        session: str | None,
    ) -> tuple[int, Mapping[str, Any], list[tuple[str, str]]]:
        """The answer to an agent's request refused before the core (``status``, ``error``),
        once its audit record is written (target: the body's URL or query, as sent, the
        URL as it would have been read; "" when the body has none, or holds no string; in
        ``session``, the one the request named, as :meth:`_answer` audits it)."""
        web = self._holder.get("web")
        target = data.get(self._target_field) if isinstance(data, dict) else None
        if not isinstance(target, str):  # null's repr would pass for a URL in the log
            target = ""
        elif self._target_field == self._shape.url:
            target = target.strip()
        answer: WebwardError = error
        if web is not None:
            answer = await web.reject(
                self._capability, agent.name, agent.tier, target, error, session=session
            )
        if answer is not error:  # the audit log could not take the record: that refusal
            status, headers = _error_status(answer)
            return status, answer.to_wire(), list(headers.items())
        return status, error.to_wire(), list(_error_status(error)[1].items())


# ---- a client that leaves mid-call -----------------------------------------------------

#: How often the calls running on a loop are looked over while there are any: a call still
#: running at the second sweep after it began (25 to 50 ms) is watched for its client leaving.
_SWEEP_S = 0.025


class _Running:
    """One route's calls running on one event loop, by their task (``_Capability._running``).

    A client that disconnects while its call runs cancels the call (:func:`_watch_client`),
    but watching costs a task, and a cached read is answered in about 0.1 ms: a call is
    entered here when it begins and dropped when it ends (a dict entry, no timer, no task),
    and one timer looks over those left every :data:`_SWEEP_S` while any are, starting a
    watch for each call still running at the second sweep after it began (as the servers
    check a late body: one sweep, not a timer a request, _serving)."""

    __slots__ = ("armed", "calls", "loop", "sweeps")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        # receive, the task's cancellations requested (not ours) when the call began, and
        # the sweeps done by then
        self.calls: dict[asyncio.Task[Any], tuple[Receive, int, int]] = {}
        self.sweeps = 0
        self.armed = False

    def arm(self) -> None:
        self.armed = True
        self.loop.call_later(_SWEEP_S, self._sweep)

    def _sweep(self) -> None:
        self.sweeps += 1
        calls = self.calls
        if not calls:
            self.armed = False  # the next call arms it again
            return
        for host, (receive, cancelling, began) in list(calls.items()):
            if self.sweeps - began >= 2:
                del calls[host]
                _watch_client(host, receive, cancelling)
        self.loop.call_later(_SWEEP_S, self._sweep)


@dataclass(slots=True)
class _Watch:
    """The watch over one running call's client (:func:`_watch_client`)."""

    cancelling: int  # the call task's cancellations requested (not ours) when the call began
    task: asyncio.Task[None] | None = None
    left: bool = False  # the client disconnected, and the call's task was cancelled for it


#: The calls being watched, by their task.
_watches: dict[asyncio.Task[Any], _Watch] = {}


def _watch_client(host: asyncio.Task[Any], receive: Receive, cancelling: int) -> None:
    """Cancel the call running in ``host`` if its client disconnects (docs/servers.md).

    Called by the sweep of :class:`_Running` once the call has run 25 to 50 ms. Its body has
    been read in full, so the ASGI server's next ``receive()`` waits until the client disconnects
    and then returns ``http.disconnect`` (uvicorn's h11 and httptools protocols alike; once
    the answer is sent it returns at once). A task awaits it; on a disconnect it cancels the
    call's task as ``asyncio.timeout`` does (``Task.cancel``, taken back by the handler with
    one ``Task.uncancel``, :func:`_client_left`). The core sees its caller cancel: the read
    stops, and the call is audited ``failed`` / ``cancelled`` before the cancellation goes
    on. The call's end cancels the task (:func:`_unwatch`) before anything else runs, so a call
    that has ended is never cancelled.
    """
    watch = _watches[host] = _Watch(cancelling)
    watch.task = host.get_loop().create_task(_await_leaving(host, receive, watch))


async def _await_leaving(host: asyncio.Task[Any], receive: Receive, watch: _Watch) -> None:
    try:
        message = await receive()
    except Exception as exc:  # the server's own failure: the call goes on unwatched
        log.error("the gateway could not watch for its client leaving: %s", redact_traceback(exc))
        return
    if message["type"] == "http.disconnect":
        _cancel_when_alone(host, watch)


def _cancel_when_alone(host: asyncio.Task[Any], watch: _Watch) -> None:
    """Cancel the call in ``host`` for its client's leaving, once no other cancellation is
    under way. A second one would cut short the core's record of the first (the server's
    shutdown, which ends the call anyway); and anyio cancels a task for a moment on its own:
    a connect that succeeded cancels the other attempts of its happy eyeballs, the task
    included, and takes it back when it leaves that task group. A client that left in that
    moment (a search that got its provider slot as other clients left) was not heard, and
    its call ran to its deadline. So the watch looks again every sweep until the call ends."""
    if _watches.get(host) is not watch:  # the call has ended
        return
    if host.cancelling() == watch.cancelling:
        watch.left = True
        host.cancel()
    else:
        host.get_loop().call_later(_SWEEP_S, _cancel_when_alone, host, watch)


def _unwatch(host: asyncio.Task[Any]) -> _Watch | None:
    """The call in ``host`` is over: its watch, if it had one, ends (its task is cancelled,
    and runs again only to end, whatever it was waiting for)."""
    watch = _watches.pop(host, None)
    if watch is not None and watch.task is not None:
        watch.task.cancel()
    return watch


def _client_left(host: asyncio.Task[Any]) -> bool:
    """Whether the cancellation ``host`` is handling is its watch's alone (the client left),
    then taken back; False for any other (the server's shutdown), which goes on."""
    watch = _unwatch(host)
    return watch is not None and watch.left and host.uncancel() <= watch.cancelling


#: The request headers the gateway reads (the rest pass by with one set lookup each).
_READ_HEADERS = frozenset(
    {
        b"authorization",
        b"content-type",
        b"content-length",
        b"content-encoding",
        SESSION_HEADER,
        SESSION_URLS_HEADER,
    }
)
_CONTENT_TYPE = (b"content-type", b"application/json")
_NO_STORE = (b"cache-control", b"no-store")


def _header_text(value: bytes) -> str:
    """A session header's text: UTF-8 where its bytes are (a client sends a link to /café
    so), else Latin-1, as HTTP reads other bytes. Read as Latin-1 alone, a URL the user
    declared was remembered as /cafÃ© and its fetch refused as one the session never saw."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


def _spelled(capability: Capability, message: str) -> str:
    """``message`` with the core's argument names (``max_chars``) in the gateway's spelling
    (``maxChars``): the body's field, not a name the client never sent."""
    pattern = _SPELLINGS.get(capability.id)
    if pattern is None:
        renamed = {a.name: a.wire_name for a in capability.arguments if a.name != a.wire_name}
        pattern = _SPELLINGS[capability.id] = (
            re.compile(rf"\b(?:{'|'.join(map(re.escape, renamed))})\b"),
            renamed,
        )
    regex, renamed = pattern
    return regex.sub(lambda m: renamed[m.group()], message)


_SPELLINGS: dict[str, tuple[re.Pattern[str], dict[str, str]]] = {}


def _problem(
    status: int, code: str, message: str, headers: list[tuple[str, str]] | None = None
) -> tuple[int, Mapping[str, Any], list[tuple[str, str]]]:
    return status, {"error": {"code": code, "message": message}}, headers or []


async def _to_the_console(request: Request) -> Response:
    # Relative, so that it holds under any root path and never names a host.
    return Response(status_code=307, headers={"Location": "console/"})


class _Gateway:
    """The ASGI application: POSTs to the two capability paths go straight to their handler;
    everything else (health, OpenAPI, 404, 405, lifespan, a mounted root path) goes through
    Starlette."""

    def __init__(self, routes: Mapping[str, _Capability], fallback: Starlette) -> None:
        self._routes = routes
        self._fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = scope.get("raw_path") or b""
            if b"%" in raw and b"%2f" in raw.lower():
                # An encoded "/" would be routed as a "/" (the server decodes the path): a
                # proxy's rule on /v1/... must not be passed by /v1%2F...
                await _error_response(404, "invalid_input", _ENCODED_SLASH)(scope, receive, send)
                return
            if scope["method"] == "POST" and not scope.get("root_path"):
                route = self._routes.get(scope["path"])
                if route is not None:
                    await route(scope, receive, send)
                    return
        await self._fallback(scope, receive, send)


def create_app(
    settings: Settings,
    web: Web | None = None,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    ready: Callable[[], None] = lambda: None,
) -> ASGIApp:
    """The gateway as an ASGI application.

    ``web=None``: the app opens one ``Web`` at startup and closes it at shutdown (run it under
    a server with lifespan, as ``webward serve`` does). A ``web`` passed in is shared as is and
    left open: its owner closes it. ``ready`` is called once the app can answer: after its
    ``Web`` is open and its conversion workers have started (``webward serve`` prints its
    start-up line then, so that nobody is told of a gateway still starting).
    """
    tokens = TokenTable(settings)
    # Made here, not at startup, so that a bad [observability] setting is one sentence.
    telemetry = Telemetry.for_settings(settings, server=True) if web is None else None
    # This face counts its refused credentials (_Capability._refused_credentials): their
    # series are on /metrics at zero from the start.
    counting = web.telemetry if web is not None else telemetry
    if counting is not None:
        counting.counts_auth_refusals()
    holder: dict[str, Web] = {}
    if web is not None:
        holder["web"] = web
    document = json.dumps(openapi_document(settings), separators=(",", ":")).encode("utf-8")
    catalogue = catalogue_of(settings)
    capabilities = {
        FETCH_PATH: _Capability(
            _fetch, _shape(catalogue.fetch), catalogue.fetch.id, tokens, holder, max_body_bytes
        ),
        SEARCH_PATH: _Capability(
            _search, _shape(catalogue.search), catalogue.search.id, tokens, holder, max_body_bytes
        ),
    }

    async def openapi(request: Request) -> Response:
        return Response(document, media_type=_JSON)

    async def healthz(request: Request) -> Response:
        return _json_response(200, {"status": "ok"})

    readiness = _Readiness(holder)

    async def readyz(request: Request) -> Response:
        error = await readiness.check()
        if error is None:
            return _json_response(200, {"status": "ready"})
        # For the operator's probes, not a model: the store's place and the fix, whole.
        wire = error.to_wire(for_model=False)
        return _json_response(503, wire, {"Retry-After": _STORE_RETRY_S})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 405:
            return _error_response(
                405,
                "invalid_input",
                f"{request.method} is not allowed here",
                {"Allow": (exc.headers or {}).get("Allow", "")},
            )
        if exc.status_code == 404:
            return _error_response(404, "invalid_input", "no such route; see /openapi.json")
        return _error_response(exc.status_code, "invalid_input", str(exc.detail))

    console = _LazyConsole(settings, tokens, holder)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if web is not None:
            ready()
            yield
            return
        # Every call's agent comes from its bearer token: the records say so (face).
        from ._budgets import durable_budget_state

        # Budgets in limits.db when the limits are in memory: a restart renews no budget.
        budget_state = durable_budget_state(settings)
        async with Web(
            settings, telemetry=telemetry, face="gateway", budget_state=budget_state
        ) as own:
            await own.start_workers()  # before the first request, not inside its deadline
            holder["web"] = own
            ready()
            try:
                yield
            finally:
                holder.pop("web", None)
                if telemetry is not None:
                    telemetry.close()

    @contextlib.asynccontextmanager
    async def lifespan_with_console(app: Starlette) -> AsyncIterator[None]:
        try:
            async with lifespan(app):
                yield
        finally:
            await console.aclose()

    routes = [
        *(Route(path, app, methods=["POST"]) for path, app in capabilities.items()),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/console", _to_the_console, methods=["GET", "HEAD"]),
        Mount("/console", app=console),
        Route("/metrics", MetricsEndpoint(settings, lambda: _telemetry_of(holder))),
    ]
    fallback = Starlette(
        routes=routes,
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan_with_console,
    )
    # A path with a slash too many is a 404 in the error model, not a redirect that Starlette
    # builds from the Host header (behind a proxy: to a host a client named, over http://).
    fallback.router.redirect_slashes = False
    return _Gateway(capabilities, fallback)


class _Readiness:
    """``/readyz``: whether this replica's stores answer (``Web.check_ready``), within
    ``_READY_BOUND_S``. It needs no token, so one probe at a time runs and its answer serves
    every request of the next second: a flood of probes does not become a flood on the
    audit database or Redis."""

    def __init__(self, holder: Mapping[str, Web]) -> None:
        self._holder = holder
        self._lock = anyio.Lock()
        self._at = -math.inf
        self._error: WebwardError | None = None

    async def check(self) -> WebwardError | None:
        async with self._lock:
            if time.monotonic() - self._at >= _READY_FRESH_S:
                self._error = await self._probe()
                self._at = time.monotonic()
            return self._error

    async def _probe(self) -> WebwardError | None:
        web = self._holder.get("web")
        if web is None:
            return Refused("refused: the gateway is starting or stopping", reason=Reason.REFUSED)
        try:
            with anyio.fail_after(_READY_BOUND_S):
                await web.check_ready()
        except WebwardError as exc:
            return exc
        except TimeoutError:
            return Refused(
                f"refused: the audit or limit store did not answer within {_READY_BOUND_S:g} s",
                reason=Reason.AUDIT_UNAVAILABLE,
            )
        except Exception as exc:  # a bug: logged with its traceback, answered without one
            log.error("the readiness probe failed unexpectedly: %s", redact_traceback(exc))
            return Refused(_UNEXPECTED, reason=Reason.INTERNAL_ERROR)
        return None


_READY_BOUND_S = 5.0
_READY_FRESH_S = 1.0


class _LazyConsole:
    """The operator console, made on its first request: a gateway whose console nobody opens
    does not import its pages and templates (jinja2; 2 MiB of the serving process) nor open
    a second reader of the audit log."""

    def __init__(self, settings: Settings, tokens: TokenTable, holder: Mapping[str, Web]) -> None:
        self._settings = settings
        self._tokens = tokens
        self._holder = holder
        self._console: Console | None = None
        self._logouts: LimitState | None = None  # see _logout_state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._console is None:
            from .console import AgentTokens, Console, open_audit_reader

            holder = self._holder

            def unknown_token(client: str) -> None:
                # Counted and logged as the capability routes' refused tokens are.
                if "web" in holder:
                    holder["web"].telemetry.auth_refused("unknown", client)

            self._console = Console(
                self._settings,
                open_audit_reader(self._settings),
                AgentTokens(self._tokens),
                lambda: holder["web"].limit_state if "web" in holder else None,
                unknown_token=unknown_token,
                logout_state=self._logout_state,
                budget_state=lambda: holder["web"].budget_state if "web" in holder else None,
            )
        await self._console.app(scope, receive, send)

    def _logout_state(self) -> LimitState | None:
        """Where the console keeps its sessions and so their logouts (``Console._keep_live``):
        the gateway's limit store, which replicas sharing Redis share; but ``limits.db`` in the state dir when that store is the one
        process's memory, which a restart forgets: a logged-out cookie (signed, so taken
        without any store) opened the console again for the rest of its 12 hours."""
        web = self._holder.get("web")
        if web is None:
            return None
        if not isinstance(web.limit_state, MemoryLimitState):
            return web.limit_state
        if self._logouts is None:
            self._logouts = SQLiteLimitState(self._settings.state.path())
        return self._logouts

    async def aclose(self) -> None:
        if self._console is not None:
            await self._console.aclose()
        if self._logouts is not None:
            await self._logouts.aclose()


def _telemetry_of(holder: Mapping[str, Web]) -> Telemetry | None:
    web = holder.get("web")
    return web.telemetry if web is not None else None


def bind_socket(
    host: str,
    port: int,
    *,
    port_advice: str = "choose another port (0 picks a free one)",
    host_advice: str = "listen on one it has, such as 127.0.0.1",
) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port=0``: any free port), bound up front so
    the caller knows the address before serving. ``InvalidInput`` if it cannot be: the
    advice matches the cause (the port taken or privileged: ``port_advice``; a host that is
    no address of this machine: ``host_advice``), each in the caller's own flags."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named explicitly: asyncio turns Nagle off only on sockets whose proto says
    # TCP, and accepted sockets inherit it. With proto 0 every response written in two parts
    # (headers, then body) waits out the peer's delayed ACK: 40 ms a request.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        import errno  # only when binding failed

        sock.close()
        where = f"cannot listen on {host}:{port}"
        if isinstance(exc, socket.gaierror) or exc.errno in (
            errno.EADDRNOTAVAIL,
            errno.EAFNOSUPPORT,
            errno.EINVAL,
        ):
            # A bad or foreign address: no port would help.
            raise InvalidInput(
                f"{where}: {host!r} is not an address of this machine; {host_advice}"
            ) from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise InvalidInput(
                f"{where}: a port below 1024 needs privileges webward should not have; "
                f"{port_advice}"
            ) from None
        if exc.errno == errno.EADDRINUSE:
            raise InvalidInput(
                f"{where}: the port is in use; {port_advice}, or stop what listens there"
            ) from None
        raise InvalidInput(f"{where}: {exc.strerror or exc}") from None
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def address_url(sock: socket.socket) -> str:
    """``http://host:port`` of a bound socket."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"
