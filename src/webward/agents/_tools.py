"""The two web tools as tool specs, and their execution against an injected capability.

A tool spec is a name, a description the model reads and a JSON schema, all taken from the
capability catalogue (``_capabilities``) under the ``[limits]`` in force (:func:`tool_specs`);
each provider module renders the same specs in its own shape. Execution never raises into a run loop: a
``WebwardError`` becomes its one-sentence message as an error result, anything else becomes a
generic failure message (logged, with base64 scrubbed), and a run with no web capability gets
"web access is not available in this run".
"""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._capabilities import (
    DEFAULT_LIMIT,
    MISSING_QUERY,
    MISSING_URL,
    TOOL,
    UNKNOWN_TOOL,
    Capability,
    Catalogue,
    capabilities,
    whole_number,
)
from .._envelope import neutralise_line
from .._errors import InvalidInput, Refused, WebwardError
from .._models import Page, Part, SearchResult
from .._parts import tool_result_text
from .._redact import redact_message
from .._settings import LimitsSettings, Settings

__all__ = [
    "NO_WEB_MESSAGE",
    "UNKNOWN_TOOL",
    "WEB_FETCH",
    "WEB_SEARCH",
    "TextPart",
    "ToolContext",
    "ToolResult",
    "ToolSpec",
    "WebCapability",
    "execute_tool",
    "parts_summary",
    "refused_call",
    "summarize_result",
    "tool_specs",
]

logger = logging.getLogger("webward.agents")

NO_WEB_MESSAGE = "web access is not available in this run"


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the model sees it: name, description and JSON schema of its input."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    @classmethod
    def of(cls, capability: Capability) -> ToolSpec:
        """The tool of a capability in the catalogue."""
        return cls(capability.tool, capability.description, capability.input_schema(TOOL))

    def strict_schema(self) -> dict[str, Any]:
        """The input schema as OpenAI's strict mode takes it: every argument required, each
        optional one nullable (``null`` is the argument left out, so its default applies)
        and no ``default`` (which strict mode refuses). Forced to fill every argument with a
        value, a strict model sent a ``query`` (a read turned into find-in-page, or refused
        when empty) and an ``offset`` on every read; it now sends ``null``."""
        required = set(self.input_schema.get("required", ()))
        properties: dict[str, Any] = {}
        for name, given in self.input_schema["properties"].items():
            schema = {key: value for key, value in given.items() if key != "default"}
            if name not in required:
                schema["type"] = [schema["type"], "null"]
                if "enum" in schema:  # strict mode holds a value to the enum, null too
                    schema["enum"] = [*schema["enum"], None]
            properties[name] = schema
        return {
            **self.input_schema,
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }


def tool_specs(settings: Settings | LimitsSettings | None = None) -> tuple[ToolSpec, ToolSpec]:
    """``web_fetch`` and ``web_search`` as the catalogue describes them under ``settings``
    (the numbers the model is told are the ``[limits]`` the core enforces)."""
    catalogue = capabilities(settings)
    return ToolSpec.of(catalogue.fetch), ToolSpec.of(catalogue.search)


#: The two tools under the default settings.
WEB_FETCH, WEB_SEARCH = tool_specs()
# The argument names each tool takes (the same under any settings).
_DEFAULTS: Catalogue = capabilities()
_SEARCH_FILTERS = tuple(n for n in _DEFAULTS.search.names(TOOL) if n not in ("query", "limit"))
_CAPABILITY_OF = {c.tool: c for c in (_DEFAULTS.fetch, _DEFAULTS.search)}


class WebCapability(Protocol):
    """What the tools need from the core: ``webward.Web`` satisfies it. The keyword-only
    arguments are passed only when a call sets them, so a capability without them still
    serves calls that do not."""

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
        session: str | None = None,
        max_age: int | None = None,
    ) -> Page: ...

    async def search(
        self,
        query: str,
        limit: int = 10,
        agent: str = "cli",
        tier: str | None = None,
        *,
        allowed_domains: Sequence[str] | None = None,
        blocked_domains: Sequence[str] | None = None,
        freshness: str | None = None,
        country: str | None = None,
        language: str | None = None,
        session: str | None = None,
    ) -> SearchResult: ...


