"""Scaling out the audit log: replicas writing into one real PostgreSQL lose no row, read each
other's rows (through ``query`` and ``webward audit``), refuse calls when it is down, and never
show the DSN."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
import pytest
from conftest import PgBouncer, PostgresServer
from localserver import respond, serve
from psycopg import conninfo
from stores import older_audit_table
from test_gateway import running_gateway

from webward import Refused, Settings, StaticResolver, Web
from webward._gateway import FETCH_PATH, hash_token
from webward.audit import REASON_AUDIT_UNAVAILABLE, AuditRecord, open_audit_sink
from webward.audit._postgres import PostgresAuditSink
from webward.testing import FakeClock

pytestmark = pytest.mark.anyio

ENV = "WEBWARD_TEST_PG_DSN"
SECRET = "pg-pass-0123456789"  # trust auth ignores it; it must never be shown


def with_password(dsn: str) -> str:
    return f"{dsn} password={SECRET}"


def settings(**sections: Any) -> Settings:
    return Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected", "robots": False},
            "limits": {"per_host_rate": 1000.0, "per_host_burst": 1000},
            "audit": {"postgres_dsn_env": ENV},
            **sections,
        }
    )


def record(agent: str, i: int = 0) -> AuditRecord:
    return AuditRecord.create(
        decision="allowed",
        reason="allowed",
        agent=agent,
        tier="connected",
        capability="web:page.fetch@1",
        target=f"https://example.org/{agent}/{i}",
        redirects=[f"https://example.org/{agent}/{i}"],
        status=200,
        bytes=12,
        duration_ms=3,
    )


async def test_the_setting_chooses_postgres_and_a_missing_variable_refuses(
    postgres_dsn: str,
) -> None:
    """postgres_dsn_env picks the PostgreSQL sink; with the variable unset or empty every call
    is refused, naming the variable."""
    s = settings()
    sink = open_audit_sink(s, {ENV: with_password(postgres_dsn)})
    assert isinstance(sink, PostgresAuditSink)
    assert SECRET not in repr(sink) and ENV in repr(sink)
    await sink.aclose()
    for environ in ({}, {ENV: "  "}):
        missing = open_audit_sink(s, environ)
        with pytest.raises(Refused) as err:
            await missing.write(record("a"))
        assert err.value.reason == REASON_AUDIT_UNAVAILABLE and f"${ENV}" in err.value.message
        assert err.value.message.endswith(f"set ${ENV} to the PostgreSQL DSN of the audit log, "
                                          "or leave [audit] postgres_dsn_env out to audit into "
                                          "SQLite in the state dir")  # fmt: skip
        with pytest.raises(Refused) as err:
            await missing.query()
        assert err.value.message.startswith("refused: the audit log cannot be read (")
        assert "unaudited" not in err.value.message  # a read opens no door


async def test_two_replicas_write_into_one_log_and_read_each_other(postgres_dsn: str) -> None:
    """Two replicas' reads land in one table; query on either returns both rows, newest
    first, filtered by agent and decision, with every field intact."""
    env = {ENV: with_password(postgres_dsn)}
    clock = FakeClock()
    with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
        async with (
            Web(
                settings(), StaticResolver({}), audit=open_audit_sink(settings(), env), clock=clock
            ) as a,
            Web(
                settings(), StaticResolver({}), audit=open_audit_sink(settings(), env), clock=clock
            ) as b,
        ):
            await a.fetch(srv.url("/one"), agent="alpha")
            await b.fetch(srv.url("/two"), agent="beta")
    sink = open_audit_sink(settings(), env)
    rows = await sink.query()
    only_beta = await sink.query(agent="beta")
    none_refused = await sink.query(decision="refused")
    later = await sink.query(since=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))
    direct = record("gamma")
    await sink.write(direct)
    (back,) = await sink.query(agent="gamma")
    await sink.aclose()
    assert [(r.agent, r.target) for r in rows] == [
        ("beta", srv.url("/two")),
        ("alpha", srv.url("/one")),
    ]
    assert [r.status for r in rows] == [200, 200] and rows[0].redirects == (srv.url("/two"),)
    assert [r.agent for r in only_beta] == ["beta"]
    assert none_refused == [] and later == []
    assert back == direct


async def test_replicas_write_and_read_through_pgbouncer(
    postgres_dsn: str, pgbouncer: Callable[[str], PgBouncer]
) -> None:
    """Through PgBouncer in transaction pooling mode (and session mode), two replicas' sinks
    write and read one after the other on the one server connection the pool holds. psycopg
    prepares a statement on the server once it has run five times, and keeps the name for its
    own connection: under transaction pooling the next client's prepare of that name met it
    (``prepared statement "_pg3_0" already exists``), and calls were refused
    ``audit_unavailable`` (a probe's ROLLBACK, which empties psycopg's cache, came between
    only sometimes). The sink prepares nothing, so every record and read goes through."""
    dbname = conninfo.conninfo_to_dict(postgres_dsn)["dbname"]
    for mode in ("transaction", "session"):
        dsn = pgbouncer(mode).dsn(str(dbname))
        sinks = [PostgresAuditSink(dsn, dsn_env=ENV), PostgresAuditSink(dsn, dsn_env=ENV)]
        try:
            for i in range(8):
                for n, sink in enumerate(sinks):
                    await sink.write(record(f"{mode}{n}", i))
                    assert len(await sink.query(agent=f"{mode}{n}")) == i + 1
            for sink in sinks:
                await sink.probe()
        finally:
            for sink in sinks:
                await sink.aclose()
    direct = PostgresAuditSink(postgres_dsn, dsn_env=ENV)
    rows = await direct.query(limit=1000)
    await direct.aclose()
    assert sorted((r.agent, r.target) for r in rows) == sorted(
        (f"{mode}{n}", f"https://example.org/{mode}{n}/{i}")
        for mode in ("transaction", "session")
        for n in range(2)
        for i in range(8)
    )


def test_two_gateways_under_load_record_every_call_once_and_keep_one_budget(
    postgres_dsn: str, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two gateways (uvicorn, as `webward serve` runs them) on one PostgreSQL and one Redis,
    240 calls at once spread over both: every call's record is in the log once (no call
    lost, none doubled), and an agent's hour budget of 100 lets exactly 100 through, whichever
    replica answered, the rest refused budget_exhausted and recorded so."""
    monkeypatch.setenv(ENV, postgres_dsn)
    s = settings(
        state={"redis_url": redis_url},
        agents={
            "alice": {"token_sha256": hash_token("alice-token"), "budget": {"fetch_per_hour": 100}},
            "bob": {"token_sha256": hash_token("bob-token")},
        },
    )
    jobs = [("alice" if i % 3 else "bob", i) for i in range(240)]
    answers: list[tuple[str, int]] = []
    with (
        serve(routes={"*": respond(200, "<p>a page</p>")}) as srv,
        running_gateway(s, lambda: Web(s)) as a,
        running_gateway(s, lambda: Web(s)) as b,
    ):

        async def calls() -> None:
            slots = anyio.Semaphore(30)
            async with httpx.AsyncClient(timeout=60) as client:

                async def one(agent: str, i: int) -> None:
                    async with slots:
                        answer = await client.post(
                            (a, b)[i % 2] + FETCH_PATH,
                            json={"url": srv.url(f"/p{i % 20}")},
                            headers={"Authorization": f"Bearer {agent}-token"},
                        )
                        answers.append((agent, answer.status_code))

                async with anyio.create_task_group() as tg:
                    for agent, i in jobs:
                        tg.start_soon(one, agent, i)

        anyio.run(calls)
    with psycopg.connect(postgres_dsn) as conn:
        rows = conn.execute(
            "SELECT agent, decision, reason, count(*), count(DISTINCT id) FROM audit "
            "GROUP BY agent, decision, reason ORDER BY agent, decision"
        ).fetchall()
    assert sorted(Counter(answers).items()) == [
        (("alice", 200), 100),
        (("alice", 403), 60),
        (("bob", 200), 80),
    ]
    assert rows == [
        ("alice", "allowed", "allowed", 100, 100),
        ("alice", "refused", "budget_exhausted", 60, 60),
        ("bob", "allowed", "allowed", 80, 80),
    ]


