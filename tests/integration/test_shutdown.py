"""SIGTERM while messages are in flight: everything accepted is answered and stored, then exit."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
from pathlib import Path

from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.app import Paths, console_app
from nahida.config import Config
from nahida.providers.base import ChatRequest, ChatResponse
from nahida.providers.router import ModelRouter, resolve_routes
from tests.helpers import History


class SlowModel:
    name = "slow"

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.started.set()
        await asyncio.sleep(0.3)
        return ChatResponse(f"slow: {request.messages[-1].content}")

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class Collect:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        self.lines.extend(line for line in text.splitlines() if line)
        return len(text)

    def flush(self) -> None:
        return None


async def test_sigterm_finishes_what_was_accepted(tmp_path: Path) -> None:
    """While the app runs, what its start-up made is out of the garbage collector's walks
    (`gc.freeze`); after, back in them."""
    read_fd, write_fd = os.pipe()
    os.write(write_fd, "第一条\n第二条\n第三条\n".encode())  # the pipe stays open: no EOF
    stdin = os.fdopen(read_fd, encoding="utf-8")
    out = Collect()
    console = ConsoleAdapter(stdin=stdin, stdout=out, interactive=False)  # type: ignore[arg-type]
    model = SlowModel()
    router = ModelRouter({"slow": model}, resolve_routes({}, {"slow": "m"}))
    paths = Paths(None, tmp_path / "data", tmp_path / "ws")
    app = console_app(Config(), paths, console, model=router)
    running = asyncio.create_task(app.run())
    await asyncio.wait_for(model.started.wait(), 10)
    assert gc.get_freeze_count() > 0
    await asyncio.sleep(0.05)  # let the console hand over the other lines
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(running, 10)
    assert gc.get_freeze_count() == 0
    os.close(write_fd)  # the reader thread sees end of input and stops
    await asyncio.sleep(0.2)
    stdin.close()
    assert out.lines == ["slow: 第一条", "slow: 第二条", "slow: 第三条"]
    with History(paths.database) as db:
        session = db.sessions(None, 1)[0]
        contents = [t.content for t in db.turns(session.id)]
    assert contents == [
        "第一条",
        "slow: 第一条",
        "第二条",
        "slow: 第二条",
        "第三条",
        "slow: 第三条",
    ]
