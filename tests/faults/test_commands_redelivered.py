"""A command delivered again after a restart runs once: commands are not history, so the store
keeps which command messages were answered (their reply acknowledged)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from nahida.app import App, Paths
from nahida.config import Config
from nahida.envelope import Reply
from nahida.memory import Viewer
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.helpers import envelope

GROUP = "test:group:g1"
AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


class Channel:
    """Keeps what the bot sends; `refuse` makes the next sends fail (the platform said no)."""

    platform = "test"

    def __init__(self) -> None:
        self.sent: list[Reply] = []
        self.refuse = False

    def mount(self, server: object) -> None:
        return None

    async def run(self, submit: object) -> None:
        return None

    async def send(self, reply: Reply) -> str | None:
        if self.refuse:
            raise ConnectionError("the platform refused it")
        self.sent.append(reply)
        return None


def started(tmp_path: Path, channel: Channel) -> App:
    """The bot as it starts again on the same data: nothing of the last run in memory."""
    model = ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "m"}))
    paths = Paths(None, tmp_path / "data", tmp_path / "ws")
    return App(Config(), paths, adapters=[channel], model=model)


async def test_a_command_delivered_again_after_a_restart_runs_once(tmp_path: Path) -> None:
    remember = envelope("/memory remember 周五交周报", chat=GROUP, message_id="7", time=AT)
    channel = Channel()
    bot = started(tmp_path, channel)
    try:
        await bot.runner.handle(remember)
    finally:
        bot.memory.close()
    assert len(channel.sent) == 1
    bot = started(tmp_path, channel)  # restarted; the implementation delivers it again
    try:
        await bot.runner.handle(remember)
        assert len(channel.sent) == 1  # not answered twice
        later = replace(remember, time=AT + timedelta(minutes=5))
        await bot.runner.handle(later)  # the id used again, five minutes on: another message
        assert len(channel.sent) == 2
        viewer = Viewer(remember.chat, remember.sender.user)
        assert [i.content for i in await bot.memory.items.latest(viewer)] == ["周五交周报"]
    finally:
        bot.memory.close()


async def test_a_command_whose_answer_did_not_go_out_runs_when_delivered_again(
    tmp_path: Path,
) -> None:
    help_ = envelope("/help", chat=GROUP, message_id="8", time=AT)
    channel = Channel()
    channel.refuse = True
    bot = started(tmp_path, channel)
    try:
        await bot.runner.handle(help_)
    finally:
        bot.memory.close()
    assert channel.sent == []
    channel.refuse = False
    bot = started(tmp_path, channel)
    try:
        await bot.runner.handle(help_)
    finally:
        bot.memory.close()
    assert len(channel.sent) == 1 and "/memory" in channel.sent[0].plain_text
