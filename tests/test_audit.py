"""Audit: one record per call, in SQLite shared by processes; no store, no call; `webward audit`."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from stores import database, older_audit_table

import webward
from webward import _cmd_audit
from webward._errors import InvalidInput, Refused, WebwardError
from webward._settings import Settings
from webward.audit import (
    DECISIONS,
    MAX_TARGET_CHARS,
    REASON_AUDIT_UNAVAILABLE,
    AuditRecord,
    MemoryAuditSink,
    SQLiteAuditSink,
    open_audit_sink,
)
from webward.cli import report_error

T0 = dt.datetime(2025, 1, 15, 10, 0, 0, tzinfo=dt.UTC)


def record(decision: str = "allowed", minutes: int = 0, **fields: object) -> AuditRecord:
    base: dict[str, object] = {
        "agent": "cli",
        "tier": "connected",
        "capability": "web:page.fetch@1",
        "target": "https://example.org/a",
        "reason": "allowed",
        "time": T0 + dt.timedelta(minutes=minutes),
    }
    base.update(fields)
    return AuditRecord.create(decision=decision, **base)  # type: ignore[arg-type]


def every_decision() -> list[AuditRecord]:
    return [
        record(
            "allowed", 0, final_url="https://example.org/b", status=200, bytes=5120,
            redirects=["https://example.org/a", "https://example.org/b"], content_type="text/html",
            duration_ms=120,
        ),
        record("report-would-deny", 1, reason="host_not_allowed", would_deny="host_not_allowed",
               tier="as-owner", status=200),
        record("refused", 2, reason="internal_address", target="http://169.254.169.254/"),
        record("failed", 3, reason="timeout", agent="research"),
        record("refused", 4, reason="search_needs_tier", capability="web:search.query@1",
               target="rust web frameworks", tier="as-owner"),
        record("failed", 5, reason="http_500", would_deny="host_not_allowed", status=500),
        record("allowed", 6, capability="web:search.query@1", target="axum", provider="brave"),
    ]  # fmt: skip


@pytest.mark.anyio
async def test_every_decision_round_trips_through_sqlite(tmp_path: Path) -> None:
    """A record of each decision is written and read back field for field, newest first."""
    sink = SQLiteAuditSink(tmp_path / "state")
    written = every_decision()
    for r in written:
        await sink.write(r)
    back = await sink.query(limit=100)
    assert back == list(reversed(written))
    assert {r.decision for r in back} == set(DECISIONS)
    await sink.aclose()
    assert (tmp_path / "state" / "audit.db").is_file()


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["sqlite", "memory"])
async def test_query_filters(tmp_path: Path, kind: str) -> None:
    """since, agent, decision and limit filter the same way in both sinks."""
    sink = SQLiteAuditSink(tmp_path) if kind == "sqlite" else MemoryAuditSink()
    for r in every_decision():
        await sink.write(r)
    since = await sink.query(since=T0 + dt.timedelta(minutes=4))
    assert [r.time.minute for r in since] == [6, 5, 4]
    assert [r.reason for r in await sink.query(agent="research")] == ["timeout"]
    assert [r.reason for r in await sink.query(decision="refused")] == [
        "search_needs_tier", "internal_address",
    ]  # fmt: skip
    # report-would-deny also finds the call report mode let through that then failed
    assert [r.time.minute for r in await sink.query(decision="report-would-deny")] == [5, 1]
    assert len(await sink.query(limit=2)) == 2
    assert await sink.query(agent="nobody") == []
    await sink.aclose()


def test_records_never_hold_payloads_or_credentials() -> None:
    """No field for page text or base64; data: URLs, user:pass@ and huge targets are cut."""
    names = {f.name for f in dataclasses.fields(AuditRecord)}
    assert names.isdisjoint({"content", "text", "data", "body", "parts", "screenshot"})
    r = record(target="data:image/png;base64," + "A" * 5000)
    assert r.target == "data:[omitted]"
    r = record(
        target="https://user:secret@example.org/x",
        final_url="https://u:p@example.org/y",
        redirects=("https://user:secret@example.org/x", "https://example.org/y"),
    )
    assert "secret" not in json.dumps(r.to_wire())
    assert r.target == "https://example.org/x"
    assert r.final_url == "https://example.org/y"
    long = record(target="https://example.org/" + "a" * 10_000)
    assert len(long.target) == MAX_TARGET_CHARS and long.target.endswith("\u2026")


def test_a_record_from_a_call_is_a_record_like_any_other() -> None:
    """``from_call`` fills the frozen record in one step: every field is set, cleaned and
    checked as the dataclass's own constructor would, and the result equals one made so."""
    from webward._call import Call

    call = Call("web:page.fetch@1", "cli", "https://user:pw@example.org/a")
    call.tier, call.status, call.bytes = "connected", 200, 10
    call.redirects = ["https://user:pw@example.org/a", "https://example.org/b\x00"]
    call.render_contacted = ["cdn.example.org"]
    made = AuditRecord.from_call(call, decision="allowed", reason="allowed")
    assert set(vars(made)) == {f.name for f in dataclasses.fields(AuditRecord)}
    assert made.target == "https://example.org/a"
    assert made.redirects == ("https://example.org/a", "https://example.org/b\\x00")
    assert made == dataclasses.replace(made)  # what __init__ makes of the same fields
    with pytest.raises(ValueError, match="decision"):
        AuditRecord.from_call(call, decision="maybe", reason="allowed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.target = "https://example.org/other"  # type: ignore[misc]


def test_records_of_calls_alike_share_their_shape_and_encode_as_their_own() -> None:
    """A call like one before (a cached page read again) takes that record's cleaned fields,
    row and line, but for its own id, time and duration; each encodes exactly as a record made
    from scratch, and a record replaced by hand drops the shared parts."""
    from webward._call import Call
    from webward._errors import Reason
    from webward.audit._core import to_row

    def call() -> Call:
        made = Call("web:page.fetch@1", "cli", "https://user:pw@example.org/a")
        made.tier, made.status, made.bytes, made.content_type = "connected", 200, 10, "text/html"
        made.redirects = ["https://user:pw@example.org/a", "https://example.org/b"]
        made.would_deny = Reason.HOST_NOT_ALLOWED  # a StrEnum, stored as its text
        return made

    first, second = (
        AuditRecord.from_call(call(), decision="report-would-deny", reason=Reason.HOST_NOT_ALLOWED)
        for _ in range(2)
    )
    assert first.shape is not None and second.shape is first.shape
    assert second.id != first.id
    assert dataclasses.replace(second, id=first.id, time=first.time) == first
    assert type(second.reason) is str and type(second.would_deny) is str
    for r in (first, second):
        plain = dataclasses.replace(r)  # made through __init__: no shape, encoded in full
        assert plain.shape is None and plain == r
        assert to_row(r) == to_row(plain)
        assert r.to_json_line() == plain.to_json_line()
        assert list(json.loads(r.to_json_line()).items()) == list(r.to_wire().items())
    refused = dataclasses.replace(second, decision="refused", reason="audit_unavailable")
    assert refused.shape is None and json.loads(refused.to_json_line())["decision"] == "refused"
    other = AuditRecord.from_call(call(), decision="refused", reason=Reason.HOST_NOT_ALLOWED)
    assert other.shape is not first.shape and other.decision == "refused"


def test_record_shape_and_validation() -> None:
    """to_wire is camelCase; an unknown decision or a naive time is a programming error."""
    wire = every_decision()[0].to_wire()
    assert list(wire) == [
        "id", "time", "agent", "face", "tier", "session", "capability", "target", "decision",
        "reason", "wouldDeny", "finalUrl", "redirects", "status", "bytes", "contentType",
        "durationMs", "provider", "hitsDropped", "renderContacted", "renderRefused",
    ]  # fmt: skip
    assert wire["time"] == "2025-01-15T10:00:00.000Z"
    assert wire["redirects"] == ["https://example.org/a", "https://example.org/b"]
    with pytest.raises(ValueError):
        record("maybe")
    with pytest.raises(ValueError):
        record(time=dt.datetime(2025, 1, 1))
    not_a_string: Any = b"\x00"  # a caller's bad input, before validation
    early = AuditRecord.create(decision="refused", reason="invalid_input", target=not_a_string)
    assert early.tier == "" and early.target == "b'\\x00'"
    assert early.time.tzinfo is not None and len(early.id) == 32


def test_a_json_line_is_the_wire_form_whatever_the_record_shares_with_others() -> None:
    """The call log's line of each record: its wire form, key for key and in order, though
    records that differ only in id, time and duration share the rest of it."""
    records = [*every_decision(), *every_decision()]  # the second round reuses the parts
    records += [dataclasses.replace(records[0], id=f"{i:032x}", duration_ms=i) for i in (0, 7)]
    records.append(dataclasses.replace(records[0], duration_ms=None, provider='say "hi"\n'))
    records.append(dataclasses.replace(records[0], duration_ms=1.5))  # type: ignore[arg-type]
    for r in records:
        line = r.to_json_line()
        assert line.endswith("}\n") and line.count("\n") == 1
        assert list(json.loads(line).items()) == list(r.to_wire().items())
    traced = records[0].to_json_line((("traceId", "ab" * 16), ("spanId", "cd" * 8)))
    assert json.loads(traced) == {**records[0].to_wire(), "traceId": "ab" * 16, "spanId": "cd" * 8}
    huge = record(bytes=2**70)  # a record made by hand, past what orjson encodes
    assert json.loads(huge.to_json_line())["bytes"] == 2**70


@pytest.mark.anyio
async def test_unwritable_store_refuses_the_call(tmp_path: Path) -> None:
    """A state dir whose parent is a regular file cannot hold audit.db: audit_unavailable."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file")
    sink = SQLiteAuditSink(blocker / "state")
    with pytest.raises(Refused) as info:
        await sink.write(record())
    assert info.value.reason == REASON_AUDIT_UNAVAILABLE
    assert info.value.code == "refused"
    assert info.value.message.startswith(
        "refused: audit unavailable; webward does not open the door unaudited; "
    )
    assert "point [state] dir (WEBWARD_STATE_DIR)" in info.value.message  # the next step
    # Reading it is no empty log either (`webward audit` said "no audit records match").
    with pytest.raises(Refused) as read:
        await sink.query()
    assert read.value.message == (
        f"refused: the audit log at {blocker / 'state' / 'audit.db'} cannot be written "
        f"({blocker} is not a directory), so every call is refused; fix that, or point "
        "[state] dir (WEBWARD_STATE_DIR) at a directory webward can write"
    )
    await sink.aclose()


@pytest.mark.anyio
async def test_a_state_dir_not_yet_made_is_an_empty_log(tmp_path: Path) -> None:
    """A state dir that does not exist yet, under one that can be written, has no records."""
    sink = SQLiteAuditSink(tmp_path / "new" / "state")
    assert await sink.query() == []
    await sink.aclose()


@pytest.mark.anyio
async def test_a_corrupt_store_refuses_too(tmp_path: Path) -> None:
    """An audit.db that is not a database refuses writes and reads alike."""
    (tmp_path / "audit.db").write_bytes(b"this is not sqlite" * 100)
    sink = SQLiteAuditSink(tmp_path)
    with pytest.raises(Refused, match="audit unavailable"):
        await sink.write(record())
    with pytest.raises(Refused) as info:
        await sink.query()
    assert info.value.reason == REASON_AUDIT_UNAVAILABLE
    await sink.aclose()


@pytest.mark.anyio
async def test_memory_sink_and_open_audit_sink(tmp_path: Path) -> None:
    """The memory sink keeps records (or refuses when broken); settings pick SQLite, and a
    PostgreSQL request refuses rather than auditing elsewhere."""
    mem = MemoryAuditSink()
    await mem.write(record())
    assert len(mem.records) == 1
    with pytest.raises(Refused, match="audit unavailable"):
        await MemoryAuditSink(broken=True).write(record())
    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    sink = open_audit_sink(settings)
    assert isinstance(sink, SQLiteAuditSink) and sink.path == tmp_path / "audit.db"
    pg = open_audit_sink(settings.replace({"audit": {"postgres_dsn_env": "WEBWARD_PG"}}))
    with pytest.raises(Refused) as info:
        await pg.write(record())
    assert info.value.reason == REASON_AUDIT_UNAVAILABLE and "PostgreSQL" in info.value.message


_WRITER = textwrap.dedent(
    """
    import sys, anyio
    from webward.audit import AuditRecord, SQLiteAuditSink

    async def main(state_dir, agent):
        sink = SQLiteAuditSink(state_dir)
        for i in range(50):
            await sink.write(AuditRecord.create(
                decision="allowed", reason="allowed", agent=agent, tier="connected",
                capability="web:page.fetch@1", target=f"https://example.org/{agent}/{i}"))
        await sink.aclose()

    anyio.run(main, sys.argv[1], sys.argv[2])
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(webward.__file__).resolve().parents[1])}


