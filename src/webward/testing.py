"""Helpers for testing agents that use webward, shipped with the library.

- :class:`StaticResolver` answers host names from a table (and drills DNS rebinding).
- :class:`FakeClock` is a clock you move by hand (and a ``sleep`` that moves it), for limiter,
  breaker, robots.txt and cache tests.
- :class:`RecordingConnector` records where webward *would* connect and never connects, so a
  test can prove that a public address passes the guard without touching the network.
- ``MemoryAuditSink`` keeps audit records in a list.

HTTP behaviour is still best tested against real servers on loopback.
"""

from __future__ import annotations

from typing import Any

import httpcore

from ._resolver import StaticResolver
from .audit import MemoryAuditSink

__all__ = ["FakeClock", "MemoryAuditSink", "RecordingConnector", "StaticResolver"]


class FakeClock:
    """A clock that only moves when told to: ``clock()`` reads it, ``advance(s)`` moves it.

    Pass it wherever webward takes a ``clock`` (``Web``, ``Limiter``, the page caches,
    ``RobotsChecker``); ``now`` may also be set directly. :meth:`sleep` is the matching
    ``sleep`` for ``Limiter(..., sleep=clock.sleep)``: a wait that moves the clock instead of
    taking time.
    """

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward."""
        self.now += seconds

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time: move it forward and return at once."""
        self.advance(seconds)


class RecordingConnector:
    """A connector that records ``(ip, port)`` and refuses to connect.

    Pass it as ``Web(..., connector=RecordingConnector())``: a read that passes the guard
    ends as an upstream error ("could not connect"), and ``.attempts`` says where it would
    have gone.
    """

    def __init__(self) -> None:
        self.attempts: list[tuple[str, int]] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        self.attempts.append((host, port))
        raise httpcore.ConnectError(f"recording connector: would connect to {host}:{port}")
