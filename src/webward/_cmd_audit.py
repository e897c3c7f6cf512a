"""``webward audit``: read the audit log (one record per call, allowed or refused)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import sys
import unicodedata
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ._call import render_refusal_reason
from ._errors import InvalidInput, Reason, Refused, WebwardError

if TYPE_CHECKING:  # imported when the command runs, not for `webward --help`
    from ._settings import Settings
    from .audit import AuditRecord
    from .console._queries import AuditFilter, AuditReader, CallCount

# As audit.DECISIONS and audit.FACES (checked by a test); named here so that `webward --help`
# needs no store.
DECISIONS = ("allowed", "report-would-deny", "refused", "failed")
FACES = ("library", "cli", "ask", "mcp-stdio", "mcp-http-local", "mcp-http", "gateway")

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "cell", "name_cell", "parse_since", "run"]

HELP = "show the audit log: who read or searched what, and what webward decided"
DESCRIPTION = """\
Show the audit log, newest first: one record per call, allowed or refused. Decisions are
allowed, report-would-deny (let through by report mode; enforce would refuse), refused and
failed. Each record names the face that made the call: gateway and mcp-http agents are named
by a bearer token; library, cli, ask, mcp-stdio and mcp-http-local ones by whoever runs the
process. --json prints one JSON array of camelCase records. --usage sums the period instead
(all of it, counted in the store): calls per agent and capability by decision, and search
spend at [search.<provider>] cost."""

_DEFAULT_LIMIT = 50
_MAX_LIMIT = 100_000
_RELATIVE_RE = re.compile(r"^\s*(\d{1,9})\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--since",
        metavar="T",
        help="only records at or after T: an ISO 8601 time (UTC if it names no zone) or an age "
        "such as 10m, 2h, 7d",
    )
    p.add_argument("--agent", metavar="NAME", help="only records of this agent")
    p.add_argument(
        "--session",
        metavar="NAME",
        help="only records of calls in this session, named exactly as the records show it "
        "(the gateway's and MCP's are scoped: gateway:AGENT:NAME, mcp:AGENT:ID)",
    )
    p.add_argument(
        "--face",
        metavar="F",
        help=f"only records of calls made through this face: {', '.join(FACES)} (gateway and "
        "mcp-http name their agents by bearer token; the others as whoever runs them says)",
    )
    p.add_argument(
        "--decision",
        metavar="D",
        help=f"only this decision: {', '.join(DECISIONS)} (report-would-deny: every call "
        "enforce mode would have refused, also those report mode let through that then failed)",
    )
    p.add_argument(
        "--limit",
        metavar="N",
        # None when not given: --usage then counts the whole period, and an explicit
        # --limit 50 (the listing's default) still counts.
        default=None,
        help=f"at most N records, the newest (default {_DEFAULT_LIMIT}, at most {_MAX_LIMIT}); "
        "with --usage, count only the newest N (default: the whole period)",
    )
    p.add_argument(
        "--usage",
        action="store_true",
        help="sum usage per agent and capability over the period (--since) instead of listing "
        "records: calls, each decision, and search spend",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON array of records (control and invisible characters \\u-escaped)",
    )


def parse_since(value: str, now: dt.datetime, name: str = "--since") -> dt.datetime:
    """``--since``: an ISO 8601 time (UTC when it names no zone) or an age before ``now``;
    ``name`` is how messages call the value (the console's ``until``)."""
    m = _RELATIVE_RE.match(value)
    if m:
        try:
            return now - dt.timedelta(seconds=int(m.group(1)) * _UNITS[m.group(2)])
        except OverflowError:  # an age older than the calendar: every record is younger
            return dt.datetime.min.replace(tzinfo=dt.UTC)
    try:
        when = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(
            # The units are named: "1y" or "1.5h" was told three examples and left to guess.
            f"{name} {value!r} is neither an ISO 8601 time nor an age such as 10m, 2h or 7d "
            "(a whole number of s, m, h, d or w)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _parse_limit(value: str) -> int:
    v = str(value).strip()
    # ASCII digits only ("²" is a digit to isdigit(), not to int()), and few enough of them
    # for int() to take.
    if not (v.isascii() and v.isdigit() and len(v) <= 9) or not 1 <= int(v) <= _MAX_LIMIT:
        raise InvalidInput(f"--limit must be a whole number from 1 to {_MAX_LIMIT}, not {value!r}")
    return int(v)


def run(
    args: argparse.Namespace,
    settings: Settings,
    *,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
) -> int:
    """Print the matching records; 0 when done, 2 on bad input, 3 if the log is unreadable.
    Errors are raised for the command line to report (with --json, as the error model)."""
    since = parse_since(args.since, now()) if args.since is not None else None
    if args.decision is not None and args.decision not in DECISIONS:
        raise InvalidInput(
            f"--decision must be one of {', '.join(DECISIONS)}, not {args.decision!r}"
        )
    from ._settings import AGENT_NAME_RULE, is_agent_name

    if args.agent is not None and (not args.agent.strip() or not is_agent_name(args.agent)):
        raise InvalidInput(f"--{AGENT_NAME_RULE}")
    from .audit import MAX_TARGET_CHARS

    # A session name is 512 characters at most (_provenance); a record keeps up to
    # MAX_TARGET_CHARS of a bad one.
    session = getattr(args, "session", None)
    if session is not None and not 0 < len(session) <= MAX_TARGET_CHARS:
        raise InvalidInput(f"--session must be a name of 1 to {MAX_TARGET_CHARS} characters")
    face = getattr(args, "face", None)
    if face is not None and face not in FACES:
        raise InvalidInput(f"--face must be one of {', '.join(FACES)}, not {face!r}")
    from .console._queries import AuditFilter

    where = AuditFilter(
        agent=args.agent, session=session, decision=args.decision, since=since, face=face
    )
    usage = getattr(args, "usage", False)
    limit = _DEFAULT_LIMIT if args.limit is None else _parse_limit(args.limit)
    newest = None if args.limit is None else limit  # a usage summary: the whole period
    import anyio

    from ._settings import NoHome

    counts: list[CallCount] = []
    records: list[AuditRecord] = []
    try:
        if usage:
            counts, more = anyio.run(_count, settings, where, newest)
        else:
            records, unreadable, more = anyio.run(_list, settings, where, limit)
    except NoHome:
        raise  # no state dir to look in: a setting to make, as for a config (exit 2)
    except WebwardError as exc:
        raise Refused(exc.message, reason=exc.reason) from None  # the log unreadable: exit 3
    if not (counts if usage else records):
        _check_writable(settings)  # no log at all: an empty one, or one no call could write
    from .cli import print_json

    # Notes go to stderr, so that --json's output stays one array (or one summary).
    if usage:
        rows, unreadable = usage_summary(counts, settings.search.costs)
        if args.json:
            print_json(rows)
        else:
            print(render_usage(rows))
        counted = sum(row["calls"] for row in rows)
        cut = f"the {counted} the summary counts; leave out --limit to count them all"
    else:
        if args.json:
            print_json([r.to_wire() for r in records])
        else:
            print(render_table(records, width=_terminal_width()))
        raise_it = "raise --limit or " if limit < _MAX_LIMIT else ""
        cut = (
            f"the {len(records)} shown; {raise_it}narrow with --since, --agent, --face or "
            "--decision"
        )
    if unreadable:  # when --limit cut the answer, it counted them all the same
        from .audit import unreadable_note

        also = f", though --limit counts {'it' if unreadable == 1 else 'them'}" if more else ""
        print(f"webward: {unreadable_note(unreadable, then=also)}", file=sys.stderr)
    if more:
        print(f"webward: more records match than {cut}", file=sys.stderr)
    return 0


def _check_writable(settings: Settings) -> None:
    """Raise the refusal every call gets when the SQLite audit log is not there and no call
    could create it: a state dir that cannot be made (one under /proc), or one nothing can be
    created in, which no permission check shows to root. An empty log (a fresh state dir that
    can be made) is no error. Tried by making a directory and removing it at once in the
    nearest place that exists: reading creates nothing."""
    if settings.audit.postgres_dsn_env:
        return
    directory = settings.state.path()
    log = directory / "audit.db"
    place = next((p for p in (directory, *directory.parents) if os.path.lexists(p)), None)
    if place is None or os.path.lexists(log) or not place.is_dir():
        return  # a log to read (the reader said what it found), or a file (it said so)
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=".webward-probe-", dir=place))
    except OSError as exc:
        from .audit import REASON_AUDIT_UNAVAILABLE

        why = f"nothing can be created in {place}: {exc.strerror or exc}"
        raise Refused(
            f"refused: the audit log at {log} cannot be written ({why}), so every call is "
            "refused; fix that, or point [state] dir (WEBWARD_STATE_DIR) at a directory "
            "webward can write",
            reason=REASON_AUDIT_UNAVAILABLE,
        ) from None


