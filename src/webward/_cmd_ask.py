"""``webward ask QUESTION``: the research agent, on any model, reading the web through webward."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ._errors import InvalidInput, WebwardError

if TYPE_CHECKING:  # imported when the command runs, not for `webward --help`
    from ._settings import Settings
    from .agents import AnthropicClient, CallRecord, OpenAIClient

HELP = "ask the research agent a question; it searches and reads the web through webward"
DESCRIPTION = """\
Run webward's research agent on a model of your choice. The model gets two tools, web_search
and web_fetch, which go through webward's guard, policy, limits and audit like any other read;
it answers with the sources it used. The model API itself is called directly at --base-url.

  --provider anthropic   the Anthropic Messages API (key: ANTHROPIC_API_KEY)
  --provider openai      any OpenAI-compatible chat-completions server: OpenAI, vLLM, Ollama,
                         LM Studio, OpenRouter ... (key: OPENAI_API_KEY)

Keys come from the credential store: the environment, the OS keyring, or the file written by
`webward credentials set NAME`. A --base-url on a loopback or private address or an internal
host name (localhost, *.local, *.lan, a single label ...) may go without a key: then none is
sent, as a local server such as Ollama expects. Without a search provider the agent still
reads URLs.
The research agent acts at tier connected unless --tier or [agents.research] tier says
otherwise.

Limits: each model call may take up to 600 s to answer (a long answer is slow), and is
tried twice more when the API is overloaded, rate limited for at most 5 s, or fails; each tool
result handed to the model is at most 50,000 characters of text, or a whole web_fetch window
in its envelope if [limits] max_fetch_text_chars is larger (a cut says what it dropped).
The answer is printed without terminal control characters. An answer cut at the model's
token limit ends with a note saying so (--json: "cutAtTokenLimit": true).

