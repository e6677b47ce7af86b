"""Forward WebSocket (we connect, and reconnect) and HTTP POST events with the HTTP API."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from nahida.envelope import ChatKey, Reply
from nahida.errors import ActionFailedError
from tests.fakes.onebot_harness import running_adapter
from tests.fakes.onebot_impl import Fail, FakeOneBot, at, text

BOT = 10001
TOKEN = "forward-token-abc"
SECRET = "post-secret-xyz"


# -- forward WebSocket --------------------------------------------------------------------------


async def test_forward_connects_learns_its_account_and_answers() -> None:
    async with FakeOneBot(BOT, access_token=TOKEN) as impl:
        url = await impl.serve_forward()
        async with running_adapter(mode="forward_ws", url=url, access_token=TOKEN) as bot:
            (sock,) = await impl.wait_forward()
            await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
            # how it learned which account this is (the lifecycle event may register it first)
            await impl.wait_calls("get_login_info")
            await sock.send(impl.group_message(20001, 30001, [at(BOT), text(" hi")]))
            env = await bot.next_envelope()
            assert env.to_me and env.text == "hi"
            await bot.adapter.send(Reply.text(env.chat, "hello", quote=env.message_id))
            (call,) = impl.calls_of("send_group_msg")
            assert call.via == sock.label
            assert call.params["message"][0] == {"type": "reply", "data": {"id": env.message_id}}


async def test_forward_reconnects_after_the_implementation_drops_it() -> None:
    async with FakeOneBot(BOT) as impl:
        url = await impl.serve_forward()
        async with running_adapter(mode="forward_ws", url=url, reconnect_min=0.05) as bot:
            (first,) = await impl.wait_forward()
            await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
            await first.ws.close()  # the implementation restarts
            await bot.wait_for(lambda: len(impl.sockets) == 2, within=3)
            (second,) = await impl.wait_forward()
            await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
            await bot.adapter.send(Reply.text(ChatKey("onebot", "private", "30001"), "back"))
            assert [c.via for c in impl.calls_of("send_private_msg")] == [second.label]


async def test_forward_wrong_token_backs_off_without_logging_it() -> None:
    async with FakeOneBot(BOT, access_token=TOKEN) as impl:
        url = await impl.serve_forward()
        with capture_logs() as logs:
            async with running_adapter(
                mode="forward_ws", url=url, access_token="not-the-token", reconnect_min=0.05
            ):
                await asyncio.sleep(0.5)
        refused = [e for e in logs if e["event"] == "forward_refused"]
        # 0.05, 0.1, 0.2 s waits (±20%): three or four attempts in half a second, not dozens
        assert 2 <= len(refused) <= 5
        assert all(e["status"] == 401 for e in refused)
        waits = [e["in_seconds"] for e in logs if e["event"] == "forward_reconnecting"]
        assert waits == sorted(waits)  # backing off
        assert "not-the-token" not in repr(logs)


async def test_forward_split_api_and_event_sockets() -> None:
    async with FakeOneBot(BOT) as impl:
        base = await impl.serve_forward()
        settings = {"mode": "forward_ws", "api_url": base + "api", "event_url": base + "event"}
        async with running_adapter(**settings) as bot:
            socks = await impl.wait_forward(2)
            event_sock = next(s for s in socks if s.role == "Event")
            api_sock = next(s for s in socks if s.role == "API")
            await event_sock.send(impl.private_message(30001, "hi"))
            env = await bot.next_envelope()
            await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
            await bot.adapter.send(Reply.text(env.chat, "yo"))
            assert [c.via for c in impl.calls_of("send_private_msg")] == [api_sock.label]


# -- HTTP POST events and the HTTP API ----------------------------------------------------------


async def test_http_post_signature_checked() -> None:
    async with FakeOneBot(BOT) as impl:
        api = await impl.serve_http_api()
        async with running_adapter(mode="http", url=api, secret=SECRET) as bot:
            event = impl.private_message(30001, "signed")
            assert await impl.post_event(bot.http_url, event) == 401
            assert await impl.post_event(bot.http_url, event, signature="sha1=00") == 403
            assert await impl.post_event(bot.http_url, event, secret="other") == 403
            await bot.no_envelope(0.05)
            assert await impl.post_event(bot.http_url, event, secret=SECRET) == 204
            env = await bot.next_envelope()
            assert env.text == "signed"
            status = await impl.post_event(bot.http_url, {}, secret=SECRET, body=b"{oops")
            assert status == 400


async def test_http_post_token_when_no_secret() -> None:
    async with FakeOneBot(BOT) as impl:
        api = await impl.serve_http_api()
        async with running_adapter(mode="http", url=api, access_token=TOKEN) as bot:
            event = impl.private_message(30001, "hi")
            assert await impl.post_event(bot.http_url, event) == 401
            assert await impl.post_event(bot.http_url, event, token="nope") == 403
            assert await impl.post_event(bot.http_url, event, token=TOKEN) == 204
            assert (await bot.next_envelope()).text == "hi"


async def test_http_api_sends_with_token_and_reports_failures() -> None:
    async with FakeOneBot(BOT, access_token=TOKEN) as impl:
        api = await impl.serve_http_api()
        async with running_adapter(mode="http", url=api, access_token=TOKEN) as bot:
            await impl.post_event(bot.http_url, impl.group_message(20001, 30001, "hi"), token=TOKEN)
            env = await bot.next_envelope()
            assert await bot.adapter.send(Reply.text(env.chat, "via http")) is not None
            (call,) = impl.calls_of("send_group_msg")
            assert call.via == "http" and call.params["group_id"] == 20001
            impl.script("send_group_msg", Fail(100, "bad", "发送失败"))
            with pytest.raises(ActionFailedError) as failed:
                await bot.adapter.send(Reply.text(env.chat, "again"))
            assert failed.value.retcode == 100 and failed.value.wording == "发送失败"
        async with running_adapter(mode="http", url=api, access_token="wrong") as bot:
            with pytest.raises(Exception, match="refused the access token"):
                await bot.adapter.call("get_login_info", {})
