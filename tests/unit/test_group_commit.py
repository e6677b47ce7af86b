"""Group commit on the real SQLite file: a batch of units in one transaction, without a
savepoint between them unless one of its writes fails, and a failing write rolls back alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nahida.memory.store.sqlite.db import Database, Job


class Boom(Exception):
    """What a failing unit raises."""


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "nahida.db", vec=False, threaded=False)
    database.conn.execute("CREATE VIRTUAL TABLE notes USING fts5(body)")
    database.time_statements()
    yield database
    database.close()


runs: Counter[str] = Counter()


def note(conn: Any, body: str) -> str:
    runs[body] += 1
    conn.execute("INSERT INTO notes (body) VALUES (?)", (body,))
    return body


def note_then_fail(conn: Any, body: str) -> str:
    note(conn, body)
    raise Boom(body)


def kept(db: Database) -> list[str]:
    return sorted(row[0] for row in db.conn.execute("SELECT body FROM notes"))


def savepoints(db: Database) -> int:
    return sum(n for sql, (n, _) in db.statement_times().items() if sql.startswith("SAVEPOINT"))


def test_a_batch_that_succeeds_runs_once_without_savepoints(db: Database) -> None:
    runs.clear()
    batch = [Job(note, (f"n{k}",), True) for k in range(8)]
    outcomes = db.run_batch(batch)
    assert [(ok, value) for _, ok, value in outcomes] == [(True, f"n{k}") for k in range(8)]
    assert kept(db) == [f"n{k}" for k in range(8)]
    assert set(runs.values()) == {1}
    assert savepoints(db) == 0 and db.stats.reruns == 0


def test_failing_writes_roll_back_alone_and_run_once(db: Database) -> None:
    runs.clear()
    fails = {2, 5}
    batch = [Job(note_then_fail if k in fails else note, (f"n{k}",), True) for k in range(7)]
    outcomes = db.run_batch(batch)
    for k, (job, ok, value) in enumerate(outcomes):
        assert job is batch[k]
        if k in fails:
            assert not ok and isinstance(value, Boom) and str(value) == f"n{k}"
        else:
            assert ok and value == f"n{k}"
    assert kept(db) == [f"n{k}" for k in range(7) if k not in fails]
    # the units before the first failure ran twice (their first run was rolled back with it);
    # each failing unit ran once, and so did everything after the first failure
    assert runs == Counter({"n0": 2, "n1": 2, "n2": 1, "n3": 1, "n4": 1, "n5": 1, "n6": 1})
    assert db.stats.reruns == 1 and savepoints(db) == 6  # the second pass: one per write run


def test_a_failing_read_does_not_run_the_batch_again(db: Database) -> None:
    runs.clear()

    def look(conn: Any) -> None:
        conn.execute("SELECT body FROM notes")
        raise Boom("read")

    batch = [Job(note, ("n0",), True), Job(look, (), False), Job(note, ("n1",), True)]
    outcomes = db.run_batch(batch)
    assert [ok for _, ok, _ in outcomes] == [True, False, True]
    assert kept(db) == ["n0", "n1"] and set(runs.values()) == {1}
    assert db.stats.reruns == 0 and savepoints(db) == 0
