"""End to end through App (config → adapter → bus → runner → SQLite → echo model → action):
one test per connection mode, and the group behaviour users see."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from nahida.app import App
from tests.fakes.onebot_harness import onebot_of, running_app
from tests.fakes.onebot_impl import Call, FakeOneBot, at, reply, text

BOT = 10001
TOKEN = "e2e-token"
SECRET = "e2e-secret"


def reply_of(call: Call) -> tuple[str | None, str | None, str]:
    """(quoted id, mentioned user, text) of a send action."""
    quote = mention = None
    words = []
    for seg in call.params["message"]:
        if seg["type"] == "reply":
            quote = seg["data"]["id"]
        elif seg["type"] == "at":
            mention = seg["data"]["qq"]
        elif seg["type"] == "text":
            words.append(seg["data"]["text"])
    return quote, mention, "".join(words).strip()


def ws_url(app: App) -> str:
    return f"ws://127.0.0.1:{app.server.port}/onebot/v11/ws"


def http_url(app: App) -> str:
    return f"http://127.0.0.1:{app.server.port}/onebot/v11/http"


async def turns_of(app: App, chat: str, count: int = 0) -> list[tuple[str, str, bool]]:
    """The chat's turns, once there are at least `count` (the reply is recorded after sending)."""
    async with asyncio.timeout(3):
        while True:
            out = []
            for session in await app.memory.sessions.latest(chat, 10):
                for turn in await app.memory.sessions.turns(session.id):
                    out.append((turn.role, turn.content, turn.addressed))
            if len(out) >= count:
                return out
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("message_format", ["array", "string"])
async def test_reverse_ws_universal(tmp_path: Path, message_format: Any) -> None:
    channel = {"mode": "reverse_ws", "access_token": TOKEN}
    async with (
        running_app(tmp_path, channel) as app,
        FakeOneBot(BOT, message_format=message_format) as impl,
    ):
        sock = await impl.connect(ws_url(app), token=TOKEN)
        event = impl.group_message(20001, 30001, [at(BOT), text(" 你好 & [hi]")])
        await sock.send(event)
        (call,) = await impl.wait_calls("send_group_msg")
        assert call.params["group_id"] == 20001
        assert reply_of(call) == (str(event["message_id"]), "30001", "echo: user30001: 你好 & [hi]")


async def test_reverse_ws_split_api_and_event(tmp_path: Path) -> None:
    async with running_app(tmp_path, {"mode": "reverse_ws"}) as app, FakeOneBot(BOT) as impl:
        events = await impl.connect(ws_url(app), role="Event")
        api = await impl.connect(ws_url(app), role="API")
        await events.send(impl.private_message(30001, "私聊"))
        (call,) = await impl.wait_calls("send_private_msg")
        assert call.via == api.label
        assert call.params["user_id"] == 30001
        assert reply_of(call) == (None, None, "echo: 私聊")


@pytest.mark.parametrize("split", [False, True])
async def test_forward_ws(tmp_path: Path, split: bool) -> None:
    async with FakeOneBot(BOT, access_token=TOKEN) as impl:
        base = await impl.serve_forward()
        urls = {"api_url": base + "api", "event_url": base + "event"} if split else {"url": base}
        channel = {"mode": "forward_ws", "access_token": TOKEN, **urls}
        async with running_app(tmp_path, channel):
            socks = await impl.wait_forward(2 if split else 1)
            events = next(s for s in socks if s.role != "API")
            event = impl.group_message(20001, 30001, [at(BOT), text(" forward")])
            await events.send(event)
            (call,) = await impl.wait_calls("send_group_msg")
            assert reply_of(call) == (str(event["message_id"]), "30001", "echo: user30001: forward")


async def test_http_post_and_http_api(tmp_path: Path) -> None:
    async with FakeOneBot(BOT, access_token=TOKEN) as impl:
        api = await impl.serve_http_api()
        channel = {"mode": "http", "url": api, "access_token": TOKEN, "secret": SECRET}
        async with running_app(tmp_path, channel) as app:
            event = impl.group_message(20001, 30001, "纳西妲，http 模式")
            assert await impl.post_event(http_url(app), event, secret=SECRET) == 204
            (call,) = await impl.wait_calls("send_group_msg")
            assert call.via == "http"
            assert reply_of(call) == (
                str(event["message_id"]),
                "30001",
                "echo: user30001: http 模式",
            )


async def test_group_policy_observes_then_answers(tmp_path: Path) -> None:
    async with running_app(tmp_path, {}) as app, FakeOneBot(BOT) as impl:
        sock = await impl.connect(ws_url(app))
        observed = impl.group_message(20001, 30001, "大家好，我是小明")
        own = impl.group_message(20001, BOT, "the bot's own words")
        asked = impl.group_message(20001, 30002, [at(BOT), text(" 他叫什么")])
        for event in (observed, own, observed, asked, asked):  # duplicates included
            await sock.send(event)
        (call,) = await impl.wait_calls("send_group_msg")
        # the model sees group lines as "name: text"; the echo model repeats that
        assert reply_of(call) == (str(asked["message_id"]), "30002", "echo: user30002: 他叫什么")
        turns = await turns_of(app, "onebot:group:20001", 3)
        assert turns == [
            ("user", "大家好，我是小明", False),  # stored for memory, not answered
            ("user", "他叫什么", True),
            ("assistant", "echo: user30002: 他叫什么", True),
        ]
        assert onebot_of(app).counters.own_messages == 1


async def test_reply_to_the_bot_is_answered(tmp_path: Path) -> None:
    async with running_app(tmp_path, {}) as app, FakeOneBot(BOT) as impl:
        sock = await impl.connect(ws_url(app))
        await sock.send(impl.group_message(20001, 30001, [at(BOT), text("第一句")]))
        (first,) = await impl.wait_calls("send_group_msg")
        bot_message = impl.messages[max(impl.messages, key=int)]["message_id"]
        follow_up = [reply(bot_message), at(BOT), text(" 第二句")]
        await sock.send(impl.group_message(20001, 30001, follow_up))
        calls = await impl.wait_calls("send_group_msg", 2)
        assert reply_of(calls[1])[2] == "echo: user30001: 第二句"
        assert impl.calls_of("get_msg") == []  # the bot knew its own message id
        assert first.params["group_id"] == 20001


async def test_per_chat_policy_overrides(tmp_path: Path) -> None:
    overrides = {
        "onebot:group:1": {"policy": "never"},
        "onebot:group:2": {"policy": "keyword", "keywords": ["天气"]},
        "onebot:group:3": {"policy": "always"},
    }
    async with (
        running_app(tmp_path, {}, group_overrides=overrides) as app,
        FakeOneBot(BOT) as impl,
    ):
        sock = await impl.connect(ws_url(app))
        await sock.send(impl.group_message(1, 30001, [at(BOT), text(" 在吗")]))
        await sock.send(impl.group_message(2, 30001, "今天天气怎么样"))
        await sock.send(impl.group_message(2, 30001, "随便聊聊"))
        await sock.send(impl.group_message(3, 30001, "随便聊聊"))
        calls = await impl.wait_calls("send_group_msg", 2)
        assert sorted(c.params["group_id"] for c in calls) == [2, 3]
        assert [t[2] for t in await turns_of(app, "onebot:group:1")] == [False]
