"""The `channels.onebot` section, validated by the adapter's own model.

    channels:
      onebot:
        enabled: true
        mode: reverse_ws             # reverse_ws | forward_ws | http
        path: /onebot/v11/ws         # reverse_ws: where implementations connect (any number of
                                     #   accounts, Universal or split API/Event sockets)
        http_path: /onebot/v11/http  # http: where events are POSTed to us
        url: ""                      # forward_ws: ws URL we connect to (Universal);
                                     # http: the implementation's HTTP API base URL
        access_token: ""             # checked on reverse_ws, sent on forward_ws and the HTTP API
        secret: ""                   # http: X-Signature HMAC-SHA1 of each POSTed body

The remaining keys have defaults that suit NapCat, LLOneBot, Lagrange and go-cqhttp.

Without `access_token` anyone who reaches the channel acts as the QQ account's implementation.
`access` says how exposed a channel is: reachable beyond this machine without a token (reverse_ws
or http on a `server.host` other than a loopback address or `localhost`, or a forward_ws / HTTP
API `url` on another host) it is an error, and the channel does not start; on loopback only, a
warning (`nahida doctor` shows either). In http mode a `secret` guards the POSTed events as well
as a token does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from nahida.config import is_loopback
from nahida.errors import ConfigError

Mode = Literal["reverse_ws", "forward_ws", "http"]


class OneBotConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    mode: Mode = "reverse_ws"
    path: str = "/onebot/v11/ws"
    http_path: str = "/onebot/v11/http"
    url: str = ""
    # forward_ws with split sockets instead of one Universal `url`
    api_url: str = ""
    event_url: str = ""
    access_token: SecretStr = SecretStr("")
    secret: SecretStr = SecretStr("")

    api_timeout: float = Field(30.0, gt=0, le=600)  # seconds per action
    lookup_timeout: float = Field(3.0, gt=0, le=60)  # get_msg / get_group_member_info while parsing
    # how long a reply waits for a (re)connected socket
    send_wait: float = Field(10.0, ge=0, le=600)
    heartbeat_grace: float = Field(2.5, ge=1, le=100)  # silent heartbeat intervals before closing
    ping_interval: float = Field(30.0, ge=0, le=3600)  # WebSocket ping/pong; 0 turns it off
    # permessage-deflate on the WebSockets: off, as small JSON frames on a loopback or LAN link
    # gain nothing from it and cost both ends CPU (NapCat's `ws` client offers it by default)
    compress: bool = False
    reconnect_min: float = Field(1.0, gt=0, le=3600)  # forward_ws backoff: first wait ...
    reconnect_max: float = Field(60.0, gt=0, le=3600)  # ... doubling up to this
    role_cache_seconds: float = Field(600.0, ge=0, le=7 * 86_400)
    dedup_size: int = Field(4096, ge=0, le=1_000_000)
    # high-water mark: readers pause (see inbound.py)
    queue_limit: int = Field(10_000, ge=1, le=1_000_000)

    @model_validator(mode="after")
    def _mode_needs(self) -> OneBotConfig:
        for name in ("path", "http_path"):
            if not getattr(self, name).startswith("/"):
                raise ValueError(f"{name} must start with '/'")
        if self.mode == "forward_ws":
            if not self.url and not (self.api_url and self.event_url):
                raise ValueError("forward_ws needs `url` (or both `api_url` and `event_url`)")
            for name in ("url", "api_url", "event_url"):
                _check_scheme(name, getattr(self, name), ("ws", "wss"))
        if self.mode == "http":
            if not self.url:
                raise ValueError("http mode needs `url`, the implementation's HTTP API")
            _check_scheme("url", self.url, ("http", "https"))
        if self.reconnect_max < self.reconnect_min:
            raise ValueError("reconnect_max must not be below reconnect_min")
        return self

    @property
    def token(self) -> str:
        return self.access_token.get_secret_value()

    def forward_urls(self) -> list[tuple[str, Literal["Universal", "API", "Event"]]]:
        if self.url:
            return [(self.url, "Universal")]
        return [(self.api_url, "API"), (self.event_url, "Event")]


def _check_scheme(name: str, url: str, schemes: tuple[str, ...]) -> None:
    if url and urlsplit(url).scheme not in schemes:
        raise ValueError(f"{name} must be a {' or '.join(schemes)} URL, not {url!r}")


@dataclass(frozen=True, slots=True)
class Access:
    """Who may act as the implementation: `level` ok, warn (no token, loopback only) or error (no
    token, reachable beyond this machine); `reason` follows the key `channels.onebot.access_token`
    in messages."""

    level: Literal["ok", "warn", "error"]
    reason: str


def access(settings: OneBotConfig, server_host: str) -> Access:
    """How exposed the channel is, given the inbound server's `server.host`."""
    token = bool(settings.token)
    signed = settings.mode == "http" and bool(settings.secret.get_secret_value())
    fix = "set a long random token, the same in the implementation"
    listens = settings.mode in ("reverse_ws", "http")  # the implementation connects to us
    if listens and not (token or signed) and not is_loopback(server_host):
        return Access(
            "error",
            f"required while server.host {server_host!r} lets other machines connect ({fix},"
            " or bind server.host to 127.0.0.1)",
        )
    # forward_ws and the HTTP API: we connect to the implementation, with the token (a forward
    # URL may carry it in its query instead)
    urls = [url for url, _ in settings.forward_urls()] if settings.mode != "reverse_ws" else []
    carried = bool(urls) and all(parse_qs(urlsplit(url).query).get("access_token") for url in urls)
    for url in urls:
        parts = urlsplit(url)
        if not (token or carried) and not is_loopback(parts.hostname):
            shown = parts._replace(query="").geturl()
            return Access("error", f"required while {shown} is on another machine ({fix})")
    if token or carried:
        return Access("ok", "set" if token else "empty, but the URL carries one")
    if signed:
        return Access("ok", "empty, but events must be signed with `secret`")
    return Access(
        "warn",
        f"empty: any program on this machine can act as the QQ account's implementation ({fix})",
    )


def load(section: dict[str, Any]) -> OneBotConfig:
    """Validate `channels.onebot`; errors name the dotted key."""
    try:
        return OneBotConfig.model_validate(section)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        key = "channels.onebot" + (f".{loc}" if loc else "")
        raise ConfigError(first["msg"], key=key) from None
