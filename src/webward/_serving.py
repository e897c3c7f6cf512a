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
import importlib
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

__all__ = ["Stack", "asyncio_only", "fastest_stack", "run_server"]

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
