"""Reverse WebSocket against a fake implementation over real sockets: handshake, actions,
addressing, roles, duplicates, malformed frames, the reconnect race and the heartbeat watchdog."""

from __future__ import annotations

import asyncio
import socket
import time
import types
from collections.abc import Awaitable, Callable

import aiohttp
import pytest
from structlog.testing import capture_logs

from nahida.adapters.onebot.api import ActionTimeoutError, ConnectionClosedError
from nahida.adapters.onebot.reverse import READ_BYTES, _read_small
from nahida.envelope import ChatKey, Reply, Role, UserKey
from nahida.errors import ActionFailedError
from tests.fakes.onebot_harness import running_adapter
from tests.fakes.onebot_impl import Async, Fail, FakeOneBot, Hang, at, image, reply, text

BOT = 10001
GROUP = ChatKey("onebot", "group", "20001")
TOKEN = "s3cret-token-value"
GUESS = "guessed-9876"


# -- handshake ----------------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["bearer", "token", "query"])
async def test_token_accepted_in_every_form(style: str) -> None:
    async with running_adapter(access_token=TOKEN) as bot, FakeOneBot(BOT) as impl:
        await impl.connect(bot.ws_url, token=TOKEN, token_style=style)  # type: ignore[arg-type]
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)


@pytest.mark.parametrize(
    ("token", "style", "status"),
    [(None, "bearer", 401), (GUESS, "bearer", 403), (GUESS, "token", 403), ("", "query", 401)],
)
async def test_bad_token_refused_before_upgrade_and_not_logged(
    token: str | None, style: str, status: int
) -> None:
    async with running_adapter(access_token=TOKEN) as bot, FakeOneBot(BOT) as impl:
        with capture_logs() as logs, pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await impl.connect(bot.ws_url, token=token, token_style=style)  # type: ignore[arg-type]
        assert refused.value.status == status
        assert bot.adapter.registry.accounts == []
        refusals = [e for e in logs if e["event"] == "onebot_refused"]
        assert len(refusals) == 1 and refusals[0]["status"] == status
        assert TOKEN not in repr(logs) and GUESS not in repr(logs)


async def test_missing_self_id_or_bad_role_is_refused() -> None:
    async with running_adapter() as bot, aiohttp.ClientSession() as session:
        for headers in ({}, {"X-Self-ID": "1", "X-Client-Role": "Overlord"}):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(bot.ws_url, headers=headers)
            assert refused.value.status == 400


# -- actions ------------------------------------------------------------------------------------


async def test_echo_round_trip_and_stray_answers_ignored() -> None:
    async with running_adapter() as bot, FakeOneBot(BOT) as impl:
        sock = await impl.connect(bot.ws_url)
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
        await sock.send_raw('{"status": "ok", "retcode": 0, "data": null, "echo": "nobody"}')
        results = await asyncio.gather(*(bot.adapter.call("get_login_info", {}) for _ in range(5)))
        assert all(r == {"user_id": BOT, "nickname": "FakeBot"} for r in results)
        echoes = [c.echo for c in impl.calls_of("get_login_info")]
        assert len(set(echoes)) == 5  # every call has its own echo
        assert bot.adapter.counters.unknown_echo == 1
        conn = bot.adapter.registry.api(str(BOT))
        assert conn is not None
        api = bot.adapter.api(conn)
        message = [{"type": "text", "data": {"text": "hi"}}]
        sent = await api.send_msg("group", "20001", message)
        (call,) = impl.calls_of("send_msg")
        assert call.params == {"message_type": "group", "group_id": 20001, "message": message}
        assert sent == str(impl.messages[sent]["message_id"])
        info = await api.get_msg(sent)
        assert info["sender"]["user_id"] == BOT


async def test_failed_async_and_timeout() -> None:
    async with running_adapter(api_timeout=0.3) as bot, FakeOneBot(BOT) as impl:
        await impl.connect(bot.ws_url)
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
        impl.script("send_group_msg", Fail(1200, "send failed", "群消息发送失败"))
        with pytest.raises(ActionFailedError) as failed:
            await bot.adapter.send(Reply.text(GROUP, "hi"))
        assert (failed.value.retcode, failed.value.msg, failed.value.wording) == (
            1200,
            "send failed",
            "群消息发送失败",
        )
        impl.script("set_group_ban", Async())
        assert await bot.adapter.call("set_group_ban", {"group_id": 1}) is None
        impl.script("get_group_info", Hang())
        started = time.monotonic()
        with pytest.raises(ActionTimeoutError):
            async with asyncio.timeout(10):  # the call's own timeout comes first
                await bot.adapter.call("get_group_info", {"group_id": 1})
        assert time.monotonic() - started > 0.25  # not before its timeout


