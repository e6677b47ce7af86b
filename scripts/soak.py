"""Soak run: the real bot under mixed traffic and faults for a bounded time.

    .venv/bin/python scripts/soak.py --minutes 10

`nahida run` (a child process, started as users start it) serves OneBot over reverse WebSocket.
A fake implementation (`tests/fakes/onebot_impl.py`) in this process sends it mixed traffic:
group messages addressed to the bot and group talk that is not, private chats, commands
(remember, search, forget, rules, dream), and a private fact per person said in their private
chat. A fake OpenAI-compatible model (`tests/fakes/llm_server.py`) echoes each chat after a
moment (`--model-delay`, so replies are in flight when faults strike) and answers the memory's own
requests, dream requests with garbage now and then. Meanwhile, in turn:

- the implementation closes its socket (having answered every frame it read) and reconnects;
- the bot is killed with SIGKILL and started again, and the implementation redelivers the
  messages it has no answer to, and a few it has;
- the disk under the data dir and workspace fills up for a while (a tmpfs, which needs root;
  without it this fault is skipped and said so);
- a history import runs beside the bot (`nahida history import`).

At the end it prints the messages sent, answered, lost (addressed, never answered), answered
twice, private facts seen outside their scope (in a prompt or a reply of another chat), the
database's integrity check and the bot's memory over time. Exit code 1 when anything was lost,
answered twice or leaked, or the database is damaged.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes import memory_model  # noqa: E402
from tests.fakes.llm_server import FakeOpenAIServer  # noqa: E402
from tests.fakes.onebot_impl import Call, FakeOneBot, FakeSocket, at, text  # noqa: E402

BOT = 10001
ADMIN = 9000
TOKEN = "soak-token-7f3a9c1e"
TAG = re.compile(r"#t(\d+)")
LINES = [
    line.strip()
    for line in (ROOT / "tests" / "data" / "chat_lines_zh_en.txt").read_text("utf-8").splitlines()
    if line.strip()
    and not line.startswith("/")
    and not line.lower().startswith(("nahida", "纳西妲"))  # a nickname addresses the bot
]
PETS = ["Mimi", "Dudu", "Huahua", "Xiaohei", "Bobo", "Qiuqiu", "Tangyuan", "Doudou"]
GARBAGE = ["not json at all", '{"ops": [{"op": "explode"}]}', "{", '{"ops": "many"}', ""]


# -- what was sent and what came back --------------------------------------------------------


@dataclass
class Sent:
    event: dict[str, Any]
    chat: str  # "group:<id>" or "private:<user>"
    user: int
    replies_expected: int  # at most this many replies (0: observed talk, 2: a dream command)
    at: float


@dataclass
class Ledger:
    sent: dict[str, Sent] = field(default_factory=dict)  # message id -> what it was
    replies: Counter[str] = field(default_factory=Counter)  # message id -> replies
    unmatched: Counter[str] = field(default_factory=Counter)  # chat -> replies to nothing known
    facts: dict[int, str] = field(default_factory=dict)  # user -> their private pet's name
    leaks: list[str] = field(default_factory=list)
    remembered: list[str] = field(default_factory=list)  # group item ids to forget later
    by_tag: dict[int, str] = field(default_factory=dict)  # tag -> message id
    redelivered: int = 0

    def addressed(self) -> list[str]:
        return [m for m, s in self.sent.items() if s.replies_expected]

    def facts_in(self, text: str) -> set[int]:
        return {user for user, name in self.facts.items() if name in text}

    def check(self, where: str, text: str, allowed: set[int]) -> None:
        for user in self.facts_in(text) - allowed:
            self.leaks.append(f"{where}: the private fact of user {user} ({self.facts[user]})")

    def reply(self, call: Call) -> None:
        """One reply the bot sent: matched to its message, and checked for private facts."""
        message = call.params.get("message")
        segments = message if isinstance(message, list) else []
        said = "".join(s["data"].get("text", "") for s in segments if s.get("type") == "text")
        if call.action == "send_group_msg":
            chat = f"group:{call.params.get('group_id')}"
            self.check(f"a reply in {chat}", said, set())
            quoted = [s["data"]["id"] for s in segments if s.get("type") == "reply"]
            target = quoted[0] if quoted else None
        else:
            user = int(call.params.get("user_id", 0))
            chat = f"private:{user}"
            self.check(f"a reply in {chat}", said, {user})
            tag = TAG.search(said)
            target = self.by_tag.get(int(tag.group(1))) if tag else self._oldest_open(chat)
        if target is None or target not in self.sent:
            self.unmatched[chat] += 1
            return
        self.replies[target] += 1
        found = re.search(r"\bm_[0-9a-f]{6}\b", said)
        if found and self.sent[target].event.get("raw_message", "").find("/memory remember") >= 0:
            self.remembered.append(found.group(0))

    def _oldest_open(self, chat: str) -> str | None:
        for message_id, sent in self.sent.items():
            if sent.chat == chat and sent.replies_expected and not self.replies[message_id]:
                return message_id
        return None

    def prompt(self, body: dict[str, Any]) -> None:
        """A model request: what it shows must be the asker's to see."""
        shown = json.dumps(body, ensure_ascii=False)
        task = memory_model.memory_task(body)
        if task is not None:  # the memory's own work: one chat's turns, one person's facts
            if len(self.facts_in(shown)) > 1:
                self.leaks.append(
                    f"a {task} request: facts of users {sorted(self.facts_in(shown))}"
                )
            return
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        last = json.dumps(users[-1].get("content", ""), ensure_ascii=False) if users else ""
        tag = TAG.search(last)
        message = self.by_tag.get(int(tag.group(1))) if tag else None
        if message is None:
            return
        sent = self.sent[message]
        allowed = {sent.user} if sent.chat.startswith("private:") else set()
        self.check(f"the prompt for {message} in {sent.chat}", shown, allowed)


