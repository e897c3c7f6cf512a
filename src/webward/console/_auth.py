"""Who may open the console: an admin agent's bearer token, or a one-time local token.

The credential travels as ``Authorization: Bearer <token>`` or in the console's cookie
(``HttpOnly; SameSite=Strict``, ``Secure`` over https), set by the login form's POST. Under
``webward serve`` the cookie holds the agent's own token, so any replica behind the same
load balancer accepts it. Under ``webward console`` the printed token works once: the first
visit trades it for a random session value that lives as long as the process.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Protocol

from .._tokens import TokenTable

__all__ = ["ADMIN", "AgentTokens", "Check", "ConsoleAuth", "OneTimeToken"]

ADMIN = "admin"


@dataclass(frozen=True)
class Check:
    """The verdict on a credential: 200 (``who`` may look), 401 (unknown) or 403 (not admin)."""

    status: int
    who: str = ""
    message: str = ""


class ConsoleAuth(Protocol):
    """Checks credentials and trades a login token for the cookie's value."""

    #: The token may arrive in the URL (``?token=``), as ``webward console`` prints it.
    url_login: bool

    def check(self, credential: str) -> Check:
        """Who holds ``credential`` (a bearer token or the cookie's value)."""
        ...

    def login(self, token: str) -> tuple[Check, str]:
        """The verdict on a login with ``token`` and, when it is 200, the cookie's value."""
        ...

    def logout(self, credential: str) -> None:
        """End the session ``credential`` names, where the console keeps sessions."""
        ...


class AgentTokens:
    """``webward serve``: the gateway's agents; those with ``role = "admin"`` may look."""

    url_login = False

    def __init__(self, tokens: TokenTable) -> None:
        self._tokens = tokens

    def check(self, credential: str) -> Check:
        if not credential:
            return Check(
                401, message='log in with the bearer token of an agent with role = "admin"'
            )
        agent = self._tokens.lookup(credential)
        if agent is None:
            return Check(401, message="that token is not known to this gateway")
        if agent.role != ADMIN:
            return Check(
                403,
                agent.name,
                f'agent {agent.name} may not open the console: its [agents.{agent.name}] has no role = "admin"',
            )
        return Check(200, agent.name)

    def login(self, token: str) -> tuple[Check, str]:
        verdict = self.check(token)
        return verdict, token if verdict.status == 200 else ""

    def logout(self, credential: str) -> None:
        """Nothing to end: the cookie holds the agent's own token, valid while configured."""


class OneTimeToken:
    """``webward console``: one random token, good for one login; then a session value."""

    url_login = True

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
