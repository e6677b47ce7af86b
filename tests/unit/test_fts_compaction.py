"""FTS5 indexes are compacted now and then into one segment (`fts.Compaction`: the small ones
rebuilt, the turns index merged by `fts.Merging` where SQLite is new enough): what they find is
unchanged, the index passes FTS5's own integrity check on both SQLite builds Nahida runs on, and
the number of segments a search walks stays small."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from types import ModuleType

import pytest

from nahida.memory import MemoryItem, NewTurn
from nahida.memory.core.scopes import Visibility
from nahida.memory.core.tokenize import index_text
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.store.sqlite.connection import Connection, connect, driver
from nahida.memory.store.sqlite.fts import MERGING_SAFE_FROM, Compaction, Merging, merging_is_safe
from nahida.memory.store.sqlite.history import TurnTable
from nahida.memory.store.values import TextSearch

SCHEMA = "(body, scopes, tokenize = 'porter unicode61 remove_diacritics 0')"
WORDS = [f"w{n}" for n in range(400)]
CHAT = "qq:group:1"


def segments(conn: Connection, table: str) -> int:
    sql = f"SELECT count(DISTINCT id >> 37) FROM {table}_data WHERE id > 10"
    return int(conn.execute(sql).fetchone()[0])


def _crisismerge(conn: Connection, table: str) -> int | None:
    row = conn.execute(f"SELECT v FROM {table}_config WHERE k = 'crisismerge'").fetchone()
    return None if row is None else int(row[0])


def _stdlib(path: Path) -> Connection:
    return sqlite3.connect(path, isolation_level=None)


@pytest.mark.parametrize("open_db", [connect, _stdlib], ids=["nahida", "stdlib"])
@pytest.mark.parametrize("per_transaction", [1, 6])
@pytest.mark.parametrize("kind", ["rebuild", "optimize", "eager"])
def test_compacted_index_finds_what_an_untouched_one_finds(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    open_db: Callable[[Path], Connection],
    per_transaction: int,
    kind: str,
) -> None:
    """Units rolled back in savepoints and batches rolled back whole, as the store's writer
    runs them: the same rows with the same bm25 as an index left alone. `eager`: `Merging`'s
    `crisismerge` alone, no `optimize`."""
    conn = open_db(tmp_path / "c.db")
    if kind != "rebuild" and not merging_is_safe(conn):
        conn.close()
        pytest.skip("FTS5's optimize is not run on this SQLite (fts.Merging)")
    if kind == "eager":
        monkeypatch.setattr(Merging, "_due", lambda self, conn: False)
    for table in ("kept", "plain"):
        conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5 {SCHEMA}")
    compaction = Compaction("kept") if kind == "rebuild" else Merging("kept")
    rng = random.Random(3)
    for start in range(1, 1201, per_transaction):
        conn.execute("BEGIN")
        for rowid in range(start, start + per_transaction):
            conn.execute("SAVEPOINT unit")  # as a write batch runs each unit
            body = " ".join(rng.sample(WORDS, 8))
            doomed = rng.randrange(1, rowid + 1) if rng.random() < 0.2 else None
            for table in ("kept", "plain"):
                conn.execute(
                    f"INSERT INTO {table} (rowid, body, scopes) VALUES (?, ?, 'zs')", (rowid, body)
                )
                if doomed is not None:
                    conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (doomed,))
            if isinstance(compaction, Merging):
                compaction.searched()  # searched as often as written: merged on schedule
            compaction.written(conn)
            if rng.random() < 0.1:  # a unit that failed after writing
                conn.execute("ROLLBACK TO unit")
            conn.execute("RELEASE unit")
        conn.execute("ROLLBACK" if rng.random() < 0.05 else "COMMIT")
    conn.execute("INSERT INTO kept (kept) VALUES ('integrity-check')")  # raises when corrupt
    for word in WORDS[:50]:
        found = [
            [
                tuple(row)
                for row in conn.execute(
                    f"SELECT rowid, round(bm25({t}), 9) FROM {t} WHERE {t} MATCH ? ORDER BY rowid",
                    (word,),
                )
            ]
            for t in ("kept", "plain")
        ]
        assert found[0] == found[1]
    assert segments(conn, "kept") < segments(conn, "plain")
    if kind == "eager":
        assert _crisismerge(conn, "kept") == Merging.CRISIS_SEARCHED
    conn.close()


def test_item_writes_leave_few_segments_and_every_item_is_found(store: SqliteStore) -> None:
    items = [
        MemoryItem(f"m{n}", "global", "fact", f"tea number{n}", created_at=1.0, updated_at=1.0)
        for n in range(5 * Compaction.EVERY)
    ]
    for item in items:  # a transaction each: a segment each, unless rebuilt
        assert store.write_sync(lambda tx, i=item: tx.items.add(i, index_text(i.content)))

    def count(conn: Connection) -> int:
        return segments(conn, "memory_items_fts")

    assert store.db.call(count, write=False) == 1  # the last write rebuilt it
    seen = Visibility(("global",))
    for n, item in enumerate(items):
        found = store.read_sync(
            lambda tx, n=n: tx.items.search(seen, TextSearch((f"number{n}",), 5))
        )
        assert [m.item.id for m in found] == [item.id]


def test_an_index_searched_far_more_than_written_is_rebuilt_at_the_next_write(
    store: SqliteStore,
) -> None:
    """The items: recall searches them for most messages, extraction adds one now and then."""
    seen = Visibility(("global",))

    def add(n: int) -> None:
        item = MemoryItem(f"m{n}", "global", "fact", f"tea number{n}", created_at=1.0)
        assert store.write_sync(lambda tx: tx.items.add(item, index_text(item.content)))

    def search(word: str) -> list[str]:
        found = store.read_sync(lambda tx: tx.items.search(seen, TextSearch((word,), 5)))
        return [m.item.id for m in found]

    def count() -> int:
        return int(store.db.call(lambda conn: segments(conn, "memory_items_fts"), write=False))

    for n in range(3):  # written, never searched: a segment each
        add(n)
    assert count() == 3
    assert search("number1") == ["m1"]
    add(3)  # one search since is worth rebuilding four rows
    assert count() == 1
    add(4)  # no search since: a segment of its own
    assert count() == 2
    assert [search(f"number{n}") for n in range(5)] == [[f"m{n}"] for n in range(5)]


@pytest.mark.parametrize("search_every", [4, 10, None])
def test_turn_writes_are_merged_when_searches_come_often_enough(
    store: SqliteStore, search_every: int | None
) -> None:
    """A search at least every `Merging.WRITES_PER_SEARCH` writes: merged into one segment;
    fewer (a group chatting among itself, observed talk): FTS5's own merging. Every turn is
    found either way."""
    assert store.write_sync(lambda tx: tx.sessions.create("s1", CHAT, "t", 1.0))
    made = []
    for n in range(5 * Compaction.EVERY):  # a transaction each: a segment each, unless merged
        turn = NewTurn(CHAT, "user", f"oolong number{n}", 1.0 + n)
        made.append(
            store.write_sync(lambda tx, t=turn: tx.turns.add("s1", t, index_text(t.content)))
        )
        if search_every and n % search_every == 0:
            store.read_sync(lambda tx: tx.turns.search([CHAT], TextSearch(("oolong",), 5)))
    count = store.db.call(lambda conn: segments(conn, "turns_fts"), write=False)
    merged = search_every == 4 and store.db.call(merging_is_safe, write=False)
    assert count == 1 if merged else count > 1
    for n, turn_id in enumerate(made):
        search = TextSearch((f"number{n}",), 5)
        found = store.read_sync(lambda tx, s=search: tx.turns.search([CHAT], s))
        assert [m.id for m in found] == [turn_id]


def _write_turns(
    conn: Connection, merging: Merging, rows: range, searched: bool, rng: random.Random
) -> list[int]:
    """A transaction a row, as a chat's turns are stored: the segments after each."""
    counts = []
    for rowid in rows:
        conn.execute("BEGIN")
        body = " ".join(rng.sample(WORDS, 8))
        conn.execute("INSERT INTO kept (rowid, body, scopes) VALUES (?, ?, 'zs')", (rowid, body))
        if searched:
            merging.searched()
        merging.written(conn)
        conn.execute("COMMIT")
        counts.append(segments(conn, "kept"))
    return counts