async def test_concurrent_writers_lose_no_row(postgres_dsn: str) -> None:
    """100 records written at once from two replicas' sinks are all there afterwards."""
    env = {ENV: postgres_dsn}
    sinks = [open_audit_sink(settings(), env), open_audit_sink(settings(), env)]

    async def write_many(sink: Any, agent: str) -> None:
        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(sink.write, record(agent, i))

    async with anyio.create_task_group() as tg:
        tg.start_soon(write_many, sinks[0], "r1")
        tg.start_soon(write_many, sinks[1], "r2")
    rows = await sinks[0].query(limit=1000)
    for sink in sinks:
        await sink.aclose()
    assert len(rows) == 100 and len({r.id for r in rows}) == 100
    assert sorted(r.target for r in rows if r.agent == "r2") == sorted(
        f"https://example.org/r2/{i}" for i in range(50)
    )


async def test_webward_audit_reads_the_postgres_log(postgres_dsn: str, tmp_path: Path) -> None:
    """`python -m webward audit --json` with the config reads the replicas' rows."""
    env = {ENV: with_password(postgres_dsn)}
    sink = open_audit_sink(settings(), env)
    await sink.write(record("alpha"))
    await sink.write(record("beta"))
    await sink.aclose()
    config = tmp_path / "webward.toml"
    config.write_text(f'[audit]\npostgres_dsn_env = "{ENV}"\n')
    done = subprocess.run(
        [sys.executable, "-m", "webward", "audit", "--json", "--config", str(config)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [r["agent"] for r in json.loads(done.stdout)] == ["beta", "alpha"]


async def test_postgres_down_refuses_the_read_and_hides_the_dsn(
    postgres_server: PostgresServer, postgres_dsn: str
) -> None:
    """With PostgreSQL stopped, Web.fetch is refused (audit_unavailable) and nothing said
    shows the DSN or its password; once it is back the same sink writes again. Each refusal
    names the next step on that server and its variable: the call's sent the operator to
    ``[state] dir``, which changes nothing while the DSN is set, and the read's had none."""
    env = {ENV: with_password(postgres_dsn)}
    sink = open_audit_sink(settings(), env)
    await sink.write(record("before"))  # connected and the table made
    with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
        async with Web(settings(), StaticResolver({}), audit=sink, clock=FakeClock()) as w:
            postgres_server.stop()
            try:
                with pytest.raises(Refused) as err:
                    await w.fetch(srv.url("/"))
                with pytest.raises(Refused) as read_err:
                    await sink.query()
            finally:
                postgres_server.start()
            await sink.write(record("after"))
            agents = [r.agent for r in await sink.query()]
    assert err.value.reason == REASON_AUDIT_UNAVAILABLE
    assert srv.accepts == 0  # refused before any request: it could not have been audited
    assert read_err.value.reason == REASON_AUDIT_UNAVAILABLE
    for message in (err.value.message, read_err.value.message):
        assert f"${ENV}" in message
        assert SECRET not in message and postgres_dsn not in message
        assert f"and the DSN in ${ENV} (host, port, database" in message
        assert "[state] dir" not in message
    assert "after" in agents and "before" in agents


async def test_the_first_failure_and_the_recovery_are_logged_once(
    postgres_server: PostgresServer, postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A log that took records and then cannot (the server stopped) is said once in the
    log, naming the variable and the driver's error but never the DSN, not once per refused
    write or probe; and once more when it takes records again, as the SQLite sink says it."""
    caplog.set_level(logging.WARNING, logger="webward")
    sink = PostgresAuditSink(with_password(postgres_dsn), dsn_env=ENV)
    await sink.write(record("before"))
    postgres_server.stop()
    try:
        for attempt in (lambda: sink.write(record("down")), sink.probe) * 3:
            with pytest.raises(Refused) as err:
                await attempt()
            assert err.value.reason == REASON_AUDIT_UNAVAILABLE
    finally:
        postgres_server.start()
    await sink.probe()
    await sink.write(record("after"))
    await sink.write(record("after-2"))
    await sink.aclose()
    said = [r.getMessage() for r in caplog.records if r.name == "webward.audit._postgres"]
    assert len(said) == 2, said
    assert said[0].startswith(f"audit records cannot be written (PostgreSQL named by ${ENV}: ")
    assert said[0].endswith("); every call is refused until they can")
    assert said[1] == f"audit records are written again at the PostgreSQL named by ${ENV}"
    assert not any(SECRET in line or postgres_dsn in line for line in said)


async def test_a_role_that_lost_insert_is_the_store_down_for_probe_and_log(
    postgres_server: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A role that can connect and select but no longer insert (a DBA's REVOKE, a role
    swapped by a migration) fails the probe as it fails the records, so no call reads what it
    could not record; and it is said once in the log as the store down, not taken for one
    bad row per call. Its probe was a SELECT 1, which passed: each call read the site, then
    was refused."""
    caplog.set_level(logging.WARNING, logger="webward")
    name = f"webward_{uuid.uuid4().hex[:12]}"
    role = f"auditor_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")  # type: ignore[arg-type]
        conn.execute(f'CREATE DATABASE "{name}" OWNER {role}')  # type: ignore[arg-type]
    dsn = postgres_server.dsn(name).replace("user=webward", f"user={role}")
    sink = PostgresAuditSink(dsn, dsn_env=ENV)
    await sink.write(record("before"))
    with psycopg.connect(postgres_server.dsn(name), autocommit=True) as conn:
        conn.execute(f"REVOKE INSERT ON audit FROM {role}")  # type: ignore[arg-type]
    for attempt in (lambda: sink.write(record("down")), sink.probe) * 3:
        with pytest.raises(Refused) as err:
            await attempt()
        assert "InsufficientPrivilege" in err.value.message
    with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
        async with Web(settings(), StaticResolver({}), audit=sink) as w:
            with pytest.raises(Refused):
                await w.fetch(srv.url("/"))
    assert srv.accepts == 0
    await sink.aclose()
    said = [r.getMessage() for r in caplog.records if r.name == "webward.audit._postgres"]
    assert len(said) == 1 and said[0].startswith("audit records cannot be written"), said


async def test_a_dsn_that_does_not_parse_refuses_without_quoting_it(postgres_dsn: str) -> None:
    """libpq's parse errors quote the DSN (a password's tail, a bad percent-escape): such a
    DSN refuses every call with a sentence of webward's own, and no read goes out."""
    for dsn in (
        f"{postgres_dsn} password=Hunter2 S3cretTail",
        "postgresql://webward:S3cret%ZZpw@127.0.0.1/db",
        # A "/" in the password of a user named as an address: libpq reads
        # "127.0.0.1:S3cret42" as host and port, and quotes the port it cannot use.
        "postgresql://127.0.0.1:S3cret42/tail@127.0.0.1/db",
    ):
        sink = open_audit_sink(settings(), {ENV: dsn})
        with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
            async with Web(settings(), StaticResolver({}), audit=sink) as w:
                with pytest.raises(Refused) as err:
                    await w.fetch(srv.url("/"))
        assert srv.accepts == 0
        assert f"${ENV}" in err.value.message
        assert "S3cret" not in err.value.message


async def test_a_connection_a_restart_ended_is_replaced_without_refusing(
    postgres_server: PostgresServer, postgres_dsn: str
) -> None:
    """A server restarted while the sink's connection was idle ends that session; the next
    write opens a new connection instead of refusing its call."""
    import psycopg

    sink = open_audit_sink(settings(), {ENV: postgres_dsn})
    await sink.write(record("before"))
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    assert ended == [(True,)]
    await sink.write(record("after"))
    assert sorted(r.agent for r in await sink.query()) == ["after", "before"]
    await sink.aclose()


async def test_a_write_the_server_does_not_answer_is_refused_in_bounded_time(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A locked audit table (or a frozen server) holds no call: the batch is given up after
    the sink's bound and its call refused, and the sink writes again once the lock is gone."""
    import psycopg

    from webward.audit import _postgres

    monkeypatch.setattr(_postgres, "_CONNECT_TIMEOUT_S", 1)
    monkeypatch.setattr(_postgres, "_STATEMENT_TIMEOUT_S", 0.5)
    sink = open_audit_sink(settings(), {ENV: postgres_dsn})
    await sink.write(record("before"))
    with psycopg.connect(postgres_dsn) as locker:
        locker.execute("LOCK TABLE audit IN ACCESS EXCLUSIVE MODE")
        with anyio.fail_after(10), pytest.raises(Refused) as err:
            await sink.write(record("locked"))
        locker.rollback()
    assert err.value.reason == REASON_AUDIT_UNAVAILABLE
    assert "did not answer within 1.5 s" in err.value.message
    await sink.write(record("after"))
    assert "after" in [r.agent for r in await sink.query()]
    await sink.aclose()


@contextlib.contextmanager
def freezable_proxy(dsn: str) -> Iterator[tuple[str, threading.Event]]:
    """A loopback TCP relay in front of the server named by ``dsn``: yields the DSN through
    it and an event that, once set, stops relaying (a frozen server, a dead link: the
    connection stays open and nothing more comes back)."""
    port = int(re.search(r"port=(\d+)", dsn)[1])  # type: ignore[index]
    frozen = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))

    def pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                if frozen.is_set():
                    return  # held: neither side hears from the other again
                dst.sendall(data)

    opened: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = listener.accept()
                server = socket.create_connection(("127.0.0.1", port))
                opened.extend((client, server))
                for a, b in ((client, server), (server, client)):
                    threading.Thread(target=pump, args=(a, b), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield re.sub(r"port=\d+", f"port={listener.getsockname()[1]}", dsn), frozen
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # ends the accept under way
        listener.close()
        acceptor.join(5)  # no connection is opened after the ones closed here
        for sock in opened:
            sock.close()


@contextlib.contextmanager
def commit_cutting_proxy(dsn: str) -> Iterator[tuple[str, threading.Event]]:
    """A loopback TCP relay in front of the server named by ``dsn``: yields the DSN through
    it and an event that, once set, makes the relay close the next connection whose server
    answers a ``COMMIT`` instead of passing the answer on (once): the transaction committed,
    and its client never heard it (a link or a proxy lost at that moment)."""
    port = int(re.search(r"port=(\d+)", dsn)[1])  # type: ignore[index]
    cut = threading.Event()
    committed = b"C\x00\x00\x00\x0bCOMMIT\x00"  # CommandComplete of a COMMIT
    listener = socket.create_server(("127.0.0.1", 0))
    opened: list[socket.socket] = []

    def pump(src: socket.socket, dst: socket.socket, from_server: bool) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                if from_server and committed in data and cut.is_set():
                    cut.clear()
                    for sock in (src, dst):  # shut down: the other pump is in a recv of one
                        sock.shutdown(socket.SHUT_RDWR)
                    return
                dst.sendall(data)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = listener.accept()
                server = socket.create_connection(("127.0.0.1", port))
                opened.extend((client, server))
                for a, b, up in ((client, server, False), (server, client, True)):
                    threading.Thread(target=pump, args=(a, b, up), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield re.sub(r"port=\d+", f"port={listener.getsockname()[1]}", dsn), cut
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        acceptor.join(5)
        for sock in opened:
            sock.close()


async def test_a_commit_whose_answer_was_lost_is_neither_refused_nor_doubled(
    postgres_dsn: str,
) -> None:
    """The link broke after the server committed a batch and before the sink heard it: the
    sink tries the batch once more on a new connection, which met its own rows' ids (a
    unique violation), and refused the call as audit unavailable ("duplicate key value")
    though its record was in the log. The record is now kept once and the call goes on."""
    with commit_cutting_proxy(postgres_dsn) as (dsn, cut):
        sink = open_audit_sink(settings(), {ENV: dsn})
        await sink.write(record("before"))  # the connection the next write reuses
        cut.set()
        await sink.write(record("cut"))
        assert not cut.is_set()  # the answer of its COMMIT was lost
        agents = [r.agent for r in await sink.query()]
        await sink.aclose()
    assert sorted(agents) == ["before", "cut"]


async def test_a_clash_on_an_operators_own_unique_index_is_refused_not_dropped(
    postgres_dsn: str,
) -> None:
    """A record is kept once when its id is already there (a batch tried again after its
    COMMIT's answer was lost), and only then: a unique index an operator added on other
    columns refused the row, where ON CONFLICT with no target dropped it in silence while
    its call went on."""
    async with await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True) as conn:
        sink = PostgresAuditSink(postgres_dsn, dsn_env=ENV)
        await sink.write(record("first"))
        await conn.execute("CREATE UNIQUE INDEX audit_one_per_target ON audit (target)")
        clash = record("first")  # the same target, its own id
        with pytest.raises(Refused) as err:
            await sink.write(clash)
        agents = [r.agent for r in await sink.query()]
        await sink.aclose()
    assert err.value.reason == REASON_AUDIT_UNAVAILABLE
    assert "audit_one_per_target" in err.value.message
    assert agents == ["first"]


async def test_a_read_the_server_does_not_answer_is_refused_in_bounded_time(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frozen server held the console's read without end (40 s and more), while writes and
    probes gave up within the sink's bound: a read is bounded the same way, and refused in
    one sentence naming the variable."""
    from webward.audit import _postgres

    monkeypatch.setattr(_postgres, "_CONNECT_TIMEOUT_S", 1)
    monkeypatch.setattr(_postgres, "_STATEMENT_TIMEOUT_S", 0.5)
    with freezable_proxy(postgres_dsn) as (through, frozen):
        sink = PostgresAuditSink(through, dsn_env=ENV)
        await sink.write(record("before"))
        assert [r.agent for r in await sink.query()] == ["before"]
        frozen.set()
        with anyio.fail_after(10), pytest.raises(Refused) as err:
            await sink.query()
        await sink.aclose()
    assert err.value.reason == REASON_AUDIT_UNAVAILABLE
    assert err.value.message == (
        f"refused: the PostgreSQL audit log named by ${ENV} cannot be read "
        f"(it did not answer within 1.5 s); check that server and the DSN in ${ENV} (host, "
        "port, database, role, password, sslmode)"
    )


async def test_render_hosts_round_trip_and_an_older_log_gains_their_columns(
    postgres_dsn: str,
) -> None:
    """The hosts a render contacted and refused are stored and read back in PostgreSQL; a
    table an older webward created gains the columns when a sink opens it."""
    import psycopg

    from webward.audit._core import ADDED_COLUMNS

    original, old_row = older_audit_table([name for name, _ in ADDED_COLUMNS])
    assert "render_" not in original  # the first release's table
    async with await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True) as conn:
        await conn.execute(original)  # type: ignore[arg-type]
        await conn.execute(old_row)  # type: ignore[arg-type]
    sink = PostgresAuditSink(postgres_dsn, dsn_env=ENV)
    rendered = AuditRecord.create(
        decision="allowed",
        reason="allowed",
        agent="r",
        tier="full",
        capability="web:page.fetch@1",
        target="https://example.org/r",
        render_contacted=["example.org"],
        render_refused=["127.0.0.2:80 (internal_address)"],
    )
    await sink.write(rendered)
    (back,) = await sink.query(agent="r")
    (old,) = await sink.query(agent="cli")
    await sink.aclose()
    assert back == rendered
    assert (old.render_contacted, old.render_refused) == ((), ())


async def test_a_table_from_before_sessions_gains_session_and_hits_dropped(
    postgres_dsn: str,
) -> None:
    """A table of the release before (render hosts, no session) gains the session and
    hits_dropped columns when a sink opens it; its old rows read None for each, and a new
    record's are stored and read back."""
    import psycopg

    before, old_row = older_audit_table(("session", "hits_dropped", "face"))
    assert "render_refused" in before and "session" not in before
    async with await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True) as conn:
        await conn.execute(before)  # type: ignore[arg-type]
        await conn.execute(old_row)  # type: ignore[arg-type]
    sink = PostgresAuditSink(postgres_dsn, dsn_env=ENV)
    searched = AuditRecord.create(
        decision="allowed",
        reason="allowed",
        agent="r",
        tier="connected",
        capability="web:search.query@1",
        target="owls",
        session="mcp:r:app%3As1",
        hits_dropped=3,
    )
    await sink.write(searched)
    (back,) = await sink.query(agent="r")
    (old,) = await sink.query(agent="cli")
    await sink.aclose()
    assert back == searched and (back.session, back.hits_dropped) == ("mcp:r:app%3As1", 3)
    assert (old.session, old.hits_dropped) == (None, None)


async def test_a_table_from_before_faces_gains_the_face_column(postgres_dsn: str) -> None:
    """A table of the release before (session and hits_dropped, no face) gains the face
    column when a sink opens it (ADD COLUMN IF NOT EXISTS): its old rows read None, a new
    record's face is stored and read back."""
    import psycopg

    before, old_row = older_audit_table(("face",))
    assert "hits_dropped" in before and "face" not in before
    async with await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True) as conn:
        await conn.execute(before)  # type: ignore[arg-type]
        await conn.execute(old_row)  # type: ignore[arg-type]
    sink = PostgresAuditSink(postgres_dsn, dsn_env=ENV)
    new = AuditRecord.create(
        decision="allowed", reason="allowed", agent="r", tier="connected",
        capability="web:page.fetch@1", target="https://example.org/a", face="gateway",
    )  # fmt: skip
    await sink.write(new)
    (back,) = await sink.query(agent="r")
    (old,) = await sink.query(agent="cli")
    await sink.aclose()
    assert back == new and back.face == "gateway"
    assert old.face is None


async def test_both_sql_stores_create_one_table(postgres_dsn: str, tmp_path: Path) -> None:
    """SQLite and PostgreSQL create the audit table from one schema: the same columns, in
    the same order, declared with the same types."""
    import sqlite3

    import psycopg

    from webward.audit import SQLiteAuditSink

    for sink in (SQLiteAuditSink(tmp_path), PostgresAuditSink(postgres_dsn, dsn_env=ENV)):
        await sink.write(record("one-schema"))
        await sink.aclose()
    conn = sqlite3.connect(tmp_path / "audit.db")
    in_sqlite = [(str(r[1]), str(r[2]).lower()) for r in conn.execute("PRAGMA table_info(audit)")]
    conn.close()
    async with await psycopg.AsyncConnection.connect(postgres_dsn) as pg:
        cur = await pg.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'audit' ORDER BY ordinal_position"
        )
        in_postgres = [(str(name), str(kind)) for name, kind in await cur.fetchall()]
    assert in_sqlite == in_postgres
    assert ("ts", "double precision") in in_sqlite and ("bytes", "bigint") in in_sqlite


