"""The console's own listener (`admin.host`, `admin.port`): beside the bot's inbound server in
`nahida run`, or alone in `nahida admin`.

The console never shares the inbound server's site: that one may listen on every interface for
OneBot or Lark webhooks, while the console stays on loopback unless `admin.allow_remote` says
otherwise (`check_settings` refuses the rest, naming the key).
"""

from __future__ import annotations

import structlog
from aiohttp import web

from nahida.config import Config, is_loopback
from nahida.console.app import password_of
from nahida.errors import ConfigError

log = structlog.get_logger(__name__)


def check_settings(config: Config, *, beside_server: bool = False) -> None:
    """Refuse, before anything opens, a console reachable beyond this machine unless allowed, a
    port the inbound server takes (`beside_server`: both run in one process), and a password hash
    that is none."""
    settings = config.admin
    password_of(config)
    if not is_loopback(settings.host) and not settings.allow_remote:
        raise ConfigError(
            f"{settings.host!r} lets other machines reach the memory console; bind it to"
            " 127.0.0.1, or set admin.allow_remote: true (and put HTTPS in front of it)",
            key="admin.host",
        )
    if beside_server and settings.port and settings.port == config.server.port:
        raise ConfigError(
            f"{settings.port} is server.port too: the console listens on its own port",
            key="admin.port",
        )


class ConsoleServer:
    def __init__(self, app: web.Application, host: str = "127.0.0.1", port: int = 8765) -> None:
        self.app = app
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/admin/"

    async def start(self) -> None:
        """Listen; ConfigError naming `admin.port` when the address cannot be had."""
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except OSError as exc:
            await self.stop()
            reason = str(exc.strerror or exc).rsplit(": ", 1)[-1]  # asyncio repeats the address
            raise ConfigError(
                f"the console cannot listen on {self.host}:{self.port}: {reason}", key="admin.port"
            ) from None
        sockets = getattr(site._server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        log.info("console_started", url=self.url)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
