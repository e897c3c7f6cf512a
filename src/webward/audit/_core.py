"""The audit log: one record per call, allowed or refused; no record, no call.

A record says who (agent, tier, the face that made the call and the session it was in), what
(capability, target), what webward decided and why (decision, reason code), and how it went
(final URL, redirect chain, status, bytes, content type, duration, provider, and for a search
how many hits the agent's own search lists dropped). It never holds page text or base64:
there is no field for them, a ``data:`` target is cut to its scheme, credentials in URLs
(``user:pass@``) are dropped, and targets are cut at :data:`MAX_TARGET_CHARS`.

Decisions (:data:`DECISIONS`):

- ``allowed``: the call went through;
- ``report-would-deny``: it went through only because ``[policy] mode = "report"``; ``reason``
  (and ``would_deny``) name the policy refusal that enforce mode would have given;
- ``refused``: webward said no (policy, guard, limits, robots.txt, caps, bad input);
- ``failed``: the far side failed (timeout, HTTP error, provider error).

A record that cannot be written refuses the call: sinks raise ``Refused`` with reason
``audit_unavailable``. Sinks: :class:`MemoryAuditSink` here (tests, ``webward.testing``),
``_sqlite.SQLiteAuditSink`` (``audit.db`` in the state dir, WAL and a busy timeout, so several
processes can write at once) and ``_postgres.PostgresAuditSink`` (one log for N replicas,
``[audit] postgres_dsn_env``). The two SQL stores share what is defined here: one table
(:data:`COLUMNS`), its rows (:func:`to_row`, :func:`from_row`), group commit
(:class:`GroupCommit` for an async driver, :class:`CommitThread` for a blocking one) and the
query (:func:`select_sql`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import itertools
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import orjson

from .._capabilities import SEARCH
from .._errors import STORE_HEALTH, Reason, Refused, operator_step
from .._redact import (
    drop_userinfo,
    may_hold_userinfo,
    redact_message,
    redact_secrets,
    redact_urls,
)
from .._sqlite import not_a_database_step
from .._unicode import BIDI_CONTROLS, BIDI_MARKS

if TYPE_CHECKING:
    from .._call import Call

__all__ = [
    "ADDED_COLUMNS",
    "COLUMNS",
    "DECISIONS",
    "FACES",
    "FIELDS",
    "MAX_TARGET_CHARS",
    "REASON_AUDIT_UNAVAILABLE",
    "SCHEMA",
    "UNREADABLE",
    "AuditRecord",
    "AuditSink",
    "CommitThread",
    "Flushed",
    "GroupCommit",
    "MemoryAuditSink",
    "StoreHealth",
    "audit_unavailable",
    "filled_columns",
    "from_row",
    "from_rows",
    "records_of",
    "select_sql",
    "table_sql",
    "to_row",
    "unreadable_note",
]

log = logging.getLogger("webward.audit")

DECISIONS = ("allowed", "report-would-deny", "refused", "failed")
#: The faces a call comes through (``Web(face=...)``), and so how its agent was named. From a
#: bearer token: ``gateway`` (``webward serve``) and ``mcp-http`` (``webward mcp --http`` with
#: ``[agents.NAME]`` tokens). Asserted by whoever runs the process: ``library`` (``Web`` in an
#: application, the default), ``cli`` (``webward fetch`` / ``search``), ``ask`` (``webward
#: ask``'s tool calls), ``mcp-stdio`` (``webward mcp``) and ``mcp-http-local`` (``webward mcp
#: --http`` without tokens, loopback only: the server's ``--agent``, for whoever reaches it).
FACES = ("library", "cli", "ask", "mcp-stdio", "mcp-http-local", "mcp-http", "gateway")
REASON_AUDIT_UNAVAILABLE = Reason.AUDIT_UNAVAILABLE
#: Targets (URLs, queries) longer than this are cut, and marked with an ellipsis.
MAX_TARGET_CHARS = 2048


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


_ID_PREFIX = uuid.uuid4().hex[:8]  # random per process, so ids from several processes differ
_ID_COUNTER = itertools.count()


def _reseed_ids() -> None:
    # A forked child (workers a server forks after importing webward) had its parent's prefix
    # and counter: two of them writing in the same nanosecond made one id, and PostgreSQL's
    # INSERT ... ON CONFLICT (id) DO NOTHING, which takes a record already there as its own,
    # dropped the second record in silence.
    global _ID_PREFIX
    _ID_PREFIX = uuid.uuid4().hex[:8]


os.register_at_fork(after_in_child=_reseed_ids)


def _new_id() -> str:
    # Unique, not secret: a per-process random prefix, the time and a counter spare the
    # hot path a getrandom() call per record. The time's 16 hex digits and the counter's 8
    # are one 96-bit number's 24 (until the year 2554): one hex() rather than two format
    # specs, 0.2 us a record rather than 0.6.
    stamp = (time.time_ns() << 32) | (next(_ID_COUNTER) & 0xFFFFFFFF)
    return _ID_PREFIX + stamp.to_bytes(12, "big").hex()  # 32 hex digits


def _clean_url(value: Any) -> str:
    text = str(value)
    if len(text) <= _MEMO_CHARS:  # the same URLs come back call after call (a cached page)
        return _clean_url_memo(text)
    return _clean_text(text)


def _is_data_url(text: str) -> bool:
    # A data: URL is its payload: base64 never goes in a record ("data:[omitted]").
    return text.lstrip("\x00 \t\n\r\f")[:5].lower() == "data:"


def _clean_text(text: str) -> str:
    if _is_data_url(text):
        return "data:[omitted]"
    if may_hold_userinfo(text):  # only then can there be credentials to drop
        # The text as a URL, else each URL in it: a target that was no string (a client's
        # {"url": {"u": "https://user:pw@host/"}}, recorded as its repr) holds one inside.
        cleaned = drop_userinfo(text)
        text = redact_urls(text) if cleaned == text else cleaned
    return _storable(_cut(text))


def _clean_query(value: Any) -> str:
    """A search's query, free text: each URL in it without its credentials, and
    ``nginx:1.25@sha256:...`` no URL typed without its scheme (``drop_userinfo``'s
    ``schemeless``), recorded as asked."""
    text = str(value)
    if _is_data_url(text):  # as for a URL
        return "data:[omitted]"
    if may_hold_userinfo(text):
        text = redact_urls(text, schemeless=False)
    return _storable(_cut(text))


def _cut(text: str) -> str:
    """``text`` cut at :data:`MAX_TARGET_CHARS`, marked with an ellipsis when cut."""
    return text if len(text) <= MAX_TARGET_CHARS else text[: MAX_TARGET_CHARS - 1] + "…"


# Short targets are remembered cleaned (the cleaning is pure); long ones are cleaned each time.
_MEMO_CHARS = 1024
_clean_url_memo = functools.lru_cache(maxsize=4096)(_clean_text)


def _storable(text: str) -> str:
    """``text`` as every store can hold it: a lone surrogate (a caller can send one as
    ``\\ud800`` in JSON) is written out as its escape, and so is a NUL (``\\x00``, which
    PostgreSQL refuses in text), so that the store never turns the row down."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    return text