async def test_a_locked_audit_table_refuses_the_call_within_the_bound_once(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A locked audit table: the call's probe gives up at the sink's bound, and the call
    then wrote its own refusal record to the same locked table and waited a whole bound
    more (20 s against the documented 10). It is now refused within the bound of the probe's
    start, its refusal record handed over without a second wait, and committed once the
    lock is gone: one record, refused/audit_unavailable."""
    from webward.audit import _postgres

    monkeypatch.setattr(_postgres, "_CONNECT_TIMEOUT_S", 2)
    monkeypatch.setattr(_postgres, "_STATEMENT_TIMEOUT_S", 2)  # a bound of 4 s
    env = {ENV: postgres_dsn}
    sink = open_audit_sink(settings(), env)
    await sink.write(record("before"))
    with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
        async with Web(settings(), StaticResolver({}), audit=sink) as w:
            with psycopg.connect(postgres_dsn) as locker:
                locker.execute("LOCK TABLE audit IN ACCESS EXCLUSIVE MODE")
                began = anyio.current_time()
                with anyio.fail_after(30), pytest.raises(Refused) as err:
                    await w.fetch(srv.url("/"))
                took = anyio.current_time() - began
                locker.rollback()
            with anyio.fail_after(20):  # the refusal record lands once the lock is gone
                while not (found := await sink.query(decision="refused")):
                    await anyio.sleep(0.05)
    assert err.value.reason == REASON_AUDIT_UNAVAILABLE
    assert "did not answer within 4 s" in err.value.message
    assert took < 6.0, took  # the bound, 4 s; was 8 s (the bound twice)
    assert srv.accepts == 0
    assert [(r.decision, r.reason, r.target) for r in found] == [
        ("refused", REASON_AUDIT_UNAVAILABLE, srv.url("/"))
    ]


async def test_a_store_that_never_worked_is_logged_once_then_its_recovery(
    postgres_server: PostgresServer, postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A replica whose audit store is down from its start said nothing while it refused
    every call, then "written again" once it was back. The first failure is now said once
    (the variable, the driver's error, never the DSN), and the recovery after it."""
    caplog.set_level(logging.WARNING, logger="webward")
    sink = PostgresAuditSink(with_password(postgres_dsn), dsn_env=ENV)
    postgres_server.stop()
    try:
        for attempt in (sink.probe, lambda: sink.write(record("down"))) * 2:
            with pytest.raises(Refused):
                await attempt()
    finally:
        postgres_server.start()
    await sink.probe()
    await sink.write(record("after"))
    await sink.aclose()
    said = [r.getMessage() for r in caplog.records if r.name == "webward.audit._postgres"]
    assert len(said) == 2, said
    assert said[0].startswith(f"audit records cannot be written (PostgreSQL named by ${ENV}: ")
    assert said[1] == f"audit records are written again at the PostgreSQL named by ${ENV}"
    assert not any(SECRET in line or postgres_dsn in line for line in said)


async def test_a_dsn_that_does_not_parse_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    """A gateway started with a DSN that does not parse refused every call and said nothing
    in its log: it is said once, without the DSN."""
    caplog.set_level(logging.WARNING, logger="webward")
    sink = open_audit_sink(settings(), {ENV: "postgresql://webward:S3cret%ZZpw@127.0.0.1/db"})
    for attempt in (sink.probe, lambda: sink.write(record("x"))) * 2:
        with pytest.raises(Refused):
            await attempt()
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1, said
    assert said[0].startswith(
        f"audit records cannot be written ([audit] postgres_dsn_env names ${ENV}"
    )
    assert "S3cret" not in said[0]


# ---- roles that do not own the table: an auditor's SELECT, a writer's INSERT ---------------


def role_with(dsn: str, privileges: str) -> str:
    """A DSN for a new login role that owns nothing and holds only ``privileges`` on the audit
    table (the table must exist): an auditor's SELECT, or a writer's INSERT and SELECT."""
    role = f"role_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'not-checked'")  # type: ignore[arg-type]
        conn.execute(f"GRANT {privileges} ON audit TO {role}")  # type: ignore[arg-type]
    return dsn.replace("user=webward", f"user={role}")