async def test_pending_calls_all_fail_at_once_when_the_socket_closes() -> None:
    async with running_adapter(api_timeout=30) as bot, FakeOneBot(BOT) as impl:
        sock = await impl.connect(bot.ws_url)
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
        impl.script("get_group_info", Hang(), Hang(), Hang())
        calls = [
            asyncio.create_task(bot.adapter.call("get_group_info", {"group_id": n}))
            for n in range(3)
        ]
        await impl.wait_calls("get_group_info", 3)
        await sock.close()
        async with asyncio.timeout(10):  # far sooner than the calls' own timeout
            results = await asyncio.gather(*calls, return_exceptions=True)
        assert all(isinstance(r, ConnectionClosedError) and r.sent for r in results)


# -- messages over the wire ---------------------------------------------------------------------


@pytest.mark.parametrize("message_format", ["array", "string"])
async def test_group_message_becomes_an_envelope(message_format: str) -> None:
    async with running_adapter() as bot, FakeOneBot(BOT, message_format=message_format) as impl:  # type: ignore[arg-type]
        sock = await impl.connect(bot.ws_url)
        event = impl.group_message(
            20001,
            30001,
            [at(BOT), text(" 看 [这个] & that,ok"), image("https://img.test/a.jpg"), at(30002)],
            message_id=-1234,
            role="admin",
            card="明",
        )
        await sock.send(event)
        env = await bot.next_envelope()
        assert env.chat == GROUP and env.self_id == str(BOT)
        assert env.message_id == "-1234"
        assert env.sender.user == UserKey("onebot", "30001")
        assert env.sender.name == "明" and env.sender.role == Role.ADMIN
        assert env.to_me is True
        assert env.text == "看 [这个] & that,ok[image]@30002"
        assert env.mentions == ("onebot:10001", "onebot:30002")
        assert [s.type for s in env.segments] == ["text", "image", "mention"]
        assert env.segments[1].data["url"] == "https://img.test/a.jpg"
        assert env.raw is not None and env.raw["message_id"] == -1234
        assert impl.calls_of("get_group_member_info") == []  # the event had the role


async def test_a_frame_many_reads_long_arrives_whole() -> None:
    """The bot reads its sockets `READ_BYTES` at a time: a longer event comes in pieces."""
    long_text = "长" * (3 * READ_BYTES)  # 3 bytes each in UTF-8: nine reads or more
    async with running_adapter() as bot, FakeOneBot(BOT) as impl:
        sock = await impl.connect(bot.ws_url)
        await sock.send(impl.group_message(20001, 30001, [at(BOT), text(long_text)]))
        env = await bot.next_envelope()
        assert env.text == long_text


async def test_reads_are_made_small_only_where_the_transport_says_how_much() -> None:
    loop = asyncio.get_running_loop()
    left, right = socket.socketpair()
    transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, right)
    try:
        assert transport.max_size > READ_BYTES  # type: ignore[attr-defined]
        _read_small(transport)
        assert transport.max_size == READ_BYTES  # type: ignore[attr-defined]
    finally:
        transport.close()
        left.close()
    _read_small(None)  # no transport (a test client's request): nothing to do
    other = types.SimpleNamespace()
    _read_small(other)  # another event loop's transport: left as it is
    assert not hasattr(other, "max_size")


async def test_reply_to_the_bot_uses_sent_ids_then_get_msg() -> None:
    async with running_adapter(lookup_timeout=0.3) as bot, FakeOneBot(BOT) as impl:
        sock = await impl.connect(bot.ws_url)
        await sock.send(impl.group_message(20001, 30001, "hello"))
        await bot.next_envelope()
        sent = await bot.adapter.send(Reply.text(GROUP, "I am the bot"))
        assert sent is not None
        # 1. a reply to a message the bot sent: known without asking
        await sock.send(impl.group_message(20001, 30001, [reply(sent), at(BOT), text(" 为什么")]))
        env = await bot.next_envelope()
        assert env.to_me and env.reply_to == sent and env.text == "为什么"
        assert impl.calls_of("get_msg") == []
        # 2. a reply to someone else's message: asked with get_msg, their @ stripped
        theirs = impl.group_message(20001, 30002, "原话")
        await sock.send(theirs)
        await bot.next_envelope()
        quoted = [reply(theirs["message_id"]), at(30002), text(" 同意")]
        await sock.send(impl.group_message(20001, 30001, quoted))
        env = await bot.next_envelope()
        assert not env.to_me and env.text == "同意" and env.mentions == ()
        assert [c.params["message_id"] for c in impl.calls_of("get_msg")] == [theirs["message_id"]]
        # 3. get_msg fails, then hangs: the message is still handled
        impl.script("get_msg", Fail(100, "消息不存在"), Hang())
        for _ in range(2):
            await sock.send(impl.group_message(20001, 30001, [reply(424242), text("还在吗")]))
            env = await bot.next_envelope(within=2)
            assert env.reply_to == "424242" and env.text == "还在吗" and not env.to_me


