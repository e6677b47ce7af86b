"""The admin console's pages and API answers at 100,000 items and 1,000,000 turns.

Fills a data dir's SQLite file through the store's own tables, in large units of work (no write
path, no jieba: each text is drawn from jieba's dictionary as words, and its index text is those
words), with a bot's worth of history: 1,000 chats (600 groups, 400 private), sessions of 20
turns over the last 90 days, 2,000 people speaking under a name or two, every other turn the
bot's; 100,000 items over 1,000 scopes with their `create` events, one in twenty superseded by a
newer one; a recorded recall for a third of the answered turns; 3,000 dream runs with their
reports; pending candidates, profile bullets, episodes and job runs. Then it serves the console
as `nahida admin` does (memory opened by `app.memory_for`, the doctor's checks, its own
listener on loopback), logs in over HTTP and asks each page and each API answer 20 times (after
two to warm up); the table gives p50 and p95 of the answers, as the client saw them.

    .venv/bin/python scripts/bench_console.py                 # the full fill, a few minutes
    .venv/bin/python scripts/bench_console.py --turns 100000 --items 10000   # a quick look
    .venv/bin/python scripts/bench_console.py --dir /tmp/console --keep      # fill once
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from itertools import accumulate
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import jieba  # noqa: E402
import yaml  # noqa: E402

from nahida.app import Paths, memory_for  # noqa: E402
from nahida.cli.doctor import console_checks  # noqa: E402
from nahida.cli.state import State  # noqa: E402
from nahida.console import ConsoleServer, create_app  # noqa: E402
from nahida.console.auth import TokenFile  # noqa: E402
from nahida.memory import (  # noqa: E402
    KINDS,
    Candidate,
    DreamRun,
    Episode,
    Evidence,
    MemoryItem,
    NewTurn,
    ProfileEntry,
    Proposal,
    RecallRecord,
)
from nahida.memory.store.base import Tx  # noqa: E402
from nahida.memory.store.sqlite import SqliteStore  # noqa: E402

DAY = 86_400.0
SPREAD_DAYS = 90
GROUPS = 600
PRIVATES = 400
PEOPLE = 2_000
SESSION_TURNS = 20
SOURCES = (
    ("rule_extract", 40),
    ("agent_proactive", 15),
    ("user_explicit", 15),
    ("llm_dream", 15),
    ("compress", 5),
    ("human_edit", 5),
    ("import", 4),
    ("plugin:notes", 1),
)
TZ = ZoneInfo("Asia/Shanghai")


class Words:
    """Dictionary words (Chinese, 1–4 characters) and a few English ones, frequent ones often."""

    def __init__(self, rng: random.Random, size: int = 20_000) -> None:
        entries = []
        with (Path(jieba.__file__).parent / "dict.txt").open(encoding="utf-8") as handle:
            for line in handle:
                word, freq, *_ = line.split()
                if 1 < len(word) <= 4 and all("\u4e00" <= c <= "\u9fff" for c in word):
                    entries.append((int(freq), word))
        entries.sort(reverse=True)
        self.words = [w for _, w in entries[:size]] + ["tea", "meeting", "python", "travel"]
        self.cumulative = list(accumulate(1.0 / (n + 10) for n in range(len(self.words))))
        self.rng = rng

    def pick(self, low: int, high: int) -> list[str]:
        count = self.rng.randint(low, high)
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=count)


class Fill:
    """The bot's data, written in units of `batch` rows."""

    def __init__(self, store: SqliteStore, rng: random.Random, now: float, batch: int) -> None:
        self.store = store
        self.rng = rng
        self.now = now
        self.batch = batch
        self.words = Words(rng)
        self.chats = [f"bench:group:g{n}" for n in range(GROUPS)]
        self.chats += [f"bench:private:p{n}" for n in range(PRIVATES)]
        self.members = {
            chat: rng.sample(range(PEOPLE), rng.randint(5, 60)) for chat in self.chats[:GROUPS]
        }
        self.user_turns: list[tuple[int, str, float]] = []  # (turn id, chat, time)
        self.sessions: list[tuple[str, str, float, float]] = []  # (id, chat, start, end)

    def person(self, chat: str) -> int:
        if chat in self.members:
            return self.rng.choice(self.members[chat])
        return int(chat.rsplit("p", 1)[1])  # a private chat's key names its person

    def turns(self, total: int, progress: Callable[[str], None]) -> None:
        sessions = total // SESSION_TURNS
        start = self.now - SPREAD_DAYS * DAY
        plan = sorted(
            start + self.rng.random() * (SPREAD_DAYS * DAY - 3600) for _ in range(sessions)
        )
        pending: list[tuple[str, str, float]] = []
        for n, began in enumerate(plan):
            pending.append((f"s_{n:07d}", self.rng.choice(self.chats), began))
            if len(pending) * SESSION_TURNS >= self.batch or n == len(plan) - 1:
                self.store.write_sync(self._sessions, pending)
                pending = []
                progress(f"turns {len(self.sessions) * SESSION_TURNS:,}")

    def _sessions(self, tx: Tx, sessions: list[tuple[str, str, float]]) -> None:
        for session_id, chat, began in sessions:
            tx.sessions.create(session_id, chat, "bench", began)
            at = began
            for k in range(SESSION_TURNS):
                at += self.rng.uniform(5, 120)
                words = self.words.pick(4, 16)
                if k % 2 == 0:
                    user = self.person(chat)
                    name = f"name{user}" if self.rng.random() < 0.9 else f"nick{user}"
                    turn = NewTurn(chat, "user", "".join(words), at, f"bench:u{user}", name)
                else:
                    turn = NewTurn(chat, "assistant", "".join(words), at)
                turn_id = tx.turns.add(session_id, turn, " ".join(words))
                if k % 2 == 0:
                    self.user_turns.append((turn_id, chat, at))
            self.sessions.append((session_id, chat, began, at))

    def items(self, total: int, progress: Callable[[str], None]) -> None:
        scopes = ["global"] + [f"chat:{c}" for c in self.chats[:600]]
        scopes += [f"user:bench:u{n}" for n in range(399)]
        sources = [s for s, _ in SOURCES]
        weights = [w for _, w in SOURCES]
        made = 0
        while made < total:
            count = min(self.batch, total - made)
            rows = []
            for n in range(made, made + count):
                words = self.words.pick(6, 20)
                created = self.now - self.rng.random() * SPREAD_DAYS * DAY
                scope = self.rng.choice(scopes)
                turn_id, chat, at = self.rng.choice(self.user_turns)
                subject = scope[len("user:") :] if scope.startswith("user:") else None
                item = MemoryItem(
                    id=f"m_{n:07x}",
                    scope=scope,
                    kind=self.rng.choice(KINDS),
                    content="".join(words),
                    status="active" if self.rng.random() < 0.85 else "archived",
                    confidence=round(self.rng.uniform(0.3, 1.0), 2),
                    sensitivity="public" if self.rng.random() < 0.5 else "private",
                    source=self.rng.choices(sources, weights)[0],
                    subject_user=subject,
                    evidence=(Evidence(chat=chat, turn_id=turn_id, time=at),),
                    created_at=created,
                    updated_at=created + self.rng.random() * DAY,
                )
                rows.append((item, " ".join(words)))
            self.store.write_sync(self._items, rows)
            made += count
            progress(f"items {made:,}")

    @staticmethod
    def _items(tx: Tx, rows: list[tuple[MemoryItem, str]]) -> None:
        for n, (item, tokens) in enumerate(rows):
            if n % 20 == 19:  # a newer value for the one before: a supersede chain of two
                old, _ = rows[n - 1]
                item = replace(item, supersedes=old.id, scope=old.scope, status="active")
                tx.items.change(
                    old, replace(old, status="superseded", valid_until=item.created_at), None
                )
            tx.items.add(item, tokens)
            tx.events.add(item.id, "create", "bench", None, item.to_json(), None, item.created_at)

    def the_rest(self, progress: Callable[[str], None]) -> None:
        answered = [t for n, t in enumerate(self.user_turns) if n % 3 == 0]
        for start in range(0, len(answered), self.batch):
            self.store.write_sync(self._recalls, answered[start : start + self.batch])
        progress("recalls")
        self.store.write_sync(self._dreams, 3_000)
        self.store.write_sync(self._others)
        for start in range(0, len(self.sessions), self.batch):
            self.store.write_sync(self._episodes, self.sessions[start : start + self.batch : 5])
        progress("dreams, candidates, profiles, episodes, jobs")

    def _recalls(self, tx: Tx, turns: list[tuple[int, str, float]]) -> None:
        for turn_id, chat, at in turns:
            items = tuple(
                f"m_{self.rng.randrange(100_000):07x}" for _ in range(self.rng.randint(1, 8))
            )
            tx.recalls.add(RecallRecord(turn_id, chat, at + 2, items, (turn_id - 4,)))

    def _dreams(self, tx: Tx, runs: int) -> None:
        for n in range(runs):
            chat = self.rng.choice(self.chats)
            started = self.now - self.rng.random() * SPREAD_DAYS * DAY
            report = tuple(
                Proposal(
                    "add", "fact", "".join(self.words.pick(4, 10)), f"chat:{chat}", fate="created"
                )
                for _ in range(20)
            )
            run = DreamRun(f"d_{n:05d}", chat, "schedule", started)
            tx.dreams.start(run)
            tx.dreams.save(
                replace(
                    run,
                    outcome="ok",
                    proposals=20,
                    applied=15,
                    rejected=5,
                    report=report,
                    finished_at=started + 30,
                )
            )

    def _others(self, tx: Tx) -> None:
        for n in range(2_000):
            candidate = Candidate(
                f"chat:{self.rng.choice(self.chats)}", "fact", f"待审 {n}", "llm_dream"
            )
            tx.candidates.add(
                f"c_{n:05d}", candidate, "pending" if n % 2 else "accepted", None, "", self.now
            )
        for user in range(500):
            for k in range(5):
                entry = ProfileEntry(
                    f"p_{user}_{k}", f"bench:u{user}", "基础特征", f"第{k}条", created_at=self.now
                )
                tx.profiles.add(entry, f"第 {k} 条")
        for job in ("dream", "embedding_upkeep", "markdown_sync", "cleanup_empty_sessions"):
            run_id = tx.jobs.start(job, "bench", self.now - 60)
            tx.jobs.finish(run_id, "ok", {"done": 1}, None, self.now - 30)

    def _episodes(self, tx: Tx, sessions: list[tuple[str, str, float, float]]) -> None:
        for session_id, chat, began, ended in sessions:
            words = self.words.pick(8, 20)
            episode = Episode(
                f"e_{session_id}",
                session_id,
                chat,
                "".join(words),
                tuple(words[:3]),
                began,
                ended,
                SESSION_TURNS,
                ended,
            )
            tx.episodes.put(episode, " ".join(words))


