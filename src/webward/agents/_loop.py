"""The run loop: model call -> tool calls -> results -> model call ... until an answer.

It knows nothing of any vendor: a :class:`ModelClient` renders the conversation in its own wire
format. Limits: at most ``max_turns`` model calls (at the ceiling the run stops and says so),
and at most ``max_result_chars`` characters of text per tool result handed back, never fewer
than a whole ``web_fetch`` window in its envelope (:func:`result_cap`). Several tool calls in
one turn run concurrently; their results keep the order of the calls. Base64 never enters a
summary, a log line or the printed stream.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from .._errors import InvalidInput, Reason, UpstreamError
from ._tools import (
    TextPart,
    ToolContext,
    ToolResult,
    ToolSpec,
    execute_tool,
    refused_call,
    summarize_result,
)
from ._toolsets import AgentDefinition

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "DEFAULT_MAX_TURNS",
    "ENVELOPE_ALLOWANCE",
    "CallRecord",
    "ModelClient",
    "ModelReply",
    "RunResult",
    "ToolCall",
    "cap_result",
    "execute_calls",
    "result_cap",
    "run_agent",
]

logger = logging.getLogger("webward.agents")

DEFAULT_MAX_TURNS = 10
DEFAULT_MAX_RESULT_CHARS = 50_000
# What an envelope adds to a window of text, URLs aside: the handling notice, the begin and
# end markers with their nonce, the provenance lines (a title of at most 300 characters, the
# type, status and time) and the window's header. Generous on purpose: a window must never be
# cut, or its header's "pass offset=N" would skip what the cut dropped.
ENVELOPE_ALLOWANCE = 8_000
# A tool call's argument values in --json (CallRecord.to_wire): a model can send megabytes.
_MAX_ARGUMENT_CHARS = 300
# A call's summary is a sentence (a refusal's, with its next step) or a count: far shorter.
_MAX_SUMMARY_CHARS = 1000
_MAX_ARGUMENT_ITEMS = 20


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for. ``arguments`` is None when they could not be
    decoded; ``problem`` then says why, and the call is answered with that as an error."""

    id: str
    name: str
    arguments: Mapping[str, Any] | None
    problem: str | None = None


