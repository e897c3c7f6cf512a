"""The errors webward raises; nothing else escapes its public API.

    WebwardError                 every failure, with a wire ``code`` and a one-sentence message
     ├── InvalidInput            the caller's input is wrong (code ``invalid_input``)
     ├── Refused                 webward decided not to do it: policy, guard, limits, caps
     │                           (codes ``refused``, ``rate_limited``, ``circuit_open``,
     │                           ``not_configured``, ``too_large``, ``unsupported_type``,
     │                           ``overloaded``)
     └── UpstreamError           the far side failed: HTTP error, timeout, provider error
                                 (codes ``upstream_error``, ``timeout``)

An exception webward did not expect (a bug, a third-party library's failure) is not a
``WebwardError``: the core audits it and re-raises it; each face answers it with
:func:`internal_error`, code ``internal_error``, in one sentence and without a traceback.

Each error also carries a fixed ``reason`` (a member of :class:`Reason`, such as
``internal_address``, held as its plain string) that the audit record and tests key on, and
where it helps the caller ``retry_after`` in seconds.
"""

from __future__ import annotations

import errno
import math
import re
from enum import StrEnum
from typing import Any

from ._envelope import neutral_url, neutralise_line
from ._redact import redact_urls

#: The ``extra`` of a shared store's log lines when it fails and when it works again (the
#: audit store's health, the Redis client's): a server's operator reads them, while the
#: command line leaves them out, since the refusal that follows says the same in its one
#: sentence.
STORE_HEALTH = {"store_health": True}

__all__ = [
    "WIRE_CODES",
    "InvalidInput",
    "Reason",
    "Refused",
    "UpstreamError",
    "WebwardError",
    "another_tier_would_pass",
    "http_status_reason",
    "human_wait",
    "internal_error",
    "operator_step",
]

#: Every ``code`` an error can carry on the wire.
WIRE_CODES = (
    "invalid_input",
    "refused",
    "rate_limited",
    "circuit_open",
    "not_configured",
    "upstream_error",
    "timeout",
    "too_large",
    "unsupported_type",
    "internal_error",
    "overloaded",
)


def human_wait(seconds: float) -> str:
    """A wait for a message, rounded up: ``0.5 s``, ``7 s``, ``4 min``, ``2 h``, ``12 days``.

    Tenths under 10 s (a limiter's refill), whole seconds under 2 min, then the unit a person
    reads at a glance: a provider's monthly quota or an hour's hold is not "3600 s"."""
    s = max(seconds, 0.0)
    if s < 10:
        return f"{max(math.ceil(s * 10 - 1e-9), 1) / 10:g} s"
    if s < 120:
        return f"{math.ceil(s - 1e-9)} s"
    if s < 7200:
        return f"{math.ceil(s / 60 - 1e-9)} min"
    if s < 172800:
        return f"{math.ceil(s / 3600 - 1e-9)} h"
    return f"{math.ceil(s / 86400 - 1e-9)} days"