def columns_of_audit(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'audit' "
            "ORDER BY ordinal_position"
        )
        return [str(name) for (name,) in cur.fetchall()]


async def test_a_lock_left_held_on_a_pooled_connection_hangs_no_console_and_no_writer(
    postgres_dsn: str,
) -> None:
    """Behind PgBouncer's transaction pooling the console's index build took its session lock
    on one server connection and could release it on another, leaving it held (seen with four
    writers running through the pool). The next console waited for that lock without end, and
    so would every writer that had to create or upgrade the table (the same lock). Here a
    connection holds the locks as such a server connection would: the console's first view
    builds nothing and pages through the log, a writer writes, and once the lock is let go the
    next view builds the indexes."""
    from webward.audit._postgres import SCHEMA_LOCK
    from webward.console import AuditFilter
    from webward.console._postgres_reader import PostgresAuditReader

    sink = PostgresAuditSink(postgres_dsn, dsn_env=ENV)
    await sink.write(record("before"))
    reader = PostgresAuditReader(PostgresAuditSink(postgres_dsn, dsn_env=ENV))
    try:
        with psycopg.connect(postgres_dsn, autocommit=True) as held:
            for key in (SCHEMA_LOCK, SCHEMA_LOCK + 1):
                held.execute("SELECT pg_advisory_lock(%s)", (key,))
            with anyio.fail_after(30):  # a guard: it waited for the lock without end
                assert await reader.prepare() is False
                page = await reader.page(AuditFilter(agent="before"), None, 10)
                await sink.write(record("during"))
        assert [r.agent for r in page.records] == ["before"]
        assert await reader.prepare() is True
        (during,) = (await reader.page(AuditFilter(agent="during"), None, 10)).records
    finally:
        await reader.aclose()
        await sink.aclose()
    assert during.target == "https://example.org/during/0"