def _iso(when: dt.datetime) -> str:
    global _ISO_SECOND
    if when.tzinfo is dt.UTC:  # every record's time (_utcnow): its second made once
        # The call log writes a line per call, and isoformat was two thirds of making one
        # (1.1 of 1.7 us): the calls of one second share the text up to the milliseconds.
        # One tuple, read once and replaced whole, so that a thread never pairs one second's
        # key with another's text.
        key = (when.second, when.minute, when.hour, when.day, when.month, when.year)
        second = _ISO_SECOND
        if second[0] != key:
            second = (key, when.isoformat(timespec="seconds")[:-6])  # no "+00:00"
            _ISO_SECOND = second
        return f"{second[1]}.{when.microsecond // 1000:03d}Z"
    return when.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_ISO_SECOND: tuple[tuple[int, ...], str] = ((), "")


# Text fields besides the URLs (which _clean_url handles) that must reach the store intact.
_OTHER_TEXT_FIELDS = (
    "agent", "tier", "capability", "reason", "would_deny", "content_type", "provider", "face",
)  # fmt: skip


_TEXT_OR_NONE = frozenset({str, type(None)})


@dataclass(frozen=True)
class AuditRecord:
    """One call through the door. Field names are snake_case; :meth:`to_wire` is camelCase."""

    agent: str
    tier: str
    capability: str  # web:page.fetch@1 | web:search.query@1
    target: str  # the requested URL, or the query
    decision: str  # see DECISIONS
    reason: str  # a fixed code: "allowed" when allowed, else the refusal's or failure's reason
    time: dt.datetime = field(default_factory=_utcnow)
    id: str = field(default_factory=_new_id)
    would_deny: str | None = None  # report mode: the policy reason enforce would refuse with
    final_url: str | None = None
    # The URLs requested, the requested one first, and last where a redirect led when its
    # hop was refused (never requested); empty for a read refused before it sent anything.
    redirects: tuple[str, ...] = ()
    status: int | None = None
    bytes: int | None = None
    content_type: str | None = None
    duration_ms: int | None = None
    provider: str | None = None
    # A headless render's requests: the hosts it contacted, and those the gate refused, as
    # "host[:port] (reason)". Empty when nothing was rendered.
    render_contacted: tuple[str, ...] = ()
    render_refused: tuple[str, ...] = ()
    # The session the call was in, as the face named it (``gateway:<agent>:<name>``,
    # ``mcp:<agent>:<id>``, a library's or ``--session``'s name as given); None: in none.
    # Provenance and session budgets are per session, so their refusals need it explained.
    session: str | None = None
    # A search that got its hits back: how many the agent's search_allow / search_deny
    # dropped (report mode: would have dropped), 0 for none. None for a read, and for a
    # search refused or failed before its hits came back.
    hits_dropped: int | None = None
    # The face that made the call (:data:`FACES`), and so whether its agent's name came from a
    # bearer token (gateway, mcp-http) or was asserted by whoever ran the process. One per
    # ``Web``; None for a record of a webward from before faces were recorded.
    face: str | None = None
    # What this record shares with the records of calls that differ only in their id, time
    # and duration (a page read again and again): its row and its JSON line, but for those
    # three, made once (``from_call`` sets it). Not a field anyone gives: a record made or
    # replaced by hand has none, and is encoded in full.
    shape: _Shape | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise ValueError(f"unknown audit decision {self.decision!r}")
        if self.time.tzinfo is None:
            raise ValueError("audit time must carry a time zone")
        # Frozen, but cleaned once here so that no writer can put secrets or payloads in
        # (through the instance's dict, as the frozen dataclass's own __init__ would).
        fields = self.__dict__
        # A search's query is free text: "nginx:1.25@sha256:..." is no URL typed without
        # its scheme, and is recorded as asked.
        fields["target"] = (
            _clean_query(self.target) if self.capability == SEARCH else _clean_url(self.target)
        )
        if self.final_url is not None:
            fields["final_url"] = _clean_url(self.final_url)
        fields["redirects"] = tuple(map(_clean_url, self.redirects))
        # A session name, even a bad one (the call was refused for it), is stored as given, but
        # as every store can hold it, and cut as a target is.
        if self.session is not None:
            fields["session"] = _cut(_storable(str(self.session)))
        for name in ("render_contacted", "render_refused"):
            hosts = fields[name]
            fields[name] = tuple(_storable(str(h))[:300] for h in hosts) if hosts else ()
        values = [fields[name] for name in _OTHER_TEXT_FIELDS]
        # Plain ASCII text without a NUL is stored as it is: nothing to set. Checked for all
        # of them at once first (every call makes a record), then field by field.
        if _TEXT_OR_NONE.issuperset(map(type, values)):
            joined = "".join([value for value in values if value is not None])
            if joined.isascii() and "\x00" not in joined:
                return
        for name, value in zip(_OTHER_TEXT_FIELDS, values, strict=True):
            if value is not None and not (
                type(value) is str and value.isascii() and "\x00" not in value
            ):
                fields[name] = _storable(str(value))

    @classmethod
    def create(
        cls,
        *,
        decision: str,
        reason: str,
        agent: str = "",
        tier: str = "",
        capability: str = "",
        target: str = "",
        **fields: Any,
    ) -> AuditRecord:
        """A record stamped now; every other field of the dataclass may be given by name.

        Lenient where the core may not know a field yet (a call refused before its tier was
        known has ``tier=""``); ``redirects`` may be any sequence.
        """
        for name in ("redirects", "render_contacted", "render_refused"):
            if name in fields and fields[name] is not None:
                fields[name] = tuple(fields[name])
            elif name in fields:
                del fields[name]
        return cls(
            agent=str(agent),
            tier=str(tier),
            capability=str(capability),
            target=target if isinstance(target, str) else repr(target),
            decision=decision,
            reason=str(reason),
            **fields,
        )

    @classmethod
    def from_call(cls, call: Call, *, decision: str, reason: str) -> AuditRecord:
        """The call in flight (``_call.Call``), frozen into its record, stamped now."""
        key = (
            call.agent, call.tier, call.capability, call.target, decision, reason,
            call.would_deny, call.final_url, tuple(call.redirects), call.status, call.bytes,
            call.content_type, call.provider, tuple(call.render_contacted),
            tuple(call.render_refused), call.session, call.hits_dropped, call.face,
        )  # fmt: skip
        shape = _SHAPES.get(key)
        if shape is None:
            return cls._first_of_shape(call, key, decision, reason)
        # A call like one before (a cached page read again): its cleaned fields, row and
        # line are that record's; only the id, the time and the duration are its own.
        record = object.__new__(cls)
        fields = record.__dict__
        fields.update(shape.fields)
        fields["time"] = _utcnow()
        fields["id"] = _new_id()
        fields["duration_ms"] = call.duration_ms()
        return record

    @classmethod
    def _first_of_shape(
        cls, call: Call, key: tuple[Any, ...], decision: str, reason: str
    ) -> AuditRecord:
        # Every field is set in one step rather than through the frozen dataclass's
        # __init__, which sets each of the 22 through object.__setattr__; __post_init__
        # checks and cleans them as it does for any record.
        record = object.__new__(cls)
        record.__dict__.update(
            agent=str(call.agent),
            tier=str(call.tier),
            capability=str(call.capability),
            target=call.target,
            decision=decision,
            reason=str(reason),
            time=_utcnow(),
            id=_new_id(),
            would_deny=call.would_deny,
            final_url=call.final_url,
            redirects=tuple(call.redirects),
            status=call.status,
            bytes=call.bytes,
            content_type=call.content_type,
            duration_ms=call.duration_ms(),
            provider=call.provider,
            render_contacted=tuple(call.render_contacted),
            render_refused=tuple(call.render_refused),
            session=call.session,
            hits_dropped=call.hits_dropped,
            face=call.face,
            shape=None,
        )
        record.__post_init__()
        if _SHAPE_TYPES.issuperset(map(type, key)):  # the key's == is the values' own
            if len(_SHAPES) >= _MAX_SHAPES:
                _SHAPES.clear()
            record.__dict__["shape"] = _SHAPES[key] = _Shape(record)
        return record

    def to_wire(self) -> dict[str, Any]:
        """The record as camelCase JSON (``webward audit --json``)."""
        return {
            "id": self.id,
            "time": _iso(self.time),
            "agent": self.agent,
            "face": self.face,
            "tier": self.tier,
            "session": self.session,
            "capability": self.capability,
            "target": self.target,
            "decision": self.decision,
            "reason": self.reason,
            "wouldDeny": self.would_deny,
            "finalUrl": self.final_url,
            "redirects": list(self.redirects),
            "status": self.status,
            "bytes": self.bytes,
            "contentType": self.content_type,
            "durationMs": self.duration_ms,
            "provider": self.provider,
            "hitsDropped": self.hits_dropped,
            "renderContacted": list(self.render_contacted),
            "renderRefused": list(self.render_refused),
        }

    def to_json_line(self, extra: tuple[tuple[str, str], ...] = ()) -> str:
        """The call log's line: :meth:`to_wire` as one line of JSON, newline included, with
        ``extra`` text fields after the record's own (the call log's trace and span ids).

        What leaves the process for a log pipeline: its URLs' secret query values REDACTED
        (as a span's ``url.full``), and every character that breaks a line or drives a
        terminal (U+2028, NEL, C1 controls, bidi controls) escaped, so that a record stays
        one line that ``tail`` shows as it is (orjson writes them raw)."""
        shape = self.shape if self.shape is not None else _Shape(self)
        if shape.line is None:  # a record made by hand, an integer past 64 bits
            return _line_safe(json.dumps({**shared_wire(self), **dict(extra)})) + "\n"
        middle, tail = shape.line
        ms = self.duration_ms
        duration = str(ms) if type(ms) is int else json.dumps(ms)  # null, or a record by hand
        more = "".join([f",{_json_text(name)}:{_json_text(value)}" for name, value in extra])
        return (
            f'{{"id":{_json_text(self.id)},"time":"{_iso(self.time)}",{middle},'
            f'"durationMs":{duration},{tail}{more}}}\n'
        )


