"""The resolver seam: host name -> IP addresses.

The pinned transport asks the resolver exactly once per connection and connects to an
address from that very answer, so a name cannot be re-resolved to an internal address
between the check and the connect (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable, Mapping
from typing import Protocol

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
            infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
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
