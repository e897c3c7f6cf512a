"""The command line's caches in the state dir: pages and robots.txt answers in ``cache.db``.

Each ``webward fetch`` is a new process, so an in-memory cache would be empty on every call:
paging through a long page with ``--offset`` would download the page (and its robots.txt)
again for every window and spend the host's rate budget. ``cache.db`` (SQLite, WAL, shared by
concurrent processes like ``limits.db``) keeps both between calls:

- :class:`SQLitePageCache`, a :class:`~webward._cache.PageCache`: pages for
  ``limits.page_cache_ttl_s`` seconds, at most ``limits.page_cache_max_chars`` characters in
  all, the least recently used page evicted first;
- :class:`SQLiteRobotsStore`, a :class:`~webward._robots.RobotsStore`: each origin's
  robots.txt answer for as long as the checker says.

Both only save a request: a store that cannot be opened or written is a miss, never a refusal,
and a hit is checked again by ``Web`` exactly as a memory hit is.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import orjson

from ._cache import CachedPage, keep_s
from ._settings import LimitsSettings
from ._sqlite import open_wal

__all__ = ["SQLitePageCache", "SQLiteRobotsStore", "StateCache"]

_T = TypeVar("_T")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS pages (key TEXT PRIMARY KEY, expires REAL NOT NULL, "
    "used REAL NOT NULL, size INTEGER NOT NULL, data BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS pages_used ON pages (used)",
    "CREATE TABLE IF NOT EXISTS robots (origin TEXT PRIMARY KEY, expires REAL NOT NULL, "
    "kind TEXT NOT NULL, text TEXT NOT NULL)",
)


class StateCache:
    """One connection to ``cache.db`` in ``state_dir``, opened on first use, used from worker
    threads one at a time. ``clock`` gives wall-clock seconds (expiry outlives the process)."""

    def __init__(
        self,
        state_dir: str | Path,
        *,
        busy_timeout_s: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(state_dir) / "cache.db"
        self._busy_timeout_s = busy_timeout_s
        self.clock = clock
        self._conn: sqlite3.Connection | None = None
        self._broken = False
        self._lock = threading.Lock()

    async def run(self, work: Callable[[sqlite3.Connection], _T], default: _T) -> _T:
        """``work(conn)`` in a worker thread; ``default`` if the store cannot be used."""
        return await anyio.to_thread.run_sync(self._run_sync, work, default)

    def _run_sync(self, work: Callable[[sqlite3.Connection], _T], default: _T) -> _T:
        with self._lock:
            if self._broken:
                return default
            try:
                if self._conn is None:
                    self._conn = open_wal(self.path, timeout_s=self._busy_timeout_s, schema=_SCHEMA)
                    # A cache is soft state: losing the last writes to a power cut is harmless.
                    self._conn.execute("PRAGMA synchronous=NORMAL")
                return work(self._conn)
            except (sqlite3.Error, OSError):
                # A cache only saves a download: an unusable file is a miss from now on.
                self._broken = True
                return default

    async def aclose(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class SQLitePageCache:
    """Converted pages in ``cache.db``, bounded by age and by total characters."""

    def __init__(self, store: StateCache, *, ttl_s: float, max_chars: int) -> None:
        self._store = store
        self._ttl = ttl_s
        self._max_chars = max_chars

    @classmethod
    def from_limits(cls, store: StateCache, limits: LimitsSettings) -> SQLitePageCache:
        """A cache sized by ``page_cache_ttl_s`` and ``page_cache_max_chars``."""
        return cls(store, ttl_s=limits.page_cache_ttl_s, max_chars=limits.page_cache_max_chars)

    async def get(self, key: str) -> CachedPage | None:
        now = self._store.clock()

        def work(conn: sqlite3.Connection) -> bytes | None:
            row = conn.execute(
                "SELECT data FROM pages WHERE key = ? AND expires > ?", (key, now)
            ).fetchone()
            if row is None:
                return None
            conn.execute("UPDATE pages SET used = ? WHERE key = ?", (now, key))
            # bytes(row[0]) of a row changed by hand to a number allocated that many bytes.
            return row[0] if isinstance(row[0], bytes) else None

        data = await self._store.run(work, None)
        if data is None:
            return None
        try:
            return CachedPage.from_dict(orjson.loads(data))
        except Exception:  # a row from another version, or changed by hand: a miss
            return None

    async def put(self, key: str, page: CachedPage) -> None:
        size = page.size()
        keep = self._ttl > 0 and size <= self._max_chars
        data = orjson.dumps(page.to_dict()) if keep else b""
        now = self._store.clock()

        def work(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM pages WHERE key = ? OR expires <= ?", (key, now))
                if keep:
                    conn.execute(
                        "INSERT INTO pages (key, expires, used, size, data) VALUES (?, ?, ?, ?, ?)",
                        (key, now + keep_s(page, self._ttl), now, size, data),
                    )
                    _evict(conn, self._max_chars)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        await self._store.run(work, None)

    async def aclose(self) -> None:
        await self._store.aclose()


def _evict(conn: sqlite3.Connection, max_chars: int) -> None:
    """Drop the least recently used pages until the total fits in ``max_chars``."""
    total = conn.execute("SELECT COALESCE(SUM(size), 0) FROM pages").fetchone()[0]
    if total <= max_chars:
        return
    for key, size in conn.execute("SELECT key, size FROM pages ORDER BY used").fetchall():
        conn.execute("DELETE FROM pages WHERE key = ?", (key,))
        total -= size
        if total <= max_chars:
            return


class SQLiteRobotsStore:
    """robots.txt answers per origin in ``cache.db``: ``(seconds left, kind, text)``."""

    def __init__(self, store: StateCache) -> None:
        self._store = store

    async def get(self, origin: str) -> tuple[float, str, str] | None:
        now = self._store.clock()

        def work(conn: sqlite3.Connection) -> tuple[float, str, str] | None:
            row: Any = conn.execute(
                "SELECT expires, kind, text FROM robots WHERE origin = ? AND expires > ?",
                (origin, now),
            ).fetchone()
            return None if row is None else (float(row[0]) - now, str(row[1]), str(row[2]))

        return await self._store.run(work, None)

    async def put(self, origin: str, ttl_s: float, kind: str, text: str) -> None:
        now = self._store.clock()

        def work(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM robots WHERE expires <= ?", (now,))
            conn.execute(
                "INSERT OR REPLACE INTO robots (origin, expires, kind, text) VALUES (?, ?, ?, ?)",
                (origin, now + ttl_s, kind, text),
            )

        await self._store.run(work, None)
