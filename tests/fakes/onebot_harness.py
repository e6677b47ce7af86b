"""Running the OneBot adapter (alone, or inside a whole App) on loopback for tests.

async with running_adapter(access_token="t") as bot:     # adapter + inbound server
    sock = await impl.connect(bot.ws_url, token="t")
    envelope = await bot.next_envelope()

async with running_app(tmp_path, {"mode": "reverse_ws"}) as app:   # the whole bot, echo model
    ...
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nahida.adapters.onebot.adapter import OneBotAdapter
from nahida.adapters.onebot.config import OneBotConfig
from nahida.app import App, Paths, platform_adapters
from nahida.config import Config
from nahida.envelope import Envelope
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from nahida.server import InboundServer

NICKNAMES = ("nahida", "纳西妲")


@dataclass
class AdapterHarness:
    adapter: OneBotAdapter
    server: InboundServer
    envelopes: asyncio.Queue[Envelope] = field(default_factory=asyncio.Queue)

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.server.port}{self.adapter.settings.path}"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}{self.adapter.settings.http_path}"

    async def next_envelope(self, within: float = 3.0) -> Envelope:
        async with asyncio.timeout(within):
            return await self.envelopes.get()

    async def no_envelope(self, within: float = 0.2) -> None:
        await asyncio.sleep(within)
        assert self.envelopes.empty(), f"unexpected envelope: {self.envelopes.get_nowait()}"

    async def wait_for(self, condition: Any, within: float = 3.0) -> None:
        async with asyncio.timeout(within):
            while not condition():  # noqa: ASYNC110 - polling adapter state, no event exists
                await asyncio.sleep(0.005)


@contextlib.asynccontextmanager
async def running_adapter(
    on_submit: Callable[[Envelope], Awaitable[None]] | None = None, **settings: Any
) -> AsyncIterator[AdapterHarness]:
    """The adapter alone; `on_submit` is awaited before each envelope is handed over (a slow
    bus)."""
    config = OneBotConfig.model_validate({"enabled": True, **settings})
    adapter = OneBotAdapter(config, nicknames=NICKNAMES, bot_name="Nahida")
    server = InboundServer("127.0.0.1", 0)
    adapter.mount(server)
    if server.needed:
        await server.start()
    harness = AdapterHarness(adapter, server)

    async def submit(envelope: Envelope) -> bool:
        if on_submit is not None:
            await on_submit(envelope)
        harness.envelopes.put_nowait(envelope)
        return True

    task = asyncio.create_task(adapter.run(submit))
    try:
        yield harness
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await server.stop()


def echo_model() -> ModelRouter:
    return ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "instant"}))


def app_config(channel: dict[str, Any], store: str = "sqlite", **bot: Any) -> Config:
    return Config.model_validate(
        {
            "server": {"host": "127.0.0.1", "port": 0},
            "channels": {"onebot": {"enabled": True, **channel}},
            "bot": {"nicknames": list(NICKNAMES), **bot},
            "scheduler": {"enabled": False},
            "memory": {"store": store},
        }
    )


@contextlib.asynccontextmanager
async def running_app(
    tmp_path: Path, channel: dict[str, Any], store: str = "sqlite", **bot: Any
) -> AsyncIterator[App]:
    """The whole bot (config → platform_adapters → App) with the instant echo model, its memory
    in `store` (`memory.store`)."""
    config = app_config(channel, store, **bot)
    paths = Paths(None, tmp_path / "data", tmp_path / "workspace")
    app = App(config, paths, adapters=platform_adapters(config), model=echo_model())
    task = asyncio.create_task(app.run())
    try:
        async with asyncio.timeout(10):
            while app.server.port == 0 and channel.get("mode", "reverse_ws") != "forward_ws":  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        yield app
    finally:
        app.stop()
        await task


def onebot_of(app: App) -> OneBotAdapter:
    adapter = app.adapters["onebot"]
    assert isinstance(adapter, OneBotAdapter)
    return adapter
