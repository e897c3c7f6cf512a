"""``[limits] per_host_concurrency`` is what one host gets at once, above 8 too: the
transport's pool per origin sets no smaller cap of its own, so stalled reads to a host do not
starve a quick read to the same host while the setting leaves room for it. Real loopback
servers; only 127.0.0.1 is in ``allow_ranges``.
"""

from __future__ import annotations

import socket
import threading
from functools import partial

import anyio
import pytest
from localserver import Request, respond, send, serve

from webward import Settings, StaticResolver, Web
from webward.testing import MemoryAuditSink

pytestmark = pytest.mark.anyio

STALLED = 12  # reads held open by the server: more than the 8 the pool used to allow


def settings(concurrency: int) -> Settings:
    return Settings().replace(
        {
            "network": {"allow_ranges": ["127.0.0.1/32"]},
            "policy": {"default_tier": "connected", "robots": False},
            "limits": {
                "per_host_rate": 1000.0,
                "per_host_burst": 1000,
                "per_host_concurrency": concurrency,
                "fetch_timeout_s": 3.0,
                "page_cache_ttl_s": 0,
            },
        }
    )


class Stalling:
    """A route that holds each read open until ``release`` is set, counting them in
    ``arrived``; ``all_arrived`` is set once ``expected`` have."""

    def __init__(self, expected: int) -> None:
        self.expected, self.arrived = expected, 0
        self.release, self.all_arrived = threading.Event(), threading.Event()
        self._count = threading.Lock()

    def __call__(self, req: Request, sock: socket.socket) -> None:
        with self._count:
            self.arrived += 1
            if self.arrived == self.expected:
                self.all_arrived.set()
        self.release.wait(10)  # bounded, so a failing test never leaves a thread behind long
        send(sock, 200, b"late", "text/plain")


async def test_stalled_reads_past_eight_leave_room_for_a_quick_one() -> None:
    """With per_host_concurrency = 16, twelve reads the server holds open and a thirteenth,
    quick read of the same origin all get a connection at once: the quick one is answered
    while the others still wait (it waited in the pool for its deadline when the pool held 8
    connections per origin whatever the setting)."""
    stall = Stalling(STALLED)
    routes = {"/stall": stall, "/quick": respond(200, "quick", "text/plain")}
    with serve(routes=routes) as srv:
        async with Web(settings(16), StaticResolver({}), audit=MemoryAuditSink()) as w:
            stalled: list[str] = []

            async def read_stalled(i: int) -> None:
                page = await w.fetch(srv.url(f"/stall?i={i}"))
                stalled.append(page.content)

            try:
                async with anyio.create_task_group() as tg:
                    for i in range(STALLED):
                        tg.start_soon(read_stalled, i)
                    # Every stalled read holds a connection of the origin's pool: with a cap
                    # of 8, the last four never reach the server.
                    await anyio.to_thread.run_sync(stall.all_arrived.wait, 5.0)
                    assert stall.arrived == STALLED
                    quick = await w.fetch(srv.url("/quick"))
                    assert "quick" in quick.content
                    assert not stall.release.is_set() and len(stalled) == 0  # still held open
                    stall.release.set()
            finally:
                stall.release.set()
    assert len(stalled) == STALLED and all("late" in text for text in stalled)


async def test_the_setting_still_bounds_what_one_host_gets_at_once() -> None:
    """The pool is no cap of its own, and needs none: the host's concurrency slots hold the
    reads past ``per_host_concurrency`` back (here 2 of 3 reach the server; the third waits
    for a slot, then is answered)."""
    stall = Stalling(2)
    with serve(routes={"/stall": stall}) as srv:
        async with Web(settings(2), StaticResolver({}), audit=MemoryAuditSink()) as w:
            try:
                async with anyio.create_task_group() as tg:
                    for i in range(3):
                        tg.start_soon(w.fetch, srv.url(f"/stall?i={i}"))
                    await anyio.to_thread.run_sync(stall.all_arrived.wait, 5.0)
                    await anyio.wait_all_tasks_blocked()  # the third waits for a slot
                    assert stall.arrived == 2
                    stall.release.set()
            finally:
                stall.release.set()
        assert stall.arrived == 3


async def test_one_agents_stalled_reads_leave_a_slot_for_another_agent() -> None:
    """With per_host_concurrency = 4, mallory reading four URLs the server holds open gets
    three of them sent (the fourth waits for one of mallory's own slots), and alice's read
    of the same host is answered while they are held: it waited out mallory's deadline when
    one agent could hold every slot of a host."""
    stall = Stalling(3)
    routes = {"/stall": stall, "/quick": respond(200, "quick", "text/plain")}
    with serve(routes=routes) as srv:
        async with Web(settings(4), StaticResolver({}), audit=MemoryAuditSink()) as w:
            try:
                async with anyio.create_task_group() as tg:
                    for i in range(4):
                        tg.start_soon(partial(w.fetch, srv.url(f"/stall?i={i}"), agent="mallory"))
                    await anyio.to_thread.run_sync(stall.all_arrived.wait, 5.0)
                    await anyio.wait_all_tasks_blocked()  # the fourth waits for mallory's slot
                    assert stall.arrived == 3
                    quick = await w.fetch(srv.url("/quick"), agent="alice")
                    assert "quick" in quick.content
                    assert stall.arrived == 3 and not stall.release.is_set()  # still held
                    stall.release.set()
            finally:
                stall.release.set()
        assert stall.arrived == 4
