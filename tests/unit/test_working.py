"""Working memory's compaction and roll over real SQLite, with an in-process compress model that
answers from a script (no wire: the fake servers cover the SDKs end to end)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from nahida.envelope import ChatKey, UserKey
from nahida.errors import ProviderServerError
from nahida.memory import MemoryService, NewTurn, Viewer, WorkingSettings
from nahida.memory.history import working
from nahida.memory.store.sqlite import SqliteStore
from nahida.providers.base import ChatResponse, Message, Task, ToolSpec

CHAT = "test:private:u1"
USER = "test:u1"


class Scripted:
    """A compress model: the summary request gets `summary`, the roll `roll` (JSON)."""

    configured = True

    def __init__(self, roll: dict[str, object]) -> None:
        self.roll = roll
        self.asked: list[tuple[Message, ...]] = []
        self.fail = 0

    async def chat(
        self,
        task: Task,
        messages: tuple[Message, ...],
        *,
        tools: tuple[ToolSpec, ...] = (),
        max_tokens: int | None = None,
    ) -> ChatResponse:
        assert task == "compress"
        self.asked.append(messages)
        if self.fail:
            self.fail -= 1
            raise ProviderServerError("down", status=503)
        if "JSON" in messages[0].content:
            return ChatResponse(json.dumps(self.roll, ensure_ascii=False))
        return ChatResponse(f"summary of {messages[1].content.count(chr(10))} lines")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    with_store = SqliteStore(tmp_path / "m.db")
    yield with_store
    with_store.close()


async def rounds(memory: MemoryService, n: int, chat: str = CHAT) -> str:
    for i in range(n):
        await memory.sessions.record(NewTurn(chat, "user", f"第{i}轮", float(i), speaker=USER))
        await memory.sessions.record(NewTurn(chat, "assistant", f"回{i}", float(i) + 0.5))
    session = await memory.sessions.current(chat)
    assert session is not None
    return session


ROLL = {
    "facts": [{"content": "项目代号是青鸟", "kind": "fact", "explicit": True}],
    "profile": [
        {"section": "心理与情绪", "text": "最近压力大"},
        {"section": "目标与方向", "text": "想转行做设计"},
    ],
    "summary": "滚动后的摘要",
}


@pytest.mark.parametrize("companion", [False, True])
async def test_a_full_summary_rolls_into_cold_facts_and_profile_bullets(
    store: SqliteStore, companion: bool
) -> None:
    model = Scripted(ROLL)
    settings = WorkingSettings(
        hot_size=2,
        compress_batch=2,
        warm_capacity=4,
        companion=frozenset([CHAT] if companion else []),
    )
    memory = MemoryService(store, model=model, working=settings)
    session = await rounds(memory, 4)
    assert await memory.working.compact(session, CHAT) is not None  # 2 rounds out of the window
    state = await memory.working.summary(session)
    assert state is not None and state.rounds == 2 and state.summary.startswith("summary of")
    assert await memory.working.compact(session, CHAT) is None  # nothing new left the window
    session = await rounds(memory, 2)
    state = await memory.working.compact(session, CHAT)
    assert state is not None and (state.rounds, state.rolls, state.summary) == (
        0,
        1,
        "滚动后的摘要",
    )
    offered = model.asked[-1][0].content
    sections = offered.split("sections only:", 1)[1].split("\n", 1)[0]
    assert ("心理与情绪" in sections) is companion and "基础特征" not in sections

    viewer = Viewer(ChatKey.parse(CHAT), UserKey.parse(USER))
    items = await memory.items.latest(viewer)
    (fact,) = [i for i in items if i.source == "compress"]
    assert (fact.content, fact.confidence, fact.scope) == ("项目代号是青鸟", 0.9, f"user:{USER}")
    sections = {e.section for e in await memory.profiles.entries(USER, public_only=False)}
    assert sections == ({"心理与情绪", "目标与方向"} if companion else {"目标与方向"})


async def test_a_failure_is_counted_and_waits_before_it_is_tried_again(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = Scripted(ROLL)
    model.fail = 1
    memory = MemoryService(
        store, model=model, working=WorkingSettings(hot_size=1, compress_batch=1)
    )
    session = await rounds(memory, 3)
    assert memory.working.after_turn(session, CHAT) is None  # one round counted: not yet due
    assert memory.working.after_turn(session, CHAT) is not None
    assert await memory.working.compact(session, CHAT) is None
    (failing,) = await memory.working.failing()
    assert failing.failures == 1 and "ProviderServerError" in (failing.last_error or "")
    assert await memory.working.compact(session, CHAT) is None  # within the pause: not asked
    assert len(model.asked) == 1
    # nor does a message schedule one (and read the store for it) within the pause
    assert [memory.working.after_turn(session, CHAT) for _ in range(3)] == [None] * 3
    later = time.time() + 16  # the first pause is 15 s
    monkeypatch.setattr(working, "time", SimpleNamespace(time=lambda: later))
    assert memory.working.after_turn(session, CHAT) is not None
    assert await memory.working.compact(session, CHAT) is not None  # asked again, answered
    assert len(model.asked) == 2
    turns = await memory.sessions.turns(session)
    assert len(turns) == 6  # every turn kept


async def test_without_a_summary_the_hot_window_is_the_last_turns(store: SqliteStore) -> None:
    memory = MemoryService(
        store, model=Scripted(ROLL), working=WorkingSettings(hot_size=2, compress_batch=3)
    )
    assert memory.sessions.slack > 0  # turns beyond the window a summary would let it show
    session = await rounds(memory, 6)
    recorded = await memory.sessions.record_user_turn(
        NewTurn(CHAT, "user", "现在", 10.0, speaker=USER), 4
    )
    assert recorded is not None and recorded.summary == ""
    before = [t.id for t in await memory.sessions.turns(session)][:-1]  # all but the new one
    assert [t.id for t in recorded.hot] == before[-4:]


async def test_the_hot_window_shows_what_no_summary_covers(store: SqliteStore) -> None:
    memory = MemoryService(
        store, model=Scripted(ROLL), working=WorkingSettings(hot_size=2, compress_batch=3)
    )
    session = await rounds(memory, 6)
    await memory.working.compact(session, CHAT)
    recorded = await memory.sessions.record_user_turn(
        NewTurn(CHAT, "user", "现在", 10.0, speaker=USER), 4
    )
    assert recorded is not None and recorded.summary.startswith("summary of")
    state = await memory.working.summary(session)
    assert state is not None
    assert [t.id for t in recorded.hot] == list(range(state.through_turn + 1, recorded.turn.id))
