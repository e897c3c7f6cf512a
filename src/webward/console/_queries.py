"""The console's reads of the audit log: filtered pages (keyset paging), one record, aggregates.

The same SQL runs on both stores; only the placeholder, the tie-break column and the bucket
expression differ (:class:`_Dialect`). Pages are ordered newest first by ``(ts, tiebreak)``
and continue from a cursor holding the last row's pair, so page 1,000 costs what page 1 does.

Indexes (created idempotently by :meth:`AuditReader.prepare`; the writers keep them up to
date): ``(agent, ts)``, ``(decision, ts)`` and ``(reason, ts)`` beside the sinks' ``(ts)``, so a
filter on a rare agent, decision or reason reads only its own rows, already in order. On
PostgreSQL every index ends in ``id`` so the tie-break is in index order too, and is built
``CONCURRENTLY``. Filters no index serves (the session, the face, the host, text in the
target, and every filter of a large log whose indexes are not built yet) look at no more
than :data:`SCAN_ROWS` records a page, newest first; the page's cursor continues the search
further back. (No index for the session or the face: every writer would keep one more up to
date on the hot path, for a filter a page view bounds anyway.)

A read's host is every host of its redirect chain for the host filter, and the host its
content came from (its final URL's; the last hop it reached, refused or failed part-way)
for the top hosts: an open redirect on an allowed host must not hide where a page came from.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

import anyio

from .._capabilities import FETCH, SEARCH
from .._errors import InvalidInput, Refused
from .._urls import ascii_host
from ..audit import (
    DECISIONS,
    FIELDS,
    REASON_AUDIT_UNAVAILABLE,
    UNREADABLE,
    AuditRecord,
    SQLiteAuditSink,
    from_row,
    from_rows,
    shared_target,
    unreadable_note,
)

__all__ = [
    "FETCH",
    "SEARCH",
    "AuditFilter",
    "AuditPage",
    "AuditReader",
    "CallCount",
    "HostCount",
    "SQLiteAuditReader",
    "SinkReader",
    "Usage",
]

#: Rows read to rank the top hosts: the newest this many page reads of the window.
TOP_HOSTS_SCAN = 100_000
#: A log with at most this many rows gets the console's indexes on the first view.
BUILD_AT_ONCE_ROWS = 200_000
#: A page filtered on host or text looks at most this many records (newest first); when it
#: found too few, its cursor continues the search further back.
SCAN_ROWS = 25_000

T = TypeVar("T")

_INDEXED = ("agent", "decision", "reason")
# On main's table by name: a reader of an older log it may only read sees a view in its place
# (``SQLiteAuditSink._read_only_now``), and is refused the index as read-only, not as a view.
_SQLITE_INDEXES = tuple(
    f"CREATE INDEX IF NOT EXISTS main.audit_{c}_ts ON audit ({c}, ts)" for c in _INDEXED
)


@dataclass(frozen=True)
class AuditFilter:
    """What the audit view shows: every field optional; ``text`` is a substring of the target,
    as it is read and as it is shown (a secret value, shown REDACTED, matches no text).
    ``agent`` and ``session`` match exactly (no trimming, no case folding); ``face`` is one of
    ``audit.FACES``."""

    agent: str | None = None
    session: str | None = None
    face: str | None = None
    capability: str | None = None
    decision: str | None = None
    reason: str | None = None
    host: str | None = None
    text: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None

    def __post_init__(self) -> None:
        if self.decision is not None and self.decision not in DECISIONS:
            raise InvalidInput(f"decision must be one of {', '.join(DECISIONS)}")


@dataclass(frozen=True)
class AuditPage:
    """One page of records, newest first, and the cursor of the next (older) page, if any.

    ``searched`` is set when the page stopped at :data:`SCAN_ROWS` records looked at, with
    fewer matches than a page: the cursor then continues the search further back.
    """

    records: list[AuditRecord]
    next_cursor: str | None
    searched: int = 0
    unreadable: int = 0  # rows of this page that are no record webward can read (from_rows)


@dataclass(frozen=True)
class HostCount:
    """Calls to one host in a window."""

    host: str
    calls: int
    refused: int
    failed: int


@dataclass(frozen=True)
class CallCount:
    """Calls of one agent and capability with one decision and provider
    (``webward audit --usage``), as stored: a row changed by hand may hold any decision."""

    agent: str
    capability: str
    decision: str
    provider: str | None
    calls: int
    answered: int  # of them, those with a status: they reached their provider
    # Of them, those enforce mode would have refused (``would_deny`` set): a call report mode
    # let through that then failed, or was refused for another reason, is one too.
    would_deny: int = 0


@dataclass
class Usage:
    """Aggregates over a window cut into buckets of ``bucket_s`` seconds, oldest first."""

    start: float
    bucket_s: int
    buckets: int
    by_agent: dict[str, list[int]] = field(default_factory=dict)
    by_decision: dict[str, list[int]] = field(default_factory=dict)
    refusals: list[tuple[str, int]] = field(default_factory=list)  # reason, count; most first
    p50_ms: list[float | None] = field(default_factory=list)
    p95_ms: list[float | None] = field(default_factory=list)
    total: int = 0


@dataclass(frozen=True)
class _Dialect:
    mark: str
    tiebreak: str
    bucket: str  # the bucket number of ``ts`` for a width ``{b}``
    like_folds_case: bool  # whether LIKE matches A as a (SQLite: ASCII letters only)


_SQLITE = _Dialect("?", "rowid", "CAST((ts - {start}) / {b} AS INTEGER)", True)
_POSTGRES = _Dialect("%s", "id", "CAST(floor((ts - {start}) / {b}) AS BIGINT)", False)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _shown_match(records: list[AuditRecord], text: str | None, d: _Dialect) -> list[AuditRecord]:
    """``records`` (matched by the text filter in the store, in the target as it was read)
    whose target also holds ``text`` as the console shows it, secret values REDACTED: an
    admin filtering on ``token=s3cr`` must not learn, by a row found, what the page hides."""
    if not text:
        return records
    kept = []
    for r in records:
        shown = shared_target(r)
        if shown != r.target:  # only these can differ: the store matched the rest already
            needle, hay = (text, shown)
            if d.like_folds_case:
                needle, hay = needle.translate(_ASCII_LOWER), hay.translate(_ASCII_LOWER)
            if needle not in hay:
                continue
        kept.append(r)
    return kept


class AuditReader(Protocol):
    """Read-only queries over the audit log."""

    async def page(self, where: AuditFilter, cursor: str | None, size: int) -> AuditPage:
        """Records matching ``where``, newest first, from ``cursor`` on (None: the newest)."""
        ...

    async def record(self, record_id: str) -> AuditRecord | None:
        """One record by its id."""
        ...

    async def usage(self, start: float, bucket_s: int, buckets: int) -> Usage:
        """Calls per bucket per agent and decision, refusals by reason, p50/p95 latency."""
        ...

    async def newest(self, where: AuditFilter, limit: int) -> AuditPage:
        """The newest ``limit`` records matching ``where`` (see ``_SQLReader.newest``)."""
        ...

    async def call_counts(self, where: AuditFilter, newest: int | None = None) -> list[CallCount]:
        """Calls matching ``where`` per agent, capability, decision and provider."""
        ...

    async def more_than(self, where: AuditFilter, count: int) -> bool:
        """Whether more than ``count`` records match ``where``."""
        ...

    async def top_hosts(self, since: float, limit: int) -> list[HostCount]:
        """The hosts read most since ``since`` (among the newest :data:`TOP_HOSTS_SCAN`)."""
        ...

    async def provider_counts(self, since: float) -> dict[str, HostCount]:
        """Search calls per provider since ``since``, keyed ``provider:NAME``."""
        ...

    async def prepare(self, *, build_large: bool = False) -> bool:
        """Make sure the console's indexes exist (see ``_SQLReader.prepare``)."""
        ...

    async def aclose(self) -> None:
        """Release the store."""
        ...


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _time_where(f: AuditFilter, d: _Dialect) -> tuple[list[str], list[Any]]:
    """The time range of ``f``: every index starts or ends with ``ts``."""
    clauses: list[str] = []
    params: list[Any] = []
    if f.since is not None:
        clauses.append(f"ts >= {d.mark}")
        params.append(f.since.timestamp())
    if f.until is not None:
        clauses.append(f"ts < {d.mark}")
        params.append(f.until.timestamp())
    return clauses, params


