"""Configuration: one pydantic tree from YAML, `${VAR}` expansion and `NAHIDA__A__B` overrides.

Order of precedence (highest first): `NAHIDA__SECTION__KEY` environment variables, the YAML file,
the defaults below. With no provider declared, `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` (with
`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `NAHIDA_MODEL`) declare one. Any error is a `ConfigError`
naming the file and the dotted key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from nahida.errors import ConfigError

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"
ENV_PREFIX = "NAHIDA__"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerConfig(_Model):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)


class ProviderConfig(_Model):
    type: Literal["openai", "anthropic"]
    base_url: str | None = None
    api_key: SecretStr = SecretStr("")
    model: str = ""  # the provider's default model for routes that name only the provider
    timeout: float = Field(60.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)


class RateLimitConfig(_Model):
    per_chat_per_minute: int = Field(20, ge=0)


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


class BusConfig(_Model):
    concurrency: int = Field(16, ge=1)
    queue_size: int = Field(100, ge=1)
    idle_timeout: float = Field(60.0, gt=0)


class SessionConfig(_Model):
    hot_size: int = Field(10, ge=0)  # rounds of the current session shown verbatim
    idle_split_minutes: int = Field(720, ge=0)  # a message after this gap starts a new session
    context_tokens: int = Field(6000, ge=500)  # approximate budget of the whole prompt


class MemoryConfig(_Model):
    budget_tokens: int = Field(1500, ge=0)
    commit_mode: Literal["auto_safe", "manual_review", "auto_full"] = "auto_safe"


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
    channels: dict[str, dict[str, Any]] = Field(default_factory=dict)  # validated by each adapter
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    plugins: PluginsConfig = Field(default_factory=PluginsConfig)

    @field_validator("models")
    @classmethod
    def _known_tasks(cls, value: dict[str, str]) -> dict[str, str]:
        tasks = {"chat", "compress", "dream", "embed", "rerank"}
        for task in value:
            if task not in tasks:
                raise ValueError(f"unknown task {task!r}; tasks are {', '.join(sorted(tasks))}")
        return value

    def channel_enabled(self, name: str) -> bool:
        return bool(self.channels.get(name, {}).get("enabled", False))

    def secrets(self) -> list[str]:
        """Every secret value in the config, for log masking."""
        found = [p.api_key.get_secret_value() for p in self.providers.values()]
        for channel in self.channels.values():
            for key, value in channel.items():
                if isinstance(value, str) and _looks_secret_key(key):
                    found.append(value)
        return [s for s in found if len(s) >= 4]


_SECRET_KEYS = ("token", "secret", "password", "api_key", "key")


def _looks_secret_key(key: str) -> bool:
    return any(part in key.lower() for part in _SECRET_KEYS)


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_vars(value: Any, env: Mapping[str, str]) -> Any:
    """Expand `${VAR}` and `${VAR:-default}` in every string of a YAML tree; unset → ''."""
    if isinstance(value, str):
        return _VAR.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), value)
    if isinstance(value, list):
        return [expand_vars(v, env) for v in value]
    if isinstance(value, dict):
        return {k: expand_vars(v, env) for k, v in value.items()}
    return value


def apply_overrides(tree: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """Apply `NAHIDA__SECTION__KEY=value` variables; values are parsed as YAML scalars."""
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX):
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX) :].split("__") if p]
        if not path:
            continue
        node = tree
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        try:
            node[path[-1]] = yaml.safe_load(env[name]) if env[name] else ""
        except yaml.YAMLError:
            node[path[-1]] = env[name]
    return tree


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


def _dotted(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc)


def load_config(path: Path | None, env: Mapping[str, str] | None = None) -> Config:
    """Load and validate the config; `path=None` means defaults plus environment."""
    env = os.environ if env is None else env
    source = str(path) if path else "<defaults>"
    tree: Any = {}
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config file: {exc.strerror}", source=source) from None
        try:
            tree = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
            problem = getattr(exc, "problem", None) or "invalid YAML"
            raise ConfigError(f"invalid YAML at {where}: {problem}", source=source) from None
        if not isinstance(tree, dict):
            raise ConfigError("the top level must be a mapping of sections", source=source)
    tree = apply_overrides(expand_vars(tree, env), env)
    _declare_env_providers(tree, env)
    try:
        return Config.model_validate(tree)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = _dotted(first["loc"]) or "(top level)"
        raise ConfigError(first["msg"], source=source, key=key) from None


def masked_dump(config: Config) -> dict[str, Any]:
    """The effective config as plain data, every secret replaced by '***'."""
    data: dict[str, Any] = _mask(config.model_dump(mode="json"))
    return data


def _mask(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, key) for v in value]
    if isinstance(value, str) and value and _looks_secret_key(key):
        return "***"
    return value
