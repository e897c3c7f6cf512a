"""Gateway bearer tokens: each names an agent, and config names its tier.

Config keeps a token only as its SHA-256 hex digest (``[agents.NAME] token_sha256``). A token
is hashed and compared in constant time against every agent's digest, so neither the time
taken nor an early exit tells which agent came close.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from ._errors import InvalidInput, Reason, Refused
from ._settings import Settings

__all__ = ["Agent", "TokenTable", "bearer_token", "hash_token", "require_tokens"]


def bearer_token(authorization: str) -> str:
    """The token of an ``Authorization: Bearer <token>`` value; ``""`` for another scheme or
    none (each face answers that in its own way)."""
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def hash_token(token: str) -> str:
    """The SHA-256 hex digest of a bearer token, as ``[agents.NAME] token_sha256`` keeps it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Agent:
    """Who a token belongs to."""

    name: str
    tier: str
    role: str = ""  # "admin" opens the operator console


class TokenTable:
    """Bearer token -> agent, from the hashed tokens in config."""

    def __init__(self, settings: Settings) -> None:
        entries: list[tuple[bytes, Agent]] = []
        holders: dict[str, str] = {}  # digest -> the agent holding it
        where = f" in {settings.source}" if settings.source else ""
        for name, agent in settings.agents.items():
            digest = agent.token_sha256.strip().lower()
            if not digest:
                continue
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise InvalidInput(
                    f"[agents.{name}] token_sha256{where} is not a SHA-256 hex digest; "
                    "make one with `webward serve --hash-token`"
                )
            if digest in holders:
                # One token, two agents (a block copied for a new agent): every call of
                # either would run, and be audited, as the first, with its tier.
                raise InvalidInput(
                    f"[agents.{holders[digest]}] and [agents.{name}] hold the same token_sha256"
                    f"{where}; give each agent its own token (`webward serve --hash-token`)"
                )
            holders[digest] = name
            entries.append(
                (bytes.fromhex(digest), Agent(name, settings.tier_for(name), agent.role))
            )
        self._entries = tuple(entries)

    def __len__(self) -> int:
        return len(self._entries)

    def named(self, name: str) -> tuple[bytes, Agent] | None:
        """Agent ``name`` and the SHA-256 digest of its token, as config keeps it, or None."""
        return next(
            ((stored, agent) for stored, agent in self._entries if agent.name == name), None
        )

    def lookup(self, token: str) -> Agent | None:
        """The agent holding ``token``, or None. Every entry is compared, in constant time."""
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        found: Agent | None = None
        for stored, agent in self._entries:
            if hmac.compare_digest(digest, stored) and found is None:
                found = agent
        return found


def require_tokens(settings: Settings) -> None:
    """Refuse to serve when no agent has a token: nobody could call the gateway."""
    if not len(TokenTable(settings)):
        where = settings.source or "the config file"
        raise Refused(
            f'no agent has a gateway token in {where}: add [agents.NAME] with tier = "connected" '
            "and token_sha256 = the output of `webward serve --hash-token`",
            code="not_configured",
            reason=Reason.NO_TOKENS,
        )