def _equals(f: AuditFilter, names: tuple[str, ...], d: _Dialect) -> tuple[list[str], list[Any]]:
    """``name = value`` for each of ``names`` that ``f`` sets."""
    clauses: list[str] = []
    params: list[Any] = []
    for name in names:
        value = getattr(f, name)
        if value is not None:
            clauses.append(f"{name} = {d.mark}")
            params.append(value)
    return clauses, params


#: The equality filters no index serves: cheap to check row by row.
_UNINDEXED_EQUALS = ("session", "face")


def _equal_where(f: AuditFilter, d: _Dialect) -> tuple[list[str], list[Any]]:
    """The equality filters of ``f`` which the console's indexes serve once built (agent,
    capability, reason, decision); session and face, which have none, are
    :data:`_UNINDEXED_EQUALS`."""
    m = d.mark
    clauses, params = _equals(f, ("agent", "capability", "reason"), d)
    if f.decision == "report-would-deny":  # as `webward audit`: also what report mode let fail
        clauses.append(f"(decision = {m} OR would_deny IS NOT NULL)")
        params.append(f.decision)
    elif f.decision is not None:
        clauses.append(f"decision = {m}")
        params.append(f.decision)
    return clauses, params


def _scan_where(f: AuditFilter, d: _Dialect) -> tuple[list[str], list[Any]]:
    """Clauses no index serves (session, face, host, text in the target): checked row by
    row."""
    m = d.mark
    clauses, params = _equals(f, _UNINDEXED_EQUALS, d)
    if f.host:
        # http(s)://host, then the end, a port, a path, a query or a fragment (the audit
        # drops user info, so the host follows the scheme); a URL quoted in a query is no match.
        host = f.host.strip().lower()
        if ":" in host and not host.startswith("["):  # an IPv6 address: bracketed in a URL
            host = f"[{host}]"
        hosts = [_escape_like(h) for h in _host_spellings(host)]
        starts = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
        forms = [form for start in starts for form in (start, *(f"{start}{c}%" for c in ":/?#"))]
        # The target, and the final URL (a read redirected elsewhere).
        like = [f"lower({column}) LIKE {m} ESCAPE '\\'" for column in ("target", "final_url")]
        either = [clause for clause in like for _ in forms]
        # And any hop of the redirect chain, a JSON list of strings: an element begins after
        # `["`, `,"` (orjson) or `, "` (json.dumps), which no URL inside a string holds (its
        # quotes are escaped), and ends with `"`. A cheap test first spares most rows the
        # 30 patterns.
        hops = [
            f"%{sep}{start}{end}%"
            for sep in ('["', ',"', ', "')
            for start in starts
            for end in ('"', *":/?#")
        ]
        chain = " OR ".join(f"lower(redirects) LIKE {m} ESCAPE '\\'" for _ in hops)
        cheap = " OR ".join(f"lower(redirects) LIKE {m} ESCAPE '\\'" for _ in hosts)
        clauses.append(f"({' OR '.join(either)} OR (({cheap}) AND ({chain})))")
        params.extend([*forms, *forms, *(f"%://{h}%" for h in hosts), *hops])
    if f.text:
        clauses.append(f"target LIKE {m} ESCAPE '\\'")
        params.append(f"%{_escape_like(f.text)}%")
    return clauses, params


