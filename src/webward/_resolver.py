"""The resolver seam: host name -> IP addresses.

The pinned transport asks the resolver exactly once per connection and connects to an
address from that very answer, so a name cannot be re-resolved to an internal address
between the check and the connect (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Mapping
from typing import Protocol

import anyio

from ._errors import Reason, UpstreamError

__all__ = ["Resolver", "StaticResolver", "SystemResolver"]


class Resolver(Protocol):
    """Answers the IP addresses of a host name."""

    async def resolve(self, host: str) -> list[str]:
        """All addresses of ``host`` as strings; raises ``UpstreamError`` when it has none."""
        ...


def _literal(host: str) -> list[str] | None:
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
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
            raise UpstreamError(f"{host} could not be resolved", reason=Reason.DNS) from exc
        answers: list[str] = []
        for _family, _type, _proto, _canon, sockaddr in infos:
            ip = str(ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0]))
            if ip not in answers:
                answers.append(ip)
        if not answers:
            raise UpstreamError(f"{host} could not be resolved", reason=Reason.DNS)
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
        if not turns or not turns[0]:
            raise UpstreamError(f"{host} could not be resolved", reason=Reason.DNS)
        n = self._calls.get(key, 0)
        self._calls[key] = n + 1
        return list(turns[min(n, len(turns) - 1)])
