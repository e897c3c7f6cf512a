"""Local fakes of model vendors' APIs: real HTTP servers on loopback, scripted replies.

They speak the documented wire formats:

- Anthropic Messages, ``POST /v1/messages`` (https://docs.anthropic.com/en/api/messages):
  ``x-api-key`` and ``anthropic-version`` headers; a ``message`` object with ``content`` blocks
  (``text``, ``tool_use``) and ``stop_reason``; errors as ``{"type": "error", "error": {...}}``.
- OpenAI chat completions, ``POST /v1/chat/completions``
  (https://platform.openai.com/docs/api-reference/chat): ``Authorization: Bearer``; a
  ``chat.completion`` with ``choices[0].message`` (``content``, ``tool_calls`` whose
  ``function.arguments`` is a JSON string) and ``finish_reason``; errors as ``{"error": {...}}``.

Every request body a fake receives is validated against the official SDK's request types
(``anthropic`` / ``openai`` TypedDicts, through pydantic, with nothing dropped as an unknown
key) and against the ordering rules of tool results; every scripted reply is validated against
the SDK's response model before the test starts. Problems are collected in ``.problems`` (a
handler runs in the server's thread, where an assertion would be lost).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anthropic.types
import openai.types.chat
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from localserver import Request, send, serve
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import BaseModel, TypeAdapter, ValidationError

API_KEY = "test-key-0123456789"

_ANTHROPIC_REQUEST = TypeAdapter(MessageCreateParamsNonStreaming)
_OPENAI_REQUEST = TypeAdapter(CompletionCreateParamsNonStreaming)
_ANTHROPIC_MESSAGE = TypeAdapter(anthropic.types.MessageParam)
_OPENAI_MESSAGE = TypeAdapter(openai.types.chat.ChatCompletionMessageParam)


# ---- strict validation against the SDK types ------------------------------------------


def _materialise(value: Any) -> Any:
    """Plain dicts and lists from pydantic's output; iterating a lazy ``Iterable[...]``
    validator is what validates its items, so this walks all of them."""
    if isinstance(value, BaseModel):
        # The SDK's unions also hold response models; what was set is what was sent, and
        # their extra keys are left out so that the comparison shows them.
        extra = set(value.model_extra or {})
        return {k: _materialise(getattr(value, k)) for k in value.model_fields_set - extra}
    if isinstance(value, Mapping):
        return {k: _materialise(v) for k, v in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if hasattr(value, "__iter__"):
        return [_materialise(v) for v in value]
    return value


def sdk_problems(adapter: TypeAdapter[Any], value: Any) -> list[str]:
    """What is wrong with ``value`` as the SDK type behind ``adapter``: a validation error,
    or any key the type does not know (pydantic ignores those; the difference shows them)."""
    try:
        validated = _materialise(adapter.validate_python(value, strict=True))
    except ValidationError as exc:
        return [str(exc)]
    if validated != value:
        return [f"keys unknown to the SDK type were dropped: {_diff(value, validated)}"]
    return []


def _diff(original: Any, validated: Any, path: str = "") -> str:
    if isinstance(original, dict) and isinstance(validated, dict):
        extra = sorted(set(original) - set(validated))
        if extra:
            return f"{path or '.'} has {extra}"
        for k in original:
            if original[k] != validated.get(k):
                return _diff(original[k], validated.get(k), f"{path}.{k}")
    if isinstance(original, list) and isinstance(validated, list):
        for i, (a, b) in enumerate(zip(original, validated, strict=False)):
            if a != b:
                return _diff(a, b, f"{path}[{i}]")
    return f"{path}: {original!r:.200} != {validated!r:.200}"


def anthropic_message_problems(message: Any) -> list[str]:
    """Problems of one message as ``anthropic.types.MessageParam``."""
    return sdk_problems(_ANTHROPIC_MESSAGE, message)


def openai_message_problems(message: Any) -> list[str]:
    """Problems of one message as ``openai.types.chat.ChatCompletionMessageParam``."""
    return sdk_problems(_OPENAI_MESSAGE, message)


def anthropic_order_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """After an assistant turn with tool_use blocks, the next user turn must start with one
    tool_result per tool_use, in order; documents and other blocks only after them."""
    problems = []
    for i, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        ids = [b["id"] for b in content if b.get("type") == "tool_use"]
        if not ids:
            continue
        if i + 1 >= len(messages):
            problems.append(f"message {i}: tool_use without a following user turn")
            continue
        following = messages[i + 1].get("content")
        if messages[i + 1].get("role") != "user" or not isinstance(following, list):
            problems.append(f"message {i + 1}: not a user turn of blocks after tool_use")
            continue
        lead = following[: len(ids)]
        if [b.get("type") for b in lead] != ["tool_result"] * len(ids):
            problems.append(f"message {i + 1}: the tool_result blocks do not lead the turn")
        elif [b.get("tool_use_id") for b in lead] != ids:
            problems.append(f"message {i + 1}: tool_result ids {lead} do not match {ids}")
        if any(b.get("type") == "tool_result" for b in following[len(ids) :]):
            problems.append(f"message {i + 1}: a tool_result after another block")
    return problems


def openai_order_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """After an assistant message with tool_calls come exactly one tool message per call, in
    order, before any other message."""
    problems = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        ids = [c["id"] for c in message["tool_calls"]]
        following = messages[i + 1 : i + 1 + len(ids)]
        if [m.get("role") for m in following] != ["tool"] * len(ids):
            problems.append(f"message {i}: the tool messages do not follow the tool calls")
        elif [m.get("tool_call_id") for m in following] != ids:
            problems.append(f"message {i}: tool_call_ids do not match {ids}")
    return problems


# ---- replies --------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorReply:
    """A scripted failure: an HTTP status with a body (bytes are sent as they are)."""

    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)
    # Answered again to every later request when the script ends on it: the client retries
    # the statuses the vendors' SDKs retry, and a failing server keeps failing.
    persists: bool = True


Reply = Mapping[str, Any] | ErrorReply | Callable[[dict[str, Any]], Mapping[str, Any]]


def anthropic_reply(text: str = "", calls: Sequence[tuple[str, str, Any]] = ()) -> dict[str, Any]:
    """A Messages response: optional text, then ``tool_use`` blocks ``(id, name, input)``."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    for call_id, name, arguments in calls:
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
    reply = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "fake-model",
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }
    anthropic.types.Message.model_validate(reply)
    return reply