def _and(clauses: list[str]) -> str:
    return f"WHERE {' AND '.join(clauses)}" if clauses else ""


def _encode_cursor(ts: float, key: object) -> str:
    return f"{ts!r}~{key}"


def _decode_cursor(cursor: str, numeric_key: bool) -> tuple[float, Any]:
    ts_text, sep, key = cursor.partition("~")
    try:
        ts = float(ts_text)
        if not sep or not math.isfinite(ts):
            raise ValueError(cursor)
        if not numeric_key:
            return ts, key
        rowid = int(key)
        if not -(2**63) <= rowid < 2**63:  # past SQLite's integers
            raise ValueError(cursor)
        return ts, rowid
    except ValueError:
        raise InvalidInput("the page cursor is not one this console made") from None


def host_of(target: str) -> str | None:
    """The host of a URL target, lowercased, in the ASCII form a read names it (a host in
    Cyrillic letters read as the Latin one it imitates); None for a query or an unparseable
    target."""
    try:
        host = urlsplit(ascii_host(target)).hostname
    except ValueError:
        return None
    return host or None


def _host_spellings(host: str) -> list[str]:
    """``host`` (a filter's) as the URLs in the log may spell it: the reads record a name in
    its ASCII form, and a target refused before it was read keeps the Unicode one the agent
    wrote; the hosts view shows a name that is neither with its letters escaped."""
    spellings = [host]
    if host.isascii() and "xn--" not in host and "\\" not in host:
        return spellings  # nearly every host: one spelling
    name = ascii_host(f"http://{host}/")[len("http://") : -1]
    spellings.append(name)
    with contextlib.suppress(UnicodeError):
        spellings.append(
            ".".join(
                label[4:].encode("ascii").decode("punycode") if label.startswith("xn--") else label
                for label in name.split(".")
            )
        )
    if "\\" in host:
        with contextlib.suppress(UnicodeError):
            spellings.append(host.encode("latin-1", "backslashreplace").decode("unicode_escape"))
    return list(dict.fromkeys(spellings))


