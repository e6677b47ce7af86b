"""Steering a chat's dreaming through `memory.dreams` (pause, resume, run now), as the console
and the CLI do: who may is decided in one place (`access.may_steer_dreaming`)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from nahida.envelope import ChatKey, Role
from nahida.memory import Actor, MemoryPermissionError, MemoryService, NewTurn, NoModel
from nahida.memory.store.reference import ReferenceStore
from nahida.providers.base import ChatResponse

GROUP, OTHER, DM = "qq:group:1", "qq:group:2", "qq:private:alice"
ADMIN = Actor("console:ann", is_bot_admin=True)
OWNER = Actor("qq:olga", ChatKey.parse(GROUP), Role.OWNER)
MEMBER = Actor("qq:bob", ChatKey.parse(GROUP))


class Model:
    """A dream model that proposes nothing."""

    configured = True

    async def chat(self, task: str, messages: Any, **kw: Any) -> ChatResponse:
        return ChatResponse(json.dumps({"ops": []}), model="tiny", finish_reason="stop")


@pytest.fixture
def memory() -> MemoryService:
    return MemoryService(ReferenceStore(), model=Model())


def test_who_may_steer_a_chats_dreaming(memory: MemoryService) -> None:
    dreams = memory.dreams
    assert [dreams.may_steer(c, ADMIN) for c in (GROUP, OTHER, DM)] == [True] * 3
    assert [dreams.may_steer(c, OWNER) for c in (GROUP, OTHER, DM)] == [True, False, False]
    assert [dreams.may_steer(c, MEMBER) for c in (GROUP, OTHER, DM)] == [False] * 3
    assert dreams.may_steer(DM, Actor("qq:alice")) is False


async def test_pause_resume_and_run_now(memory: MemoryService) -> None:
    now = time.time()
    for n in range(3):
        await memory.sessions.record(NewTurn(GROUP, "user", f"第{n}句", now + n, speaker="qq:b"))
    await memory.dreams.pause(GROUP, actor=OWNER)
    assert await memory.dreams.paused(GROUP)
    skipped = await memory.dreams.run(GROUP, "console", actor=ADMIN)
    assert skipped is not None and (skipped.outcome, skipped.error) == ("skipped", "paused")
    await memory.dreams.resume(GROUP, actor=ADMIN)
    assert not await memory.dreams.paused(GROUP)
    run = await memory.dreams.run(GROUP, "console", actor=OWNER)
    assert run is not None and (run.outcome, run.turns, run.trigger) == ("ok", 3, "console")
    assert [r.id for r in await memory.dreams.runs(GROUP)] == [run.id]


async def test_those_who_may_not_are_refused_before_anything_happens(
    memory: MemoryService,
) -> None:
    for actor, chat in ((MEMBER, GROUP), (OWNER, OTHER), (OWNER, DM)):
        with pytest.raises(MemoryPermissionError):
            await memory.dreams.pause(chat, actor=actor)
        with pytest.raises(MemoryPermissionError):
            await memory.dreams.resume(chat, actor=actor)
        with pytest.raises(MemoryPermissionError):
            await memory.dreams.run(chat, "console", actor=actor)
        assert not await memory.dreams.paused(chat)
    assert await memory.dreams.runs() == []
    without = MemoryService(ReferenceStore())
    with pytest.raises(MemoryPermissionError):  # who asks is checked first
        await without.dreams.run(GROUP, actor=MEMBER)
    with pytest.raises(NoModel):
        await without.dreams.run(GROUP, actor=ADMIN)
