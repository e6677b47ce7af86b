"""OneBot end-to-end benchmark: a fake implementation floods the running bot over reverse WS.

The bot is the whole App (adapter → bus → runner → SQLite on disk → instant echo model → reply
action); the fake implementation runs in a second process (this machine has two cores) and
sends M group messages from N groups over one reverse WebSocket, each addressed to the bot, with
10% of the events delivered twice and a reconnect (same X-Self-ID, the old socket left half-open
for a moment) half way through, replaying the last few events on the new socket as real
implementations do. Latency is measured in the fake: event sent → reply action received; the
fake also counts the groups whose messages were not answered in the order they were sent.

    .venv/bin/python scripts/bench_onebot.py --groups 50 --messages 10000 --runs 3

`--window` bounds the messages awaiting a reply (a closed loop, so the inbound queue never
passes its mark and throughput is the bot's); `--rate` sends open-loop at a fixed rate instead (for
latency below saturation). `--text lines` (the default) makes each message an ordinary chat line
(`tests/data/chat_lines_zh_en.txt`, as `bench_pipeline.py` sends); `--text numbered` sends
" 消息 N", a text every turn of a chat matches, so each history search ranks that chat's whole
history (the figures before December 2026 used it). `--model openai|anthropic` answers through the
real provider and its SDK, to a fake endpoint in a third process (its CPU is not the bot's);
the default is an instant in-process echo. `--no-runner` replies straight from the bus,
leaving only the adapter, the bus and the wire. "bot CPU per message" is the bot process's CPU
time (event loop and SQLite thread) per answered message: on a shared machine it is steadier
than wall-clock rates.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nahida.adapters.onebot.adapter import OneBotAdapter  # noqa: E402
from nahida.app import App, Paths, build_model_router, platform_adapters  # noqa: E402
from nahida.config import Config  # noqa: E402
from nahida.envelope import Envelope, Reply  # noqa: E402
from nahida.logs import configure_logging  # noqa: E402
from nahida.providers.echo import EchoProvider  # noqa: E402
from nahida.providers.router import ModelRouter, resolve_routes  # noqa: E402
from tests.fakes.llm_server import serve_until_stopped  # noqa: E402

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


# -- the fake implementation (child process) ------------------------------------------------------


def implementation(url: str, load: Load, results: Any) -> None:
    results.put(asyncio.run(_implementation(url, load)))


async def _implementation(url: str, load: Load) -> dict[str, Any]:
    from tests.fakes.onebot_impl import Call, FakeOneBot, at, text

    rng = random.Random(7)
    sent_at: dict[str, float] = {}
    replied_at: dict[str, float] = {}
    replies: Counter[str] = Counter()
    group_of: dict[str, tuple[int, int]] = {}  # message id → (its group, its number)
    answered_in: dict[int, list[int]] = {}  # group → its messages' numbers, in reply order
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
        progress.set()

    async with FakeOneBot(BOT, deflate=load.deflate) as impl:
        impl.on_call = on_call
        sock = await impl.connect(url)
        events: list[dict[str, Any]] = []
        injected = 0
        old = None
        started = time.monotonic()
        for n in range(load.messages):
            if load.reconnect and n == load.messages // 2:
                old = sock
                sock = await impl.connect(url)  # same X-Self-ID; the old one is still open
                for event in events[-20:]:  # a reconnect burst replays recent events
                    await sock.send(event)
                    injected += 1
            group = 100_000 + n % load.groups
            event = impl.group_message(group, 200_000 + n % 97, [at(BOT), text(body(load, n))])
            events.append(event)
            if load.rate:
                await asyncio.sleep(max(0.0, started + n / load.rate - time.monotonic()))
            else:
                while len(sent_at) - len(replied_at) >= load.window:
                    progress.clear()
                    await progress.wait()
            sent_at[str(event["message_id"])] = time.monotonic()
            group_of[str(event["message_id"])] = (group, n)
            await sock.send(event)
            await asyncio.sleep(0)  # let the reader answer the bot's actions between events
            if rng.random() < load.duplicates:
                await sock.send(rng.choice(events[-50:]))
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
        "sent": len(sent_at),
        "injected_duplicates": injected,
        "replied": len(replied_at),
        "lost": len(sent_at) - len(replied_at),
        "duplicate_replies": sum(c - 1 for c in replies.values() if c > 1),
        "out_of_order": sum(1 for ns in answered_in.values() if ns != sorted(ns)),
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


# -- the bot (this process) ---------------------------------------------------------------------


async def one_run(load: Load) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="nahida-bench-onebot-") as tmp:
        if load.model == "instant":
            return await _one_run(load, Path(tmp), {})
        context = multiprocessing.get_context("spawn")
        urls = context.Queue()
        server = context.Process(target=serve_until_stopped, args=(load.model, urls), daemon=True)
        server.start()
        try:
            url = await asyncio.to_thread(urls.get, timeout=30)
            provider = {"type": load.model, "base_url": url, "api_key": "k-bench", "model": "m1"}
            return await _one_run(load, Path(tmp), {"main": provider})
        finally:
            server.terminate()
            server.join()


async def _one_run(load: Load, tmp: Path, providers: dict[str, Any]) -> dict[str, Any]:
    config = Config.model_validate(
        {
            "providers": providers,
            "server": {"host": "127.0.0.1", "port": 0},
            "channels": {
                "onebot": {"enabled": True, "mode": "reverse_ws", "compress": load.compress}
            },
            "scheduler": {"enabled": False},
            "bus": {"concurrency": load.concurrency},
            "bot": {"rate_limit": {"per_chat_per_minute": 0}},  # measure throughput, not the cap
            "memory": {"embedding": {"backend": load.embedding}},
            "logging": {"level": "ERROR", "format": "json"},
        }
    )
    model = (
        build_model_router(config)
        if providers
        else ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "instant"}))
    )
    app = App(
        config,
        Paths(None, tmp / "data", tmp / "workspace"),
        adapters=platform_adapters(config),
        model=model,
    )
    if not load.runner:

        async def reply_at_once(envelope: Envelope) -> None:
            text = f"echo: {envelope.text}"
            quote, mention = envelope.message_id, envelope.sender.user
            await app.send(Reply.text(envelope.chat, text, quote=quote, mention=mention))

        app.bus._handler = reply_at_once  # what is left is the adapter, the bus and the wire
    running, child, results = await started(app, load)
    db = app.memory.store.db  # type: ignore[attr-defined]  # the SQLite store's thread
    db_before = db.snapshot()
    cpu_before, loop_before = _cpu_seconds(), time.thread_time()
    child.start()
    result: dict[str, Any] = await asyncio.to_thread(results.get)
    replied = max(1, result["replied"])
    result["bot_cpu_ms"] = (_cpu_seconds() - cpu_before) * 1000 / replied
    result["loop_cpu_ms"] = (time.thread_time() - loop_before) * 1000 / replied
    after = db.snapshot()
    result["db_cpu_ms"] = (after.cpu_seconds - db_before.cpu_seconds) * 1000 / replied
    result["round_trips"] = (after.round_trips - db_before.round_trips) / replied
    result["statements"] = (after.statements - db_before.statements) / replied
    await asyncio.to_thread(child.join)
    adapter = app.adapters["onebot"]
    assert isinstance(adapter, OneBotAdapter)
    result["dropped_by_adapter"] = adapter.counters.duplicates
    result["handled"] = app.bus.handled
    embeddings = app.memory.embeddings
    result["query_vectors"], result["lexical_busy"] = embeddings.queried, embeddings.busy
    result["vectors"] = (await embeddings.counts()).stored if embeddings.enabled else 0
    app.stop()
    await running
    return result


async def started(app: App, load: Load) -> tuple[asyncio.Task[None], Any, Any]:
    """`app` running (its task), and the fake implementation's process, not yet started, that
    will flood its reverse WebSocket with `load` and put its findings on the queue returned."""
    running = asyncio.create_task(app.run())
    while app.server.port == 0:  # noqa: ASYNC110 - the server sets its port when it starts
        await asyncio.sleep(0.01)
    url = f"ws://127.0.0.1:{app.server.port}/onebot/v11/ws"
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    return running, context.Process(target=implementation, args=(url, load, results)), results


def _cpu_seconds() -> float:
    """CPU time of this process (every thread: the event loop and the SQLite worker)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def row(name: str, values: list[float], fmt: str) -> str:
    cells = " | ".join(format(v, fmt) for v in values)
    return f"| {name} | {cells} | **{format(statistics.median(values), fmt)}** |"


