"""Time behind a seam: what waits or measures takes a `Clock`, so tests run it on virtual time.

`SYSTEM` is the real clock. `VirtualClock` moves only when a test says so (`await
clock.advance(seconds)`), so a test asserts what happened in which order and at which virtual
second, never a wall-clock margin.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Seconds since the epoch (what dates and stored times use)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (what intervals and timeouts use)."""

    async def sleep(self, seconds: float) -> None:
        """Wait this long on this clock."""


class SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM: Clock = SystemClock()


class VirtualClock:
    """A clock for tests: `sleep` waits until `advance` moves time past its deadline.

    `monotonic()` starts at 0 and `time()` at `epoch`; both move together and only by `advance`."""

    def __init__(self, epoch: float = 1_780_000_000.0) -> None:
        self.epoch = epoch
        self.now = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def time(self) -> float:
        return self.epoch + self.now

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._order), future))
        await future

    async def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, waking each sleeper at its deadline in order and
        letting the tasks it wakes run before time moves on."""
        end = self.now + seconds
        await _settle()
        while self._sleepers and self._sleepers[0][0] <= end:
            deadline, _, future = heapq.heappop(self._sleepers)
            self.now = max(self.now, deadline)
            if not future.done():
                future.set_result(None)
            await _settle()
        self.now = end
        await _settle()


async def _settle(rounds: int = 20) -> None:
    """Give every ready task a few turns of the loop (what a wakeup sets off runs before time
    moves again)."""
    for _ in range(rounds):
        await asyncio.sleep(0)
