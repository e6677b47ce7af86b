"""The one inbound HTTP/WebSocket server (`server.host`, `server.port`).

Adapters mount their routes here before start (OneBot reverse WebSocket and HTTP events, Lark
webhook), so users open one port. It is started only when some route was mounted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from aiohttp import web

from nahida.adapters.base import RouteHandler

log = structlog.get_logger(__name__)


class InboundServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 8080) -> None:
        self.host = host
        self.port = port
        self.app = web.Application(client_max_size=8 * 1024 * 1024)
        self._routes = 0
        self._runner: web.AppRunner | None = None

    def add_route(self, method: str, path: str, handler: RouteHandler) -> None:
        self.app.router.add_route(method, path, handler)
        self._routes += 1

    def on_shutdown(self, callback: Callable[[Any], Awaitable[None]]) -> None:
        self.app.on_shutdown.append(callback)

    @property
    def needed(self) -> bool:
        return self._routes > 0

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        log.info("server_started", host=self.host, port=self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
