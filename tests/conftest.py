"""Shared fixtures: async tests run on asyncio through anyio's plugin; no proxy variables; real
Redis and PostgreSQL servers on loopback for the scale-out tests."""

from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import redis


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_proxy_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Proxy variables must never influence webward; state goes to a temporary dir."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    for var in (
        "WEBWARD_CONFIG",
        "WEBWARD_TIER",
        "WEBWARD_ALLOW_RANGES",
        "WEBWARD_SEARCH_PROVIDER",
        "BRAVE_SEARCH_API_KEY",
        "TAVILY_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WEBWARD_STATE_DIR", str(tmp_path_factory.mktemp("state")))


# ---- real Redis and PostgreSQL servers on loopback (test_redis, test_postgres) -------------
# Started from the Debian packages' binaries, once per session; each test gets a clean
# database. A missing binary fails the tests that need it (never a skip): CI installs them.


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(ready: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    """Poll ``ready`` until it holds (a server finishing its start-up), or fail."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not start within {timeout_s:.0f} s")
        time.sleep(0.02)


class RedisServer:
    """A ``redis-server`` on 127.0.0.1 with no persistence, started and stopped by a test."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed; install the Debian package redis-server.")
        self.binary = binary
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        _wait_for(self._answers, "redis-server")
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            pytest.fail(f"redis-server exited with status {self.proc.returncode}")
        try:
            with redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1) as client:
                return bool(client.ping())
        except redis.RedisError:
            return False

    def flush(self) -> None:
        with redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5) as client:
            client.flushall()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One Redis for the session."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session's Redis, emptied for this test."""
    redis_server.flush()
    return redis_server.url


def _pg_bindir() -> Path:
    # Version-independent, as .ci/run finds it: the newest /usr/lib/postgresql/<N>/bin.
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(re.sub(r"\D", "", Path(p).parent.parent.name) or 0),
    )
    if not found:
        pytest.fail("PostgreSQL's initdb is not installed; install the Debian package postgresql.")
    return Path(found[-1]).parent


class PostgresServer:
    """A throw-away PostgreSQL cluster on 127.0.0.1, trust auth, user ``webward``.

    PostgreSQL refuses to run as root, so under root its programs run as the ``postgres``
    user (created by the Debian package) through ``runuser``, in a directory it owns.
    """

    def __init__(self) -> None:
        self.bindir = _pg_bindir()
        self.root = Path(tempfile.mkdtemp(prefix="webward-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as_root = os.geteuid() == 0
        if self._as_root:
            shutil.chown(self.root, "postgres", "postgres")

    def _run(self, program: str, *args: str) -> None:
        cmd = [str(self.bindir / program), *args]
        if self._as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, cwd=self.root, capture_output=True, timeout=120, check=False)
        if done.returncode != 0:
            pytest.fail(f"{program} failed: {done.stderr.decode(errors='replace')[-2000:]}")

    def init(self) -> PostgresServer:
        self._run("initdb", "-D", str(self.data), "-U", "webward", "--auth=trust", "--no-sync",
                  "-E", "UTF8")  # fmt: skip
        return self

    def start(self) -> None:
        options = f"-k {self.root} -p {self.port} -c listen_addresses=127.0.0.1 -c fsync=off"  # fsync off: these clusters live for one test session
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-o", options,
                  "-w", "start")  # fmt: skip

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=webward dbname={dbname}"

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL cluster for the session."""
    server = PostgresServer().init()
    try:
        server.start()
        yield server
        server.stop()
    finally:
        server.remove()


class PgBouncer:
    """A ``pgbouncer`` on 127.0.0.1 in front of the session's PostgreSQL, in one pool mode,
    trust auth. Transaction pooling holds one server connection: every client shares it, so a
    statement one client prepared on the server is there (or missing) for the next, as under
    load; the other modes hold a server connection per client, as many as a test opens.

    PgBouncer refuses to run as root; there it runs as ``postgres``, as PostgreSQL does.
    """

    def __init__(self, postgres: PostgresServer, mode: str) -> None:
        binary = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")
        if binary is None:
            pytest.fail("pgbouncer is not installed; install the Debian package pgbouncer.")
        self.port = _free_port()
        pool = 1 if mode == "transaction" else 8
        self.root = Path(tempfile.mkdtemp(prefix=f"webward-pgbouncer-{mode}-"))
        (self.root / "users.txt").write_text('"webward" ""\n')
        (self.root / "pgbouncer.ini").write_text(
            f"[databases]\n* = host=127.0.0.1 port={postgres.port}\n"
            f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {self.port}\n"
            f"unix_socket_dir =\nauth_type = trust\nauth_file = {self.root}/users.txt\n"
            f"pool_mode = {mode}\ndefault_pool_size = {pool}\nlogfile = {self.root}/log\n"
        )
        cmd = [binary, str(self.root / "pgbouncer.ini")]
        if os.geteuid() == 0:
            for path in (self.root, *self.root.iterdir()):
                shutil.chown(path, "postgres", "postgres")
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for(self._answers, "pgbouncer")

    def _answers(self) -> bool:
        if self.proc.poll() is not None:
            log = self.root / "log"
            said = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            pytest.fail(f"pgbouncer exited with status {self.proc.returncode}: {said}")
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def dsn(self, dbname: str) -> str:
        return f"host=127.0.0.1 port={self.port} user=webward dbname={dbname}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def pgbouncer(postgres_server: PostgresServer) -> Iterator[Callable[[str], PgBouncer]]:
    """Starts PgBouncers in the pool modes asked for (``pgbouncer("transaction")``), each
    stopped after the test."""
    started: list[PgBouncer] = []

    def start(mode: str) -> PgBouncer:
        started.append(PgBouncer(postgres_server, mode))
        return started[-1]

    try:
        yield start
    finally:
        for bouncer in started:
            bouncer.stop()


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """A DSN for a fresh, empty database of the session's cluster."""
    name = f"webward_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    return postgres_server.dsn(name)
