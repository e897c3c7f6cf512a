"""The servers' HTTP stack: httptools and uvloop when importable, h11 and asyncio otherwise,
named in the start-up line; and the conversion workers started before the first request."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from localserver import held, respond, serve
from stores import stored_records
from test_cli_faults import as_at_a_terminal, ctrl_c_in_a_callback, ctrl_c_on_import
from test_gateway import FETCH_PATH, auth
from test_gateway import write_config as gateway_config
from test_mcp import child_env, rpc_answer
from test_mcp import write_config as mcp_config

import webward._serving
from webward._serving import Stack, fastest_stack, http_protocol, run_server
from webward.audit import SQLiteAuditSink


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_the_fastest_stack_is_httptools_and_uvloop_when_importable() -> None:
    stack = fastest_stack()
    assert stack == Stack("httptools", "uvloop")
    assert stack.describe() == "httptools, uvloop"
    assert run_server(stack, _loop_module).startswith("uvloop")


def test_without_the_fast_parts_the_stack_is_h11_and_asyncio(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "httptools", None)  # `import httptools` raises ImportError
    monkeypatch.setitem(sys.modules, "uvloop", None)
    stack = fastest_stack()
    assert stack == Stack("h11", "asyncio")
    assert run_server(stack, _loop_module) == "asyncio.unix_events"


def _blocked_fast_parts(tmp_path: Path) -> str:
    """A directory that, first on the path, makes httptools and uvloop fail to import."""
    blocked = tmp_path / "blocked"
    for name in ("httptools", "uvloop"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(f"raise ImportError('no {name} here')\n")
    return str(blocked)


def _children(pid: int) -> list[str]:
    """The command lines of ``pid``'s child processes."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ValueError):
            continue  # gone meanwhile
    return found


