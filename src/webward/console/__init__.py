"""The operator console: what the agents did, in a browser (``/console``).

``webward serve`` mounts it for agents whose ``[agents.NAME]`` has ``role = "admin"``;
``webward console`` serves it alone on loopback with a one-time token. Server-rendered HTML
and SVG, no script, one stylesheet shipped in the package, a strict Content-Security-Policy.

The audit log is read by :func:`open_audit_reader`: ``_queries`` holds the SQL both stores
run (and the SQLite reader), ``_postgres_reader`` the PostgreSQL one, imported only when
configured.
"""

from __future__ import annotations

from .._settings import Settings
from ..audit import SQLiteAuditSink, open_audit_sink
from ._app import COOKIE, CSP, Console
from ._auth import AgentTokens, ConsoleAuth, OneTimeToken
from ._queries import AuditFilter, AuditPage, AuditReader, SinkReader, SQLiteAuditReader

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


def open_audit_reader(settings: Settings) -> AuditReader:
    """A reader of the audit log ``settings`` name: SQLite in the state dir, or PostgreSQL."""
    sink = open_audit_sink(settings)
    if isinstance(sink, SQLiteAuditSink):
        return SQLiteAuditReader(sink)
    if settings.audit.postgres_dsn_env:
        from ..audit._postgres import PostgresAuditSink  # imported only when configured

        if isinstance(sink, PostgresAuditSink):
            from ._postgres_reader import PostgresAuditReader

            return PostgresAuditReader(sink)
    return SinkReader(sink)