# -- the console over HTTP --------------------------------------------------------------------


def write_config(path: Path) -> None:
    """`nahida admin`'s config: the console on a free loopback port, recall by meaning off, and
    a provider on a closed loopback port (the doctor's ping fails at once)."""
    tree = {
        "providers": {
            "main": {
                "type": "openai",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": "sk-bench",
                "model": "bench",
                "timeout": 2,
                "max_retries": 0,
            }
        },
        "bot": {"timezone": str(TZ)},
        "memory": {"embedding": {"backend": "none"}, "dreaming": {"enabled": False}},
        "scheduler": {"enabled": False},
        "admin": {"enabled": True, "port": 0},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(tree), encoding="utf-8")


async def log_in(client: aiohttp.ClientSession, url: str, token: str) -> None:
    async with client.get(url + "login") as response:
        form = await response.text()
    found = re.search(r'name="csrf" value="([^"]+)"', form)
    assert found, "the login page has no CSRF field"
    fields = {"csrf": found.group(1), "secret": token, "next": "/admin/"}
    async with client.post(url + "login", data=fields, allow_redirects=False) as response:
        assert response.status in (302, 303), f"login answered {response.status}"


async def timed(client: aiohttp.ClientSession, url: str, n: int) -> tuple[float, float]:
    async def ask() -> None:
        async with client.get(url, allow_redirects=False) as response:
            await response.read()
            assert response.status == 200, f"{url} answered {response.status}"

    for _ in range(2):
        await ask()
    took = []
    for _ in range(n):
        started = time.perf_counter()
        await ask()
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    return statistics.median(took), took[max(0, round(0.95 * n) - 1)]


