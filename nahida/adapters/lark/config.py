"""The `channels.lark` section, validated by the adapter (the core keeps `channels` a free dict).

    channels:
      lark:
        enabled: true
        mode: long_connection     # long_connection | webhook
        app_id: cli_xxx
        app_secret: ${LARK_APP_SECRET}
        encrypt_key: ""           # webhook: decrypt bodies and check X-Lark-Signature when set
        verification_token: ""
        domain: https://open.feishu.cn   # https://open.larksuite.com for Lark
        path: /lark/events        # webhook: served by the shared `server` (host/port)

Plain `http://` is accepted for loopback addresses only (a local fake platform in tests); anything
else must be `https://`, since the app secret and tokens travel over it.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError, field_validator

from nahida.config import is_loopback
from nahida.errors import ConfigError

FEISHU = "https://open.feishu.cn"
LARK = "https://open.larksuite.com"


class LarkConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    mode: Literal["long_connection", "webhook"] = "long_connection"
    app_id: str
    app_secret: SecretStr
    encrypt_key: SecretStr = SecretStr("")
    verification_token: SecretStr = SecretStr("")
    domain: str = FEISHU
    path: str = "/lark/events"

    @field_validator("app_id")
    @classmethod
    def _app_id(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("app_id is empty (the App ID from the developer console, cli_...)")
        return value.strip()

    @field_validator("app_secret")
    @classmethod
    def _app_secret(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().strip():
            raise ValueError("app_secret is empty")
        return value

    @field_validator("domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"domain must be a base URL like {FEISHU} or {LARK}, not {value!r}")
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            raise ValueError("plain http:// is allowed for loopback addresses only; use https://")
        return value

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"path must start with '/', not {value!r}")
        return value

    @property
    def webhook(self) -> bool:
        return self.mode == "webhook"


def load(section: dict[str, Any]) -> LarkConfig:
    """Validate `channels.lark`; any problem is a `ConfigError` naming the key."""
    try:
        settings = LarkConfig.model_validate(section)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        key = f"channels.lark.{where}" if where else "channels.lark"
        raise ConfigError(first["msg"], key=key) from None
    if settings.webhook and not (
        settings.encrypt_key.get_secret_value() or settings.verification_token.get_secret_value()
    ):
        raise ConfigError(
            "webhook mode needs verification_token or encrypt_key, or anyone could post events",
            key="channels.lark.verification_token",
        )
    return settings