@pytest.mark.anyio
async def test_three_processes_write_at_once_and_lose_nothing(tmp_path: Path) -> None:
    """Three processes x 50 records into one audit.db gives 150 rows, none lost."""
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), f"agent{n}"], env=_env())
        for n in range(3)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    sink = SQLiteAuditSink(tmp_path)
    rows = await sink.query(limit=1000)
    await sink.aclose()
    assert len(rows) == 150
    assert len({r.id for r in rows}) == 150
    for n in range(3):
        targets = {r.target for r in rows if r.agent == f"agent{n}"}
        assert targets == {f"https://example.org/agent{n}/{i}" for i in range(50)}


@pytest.mark.anyio
async def test_a_burst_larger_than_one_statement_loses_nothing(tmp_path: Path) -> None:
    """1,200 concurrent writes commit in batches bigger than one INSERT holds; all are stored."""
    sink = SQLiteAuditSink(tmp_path)
    async with anyio.create_task_group() as tg:
        for i in range(1200):
            tg.start_soon(sink.write, record(target=f"https://example.org/{i}"))
    rows = await sink.query(limit=5000)
    await sink.aclose()
    assert sorted(r.target for r in rows) == sorted(f"https://example.org/{i}" for i in range(1200))
    assert len({r.id for r in rows}) == 1200