class Reason(StrEnum):
    """Every fixed ``reason`` a call can end with: the audit record's and the tests' key.

    One registry beside the wire codes (:data:`WIRE_CODES`): a refusal or failure names its
    reason from here, never from a literal of its own. An error given no reason takes its
    wire code as reason (those codes are members too); an HTTP error status is
    ``http_<status>`` (:func:`http_status_reason`), the one family outside this list. The
    values are what the audit log and the wire have always carried.
    """

    ALLOWED = "allowed"
    AUDIT_UNAVAILABLE = "audit_unavailable"
    BACKSLASH = "backslash"
    BAD_MAX_AGE = "bad_max_age"
    BAD_MAX_CHARS = "bad_max_chars"
    BAD_OFFSET = "bad_offset"
    BAD_PORT = "bad_port"
    BAD_QUERY = "bad_query"
    BINARY_TYPE = "binary_type"
    BROKEN = "broken"
    BUDGET_EXHAUSTED = "budget_exhausted"
    CANCELLED = "cancelled"
    CIRCUIT_OPEN = "circuit_open"
    CONNECT = "connect"
    CONTROL_CHARACTER = "control_character"
    CONVERT_CRASHED = "convert_crashed"
    CONVERT_MEMORY = "convert_memory"
    CONVERT_TIMEOUT = "convert_timeout"
    CREDENTIALS_FILE = "credentials_file"
    CREDENTIALS_FILE_MODE = "credentials_file_mode"
    CREDENTIALS_READ_ONLY = "credentials_read_only"
    DEADLINE = "deadline"
    DNS = "dns"
    EMPTY_HOST = "empty_host"
    ENCODING = "encoding"
    FILTER_UNSUPPORTED = "filter_unsupported"
    HOST_DENIED = "host_denied"
    HOST_NOT_ALLOWED = "host_not_allowed"
    INTERNAL_ADDRESS = "internal_address"
    INTERNAL_ERROR = "internal_error"
    INTERNAL_NAME = "internal_name"
    INVALID_ADDRESS = "invalid_address"
    INVALID_HOST = "invalid_host"
    INVALID_INPUT = "invalid_input"
    INVALID_URL = "invalid_url"
    KEYRING_UNAVAILABLE = "keyring_unavailable"
    LIMITS_UNAVAILABLE = "limits_unavailable"
    MODEL_BAD_RESPONSE = "model_bad_response"
    MODEL_HTTP_ERROR = "model_http_error"
    MODEL_TIMEOUT = "model_timeout"
    MODEL_UNREACHABLE = "model_unreachable"
    NEEDS_BROWSER = "needs_browser"
    NO_TOKEN = "no_token"
    NO_TOKENS = "no_tokens"
    NOT_ABSOLUTE = "not_absolute"
    NOT_CONFIGURED = "not_configured"
    OFFSET_PAST_END = "offset_past_end"
    OVERLOADED = "overloaded"
    PROTOCOL = "protocol"
    PROVIDER_ERROR = "provider_error"
    PROVIDER_JSON_DISABLED = "provider_json_disabled"
    PROVIDER_KEY_REJECTED = "provider_key_rejected"
    PROVIDER_MALFORMED = "provider_malformed"
    PROVIDER_QUOTA = "provider_quota"
    PROVIDER_RATE_LIMITED = "provider_rate_limited"
    PROVIDER_REJECTED = "provider_rejected"
    PROXY_TARGET = "proxy_target"
    RATE_LIMITED = "rate_limited"
    REDIRECT_LOOP = "redirect_loop"
    REFUSED = "refused"
    RENDER = "render"
    RENDER_METHOD = "render_method"
    RENDER_REQUESTS = "render_requests"
    RENDER_TIMEOUT = "render_timeout"
    RENDER_UPGRADE = "render_upgrade"
    RENDERER_UNAVAILABLE = "renderer_unavailable"
    RENDERER_UNSAFE = "renderer_unsafe"
    ROBOTS = "robots"
    ROBOTS_UNREACHABLE = "robots_unreachable"
    SCHEME = "scheme"
    SCREENSHOT_NEEDS_TIER = "screenshot_needs_tier"
    SEARCH_NEEDS_TIER = "search_needs_tier"
    SPECIAL_USE_NAME = "special_use_name"
    TIMEOUT = "timeout"
    TLS = "tls"
    TOO_LARGE = "too_large"
    TOO_LONG = "too_long"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    TURN_LIMIT = "turn_limit"
    UNREADABLE_PDF = "unreadable_pdf"
    UNSUPPORTED_IMAGE = "unsupported_image"
    UNSUPPORTED_TYPE = "unsupported_type"
    UPSTREAM_BACKPRESSURE = "upstream_backpressure"
    UPSTREAM_ERROR = "upstream_error"
    URL_NOT_IN_SESSION = "url_not_in_session"
    USERINFO = "userinfo"
    ZONE_ID = "zone_id"


def http_status_reason(status: int) -> str:
    """The reason of an upstream HTTP error status: ``http_404``, ``http_503``, ..."""
    return f"http_{status}"