# -- the fakes --------------------------------------------------------------------------------


class SoakModel(FakeOpenAIServer):
    """Echoes chats; answers dream requests with garbage `garbage` of the time; checks every
    request for private facts out of place; keeps no request log (the run is long)."""

    def __init__(self, ledger: Ledger, rng: random.Random, garbage: float, delay: float) -> None:
        super().__init__()
        self.ledger = ledger
        self.rng = rng
        self.garbage = garbage
        self.delay = delay  # a chat answer takes 0 to twice this many seconds, as models do
        self.calls: Counter[str] = Counter()

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        task = memory_model.memory_task(body) or "chat"
        self.calls[task] += 1
        self.ledger.prompt(body)
        if task == "chat" and self.delay:
            await asyncio.sleep(self.rng.uniform(0, 2 * self.delay))
        if task == "dream" and self.rng.random() < self.garbage:
            self.dream_script.append(self.rng.choice(GARBAGE))
            self.calls["dream garbage"] += 1
        answer = await super()._handle(request)
        self.requests.clear()
        return answer


class Implementation(FakeOneBot):
    """The fake implementation as a well-behaved one restarts: it answers every action frame it
    has read before it closes a socket, so a reply it took is a reply it acknowledged."""

    def __init__(self) -> None:
        super().__init__(BOT)
        self.turn = asyncio.Lock()  # one frame read and answered at a time, or a close

    async def _serve_socket(self, sock: FakeSocket) -> None:
        async for message in sock.ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            async with self.turn:
                if sock.frozen:
                    break
                frame = json.loads(message.data)
                action, params = frame["action"], frame.get("params") or {}
                self._record(Call(action, params, frame.get("echo"), sock.label, time.monotonic()))
                answer = self.answer(action, params)
                if answer is not None:
                    await sock.ws.send_str(json.dumps({**answer, "echo": frame.get("echo")}))
        sock.closed.set()

    async def drop(self, sock: FakeSocket) -> None:
        async with self.turn:
            sock.frozen = True
        with contextlib.suppress(Exception):
            await sock.ws.close()


# -- the bot ----------------------------------------------------------------------------------


