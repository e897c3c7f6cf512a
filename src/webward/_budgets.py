"""Budgets per agent and capability: calls per session, hour and day (``max_uses``), and a
spend budget for search, each provider call costing ``[search.<provider>] cost``.

Counters live in the limit store (memory, SQLite for the command line, Redis for replicas),
so processes sharing ``limits.db`` and replicas sharing a Redis spend one budget. Each counter
is one key, changed by one atomic read-modify-write: a :class:`HostState` whose ``tokens`` is
the amount used and ``updated`` the start of its window. Hours and days are fixed UTC windows
(a day budget renews at 00:00 UTC); a session's budget never renews within the session.

Past a budget a call is refused by name (``budget_exhausted``) with when it renews; nothing is
sent. A call that passes charges every budget it falls under; if a later one is exhausted the
earlier charges are taken back, so a refused call costs nothing.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ._errors import Reason, Refused, operator_step
from ._provenance import is_sessionless
from ._settings import BudgetSettings, Settings
from .limits import BUDGET_PREFIX, SESSION_PART, HostState, LimitState

__all__ = [
    "PERIODS",
    "REASON_BUDGET_EXHAUSTED",
    "Budgets",
    "budget_usage",
    "durable_budget_state",
]

#: The fixed reason code of a call refused past its budget.
REASON_BUDGET_EXHAUSTED = Reason.BUDGET_EXHAUSTED
#: Window lengths in seconds; a session has no window.
PERIODS: dict[str, float] = {"hour": 3600.0, "day": 86_400.0}
_SCOPES = ("session", "hour", "day")


@dataclass(frozen=True)
class _Line:
    """One budget that applies to a call: its counter key and its limit."""

    key: str
    limit: float
    what: str  # "calls" or "spend", for messages
    scope: str  # session | hour | day
    session: str | None = None  # a session budget's session, for messages
    capability: str = ""  # fetch | search, for messages


def _agent_part(agent: str) -> str:
    """``agent`` as it goes in a counter's key: percent-encoded, as a session's scope is
    (``_provenance.scoped_session``), so that no ``:`` of a name is read as the key's own.
    Raw, agent ``team:bot`` was told of its "budget of 1 bot calls" and to raise ``bot_per_hour``
    (the key's third part), and the hour and day counters of an agent named with
    ``:session:`` in it were taken for a session's and could be pushed out of the memory
    store (a budget given back). A name of letters, digits and ``-._~`` is unchanged, so
    running counters keep counting."""
    return quote(agent, safe="")


def _lines(
    budget: BudgetSettings, agent: str, capability: str, kind: str, session: str | None
) -> list[_Line]:
    lines: list[_Line] = []
    name = _agent_part(agent)
    for scope, limit in _limits(budget, f"{capability}_spend" if kind == "spend" else capability):
        if scope == "session":
            if session is None:
                continue  # no session, no session budget (hour and day still count)
            key = f"{BUDGET_PREFIX}{name}:{capability}:{kind}{SESSION_PART}{session}"
        else:
            key = f"{BUDGET_PREFIX}{name}:{capability}:{kind}:{scope}"
        lines.append(
            _Line(
                key,
                float(limit),
                kind,
                scope,
                session if scope == "session" else None,
                capability,
            )
        )
    return lines


@functools.lru_cache(maxsize=256)
def _limits(budget: BudgetSettings, prefix: str) -> tuple[tuple[str, float], ...]:
    """The scopes with a budget (not 0) among ``<prefix>_per_<scope>``: found once per agent
    and capability, since every call asks (and most agents have none)."""
    found = ((scope, getattr(budget, f"{prefix}_per_{scope}", 0)) for scope in _SCOPES)
    return tuple((scope, limit) for scope, limit in found if limit)


def _window_start(scope: str, now: float) -> float | None:
    """The start of the current window; ``None`` for a session, which has none."""
    if scope == "session":
        return None
    period = PERIODS[scope]
    return now - now % period


def _renewal(scope: str, now: float) -> str:
    at = now - now % PERIODS[scope] + PERIODS[scope]
    when = dt.datetime.fromtimestamp(at, dt.UTC).isoformat(timespec="seconds")
    return f"it renews at {when.replace('+00:00', 'Z')}"


def _current(cur: HostState | None, start: float | None, scope: str) -> float | None:
    """The window ``cur`` is counted in: ours (``start``), or a later one when the counter is
    already stamped with it, up to a day ahead. Replicas' clocks differ: one a little ahead
    crosses into the next hour (day) first, and a replica still in the last one read that
    counter as a past window's, started it again from 0 and stamped it back, so that around
    each boundary the two reset each other's count (30 s of skew let 40 calls through an hour
    budget of 5). Only the next window was taken so: two replicas more than an hour apart
    each found the other's hour counter out of range and started it again, on every call
    (2 h 1 min apart, 20 calls passed an hour budget of 5, stopped by the day's budget
    alone), and a clock stepped back three hours had its hour budget afresh. A slow clock now
    counts in the window a faster one stamped, which renews it when that clock moves on. A
    counter stamped more than a day ahead is a clock gone wrong: ours wins, so that a clock
    that once jumped a year ahead does not hold the budget spent for a year."""
    if cur is None or start is None:
        return start
    if not start < cur.updated <= start + max(PERIODS[scope], _MAX_AHEAD_S):
        return start
    return cur.updated


# How far ahead of this clock a counter's window may be and still be counted in (see
# _current): clocks a day apart are broken, not skewed.
_MAX_AHEAD_S = 86_400.0


def _used(cur: HostState | None, start: float | None) -> float:
    if cur is None:
        return 0.0
    return cur.tokens if start is None or cur.updated == start else 0.0


def _state(used: float, start: float | None, now: float) -> HostState:
    # A window's counter is stamped with the window's start (a new window starts from 0); a
    # session's with the time it was last charged, so idle-row pruning keeps live sessions.
    return HostState(tokens=used, updated=now if start is None else start)


def _budgeted_agents(settings: Settings) -> frozenset[str]:
    """The agents with a budget at all (0 everywhere is none)."""
    none = BudgetSettings()
    return frozenset(
        name
        for name, entry in settings.agents.items()
        if entry.budget is not None and entry.budget != none
    )


class Budgets:
    """Charges calls and spend against ``[agents.NAME.budget]`` in a limit store."""

    def __init__(
        self, settings: Settings, state: LimitState, clock: Callable[[], float] = time.time
    ) -> None:
        self._settings, self.state, self._clock = settings, state, clock
        # Every call asks, and most agents have none.
        self._budgeted = _budgeted_agents(settings)

    def charges(self, agent: str) -> bool:
        """Whether ``agent`` has a budget at all (its calls are charged)."""
        return agent in self._budgeted

    def _budget(self, agent: str) -> BudgetSettings | None:
        if agent not in self._budgeted:
            return None
        entry = self._settings.agents.get(agent)
        return entry.budget if entry is not None else None

    async def charge_call(self, agent: str, capability: str, session: str | None) -> None:
        """Count one ``capability`` call (``fetch`` or ``search``), or raise ``budget_exhausted``."""
        budget = self._budget(agent)
        if budget is not None:
            lines = _lines(budget, agent, capability, "calls", session)
            if lines:  # most agents have no budget: every call asks
                await self._charge(lines, 1.0, agent)

    async def refund_call(self, agent: str, capability: str, session: str | None) -> None:
        """Give back the call :meth:`charge_call` counted, for a call refused after it was
        charged (robots.txt, a host's rate limit, a hop's policy, a search filter its provider
        cannot honour): a refused call costs nothing."""
        budget = self._budget(agent)
        if budget is not None:
            await self._give_back(_lines(budget, agent, capability, "calls", session), 1.0)

    async def refund_spend(self, agent: str, provider: str, session: str | None) -> None:
        """Give back what :meth:`charge_spend` charged for a request to ``provider`` that was
        refused before it was sent (its rate limit, its 429 hold, its open circuit)."""
        cost = self._settings.search.costs.get(provider)
        budget = self._budget(agent)
        if cost is not None and budget is not None:
            await self._give_back(_lines(budget, agent, "search", "spend", session), cost)

    async def _give_back(self, lines: list[_Line], amount: float) -> None:
        now = self._clock()
        for line in lines:
            start = _window_start(line.scope, now)
            await self.state.update(line.key, _giver(amount, start, line.scope, now))

    async def charge_spend(self, agent: str, provider: str, session: str | None) -> float | None:
        """Charge one call to ``provider`` against the agent's search spend budgets, or raise
        ``budget_exhausted``. Returns the call's cost (``None`` when it has none)."""
        cost = self._settings.search.costs.get(provider)
        budget = self._budget(agent)
        if cost is None or budget is None:
            return cost
        await self._charge(_lines(budget, agent, "search", "spend", session), cost, agent)
        return cost

    async def charge_declared(self, agent: str, count: int, limit: int) -> None:
        """Count ``count`` session URLs ``agent`` declares against ``limit`` an hour, over all
        its sessions, or raise ``budget_exhausted``. Every agent has this allowance: each new
        session name held a session's worth of URLs in the shared store for a day, so one
        token could fill Redis, after which every agent was refused."""
        key = f"{BUDGET_PREFIX}{_agent_part(agent)}:declared:urls:hour"
        line = _Line(key, float(limit), "urls", "hour")
        await self._charge([line], float(count), agent)

    async def _charge(self, lines: list[_Line], amount: float, agent: str) -> None:
        done: list[tuple[_Line, float | None]] = []
        for line in lines:
            now = self._clock()
            start = _window_start(line.scope, now)

            counted: list[float | None] = [start]  # the window the counter was found in

            def take(
                cur: HostState | None,
                line: _Line = line,
                start: float | None = start,
                now: float = now,
                counted: list[float | None] = counted,
            ) -> tuple[HostState, bool]:
                window = counted[0] = _current(cur, start, line.scope)
                used = _used(cur, window)
                if used + amount > line.limit + 1e-9:
                    return (cur or _state(0.0, window, now)), False
                return _state(used + amount, window, now), True

            if not await self.state.update(line.key, take):
                for earlier, at in done:
                    await self.state.update(earlier.key, _giver(amount, at, earlier.scope, now))
                # A budget spent in the next window (stamped by a replica whose clock is
                # ahead) renews when that window ends, not at the boundary this clock is
                # short of: told the boundary, a client came back then to be refused again.
                when = now if counted[0] is None else max(now, counted[0])
                period = PERIODS.get(line.scope)
                renews = None if period is None else when - when % period + period - now
                raise Refused(
                    _message(line, agent, when), reason=REASON_BUDGET_EXHAUSTED, retry_after=renews
                )
            done.append((line, start))

    async def usage(self, agent: str, session: str | None = None) -> list[dict[str, Any]]:
        """Each budget of ``agent``: capability, kind, scope, limit, used and left."""
        budget = self._budget(agent)
        if budget is None:
            return []
        out: list[dict[str, Any]] = []
        now = self._clock()
        for capability, kind in (("fetch", "calls"), ("search", "calls"), ("search", "spend")):
            for line in _lines(budget, agent, capability, kind, session):
                cur = await self.state.get(line.key)
                used = _used(cur, _current(cur, _window_start(line.scope, now), line.scope))
                out.append(
                    {
                        "agent": agent,
                        "capability": capability,
                        "kind": kind,
                        "scope": line.scope,
                        "limit": line.limit,
                        "used": used,
                        "left": max(0.0, line.limit - used),
                    }
                )
        return out


