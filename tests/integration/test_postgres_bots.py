"""Two whole bots on one PostgreSQL memory (each App with its own data dir, its own connections,
so PostgreSQL sees two processes), one OneBot implementation connected to both: an event
delivered to both is answered once, a group's messages sent to either are answered in order
with the history of the ones before, and what one bot is told the other recalls."""

from __future__ import annotations

import asyncio
from pathlib import Path

from nahida.app import App
from nahida.memory import Turn
from tests import pg
from tests.fakes.onebot_harness import running_app
from tests.fakes.onebot_impl import Call, FakeOneBot, at, text

BOT = 10001
GROUP = 20001


def ws_url(app: App) -> str:
    return f"ws://127.0.0.1:{app.server.port}/onebot/v11/ws"


async def stored(app: App, count: int) -> list[Turn]:
    """The group's turns, once there are `count` (a bounded number of looks)."""
    for _ in range(500):
        sessions = await app.memory.sessions.latest(f"onebot:group:{GROUP}", 10)
        turns = [t for s in sessions for t in await app.memory.sessions.turns(s.id)]
        if len(turns) >= count:
            return turns
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(turns)} turns stored, not {count}")


def said(call: Call) -> str:
    return "".join(s["data"]["text"] for s in call.params["message"] if s["type"] == "text")


async def test_two_bots_on_one_memory(tmp_path: Path, postgres_uri: str) -> None:
    store = pg.uri_for(tmp_path)
    async with (
        running_app(tmp_path / "a", {"mode": "reverse_ws"}, store) as first,
        running_app(tmp_path / "b", {"mode": "reverse_ws"}, store) as second,
        FakeOneBot(BOT) as impl,
    ):
        one = await impl.connect(ws_url(first))
        two = await impl.connect(ws_url(second))

        # the same event delivered to both bots: answered once
        twice = impl.group_message(GROUP, 30001, [at(BOT), text(" 在吗")])
        await asyncio.gather(one.send(twice), two.send(twice))
        (answer,) = await impl.wait_calls("send_group_msg")
        assert "在吗" in said(answer)

        # a group's messages sent to either bot in turn: each answered once, in order
        for n in range(1, 7):
            sock = one if n % 2 else two
            await sock.send(impl.group_message(GROUP, 30001, [at(BOT), text(f" 第{n}条")]))
            await impl.wait_calls("send_group_msg", count=n + 1)
        replies = [said(c) for c in impl.calls if c.action == "send_group_msg"]
        assert len(replies) == 7
        assert [r.split("第")[1][0] for r in replies[1:]] == [str(n) for n in range(1, 7)]

        # both bots read one history: each turn stored once, the replies after their messages
        turns = await stored(second, 14)  # a reply is stored once it is sent
        users = [t.content for t in turns if t.role == "user"]
        assert len(users) == len(set(users)) == 7
        roles = [t.role for t in sorted(turns, key=lambda t: t.id)]
        assert roles == ["user", "assistant"] * 7
