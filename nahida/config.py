"""Configuration: one pydantic tree from YAML (`config_yaml`) and `NAHIDA__A__B` overrides.

Order of precedence (highest first): `NAHIDA__SECTION__KEY` environment variables, the YAML file,
the defaults below. With no provider declared, `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` (with
`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `NAHIDA_MODEL`) declare one. `${VAR}` with VAR unset is
an error; `${VAR:-}` is an explicit empty default. Any error is a `ConfigError` naming the file and
the dotted key, or the `NAHIDA__…` variable when the wrong value came from one.
"""

from __future__ import annotations

import copy
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from nahida.config_yaml import dotted, expand_vars, read_yaml
from nahida.envelope import ChatKey
from nahida.errors import ConfigError

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"
ENV_PREFIX = "NAHIDA__"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerConfig(_Model):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)


def is_loopback(host: str | None) -> bool:
    """Whether `host` (an address or a name) reaches this machine only; any name but `localhost`
    might resolve elsewhere, and an empty host or 0.0.0.0 listens on every interface."""
    if not host:
        return False
    host = host.strip().strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class AdminConfig(_Model):
    """The memory console (docs/console.md): its own listener, on loopback unless allowed."""

    enabled: bool = False  # `nahida run` serves the console too; `nahida admin` always does
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    # a host beyond loopback is refused unless this says so (put HTTPS in front of it)
    allow_remote: bool = False
    # `nahida admin hash-password`; empty: only the token in the data dir logs in
    password_hash: SecretStr = SecretStr("")
    language: Literal["zh", "en"] | None = None  # None: bot.language
    session_hours: float = Field(12.0, gt=0, le=24 * 30)  # a login lasts this long at most
    idle_minutes: float = Field(60.0, gt=0, le=24 * 60)  # and ends after this long unused


class ProviderConfig(_Model):
    type: Literal["openai", "anthropic"]
    base_url: str | None = None
    api_key: SecretStr = SecretStr("")
    model: str = ""  # the provider's default model for routes that name only the provider
    timeout: float = Field(60.0, gt=0, le=3600)
    max_retries: int = Field(2, ge=0, le=10)


class RateLimitConfig(_Model):
    per_chat_per_minute: int = Field(20, ge=0, le=10_000)


class BotConfig(_Model):
    name: str = "Nahida"
    language: Literal["zh", "en"] = "zh"
    nicknames: list[str] = Field(default_factory=lambda: ["nahida", "纳西妲"])
    admins: list[str] = Field(default_factory=list)  # UserKeys, e.g. "onebot:10001"
    group_policy: Literal["mention", "prefix", "keyword", "probability", "always", "never"] = (
        "mention"
    )
    group_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    rate_limit: RateLimitConfig = Field(default_factory=RateLimitConfig)
    max_tool_rounds: int = Field(4, ge=0, le=20)
    # chat key -> mode; a chat not named here is an assistant chat. Only companion chats have
    # 心理与情绪 (emotions) filled in their people's profiles by background extraction.
    chat_modes: dict[str, Literal["assistant", "companion"]] = Field(default_factory=dict)
    timezone: str | None = None  # IANA name, e.g. "Asia/Shanghai"; None: the system's zone
    # a message that waited longer than this (seconds since Nahida received it, whatever the
    # platform's clock says) when its turn comes gets a short apology instead of a stale answer;
    # 0 turns this off
    max_reply_delay: float = Field(60.0, ge=0, le=86_400)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(
                    f"unknown time zone {value!r} (an IANA name such as Asia/Shanghai)"
                ) from None
        return value

    @field_validator("chat_modes")
    @classmethod
    def _chat_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for chat in value:
            try:
                ChatKey.parse(chat)
            except ValueError:
                raise ValueError(
                    f"{chat!r} is not a chat key (platform:private|group:id, e.g."
                    " onebot:private:42)"
                ) from None
        return value

    def companion_chats(self) -> frozenset[str]:
        return frozenset(c for c, mode in self.chat_modes.items() if mode == "companion")

    def zone(self) -> tzinfo:
        """Where the bot's days begin: prompts, commands and relative dates use it."""
        if self.timezone is not None:
            return ZoneInfo(self.timezone)
        local = datetime.now().astimezone().tzinfo
        assert local is not None
        return local


# Keys that no longer do anything, still accepted so that an older config starts (the bot warns
# at start): the store always runs on one database thread of the bot's process, and observed
# talk never waits for the model.
RETIRED = (
    ("memory", "store_process"),
    ("memory", "store_reader"),
    ("bus", "observed_concurrency"),
)


