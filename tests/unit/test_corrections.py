"""An admin's corrections through `memory.items` (DESIGN §15), over the reference store: edit an
item's words (as an edited MEMORY.md bullet is taken), change its kind, scope or sensitivity,
restore it; each audited with the admin as actor, and for bot admins only."""

from __future__ import annotations

from pathlib import Path

import pytest

from nahida.envelope import ChatKey, Role, UserKey
from nahida.memory import (
    GLOBAL,
    Actor,
    Candidate,
    Evidence,
    MemoryItem,
    MemoryPermissionError,
    MemoryService,
    SecretRefused,
    Viewer,
    WriteResult,
)
from nahida.memory.markdown.sync import MarkdownSync
from nahida.memory.store.reference import ReferenceStore
from nahida.memory.write import write

ADMIN = Actor("console:ann", is_bot_admin=True)
GROUP = ChatKey.parse("qq:group:1")
OWNER = Actor("qq:olga", GROUP, Role.OWNER)
ALICE = "user:qq:alice"
IN_GROUP = Viewer(GROUP, UserKey.parse("qq:alice"))
KEY = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"


@pytest.fixture
def memory() -> MemoryService:
    return MemoryService(ReferenceStore())


async def remember(memory: MemoryService, text: str, scope: str = ALICE, **kw: str) -> str:
    candidate = memory.items.admin_candidate(text, scope=scope, **kw)
    result = await memory.items.propose(candidate, "cli")
    assert result.item_id is not None
    return result.item_id


async def item(memory: MemoryService, item_id: str | None) -> MemoryItem:
    assert item_id is not None
    found = await memory.items.get(item_id)
    assert found is not None
    return found


async def found(memory: MemoryService, text: str, viewer: Viewer) -> list[str]:
    hits = await memory.recall.search(memory.recall.query(text, viewer))
    return [h.id for h in hits if h.kind == "item"]


async def trail(memory: MemoryService, item_id: str) -> list[tuple[str, str]]:
    events = await memory.store.read(lambda tx: tx.events.of_item(item_id))
    return [(e.action, e.actor) for e in events]


# edit ------------------------------------------------------------------------------------------


async def test_an_edit_supersedes_the_item_with_the_admins_words(memory: MemoryService) -> None:
    old_id = await remember(memory, "我喜欢乌龙茶")
    old = await item(memory, old_id)
    result = await memory.items.edit(old_id, "我喜欢普洱茶", ADMIN, reason="she said so")
    assert (result.outcome, result.replaced) == ("superseded", old_id)
    new = await item(memory, result.item_id)
    assert (new.content, new.source, new.supersedes) == ("我喜欢普洱茶", "human_edit", old_id)
    assert (new.scope, new.sensitivity, new.slot, new.kind) == (
        old.scope,
        old.sensitivity,
        old.slot,
        old.kind,
    )
    assert new.evidence[0].ref == "console:ann"
    assert (await item(memory, old_id)).status == "superseded"
    assert await trail(memory, new.id) == [("create", "console:ann")]
    assert (await trail(memory, old_id))[-1] == ("supersede", "console:ann")
    events = await memory.store.read(lambda tx: tx.events.of_item(new.id))
    assert events[0].reason == "she said so"
    dm = Viewer(ChatKey.parse("qq:private:alice"))
    assert await found(memory, "普洱茶", dm) == [new.id]
    assert await found(memory, "乌龙茶", dm) == []


async def test_an_edit_is_what_an_edited_memory_md_bullet_makes(
    memory: MemoryService, tmp_path: Path
) -> None:
    """Two items, one edited in MEMORY.md, one in the console: alike new items."""
    olds = [await remember(memory, text, scope=GLOBAL) for text in ("周五发周报", "项目代号是青鸟")]
    markdown = MarkdownSync(memory.store, tmp_path)
    await markdown.sync()
    path = tmp_path / "MEMORY.md"
    path.write_text(path.read_text("utf-8").replace("周五发周报", "周四发周报"), "utf-8")
    assert (await markdown.sync()).total()["edited"] == 1
    by_file = await memory.store.read(lambda tx: tx.items.replaced_by(olds[0]))
    by_hand = (await memory.items.edit(olds[1], "项目代号是白鹭", ADMIN)).item_id
    made = [await item(memory, i) for i in (by_file, by_hand)]
    fields = ("scope", "kind", "sensitivity", "source", "confidence", "importance", "status")
    assert [tuple(getattr(m, f) for f in fields) for m in made] == [
        ("global", "fact", "public", "human_edit", 0.95, 0.7, "active")
    ] * 2
    assert [m.supersedes for m in made] == olds
    for old_id, new in zip(olds, made, strict=True):
        old = await item(memory, old_id)
        assert (old.status, new.slot, new.title) == ("superseded", old.slot, old.title)