def addresses(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, path under /admin/) of each page and its API answer."""
    chat = quote(facts["chat"], safe="")
    person = quote(facts["person"], safe="")
    session = facts["session"]
    since, until = facts["week"]
    ask = urlencode({"chat": facts["chat"], "user": facts["person"].split(":")[1], "q": "会议"})
    item = "m_0000013"  # superseded by the next one: a chain, evidence in context
    pairs = [
        ("Overview", ""),
        ("Memory: search as a person in a group", f"memory?{ask}"),
        ("Items: first page", "items"),
        ("Items: page 1,000", "items?offset=50000"),
        ("Items: chat scope, kind task", "items?scope=chat&kind=task"),
        ("Items: archived", "items?status=archived"),
        ("Items: one week", f"items?since={since}&until={until}"),
        ("Items: text", "items?text=%E4%BC%9A%E8%AE%AE"),
        ("Item", f"items/{item}"),
        ("Review", "review"),
        ("People: first page", "people"),
        ("People: page 40", "people?offset=1950"),
        ("Person", f"people/{person}"),
        ("Chats: first page", "chats"),
        ("Chat", f"chats/{chat}"),
        ("Session transcript", f"sessions/{session}"),
        ("Dreams: first page", "dreams"),
        ("Dream run", "dreams/d_00042"),
        ("Settings", "settings"),
    ]
    answers = {
        "": "overview",
        "memory": "search",
        "items": "items",
        "review": "review",
        "people": "people",
        "chats": "chats",
        "sessions": "sessions",
        "dreams": "dreams",
        "settings": "settings",
    }
    rows = []
    for label, path in pairs:
        rows.append((f"{label} (page)", path))
        head, _, rest = path.partition("/")
        page, _, query = head.partition("?")
        api = answers[page] + (f"/{rest}" if rest else "") + (f"?{query}" if query else "")
        rows.append((f"{label} (API)", f"api/{api}"))
    return rows


async def facts_of(memory: Any) -> dict[str, Any]:
    """What the pages ask about: the group chat active last, its latest session, a person,
    the last week."""
    chats = await memory.admin.chats(limit=50)
    chat = next(c.chat for c in chats.rows if ":group:" in c.chat)
    sessions = await memory.admin.sessions(chat, limit=1)
    today = datetime.now(TZ).date()
    return {
        "chat": chat,
        "session": sessions.rows[0].id,
        "person": "bench:u7",  # items of their own and about them
        "week": (today - timedelta(days=6), today),
    }


async def serve_and_measure(
    paths: Paths, calls: int
) -> tuple[list[tuple[str, float, float]], float]:
    """Serve the console over the filled data dir; (label, p50, p95) of each address, and how
    long the first page took to take every person in."""
    state = State(paths)
    config = state.config
    memory = memory_for(config, paths)
    server = ConsoleServer(
        create_app(memory, config, paths.data_dir, checks=console_checks(state)),
        config.admin.host,
        0,
    )
    try:
        await server.start()
        url = server.url
        jar = aiohttp.CookieJar(unsafe=True)  # cookies for 127.0.0.1
        async with aiohttp.ClientSession(cookie_jar=jar) as client:
            await log_in(client, url, TokenFile(paths.data_dir).read())
            started = time.perf_counter()
            async with client.get(url + "people?limit=1") as response:
                assert response.status == 200
            first = time.perf_counter() - started
            facts = await facts_of(memory)
            rows = []
            for label, path in addresses(facts):
                rows.append((label, *await timed(client, url + path, calls)))
        return rows, first
    finally:
        await server.stop()
        memory.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1_000_000)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--batch", type=int, default=20_000, help="rows a unit of work writes")
    parser.add_argument("--dir", type=Path, help="the data dir's home (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the data; reuse what is there")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    folder = Path(args.dir or tempfile.mkdtemp(prefix="nahida-bench-console-"))
    paths = Paths(folder / "nahida.yaml", folder / "data", folder / "workspace")
    write_config(folder / "nahida.yaml")
    paths.data_dir.mkdir(parents=True, exist_ok=True)
    reuse = args.keep and paths.database.exists()
    started = time.perf_counter()

    def progress(what: str) -> None:
        print(
            f"\r  {time.perf_counter() - started:6.0f} s  {what:<40}",
            end="",
            file=sys.stderr,
            flush=True,
        )

    try:
        if not reuse:
            store = SqliteStore(paths.database)
            try:
                fill = Fill(store, random.Random(args.seed), time.time(), args.batch)
                fill.turns(args.turns, progress)
                fill.items(args.items, progress)
                fill.the_rest(progress)
            finally:
                store.close()
            print(file=sys.stderr)
            filled = time.perf_counter() - started
            print(f"filled {args.turns:,} turns and {args.items:,} items in {filled:.0f} s")
        rows, first = asyncio.run(serve_and_measure(paths, args.calls))
        size = sum(p.stat().st_size for p in paths.data_dir.glob("nahida.db*")) / 2**20
        print(f"\n{args.calls} requests each after 2 to warm up; database {size:,.0f} MB\n")
        print(f"| {'page or answer':<46} | {'p50 ms':>7} | {'p95 ms':>7} |")
        print(f"|{'-' * 48}|{'-' * 9}|{'-' * 9}|")
        for label, p50, p95 in rows:
            print(f"| {label:<46} | {p50:7.1f} | {p95:7.1f} |")
        worst = max(rows, key=lambda row: row[1]), max(rows, key=lambda row: row[2])
        print(f"\nslowest p50: {worst[0][0]} {worst[0][1]:.1f} ms;", end=" ")
        print(f"slowest p95: {worst[1][0]} {worst[1][2]:.1f} ms")
        print(f"the first page after the fill (taking every person in): {first * 1000:,.0f} ms")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
