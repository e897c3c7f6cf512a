"""Who may open the console: an admin agent's bearer token, or a one-time local token.

The credential travels as ``Authorization: Bearer <token>`` or in the console's cookie
(``HttpOnly; SameSite=Strict``, ``Secure`` over https), set by the login form's POST. Under
``webward serve`` the cookie holds a session, never the token: the agent's name and the time
of the login, signed with the digest of its token that config holds, so any replica behind
the same load balancer accepts it without a store shared for it; it lasts
:data:`SESSION_S`, calls no capability, and ends when the token changes. Under ``webward
console`` the printed token works once: the first visit trades it for a random session value
that lives as long as the process.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .._tokens import Agent, TokenTable

__all__ = [
    "ADMIN",
    "LIVE_KEEP_S",
    "LIVE_PREFIX",
    "SESSION_S",
    "AgentTokens",
    "Check",
    "ConsoleAuth",
    "OneTimeToken",
]

ADMIN = "admin"

#: How long a gateway console session lasts after its login.
SESSION_S = 12 * 3600
_SESSION = "s1"  # the first field of a session value: which format it has
#: Where a session is kept in the limit store while it lasts, by its signature (no host has a
#: ":"): a session is taken only while its key says it is live, so that a store that forgot
#: (a Redis restarted empty, flushed, failed over) ends sessions rather than their logouts.
LIVE_PREFIX = "console-session:"
_SKEW_S = 300  # a login another replica made, by a clock up to this far ahead, still counts
#: How long a session's key is kept: past the end of the session.
LIVE_KEEP_S = SESSION_S + _SKEW_S
# "s1." the login's time (hex) and a 16-digit nonce, "." the agent's name (UTF-8, hex), "."
# the HMAC-SHA256 (hex): lower-case hex only.
_SESSION_SHAPE = re.compile(r"s1\.([0-9a-f]{1,12}[0-9a-f]{16})\.((?:[0-9a-f]{2})+)\.([0-9a-f]{64})")


@dataclass(frozen=True)
class Check:
    """The verdict on a credential: 200 (``who`` may look), 401 (unknown) or 403 (not admin)."""

    status: int
    who: str = ""
    message: str = ""
    #: A token was looked up and no agent holds it: a guess, or a rotated token still in use,
    #: which the gateway counts as its capability routes do (``webward_auth_refusals_total``).
    unknown_token: bool = False


class ConsoleAuth(Protocol):
    """Checks credentials and trades a login token for the cookie's value."""

    #: The token may arrive in the URL (``?token=``), as ``webward console`` prints it.
    url_login: bool
    #: How long the cookie is kept (its ``Max-Age``); None: until the browser closes.
    session_s: int | None

    def check(self, credential: str) -> Check:
        """Who holds ``credential`` (a bearer token or the cookie's value)."""
        ...

    def login(self, token: str) -> tuple[Check, str]:
        """The verdict on a login with ``token`` and, when it is 200, the cookie's value."""
        ...

    def logout(self, credential: str) -> None:
        """End the session ``credential`` names, where the console keeps sessions."""
        ...

    def live_key(self, credential: str) -> str:
        """The key in the limit store under which the console keeps the session
        ``credential`` names while it lasts (until its logout), so that every replica sharing
        that store, and this one after a restart, take it only then; "" for a credential no
        other process could take (a bearer token, which no logout ends; ``webward console``'s
        sessions)."""
        ...