async def test_a_select_only_role_reads_a_current_log(postgres_dsn: str) -> None:
    """An auditor's role that may only SELECT the audit table reads it, through ``query`` and
    the console's listing: opening the log runs no DDL on a table that needs none (it was
    refused "permission denied for schema public" before any read), and the console, which
    may not build its indexes, pages through it without them."""
    from webward.console import AuditFilter
    from webward.console._postgres_reader import PostgresAuditReader

    owner = PostgresAuditSink(postgres_dsn, dsn_env=ENV)
    written = record("alpha")
    await owner.write(written)
    await owner.aclose()
    auditor = role_with(postgres_dsn, "SELECT")
    sink = PostgresAuditSink(auditor, dsn_env=ENV)
    try:
        assert await sink.query() == [written]
    finally:
        await sink.aclose()
    reader = PostgresAuditReader(PostgresAuditSink(auditor, dsn_env=ENV))
    try:
        page = await reader.page(AuditFilter(), None, 10)
        assert page.records == [written] and page.next_cursor is None
        assert await reader.record(written.id) == written
    finally:
        await reader.aclose()


async def test_a_select_only_role_reads_an_older_log_it_may_not_upgrade(
    postgres_dsn: str,
) -> None:
    """A table an older webward created, which an auditor may only SELECT: the columns it
    lacks read as their defaults, through ``query`` and the console's listing, and the table
    is left as it was (only its owner may add them)."""
    from webward.audit._core import ADDED_COLUMNS, COLUMNS
    from webward.console import AuditFilter
    from webward.console._postgres_reader import PostgresAuditReader

    old = tuple(c for c in COLUMNS if c not in ADDED_COLUMNS)
    old_table, old_row = older_audit_table([name for name, _ in ADDED_COLUMNS])
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(old_table)  # type: ignore[arg-type]
        conn.execute(old_row)  # type: ignore[arg-type]
    auditor = role_with(postgres_dsn, "SELECT")
    sink = PostgresAuditSink(auditor, dsn_env=ENV)
    try:
        (back,) = await sink.query()
    finally:
        await sink.aclose()
    assert (back.id, back.agent, back.status) == ("old", "cli", 200)
    assert (back.render_contacted, back.render_refused) == ((), ())
    assert (back.session, back.hits_dropped, back.face) == (None, None, None)
    reader = PostgresAuditReader(PostgresAuditSink(auditor, dsn_env=ENV))
    try:
        page = await reader.page(AuditFilter(), None, 10)
        assert page.records == [back]
    finally:
        await reader.aclose()
    assert columns_of_audit(postgres_dsn) == [name for name, _ in old]


