"""The HTTP stack under ``webward serve`` and ``webward mcp --http``.

uvicorn parses HTTP with h11 (pure Python) unless httptools is installed, and anyio runs the
standard asyncio loop unless told to use uvloop. Both fast parts are C extensions that the
``serve`` extra brings (uvloop not on Windows, where it does not exist): when importable the
servers use them, and say so in their start-up line, since the stack is a large share of the
cost of a cached read (bench/gateway.py). Without them the servers run the same way on h11 and
asyncio.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

__all__ = ["Stack", "fastest_stack", "run_server"]

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
