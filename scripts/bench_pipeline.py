"""Pipeline benchmark: N chats x M messages through bus -> runner -> SQLite, instant model.

Prints messages/s end to end, p50/p99 runner overhead per message (the model answers instantly,
so this is everything but the model), the per-message costs (database round trips, statements,
the database thread's and the event loop's CPU), peak RSS, and resident memory around 10,000
distinct idle chats (their per-chat workers retired). Checks per-chat order and that nothing was
lost. `--observed` sends group talk not addressed to the bot (stored, indexed and extracted,
never answered; "lost" then counts messages not stored); `--observed-share F` makes every chat
a group where a share F of the messages is such talk and the rest is answered (a busy group
with the bot in it; the answered messages' runner overhead is printed apart). `--embedding` sets
`memory.embedding.backend` (default auto: the local model where installed, so each answered
message embeds its query and new turns are embedded in the background; none: lexical recall
only). `--statements` times every SQL statement on the database thread (its CPU; each one's
first step) and prints the costliest per message. `--history N` first imports N older turns
into the same chats (a day back, through the history importer), so every message's history
search has history to search, as in a chat older than its prompt window. `--concurrency N` sets
`bus.concurrency` (how many answers wait on the model at once; the runner's time per message
includes its waits for the event loop and the database thread, but not its wait for a model
call). Observed talk never waits for a model call.
`--dream-every SECONDS` dreams while the pipeline runs: every SECONDS a background task runs
`memory.dreams.run` over the next chat in turn (each has new turns), the instant model answering
each dream request with one add op citing the request's first turn.

    .venv/bin/python scripts/bench_pipeline.py --chats 1000 --messages 10
    .venv/bin/python scripts/bench_pipeline.py --embedding none
    .venv/bin/python scripts/bench_pipeline.py --chats 300 --messages 30 --dream-every 1
    .venv/bin/python scripts/bench_pipeline.py --observed --embedding none
    .venv/bin/python scripts/bench_pipeline.py --embedding none --idle-batches 0 --statements
    .venv/bin/python scripts/bench_pipeline.py --embedding none --idle-batches 0 --history 100000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nahida.app import App, Paths  # noqa: E402
from nahida.config import Config  # noqa: E402
from nahida.envelope import ChatKey, Envelope, Reply, Role, Segment, Sender, UserKey  # noqa: E402
from nahida.logs import configure_logging  # noqa: E402
from nahida.memory.core.models import DreamRun  # noqa: E402
from nahida.memory.core.tokenize import warm_up  # noqa: E402
from nahida.memory.history.importer import import_lines  # noqa: E402
from nahida.memory.store.sqlite.db import DbStats  # noqa: E402
from nahida.providers.base import ChatRequest, ChatResponse  # noqa: E402
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


DREAM_SYSTEM = "You consolidate the long-term memory"
MEMORY_SYSTEMS = ("You keep the running summary", "You consolidate an assistant's", "A conv")
TURN_LINE = re.compile(r"^(t\d+) \[[^\]]*\] .*? <user:[^>]+>: (.*)$", re.MULTILINE)


class BenchModel(EchoProvider):
    """The echo for chat requests; compaction requests get a bounded summary (as JSON where
    asked), dream requests valid JSON: one add of the first person's turn shown, in the first
    scope it may write (no op when it shows no person's turn)."""

    def __init__(self) -> None:
        super().__init__("echo")
        self.dream_calls = 0

    async def chat(self, request: ChatRequest) -> ChatResponse:
        system = request.messages[0].content
        if system.startswith(MEMORY_SYSTEMS):  # compaction: a bounded summary of what it got
            last = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
            if "JSON" in system:
                body = {"facts": [], "profile": [], "summary": last[-500:], "keywords": []}
                return ChatResponse(json.dumps(body, ensure_ascii=False), finish_reason="stop")
            return ChatResponse(last[-1200:], finish_reason="stop")
        if not system.startswith(DREAM_SYSTEM):
            return await super().chat(request)
        self.dream_calls += 1
        text = request.messages[1].content
        scopes = re.search(r"^Scopes you may write: (.*)$", text, re.MULTILINE)
        turn = TURN_LINE.search(text)
        ops = []
        if turn is not None and scopes is not None:
            ops.append(
                {
                    "op": "add",
                    "kind": "fact",
                    "content": turn[2],
                    "scope": scopes[1].split(" · ")[0],
                    "evidence": [turn[1]],
                    "confidence": 0.8,
                    "reason": "said in the chat",
                }
            )
        body = json.dumps({"ops": ops}, ensure_ascii=False)
        return ChatResponse(content=body, model=request.model, finish_reason="stop")


def chat_key(chat: int) -> str:
    return f"bench:{'group' if OBSERVED or chat % 2 else 'private'}:c{chat}"


async def dreaming(app: App, chats: int, every: float, runs: list[tuple[DreamRun, float]]) -> None:
    """Every `every` seconds a dream run over the next chat in turn (rotating)."""
    n = 0
    while True:
        await asyncio.sleep(every)
        t0 = time.perf_counter()
        run = await app.memory.dreams.run(chat_key(n % chats), "bench")
        if run is not None:
            runs.append((run, time.perf_counter() - t0))
        n += 1


@dataclass
class Costs:
    """Per-message costs over a run: database round trips and statements, the database thread's
    CPU, the event loop's (this thread's) and the whole process's; and how many cores the
    process kept busy (its CPU over the wall time: at most 1.0 while the GIL serialises it)."""

    db: Any
    before: DbStats
    loop_cpu: float
    process_cpu: float
    wall: float
    after: DbStats | None = None
    timed: bool = False  # --statements: each statement's CPU, read at `stop`
    statements: dict[str, tuple[int, float]] = field(default_factory=dict)

    @classmethod
    def start(cls, app: App, statements: bool = False) -> Costs:
        db = app.memory.store.db  # type: ignore[attr-defined]  # the SQLite store
        if statements:
            db.time_statements()
        return cls(
            db,
            db.snapshot(),
            time.thread_time(),
            time.process_time(),
            time.perf_counter(),
            timed=statements,
        )

    def statement_rows(self, messages: int, top: int = 15) -> list[str]:
        """The statements that cost the database thread most, per message (--statements)."""
        times: dict[str, tuple[int, float]] = {}
        for sql, (n, seconds) in self.statements.items():  # variants (IN lists) as one line
            had = times.get(sql[:72], (0, 0.0))
            times[sql[:72]] = (had[0] + n, had[1] + seconds)
        total = sum(seconds for _, seconds in times.values())
        lines = [
            "| statement (first words) | runs / message | CPU / run | CPU / message |",
            "|---|---|---|---|",
        ]
        ranked = sorted(times.items(), key=lambda kv: -kv[1][1])[:top]
        for sql, (n, seconds) in ranked:
            lines.append(
                f"| `{sql}` | {n / messages:.2f} | {seconds / n * 1e6:.0f} µs"
                f" | {seconds * 1000 / messages:.3f} ms |"
            )
        lines.append(f"| all statements | | | {total * 1000 / messages:.2f} ms |")
        return lines

    def stop(self) -> None:
        self.loop_cpu = time.thread_time() - self.loop_cpu
        self.process_cpu = time.process_time() - self.process_cpu
        self.wall = time.perf_counter() - self.wall
        self.after = self.db.snapshot()
        if self.timed:
            self.statements = self.db.statement_times()

    def rows(self, messages: int) -> list[tuple[str, str]]:
        assert self.after is not None
        a, b = self.after, self.before
        store_cpu = a.cpu_seconds - b.cpu_seconds
        busy = self.process_cpu / self.wall
        return [
            ("database round trips / message", f"{(a.round_trips - b.round_trips) / messages:.2f}"),
            ("database transactions / message", f"{(a.batches - b.batches) / messages:.2f}"),
            ("transactions run again (a write failed)", f"{a.reruns - b.reruns}"),
            ("SQL statements / message", f"{(a.statements - b.statements) / messages:.1f}"),
            ("database thread CPU / message", f"{store_cpu * 1000 / messages:.2f} ms"),
            ("event-loop thread CPU / message", f"{self.loop_cpu * 1000 / messages:.2f} ms"),
            ("bot process CPU / message", f"{self.process_cpu * 1000 / messages:.2f} ms"),
            ("cores busy (process CPU / wall time)", f"{busy:.2f}"),
        ]


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


# --observed (1.0), --observed-share F: the share of messages that are group talk not addressed
# to the bot (stored, not answered); with any, every chat is a group
OBSERVED = 0.0
STATEMENTS = False  # --statements: time each SQL statement, print the costliest


def observed(chat: int, n: int) -> bool:
    """Whether message `n` of `chat` is talk not addressed to the bot (spread evenly)."""
    return OBSERVED >= 1.0 or (chat * 7919 + n * 104729) % 1000 < OBSERVED * 1000


def answered_count(chats: int, messages: int, offset: int = 0) -> int:
    return sum(
        not observed(chat, n) for n in range(messages) for chat in range(offset, offset + chats)
    )


def envelope(chat: int, n: int, kind: str) -> Envelope:
    kind = "group" if OBSERVED else kind
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
        to_me=not observed(chat, n),
    )