async def test_an_edited_item_is_never_rewritten_by_a_model(memory: MemoryService) -> None:
    edited = await memory.items.edit(await remember(memory, "我住在杭州"), "我住在上海", ADMIN)
    dream = Candidate(
        scope=ALICE,
        kind="fact",
        content="我住在北京",
        source="llm_dream",
        confidence=0.9,
        op="update",
        target=edited.item_id,
        evidence=(Evidence(chat="qq:private:alice", message_id="9", time=1.0),),
    )
    result = await memory.store.write(write.propose, write.prepare(dream), "auto_full", "dream")
    assert result.outcome == "rejected" and "human_edit" in result.reason
    assert (await item(memory, edited.item_id)).content == "我住在上海"


async def test_what_an_edit_refuses(memory: MemoryService) -> None:
    item_id = await remember(memory, "我喜欢乌龙茶")
    for actor in (OWNER, Actor("qq:alice"), Actor("plugin:x")):
        with pytest.raises(MemoryPermissionError):
            await memory.items.edit(item_id, "我喜欢咖啡", actor)
    with pytest.raises(SecretRefused):
        await memory.items.edit(item_id, f"密钥是 {KEY}", ADMIN)
    with pytest.raises(ValueError, match="empty"):
        await memory.items.edit(item_id, "  ", ADMIN)
    with pytest.raises(LookupError):
        await memory.items.edit("m_nope00", "x", ADMIN)
    too_long = await memory.items.edit(item_id, "长" * 2000, ADMIN)
    assert (too_long.outcome, too_long.reason) == ("rejected", "too_long")
    same = await memory.items.edit(item_id, " 我喜欢乌龙茶 ", ADMIN)
    assert same == WriteResult("merged", item_id, reason="unchanged")
    assert await trail(memory, item_id) == [("create", "cli")]
    await memory.items.forget(item_id, ADMIN)
    with pytest.raises(LookupError):
        await memory.items.edit(item_id, "我喜欢咖啡", ADMIN)


# change ----------------------------------------------------------------------------------------


async def test_a_change_of_sensitivity_decides_who_sees_the_item(memory: MemoryService) -> None:
    item_id = await remember(memory, "我喜欢乌龙茶")
    assert await found(memory, "乌龙茶", IN_GROUP) == []
    public = await memory.items.change(item_id, ADMIN, sensitivity="public")
    assert public.sensitivity == "public"
    assert await found(memory, "乌龙茶", IN_GROUP) == [item_id]
    events = await memory.store.read(lambda tx: tx.events.of_item(item_id))
    last = events[-1]
    assert (last.action, last.actor, last.reason) == (
        "update",
        "console:ann",
        "sensitivity private → public",
    )
    assert last.before is not None and last.after is not None
    assert (last.before["sensitivity"], last.after["sensitivity"]) == ("private", "public")


async def test_a_change_of_kind_and_scope_moves_the_item(memory: MemoryService) -> None:
    item_id = await remember(memory, "周五发周报", scope="chat:qq:group:1")
    moved = await memory.items.change(item_id, ADMIN, kind="task", scope="user:qq:bob")
    assert (moved.kind, moved.scope, moved.subject_user) == ("task", "user:qq:bob", "qq:bob")
    assert await found(memory, "周报", Viewer(GROUP)) == []
    assert await found(memory, "周报", Viewer(ChatKey.parse("qq:private:bob"))) == [item_id]
    last = (await memory.store.read(lambda tx: tx.events.of_item(item_id)))[-1]
    assert last.before is not None and last.after is not None
    assert (last.before["kind"], last.after["kind"]) == ("fact", "task")
    assert (last.before["scope"], last.after["scope"]) == ("chat:qq:group:1", "user:qq:bob")


