"""WAL checkpoints on a thread of the writer's process (`sqlite.checkpoint`), on a real file: the
log is copied off the writer's thread, started over at its bound, and nothing written is lost."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nahida.memory.store.sqlite.checkpoint import Checkpointer, truncate_log
from nahida.memory.store.sqlite.connection import connect
from nahida.memory.store.sqlite.db import Database, Job

PAGE = 4096
ROW = os.urandom(3000).hex()[:3000]  # about a page of the table a commit


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bound of 200 pages, a pass every 4 commits, and SQLite's own checkpoint out of reach."""
    monkeypatch.setattr(Checkpointer, "PASS_EVERY", 4)
    monkeypatch.setattr(Checkpointer, "BOUND", 200)
    monkeypatch.setattr(Checkpointer, "BACKSTOP", 1_000_000)


@pytest.fixture
def db(tmp_path: Path, small: None) -> Iterator[Database]:
    database = Database(tmp_path / "nahida.db", vec=False, threaded=False)
    database.conn.execute("CREATE TABLE notes (n INTEGER PRIMARY KEY, body TEXT)")
    database.time_statements()
    yield database
    database.close()


def note(conn: Any, n: int) -> None:
    conn.execute("INSERT INTO notes (n, body) VALUES (?, ?)", (n, f"{n} {ROW}"))


def write(db: Database, commits: int) -> int:
    """Commit `commits` notes one a batch, as the store process runs them; the largest the log
    file grew to, in pages."""
    largest = 0
    wal = Path(db.path + "-wal")
    start = db.conn.execute("SELECT count(*) FROM notes").fetchone()[0]
    for n in range(start, start + commits):
        [(_, ok, error)] = db.run_batch([Job(note, (n,), True)])
        assert ok, error
        db.between_batches()
        largest = max(largest, wal.stat().st_size // PAGE)
    return largest


def writer_checkpoints(db: Database) -> int:
    return sum(n for sql, (n, _) in db.statement_times().items() if "wal_checkpoint" in sql)


def test_the_thread_copies_the_log_and_the_writer_starts_it_over_at_its_bound(
    db: Database,
) -> None:
    checkpoints = db.checkpoints
    assert checkpoints is not None
    assert db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1_000_000
    largest = write(db, 2_000)  # ~4,000 pages of log without a start over
    assert checkpoints.passes >= 10
    assert checkpoints.finishes >= 3  # each started the log over
    assert writer_checkpoints(db) == checkpoints.finishes  # the rest were the thread's
    assert largest < 2_000, largest  # ~4,000 without
    assert db.conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 2_000


def one_pass(checkpoints: Checkpointer) -> int:
    """Wake the thread once and wait for its passes to end; how many it made."""
    before = checkpoints.passes
    checkpoints._wake.set()
    deadline = time.monotonic() + 5
    while (checkpoints.passes == before or checkpoints._in_pass) and time.monotonic() < deadline:
        time.sleep(0.01)
    return checkpoints.passes - before


@pytest.mark.parametrize(
    ("tail", "chase", "passes"),
    [
        (Checkpointer.TAIL, Checkpointer.CHASE, 2),
        (-1, Checkpointer.CHASE, 1 + Checkpointer.CHASE),
        (-1, 2, 3),
    ],
)
def test_past_its_bound_the_thread_chases_the_writer_before_leaving_it_the_rest(
    db: Database, monkeypatch: pytest.MonkeyPatch, tail: int, chase: int, passes: int
) -> None:
    """A pass that finds the log at its bound is followed at once by more, each copying what the
    writer added during the one before: until one finds at most `TAIL` pages added (here none:
    the writer is idle), or after `CHASE` passes (a tail of -1 is never reached). The writer's
    own checkpoint then has nothing left to copy, and its next write starts the log over."""
    checkpoints = db.checkpoints
    assert checkpoints is not None
    monkeypatch.setattr(Checkpointer, "PASS_EVERY", 1_000_000)  # passes only when woken here
    monkeypatch.setattr(Checkpointer, "TAIL", tail)
    monkeypatch.setattr(Checkpointer, "CHASE", chase)
    write(db, 150)  # ~300 pages of log, past the bound of 200
    assert checkpoints.passes == 0
    assert one_pass(checkpoints) == passes
    before = writer_checkpoints(db)
    db.between_batches()
    assert writer_checkpoints(db) == before + 1
    assert checkpoints.finishes == 1
    write(db, 1)
    assert db.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1] < 10  # started over


