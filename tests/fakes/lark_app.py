"""A whole Nahida App with the Lark channel, wired to the fake platform, for end-to-end tests.

    async with FakeLarkServer() as lark, running_app(tmp_path, lark_config(lark)) as bot:
        await lark.push(message_event("hi"))
        [reply] = await lark.wait_messages(1)

The adapter is built through the app's channel registry (`platform_adapters`), exactly as
`nahida run` builds it; the model is the in-process EchoProvider. Every envelope the adapter
submits to the bus is recorded in `bot.envelopes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nahida.adapters.lark.adapter import LarkAdapter
from nahida.app import App, Paths, platform_adapters
from nahida.config import Config
from nahida.envelope import Envelope
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.fakes.lark_server import FakeLarkServer


def lark_config(lark: FakeLarkServer, **channel: Any) -> Config:
    return Config.model_validate(
        {
            "server": {"host": "127.0.0.1", "port": 0},
            "scheduler": {"enabled": False},
            "bot": {"language": "en"},
            "channels": {
                "lark": {
                    "enabled": True,
                    "app_id": lark.app_id,
                    "app_secret": lark.app_secret,
                    "domain": lark.url,
                    **channel,
                }
            },
        }
    )


def echo_model() -> ModelRouter:
    return ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "instant"}))


@dataclass
class RunningApp:
    app: App
    envelopes: list[Envelope] = field(default_factory=list)

    @property
    def adapter(self) -> LarkAdapter:
        adapter = self.app.adapters["lark"]
        assert isinstance(adapter, LarkAdapter)
        return adapter

    def webhook_url(self) -> str:
        path = self.adapter.settings.path
        return f"http://127.0.0.1:{self.app.server.port}{path}"


async def wait_until(check: Callable[[], bool], seconds: float = 10.0) -> None:
    """Poll `check` (state changed by other tasks and threads, so no event to wait on)."""
    async with asyncio.timeout(seconds):
        while not check():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


def lark_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "lark-ws"]


@contextlib.asynccontextmanager
async def running_app(
    tmp_path: Path, config: Config, model: ModelRouter | None = None
) -> AsyncIterator[RunningApp]:
    """Start the app, wait until the adapter knows its bot and listens; stop it cleanly after."""
    paths = Paths(None, tmp_path / "data", tmp_path / "workspace")
    app = App(config, paths, adapters=platform_adapters(config), model=model or echo_model())
    running = RunningApp(app)
    submit = app.bus.submit

    async def recording_submit(envelope: Envelope) -> bool:
        running.envelopes.append(envelope)
        return await submit(envelope)

    app.bus.submit = recording_submit  # type: ignore[method-assign]
    task = asyncio.create_task(app.run())
    try:
        # adapters run after mount and server start: a known identity means ready
        await wait_until(lambda: task.done() or running.adapter.identity is not None)
        if task.done():
            task.result()  # raises what went wrong
        yield running
    finally:
        app.stop()
        await asyncio.wait_for(task, 15)
