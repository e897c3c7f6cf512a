"""Every call leaves exactly one audit record, whatever happens (issue 12, item 1).

A read cancelled by its caller after the request went out, an exception no step expected and
an audit store failing on one row are each recorded (decision ``failed``, reason
``cancelled`` / ``internal_error``) on every store, and every face answers an unexpected error
in one sentence with code ``internal_error``, never a traceback.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from localserver import LocalServer, Request, respond, serve
from mcp import Client
from stores import stored_records
from test_gateway import TOKENS, running_gateway
from test_gateway import write_config as gateway_config

import webward
import webward._convert
from webward import Settings, StaticResolver, Web
from webward._credentials import EnvironmentStore
from webward._errors import Refused, WebwardError
from webward._gateway import FETCH_PATH, SEARCH_PATH
from webward._mcp import build_server
from webward.agents import ToolContext, execute_tool
from webward.audit import AuditRecord, SQLiteAuditSink
from webward.audit._postgres import PostgresAuditSink
from webward.cli import main
from webward.search import Hit
from webward.testing import FakeClock, MemoryAuditSink

PAGE = "<html><head><title>T</title></head><body><p>an ordinary page</p></body></html>"


def settings_for(tmp_path: Path) -> Settings:
    return Settings.load(
        overrides={
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected", "robots": False},
            "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
            "state": {"dir": str(tmp_path / "state")},
        },
        environ={},
    )


@asynccontextmanager
async def store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """An audit sink of each kind: in memory, SQLite in the temp dir, real PostgreSQL."""
    sink: Any
    if kind == "memory":
        sink = MemoryAuditSink()
    elif kind == "sqlite":
        sink = SQLiteAuditSink(tmp_path / "state")
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        sink = PostgresAuditSink(dsn, dsn_env="WEBWARD_TEST_PG")
    try:
        yield sink
    finally:
        await sink.aclose()


STORES = ["memory", "sqlite", "postgres"]


@contextmanager
def stalled_site() -> Iterator[tuple[LocalServer, threading.Event]]:
    """A loopback server that takes the request and answers nothing until released."""
    release = threading.Event()

    def stall(req: Request, sock: socket.socket) -> None:
        release.wait(30)

    with serve(routes={"/slow": stall, "/page": respond(200, PAGE)}) as site:
        try:
            yield site, release
        finally:
            release.set()


async def request_arrived(site: LocalServer, count: int = 1) -> None:
    """Wait until the server holds ``count`` requests (polled; bounded by the caller)."""
    while len(site.requests) < count:
        await anyio.sleep(0.01)


class BrokenResolver:
    """A resolver with a bug of its own: an exception no webward step expects."""

    async def resolve(self, host: str) -> list[str]:
        raise RuntimeError("resolver bug with a secret detail")


class BrokenProvider:
    """A search provider adapter with a bug."""

    name = "broken"

    async def search(self, query: str, limit: int) -> list[Hit]:
        raise KeyError("provider bug")


def broken_convert(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("converter bug with a secret detail")


# ---- the core, on each store ------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("kind", STORES)
async def test_a_read_cancelled_after_its_request_went_out_is_audited(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A library caller's cancel scope, after the request reached the server: one record,
    ``failed`` / ``cancelled``, and the cancellation goes on to the caller."""
    async with store(kind, tmp_path, request) as sink:
        with stalled_site() as (site, _release):
            async with Web(settings_for(tmp_path), audit=sink) as web:
                with anyio.fail_after(20):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(web.fetch, site.url("/slow"))
                        await request_arrived(site)
                        tg.cancel_scope.cancel()
                records = await sink.query()
    assert [(r.decision, r.reason, r.target) for r in records] == [
        ("failed", "cancelled", site.url("/slow"))
    ]
    assert records[0].redirects == (site.url("/slow"),)


@pytest.mark.anyio
async def test_asyncio_wait_for_timeout_is_audited(tmp_path: Path) -> None:
    """``asyncio.wait_for`` around a read whose server never answers: TimeoutError for the
    caller, and a ``cancelled`` record in the store."""
    sink = MemoryAuditSink()
    with stalled_site() as (site, _release):
        async with Web(settings_for(tmp_path), audit=sink) as web:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(web.fetch(site.url("/slow")), timeout=1.0)
    assert site.requests and site.requests[0].path == "/slow"
    assert [(r.decision, r.reason) for r in sink.records] == [("failed", "cancelled")]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", STORES)
