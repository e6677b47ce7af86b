"""`memory.items.purge` over the reference store: what a purge takes away and what it keeps,
and that only a bot admin may ask for it. (The bytes of a SQLite file: `test_purge_bytes.py`.)"""

from __future__ import annotations

import pytest

from nahida.envelope import ChatKey, Role, UserKey
from nahida.memory import (
    Actor,
    Candidate,
    DreamRun,
    Evidence,
    MemoryPermissionError,
    MemoryService,
    NewTurn,
    Proposal,
    Purged,
    Viewer,
)
from nahida.memory.store.base import Tx
from nahida.memory.store.reference import ReferenceStore
from nahida.memory.write import write

ADMIN = Actor("console:ann", is_bot_admin=True)
CHAT = "qq:group:1"
SCOPE = f"chat:{CHAT}"
GROUP = Viewer(ChatKey.parse(CHAT), UserKey.parse("qq:alice"))
WORDS = "暗号是紫藤萝瀑布"


@pytest.fixture
def memory() -> MemoryService:
    return MemoryService(ReferenceStore())


def said(tx: Tx, text: str) -> int:
    tx.sessions.create("s1", CHAT, "t", 1.0)
    return tx.turns.add("s1", NewTurn(CHAT, "user", text, 1.0, speaker="qq:alice"), text)


async def learned(memory: MemoryService, text: str = WORDS) -> tuple[str, int]:
    """An item learned from a turn of the group (and the turn's id)."""
    turn = await memory.store.write(said, "记一下")
    candidate = Candidate(
        scope=SCOPE,
        kind="fact",
        content=text,
        source="rule_extract",
        confidence=0.9,
        sensitivity="public",
        evidence=(Evidence(chat=CHAT, message_id="1", turn_id=turn, time=2.0),),
    )
    result = await memory.store.write(write.propose, write.prepare(candidate), "auto_safe", "x")
    assert result.item_id is not None
    return result.item_id, turn


async def ids(memory: MemoryService, text: str) -> list[str]:
    return [h.id for h in await memory.recall.search(memory.recall.query(text, GROUP))]


async def test_a_purge_leaves_only_who_did_what_and_when(memory: MemoryService) -> None:
    item_id, turn = await learned(memory)
    await memory.items.forget(item_id, ADMIN)  # any status may be purged
    purged = await memory.items.purge(item_id, ADMIN, "asked by Alice")
    assert purged == Purged(item_id, events=2, candidates=1, runs=0, hidden=0)
    assert await memory.items.get(item_id) is None
    assert await memory.items.why(item_id, Viewer(scopes=(SCOPE,))) is None
    events = await memory.store.read(lambda tx: tx.events.of_item(item_id))
    assert [(e.action, e.actor, e.before, e.after, e.reason) for e in events] == [
        ("create", "x", None, None, None),
        ("archive", "console:ann", None, None, None),
        ("purged", "console:ann", None, None, "asked by Alice"),
    ]
    turns = await memory.store.read(lambda tx: tx.turns.hidden_for(item_id))
    assert [t.id for t in turns] == [turn]  # forgetting hid it; it stays in the history
    with pytest.raises(LookupError):
        await memory.items.purge(item_id, ADMIN)


async def test_a_purge_takes_the_words_from_every_place(memory: MemoryService) -> None:
    item_id, turn = await learned(memory)
    assert await ids(memory, "紫藤萝瀑布") == [item_id]

    def more(tx: Tx) -> None:
        pending = Candidate(
            scope=SCOPE,
            kind="fact",
            content="暗号改成紫藤萝",
            source="llm_dream",
            op="update",
            target=item_id,
        )
        write.propose(tx, write.prepare(pending), "manual_review", "dream:d_1")
        report = (Proposal("add", "fact", WORDS, SCOPE, fate="created", item_id=item_id),)
        tx.dreams.start(DreamRun("d_1", CHAT, "cli", 1.0))
        tx.dreams.save(DreamRun("d_1", CHAT, "cli", 1.0, report=report))

    await memory.store.write(more)
    purged = await memory.items.purge(item_id, ADMIN)
    assert (purged.candidates, purged.runs, purged.hidden) == (2, 1, 1)
    assert await ids(memory, "紫藤萝瀑布") == []
    assert await memory.items.pending(ADMIN) == []
    run = await memory.dreams.get("d_1")
    assert run is not None and run.report[0].content == ""
    assert [t.id for t in await memory.store.read(lambda tx: tx.turns.hidden_for(item_id))] == [
        turn
    ]
    session = await memory.store.read(lambda tx: tx.turns.of_session("s1"))
    assert [t.content for t in session] == ["记一下"]  # the history is not deleted


async def test_a_purge_names_the_earlier_versions_it_leaves(memory: MemoryService) -> None:
    first, _ = await learned(memory, "暗号是紫藤")
    second = (await memory.items.edit(first, "暗号是紫藤萝", ADMIN)).item_id
    assert second is not None
    third = (await memory.items.edit(second, WORDS, ADMIN)).item_id
    assert third is not None
    purged = await memory.items.purge(third, ADMIN)
    assert purged.earlier == (second, first)
    kept = await memory.items.get(second)
    assert kept is not None and kept.status == "superseded"
    assert await memory.store.read(lambda tx: tx.items.replaced_by(second)) is None
    await memory.items.purge(first, ADMIN)
    assert (await memory.items.purge(second, ADMIN)).earlier == ()


async def test_only_a_bot_admin_may_purge(memory: MemoryService) -> None:
    item_id, _ = await learned(memory)
    owner = Actor("qq:olga", ChatKey.parse(CHAT), Role.OWNER)
    for actor in (owner, Actor("qq:alice"), Actor("plugin:notes"), Actor("system")):
        with pytest.raises(MemoryPermissionError):
            await memory.items.purge(item_id, actor)
    assert await memory.items.get(item_id) is not None
    assert (await memory.items.purge(item_id, Actor.cli())).item_id == item_id
