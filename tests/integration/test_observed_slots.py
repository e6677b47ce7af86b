"""`bus.observed_concurrency`: group talk not addressed to the bot needs no model call, so it does
not wait for the slots of messages that do (a busy bot still stores the chatter around it)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nahida.app import App, Paths
from nahida.config import Config
from nahida.providers.base import ChatRequest, ChatResponse
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.helpers import History, Recorder, envelope


class HeldModel(EchoProvider):
    """Answers once `go` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.go = asyncio.Event()

    async def chat(self, request: ChatRequest) -> ChatResponse:
        await self.go.wait()
        return await super().chat(request)


def user_turns(app: App, chat: str) -> list[str]:
    history = History(app.memory.store)
    return [
        turn.content
        for session in history.sessions(chat, 5)
        for turn in history.turns(session.id)
        if turn.role == "user"
    ]


@pytest.mark.parametrize("observed_slots", [4, 0])
async def test_chatter_is_stored_while_the_only_slot_waits_for_the_model(
    tmp_path: Path, observed_slots: int
) -> None:
    recorder, model = Recorder(), HeldModel()
    router = ModelRouter({"echo": model}, resolve_routes({}, {"echo": "m"}))
    cfg = Config.model_validate({"bus": {"concurrency": 1, "observed_concurrency": observed_slots}})
    app = App(cfg, Paths(None, tmp_path / "d", tmp_path / "w"), adapters=[recorder], model=router)
    chatter = [f"test:group:g{n}" for n in range(3)]
    try:
        async with asyncio.timeout(20), asyncio.TaskGroup() as tg:
            tg.create_task(app.bus.run())
            assert await app.bus.submit(envelope("你好", chat="test:group:asks", to_me=True))
            for n, chat in enumerate(chatter):
                assert await app.bus.submit(envelope(f"闲聊 {n}", chat=chat, to_me=False))
            if observed_slots:  # stored while the question's model call still waits
                while app.bus.handled < len(chatter):  # noqa: ASYNC110 - the bus has no event
                    await asyncio.sleep(0.01)
            else:  # the chatter waits behind the question for the one slot
                await asyncio.sleep(0.5)
                assert app.bus.handled == 0
            assert recorder.sent == []
            model.go.set()
            await app.bus.shutdown()
        for n, chat in enumerate(chatter):
            assert user_turns(app, chat) == [f"闲聊 {n}"]
        assert recorder.sent == ["echo: Alice: 你好"]
    finally:
        app.memory.close()
