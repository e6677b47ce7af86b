"""The items' FTS5 index keeps few segments (each write leaves one; a search looks every phrase
up in each), and merging them changes no result."""

from __future__ import annotations

from dataclasses import replace

from nahida.memory import MemoryItem
from nahida.memory.scopes import Visibility
from nahida.memory.store.base import TextSearch
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.store.sqlite.db import Connection
from nahida.memory.store.sqlite.items import MERGE_EVERY
from nahida.memory.tokenize import index_text

T0 = 1_700_000_000.0
WORDS = ["oolong", "espresso", "matcha", "sencha", "puer", "chai", "mocha", "latte"]


def segments(store: SqliteStore) -> int:
    def count(conn: Connection) -> int:
        return int(
            conn.execute(
                "SELECT count(DISTINCT id >> 37) FROM memory_items_fts_data WHERE id > 10"
            ).fetchone()[0]
        )

    return int(store.db.call(count, write=False))


def item(n: int) -> MemoryItem:
    content = f"{WORDS[n % 8]} number{n}"
    return MemoryItem(f"m{n}", "global", "fact", content, created_at=T0, updated_at=T0)


def test_item_writes_leave_at_most_a_few_segments_and_every_item_is_found(
    store: SqliteStore,
) -> None:
    items = [item(n) for n in range(10 * MERGE_EVERY)]
    for one in items:  # a transaction each: a segment each, unless merged
        assert store.write_sync(lambda tx, i=one: tx.items.add(i, index_text(i.content)))
    assert segments(store) == 1  # the last write merged them all
    for one in items[:MERGE_EVERY]:  # archiving takes the row out: a write too
        store.write_sync(lambda tx, i=one: tx.items.change(i, replace(i, status="archived"), None))
    assert segments(store) == 1
    seen = Visibility(("global",))
    for n, one in enumerate(items):
        found = store.read_sync(
            lambda tx, n=n: tx.items.search(seen, TextSearch((f"number{n}",), 5))
        )
        assert [m.item.id for m in found] == ([] if n < MERGE_EVERY else [one.id])
    tea = store.read_sync(lambda tx: tx.items.search(seen, TextSearch(("oolong",), 50)))
    assert {m.item.id for m in tea} == {i.id for i in items[MERGE_EVERY:] if "oolong" in i.content}
