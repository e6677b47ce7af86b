"""Forward WebSocket: we connect to the implementation, and reconnect when it goes away.

One loop per URL (`url` for a Universal socket, or `api_url` + `event_url`). The token goes out as
`Authorization: Bearer`. After a failed attempt or a lost connection the loop waits
`reconnect_min` seconds, doubling up to `reconnect_max` (with ±20% jitter so many bots do not
reconnect in lockstep); a connection that was up resets the wait.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import structlog

from nahida.adapters.onebot.config import OneBotConfig
from nahida.adapters.onebot.connection import CLOSE_TIMEOUT, ClientRole, WsConnection
from nahida.adapters.onebot.reverse import MAX_FRAME

log = structlog.get_logger(__name__)

MakeConnection = Callable[[aiohttp.ClientWebSocketResponse, ClientRole, str], WsConnection]
Serve = Callable[[WsConnection], Awaitable[None]]


def safe_url(url: str) -> str:
    """The URL without its query (which may carry `access_token`) for logs."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class ForwardClient:
    def __init__(
        self,
        settings: OneBotConfig,
        session: aiohttp.ClientSession,
        make_connection: MakeConnection,
        serve: Serve,
    ) -> None:
        self.settings = settings
        self.session = session
        self._make = make_connection
        self._serve = serve
        self.attempts = 0

    async def run(self, url: str, role: ClientRole) -> None:
        """Connect to `url` and serve it, forever; returns only when cancelled."""
        shown = safe_url(url)
        token = self.settings.token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        delay = self.settings.reconnect_min
        while True:
            self.attempts += 1
            try:
                async with self.session.ws_connect(
                    url,
                    headers=headers,
                    heartbeat=self.settings.ping_interval or None,
                    compress=15 if self.settings.compress else 0,  # 15: zlib's window bits
                    timeout=aiohttp.ClientWSTimeout(ws_close=CLOSE_TIMEOUT),
                    max_msg_size=MAX_FRAME,
                ) as socket:
                    log.info("forward_connected", url=shown, role=role)
                    delay = self.settings.reconnect_min
                    await self._serve(self._make(socket, role, shown))
            except aiohttp.WSServerHandshakeError as exc:
                log.warning("forward_refused", url=shown, status=exc.status)
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                log.warning("forward_connect_failed", url=shown, error=type(exc).__name__)
            wait = delay * random.uniform(0.8, 1.2)
            log.info("forward_reconnecting", url=shown, in_seconds=round(wait, 2))
            await asyncio.sleep(wait)
            delay = min(delay * 2, self.settings.reconnect_max)