async def main(load: Load, runs: int) -> int:
    configure_logging("ERROR")
    results = []
    for _ in range(runs):
        results.append(await one_run(load))
    mode = f"open loop at {load.rate:g}/s" if load.rate else f"window {load.window}"
    runner = "full runner + SQLite" if load.runner else "no runner (direct reply)"
    runner += f", bus concurrency {load.concurrency}, embedding {load.embedding}"
    runner += f", text {load.text}"
    runner += ", instant model" if load.model == "instant" else f", {load.model} SDK to a fake"
    if load.deflate:
        runner += ", deflate offered " + ("and taken" if load.compress else "and declined")
    print(
        f"# bench_onebot: {load.messages} messages from {load.groups} groups over one reverse WS, "
        f"{load.duplicates:.0%} duplicates, reconnect: {'yes' if load.reconnect else 'no'}, "
        f"{mode}, {runner}"
    )
    head(results)
    print(row("latency p50 (ms)", [r["p50"] for r in results], ".1f"))
    print(row("latency p99 (ms)", [r["p99"] for r in results], ".1f"))
    print(row("bot CPU per message (ms)", [r["bot_cpu_ms"] for r in results], ".2f"))
    print(row("  database thread (ms)", [r["db_cpu_ms"] for r in results], ".2f"))
    print(row("  event-loop thread (ms)", [r["loop_cpu_ms"] for r in results], ".2f"))
    print(row("fake implementation CPU / message (ms)", [r["fake_cpu_ms"] for r in results], ".2f"))
    print(row("database round trips / message", [r["round_trips"] for r in results], ".2f"))
    print(row("SQL statements / message", [r["statements"] for r in results], ".1f"))
    if load.embedding != "none":
        print(row("query vectors embedded", [r["query_vectors"] for r in results], "d"))
        print(
            row("  searched lexically (embedder busy)", [r["lexical_busy"] for r in results], "d")
        )
        print(row("vectors stored by the end", [r["vectors"] for r in results], "d"))
    print(row("wall time (s)", [r["seconds"] for r in results], ".2f"))
    print(row("messages sent", [r["sent"] for r in results], "d"))
    print(row("duplicate events injected", [r["injected_duplicates"] for r in results], "d"))
    print(row("duplicates dropped by adapter", [r["dropped_by_adapter"] for r in results], "d"))
    return delivery(results)


