"""The burst's floor: `bench_onebot`'s burst answered with the least work a message needs.

Issue 14 asks, where a target proves out of reach, for the floor shown by measurement. This runs
`bench_onebot`'s fake implementation against the real adapter, bus and wire (as `--no-runner`
does) with a bare handler in place of the runner and the memory service. For each message:

- the user turn screened for secrets, cut into tokens and stored with its FTS5 row;
- its window (the chat's last 20 turns) read by the chat's index;
- the chat's history searched as recall searches it (the same query terms, the same FTS5 match
  of the chat's scope token and bm25, 24 deep), the window's turns left out, 8 kept;
- extraction run over the line (its candidates counted, not stored);
- a prompt built from the window and the recalled lines (what `build_prompt` makes, as plain
  messages);
- the echo reply sent through the adapter (its action round trip awaited), then screened, cut
  and stored with its FTS5 row.

The text work runs on the event loop. The SQL (WAL, `synchronous = NORMAL`) runs on the same
loop with one COMMIT a pass of the loop, or with `--split` in a process of its own (as the
bot's store once did): the user turn, its window and the search in one round trip over a pipe,
the reply in another, the requests that arrived together one transaction. No checkpoint runs
during the run (the log grows instead): the floor leaves their cost out, where the bot pays
for them.

Left out, so that this is a floor and not the bot: sessions, the store's dedupe by message id
(the adapter's own dedupe still runs), memory items, profiles and rules,
the runner's policy, commands, rate limits, hooks, logging. The turns table has the one index
this needs (the bot's has seven, three of them partial). Prints messages/s, the CPU a message of
the bot's processes and of the fake, and the cores kept busy.

    .venv/bin/python scripts/bench_floor.py --messages 3000 --runs 3 [--split]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

import bench_onebot as onebot  # noqa: E402

from nahida.adapters.onebot.adapter import OneBotAdapter  # noqa: E402
from nahida.app import App, Paths, platform_adapters  # noqa: E402
from nahida.config import Config  # noqa: E402
from nahida.envelope import Envelope, Reply  # noqa: E402
from nahida.logs import configure_logging  # noqa: E402
from nahida.memory import MemoryService  # noqa: E402
from nahida.memory.core.safety import redact  # noqa: E402
from nahida.memory.core.scopes import chat_scope  # noqa: E402
from nahida.memory.core.tokenize import index_text, query_terms, tokenize  # noqa: E402
from nahida.memory.store.sqlite.connection import connect  # noqa: E402
from nahida.memory.store.sqlite.fts import scope_token, scoped_match  # noqa: E402
from nahida.memory.write.extract import extract  # noqa: E402
from nahida.providers.base import Message, estimate_tokens  # noqa: E402

SCHEMA = """
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY, chat TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,
    time REAL NOT NULL, speaker TEXT, message_id TEXT
);
CREATE INDEX IF NOT EXISTS turns_by_chat ON turns (chat, id);
CREATE VIRTUAL TABLE IF NOT EXISTS turns_fts USING fts5 (
    body, scopes, tokenize = 'unicode61 remove_diacritics 0'
);
"""
WINDOW = 20  # the default hot window: 10 rounds
DEPTH = 24  # recall's turns list: max(limit * 3, 20) for 8 hits
HITS = 8

Row = tuple[Any, ...]
# what the user turn's SQL answers: its id, its window (newest first), the recalled lines
UserTurn = tuple[int, list[Row], list[str]]


class Tables:
    """The SQL a message needs, on one connection: a batch of writes is one transaction."""

    def __init__(self, path: str) -> None:
        self.conn = connect(path, vec=False)
        self.conn.executescript(SCHEMA)
        self.conn.execute("PRAGMA wal_autocheckpoint = 0")  # none during the run (above)

    def _add(
        self, chat: str, role: str, content: str, tokens: str, speaker: str | None, mid: str | None
    ) -> int:
        cursor = self.conn.execute(
            "INSERT INTO turns (chat, role, content, time, speaker, message_id)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (chat, role, content, time.time(), speaker, mid),
        )
        turn_id = int(cursor.lastrowid or 0)
        self.conn.execute(
            "INSERT INTO turns_fts (rowid, body, scopes) VALUES (?, ?, ?)",
            (turn_id, tokens, scope_token(chat_scope(chat))),
        )
        return turn_id

    def user_turn(
        self,
        chat: str,
        content: str,
        tokens: str,
        speaker: str,
        mid: str | None,
        expression: str | None,
    ) -> UserTurn:
        """Store the user turn, read its window, search the chat's history outside it."""
        turn_id = self._add(chat, "user", content, tokens, speaker, mid)
        window = [
            tuple(row)
            for row in self.conn.execute(
                "SELECT id, role, content, speaker FROM turns WHERE chat = ? AND id < ?"
                f" ORDER BY id DESC LIMIT {WINDOW}",
                (chat, turn_id),
            )
        ]
        if expression is None:
            return turn_id, window, []
        shown = {turn_id, *(row[0] for row in window)}
        found = self.conn.execute(
            "SELECT t.id, t.content, f.score FROM (SELECT rowid, -bm25(turns_fts, 1.0, 0.0)"
            " AS score FROM turns_fts WHERE turns_fts MATCH ? ORDER BY score DESC"
            f" LIMIT {DEPTH}) f JOIN turns t ON t.id = f.rowid ORDER BY f.score DESC",
            (expression,),
        ).fetchall()
        recalled = [content for turn_id, content, _ in found if turn_id not in shown][:HITS]
        return turn_id, window, recalled

    def reply(self, chat: str, content: str, tokens: str, mid: str | None) -> int:
        return self._add(chat, "assistant", content, tokens, None, mid)

    def begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.conn.execute("COMMIT")


