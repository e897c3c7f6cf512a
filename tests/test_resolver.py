"""The system resolver's own threads (``_resolver._getaddrinfo``): a name is looked up in a
daemon thread of its own, at most ``_OWN_THREADS_MAX`` at once, each slot given back."""

from __future__ import annotations

import threading
import types

import pytest

from webward import _resolver
from webward._resolver import SystemResolver

pytestmark = pytest.mark.anyio


class _NoThread(threading.Thread):
    """A thread the system will not start (a thread or memory limit reached)."""

    def start(self) -> None:
        raise RuntimeError("can't start new thread")


async def test_a_lookup_no_thread_can_run_gives_its_slot_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only the resolver's threads are refused: the pool it falls back to starts its own.
    monkeypatch.setattr(_resolver, "threading", types.SimpleNamespace(Thread=_NoThread))
    before = _resolver._own_threads[0]
    # More lookups than there are slots: each slot kept would leave the next without one.
    for _ in range(_resolver._OWN_THREADS_MAX + 2):
        answers = await SystemResolver().resolve("localhost")  # /etc/hosts: no network
        assert {"127.0.0.1", "::1"} & set(answers)
    assert _resolver._own_threads[0] == before