class Bot:
    """`nahida run` in a child process: started, killed, stopped; its memory sampled."""

    def __init__(self, home: Path, log: Path) -> None:
        self.home = home
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.rss: list[tuple[float, int]] = []  # (seconds into the run, kB of the bot's tree)

    def args(self, *command: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "nahida",
            "--config",
            str(self.home / "nahida.yaml"),
            "--data-dir",
            str(self.home / "disk" / "data"),
            "--workspace",
            str(self.home / "disk" / "workspace"),
            "--plugins-dir",
            str(self.home / "plugins"),
            *command,
        ]

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("NAHIDA", "OPENAI"))}
        return {**keep, "PYTHONPATH": str(ROOT)}

    def start(self) -> None:
        self.starts += 1
        with self.log.open("ab") as out:
            out.write(f"\n--- start {self.starts} ---\n".encode())
            self.proc = subprocess.Popen(
                self.args("run"), cwd=ROOT, env=self.env(), stdout=out, stderr=out
            )

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, within: float = 60.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(within)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def sample(self, at: float) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.rss.append((at, _tree_rss(self.proc.pid)))


def _tree_rss(pid: int) -> int:
    """kB resident of a process and its descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, []))
        with contextlib.suppress(OSError):
            for line in (Path("/proc") / str(current) / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def write_config(home: Path, model_url: str, port: int) -> None:
    (home / "plugins").mkdir(exist_ok=True)
    config = {
        "server": {"host": "127.0.0.1", "port": port},
        "providers": {
            "fake": {
                "type": "openai",
                "base_url": model_url,
                "api_key": "sk-soak",
                "model": "soak-model",
                "timeout": 30,
                "max_retries": 1,
            }
        },
        "bot": {"admins": [f"onebot:{ADMIN}"], "rate_limit": {"per_chat_per_minute": 0}},
        "channels": {
            "onebot": {
                "enabled": True,
                "mode": "reverse_ws",
                "path": "/onebot/v11/ws",
                "access_token": TOKEN,
            }
        },
        "memory": {
            "dreaming": {"interval_seconds": 60, "initial_delay_seconds": 20, "min_new_turns": 2},
            "markdown": {"sync_seconds": 5},
        },
        "logging": {"level": "INFO", "format": "json"},
    }
    (home / "nahida.yaml").write_text(json.dumps(config, ensure_ascii=False), "utf-8")


# -- the disk ---------------------------------------------------------------------------------


class Disk:
    """The data dir and workspace on a small tmpfs (root only), filled up on demand."""

    def __init__(self, path: Path, megabytes: int) -> None:
        self.path = path
        path.mkdir()
        self.mounted = False
        if os.geteuid() == 0:
            done = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "nahida-soak", str(path)],
                capture_output=True,
            )
            self.mounted = done.returncode == 0
        self.filler = path / "filler"

    def fill(self) -> int:
        """Fill the disk to its last byte; how many bytes that took."""
        written = 0
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for size in (1 << 20, 4096, 1):
                with contextlib.suppress(OSError):
                    while True:
                        written += os.write(fd, b"\0" * size)
        finally:
            os.close(fd)
        return written

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def release(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)


# -- the run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    minutes: float
    rate: float
    fault_every: float
    seed: int
    users: int
    groups: int
    garbage: float
    disk_mb: int
    drain: float
    model_delay: float


class Soak:
    def __init__(self, settings: Settings, home: Path) -> None:
        self.settings = settings
        self.home = home
        self.rng = random.Random(settings.seed)
        self.ledger = Ledger()
        self.users = list(range(300_001, 300_001 + settings.users))
        self.groups = {
            g: [ADMIN, *self.rng.sample(self.users, min(len(self.users), 5))]
            for g in range(400_001, 400_001 + settings.groups)
        }
        for user in self.users:
            self.ledger.facts[user] = f"{self.rng.choice(PETS)}{self.rng.randint(1000, 9999)}"
        self.impl = Implementation()
        self.url = ""  # the bot's reverse WebSocket
        self.sock: FakeSocket | None = None
        self.connected = asyncio.Event()
        self.tags = iter(range(1, 10**9))
        self.started = 0.0
        self.events: list[str] = []  # what happened when, for the report
        self.disk = Disk(home / "disk", settings.disk_mb)
        self.bot = Bot(home, home / "bot.log")

    def note(self, what: str) -> None:
        self.events.append(f"{time.monotonic() - self.started:6.0f}s  {what}")
        print(self.events[-1], flush=True)

    # -- traffic ---------------------------------------------------------------------------

    def _event(self) -> tuple[dict[str, Any], str, int, int]:
        """The next message: (event, chat, user, replies expected at most)."""
        rng, tag = self.rng, next(self.tags)
        roll = rng.random()
        if roll < 0.30 or not self.ledger.sent:
            user = rng.choice(self.users)
            pet = self.ledger.facts[user]
            said = rng.choice([f"记住我家的猫叫 {pet}", rng.choice(LINES), "我家的猫叫什么？"])
            event = self.impl.private_message(user, [text(f"{said} #t{tag}")])
            return self._tagged(event, tag), f"private:{user}", user, 1
        group = rng.choice(list(self.groups))
        user = rng.choice(self.groups[group])
        if roll < 0.55:  # group talk the bot only observes
            event = self.impl.group_message(group, user, [text(rng.choice(LINES))])
            return event, f"group:{group}", user, 0
        if roll < 0.85:
            asks = rng.choice([rng.choice(LINES), "大家家里的猫都叫什么？", "我家的猫叫什么？"])
            message = [at(BOT), text(f" {asks} #t{tag}")]
            event = self.impl.group_message(group, user, message, role=self._role(user))
            return self._tagged(event, tag), f"group:{group}", user, 1
        command, replies = self._command(user)
        message = [at(BOT), text(f" {command}")]
        event = self.impl.group_message(group, user, message, role=self._role(user))
        return event, f"group:{group}", user, replies

    def _tagged(self, event: dict[str, Any], tag: int) -> dict[str, Any]:
        self.ledger.by_tag[tag] = str(event["message_id"])
        return event

    def _command(self, user: int) -> tuple[str, int]:
        rng = self.rng
        if user == ADMIN and rng.random() < 0.15:
            return "/memory dream", 2  # its result comes as a second reply
        if user == ADMIN and self.ledger.remembered and rng.random() < 0.3:
            return f"/memory forget {self.ledger.remembered.pop(0)}", 1
        choices = [
            f"/memory remember 本群第{rng.randint(1, 99)}次例会改到周{rng.choice('一二三四五')}",
            f"/memory search {rng.choice(['例会', '猫', '周报', 'meeting'])}",
            "/rules",
            "/help",
            "/memory list",
        ]
        return rng.choice(choices), 1

    def _role(self, user: int) -> str:
        return "owner" if user == ADMIN else "member"

    async def traffic(self, until: float) -> None:
        """Messages at the configured rate until `until`; paused while no socket is open."""
        interval = 1.0 / self.settings.rate
        next_at = time.monotonic()
        while time.monotonic() < until:
            if not self.connected.is_set():
                await self.connected.wait()
                next_at = max(next_at, time.monotonic())  # no burst to catch up after a gap
            event, chat, user, replies = self._event()
            message_id = str(event["message_id"])
            self.ledger.sent[message_id] = Sent(event, chat, user, replies, time.monotonic())
            await self._send(event)
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))

    async def _send(self, event: dict[str, Any]) -> None:
        sock = self.sock
        if sock is None:
            return  # redelivered after the reconnect if it is unanswered
        with contextlib.suppress(Exception):
            await sock.send(event)

    # -- connection -------------------------------------------------------------------------

    async def connect(self, redeliver: bool) -> None:
        """Connect (retrying until the bot listens); `redeliver`: then send again what has no
        answer, and a few answered messages (those the bot must drop)."""
        while True:
            try:
                self.sock = await self.impl.connect(self.url, token=TOKEN)
                break
            except (aiohttp.ClientError, OSError):
                await asyncio.sleep(0.5)
        if redeliver:
            open_ = [m for m in self.ledger.addressed() if not self.ledger.replies[m]]
            answered = [m for m in self.ledger.addressed() if self.ledger.replies[m]][-200:]
            again = open_ + self.rng.sample(answered, min(5, len(answered)))
            for message_id in again:
                await self._send(self.ledger.sent[message_id].event)
            self.ledger.redelivered += len(again)
            self.note(f"redelivered {len(open_)} unanswered and {len(again) - len(open_)} answered")
        self.connected.set()

    # -- faults -----------------------------------------------------------------------------

    async def drop(self) -> None:
        self.connected.clear()
        if self.sock is not None:
            await self.impl.drop(self.sock)
        self.sock = None
        self.note("socket dropped by the implementation")
        await asyncio.sleep(self.rng.uniform(0.5, 3.0))
        await self.connect(redeliver=False)
        self.note("reconnected")

    async def kill(self) -> None:
        self.bot.kill()
        self.connected.clear()
        self.sock = None
        self.note("bot killed (SIGKILL)")
        await asyncio.sleep(1.0)
        self.bot.start()
        await self.connect(redeliver=True)
        self.note("bot restarted")

    async def fill_disk(self) -> None:
        if not self.disk.mounted:
            self.note("disk full skipped: mounting a tmpfs needs root")
            return
        taken = await asyncio.to_thread(self.disk.fill)
        self.note(f"disk full ({taken // 1024} kB filled) for 30 s")
        await asyncio.sleep(30)
        self.disk.free()
        self.note("disk space back")

    async def history_import(self) -> None:
        chat = f"onebot:group:{self.rng.choice(list(self.groups))}"
        lines = [
            json.dumps(
                {
                    "chat": chat,
                    "user": str(self.rng.choice(self.users)),
                    "text": self.rng.choice(LINES),
                    "time": f"2025-01-{1 + i // 100:02d}T10:{i % 60:02d}:00",
                    "message_id": f"import-{self.bot.starts}-{i}",
                },
                ensure_ascii=False,
            )
            for i in range(300)
        ]
        source = self.home / f"import-{self.bot.starts}.jsonl"
        source.write_text("\n".join(lines) + "\n", "utf-8")
        done = await asyncio.create_subprocess_exec(
            *self.bot.args("history", "import", str(source), "--json"),
            cwd=ROOT,
            env=self.bot.env(),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await done.communicate()
        try:
            said = f"{json.loads(out)['imported']} turns imported"
        except (ValueError, KeyError, TypeError):
            said = err.decode(errors="replace").strip()[-200:]
        self.note(f"history import beside the bot: exit {done.returncode}, {said}")

    async def faults(self, until: float) -> None:
        order = [self.drop, self.kill, self.fill_disk, self.history_import]
        n = 0
        while True:
            await asyncio.sleep(self.settings.fault_every)
            if time.monotonic() + 40 > until:
                return
            await order[n % len(order)]()
            n += 1

    async def sampler(self) -> None:
        while True:
            self.bot.sample(time.monotonic() - self.started)
            await asyncio.sleep(10)

    # -- the whole run ------------------------------------------------------------------------

    async def run(self) -> int:
        settings = self.settings
        model_at = SoakModel(self.ledger, self.rng, settings.garbage, settings.model_delay)
        async with model_at as model:
            port = _free_port()
            write_config(self.home, model.url, port)
            self.impl.on_call = self._on_call
            self.url = f"ws://127.0.0.1:{port}/onebot/v11/ws"
            async with self.impl:
                self.bot.start()
                self.started = time.monotonic()
                await self.connect(redeliver=False)
                self.note(f"bot up; data on {'a tmpfs' if self.disk.mounted else 'the disk'}")
                until = self.started + settings.minutes * 60
                sampler = asyncio.create_task(self.sampler())
                faults = asyncio.create_task(self.faults(until))
                await self.traffic(until)
                await faults
                self.note("traffic stopped; waiting for the last answers")
                await self._drain()
                sampler.cancel()
                self.bot.sample(time.monotonic() - self.started)
                code = self.bot.stop()
                self.note(f"bot stopped (exit {code})")
            return self.report(model.calls)

    async def _drain(self) -> None:
        """Wait for the open messages' answers, until none has come for `drain` seconds."""
        quiet_since, answered = time.monotonic(), -1
        while time.monotonic() - quiet_since < self.settings.drain:
            now = sum(1 for m in self.ledger.addressed() if self.ledger.replies[m])
            if now == len(self.ledger.addressed()):
                return
            if now != answered:
                answered, quiet_since = now, time.monotonic()
            await asyncio.sleep(1.0)

    def _on_call(self, call: Call) -> None:
        if call.action in ("send_group_msg", "send_private_msg", "send_msg"):
            self.ledger.reply(call)

    def report(self, calls: Counter[str]) -> int:
        ledger = self.ledger
        addressed = ledger.addressed()
        answered = [m for m in addressed if ledger.replies[m]]
        lost = [m for m in addressed if not ledger.replies[m]]
        twice = [m for m in ledger.sent if ledger.replies[m] > ledger.sent[m].replies_expected]
        observed_answered = [
            m for m, s in ledger.sent.items() if not s.replies_expected and ledger.replies[m]
        ]
        integrity = _integrity(self.home / "disk" / "data" / "nahida.db")
        print()
        print("soak run")
        print(f"  minutes                      {self.settings.minutes:g}")
        print(f"  messages sent                {len(ledger.sent)} ({len(addressed)} addressed)")
        print(f"  answered                     {len(answered)}")
        print(f"  lost                         {len(lost)}")
        print(f"  answered twice               {len(twice)}")
        print(f"  observed talk answered       {len(observed_answered)}")
        print(f"  replies matched to nothing   {sum(ledger.unmatched.values())}")
        print(f"  redelivered by the fake      {ledger.redelivered}")
        print(f"  private facts out of scope   {len(ledger.leaks)}")
        print(f"  integrity check              {integrity}")
        print(f"  bot starts                   {self.bot.starts}")
        print(f"  model requests               {dict(calls)}")
        for leak in ledger.leaks[:10]:
            print(f"    leak: {leak}")
        for message_id in lost[:10]:
            sent = ledger.sent[message_id]
            print(f"    lost: {message_id} in {sent.chat}: {_said(sent.event)!r}")
        for message_id in twice[:10]:
            sent = ledger.sent[message_id]
            print(f"    twice: {message_id} ({ledger.replies[message_id]}): {_said(sent.event)!r}")
        print("  memory of the bot, MB by minute:")
        for minute, low, high in _by_minute(self.bot.rss):
            print(f"    minute {minute:3d}: {low / 1024:6.1f} – {high / 1024:6.1f}")
        print("  faults:")
        for line in self.events:
            print(f"    {line}")
        bad = lost or twice or ledger.leaks or observed_answered or integrity != "ok"
        return 1 if bad else 0


