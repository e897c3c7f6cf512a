"""The operator console: what the agents did, in a browser (``/console``).

``webward serve`` mounts it for agents whose ``[agents.NAME]`` has ``role = "admin"``;
``webward console`` serves it alone on loopback with a one-time token. Server-rendered HTML
and SVG, no script, one stylesheet shipped in the package, a strict Content-Security-Policy.

The audit log is read by :func:`open_audit_reader`: ``_queries`` holds the SQL both stores
run (and the SQLite reader), ``_postgres_reader`` the PostgreSQL one, imported only when
configured.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._auth import AgentTokens, ConsoleAuth, OneTimeToken
from ._queries import AuditFilter, AuditPage, AuditReader, SinkReader, SQLiteAuditReader
from ._reader import open_audit_reader

if TYPE_CHECKING:
    from ._app import COOKIE, CSP, Console

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
    "SQLiteAuditReader",
    "SinkReader",
    "open_audit_reader",
]


if not TYPE_CHECKING:  # type checkers read the imports above (see webward/__init__.py)

    def __getattr__(name: str) -> Any:
        # The pages need Starlette and Jinja2 (the serve extra), loaded when first asked for:
        # `webward audit` reads the log through the queries on a plain install.
        if name in ("COOKIE", "CSP", "Console"):
            return getattr(importlib.import_module("._app", __name__), name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