class InProcess:
    """The tables on this event loop: one transaction, one COMMIT, a pass of the loop."""

    def __init__(self, path: Path) -> None:
        self.tables = Tables(str(path))
        self.dirty = False

    def _writing(self) -> None:
        if not self.dirty:
            self.dirty = True
            self.tables.begin()
            asyncio.get_running_loop().call_soon(self._commit)

    def _commit(self) -> None:
        if self.dirty:
            self.dirty = False
            self.tables.commit()

    async def user_turn(self, *args: Any) -> UserTurn:
        self._writing()
        return self.tables.user_turn(*args)

    async def reply(self, *args: Any) -> int:
        self._writing()
        return self.tables.reply(*args)

    def close(self) -> None:
        self._commit()
        self.tables.conn.close()


def _serve(conn: Any, path: str) -> None:
    """The child process of `InChild`: the requests that arrived together, one transaction."""
    tables = Tables(path)
    while True:
        try:
            batch = [conn.recv()]
        except EOFError:
            return
        while conn.poll():
            batch.append(conn.recv())
        answers = []
        if any(name != "cpu" for _, name, _ in batch):
            tables.begin()
            for request_id, name, args in batch:
                if name != "cpu":
                    try:
                        answers.append((request_id, getattr(tables, name)(*args)))
                    except Exception as exc:  # its caller learns why; the batch goes on
                        answers.append((request_id, exc))
            tables.commit()
        answers += [(i, time.process_time()) for i, name, _ in batch if name == "cpu"]
        conn.send(answers)


class InChild:
    """The tables in a process of their own, over a pipe: each request sent at once, the
    child's answers to a batch in one message, read when the pipe is readable."""

    def __init__(self, path: Path) -> None:
        context = multiprocessing.get_context("spawn")
        self.pipe, theirs = context.Pipe()
        self.child = context.Process(target=_serve, args=(theirs, str(path)), daemon=True)
        self.child.start()
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.ids = itertools.count()
        self.loop: asyncio.AbstractEventLoop | None = None

    def _call(self, name: str, args: tuple[Any, ...]) -> asyncio.Future[Any]:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
            self.loop.add_reader(self.pipe.fileno(), self._readable)
        request_id = next(self.ids)
        future = self.loop.create_future()
        self.pending[request_id] = future
        self.pipe.send((request_id, name, args))
        return future

    def _readable(self) -> None:
        while self.pipe.poll():
            for request_id, value in self.pipe.recv():
                future = self.pending.pop(request_id)
                if isinstance(value, Exception):
                    future.set_exception(value)
                else:
                    future.set_result(value)

    async def user_turn(self, *args: Any) -> UserTurn:
        result: UserTurn = await self._call("user_turn", args)
        return result

    async def reply(self, *args: Any) -> int:
        result: int = await self._call("reply", args)
        return result

    async def cpu(self) -> float:
        result: float = await self._call("cpu", ())
        return result

    def close(self) -> None:
        if self.loop is not None:
            self.loop.remove_reader(self.pipe.fileno())
        self.pipe.close()
        self.child.join(10)


