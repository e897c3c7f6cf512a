"""The limiter's state: what is remembered per key, and where it is stored.

:class:`HostState` is one key's record. It sits behind :class:`LimitState`, one atomic
read-modify-write per call, so the algorithms stay the same whatever stores them:
:class:`MemoryLimitState` for one long-lived process, :class:`SQLiteLimitState` (``limits.db``
in the state dir, WAL, ``BEGIN IMMEDIATE``) so that separate ``webward`` processes on one
machine share one budget, and ``_redis.RedisLimitState`` for replicas on many machines
(``[state] redis_url``). The algorithms are pure functions of (state, settings, now) in
``_steps``; the ``Limiter`` front in ``_limiter`` applies them and turns their verdicts into
refusals.

The reason codes and the back-pressure cap are defined here, beside the record they describe,
and are public in ``webward.limits`` with the rest of the package's names.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio

from .._errors import Reason, Refused, operator_step
from .._sqlite import not_a_database_step, open_wal, probe_write

__all__ = [
    "BUDGET_PREFIX",
    "MAX_BACKPRESSURE_S",
    "REASON_BACKPRESSURE",
    "REASON_CIRCUIT_OPEN",
    "REASON_LIMITS_UNAVAILABLE",
    "REASON_RATE_LIMITED",
    "SESSION_PART",
    "Change",
    "HostState",
    "LimitState",
    "MemoryLimitState",
    "SQLiteLimitState",
    "limits_unavailable",
]

#: Fixed reason codes of the limiter's refusals (``_limiter`` raises all but the last).
REASON_RATE_LIMITED = Reason.RATE_LIMITED
REASON_BACKPRESSURE = Reason.UPSTREAM_BACKPRESSURE
REASON_CIRCUIT_OPEN = Reason.CIRCUIT_OPEN
REASON_LIMITS_UNAVAILABLE = Reason.LIMITS_UNAVAILABLE

#: Keys of an agent's counters (``_budgets``: its budget lines, its declared URLs), and the
#: part of one that names a session. A session's counter may be forgotten (a new session
#: name starts afresh anyway); an hour's or a day's may not (MemoryLimitState).
BUDGET_PREFIX = "budget:"
SESSION_PART = ":session:"

#: A hostile or confused server cannot hold a key longer than this.
MAX_BACKPRESSURE_S = 3600.0

R = TypeVar("R")


@dataclass(frozen=True)
class HostState:
    """What is remembered about one key. Times are clock seconds; 0 means "not set"."""

    tokens: float
    updated: float  # when ``tokens`` was last brought up to date
    hold_until: float = 0.0  # back-pressure from a 429
    failures: int = 0  # consecutive failures
    opened: int = 0  # how many times the circuit has opened since the last success
    open_until: float = 0.0  # the circuit is open until then; half-open after, while > 0
    probe_until: float = 0.0  # a half-open probe is in flight until then


Change = Callable[[HostState | None], tuple[HostState, R]]


class LimitState(Protocol):
    """Where limiter and breaker state lives: one atomic read-modify-write per call.

    ``change`` is pure (it may be called again if a store retries) and gets ``None`` for a key
    never seen. Implementations: :class:`MemoryLimitState`, :class:`SQLiteLimitState`,
    ``_redis.RedisLimitState``.
    """

    async def update(self, key: str, change: Change[R]) -> R:
        """Apply ``change`` to the state of ``key`` atomically and return its result."""
        ...

    async def get(self, key: str) -> HostState | None:
        """The stored state of ``key`` (for inspection and tests)."""
        ...

    async def aclose(self) -> None:
        """Release the store."""
        ...


class MemoryLimitState:
    """Limiter state in a dict: for one long-lived process (the gateway, the MCP server).

    At most ``max_keys`` keys of hosts and sessions are kept, each update O(1): past that the
    least recently used healthy key goes first; marked keys (failures, an open circuit, a
    hold) are kept first but take at most half, so that hosts that answer keep their buckets
    however many fail. A whole scan for a healthy key made each update cost the store's size
    once failing hosts filled it (100,000 hosts that refuse connections: 50 ms an update),
    and failing hosts were never dropped at all.

    An agent's hour and day budgets (``budget:AGENT:...`` without ``:session:``) are never
    dropped: their number is set by the config, and a counter forgotten is a budget given
    back (an agent that made 100,000 calls under new session names had its day budget anew).
    """

    def __init__(self, max_keys: int = 100_000) -> None:
        self._pinned: dict[str, HostState] = {}
        self._healthy: OrderedDict[str, HostState] = OrderedDict()
        self._marked: OrderedDict[str, HostState] = OrderedDict()
        self._lock = threading.Lock()  # the gateway may drive one limiter from several threads
        self._max_keys = max_keys

    async def update(self, key: str, change: Change[R]) -> R:
        with self._lock:
            if key.startswith(BUDGET_PREFIX) and SESSION_PART not in key:
                new, result = change(self._pinned.get(key))
                self._pinned[key] = new
                return result
            cur = self._healthy.pop(key, None)
            if cur is None:
                cur = self._marked.pop(key, None)
            new, result = change(cur)
            marked = new.failures != 0 or new.open_until != 0 or new.hold_until != 0
            (self._marked if marked else self._healthy)[key] = new  # the most recent
            if len(self._marked) > self._max_keys // 2:
                self._marked.popitem(last=False)  # half is left for hosts that answer
            elif len(self._healthy) + len(self._marked) > self._max_keys:
                self._healthy.popitem(last=False)
            return result

    async def get(self, key: str) -> HostState | None:
        with self._lock:
            for keys in (self._pinned, self._healthy, self._marked):
                found = keys.get(key)
                if found is not None:
                    return found
            return None

    async def aclose(self) -> None:
        return None


_COLUMNS = ("tokens", "updated", "hold_until", "failures", "opened", "open_until", "probe_until")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS hosts (
    key TEXT PRIMARY KEY,
    tokens REAL NOT NULL,
    updated REAL NOT NULL,
    hold_until REAL NOT NULL,
    failures INTEGER NOT NULL,
    opened INTEGER NOT NULL,
    open_until REAL NOT NULL,
    probe_until REAL NOT NULL
)
"""
_UPSERT = (
    f"INSERT INTO hosts (key, {', '.join(_COLUMNS)}) "
    f"VALUES (?, {', '.join('?' for _ in _COLUMNS)}) "
    f"ON CONFLICT(key) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _COLUMNS)}"
)
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM hosts WHERE key = ?"
# The probe's own one-row table (``_sqlite.probe_write``): BEGIN IMMEDIATE and ROLLBACK wrote
# nothing, and passed on a full disk or a read-only store.
_PROBE_TABLE = "limits_probe"
# Rows of keys idle this long, with a closed circuit and no hold, are dropped on open, and
# again each _PRUNE_EVERY_S while the store is open.
_PRUNE_AFTER_S = 86_400.0
_PRUNE_EVERY_S = 3_600.0


