"""Action frames the bot sends (aiohttp's `send_str`), over real sockets: every size arrives whole
either way, compression only when configured, and a closed socket fails a call as not sent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from nahida.adapters.onebot.api import ConnectionClosedError
from nahida.adapters.onebot.connection import WsConnection
from tests.fakes.onebot_harness import AdapterHarness, running_adapter
from tests.fakes.onebot_impl import FakeOneBot

BOT = 10001


@asynccontextmanager
async def linked(
    mode: str = "reverse_ws", deflate: bool = False, **settings: Any
) -> AsyncIterator[tuple[AdapterHarness, FakeOneBot, WsConnection]]:
    """The adapter and the fake joined by one WebSocket: the fake connects (reverse) or serves
    (forward: the bot's frames are a client's, masked)."""
    async with FakeOneBot(BOT, deflate=deflate) as impl:
        if mode == "forward_ws":
            settings["url"] = await impl.serve_forward()
        async with running_adapter(mode=mode, **settings) as bot:
            if mode == "reverse_ws":
                await impl.connect(bot.ws_url)
            await bot.wait_for(lambda: bot.adapter.registry.api(str(BOT)) is not None)
            conn = bot.adapter.registry.api(str(BOT))
            assert conn is not None
            yield bot, impl, conn


@pytest.mark.parametrize("mode", ["reverse_ws", "forward_ws"])
async def test_frames_of_every_size_arrive_whole_either_way(mode: str) -> None:
    # payloads across both length boundaries (125/126 and 65,535/65,536 bytes): the action's
    # JSON is ~80 bytes and 3 a character of the text; forward frames are masked
    sizes = [*range(46), *range(21_780, 21_880, 4)]
    async with linked(mode) as (_, impl, conn):
        await asyncio.gather(
            *(conn.call("send_group_msg", {"group_id": 1, "message": "群" * n}) for n in sizes)
        )
        got = sorted(len(c.params["message"]) for c in impl.calls_of("send_group_msg"))
        assert got == sizes


async def test_deflate_is_declined_unless_configured() -> None:
    async with linked(deflate=True) as (_, impl, conn):
        assert impl.sockets[0].ws.compress == 0  # offered, not taken
    async with linked(deflate=True, compress=True) as (_, impl, conn):
        assert impl.sockets[0].ws.compress == 15  # taken: frames go compressed
        await conn.call("send_group_msg", {"group_id": 1, "message": "压缩的"})
        assert impl.calls_of("send_group_msg")[0].params["message"] == "压缩的"


async def test_a_call_on_a_closed_socket_fails_as_not_sent() -> None:
    async with linked() as (_, impl, conn):
        await conn.socket.close()
        with pytest.raises(ConnectionClosedError) as closed:
            async with asyncio.timeout(5):
                await conn.call("send_group_msg", {"group_id": 1, "message": "x"})
        assert closed.value.sent is False  # safe to send again on another socket
        assert conn.closed
        assert impl.calls_of("send_group_msg") == []
