"""A purge on SQLite: the item's words leave the database file itself (deleted content is
overwritten, the items' index rebuilt, the MEMORY.md record rewritten by the next sync), and the
audit trail's trigger lets only a recorded purge blank an event's text, nothing else."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nahida.memory import Actor, Candidate, DreamRun, Evidence, MemoryService, NewTurn, Proposal
from nahida.memory.store.base import Tx
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.store.sqlite.connection import connect, driver
from nahida.memory.store.sqlite.migrations import MIGRATIONS, migrate
from nahida.memory.store.values import VectorSpace
from nahida.memory.write import write

ADMIN = Actor("console:ann", is_bot_admin=True)
CHAT = "qq:group:1"
WORDS = "quokkamarine 的暗号是紫藤萝瀑布"
# as the text, its index terms (porter-stemmed) and its slot are stored
NEEDLES = (b"quokkamarin", "紫藤萝瀑布".encode(), "瀑布".encode())
FILLER = (
    "oolong",
    "espresso",
    "berlin",
    "hiking",
    "violin",
    "火锅",
    "咖啡",
    "杭州",
    "熊猫",
    "篮球",
)
SPACE = VectorSpace("test", "tiny", 4)


def file_bytes(db: Path) -> bytes:
    """The database file and, if SQLite left one, its write-ahead log."""
    wal = db.with_name(db.name + "-wal")
    return db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def holds_words(db: Path) -> list[bytes]:
    data = file_bytes(db)
    return [n for n in NEEDLES if n in data]


def candidate(content: str, **fields: Any) -> Candidate:
    defaults: dict[str, Any] = {
        "scope": "global",
        "kind": "fact",
        "source": "agent_proactive",
        "confidence": 0.9,
        "sensitivity": "public",
        "evidence": (Evidence(chat=CHAT, message_id="1", time=2.0),),
    }
    return Candidate(content=content, **{**defaults, **fields})


def fill(tx: Tx) -> None:
    """Other memory around it, so that its words share pages with rows that stay."""
    rng = random.Random(7)
    for n in range(300):
        text = " ".join(rng.sample(FILLER, 4)) + f" {n}"
        scope = rng.choice(("global", f"chat:{CHAT}", "user:qq:alice"))
        write.propose(tx, write.prepare(candidate(text, scope=scope)), "auto_full", "x")


def learn(tx: Tx) -> str:
    """The item, changed in place by a dream, merged into, proposed about, reported on."""
    tx.sessions.create("s1", CHAT, "t", 1.0)
    turn = tx.turns.add("s1", NewTurn(CHAT, "user", "记一下", 1.0, speaker="qq:alice"), "记一下")
    first = candidate(
        WORDS[:-2], slot="code:紫藤萝瀑布", evidence=(Evidence(CHAT, "1", turn, 2.0),)
    )
    made = write.propose(tx, write.prepare(first), "auto_full", "x")
    assert made.item_id is not None
    item_id = made.item_id
    update = candidate(WORDS, source="llm_dream", op="update", target=item_id)
    assert write.propose(tx, write.prepare(update), "auto_full", "dream:d_1").outcome == "updated"
    again = candidate(WORDS, source="rule_extract", evidence=(Evidence(CHAT, "2", None, 3.0),))
    assert write.propose(tx, write.prepare(again), "auto_full", "x").outcome == "merged"
    later = candidate(WORDS + "，周五换", source="llm_dream", op="update", target=item_id)
    assert write.propose(tx, write.prepare(later), "manual_review", "x").outcome == "pending"
    report = (Proposal("add", "fact", WORDS, "global", fate="updated", item_id=item_id),)
    tx.dreams.start(DreamRun("d_1", CHAT, "cli", 1.0))
    tx.dreams.save(DreamRun("d_1", CHAT, "cli", 1.0, report=report))
    return item_id


def embed(tx: Tx) -> None:
    rows = tx.vectors.unhashed("item", 1000)
    vectors = [(f"h{r.key}", np.asarray([1, 0, 0, r.key], dtype=np.float32)) for r in rows]
    tx.vectors.put(SPACE, vectors, 1.0)
    tx.vectors.link("item", [(r.key, f"h{r.key}") for r in rows])


async def test_after_a_purge_its_words_are_nowhere_in_the_database_file(tmp_path: Path) -> None:
    db, workspace = tmp_path / "nahida.db", tmp_path / "workspace"
    workspace.mkdir()
    store = SqliteStore(db)
    memory = MemoryService(store, workspace=workspace)
    assert memory.markdown is not None
    await store.write(fill)
    item_id = await store.write(learn)
    await store.write(embed)
    await memory.markdown.sync()  # MEMORY.md and the record of what it shows hold the words
    assert WORDS in (workspace / "MEMORY.md").read_text("utf-8")
    sql(store, "ANALYZE")  # as `PRAGMA optimize` may: samples of the slot's index hold its words
    store.close()
    assert holds_words(db) == list(NEEDLES)  # the check can fail: they were there

    store = SqliteStore(db)
    memory = MemoryService(store, workspace=workspace)
    assert memory.markdown is not None
    purged = await memory.items.purge(item_id, ADMIN)
    assert (purged.candidates, purged.runs, purged.hidden) == (4, 1, 1)
    assert purged.events == 3  # create, update, merge
    await memory.markdown.sync()
    assert WORDS not in (workspace / "MEMORY.md").read_text("utf-8")
    store.close()  # SQLite checkpoints its log into the file and deletes it
    assert holds_words(db) == []
    history = SqliteStore(db)
    try:
        turns = history.read_sync(lambda tx: tx.turns.of_session("s1"))
        assert [(t.content, t.hidden_by) for t in turns] == [("记一下", item_id)]
        trail = history.read_sync(lambda tx: tx.events.of_item(item_id))
        assert [e.action for e in trail] == ["create", "update", "merge", "purged"]
    finally:
        history.close()


# the audit trail's trigger ---------------------------------------------------------------------


def sql(store: SqliteStore, statement: str, *params: Any) -> Any:
    return store.db.call(lambda conn: conn.execute(statement, params).fetchall())


def one_event(store: SqliteStore, item_id: str = "m_1") -> None:
    store.write_sync(
        lambda tx: tx.events.add(item_id, "create", "x", None, {"content": WORDS}, "why", 1.0)
    )


BLANK = "UPDATE memory_events SET before = NULL, after = NULL, reason = NULL WHERE item_id = ?"


def test_only_a_recorded_purge_blanks_an_events_text(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db")
    try:
        one_event(store)
        one_event(store, "m_2")
        with pytest.raises(driver.IntegrityError, match="append-only"):
            sql(store, BLANK, "m_1")
        store.write_sync(lambda tx: tx.events.add("m_1", "purged", "cli", None, None, "r", 2.0))
        for tampering in (
            "UPDATE memory_events SET actor = 'mallory' WHERE item_id = 'm_1'",
            "UPDATE memory_events SET after = '{}' WHERE item_id = 'm_1' AND action = 'create'",
            "UPDATE memory_events SET time = 0, before = NULL, after = NULL, reason = NULL"
            " WHERE item_id = 'm_1' AND action = 'create'",
            "UPDATE memory_events SET reason = NULL WHERE action = 'purged'",
            "DELETE FROM memory_events WHERE item_id = 'm_1'",
        ):
            with pytest.raises(driver.IntegrityError, match="append-only"):
                sql(store, tampering)
        sql(store, BLANK + " AND action = 'create'", "m_1")
        events = store.read_sync(lambda tx: tx.events.of_item("m_1"))
        assert [(e.action, e.after, e.reason) for e in events] == [
            ("create", None, None),
            ("purged", None, "r"),
        ]
        with pytest.raises(driver.IntegrityError, match="append-only"):
            sql(store, BLANK, "m_2")  # another item's trail keeps its text
    finally:
        store.close()


def test_the_migration_brings_an_older_trail_under_the_new_trigger(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = connect(path)
    migrate(conn, MIGRATIONS[:16])  # as 0016_answered_commands left it
    conn.execute(
        "INSERT INTO memory_events (item_id, action, actor, after, time) VALUES (?, ?, ?, ?, ?)",
        ("m_1", "create", "x", '{"content": "old"}', 1.0),
    )
    conn.close()
    store = SqliteStore(path)
    try:
        applied = [r[0] for r in sql(store, "SELECT name FROM schema_migrations")]
        assert "0017_purgeable_events" in applied[16:]
        with pytest.raises(ValueError):
            store.write_sync(lambda tx: tx.events.purge("m_1"))

        def purge(tx: Tx) -> int:
            tx.events.add("m_1", "purged", "cli", None, None, None, 2.0)
            return tx.events.purge("m_1")

        assert store.write_sync(purge) == 1
        with pytest.raises(driver.IntegrityError, match="append-only"):
            sql(store, "UPDATE memory_events SET actor = 'mallory'")
    finally:
        store.close()
