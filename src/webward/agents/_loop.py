"""The run loop: model call -> tool calls -> results -> model call ... until an answer.

It knows nothing of any vendor: a :class:`ModelClient` renders the conversation in its own wire
format. Limits: at most ``max_turns`` model calls (at the ceiling the run stops and says so),
and at most ``max_result_chars`` characters of text per tool result handed back. Several tool
calls in one turn run concurrently; their results keep the order of the calls. Base64 never
enters a summary, a log line or the printed stream.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from .._errors import InvalidInput
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
    "CallRecord",
    "ModelClient",
    "ModelReply",
    "RunResult",
    "ToolCall",
    "cap_result",
    "execute_calls",
    "run_agent",
]

logger = logging.getLogger("webward.agents")

DEFAULT_MAX_TURNS = 10
DEFAULT_MAX_RESULT_CHARS = 50_000


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
        return {
            "turn": self.turn,
            "id": self.id,
            "name": self.name,
            "arguments": dict(self.arguments) if self.arguments is not None else None,
            "summary": self.summary,
            "isError": self.is_error,
        }


@dataclass(frozen=True)
class RunResult:
    """The end of a run: the answer, how many model turns it took, and every tool call."""

    answer: str
    turns: int
    stopped_at_ceiling: bool
    calls: tuple[CallRecord, ...] = field(default=())

    def to_wire(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "turns": self.turns,
            "stoppedAtCeiling": self.stopped_at_ceiling,
            "toolCalls": [c.to_wire() for c in self.calls],
        }


def cap_result(result: ToolResult, max_chars: int) -> ToolResult:
    """``result`` with its text cut to ``max_chars`` characters in all, plus a note saying so.
    Binary parts are kept: their size is capped by the core (5 MiB image, 10 MiB PDF)."""
    note = f"\n[tool result truncated at {max_chars:,} characters]"
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
    calls: Sequence[ToolCall], context: ToolContext, agent: AgentDefinition
) -> list[ToolResult]:
    """Run one turn's tool calls concurrently; the results come back in call order."""
    results: list[ToolResult | None] = [None] * len(calls)

    async def one(index: int, call: ToolCall) -> None:
        # Refused here, before the core, yet audited as a call of its tool.
        if call.problem is not None:
            results[index] = await refused_call(call.name, None, call.problem, context)
        elif agent.toolset.get(call.name) is None:
            offered = ", ".join(agent.toolset.tool_names)
            results[index] = await refused_call(
                call.name,
                call.arguments,
                f"the tool {call.name!r} is not available to the {agent.name} agent; "
                f"its tools are {offered}",
                context,
            )
        else:
            results[index] = await execute_tool(call.name, call.arguments, context)

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(one, index, call)
    return [r for r in results if r is not None]


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
) -> RunResult:
    """Run ``agent`` on ``question`` until the model answers or ``max_turns`` model calls.

    Tool failures come back to the model as messages; a model API failure raises
    ``UpstreamError``. ``on_call`` sees each tool call's record as it completes (``--verbose``).
    """
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise InvalidInput("max_turns must be a whole number of at least 1")
    if not isinstance(question, str) or not question.strip():
        raise InvalidInput("the question must not be empty")
    context = await _start_session(context, question)
    messages: list[Mapping[str, Any]] = list(client.first_messages(question))
    records: list[CallRecord] = []
    reply: ModelReply | None = None
    for turn in range(1, max_turns + 1):
        reply = await client.complete(agent.system_prompt, messages, agent.tools)
        messages.append(reply.message)
        if not reply.tool_calls:
            return RunResult(reply.text, turn, False, tuple(records))
        if turn == max_turns:
            break  # the model still wants tools, but it will not be asked again
        results = await execute_calls(reply.tool_calls, context, agent)
        capped = [cap_result(r, max_result_chars) for r in results]
        for call, result in zip(reply.tool_calls, capped, strict=True):
            record = CallRecord(
                turn, call.id, call.name, call.arguments, summarize_result(result), result.is_error
            )
            logger.info("agent %s turn %d: %s -> %s", agent.name, turn, call.name, record.summary)
            records.append(record)
            if on_call is not None:
                on_call(record)
        messages.extend(
            client.tool_result_messages(list(zip(reply.tool_calls, capped, strict=True)))
        )
    assert reply is not None
    note = (
        f"[stopped: the run reached its limit of {max_turns} turns before the model gave a "
        "final answer; raise max_turns to let it go on]"
    )
    answer = f"{reply.text}\n\n{note}" if reply.text.strip() else note
    return RunResult(answer, max_turns, True, tuple(records))
