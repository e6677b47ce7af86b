"""End to end over the webhook: encrypted, signed callbacks → shared server → App → fake API."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from nahida.adapters.lark.adapter import LarkAdapter
from nahida.adapters.lark.config import load
from nahida.providers.base import ChatRequest, ChatResponse
from nahida.providers.router import ModelRouter, resolve_routes
from nahida.server import InboundServer
from tests.fakes.lark_app import RunningApp, lark_config, running_app, wait_until
from tests.fakes.lark_events import mention, message_event, url_verification, webhook_request
from tests.fakes.lark_server import FakeLarkServer

KEY = "enc-key-9f8e"
TOKEN = "v-token"


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def post(
    http: aiohttp.ClientSession, bot: RunningApp, body: bytes, headers: dict[str, str]
) -> tuple[int, Any]:
    async with http.post(bot.webhook_url(), data=body, headers=headers) as response:
        return response.status, await response.json()


def webhook(lark: FakeLarkServer, **extra: Any) -> Any:
    return lark_config(
        lark, mode="webhook", encrypt_key=KEY, verification_token=TOKEN, path="/lark/hook", **extra
    )


@pytest.mark.parametrize("encrypted", [False, True])
async def test_url_verification_is_answered(
    tmp_path: Path, http: aiohttp.ClientSession, encrypted: bool
) -> None:
    async with FakeLarkServer() as lark, running_app(tmp_path, webhook(lark)) as bot:
        body, headers = webhook_request(
            url_verification("ch-1"), encrypt_key=KEY if encrypted else ""
        )
        status, answer = await post(http, bot, body, headers)
    assert (status, answer) == (200, {"challenge": "ch-1"})
    assert bot.envelopes == []


async def test_signed_encrypted_group_mention_is_answered(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with FakeLarkServer() as lark, running_app(tmp_path, webhook(lark)) as bot:
        lark.users["ou_alice"] = "Alice"
        event = message_event(
            "@_user_1 hello",
            chat_type="group",
            chat_id="oc_team",
            message_id="om_q",
            mentions=[mention("@_user_1", "ou_bot", "Nahida")],
        )
        status, answer = await post(http, bot, *webhook_request(event, encrypt_key=KEY))
        assert (status, answer) == (200, {"msg": "success"})
        [sent] = await lark.wait_messages(1)
    assert sent.path == "/open-apis/im/v1/messages/om_q/reply"
    assert sent.content == {"text": '<at user_id="ou_alice"></at> echo: Alice: hello'}
    assert [str(e.chat) for e in bot.envelopes] == ["lark:group:oc_team"]


@pytest.mark.parametrize("forgery", ["signature", "token", "unsigned"])
async def test_forged_requests_are_refused_and_nothing_is_processed(
    tmp_path: Path, http: aiohttp.ClientSession, forgery: str
) -> None:
    async with FakeLarkServer() as lark, running_app(tmp_path, webhook(lark)) as bot:
        event = message_event("transfer the money", chat_type="p2p")
        if forgery == "signature":
            body, headers = webhook_request(event, encrypt_key=KEY, sign_key="guessed")
        elif forgery == "token":
            event["header"]["token"] = "guessed"
            body, headers = webhook_request(event, encrypt_key=KEY)
        else:
            body, headers = webhook_request(event, encrypt_key=KEY)[0], {}
        status, _ = await post(http, bot, body, headers)
        # the same event, properly sent, still goes through afterwards: it was not marked as seen
        event["header"]["token"] = TOKEN
        assert (await post(http, bot, *webhook_request(event, encrypt_key=KEY)))[0] == 200
        await lark.wait_messages(1)
    assert status == 401
    assert len(bot.envelopes) == 1 and bot.app.bus.accepted == 1
    assert bot.adapter.webhook is not None and bot.adapter.webhook.refused == 1


async def test_malformed_body_is_400(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    async with FakeLarkServer() as lark, running_app(tmp_path, webhook(lark)) as bot:
        status, _ = await post(http, bot, b"{not json", {"Content-Type": "application/json"})
    assert status == 400 and bot.envelopes == []


async def test_a_retried_callback_is_answered_once(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with FakeLarkServer() as lark, running_app(tmp_path, webhook(lark)) as bot:
        event = message_event("only once", chat_type="p2p")
        statuses = [(await post(http, bot, *webhook_request(event, encrypt_key=KEY)))[0]]
        statuses.append((await post(http, bot, *webhook_request(event, encrypt_key=KEY)))[0])
        await lark.wait_messages(1)
        await wait_until(lambda: bot.app.bus.handled == 1)
    assert statuses == [200, 200]
    assert [m.content["text"] for m in lark.messages] == ["echo: only once"]
    assert bot.adapter.duplicates == 1


async def test_token_only_setup_without_encryption(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with FakeLarkServer() as lark:
        config = lark_config(lark, mode="webhook", verification_token=TOKEN)
        async with running_app(tmp_path, config) as bot:
            good = await post(http, bot, *webhook_request(message_event("hi", chat_type="p2p")))
            bad = await post(
                http, bot, *webhook_request(message_event("x", chat_type="p2p", token="nope"))
            )
            await lark.wait_messages(1)
    assert (good[0], bad[0]) == (200, 401)
    assert [m.content["text"] for m in lark.messages] == ["echo: hi"]


class GatedModel:
    """Answers only once the test opens the gate: shows the webhook does not wait for the model."""

    name = "gated"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.asked = asyncio.Event()

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.asked.set()
        await self.gate.wait()
        return ChatResponse(content="late answer", model=request.model, finish_reason="stop")

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def test_the_callback_is_answered_before_the_model_replies(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    model = GatedModel()
    router = ModelRouter({"gated": model}, resolve_routes({}, {"gated": "slow"}))
    async with FakeLarkServer() as lark, running_app(tmp_path, webhook(lark), router) as bot:
        event = message_event("think hard", chat_type="p2p")
        async with asyncio.timeout(2):
            status, _ = await post(http, bot, *webhook_request(event, encrypt_key=KEY))
            await model.asked.wait()
        assert status == 200 and lark.messages == []  # acknowledged, still thinking
        model.gate.set()
        [sent] = await lark.wait_messages(1)
    assert json.loads(sent.body["content"]) == {"text": "late answer"}


async def test_a_full_inbox_answers_503_so_lark_pushes_again(http: aiohttp.ClientSession) -> None:
    section = {"app_id": "cli_test", "app_secret": "s", "mode": "webhook", "encrypt_key": KEY}
    adapter = LarkAdapter(load(section), inbox_size=1)  # not running: nothing drains the inbox
    server = InboundServer("127.0.0.1", 0)
    adapter.mount(server)
    await server.start()
    url = f"http://127.0.0.1:{server.port}/lark/events"
    first, second = message_event("a", chat_type="p2p"), message_event("b", chat_type="p2p")
    statuses = []
    try:
        for event in (first, second, first):
            async with http.post(
                url, data=(r := webhook_request(event, encrypt_key=KEY))[0], headers=r[1]
            ) as response:
                statuses.append(response.status)
    finally:
        await server.stop()
        await adapter.api.aclose()
    assert statuses == [200, 503, 200]  # full: push again later; a re-push of a taken one: fine
    assert adapter.duplicates == 1
