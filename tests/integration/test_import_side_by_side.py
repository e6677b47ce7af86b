"""A chat keeps working while `nahida history import` fills the same database (a message sent during
an import was once lost, and a chat process started then stayed slow afterwards)."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

from nahida.app import App, Paths
from nahida.envelope import Reply
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.helpers import History, config, envelope

ROOT = Path(__file__).resolve().parents[2]


class Silent:
    platform = "test"

    def __init__(self) -> None:
        self.sent: list[Reply] = []

    def mount(self, server: object) -> None:
        return None

    async def run(self, submit: object) -> None:
        await asyncio.Event().wait()

    async def send(self, reply: Reply) -> str | None:
        self.sent.append(reply)
        return None


def history_file(path: Path, turns: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for n in range(turns):
            record = {
                "chat": f"import:group:g{n % 200}",
                "user": f"u{n % 7}",
                "text": f"第{n}条：周末去杭州爬山吧，记得带水和防晒 #{n}",
                "time": f"2024-01-{1 + n // 5000:02d}T{(n // 200) % 24:02d}:{n % 60:02d}:00Z",
                "message_id": str(n),
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


async def test_chat_and_import_side_by_side(tmp_path: Path) -> None:
    data = tmp_path / "data"
    file = tmp_path / "history.jsonl"
    history_file(file, 30_000)
    channel = Silent()
    model = ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "m"}))
    cfg = config(bot={"rate_limit": {"per_chat_per_minute": 0}}, scheduler={"enabled": False})
    app = App(cfg, Paths(None, data, tmp_path / "ws"), adapters=[channel], model=model)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    importer = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nahida", "--data-dir", str(data), "history", "import", str(file),
        "--json", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    during: list[float] = []
    after: list[float] = []
    n = 0
    # the post-turn work runs as in the app: a queue nobody takes from fills up after its bound
    # and then holds up the next message for good (on a slow machine the import outlasts it)
    background = asyncio.create_task(app.background.run())
    try:
        while importer.returncode is None or len(after) < 10:
            if importer.returncode is None:
                with_timeout = asyncio.wait_for(importer.wait(), 0.05)
                await asyncio.gather(with_timeout, return_exceptions=True)
            started = time.perf_counter()
            await app.runner.handle(envelope(f"第{n}个问题：杭州好玩吗", chat="test:private:u1"))
            took = time.perf_counter() - started
            (during if importer.returncode is None else after).append(took)
            n += 1
        out, err = await importer.communicate()
        assert importer.returncode == 0, err.decode()
        assert json.loads(out)["imported"] == 30_000
        history = History(app.memory.store)
        stored = sum(s.turn_count for s in history.sessions("test:private:u1", 100))
    finally:
        await app.background.shutdown()
        await background
        app.memory.close()
    assert during, "the import ended before the chat began: nothing was side by side"
    assert len(channel.sent) == n and stored == 2 * n  # every message answered and stored
    assert max(during) < 10  # a busy database is waited for, never given up on
    assert statistics.median(after) < 0.2  # and no slowness stays behind
