"""Which reader a console, or ``webward audit``, reads the audit log with."""

from __future__ import annotations

from .._settings import Settings
from ..audit import SQLiteAuditSink, open_audit_sink
from ._queries import AuditReader, SinkReader, SQLiteAuditReader

__all__ = ["open_audit_reader"]


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