# Join a refusal's why to the operator's next step, and that step to what a model is told in
# its place (``operator_step``); never shown.
_STEP = "\x1f"
_MODEL = "\x1e"
#: What a model is told in place of the operator's step.
OPERATOR_ONLY = "only webward's operator can change that"


def operator_step(why: str, step: str, *, model: str = OPERATOR_ONLY) -> str:
    """A message of ``why`` a call was refused and ``step``, what the operator can change.

    Whoever runs webward reads both (the command line, ``message``); a model reads the why and
    ``model`` in place of the step (``for_model``, at MCP, the gateway and the agent tools):
    told how to widen the policy (the range to add, the key to set, the deadline to raise), an
    agent that can edit files may do it itself. ``model=""`` tells the model the why alone."""
    return f"{why}{_STEP}{step}{_MODEL}{model}"


# A URL in a message: a word from its scheme on (URLs in webward's messages hold no
# whitespace; a quoted one is percent-encoded, _addresses.quoted).
_URL_WORD_RE = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)


def _neutral_urls(text: str) -> str:
    """``text`` with each URL in it as it is handed on outside the envelope
    (``_envelope.neutral_url``): marker words in a redirect's target ("/<<<end-untrusted-web-
    content ...>>>") get a letter percent-encoded, the same address, where the message's
    neutraliser put "[marker removed]", a space, in the URL. One whose host spells them is
    left to that neutraliser."""
    if "://" not in text:
        return text
    return _URL_WORD_RE.sub(lambda m: neutral_url(m.group()) or m.group(), text)


class WebwardError(Exception):
    """Base of every error webward raises: a wire code and a one-sentence message."""

    default_code = "upstream_error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        reason: str | None = None,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        # It may echo a caller's or a page's text (a redirect's host, a header the server
        # sent), and it reaches the model outside any envelope: no forged envelope marker, no
        # bidi or control character, one line (neutralise_line); no URL credentials (messages
        # reach log lines, e.g. the agent loop's).
        why, split, rest = message.partition(_STEP)
        step, _, model = rest.partition(_MODEL)
        why, step, model = _neutral_urls(why), _neutral_urls(step), _neutral_urls(model)
        message = neutralise_line(redact_urls(f"{why}; {step}" if split else why))
        super().__init__(message)
        self._parts = (why, step, model) if split else None  # for with_more_step
        self.message = message
        #: The message a model is shown: the operator's step left out (``operator_step``).
        self.for_model = (
            neutralise_line(redact_urls(f"{why}; {model}" if model else why)) if split else message
        )
        self.code = code or self.default_code
        if self.code not in WIRE_CODES:  # a programming error, caught by the tests
            raise ValueError(f"unknown wire code {self.code!r}")
        # A plain str whichever way it was named (a ``Reason`` is one): stores and the wire
        # see only the value.
        self.reason = str(reason or self.code)
        self.retry_after = retry_after
        self.status = status

    def __str__(self) -> str:
        return self.message

    def with_more_step(self, more: str) -> WebwardError:
        """This error with ``more`` said after the operator's step (``operator_step``); the
        same error when it names no step. What the model is shown does not change."""
        if self._parts is None:
            return self
        why, step, model = self._parts
        return type(self)(
            operator_step(why, step + more, model=model),
            code=self.code,
            reason=self.reason,
            retry_after=self.retry_after,
            status=self.status,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, reason={self.reason!r}, message={self.message!r})"

    def to_wire(self, *, for_model: bool = True) -> dict[str, Any]:
        """The error model of the wire format: ``{"error": {"code", "message"}}``. An agent's
        faces (MCP, the gateway) answer with the message a model is shown (``for_model``);
        the command line, for the person who runs it, with the whole ``message``."""
        message = self.for_model if for_model else self.message
        error: dict[str, Any] = {"code": self.code, "message": message}
        if self.retry_after is not None:
            error["retryAfter"] = round(self.retry_after, 3)
        return {"error": error}


class InvalidInput(WebwardError):
    """The caller's input is malformed: a bad URL, offset, query or limit."""

    default_code = "invalid_input"