@dataclass(frozen=True)
class ToolContext:
    """What one run's tools act with: the web capability (or none), the agent and its tier,
    and the session the calls belong to (``run_agent`` names one per run when it is None)."""

    web: WebCapability | None
    agent: str
    tier: str | None = None
    session: str | None = None

    def session_args(self) -> dict[str, Any]:
        """``session=`` for the core, when the context has one (older capabilities take none)."""
        return {} if self.session is None else {"session": self.session}


@dataclass(frozen=True)
class TextPart:
    """A text part of a tool result (the enveloped page window, a note)."""

    text: str


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer: a string, or text and binary parts (images, documents) in order."""

    content: str | tuple[TextPart | Part, ...]
    is_error: bool = False
    # Not sent to the model: for logs and --verbose.
    tool: str = field(default="", compare=False)

    @property
    def text(self) -> str:
        """The text of the result, binary parts left out."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def parts(self) -> tuple[Part, ...]:
        """The binary parts (images, documents) of the result."""
        if isinstance(self.content, str):
            return ()
        return tuple(p for p in self.content if isinstance(p, Part))


def parts_summary(parts: Sequence[Part]) -> str:
    """One line per binary part, e.g. ``[image image/png, 2048 bytes]``; never the base64."""
    return tool_result_text(parts)


def summarize_result(result: ToolResult) -> str:
    """A short account of a result for people and logs: size of the text, one line per part."""
    if result.is_error:
        return f"error: {result.text}"
    pieces = [f"{len(result.text):,} characters of text"]
    lines = parts_summary(result.parts)
    if lines:
        pieces.append(lines.replace("\n", " "))
    return "ok, " + " ".join(pieces)


async def execute_tool(name: str, arguments: Any, context: ToolContext) -> ToolResult:
    """Run one tool call. Never raises (except cancellation): failures become error results."""
    try:
        if name == WEB_FETCH.name:
            return await _web_fetch(arguments, context)
        if name == WEB_SEARCH.name:
            return await _web_search(arguments, context)
        return await refused_call(
            name,
            arguments,
            f"there is no tool named {name!r}; the tools are {WEB_FETCH.name} and {WEB_SEARCH.name}",
            context,
        )
    except WebwardError as exc:
        return _error(name, exc.for_model)
    except Exception as exc:
        logger.error(
            "tool %s failed unexpectedly: %s",
            name,
            _scrub("".join(traceback.format_exception(exc))),
        )
        return _error(name, f"{name} failed unexpectedly (internal_error); the error was logged")


def _error(tool: str, message: str) -> ToolResult:
    return ToolResult(message, is_error=True, tool=tool)


def _check_arguments(capability: Capability, arguments: Any) -> Mapping[str, Any]:
    allowed = capability.names(TOOL)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise InvalidInput(
            f"{capability.tool} takes a JSON object of arguments ({', '.join(allowed)})"
        )
    for name in arguments:
        if name not in allowed:
            raise InvalidInput(capability.unknown(TOOL, name))
    return arguments