async def test_private_message_and_nickname() -> None:
    async with running_adapter() as bot, FakeOneBot(BOT, message_format="string") as impl:
        sock = await impl.connect(bot.ws_url)
        await sock.send(impl.private_message(30001, "在吗"))
        await sock.send(impl.group_message(20001, 30001, "纳西妲，今天天气"))
        private = await bot.next_envelope()
        named = await bot.next_envelope()
        assert private.chat == ChatKey("onebot", "private", "30001") and private.to_me
        assert named.to_me and named.text == "今天天气"


async def test_role_looked_up_once_when_missing() -> None:
    async with running_adapter(lookup_timeout=0.3) as bot, FakeOneBot(BOT) as impl:
        impl.members[(20001, 30001)] = "owner"
        sock = await impl.connect(bot.ws_url)
        for _ in range(2):
            await sock.send(impl.group_message(20001, 30001, "hi", role=None))
        roles = [(await bot.next_envelope()).sender.role for _ in range(2)]
        assert roles == [Role.OWNER, Role.OWNER]
        assert len(impl.calls_of("get_group_member_info")) == 1
        # unknown member: the lookup fails, the sender is a member
        await sock.send(impl.group_message(20001, 30009, "hi", role=None))
        assert (await bot.next_envelope()).sender.role == Role.MEMBER
        # an admin change forgets the cached role
        impl.members[(20001, 30001)] = "member"
        await sock.send(impl.notice("group_admin", sub_type="unset", group_id=20001, user_id=30001))
        await sock.send(impl.group_message(20001, 30001, "hi", role=None))
        assert (await bot.next_envelope()).sender.role == Role.MEMBER


async def test_own_messages_duplicates_and_notices_make_no_envelope() -> None:
    async with running_adapter() as bot, FakeOneBot(BOT) as impl:
        sock = await impl.connect(bot.ws_url)
        own = impl.group_message(20001, BOT, "I said this")
        sent = {**impl.group_message(20001, 30001, "x"), "post_type": "message_sent"}
        msg = impl.group_message(20001, 30001, "once")
        poke = impl.notice("notify", sub_type="poke", group_id=20001, user_id=30001, target_id=BOT)
        recall = impl.notice("group_recall", group_id=20001, user_id=30001, message_id=5)
        for event in (own, sent, msg, msg, poke, poke, recall):
            await sock.send(event)
        env = await bot.next_envelope()
        assert env.text == "once"
        await bot.no_envelope()
        counters = bot.adapter.counters
        assert (counters.own_messages, counters.duplicates, counters.notices) == (2, 2, 2)


async def test_malformed_frames_are_dropped_and_the_connection_lives() -> None:
    async with running_adapter() as bot, FakeOneBot(BOT) as impl:
        sock = await impl.connect(bot.ws_url)
        with capture_logs() as logs:
            for frame in ("not json", "[1, 2]", '{"hello": 1}', '{"post_type": "message"}'):
                await sock.send_raw(frame)
            await sock.send(impl.group_message(20001, 30001, {"bad": "message"}))  # type: ignore[arg-type]
            await sock.send({**impl.group_message(20001, 30001, "still here"), "time": 10**20})
            env = await bot.next_envelope()
        assert env.text == "still here"
        assert abs(env.time.timestamp() - time.time()) < 60  # a nonsense time becomes now
        assert bot.adapter.counters.malformed == 5
        dropped = [e for e in logs if "dropped" in e["event"]]
        assert len(dropped) == 5
        assert not sock.ws.closed


# -- several sockets ----------------------------------------------------------------------------


async def test_split_api_and_event_sockets() -> None:
    async with running_adapter() as bot, FakeOneBot(BOT) as impl:
        events = await impl.connect(bot.ws_url, role="Event")
        api = await impl.connect(bot.ws_url, role="API")
        await events.send(impl.group_message(20001, 30001, [at(BOT), text("hi")]))
        env = await bot.next_envelope()
        await bot.adapter.send(Reply.text(env.chat, "answer", quote=env.message_id))
        (call,) = impl.calls_of("send_group_msg")
        assert call.via == api.label


