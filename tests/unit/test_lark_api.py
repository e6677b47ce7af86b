"""The open-platform client against the fake platform: token cache, `code != 0`, retries, limits."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest

from nahida.adapters.lark.adapter import LarkAdapter
from nahida.adapters.lark.api import LarkApi
from nahida.adapters.lark.config import load
from nahida.adapters.lark.directory import Directory
from nahida.adapters.lark.limiter import SendLimiter
from nahida.adapters.lark.message import Mention, Outgoing
from nahida.clock import VirtualClock
from nahida.envelope import ChatKey, Reply, Role, UserKey
from nahida.errors import ActionFailedError, AdapterError
from tests.fakes.lark_server import INVALID_TOKEN, FakeLarkServer

HELLO = Outgoing.of("text", {"text": "hello"})
GROUP = ChatKey("lark", "group", "oc_team")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def lark() -> AsyncIterator[FakeLarkServer]:
    async with FakeLarkServer() as server:
        yield server


@pytest.fixture
async def api(lark: FakeLarkServer) -> AsyncIterator[LarkApi]:
    client = LarkApi(lark.url, lark.app_id, lark.app_secret, backoff=0.01)
    yield client
    await client.aclose()


async def test_token_is_fetched_once_and_sent_as_bearer(lark: FakeLarkServer, api: LarkApi) -> None:
    first = await api.send("chat_id", "oc_1", HELLO, "u-1")
    await api.reply("om_1", HELLO, "u-2")
    assert first.startswith("om_sent_")
    [token_request] = lark.calls("tenant_access_token")
    assert token_request.body == {"app_id": "cli_test", "app_secret": "app-secret"}
    create, reply = lark.messages
    assert create.token == reply.token != ""
    assert create.query == {"receive_id_type": "chat_id"}
    assert create.body == {
        "receive_id": "oc_1",
        "msg_type": "text",
        "content": '{"text": "hello"}',
        "uuid": "u-1",
    }
    assert reply.path == "/open-apis/im/v1/messages/om_1/reply"
    assert reply.body == {"msg_type": "text", "content": '{"text": "hello"}', "uuid": "u-2"}


async def test_token_is_refreshed_shortly_before_it_expires(lark: FakeLarkServer) -> None:
    clock = Clock()
    api = LarkApi(lark.url, lark.app_id, lark.app_secret, clock=clock)
    try:
        await api.send("chat_id", "oc_1", HELLO, "u-1")
        clock.now += 7200 - 301  # still more than five minutes left
        await api.send("chat_id", "oc_1", HELLO, "u-2")
        assert len(lark.calls("tenant_access_token")) == 1
        clock.now += 2  # now less than five minutes left: fetch before using it
        await api.send("chat_id", "oc_1", HELLO, "u-3")
    finally:
        await api.aclose()
    assert len(lark.calls("tenant_access_token")) == 2
    tokens = [m.token for m in lark.messages]
    assert tokens[0] == tokens[1] != tokens[2]
    assert len(lark.messages) == 3  # no request went out with the old token


async def test_refused_token_is_replaced_and_the_send_retried_with_the_same_uuid(
    lark: FakeLarkServer, api: LarkApi
) -> None:
    await api.send("chat_id", "oc_1", HELLO, "u-1")
    lark.revoke_tokens()  # e.g. expired early on the platform's side
    message_id = await api.send("chat_id", "oc_1", HELLO, "u-2")
    refused, retried = lark.messages[1:]
    assert refused.body["uuid"] == retried.body["uuid"] == "u-2"
    assert refused.token != retried.token
    assert len(lark.calls("tenant_access_token")) == 2
    assert [d.body["uuid"] for d in lark.delivered] == ["u-1", "u-2"]
    assert message_id.startswith("om_sent_")


async def test_a_token_refused_twice_is_an_error(lark: FakeLarkServer, api: LarkApi) -> None:
    await api.bot_info()
    lark.revoke_tokens()
    lark.fail_next("/messages", INVALID_TOKEN)  # the fresh token "fails" too
    with pytest.raises(ActionFailedError) as caught:
        await api.send("chat_id", "oc_1", HELLO, "u-1")
    assert caught.value.retcode == INVALID_TOKEN


async def test_code_not_zero_with_http_200_is_an_error_and_not_retried(
    lark: FakeLarkServer, api: LarkApi
) -> None:
    lark.fail_next("/messages", 230002, msg="Bot is not in the chat")
    with pytest.raises(ActionFailedError) as caught:
        await api.send("chat_id", "oc_gone", HELLO, "u-1")
    assert caught.value.retcode == 230002
    assert "Bot is not in the chat" in str(caught.value)
    assert caught.value.action == "send_message"
    assert len(lark.messages) == 1 and lark.delivered == []


@pytest.mark.parametrize(("code", "status"), [(99991400, 200), (1, 500), (0, 429)])
async def test_rate_limits_and_server_errors_are_retried_with_the_same_uuid(
    lark: FakeLarkServer, api: LarkApi, code: int, status: int
) -> None:
    lark.fail_next("/reply", code, status=status)
    assert (await api.reply("om_1", HELLO, "u-7")).startswith("om_sent_")
    assert [m.body["uuid"] for m in lark.messages] == ["u-7", "u-7"]
    assert len(lark.delivered) == 1


async def test_bad_credentials_fail_at_the_token(lark: FakeLarkServer) -> None:
    api = LarkApi(lark.url, lark.app_id, "wrong-secret")
    try:
        with pytest.raises(ActionFailedError) as caught:
            await api.bot_info()
    finally:
        await api.aclose()
    assert caught.value.action == "tenant_access_token" and caught.value.retcode == 10014
    assert lark.calls("/bot/") == []


async def test_connection_refused_is_an_adapter_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api = LarkApi(f"http://127.0.0.1:{port}", "cli", "secret", retries=1, backoff=0.01)
    try:
        with pytest.raises(AdapterError, match="tenant_access_token failed"):
            await api.bot_info()
    finally:
        await api.aclose()


async def test_bot_info(lark: FakeLarkServer, api: LarkApi) -> None:
    bot = await api.bot_info()
    assert bot["open_id"] == "ou_bot" and bot["app_name"] == "Nahida"


# -- send limit ---------------------------------------------------------------------------------


async def test_limiter_lets_five_per_period_into_one_chat() -> None:
    clock = VirtualClock()
    limiter = SendLimiter(rate=5, period=0.2, clock=clock)
    times: list[float] = []

    async def send(n: int) -> None:
        for _ in range(n):
            await limiter.acquire("lark:group:a")
            times.append(clock.monotonic())

    sending = asyncio.create_task(send(11))
    await clock.advance(1.0)
    await sending
    # five at once, five more when the first five leave the window, then the eleventh
    assert times == pytest.approx([0.0] * 5 + [0.2] * 5 + [0.4])
    other = asyncio.create_task(limiter.acquire("lark:group:b"))
    await clock.advance(0)
    assert other.done()  # another chat does not wait


async def test_limiter_forgets_quiet_chats() -> None:
    clock = VirtualClock()
    limiter = SendLimiter(rate=5, period=1.0, clock=clock)
    for n in range(100):
        await limiter.acquire(f"chat-{n}")
    assert len(limiter) == 100
    clock.now += 1.5
    await limiter.acquire("chat-new")
    assert len(limiter) == 1


async def test_concurrent_senders_do_not_overshoot() -> None:
    clock = VirtualClock()
    limiter = SendLimiter(rate=5, period=0.2, clock=clock)
    done: list[float] = []

    async def send() -> None:
        await limiter.acquire("lark:group:a")
        done.append(clock.monotonic())

    senders = asyncio.gather(*(send() for _ in range(10)))
    await clock.advance(0.1)
    assert done == [0.0] * 5
    await clock.advance(0.1)
    await senders
    assert done == pytest.approx([0.0] * 5 + [0.2] * 5)


# -- directory ----------------------------------------------------------------------------------


async def test_roles_come_from_the_chat_and_are_cached(lark: FakeLarkServer, api: LarkApi) -> None:
    lark.chats["oc_1"] = {"owner_id": "ou_o", "user_manager_id_list": ["ou_m"], "name": "team"}
    directory = Directory(api)
    roles = [await directory.role("oc_1", who) for who in ("ou_o", "ou_m", "ou_x")]
    assert roles == [Role.OWNER, Role.ADMIN, Role.MEMBER]
    [lookup] = lark.calls("/chats/")
    assert lookup.query == {"user_id_type": "open_id"}


async def test_a_failed_role_lookup_means_member_and_is_not_repeated(
    lark: FakeLarkServer, api: LarkApi
) -> None:
    directory = Directory(api)
    assert await directory.role("oc_unknown", "ou_a") is Role.MEMBER
    assert await directory.role("oc_unknown", "ou_b") is Role.MEMBER
    assert len(lark.calls("/chats/")) == 1


async def test_names_from_contacts_or_mentions_cached_until_the_ttl(
    lark: FakeLarkServer, api: LarkApi
) -> None:
    clock = VirtualClock()
    lark.users["ou_a"] = "Alice"
    directory = Directory(api, ttl=60, clock=clock)
    assert await directory.name("ou_a") == "Alice"
    assert await directory.name("ou_a") == "Alice"
    assert await directory.name("ou_hidden") == ""  # no permission: no name, no error
    directory.learn([Mention("@_user_1", "ou_b", "Bob")])
    assert await directory.name("ou_b") == "Bob"
    assert len(lark.calls("/contact/")) == 2
    clock.now += 61
    lark.users["ou_a"] = "Alice Liddell"
    assert await directory.name("ou_a") == "Alice Liddell"


async def test_a_slow_lookup_gives_up_quickly_and_is_not_retried_at_once(
    lark: FakeLarkServer, api: LarkApi
) -> None:
    lark.slow_down("/chats/", 0.5)
    clock = VirtualClock()
    directory = Directory(api, timeout=0.05, clock=clock)
    first = asyncio.create_task(directory.role("oc_slow", "ou_a"))
    await clock.advance(0.04)
    assert not first.done()  # waits for the platform up to its timeout
    await clock.advance(0.01)
    assert await first is Role.MEMBER  # gave up at the timeout, not at the slow answer
    again = asyncio.create_task(directory.role("oc_slow", "ou_a"))
    await clock.advance(0)
    assert again.done() and again.result() is Role.MEMBER  # the failure was cached
    assert len(lark.calls("/chats/")) == 1


# -- the adapter's send ---------------------------------------------------------------------------


async def test_a_long_group_reply_is_split_quoted_paced_and_mentions_once(
    lark: FakeLarkServer,
) -> None:
    adapter = LarkAdapter(
        load({"app_id": lark.app_id, "app_secret": lark.app_secret, "domain": lark.url})
    )
    clock = VirtualClock()
    adapter.limiter = SendLimiter(rate=2, period=0.2, clock=clock)
    text = "\n\n".join(f"paragraph {i}: " + "words " * 100 for i in range(12))
    reply = Reply.text(GROUP, text, quote="om_q", mention=UserKey("lark", "ou_alice"))

    async def sending() -> str:
        first = await adapter.send(reply)
        await adapter.send(Reply.text(ChatKey("lark", "private", "ou_bob"), "hi"))
        return first

    try:
        first = await clock.run(sending())
    finally:
        await adapter.api.aclose()
    *group, private = lark.delivered
    assert len(group) >= 3
    assert {m.path for m in group} == {"/open-apis/im/v1/messages/om_q/reply"}
    texts = [m.content["text"] for m in group]
    assert texts[0].startswith('<at user_id="ou_alice"></at> paragraph 0')
    assert not any("<at" in t for t in texts[1:])
    assert len({m.body["uuid"] for m in group}) == len(group)
    assert first == lark.sent_ids[0]
    assert clock.monotonic() == pytest.approx(0.2 * ((len(group) - 1) // 2))  # two per 0.2 s
    assert private.query == {"receive_id_type": "open_id"}
    assert private.body["receive_id"] == "ou_bob"