async def refused_call(
    name: str, arguments: Any, message: str, context: ToolContext, *, reason: str | None = None
) -> ToolResult:
    """The answer to a call of tool ``name`` refused before it reached the core (arguments
    that are not JSON, unknown or missing, a tool the agent is not given, a tool that does
    not exist, a call past the run's last turn): audited as the core audits its own refusals
    when the context's capability can record it (``webward.Web.reject``); the audit log's own
    refusal instead if it cannot take the record. Without ``reason`` the call's input was at
    fault (``invalid_input``); with one, it is refused for that reason (``turn_limit``).

    A call of ``web_fetch`` or ``web_search`` is recorded under its capability, its target
    the URL or query. Any other name is recorded under :data:`UNKNOWN_TOOL` with the name
    (one line, at most 200 characters) as target: the capability column is a fixed set that
    metrics count by and the console filters on, so a name the model made up never goes
    there, and a tool named ``web:page.fetch@1`` cannot pass for a read."""
    capability = _CAPABILITY_OF.get(name)
    reject = getattr(context.web, "reject", None)
    if reject is not None:
        if capability is not None:
            # The audit's target: the first argument, what the call reads (url, or query).
            field = capability.names(TOOL)[0]
            target = arguments.get(field) if isinstance(arguments, Mapping) else None
            capability_id, what = capability.id, target if isinstance(target, str) else ""
            if capability is _DEFAULTS.fetch:
                what = what.strip()  # the URL as it would have been read (_web_fetch)
        else:
            capability_id, what = UNKNOWN_TOOL, neutralise_line(name)[:200]
        refusal: WebwardError = (
            InvalidInput(message) if reason is None else Refused(message, reason=reason)
        )
        error = await reject(
            capability_id, context.agent, context.tier, what, refusal, **context.session_args()
        )
        message = error.for_model
    return _error(name, message)


def _whole(value: Any, default: int) -> Any:
    """Models sometimes send numbers as strings or null: the forms every face reads
    (``_capabilities.whole_number``); anything else goes to the core as sent, which refuses
    it, audited (``"²"`` is a digit to ``str.isdigit`` but no number to ``int``)."""
    if value is None:
        return default
    number = whole_number(value)
    return value if number is None else number


def _given(args: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The optional arguments the model set (null means "not given")."""
    return {name: args[name] for name in names if args.get(name) is not None}


async def _web_fetch(arguments: Any, context: ToolContext) -> ToolResult:
    fetch = _DEFAULTS.fetch
    try:
        args = _check_arguments(fetch, arguments)
        if context.web is None:
            return _error(fetch.tool, NO_WEB_MESSAGE)
        url = args.get("url")
        if not isinstance(url, str) or not url.strip():
            raise InvalidInput(MISSING_URL)
    except InvalidInput as exc:
        return await refused_call(fetch.tool, arguments, exc.message, context)
    extra = _given(args, ("query",))
    if args.get("max_chars") is not None:
        extra["max_chars"] = _whole(args["max_chars"], 0)
    if args.get("max_age") is not None:
        extra["max_age"] = _whole(args["max_age"], 0)
    page = await context.web.fetch(
        url.strip(),
        offset=_whole(args.get("offset"), 0),
        agent=context.agent,
        tier=context.tier,
        **extra,
        **context.session_args(),
    )
    if not page.parts:
        return ToolResult(page.content, tool=fetch.tool)
    return ToolResult((TextPart(page.content), *page.parts), tool=fetch.tool)


async def _web_search(arguments: Any, context: ToolContext) -> ToolResult:
    search = _DEFAULTS.search
    try:
        args = _check_arguments(search, arguments)
        if context.web is None:
            return _error(search.tool, NO_WEB_MESSAGE)
        query = args.get("query")
        if not isinstance(query, str):
            raise InvalidInput(MISSING_QUERY)
    except InvalidInput as exc:
        return await refused_call(search.tool, arguments, exc.message, context)
    result = await context.web.search(
        query,
        limit=_whole(args.get("limit"), DEFAULT_LIMIT),
        agent=context.agent,
        tier=context.tier,
        **_given(args, _SEARCH_FILTERS),
        **context.session_args(),
    )
    return ToolResult(result.content, tool=search.tool)


# Long runs of base64 (page images, PDFs) never reach a log line.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=_-]{200,}")


def _scrub(text: str) -> str:
    # and URL credentials, and secret query values (a pre-signed URL's signature)
    return _BASE64_RUN.sub("[base64 elided]", redact_message(text))
