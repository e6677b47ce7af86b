"""Recall over the reference store and PostgreSQL finds what it finds over SQLite, in order."""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nahida.memory import Hit, MemoryItem, NewTurn, Query, Viewer, recall
from nahida.memory.core.tokenize import index_text, tokenize
from nahida.memory.history import sessions
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.postgres import lexical
from nahida.memory.store.reference import ReferenceStore
from nahida.memory.store.sqlite import SqliteStore
from tests import pg

# Without symbols, marks and unassigned characters: SQLite's character tables are of an older
# Unicode, where most emoji were unassigned and so part of a token (`reference.text`).
LINES = "".join(
    ch
    for ch in (Path(__file__).parents[1] / "data" / "chat_lines_zh_en.txt").read_text("utf-8")
    if ch == "\n" or unicodedata.category(ch)[0] not in "SMC"
)
CHATS = ("test:group:g1", "test:group:g2", "test:private:alice")
PEOPLE = ("alice", "bob", "carol")
T0 = 1_718_000_000.0


def fill(tx: Tx, lines: list[str]) -> None:
    """The same history and items, written the same way, whatever the store."""
    for n, line in enumerate(lines):
        chat, who = CHATS[n % 3], PEOPLE[n % 5 % 3]
        if n % 4 == 3:  # every fourth line is remembered instead
            scope = "global" if n % 8 == 3 else f"chat:{chat}"
            item = MemoryItem(f"m_{n:06d}", scope, "fact", line, created_at=T0 + n)
            tx.items.add(item, index_text(line))
            continue
        turn = NewTurn(chat, "user", line, T0 + n, speaker=f"test:{who}", speaker_name=who)
        sessions.record(tx, turn, index_text(line), 0.0)


def found(store: Store, query: Query) -> list[tuple[str, str, float]]:
    hits: list[Hit] = store.read_sync(recall.search, query, recall.plan(query))
    return [(h.kind, h.id, round(h.score, 6)) for h in hits]


@pytest.fixture(scope="module")
def stores() -> tuple[Store, Store]:
    lines = [line for line in LINES.splitlines() if line.strip()]
    sqlite, reference = SqliteStore(":memory:"), ReferenceStore()
    for store in (sqlite, reference):
        store.write_sync(fill, lines)
    return sqlite, reference


def test_the_same_questions_get_the_same_answers(stores: tuple[Store, Store]) -> None:
    sqlite, reference = stores
    words = sorted({w for w in tokenize(LINES) if len(w.strip()) > 1})
    rng = random.Random(7)
    asked = answered = 0
    for _ in range(150):
        text = " ".join(rng.sample(words, rng.randint(1, 4)))
        chat = rng.choice(CHATS)
        who = "alice" if chat.endswith(":alice") else rng.choice(PEOPLE)
        viewer = Viewer.parse(chat, f"test:{who}")
        query = Query(text, viewer, limit=10)
        expected = found(sqlite, query)
        assert found(reference, query) == expected, text
        asked += 1
        answered += bool(expected)
    assert answered > asked / 2  # most questions find something: the comparison is not empty


@pytest.fixture(scope="module")
def on_postgres(
    postgres_server: None, stores: tuple[Store, Store], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    pg.require()
    store = pg.store(tmp_path_factory.mktemp("alike"))
    store.write_sync(fill, [line for line in LINES.splitlines() if line.strip()])
    yield store
    store.close()


def _questions(n: int, most: int) -> list[tuple[str, Viewer]]:
    words = sorted({w for w in tokenize(LINES) if len(w.strip()) > 1})
    rng = random.Random(11)
    asked = []
    for _ in range(n):
        chat = rng.choice(CHATS)
        who = "alice" if chat.endswith(":alice") else rng.choice(PEOPLE)
        asked.append(
            (" ".join(rng.sample(words, rng.randint(1, most))), Viewer.parse(chat, f"test:{who}"))
        )
    return asked


def test_postgres_scores_as_sqlite_while_every_term_is_counted(
    stores: tuple[Store, Store], on_postgres: Store
) -> None:
    sqlite = stores[0]
    answered = 0
    for text, viewer in _questions(150, 4):
        query = Query(text, viewer, limit=10)
        expected = found(sqlite, query)
        assert found(on_postgres, query) == expected, text
        answered += bool(expected)
    assert answered > 75


def test_postgres_estimates_common_terms_and_keeps_the_order_of_one_term(
    stores: tuple[Store, Store], on_postgres: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every term over the bound, weights come from the planner's statistics: a query of
    one term only scales each table's scores, so each kind's order is SQLite's."""
    monkeypatch.setattr(lexical, "EXACT_UP_TO", 0)
    on_postgres.db.call(lambda conn: conn.execute("ANALYZE"))  # type: ignore[attr-defined]
    answered = 0
    for text, viewer in _questions(80, 1):
        query = Query(text, viewer, limit=10)
        expected, got = found(stores[0], query), found(on_postgres, query)
        for kind in ("turn", "item"):
            assert [h[1] for h in got if h[0] == kind] == [
                h[1] for h in expected if h[0] == kind
            ], text
        answered += bool(expected)
    assert answered > 20  # single words: fewer found than by a few


def test_postgres_keeps_each_index_size_and_length_as_counted(on_postgres: Store) -> None:
    def kept_and_counted(conn: Any) -> list[tuple[Any, ...]]:
        found = []
        for table in ("turns", "memory_items", "episodes"):
            found += conn.execute(
                "SELECT (SELECT (sum(rows), sum(total_len)) FROM lexical_stats WHERE tbl = %s),"
                f" (SELECT (count(*), coalesce(sum(fts_len), 0)) FROM {table}"
                " WHERE fts IS NOT NULL)",
                (table,),
            ).fetchall()
        return found

    def hide_and_drop(tx: Any) -> None:  # an update out of the index, a delete, a cascade
        conn = tx.items.conn
        conn.execute("UPDATE turns SET fts = NULL, fts_len = 0 WHERE id % 5 = 0")
        conn.execute("UPDATE memory_items SET fts_len = fts_len + 1 WHERE id LIKE '%3'")
        conn.execute("DELETE FROM turns WHERE id % 7 = 0")

    for kept, counted in on_postgres.db.call(kept_and_counted, write=False):  # type: ignore[attr-defined]
        assert kept == counted
    on_postgres.write_sync(hide_and_drop)
    for kept, counted in on_postgres.db.call(kept_and_counted, write=False):  # type: ignore[attr-defined]
        assert kept == counted
