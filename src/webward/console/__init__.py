"""The operator console: what the agents did, in a browser (``/console``).

``webward serve`` mounts it for agents whose ``[agents.NAME]`` has ``role = "admin"``;
``webward console`` serves it alone on loopback with a one-time token. Server-rendered HTML
and SVG, no script, one stylesheet shipped in the package, a strict Content-Security-Policy.
"""

from __future__ import annotations

from ._app import COOKIE, CSP, Console
from ._auth import AgentTokens, ConsoleAuth, OneTimeToken
from ._queries import AuditFilter, AuditPage, AuditReader, open_audit_reader

__all__ = [
    "COOKIE",
    "CSP",
    "AgentTokens",
    "AuditFilter",
    "AuditPage",
    "AuditReader",
    "Console",
    "ConsoleAuth",
    "OneTimeToken",
    "open_audit_reader",
]
