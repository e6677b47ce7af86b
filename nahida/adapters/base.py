"""The adapter interface.

An adapter turns platform events into `Envelope`s handed to `submit` and sends `Reply`s. It never
touches memory or providers. It fills `Envelope.sender.role` (owner/admin/member) from the event or
the platform API, since permission checks read it there. Adapters that receive over HTTP or
WebSocket mount routes on the shared inbound server (`nahida.server.InboundServer`) in `mount`,
before the server starts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from nahida.envelope import Envelope, Reply

if TYPE_CHECKING:
    from nahida.server import InboundServer

Submit = Callable[[Envelope], Awaitable[bool]]


@runtime_checkable
class Adapter(Protocol):
    platform: str

    def mount(self, server: InboundServer) -> None:
        """Register inbound routes; called once before the server starts. May do nothing."""

    async def run(self, submit: Submit) -> None:
        """Receive events until cancelled, handing each envelope to `submit`."""

    async def send(self, reply: Reply) -> str | None:
        """Send one reply; returns the platform's message id when it gives one."""