def _giver(
    amount: float, start: float | None, scope: str, now: float
) -> Callable[[HostState | None], tuple[HostState, None]]:
    def give(cur: HostState | None) -> tuple[HostState, None]:
        window = _current(cur, start, scope)
        return _state(max(0.0, _used(cur, window) - amount), window, now), None

    return give


def _message(line: _Line, agent: str, now: float) -> str:
    capability = line.capability
    limit = f"{line.limit:g}"
    if line.what == "urls":
        return operator_step(
            f"refused: agent {agent} has declared its {limit} session URLs per {line.scope}; "
            f"{_renewal(line.scope, now)}",
            "an operator can raise [limits] session_max_urls",
        )
    if line.what == "spend":
        budget, key = f"search spend budget of {limit}", "search_spend"
    else:
        budget, key = f"budget of {limit} {capability} calls", capability
    raise_it = f"an operator can raise [agents.{agent}.budget] {key}_per_{line.scope}"
    if line.session is not None:
        # Who starts a new session is the client application, not the model: say how, where
        # the client cannot (a sessionless MCP client's calls are all one session).
        new = (
            f"this MCP client names no session, so all of agent {agent}'s calls on this "
            "server are one session: the client can name one per conversation in _meta "
            f'"webward/session"'
            if is_sessionless(line.session)
            else "a new session starts from 0"
        )
        return operator_step(
            f"refused: agent {agent} has used its {budget} per session in session "
            f"{line.session}, and a session's budget does not renew",
            f"{new}, or {raise_it}",
        )
    return operator_step(
        f"refused: agent {agent} has used its {budget} per {line.scope}; "
        f"{_renewal(line.scope, now)}",
        raise_it,
    )


def durable_budget_state(settings: Settings) -> LimitState | None:
    """Where a server keeps its budgets when its limits are in its own memory (no ``[state]
    redis_url``) and some agent has a budget: ``limits.db`` in the state dir, so that they
    outlive the process. In memory, a restart of ``webward serve`` (a deploy, a crash) gave
    every agent its session, hour and day budgets afresh: 15 reads against ``fetch_per_hour
    = 15``, a restart, 15 more. ``None``: the limits' store serves (Redis is shared and
    outlives a replica; without budgets there is nothing to keep)."""
    if settings.state.redis_url or not _budgeted_agents(settings):
        return None
    from .limits import open_limit_state

    return open_limit_state(settings, "sqlite")


async def budget_usage(
    settings: Settings,
    state: LimitState,
    *,
    session: str | None = None,
    clock: Callable[[], float] = time.time,
) -> list[dict[str, Any]]:
    """Budgets used and left, per agent, capability and window, from the limit store: for
    the operator console's budgets view. Agents without budgets are left out."""
    budgets = Budgets(settings, state, clock)
    rows: list[dict[str, Any]] = []
    for agent in sorted(settings.agents):
        rows.extend(await budgets.usage(agent, session))
    return rows
