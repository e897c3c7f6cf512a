"""The HTTP stack under ``webward serve`` and ``webward mcp --http``.

uvicorn parses HTTP with h11 (pure Python) unless httptools is installed, and anyio runs the
standard asyncio loop unless told to use uvloop. Both fast parts are C extensions that the
``serve`` extra brings (uvloop not on Windows, where it does not exist): when importable the
servers use them, and say so in their start-up line, since the stack is a large share of the
cost of a cached read (bench/gateway.py). Without them the servers run the same way on h11 and
asyncio.

The servers run on asyncio alone, never on trio: their modules are imported inside
:func:`asyncio_only`, which keeps trio out of the process where it happens to be installed.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

__all__ = ["Stack", "asyncio_only", "fastest_stack", "http_protocol", "run_server"]

T = TypeVar("T")


@dataclass(frozen=True)
class Stack:
    """uvicorn's HTTP protocol (``httptools`` or ``h11``) and the event loop (``uvloop`` or
    ``asyncio``)."""

    http: str
    loop: str

    def describe(self) -> str:
        return f"{self.http}, {self.loop}"


def _importable(module: str) -> bool:
    # Imported, not only found: a wheel built for another platform or a broken install is
    # found but fails to load, and then the server must fall back rather than fail to start.
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def fastest_stack() -> Stack:
    """The fastest stack installed here: httptools and uvloop where importable."""
    return Stack(
        http="httptools" if _importable("httptools") else "h11",
        loop="uvloop" if _importable("uvloop") else "asyncio",
    )


#: A request's head (its line and headers) may hold this many bytes, and must arrive within
#: this many seconds of the connection's first byte (or of the connection, for the first):
#: httptools, unlike h11 (16 KiB), bounds neither, and a client that never finishes its head
#: held a connection and its memory for as long as it liked (3,000 such connections, or one
#: 150 MB header, reached the gateway before any token was asked for).
MAX_HEAD_BYTES = 64 * 1024
HEAD_TIMEOUT_S = 10.0


def http_protocol(stack: Stack) -> Any:
    """What to give uvicorn's ``http`` setting for ``stack``: h11 as it is (its own 16 KiB
    bound on a head), httptools with the bounds above (:func:`_bounded_httptools`)."""
    return _bounded_httptools() if stack.http == "httptools" else stack.http


@functools.lru_cache(maxsize=1)
def _bounded_httptools() -> type:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class BoundedHttpTools(HttpToolsProtocol):
        """uvicorn's httptools protocol, answering 431 to a head over MAX_HEAD_BYTES and
        closing a connection whose head is not complete HEAD_TIMEOUT_S after it began."""

        _head_bytes = 0
        _head_timer: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_head_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head_timer()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._head_bytes = 0
            self._arm_head_timer()

        def on_url(self, url: bytes) -> None:
            if self._count(len(url)):
                super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            if self._count(len(name) + len(value) + 4):
                super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._disarm_head_timer()
            super().on_headers_complete()

        def _count(self, n: int) -> bool:
            self._head_bytes += n
            if self._head_bytes <= MAX_HEAD_BYTES:
                return True
            if not self.transport.is_closing():
                self.transport.write(_TOO_LARGE)
                self.transport.close()
            return False

        def _arm_head_timer(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._head_late)

        def _disarm_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_late(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                message = f"the request line and headers did not arrive within {HEAD_TIMEOUT_S:g} s"
                self.transport.write(_plain_answer("408 Request Timeout", message))
                self.transport.close()

    return BoundedHttpTools


def _plain_answer(status: str, message: str) -> bytes:
    body = json.dumps({"error": {"code": "invalid_input", "message": message}}).encode()
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


_TOO_LARGE = _plain_answer(
    "431 Request Header Fields Too Large",
    f"the request line and headers are larger than {MAX_HEAD_BYTES // 1024} KiB",
)


def run_server(stack: Stack, main: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run ``main(*args)`` under anyio on the stack's event loop."""
    return anyio.run(main, *args, backend_options={"use_uvloop": stack.loop == "uvloop"})


@contextlib.contextmanager
def asyncio_only() -> Iterator[None]:
    """Modules imported inside do not import trio, as if it were not installed (it is not a
    dependency). httpcore imports it when it can, to run under it too; a server runs on asyncio
    only, and would carry its 3.5 MiB and ~50 ms of start for nothing (bench/uncached.py)."""
    if "trio" in sys.modules:  # imported already (a test run): nothing left to spare
        yield
        return
    sys.modules["trio"] = None  # type: ignore[assignment]  # `import trio` raises ImportError
    try:
        yield
    finally:
        if "trio" in sys.modules and sys.modules["trio"] is None:
            del sys.modules["trio"]  # a later `import trio` (nothing of ours) finds it again
