"""A platform whose clock is off (NapCat on another host without NTP): the wait before an answer
is measured from when Nahida received the message, so a lagging event time gets answers, not
the "too many messages" apology; history still records the platform's event time."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from nahida.app import App
from nahida.i18n import t
from tests.fakes.lark_app import lark_config
from tests.fakes.lark_app import running_app as running_lark_app
from tests.fakes.lark_events import message_event
from tests.fakes.lark_server import FakeLarkServer
from tests.fakes.onebot_harness import onebot_of, running_app
from tests.fakes.onebot_impl import FakeOneBot, at, text

BOT = 10001
USER = 30001
LAG = 600  # seconds the implementation's clock is behind the bot's


def ws_url(app: App) -> str:
    return f"ws://127.0.0.1:{app.server.port}/onebot/v11/ws"


async def user_turn_times(app: App, chat: str) -> list[float]:
    return [
        turn.time.timestamp()
        for session in await app.memory.sessions.latest(chat, 10)
        for turn in await app.memory.sessions.turns(session.id)
        if turn.role == "user"
    ]


async def test_a_lagging_implementation_clock_gets_answers_and_history_keeps_its_time(
    tmp_path: Path,
) -> None:
    async with running_app(tmp_path, {}, max_reply_delay=60) as app, FakeOneBot(BOT) as impl:
        sock = await impl.connect(ws_url(app))
        private = impl.private_message(USER, "你好")
        group = impl.group_message(20001, USER, [at(BOT), text(" 在吗")])
        for event in (private, group):
            event["time"] -= LAG
            await sock.send(event)
        (answer,) = await impl.wait_calls("send_private_msg")
        (group_answer,) = await impl.wait_calls("send_group_msg")
        words = [answer.params["message"][0]["data"]["text"], group_answer.params["message"][-1]]
        assert words == [
            "echo: 你好",
            {"type": "text", "data": {"text": " echo: user30001: 在吗"}},
        ]
        assert await user_turn_times(app, f"onebot:private:{USER}") == [private["time"]]


async def test_a_message_received_long_ago_still_gets_the_apology(tmp_path: Path) -> None:
    # the adapter's arrival clock is the seam: the message arrived two minutes ago by it, and
    # its event time is fresh; its wait counts from arrival
    async with running_app(tmp_path, {}, max_reply_delay=60) as app, FakeOneBot(BOT) as impl:
        onebot_of(app).inbound.clock = lambda: time.time() - 120
        sock = await impl.connect(ws_url(app))
        await sock.send(impl.private_message(USER, "还在吗"))
        (answer,) = await impl.wait_calls("send_private_msg")
        apology = t("reply_too_late", "zh")
        assert answer.params["message"] == [{"type": "text", "data": {"text": apology}}]


async def test_lark_measures_the_wait_from_arrival_too(tmp_path: Path) -> None:
    async with FakeLarkServer() as lark, running_lark_app(tmp_path, lark_config(lark)) as bot:
        event = message_event("hello")
        sent_at = int(event["event"]["message"]["create_time"]) - LAG * 1000
        event["event"]["message"]["create_time"] = str(sent_at)
        await lark.push(event)
        [sent] = await lark.wait_messages(1)
        assert sent.content == {"text": "echo: hello"}
        (envelope,) = bot.envelopes
        assert envelope.time == datetime.fromtimestamp(sent_at / 1000, UTC)
        assert envelope.received > envelope.time