class Bare:
    """The handler: the least work a message needs. The text work (secret screen, tokens, the
    query, extraction, the prompt) on this event loop; the SQL where `tables` runs it."""

    def __init__(self, app: App, tables: InProcess | InChild) -> None:
        self.app = app
        self.tables = tables
        self.extracted = 0
        self.recalled = 0

    async def handle(self, envelope: Envelope) -> None:
        chat, text, user = str(envelope.chat), envelope.text, envelope.sender.user
        content = redact(text)
        expression = scoped_match(query_terms(tokenize(text)), [chat_scope(chat)])
        turn_id, window, recalled = await self.tables.user_turn(
            chat, content, index_text(content), str(user), envelope.message_id, expression
        )
        self.recalled += len(recalled)
        self.extracted += len(
            extract(
                text,
                chat=envelope.chat,
                user=user,
                message_id=envelope.message_id,
                turn_id=turn_id,
                time=envelope.time.timestamp(),
            )
        )
        messages = [Message("system", "你是纳西妲。")]
        if recalled:
            messages.append(Message("user", "[长期记忆]\n" + "\n".join(f"- {r}" for r in recalled)))
            messages.append(Message("assistant", "好的。"))
        for _, role, line, speaker in reversed(window):
            line = f"{speaker}: {line}" if role == "user" and speaker else line
            messages.append(Message("user" if role == "user" else "assistant", line))
        messages.append(Message("user", f"{user}: {text}"))
        sum(estimate_tokens(m.content) for m in messages)  # the prompt's budget check
        reply = f"echo: {text}"
        sent = await self.app.send(
            Reply.text(envelope.chat, reply, quote=envelope.message_id, mention=user)
        )
        said = redact(reply)
        await self.tables.reply(chat, said, index_text(said), sent)


async def one_run(load: onebot.Load, split: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="nahida-bench-floor-") as name:
        tmp = Path(name)
        config = Config.model_validate(
            {
                "server": {"host": "127.0.0.1", "port": 0},
                "channels": {"onebot": {"enabled": True, "mode": "reverse_ws"}},
                "scheduler": {"enabled": False},
                "bus": {"concurrency": load.concurrency},
                "memory": {"embedding": {"backend": "none"}},
                "logging": {"level": "ERROR", "format": "json"},
            }
        )
        app = App(
            config, Paths(None, tmp / "data", tmp / "workspace"), adapters=platform_adapters(config)
        )
        tables = InChild(tmp / "floor.db") if split else InProcess(tmp / "floor.db")
        bare = Bare(app, tables)
        app.bus._handler = bare.handle
        running, child, results = await onebot.started(app, load)
        sql_before = await tables.cpu() if isinstance(tables, InChild) else 0.0
        cpu_before = onebot._cpu_seconds()
        child.start()
        result: dict[str, Any] = await asyncio.to_thread(results.get)
        replied = max(1, result["replied"])
        result["loop_cpu_ms"] = (onebot._cpu_seconds() - cpu_before) * 1000 / replied
        sql = await tables.cpu() - sql_before if isinstance(tables, InChild) else 0.0
        result["sql_cpu_ms"] = sql * 1000 / replied
        result["bot_cpu_ms"] = result["loop_cpu_ms"] + result["sql_cpu_ms"]
        await asyncio.to_thread(child.join)
        adapter = app.adapters["onebot"]
        assert isinstance(adapter, OneBotAdapter)
        result["dropped_by_adapter"] = adapter.counters.duplicates
        result["recalled"] = bare.recalled / replied
        result["extracted"] = bare.extracted
        app.stop()
        await running
        tables.close()
        return result


async def main(load: onebot.Load, runs: int, split: bool) -> int:
    configure_logging("ERROR")
    await asyncio.to_thread(MemoryService.warm_up)
    results = [await one_run(load, split) for _ in range(runs)]
    where = "its SQL in a child process" if split else "its SQL in this process"
    print(
        f"# bench_floor: {load.messages} messages from {load.groups} groups over one reverse WS,"
        f" {load.duplicates:.0%} duplicates, reconnect: yes, window {load.window}, bus concurrency"
        f" {load.concurrency}; the bare handler, {where}"
    )
    onebot.head(results)
    print(onebot.row("latency p99 (ms)", [r["p99"] for r in results], ".1f"))
    print(onebot.row("bot CPU per message (ms)", [r["bot_cpu_ms"] for r in results], ".2f"))
    if split:
        print(onebot.row("  SQL process (ms)", [r["sql_cpu_ms"] for r in results], ".2f"))
        print(onebot.row("  event-loop process (ms)", [r["loop_cpu_ms"] for r in results], ".2f"))
    busy = [r["bot_cpu_ms"] * r["rate"] / 1000 for r in results]
    print(onebot.row("  cores the bot kept busy (CPU / wall time)", busy, ".2f"))
    print(
        onebot.row(
            "fake implementation CPU / message (ms)", [r["fake_cpu_ms"] for r in results], ".2f"
        )
    )
    print(onebot.row("recalled lines / message", [r["recalled"] for r in results], ".2f"))
    print(onebot.row("statements extracted", [r["extracted"] for r in results], "d"))
    return onebot.delivery(results)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16, help="bus.concurrency")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--split", action="store_true", help="the SQL in a process of its own, over a pipe"
    )
    args = parser.parse_args()
    bench = onebot.Load(
        args.groups,
        args.messages,
        duplicates=0.10,
        window=1000,
        rate=0.0,
        reconnect=True,
        concurrency=args.concurrency,
        embedding="none",
    )
    sys.exit(asyncio.run(main(bench, args.runs, args.split)))