def shared_target(record: AuditRecord) -> str:
    """A record's target as :func:`shared_wire` has it: a URL's secret values REDACTED; a
    search's query, free text, has those of any URL in it REDACTED (an agent searching for a
    pre-signed URL it was given: ``...?X-Amz-Signature=...``), its other words kept."""
    if record.capability == SEARCH:
        target = record.target
        # An "=", plain or percent-encoded (a URL pasted encoded): most queries hold neither.
        low = target.lower()
        if "=" in target or "%3d" in low or "%253d" in low:
            return redact_message(target, schemeless=False)
        return target
    return redact_secrets(record.target)


def shared_wire(record: AuditRecord) -> dict[str, Any]:
    """:meth:`AuditRecord.to_wire` for what leaves the store for others to read (the call
    log, the console's pages): secret query values REDACTED."""
    wire = record.to_wire()
    wire["target"] = shared_target(record)
    if record.final_url is not None:
        wire["finalUrl"] = redact_secrets(record.final_url)
    wire["redirects"] = [redact_secrets(url) for url in record.redirects]
    return wire


# Characters that end a line for some reader (U+2028/9, NEL), drive a terminal (C0 and C1
# controls; JSON escapes C0 already) or reorder what it shows (bidi controls), as \uXXXX.
_LINE_UNSAFE = {
    c: f"\\u{c:04x}"
    for c in [*range(0x7F, 0xA0), 0x2028, 0x2029, *map(ord, BIDI_CONTROLS + BIDI_MARKS)]
}