async def test_several_accounts_on_one_server() -> None:
    async with (
        running_adapter() as bot,
        FakeOneBot(10001) as first,
        FakeOneBot(10002, message_format="string") as second,
    ):
        one = await first.connect(bot.ws_url)
        two = await second.connect(bot.ws_url)
        await one.send(first.group_message(1, 30001, "to one"))
        await two.send(second.group_message(2, 30001, "to two"))
        envs = {(await bot.next_envelope()).chat.id: None for _ in range(2)}
        assert set(envs) == {"1", "2"}
        await bot.adapter.send(Reply.text(ChatKey("onebot", "group", "2"), "via two"))
        await bot.adapter.send(Reply.text(ChatKey("onebot", "group", "1"), "via one"))
        assert [c.params["group_id"] for c in first.calls_of("send_group_msg")] == [1]
        assert [c.params["group_id"] for c in second.calls_of("send_group_msg")] == [2]
        assert bot.adapter.registry.accounts == ["10001", "10002"]


async def test_reconnect_race_new_socket_wins_and_old_cleanup_keeps_it() -> None:
    async with running_adapter(api_timeout=1) as bot, FakeOneBot(BOT) as impl:
        old = await impl.connect(bot.ws_url)
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
        first = bot.adapter.registry.api(str(BOT))
        old.freeze()  # half-open: the old socket no longer answers anything
        new = await impl.connect(bot.ws_url)
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not first)
        await bot.adapter.send(Reply.text(GROUP, "after reconnect"))
        assert [c.via for c in impl.calls_of("send_group_msg")] == [new.label]
        # the old socket finally goes away: its cleanup must not unregister the new one
        await old.ws.close()
        await bot.wait_for(lambda: len(bot.adapter.registry.live) == 1)
        assert bot.adapter.registry.api(str(BOT)) is not None
        await bot.adapter.send(Reply.text(GROUP, "still the new one"))
        assert [c.via for c in impl.calls_of("send_group_msg")] == [new.label, new.label]


async def test_reply_produced_while_disconnected_goes_to_the_next_socket() -> None:
    async with running_adapter(send_wait=3) as bot, FakeOneBot(BOT) as impl:
        first = await impl.connect(bot.ws_url)
        await first.send(impl.group_message(20001, 30001, "question"))
        env = await bot.next_envelope()
        await first.close()
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is None)
        sending = asyncio.create_task(bot.adapter.send(Reply.text(env.chat, "answer")))
        await asyncio.sleep(0.1)
        assert not sending.done()  # waiting for a socket
        second = await impl.connect(bot.ws_url)
        assert await sending is not None
        assert [c.via for c in impl.calls_of("send_group_msg")] == [second.label]


async def test_a_reply_that_never_left_a_dying_socket_is_sent_on_the_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with running_adapter(send_wait=3) as bot, FakeOneBot(BOT) as impl:
        await impl.connect(bot.ws_url)
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
        conn = bot.adapter.registry.api(str(BOT))
        assert conn is not None

        socket = conn.socket

        async def dies_while_writing(data: str, compress: int | None = None) -> None:
            await socket.close()  # the socket dies before the frame is written
            raise ConnectionResetError("Cannot write to closing transport")

        monkeypatch.setattr(socket, "send_str", dies_while_writing)
        sending = asyncio.create_task(bot.adapter.send(Reply.text(GROUP, "retry me")))
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is None)
        second = await impl.connect(bot.ws_url)
        assert await sending is not None
        calls = impl.calls_of("send_group_msg")
        assert [(c.via, c.params["message"][0]["data"]["text"]) for c in calls] == [
            (second.label, "retry me")
        ]


# -- heartbeat watchdog -------------------------------------------------------------------------


async def test_watchdog_closes_a_socket_whose_heartbeats_stop() -> None:
    async with running_adapter(ping_interval=0) as bot, FakeOneBot(BOT) as impl:
        sock = await impl.connect(bot.ws_url)
        sock.start_heartbeat(40, beats=3)
        started = time.monotonic()
        with capture_logs() as logs:
            await sock.wait_closed(within=10)
        elapsed = time.monotonic() - started
        assert elapsed >= 0.08 + 0.1  # 3 beats (~0.08 s) then 2.5 silent intervals
        assert any(e["event"] == "heartbeat_missed_closing" for e in logs)
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is None)