async def test_what_a_change_refuses(memory: MemoryService) -> None:
    item_id = await remember(memory, "我喜欢乌龙茶")
    with pytest.raises(MemoryPermissionError):
        await memory.items.change(item_id, OWNER, sensitivity="public")
    for bad in ({"kind": "gossip"}, {"scope": "chat:nowhere"}, {"sensitivity": "secret"}, {}):
        with pytest.raises(ValueError):
            await memory.items.change(item_id, ADMIN, **bad)
    with pytest.raises(LookupError):
        await memory.items.change("m_nope00", ADMIN, kind="task")
    same = await memory.items.change(item_id, ADMIN, sensitivity="private", kind="preference")
    assert same == await item(memory, item_id)
    assert await trail(memory, item_id) == [("create", "cli")]  # nothing changed: no event


async def test_a_change_never_puts_two_values_in_one_slot(memory: MemoryService) -> None:
    mine = await remember(memory, "我喜欢乌龙茶")
    bobs = await remember(memory, "我不喜欢乌龙茶", scope="user:qq:bob")
    assert (await item(memory, mine)).slot == (await item(memory, bobs)).slot
    with pytest.raises(ValueError, match=f"{mine} holds the same slot"):
        await memory.items.change(bobs, ADMIN, scope=ALICE)
    assert (await item(memory, bobs)).scope == "user:qq:bob"


# restore ---------------------------------------------------------------------------------------


async def test_a_forgotten_item_is_restored(memory: MemoryService) -> None:
    item_id = await remember(memory, "我喜欢乌龙茶")
    await memory.items.forget(item_id, ADMIN, "by mistake")
    dm = Viewer(ChatKey.parse("qq:private:alice"))
    assert await found(memory, "乌龙茶", dm) == []
    restored = await memory.items.restore(item_id, ADMIN)
    assert restored.status == "active"
    assert await found(memory, "乌龙茶", dm) == [item_id]
    events = await memory.store.read(lambda tx: tx.events.of_item(item_id))
    last = events[-1]
    assert (last.action, last.actor, last.reason) == (
        "restore",
        "console:ann",
        "restored from archived",
    )
    assert last.before is not None and last.after is not None
    assert (last.before["status"], last.after["status"]) == ("archived", "active")
    with pytest.raises(ValueError, match="active already"):
        await memory.items.restore(item_id, ADMIN)


async def test_restore_refuses_while_a_newer_item_replaced_it(memory: MemoryService) -> None:
    old = await remember(memory, "我喜欢乌龙茶")
    new = (await memory.items.edit(old, "我喜欢普洱茶", ADMIN)).item_id
    assert new is not None
    with pytest.raises(ValueError, match=f"{new} replaced {old} and is active"):
        await memory.items.restore(old, ADMIN)
    await memory.items.forget(new, ADMIN)
    restored = await memory.items.restore(old, ADMIN)
    assert (restored.status, restored.valid_until) == ("active", None)


async def test_restore_refuses_while_another_item_holds_the_slot(memory: MemoryService) -> None:
    old = await remember(memory, "我喜欢乌龙茶")
    await memory.items.forget(old, ADMIN)
    now = await remember(memory, "我不喜欢乌龙茶")
    assert (await item(memory, now)).supersedes is None  # the old one was not active
    with pytest.raises(ValueError, match=f"{now} holds the same slot"):
        await memory.items.restore(old, ADMIN)
    assert (await item(memory, old)).status == "archived"


async def test_only_a_bot_admin_restores(memory: MemoryService) -> None:
    item_id = await remember(memory, "我喜欢乌龙茶")
    await memory.items.forget(item_id, ADMIN)
    for actor in (OWNER, Actor("qq:alice")):
        with pytest.raises(MemoryPermissionError):
            await memory.items.restore(item_id, actor)
    with pytest.raises(LookupError):
        await memory.items.restore("m_nope00", ADMIN)
    assert (await memory.items.restore(item_id, Actor.cli())).status == "active"
