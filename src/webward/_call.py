"""``Call``: the record of one call in flight, filled as the call goes and frozen into its
``AuditRecord`` when it ends (``AuditRecord.from_call``).

Who (agent, tier, session, and the face that made the call), what (capability, target), the
hops so far (the redirect chain, the hosts a render contacted or had refused), what report
mode let through (``would_deny``) and how it went (final URL, status, bytes, content type,
provider, the hits a search's lists dropped). Every step of ``Web`` and every ``Gate`` check
writes into the same typed record, never into a loose dict.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Protocol

__all__ = ["CALL_DEADLINE", "STORE_GRACE_S", "Call", "Verdict"]

#: When the call this task serves must have its answer (``time.monotonic()``), or ``None``
#: outside a call: ``Web`` sets it for each call to the read deadline ([limits]
#: fetch_timeout_s from the call's start) plus :data:`STORE_GRACE_S`. A shared store's round
#: trips made for the call (Redis: limits, sessions, the page cache) end by then, so a store
#: that stops answering cannot hold a call past its deadline, however many round trips the
#: call still has to make (each has its own timeout, and one retry, on top).
CALL_DEADLINE: ContextVar[float | None] = ContextVar("webward_call_deadline", default=None)
#: What a call's store round trips have past the read deadline: the breaker must still hear
#: of a read that timed out at the deadline, and the session of the URLs it saw.
STORE_GRACE_S = 1.0


class Verdict(Protocol):
    """A policy's answer (``_policy.Decision``), as the call record reads it."""

    @property
    def reason(self) -> str: ...

    @property
    def would_deny(self) -> bool: ...

    def raise_if_denied(self) -> None: ...


class Call:
    """One call through the door, as far as it has gone."""

    # A plain class with slots: one is made per call, and a dataclass's __init__ called a
    # factory for each list and for the start time.
    __slots__ = (
        "agent", "bytes", "capability", "content_type", "face", "final_url", "hits_dropped",
        "provider", "redirects", "render_contacted", "render_refused", "session", "started",
        "status", "target", "tier", "would_deny",
    )  # fmt: skip

    def __init__(self, capability: str, agent: str, target: str, face: str | None = None) -> None:
        self.capability = capability  # web:page.fetch@1 | web:search.query@1
        self.agent = agent
        # Which face made the call (audit.FACES), and so how its agent was named: from a
        # bearer token (gateway, mcp-http) or by whoever runs the process (the others).
        self.face = face
        self.target = target  # the requested URL, or the query (cut and cleaned when frozen)
        self.tier = ""  # "" until resolved: a call refused for a bad agent or tier has none
        # Report mode: the refusal enforce mode would have given.
        self.would_deny: str | None = None
        self.final_url: str | None = None
        # The URLs requested, the first included, and last where a redirect led if its hop
        # was refused; empty for a read that sent nothing (see _gate.PageHops).
        self.redirects: list[str] = []
        self.status: int | None = None
        self.bytes: int | None = None
        self.content_type: str | None = None
        self.provider: str | None = None
        self.render_contacted: list[str] = []
        self.render_refused: list[str] = []
        # The session the call is in, as its face named it (None: in none).
        self.session: str | None = None
        # A search: the hits the agent's search lists dropped (report mode: would have).
        self.hits_dropped: int | None = None
        self.started = time.monotonic()

    def check(self, decision: Verdict) -> None:
        """Apply a policy decision: a report-mode would-deny is noted, a denial raised. The
        first would-deny is kept: it is the refusal enforce mode would have stopped at."""
        if decision.would_deny and self.would_deny is None:
            self.would_deny = decision.reason
        decision.raise_if_denied()

    def duration_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)


def render_refusal_reason(entry: str) -> str | None:
    """The reason of one entry of a call's ``render_refused`` (``host[:port] (reason)``, as the
    render's gate writes them); None for the list's last entry counting the rest (``... and
    12 more hosts``). Read by the metrics and by the audit's table and console."""
    _host, sep, reason = entry.rpartition(" (")
    if not sep or not reason.endswith(")"):
        return None
    return reason[:-1]