def _line_safe(text: str) -> str:
    return text if text.isascii() else text.translate(_LINE_UNSAFE)


def _json_text(text: str) -> str:
    return orjson.dumps(text).decode("utf-8")


class _Shape:
    """What records that differ only in their id, time and duration share, encoded once:
    their other (cleaned) fields, their row around those three (:func:`to_row`) and their
    JSON line (:meth:`AuditRecord.to_json_line`). Every call makes a record, its row and
    its call log line; a cached page read again makes the same ones but for those three."""

    __slots__ = ("fields", "line", "row_head", "row_tail")

    def __init__(self, record: AuditRecord) -> None:
        self.fields = {
            name: value
            for name, value in record.__dict__.items()
            if name not in ("id", "time", "duration_ms")
        }
        self.fields["shape"] = self
        # The row's values between its time and its duration, and after its duration.
        row = to_row(record)
        self.row_head, self.row_tail = row[2:_DURATION_COLUMN], row[_DURATION_COLUMN + 1 :]
        # The JSON line's fields between its time and its duration, and after its duration,
        # in the order of :meth:`AuditRecord.to_wire`.
        wire = shared_wire(record)
        names = list(wire)
        at = names.index("durationMs")
        try:
            middle = orjson.dumps({name: wire[name] for name in names[2:at]}).decode("utf-8")
            tail = orjson.dumps({name: wire[name] for name in names[at + 1 :]}).decode("utf-8")
        except orjson.JSONEncodeError:
            self.line: tuple[str, str] | None = None
        else:
            self.line = _line_safe(middle[1:-1]), _line_safe(tail[1:-1])