def _terminal_width() -> int | None:
    """The terminal's width when printing to one (or when $COLUMNS says), else no limit. A
    $COLUMNS that is no width (``abc``, 0, negative) is not set: it cut targets to a few
    characters in a pipe, as a width of 80 shared by every column. ASCII digits only: "²"
    is a digit to str.isdigit(), not to int() (an internal error)."""
    columns = os.environ.get("COLUMNS", "").strip()
    if not sys.stdout.isatty() and not (
        columns.isascii() and columns.isdigit() and int(columns) > 0
    ):
        return None
    return shutil.get_terminal_size().columns


def usage_summary(
    counts: list[CallCount], costs: Mapping[str, float]
) -> tuple[list[dict[str, Any]], int]:
    """Per agent and capability: calls, the count of each decision, and for search the spend
    (each call that reached its provider, one that answered with a status, costs
    ``[search.<provider>] cost``); and how many calls were left out, their decision being
    none webward knows (a row changed by hand, or written by a newer webward).

    ``report-would-deny`` counts every call enforce mode would have refused, the calls
    ``--decision report-would-deny`` lists: those decided so, and those report mode let
    through that then failed (or were refused for another reason), which their own decision
    counts too. So during a rollout the summary does not understate what enforce mode would
    refuse, and the decisions may add up to more than the calls."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    unreadable = 0
    for c in counts:
        if c.decision not in DECISIONS:
            unreadable += c.calls
            continue
        row = rows.setdefault(
            (c.agent, c.capability),
            {"agent": c.agent, "capability": c.capability, "calls": 0, "spend": 0.0}
            | {d: 0 for d in DECISIONS},
        )
        row["calls"] += c.calls
        row[c.decision] += c.calls
        if c.decision != "report-would-deny":  # let through, then failed or refused
            row["report-would-deny"] += c.would_deny
        if c.provider is not None:
            row["spend"] += costs.get(c.provider, 0.0) * c.answered
    return [rows[k] for k in sorted(rows)], unreadable


def render_usage(rows: list[dict[str, Any]]) -> str:
    """The usage summary as an aligned table."""
    if not rows:
        return "no audit records match"
    columns = ("AGENT", "CAPABILITY", "CALLS", *(d.upper() for d in DECISIONS), "SPEND")
    keys = ("agent", "capability", "calls", *DECISIONS)
    table = [columns] + [
        (name_cell(row["agent"]), *(cell(str(row[k])) for k in keys[1:]), f"{row['spend']:g}")
        for row in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table
    )


def _open_reader(settings: Settings) -> AuditReader:
    """The console's reader of the audit log the settings name (SQLite or PostgreSQL): its
    queries run in the store, so a summary of millions of records holds only its groups.
    The console's pages (the serve extra) are not loaded for it."""
    from .console import open_audit_reader

    return open_audit_reader(settings)