Exit codes of ask: 0 answered (also when the turn ceiling or the token limit stopped it: the
answer says so; a refused or failed read is told to the model, not to the exit code);
1 the model API failed (HTTP error, timeout, bad response) or the model refused to answer;
2 bad usage (missing key, bad option, bad config); 3 webward refused to start the run (e.g.
the audit log cannot be written). With --json an error is {"error": {"code", "message"}} on
stdout."""

_PROVIDER_NAMES = ("anthropic", "openai")
# A run's conversation is sent whole with every turn, so its cost grows with the square of
# the turns: a ceiling well past what research needs.
_MAX_TURNS = 100


def _provider(name: str) -> tuple[str, str]:
    """``(key variable, default base URL)`` of a model API."""
    from .agents import _anthropic, _openai

    module = _anthropic if name == "anthropic" else _openai
    return module.KEY_VARIABLE, module.DEFAULT_BASE_URL


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ._settings import TIERS

    p.add_argument("question", metavar="QUESTION", help="what to find out")
    # The options below are checked by _check rather than by argparse, so that a bad value
    # is one sentence (in the JSON error shape with --json), as every other input is.
    p.add_argument(
        "--provider",
        default="anthropic",
        metavar="P",
        help="the model API's wire format: anthropic (the default) or openai",
    )
    p.add_argument("--model", required=True, metavar="M", help="the model name the API expects")
    p.add_argument(
        "--base-url",
        metavar="URL",
        help="the API's base URL (default https://api.anthropic.com or https://api.openai.com/v1)",
    )
    p.add_argument("--tier", metavar="T", help=f"reach tier: {', '.join(TIERS)}")
    p.add_argument(
        "--max-turns",
        default="10",
        metavar="N",
        help=f"most model turns, 1 to {_MAX_TURNS} (default 10)",
    )
    p.add_argument(
        "--max-tokens",
        metavar="N",
        help="most output tokens per turn (default 4096 for anthropic, the server's for openai)",
    )
    p.add_argument(
        "--session",
        metavar="NAME",
        help="the session of this run (the URLs it has seen, its session budgets); default: a "
        "new session; the question's URLs join it",
    )
    p.add_argument(
        "--verbose", action="store_true", help="print each tool call and its summary to stderr"
    )
    p.add_argument("--json", action="store_true", help="print the answer and the run as JSON")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from .cli import run_call  # Ctrl-C pressed again cannot cut a cancelled call's record

    return run_call(_run, args, settings)


def _whole(value: str, flag: str, low: int, high: int | None = None) -> int:
    text = str(value).strip()
    number = int(text) if text.isascii() and text.isdigit() else None
    if number is None or number < low or (high is not None and number > high):
        bound = f"{low} to {high}" if high is not None else f"at least {low}"
        raise InvalidInput(f"{flag} must be a whole number, {bound}, not {text[:20]!r}")
    return number


def _check(args: argparse.Namespace) -> str:
    from ._settings import TIERS

    provider = str(args.provider).strip().lower()
    if provider not in _PROVIDER_NAMES:
        raise InvalidInput(
            f"--provider must be {' or '.join(_PROVIDER_NAMES)}, not {str(args.provider)[:20]!r}"
        )
    args.provider = provider
    if args.tier is not None and args.tier not in TIERS:
        raise InvalidInput(f"--tier must be one of {', '.join(TIERS)}, not {args.tier[:20]!r}")
    args.max_turns = _whole(args.max_turns, "--max-turns", 1, _MAX_TURNS)
    if args.max_tokens is not None:
        args.max_tokens = _whole(args.max_tokens, "--max-tokens", 1)
    if not args.question.strip():
        raise InvalidInput("the question must not be empty")
    if not args.model.strip():
        # Sent as "", the model API refused it after the run began (or, at a local server,
        # answered with whatever model it had loaded).
        raise InvalidInput("--model must not be empty: name the model the API expects")
    base_url: str = args.base_url or _provider(args.provider)[1]
    scheme, sep, rest = base_url.partition("://")
    authority = rest.split("/", 1)[0] if sep else scheme.split("/", 1)[0]
    if "@" in authority:
        # Never echoed: what precedes the @ is a user name and often a password.
        raise InvalidInput(
            "--base-url must not hold user info (user:password@); the key comes from the "
            "credential store"
        )
    if "?" in rest or "#" in rest:
        # The endpoint path is appended to the base URL: a query or fragment would swallow it.
        raise InvalidInput(
            "--base-url must not have a query (?...) or fragment (#...); give the API's base "
            "URL only, such as https://api.openai.com/v1"
        )
    if scheme.lower() not in ("http", "https") or not sep or not rest.strip("/"):
        raise InvalidInput(
            f"--base-url must be an absolute http:// or https:// URL, not {base_url!r}"
        )
    return base_url


def key_optional(base_url: str | None) -> bool:
    """Whether a model API at ``base_url`` may be called without a key: only an explicit base
    URL on a loopback or private address, or an internal host name, such as a local Ollama or
    vLLM. A missing key for anything else is a mistake worth stopping for. Pure: no DNS."""
    if not base_url:
        return False
    from . import guard

    try:
        parsed = guard.parse_url(base_url)
        if parsed.is_ip:
            return guard.ip_in_blocked_range(parsed.host)
        return guard.is_internal_name(parsed.host)
    except WebwardError:
        return False


def _client(
    args: argparse.Namespace, key: str | None, base_url: str
) -> AnthropicClient | OpenAIClient:
    from .agents import AnthropicClient, OpenAIClient

    if args.provider == "anthropic":
        return AnthropicClient(
            key, args.model, base_url=base_url, max_tokens=args.max_tokens or 4096
        )
    return OpenAIClient(key, args.model, base_url=base_url, max_tokens=args.max_tokens)


def _print_call(record: CallRecord) -> None:
    from ._envelope import neutralise_line

    arguments = (
        json.dumps(record.arguments, ensure_ascii=False) if record.arguments is not None else "?"
    )
    if len(arguments) > 300:
        arguments = arguments[:299] + "…"
    # The tool name and arguments are the model's words: no terminal control sequence, and
    # cut as --json cuts them.
    wire = record.to_wire()
    line = f"turn {record.turn}: {wire['name']} {arguments} -> {wire['summary']}"
    print(f"webward: {neutralise_line(line)}", file=sys.stderr)


def printable(answer: str) -> str:
    """The model's answer for a terminal: its lines kept, but no control character other than
    newline and tab (an ESC or BEL sequence could retitle the window, clear the screen or hide
    text), no bidi control or tag character, no forged envelope marker (_envelope)."""
    from ._envelope import prepare_body

    return prepare_body(answer)


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from ._credentials import default_store
    from ._web import Web
    from .agents import RESEARCH, ToolContext, run_agent
    from .cli import refuse_call_log_on_json_stdout
    from .limits import open_limit_state

    base_url = _check(args)
    store = default_store()
    variable = _provider(args.provider)[0]
    key = store.get(variable) or None
    if key is None and not key_optional(args.base_url):
        raise InvalidInput(
            f"no key for the {args.provider} API: set {variable} in the environment or run "
            f"`webward credentials set {variable}`"
        )
    if key is not None and base_url.lower().startswith("http://") and not key_optional(base_url):
        # The key goes in a header: over plain HTTP to a host beyond this machine or network,
        # anyone on the way reads it.
        raise InvalidInput(
            f"--base-url is plain http:// to a host beyond this network, so {variable} would "
            "cross it unencrypted; use https://, or a server on this machine or network"
        )
    if key is None and args.verbose:
        print(
            f"webward: no {variable}; sending no key to the local server at {base_url}",
            file=sys.stderr,
        )
    agent = RESEARCH.for_settings(settings)  # its tools state the [limits] the core enforces
    tier = agent.tier_for(settings, args.tier)
    async with (
        Web(
            settings,
            limit_state=open_limit_state(settings, kind="sqlite"),
            credentials=store,
            face="ask",  # the model's tool calls, as the research agent of whoever runs it
        ) as web,
        _client(args, key, base_url) as client,
    ):
        refuse_call_log_on_json_stdout(args.json, web, settings)
        # Before the first model call: with the audit log unwritable every read would be
        # refused, and the model would answer from nothing (and be sent the refusals).
        await web.check_ready()
        result = await run_agent(
            client,
            agent,
            args.question,
            ToolContext(web, agent.name, tier, args.session),
            max_turns=args.max_turns,
            on_call=_print_call if args.verbose else None,
            limit_name="--max-turns",  # the flag the person typed, not the library's name
        )
    answer = printable(result.answer)
    if args.json:
        out: dict[str, Any] = {
            "provider": args.provider,
            "model": args.model,
            "agent": agent.name,
            "tier": tier,
            **result.to_wire(),
            "answer": answer,
        }
        from .cli import print_json

        print_json(out, indent=2)
    else:
        print(answer)
    return 0