def landed_host(target: object, final_url: object, redirects: object) -> str | None:
    """The host a read's content came from: its final URL's; without one (refused or failed
    part-way), the last hop of its redirect chain, which is where it stopped; else the
    requested URL's. Stored values, so anything a row changed by hand may hold."""
    if final_url is not None and (host := host_of(str(final_url))) is not None:
        return host
    if isinstance(redirects, str) and redirects not in ("", "[]"):  # most reads: no hop
        try:
            chain = json.loads(redirects)
        except ValueError:
            chain = None
        if isinstance(chain, list) and chain and isinstance(chain[-1], str):
            host = host_of(chain[-1])
            if host is not None:
                return host
    return _guards_host(str(target))


# A target whose host urllib and the guard read alike: ASCII labels, the last one not a number
# (127.1 and 0x7f.1 are addresses to the guard), no trailing dot, then a port, a path, a
# query, a fragment or the end (no user info, no backslash, no percent-encoded host).
_PLAIN_HOST = re.compile(
    r"https?://(?:[a-z0-9_-]+\.)*[a-z][a-z0-9_-]*(?::[0-9]*)?(?:[/?#]|$)", re.IGNORECASE
)


def _guards_host(target: str) -> str | None:
    """The host of a target as the caller wrote it (a read that sent nothing), as the guard
    read it, a backslash being a slash as WHATWG and browsers read it: urllib's reading
    counted 'http://169.254.169.254\\@docs.python.org/', refused for its backslash, as a
    read of docs.python.org, and '%31%32%37.0.0.1' as a host of its own. A target the guard
    reads no host in keeps urllib's reading. (Final URLs and hops are the guard's already.)"""
    if _PLAIN_HOST.match(target):  # most targets: both read the same host, urllib quicker
        return host_of(target)
    from .. import guard  # the guard's tables load only for a page that counts hosts

    try:
        return guard.parse_url(target.replace("\\", "/"), max_chars=len(target)).host
    except (InvalidInput, Refused):
        return host_of(target)


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q`` percentile (0..1) of ascending values; None when empty."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q * len(sorted_values)))
    return float(sorted_values[rank - 1])


