"""The fake implementation of `bench_onebot.py`, run in a child process: it connects to every bot
process's reverse WebSocket and floods them with a burst of group messages (see that script).

With several bots each message goes to one of them at random (a group's messages to either), and
an injected duplicate goes to another bot than its original where there is one: an event
delivered to two processes must be answered once.
"""

from __future__ import annotations

import asyncio
import random
import resource
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BOT = 10001
LINES = [
    line.strip()
    for line in (ROOT / "tests" / "data" / "chat_lines_zh_en.txt").read_text("utf-8").splitlines()
    if line.strip() and not line.startswith("/")  # chat talk, not commands
]


@dataclass(frozen=True)
class Load:
    groups: int
    messages: int
    duplicates: float
    window: int
    rate: float
    reconnect: bool
    runner: bool = True  # False: the bus handler replies at once (measures adapter + bus + WS)
    concurrency: int = 16  # bus.concurrency (the default)
    embedding: str = "auto"  # memory.embedding.backend (auto: the local model where installed)
    text: str = "lines"  # lines: ordinary chat lines; numbered: " 消息 N" (matches every turn)
    model: str = "instant"  # instant: the in-process echo; openai / anthropic: that SDK to a fake
    deflate: bool = False  # the fake offers permessage-deflate (as NapCat's `ws` client does)
    compress: bool = False  # channels.onebot.compress: the bot accepts it
    store: str = "sqlite"  # sqlite (the bot in the bench's process) or postgres (bot processes)
    processes: int = 1  # bot processes on the one PostgreSQL memory


def implementation(urls: list[str], load: Load, results: Any) -> None:
    results.put(asyncio.run(_implementation(urls, load)))


async def _implementation(urls: list[str], load: Load) -> dict[str, Any]:
    from tests.fakes.onebot_impl import Call, FakeOneBot, at, text

    rng = random.Random(7)
    sent_at: dict[str, float] = {}
    replied_at: dict[str, float] = {}
    replies: Counter[str] = Counter()
    group_of: dict[str, tuple[int, int]] = {}  # message id → (its group, its number)
    answered_in: dict[int, list[int]] = {}  # group → its messages' numbers, in reply order
    # (group, bot) → the numbers of the messages first sent to that bot that it answered, in
    # reply order: they reached it in the order they were sent (a copy another bot got first is
    # answered there, whenever that bot gets to it)
    answered_by: dict[tuple[int, int], list[int]] = {}
    first_bot: dict[str, int] = {}  # message id → the bot it was first sent to
    bot_of: dict[str, int] = {}  # socket label → the bot process at its other end
    progress = asyncio.Event()
    cpu_started = _cpu_seconds()  # the fake's own CPU from here, its imports left out

    def on_call(call: Call) -> None:
        if call.action != "send_group_msg":
            return
        quote = next(s["data"]["id"] for s in call.params["message"] if s["type"] == "reply")
        replies[quote] += 1
        if quote not in replied_at:
            replied_at[quote] = call.at
            group, n = group_of[quote]
            answered_in.setdefault(group, []).append(n)
            if bot_of[call.via] == first_bot[quote]:
                answered_by.setdefault((group, first_bot[quote]), []).append(n)
        progress.set()

    async with FakeOneBot(BOT, deflate=load.deflate) as impl:
        impl.on_call = on_call

        async def connect(bot: int) -> Any:
            sock = await impl.connect(urls[bot])
            bot_of[sock.label] = bot
            return sock

        socks = [await connect(bot) for bot in range(len(urls))]
        events: list[dict[str, Any]] = []
        bot_for: list[int] = []  # event number → the bot it was first sent to
        injected = 0
        old = None
        started = time.monotonic()
        for n in range(load.messages):
            if load.reconnect and n == load.messages // 2:
                old = socks[0]
                socks[0] = await connect(0)  # same X-Self-ID; the old one is still open
                for event in events[-20:]:  # a reconnect burst replays recent events
                    await socks[0].send(event)
                    injected += 1
            group = 100_000 + n % load.groups
            event = impl.group_message(group, 200_000 + n % 97, [at(BOT), text(body(load, n))])
            events.append(event)
            bot = rng.randrange(len(socks))
            bot_for.append(bot)
            if load.rate:
                await asyncio.sleep(max(0.0, started + n / load.rate - time.monotonic()))
            else:
                while len(sent_at) - len(replied_at) >= load.window:
                    progress.clear()
                    await progress.wait()
            sent_at[str(event["message_id"])] = time.monotonic()
            group_of[str(event["message_id"])] = (group, n)
            first_bot[str(event["message_id"])] = bot
            await socks[bot].send(event)
            await asyncio.sleep(0)  # let the reader answer the bot's actions between events
            if rng.random() < load.duplicates:
                again = max(0, n - rng.randrange(50))
                other = (bot_for[again] + 1) % len(socks)  # another bot than the original
                await socks[other].send(events[again])
                injected += 1
            if old is not None and n == load.messages // 2 + 200:
                await old.close()
                old = None
        last_sent = time.monotonic()
        try:
            async with asyncio.timeout(60):
                while len(replied_at) < len(sent_at):
                    progress.clear()
                    await progress.wait()
        except TimeoutError:
            pass
        if old is not None:
            await old.close()
    latencies = sorted((replied_at[m] - sent_at[m]) * 1000 for m in replied_at)
    end = max(replied_at.values(), default=last_sent)
    return {
        "processes": len(urls),
        "sent": len(sent_at),
        "injected_duplicates": injected,
        "replied": len(replied_at),
        "lost": len(sent_at) - len(replied_at),
        "duplicate_replies": sum(c - 1 for c in replies.values() if c > 1),
        "out_of_order": sum(1 for ns in answered_in.values() if ns != sorted(ns)),
        "out_of_order_in_a_bot": sum(1 for ns in answered_by.values() if ns != sorted(ns)),
        "seconds": end - started,
        "fake_cpu_ms": (_cpu_seconds() - cpu_started) * 1000 / max(1, len(replied_at)),
        "rate": len(replied_at) / (end - started),
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p99": latencies[max(0, int(len(latencies) * 0.99) - 1)] if latencies else float("nan"),
    }


def body(load: Load, n: int) -> str:
    """The text of message `n` after the mention."""
    if load.text == "numbered":
        return f" 消息 {n}"
    return f" {LINES[(n % load.groups * 31 + n * 7) % len(LINES)]} #{n}"


def _cpu_seconds() -> float:
    """CPU time of this process (every thread: the event loop and the SQLite worker)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