async def _list(
    settings: Settings, where: AuditFilter, limit: int
) -> tuple[list[AuditRecord], int, bool]:
    """The newest ``limit`` records, how many rows among them could not be read, and whether
    more match. Not the page itself: asyncio takes the finished task's repr, which holds
    ``reprlib.repr`` of its result, and reprlib shortens a tuple or a list but reprs a
    dataclass whole (a second a time for 100,000 records)."""
    reader = _open_reader(settings)
    try:
        page = await reader.newest(where, limit)
    finally:
        await reader.aclose()
    return page.records, page.unreadable, page.next_cursor is not None


async def _count(
    settings: Settings, where: AuditFilter, limit: int | None
) -> tuple[list[CallCount], bool]:
    """The usage counts (of the newest ``limit`` records, if given), and whether more
    records match than the limit took."""
    reader = _open_reader(settings)
    try:
        counts = await reader.call_counts(where, newest=limit)
        return counts, limit is not None and await reader.more_than(where, limit)
    finally:
        await reader.aclose()


_COLUMNS = ("TIME", "AGENT", "TIER", "CAPABILITY", "DECISION", "REASON", "STATUS", "TARGET")


def render_table(records: list[AuditRecord], width: int | None = None) -> str:
    """An aligned table for people; the target (the widest column) comes last, cut with an
    ellipsis so that each row fits in ``width`` columns (when given). Columns only some logs
    need are shown when a record shown has a value ("-" for the others): WOULD-DENY after
    REASON (the refusal enforce mode would have given, also for a call report mode let
    through that then failed), RENDER-REFUSED (how many hosts the gate refused a render of
    the call's page), FACE after STATUS (how the agent was named) and SESSION."""
    if not records:
        return "no audit records match"
    from ._capabilities import SEARCH
    from ._urls import ascii_host

    would_deny = any(r.would_deny is not None for r in records)
    faces = any(r.face is not None for r in records)
    sessions = any(r.session is not None for r in records)
    # A page whose render tried an internal address still reads as "allowed": without this
    # column the table hid the attempt, named only in the record's renderRefused.
    render_refused = any(r.render_refused for r in records)
    columns = (
        *_COLUMNS[:6],
        *(("WOULD-DENY",) if would_deny else ()),
        *(("RENDER-REFUSED",) if render_refused else ()),
        _COLUMNS[6],
        *(("FACE",) if faces else ()),
        *(("SESSION",) if sessions else ()),
        _COLUMNS[-1],
    )

    def optional(shown: bool, value: str | None) -> tuple[str, ...]:
        return ("-" if value is None else name_cell(value),) if shown else ()

    rows = [
        (
            r.time.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            name_cell(r.agent),
            cell(r.tier or "-"),
            cell(r.capability),
            cell(r.decision),
            cell(r.reason),
            *optional(would_deny, r.would_deny),
            *((refused_hosts(r.render_refused),) if render_refused else ()),
            "-" if r.status is None else str(r.status),
            *optional(faces, r.face),
            *optional(sessions, r.session),
            # A URL's host in the ASCII form the read named: google.com spelled with a
            # Cyrillic "o" (U+043E) read as google.com.
            cell(r.target if r.capability == SEARCH else ascii_host(r.target)),
        )
        for r in records
    ]
    cells = [columns, *rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns) - 1)]
    lines = []
    for row in cells:
        head = "  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True))
        target = row[-1]
        if width is not None:
            room = max(width - len(head) - 2, 10)  # a narrow terminal still shows a start
            if len(target) > room:
                target = target[: room - 1] + "…"
        lines.append(f"{head}  {target}".rstrip())
    return "\n".join(lines)