def _said(event: dict[str, Any]) -> str:
    message = event.get("message")
    if isinstance(message, list):
        return "".join(s["data"].get("text", "") for s in message if s.get("type") == "text")
    return str(message)


def _by_minute(samples: list[tuple[float, int]]) -> list[tuple[int, int, int]]:
    minutes: dict[int, list[int]] = {}
    for moment, kb in samples:
        if kb:
            minutes.setdefault(int(moment // 60), []).append(kb)
    return [(m, min(v), max(v)) for m, v in sorted(minutes.items())]


def _integrity(database: Path) -> str:
    try:
        with contextlib.closing(sqlite3.connect(database)) as conn:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.Error as exc:
        return f"failed: {exc}"
    return "; ".join(str(r[0]) for r in rows)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=6.0, help="messages per second")
    parser.add_argument("--fault-every", type=float, default=45.0, help="seconds between faults")
    parser.add_argument("--seed", type=int, default=49)
    parser.add_argument("--users", type=int, default=12)
    parser.add_argument("--groups", type=int, default=5)
    parser.add_argument("--garbage", type=float, default=0.4, help="share of dream answers")
    parser.add_argument("--disk-mb", type=int, default=256, help="the tmpfs's size")
    parser.add_argument("--drain", type=float, default=60.0, help="seconds without an answer")
    parser.add_argument(
        "--model-delay", type=float, default=0.5, help="a chat answer's mean seconds"
    )
    parser.add_argument("--keep", action="store_true", help="keep the run's folder")
    args = parser.parse_args()
    settings = Settings(
        args.minutes,
        args.rate,
        args.fault_every,
        args.seed,
        args.users,
        args.groups,
        args.garbage,
        args.disk_mb,
        args.drain,
        args.model_delay,
    )
    home = Path(tempfile.mkdtemp(prefix="nahida-soak-"))
    soak = Soak(settings, home)
    try:
        return asyncio.run(soak.run())
    finally:
        soak.bot.stop(10)
        if args.keep and soak.disk.mounted:
            shutil.copytree(soak.disk.path, home / "disk-kept", ignore=lambda *_: ["filler"])
        soak.disk.release()
        if args.keep:
            print(f"  the run's folder: {home} (bot.log, and the data in disk-kept/)")
        else:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
