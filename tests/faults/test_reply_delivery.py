"""Replies survive a dropped OneBot socket: what was in flight is sent again on the next socket,
once, and the store records a reply as delivered only when the implementation acknowledged it.

The fake implementation closes its socket the way a well-behaved one does: it answers every
action frame it processed, and the frames behind them were never processed. So no reply may be
lost and none sent twice. A reply that cannot be sent at all is kept as undelivered and shown by
`nahida doctor`.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

from nahida.app import App
from nahida.envelope import ChatKey, Reply
from nahida.memory import Delivery, MemoryService
from nahida.memory.store.sqlite import SqliteStore
from tests.fakes.llm_server import FakeOpenAIServer
from tests.fakes.onebot_harness import onebot_of, running_adapter, running_app
from tests.fakes.onebot_impl import Call, Fail, FakeOneBot, FakeSocket, at, text
from tests.integration.test_cli import nahida
from tests.integration.test_onebot_cli import (
    connect_when_up,
    free_port,
    run_config,
    start_run,
    stop_run,
)

BOT = 10001
GROUP = ChatKey("onebot", "group", "20001")
USERS = range(1000, 1120)  # 120 private chats, answered side by side


def ws_url(app: App) -> str:
    return f"ws://127.0.0.1:{app.server.port}/onebot/v11/ws"


def words(call: Call) -> str:
    return "".join(s["data"].get("text", "") for s in call.params["message"]).strip()


async def replies_in_flight(app: App, count: int) -> None:
    """Wait until `count` replies were written to the socket and await their answers."""
    adapter = onebot_of(app)
    async with asyncio.timeout(10):
        while (conn := adapter.registry.api(str(BOT))) is None or len(conn.results) < count:  # noqa: ASYNC110 - adapter state, no event
            await asyncio.sleep(0.005)


async def settled(app: App, count: int) -> dict[str, int]:
    """The store's count of messages by the fate of their reply, once `count` are settled."""
    async with asyncio.timeout(15):
        while True:
            counts = await app.memory.sessions.delivery_counts()
            if counts.get("delivered", 0) + counts.get("undelivered", 0) >= count:
                return counts
            await asyncio.sleep(0.01)


async def test_replies_in_flight_when_the_socket_drops_are_sent_once_on_the_next(
    tmp_path: Path,
) -> None:
    async with running_app(tmp_path, {"mode": "reverse_ws"}) as app, FakeOneBot(BOT) as impl:
        first = await impl.connect(ws_url(app))
        first.hold()
        for user in USERS:
            await first.send(impl.private_message(user, f"question {user}"))
        in_flight = app.config.bus.concurrency  # as many as are answered at once
        await replies_in_flight(app, in_flight)
        first.release(answer=6)  # 6 answered, then the socket closes with the others in flight
        await first.wait_closed()
        second = await impl.connect(ws_url(app))
        calls = await impl.wait_calls("send_private_msg", len(USERS), within=20)
        counts = await settled(app, len(USERS))
        calls = impl.calls_of("send_private_msg")  # any sent twice would be here by now
    per_user = Counter(c.params["user_id"] for c in calls)
    assert per_user == Counter(USERS)  # every message answered, exactly once
    assert {words(c) for c in calls} == {f"echo: question {u}" for u in USERS}
    assert Counter(c.via for c in calls) == {first.label: 6, second.label: len(USERS) - 6}
    assert counts == {"delivered": len(USERS)}


async def test_a_reply_that_cannot_be_sent_is_kept_undelivered_and_doctor_shows_it(
    tmp_path: Path,
) -> None:
    channel = {"mode": "reverse_ws", "send_wait": 0}  # no waiting for a socket that never comes
    async with running_app(tmp_path, channel) as app, FakeOneBot(BOT) as impl:
        sock: FakeSocket = await impl.connect(ws_url(app))
        sock.hold()
        await sock.send(impl.private_message(1001, "answered"))
        await replies_in_flight(app, 1)
        lost = impl.private_message(1002, "never answered")
        await sock.send(lost)
        await replies_in_flight(app, 2)
        sock.release(answer=1)
        counts = await settled(app, 2)
        undelivered = await app.memory.sessions.deliveries("undelivered")
    assert [words(c) for c in impl.calls_of("send_private_msg")] == ["echo: answered"]
    assert counts == {"delivered": 1, "undelivered": 1}
    (missed,) = undelivered
    assert isinstance(missed, Delivery)
    assert (missed.chat, missed.message_id) == ("onebot:private:1002", str(lost["message_id"]))
    assert missed.error is not None and "send_private_msg" in missed.error

    report = json.loads((await nahida(tmp_path, "doctor", "--json")).out)
    assert report["deliveries"]["undelivered"] == 1
    (latest,) = report["deliveries"]["latest"]
    assert latest["chat"] == "onebot:private:1002"
    assert latest["message_id"] == str(lost["message_id"])
    text = (await nahida(tmp_path, "doctor")).out
    assert "-- replies: 1 undelivered" in text
    assert "onebot:private:1002" in text


