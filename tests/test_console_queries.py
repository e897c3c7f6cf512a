"""The console's audit reads on real SQLite and PostgreSQL: keyset paging, filters, bounded
scans, aggregates, and the indexes they rely on."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from stores import database

from webward import Settings
from webward._errors import InvalidInput
from webward.audit import AuditRecord, open_audit_sink
from webward.console import AuditFilter, AuditReader, _queries, open_audit_reader

pytestmark = pytest.mark.anyio

NOW = dt.datetime(2026, 5, 4, 12, 0, tzinfo=dt.UTC)


@pytest.fixture(params=["sqlite", "postgres"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Settings]:
    """Settings naming an empty audit log of each kind."""
    if request.param == "sqlite":
        yield Settings().replace({"state": {"dir": str(tmp_path)}})
    else:
        monkeypatch.setenv("WEBWARD_TEST_AUDIT_DSN", request.getfixturevalue("postgres_dsn"))
        yield Settings().replace({"audit": {"postgres_dsn_env": "WEBWARD_TEST_AUDIT_DSN"}})


async def write(settings: Settings, records: list[AuditRecord]) -> None:
    sink = open_audit_sink(settings)
    try:
        for r in records:
            await sink.write(r)
    finally:
        await sink.aclose()


def rec(target: str, *, seconds: float = 0, **kw: object) -> AuditRecord:
    kw.setdefault("decision", "allowed")
    kw.setdefault("reason", "allowed")
    return AuditRecord.create(
        agent=str(kw.pop("agent", "alice")),
        capability=str(kw.pop("capability", "web:page.fetch@1")),
        target=target,
        time=NOW - dt.timedelta(seconds=seconds),
        **kw,  # type: ignore[arg-type]
    )


async def all_pages(reader: AuditReader, where: AuditFilter, size: int) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = await reader.page(where, cursor, size)
        pages.append([r.target for r in page.records])
        cursor = page.next_cursor
        if cursor is None:
            return pages


async def test_keyset_pages_cover_records_of_one_instant_exactly_once(store: Settings) -> None:
    """120 records stamped the same instant page out 50, 50, 20: none repeated, none lost."""
    await write(store, [rec(f"https://same.example/{i}") for i in range(120)])
    reader = open_audit_reader(store)
    try:
        pages = await all_pages(reader, AuditFilter(), 50)
    finally:
        await reader.aclose()
    assert [len(p) for p in pages] == [50, 50, 20]
    flat = [t for p in pages for t in p]
    assert sorted(flat) == sorted(f"https://same.example/{i}" for i in range(120))
    assert flat[0] == "https://same.example/119"  # newest (last written) first


async def test_filters_match_exactly_and_text_is_literal(store: Settings) -> None:
    """Host matches the host (not a longer one, not the path); % and _ in text are literal."""
    await write(
        store,
        [
            rec("https://host.example/a", seconds=1, agent="bob"),
            rec("https://HOST.example:8443/b?x=1", seconds=2),
            rec("https://evilhost.example/c", seconds=3),
            rec("https://host.example.evil.test/d", seconds=4),
            rec("https://other.example/host.example/e", seconds=5),
            rec("https://x.example/?u=https://host.example/", seconds=5),
            rec("https://p.example/100%_off", seconds=6, decision="refused", reason="host_denied"),
            rec("https://p.example/100xyoff", seconds=7, capability="web:search.query@1"),
            rec("https://old.example/", seconds=3600, decision="failed", reason="timeout"),
            rec("http://[::1]:8080/v6", seconds=3601, decision="failed", reason="timeout"),
        ],
    )
    reader = open_audit_reader(store)

    async def targets(**kw: object) -> list[str]:
        page = await reader.page(AuditFilter(**kw), None, 50)  # type: ignore[arg-type]
        return [r.target for r in page.records]

    try:
        assert await targets(host="host.example") == [
            "https://host.example/a",
            "https://HOST.example:8443/b?x=1",
        ]
        assert await targets(text="100%_off") == ["https://p.example/100%_off"]
        # The hosts view names an IPv6 host as a URL's host name is, unbracketed.
        for shown in ("::1", "[::1]"):
            assert await targets(host=shown) == ["http://[::1]:8080/v6"]
        assert await targets(agent="bob") == ["https://host.example/a"]
        assert await targets(decision="refused") == ["https://p.example/100%_off"]
        assert await targets(reason="timeout") == ["https://old.example/", "http://[::1]:8080/v6"]
        assert await targets(capability="web:search.query@1") == ["https://p.example/100xyoff"]
        assert await targets(since=NOW - dt.timedelta(seconds=2.5)) == [
            "https://host.example/a",
            "https://HOST.example:8443/b?x=1",
        ]
        assert await targets(until=NOW - dt.timedelta(seconds=60)) == [
            "https://old.example/",
            "http://[::1]:8080/v6",
        ]
        with pytest.raises(InvalidInput, match="cursor"):
            await reader.page(AuditFilter(), "12.5", 10)
    finally:
        await reader.aclose()


async def test_the_text_filter_never_matches_a_value_shown_redacted(store: Settings) -> None:
    """The console shows a URL's secret query values REDACTED, but its text filter matched the
    target as it was read: an admin could confirm a guessed token character by character
    (``token=SECRET-V`` found the row, ``token=SECRET-X`` did not). Text now matches only
    where it is also in the target as shown; the rest of such a URL, and a search's query
    (never redacted), match as before."""
    secret = "https://api.example/data?token=SECRET-VALUE-42&page=2"
    await write(
        store,
        [
            rec(secret, seconds=1),
            rec("https://other.example/SECRET-VALUE-42", seconds=2),
            rec("token=SECRET-VALUE-42", seconds=3, capability="web:search.query@1"),
        ],
    )
    reader = open_audit_reader(store)

    async def targets(text: str) -> list[str]:
        page = await reader.page(AuditFilter(text=text), None, 50)
        return [r.target for r in page.records]

    try:
        for guess in ("SECRET-VALUE-4", "token=S", "=SECRET-VALUE-42&page"):
            assert secret not in await targets(guess), guess
        assert await targets("SECRET-VALUE-42") == [
            "https://other.example/SECRET-VALUE-42",
            "token=SECRET-VALUE-42",
        ]
        for shown in ("api.example/data?token=", "&page=2"):
            assert await targets(shown) == [secret], shown
    finally:
        await reader.aclose()


async def test_a_read_is_found_by_every_host_of_its_chain_and_counted_where_it_ended(
    store: Settings,
) -> None:
    """An open redirect on an allowed host must not hide where content came from: the host
    filter finds a read by any host of its redirect chain (its final URL's included), and
    the top hosts count it under its final URL's host, or, refused or failed part-way, under
    the last hop it reached. A host quoted inside a URL of the chain is no match."""
    laundered = "http://open.example/redir?to=http://hidden.example/page"
    hop_refused = "https://open.example/r2"
    quoted = 'https://x.example/?u="http://hidden.example/"'
    await write(
        store,
        [
            rec(
                laundered,
                seconds=1,
                final_url="http://hidden.example/page",
                redirects=[laundered, "http://hidden.example/page"],
            ),
            rec(
                "https://hidden.example/direct",
                seconds=2,
                final_url="https://hidden.example/direct",
                redirects=["https://hidden.example/direct"],
            ),
            rec(
                hop_refused,
                seconds=3,
                decision="refused",
                reason="host_denied",
                redirects=[hop_refused, "http://denied.example:8080/x"],
            ),
            rec(
                "https://x.example/q",
                seconds=4,
                final_url=quoted,
                redirects=["https://x.example/q", quoted],
            ),
            rec("hidden.example", seconds=5, capability="web:search.query@1"),
        ],
    )
    reader = open_audit_reader(store)

    async def targets(host: str) -> list[str]:
        return [r.target for r in (await reader.page(AuditFilter(host=host), None, 50)).records]

    try:
        assert await targets("hidden.example") == [laundered, "https://hidden.example/direct"]
        assert await targets("HIDDEN.example") == [laundered, "https://hidden.example/direct"]
        assert await targets("open.example") == [laundered, hop_refused]
        assert await targets("denied.example") == [hop_refused]
        assert await targets("x.example") == ["https://x.example/q"]
        hosts = await reader.top_hosts(NOW.timestamp() - 60, 10)
    finally:
        await reader.aclose()
    assert sorted((h.host, h.calls, h.refused) for h in hosts) == [
        ("denied.example", 1, 1),
        ("hidden.example", 2, 0),
        ("x.example", 1, 0),
    ]


async def test_a_host_in_letters_of_another_script_is_counted_and_found_by_its_ascii_form(
    store: Settings,
) -> None:
    """A read refused before it was sent keeps the host the agent wrote ("google" with two
    Cyrillic "o"): the top hosts count it under its ASCII form, xn--ggle-55da.example, not
    under a name that reads as google.example, and the host filter finds it, and a read that
    reached that host, by either spelling."""
    homograph = "https://g\u043e\u043egle.example/login"
    await write(
        store,
        [
            rec(homograph, seconds=1, decision="refused", reason="host_denied"),
            rec(
                "https://xn--ggle-55da.example/x",
                seconds=2,
                final_url="https://xn--ggle-55da.example/x",
                redirects=["https://xn--ggle-55da.example/x"],
            ),
            rec("https://google.example/", seconds=3, final_url="https://google.example/"),
        ],
    )
    reader = open_audit_reader(store)

    async def targets(host: str) -> list[str]:
        return [r.target for r in (await reader.page(AuditFilter(host=host), None, 50)).records]

    try:
        both = [homograph, "https://xn--ggle-55da.example/x"]
        assert await targets("xn--ggle-55da.example") == both
        assert await targets("g\u043e\u043egle.example") == both
        assert await targets("google.example") == ["https://google.example/"]
        hosts = await reader.top_hosts(NOW.timestamp() - 60, 10)
    finally:
        await reader.aclose()
    assert sorted((h.host, h.calls, h.refused) for h in hosts) == [
        ("google.example", 1, 0),
        ("xn--ggle-55da.example", 2, 1),
    ]


async def test_the_session_filter_is_exact(store: Settings) -> None:
    """A session's records, matched exactly (no part of a name, no case folding), on the
    console's pages and in `webward audit`'s reads alike."""
    await write(
        store,
        [
            rec("https://s.example/1", seconds=1, session="gateway:dave:case-A"),
            rec("https://s.example/2", seconds=2, session="gateway:dave:case-a"),
            rec("https://s.example/3", seconds=3, session="gateway:dave:case-A"),
            rec("https://s.example/4", seconds=4),
        ],
    )
    reader = open_audit_reader(store)
    try:
        page = await reader.page(AuditFilter(session="gateway:dave:case-A"), None, 50)
        newest = await reader.newest(AuditFilter(session="gateway:dave:case-A"), 50)
        part = await reader.page(AuditFilter(session="case-A"), None, 50)
        counts = await reader.call_counts(AuditFilter(session="gateway:dave:case-a"))
    finally:
        await reader.aclose()
    both = ["https://s.example/1", "https://s.example/3"]
    assert [r.target for r in page.records] == both == [r.target for r in newest.records]
    assert part.records == [] and [c.calls for c in counts] == [1]


async def test_a_rare_match_is_searched_in_bounded_steps(
    store: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text filter looks at SCAN_ROWS records a page; the cursor continues further back."""
    monkeypatch.setattr(_queries, "SCAN_ROWS", 10)
    records = [rec(f"https://n.example/{i}", seconds=i) for i in range(35)]
    records[25] = rec("https://n.example/needle", seconds=25)
    await write(store, records)
    reader = open_audit_reader(store)
    try:
        first = await reader.page(AuditFilter(text="needle"), None, 50)
        assert first.records == [] and first.searched == 10 and first.next_cursor
        second = await reader.page(AuditFilter(text="needle"), first.next_cursor, 50)
        assert second.records == [] and second.searched == 10
        third = await reader.page(AuditFilter(text="needle"), second.next_cursor, 50)
        assert [r.target for r in third.records] == ["https://n.example/needle"]
        assert third.searched == 10
        last = await reader.page(AuditFilter(text="needle"), third.next_cursor, 50)
        assert last.records == [] and last.next_cursor is None
    finally:
        await reader.aclose()


async def test_usage_counts_buckets_reasons_and_latency(store: Settings) -> None:
    """Calls per bucket per agent and decision, refusals by reason, nearest-rank p50/p95."""
    records = [rec(f"https://u.example/{i}", seconds=30 + i, duration_ms=i + 1) for i in range(20)]
    records += [
        rec(
            "https://u.example/r1",
            seconds=90,
            agent="bob",
            decision="refused",
            reason="host_denied",
        ),
        rec(
            "https://u.example/r2",
            seconds=95,
            agent="bob",
            decision="refused",
            reason="host_denied",
        ),
        rec("https://u.example/r3", seconds=100, agent="bob", decision="refused", reason="robots"),
        rec("https://u.example/old", seconds=7200),  # outside the window
    ]
    await write(store, records)
    reader = open_audit_reader(store)
    try:
        start = NOW.timestamp() - 180
        usage = await reader.usage(start, 60, 3)  # [-180, -120), [-120, -60), [-60, 0)
        hosts = await reader.top_hosts(start, 5)
    finally:
        await reader.aclose()
    assert usage.total == 23
    assert usage.by_agent == {"alice": [0, 0, 20], "bob": [0, 3, 0]}
    assert usage.by_decision == {"allowed": [0, 0, 20], "refused": [0, 3, 0]}
    assert usage.refusals == [("host_denied", 2), ("robots", 1)]
    assert usage.p50_ms == [None, None, 10.0] and usage.p95_ms == [None, None, 19.0]
    assert [(h.host, h.calls, h.refused) for h in hosts] == [("u.example", 23, 3)]


async def test_sqlite_indexes_serve_the_filters(tmp_path: Path) -> None:
    """The console creates its indexes once; a filtered page is read from one, in order."""
    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    await write(settings, [rec("https://i.example/", agent=f"a{i % 3}") for i in range(30)])
    reader = open_audit_reader(settings)
    try:
        assert len((await reader.page(AuditFilter(agent="a1"), None, 5)).records) == 5
    finally:
        await reader.aclose()
    conn = sqlite3.connect(tmp_path / "audit.db")
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        plan = " ".join(
            str(r[-1])
            for r in conn.execute(
                "EXPLAIN QUERY PLAN SELECT rowid FROM audit WHERE agent = ? "
                "ORDER BY ts DESC, rowid DESC LIMIT 5",
                ("a1",),
            )
        )
    finally:
        conn.close()
    assert {"audit_agent_ts", "audit_decision_ts", "audit_reason_ts"} <= names
    assert "audit_agent_ts" in plan and "TEMP B-TREE" not in plan


async def test_a_large_log_is_not_indexed_by_a_page_view(
    store: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past BUILD_AT_ONCE_ROWS a view builds no index (writers must not wait on it) and its
    filters are bounded scans; prepare(build_large=True), as `webward console` calls it, builds."""
    monkeypatch.setattr(_queries, "BUILD_AT_ONCE_ROWS", 5)
    monkeypatch.setattr(_queries, "SCAN_ROWS", 4)
    await write(
        store, [rec(f"https://l.example/{i}", seconds=i, agent=f"a{i % 4}") for i in range(12)]
    )
    reader = open_audit_reader(store)
    try:
        assert await reader.prepare() is False
        first = await reader.page(AuditFilter(agent="a1"), None, 50)
        assert [r.target for r in first.records] == ["https://l.example/1"]
        assert first.searched == 4 and first.next_cursor is not None
        assert await reader.prepare(build_large=True) is True
        assert await reader.prepare() is True
        built = await reader.page(AuditFilter(agent="a1"), None, 50)
        assert [r.target for r in built.records] == [f"https://l.example/{i}" for i in (1, 5, 9)]
        assert built.searched == 0 and built.next_cursor is None
    finally:
        await reader.aclose()


async def test_a_damaged_row_is_left_out_and_counted_never_a_failure(tmp_path: Path) -> None:
    """Rows changed by hand (or written by a newer webward): a decision this one does not
    know, redirects that are not JSON, a time of 1e20 or of text, a duration of text. The
    page shows the others and says how many it left out, the record view says the one
    cannot be read, usage counts what it can, and the sink's own query (``webward audit``)
    leaves them out too."""
    from webward.audit import SQLiteAuditSink

    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    await write(settings, [rec(f"https://example.org/{i}", seconds=i) for i in range(6)])
    damage = [
        "decision = 'cancelled-by-a-newer-webward'",
        "redirects = 'not json'",
        "ts = 1e20",
        "ts = 'yesterday'",
        "duration_ms = 'fast'",
    ]
    with database(tmp_path / "audit.db") as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM audit ORDER BY ts DESC")]
        for record_id, change in zip(ids, damage, strict=False):
            conn.execute(f"UPDATE audit SET {change} WHERE id = ?", (record_id,))
    reader = open_audit_reader(settings)
    try:
        page = await reader.page(AuditFilter(), None, 50)
        assert (len(page.records), page.unreadable) == (2, 4)
        with pytest.raises(InvalidInput, match="could not be read"):
            await reader.record(ids[0])
        usage = await reader.usage(NOW.timestamp() - 3600, 60, 61)
        assert usage.total >= 2
    finally:
        await reader.aclose()
    sink = SQLiteAuditSink(tmp_path)
    try:
        assert len(await sink.query()) == 2
    finally:
        await sink.aclose()


async def test_an_agent_changed_into_a_blob_is_counted_by_its_text(tmp_path: Path) -> None:
    """A row whose agent was changed by hand into a BLOB: the usage view sorted its agents
    and failed, a bare 500, bytes against text. Its agent is named as text now."""
    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    await write(settings, [rec("https://example.org/a", seconds=1, agent=name) for name in "ab"])
    with database(tmp_path / "audit.db") as conn:
        conn.execute("UPDATE audit SET agent = CAST(agent AS BLOB) WHERE agent = 'b'")
    reader = open_audit_reader(settings)
    try:
        usage = await reader.usage(NOW.timestamp() - 3600, 60, 61)
    finally:
        await reader.aclose()
    assert sorted(usage.by_agent) == ["a", "b'b'"]


async def test_the_command_lines_reads_run_in_the_store(store: Settings) -> None:
    """`webward audit`'s reads: the newest N records of a time range, an agent or a decision
    (report-would-deny also finds what report mode let fail), and whether more match; usage
    counted by the store per agent, capability, decision and provider, with the calls that
    reached their provider (a status) and those enforce mode would have refused, of the whole
    range or of its newest N."""
    from webward.console._queries import CallCount

    search = "web:search.query@1"
    await write(
        store,
        [
            rec("https://a.example/1", seconds=1, status=200),
            rec("https://a.example/2", seconds=2, agent="bob", decision="refused", reason="robots"),
            rec("owls", seconds=3, capability=search, provider="brave", status=200),
            rec("owls", seconds=4, capability=search, provider="brave", status=200),
            rec(
                "owls",
                seconds=5,
                capability=search,
                provider="brave",
                decision="failed",
                reason="timeout",
            ),
            rec(
                "https://a.example/6",
                seconds=6,
                decision="failed",
                reason="http_500",
                status=500,
                would_deny="host_not_allowed",
            ),
            rec("https://a.example/old", seconds=7200, status=200),
        ],
    )
    reader = open_audit_reader(store)
    recent = AuditFilter(since=NOW - dt.timedelta(seconds=60))
    try:
        newest = await reader.newest(AuditFilter(), 2)
        assert [r.target for r in newest.records] == ["https://a.example/1", "https://a.example/2"]
        assert newest.next_cursor is not None and newest.unreadable == 0
        whole = await reader.newest(recent, 6)
        assert len(whole.records) == 6 and whole.next_cursor is None
        bob = await reader.newest(AuditFilter(agent="bob"), 5)
        assert [r.target for r in bob.records] == ["https://a.example/2"]
        report = await reader.newest(AuditFilter(decision="report-would-deny"), 5)
        assert [r.target for r in report.records] == ["https://a.example/6"]
        assert set(await reader.call_counts(recent)) == {
            CallCount("alice", "web:page.fetch@1", "allowed", None, 1, 1),
            CallCount("bob", "web:page.fetch@1", "refused", None, 1, 0),
            CallCount("alice", search, "allowed", "brave", 2, 2),
            CallCount("alice", search, "failed", "brave", 1, 0),
            # report mode let it through and it failed: one enforce mode would have refused
            CallCount("alice", "web:page.fetch@1", "failed", None, 1, 1, would_deny=1),
        }
        assert sum(c.calls for c in await reader.call_counts(AuditFilter())) == 7
        assert set(await reader.call_counts(AuditFilter(), newest=3)) == {
            CallCount("alice", "web:page.fetch@1", "allowed", None, 1, 1),
            CallCount("bob", "web:page.fetch@1", "refused", None, 1, 0),
            CallCount("alice", search, "allowed", "brave", 1, 1),
        }
        assert await reader.call_counts(AuditFilter(agent="carol")) == []
        assert await reader.more_than(recent, 5) is True
        assert await reader.more_than(recent, 6) is False
    finally:
        await reader.aclose()


@pytest.mark.parametrize(
    ("target", "host"),
    [
        # Refused before any hop: counted under the host the guard read, not urllib's.
        ("http://169.254.169.254\\@docs.python.org/", "169.254.169.254"),
        ("http://127.0.0.1:80\\@github.com/x", "127.0.0.1"),
        ("http://%31%32%37.0.0.1/", "127.0.0.1"),
        ("http://0x7f.1/", "127.0.0.1"),
        ("http://[::ffff:7f00:2]/", "::ffff:127.0.0.2"),
        ("http://LOCALHOST./", "localhost"),
        ("http://example\u3002org\uff0e/", "example.org"),
        ("https://docs.python.org/3/", "docs.python.org"),
        # No host the guard reads: urllib's reading, as before, or none.
        ("http://exa mple.org/", "exa mple.org"),
        ("owls", None),
    ],
)
def test_a_read_refused_at_its_first_hop_counts_under_the_host_the_guard_read(
    target: str, host: str | None
) -> None:
    """The top hosts count a read that sent nothing (refused at its URL) under its target's
    host: read by urllib, 'http://169.254.169.254\\\\@docs.python.org/', an attempt on the
    metadata address that the guard refused for its backslash, was a refused read of
    docs.python.org, and '%31%32%37.0.0.1' a host of its own. Now the guard's reading
    (WHATWG's: a backslash is a slash), which a read that went out is counted under too."""
    assert _queries.landed_host(target, None, "[]") == host