async def test_a_writer_role_that_owns_nothing_writes_to_a_current_log(postgres_dsn: str) -> None:
    """A writer's role that may INSERT and SELECT the audit table but owns nothing writes its
    records and passes the probe: the table needs no DDL, so none is run."""
    owner = PostgresAuditSink(postgres_dsn, dsn_env=ENV)
    await owner.write(record("owner"))
    await owner.aclose()
    sink = PostgresAuditSink(role_with(postgres_dsn, "INSERT, SELECT"), dsn_env=ENV)
    try:
        written = record("writer")
        await sink.write(written)
        await sink.probe()
        assert await sink.query(agent="writer") == [written]
    finally:
        await sink.aclose()


async def test_a_writer_role_refuses_an_older_log_only_its_owner_may_upgrade(
    postgres_dsn: str,
) -> None:
    """A writer that may not add the columns an older table lacks is refused, write and probe,
    in one sentence naming the role that must upgrade the table; it still reads, and reads
    and writes the new column once the owner has opened the log."""
    from webward.audit._core import COLUMNS, table_sql

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(table_sql(tuple(c for c in COLUMNS if c[0] != "face")))  # type: ignore[arg-type]
    sink = PostgresAuditSink(role_with(postgres_dsn, "INSERT, SELECT"), dsn_env=ENV)
    try:
        for attempt in (lambda: sink.write(record("writer")), sink.probe):
            with pytest.raises(Refused) as err:
                await attempt()
            assert err.value.reason == REASON_AUDIT_UNAVAILABLE
            assert (
                "InsufficientPrivilege: the audit table lacks the column face, which only its "
                "owner may add: open the log once as the role webward to upgrade the table; "
                in err.value.message
            ), err.value.message
        assert await sink.query() == []  # read through the view, on a connection it keeps
        owner = PostgresAuditSink(postgres_dsn, dsn_env=ENV)
        faced = AuditRecord.create(decision="allowed", reason="allowed", face="gateway")
        await owner.write(faced)  # the owner's sink adds the column
        await owner.aclose()
        assert await sink.query() == [faced]  # the kept view does not hide the face
        written = record("writer")
        await sink.write(written)
        assert await sink.query() == [written, faced]
    finally:
        await sink.aclose()