class AgentTokens:
    """``webward serve``: the gateway's agents; those with ``role = "admin"`` may look.

    A bearer token opens the console, as it calls the gateway; a login trades one for a
    session value (the module's docstring), so the browser never keeps a credential that
    calls capabilities or outlives :data:`SESSION_S`. A logout ends its session on this
    replica at once, and (``Console``, through :meth:`live_key`) on every replica sharing
    its limit store, and after a restart where that store keeps it (Redis).
    """

    url_login = False
    session_s: int | None = SESSION_S

    def __init__(self, tokens: TokenTable, *, clock: Callable[[], float] = time.time) -> None:
        self._tokens = tokens
        self._clock = clock
        self._ended: dict[str, float] = {}  # sessions logged out here -> when they would end

    def check(self, credential: str) -> Check:
        if not credential:
            return Check(
                401, message='log in with the bearer token of an agent with role = "admin"'
            )
        if credential.startswith(_SESSION + "."):
            return self._session(credential)
        return self._by_token(credential)

    def login(self, token: str) -> tuple[Check, str]:
        verdict = self._by_token(token)  # a token only: a session value is no login
        entry = self._tokens.named(verdict.who) if verdict.status == 200 else None
        if entry is None:
            return verdict, ""
        # The login's time, and a nonce so that each login is a session of its own (one
        # logged out ends no other made in the same second).
        issued = f"{int(self._clock()):x}{secrets.token_hex(8)}"
        name = verdict.who.encode("utf-8").hex()
        return verdict, f"{_SESSION}.{issued}.{name}.{_sign(entry[0], verdict.who, issued)}"

    def logout(self, credential: str) -> None:
        if credential.startswith(_SESSION + ".") and self._session(credential).status == 200:
            now = self._clock()
            self._ended = {v: end for v, end in self._ended.items() if end > now}
            self._ended[credential.rsplit(".", 1)[1]] = now + LIVE_KEEP_S

    def live_key(self, credential: str) -> str:
        shape = _SESSION_SHAPE.fullmatch(credential)
        return LIVE_PREFIX + shape.group(3) if shape is not None else ""

    def _session(self, value: str) -> Check:
        expired = Check(401, message="the console session has ended; log in again")
        # Only the one spelling login makes: "AB" read as hex like "ab" would be a copy of a
        # logged-out session under another name (and a non-ASCII signature no comparison).
        shape = _SESSION_SHAPE.fullmatch(value)
        if shape is None:
            return expired
        issued, name_hex, mac = shape.groups()
        try:
            name = bytes.fromhex(name_hex).decode("utf-8")
        except ValueError:
            return expired
        entry = self._tokens.named(name)
        if entry is None or not hmac.compare_digest(mac, _sign(entry[0], name, issued)):
            return expired  # a forged value, or the agent's token changed since
        age = self._clock() - int(issued[:-16], 16)
        if not -_SKEW_S <= age <= SESSION_S or mac in self._ended:
            return expired
        return _admin(entry[1])

    def _by_token(self, token: str) -> Check:
        agent = self._tokens.lookup(token)
        if agent is None:
            return Check(401, message="that token is not known to this gateway", unknown_token=True)
        return _admin(agent)


def _sign(digest: bytes, name: str, issued: str) -> str:
    """A session's signature: keyed by the digest of the agent's token that config holds."""
    message = f"webward console session|{issued}|{name}".encode()
    return hmac.new(digest, message, hashlib.sha256).hexdigest()


def _admin(agent: Agent) -> Check:
    if agent.role != ADMIN:
        return Check(
            403,
            agent.name,
            f'agent {agent.name} may not open the console: its [agents.{agent.name}] has no role = "admin"',
        )
    return Check(200, agent.name)


class OneTimeToken:
    """``webward console``: one random token, good for one login; then a session value."""

    url_login = True
    session_s: int | None = None

    def __init__(self, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self._used = False
        self._sessions: list[str] = []

    def check(self, credential: str) -> Check:
        if not credential:
            return Check(401, message="open the console with the link `webward console` printed")
        found = False
        for session in self._sessions:  # every session compared, in constant time
            found |= hmac.compare_digest(credential.encode(), session.encode())
        if found:
            return Check(200, "local operator")
        return Check(401, message="open the console with the link `webward console` printed")

    def login(self, token: str) -> tuple[Check, str]:
        if self._used or not hmac.compare_digest(token.encode(), self.token.encode()):
            return (
                Check(
                    401,
                    message="that token is used or wrong; restart `webward console` for a new one",
                ),
                "",
            )
        self._used = True
        session = secrets.token_urlsafe(32)
        self._sessions.append(session)
        return Check(200, "local operator"), session

    def logout(self, credential: str) -> None:
        if self.check(credential).status == 200:
            self._sessions = [s for s in self._sessions if s != credential]

    def live_key(self, credential: str) -> str:
        return ""  # its sessions live in this process alone