def refused_hosts(refused: tuple[str, ...]) -> str:
    """How many hosts a render's gate refused ("-" for none), with how many of them were
    internal targets, from the record's list and its last entry ("... and 12 more hosts")."""
    if not refused:
        return "-"
    more = _MORE_HOSTS.fullmatch(refused[-1])
    listed = refused[:-1] if more else refused
    count = f"{'over ' if more and more[1] else ''}{len(listed) + (int(more[2]) if more else 0)}"
    internal = sum(render_refusal_reason(entry) in _INTERNAL for entry in listed)
    return f"{count} ({internal} internal)" if internal else count


# The last entry of a full host list (_gate._HostList), and the reasons of an internal target.
_MORE_HOSTS = re.compile(r"\.\.\. and (over )?(\d+) more hosts?")
_INTERNAL = (Reason.INTERNAL_ADDRESS, Reason.INTERNAL_NAME)


def name_cell(value: str) -> str:
    """An agent's or a session's name as a table cell: as it is when it is plain (printable,
    no white space at either end), else quoted with escapes, as Python's ``repr`` writes it
    (``'bob '``, ``'re\\xa0search'``), so that a name cannot pass for another (``bob``) in
    the table. A name that begins with a quote is quoted too, so that no name passes for
    another's quoted form. Filters match the name exactly as given, not as shown."""
    if value.isprintable() and value == value.strip() and value[:1] not in ("'", '"'):
        return cell(value)
    return cell(repr(value))


def cell(value: str) -> str:
    """``value`` as one table cell shows it (here and in the console)."""
    # Targets are caller input: control, format and line-breaking characters are shown
    # escaped so that one record stays one line and cannot rewrite the terminal.
    out = []
    for c in value:
        if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(c.encode("unicode_escape").decode("ascii"))
        else:
            out.append(c)
    return "".join(out)