class SQLiteLimitState:
    """Limiter state in ``limits.db`` in the state dir, shared by the processes of one machine.

    Every change is one ``BEGIN IMMEDIATE`` transaction (the write lock is taken before the
    read, so two processes cannot both spend the last token). WAL and a busy timeout let
    several ``webward`` processes wait their turn instead of failing. If the store cannot be
    opened or written, acquiring is refused (``limits_unavailable``): abuse protections fail
    closed. ``clock`` is only used to prune idle rows; pass the limiter's clock.
    """

    def __init__(
        self,
        state_dir: str | Path,
        *,
        busy_timeout_s: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(state_dir) / "limits.db"
        self._busy_timeout_s = busy_timeout_s
        self._clock = clock
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one connection, used by one worker thread at a time
        self._pruned = 0.0  # when idle rows were last dropped (see _update_sync)

    async def update(self, key: str, change: Change[R]) -> R:
        return await anyio.to_thread.run_sync(self._update_sync, key, change)

    async def get(self, key: str) -> HostState | None:
        return await anyio.to_thread.run_sync(self._get_sync, key)

    async def probe(self) -> None:
        """Whether the store could be changed now: it opens and commits a write to a one-row
        table of the probe's own (``_sqlite.probe_write``), so a full disk or a read-only
        store fails it as it fails a change; ``limits_unavailable`` otherwise."""
        await anyio.to_thread.run_sync(self._probe_sync)

    def _probe_sync(self) -> None:
        with self._lock:
            try:
                probe_write(self._connect(), _PROBE_TABLE)
            except (sqlite3.Error, OSError) as exc:
                raise limits_unavailable(self.path, exc) from None

    async def aclose(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = open_wal(self.path, timeout_s=self._busy_timeout_s, schema=(_SCHEMA,))
            try:
                # Limits are soft state: losing the last updates to a power cut is harmless.
                conn.execute("PRAGMA synchronous=NORMAL")
                self._prune(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _prune(self, conn: sqlite3.Connection) -> None:
        now = self._clock()
        conn.execute(
            "DELETE FROM hosts WHERE updated < ? AND open_until = 0 AND hold_until < ?",
            (now - _PRUNE_AFTER_S, now),
        )
        self._pruned = now

    def _update_sync(self, key: str, change: Change[R]) -> R:
        with self._lock:
            try:
                conn = self._connect()
                if self._clock() - self._pruned > _PRUNE_EVERY_S:
                    # A long-lived process's store (webward serve's budgets, see
                    # _budgets.durable_budget_state) drops idle rows as Redis expires its
                    # keys: pruned only on open, a session budget's row per session name a
                    # client makes up was kept until the next restart, limits.db growing
                    # without bound on the disk the audit log shares.
                    self._prune(conn)
                conn.execute("BEGIN IMMEDIATE")
                try:
                    row = conn.execute(_SELECT, (key,)).fetchone()
                    new, result = change(_row_to_state(row))
                    conn.execute(_UPSERT, (key, *(getattr(new, c) for c in _COLUMNS)))
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                return result
            except (sqlite3.Error, OSError, ValueError) as exc:
                raise limits_unavailable(self.path, exc) from None

    def _get_sync(self, key: str) -> HostState | None:
        with self._lock:
            try:
                return _row_to_state(self._connect().execute(_SELECT, (key,)).fetchone())
            except (sqlite3.Error, OSError, ValueError) as exc:
                raise limits_unavailable(self.path, exc) from None


def _row_to_state(row: Any) -> HostState | None:
    return None if row is None else state_of(row)


#: What a store's key that no limiter wrote is said to hold.
NOT_OURS = "a stored limiter key holds values webward never writes"


def state_of(values: Any) -> HostState:
    """A :class:`HostState` from a store's seven values in field order, or ``ValueError`` for
    what no limiter wrote (a missing field, a string, NaN, an infinity: a shared store's
    hostile or damaged key refuses as unavailable, never reaches a limiter's arithmetic)."""
    values = tuple(values)
    if len(values) != len(_COLUMNS) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values
    ):
        raise ValueError(NOT_OURS)
    tokens, updated, hold, failures, opened, open_until, probe = values
    if failures != int(failures) or opened != int(opened):
        raise ValueError(NOT_OURS)
    return HostState(
        float(tokens),
        float(updated),
        float(hold),
        int(failures),
        int(opened),
        float(open_until),
        float(probe),
    )


def limits_unavailable(where: object, detail: object, step: str | None = None) -> Refused:
    """The refusal every limit store raises when it cannot be read or written; ``step``, the
    next step, when it is not to bring the store back (a Redis that refuses writes, the URL's
    credentials or database, or its TLS: ``_redis_client.failure_of``; a file that is no
    SQLite database)."""
    return Refused(
        operator_step(
            "refused: the rate-limit state is unavailable; webward does not read without its "
            "abuse protections",
            f"the store at {where} failed ({detail}); "
            + (
                step
                or not_a_database_step(detail)
                or "bring it back, or point [state] redis_url (or [state] dir) at one that answers"
            ),
        ),
        reason=REASON_LIMITS_UNAVAILABLE,
    )