def _start(
    args: list[str], env: dict[str, str], sigint: Any = signal.SIG_DFL
) -> tuple[subprocess.Popen[str], str]:
    def signals() -> None:
        # As from a terminal: a suite run under nohup hands its children SIGHUP ignored. A
        # job a script starts in the background (`cmd &`) has SIGINT ignored.
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGINT, sigint)

    proc = subprocess.Popen(
        [sys.executable, "-m", "webward.cli", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        preexec_fn=signals,
    )
    assert proc.stderr is not None
    return proc, proc.stderr.readline()


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(15)
    if proc.stderr is not None:
        proc.stderr.close()


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "fallback"])
def test_serve_names_its_stack_and_starts_the_conversion_workers_before_serving(
    tmp_path: Path, fast: bool
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(child_env(tmp_path))
    if not fast:
        env["PYTHONPATH"] = _blocked_fast_parts(tmp_path) + os.pathsep + env["PYTHONPATH"]
    config = gateway_config(tmp_path)
    page = "<html><head><title>Stack</title></head><body><p>served words</p></body></html>"
    with serve(routes={"/stack": respond(200, page)}) as site:
        _serve_and_check(
            ["serve", "--port", "0", "--config", str(config)], env, site.url("/stack"), fast
        )


def _serve_and_check(args: list[str], env: dict[str, str], url: str, fast: bool) -> None:
    proc, line = _start(args, env)
    try:
        stack = "httptools, uvloop" if fast else "h11, asyncio"
        assert line.startswith("webward serve: gateway on http://127.0.0.1:"), line
        assert line.rstrip().endswith(f"(openapi at /openapi.json; {stack})"), line
        base = line.split(" on ", 1)[1].split()[0]
        # The line is printed once the server can answer: its zygote, started with the
        # conversion workers before serving, is already there (no request made yet).
        assert any("_zygote_main" in cmd for cmd in _children(proc.pid))
        with httpx.Client(trust_env=False, timeout=30) as c:
            assert c.get(base + "/healthz").json() == {"status": "ok"}
            r = c.post(base + FETCH_PATH, json={"url": url}, headers=auth("alice"))
            assert r.status_code == 200, r.text
        maps = Path(f"/proc/{proc.pid}/maps").read_text()
        assert ("uvloop" in maps) is fast and ("httptools" in maps) is fast
    finally:
        _stop(proc)


def test_mcp_over_http_names_its_stack_and_starts_the_conversion_workers(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(child_env(tmp_path))
    config = mcp_config(tmp_path)
    args = ["mcp", "--http", "127.0.0.1:0", "--tier", "connected", "--config", str(config)]
    proc, line = _start(args, env)
    try:
        assert line.startswith("webward mcp: streamable HTTP on http://127.0.0.1:"), line
        assert line.rstrip().endswith("/mcp (httptools, uvloop)"), line
        assert any("_zygote_main" in cmd for cmd in _children(proc.pid))
    finally:
        _stop(proc)


SESSIONLESS = "2026-07-28"  # the MCP protocol whose call is one POST, no session to open
CLIENT_INFO = {"name": "test", "version": "1"}


def _call_of(face: str, base: str, url: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """The address, body and headers of a web_fetch of ``url`` on the server at ``base``."""
    if face == "serve":
        return base + FETCH_PATH, {"url": url}, auth("alice")
    if face == "mcp-session":  # a 2025 session, as pydantic-ai and the Agents SDK open one
        version = "2025-11-25"
        accept = {"Accept": "application/json, text/event-stream"}
        init = {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO}
        with httpx.Client(trust_env=False, timeout=30, headers=accept) as c:
            opened = c.post(
                base, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
            )
            session = {
                "Mcp-Session-Id": opened.headers["mcp-session-id"],
                "Mcp-Protocol-Version": version,
            }
            c.post(
                base,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers=session,
            )
        call = {"name": "web_fetch", "arguments": {"url": url}}
        return (
            base,
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
            accept | session,
        )
    meta = {
        "io.modelcontextprotocol/protocolVersion": SESSIONLESS,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": "web_fetch", "arguments": {"url": url}, "_meta": meta}
    headers = {
        "Accept": "application/json, text/event-stream",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "web_fetch",
        "Mcp-Protocol-Version": SESSIONLESS,
    }
    return base, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, headers


@pytest.mark.parametrize(
    ("sent", "sigint", "code"),
    [
        (signal.SIGTERM, signal.SIG_DFL, 143),
        (signal.SIGTERM, signal.SIG_IGN, 143),  # a job a script started in the background
        (signal.SIGHUP, signal.SIG_DFL, 129),
    ],
    ids=["sigterm", "sigterm-in-background", "sighup"],
)
@pytest.mark.parametrize("face", ["serve", "mcp-http", "mcp-session"])
def test_a_signal_shuts_a_server_down_with_its_call_in_flight_answered_and_audited(
    tmp_path: Path, face: str, sent: signal.Signals, sigint: Any, code: int
) -> None:
    """SIGTERM, or SIGHUP (the terminal or SSH session it ran in gone), while a call waits on
    its page: the gateway (or `webward mcp --http`, sessionless or in a session, whose answer
    comes on an event stream) stops listening, answers the call once the page comes and
    audits it, then exits with 128 + the signal's number. SIGHUP killed it mid-call: its
    client answered nothing, the call unaudited; a session's event stream was ended 0.2 s
    into the shutdown, with no answer on it. Started with SIGINT ignored, `mcp --http` exited
    1 with a traceback (the signal's KeyboardInterrupt inside a task group's group)."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(child_env(tmp_path))
    if face == "serve":
        args = ["serve", "--port", "0", "--config", str(gateway_config(tmp_path))]
    else:
        args = ["mcp", "--http", "127.0.0.1:0", "--tier", "connected"]
        args += ["--config", str(mcp_config(tmp_path))]
    arrived, release = threading.Event(), threading.Event()
    page = "<html><head><title>Late</title></head><body><p>late words</p></body></html>"

    def slow(req: Any, sock: socket.socket) -> None:
        arrived.set()
        release.wait(30)
        respond(200, page)(req, sock)

    answers: queue.Queue[httpx.Response | Exception] = queue.Queue()
    with serve(routes={"/slow": slow}) as site:
        proc, line = _start(args, env, sigint)
        try:
            assert line.startswith(f"webward {face.split('-')[0]}: "), line
            base = line.split(" on ", 1)[1].split()[0]
            port = int(base.split(":")[2].split("/")[0])
            address, body, headers = _call_of(face, base, site.url("/slow"))

            def call() -> None:
                try:
                    with httpx.Client(trust_env=False, timeout=60) as c:
                        answers.put(c.post(address, json=body, headers=headers))
                except Exception as exc:  # the answer under test: kept, not raised here
                    answers.put(exc)

            threading.Thread(target=call, daemon=True).start()
            assert arrived.wait(30), "the call never reached the page"
            proc.send_signal(sent)
            # The shutdown has begun once the listening socket is closed: only then does
            # the page come, so that the call is still in flight when the signal lands.
            deadline = time.monotonic() + 30
            while _listening(port) and time.monotonic() < deadline:  # bounded poll
                time.sleep(0.02)
            assert not _listening(port), "the server never began its shutdown"
            # A second into the shutdown, well within its grace (5 s): sse-starlette's watch
            # of the shutdown, polled every 0.5 s, ended a session's stream before now.
            time.sleep(1.0)
            release.set()
            answer = answers.get(timeout=60)
            assert proc.wait(30) == code
        finally:
            release.set()
            _stop(proc)
    assert isinstance(answer, httpx.Response), repr(answer)
    assert answer.status_code == 200, answer.text
    if face != "serve":
        assert "late words" in json.dumps(rpc_answer(answer)["result"])
    found = stored_records(SQLiteAuditSink(tmp_path / "state"))
    assert [(r.decision, r.target) for r in found] == [("allowed", site.url("/slow"))]


@pytest.mark.parametrize("face", ["serve", "mcp-http", "mcp-session"])
def test_ctrl_c_pressed_again_during_the_shutdown_changes_neither_the_exit_nor_the_audit(
    tmp_path: Path, face: str
) -> None:
    """Ctrl-C, then twice more while the shutdown runs (an operator who finds it slow): the
    server exits 130 with no traceback, and its call in flight is audited once. The signals
    the shutdown took were each raised again at its end, and the second of two SIGINTs
    reached asyncio as a KeyboardInterrupt: a traceback, and `webward mcp --http` exited 1."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(child_env(tmp_path))
    if face == "serve":
        args = ["serve", "--port", "0", "--config", str(gateway_config(tmp_path))]
    else:
        args = ["mcp", "--http", "127.0.0.1:0", "--tier", "connected"]
        args += ["--config", str(mcp_config(tmp_path))]
    arrived, release = threading.Event(), threading.Event()
    page = "<html><head><title>Late</title></head><body><p>late words</p></body></html>"

    def slow(req: Any, sock: socket.socket) -> None:
        arrived.set()
        release.wait(30)
        respond(200, page)(req, sock)

    done = threading.Event()
    with serve(routes={"/slow": slow}) as site:
        proc, line = _start(args, env)
        assert proc.stderr is not None
        try:
            base = line.split(" on ", 1)[1].split()[0]
            port = int(base.split(":")[2].split("/")[0])
            address, body, headers = _call_of(face, base, site.url("/slow"))

            def call() -> None:
                # Answered or cut off: what matters here is the exit and the record.
                with (
                    contextlib.suppress(httpx.HTTPError),
                    httpx.Client(trust_env=False, timeout=60) as c,
                ):
                    c.post(address, json=body, headers=headers)
                done.set()

            threading.Thread(target=call, daemon=True).start()
            assert arrived.wait(30), "the call never reached the page"
            proc.send_signal(signal.SIGINT)
            deadline = time.monotonic() + 30
            while _listening(port) and time.monotonic() < deadline:  # bounded poll
                time.sleep(0.02)
            assert not _listening(port), "the server never began its shutdown"
            proc.send_signal(signal.SIGINT)  # during the shutdown: its calls still run
            proc.send_signal(signal.SIGINT)
            release.set()
            assert proc.wait(30) == 130
            stderr = proc.stderr.read()
        finally:
            release.set()
            _stop(proc)
    assert "Traceback" not in stderr, stderr
    # One sentence says how the server ended (it stopped in silence).
    command = "serve" if face == "serve" else "mcp"
    assert stderr.splitlines()[-1] == (
        f"webward {command}: interrupted (Ctrl-C): stopped; calls in flight were answered, or "
        "cancelled, and audited"
    ), stderr
    assert done.wait(30)
    found = stored_records(SQLiteAuditSink(tmp_path / "state"))
    assert [(r.decision, r.target) for r in found] == [("allowed", site.url("/slow"))]


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError:
        return False
    return True


def test_the_servers_modules_load_without_trio_and_leave_it_importable() -> None:
    # trio is installed here (as a test dependency's), so httpcore would import it; the servers
    # run on asyncio alone and import their modules inside asyncio_only().
    script = (
        "import sys\n"
        "from webward._serving import asyncio_only\n"
        "with asyncio_only():\n"
        "    import webward._gateway, webward._mcp\n"
        "    try:\n"
        "        import trio\n"
        "    except ImportError:\n"
        "        pass\n"
        "    else:\n"
        "        raise SystemExit('trio imported inside asyncio_only')\n"
        "assert 'trio' not in sys.modules, 'trio left in (or blocked in) sys.modules'\n"
        "assert 'httpcore' in sys.modules\n"
        "import trio\n"
        "print('ok', trio.__name__)\n"
    )
    assert _python(script) == ["ok", "trio"]


def test_the_gateway_makes_its_console_on_the_first_console_request(tmp_path: Path) -> None:
    # A gateway whose console nobody opens never imports its pages and templates.
    config = gateway_config(tmp_path)
    script = (
        "import asyncio, sys, httpx\n"
        "from webward import Settings\n"
        "from webward._gateway import create_app\n"
        f"app = create_app(Settings.load({str(config)!r}))\n"
        "assert 'webward.console' not in sys.modules and 'jinja2' not in sys.modules\n"
        "async def main():\n"
        "    transport = httpx.ASGITransport(app=app)\n"
        "    async with httpx.AsyncClient(transport=transport, base_url='http://t') as client:\n"
        "        answer = await client.get('/console/')\n"
        "    print(answer.status_code, 'webward.console' in sys.modules)\n"
        "asyncio.run(main())\n"
    )
    status, loaded = _python(script)
    assert loaded == "True"
    assert status in {"200", "302", "401", "403"}  # the console answered (it asks for a login)


def _python(script: str) -> list[str]:
    """The words ``script`` prints, run in a new interpreter (a fresh ``sys.modules``)."""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.fixture
def bounded_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, int]]:
    """A bare app on uvicorn with the servers' protocol (httptools, bounded), its head
    deadline shortened so that a test need not wait 10 s; yields (host, port)."""
    import threading

    import uvicorn

    monkeypatch.setattr(webward._serving, "HEAD_TIMEOUT_S", 0.5)
    monkeypatch.setattr(webward._serving, "BODY_TIMEOUT_S", 0.5)
    monkeypatch.setattr(webward._serving, "SEND_TIMEOUT_S", 0.5)
    monkeypatch.setattr(webward._serving, "_SWEEP_EVERY_S", 0.1)  # several sweeps a read

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/big":  # more than the kernel's buffers hold, then the client's fate
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for _ in range(256):
                await send(
                    {"type": "http.response.body", "body": bytes(BIG_CHUNK), "more_body": True}
                )
            await send({"type": "http.response.body", "body": b""})
            BIG_HEARD.put((await receive())["type"])
            return
        if scope["path"] == "/early":  # answered before the body is read, as a 413 is
            await send({"type": "http.response.start", "status": 413, "headers": []})
            await send({"type": "http.response.body", "body": b"too large"})
            return
        more = True
        while more:  # the body read to its end, as an app does
            more = (await receive()).get("more_body", False)
        if scope["path"] == "/slow":  # served for longer than a head may take to arrive
            await asyncio.sleep(1.5)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    stack = fastest_stack()
    config = uvicorn.Config(app, http=http_protocol(stack), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


BIG_CHUNK = 64 * 1024  # x 256: 16 MiB, past any loopback socket's buffers
BIG_HEARD: queue.Queue[str] = queue.Queue()


def test_a_client_that_takes_nothing_of_its_answer_is_dropped(
    bounded_server: tuple[str, int],
) -> None:
    """uvicorn bounds no write: a client that asks and never reads held its connection and
    the answer's memory for as long as it stayed connected (the app's send waits forever).
    Taking nothing for SEND_TIMEOUT_S drops it, and the app hears the client gone; a client
    that reads gets the whole answer, over many sweeps."""
    request = b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n"
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(bounded_server)
    try:
        stalled.sendall(request)
        assert BIG_HEARD.get(timeout=15) == "http.disconnect"  # while still connected
    finally:
        stalled.close()
    with socket.create_connection(bounded_server, timeout=10) as reader:
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
        reader.sendall(request)
        got = 0
        while got < 256 * BIG_CHUNK:
            chunk = reader.recv(65536)
            assert chunk
            got += len(chunk)
    assert BIG_HEARD.get(timeout=15) == "http.disconnect"  # the app's receive after its answer


def _exchange(address: tuple[str, int], data: bytes) -> bytes:
    with socket.create_connection(address, timeout=10) as conn:
        conn.sendall(data)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def test_a_request_head_too_large_or_too_slow_is_refused_before_any_app(
    bounded_server: tuple[str, int],
) -> None:
    """httptools bounds neither a head's size nor its time: the servers' protocol answers
    431 past 64 KiB and 408 to a head not complete in time, in the error model, and closes
    the connection, before any token is asked for; an ordinary request is served."""
    assert fastest_stack().http == "httptools"  # the test suite installs the fast stack
    ok = _exchange(bounded_server, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert ok.startswith(b"HTTP/1.1 200") and b"\r\nok\r\n" in ok
    big = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n"
    answer = _exchange(bounded_server, big)
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert b'"message": "the request line and headers are larger than 64 KiB"' in answer
    # A header that never ends, sent in many packets: httptools holds it whole until its line
    # ends, so the packets are counted too.
    with socket.create_connection(bounded_server, timeout=10) as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nX-Big: ")
        answer = b""
        try:
            for _ in range(200):  # 200 x 8 KiB: far past the bound, never a line's end
                conn.sendall(b"a" * 8192)
        except OSError:
            pass  # closed under the sender: the answer is read below
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 431 ")
    slow = _exchange(bounded_server, b"GET / HTTP/1.1\r\nHost: x\r\nX-Half")
    assert slow.startswith(b"HTTP/1.1 408 ") and b"did not arrive within 0.5 s" in slow
    silent = _exchange(bounded_server, b"")
    assert silent.startswith(b"HTTP/1.1 408 ")


def test_a_request_httptools_cannot_parse_is_answered_in_the_error_model(
    bounded_server: tuple[str, int],
) -> None:
    """A malformed request line or header, or both Transfer-Encoding and Content-Length,
    gets a 400 in the error model with one sentence (uvicorn's own is text/plain "Invalid
    HTTP request received."), and the connection closes."""
    for bad in (
        b"GARBAGE\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
    ):
        answer = _exchange(bounded_server, bad)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 "), bad
        assert b"content-type: application/json" in head.lower()
        error = json.loads(body)["error"]
        assert error["code"] == "invalid_input"
        assert error["message"].startswith("the request is not HTTP/1.1 webward can read")


def test_a_transfer_coding_other_than_chunked_is_refused(
    bounded_server: tuple[str, int],
) -> None:
    """httptools read "Transfer-Encoding: gzip, chunked" as chunked alone, the gzip never
    undone: a body other than the one a proxy in front that decodes it checks. Refused as h11
    refuses it, 400 in the error model; chunked alone is still read."""
    for coding in (b"gzip, chunked", b"deflate,chunked", b"identity, chunked"):
        answer = _exchange(
            bounded_server,
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding + b"\r\n\r\n0\r\n\r\n",
        )
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 "), (coding, answer)
        assert json.loads(body)["error"]["message"].startswith(
            "the request is not HTTP/1.1 webward can read"
        )
    plain = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked \r\nConnection: close"
    answer = _exchange(bounded_server, plain + b"\r\n\r\n0\r\n\r\n")
    assert not answer.startswith(b"HTTP/1.1 400 "), answer


def test_on_h11_a_request_it_cannot_parse_is_answered_in_the_error_model(tmp_path: Path) -> None:
    """Where httptools is not installed (`pip install 'webward[mcp]'` alone serves `webward mcp
    --http` on h11), a malformed request got uvicorn's text/plain "Invalid HTTP request
    received." and a warning in the log per request. It gets the httptools stack's 400 in the
    error model, and the warning comes at most once every 10 s."""
    from test_gateway import load, loopback_web, running_gateway

    from webward.testing import MemoryAuditSink

    settings = load(tmp_path)
    warned: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warned.append(record.getMessage())

    handler = Collect(level=logging.WARNING)
    web = lambda: loopback_web(settings, MemoryAuditSink())  # noqa: E731
    try:
        with running_gateway(settings, web, http="h11") as base:
            # Once the server set up its logging, which drops a logger's handlers.
            logging.getLogger("uvicorn.error").addHandler(handler)
            host, port = base.removeprefix("http://").split(":")
            for bad in (b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n") * 3:
                answer = _exchange((host, int(port)), bad)
                head, _, body = answer.partition(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 400 "), answer
                assert b"content-type: application/json" in head.lower()
                message = json.loads(body)["error"]["message"]
                assert message.startswith("the request is not HTTP/1.1 webward can read")
    finally:
        logging.getLogger("uvicorn.error").removeHandler(handler)
    assert warned.count("Invalid HTTP request received.") <= 1


def test_on_h11_both_transfer_encoding_and_content_length_are_refused(tmp_path: Path) -> None:
    """h11 read a request with both Transfer-Encoding and Content-Length as chunked and kept
    the connection: what a proxy in front counted into the body by its Content-Length was
    served as the next request (smuggled past the proxy). As on httptools, 400 in the error
    model and the connection closed; nothing behind it is served."""
    from test_gateway import load, loopback_web, running_gateway

    from webward.testing import MemoryAuditSink

    settings = load(tmp_path)
    web = lambda: loopback_web(settings, MemoryAuditSink())  # noqa: E731
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    body = b"0\r\n\r\n" + smuggled
    request = (
        b"POST /v1/capabilities/web:page.fetch@1 HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body
    )
    with running_gateway(settings, web, http="h11") as base:
        host, port = base.removeprefix("http://").split(":")
        answer = _exchange((host, int(port)), request)
    head, _, rest = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), answer
    assert json.loads(rest)["error"]["message"].startswith(
        "the request is not HTTP/1.1 webward can read"
    )
    assert b"HTTP/1.1 200 " not in answer


def test_on_h11_a_head_too_large_is_answered_431_as_on_httptools(tmp_path: Path) -> None:
    """On h11 a head past its 16 KiB was answered 400 "a malformed request line or header",
    which sent a client with a large cookie looking for a typo. It has httptools's bound and
    answer: 431 past 64 KiB, saying so; a head under it is served."""
    from test_gateway import load, loopback_web, running_gateway

    from webward.testing import MemoryAuditSink

    settings = load(tmp_path)
    web = lambda: loopback_web(settings, MemoryAuditSink())  # noqa: E731
    with running_gateway(settings, web, http="h11") as base:
        host, port = base.removeprefix("http://").split(":")
        address = (host, int(port))
        cookie = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: "
        served = _exchange(address, cookie + b"a" * 40_000 + b"\r\n\r\n")
        assert served.startswith(b"HTTP/1.1 200 "), served
        whole = _exchange(address, cookie + b"a" * 70_000 + b"\r\n\r\n")  # in one write
        assert whole.startswith(b"HTTP/1.1 431 "), whole
        sock = socket.create_connection(address, timeout=10)
        with sock:
            sock.sendall(cookie)
            # In pieces, past h11's 16 KiB and then just past 64 KiB: all of it read by the
            # time of the answer, so the close is no reset under it.
            for _ in range(66):
                sock.sendall(b"a" * 1000)
            answer = sock.recv(65536)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431 "), answer
    assert json.loads(body)["error"]["message"] == (
        "the request line and headers are larger than 64 KiB"
    )


def test_on_h11_a_head_not_in_time_is_answered_408(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On h11 a client that sent half a head, or nothing, held its connection for good (h11
    bounds a head's size alone, and uvicorn's keep-alive timeout runs only after an answer):
    no token needed to hold thousands. As on httptools, a head not complete HEAD_TIMEOUT_S
    after the connection, or after the answer before it, is answered 408 and closed; a
    request in time, and one pipelined after it, are served."""
    from test_gateway import load, loopback_web, running_gateway

    from webward.testing import MemoryAuditSink

    monkeypatch.setattr(webward._serving, "HEAD_TIMEOUT_S", 0.5)
    settings = load(tmp_path)
    web = lambda: loopback_web(settings, MemoryAuditSink())  # noqa: E731
    health = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    with running_gateway(settings, web, http="h11") as base:
        host, port = base.removeprefix("http://").split(":")
        address = (host, int(port))
        half = _exchange(address, b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        assert half.startswith(b"HTTP/1.1 408 ") and b"did not arrive within 0.5 s" in half
        assert _exchange(address, b"").startswith(b"HTTP/1.1 408 ")
        # Two answered, then half a head: 408 after the second answer.
        served = _exchange(address, health * 2 + b"GET /healthz HTTP/1.1\r\n")
        assert served.count(b"HTTP/1.1 200 ") == 2 and b"HTTP/1.1 408 " in served


def test_malformed_requests_are_warned_of_once_in_a_while_not_once_each(
    bounded_server: tuple[str, int],
) -> None:
    """uvicorn warned once per request httptools cannot parse: a client sending them fast
    flooded the log (430 lines in 20 s). At most one line every 10 s; each still gets its 400."""
    warned: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warned.append(record.getMessage())

    handler = Collect(level=logging.WARNING)
    logging.getLogger("uvicorn.error").addHandler(handler)
    try:
        for _ in range(20):
            assert _exchange(bounded_server, b"GARBAGE\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    finally:
        logging.getLogger("uvicorn.error").removeHandler(handler)
    assert warned.count("Invalid HTTP request received.") <= 1


def test_requests_asking_to_upgrade_are_served_and_warned_of_once_in_a_while(
    tmp_path: Path,
) -> None:
    """uvicorn wrote two warnings for every request asking to upgrade, whoever sent it, the
    second advising a WebSocket library the servers do without on purpose (ws="none"): a log
    any client could flood. Each is served as plain HTTP; one line at most every 10 s."""
    from test_gateway import load, loopback_web, running_gateway

    from webward.testing import MemoryAuditSink

    settings = load(tmp_path)
    warned: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warned.append(record.getMessage())

    handler = Collect(level=logging.WARNING)
    upgrade = (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: %s\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    web = lambda: loopback_web(settings, MemoryAuditSink())  # noqa: E731
    try:
        with running_gateway(settings, web, http="httptools") as base:
            # Once the server set up its logging, which drops a logger's handlers.
            logging.getLogger("uvicorn.error").addHandler(handler)
            host, port = base.removeprefix("http://").split(":")
            for protocol in (b"websocket", b"h2c") * 10:
                with socket.create_connection((host, int(port)), timeout=10) as conn:
                    conn.sendall(upgrade % protocol)
                    assert conn.recv(65536).startswith(b"HTTP/1.1 200")
    finally:
        logging.getLogger("uvicorn.error").removeHandler(handler)
    assert warned.count("Unsupported upgrade request.") <= 1
    assert not [line for line in warned if "WebSocket library" in line]


def test_a_body_or_pipelined_requests_are_no_head_to_bound(
    bounded_server: tuple[str, int],
) -> None:
    """Only a head counts: a 40 KiB cookie with a 100 KiB body in one write, 300 requests
    pipelined in one write, and a pipelined request served for longer than a head may take
    to arrive are all answered 200."""
    body = b"x" * 100_000
    big = (
        b"POST / HTTP/1.1\r\nHost: x\r\nCookie: " + b"c" * 40_000 + b"\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
    )
    assert _exchange(bounded_server, big).startswith(b"HTTP/1.1 200")
    pipelined = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 299
    pipelined += b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    assert _exchange(bounded_server, pipelined).count(b"HTTP/1.1 200") == 300
    # 1,000 requests of 232 bytes in one write: a packet holding requests and the start of
    # the next head counted whole towards that head (431 at a packet of 64 KiB).
    padded = b"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * 196 + b"\r\n\r\n"
    many = padded * 999 + b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    answer = _exchange(bounded_server, many)
    assert answer.count(b"HTTP/1.1 200") == 1_000 and b"431" not in answer
    slow = (
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    answer = _exchange(bounded_server, slow)
    assert answer.count(b"HTTP/1.1 200") == 2 and b"408" not in answer


def test_an_answer_before_the_body_is_read_reaches_a_client_still_sending(
    bounded_server: tuple[str, int],
) -> None:
    """An app answers (a 413) before reading a 1 MB body: the client, still sending it, reads
    its answer; the rest of the body is read and dropped rather than the connection reset
    under the answer. What follows an answer is bounded all the same: past 4 MiB (a chunked
    body's trailer that never ends) the connection is closed."""
    body = b"x" * 1_000_000
    head = b"POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
    then = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    # The body read and dropped to its end, the connection serves the next request.
    answer = _exchange(bounded_server, head + body + then)
    assert answer.startswith(b"HTTP/1.1 413 ") and b"HTTP/1.1 200 " in answer
    chunked = b"POST /early HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
    with socket.create_connection(bounded_server, timeout=10) as conn:
        conn.sendall(chunked)
        sent = 0
        with contextlib.suppress(OSError):  # closed under the sender past the bound
            while sent < 16 * 1024 * 1024:
                conn.sendall(b"X-Trailer: " + b"t" * 8000 + b"\r\n")
                sent += 8013
    assert sent < 16 * 1024 * 1024


def test_an_answer_to_a_body_past_the_linger_bound_says_the_connection_ends(
    bounded_server: tuple[str, int],
) -> None:
    """A 5 MB body answered 413 early: the server reads only 4 MiB of the rest, then closes.
    The answer said nothing of that, so a keep-alive client (httpx) put the connection back
    in its pool, and its next request failed ("Server disconnected"). The answer now says
    ``connection: close``, and is still read before the close."""
    import httpx

    host, port = bounded_server
    with httpx.Client(base_url=f"http://{host}:{port}", timeout=10) as client:
        for _ in range(3):
            refused = client.post("/early", content=b"x" * (5 * 1024 * 1024))
            assert refused.status_code == 413 and refused.text == "too large"
            assert refused.headers["connection"] == "close"
            assert client.get("/").status_code == 200


def test_a_late_body_after_an_answer_or_behind_a_pipelined_request_gets_no_second_answer(
    bounded_server: tuple[str, int],
) -> None:
    """A body still coming after its request was answered (a 413 before the body was read)
    gets no 408 on top: the connection is closed once the bound passes. A request pipelined
    behind one being served starts its body's time when that answer is done, so the answer
    before it is delivered (a 408 once closed the connection under it)."""
    early = b"POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"x" * 10
    answer = _exchange(bounded_server, early)
    assert answer.startswith(b"HTTP/1.1 413 ") and b"408" not in answer
    served = b"POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok"
    behind = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"x" * 10
    answer = _exchange(bounded_server, served + behind)
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b"HTTP/1.1 408 " in answer  # the late body behind it, once its time came


def test_a_client_that_pipelines_then_leaves_is_heard_leaving_by_the_request_served() -> None:
    """uvicorn tells only the newest request of a connection that its client left: the one
    being served, with others pipelined behind it, went on to answer into a closed transport
    (a traceback on stderr for each such client). Every unanswered one hears it leave."""
    import threading

    import uvicorn

    heard: list[str] = []
    errors: list[logging.LogRecord] = []
    served = threading.Event()

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            errors.append(record)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await receive()  # the (empty) body
        if scope["path"] == "/held":
            try:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(5):
                        heard.append((await receive())["type"])
                await send({"type": "http.response.start", "status": 200, "headers": []})
                await send({"type": "http.response.body", "body": b"late"})
            finally:
                served.set()
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    handler = Collect(level=logging.ERROR)
    logging.getLogger("uvicorn.error").addHandler(handler)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    config = uvicorn.Config(
        app, http=http_protocol(fastest_stack()), log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        with socket.create_connection(sock.getsockname(), timeout=10) as conn:
            conn.sendall(
                b"GET /held HTTP/1.1\r\nHost: x\r\n\r\n" + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 3
            )
        assert served.wait(10)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
        logging.getLogger("uvicorn.error").removeHandler(handler)
    assert heard == ["http.disconnect"]
    assert [r.getMessage() for r in errors] == []


def test_a_chunked_bodys_trailer_adds_no_header_to_the_request(tmp_path: Path) -> None:
    """httptools hands a chunked body's trailer fields over as headers, and uvicorn appended
    them to the request's: a request whose head had no Authorization was served as the agent
    a trailer named (past a proxy that checks or strips the head's), and a trailer's
    Webward-Session put the call in that session. RFC 9110 6.5.1: a trailer is not merged
    into the head. Both are now the head's alone: 401, and a call in no session."""
    from test_gateway import TOKENS, load, loopback_web, running_gateway

    from webward.testing import MemoryAuditSink

    settings = load(tmp_path)
    audit = MemoryAuditSink()

    def chunked(head: bytes, trailer: bytes) -> bytes:
        body = b'{"url": "http://127.0.0.1:9/"}'
        return (
            b"POST " + FETCH_PATH.encode() + b" HTTP/1.1\r\nHost: x\r\n" + head
            + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n%x\r\n" % len(body) + body + b"\r\n0\r\n" + trailer
            + b"\r\n"
        )  # fmt: skip

    token = b"Authorization: Bearer " + TOKENS["alice"].encode() + b"\r\n"
    with running_gateway(settings, lambda: loopback_web(settings, audit), http="httptools") as base:
        host, port = base.removeprefix("http://").split(":")
        address = (host, int(port))
        # One write: the trailer is parsed before the app reads the headers.
        unsigned = _exchange(address, chunked(b"", token))
        assert unsigned.startswith(b"HTTP/1.1 401 "), unsigned
        signed = _exchange(address, chunked(token, b"Webward-Session: smuggled\r\n"))
        assert signed.startswith(b"HTTP/1.1 "), signed
        # Dropped, but counted with the head: past 64 KiB together, 431 as ever.
        many = b"".join(b"X-T%d: %s\r\n" % (i, b"v" * 100) for i in range(800))
        assert _exchange(address, chunked(token, many)).startswith(b"HTTP/1.1 431 ")
    assert [(r.agent, r.session) for r in audit.records] == [("alice", None)] * 2


def _hooked_child_env(tmp_path: Path, hook_source: str) -> dict[str, str]:
    """A server child's environment (:func:`child_env`, no proxies) whose interpreter runs
    ``hook_source`` first, as its sitecustomize."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(hook_source, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(child_env(tmp_path))
    env["PYTHONPATH"] = str(hook) + os.pathsep + env["PYTHONPATH"]
    return env


# Ctrl-C while `webward serve` sets its server up: sent by the process to itself when the
# gateway's module is imported (inside the event loop, under asyncio's handler), as a person
# pressing it a moment after starting the server does, without a race.
_CTRL_C_ON_GATEWAY_IMPORT = ctrl_c_on_import("webward._gateway")


def test_ctrl_c_while_serve_sets_up_is_one_sentence_without_a_traceback(tmp_path: Path) -> None:
    """Ctrl-C before the gateway began serving reached uvicorn's startup as a cancellation:
    the lifespan task was cancelled while it started the conversion workers, and uvicorn
    logged "ERROR: Traceback ... CancelledError" (60 lines) above the sentence. Now: 130 and
    the one sentence, no traceback."""
    env = _hooked_child_env(tmp_path, _CTRL_C_ON_GATEWAY_IMPORT)
    config = gateway_config(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "webward", "serve", "--port", "0", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=as_at_a_terminal,
    )
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr == (
        "webward serve: interrupted (Ctrl-C): stopped; calls in flight were answered, or "
        "cancelled, and audited\n"
    )


def test_a_ctrl_c_python_dropped_while_serve_loads_stops_it(tmp_path: Path) -> None:
    """Ctrl-C dropped by Python while `webward serve` loaded ("Exception ignored in: ...
    KeyboardInterrupt") was lost: the gateway started and served on, the person's Ctrl-C
    ignored. It now never starts: 130 and the one sentence."""
    env = _hooked_child_env(tmp_path, ctrl_c_in_a_callback("webward._cmd_serve"))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "webward",
            "serve",
            "--port",
            "0",
            "--config",
            str(gateway_config(tmp_path)),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_at_a_terminal,
    )
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
        pytest.fail(f"the server started and ran on despite the Ctrl-C: {err}")
    assert process.returncode == 130, err
    assert err == (
        "webward serve: interrupted (Ctrl-C): stopped; calls in flight were answered, or "
        "cancelled, and audited\n"
    )


@pytest.mark.parametrize(("face", "grace"), [("serve", 10), ("mcp-http", 5)])
def test_a_call_the_graceful_shutdown_outlasts_is_said_in_the_commands_voice(
    tmp_path: Path, face: str, grace: int
) -> None:
    """SIGTERM while a call waits on a page that never answers: once the graceful shutdown's
    grace runs out the call is cancelled, answered and audited as cancelled, as designed. That
    was said by uvicorn above the command's last line, "ERROR:    Cancel 1 running task(s),
    timeout graceful shutdown exceeded": labelled an error, in words not the command's. Now
    one line of the command's own says it."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(child_env(tmp_path))
    if face == "serve":
        args = ["serve", "--port", "0", "--config", str(gateway_config(tmp_path))]
    else:
        args = ["mcp", "--http", "127.0.0.1:0", "--tier", "connected"]
        args += ["--config", str(mcp_config(tmp_path))]
    arrived, hung_up, hold = held()

    def hold_past_the_grace(req: Any, sock: socket.socket) -> None:
        sock.settimeout(None)  # the server's 10 s socket timeout would end it first
        hold(req, sock)

    answers: queue.Queue[httpx.Response | Exception] = queue.Queue()
    with serve(routes={"/hold": hold_past_the_grace}) as site:
        proc, line = _start(args, env)
        try:
            base = line.split(" on ", 1)[1].split()[0]
            address, body, headers = _call_of(face, base, site.url("/hold"))

            def call() -> None:
                try:
                    with httpx.Client(trust_env=False, timeout=60) as c:
                        answers.put(c.post(address, json=body, headers=headers))
                except Exception as exc:  # the answer under test: kept, not raised here
                    answers.put(exc)

            threading.Thread(target=call, daemon=True).start()
            assert arrived.wait(30), "the call never reached the page"
            proc.send_signal(signal.SIGTERM)
            answer = answers.get(timeout=60)
            assert proc.wait(30) == 143
            assert proc.stderr is not None
            said = proc.stderr.read()
        finally:
            _stop(proc)
        assert hung_up.wait(10)  # the read was stopped
    assert isinstance(answer, httpx.Response) and answer.status_code == 503, repr(answer)
    command = f"webward {face.split('-')[0]}"
    sentences = [line for line in said.splitlines() if not line.startswith("{")]  # call log
    assert sentences == [
        f"{command}: the graceful shutdown's {grace} s ran out with 1 request still running: "
        "stopped, its call cancelled and audited as cancelled",
        f"{command}: terminated (SIGTERM): stopped; calls in flight were answered, or "
        "cancelled, and audited",
    ]
    found = stored_records(SQLiteAuditSink(tmp_path / "state"))
    assert [(r.decision, r.reason, r.target) for r in found] == [
        ("failed", "cancelled", site.url("/hold"))
    ]


def test_a_signal_while_a_record_waits_for_its_commit_keeps_that_one_record(
    tmp_path: Path,
) -> None:
    """SIGTERM while the record of a call that has read its page waits for its commit
    (another process holds the audit log's write lock): the shutdown waits for the commit,
    the call is answered, and the log holds its one record, neither lost nor doubled by a
    record of the call as cancelled."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(child_env(tmp_path))
    args = ["serve", "--port", "0", "--config", str(gateway_config(tmp_path))]
    page = "<html><head><title>P</title></head><body><p>some words</p></body></html>"
    answers: queue.Queue[httpx.Response | Exception] = queue.Queue()
    with serve(routes={"/page": respond(200, page)}) as site:
        proc, line = _start(args, env)
        try:
            base = line.split(" on ", 1)[1].split()[0]
            port = int(base.split(":")[2].split("/")[0])
            with httpx.Client(trust_env=False, timeout=30) as c:  # the log made, and proven
                first = c.post(
                    base + FETCH_PATH, json={"url": site.url("/page?1")}, headers=auth("alice")
                )
                assert first.status_code == 200, first.text
            lock = sqlite3.connect(tmp_path / "state" / "audit.db", isolation_level=None)
            try:
                lock.execute("BEGIN IMMEDIATE")

                def call() -> None:
                    try:
                        with httpx.Client(trust_env=False, timeout=60) as c:
                            answers.put(
                                c.post(
                                    base + FETCH_PATH,
                                    json={"url": site.url("/page?2")},
                                    headers=auth("alice"),
                                )
                            )
                    except Exception as exc:  # the answer under test: kept, not raised here
                        answers.put(exc)

                threading.Thread(target=call, daemon=True).start()
                deadline = time.monotonic() + 30
                while len(site.requests) < 2 and time.monotonic() < deadline:  # bounded poll
                    time.sleep(0.02)
                assert len(site.requests) == 2, "the call never read its page"
                proc.send_signal(signal.SIGTERM)
                while _listening(port) and time.monotonic() < deadline:  # bounded poll
                    time.sleep(0.02)
                assert not _listening(port), "the server never began its shutdown"
            finally:
                lock.execute("ROLLBACK")
                lock.close()
            answer = answers.get(timeout=60)
            assert proc.wait(30) == 143
        finally:
            _stop(proc)
    assert isinstance(answer, httpx.Response) and answer.status_code == 200, repr(answer)
    found = stored_records(SQLiteAuditSink(tmp_path / "state"))
    assert sorted((r.decision, r.target) for r in found) == [
        ("allowed", site.url("/page?1")),
        ("allowed", site.url("/page?2")),
    ]


def test_serve_raises_its_open_files_limit_so_one_client_cannot_hold_them_all(
    tmp_path: Path,
) -> None:
    """Every connection is an open file, and a client needs no token to open them: under a
    soft limit of 1024 (systemd's default) one client holding a thousand idle connections,
    opened again as the head deadline closed them, left every agent unanswered, with nothing
    in the log. The server raises its soft limit to the hard one at start, where one address
    runs out of ports first; and it serves a client past the limit it was started with."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    started_with = 128
    assert hard == resource.RLIM_INFINITY or hard > 4 * started_with

    def low_limit() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_NOFILE, (started_with, hard))

    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(child_env(tmp_path))
    config = gateway_config(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "webward.cli", "serve", "--port", "0", "--config", str(config)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        preexec_fn=low_limit,
    )
    held_open: list[socket.socket] = []
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "gateway on http://" in line, line
        base = line.split("gateway on ")[1].split()[0]
        limits = Path(f"/proc/{proc.pid}/limits").read_text().splitlines()
        (files,) = [row for row in limits if row.startswith("Max open files")]
        assert int(files.split()[3]) > started_with, files
        host, port = base.removeprefix("http://").split(":")
        for _ in range(2 * started_with):  # idle: no request sent
            held_open.append(socket.create_connection((host, int(port))))
        assert httpx.get(base + "/healthz", timeout=30).status_code == 200
    finally:
        for conn in held_open:
            conn.close()
        _stop(proc)


@pytest.mark.parametrize("command", ["serve", "mcp"])
@pytest.mark.parametrize("files", [64, 1024])
def test_a_server_with_few_open_files_says_so_as_it_starts(
    tmp_path: Path, command: str, files: int
) -> None:
    """Under `ulimit -n 64` a burst of 50 clients used up the descriptors, and uvloop closed
    the connections past them unanswered with nothing logged: the server now says the limit
    and the step as it starts. systemd's default of 1024 brings no warning."""
    import resource

    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(child_env(tmp_path))
    config = gateway_config(tmp_path) if command == "serve" else mcp_config(tmp_path)
    where = ["--port", "0"] if command == "serve" else ["--http", "127.0.0.1:0"]

    def limited() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    proc = subprocess.Popen(
        [sys.executable, "-m", "webward.cli", command, *where, "--config", str(config)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        preexec_fn=limited,
    )
    assert proc.stderr is not None
    lines = []
    while not lines or " on http://" not in lines[-1]:  # up to the line that it listens
        line = proc.stderr.readline()
        assert line, lines
        lines.append(line)
    _stop(proc)
    warnings = [line for line in lines if "files (ulimit -n)" in line]
    if files == 1024:
        assert warnings == []
    else:
        assert warnings == [
            f"webward {command}: warning: this process may open only 64 files (ulimit -n), "
            "which a burst of requests uses up, and a client past that is disconnected "
            "unanswered; raise the limit (ulimit -n 4096, or LimitNOFILE= in a systemd unit)\n"
        ]
