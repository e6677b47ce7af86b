"""Recall over the reference store finds what it finds over SQLite, in the same order."""

from __future__ import annotations

import random
import unicodedata
from pathlib import Path

import pytest

from nahida.memory import Hit, MemoryItem, NewTurn, Query, Viewer, recall
from nahida.memory.core.tokenize import index_text, tokenize
from nahida.memory.history import sessions
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.reference import ReferenceStore
from nahida.memory.store.sqlite import SqliteStore

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
