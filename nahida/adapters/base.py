"""The adapter interface.

An adapter turns platform events into `Envelope`s handed to `submit` and sends `Reply`s. It never
touches memory or providers. It fills `Envelope.sender.role` (owner/admin/member) from the event or
the platform API, since permission checks read it there. Adapters that receive over HTTP or
WebSocket mount routes on the shared inbound server (`Routes`: `nahida.server.InboundServer`) in
`mount`, before the server starts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from nahida.envelope import Envelope, Reply

if TYPE_CHECKING:  # aiohttp takes a tenth of a second to import; only adapters that serve need it
    from aiohttp import web

Submit = Callable[[Envelope], Awaitable[bool]]
RouteHandler = Callable[["web.Request"], Awaitable["web.StreamResponse"]]


class Routes(Protocol):
    """Where an adapter mounts its inbound HTTP and WebSocket routes."""

    def add_route(self, method: str, path: str, handler: RouteHandler) -> None: ...

    def on_shutdown(self, callback: Callable[[Any], Awaitable[None]]) -> None:
        """`await callback(app)` when the server shuts down (close open WebSockets there)."""


@runtime_checkable
class Adapter(Protocol):
    platform: str

    def mount(self, server: Routes) -> None:
        """Register inbound routes; called once before the server starts. May do nothing."""

    async def run(self, submit: Submit) -> None:
        """Receive events until cancelled, handing each envelope to `submit`."""

    async def send(self, reply: Reply) -> str | None:
        """Send one reply; returns the platform's message id when it gives one."""