def openai_reply(
    text: str | None = None, calls: Sequence[tuple[str, str, Any]] = ()
) -> dict[str, Any]:
    """A chat completion: optional text, then tool calls ``(id, name, arguments)``; dict
    arguments are sent as the JSON string the API uses, strings as they are."""
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for call_id, name, arguments in calls
        ]
    reply = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }
    openai.types.chat.ChatCompletion.model_validate(reply)
    return reply


# ---- the servers ----------------------------------------------------------------------


@dataclass
class FakeModelAPI:
    """One vendor API on loopback answering from a script, one reply per request."""

    vendor: str  # "anthropic" | "openai"
    replies: list[Reply]
    key: str | None = API_KEY  # None: a local server that wants no key header at all
    bodies: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    base_url: str = ""

    @property
    def path(self) -> str:
        return "/v1/messages" if self.vendor == "anthropic" else "/v1/chat/completions"

    def handle(self, req: Request, sock: socket.socket) -> None:
        problems = self._check(req)
        try:
            body = json.loads(req.body)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self.problems.append("the request body is not a JSON object")
            send(sock, 400, b'{"error": {"message": "bad json"}}', "application/json")
            return
        self.bodies.append(body)
        if self.vendor == "anthropic":
            problems += sdk_problems(_ANTHROPIC_REQUEST, body)
            problems += anthropic_order_problems(body.get("messages", []))
        else:
            problems += sdk_problems(_OPENAI_REQUEST, body)
            problems += openai_order_problems(body.get("messages", []))
        self.problems += [f"request {len(self.bodies)}: {p}" for p in problems]
        index = len(self.bodies) - 1
        last = self.replies[-1] if self.replies else None
        if index >= len(self.replies) and isinstance(last, ErrorReply) and last.persists:
            index = len(self.replies) - 1  # a server that fails goes on failing: a client retries
        if index >= len(self.replies):
            self.problems.append(
                f"request {index + 1}: the script has only {len(self.replies)} replies"
            )
            send(sock, 500, b'{"error": {"message": "script exhausted"}}', "application/json")
            return
        reply = self.replies[index]
        if isinstance(reply, ErrorReply):
            data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            send(sock, reply.status, data, "application/json", dict(reply.headers))
            return
        if callable(reply):
            reply = reply(body)
        send(sock, 200, json.dumps(reply).encode(), "application/json")

    def _check(self, req: Request) -> list[str]:
        problems = []
        if req.method != "POST":
            problems.append(f"method {req.method}")
        if "application/json" not in req.headers.get("content-type", ""):
            problems.append("the content-type is not JSON")
        if self.vendor == "anthropic":
            if req.headers.get("x-api-key") != self.key:
                problems.append("x-api-key is missing, wrong or not expected")
            if req.headers.get("anthropic-version") != "2023-06-01":
                problems.append("anthropic-version is missing")
        elif req.headers.get("authorization") != (
            None if self.key is None else f"Bearer {self.key}"
        ):
            problems.append("the bearer token is missing, wrong or not expected")
        return problems

    def messages(self, request: int) -> list[dict[str, Any]]:
        """The ``messages`` of the ``request``-th request (0-based)."""
        messages: list[dict[str, Any]] = self.bodies[request]["messages"]
        return messages


@contextmanager
def fake_model_api(
    vendor: str, replies: Sequence[Reply], *, key: str | None = API_KEY
) -> Iterator[FakeModelAPI]:
    """Serve a scripted ``vendor`` API ("anthropic" or "openai") on 127.0.0.1 for the block.

    ``base_url`` is what a client takes: the origin for Anthropic, ``<origin>/v1`` for OpenAI.
    """
    fake = FakeModelAPI(vendor, list(replies), key)
    with serve(routes={fake.path: fake.handle}) as server:
        fake.base_url = server.base if vendor == "anthropic" else server.url("/v1")
        yield fake


# ---- media the fake web serves ---------------------------------------------------------


def png_bytes(
    size: tuple[int, int] = (16, 12), color: tuple[int, int, int] = (200, 40, 40)
) -> bytes:
    """A real PNG made with Pillow."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, "PNG")
    return buffer.getvalue()


def pdf_bytes(text: str = "Quarterly report: revenue grew 12 percent.") -> bytes:
    """A real one-page PDF made with reportlab."""
    import io

    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    pdf.setTitle("Quarterly report")
    pdf.drawString(72, 720, text)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()