def _set_database(dsn: str, setting: str) -> None:
    """``ALTER DATABASE`` of ``dsn``'s own database (taken by sessions opened after it), from
    a session that is neither read-only nor timed out whatever the database's settings."""
    options = "-c default_transaction_read_only=off -c statement_timeout=0"
    with psycopg.connect(dsn, autocommit=True, options=options) as conn:
        name = conn.execute("SELECT current_database()").fetchone()
        assert name is not None
        conn.execute(f'ALTER DATABASE "{name[0]}" {setting}')  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "change",
    [
        "DROP TABLE audit",
        "ALTER TABLE audit DROP COLUMN face",
        "ALTER TABLE audit RENAME TO audit_kept",
    ],
)
async def test_a_table_gone_under_a_kept_connection_is_made_again_and_the_call_recorded(
    postgres_dsn: str, change: str
) -> None:
    """The audit table dropped, renamed or stripped of a column while the sink kept its
    connection: the table is made ready only when a connection opens, so the kept one failed
    the next record after its call had read the site (a read out with no record anywhere),
    and the call after it was refused too. The write is now tried once more on a new
    connection, which makes the table again: every call reads and is recorded once."""
    sink = open_audit_sink(settings(), {ENV: postgres_dsn})
    with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
        async with Web(settings(), StaticResolver({}), audit=sink, clock=FakeClock()) as w:
            await w.fetch(srv.url("/before"))
            with psycopg.connect(postgres_dsn, autocommit=True) as admin:
                admin.execute(change)  # type: ignore[arg-type]
            for path in ("/after-1", "/after-2"):
                await w.fetch(srv.url(path))
    await sink.aclose()
    assert srv.accepts == 3
    with psycopg.connect(postgres_dsn) as conn:
        targets = [t for (t,) in conn.execute("SELECT target FROM audit ORDER BY ts")]
    kept = [srv.url("/before")] if change.startswith("ALTER TABLE audit DROP") else []
    assert targets == [*kept, srv.url("/after-1"), srv.url("/after-2")]


