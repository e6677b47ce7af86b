"""The adapter's inbound queue: nothing is dropped; readers slow down instead (backpressure).

Every event a transport receives is queued here for the adapter's single parsing task, with the
time it arrived (the wait before an answer is measured from it). The queue itself has no bound.
At `high_water` events (the `queue_limit` setting) a WebSocket reader stops reading its socket
after the frame it has, so the implementation's writes back up through TCP, and it reads again
once the queue is down to `low_water` (half the mark). Three things keep a paused reader from
deadlocking or killing its socket:

- A reader never pauses while one of its connection's action calls waits for an answer, and a
  call opened while it is paused wakes it (`WsConnection.call`). The parsing task itself makes
  calls (`get_msg`, `get_group_member_info`) and bus workers send replies; their answers arrive
  on the same sockets as the events, behind them, so the reader reads (and queues events above
  the mark) until no answer is awaited.
- A pause lasts at most `max_pause` seconds (shorter than the WebSocket ping/pong timeout and
  the heartbeat watchdog, neither of which can see through a paused socket). A reader whose pause
  ran out reads on, queueing in memory, until the queue next drains to `low_water`
  (`drains` counts those moments): a long overload grows memory rather than losing the socket.
- HTTP POST events are never held: an implementation that times out a POST does not resend it.

So events are lost only when memory runs out; the queue's peak is kept for the log and tests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger(__name__)


class Inbound:
    def __init__(
        self,
        high_water: int,
        *,
        max_pause: float = 10.0,
        clock: Callable[[], float] = time.time,  # the arrival stamp: seconds since the epoch
    ) -> None:
        if high_water < 1:
            raise ValueError(f"high_water must be at least 1, not {high_water}")
        self.high_water = high_water
        self.low_water = high_water // 2
        self.max_pause = max_pause
        self.peak = 0  # the most events ever waiting at once
        self.pauses = 0  # times a reader paused
        self.drains = 0  # times the queue fell back to low_water with readers paused or given up
        self.clock = clock
        self._queue: asyncio.Queue[tuple[float, dict[str, Any]]] = asyncio.Queue()
        self._held: set[asyncio.Event] = set()
        self._above = False  # crossed high_water since the last drain

    def qsize(self) -> int:
        return self._queue.qsize()

    @property
    def full(self) -> bool:
        return self._queue.qsize() >= self.high_water

    def put(self, data: dict[str, Any]) -> None:
        self._queue.put_nowait((self.clock(), data))
        size = self._queue.qsize()
        if size > self.peak:
            self.peak = size
        if size >= self.high_water and not self._above:
            self._above = True
            log.warning("inbound_queue_high", waiting=size, high_water=self.high_water)

    async def get(self) -> tuple[float, dict[str, Any]]:
        """The next event and when it arrived."""
        arrived = await self._queue.get()
        if self._above and self._queue.qsize() <= self.low_water:
            self._above = False
            self.drains += 1
            for wake in self._held:
                wake.set()
            log.info("inbound_queue_drained", waiting=self._queue.qsize())
        return arrived

    async def hold(self, wake: asyncio.Event) -> None:
        """Wait (a paused reader) until `wake` is set: by a drain, a call or a close."""
        self.pauses += 1
        self._held.add(wake)
        try:
            await wake.wait()
        finally:
            self._held.discard(wake)