@dataclass(frozen=True)
class ModelReply:
    """One model turn: its text, its tool calls, and the assistant message to append
    (in the vendor's wire format)."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    message: Mapping[str, Any]
    stop_reason: str | None = None
    # The model declined to answer: its words, "" when it gave none (None: no refusal).
    refusal: str | None = None
    # The vendor stopped the turn at its token limit: the text is incomplete.
    cut: bool = False


class ModelClient(Protocol):
    """A model behind some vendor's API, speaking that vendor's message format."""

    provider: str
    model: str

    def first_messages(self, question: str) -> list[dict[str, Any]]:
        """The conversation's opening messages for a user question."""
        ...

    async def complete(
        self, system: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        """One model call; raises ``UpstreamError`` with a one-sentence message on failure."""
        ...

    def tool_result_messages(
        self, results: Sequence[tuple[ToolCall, ToolResult]]
    ) -> list[dict[str, Any]]:
        """The messages that hand one turn's tool results back, in call order."""
        ...


@dataclass(frozen=True)
class CallRecord:
    """What happened in one tool call, without any page content or base64."""

    turn: int
    id: str
    name: str
    arguments: Mapping[str, Any] | None
    summary: str
    is_error: bool

    def to_wire(self) -> dict[str, Any]:
        """The record as JSON, long argument values cut (as ``--verbose`` cuts them), each
        cut saying how much it dropped."""
        return {
            "turn": self.turn,
            "id": cut_text(self.id, _MAX_ARGUMENT_CHARS),
            "name": cut_text(self.name, _MAX_ARGUMENT_CHARS),
            "arguments": _shortened(self.arguments) if self.arguments is not None else None,
            "summary": cut_text(self.summary, _MAX_SUMMARY_CHARS),
            "isError": self.is_error,
        }


def cut_text(text: str, limit: int) -> str:
    """``text`` cut at ``limit`` characters, the cut saying how much it dropped: the model
    chooses a tool call's name and id, and a refusal's summary repeats them."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters cut]"


def _shortened(value: Any, depth: int = 0) -> Any:
    """``value`` with strings cut at 300 characters and lists and objects at 20 entries,
    each cut marked with what it dropped; deeper than four levels, a placeholder."""
    if isinstance(value, str):
        return cut_text(value, _MAX_ARGUMENT_CHARS)
    if depth >= 4 and isinstance(value, Mapping | list | tuple):
        return "[nested value cut]"
    if isinstance(value, Mapping):
        items = list(value.items())
        out = {
            _shortened(str(k), depth + 1): _shortened(v, depth + 1)
            for k, v in items[:_MAX_ARGUMENT_ITEMS]
        }
        if len(items) > _MAX_ARGUMENT_ITEMS:
            out["…"] = f"[{len(items) - _MAX_ARGUMENT_ITEMS:,} more entries cut]"
        return out
    if isinstance(value, list | tuple):
        out_list = [_shortened(v, depth + 1) for v in value[:_MAX_ARGUMENT_ITEMS]]
        if len(value) > _MAX_ARGUMENT_ITEMS:
            out_list.append(f"[{len(value) - _MAX_ARGUMENT_ITEMS:,} more items cut]")
        return out_list
    return value


@dataclass(frozen=True)
class RunResult:
    """The end of a run: the answer, how many model turns it took, and every tool call."""

    answer: str
    turns: int
    stopped_at_ceiling: bool
    calls: tuple[CallRecord, ...] = field(default=())
    # The model's last turn reached its token limit: the answer is incomplete (and says so).
    cut_at_token_limit: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "turns": self.turns,
            "stoppedAtCeiling": self.stopped_at_ceiling,
            "cutAtTokenLimit": self.cut_at_token_limit,
            "toolCalls": [c.to_wire() for c in self.calls],
        }


CUT_NOTE = (
    "[cut: the model's answer reached its token limit (max_tokens) and is incomplete; raise "
    "max_tokens for a whole answer]"
)
EMPTY_NOTE = "[the model ended the run without an answer]"


def result_cap(agent: AgentDefinition, context: ToolContext, max_result_chars: int) -> int:
    """The most characters of text per tool result: ``max_result_chars``, but never less than
    the largest ``web_fetch`` window (the one the agent's tools state, or the web capability's
    ``[limits] max_fetch_text_chars``, whichever is larger) in its envelope with two URLs of
    the longest length allowed."""
    window, url = 0, 0
    fetch = agent.toolset.get("web_fetch")
    if fetch is not None:
        properties = fetch.input_schema.get("properties", {})
        window = int(properties.get("max_chars", {}).get("maximum", 0))
        url = int(properties.get("url", {}).get("maxLength", 0))
    limits = getattr(getattr(context.web, "settings", None), "limits", None)
    window = max(window, int(getattr(limits, "max_fetch_text_chars", 0)))
    url = max(url, int(getattr(limits, "max_url_chars", 0)))
    return max(max_result_chars, window + 2 * url + ENVELOPE_ALLOWANCE)


def cap_result(result: ToolResult, max_chars: int) -> ToolResult:
    """``result`` with its text cut to ``max_chars`` characters in all, plus a note saying what
    was dropped. Binary parts are kept: their size is capped by the core (5 MiB image, 10 MiB
    PDF)."""
    total = len(result.content) if isinstance(result.content, str) else len(result.text)
    # The cut may fall inside an envelope: the note names what went with it, so that neither
    # a "pass offset=N" above it nor the missing end marker is taken at its word.
    note = (
        f"\n[webward cut this tool result at {max_chars:,} of its {total:,} characters: the "
        f"last {total - max_chars:,} were not handed over, the envelope's end marker and any "
        "text after it among them; an offset in the header above does not follow on from "
        "here. Ask for less, with a smaller max_chars or limit]"
    )
    if isinstance(result.content, str):
        if len(result.content) <= max_chars:
            return result
        return ToolResult(result.content[:max_chars] + note, result.is_error, result.tool)
    budget = max_chars
    parts: list[TextPart | Any] = []
    cut = False
    for part in result.content:
        if isinstance(part, TextPart):
            if len(part.text) > budget:
                parts.append(TextPart(part.text[:budget] + note))
                budget, cut = 0, True
                continue
            budget -= len(part.text)
        parts.append(part)
    if not cut:
        return result
    return ToolResult(
        tuple(p for p in parts if not (isinstance(p, TextPart) and not p.text)),
        result.is_error,
        result.tool,
    )


async def execute_calls(
    calls: Sequence[ToolCall],
    context: ToolContext,
    agent: AgentDefinition,
    *,
    on_done: Callable[[int, ToolResult], None] | None = None,
) -> list[ToolResult]:
    """Run one turn's tool calls concurrently; the results come back in call order.
    ``on_done(index, result)`` sees each result as its call completes."""
    results: list[ToolResult | None] = [None] * len(calls)

    async def one(index: int, call: ToolCall) -> None:
        # Refused here, before the core, yet audited (refused_call).
        if call.problem is not None:
            result = await refused_call(call.name, None, call.problem, context)
        elif agent.toolset.get(call.name) is None:
            offered = ", ".join(agent.toolset.tool_names)
            result = await refused_call(
                call.name,
                call.arguments,
                f"the tool {call.name!r} is not available to the {agent.name} agent; "
                f"its tools are {offered}",
                context,
            )
        else:
            result = await execute_tool(call.name, call.arguments, context)
        results[index] = result
        if on_done is not None:
            on_done(index, result)

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(one, index, call)
    return [r for r in results if r is not None]


async def _run_calls(
    turn: int,
    calls: Sequence[ToolCall],
    context: ToolContext,
    agent: AgentDefinition,
    cap: int,
    records: list[CallRecord],
    on_call: Callable[[CallRecord], None] | None,
) -> list[tuple[ToolCall, ToolResult]]:
    """One turn's calls: their results, capped, in call order; their records appended to
    ``records`` in call order, and each handed to ``on_call`` as soon as its call completes."""
    capped: list[ToolResult | None] = [None] * len(calls)
    done: list[CallRecord | None] = [None] * len(calls)

    def completed(index: int, result: ToolResult) -> None:
        call = calls[index]
        capped[index] = result = cap_result(result, cap)
        record = CallRecord(
            turn, call.id, call.name, call.arguments, summarize_result(result), result.is_error
        )
        logger.info("agent %s turn %d: %s -> %s", agent.name, turn, call.name, record.summary)
        done[index] = record
        if on_call is not None:
            on_call(record)

    await execute_calls(calls, context, agent, on_done=completed)
    records.extend(r for r in done if r is not None)
    return [(c, r) for c, r in zip(calls, capped, strict=True) if r is not None]


def _turn_limit(max_turns: int, limit_name: str) -> str:
    """Why the run stopped at its ceiling, naming what raises it as the caller spells it."""
    turns = "1 turn" if max_turns == 1 else f"{max_turns} turns"
    return (
        f"the run reached its limit of {turns} before the model gave a final answer; raise "
        f"{limit_name} to let it go on"
    )


async def _refuse_at_ceiling(
    turn: int,
    calls: Sequence[ToolCall],
    context: ToolContext,
    max_turns: int,
    limit_name: str,
    records: list[CallRecord],
    on_call: Callable[[CallRecord], None] | None,
) -> None:
    """The calls of the last turn, which the run will not hand back to the model: each
    audited once, refused with reason ``turn_limit`` (as any call refused before the core,
    its capability and target from its name and arguments), and recorded in call order."""
    message = f"not run: {_turn_limit(max_turns, limit_name)}"
    for call in calls:
        result = await refused_call(
            call.name, call.arguments, message, context, reason=Reason.TURN_LIMIT
        )
        record = CallRecord(
            turn, call.id, call.name, call.arguments, summarize_result(result), result.is_error
        )
        records.append(record)
        if on_call is not None:
            on_call(record)


async def _start_session(context: ToolContext, question: str) -> ToolContext:
    """The run is a session: named here unless the caller named one, and the user's question
    declares the URLs it writes (URL provenance; the model's own words never do)."""
    declare = getattr(context.web, "declare_urls", None)
    if declare is None:  # no web, or a capability that knows nothing of sessions
        return context
    if context.session is None:
        context = dataclasses.replace(context, session=f"run-{uuid.uuid4().hex}")
    await declare(context.session, question)
    return context


async def run_agent(
    client: ModelClient,
    agent: AgentDefinition,
    question: str,
    context: ToolContext,
    *,
    max_turns: int = DEFAULT_MAX_TURNS,
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    on_call: Callable[[CallRecord], None] | None = None,
    limit_name: str = "max_turns",
) -> RunResult:
    """Run ``agent`` on ``question`` until the model answers or ``max_turns`` model calls.

    Tool failures come back to the model as messages; a model API failure, or a model that
    refuses to answer, raises ``UpstreamError``. ``on_call`` sees each tool call's record as
    the call completes (``--verbose``); ``RunResult.calls`` keeps them in call order. Tool
    results are cut at :func:`result_cap` characters of text. ``limit_name`` is what the
    ceiling's note tells the reader to raise (``--max-turns`` at the command line).
    """
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise InvalidInput("max_turns must be a whole number of at least 1")
    if not isinstance(question, str) or not question.strip():
        raise InvalidInput("the question must not be empty")
    context = await _start_session(context, question)
    cap = result_cap(agent, context, max_result_chars)
    messages: list[Mapping[str, Any]] = list(client.first_messages(question))
    records: list[CallRecord] = []
    reply: ModelReply | None = None
    for turn in range(1, max_turns + 1):
        reply = await client.complete(agent.system_prompt, messages, agent.tools)
        if reply.refusal is not None:
            # A refusal is no answer: printed as one (exit 0, the text on stdout), a script
            # would take it for the finding.
            said = f": {reply.refusal[:300]}" if reply.refusal.strip() else ""
            raise UpstreamError(
                f"the {client.provider} model refused to answer{said}",
                reason=Reason.MODEL_BAD_RESPONSE,
            )
        messages.append(reply.message)
        if not reply.tool_calls:
            return _final(reply, turn, records)
        if turn == max_turns:
            # The model still wants tools, but it will not be asked again: its calls are not
            # run, yet each is a call the model made, audited and listed as refused.
            await _refuse_at_ceiling(
                turn, reply.tool_calls, context, max_turns, limit_name, records, on_call
            )
            break
        handed = await _run_calls(turn, reply.tool_calls, context, agent, cap, records, on_call)
        messages.extend(client.tool_result_messages(handed))
    assert reply is not None
    note = f"[stopped: {_turn_limit(max_turns, limit_name)}]"
    answer = f"{reply.text}\n\n{note}" if reply.text.strip() else note
    return RunResult(answer, max_turns, True, tuple(records))


def _final(reply: ModelReply, turn: int, records: list[CallRecord]) -> RunResult:
    """The run's result from the model's last turn: an answer cut at the token limit, or none
    at all, says so rather than passing for a whole one."""
    answer = reply.text
    if reply.cut:
        answer = f"{answer}\n\n{CUT_NOTE}" if answer.strip() else CUT_NOTE
    elif not answer.strip():
        answer = EMPTY_NOTE
    return RunResult(answer, turn, False, tuple(records), cut_at_token_limit=reply.cut)
