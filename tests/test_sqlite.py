"""Opening the state dir's SQLite files from several processes at the same moment."""

from __future__ import annotations

import multiprocessing as mp
import os
import stat
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


def test_every_directory_made_on_the_way_is_0700_whatever_the_umask(tmp_path: Path) -> None:
    """Under umask 000, the state dir and every parent open_wal creates for it are 0700 (not
    just the last one); a directory that was there already keeps its mode."""
    os.chmod(tmp_path, 0o755)
    old = os.umask(0)
    try:
        open_wal(tmp_path / "a" / "b" / "state" / "x.db", timeout_s=10.0, schema=_SCHEMA).close()
    finally:
        os.umask(old)
    made = [tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "state"]
    assert [stat.S_IMODE(p.stat().st_mode) for p in made] == [0o700] * 3
    assert stat.S_IMODE((made[-1] / "x.db").stat().st_mode) == 0o600
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755


def test_a_second_connection_in_a_process_keeps_the_first_ones_lock(tmp_path: Path) -> None:
    """A process that opens a store twice (the gateway's console reads the audit log its sink
    writes) keeps the first connection's lock on the file: closing any descriptor of a file
    drops every POSIX lock the process holds on it, SQLite's too. With that lock gone, the
    next other process to close its connection (a `webward fetch` on the same state dir)
    took itself for the last, checkpointed, and deleted the -wal and -shm the first was
    still writing: the gateway's audit records then went to a deleted file, and its reads
    said "database disk image is malformed"."""
    import sqlite3
    import subprocess
    import sys

    path = tmp_path / "audit.db"
    first = open_wal(path, timeout_s=5, schema=("CREATE TABLE IF NOT EXISTS t (x)",))
    first.execute("INSERT INTO t VALUES (1)")
    second = open_wal(path, timeout_s=5)  # a reader beside the writer, in the same process
    other = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
        "c.execute('PRAGMA journal_mode=WAL'); c.execute('SELECT count(*) FROM t'); c.close()"
    )
    subprocess.run([sys.executable, "-c", other, str(path)], check=True, timeout=60)
    first.execute("INSERT INTO t VALUES (2)")
    assert path.with_name("audit.db-wal").exists() and path.with_name("audit.db-shm").exists()
    later = sqlite3.connect(path)
    try:
        assert later.execute("SELECT count(*) FROM t").fetchone()[0] == 2  # none lost
    finally:
        later.close()
        second.close()
        first.close()