async def test_a_reply_the_implementation_refused_is_undelivered_and_not_sent_again(
    tmp_path: Path,
) -> None:
    async with running_app(tmp_path, {"mode": "reverse_ws"}) as app, FakeOneBot(BOT) as impl:
        sock = await impl.connect(ws_url(app))
        impl.script("send_private_msg", Fail(1200, "blocked", "对方已将你拉黑"))
        await sock.send(impl.private_message(1001, "hello"))
        counts = await settled(app, 1)
        (refused,) = await app.memory.sessions.deliveries("undelivered")
    assert len(impl.calls_of("send_private_msg")) == 1  # an answer is an answer: not again
    assert counts == {"undelivered": 1}
    assert refused.error is not None and "blocked" in refused.error


async def test_an_unanswered_reply_on_a_socket_since_replaced_goes_out_on_the_new_one() -> None:
    async with running_adapter(api_timeout=1, send_wait=3) as bot, FakeOneBot(BOT) as impl:
        old = await impl.connect(bot.ws_url)
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
        first = bot.adapter.registry.api(str(BOT))
        assert first is not None
        old.freeze()  # half-open: whatever reaches it now is never answered
        sending = asyncio.create_task(bot.adapter.send(Reply.text(GROUP, "are you there")))
        await bot.wait_for(lambda: len(first.results) == 1)  # written to the old socket
        new = await impl.connect(bot.ws_url)  # the implementation reconnected
        assert await sending is not None
        assert [c.via for c in impl.calls_of("send_group_msg")] == [new.label]
        assert bot.adapter.counters.resent == 1


async def test_after_kill_9_a_message_stored_but_never_answered_is_answered_once(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    port = free_port()
    url = f"ws://127.0.0.1:{port}/onebot/v11/ws"
    config = run_config(tmp_path, port, openai_server.url, "scheduler: {enabled: false}\n")
    yaml = config.read_text(encoding="utf-8")  # however long the restart, no apology for a wait
    config.write_text(
        yaml.replace("group_policy: mention", "group_policy: mention, max_reply_delay: 0")
    )
    async with FakeOneBot(BOT) as impl:
        answered = impl.group_message(20001, 30001, [at(BOT), text(" 第一问")])
        observed = impl.group_message(20001, 30002, "随便聊聊")  # stored for memory, no answer
        stored = impl.group_message(20001, 30001, [at(BOT), text(" 第二问")])
        process = await start_run(tmp_path, config)
        try:
            await connect_when_up(impl, url, process)
            sock = impl.sockets[-1]
            await sock.send(answered)
            await impl.wait_calls("send_group_msg", 1, within=15)
            openai_server.hang(600)  # the model never answers the next question
            await sock.send(observed)
            await sock.send(stored)
            async with asyncio.timeout(15):  # asked: the question is stored (a chat's order)
                while len(openai_server.chat_requests) < 2:  # noqa: ASYNC110 - no event exists
                    await asyncio.sleep(0.01)
        finally:
            process.kill()  # kill -9 mid-burst
            await process.wait()

    process = await start_run(tmp_path, config)
    try:
        async with FakeOneBot(BOT) as again:  # its counter starts over: ids come again
            await connect_when_up(again, url, process)
            sock = again.sockets[-1]
            for event in (answered, observed, stored):  # delivered again after the restart
                await sock.send(event)
            await again.wait_calls("send_group_msg", 1, within=15)
    finally:
        log = await stop_run(process)  # handles what it accepted before it stops
    assert process.returncode == 0, log[-2000:]
    quoted = [c.params["message"][0]["data"]["id"] for c in again.calls_of("send_group_msg")]
    assert quoted == [str(stored["message_id"])]  # answered once; the answered one was not

    memory = MemoryService(SqliteStore(tmp_path / "data" / "nahida.db"))
    try:
        (session,) = await memory.sessions.latest("onebot:group:20001")
        turns = [(t.role, t.content) for t in await memory.sessions.turns(session.id)]
        counts = await memory.sessions.delivery_counts()
    finally:
        memory.close()
    assert turns == [
        ("user", "第一问"),
        ("assistant", "echo: user30001: 第一问"),
        ("user", "随便聊聊"),
        ("user", "第二问"),
        ("assistant", "echo: user30001: 第二问"),
    ]
    assert counts == {"delivered": 2}
