"""``Call``: the record of one call in flight, filled as the call goes and frozen into its
``AuditRecord`` when it ends (``AuditRecord.from_call``).

Who (agent, tier), what (capability, target), the hops so far (the redirect chain, the hosts
a render contacted or had refused), what report mode let through (``would_deny``) and how it
went (final URL, status, bytes, content type, provider). Every step of ``Web`` and every
``Gate`` check writes into the same typed record, never into a loose dict.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["Call", "Verdict"]


class Verdict(Protocol):
    """A policy's answer (``_policy.Decision``), as the call record reads it."""

    @property
    def reason(self) -> str: ...

    @property
    def would_deny(self) -> bool: ...

    def raise_if_denied(self) -> None: ...


@dataclass(eq=False)
class Call:
    """One call through the door, as far as it has gone."""

    capability: str  # web:page.fetch@1 | web:search.query@1
    agent: str
    target: str  # the requested URL, or the query (cut and cleaned when frozen)
    tier: str = ""  # "" until resolved: a call refused for a bad agent or tier has none
    would_deny: str | None = None  # report mode: the refusal enforce mode would have given
    final_url: str | None = None
    redirects: list[str] = field(default_factory=list)  # every URL visited, the first included
    status: int | None = None
    bytes: int | None = None
    content_type: str | None = None
    provider: str | None = None
    render_contacted: list[str] = field(default_factory=list)
    render_refused: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def check(self, decision: Verdict) -> None:
        """Apply a policy decision: a report-mode would-deny is noted, a denial raised."""
        if decision.would_deny:
            self.would_deny = decision.reason
        decision.raise_if_denied()

    def duration_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)