def head(results: list[dict[str, Any]]) -> None:
    """Print a blank line, the table's head and its first row, messages/s."""
    print()
    print("| metric | " + " | ".join(f"run {i + 1}" for i in range(len(results))) + " | median |")
    print("|---|" + "---|" * (len(results) + 1))
    print(row("messages/s end to end", [r["rate"] for r in results], ",.0f"))


def delivery(results: list[dict[str, Any]]) -> int:
    """Print the runs' lost, duplicate-reply and out-of-order rows; 1 if any run had one."""
    print(row("lost (no reply)", [r["lost"] for r in results], "d"))
    print(row("duplicate replies", [r["duplicate_replies"] for r in results], "d"))
    print(row("groups answered out of order", [r["out_of_order"] for r in results], "d"))
    bad = any(r["lost"] or r["duplicate_replies"] or r["out_of_order"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--duplicates", type=float, default=0.10)
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=0.0, help="open-loop messages/s (0: off)")
    parser.add_argument("--no-reconnect", action="store_true")
    parser.add_argument(
        "--no-runner", action="store_true", help="reply straight from the bus: adapter cost only"
    )
    parser.add_argument("--concurrency", type=int, default=16, help="bus.concurrency")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--embedding", choices=["auto", "local", "none"], default="auto")
    parser.add_argument(
        "--text",
        choices=["lines", "numbered"],
        default="lines",
        help="ordinary chat lines (the default), or ' 消息 N' (matches every turn of its chat)",
    )
    parser.add_argument(
        "--model",
        choices=["instant", "openai", "anthropic"],
        default="instant",
        help="the in-process echo, or the real provider (its SDK) to a fake server in a process",
    )
    parser.add_argument(
        "--deflate",
        action="store_true",
        help="the fake offers permessage-deflate, as NapCat's `ws` client does",
    )
    parser.add_argument(
        "--compress", action="store_true", help="channels.onebot.compress: the bot accepts it"
    )
    args = parser.parse_args()
    bench = Load(
        args.groups,
        args.messages,
        args.duplicates,
        args.window,
        args.rate,
        not args.no_reconnect,
        not args.no_runner,
        args.concurrency,
        args.embedding,
        args.text,
        args.model,
        args.deflate,
        args.compress,
    )
    sys.exit(asyncio.run(main(bench, args.runs)))