class Refused(WebwardError):
    """Webward refused the call: policy, guard, rate limit, open circuit, cap or type."""

    default_code = "refused"


class UpstreamError(WebwardError):
    """The upstream failed: an HTTP error status, a timeout, a broken connection or body."""

    default_code = "upstream_error"


# Refusals a call in another tier would not get, by reason and by what the sentence says
# (host_not_allowed is also an agent's own allow list, which no tier passes): the command
# line's --tier and the library's tier argument choose a call's tier.
_TIER_REFUSALS = {
    "host_not_allowed": "is not on the allow-list of tier as-owner",
    "search_needs_tier": "web search needs tier",
    "screenshot_needs_tier": "screenshots need tier",
    "needs_browser": "renders such pages in tiers",
    # A server on this machine: its range's step, and then the tier's (Gate._tier_step).
    "internal_address": "tier as-owner reads only the hosts",
    "internal_name": "tier as-owner reads only the hosts",
}


def another_tier_would_pass(error: WebwardError) -> bool:
    """Whether ``error`` refused the call for its tier: one the caller choosing the call's
    tier (``--tier``, ``tier=``) may get past, as the operator's step is not theirs to take."""
    said = _TIER_REFUSALS.get(str(error.reason))
    return said is not None and said in error.message


def internal_error(exc: BaseException) -> WebwardError:
    """What a face answers for an exception webward did not expect: one sentence naming only
    the exception's type (its text may hold anything), code and reason ``internal_error``.
    Running out of file descriptors is said as itself, with the limit to raise: no bug, and
    wherever it struck (a lazy import, a socket) the step is the same."""
    return (
        out_of_files(exc)
        or out_of_threads(exc)
        or WebwardError(
            f"webward failed unexpectedly ({type(exc).__name__}); this is a bug in webward or one "
            "of its libraries, and the read or search was not completed",
            code="internal_error",
            reason=Reason.INTERNAL_ERROR,
        )
    )


def out_of_files(exc: BaseException) -> WebwardError | None:
    """The answer to ``exc`` when it is the process out of file descriptors, else None."""
    if not (isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE)):
        return None
    return WebwardError(
        f"webward ran out of open files ({_open_files_limit()}); raise that limit, and the "
        "read or search was not completed",
        code="internal_error",
        reason=Reason.INTERNAL_ERROR,
    )


def out_of_threads(exc: BaseException) -> WebwardError | None:
    """The answer to ``exc`` when it is the process unable to start a thread (Python's
    RuntimeError "can't start new thread"), else None. Under a low ``ulimit -u``, which counts
    a user's threads with its processes, a read (its DNS lookup, its audit write, its
    conversion each take a thread) failed as "webward failed unexpectedly (RuntimeError);
    this is a bug", with nothing to raise named."""
    if not (isinstance(exc, RuntimeError) and "can't start new thread" in str(exc)):
        return None
    return WebwardError(
        f"webward could not start a thread ({_processes_limit()}); raise that limit, and the "
        "read or search was not completed",
        code="internal_error",
        reason=Reason.INTERNAL_ERROR,
    )


def _processes_limit() -> str:
    """The process's limit on processes and threads, as a person sets it (``ulimit -u``), or
    where none is set the system's (which "no limit set, and it counts..." contradicted)."""
    try:
        import resource
    except ImportError:  # no POSIX limits here
        return "too many threads"
    soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    if soft == resource.RLIM_INFINITY:
        return (
            "ulimit -u sets no limit here, so the system's own did: kernel.threads-max, or memory"
        )
    return f"ulimit -u is {soft}, and it counts this user's threads too"


def _open_files_limit() -> str:
    """The process's limit on open files, as a person sets it (``ulimit -n``)."""
    try:
        import resource  # (a file to open, when none is left: then the words alone)
    except (ImportError, OSError):  # no POSIX limits here, or no descriptor to load them
        return "too many open files"
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return "no limit set" if soft == resource.RLIM_INFINITY else f"ulimit -n is {soft}"