def test_the_turns_index_is_merged_eagerly_while_it_is_searched_often(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between two `optimize` runs: FTS5's `crisismerge` 2 while a search comes at least every
    `CRISIS_WRITES_PER_SEARCH` writes (a few segments), its default again once searches stop."""
    monkeypatch.setattr(Merging, "_due", lambda self, conn: False)  # no `optimize`: crisis alone
    rng = random.Random(5)
    with closing(connect(tmp_path / "c.db")) as conn:
        conn.execute(f"CREATE VIRTUAL TABLE kept USING fts5 {SCHEMA}")
        merging = Merging("kept")
        every = Merging.CRISIS_EVERY
        first = _write_turns(conn, merging, range(1, every), True, rng)
        assert _crisismerge(conn, "kept") is None  # not judged yet: FTS5's own merging
        assert max(first) >= 10
        searched = _write_turns(conn, merging, range(every, 5 * every), True, rng)
        assert _crisismerge(conn, "kept") == Merging.CRISIS_SEARCHED
        assert max(searched[1:]) <= 3  # from the write that set it on
        written = _write_turns(conn, merging, range(5 * every, 9 * every), False, rng)
        assert _crisismerge(conn, "kept") == Merging.CRISIS_DEFAULT
        assert max(written) >= 10
        conn.execute("INSERT INTO kept (kept) VALUES ('integrity-check')")


@pytest.mark.parametrize(
    ("open_db", "module"), [(connect, driver), (_stdlib, sqlite3)], ids=["nahida", "stdlib"]
)
def test_the_turns_index_is_merged_only_where_sqlite_is_new_enough(
    tmp_path: Path, open_db: Callable[[Path], Connection], module: ModuleType
) -> None:
    """`optimize` in a rolled-back savepoint corrupted an index on 3.40.1 (`fts.Merging`)."""
    new_enough = module.sqlite_version_info >= MERGING_SAFE_FROM
    with closing(open_db(tmp_path / "c.db")) as conn:
        assert merging_is_safe(conn) is new_enough
        assert (TurnTable(conn)._merging is not None) is new_enough


def test_an_index_past_the_limit_is_left_to_fts5s_own_merging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Compaction, "MAX_ROWS", 100)
    conn = connect(tmp_path / "c.db")
    conn.execute(f"CREATE VIRTUAL TABLE kept USING fts5 {SCHEMA}")
    compaction = Compaction("kept")
    for rowid in range(1, 10 * Compaction.EVERY + 1):
        conn.execute("INSERT INTO kept (rowid, body, scopes) VALUES (?, 'tea', 'zs')", (rowid,))
        compaction.written(conn)
        if rowid == 5 * Compaction.EVERY:  # 80 rows: rebuilt on its 80th write
            assert segments(conn, "kept") == 1
    assert segments(conn, "kept") > 1  # 160 rows: its 160th write rebuilt nothing
    conn.close()
