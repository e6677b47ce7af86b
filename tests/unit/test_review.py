"""Reviewing candidates through `memory.items` over the reference store: the queue with what
each candidate would change (a diff's "before"), accept and reject, edit-then-accept as the
reviewer's words, several at once, and a dream's ops on items decided by the same calls."""

from __future__ import annotations

from typing import Any

import pytest

from nahida.envelope import ChatKey, Role
from nahida.memory import (
    Actor,
    Candidate,
    Evidence,
    MemoryItem,
    MemoryPermissionError,
    MemoryService,
    Pending,
    SecretRefused,
    WriteResult,
)
from nahida.memory.store.reference import ReferenceStore
from nahida.memory.write import write

ADMIN = Actor("console:ann", is_bot_admin=True)
CHAT = "qq:group:1"
SCOPE = f"chat:{CHAT}"
OWNER = Actor("qq:olga", ChatKey.parse(CHAT), Role.OWNER)
ELSEWHERE = Actor("qq:olga", ChatKey.parse("qq:group:2"), Role.OWNER)
KEY = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"


@pytest.fixture
def memory() -> MemoryService:
    return MemoryService(ReferenceStore(), mode="manual_review")


def candidate(content: str, **fields: Any) -> Candidate:
    defaults: dict[str, Any] = {
        "scope": SCOPE,
        "kind": "fact",
        "source": "llm_dream",
        "confidence": 0.9,
        "sensitivity": "public",
        "evidence": (Evidence(chat=CHAT, message_id="7", time=5.0),),
        "note": "the dream's reason",
    }
    return Candidate(content=content, **{**defaults, **fields})


async def propose(memory: MemoryService, c: Candidate, mode: str = "manual_review") -> WriteResult:
    return await memory.store.write(write.propose, write.prepare(c), mode, "dream:d_1")


async def item(memory: MemoryService, item_id: str | None) -> MemoryItem:
    assert item_id is not None
    found = await memory.items.get(item_id)
    assert found is not None
    return found


async def existing(memory: MemoryService, content: str = "周五发周报") -> str:
    made = await propose(memory, candidate(content, source="agent_proactive"), "auto_full")
    assert made.item_id is not None
    return made.item_id


async def waiting(memory: MemoryService, c: Candidate) -> str:
    result = await propose(memory, c)
    assert result.outcome == "pending" and result.candidate_id is not None
    return result.candidate_id


# the queue -------------------------------------------------------------------------------------


async def test_the_queue_shows_what_each_candidate_would_change(memory: MemoryService) -> None:
    target = await existing(memory)
    update = await waiting(memory, candidate("周四发周报", op="update", target=target))
    new = await waiting(memory, candidate("项目代号是青鸟"))
    queue = await memory.items.review_queue(ADMIN)
    assert [(p.id, p.before) for p in queue] == [(update, "周五发周报"), (new, None)]
    assert isinstance(queue[0], Pending) and queue[0].target == await item(memory, target)
    assert queue[0].candidate.content == "周四发周报"
    assert [p.id for p in await memory.items.review_queue(OWNER)] == [update, new]
    assert await memory.items.review_queue(ELSEWHERE) == []
    with pytest.raises(MemoryPermissionError):
        await memory.items.review_queue(Actor("qq:bob"))


async def test_a_new_value_for_a_slot_shows_the_value_it_would_replace(
    memory: MemoryService,
) -> None:
    old = (await propose(memory, candidate("喜欢乌龙茶", slot="pref:茶"), "auto_full")).item_id
    await waiting(memory, candidate("不喜欢乌龙茶", slot="pref:茶"))
    (pending,) = await memory.items.review_queue(ADMIN)
    assert pending.target is not None and (pending.target.id, pending.before) == (old, "喜欢乌龙茶")


# deciding ----------------------------------------------------------------------------------------


