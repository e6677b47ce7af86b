"""The runner's bound on model calls (`bus.concurrency`): at most that many answers wait on the
model at once, group talk that is only stored never waits for them, and a message that grew too old
waiting for a model call gets the apology (on virtual time)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from structlog.testing import capture_logs

from nahida.app import App, Paths
from nahida.clock import VirtualClock
from nahida.config import Config
from nahida.i18n import t
from nahida.providers.base import ChatRequest, ChatResponse
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.helpers import History, Recorder, envelope


class HeldModel(EchoProvider):
    """Answers once `go` is set; counts the calls in progress."""

    def __init__(self) -> None:
        super().__init__()
        self.go = asyncio.Event()
        self.now = 0
        self.peak = 0

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await self.go.wait()
            return await super().chat(request)
        finally:
            self.now -= 1


def make_app(tmp_path: Path, concurrency: int, **bot: object) -> tuple[App, Recorder, HeldModel]:
    recorder, model = Recorder(), HeldModel()
    router = ModelRouter({"echo": model}, resolve_routes({}, {"echo": "m"}))
    cfg = Config.model_validate({"bus": {"concurrency": concurrency}, "bot": bot})
    app = App(cfg, Paths(None, tmp_path / "d", tmp_path / "w"), adapters=[recorder], model=router)
    return app, recorder, model


def user_turns(app: App, chat: str) -> list[str]:
    history = History(app.memory.store)
    return [
        turn.content
        for session in history.sessions(chat, 5)
        for turn in history.turns(session.id)
        if turn.role == "user"
    ]


async def until(condition: Callable[[], bool]) -> None:
    while not condition():  # noqa: ASYNC110 - the bus and the fake model have no events
        await asyncio.sleep(0.005)


async def test_at_most_n_model_calls_at_once_while_observed_talk_keeps_flowing(
    tmp_path: Path,
) -> None:
    app, recorder, model = make_app(tmp_path, concurrency=2)
    askers = [f"test:group:asks{n}" for n in range(5)]
    chatter = [f"test:group:talk{n}" for n in range(8)]
    try:
        async with asyncio.timeout(30), asyncio.TaskGroup() as tg:
            tg.create_task(app.bus.run())
            for n, chat in enumerate(askers):
                assert await app.bus.submit(envelope(f"问题 {n}", chat=chat))
            for n, chat in enumerate(chatter):
                for k in range(3):
                    assert await app.bus.submit(envelope(f"闲聊 {n}.{k}", chat=chat, to_me=False))
            # every line of chatter is stored while two questions hold the model, three wait
            await until(lambda: app.bus.handled == 3 * len(chatter))
            await until(lambda: model.now == 2)
            for _ in range(50):
                await asyncio.sleep(0)
            assert model.now == 2 and recorder.sent == []
            model.go.set()
            await app.bus.shutdown()
        assert model.peak == 2  # never more, and the bound was used
        assert sorted(recorder.sent) == [f"echo: Alice: 问题 {n}" for n in range(5)]
        for n, chat in enumerate(chatter):
            assert user_turns(app, chat) == [f"闲聊 {n}.{k}" for k in range(3)]  # in order
    finally:
        app.memory.close()


async def test_a_chats_messages_keep_their_order_through_the_model_bound(tmp_path: Path) -> None:
    app, recorder, model = make_app(tmp_path, concurrency=1)
    model.go.set()
    try:
        async with asyncio.timeout(30), asyncio.TaskGroup() as tg:
            tg.create_task(app.bus.run())
            for k in range(4):
                for chat in ("a", "b"):
                    said = envelope(f"{chat}{k}", chat=f"test:group:{chat}", to_me=k % 2 == 0)
                    assert await app.bus.submit(said)
            await app.bus.shutdown()
        for chat in ("a", "b"):
            assert user_turns(app, f"test:group:{chat}") == [f"{chat}{k}" for k in range(4)]
            answers = [s for s in recorder.sent if s.startswith(f"echo: Alice: {chat}")]
            assert answers == [f"echo: Alice: {chat}0", f"echo: Alice: {chat}2"]
    finally:
        app.memory.close()


async def test_a_message_too_old_once_a_model_call_is_free_gets_the_apology(
    tmp_path: Path,
) -> None:
    app, recorder, model = make_app(tmp_path, concurrency=1, max_reply_delay=60)
    clock = VirtualClock(epoch=datetime.now(UTC).timestamp())
    app.runner.clock = clock
    now = datetime.fromtimestamp(clock.time(), UTC)
    try:
        async with asyncio.timeout(30), asyncio.TaskGroup() as tg:
            tg.create_task(app.bus.run())
            assert await app.bus.submit(envelope("第一", chat="test:group:a", received=now))
            assert await app.bus.submit(envelope("第二", chat="test:group:b", received=now))
            await until(lambda: model.now == 1)  # "第一" holds the one model call
            await clock.advance(59)
            assert model.now == 1 and recorder.sent == []
            await clock.advance(2)  # 61 s since both were received
            model.go.set()
            await app.bus.shutdown()
        assert recorder.sent == ["echo: Alice: 第一", t("reply_too_late", "zh")]
        assert model.calls == 1
        assert user_turns(app, "test:group:b") == ["第二"]  # stored as usual
    finally:
        app.memory.close()


async def test_a_message_still_in_time_once_a_model_call_is_free_is_answered(
    tmp_path: Path,
) -> None:
    app, recorder, model = make_app(tmp_path, concurrency=1, max_reply_delay=60)
    clock = VirtualClock(epoch=datetime.now(UTC).timestamp())
    app.runner.clock = clock
    now = datetime.fromtimestamp(clock.time(), UTC)
    try:
        async with asyncio.timeout(30), asyncio.TaskGroup() as tg:
            tg.create_task(app.bus.run())
            assert await app.bus.submit(envelope("第一", chat="test:group:a", received=now))
            assert await app.bus.submit(envelope("第二", chat="test:group:b", received=now))
            await until(lambda: model.now == 1)
            await clock.advance(59)
            model.go.set()
            await app.bus.shutdown()
        assert recorder.sent == ["echo: Alice: 第一", "echo: Alice: 第二"]
    finally:
        app.memory.close()


def test_observed_concurrency_is_still_accepted_and_warned_about(tmp_path: Path) -> None:
    cfg = Config.model_validate({"bus": {"observed_concurrency": 64}})
    with capture_logs() as logs:
        app = App(cfg, Paths(None, tmp_path / "d", tmp_path / "w"), adapters=[Recorder()])
    app.memory.close()
    ignored = [line for line in logs if line["event"] == "config_key_ignored"]
    assert [line["key"] for line in ignored] == ["bus.observed_concurrency"]
