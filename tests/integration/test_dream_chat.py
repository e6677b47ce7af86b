"""`/memory dream` through the real runner, its background work and SQLite, with the real OpenAI
SDK talking to the fake server (which answers dream requests from their input)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from nahida.app import build_model_router
from nahida.background import BackgroundWork
from nahida.commands import memory as memory_commands
from nahida.commands.dream import summary
from nahida.commands.router import CommandRouter
from nahida.envelope import Reply, Role
from nahida.i18n import t
from nahida.memory import MemoryService, NewTurn, Viewer
from nahida.memory.store.sqlite import SqliteStore
from nahida.policy import ReplyPolicy
from nahida.providers.router import ModelRouter
from nahida.runner import RunnerSettings, SessionRunner
from tests.fakes.llm_server import FakeOpenAIServer, Hang
from tests.helpers import chat_through_console, config, envelope, openai_provider

GROUP = "test:group:g1"
ALICE, BOB, CAROL = "test:alice", "test:bob", "test:carol"
RUN_ID = re.compile(r"\bd_[0-9a-f]+\b")


@dataclass
class Bot:
    runner: SessionRunner
    memory: MemoryService
    background: BackgroundWork
    replies: list[str]
    arrived: asyncio.Event

    async def say(self, text: str, *, user: str = ALICE, role: Role = Role.ADMIN) -> None:
        await self.runner.handle(envelope(text, chat=GROUP, user=user, role=role))

    async def replied(self, n: int) -> list[str]:
        """The replies once there are `n` (the background's arrive a little later)."""
        async with asyncio.timeout(10):
            while len(self.replies) < n:
                self.arrived.clear()
                await self.arrived.wait()
        return self.replies


@pytest.fixture
async def router(openai_server: FakeOpenAIServer) -> AsyncIterator[ModelRouter]:
    models = build_model_router(config(**openai_provider(openai_server.url)))
    yield models
    await models.aclose()


@pytest.fixture
async def bot(store: SqliteStore, router: ModelRouter) -> AsyncIterator[Bot]:
    memory = MemoryService(store, model=router)
    replies: list[str] = []
    arrived = asyncio.Event()

    async def send(reply: Reply) -> str | None:
        replies.append(reply.plain_text)
        arrived.set()
        return None

    commands = CommandRouter()
    memory_commands.register(commands)
    background = BackgroundWork()
    runner = SessionRunner(
        model=router,
        send=send,
        commands=commands,
        policy=ReplyPolicy(),
        settings=RunnerSettings(),
        memory=memory,
        persona=lambda: "",
        background=background,
    )
    worker = asyncio.create_task(background.run())
    yield Bot(runner, memory, background, replies, arrived)
    await background.shutdown()
    await worker


async def _talk(memory: MemoryService) -> None:
    now = time.time() - 60
    said = [(ALICE, "我喜欢乌龙茶"), (BOB, "记住周五下午三点开周会"), (CAROL, "好的")]
    for n, (who, text) in enumerate(said):
        turn = NewTurn(GROUP, "user", text, now + n, speaker=who, message_id=f"g{n}")
        await memory.sessions.record(turn)


async def test_an_admins_dream_answers_at_once_then_with_the_summary(bot: Bot) -> None:
    await _talk(bot.memory)
    await bot.say("/memory dream")
    started, done = await bot.replied(2)
    assert started == t("memory_dream_started", "zh")
    found = RUN_ID.search(done)
    assert found, done
    run = await bot.memory.dreams.get(found.group(0))
    assert run is not None and run.outcome == "ok" and run.trigger == "command"
    assert done == t(
        "memory_dream_done",
        "zh",
        id=run.id,
        turns=3,
        created=2,
        merged=0,
        superseded=0,
        archived=0,
        pending=0,
        rejected=0,
    )
    items = await bot.memory.items.latest(
        Viewer.admin([f"user:{ALICE}", f"chat:{GROUP}"]), limit=10
    )
    assert sorted((i.scope, i.content) for i in items) == [
        (f"chat:{GROUP}", "记住周五下午三点开周会"),
        (f"user:{ALICE}", "我喜欢乌龙茶"),
    ]
    assert all(i.source == "llm_dream" for i in items)

    await bot.say("/memory dream")  # nothing new since
    assert (await bot.replied(4))[2:] == [
        t("memory_dream_started", "zh"),
        t("memory_dream_nothing", "zh"),
    ]


async def test_the_chats_next_message_does_not_wait_for_the_run(
    bot: Bot, openai_server: FakeOpenAIServer
) -> None:
    await _talk(bot.memory)
    answer = asyncio.Event()
    openai_server.dream_script.append(Hang(60, until=answer))  # then an echo (no ops)
    await bot.say("/memory dream")
    await bot.say("/memory list")  # both handled while the model call hangs
    assert bot.replies == [t("memory_dream_started", "zh"), t("memory_list_empty", "zh")]
    answer.set()
    replies = await bot.replied(3)
    (run,) = await bot.memory.dreams.runs(GROUP)
    assert run.outcome == "ok" and run.calls >= 1 and replies[2] == summary(run, "zh")


async def test_a_plain_member_is_refused_and_nothing_runs(
    bot: Bot, openai_server: FakeOpenAIServer
) -> None:
    await _talk(bot.memory)
    await bot.say("/memory dream", user=CAROL, role=Role.MEMBER)
    assert await bot.replied(1) == [t("memory_dream_denied", "zh")]
    assert openai_server.memory_requests("dream") == []
    assert await bot.memory.dreams.runs() == []


async def test_paused_chats_are_skipped_until_resumed(
    bot: Bot, openai_server: FakeOpenAIServer
) -> None:
    await _talk(bot.memory)
    await bot.say("/memory dream pause", role=Role.OWNER)
    await bot.say("/memory dream")
    assert await bot.replied(2) == [
        t("memory_dream_paused_now", "zh"),
        t("memory_dream_paused", "zh"),
    ]
    dreams = bot.memory.dreams
    assert await dreams.due(min_turns=1) == []  # the schedule leaves it alone
    skipped = await dreams.run(GROUP, "schedule")
    assert skipped is not None and (skipped.outcome, skipped.error) == ("skipped", "paused")
    assert openai_server.memory_requests("dream") == []

    await bot.say("/memory dream resume", role=Role.OWNER)
    assert [d.chat for d in await dreams.due(min_turns=1)] == [GROUP]
    await bot.say("/memory dream")
    replies = await bot.replied(5)
    assert replies[2:4] == [t("memory_dream_resumed", "zh"), t("memory_dream_started", "zh")]
    assert RUN_ID.search(replies[4])
    assert len(openai_server.memory_requests("dream")) == 1


async def test_without_background_the_summary_follows_the_started_line(
    bot: Bot,
) -> None:
    bot.runner.background = None
    await _talk(bot.memory)
    await bot.say("/memory dream")
    assert bot.replies[0] == t("memory_dream_started", "zh")  # both sent before handle returned
    assert len(bot.replies) == 2 and RUN_ID.search(bot.replies[1])


async def test_through_the_console_app_the_summary_is_the_last_reply(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url), scheduler={"enabled": False})
    out, _ = await chat_through_console(tmp_path, ["我喜欢乌龙茶", "/memory dream"], cfg)
    lines = out.strip().splitlines()
    assert lines[-2] == t("memory_dream_started", "zh")
    memory = MemoryService(SqliteStore(tmp_path / "data" / "nahida.db"))
    (run,) = await memory.dreams.runs()
    memory.close()
    assert run.trigger == "command" and lines[-1] == summary(run, "zh")
    # rule extraction stored the preference as the turn came; the dream's add acted on that item
    assert run.applied == 1 and [p.fate for p in run.report] == ["superseded"]
    assert "更新 1" in lines[-1]