class _SQLReader:
    """The queries, run by a subclass's ``_rows`` on its store."""

    dialect: _Dialect

    async def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    async def prepare(self, *, build_large: bool = False) -> bool:
        """Make sure the console's indexes exist; True when they do.

        On a log of at most :data:`BUILD_AT_ONCE_ROWS` rows they are built at once (about a
        second). A larger log is left alone unless ``build_large`` (``webward console`` does
        it before it serves): building takes the table's write lock for as long as it runs,
        and the audit writers of a busy gateway must not wait on a page view. Until then,
        every filter is a bounded scan.
        """
        return False

    async def page(self, where: AuditFilter, cursor: str | None, size: int) -> AuditPage:
        d = self.dialect
        order = f" ORDER BY ts DESC, {d.tiebreak} DESC"
        clauses, params = _time_where(where, d)
        if cursor is not None:
            ts, key = _decode_cursor(cursor, numeric_key=d.tiebreak == "rowid")
            clauses.append(f"(ts, {d.tiebreak}) < ({d.mark}, {d.mark})")
            params += [ts, key]
        equal, equal_params = _equal_where(where, d)
        scan, scan_params = _scan_where(where, d)
        if await self.prepare():
            clauses, params = [*clauses, *equal], [*params, *equal_params]
        else:  # no index for them: a rare agent or reason must not mean reading every row
            scan, scan_params = [*equal, *scan], [*equal_params, *scan_params]
        boundary: tuple[Any, ...] | None = None
        if scan:
            # The SCAN_ROWS-th record the indexed part reaches: the page looks no further.
            found = await self._rows(
                f"SELECT ts, {d.tiebreak} FROM audit {_and(clauses)}{order} "
                f"LIMIT 1 OFFSET {SCAN_ROWS - 1}",
                params,
            )
            if found:
                boundary = tuple(found[0])
                scan = [*scan, f"(ts, {d.tiebreak}) >= ({d.mark}, {d.mark})"]
                scan_params = [*scan_params, *boundary]
        rows = await self._rows(
            f"SELECT {d.tiebreak}, {', '.join(FIELDS)} FROM audit "
            f"{_and([*clauses, *scan])}{order} LIMIT {d.mark}",
            [*params, *scan_params, size + 1],
        )
        records, unreadable = from_rows(r[1:] for r in rows[:size])
        records = _shown_match(records, where.text, d)  # a page may then hold fewer
        if len(rows) > size:  # r[2] is ts: FIELDS starts with id, ts
            last = rows[size - 1]
            return AuditPage(records, _encode_cursor(last[2], last[0]), unreadable=unreadable)
        if boundary is not None:
            cursor = _encode_cursor(*boundary)
            return AuditPage(records, cursor, searched=SCAN_ROWS, unreadable=unreadable)
        return AuditPage(records, None, unreadable=unreadable)

    async def record(self, record_id: str) -> AuditRecord | None:
        m = self.dialect.mark
        rows = await self._rows(
            f"SELECT {', '.join(FIELDS)} FROM audit WHERE id = {m}", [record_id]
        )
        if not rows:
            return None
        try:
            return from_row(tuple(rows[0]))
        except UNREADABLE:
            raise InvalidInput(unreadable_note(1)) from None

    async def usage(self, start: float, bucket_s: int, buckets: int) -> Usage:
        d = self.dialect
        m = d.mark
        end = start + bucket_s * buckets
        bucket = d.bucket.format(start=repr(float(start)), b=int(bucket_s))
        out = Usage(start=start, bucket_s=bucket_s, buckets=buckets)
        rows = await self._rows(
            f"SELECT {bucket}, agent, decision, COUNT(*) FROM audit "
            f"WHERE ts >= {m} AND ts < {m} GROUP BY 1, 2, 3",
            [start, end],
        )
        for b, agent, decision, n in rows:
            if not isinstance(b, (int, float)) or not 0 <= (i := int(b)) < buckets:
                continue
            # (An agent changed by hand into another type, a BLOB: named as text, so that
            # the views sort and show it beside the others.)
            name = agent if isinstance(agent, str) else str(agent)
            out.by_agent.setdefault(name, [0] * buckets)[i] += int(n)
            out.by_decision.setdefault(decision, [0] * buckets)[i] += int(n)
            out.total += int(n)
        rows = await self._rows(
            f"SELECT reason, COUNT(*) FROM audit WHERE ts >= {m} AND ts < {m} "
            f"AND decision = 'refused' GROUP BY reason ORDER BY 2 DESC, 1 LIMIT 20",
            [start, end],
        )
        out.refusals = [(str(reason), int(n)) for reason, n in rows]
        rows = await self._rows(
            f"SELECT {bucket}, duration_ms FROM audit WHERE ts >= {m} AND ts < {m} "
            f"AND duration_ms IS NOT NULL ORDER BY 1, 2",
            [start, end],
        )
        durations: list[list[float]] = [[] for _ in range(buckets)]
        for b, ms in rows:
            with contextlib.suppress(TypeError, ValueError, OverflowError):  # a row changed by hand
                if 0 <= int(b) < buckets:
                    durations[int(b)].append(float(ms))
        out.p50_ms = [percentile(v, 0.50) for v in durations]
        out.p95_ms = [percentile(v, 0.95) for v in durations]
        return out

    # `webward audit`: the filters it takes (a time range, an agent, a session, a face, a
    # decision) are those of _time_where, _equal_where and _UNINDEXED_EQUALS, read newest first
    # through the sinks' (ts) index or the console's, whichever the store picks: no bounded
    # scan, and no index built here.

    def _listing(self, where: AuditFilter) -> tuple[str, list[Any], str]:
        """The WHERE clause of ``where``'s time range and equality filters (no host or text),
        its parameters, and the newest-first order."""
        d = self.dialect
        clauses, params = _time_where(where, d)
        equal, equal_params = _equal_where(where, d)
        session, session_params = _equals(where, _UNINDEXED_EQUALS, d)
        order = f" ORDER BY ts DESC, {d.tiebreak} DESC"
        return (
            _and([*clauses, *equal, *session]),
            [*params, *equal_params, *session_params],
            order,
        )

    async def newest(self, where: AuditFilter, limit: int) -> AuditPage:
        """The newest ``limit`` records matching ``where`` (its host and text aside), as
        ``webward audit`` lists them. ``next_cursor`` is set when more match, counted as
        the store holds them: a row that cannot be read (one of ``unreadable``, left out of
        ``records``) is one of the ``limit``, and still means more exist."""
        d = self.dialect
        sql_where, params, order = self._listing(where)
        rows = await self._rows(
            f"SELECT {d.tiebreak}, {', '.join(FIELDS)} FROM audit {sql_where}{order} "
            f"LIMIT {d.mark}",
            [*params, int(limit) + 1],
        )
        records, unreadable = from_rows(r[1:] for r in rows[:limit])
        cursor = None
        if len(rows) > limit:  # r[2] is ts: FIELDS starts with id, ts
            cursor = _encode_cursor(rows[limit - 1][2], rows[limit - 1][0])
        return AuditPage(records, cursor, unreadable=unreadable)

    async def call_counts(self, where: AuditFilter, newest: int | None = None) -> list[CallCount]:
        """Calls matching ``where`` (its host and text aside) counted in the store per agent,
        capability, decision and provider, with how many of them answered (had a status);
        ``newest``: only the newest that many of them; and how many of them enforce mode
        would have refused. Memory grows with the groups, not with the calls."""
        d = self.dialect
        sql_where, params, order = self._listing(where)
        source = f"audit {sql_where}"
        if newest is not None:
            source = (
                f"(SELECT agent, capability, decision, provider, status, would_deny FROM audit "
                f"{sql_where}{order} LIMIT {d.mark}) AS newest"
            )
            params = [*params, int(newest)]
        rows = await self._rows(
            "SELECT agent, capability, decision, provider, COUNT(*), COUNT(status), "
            f"COUNT(would_deny) FROM {source} GROUP BY agent, capability, decision, provider",
            params,
        )
        return [
            CallCount(
                str(a), str(c), str(dec), None if p is None else str(p), int(n), int(k), int(w)
            )
            for a, c, dec, p, n, k, w in rows
        ]

    async def more_than(self, where: AuditFilter, count: int) -> bool:
        """Whether more than ``count`` records match ``where`` (its host and text aside)."""
        d = self.dialect
        sql_where, params, order = self._listing(where)
        rows = await self._rows(
            f"SELECT ts FROM audit {sql_where}{order} LIMIT 1 OFFSET {d.mark}",
            [*params, int(count)],
        )
        return bool(rows)

    async def top_hosts(self, since: float, limit: int) -> list[HostCount]:
        """Page reads per host: the host the content came from (:func:`landed_host`)."""
        m = self.dialect.mark
        rows = await self._rows(
            f"SELECT target, final_url, redirects, decision FROM audit WHERE ts >= {m} "
            f"AND capability = {m} ORDER BY ts DESC LIMIT {m}",
            [since, FETCH, TOP_HOSTS_SCAN],
        )
        calls: Counter[str] = Counter()
        refused: Counter[str] = Counter()
        failed: Counter[str] = Counter()
        for target, final_url, redirects, decision in rows:
            host = landed_host(target, final_url, redirects)
            if host is None:
                continue
            calls[host] += 1
            if decision == "refused":
                refused[host] += 1
            elif decision == "failed":
                failed[host] += 1
        return [HostCount(h, n, refused[h], failed[h]) for h, n in calls.most_common(limit)]

    async def provider_counts(self, since: float) -> dict[str, HostCount]:
        """Search calls per provider since ``since`` (the newest scanned, as for hosts), keyed
        ``provider:NAME`` as the limit store keys a provider."""
        m = self.dialect.mark
        rows = await self._rows(
            f"SELECT provider, decision FROM audit WHERE ts >= {m} AND capability = {m} "
            f"ORDER BY ts DESC LIMIT {m}",
            [since, SEARCH, TOP_HOSTS_SCAN],
        )
        counts: dict[str, list[int]] = {}
        for provider, decision in rows:
            if not provider or provider == "none":
                continue
            n = counts.setdefault(f"provider:{provider}", [0, 0, 0])
            n[0] += 1
            n[1] += decision == "refused"
            n[2] += decision == "failed"
        return {k: HostCount(k, *n) for k, n in counts.items()}