async def test_a_dreams_ops_are_decided_by_the_same_calls(memory: MemoryService) -> None:
    updated, archived = await existing(memory), await existing(memory, "项目代号是青鸟")
    update = await waiting(memory, candidate("周四发周报", op="update", target=updated))
    archive = await waiting(memory, candidate("项目代号是青鸟", op="archive", target=archived))
    accepted = await memory.items.review(update, True, ADMIN)
    assert accepted is not None and (accepted.outcome, accepted.item_id) == ("updated", updated)
    assert (await item(memory, updated)).content == "周四发周报"
    done = await memory.items.review(archive, True, OWNER)
    assert done is not None and done.outcome == "archived"
    assert (await item(memory, archived)).status == "archived"
    events = await memory.store.read(lambda tx: tx.events.of_item(archived))
    assert (events[-1].action, events[-1].actor) == ("archive", "qq:olga")
    assert await memory.items.review_queue(ADMIN) == []


async def test_edit_then_accept_commits_the_reviewers_words(memory: MemoryService) -> None:
    waiting_id = await waiting(memory, candidate("项目代号是青鸟吧"))
    result = await memory.items.review(waiting_id, True, ADMIN, text=" 项目代号是白鹭 ")
    assert result is not None and result.outcome == "created"
    made = await item(memory, result.item_id)
    assert (made.content, made.source, made.confidence) == ("项目代号是白鹭", "human_edit", 0.95)
    assert [e.ref for e in made.evidence] == [None, "console:ann"]
    events = await memory.store.read(lambda tx: tx.events.of_item(made.id))
    assert [(e.action, e.actor, e.reason) for e in events] == [
        ("create", "console:ann", "the dream's reason; words edited in review")
    ]
    notes = await memory.store.read(lambda tx: tx.candidates.decided((0.0, ""), 1e12, 10))
    assert [(n.id, n.status, n.decided_by) for n in notes] == [
        (waiting_id, "accepted", "console:ann")
    ]


async def test_an_edited_update_is_the_reviewers_and_kept_from_models(
    memory: MemoryService,
) -> None:
    target = await existing(memory)
    update = await waiting(memory, candidate("周四发周报", op="update", target=target))
    result = await memory.items.review(update, True, OWNER, text="周三发周报")
    assert result is not None and result.outcome == "updated"
    changed = await item(memory, target)
    assert (changed.content, changed.source) == ("周三发周报", "human_edit")
    again = candidate("周二发周报", op="update", target=target, evidence=())
    refused = await propose(memory, again, "auto_full")
    assert refused.outcome == "rejected" and "human_edit" in refused.reason


async def test_what_edit_then_accept_refuses(memory: MemoryService) -> None:
    target = await existing(memory)
    archive = await waiting(memory, candidate("周五发周报", op="archive", target=target))
    new = await waiting(memory, candidate("项目代号是青鸟"))
    with pytest.raises(ValueError, match="archive"):
        await memory.items.review(archive, True, ADMIN, text="whatever")
    with pytest.raises(ValueError, match="accepted"):
        await memory.items.review(new, False, ADMIN, text="项目代号是白鹭")
    with pytest.raises(ValueError, match="empty"):
        await memory.items.review(new, True, ADMIN, text=" ")
    with pytest.raises(SecretRefused):
        await memory.items.review(new, True, ADMIN, text=f"密钥是 {KEY}")
    memory.items.max_chars = 20
    too_long = await memory.items.review(new, True, ADMIN, text="长" * 30)
    assert too_long == WriteResult("rejected", candidate_id=new, reason="too_long")
    assert [p.id for p in await memory.items.review_queue(ADMIN)] == [archive, new]
    assert await memory.items.review(new, True, ELSEWHERE, text="项目代号是白鹭") is None


async def test_several_at_once_report_each(memory: MemoryService) -> None:
    first = await waiting(memory, candidate("项目代号是青鸟"))
    second = await waiting(memory, candidate("周五发周报"))
    other = await waiting(memory, candidate("周一开会", scope="chat:qq:group:2"))
    with pytest.raises(MemoryPermissionError):
        await memory.items.review_many([first], True, Actor("qq:bob"))
    done = await memory.items.review_many([first, second, other, "c_nope00", first], True, OWNER)
    assert list(done) == [first, second, other, "c_nope00"]
    assert [r.outcome if r else None for r in done.values()] == ["created", "created", None, None]
    rejected = await memory.items.review_many([other], False, ADMIN)
    assert rejected == {other: WriteResult("rejected", None, other)}
    assert await memory.items.review_queue(ADMIN) == []
