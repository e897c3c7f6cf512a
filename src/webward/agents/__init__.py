"""Agent tools: ``web_fetch`` and ``web_search`` for agents on any model.

- Tool specs from the capability catalogue (:func:`tool_specs` under the settings in force;
  :data:`WEB_FETCH`, :data:`WEB_SEARCH` under the defaults) rendered per provider
  (:mod:`webward.agents` ``anthropic_tools`` / ``openai_tools`` / ``openai_responses_tools``).
- Toolsets (``full``, ``readonly``, ``assistant``, ``web``) and two agents: ``general`` (reads
  a linked URL, never searches) and ``research`` (searches and reads).
- :func:`execute_tool` runs a call against the web capability in a :class:`ToolContext`; it
  never raises into a run loop.
- Mappings of tool results (text, images, PDFs) to the Anthropic Messages API, to
  OpenAI-compatible chat completions and to OpenAI's Responses API, with small HTTP clients
  for the first two.
- :func:`run_agent`: the provider-agnostic run loop.
"""

from __future__ import annotations

from ._anthropic import AnthropicClient
from ._anthropic import render_tools as anthropic_tools
from ._anthropic import tool_results_message as anthropic_tool_results
from ._loop import (
    DEFAULT_MAX_RESULT_CHARS,
    DEFAULT_MAX_TURNS,
    ENVELOPE_ALLOWANCE,
    CallRecord,
    ModelClient,
    ModelReply,
    RunResult,
    ToolCall,
    cap_result,
    execute_calls,
    result_cap,
    run_agent,
)
from ._openai import OpenAIClient
from ._openai import render_response_tools as openai_responses_tools
from ._openai import render_tools as openai_tools
from ._openai import response_tool_outputs as openai_responses_tool_results
from ._openai import tool_result_messages as openai_tool_results
from ._tools import (
    NO_WEB_MESSAGE,
    UNKNOWN_TOOL,
    WEB_FETCH,
    WEB_SEARCH,
    TextPart,
    ToolContext,
    ToolResult,
    ToolSpec,
    WebCapability,
    execute_tool,
    summarize_result,
    tool_specs,
)
from ._toolsets import (
    AGENTS,
    GENERAL,
    RESEARCH,
    TOOLSETS,
    AgentDefinition,
    Toolset,
    get_agent,
    get_toolset,
)

__all__ = [
    "AGENTS",
    "DEFAULT_MAX_RESULT_CHARS",
    "DEFAULT_MAX_TURNS",
    "ENVELOPE_ALLOWANCE",
    "GENERAL",
    "NO_WEB_MESSAGE",
    "RESEARCH",
    "TOOLSETS",
    "UNKNOWN_TOOL",
    "WEB_FETCH",
    "WEB_SEARCH",
    "AgentDefinition",
    "AnthropicClient",
    "CallRecord",
    "ModelClient",
    "ModelReply",
    "OpenAIClient",
    "RunResult",
    "TextPart",
    "ToolCall",
    "ToolContext",
    "ToolResult",
    "ToolSpec",
    "Toolset",
    "WebCapability",
    "anthropic_tool_results",
    "anthropic_tools",
    "cap_result",
    "execute_calls",
    "execute_tool",
    "get_agent",
    "get_toolset",
    "openai_responses_tool_results",
    "openai_responses_tools",
    "openai_tool_results",
    "openai_tools",
    "result_cap",
    "run_agent",
    "summarize_result",
    "tool_specs",
]