async def test_watchdog_tolerates_steady_or_absent_heartbeats() -> None:
    async with running_adapter(ping_interval=0) as bot, FakeOneBot(BOT) as impl:
        steady = await impl.connect(bot.ws_url)
        steady.start_heartbeat(40)
        silent = await impl.connect(bot.ws_url, self_id=10002)  # never sends a heartbeat
        await asyncio.sleep(0.5)
        assert not steady.ws.closed and not silent.ws.closed
        assert bot.adapter.registry.accounts == ["10001", "10002"]


# -- overload: backpressure, never loss -------------------------------------------------------


def stuck_bus() -> tuple[asyncio.Event, Callable[[object], Awaitable[None]]]:
    """A bus that takes nothing until the event is set (the adapter's inbound queue fills)."""
    stuck = asyncio.Event()

    async def slow_bus(envelope: object) -> None:
        await stuck.wait()

    return stuck, slow_bus


async def test_a_burst_beyond_queue_limit_is_all_delivered_in_order_with_lookups_inside() -> None:
    # The bus is stuck until every event is sent: the inbound queue passes queue_limit and the
    # reader pauses. Then, while the queue is still above the mark, parsing asks the
    # implementation for group roles on the same socket: the paused reader must read on to find
    # the answers (else each lookup would time out and the role would be lost).
    limit, groups, per_group = 8, 3, 40
    stuck, slow_bus = stuck_bus()
    async with (
        running_adapter(on_submit=slow_bus, queue_limit=limit, lookup_timeout=5) as bot,
        FakeOneBot(BOT) as impl,
    ):
        sock = await impl.connect(bot.ws_url)
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
        sent: dict[str, list[str]] = {}
        lookups: set[str] = set()
        for n in range(groups * per_group):
            group = 20001 + n % groups
            user = 30000 + n
            needs_lookup = n % 10 == 5  # no role in the event: the adapter asks
            if needs_lookup:
                impl.members[(group, user)] = "admin"
            event = impl.group_message(
                group, user, [at(BOT), text(f"m{n}")], role=None if needs_lookup else "member"
            )
            sent.setdefault(str(group), []).append(str(event["message_id"]))
            if needs_lookup:
                lookups.add(str(event["message_id"]))
            await sock.send(event)
        await bot.wait_for(lambda: bot.adapter.counters.pauses >= 1)
        await asyncio.sleep(0.1)  # the reader stays paused: the rest waits in the socket
        assert bot.adapter.inbound.qsize() > bot.adapter.inbound.low_water
        assert bot.adapter.counters.frames < groups * per_group
        stuck.set()
        got: dict[str, list[str]] = {}
        for _ in range(groups * per_group):
            envelope = await bot.next_envelope(within=10)
            got.setdefault(envelope.chat.id, []).append(envelope.message_id)
            if envelope.message_id in lookups:
                assert envelope.sender.role == Role.ADMIN, envelope.message_id
        await bot.no_envelope()
    assert got == sent  # all of them, in order per group
    assert len(impl.calls_of("get_group_member_info")) == len(lookups)
    assert bot.adapter.inbound.peak >= limit


async def test_a_pause_that_runs_out_reads_on_into_memory_and_keeps_the_socket() -> None:
    # The bus stays stuck longer than a pause may last (half the ping interval here): the
    # reader gives up holding the socket back, reads every frame into the queue and stays
    # connected; once the bus moves, every event arrives, in order.
    limit, total = 8, 60
    stuck, slow_bus = stuck_bus()
    async with (
        running_adapter(on_submit=slow_bus, queue_limit=limit, ping_interval=1) as bot,
        FakeOneBot(BOT) as impl,
    ):
        assert bot.adapter.inbound.max_pause == 0.5
        sock = await impl.connect(bot.ws_url)
        await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
        sent = []
        for n in range(total):
            event = impl.group_message(20001, 30001, [at(BOT), text(f"m{n}")], role="member")
            sent.append(str(event["message_id"]))
            await sock.send(event)
        await bot.wait_for(lambda: bot.adapter.counters.pauses >= 1)
        assert bot.adapter.counters.frames < total  # held back at first
        await bot.wait_for(lambda: bot.adapter.counters.frames >= total, within=5)
        assert not sock.ws.closed
        assert bot.adapter.inbound.qsize() > limit  # queued in memory, not dropped
        stuck.set()
        got = [(await bot.next_envelope(within=10)).message_id for _ in range(total)]
        await bot.no_envelope()
    assert got == sent
