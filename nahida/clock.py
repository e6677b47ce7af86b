"""Time behind a seam: what waits or measures takes a `Clock`, so tests run it on virtual time.

`SYSTEM` is the real clock. `VirtualClock` moves only when a test says so (`await
clock.advance(seconds)`), so a test asserts what happened in which order and at which virtual
second, never a wall-clock margin.

`iso` and `parse_moment` write and read a moment as ISO-8601 text, the one form every JSON the
bot writes or reads uses (memory's exports and reports, history imports, the CLI's `--at`).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from types import TracebackType
from typing import Protocol, TypeVar

T = TypeVar("T")


def iso(epoch: float | None) -> str | None:
    """A moment (seconds since the epoch) as ISO-8601 text in UTC; None for None."""
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat()


def parse_moment(value: object) -> datetime:
    """An aware datetime from an ISO-8601 string; a time without offset is UTC."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("time must be an ISO-8601 string")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"time is not ISO-8601: {value!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class Clock(Protocol):
    def time(self) -> float:
        """Seconds since the epoch (what dates and stored times use)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (what intervals and timeouts use)."""

    async def sleep(self, seconds: float) -> None:
        """Wait this long on this clock."""

    def timeout(self, seconds: float) -> AbstractAsyncContextManager[object]:
        """`asyncio.timeout` on this clock: TimeoutError when the body outlasts `seconds`."""


class SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def timeout(self, seconds: float) -> AbstractAsyncContextManager[object]:
        return asyncio.timeout(seconds)


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
        await self._alarm(seconds)

    def timeout(self, seconds: float) -> AbstractAsyncContextManager[object]:
        return _VirtualTimeout(self, seconds)

    async def run(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable`, moving time on to the next deadline whenever something waits on
        this clock: virtual time runs as fast as it is waited for, and real I/O takes none."""
        task = asyncio.ensure_future(awaitable)
        while not task.done():
            due = [deadline for deadline, _, future in self._sleepers if not future.done()]
            if due:
                await self.advance(max(0.0, min(due) - self.now))
            else:
                await asyncio.wait({task}, timeout=0.001)
        return task.result()

    def _alarm(self, seconds: float) -> asyncio.Future[None]:
        """A future that `advance` resolves once time has moved `seconds` on."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._order), future))
        return future

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


class _VirtualTimeout:
    """Cancels the task that entered it when its alarm goes off, and turns that cancellation
    into TimeoutError on the way out (what `asyncio.timeout` does on the loop's clock)."""

    def __init__(self, clock: VirtualClock, seconds: float) -> None:
        self._clock = clock
        self._seconds = seconds
        self._inside = False
        self._expired = False

    async def __aenter__(self) -> _VirtualTimeout:
        task = asyncio.current_task()
        assert task is not None, "a timeout is entered by a task"
        self._task = task
        self._inside = True
        self._alarm = self._clock._alarm(max(self._seconds, 0.0))
        self._alarm.add_done_callback(self._expire)
        return self

    def _expire(self, alarm: asyncio.Future[None]) -> None:
        if self._inside and not alarm.cancelled():  # a callback may run after the body left
            self._expired = True
            self._task.cancel()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._inside = False
        self._alarm.cancel()
        if self._expired and self._task.uncancel() == 0 and kind is asyncio.CancelledError:
            raise TimeoutError from error


async def _settle(rounds: int = 20) -> None:
    """Give every ready task a few turns of the loop (what a wakeup sets off runs before time
    moves again)."""
    for _ in range(rounds):
        await asyncio.sleep(0)
