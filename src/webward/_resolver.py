"""The resolver seam: host name -> IP addresses.

The pinned transport asks the resolver exactly once per connection and connects to an
address from that very answer, so a name cannot be re-resolved to an internal address
between the check and the connect (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import anyio

from ._addresses import ip_text
from ._errors import Reason, UpstreamError

__all__ = ["Resolver", "StaticResolver", "SystemResolver", "unresolved"]

# The proxy variables other HTTP clients read (curl, requests, httpx), most specific first.
_PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")


def unresolved(host: str) -> UpstreamError:
    """The error for a name with no address, in one sentence.

    On a network reached only through a proxy, names do not resolve, and a user whose
    HTTPS_PROXY is set is told why it did not help: webward ignores proxy variables (it
    connects to the address it checked itself). Only the variable's name is said, never its
    value (which may carry credentials)."""
    message = f"{host} could not be resolved"
    proxy = _proxy_variable()
    if proxy:
        message += (
            f"; webward does not use proxies from the environment ({proxy} is set) and "
            'connects directly (see "Proxies" in docs/guard.md)'
        )
    return UpstreamError(message, reason=Reason.DNS)


def _proxy_variable() -> str | None:
    """The name of the first proxy variable set (non-empty) in the environment, any case."""
    set_names = {name.upper(): name for name, value in os.environ.items() if value.strip()}
    return next((set_names[v] for v in _PROXY_VARIABLES if v in set_names), None)


class Resolver(Protocol):
    """Answers the IP addresses of a host name."""

    async def resolve(self, host: str) -> list[str]:
        """All addresses of ``host`` as strings; raises ``UpstreamError`` when it has none."""
        ...


def _literal(host: str) -> list[str] | None:
    try:
        return [ip_text(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        return None


class SystemResolver:
    """The operating system's resolver (``getaddrinfo``), run off the event loop."""

    async def resolve(self, host: str) -> list[str]:
        literal = _literal(host)
        if literal is not None:
            return literal
        try:
            infos = await _getaddrinfo(host)
        except (OSError, UnicodeError) as exc:
            raise unresolved(host) from exc
        answers: list[str] = []
        for _family, _type, _proto, _canon, sockaddr in infos:
            ip = ip_text(ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0]))
            if ip not in answers:
                answers.append(ip)
        if not answers:
            raise unresolved(host)
        return answers


# Lookups in daemon threads of their own at once, at most; past it, anyio's pool takes them.
_OWN_THREADS_MAX = 32
_own_threads = [0]
_own_threads_lock = threading.Lock()


async def _getaddrinfo(host: str) -> list[Any]:
    """``getaddrinfo(host)`` in a daemon thread of its own, whose answer the call may stop
    waiting for. In the pools of asyncio and anyio, a lookup cancelled (Ctrl-C, a deadline)
    went on in its thread, and the pool was waited for as the loop closed and again as the
    interpreter exited: with a network's DNS gone (a VPN down, a captive portal), Ctrl-C on
    `webward fetch` ended the command 5 to 20 s later, when the resolver gave up (its call
    audited as cancelled at once). A daemon thread is not waited for."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # trio, under anyio: its own pool
        return await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    with _own_threads_lock:
        own = _own_threads[0] < _OWN_THREADS_MAX
        if own:
            _own_threads[0] += 1
    if not own:  # a flood of new names: bounded by anyio's pool, as before
        return await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    answer: asyncio.Future[list[Any]] = loop.create_future()

    def settle(result: list[Any] | None, error: BaseException | None) -> None:
        if answer.done():  # the caller stopped waiting (cancelled)
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(result or [])

    def look_up() -> None:
        result: list[Any] | None = None
        error: BaseException | None = None
        try:
            result = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except BaseException as exc:  # handed to the caller, whatever it is
            error = exc
        finally:
            with _own_threads_lock:
                _own_threads[0] -= 1
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, result, error)

    try:
        threading.Thread(target=look_up, name="webward resolver", daemon=True).start()
    except RuntimeError:  # no thread to be had (a thread or memory limit): its slot given back
        with _own_threads_lock:
            _own_threads[0] -= 1
        return await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return await answer


class StaticResolver:
    """Answers from a fixed table (tests, rebinding drills); unknown names do not resolve.

    A table value is either a list of addresses, answered every time, or a list of such
    lists, answered in turn (the last one repeats): ``{"a.test": [["8.8.8.8"], ["127.0.0.2"]]}``
    answers a public address first and a loopback one next.
    """

    def __init__(self, table: Mapping[str, Iterable[str] | Iterable[Iterable[str]]]) -> None:
        self._turns: dict[str, list[list[str]]] = {}
        self._calls: dict[str, int] = {}
        for name, value in table.items():
            items = list(value)
            if items and not isinstance(items[0], str):
                turns = [list(t) for t in items]
            else:
                turns = [[str(i) for i in items]]
            self._turns[name.lower().rstrip(".")] = turns

    async def resolve(self, host: str) -> list[str]:
        literal = _literal(host)
        if literal is not None:
            return literal
        key = host.lower().rstrip(".")
        turns = self._turns.get(key)
        if not turns:
            raise unresolved(host)
        n = self._calls.get(key, 0)
        self._calls[key] = n + 1
        answer = turns[min(n, len(turns) - 1)]
        if not answer:  # an empty turn: the name does not resolve this time
            raise unresolved(host)
        return list(answer)
