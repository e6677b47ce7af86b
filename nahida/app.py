"""The composition root: the only module that imports concrete adapters and providers.

`App` wires config → database → model router → runner → bus → adapters, owns the one TaskGroup
every long-running task belongs to, and shuts down gracefully: stop accepting, drain the bus
(replies still go out), then stop adapters, the server and the scheduler, then close the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from nahida import history
from nahida.adapters.base import Adapter
from nahida.adapters.console.adapter import USER as CONSOLE_USER
from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.bus import EventBus
from nahida.commands import memory as memory_commands
from nahida.commands import session as session_commands
from nahida.commands.router import CommandRouter
from nahida.config import Config, ProviderConfig
from nahida.db import Database
from nahida.envelope import Reply
from nahida.errors import AdapterError, ConfigError
from nahida.memory.extract import ExtractionHook
from nahida.memory.injection import MemoryInjection
from nahida.memory.service import MemoryService
from nahida.memory.tokens import warm_up
from nahida.plugins import LoadedPlugin, context_factory, load_plugins
from nahida.policy import ReplyPolicy
from nahida.providers.base import Provider
from nahida.providers.client import ClientSettings
from nahida.providers.router import ModelRouter, resolve_routes
from nahida.ratelimit import RateLimiter
from nahida.runner import RunnerSettings, SessionRunner
from nahida.scheduler import Scheduler
from nahida.server import InboundServer
from nahida.workspace import Persona, ensure_workspace

log = structlog.get_logger(__name__)

# Platform adapters by channel name. Each module has `build(section, config) -> Adapter`, which
# validates its `channels.<name>` section with the adapter's own config model.
CHANNELS: dict[str, str] = {
    "onebot": "nahida.adapters.onebot.adapter",
    "lark": "nahida.adapters.lark.adapter",
}


@dataclass(frozen=True)
class Paths:
    config: Path | None
    data_dir: Path
    workspace: Path
    plugins: Path | None = None  # None: load no plugins

    @property
    def database(self) -> Path:
        return self.data_dir / "nahida.db"


def build_provider(name: str, settings: ProviderConfig) -> Provider:
    client = ClientSettings(
        base_url=settings.base_url,
        api_key=settings.api_key.get_secret_value(),
        timeout=settings.timeout,
        max_retries=settings.max_retries,
    )
    # Imported here: each SDK takes up to a second to import, and most installs use one.
    if settings.type == "anthropic":
        from nahida.providers.anthropic import AnthropicProvider

        return AnthropicProvider(name, client)
    from nahida.providers.openai import OpenAIProvider

    return OpenAIProvider(name, client)


def build_model_router(config: Config, source: str = "config") -> ModelRouter:
    routes = resolve_routes(
        config.models, {n: p.model for n, p in config.providers.items()}, source=source
    )
    providers = {name: build_provider(name, p) for name, p in config.providers.items()}
    return ModelRouter(providers, routes)


def platform_adapters(config: Config, source: str = "config") -> list[Adapter]:
    adapters = []
    for name, section in config.channels.items():
        if not section.get("enabled", False):
            continue
        module = CHANNELS.get(name)
        if module is None:
            known = ", ".join(sorted(CHANNELS))
            raise ConfigError(
                f"unknown channel {name!r} (known: {known})", source=source, key=f"channels.{name}"
            )
        build: Callable[[dict[str, Any], Config], Adapter] = importlib.import_module(module).build
        adapters.append(build(section, config))
    return adapters


class App:
    def __init__(
        self,
        config: Config,
        paths: Paths,
        *,
        adapters: Sequence[Adapter] = (),
        model: ModelRouter | None = None,
        stop_when_adapters_done: bool = False,
    ) -> None:
        self.config = config
        self.paths = paths
        source = str(paths.config) if paths.config else "config"
        ensure_workspace(paths.workspace)
        self.model = model or build_model_router(config, source)
        self.db = Database(paths.database)
        self.db.call(history.cleanup_empty)
        self.adapters = {a.platform: a for a in adapters}
        commands = CommandRouter()
        session_commands.register(commands)
        memory_commands.register(commands)
        admins = frozenset([*config.bot.admins, str(CONSOLE_USER)])
        self.memory = MemoryService(
            self.db, mode=config.memory.commit_mode, budget_tokens=config.memory.budget_tokens
        )
        self.plugins: list[LoadedPlugin] = (
            load_plugins(
                paths.plugins,
                context_factory(self.memory, commands),
                enabled=config.plugins.enabled,
                disabled=config.plugins.disabled,
            )
            if paths.plugins is not None
            else []
        )
        self.runner = SessionRunner(
            db=self.db,
            model=self.model,
            send=self.send,
            commands=commands,
            policy=ReplyPolicy(
                config.bot.group_policy, config.bot.nicknames, config.bot.group_overrides
            ),
            settings=RunnerSettings(
                language=config.bot.language,
                admins=admins,
                hot_size=config.session.hot_size,
                idle_split_seconds=config.session.idle_split_minutes * 60.0,
                context_tokens=config.session.context_tokens,
                max_tool_rounds=config.bot.max_tool_rounds,
            ),
            persona=Persona(paths.workspace),
            memory=self.memory,
            sources=[MemoryInjection(self.memory)],
            limiter=RateLimiter(config.bot.rate_limit.per_chat_per_minute),
            hooks=[
                ExtractionHook(self.memory),
                *(hook for plugin in self.plugins for hook in plugin.hooks),
            ],
        )
        self.bus = EventBus(
            self.runner.handle,
            concurrency=config.bus.concurrency,
            queue_size=config.bus.queue_size,
            idle_timeout=config.bus.idle_timeout,
        )
        self.server = InboundServer(config.server.host, config.server.port)
        self.scheduler = Scheduler()
        self.scheduler.every("cleanup_empty_sessions", self._cleanup, seconds=3600)
        self._stop_when_adapters_done = stop_when_adapters_done
        self._stop: asyncio.Event | None = None

    async def _cleanup(self) -> None:
        await self.db.run(history.cleanup_empty)

    async def send(self, reply: Reply) -> str | None:
        adapter = self.adapters.get(reply.chat.platform)
        if adapter is None:
            raise AdapterError(f"no adapter for platform {reply.chat.platform!r}")
        return await adapter.send(reply)

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def _run_adapter(self, adapter: Adapter) -> None:
        bound = log.bind(platform=adapter.platform)
        try:
            await adapter.run(self.bus.submit)
        except asyncio.CancelledError:
            raise
        except Exception:
            bound.exception("adapter_crashed")

    async def run(self) -> None:
        self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        await asyncio.to_thread(warm_up)  # jieba's dictionary loads before the first message
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stop)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self.bus.run())
                for adapter in self.adapters.values():
                    adapter.mount(self.server)
                if self.server.needed:
                    await self.server.start()
                if self.config.scheduler.enabled:
                    self.scheduler.start()
                tasks = [group.create_task(self._run_adapter(a)) for a in self.adapters.values()]
                waiters = [group.create_task(self._stop.wait())]
                if self._stop_when_adapters_done and tasks:
                    waiters.append(group.create_task(asyncio.wait(tasks)))  # type: ignore[arg-type]
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                log.info("shutting_down", accepted=self.bus.accepted, handled=self.bus.handled)
                await self.bus.shutdown()
                for task in [*tasks, *waiters]:
                    task.cancel()
                await self.server.stop()
                self.scheduler.stop()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)
            await self.model.aclose()
            self.db.close()


def console_app(config: Config, paths: Paths, console: ConsoleAdapter, **kwargs: Any) -> App:
    return App(config, paths, adapters=[console], stop_when_adapters_done=True, **kwargs)