class BusConfig(_Model):
    # answers waiting on the model at once (and pieces of background work running at once)
    concurrency: int = Field(16, ge=1, le=1024)
    observed_concurrency: int | None = Field(None, exclude=True)  # retired (RETIRED)
    queue_size: int = Field(1000, ge=1, le=100_000)  # messages waiting, in all chats together
    idle_timeout: float = Field(60.0, gt=0, le=86_400)


class SessionConfig(_Model):
    hot_size: int = Field(10, ge=0, le=100)  # rounds of the current session shown verbatim
    # a message after this gap starts a new session
    idle_split_minutes: int = Field(720, ge=0, le=525_600)
    context_tokens: int = Field(6000, ge=500, le=2_000_000)  # approximate budget of the prompt
    compress_batch: int = Field(5, ge=1, le=100)  # rounds out of the hot window per summary update
    warm_capacity: int = Field(20, ge=2, le=1000)  # rounds a summary covers before it is rolled


class EmbeddingConfig(_Model):
    """Vectors for recall by meaning (`auto`: the `embed` route when `models.embed` is declared,
    else the local model where it is installed, else none: lexical recall only)."""

    backend: Literal["auto", "local", "provider", "none"] = "auto"
    query_timeout: float = Field(1.0, gt=0, le=30)  # seconds a message waits for its query vector
    # of the time the local model may spend on query vectors (1: every query; beyond: lexical)
    query_share: float = Field(0.25, ge=0, le=1)
    batch_size: int = Field(16, ge=1, le=512)  # texts per background embedding call
    background_threads: int = Field(1, ge=0, le=64)  # local model's cores in the background; 0: all


class DreamingConfig(_Model):
    """LLM consolidation in the background (DESIGN §8), on the `dream` route (else `chat`)."""

    enabled: bool = True  # needs a model; without one each run is recorded as skipped
    interval_seconds: float = Field(3600.0, ge=1, le=30 * 86_400)
    initial_delay_seconds: float = Field(300.0, ge=0, le=30 * 86_400)
    max_chats: int = Field(20, ge=1, le=10_000)  # chats per scheduled run
    max_turns: int = Field(1000, ge=1, le=100_000)  # new turns of one chat per run
    batch_turns: int = Field(200, ge=2, le=2000)  # turns per model call
    batch_tokens: int = Field(8000, ge=500, le=200_000)  # what one call shows, about
    # a scheduled run skips chats with fewer new turns
    min_new_turns: int = Field(4, ge=1, le=100_000)
    max_ops: int = Field(20, ge=1, le=200)  # ops applied per model answer; the rest rejected
    timeout_seconds: float = Field(120.0, gt=0, le=3600)  # one model call


class MarkdownConfig(_Model):
    """The Markdown projection (DESIGN §9): workspace/MEMORY.md, users/<user>.md, daily notes."""

    enabled: bool = True
    sync_seconds: float = Field(5.0, ge=0.5, le=3600)  # how often `nahida run` looks at the files
    max_bullets: int = Field(200, ge=1, le=10_000)  # MEMORY.md's block shows at most this many
    daily_notes: bool = True  # workspace/memory/YYYY-MM-DD.md


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class MemoryConfig(_Model):
    # where memory lives: "sqlite" (one file in the data dir, one process) or a PostgreSQL URI,
    # `postgresql://user:password@host:5432/db` (several processes; also from DATABASE_URL)
    store: str = "sqlite"
    budget_tokens: int = Field(1500, ge=0, le=100_000)
    commit_mode: Literal["auto_safe", "manual_review", "auto_full"] = "auto_safe"
    search: Literal["hybrid", "lexical", "vector"] = "hybrid"  # with an embedder; else lexical
    rerank: bool = False  # reorder the best hits with the `rerank` route's model
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    dreaming: DreamingConfig = Field(default_factory=DreamingConfig)
    markdown: MarkdownConfig = Field(default_factory=MarkdownConfig)
    store_process: bool | None = Field(None, exclude=True)  # retired (RETIRED)
    store_reader: bool | None = Field(None, exclude=True)  # retired (RETIRED)

    @field_validator("store")
    @classmethod
    def _known_store(cls, value: str) -> str:
        value = value.strip()
        if value == "sqlite" or value.startswith(POSTGRES_SCHEMES):
            return value
        raise ValueError(
            "memory.store is sqlite or a PostgreSQL URI such as"
            " postgresql://nahida:PASSWORD@127.0.0.1:5432/nahida"
        )

    @property
    def postgres(self) -> str | None:
        """The PostgreSQL URI memory lives at (None: SQLite)."""
        return None if self.store == "sqlite" else self.store