@pytest.mark.parametrize(
    ("added", "grows", "passes"),
    [
        (1_000, [400, 100, 50], 2),  # halving, then within the tail: the writer's turn
        (1_000, [600, 100], 1),  # more than half the pass before: the copying falls behind
        (1_000, [400, 300, 100], 2),  # 300 is more than half of 400
        (1_000, [-3_000], 1),  # the log started over meanwhile
    ],
)
def test_the_chase_stops_once_the_copying_does_not_catch_up(
    db: Database, monkeypatch: pytest.MonkeyPatch, added: int, grows: list[int], passes: int
) -> None:
    """Each chasing pass must find at most half as many pages added as the pass before it
    (the first is compared with what the pass that found the bound had copied), else the
    writer's turn comes now: after a reader held the log, say, the writer outpaces the copying
    and a chase would only keep the writer waiting."""
    checkpoints = db.checkpoints
    assert checkpoints is not None
    logs = iter(grows)
    made: list[int] = []

    def scripted() -> int:  # the log as each pass finds it
        checkpoints._log_pages += next(logs)
        made.append(checkpoints._log_pages)
        return checkpoints._log_pages

    monkeypatch.setattr(checkpoints, "_pass", scripted)
    checkpoints._log_pages = 5_000
    checkpoints._chase(added)
    assert len(made) == passes, made


def test_nothing_written_is_lost_across_the_start_overs(db: Database, tmp_path: Path) -> None:
    write(db, 1_000)
    db.close()
    again = connect(tmp_path / "nahida.db", vec=False)
    assert again.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    found = [n for (n,) in again.execute("SELECT n FROM notes ORDER BY n")]
    assert found == list(range(1_000))
    again.close()


def test_a_reader_holding_the_log_delays_the_start_over_only(db: Database, tmp_path: Path) -> None:
    """A read snapshot (another process's) keeps the pages after it from being copied: the log
    cannot start over while it lasts, and does soon after."""
    assert db.checkpoints is not None
    write(db, 10)
    reader = connect(tmp_path / "nahida.db", vec=False)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM notes").fetchone()[0] == 10
    held = write(db, 600)
    assert held >= 600  # the log only grew
    assert reader.execute("SELECT count(*) FROM notes").fetchone()[0] == 10  # its snapshot
    reader.execute("COMMIT")
    reader.close()
    finishes = db.checkpoints.finishes
    written = 0
    while db.checkpoints.finishes == finishes and written < 3_000:  # soon: a pass or two
        write(db, 100)
        written += 100
    assert db.checkpoints.finishes > finishes
    assert db.conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 610 + written
    log_now = db.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
    assert log_now < 600, (written, log_now)  # started over since


def test_a_few_commits_are_copied_once_the_writer_is_idle(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fewer commits than a pass waits for are synced and copied after `IDLE_PASS` seconds."""
    checkpoints = db.checkpoints
    assert checkpoints is not None
    monkeypatch.setattr(checkpoints, "IDLE_PASS", 0.05)
    checkpoints._wake.set()  # one pass now; then the thread waits with the new timeout

    def passes_above(n: int) -> bool:
        deadline = time.monotonic() + 5
        while checkpoints.passes <= n and time.monotonic() < deadline:
            time.sleep(0.01)
        return checkpoints.passes > n

    assert passes_above(0)
    time.sleep(0.2)  # idle: no commit, no pass
    before = checkpoints.passes
    assert before == 1
    write(db, 2)  # fewer than PASS_EVERY
    assert passes_above(before)


def test_an_outside_checkpoint_waits_for_the_thread(db: Database, tmp_path: Path) -> None:
    """`truncate_log` from another connection empties the log even while passes run."""
    other = connect(tmp_path / "nahida.db", vec=False)
    other.execute("PRAGMA busy_timeout = 100")
    for _ in range(5):
        write(db, 40)
        assert truncate_log(other, wait=5.0)
        assert Path(db.path + "-wal").stat().st_size == 0
    other.close()


def test_no_thread_in_memory_nor_for_a_reader(db: Database) -> None:
    """A database in memory has no log; a reader (the `store_reader`) never commits a write."""
    for database in (
        Database(":memory:", vec=False, threaded=False),
        Database(db.path, vec=False, threaded=False, reader=True),
    ):
        assert database.checkpoints is None
        database.close()


def test_a_checkpoint_failing_on_the_writer_is_logged_and_tried_later(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed checkpoint (a full disk, say) must not take the store's loop down with it."""
    checkpoints = db.checkpoints
    assert checkpoints is not None

    class Failing:
        in_transaction = False

        def execute(self, sql: str, *args: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(checkpoints, "writer", Failing())
    checkpoints._log_pages = checkpoints._finish_at = 250  # the writer's turn
    db.between_batches()
    assert checkpoints._finish_at == 250 + Checkpointer.BOUND // 4
    monkeypatch.setattr(checkpoints, "writer", db.conn)
    write(db, 10)
    assert db.conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 10