class SQLiteAuditReader(_SQLReader):
    """Reads ``audit.db`` through a sink of its own (its own connection and lock)."""

    dialect = _SQLITE

    def __init__(self, sink: SQLiteAuditSink) -> None:
        self._sink = sink
        self._indexed = False

    async def prepare(self, *, build_large: bool = False) -> bool:
        if not self._indexed:
            self._indexed = await anyio.to_thread.run_sync(self._prepare_sync, build_large)
        return self._indexed

    def _prepare_sync(self, build_large: bool) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            names = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
            }
            if all(f"audit_{c}_ts" in names for c in _INDEXED):
                return True
            # max(rowid) is one step down the table's b-tree, where count(*) reads it all.
            (rows,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM audit").fetchone()
            if rows > BUILD_AT_ONCE_ROWS and not build_large:
                return False
            for statement in _SQLITE_INDEXES:
                conn.execute(statement)
            return True

        return self._with_connection(work, default=False)

    async def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return await anyio.to_thread.run_sync(
            lambda: self._with_connection(
                lambda conn: [tuple(r) for r in conn.execute(sql, list(params)).fetchall()],
                default=[],
            )
        )

    def _with_connection(self, work: Callable[[sqlite3.Connection], T], *, default: T) -> T:
        return self._sink.read_sync(work, default=default)

    async def aclose(self) -> None:
        await self._sink.aclose()


class SinkReader(_SQLReader):
    """A sink that is not SQL: its refusal, for every read."""

    dialect = _SQLITE

    def __init__(self, sink: Any) -> None:
        self._sink = sink

    async def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        await self._sink.query(limit=0)  # the configured store's own refusal
        raise Refused(
            "refused: this audit store cannot be browsed", reason=REASON_AUDIT_UNAVAILABLE
        )

    async def aclose(self) -> None:
        await self._sink.aclose()