async def test_a_database_that_takes_writes_again_is_written_at_once(postgres_dsn: str) -> None:
    """A database left read-only (default_transaction_read_only, as a failover or a
    maintenance window sets it) refuses every call; once it takes writes again, the next
    call is recorded. The connection opened while it was read-only kept that setting, and
    the first call after the change was refused on it as well."""
    sink = open_audit_sink(settings(), {ENV: postgres_dsn})
    await sink.write(record("before"))  # the table made
    await sink.aclose()
    _set_database(postgres_dsn, "SET default_transaction_read_only = on")
    with serve(routes={"*": respond(200, "<p>a page</p>")}) as srv:
        async with Web(settings(), StaticResolver({}), audit=sink, clock=FakeClock()) as w:
            with pytest.raises(Refused) as err:
                await w.fetch(srv.url("/read-only"))
            assert err.value.reason == REASON_AUDIT_UNAVAILABLE
            assert "ReadOnlySqlTransaction: cannot execute INSERT" in err.value.message
            _set_database(postgres_dsn, "RESET default_transaction_read_only")
            await w.fetch(srv.url("/writable"))
    await sink.aclose()
    assert srv.accepts == 1  # refused before its read while the log could not record it
    with psycopg.connect(postgres_dsn) as conn:
        rows = conn.execute("SELECT agent, target, reason FROM audit ORDER BY ts").fetchall()
    assert [(a, r) for a, _, r in rows] == [("before", "allowed"), ("cli", "allowed")]
    assert rows[1][1] == srv.url("/writable")


@pytest.fixture
def hot_standby(postgres_server: PostgresServer) -> Iterator[PostgresServer]:
    """A hot standby of the session's cluster (pg_basebackup -R, streaming), in recovery."""
    standby = PostgresServer()
    try:
        standby._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(postgres_server.port),
                     "-U", "webward", "-D", str(standby.data), "-R", "-X", "stream",
                     "-c", "fast")  # fmt: skip
        standby.start()
        yield standby
        standby.stop()
    finally:
        standby.remove()


async def test_the_console_reads_a_hot_standby_it_cannot_index(
    postgres_server: PostgresServer, hot_standby: PostgresServer
) -> None:
    """An auditor's console pointed at a hot standby, to keep its reads off the primary: the
    console's indexes (never built on the primary, whose gateways have no console) cannot be
    built there, and that refusal (ReadOnlySqlTransaction) refused every page and `webward
    console` itself, though the standby serves every read. The console now pages without
    them, in bounded scans, as it does for a role that may not build them."""
    from webward.console import AuditFilter
    from webward.console._postgres_reader import PostgresAuditReader

    name = f"webward_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    primary = PostgresAuditSink(postgres_server.dsn(name), dsn_env=ENV)
    written = record("alpha")
    await primary.write(written)
    await primary.aclose()
    with psycopg.connect(postgres_server.dsn(name), autocommit=True) as conn:
        lsn = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
    with psycopg.connect(hot_standby.dsn(), autocommit=True) as conn:  # its database too
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        replayed = "SELECT pg_last_wal_replay_lsn() >= %s"
        with anyio.fail_after(30):  # until the standby has replayed the record's commit
            while conn.execute(replayed, lsn).fetchone() != (True,):
                await anyio.sleep(0.05)
    reader = PostgresAuditReader(PostgresAuditSink(hot_standby.dsn(name), dsn_env=ENV))
    try:
        assert await reader.prepare(build_large=True) is False  # as `webward console` starts
        page = await reader.page(AuditFilter(), None, 10)
        assert page.records == [written] and page.next_cursor is None
        assert await reader.record(written.id) == written
    finally:
        await reader.aclose()