async def test_an_unexpected_exception_is_audited_and_re_raised(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A collaborator's own bug (the resolver, a search provider adapter) is recorded as
    ``failed`` / ``internal_error`` and reaches the library caller unchanged."""
    async with store(kind, tmp_path, request) as sink:
        web = Web(
            settings_for(tmp_path),
            resolver=BrokenResolver(),
            audit=sink,
            search_provider=BrokenProvider(),
        )
        async with web:
            with pytest.raises(RuntimeError, match="resolver bug"):
                await web.fetch("http://pages.example/x", agent="lib")
            with pytest.raises(KeyError):
                await web.search("owls", agent="lib")
            records = await sink.query()
    assert sorted((r.capability, r.decision, r.reason, r.agent) for r in records) == [
        ("web:page.fetch@1", "failed", "internal_error", "lib"),
        ("web:search.query@1", "failed", "internal_error", "lib"),
    ]
    assert {r.provider for r in records} == {None, "broken"}


class ExplodingSink(MemoryAuditSink):
    """A sink of the caller's own whose write fails in its own way (not ``Refused``)."""

    async def write(self, record: AuditRecord) -> None:
        raise ValueError("the sink's own bug")


@pytest.mark.anyio
async def test_a_sink_failing_its_own_way_refuses_the_call(tmp_path: Path) -> None:
    """No record, no call: a sink raising anything is ``audit_unavailable``, not a crash."""
    with serve(routes={"/page": respond(200, PAGE)}) as site:
        async with Web(settings_for(tmp_path), audit=ExplodingSink()) as web:
            with pytest.raises(Refused) as info:
                await web.fetch(site.url("/page"))
    assert info.value.reason == "audit_unavailable"
    assert "ValueError" in info.value.message


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_one_bad_row_never_costs_another_callers_record(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A batch failing on one row's content is retried row by row: every other record of the
    batch is written, and only the bad row's writer is refused."""
    async with store(kind, tmp_path, request) as sink:
        ok = [
            AuditRecord.create(decision="allowed", reason="allowed", agent=f"a{i}")
            for i in range(8)
        ]
        bad = AuditRecord.create(decision="allowed", reason="allowed", agent="bad", bytes=2**70)
        outcomes: dict[str, BaseException | None] = {}

        async def write(rec: AuditRecord) -> None:
            try:
                await sink.write(rec)
            except Refused as exc:
                outcomes[rec.agent] = exc
            else:
                outcomes[rec.agent] = None

        async with anyio.create_task_group() as tg:
            for rec in [ok[0], *ok[1:4], bad, *ok[4:]]:  # the first leads; the rest batch up
                tg.start_soon(write, rec)
        stored = {r.agent for r in await sink.query(limit=100)}
    assert stored == {r.agent for r in ok}
    assert isinstance(outcomes.pop("bad"), Refused)
    assert set(outcomes.values()) == {None}


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_lone_bad_row_is_not_said_as_the_store_down(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    """A record refused for its own content, alone in its batch, says nothing in the log: the
    store took the records before it and takes the ones after, so a "cannot be written" line
    (and a "written again" one after it) would send the operator after a store that works."""
    caplog.set_level(logging.WARNING, logger="webward")
    async with store(kind, tmp_path, request) as sink:
        await sink.write(AuditRecord.create(decision="allowed", reason="allowed"))
        with pytest.raises(Refused):
            await sink.write(AuditRecord.create(decision="allowed", reason="allowed", bytes=2**70))
        await sink.write(AuditRecord.create(decision="allowed", reason="allowed"))
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.anyio
async def test_postgres_stores_nul_bytes_escaped(tmp_path: Path, postgres_dsn: str) -> None:
    """A NUL in a URL and an agent name (PostgreSQL text cannot hold one) is stored escaped,
    so the refusal is audited rather than turned into ``audit_unavailable``."""
    sink = PostgresAuditSink(postgres_dsn, dsn_env="WEBWARD_TEST_PG")
    async with Web(settings_for(tmp_path), audit=sink) as web:
        with pytest.raises(WebwardError) as info:
            await web.fetch("http://127.0.0.1:1/a\x00b", agent="ag\x00ent")
        assert info.value.reason != "audit_unavailable"
        [record] = await sink.query(agent="ag\\x00ent")
    assert record.target == "http://127.0.0.1:1/a\\x00b"
    assert record.decision == "refused"


# ---- the faces --------------------------------------------------------------------------


def write_cli_config(tmp_path: Path) -> Path:
    path = tmp_path / "cli.toml"
    path.write_text(
        '[network]\nallow_ranges = ["127.0.0.1/32"]\n[policy]\ndefault_tier = "connected"\n'
        f"robots = false\n[state]\ndir = {json.dumps(str(tmp_path / 'state'))}\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("as_json", [False, True])
def test_cli_answers_an_unexpected_error_in_one_sentence(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    as_json: bool,
) -> None:
    """The converter failing its own way: exit 1, one sentence (code ``internal_error`` with
    --json), no traceback, and the call in the SQLite audit log."""
    monkeypatch.setattr(webward._convert, "convert", broken_convert)
    monkeypatch.setenv("WEBWARD_STATE_DIR", str(tmp_path / "state"))
    config = write_cli_config(tmp_path)
    body = "<p>" + "x" * 10_000 + "</p>"  # small: converted in this process, patched above
    with serve(routes={"/p": respond(200, body)}) as site:
        code = main(["fetch", site.url("/p"), "--config", str(config), *(["--json"] * as_json)])
    out = capsys.readouterr()
    assert code == 1
    assert "Traceback" not in out.err + out.out and "secret detail" not in out.err + out.out
    if as_json:
        assert json.loads(out.out)["error"]["code"] == "internal_error"
    else:
        assert out.err.startswith("webward: webward failed unexpectedly (RuntimeError)")
        assert len(out.err.strip().splitlines()) == 1
    records = stored_records(SQLiteAuditSink(tmp_path / "state"))
    assert [(r.decision, r.reason) for r in records] == [("failed", "internal_error")]


@pytest.mark.parametrize(
    ("sent", "sigint", "code"),
    [
        (signal.SIGINT, signal.SIG_DFL, 130),  # Ctrl-C at a terminal
        (signal.SIGTERM, signal.SIG_DFL, 143),  # kill, a supervisor, a container stopping
        (signal.SIGTERM, signal.SIG_IGN, 143),  # the same for a job started in the background
        (signal.SIGHUP, signal.SIG_DFL, 129),  # the terminal closed, an SSH session dropped
        (signal.SIGQUIT, signal.SIG_DFL, 131),  # Ctrl-\, some containers' stop signal
        (signal.SIGUSR1, signal.SIG_DFL, 138),  # a "reload" sent to a process that has none
        (signal.SIGUSR2, signal.SIG_DFL, 140),
    ],
    ids=["sigint", "sigterm", "sigterm-in-background", "sighup", "sigquit", "sigusr1", "sigusr2"],
)
def test_cli_interrupted_mid_read_is_audited(
    tmp_path: Path, sent: signal.Signals, sigint: Any, code: int
) -> None:
    """Ctrl-C (SIGINT), SIGTERM, SIGHUP or another of _signals.ENDING_SIGNALS while `webward
    fetch` waits on a server that took the request: exit 128 + the signal's number, and the
    read is in the SQLite audit log as ``cancelled`` (SIGTERM, then SIGHUP and the others,
    killed the process with the record unwritten)."""
    config = write_cli_config(tmp_path)
    env = {**os.environ, "WEBWARD_STATE_DIR": str(tmp_path / "state")}
    with stalled_site() as (site, _release):
        process = subprocess.Popen(
            [sys.executable, "-m", "webward", "fetch", site.url("/slow"), "--config", str(config)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # As from a terminal: a suite started in the background (`pytest &`) hands its
            # children SIGINT ignored, and Python then never turns it into KeyboardInterrupt.
            # The signal sent as its default too: a suite run under nohup hands SIGHUP ignored.
            preexec_fn=lambda: (
                signal.signal(sent, signal.SIG_DFL),
                signal.signal(signal.SIGINT, sigint),
            ),
        )
        deadline = time.monotonic() + 30
        while not site.requests and time.monotonic() < deadline:  # polled, bounded
            time.sleep(0.02)
        assert site.requests, "the request never reached the server"
        process.send_signal(sent)
        _, err = process.communicate(timeout=30)
    assert process.returncode == code, err.decode()
    assert b"Traceback" not in err
    records = stored_records(SQLiteAuditSink(tmp_path / "state"))
    assert [(r.decision, r.reason) for r in records] == [("failed", "cancelled")]


@pytest.mark.anyio
async def test_mcp_answers_an_unexpected_error_as_is_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the official client: ``isError``, code ``internal_error``, one sentence; the
    session goes on, and both calls are audited."""
    audit = MemoryAuditSink()
    with serve(routes={"/page": respond(200, PAGE)}) as site:
        async with (
            Web(settings_for(tmp_path), audit=audit) as web,
            Client(build_server(web, tier="connected")) as client,
        ):
            monkeypatch.setattr(webward._convert, "convert", broken_convert)
            failed = await client.call_tool("web_fetch", {"url": site.url("/page")})
            monkeypatch.undo()
            ok = await client.call_tool("web_fetch", {"url": site.url("/page") + "?2"})
    assert failed.is_error and failed.meta is not None
    assert failed.meta["webward/result"]["error"]["code"] == "internal_error"
    [block] = failed.content
    assert "Traceback" not in getattr(block, "text", "") and "secret" not in getattr(
        block, "text", ""
    )
    assert not ok.is_error
    assert [(r.decision, r.reason) for r in audit.records] == [
        ("failed", "internal_error"),
        ("allowed", "allowed"),
    ]


@pytest.mark.anyio
async def test_mcp_notifications_cancelled_leaves_a_record(tmp_path: Path) -> None:
    """The official client abandons a call (it sends ``notifications/cancelled``): the
    server's read is cancelled and audited as ``cancelled``."""
    audit = MemoryAuditSink()
    with stalled_site() as (site, _release):
        async with (
            Web(settings_for(tmp_path), audit=audit) as web,
            Client(build_server(web, tier="connected")) as client,
        ):
            with anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.call_tool, "web_fetch", {"url": site.url("/slow")})
                    await request_arrived(site)
                    tg.cancel_scope.cancel()
                while not audit.records:
                    await anyio.sleep(0.01)
            ok = await client.call_tool("web_fetch", {"url": site.url("/page")})
    assert not ok.is_error
    assert [(r.decision, r.reason) for r in audit.records] == [
        ("failed", "cancelled"),
        ("allowed", "allowed"),
    ]


@asynccontextmanager
async def searching_gateway(tmp_path: Path, provider: Any) -> AsyncIterator[tuple[Any, Any]]:
    """The gateway over a Web whose search provider is ``provider``: a ``post(path, body)``
    that calls it as alice, and the Web's audit sink."""
    settings = Settings.load(gateway_config(tmp_path), environ={})
    audit = MemoryAuditSink()

    def make_web() -> Web:
        return Web(
            settings,
            resolver=StaticResolver({}),
            audit=audit,
            credentials=EnvironmentStore({}),
            search_provider=provider,
        )

    with running_gateway(settings, make_web) as base:
        async with httpx.AsyncClient(trust_env=False, timeout=20) as client:

            async def post(path: str, body: dict[str, Any]) -> httpx.Response:
                headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
                return await client.post(base + path, json=body, headers=headers)

            yield post, audit


@pytest.mark.anyio
async def test_gateway_answers_an_unexpected_error_with_500_internal_error(
    tmp_path: Path,
) -> None:
    """A search provider's bug behind the gateway: 500 with the JSON error model, code
    ``internal_error``, and the call audited."""
    async with searching_gateway(tmp_path, BrokenProvider()) as (post, audit):
        response = await post(SEARCH_PATH, {"query": "owls"})
        fetch = await post(FETCH_PATH, {"url": "http://127.0.0.1:1/"})
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal_error"
    assert "Traceback" not in response.text
    assert fetch.status_code == 502  # the gateway goes on serving
    assert [(r.decision, r.reason) for r in audit.records] == [
        ("failed", "internal_error"),
        ("failed", "connect"),
    ]


class OutOfFilesProvider:
    """A search provider that meets the process's limit on open files (its socket)."""

    name = "out-of-files"

    async def search(self, query: str, limit: int) -> list[Hit]:
        raise OSError(errno.EMFILE, "Too many open files")


@pytest.mark.anyio
async def test_running_out_of_open_files_is_said_as_itself(tmp_path: Path) -> None:
    """No file descriptor left (``ulimit -n``) is no bug: the answer says which limit to
    raise, and the call is audited as one that failed."""
    async with searching_gateway(tmp_path, OutOfFilesProvider()) as (post, audit):
        response = await post(SEARCH_PATH, {"query": "owls"})
    message = response.json()["error"]["message"]
    assert response.status_code == 500 and "ran out of open files (ulimit -n is " in message
    assert "a bug" not in message
    assert [(r.decision, r.reason) for r in audit.records] == [("failed", "internal_error")]


@pytest.mark.anyio
async def test_agent_loop_tool_answers_an_unexpected_error_and_it_is_audited(
    tmp_path: Path,
) -> None:
    """The agent tool layer over a real Web: an error result for the model, one record."""
    audit = MemoryAuditSink()
    async with Web(settings_for(tmp_path), resolver=BrokenResolver(), audit=audit) as web:
        result = await execute_tool(
            "web_fetch", {"url": "http://pages.example/"}, ToolContext(web, "research")
        )
    assert result.is_error and "(internal_error)" in result.text
    assert "Traceback" not in result.text
    assert [(r.decision, r.reason, r.agent) for r in audit.records] == [
        ("failed", "internal_error", "research")
    ]


@pytest.mark.anyio
async def test_no_request_goes_out_while_the_audit_store_cannot_record(tmp_path: Path) -> None:
    """A store that cannot take a record (a state dir under a regular file; a sink that went
    down) refuses the call before its first request, so nothing is read unaudited; once the
    store works again, calls read as before."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with serve(routes={"/page": respond(200, PAGE)}) as site:
        async with Web(settings_for(tmp_path), audit=SQLiteAuditSink(blocker / "state")) as web:
            with pytest.raises(Refused) as info:
                await web.fetch(site.url("/page"))
        assert info.value.reason == "audit_unavailable"
        assert site.accepts == 0

        sink = MemoryAuditSink()
        async with Web(settings_for(tmp_path), audit=sink) as web:
            await web.fetch(site.url("/page"))
            sink.broken = True  # the store goes down: the next call's record fails
            with pytest.raises(Refused):
                await web.fetch(site.url("/page?second"))
            reads = len(site.requests)
            with pytest.raises(Refused):  # the store is known to be down: no request at all
                await web.fetch(site.url("/page?third"))
            assert len(site.requests) == reads
            sink.broken = False  # back: the probe passes and the call reads
            await web.fetch(site.url("/page?fourth"))
    assert [r.target.rsplit("/", 1)[1] for r in sink.records] == ["page", "page?fourth"]


@pytest.mark.anyio
async def test_a_store_stopped_while_idle_is_probed_before_the_next_read(tmp_path: Path) -> None:
    """Once no record has been seen to commit for a while, the store is probed before a call
    reads: a store stopped meanwhile refuses the call with no request sent, rather than after
    a read it then cannot record."""
    clock = FakeClock()
    sink = MemoryAuditSink()
    with serve(routes={"/page": respond(200, PAGE)}) as site:
        async with Web(settings_for(tmp_path), audit=sink, clock=clock) as web:
            await web.fetch(site.url("/page"))
            sink.broken = True  # stopped while idle: nothing has failed yet
            clock.advance(6)
            with pytest.raises(Refused) as info:
                await web.fetch(site.url("/page?after-idle"))
    assert info.value.reason == "audit_unavailable"
    assert [r.path for r in site.requests] == ["/page"]


@pytest.mark.anyio
async def test_a_web_closed_under_a_call_audits_it_as_cancelled_not_as_the_hosts_fault(
    tmp_path: Path,
) -> None:
    """``aclose()`` while another task's read is in flight closes its connection under it:
    the call is recorded (and raised) as stopped by the close, reason ``cancelled``, not as
    "the connection broke", which sent its reader after the host."""
    arrived, release = threading.Event(), threading.Event()

    def hanging(req: Request, sock: socket.socket) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 99\r\n\r\n")
        arrived.set()
        release.wait(10)

    sink = MemoryAuditSink()
    outcome: list[BaseException] = []
    with serve(routes={"/slow": hanging}) as site:
        web = Web(settings_for(tmp_path), audit=sink)
        await web.__aenter__()

        async def read() -> None:
            try:
                await web.fetch(site.url("/slow"))
            except WebwardError as exc:
                outcome.append(exc)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                await anyio.to_thread.run_sync(arrived.wait)
                await web.aclose()
        finally:
            release.set()
    [error] = outcome
    assert (error.reason, error.message) == (
        "cancelled",
        "the call was stopped: its Web was closed (aclose) while it ran",
    )
    [record] = sink.records
    assert (record.decision, record.reason) == ("failed", "cancelled")


class CountingSink(MemoryAuditSink):
    """A store whose probe takes a while (a committed write, on a thread) and is counted."""

    def __init__(self) -> None:
        super().__init__()
        self.probes = 0

    async def probe(self) -> None:
        self.probes += 1
        await anyio.sleep(0.01)
        await super().probe()

    async def write(self, record: AuditRecord) -> None:
        await super().probe()  # the write's own check, not a probe of the Web's
        self.records.append(record)


@pytest.mark.anyio
@pytest.mark.parametrize("broken", [False, True])
async def test_calls_arriving_together_after_idle_share_one_probe(
    tmp_path: Path, broken: bool
) -> None:
    """Fifty calls that arrive together after an idle spell wait for one probe of the store,
    and all read once it passes (or are all refused, with no request, once it fails): each
    made a probe of its own, a committed write each, one after another before any read."""
    clock = FakeClock()
    sink = CountingSink()
    with serve(routes={"*": respond(200, PAGE)}) as site:
        async with Web(settings_for(tmp_path), audit=sink, clock=clock) as web:
            await web.fetch(site.url("/warm"))
            sink.broken = broken
            clock.advance(6)
            probes, outcomes = sink.probes, []

            async def read(i: int) -> None:
                try:
                    await web.fetch(site.url(f"/p{i}"))
                    outcomes.append("read")
                except Refused as exc:
                    outcomes.append(exc.reason)

            async with anyio.create_task_group() as tg:
                for i in range(50):
                    tg.start_soon(read, i)
    assert sink.probes - probes == 1
    assert outcomes == (["audit_unavailable"] * 50 if broken else ["read"] * 50)
    assert len(site.requests) == (1 if broken else 51)


class FrozenSink(MemoryAuditSink):
    """A store that stops answering (a PostgreSQL server stopped with SIGSTOP): writes wait
    until it is thawed."""

    def __init__(self) -> None:
        super().__init__()
        self.thawed = anyio.Event()
        self.frozen = False
        self.waiting = 0

    async def write(self, record: AuditRecord) -> None:
        if self.frozen:
            self.waiting += 1
            await self.thawed.wait()
        await super().write(record)


@asynccontextmanager
async def a_write_waiting(
    tmp_path: Path, sink: FrozenSink, clock: FakeClock
) -> AsyncIterator[tuple[Web, Any, Any]]:
    """A ``Web`` on ``sink`` that has read "/warm", then frozen the store under a read of
    "/in-flight" whose write waits: (the web, the site, the task group running that read)."""
    with serve(routes={"*": respond(200, PAGE)}) as site:
        async with Web(settings_for(tmp_path), audit=sink, clock=clock) as web:
            await web.fetch(site.url("/warm"))
            sink.frozen = True
            async with anyio.create_task_group() as tg:
                tg.start_soon(web.fetch, site.url("/in-flight"))  # read, then its write waits
                while sink.waiting == 0:
                    await anyio.sleep(0.01)
                yield web, site, tg


@pytest.mark.anyio
async def test_no_request_goes_out_while_a_write_waits_on_a_frozen_store(tmp_path: Path) -> None:
    """A write waiting for its commit for seconds means the store does not answer: calls are
    refused before they read (each of them audited once the store answers again), rather than
    every read of the sink's 10-second bound going out unrecorded."""
    sink, clock = FrozenSink(), FakeClock()
    async with a_write_waiting(tmp_path, sink, clock) as (web, site, tg):
        clock.advance(1)  # a slow commit, not yet a frozen store: calls still read
        tg.start_soon(web.fetch, site.url("/still-read"))
        while sink.waiting == 1:
            await anyio.sleep(0.01)
        clock.advance(3)

        async def thaw_once_the_refusal_waits() -> None:
            while sink.waiting < 3:  # the refusal's own record waits too
                await anyio.sleep(0.01)
            sink.thawed.set()

        tg.start_soon(thaw_once_the_refusal_waits)
        with pytest.raises(Refused) as info:
            await web.fetch(site.url("/refused"))
    assert info.value.reason == "audit_unavailable"
    assert "has not committed a record for 4 s" in info.value.message
    assert [r.path for r in site.requests] == ["/warm", "/in-flight", "/still-read"]
    assert sorted((r.target.rsplit("/", 1)[1], r.decision) for r in sink.records) == [
        ("in-flight", "allowed"),
        ("refused", "refused"),
        ("still-read", "allowed"),
        ("warm", "allowed"),
    ]


@pytest.mark.anyio
async def test_a_held_event_loop_is_not_taken_for_a_frozen_store(tmp_path: Path) -> None:
    """The event loop held for seconds (a long conversion, a paused process) while the store
    committed: the write's answer is queued behind the hold, so it looks seconds old to the
    next call. That call waits a moment for the answer rather than refusing as if the store
    were frozen (a gateway answered 503 "audit unavailable" with its store working)."""
    sink, clock = FrozenSink(), FakeClock()
    async with a_write_waiting(tmp_path, sink, clock) as (web, site, _):
        # The store commits, but the loop is held 4 s before the writer resumes.
        sink.frozen = False
        sink.thawed.set()
        clock.advance(4)
        page = await web.fetch(site.url("/next"))
    assert page.status == 200
    assert sorted((r.target.rsplit("/", 1)[1], r.decision) for r in sink.records) == [
        ("in-flight", "allowed"),
        ("next", "allowed"),
        ("warm", "allowed"),
    ]


_FULL_DISK = textwrap.dedent(
    """
    import json, resource, signal, sys, anyio
    from webward import Settings, Web
    from webward.audit import AuditRecord, SQLiteAuditSink
    from webward._errors import Refused

    async def main(state):
        settings = Settings.load(overrides={"state": {"dir": state}}, environ={})
        sink = SQLiteAuditSink(state)
        def record():
            return AuditRecord.create(decision="allowed", reason="allowed", agent="cli")

        said = []

        async def attempt(name, step):
            try:
                await step()
                said.append([name, None])
            except Refused as exc:
                said.append([name, exc.message])

        async with Web(settings, audit=sink) as web:
            await sink.write(record())
            await attempt("ready", web.check_ready)  # the probe's own table made with room
            # No file of this process grows from here on: to SQLite, the disk is full (its
            # -wal cannot grow, nor can the log take the -wal's pages at a checkpoint), as a
            # full disk's ENOSPC is; EFBIG, and no signal.
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
            size = min(
                sink.path.with_name("audit.db-wal").stat().st_size, sink.path.stat().st_size
            )
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
            await attempt("ready when full", web.check_ready)
            await attempt("probe when full", sink.probe)
            await attempt("write when full", lambda: sink.write(record()))
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            await attempt("ready again", web.check_ready)
        print(json.dumps(said))

    anyio.run(main, sys.argv[1])
    """
)


def test_a_full_disk_fails_the_probe_so_readiness_and_the_pre_read_proof(
    tmp_path: Path,
) -> None:
    """A store whose disk is full takes its write lock but cannot commit: the probe (behind
    /readyz and the proof a call's read waits for) commits a real write, so it fails as the
    records do, in one sentence naming the store's error; and passes once there is room."""
    out = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(tmp_path / "state")],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(webward.__file__).resolve().parents[1])},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    said = dict(json.loads(out.stdout))
    # The full disk is played by a file size limit at the smaller of the -wal's and the
    # log's sizes, which the sentence names (its number is that size in the child).
    full = said["write when full"]
    assert re.fullmatch(
        re.escape(
            "refused: audit unavailable; webward does not open the door unaudited; "
            f"{tmp_path / 'state' / 'audit.db'}: it cannot grow past this process's file size "
            "limit (ulimit -f), "
        )
        + r"[\d,]+"
        + re.escape(
            " bytes (disk I/O error); raise that limit (ulimit -f unlimited; LimitFSIZE= of a "
            "systemd service), or point [state] dir (WEBWARD_STATE_DIR) or [audit] at another "
            "store"
        ),
        full,
    ), full
    assert said == {
        "ready": None,
        "ready when full": full,
        "probe when full": full,
        "write when full": full,
        "ready again": None,
    }


_WAL_OUT_OF_ROOM = textwrap.dedent(
    """
    import json, resource, signal, sys, anyio
    from webward import Settings, Web
    from webward.audit import SQLiteAuditSink
    from webward._errors import Refused

    async def main(state, url):
        settings = Settings.load(
            overrides={
                "network": {"allow_ranges": ["127.0.0.1/32"]},
                "policy": {"default_tier": "connected", "robots": False},
                "state": {"dir": state},
            },
            environ={},
        )
        sink = SQLiteAuditSink(state)
        said = []
        async with Web(settings, audit=sink) as web:
            await web.fetch(url + "?0")
            # From here the -wal may grow by two pages (of 4 KiB, each with its 24-byte
            # header): room for the probe's one page, not for a record's three or more.
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
            wal = sink.path.with_name("audit.db-wal").stat().st_size
            resource.setrlimit(resource.RLIMIT_FSIZE, (wal + 2 * 4120, hard))
            for i in range(1, 5):
                try:
                    await web.fetch(f"{url}?{i}")
                    said.append([i, "read"])
                except Refused as exc:
                    said.append([i, exc.reason])
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        print(json.dumps(said))

    anyio.run(main, sys.argv[1], sys.argv[2])
    """
)


def test_a_wal_that_cannot_grow_is_started_again_not_left_to_lose_records(
    tmp_path: Path,
) -> None:
    """The SQLite log's -wal grows by each commit until SQLite starts it again at 4 MiB.
    Where it could not grow (a file size limit, a disk with a few pages left) every record
    was refused from there on, though the log had room, and the probe, one page where a
    record is three or more, passed on the room a record lacked: each of the next calls
    read its page and then lost its record (three reads out, none in the log). A write
    that runs out of room now checkpoints the -wal into the log and is tried once more:
    every call reads and every read is in the log."""
    with serve(routes={"/page": respond(200, PAGE)}) as site:
        out = subprocess.run(
            [sys.executable, "-c", _WAL_OUT_OF_ROOM, str(tmp_path / "state"), site.url("/page")],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(Path(webward.__file__).resolve().parents[1])},
        )  # fmt: skip
    assert out.returncode == 0, out.stderr
    read = {req.target for req in site.requests}
    audited = {r.target for r in stored_records(SQLiteAuditSink(tmp_path / "state"))}
    assert {site.url(t) for t in read} - audited == set()  # no read went out unrecorded
    assert json.loads(out.stdout) == [[i, "read"] for i in range(1, 5)]
    assert len(audited) == 5


