"""Hostile OneBot frames, sent raw over the wire by every way events come in (reverse WS, forward
WS, HTTP POST): a frame nested too deeply for the JSON parser is skipped with a log line and the
link stays up; lone surrogates, NUL and other control characters are cleaned out of a message
that is then answered and stored; a CQ string built to make the parser backtrack does not stall
the bot."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nahida.app import App
from tests.fakes.onebot_harness import onebot_of, running_app
from tests.fakes.onebot_impl import FakeOneBot

BOT = 10001
USER = 30001
CHAT = f"onebot:private:{USER}"
MODES = ["reverse_ws", "forward_ws", "http"]


@dataclass
class Link:
    app: App
    impl: FakeOneBot
    send: Callable[[bytes], Awaitable[None]]  # one raw frame (or POST body), as the peer sends it
    up: Callable[[], bool]  # the link the frames came on is still the one first made


@asynccontextmanager
async def linked(tmp_path: Path, mode: str) -> AsyncIterator[Link]:
    """The whole bot (echo model) and the fake implementation, joined in `mode`."""
    async with FakeOneBot(BOT) as impl:
        if mode == "reverse_ws":
            async with running_app(tmp_path, {"mode": mode}) as app:
                sock = await impl.connect(f"ws://127.0.0.1:{app.server.port}/onebot/v11/ws")

                async def send_ws(frame: bytes) -> None:
                    await sock.send_raw(frame.decode())

                yield Link(app, impl, send_ws, lambda: not sock.ws.closed)
        elif mode == "forward_ws":
            url = await impl.serve_forward()
            async with running_app(tmp_path, {"mode": mode, "url": url}) as app:
                (sock,) = await impl.wait_forward(1)

                async def send_forward(frame: bytes) -> None:
                    await sock.send_raw(frame.decode())

                yield Link(
                    app, impl, send_forward, lambda: not sock.ws.closed and len(impl.sockets) == 1
                )
        else:
            api = await impl.serve_http_api()
            async with running_app(tmp_path, {"mode": mode, "url": api}) as app:
                events = f"http://127.0.0.1:{app.server.port}/onebot/v11/http"
                statuses: list[int] = []

                async def post(frame: bytes) -> None:
                    statuses.append(await impl.post_event(events, {}, body=frame))

                # the server answered every POST, each bad one with a 400 at worst
                yield Link(app, impl, post, lambda: all(s in (204, 400) for s in statuses))


def frame(event: dict[str, Any]) -> bytes:
    """An event as the peer writes it: JSON with non-ASCII escaped as `\\uXXXX`."""
    return json.dumps(event).encode()


async def answers(link: Link, count: int) -> list[str]:
    """The texts of the first `count` private replies, once they were sent."""
    calls = await link.impl.wait_calls("send_private_msg", count)
    return [c.params["message"][0]["data"]["text"] for c in calls]


async def stored(app: App, count: int) -> list[tuple[str, str]]:
    """The chat's turns as (role, content), once there are `count` of them."""
    async with asyncio.timeout(5):
        while True:
            turns = [
                (turn.role, turn.content)
                for session in await app.memory.sessions.latest(CHAT, 10)
                for turn in await app.memory.sessions.turns(session.id)
            ]
            if len(turns) >= count:
                return turns
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("mode", MODES)
async def test_a_frame_nested_too_deeply_is_skipped_and_the_link_stays(
    tmp_path: Path, mode: str
) -> None:
    async with linked(tmp_path, mode) as link:
        deep = "[" * 100_000 + "]" * 100_000
        event = frame(link.impl.private_message(USER, "lost in the depths"))
        await link.send(deep.encode())  # the JSON parser's recursion runs out on it
        await link.send(event[:-1] + b', "extra": ' + deep.encode() + b"}")
        await link.send(frame(link.impl.private_message(USER, "still there?")))
        assert await answers(link, 1) == ["echo: still there?"]
        assert link.up()
        assert onebot_of(link.app).counters.malformed == 2


@pytest.mark.parametrize("mode", MODES)
async def test_surrogates_and_control_characters_are_cleaned_and_the_message_kept(
    tmp_path: Path, mode: str
) -> None:
    async with linked(tmp_path, mode) as link:
        impl = link.impl
        raw_nul = json.dumps(impl.private_message(USER, "raw\x00nul"), ensure_ascii=False)
        assert "\\u0000" in raw_nul
        await link.send(frame(impl.private_message(USER, "lone \ud800 surrogate")))
        await link.send(frame(impl.private_message(USER, "cut\x00here? no")))
        await link.send(raw_nul.replace("\\u0000", "\x00").encode())  # a raw NUL in the text
        await link.send(frame(impl.private_message(USER, "\x1b[31mred\x7f bell\x07 tab\tok")))
        await link.send(frame(impl.private_message(USER, "[CQ:face,id=1]cq\x00\ud800 text")))
        await link.send(frame(impl.private_message(USER, "plain")))
        said = [
            "lone \ufffd surrogate",
            "cuthere? no",
            "rawnul",
            "[31mred bell tab\tok",
            "cq\ufffd text",
            "plain",
        ]
        assert await answers(link, len(said)) == [f"echo: {text}" for text in said]
        turns = await stored(link.app, 2 * len(said))
        assert [content for role, content in turns if role == "user"] == said
        assert link.up()
        assert onebot_of(link.app).counters.malformed == 0


async def test_invalid_utf8_in_a_posted_event_is_replaced_not_refused(tmp_path: Path) -> None:
    async with linked(tmp_path, "http") as link:
        body = frame(link.impl.private_message(USER, "bad byte: XX"))
        await link.send(body.replace(b"XX", b"\xff\xfe"))
        assert await answers(link, 1) == ["echo: bad byte: \ufffd\ufffd"]
        assert link.up()


async def test_a_cq_string_made_to_backtrack_does_not_stall_the_bot(tmp_path: Path) -> None:
    # every `[CQ:` opens a code that never closes: a backtracking parser tries each one to the
    # end of the text (minutes for this one), and the bot's one event loop waits with it
    async with linked(tmp_path, "reverse_ws") as link:
        hostile = "[CQ:a,b=c" * 20_000
        await link.send(frame(link.impl.private_message(USER, hostile)))
        await link.send(frame(link.impl.private_message(USER, "after it")))
        replies = await answers(link, 2)
        assert replies[1] == "echo: after it"
        assert link.up()