class LimitsConfig(_Model):
    """What one input may weigh; beyond it the sender gets a clear answer and nothing grows."""

    # a longer chat message is not sent to the model
    message_chars: int = Field(4000, ge=100, le=1_000_000)
    reply_chars: int = Field(4000, ge=100, le=100_000)  # a longer answer is cut, and says so
    # a longer memory (remember, CLI, plugins) is refused
    item_chars: int = Field(1000, ge=20, le=100_000)
    # a longer history-import line is skipped
    import_line_bytes: int = Field(1 << 20, ge=1024, le=64 << 20)


class LoggingConfig(_Model):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    format: Literal["auto", "console", "json"] = "auto"


class SchedulerConfig(_Model):
    enabled: bool = True


class PluginsConfig(_Model):
    enabled: list[str] | None = None  # None: every plugin found in the plugins folder
    disabled: list[str] = Field(default_factory=list)


class Config(_Model):
    server: ServerConfig = Field(default_factory=ServerConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    models: dict[str, str] = Field(default_factory=dict)  # task -> "provider/model" | "provider"
    bot: BotConfig = Field(default_factory=BotConfig)
    bus: BusConfig = Field(default_factory=BusConfig)
    session: SessionConfig = Field(default_factory=SessionConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    channels: dict[str, dict[str, Any]] = Field(default_factory=dict)  # validated by each adapter
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    plugins: PluginsConfig = Field(default_factory=PluginsConfig)
    admin: AdminConfig = Field(default_factory=AdminConfig)

    @field_validator("models")
    @classmethod
    def _known_tasks(cls, value: dict[str, str]) -> dict[str, str]:
        tasks = {"chat", "compress", "dream", "embed", "rerank"}
        for task in value:
            if task not in tasks:
                raise ValueError(f"unknown task {task!r}; tasks are {', '.join(sorted(tasks))}")
        return value

    def retired_keys(self) -> list[str]:
        """The retired keys this config still sets, dotted (`memory.store_process`)."""
        return [
            f"{section}.{key}"
            for (section, key) in RETIRED
            if getattr(getattr(self, section), key) is not None
        ]

    def secrets(self) -> list[str]:
        """Every secret value in the config, for log masking."""
        found = [p.api_key.get_secret_value() for p in self.providers.values()]
        found.append(self.admin.password_hash.get_secret_value())
        if self.memory.postgres is not None:
            found.append(urlsplit(self.memory.postgres).password or "")
        for channel in self.channels.values():
            for key, value in channel.items():
                if isinstance(value, str) and names_secret(key):
                    found.append(value)
        return [s for s in found if len(s) >= 4]


_SECRET_WORDS = ("token", "secret", "password", "passwd", "auth", "credential", "cookie")


def names_secret(key: str) -> bool:
    """Whether a key names a secret: a word of it begins like one (`access_token`,
    `Authorization`) or ends in key, token or secret (`X-Api-Key`, `appsecret`); `keywords` does
    not."""
    words = re.split(r"[^a-z0-9]+", key.lower())
    return any(w.startswith(_SECRET_WORDS) or w.endswith(("key", "token", "secret")) for w in words)


@dataclass(frozen=True)
class _Override:
    """One `NAHIDA__A__B=value` variable: the key path it sets and the parsed value."""

    name: str
    path: tuple[str, ...]
    value: Any


def _overrides(env: Mapping[str, str]) -> list[_Override]:
    found = []
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX):
            continue
        path = tuple(p.lower() for p in name[len(ENV_PREFIX) :].split("__") if p)
        if not path:
            continue
        try:
            value = yaml.safe_load(env[name]) if env[name] else ""
        except yaml.YAMLError:
            value = env[name]
        found.append(_Override(name, path, value))
    return found


def _apply(
    tree: dict[str, Any], overrides: list[_Override]
) -> list[tuple[_Override, tuple[str, ...]]]:
    """Set each override in `tree`; returns each with its origin, the part of the tree it wrote.

    The origin is the override's path, or the shorter path of the first mapping it had to create
    (or replace) on the way there: every value under the origin came from the variable."""
    applied = []
    for override in overrides:
        node = tree
        origin = override.path
        for depth, part in enumerate(override.path[:-1]):
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
                if origin == override.path:
                    origin = override.path[: depth + 1]
            node = child
        node[override.path[-1]] = copy.deepcopy(override.value)
        applied.append((override, origin))
    return applied


def _declare_env_providers(tree: dict[str, Any], env: Mapping[str, str]) -> None:
    if tree.get("providers"):
        return
    model = env.get("NAHIDA_MODEL", "")
    providers: dict[str, Any] = {}
    if env.get("OPENAI_API_KEY"):
        providers["openai"] = {
            "type": "openai",
            "api_key": env["OPENAI_API_KEY"],
            "base_url": env.get("OPENAI_BASE_URL") or None,
            "model": model or DEFAULT_OPENAI_MODEL,
        }
    if env.get("ANTHROPIC_API_KEY"):
        providers["anthropic"] = {
            "type": "anthropic",
            "api_key": env["ANTHROPIC_API_KEY"],
            "base_url": env.get("ANTHROPIC_BASE_URL") or None,
            "model": (model if not providers else "") or DEFAULT_ANTHROPIC_MODEL,
        }
    if providers:
        tree["providers"] = providers


def _build(
    base: dict[str, Any], overrides: list[_Override], env: Mapping[str, str]
) -> tuple[dict[str, Any], list[tuple[_Override, tuple[str, ...]]]]:
    tree = copy.deepcopy(base)
    applied = _apply(tree, overrides)
    _declare_env_providers(tree, env)
    _store_from_env(tree, env)
    return tree, applied


def _store_from_env(tree: dict[str, Any], env: Mapping[str, str]) -> None:
    """`DATABASE_URL` (as hosting platforms set it) names the store unless the config does;
    only a PostgreSQL URI, as the variable may be meant for other software on the machine."""
    url = env.get("DATABASE_URL", "").strip()
    memory = tree.get("memory")
    if not url.startswith(POSTGRES_SCHEMES) or (isinstance(memory, dict) and "store" in memory):
        return
    if not isinstance(memory, dict):
        memory = tree["memory"] = {}
    memory["store"] = url


def load_config(
    path: Path | None, env: Mapping[str, str] | None = None, *, channels: bool = True
) -> Config:
    """Load and validate the config; `path=None` means defaults plus environment.
    `channels=False` (commands that run no channel): an unset `${VAR}` under `channels` is no
    error; the value keeps its `${VAR}` text."""
    env = os.environ if env is None else env
    source = str(path) if path else "<defaults>"
    tree: dict[str, Any] = {}
    if path is not None:
        tree = read_yaml(path)
    base = expand_vars(tree, env, source=source, channels=channels)
    overrides = _overrides(env)
    full, applied = _build(base, overrides, env)
    try:
        return Config.model_validate(full)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        culprit = _blame(loc, first["msg"], applied, base, overrides, env)
        if culprit is not None:  # an environment variable, named instead of the file
            inside = culprit.path[: len(loc)] != loc  # the error is deeper than the variable
            key = dotted(loc) if inside else None
            raise ConfigError(first["msg"], source=culprit.name, key=key) from None
        raise ConfigError(first["msg"], source=source, key=dotted(loc) or "(top level)") from None


def _blame(
    loc: tuple[Any, ...],
    msg: str,
    applied: list[tuple[_Override, tuple[str, ...]]],
    base: dict[str, Any],
    overrides: list[_Override],
    env: Mapping[str, str],
) -> _Override | None:
    """The override that caused the validation error at `loc`, or None when the file did.

    An error inside what an override wrote is that override's (the latest, most specific one).
    An error on a mapping an override wrote into (a check of the whole `models` table, say) is the
    override's when the tree without it no longer has that error."""
    inside = [(o, origin) for o, origin in applied if loc[: len(origin)] == origin]
    if inside:
        return max(reversed(inside), key=lambda pair: len(pair[1]))[0]
    for override, origin in reversed(applied):
        if origin[: len(loc)] != loc:
            continue
        tree, _ = _build(base, [o for o in overrides if o is not override], env)
        try:
            Config.model_validate(tree)
        except ValidationError as exc:
            if any(tuple(e["loc"]) == loc and e["msg"] == msg for e in exc.errors()):
                continue
        return override
    return None


def masked_dump(config: Config) -> dict[str, Any]:
    """The effective config as plain data, every secret replaced by '***'."""
    data: dict[str, Any] = _mask(config.model_dump(mode="json"))
    return data


def _mask(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, key) for v in value]
    if isinstance(value, str) and value and names_secret(key):
        return "***"
    return value
