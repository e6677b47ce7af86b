"""Action frames written together (`nahida.adapters.onebot.frames`), over real sockets."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from nahida.adapters.onebot.api import ConnectionClosedError
from nahida.adapters.onebot.connection import WsConnection
from nahida.adapters.onebot.frames import Outbox, text_frame
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


def _decode(frame: bytes) -> tuple[bytes, bool]:
    """RFC 6455 §5.2, one whole text frame: (its payload, masked)."""
    assert frame[0] == 0x81
    masked, size, at = bool(frame[1] & 0x80), frame[1] & 0x7F, 2
    if size == 126:
        (size,), at = struct.unpack("!H", frame[2:4]), 4
    elif size == 127:
        (size,), at = struct.unpack("!Q", frame[2:10]), 10
    if masked:
        key, at = frame[at : at + 4], at + 4
        body = bytes(b ^ key[i % 4] for i, b in enumerate(frame[at:]))
    else:
        body = frame[at:]
    assert len(body) == size
    return body, masked


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70001])
@pytest.mark.parametrize("mask", [None, b"\x01\x80\xfe\x37"])
def test_a_text_frame_carries_its_text(size: int, mask: bytes | None) -> None:
    for text in ("x" * size, "纳" * (size // 3)):  # `size` bytes, and UTF-8 of 3 bytes a char
        frame = text_frame(text, mask)
        body, masked = _decode(frame)
        assert body.decode() == text
        assert masked is (mask is not None)
        n = len(body)  # the shortest length field that holds it:
        assert len(frame) == 2 + (n > 125) * 2 + (n > 65535) * 6 + (mask is not None) * 4 + n


async def test_frames_sent_in_one_pass_leave_in_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    async with linked() as (_, impl, conn):
        outbox = conn._outbox
        assert outbox is not None
        writes: list[int] = []
        write = outbox._transport.write

        def counted(data: Any) -> None:
            writes.append(len(data))
            write(data)

        monkeypatch.setattr(outbox._transport, "write", counted)
        answers = await asyncio.gather(
            *(conn.call("send_group_msg", {"group_id": 1, "message": f"m{n}"}) for n in range(20))
        )
        assert len(writes) == 1  # twenty frames, one system call
        assert [c.params["message"] for c in impl.calls_of("send_group_msg")] == [
            f"m{n}" for n in range(20)
        ]
        assert len({a["message_id"] for a in answers}) == 20  # each call got its own answer


@pytest.mark.parametrize("mode", ["reverse_ws", "forward_ws"])
async def test_frames_of_every_size_arrive_whole_either_way(mode: str) -> None:
    # payloads across both length boundaries (125/126 and 65,535/65,536 bytes): the action's
    # JSON is ~80 bytes and 3 a character of the text; forward frames are masked
    sizes = [*range(46), *range(21_780, 21_880, 4)]
    async with linked(mode) as (_, impl, conn):
        assert conn._outbox is not None
        await asyncio.gather(
            *(conn.call("send_group_msg", {"group_id": 1, "message": "群" * n}) for n in sizes)
        )
        got = sorted(len(c.params["message"]) for c in impl.calls_of("send_group_msg"))
        assert got == sizes


async def test_deflate_is_declined_unless_configured() -> None:
    async with linked(deflate=True) as (_, impl, conn):
        assert impl.sockets[0].ws.compress == 0  # offered, not taken
        assert conn._outbox is not None
    async with linked(deflate=True, compress=True) as (_, impl, conn):
        assert impl.sockets[0].ws.compress == 15  # taken: frames go one by one, compressed
        assert conn._outbox is None
        await conn.call("send_group_msg", {"group_id": 1, "message": "压缩的"})
        assert impl.calls_of("send_group_msg")[0].params["message"] == "压缩的"


async def test_frames_waiting_when_the_socket_closes_fail_as_not_sent() -> None:
    async with linked() as (_, impl, conn):
        outbox = conn._outbox
        assert outbox is not None
        calls = [
            asyncio.create_task(conn.call("send_group_msg", {"group_id": 1, "message": "x"}))
            for _ in range(2)
        ]
        await asyncio.sleep(0)  # both frames wait for the end of the pass
        outbox._transport.close()
        for call in calls:
            with pytest.raises(ConnectionClosedError) as closed:
                async with asyncio.timeout(5):
                    await call
            assert closed.value.sent is False  # safe to send again on another socket
        assert conn.closed
        await asyncio.sleep(0.05)
        assert impl.calls_of("send_group_msg") == []


async def test_a_backed_up_socket_sends_after_what_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    async with linked() as (_, impl, conn):
        outbox = conn._outbox
        assert outbox is not None
        first = asyncio.create_task(conn.call("send_group_msg", {"group_id": 1, "message": "1"}))
        await asyncio.sleep(0)  # "1" waits in the outbox
        monkeypatch.setattr(Outbox, "backed_up", property(lambda self: True))
        await conn.call("send_group_msg", {"group_id": 1, "message": "2"})  # by send_str
        await first
        assert [c.params["message"] for c in impl.calls_of("send_group_msg")] == ["1", "2"]