LEAKED = "https://user:Zq-pw@example.org/o?X-Amz-Signature=Zq-sig&accessToken=Zq-token"


def leaky_convert(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(f"converter bug while reading {LEAKED}")


class LeakyProvider:
    """A search provider adapter whose bug names a URL with its secrets."""

    name = "leaky"

    async def search(self, query: str, limit: int) -> list[Hit]:
        raise KeyError(f"provider bug at {LEAKED}")


@pytest.mark.anyio
async def test_the_log_line_of_a_bug_at_mcp_and_the_gateway_holds_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug's traceback is logged for the operator, whose log goes wherever it is shipped:
    a URL in its text loses its credentials and its secret query values there, as a span's
    and the call log's do; the rest of the traceback stays."""
    with caplog.at_level(logging.ERROR):
        with serve(routes={"/page": respond(200, PAGE)}) as site:
            async with (
                Web(settings_for(tmp_path), audit=MemoryAuditSink()) as web,
                Client(build_server(web, tier="connected")) as client,
            ):
                monkeypatch.setattr(webward._convert, "convert", leaky_convert)
                assert (await client.call_tool("web_fetch", {"url": site.url("/page")})).is_error
        async with searching_gateway(tmp_path, LeakyProvider()) as (post, _audit):
            assert (await post(SEARCH_PATH, {"query": "owls"})).status_code == 500
    logged = caplog.text  # the messages with any traceback logged beside them
    assert "Traceback" in logged and "converter bug" in logged and "provider bug" in logged
    assert "Zq" not in logged and "X-Amz-Signature=REDACTED" in logged


# What Python raises when a thread cannot be started: the process at its limit on a user's
# processes and threads (``ulimit -u``), which root is not held to, so no test can reach it.
NO_THREAD = "can't start new thread"


class NoThreadProvider:
    """A search provider whose thread (a DNS lookup, a conversion) cannot be started."""

    name = "no-thread"

    async def search(self, query: str, limit: int) -> list[Hit]:
        raise RuntimeError(NO_THREAD)


class NoThreadSink(MemoryAuditSink):
    """A store whose write runs on a thread that cannot be started."""

    async def write(self, record: AuditRecord) -> None:
        raise RuntimeError(NO_THREAD)


@pytest.mark.anyio
async def test_a_thread_that_cannot_start_is_said_as_the_limit_to_raise(tmp_path: Path) -> None:
    """Under a low `ulimit -u` a read failed as "webward failed unexpectedly (RuntimeError);
    this is a bug", and a store's write as "the audit sink failed: RuntimeError; make that
    store writable": both now name the limit and the step, and the call is audited."""
    async with searching_gateway(tmp_path, NoThreadProvider()) as (post, audit):
        response = await post(SEARCH_PATH, {"query": "owls"})
    message = response.json()["error"]["message"]
    assert response.status_code == 500
    assert message.startswith("webward could not start a thread (ulimit -u ")  # set or not
    assert "raise that limit" in message and "a bug" not in message
    assert [(r.decision, r.reason) for r in audit.records] == [("failed", "internal_error")]
    with serve(routes={"/page": respond(200, PAGE)}) as site:
        async with Web(settings_for(tmp_path), audit=NoThreadSink()) as web:
            with pytest.raises(Refused) as info:
                await web.fetch(site.url("/page"))
    assert info.value.reason == "audit_unavailable"
    assert "the audit sink could not start a thread (ulimit -u " in info.value.message
    assert info.value.message.endswith("; raise that limit")
    assert "writable" not in info.value.message


def test_a_thread_that_cannot_start_under_no_ulimit_names_the_systems_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where `ulimit -u` sets no limit, the sentence said "(no limit set, and it counts this
    user's threads too); raise that limit": a limit it had just said was not there."""
    import resource

    from webward._errors import out_of_threads

    real = resource.getrlimit

    def unlimited(which: int) -> tuple[int, int]:
        if which == resource.RLIMIT_NPROC:
            return (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
        return real(which)

    monkeypatch.setattr(resource, "getrlimit", unlimited)
    said = out_of_threads(RuntimeError(NO_THREAD))
    assert said is not None
    assert said.message.startswith(
        "webward could not start a thread (ulimit -u sets no limit here, so the system's own "
        "did: kernel.threads-max, or memory); raise that limit"
    ), said.message
