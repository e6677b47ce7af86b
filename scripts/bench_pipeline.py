"""Pipeline benchmark: N chats x M messages through bus -> runner -> SQLite, instant model.

Prints messages/s end to end, p50/p99 runner overhead per message (the model answers instantly,
so this is everything but the model), peak RSS, and resident memory around 10,000 distinct idle
chats (their per-chat workers retired). Checks per-chat order and that nothing was lost.
`--embedding` sets `memory.embedding.backend` (default auto: the local model where installed, so
each answered message embeds its query and new turns are embedded in the background; none:
lexical recall only).

    .venv/bin/python scripts/bench_pipeline.py --chats 1000 --messages 10
    .venv/bin/python scripts/bench_pipeline.py --embedding none
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nahida.app import App, Paths  # noqa: E402
from nahida.config import Config  # noqa: E402
from nahida.envelope import ChatKey, Envelope, Reply, Role, Segment, Sender, UserKey  # noqa: E402
from nahida.logs import configure_logging  # noqa: E402
from nahida.providers.echo import EchoProvider  # noqa: E402
from nahida.providers.router import ModelRouter, resolve_routes  # noqa: E402
from nahida.server import InboundServer  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class BenchAdapter:
    platform = "bench"

    def __init__(self) -> None:
        self.replies: dict[str, list[str]] = defaultdict(list)
        self.count = 0
        self.done = asyncio.Event()
        self.expected = 0
        self.keep = True  # keep reply texts (for the order check); off for the idle-chat phase

    def mount(self, server: InboundServer) -> None:
        return None

    async def run(self, submit: object) -> None:
        await asyncio.Event().wait()

    async def send(self, reply: Reply) -> str | None:
        if self.keep:
            self.replies[str(reply.chat)].append(reply.plain_text)
        self.count += 1
        if self.count >= self.expected:
            self.done.set()
        return None


LINES = [
    line.strip()
    for line in (ROOT / "tests" / "data" / "chat_lines_zh_en.txt").read_text("utf-8").splitlines()
    if line.strip() and not line.startswith("/")  # chat talk, not commands
]


def envelope(chat: int, n: int, kind: str) -> Envelope:
    key = ChatKey("bench", "group" if kind == "group" else "private", f"c{chat}")
    text = f"{LINES[(chat * 31 + n * 7) % len(LINES)]} #{n}"  # ordinary chat lines, numbered
    return Envelope(
        platform="bench",
        self_id="bot",
        chat=key,
        sender=Sender(UserKey("bench", f"u{chat % 97}"), f"user{chat % 97}", Role.MEMBER),
        message_id=f"{chat}-{n}",
        time=datetime.now(UTC),
        segments=(Segment.plain(text),),
        text=text,
        to_me=True,
    )


async def pump(app: App, adapter: BenchAdapter, chats: int, messages: int, offset: int) -> float:
    adapter.expected = adapter.count + chats * messages
    adapter.done.clear()
    started = time.perf_counter()
    for n in range(messages):
        for chat in range(offset, offset + chats):
            await app.bus.submit(envelope(chat, n, "group" if chat % 2 else "private"))
    await adapter.done.wait()
    return time.perf_counter() - started


async def main(
    chats: int, messages: int, idle_chats: int, idle_batches: int, memory: bool, embedding: str
) -> int:
    configure_logging("WARNING", "json")  # as `nahida run` would, minus the info lines
    tmp = Path(tempfile.mkdtemp(prefix="nahida-bench-"))
    config = Config.model_validate(  # default concurrency
        {"bus": {"idle_timeout": 1.0}, "memory": {"embedding": {"backend": embedding}}}
    )
    model = ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "instant"}))
    adapter = BenchAdapter()
    app = App(config, Paths(None, tmp / "data", tmp / "ws"), adapters=[adapter], model=model)
    if not memory:  # the bare pipeline: no recall into the prompt, no extraction after the turn
        app.runner.sources.clear()
        app.runner.hooks.clear()
    overhead: list[float] = []
    handle = app.runner.handle

    async def timed(env: Envelope) -> None:
        t0 = time.perf_counter()
        await handle(env)
        overhead.append(time.perf_counter() - t0)

    app.bus._handler = timed  # measure the runner's own time per message
    runner_task = asyncio.create_task(app.run())
    await asyncio.sleep(0.1)
    rss_start = rss_mb()
    elapsed = await pump(app, adapter, chats, messages, 0)
    total = chats * messages
    lost = total - adapter.count
    out_of_order = 0
    for chat in range(chats):
        key = f"bench:{'group' if chat % 2 else 'private'}:c{chat}"
        got = [int(text.rsplit("#", 1)[1]) for text in adapter.replies[key]]
        out_of_order += got != list(range(messages))
    overhead_ms = sorted(x * 1000 for x in overhead)
    p50 = statistics.median(overhead_ms)
    p99 = overhead_ms[int(len(overhead_ms) * 0.99) - 1]
    rss_after_run = rss_mb()
    vectors = await app.memory.embeddings.counts() if app.memory.embeddings.enabled else None

    idle_rows = []
    adapter.keep = False
    adapter.replies.clear()
    for batch in range(idle_batches):
        await pump(app, adapter, idle_chats, 1, 1_000_000 + batch * idle_chats)
        while app.bus.active_chats:  # noqa: ASYNC110 - polling a counter, no event to wait on
            await asyncio.sleep(0.2)
        idle_rows.append((batch + 1, rss_mb(), app.bus.active_chats))
    app.stop()
    await runner_task

    what = "with memory (recall + extraction)" if memory else "without memory steps"
    print(f"# bench_pipeline: {chats} chats x {messages} messages, instant model, {what}")
    print()
    print(f"embedder: {app.memory.embeddings.why}")
    if vectors is not None:
        print(f"vectors after the run: {vectors.stored} stored, {vectors.pending} pending")
    print()
    print("| metric | value |")
    print("|---|---|")
    print(f"| messages | {total} |")
    print(f"| wall time | {elapsed:.2f} s |")
    print(f"| throughput | {total / elapsed:,.0f} messages/s |")
    print(f"| runner overhead p50 | {p50:.2f} ms |")
    print(f"| runner overhead p99 | {p99:.2f} ms |")
    print(f"| lost | {lost} |")
    print(f"| chats out of order | {out_of_order} |")
    print(f"| RSS before / after run | {rss_start:.0f} MB / {rss_after_run:.0f} MB |")
    print(f"| peak RSS | {peak_rss_mb():.0f} MB |")
    print()
    print(
        f"| {idle_chats} more distinct chats (batch) | RSS after idle retirement | live workers |"
    )
    print("|---|---|---|")
    for batch, rss, live in idle_rows:
        print(f"| {batch} | {rss:.0f} MB | {live} |")
    return 0 if lost == 0 and out_of_order == 0 else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--idle-chats", type=int, default=10_000)
    parser.add_argument("--idle-batches", type=int, default=5)
    parser.add_argument(
        "--no-memory", action="store_true", help="leave out memory recall and extraction"
    )
    parser.add_argument("--embedding", choices=["auto", "local", "none"], default="auto")
    args = parser.parse_args()
    code = asyncio.run(
        main(
            args.chats,
            args.messages,
            args.idle_chats,
            args.idle_batches,
            not args.no_memory,
            args.embedding,
        )
    )
    sys.exit(code)
