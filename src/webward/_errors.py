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

Each error also carries a fixed ``reason`` (a short snake_case literal such as
``internal_address``) that the audit record and tests key on, and where it helps the caller
``retry_after`` in seconds.
"""

from __future__ import annotations

from typing import Any

from ._redact import redact_urls
from ._unicode import replace_surrogates

__all__ = [
    "WIRE_CODES",
    "InvalidInput",
    "Refused",
    "UpstreamError",
    "WebwardError",
    "internal_error",
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
        # It may echo a caller's or a page's text: no lone surrogate, no URL credentials
        # (messages reach log lines, e.g. the agent loop's).
        message = replace_surrogates(redact_urls(message))
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        if self.code not in WIRE_CODES:  # a programming error, caught by the tests
            raise ValueError(f"unknown wire code {self.code!r}")
        self.reason = reason or self.code
        self.retry_after = retry_after
        self.status = status

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, reason={self.reason!r}, message={self.message!r})"

    def to_wire(self) -> dict[str, Any]:
        """The error model of the wire format: ``{"error": {"code", "message"}}``."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
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


def internal_error(exc: BaseException) -> WebwardError:
    """What a face answers for an exception webward did not expect: one sentence naming only
    the exception's type (its text may hold anything), code and reason ``internal_error``."""
    return WebwardError(
        f"webward failed unexpectedly ({type(exc).__name__}); this is a bug in webward or one "
        "of its libraries, and the read or search was not completed",
        code="internal_error",
        reason="internal_error",
    )