@pytest.mark.anyio
async def test_a_lone_surrogate_is_stored_escaped_and_spoils_no_batch(tmp_path: Path) -> None:
    """A caller's lone surrogate (JSON lets one through as \\ud800) cannot be stored as UTF-8:
    it is kept as its escape, and the records committed beside it are written too."""
    sink = SQLiteAuditSink(tmp_path)
    odd = record(
        target="https://example.org/\ud800", agent="a\udfff", redirects=["https://x.org/\ud800"]
    )
    plain = [record(target=f"https://example.org/{i}") for i in range(6)]
    async with anyio.create_task_group() as tg:
        for r in [*plain[:3], odd, *plain[3:]]:
            tg.start_soon(sink.write, r)
    rows = {r.id: r for r in await sink.query(limit=100)}
    await sink.aclose()
    assert set(rows) == {r.id for r in [*plain, odd]}
    stored = rows[odd.id]
    assert stored.target == "https://example.org/\\ud800"
    assert stored.agent == "a\\udfff"
    assert stored.redirects == ("https://x.org/\\ud800",)


@pytest.mark.anyio
async def test_a_flush_that_raises_refuses_every_call_of_its_batch(tmp_path: Path) -> None:
    """An unexpected error in the store fails every writer whose row was in that commit: none
    may take its row for written."""

    class Broken(SQLiteAuditSink):
        def _write_sync(self, rows: list[tuple[Any, ...]]) -> str | None:
            raise RuntimeError("disk on fire")

    sink = Broken(tmp_path)
    outcomes: list[BaseException | None] = []

    async def write(i: int) -> None:
        try:
            await sink.write(record(target=f"https://example.org/{i}"))
        except Refused as exc:
            outcomes.append(exc)
        else:
            outcomes.append(None)

    async with anyio.create_task_group() as tg:
        for i in range(10):
            tg.start_soon(write, i)
    await sink.aclose()
    assert len(outcomes) == 10
    assert all(isinstance(o, Refused) and o.reason == REASON_AUDIT_UNAVAILABLE for o in outcomes)
    assert "disk on fire" in str(outcomes[0])


@pytest.mark.anyio
async def test_records_of_cancelled_callers_are_committed_by_close(tmp_path: Path) -> None:
    """The commit thread loses nothing handed to it: callers cancelled while they wait for
    their commit still have their records written, and ``aclose`` returns only once every
    record handed over is committed."""
    disk = threading.Event()  # the store answers once the test lets it

    class Slow(SQLiteAuditSink):
        def _write_sync(self, rows: list[tuple[Any, ...]]) -> Any:
            disk.wait()
            return super()._write_sync(rows)

    sink = Slow(tmp_path)
    async with anyio.create_task_group() as tg:
        for i in range(300):
            tg.start_soon(sink.write, record(target=f"https://example.org/{i}"))
        await anyio.wait_all_tasks_blocked()  # every record handed over; callers waiting
        tg.cancel_scope.cancel()
    disk.set()  # the first batch commits now; the rest waits its turn
    await sink.aclose()
    reader = SQLiteAuditSink(tmp_path)
    rows = await reader.query(limit=1000)
    await reader.aclose()
    assert sorted(r.target for r in rows) == sorted(f"https://example.org/{i}" for i in range(300))


@pytest.mark.anyio
async def test_a_sink_writes_again_after_close(tmp_path: Path) -> None:
    """A closed sink starts its commit thread again on the next write (a server restarted in
    the same process)."""
    sink = SQLiteAuditSink(tmp_path)
    await sink.write(record(target="https://example.org/before"))
    await sink.aclose()
    await sink.write(record(target="https://example.org/after"))
    rows = await sink.query()
    await sink.aclose()
    assert {r.target for r in rows} == {"https://example.org/before", "https://example.org/after"}


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "webward.audit._sqlite"]


@pytest.mark.anyio
async def test_a_log_removed_or_replaced_under_the_sink_is_written_at_its_path_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The state dir deleted under a running sink: the next record goes to audit.db at its
    path, made again as on a first open (0700 dir, 0600 file), not to the deleted inode; so
    does the probe, and a file moved over the path is written from then on. Each time the
    log says so once."""
    caplog.set_level(logging.WARNING, logger="webward")
    state = tmp_path / "state"
    sink = SQLiteAuditSink(state)
    await sink.write(record(target="https://example.org/before"))
    shutil.rmtree(state)
    await sink.write(record(target="https://example.org/after"))
    await sink.write(record(target="https://example.org/after-2"))
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE(sink.path.stat().st_mode) == 0o600
    reader = SQLiteAuditSink(state)  # another process, as `webward audit` reads it
    assert {r.target for r in await reader.query()} == {
        "https://example.org/after",
        "https://example.org/after-2",
    }
    await reader.aclose()
    said = (
        f"the audit log at {sink.path} was removed or replaced while webward ran; records "
        "from now on go to the new file"
    )
    assert _warnings(caplog) == [said]

    shutil.rmtree(state)  # noticed by the probe too, with no record written
    await sink.probe()
    assert sink.path.is_file()

    other = SQLiteAuditSink(tmp_path / "other")  # a log moved over the path
    await other.write(record(target="https://example.org/moved-in"))
    await other.aclose()
    os.replace(other.path, sink.path)
    await sink.write(record(target="https://example.org/into-the-new-file"))
    assert [r.target for r in await sink.query()] == [
        "https://example.org/into-the-new-file",
        "https://example.org/moved-in",
    ]
    await sink.aclose()
    assert _warnings(caplog) == [said] * 3


@pytest.mark.anyio
async def test_a_log_that_cannot_be_made_again_refuses_as_an_unwritable_store(
    tmp_path: Path,
) -> None:
    """Its path taken by a directory once the file was removed: audit_unavailable in one
    sentence naming it, for the write and the probe alike, and never a record lost."""
    sink = SQLiteAuditSink(tmp_path)
    await sink.write(record())
    sink.path.unlink()
    sink.path.mkdir()
    for attempt in (lambda: sink.write(record()), sink.probe):
        with pytest.raises(Refused) as info:
            await attempt()
        assert info.value.reason == REASON_AUDIT_UNAVAILABLE
        assert f"{sink.path}: [Errno 21] Is a directory" in info.value.message
        assert info.value.message.count("\n") == 0
    await sink.aclose()


@pytest.mark.anyio
async def test_the_first_failed_write_is_logged_once_and_the_recovery_too(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A store that took records and then cannot (its database full: SQLite's own page
    limit, as a full disk answers SQLITE_FULL) is said once in the log, naming the store's
    error, not once per refused call; and once more when it takes records again."""
    caplog.set_level(logging.WARNING, logger="webward")
    sink = SQLiteAuditSink(tmp_path)
    await sink.write(record())
    assert sink._conn is not None
    (pages,) = sink._conn.execute("PRAGMA page_count").fetchone()
    sink._conn.execute(f"PRAGMA max_page_count = {pages}")
    refused = 0
    for i in range(300):
        try:
            await sink.write(record(target=f"https://example.org/{i}" + "x" * 400))
        except Refused as exc:
            assert "database or disk is full" in exc.message
            # Freeing space fixes it, whichever write found it (a write said "make that
            # store writable", the probe alone said this).
            assert "free space on that disk" in exc.message
            refused += 1
    assert refused > 100
    assert _warnings(caplog) == [
        f"audit records cannot be written ({sink.path}: the disk holding it is full "
        "(database or disk is full)); every call is refused until they can"
    ]
    sink._conn.execute(f"PRAGMA max_page_count = {pages * 100}")
    await sink.write(record())
    await sink.write(record())
    await sink.aclose()
    assert _warnings(caplog)[1:] == [f"audit records are written again at {sink.path}"]