#: The shapes of recent calls (``AuditRecord.from_call``), keyed by what the call record
#: held; cleared when full.
_SHAPES: dict[tuple[Any, ...], _Shape] = {}
_MAX_SHAPES = 4096
# Key values of these types compare equal only to values that encode alike (not 1 and True;
# a reason code, a StrEnum, is stored as its text).
_SHAPE_TYPES = frozenset({str, int, type(None), tuple, Reason})


class AuditSink(Protocol):
    """Where audit records go. ``write`` raises ``Refused(audit_unavailable)`` if it cannot."""

    async def write(self, record: AuditRecord) -> None:
        """Store ``record`` durably, or raise ``Refused`` (reason ``audit_unavailable``)."""
        ...

    async def query(
        self,
        since: dt.datetime | None = None,
        agent: str | None = None,
        decision: str | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        """Records at or after ``since``, newest first, at most ``limit``.

        ``decision="report-would-deny"`` also finds calls that report mode let through and
        that then failed.
        """
        ...

    async def aclose(self) -> None:
        """Release the store."""
        ...

    # Optional: ``async def probe(self) -> None``, which raises ``Refused``
    # (``audit_unavailable``) when the store could not take a record now. A ``Web`` asks it
    # before a call's first request whenever the store has not yet been seen to work, or
    # failed last (``Web._audited``), so that no request goes out that could not be audited.
    # A sink without it is written to and trusted, as before.


# How a full disk is said (a store's detail), and what to do about it: free space, not make
# the store writable, whichever write or probe found it.
FULL_WORDS = "the disk holding it is full"
_FULL_ADVICE = (
    "free space on that disk, or point [state] dir (WEBWARD_STATE_DIR) or [audit] at another one"
)


# The words of a store stopped by the process's file size limit (RLIMIT_FSIZE), and the step.
SIZE_LIMIT_WORDS = "this process's file size limit (ulimit -f)"
_SIZE_LIMIT_ADVICE = (
    "raise that limit (ulimit -f unlimited; LimitFSIZE= of a systemd service), or point "
    "[state] dir (WEBWARD_STATE_DIR) or [audit] at another store"
)


def audit_unavailable(detail: str, advice: str | None = None) -> Refused:
    """The refusal every sink raises when a record cannot be written."""
    if advice is None and FULL_WORDS in detail:
        advice = _FULL_ADVICE
    if advice is None and SIZE_LIMIT_WORDS in detail:
        advice = _SIZE_LIMIT_ADVICE
    # A file that is no database, met by a call's write as by the probe: "make that store
    # writable" does nothing for it (the probe alone said to move it aside).
    advice = advice or not_a_database_step(detail)
    # Where the store is and what to do are the operator's (a model is told neither).
    return Refused(
        operator_step(
            "refused: audit unavailable; webward does not open the door unaudited",
            f"{detail}; "
            + (
                advice
                or "make that store writable, or point [state] dir (WEBWARD_STATE_DIR) or "
                "[audit] at one that is"
            ),
        ),
        reason=REASON_AUDIT_UNAVAILABLE,
    )


def _matches(
    r: AuditRecord, since: dt.datetime | None, agent: str | None, decision: str | None
) -> bool:
    if since is not None and r.time < since:
        return False
    if agent is not None and r.agent != agent:
        return False
    if decision is not None:
        if decision == "report-would-deny":
            return r.decision == decision or r.would_deny is not None
        return r.decision == decision
    return True


class MemoryAuditSink:
    """Audit records in a list (``.records``), oldest first: for tests and ``webward.testing``.

    ``broken=True`` makes every write fail as an unavailable store does, so a test can show
    that its agent copes with webward refusing to work unaudited.
    """

    def __init__(self, *, broken: bool = False) -> None:
        self.records: list[AuditRecord] = []
        self.broken = broken

    async def write(self, record: AuditRecord) -> None:
        await self.probe()
        self.records.append(record)

    async def probe(self) -> None:
        if self.broken:
            raise audit_unavailable("the memory audit sink was made broken")

    async def query(
        self,
        since: dt.datetime | None = None,
        agent: str | None = None,
        decision: str | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        found = [r for r in reversed(self.records) if _matches(r, since, agent, decision)]
        return found[: max(limit, 0)]

    async def aclose(self) -> None:
        return None


# ---- what the two SQL stores share: one table, its rows, group commit, the query --------

#: The audit table, one schema for both SQL stores: (column, type), in row order. The types
#: are standard SQL, which SQLite reads with its own affinities (DOUBLE PRECISION: REAL,
#: BIGINT: INTEGER), so the same text creates the table in SQLite and in PostgreSQL.
COLUMNS = (
    ("id", "TEXT PRIMARY KEY"),
    ("ts", "DOUBLE PRECISION NOT NULL"),
    ("agent", "TEXT NOT NULL"),
    ("tier", "TEXT NOT NULL"),
    ("capability", "TEXT NOT NULL"),
    ("target", "TEXT NOT NULL"),
    ("decision", "TEXT NOT NULL"),
    ("reason", "TEXT NOT NULL"),
    ("would_deny", "TEXT"),
    ("final_url", "TEXT"),
    ("redirects", "TEXT NOT NULL"),
    ("status", "INTEGER"),
    ("bytes", "BIGINT"),
    ("content_type", "TEXT"),
    ("duration_ms", "BIGINT"),
    ("provider", "TEXT"),
    ("render_contacted", "TEXT NOT NULL DEFAULT '[]'"),
    ("render_refused", "TEXT NOT NULL DEFAULT '[]'"),
    ("session", "TEXT"),
    ("hits_dropped", "BIGINT"),
    ("face", "TEXT"),
)
#: Columns added after the first release: a table an older webward created gains them when a
#: store opens it (each store in its own dialect of ``ALTER TABLE``), its old rows reading
#: the column's default (``[]``; None for the session, the hits dropped and the face).
ADDED_COLUMNS = tuple(
    c
    for c in COLUMNS
    if c[0] in ("render_contacted", "render_refused", "session", "hits_dropped", "face")
)
#: The column names, in row order (:func:`to_row`, :func:`from_row`).
FIELDS = tuple(name for name, _ in COLUMNS)


def filled_columns(have: Collection[str]) -> list[str]:
    """:data:`FIELDS` as a ``SELECT`` list over an audit table that holds the columns ``have``
    (one an older webward created, which this reader may not alter): each column it lacks
    reads as its default, as its old rows would once it gained the column (``'[]'`` for the
    render hosts, ``NULL`` for the others)."""
    return [
        name if name in have else f"{kind.partition(' DEFAULT ')[2] or 'NULL'} AS {name}"
        for name, kind in COLUMNS
    ]


def table_sql(columns: tuple[tuple[str, str], ...] = COLUMNS) -> str:
    """The ``CREATE TABLE IF NOT EXISTS audit`` statement for ``columns``."""
    body = ",\n    ".join(f"{name} {kind}" for name, kind in columns)
    return f"CREATE TABLE IF NOT EXISTS audit (\n    {body}\n)"


#: What both SQL stores run when they open the log (before adding any missing column).
SCHEMA = (table_sql(), "CREATE INDEX IF NOT EXISTS audit_ts ON audit (ts)")


def _json_list(items: tuple[str, ...]) -> str:
    try:
        return orjson.dumps(items).decode("utf-8")
    except orjson.JSONEncodeError:  # a lone surrogate: escaped, as ASCII JSON
        return json.dumps(list(items))


_DURATION_COLUMN = FIELDS.index("duration_ms")


def to_row(r: AuditRecord) -> tuple[Any, ...]:
    # Spelled out in FIELDS order (the round-trip tests hold it to that): this runs once per
    # call on the hot path, and asdict() would deep-copy every field.
    shape = r.shape
    if shape is not None:
        return (r.id, r.time.timestamp(), *shape.row_head, r.duration_ms, *shape.row_tail)
    redirects = _json_list(r.redirects) if r.redirects else "[]"
    return (
        r.id, r.time.timestamp(), r.agent, r.tier, r.capability, r.target, r.decision,
        r.reason, r.would_deny, r.final_url, redirects, r.status, r.bytes, r.content_type,
        r.duration_ms, r.provider,
        _json_list(r.render_contacted) if r.render_contacted else "[]",
        _json_list(r.render_refused) if r.render_refused else "[]",
        r.session, r.hits_dropped, r.face,
    )  # fmt: skip


def from_row(row: tuple[Any, ...]) -> AuditRecord:
    """The record of a stored row; raises one of :data:`UNREADABLE` for a row that is not
    one (see :func:`from_rows`)."""
    values = dict(zip(FIELDS, row, strict=True))
    ts = values.pop("ts")
    values["time"] = dt.datetime.fromtimestamp(ts, dt.UTC)
    for name in ("redirects", "render_contacted", "render_refused"):
        values[name] = tuple(json.loads(values[name] or "[]"))
    return AuditRecord(**values)


#: What :func:`from_row` raises for a row that is no record webward can read: a field changed
#: by hand (a time of 1e20, a list that is not JSON), or a value a newer webward writes (a
#: decision this one does not know).
UNREADABLE = (ValueError, TypeError, OverflowError, OSError)


def from_rows(rows: Iterable[Sequence[Any]]) -> tuple[list[AuditRecord], int]:
    """The records of ``rows``, and how many could not be read: a reader shows the others
    and says how many it left out, rather than failing on one damaged row."""
    records: list[AuditRecord] = []
    unreadable = 0
    for row in rows:
        try:
            records.append(from_row(tuple(row)))
        except UNREADABLE:
            unreadable += 1
    return records, unreadable


def records_of(rows: Iterable[Sequence[Any]]) -> list[AuditRecord]:
    """A sink's query answer: the records of ``rows``, with a warning naming how many could
    not be read (``webward audit`` shows it on stderr)."""
    records, unreadable = from_rows(rows)
    if unreadable:
        log.warning("%s", unreadable_note(unreadable))
    return records


def unreadable_note(count: int, then: str = "; the rest are shown") -> str:
    """One sentence for ``count`` records left out as unreadable, ending with ``then``."""
    s = "" if count == 1 else "s"
    return (
        f"{count} audit record{s} could not be read (changed by hand, or written by a newer "
        f"webward) and {'is' if count == 1 else 'are'} left out{then}"
    )


class StoreHealth:
    """Whether a SQL store took its last write or probe, said in ``log`` when that changes:
    once when the store fails, whether it took records before or never has (a replica whose
    store was down or misconfigured from its start logged nothing while it refused every
    call, then that records were written "again"), with the store's error in the line; and
    once when it takes records again after that, so that a gateway's operator sees more than
    callers refused, and not a line per refused call. ``where`` names the store without a
    secret (a path, the variable holding a DSN), and so does the error given to
    :meth:`noted`."""

    _NEW, _WORKS, _FAILS = "new", "works", "fails"

    def __init__(self, log: logging.Logger, where: str) -> None:
        self._log = log
        self._where = where
        self._state = self._NEW
        self._lock = threading.Lock()  # a commit thread and a probe's worker thread alike

    def took(self) -> None:
        """The store took a write or probe: said in the log if it failed before (the common
        case, a store that works, is a check without the lock)."""
        if self._state is not self._WORKS:
            self.noted(None)

    def noted(self, failure: str | None) -> str | None:
        """``failure`` (``None``: the store took a write or probe), logged if it changes
        what the store was known to do; returned as it came."""
        with self._lock:
            was = self._state
            self._state = self._WORKS if failure is None else self._FAILS
        if failure is not None and was != self._FAILS:
            self._log.warning(
                "audit records cannot be written (%s); every call is refused until they can",
                failure,
                extra=STORE_HEALTH,
            )
        elif failure is None and was == self._FAILS:
            self._log.warning(
                "audit records are written again at %s", self._where, extra=STORE_HEALTH
            )
        return failure


class _Batch:
    """Records waiting for one commit; the first writer leads and commits them all."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.leader = False
        self.done = anyio.Event()
        self.failure: str | None = None  # the whole batch failed
        self.row_errors: list[str | None] = []  # or some rows did (None: written)


#: What a flush answers: ``None`` when every row was written; the error text when the batch
#: was not; or, after a batch retried row by row, the error text (or ``None``) of each row.
Flushed = str | list[str | None] | None


class GroupCommit:
    """Group commit for a sink: records that arrive while a commit is in flight join the
    next one, and every writer returns only once the transaction holding its record
    committed. ``flush(rows, since)`` commits one batch and answers :data:`Flushed`: a sink
    whose batch fails on one row's content retries it row by row, so that one caller's input
    never costs another caller's record. ``since`` (``anyio.current_time()``) is when the
    batch's first row, its leader's, was handed over: the sink answers within its bound of
    that, however long the batch waited for the one before."""

    def __init__(
        self,
        flush: Callable[[list[tuple[Any, ...]], float], Awaitable[Flushed]],
        advice: str | None = None,
    ) -> None:
        self._flush = flush
        self._advice = advice  # the next step of its refusals (``audit_unavailable``)
        self._batch = _Batch()
        self._lock: anyio.Lock | None = None  # created lazily: it belongs to the running loop

    async def write(self, row: tuple[Any, ...]) -> None:
        batch = self._batch
        index = len(batch.rows)
        batch.rows.append(row)
        if batch.leader:
            await batch.done.wait()
        else:
            batch.leader = True
            since = anyio.current_time()  # the batch's first row is the leader's
            if self._lock is None:
                self._lock = anyio.Lock()
            # Until the flush answers, the batch counts as failed: a leader hit by an
            # unexpected error must not let its followers take their rows for written.
            batch.failure = "the audit write did not finish"
            # Shielded: a leader whose own caller is cancelled still commits the batch, its
            # followers' rows and its own (a cancelled call is audited too).
            with anyio.CancelScope(shield=True):
                try:
                    async with self._lock:
                        self._batch = _Batch()  # from here on, new records wait for the next
                        try:
                            flushed = await self._flush(batch.rows, since)
                        except Exception as exc:
                            flushed = f"the audit write failed: {exc}"
                        batch.failure = flushed if isinstance(flushed, str) else None
                        batch.row_errors = flushed if isinstance(flushed, list) else []
                finally:
                    batch.done.set()
        error = batch.failure
        if error is None and batch.row_errors:
            error = batch.row_errors[index]
        if error is not None:
            raise audit_unavailable(error, self._advice)


class CommitThread:
    """Group commit on a thread of its own, for a store whose driver blocks (SQLite).

    The event loop hands each row to the thread (a list append under a lock, and a wake-up
    when the thread waits) and waits for a future; the thread commits every row that
    arrived while it was busy in one transaction, then answers the whole batch with one
    call into the loop. So a call pays neither a hop to a worker thread nor an event of its
    own, and a batch costs one wake-up each way. As with :class:`GroupCommit`, a writer
    returns only once the transaction holding its row committed, and an error (the whole
    batch's, or its row's after a retry row by row: :data:`Flushed`) refuses its call.

    Nothing handed over is lost: a row is committed even if its caller is cancelled while
    waiting, and :meth:`aclose` waits until every row handed over has been committed. The
    thread starts with the first write (again after a close). Without a running asyncio loop
    (anyio on trio) each row is flushed on its own in a worker thread.

    ``flush(rows, since)``: ``since`` (``time.monotonic()``) is a time no row of the batch was
    handed over before, so that the sink answers within its bound of each row's handover, the
    wait behind the batch before included (a batch queued behind one that waits out a locked
    store gets what is left, not a bound of its own on top). The thread tells it without a
    clock read per row: the rows of a batch arrived while the batch before was committed, so
    after that batch was taken, or, if the thread had to wait for them, about when it woke.
    """

    def __init__(self, flush: Callable[[list[tuple[Any, ...]], float], Flushed], name: str) -> None:
        self._flush = flush
        self._name = name
        # Writers take the Condition's lock itself: ``with`` on a Condition runs its Python
        # __enter__ and __exit__, two calls a row on the event loop's thread.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        # Rows handed over and not yet taken by the thread: (row, loop, future).
        self._pending: list[tuple[tuple[Any, ...], Any, asyncio.Future[str | None]]] = []
        # The committing thread; a thread that is no longer this one (after a close) commits
        # what is left and ends.
        self._thread: threading.Thread | None = None
        # Whether the thread waits for rows (set and read under the lock): only then does a
        # writer wake it, since Condition.notify costs more than the append it follows.
        self._waiting = False

    async def write(self, row: tuple[Any, ...]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no asyncio loop: one row, flushed in a worker thread
            since = time.monotonic()
            flushed = await anyio.to_thread.run_sync(self._flush_safely, [row], since)
            error = _error_of(flushed, 0)
        else:
            future: asyncio.Future[str | None] = loop.create_future()
            with self._lock:
                self._pending.append((row, loop, future))
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    self._thread.start()
                elif self._waiting:
                    self._cond.notify()  # a busy thread takes this row with its next batch
            # Cancelling the caller cancels only its wait; the thread commits the row anyway.
            error = await future
        if error is not None:
            raise audit_unavailable(error)

    async def aclose(self) -> None:
        """Commit every row handed over, then stop the thread."""
        with self._cond:
            thread, self._thread = self._thread, None
            self._cond.notify_all()
        if thread is not None:
            # Shielded: a close that is cancelled still waits for the last commit.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(thread.join)

    def _run(self) -> None:
        me = threading.current_thread()
        since = time.monotonic()  # the first row was handed over just before the thread began
        while True:
            waited = False
            with self._cond:
                while not self._pending and self._thread is me:
                    waited = self._waiting = True
                    self._cond.wait()
                    self._waiting = False
                taken = time.monotonic()  # under the lock: later rows are the next batch's
                batch, self._pending = self._pending, []
                if not batch:  # closed, and nothing left to commit
                    return
            # Rows that woke the thread came just before it woke; rows that were waiting came
            # while the batch before was committed, so after it was taken.
            flushed = self._flush_safely([row for row, _, _ in batch], taken if waited else since)
            since = taken
            answers: dict[Any, list[tuple[asyncio.Future[str | None], str | None]]] = {}
            for i, (_, loop, future) in enumerate(batch):
                answers.setdefault(loop, []).append((future, _error_of(flushed, i)))
            for loop, futures in answers.items():
                with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                    loop.call_soon_threadsafe(_answer, futures)

    def _flush_safely(self, rows: list[tuple[Any, ...]], since: float) -> Flushed:
        try:
            return self._flush(rows, since)
        except Exception as exc:  # the thread must live on, and every caller hear of it
            return f"the audit write failed: {exc}"


def _error_of(flushed: Flushed, index: int) -> str | None:
    """The error (or ``None``) of row ``index`` in a batch that flushed as ``flushed``."""
    return flushed[index] if isinstance(flushed, list) else flushed


def _answer(futures: list[tuple[asyncio.Future[str | None], str | None]]) -> None:
    for future, error in futures:
        if not future.done():  # a cancelled caller's future is done already
            future.set_result(error)


def select_sql(
    since: dt.datetime | None,
    agent: str | None,
    decision: str | None,
    limit: int,
    *,
    mark: str,
    tiebreak: str,
) -> tuple[str, list[Any]]:
    """The query behind ``AuditSink.query`` for a SQL sink: ``mark`` is the driver's
    placeholder, ``tiebreak`` the column that orders records of the same instant."""
    where: list[str] = []
    params: list[Any] = []
    if since is not None:
        where.append(f"ts >= {mark}")
        params.append(since.timestamp())
    if agent is not None:
        where.append(f"agent = {mark}")
        params.append(agent)
    if decision is not None:
        if decision == "report-would-deny":
            where.append(f"(decision = {mark} OR would_deny IS NOT NULL)")
        else:
            where.append(f"decision = {mark}")
        params.append(decision)
    sql = f"SELECT {', '.join(FIELDS)} FROM audit"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += f" ORDER BY ts DESC, {tiebreak} DESC LIMIT {mark}"
    params.append(max(int(limit), 0))
    return sql, params
