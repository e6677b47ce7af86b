"""Implementations that reuse message ids (per-chat counters, a restart) lose no message: an event
is the same only when its chat, id and time are, and every drop is logged with its key.

Two messages with the same id in two chats, or in one chat at two times with two texts, are both
answered and stored, with their replies; so is a reply whose id a member's message had.
"""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from nahida.app import App
from tests.fakes.onebot_harness import running_adapter, running_app
from tests.fakes.onebot_impl import FakeOneBot, at, text
from tests.integration.test_onebot_app import reply_of, turns_of

BOT = 10001


def ws_url(app: App) -> str:
    return f"ws://127.0.0.1:{app.server.port}/onebot/v11/ws"


async def test_one_id_in_two_chats_is_two_messages_both_answered_and_stored(
    tmp_path: Path,
) -> None:
    async with running_app(tmp_path, {}) as app, FakeOneBot(BOT) as impl:
        sock = await impl.connect(ws_url(app))
        await sock.send(impl.group_message(20001, 30001, [at(BOT), text(" 一群")], message_id=7))
        await sock.send(impl.group_message(20002, 30002, [at(BOT), text(" 二群")], message_id=7))
        calls = await impl.wait_calls("send_group_msg", 2)
        assert sorted(reply_of(c)[2] for c in calls) == [
            "echo: user30001: 一群",
            "echo: user30002: 二群",
        ]
        for group, words in ((20001, "一群"), (20002, "二群")):
            turns = await turns_of(app, f"onebot:group:{group}", 2)
            assert [(role, content) for role, content, _ in turns] == [
                ("user", words),
                ("assistant", f"echo: user{group + 10000}: {words}"),
            ]


async def test_one_id_again_in_a_chat_at_another_time_is_a_new_message(tmp_path: Path) -> None:
    async with running_app(tmp_path, {}) as app, FakeOneBot(BOT) as impl:
        sock = await impl.connect(ws_url(app))
        before = impl.group_message(20001, 30001, [at(BOT), text(" 重启前")], message_id=7)
        after = impl.group_message(20001, 30001, [at(BOT), text(" 重启后")], message_id=7)
        before["time"] = after["time"] - 30  # the implementation restarted its counter since
        await sock.send(before)
        await impl.wait_calls("send_group_msg", 1)
        await sock.send(after)
        calls = await impl.wait_calls("send_group_msg", 2)
        assert [reply_of(c)[2] for c in calls] == [
            "echo: user30001: 重启前",
            "echo: user30001: 重启后",
        ]
        turns = await turns_of(app, "onebot:group:20001", 4)
        assert [(role, content) for role, content, _ in turns] == [
            ("user", "重启前"),
            ("assistant", "echo: user30001: 重启前"),
            ("user", "重启后"),
            ("assistant", "echo: user30001: 重启后"),
        ]


async def test_a_reply_is_stored_when_its_id_is_one_a_member_used(tmp_path: Path) -> None:
    async with running_app(tmp_path, {}) as app, FakeOneBot(BOT) as impl:
        sock = await impl.connect(ws_url(app))
        impl.script("send_group_msg", lambda params: {"message_id": 7})  # per-chat counters
        await sock.send(impl.group_message(20001, 30001, [at(BOT), text(" 你好")], message_id=7))
        await impl.wait_calls("send_group_msg", 1)
        turns = await turns_of(app, "onebot:group:20001", 2)
        assert [(role, content) for role, content, _ in turns] == [
            ("user", "你好"),
            ("assistant", "echo: user30001: 你好"),
        ]


async def test_the_same_event_twice_is_dropped_once_and_the_drop_is_logged_with_its_key() -> None:
    async with running_adapter() as bot, FakeOneBot(BOT) as impl:
        sock = await impl.connect(bot.ws_url)
        event = impl.group_message(20001, 30001, "一句话", message_id=7)
        with capture_logs() as logs:
            await sock.send(event)
            await sock.send(event)  # redelivered
            await sock.send(impl.group_message(20002, 30001, "另一群", message_id=7))
            first, other = await bot.next_envelope(), await bot.next_envelope()
        await bot.no_envelope()
    assert (first.text, other.text) == ("一句话", "另一群")
    assert bot.adapter.counters.duplicates == 1
    (dropped,) = [e for e in logs if e["event"] == "duplicate_event_dropped"]
    assert dropped["log_level"] == "info"
    assert all(part in dropped["key"] for part in ("20001", "7", str(event["time"])))