async def _read_as_a_reader(state_dir: Path) -> dict[str, Any]:
    """What a reader of ``state_dir`` gets: the records, the console's indexes, a write."""
    sink = SQLiteAuditSink(state_dir)
    said: dict[str, Any] = {}
    try:
        said["read"] = [r.target for r in await sink.query()]
    except Refused as exc:
        said["read"] = exc.message
    # The console builds its indexes through read_sync: none on a log it may only read.
    index = "CREATE INDEX IF NOT EXISTS audit_agent ON audit (agent)"
    try:
        said["indexed"] = await anyio.to_thread.run_sync(
            lambda: sink.read_sync(lambda c: c.execute(index) is not None, default=False)
        )
    except Refused as exc:
        said["indexed"] = exc.reason
    try:
        await sink.write(record())
        said["write"] = "written"
    except Refused as exc:
        said["write"] = exc.reason
    await sink.aclose()
    return said


def _as_a_reader(state_dir: Path, read: Any = _read_as_a_reader) -> dict[str, Any]:
    """``read`` (:func:`_read_as_a_reader`) in a child process the file modes bind: root's
    child becomes nobody, which owns the files, as a user without CAP_DAC_OVERRIDE would."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(read_end)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            said = anyio.run(read, state_dir)
            os.write(write_end, json.dumps(said).encode())
            code = 0
        except BaseException as exc:
            os.write(write_end, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        out = pipe.read()
    os.waitpid(pid, 0)
    return dict(json.loads(out))


_LIVE_WRITER = textwrap.dedent(
    """
    import sys, anyio
    from webward.audit import AuditRecord, SQLiteAuditSink

    async def main(state_dir):
        sink = SQLiteAuditSink(state_dir)
        await sink.write(AuditRecord.create(
            decision="allowed", reason="allowed", target="https://example.org/live"))
        print("written", flush=True)
        sys.stdin.readline()  # open until told: its record stays in the -wal till then
        await sink.aclose()

    anyio.run(main, sys.argv[1])
    """
)


def test_a_log_this_user_may_not_read_says_so() -> None:
    """A log whose file, or whose directory, this user may not read was refused with "if
    another program holds it, try again ... if it is no SQLite database, move it aside",
    steps for a lock or a broken file: it now says the modes keep this user out and what to
    do, in one sentence, with no errno or repr."""
    # Not under tmp_path, whose parents are 0700: root's child (nobody) must reach it.
    base = Path(tempfile.mkdtemp())
    cases = {"file": (0o700, 0o000), "dir": (0o000, 0o600)}

    async def fill() -> None:
        for name in cases:
            sink = SQLiteAuditSink(base / name)
            await sink.write(record(target=f"https://example.org/{name}"))
            await sink.aclose()

    try:
        anyio.run(fill)
        for name, (dir_mode, file_mode) in cases.items():
            (base / name / "audit.db").chmod(file_mode)
            (base / name).chmod(dir_mode)
        if os.geteuid() == 0:
            for place in [base, *base.rglob("*")]:
                os.chown(place, 65534, 65534)
        said = {name: _as_a_reader(base / name)["read"] for name in cases}
    finally:
        for name in cases:
            (base / name).chmod(0o700)
        shutil.rmtree(base)
    for name in cases:
        assert said[name] == (
            f"refused: the audit log at {base / name / 'audit.db'} cannot be read (Permission "
            "denied): this user may not read it or a directory above it; run webward as the "
            "user that writes it, or point [state] dir (WEBWARD_STATE_DIR) at a directory this "
            "user can write"
        )


def test_a_log_this_user_may_only_read_is_read() -> None:
    """`webward audit` reads a log it may not write: a 0400 audit.db and one in a read-only
    dir are read alone, making no -wal or -shm of this user's that would later keep writers
    out; a log a writer has open is read through the writer's -shm, its -wal's records
    included; a -wal it could not read (no -shm can be made) refuses in one sentence rather
    than reading short. Writes are refused as before; the console's indexes are not built."""
    # Not under tmp_path, whose parents are 0700: root's child (nobody) must reach it.
    base = Path(tempfile.mkdtemp())
    cases = {
        "file": (0o700, 0o400),
        "dir": (0o500, 0o600),
        "wal": (0o500, 0o600),
        "live": (0o500, 0o400),
    }

    async def fill() -> None:
        for name in ("file", "dir", "wal"):
            sink = SQLiteAuditSink(base / name)
            await sink.write(record(target=f"https://example.org/{name}"))
            if name == "wal":  # a writer that never closed: its records still in the -wal
                sink.path.with_name("audit.db-shm").unlink()
                shutil.copy(sink.path.with_name("audit.db-wal"), base / "kept-wal")
            await sink.aclose()

    writer = subprocess.Popen(
        [sys.executable, "-c", _LIVE_WRITER, str(base / "live")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "written\n"
        anyio.run(fill)
        shutil.copy(base / "kept-wal", base / "wal" / "audit.db-wal")
        for name, (dir_mode, file_mode) in cases.items():
            (base / name / "audit.db").chmod(file_mode)
            (base / name).chmod(dir_mode)
        if os.geteuid() == 0:
            for place in [base, *base.rglob("*")]:
                os.chown(place, 65534, 65534)
        said = {name: _as_a_reader(base / name) for name in cases}
        left = {name: sorted(os.listdir(base / name)) for name in ("file", "dir")}
    finally:
        assert writer.stdin is not None and writer.stdout is not None
        writer.stdin.close()
        writer.wait(timeout=60)
        writer.stdout.close()
        for name in cases:
            (base / name).chmod(0o700)
        shutil.rmtree(base)
    refused = {"indexed": False, "write": "audit_unavailable"}
    assert said["file"] == refused | {"read": ["https://example.org/file"]}
    assert said["dir"] == refused | {"read": ["https://example.org/dir"]}
    assert said["live"] == refused | {"read": ["https://example.org/live"]}
    assert left == {"file": ["audit.db"], "dir": ["audit.db"]}
    wal = base / "wal"
    assert said["wal"]["read"] == (
        f"refused: the audit log at {wal / 'audit.db'} cannot be read (some of its records "
        f"are in {wal / 'audit.db-wal'}, which only a user who may write in {wal} can read); "
        "if another program holds it, try again once it is done, and if it is no SQLite "
        "database, move it aside (webward starts a new one) or point [state] dir "
        "(WEBWARD_STATE_DIR) at the right directory"
    )


async def _read_an_old_log(state_dir: Path) -> dict[str, Any]:
    """What a reader gets of an old log it may only read: the sink's query, and the console's
    reads (``webward audit`` lists through them), filters on the newer columns included."""
    from webward.console._queries import AuditFilter, SQLiteAuditReader

    sink = SQLiteAuditSink(state_dir)
    reader = SQLiteAuditReader(SQLiteAuditSink(state_dir))
    said: dict[str, Any] = {}
    try:
        said["query"] = [dataclasses.asdict(r) | {"time": None} for r in await sink.query()]
        newest = await reader.newest(AuditFilter(), 10)
        said["newest"] = [r.id for r in newest.records]
        said["in a session"] = (await reader.newest(AuditFilter(session="s"), 10)).records
        said["of a face"] = (await reader.page(AuditFilter(face="cli"), None, 10)).records
        page = await reader.page(AuditFilter(agent="cli", host="example.org"), None, 10)
        said["page"] = [r.id for r in page.records]
        said["record"] = (await reader.record("old")) == newest.records[0]
        said["indexed"] = await reader.prepare()
    except Refused as exc:
        said["refused"] = exc.message
    await sink.aclose()
    await reader.aclose()
    return said


def test_an_old_log_this_user_may_only_read_is_read() -> None:
    """A log an older webward wrote, which this user may only read (so no ALTER TABLE can
    add the newer columns): read as a newer one, each missing column reading its default
    (``[]`` for the render hosts, None for the session, the hits dropped and the face), by
    the sink and by the console's reads, whose filters on those columns then match nothing.
    They failed with "no such column: session" (``render_contacted`` for the oldest)."""
    import sqlite3

    from webward.audit._core import ADDED_COLUMNS, COLUMNS, FIELDS, table_sql, to_row

    base = Path(tempfile.mkdtemp())  # not under tmp_path, whose parents are 0700
    releases = {
        "first": tuple(c for c in COLUMNS if c not in ADDED_COLUMNS),
        "before": tuple(c for c in COLUMNS if c[0] not in ("session", "hits_dropped", "face")),
    }
    old = record(target="https://example.org/old", id="old")
    row = dict(zip(FIELDS, to_row(old), strict=True))
    for name, columns in releases.items():
        (base / name).mkdir()
        conn = sqlite3.connect(base / name / "audit.db")
        conn.execute(table_sql(columns))
        names = [c for c, _ in columns]
        conn.execute(
            f"INSERT INTO audit ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
            [row[c] for c in names],
        )
        conn.commit()
        conn.close()
    try:
        for name in releases:
            (base / name / "audit.db").chmod(0o400)
            (base / name).chmod(0o500)
        if os.geteuid() == 0:
            for place in [base, *base.rglob("*")]:
                os.chown(place, 65534, 65534)
        said = {name: _as_a_reader(base / name, _read_an_old_log) for name in releases}
        left = {name: sorted(os.listdir(base / name)) for name in releases}
    finally:
        for name in releases:
            (base / name).chmod(0o700)
        shutil.rmtree(base)
    expected = dataclasses.asdict(old)
    for name in releases:
        assert "refused" not in said[name], said[name]
        assert said[name] == {
            "query": [expected | {"time": None, "redirects": [], "render_contacted": [],
                                 "render_refused": []}],
            "newest": ["old"],
            "in a session": [],
            "of a face": [],
            "page": ["old"],
            "record": True,
            "indexed": False,
        }  # fmt: skip
    assert left == {"first": ["audit.db"], "before": ["audit.db"]}


def test_writers_opening_an_old_log_at_once_all_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several writers opening a log an older webward wrote at the same moment each add the
    columns it lacks: the first to get the write lock adds them, and the others, which saw
    them missing too, take them as added. The second writer's ALTER TABLE failed with
    "duplicate column name" and its call was refused. Made certain rather than likely: the
    write lock is held (by another connection) until every writer is at its first write to
    the schema, so all of them looked before any could add."""
    import sqlite3

    from webward.audit import _sqlite
    from webward.audit._core import ADDED_COLUMNS, COLUMNS, table_sql

    writers = 4
    state = Path(tempfile.mkdtemp())
    holder = sqlite3.connect(state / "audit.db", isolation_level=None)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute(table_sql(tuple(c for c in COLUMNS if c not in ADDED_COLUMNS)))
    holder.execute("CREATE INDEX audit_ts ON audit (ts)")  # as the first release made it
    arrived: list[str] = []
    all_there = threading.Event()

    def open_wal(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real_open_wal(*args, **kwargs)

        def traced(statement: str) -> None:
            if statement.startswith(("ALTER", "BEGIN")):
                conn.set_trace_callback(None)  # each writer counted once
                arrived.append(statement)
                if len(arrived) == writers:
                    all_there.set()

        conn.set_trace_callback(traced)
        return conn

    real_open_wal = _sqlite.open_wal
    said: list[str] = []

    def write(n: int) -> None:
        async def main() -> None:
            sink = SQLiteAuditSink(state)
            try:
                await sink.write(record(agent=f"writer{n}"))
                said.append("written")
            except Refused as exc:
                said.append(exc.message)
            finally:
                await sink.aclose()

        anyio.run(main)

    monkeypatch.setattr(_sqlite, "open_wal", open_wal)
    holder.execute("BEGIN IMMEDIATE")
    try:
        threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
        for thread in threads:
            thread.start()
        reached = all_there.wait(timeout=60)  # a bound against a hang, not a pace
        holder.execute("ROLLBACK")
        for thread in threads:
            thread.join(timeout=60)
    finally:
        holder.close()
    with database(state / "audit.db") as conn:
        rows = conn.execute("SELECT agent, face FROM audit").fetchall()
    shutil.rmtree(state)
    assert reached
    assert said == ["written"] * writers
    assert sorted(rows) == [(f"writer{n}", None) for n in range(writers)]


# ---- webward audit ----------------------------------------------------------------------


async def _fill(state_dir: Path) -> None:
    sink = SQLiteAuditSink(state_dir)
    for r in every_decision():
        await sink.write(r)
    await sink.aclose()


def _run(args: argparse.Namespace, settings: Settings, **kwargs: Any) -> int:
    """The command as the command line runs it: an error raised is reported and coded."""
    try:
        return _cmd_audit.run(args, settings, **kwargs)
    except WebwardError as exc:
        return report_error(exc, args.json)


def _args(**given: object) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    _cmd_audit.add_arguments(parser)
    ns = parser.parse_args([])
    for k, v in given.items():
        setattr(ns, k, v)
    return ns


@pytest.mark.anyio
async def test_cli_json_through_the_real_command_line(tmp_path: Path) -> None:
    """`python -m webward.cli audit --json` prints one JSON array of camelCase records."""
    await _fill(tmp_path)
    config = tmp_path / "webward.toml"
    config.write_text(f'[state]\ndir = "{tmp_path}"\n')
    env = {**_env(), "WEBWARD_STATE_DIR": str(tmp_path)}
    cmd = [sys.executable, "-m", "webward.cli", "audit", "--config", str(config), "--json"]
    out = subprocess.run(
        [*cmd, "--decision", "refused", "--agent", "cli"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [r["reason"] for r in data] == ["search_needs_tier", "internal_address"]
    assert data[0]["capability"] == "web:search.query@1" and data[0]["wouldDeny"] is None
    bad = subprocess.run(
        [*cmd, "--since", "yesterday"], capture_output=True, text=True, env=env, timeout=60
    )
    assert bad.returncode == 2
    assert bad.stderr == ""  # with --json an error is the error model on stdout, as elsewhere
    error = json.loads(bad.stdout)["error"]
    assert error["code"] == "invalid_input" and "--since 'yesterday'" in error["message"]


# What a page or an agent may put in a target, and a terminal would act on: C0 and C1
# controls (CSI, NEL), DEL, bidi controls and marks, line and paragraph separators, and other
# invisible format characters (zero-width space, BOM, soft hyphen, a tag character).
TERMINAL_DRIVERS = (
    "\x1b\x07\x7f\x85\x9b\u061c\u200b\u200e\u200f\u202a\u202e\u2066\u2069"
    "\u2028\u2029\u00ad\ufeff\U000e0041"
)


@pytest.mark.anyio
async def test_cli_json_escapes_what_could_drive_a_terminal(tmp_path: Path) -> None:
    """`webward audit --json` writes controls, bidi controls, U+2028/2029 and invisible format
    characters as \\u escapes, as the table, the console and the call log escape them (they
    reached the terminal raw); the JSON reads back to the same values, and "é" stays as it is."""
    sink = SQLiteAuditSink(tmp_path)
    targets = [f"x{c}y \u00e9" for c in TERMINAL_DRIVERS]
    for i, target in enumerate(targets):
        await sink.write(record("refused", i, reason="invalid_input", target=target))
    await sink.aclose()
    env = {**_env(), "WEBWARD_STATE_DIR": str(tmp_path)}
    for usage in ([], ["--usage"]):
        out = subprocess.run(
            [sys.executable, "-m", "webward.cli", "audit", "--json", "--limit", "100", *usage],
            capture_output=True, env=env, timeout=60,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        text = out.stdout.decode("utf-8")
        assert not [c for c in TERMINAL_DRIVERS if c in text]
        if not usage:  # not everything escaped: only what is invisible or acts
            assert text.count("\u00e9") == len(targets)
            assert [r["target"] for r in json.loads(text)] == targets[::-1]


def test_cli_state_dir_no_call_can_write_is_refused(tmp_path: Path) -> None:
    """A state dir no call can create (under /proc, even as root, whom every permission
    check lets through): `webward audit` says the log cannot be written (exit 3), as
    governance.md promises, where it said "no audit records match" (exit 0), while every
    fetch was refused for that very reason. A fresh state dir that can be made is still an
    empty log, and reading it creates nothing."""

    def webward(state: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**_env(), "WEBWARD_STATE_DIR": state, "WEBWARD_ALLOW_RANGES": "127.0.0.1/32"}
        return subprocess.run(
            [sys.executable, "-m", "webward", *args],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
        )  # fmt: skip

    unusable = f"/proc/webward-test-{os.getpid()}/state"
    assert webward(unusable, "fetch", "http://127.0.0.1:1/").returncode == 3  # as before
    for args in ([], ["--usage"], ["--limit", "5"]):
        out = webward(unusable, "audit", *args)
        assert (out.returncode, out.stdout) == (3, ""), out.stderr
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
        assert out.stderr.startswith(
            f"webward: refused: the audit log at {unusable}/audit.db cannot be written ("
        )
        assert out.stderr.rstrip().endswith(
            "point [state] dir (WEBWARD_STATE_DIR) at a directory webward can write"
        )
    as_json = webward(unusable, "audit", "--json")
    assert as_json.returncode == 3
    assert json.loads(as_json.stdout)["error"]["code"] == "refused"
    fresh = webward(str(tmp_path / "new" / "state"), "audit")
    assert (fresh.returncode, fresh.stdout, fresh.stderr) == (0, "no audit records match\n", "")
    assert list(tmp_path.iterdir()) == []  # nothing made, not even for a look


def test_cli_table_is_aligned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """People get an aligned table, newest first, with control characters shown escaped."""

    async def fill() -> None:
        sink = SQLiteAuditSink(tmp_path)
        await sink.write(record("refused", 0, reason="invalid_input", target="bad\nurl\x1b[2J"))
        await sink.write(record("allowed", 1, status=200))
        await sink.aclose()

    anyio.run(fill)
    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    assert _cmd_audit.run(_args(), settings) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines[0].split() == [
        "TIME", "AGENT", "TIER", "CAPABILITY", "DECISION", "REASON", "STATUS", "TARGET",
    ]  # fmt: skip
    assert lines[1].split()[4:] == ["allowed", "allowed", "200", "https://example.org/a"]
    assert lines[2].endswith("bad\\nurl\\x1b[2J")
    starts = {
        line.index(word)
        for line, word in zip(lines, ("DECISION", "allowed", "refused"), strict=True)
    }
    assert len(starts) == 1  # the DECISION column lines up


def test_cli_since_forms_and_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--since takes ISO times (UTC without a zone) or ages; --limit caps the rows."""
    anyio.run(_fill, tmp_path)
    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    now = lambda: T0 + dt.timedelta(minutes=10)  # noqa: E731
    cases = [
        ({"since": "2025-01-15T10:05:00"}, 2),
        ({"since": "2025-01-15T11:05:00+01:00"}, 2),
        ({"since": "2025-01-15T10:05:00Z"}, 2),
        ({"since": "5m"}, 2),
        ({"since": "2h"}, 7),
        ({"since": "1d", "limit": "3"}, 3),
        ({"since": "30s"}, 0),
        ({"since": "999999999d"}, 7),  # older than the calendar: everything
        ({"since": "999999999w"}, 7),
    ]
    for given, count in cases:
        assert _cmd_audit.run(_args(json=True, **given), settings, now=now) == 0
        assert len(json.loads(capsys.readouterr().out)) == count, given


def test_a_usage_summary_cut_by_limit_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--usage sums the period's records; when --limit leaves some out, stderr says so
    (the totals are partial), as the record list does."""
    anyio.run(_fill, tmp_path)
    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    assert _run(_args(json=True, usage=True, limit="2"), settings) == 0
    out = capsys.readouterr()
    assert sum(row["calls"] for row in json.loads(out.out)) == 2
    assert "more records match than the 2 the summary counts" in out.err
    assert _run(_args(json=True, usage=True), settings) == 0
    out = capsys.readouterr()
    assert sum(row["calls"] for row in json.loads(out.out)) == 7 and out.err == ""


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"since": "last tuesday"}, "--since"),
        ({"since": "10y"}, "--since"),
        ({"decision": "denied"}, "--decision"),
        ({"limit": "0"}, "--limit"),
        ({"limit": "ten"}, "--limit"),
        ({"limit": "-5"}, "--limit"),
        ({"agent": "  "}, "--agent"),
        ({"agent": "\udcff"}, "--agent"),  # a byte that is not UTF-8, as argv gives it
        ({"agent": "a\nb"}, "--agent"),
        ({"since": ""}, "--since"),
    ],
)
def test_cli_bad_input_exits_2_with_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: dict[str, str], named: str
) -> None:
    """Bad flags exit 2 with one sentence on stderr naming the flag, and print nothing else."""
    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    assert _run(_args(**given), settings) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"webward: {named}") and captured.err.count("\n") == 1


def test_cli_empty_and_unreadable_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No log yet prints an empty result (exit 0); an unreadable log exits 3 and says so."""
    settings = Settings().replace({"state": {"dir": str(tmp_path / "fresh")}})
    assert _cmd_audit.run(_args(), settings) == 0
    assert capsys.readouterr().out.strip() == "no audit records match"
    assert _cmd_audit.run(_args(json=True), settings) == 0
    assert capsys.readouterr().out.strip() == "[]"
    assert not (tmp_path / "fresh").exists()  # reading creates nothing
    (tmp_path / "audit.db").write_bytes(b"garbage" * 200)
    broken = Settings().replace({"state": {"dir": str(tmp_path)}})
    assert _run(_args(), broken) == 3
    assert "cannot be read" in capsys.readouterr().err


@pytest.mark.anyio
async def test_render_hosts_round_trip_and_an_older_log_gains_their_columns(
    tmp_path: Path,
) -> None:
    """The hosts a render contacted and refused are stored and read back; an audit.db
    written before those columns existed gains them on open, its old rows reading empty."""

    from webward.audit._core import ADDED_COLUMNS

    old_schema, old_row = older_audit_table([name for name, _ in ADDED_COLUMNS])
    assert "render_" not in old_schema
    (tmp_path / "state").mkdir()
    with database(tmp_path / "state" / "audit.db") as conn:
        conn.execute(old_schema)
        conn.execute(old_row)
    sink = SQLiteAuditSink(tmp_path / "state")
    rendered = record(
        minutes=1,
        render_contacted=["example.org", "cdn.example.org:8443"],
        render_refused=["127.0.0.2:80 (internal_address)", "example.org (render_method)"],
    )
    await sink.write(rendered)
    new, old = await sink.query()
    await sink.aclose()
    assert new == rendered
    assert new.to_wire()["renderRefused"] == list(rendered.render_refused)
    assert (old.id, old.render_contacted, old.render_refused) == ("old", (), ())


@pytest.mark.anyio
async def test_session_and_hits_dropped_round_trip_and_a_log_from_before_gains_them(
    tmp_path: Path,
) -> None:
    """A record's session and the hits its search lists dropped are stored and read back; an
    audit.db of the release before (render hosts, no session) gains both columns on open, its
    old rows reading None for each."""

    before, old_row = older_audit_table(("session", "hits_dropped", "face"))
    assert "render_refused" in before and "session" not in before
    (tmp_path / "state").mkdir()
    with database(tmp_path / "state" / "audit.db") as conn:
        conn.execute(before)
        conn.execute(old_row)
    sink = SQLiteAuditSink(tmp_path / "state")
    searched = record(
        minutes=1,
        capability="web:search.query@1",
        target="owls",
        session="gateway:dave:case-A",
        hits_dropped=2,
    )
    await sink.write(searched)
    new, old = await sink.query()
    await sink.aclose()
    assert new == searched
    assert (new.to_wire()["session"], new.to_wire()["hitsDropped"]) == ("gateway:dave:case-A", 2)
    assert (old.id, old.session, old.hits_dropped) == ("old", None, None)
    assert (old.to_wire()["session"], old.to_wire()["hitsDropped"]) == (None, None)


def test_a_session_is_cleaned_as_other_text_and_calls_of_two_sessions_share_no_shape() -> None:
    """The session goes into the record's shape key: a call like one before but in another
    session (or with another count of dropped hits) gets a record of its own, while a call
    repeated in the same session shares the first one's shape. A session no store could hold
    (a NUL, a name past any limit) is stored escaped and cut, as a target is."""
    from webward._call import Call

    def call(session: str | None, dropped: int | None) -> Call:
        made = Call("web:search.query@1", "cli", "owls")
        made.tier, made.provider, made.status = "connected", "brave", 200
        made.session, made.hits_dropped = session, dropped
        return made

    def made(session: str | None, dropped: int | None) -> AuditRecord:
        return AuditRecord.from_call(call(session, dropped), decision="allowed", reason="allowed")

    first, other, fewer, again, none = (
        made("s1", 1), made("s2", 1), made("s1", 0), made("s1", 1), made(None, None),
    )  # fmt: skip
    assert [(r.session, r.hits_dropped) for r in (first, other, fewer, again, none)] == [
        ("s1", 1), ("s2", 1), ("s1", 0), ("s1", 1), (None, None),
    ]  # fmt: skip
    assert again.shape is first.shape and other.shape is not first.shape
    for r in (first, other, fewer, again, none):
        wire = json.loads(r.to_json_line())
        assert (wire["session"], wire["hitsDropped"]) == (r.session, r.hits_dropped)
    odd = record(session="a\x00b" + "s" * 5000)
    assert odd.session is not None and "\x00" not in odd.session
    assert odd.session.startswith("a\\x00b") and len(odd.session) == MAX_TARGET_CHARS


def test_cli_session_filter_json_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`webward audit --session NAME` lists that session's records only, matched exactly (a
    face's scoped name, as the records show it); --json carries `session`, and the table a
    SESSION column whenever a record shown has one ("-" for a call in none)."""

    async def fill() -> None:
        sink = SQLiteAuditSink(tmp_path)
        await sink.write(record(agent="dave", session="gateway:dave:case-A"))
        await sink.write(
            record(
                "refused", 1, agent="dave", session="gateway:dave:case-B",
                reason="budget_exhausted",
            )
        )  # fmt: skip
        await sink.write(record(minutes=2, agent="dave"))
        await sink.aclose()

    anyio.run(fill)
    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    assert _run(_args(json=True, session="gateway:dave:case-A"), settings) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["session"], r["reason"]) for r in listed] == [("gateway:dave:case-A", "allowed")]
    assert _run(_args(session="case-B"), settings) == 0  # exact: no match on a part
    assert capsys.readouterr().out.strip() == "no audit records match"
    assert _run(_args(session="gateway:dave:case-B", usage=True, json=True), settings) == 0
    assert [r["refused"] for r in json.loads(capsys.readouterr().out)] == [1]
    assert _run(_args(), settings) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "TIME", "AGENT", "TIER", "CAPABILITY", "DECISION", "REASON", "STATUS", "SESSION",
        "TARGET",
    ]  # fmt: skip
    assert [line.split()[7] for line in lines[1:]] == [
        "-", "gateway:dave:case-B", "gateway:dave:case-A",
    ]  # fmt: skip
    assert _run(_args(session=""), settings) == 2
    assert "--session" in capsys.readouterr().err


def test_usage_counts_would_deny_as_the_decision_filter_lists_it_and_tables_show_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """During a rollout, `--usage` must not understate what enforce mode would refuse: a
    call report mode let through that then failed (decision failed, wouldDeny set) counts as
    report-would-deny too, as `--decision report-would-deny` lists it (the summary counted it
    only as FAILED, 0 would-deny). Its own decision still counts it. The listing table shows
    a WOULD-DENY column, where a failed row said only `failed http_500`."""

    async def fill() -> None:
        sink = SQLiteAuditSink(tmp_path)
        for r in (
            record("report-would-deny", 0, reason="host_denied", would_deny="host_denied"),
            record("failed", 1, reason="http_500", would_deny="host_denied", status=500),
            record("failed", 2, reason="http_500", status=500),
            record("allowed", 3),
        ):
            await sink.write(r)
        await sink.aclose()

    anyio.run(fill)
    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    assert _run(_args(json=True, decision="report-would-deny"), settings) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed) == 2
    assert _run(_args(json=True, usage=True), settings) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["calls"], row["report-would-deny"], row["failed"], row["allowed"]) == (4, 2, 2, 1)
    assert _run(_args(json=True, usage=True, decision="report-would-deny"), settings) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["calls"], row["report-would-deny"], row["failed"]) == (2, 2, 1)
    assert _run(_args(), settings) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    assert header[5:7] == ["REASON", "WOULD-DENY"]
    assert [line.split()[4:7] for line in lines[1:]] == [
        ["allowed", "allowed", "-"],
        ["failed", "http_500", "-"],
        ["failed", "http_500", "host_denied"],
        ["report-would-deny", "host_denied", "host_denied"],
    ]


def test_cli_tables_tell_names_with_outer_spaces_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bob` and `bob ` are two agents: the table shows a name with outer white space (or an
    invisible or look-alike space inside) quoted, with escapes, so that it is not read as
    another's; a plain name is shown as it is. The usage table does the same."""

    async def fill() -> None:
        sink = SQLiteAuditSink(tmp_path)
        for i, name in enumerate(["bob", "bob ", "re\u00a0search", "'bob '"]):
            await sink.write(record(minutes=i, agent=name))
        await sink.aclose()

    anyio.run(fill)
    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    assert _run(_args(), settings) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.split("  ")[1] for row in rows] == [
        '"\'bob \'"', "'re\\xa0search'", "'bob '", "bob",  # a quoted name is quoted again
    ]  # fmt: skip
    assert _run(_args(usage=True), settings) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert sorted(row.split("  ")[0].rstrip() for row in rows) == [
        '"\'bob \'"', "'bob '", "'re\\xa0search'", "bob",
    ]  # fmt: skip


def test_an_agent_name_of_any_script_or_space_can_be_filtered_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--agent takes every name an agent may have (a no-break or ideographic space, an
    emoji's joiner), as config does; a control character is refused by name."""
    names = ["re\u00a0search", "研究\u3000ボット", "\U0001f469\u200d\U0001f4bb coder"]

    async def fill() -> None:
        sink = SQLiteAuditSink(tmp_path)
        for name in names:
            await sink.write(record(agent=name))
        await sink.aclose()

    anyio.run(fill)
    settings = Settings().replace({"state": {"dir": str(tmp_path)}})
    for name in names:
        assert _run(_args(json=True, agent=name), settings) == 0
        assert [r["agent"] for r in json.loads(capsys.readouterr().out)] == [name]
    assert _run(_args(agent="a\x1bb"), settings) == 2
    assert "--agent must be a name of 1 to 200 characters" in capsys.readouterr().err


def test_postgres_without_its_dsn_or_driver_says_both_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[audit] postgres_dsn_env with its variable unset and psycopg not installed: one
    sentence names both fixes. The unset variable was said first, the missing extra only
    once it was set: two rounds of fix and retry."""
    import importlib.util

    real = importlib.util.find_spec

    def psycopg_missing(name: str, *args: Any) -> Any:
        return None if name == "psycopg" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", psycopg_missing)
    monkeypatch.delenv("WW_PG", raising=False)
    settings = Settings().replace(
        {"state": {"dir": str(tmp_path)}, "audit": {"postgres_dsn_env": "WW_PG"}}
    )
    with pytest.raises(InvalidInput) as info:
        open_audit_sink(settings, environ={})
    assert info.value.message == (
        "[audit] postgres_dsn_env needs the optional package psycopg, which is not installed: "
        "install it with pip install 'webward[postgres]', and set $WW_PG (unset or empty "
        "now) to the PostgreSQL DSN of the audit log"
    )
    with pytest.raises(InvalidInput) as info:  # the DSN given: the extra alone, as before
        open_audit_sink(settings, environ={"WW_PG": "postgresql://u@127.0.0.1:1/d"})
    assert info.value.message.endswith("install it with pip install 'webward[postgres]'")


def test_a_forked_child_makes_ids_of_its_own() -> None:
    """A child forked after webward was imported (a server's workers) took its parent's id
    prefix and counter: two children writing in the same nanosecond made one id, and the
    PostgreSQL log, which keeps a record whose id is there once, dropped the second."""
    from webward.audit import _core

    parent = _core._new_id()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: its first id, out without pytest's teardown
        try:
            os.close(read)
            os.write(write, _core._new_id().encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    os.waitpid(pid, 0)
    assert len(child) == 32 and child[:8] != parent[:8]


@pytest.mark.parametrize("ns", [0, 1, 1_765_000_000_123_456_789, 2**64 - 1])
@pytest.mark.parametrize("count", [0, 7, 2**32 - 1, 2**32, 2**40 + 5])
def test_an_id_is_the_prefix_the_time_and_the_counter_in_hex(
    ns: int, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """32 lower-case hex digits: the process's prefix, the time's 16 in nanoseconds and the
    counter's last 8, each zero-padded, as ids were written before they were made in one
    step."""
    from webward.audit import _core

    monkeypatch.setattr(_core.time, "time_ns", lambda: ns)
    monkeypatch.setattr(_core, "_ID_COUNTER", iter([count]))
    made = _core._new_id()
    assert made == f"{_core._ID_PREFIX}{ns:016x}{count & 0xFFFFFFFF:08x}"
    assert len(made) == 32 and made == made.lower() and int(made, 16) >= 0


@pytest.mark.anyio
async def test_a_write_to_a_log_that_is_no_database_says_to_move_it_aside(
    tmp_path: Path,
) -> None:
    """A call's write met an audit.db written over (no SQLite database) with "make that store
    writable", which does nothing for it, while the probe said to move it aside: a server's
    calls, which write without probing first, now say what the probe says."""
    from webward.audit._sqlite import SQLiteAuditSink

    (tmp_path / "audit.db").write_bytes(b"no database at all " * 64)
    sink = SQLiteAuditSink(tmp_path)
    try:
        with pytest.raises(webward.Refused) as err:
            await sink.write(record())
    finally:
        await sink.aclose()
    assert err.value.reason == "audit_unavailable"
    assert err.value.message.endswith(
        "file is not a database; it is no SQLite database: move it aside (webward starts a new "
        "one), or point [state] dir (WEBWARD_STATE_DIR) at another directory"
    )
