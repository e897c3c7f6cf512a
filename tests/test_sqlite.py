"""Opening the state dir's SQLite files from several processes at the same moment."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from webward._sqlite import open_wal

_SCHEMA = ("CREATE TABLE IF NOT EXISTS t (x INTEGER)",)


def _open_and_write(path: str, barrier: mp.synchronize.Barrier, results: mp.Queue) -> None:  # type: ignore[type-arg]
    barrier.wait()
    try:
        conn = open_wal(Path(path), timeout_s=10.0, schema=_SCHEMA)
        conn.execute("INSERT INTO t VALUES (1)")
        conn.close()
        results.put("ok")
    except Exception as exc:  # reported to the parent, which asserts on it
        results.put(repr(exc))


def test_simultaneous_first_opens_never_fail(tmp_path: Path) -> None:
    """Processes released together onto a new file all open it; none sees "database is
    locked" from the journal-mode switch (it used to fail about one time in four)."""
    ctx = mp.get_context("fork")
    outcomes: list[str] = []
    for trial in range(30):
        path = str(tmp_path / f"state{trial}" / "x.db")
        barrier, results = ctx.Barrier(3), ctx.Queue()
        procs = [
            ctx.Process(target=_open_and_write, args=(path, barrier, results)) for _ in range(3)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
        outcomes += [results.get(timeout=5) for _ in procs]
    assert outcomes == ["ok"] * 90
