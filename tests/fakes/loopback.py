"""The lifecycle every fake platform shares: an aiohttp app served on 127.0.0.1, any free port.

class FakeThing(LoopbackServer):
    def __init__(self) -> None:
        app = web.Application()
        app.router.add_post("/x", self._x)
        super().__init__(app)

async with FakeThing() as server:
    server.base_url  # "http://127.0.0.1:<port>"
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

from aiohttp import web


class LoopbackServer:
    def __init__(self, app: web.Application) -> None:
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        self._port: int | None = None

    async def start(self) -> None:
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]

    async def before_close(self) -> None:
        """Let open handlers and sockets finish before the runner waits for them."""

    async def close(self) -> None:
        await self.before_close()
        await self._runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
