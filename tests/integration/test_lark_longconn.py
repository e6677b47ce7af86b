"""End to end over the long connection: fake platform → lark-oapi ws.Client → App → fake API."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from nahida.adapters.lark import adapter as adapter_module
from nahida.adapters.lark.adapter import LarkAdapter
from nahida.adapters.lark.config import load
from nahida.adapters.lark.longconn import LongConnection
from nahida.envelope import Role
from nahida.errors import AdapterError
from tests.fakes.lark_app import lark_config, lark_threads, running_app, wait_until
from tests.fakes.lark_events import mention, message_event
from tests.fakes.lark_server import FakeLarkServer
from tests.helpers import History

BOT_MENTION = mention("@_user_1", "ou_bot", "Nahida")


def team(lark: FakeLarkServer) -> None:
    lark.chats["oc_team"] = {"owner_id": "ou_alice", "user_manager_id_list": ["ou_bob"]}
    lark.users |= {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol"}


async def test_private_message_is_answered_through_the_api(tmp_path: Path) -> None:
    async with FakeLarkServer() as lark, running_app(tmp_path, lark_config(lark)) as bot:
        lark.users["ou_alice"] = "Alice"
        ack = await lark.push(message_event("hello there", chat_type="p2p"))
        assert ack.code == 200
        [sent] = await lark.wait_messages(1)
    assert sent.path == "/open-apis/im/v1/messages"
    assert sent.query == {"receive_id_type": "open_id"}
    assert sent.body["receive_id"] == "ou_alice"
    assert sent.body["msg_type"] == "text"
    assert sent.content == {"text": "echo: hello there"}
    assert len(sent.body["uuid"]) == 32
    assert sent.token in {r.token for r in lark.messages}
    assert len(lark.calls("/bot/v3/info")) == 1
    [envelope] = bot.envelopes
    assert str(envelope.chat) == "lark:private:ou_alice"
    assert envelope.sender.name == "Alice" and envelope.to_me
    assert lark_threads() == []


async def test_group_mention_gets_a_quoted_reply_mentioning_the_asker(tmp_path: Path) -> None:
    async with FakeLarkServer() as lark, running_app(tmp_path, lark_config(lark)) as bot:
        team(lark)
        event = message_event(
            "@_user_1 what is @_user_2 doing",
            chat_type="group",
            chat_id="oc_team",
            sender="ou_bob",
            message_id="om_question",
            mentions=[BOT_MENTION, mention("@_user_2", "ou_carol", "Carol")],
        )
        await lark.push(event)
        [sent] = await lark.wait_messages(1)
    assert sent.path == "/open-apis/im/v1/messages/om_question/reply"
    text = sent.content["text"]
    assert text.startswith('<at user_id="ou_bob"></at> echo: ')
    assert text.endswith("what is @Carol doing")  # the bot's own mention is not shown to the model
    [envelope] = bot.envelopes
    assert envelope.to_me and envelope.sender.role is Role.ADMIN
    assert envelope.sender.name == "Bob"
    assert str(envelope.chat) == "lark:group:oc_team"


async def test_group_talk_without_a_mention_is_observed_not_answered(tmp_path: Path) -> None:
    async with FakeLarkServer() as lark, running_app(tmp_path, lark_config(lark)) as bot:
        team(lark)
        await lark.push(message_event("just chatting", chat_type="group", chat_id="oc_team"))
        await wait_until(lambda: bot.app.bus.handled == 1)
        # a reply to a message the bot sent counts as addressed to it
        await lark.push(
            message_event(
                "@_user_1 hi", chat_type="group", chat_id="oc_team", mentions=[BOT_MENTION]
            )
        )
        [answer] = await lark.wait_messages(1)
        sent_id = lark.sent_ids[0]
        await lark.push(
            message_event("and more?", chat_type="group", chat_id="oc_team", parent_id=sent_id)
        )
        await lark.wait_messages(2)
    assert answer.content["text"].endswith("echo: Alice: hi")  # group prompts name the speaker
    assert [e.to_me for e in bot.envelopes] == [False, True, True]
    assert bot.envelopes[0].sender.role is Role.OWNER
    with History(tmp_path / "data" / "nahida.db") as db:
        turns = db.turns(db.sessions(None, 1)[0].id)
    assert turns[0].content == "just chatting" and turns[0].speaker_name == "Alice"


async def test_duplicate_pushes_are_acknowledged_and_answered_once(tmp_path: Path) -> None:
    async with FakeLarkServer() as lark, running_app(tmp_path, lark_config(lark)) as bot:
        first = message_event("once", chat_type="p2p", event_id="ev_dup", message_id="om_dup")
        acks = [await lark.push(first) for _ in range(3)]  # Lark pushes again when unsure
        again = json.loads(json.dumps(first))
        again["header"]["event_id"] = "ev_other"  # same message under a new event id
        acks.append(await lark.push(again))
        await lark.push(message_event("twice", chat_type="p2p"))
        await lark.wait_messages(2)
        await wait_until(lambda: bot.app.bus.handled == 2)
    assert [a.code for a in acks] == [200, 200, 200, 200]
    texts = [m.content["text"] for m in lark.messages]
    assert texts == ["echo: once", "echo: twice"]
    assert bot.adapter.duplicates == 2
    assert bot.app.bus.dropped_duplicates == 1  # the bus catches the re-sent message id


async def test_reconnects_after_the_connection_drops(tmp_path: Path) -> None:
    async with FakeLarkServer() as lark, running_app(tmp_path, lark_config(lark)) as bot:
        await lark.push(message_event("before", chat_type="p2p"))
        await lark.wait_messages(1)
        await lark.drop_connections()
        await lark.wait_connected(count=2)
        await lark.push(message_event("after", chat_type="p2p"))
        await lark.wait_messages(2)
        assert bot.adapter.connection is not None
        await wait_until(
            lambda: bot.adapter.connection is not None and bot.adapter.connection.reconnects == 1
        )
    assert [m.content["text"] for m in lark.messages] == ["echo: before", "echo: after"]
    assert len(lark.calls("/callback/ws/endpoint")) == 2
    assert lark.connections == 2


async def test_stopping_closes_the_socket_and_ends_the_thread(tmp_path: Path) -> None:
    async with FakeLarkServer() as lark:
        async with running_app(tmp_path, lark_config(lark)):
            await lark.wait_connected()
            assert len(lark_threads()) == 1
        assert lark_threads() == []
        await wait_until(lambda: lark.open_connections == 0)


async def test_a_send_refused_with_code_not_zero_is_recorded_on_the_turn(tmp_path: Path) -> None:
    async with FakeLarkServer() as lark, running_app(tmp_path, lark_config(lark)) as bot:
        lark.fail_next(
            "/open-apis/im/v1/messages", 230013, msg="Bot has NO availability to this user"
        )
        await lark.push(message_event("hi", chat_type="p2p"))
        await wait_until(lambda: bot.app.bus.handled == 1)
    assert lark.delivered == [] and len(lark.messages) == 1
    with History(tmp_path / "data" / "nahida.db") as db:
        turns = db.turns(db.sessions(None, 1)[0].id)
    assert turns[-1].role == "assistant"
    assert turns[-1].error is not None and "230013" in turns[-1].error


async def test_wrong_credentials_stop_the_adapter_with_a_clear_error(tmp_path: Path) -> None:
    async with FakeLarkServer() as lark:
        adapter = LarkAdapter(
            load({"app_id": lark.app_id, "app_secret": "nope", "domain": lark.url})
        )
        with pytest.raises(AdapterError, match="refused the app credentials"):
            await asyncio.wait_for(adapter.run(_never_called), 5)
    assert lark.connections == 0 and lark_threads() == []


async def test_identity_is_retried_until_the_platform_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(adapter_module, "IDENTITY_RETRY", (0.01, 0.02))
    async with FakeLarkServer() as lark:
        lark.fail_next("/bot/v3/info", 1663, msg="bot ability not activated")
        lark.fail_next("/bot/v3/info", 1663, msg="bot ability not activated")
        async with running_app(tmp_path, lark_config(lark)) as bot:
            assert bot.adapter.identity is not None
            assert bot.adapter.identity.open_id == "ou_bot"
    assert len(lark.calls("/bot/v3/info")) == 3


async def _never_called(envelope: Any) -> bool:
    raise AssertionError("nothing should be submitted")


# -- the connection on its own ------------------------------------------------------------------


def connection(lark: FakeLarkServer, offer: Any, secret: str | None = None) -> LongConnection:
    return LongConnection(
        app_id=lark.app_id,
        app_secret=secret or lark.app_secret,
        domain=lark.url,
        offer=offer,
        event_types=["im.message.receive_v1"],
    )


async def test_a_full_inbox_is_not_acknowledged_so_lark_pushes_again() -> None:
    answers = iter([False, True])
    taken: list[dict[str, Any]] = []

    def offer(raw: dict[str, Any]) -> bool:
        taken.append(raw)
        return next(answers)

    async with FakeLarkServer() as lark:
        task = asyncio.create_task(connection(lark, offer).run())
        event = message_event("hi")
        refused = await lark.push(event)
        accepted = await lark.push(event)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert (refused.code, accepted.code) == (500, 200)
    assert [t["header"]["event_id"] for t in taken] == [event["header"]["event_id"]] * 2
    assert lark_threads() == []


async def test_wrong_credentials_end_the_connection_with_an_error() -> None:
    async with FakeLarkServer() as lark:
        with pytest.raises(AdapterError, match="invalid app credentials"):
            await asyncio.wait_for(connection(lark, lambda raw: True, "wrong").run(), 10)
    assert lark.connections == 0 and lark_threads() == []


@pytest.mark.parametrize("slow_endpoint", [False, True])
async def test_cancelling_while_still_connecting_leaves_nothing_behind(slow_endpoint: bool) -> None:
    async with FakeLarkServer() as lark:
        if slow_endpoint:
            lark.slow_down("/callback/ws/endpoint", 0.3)
        task = asyncio.create_task(connection(lark, lambda raw: True).run())
        await asyncio.sleep(0.1 if slow_endpoint else 0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        assert lark_threads() == []
        await wait_until(lambda: lark.open_connections == 0)