def history_lines(chats: int, turns: int) -> list[str]:
    """`turns` older turns of the bench's chats (user and reply in turn), a day before now."""
    start = datetime.now(UTC) - timedelta(days=1)
    lines = []
    for n in range(turns):
        chat = n % chats
        kind = "group" if OBSERVED or chat % 2 else "private"
        record = {
            "chat": f"bench:{kind}:c{chat}",
            "user": f"u{chat % 97}",
            "name": f"user{chat % 97}",
            "text": f"{LINES[(chat * 13 + n * 11) % len(LINES)]} (earlier {n})",
            "time": (start + timedelta(seconds=n * 0.5)).isoformat(),
            "message_id": f"h{n}",
            "role": "assistant" if (n // chats) % 2 else "user",
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    return lines


def _stored_user_turns(app: App) -> int:
    db = app.memory.store.db  # type: ignore[attr-defined]
    found: int = db.call(
        lambda conn: conn.execute("SELECT count(*) FROM turns WHERE role = 'user'").fetchone()[0]
    )
    return found


async def pump(app: App, adapter: BenchAdapter, chats: int, messages: int, offset: int) -> float:
    answered = answered_count(chats, messages, offset)
    adapter.expected = adapter.count + answered
    adapter.done.clear()
    handled = app.bus.handled + chats * messages
    started = time.perf_counter()
    for n in range(messages):
        for chat in range(offset, offset + chats):
            await app.bus.submit(envelope(chat, n, "group" if chat % 2 else "private"))
    if answered:
        await adapter.done.wait()
    while app.bus.handled < handled:  # noqa: ASYNC110 - observed talk: polling a counter
        await asyncio.sleep(0.005)
    return time.perf_counter() - started


async def main(
    tmp: Path,
    chats: int,
    messages: int,
    idle_chats: int,
    idle_batches: int,
    memory: bool,
    embedding: str,
    dream_every: float,
    history: int = 0,
    concurrency: int = 16,
) -> int:
    configure_logging("WARNING", "json")  # as `nahida run` would, minus the info lines
    config = Config.model_validate(
        {
            "bus": {"idle_timeout": 1.0, "concurrency": concurrency},
            "memory": {"embedding": {"backend": embedding}},
            "logging": {"level": "WARNING", "format": "json"},
            "bot": {"rate_limit": {"per_chat_per_minute": 0}},  # throughput, not the cap
        }
    )
    provider = BenchModel()
    model = ModelRouter({"echo": provider}, resolve_routes({}, {"echo": "instant"}))
    adapter = BenchAdapter()
    app = App(config, Paths(None, tmp / "data", tmp / "ws"), adapters=[adapter], model=model)
    if not memory:  # the bare pipeline: no recall into the prompt, no extraction after the turn
        app.runner.sources.clear()
        app.runner.hooks.clear()
    overhead: list[float] = []
    answering: list[float] = []  # the answered messages' (with observed talk beside them)
    handle = app.runner.handle
    queued: dict[asyncio.Task[Any] | None, float] = {}

    class TimedCalls(asyncio.Semaphore):
        """The runner's bound on model calls; the wait for one is queueing, not the runner."""

        async def acquire(self) -> Literal[True]:
            t0 = time.perf_counter()
            await super().acquire()
            queued[asyncio.current_task()] = time.perf_counter() - t0
            return True

    app.runner._model_calls = TimedCalls(concurrency)

    async def timed(env: Envelope) -> None:
        t0 = time.perf_counter()
        await handle(env)
        waited = queued.pop(asyncio.current_task(), 0.0)
        overhead.append(time.perf_counter() - t0 - waited)
        if env.to_me:
            answering.append(overhead[-1])

    app.bus._handler = timed  # measure the runner's own time per message
    if history:
        report = await asyncio.to_thread(
            import_lines, app.memory.store, history_lines(chats, history), 0.0, pause=0.0
        )
        print(f"imported {report.imported:,} older turns in {report.seconds:.1f} s", flush=True)
    # What `app.run()` loads first (jieba's dictionary, a local embedding model: seconds of CPU)
    # is loaded before the clock starts, so the figures are the pipeline's, not its start-up's.
    await asyncio.to_thread(warm_up)
    await app.memory.embeddings.load()
    runner_task = asyncio.create_task(app.run())
    await asyncio.sleep(0.1)
    rss_start = rss_mb()
    dreams: list[tuple[DreamRun, float]] = []
    dreamer = (
        asyncio.create_task(dreaming(app, chats, dream_every, dreams)) if dream_every > 0 else None
    )
    costs = Costs.start(app, STATEMENTS)
    elapsed = await pump(app, adapter, chats, messages, 0)
    costs.stop()
    if dreamer is not None:
        dreamer.cancel()
        await asyncio.gather(dreamer, return_exceptions=True)
    total = chats * messages
    answered = answered_count(chats, messages)
    lost = answered - adapter.count  # answers missing; with observed talk, stored turns too
    lost += (total - _stored_user_turns(app)) if OBSERVED else 0
    out_of_order = 0
    for chat in range(chats if OBSERVED < 1.0 else 0):
        key = chat_key(chat)
        got = [int(text.rsplit("#", 1)[1]) for text in adapter.replies[key]]
        out_of_order += got != [n for n in range(messages) if not observed(chat, n)]
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
    if OBSERVED >= 1.0:
        what += ", observed group talk (not answered)"
    elif OBSERVED:
        what += f", groups: {answered} messages answered, the rest observed talk"
    print(f"# bench_pipeline: {chats} chats x {messages} messages, instant model, {what}")
    print()
    print(f"embedder: {app.memory.embeddings.why}")
    if vectors is not None:
        embeddings = app.memory.embeddings
        print(f"vectors after the run: {vectors.stored} stored, {vectors.pending} pending")
        print(
            f"query vectors: {embeddings.queried} embedded, {embeddings.busy} left lexical (busy)"
        )
    print()
    print("| metric | value |")
    print("|---|---|")
    print(f"| messages | {total} |")
    print(f"| model calls at once (bus.concurrency) | {concurrency} |")
    print(f"| wall time | {elapsed:.2f} s |")
    print(f"| throughput | {total / elapsed:,.0f} messages/s |")
    print(f"| runner overhead p50 | {p50:.2f} ms |")
    print(f"| runner overhead p99 | {p99:.2f} ms |")
    if OBSERVED and answering:
        answering_ms = sorted(x * 1000 for x in answering)
        answered_p50 = statistics.median(answering_ms)
        answered_p99 = answering_ms[max(0, int(len(answering_ms) * 0.99) - 1)]
        print(
            "| runner overhead p50 / p99, answered messages |"
            f" {answered_p50:.2f} / {answered_p99:.2f} ms |"
        )
    print(f"| lost | {lost} |")
    print(f"| chats out of order | {out_of_order} |")
    for name, value in costs.rows(total):
        print(f"| {name} | {value} |")
    if dream_every > 0:
        done = [r for r, _ in dreams if r.id]
        seconds = statistics.median(s for r, s in dreams if r.id) if done else 0.0
        outcomes = ", ".join(
            f"{o} {sum(1 for r, _ in dreams if r.outcome == o)}"
            for o in sorted({r.outcome for r, _ in dreams})
        )
        print(f"| dream runs (every {dream_every:g} s) | {len(dreams)} ({outcomes}) |")
        print(
            f"| dreamed turns / model calls / applied | {sum(r.turns for r in done)}"
            f" / {provider.dream_calls} / {sum(r.applied for r in done)} |"
        )
        print(f"| dream run wall p50 | {seconds * 1000:.0f} ms |")
    print(f"| RSS before / after run | {rss_start:.0f} MB / {rss_after_run:.0f} MB |")
    print(f"| peak RSS | {peak_rss_mb():.0f} MB |")
    print()
    if STATEMENTS:
        print("\n".join(costs.statement_rows(total)))
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
    parser.add_argument(
        "--dream-every",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="dream one chat (rotating) every SECONDS while the pipeline runs (0: off)",
    )
    parser.add_argument(
        "--observed",
        action="store_true",
        help="group talk not addressed to the bot: stored, indexed, extracted, never answered",
    )
    parser.add_argument(
        "--observed-share",
        type=float,
        default=0.0,
        metavar="F",
        help="group chats where a share F of the messages is talk not addressed to the bot",
    )
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        metavar="N",
        help="first import N older turns into the same chats (their history gets searched)",
    )
    parser.add_argument(
        "--statements",
        action="store_true",
        help="time each SQL statement on the database thread and print the costliest",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=16,
        metavar="N",
        help="bus.concurrency: model calls at once (default 16, the config's default)",
    )
    args = parser.parse_args()
    OBSERVED = 1.0 if args.observed else args.observed_share
    STATEMENTS = args.statements
    with tempfile.TemporaryDirectory(prefix="nahida-bench-") as tmp:  # removed after the run
        code = asyncio.run(
            main(
                Path(tmp),
                args.chats,
                args.messages,
                args.idle_chats,
                args.idle_batches,
                not args.no_memory,
                args.embedding,
                args.dream_every,
                args.history,
                args.concurrency,
            )
        )
    sys.exit(code)
