"""Two `nahida run` processes on one PostgreSQL memory, a burst of group messages split across
them, and one of them killed with SIGKILL mid-burst: what it had stored but not answered is
answered by the other when the implementation delivers it again, once, and nothing is answered
twice or stored twice.

The victim's socket is frozen before the kill (the implementation reads nothing more from it), so
the replies it writes from then on never reach anyone: it dies holding messages it stored whose
answers were lost, as a process killed between sending and the implementation's answer does. The
implementation then sends the survivor every event it had sent the victim that got no reply, as
it does after a reconnect. No event is sent to both while both live: an answer the victim sent but
had not stored when it died cannot be told from one never sent, so the survivor would answer such
an event again (answers are at least once across a kill, as `test_reply_delivery` shows for one
process).
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nahida.memory import MemoryService
from tests import pg
from tests.fakes.llm_server import FakeOpenAIServer
from tests.fakes.onebot_impl import Call, FakeOneBot, FakeSocket, at, text
from tests.integration.test_onebot_cli import connect_when_up, free_port, start_run, stop_run

pytestmark = pytest.mark.slow

BOT = 10001
GROUPS = [20001 + g for g in range(8)]
BEFORE, AFTER = 120, 120  # messages sent before the victim's socket freezes, and after
STORED_UNANSWERED = 4  # the victim's messages stored with their answers lost, before the kill


def config(directory: Path, port: int, model_url: str, store: str) -> Path:
    """`nahida run`'s config: memory on `store`, every message answered however late it comes
    (no apology for a wait) and however many a chat sends (no rate limit). Errors only are
    logged: nobody reads the process's stderr before it ends, and a full pipe would stall it."""
    directory.mkdir()
    path = directory / "nahida.yaml"
    path.write_text(
        f"""
server: {{host: 127.0.0.1, port: {port}}}
providers:
  main: {{type: openai, base_url: "{model_url}", api_key: sk-test, model: m1}}
channels:
  onebot:
    enabled: true
    mode: reverse_ws
    path: /onebot/v11/ws
    access_token: "${{ONEBOT_TOKEN}}"
bot:
  nicknames: [nahida]
  group_policy: mention
  max_reply_delay: 0
  rate_limit: {{per_chat_per_minute: 0}}
scheduler: {{enabled: false}}
memory:
  store: "{store}"
  embedding: {{backend: none}}
logging: {{level: ERROR}}
""",
        encoding="utf-8",
    )
    return path


def quoted(call: Call) -> str:
    return str(next(s["data"]["id"] for s in call.params["message"] if s["type"] == "reply"))


async def until(done: Callable[[], bool], within: float, what: str) -> None:
    """Wait for `done()` (a hang guard, not a measure: `within` is far beyond what it takes)."""
    try:
        async with asyncio.timeout(within):
            while not done():  # noqa: ASYNC110 - the fake's state, no event to wait on
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"not {what} within {within:.0f} s") from None


async def user_turns(memory: MemoryService) -> dict[int, list[str]]:
    """Each group's stored user turns' message ids, in the order stored."""
    found: dict[int, list[str]] = {}
    for group in GROUPS:
        sessions = await memory.sessions.latest(f"onebot:group:{group}", 1000)
        turns = [t for s in sessions for t in await memory.sessions.turns(s.id)]
        found[group] = [
            str(t.message_id) for t in sorted(turns, key=lambda t: t.id) if t.role == "user"
        ]
    return found


async def test_a_bot_killed_mid_burst_leaves_nothing_unanswered_or_answered_twice(
    tmp_path: Path, postgres_uri: str, openai_server: FakeOpenAIServer
) -> None:
    store = pg.uri_for(tmp_path)
    ports = [free_port(), free_port()]
    urls = [f"ws://127.0.0.1:{port}/onebot/v11/ws" for port in ports]
    names = ["victim", "survivor"]
    configs = [
        config(tmp_path / name, port, openai_server.url, store)
        for name, port in zip(names, ports, strict=True)
    ]
    memory = MemoryService(pg.store(tmp_path))
    rng = random.Random(52)
    sent: list[tuple[dict[str, Any], int]] = []  # every event, and the bot it was sent to
    victim = await start_run(tmp_path / "victim", configs[0])
    survivor = await start_run(tmp_path / "survivor", configs[1])
    try:
        async with FakeOneBot(BOT) as impl:
            socks: list[FakeSocket] = []
            for url, process in zip(urls, (victim, survivor), strict=True):
                await connect_when_up(impl, url, process)
                socks.append(impl.sockets[-1])

            def replies_via(sock: FakeSocket) -> list[Call]:
                return [c for c in impl.calls_of("send_group_msg") if c.via == sock.label]

            async def burst(count: int) -> None:
                for _ in range(count):
                    n = len(sent)
                    group = GROUPS[n % len(GROUPS)]
                    event = impl.group_message(group, 30001 + n % 7, [at(BOT), text(f" 第{n}问")])
                    bot = rng.randrange(2)  # a group's messages go to either
                    sent.append((event, bot))
                    await socks[bot].send(event)

            await burst(BEFORE)
            await until(lambda: len(replies_via(socks[0])) >= 10, 60, "answering")
            socks[0].freeze()  # what the victim sends from now on is never read
            await burst(AFTER)

            # the victim stores messages it will never get an answer out for: one per group
            # at most until its wait for the implementation's answer ends, so a few groups' worth
            to_victim = {str(e["message_id"]) for e, bot in sent if bot == 0}
            stored_unanswered: set[str] = set()
            async with asyncio.timeout(60):
                while len(stored_unanswered) < STORED_UNANSWERED:
                    answered = {quoted(c) for c in replies_via(socks[0])}
                    stored = {m for ms in (await user_turns(memory)).values() for m in ms}
                    stored_unanswered = (stored & to_victim) - answered
                    await asyncio.sleep(0.05)
            victim.kill()  # kill -9 mid-burst: its chat locks go with its connections
            await victim.wait()

            to_survivor = [e for e, bot in sent if bot == 1]
            await until(
                lambda: len(replies_via(socks[1])) >= len(to_survivor), 60, "the survivor's own"
            )
            first_pass = [quoted(c) for c in replies_via(socks[1])]
            replied = {quoted(c) for c in impl.calls_of("send_group_msg")}
            again = [e for e, bot in sent if bot == 0 and str(e["message_id"]) not in replied]
            for event in again:  # delivered again, to the one still there
                await socks[1].send(event)
            await until(
                lambda: (
                    {quoted(c) for c in impl.calls_of("send_group_msg")}
                    >= replied | {str(e["message_id"]) for e in again}
                ),
                60,
                "every message answered",
            )
            log = await stop_run(survivor)  # handles what it accepted before it stops
            replies = Counter(quoted(c) for c in impl.calls_of("send_group_msg"))
        stored_turns = await user_turns(memory)
        assistants = []
        for group in GROUPS:
            for session in await memory.sessions.latest(f"onebot:group:{group}", 1000):
                turns = await memory.sessions.turns(session.id)
                assistants += [t for t in turns if t.role == "assistant"]
    finally:
        for process in (victim, survivor):
            if process.returncode is None:
                process.kill()
                await process.wait()
        memory.close()
    assert survivor.returncode == 0, log[-2000:]
    assert stored_unanswered <= {str(e["message_id"]) for e in again}  # what the test is about

    # every message answered exactly once, across both bots
    assert replies == Counter(str(e["message_id"]) for e, _ in sent)

    # the survivor answered the messages sent to it in the order each group sent them
    number = {str(e["message_id"]): n for n, (e, _) in enumerate(sent)}
    group_of = {str(e["message_id"]): e["group_id"] for e, _ in sent}
    own = set(first_pass) & {str(e["message_id"]) for e in to_survivor}
    for group in GROUPS:
        order = [number[m] for m in first_pass if m in own and group_of[m] == group]
        assert order == sorted(order), group

    # the history has each message once, and no more answers than messages
    for group in GROUPS:
        ids = [str(e["message_id"]) for e, _ in sent if e["group_id"] == group]
        assert Counter(stored_turns[group]) == Counter(ids), group
    assert len(assistants) <= len(sent)
