"""Background work: slow post-turn work off the chat's worker (DESIGN §1).

A reply is persisted, then whatever may take long (a model call for compaction, embedding) is
submitted here, so the chat's worker is free for its next message at once. Work is keyed (by
chat): work of one key runs in the order it was submitted, one piece at a time, so a chat's
compaction runs after that chat's earlier turns; different keys run concurrently, at most
`concurrency` at once. What waits is bounded (a full queue makes `submit` wait: backpressure,
never loss), idle keys retire, and `shutdown()` returns once everything accepted has run. It is the
event bus's machinery (`EventBus`) carrying `Work` instead of envelopes; a failing piece of work
is logged and counted and never stops the queue.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from nahida.bus import EventBus


@dataclass(frozen=True, slots=True)
class Work:
    key: str  # work of one key keeps its order
    name: str  # for the log
    run: Callable[[], Awaitable[None]]


async def _run(work: Work) -> None:
    await work.run()


def _key(work: Work) -> str:
    return work.key


def _label(work: Work) -> dict[str, Any]:
    return {"work": work.name}


class BackgroundWork:
    def __init__(
        self, *, concurrency: int = 4, queue_size: int = 100, idle_timeout: float = 30.0
    ) -> None:
        self._queue = EventBus[Work](
            _run,
            concurrency=concurrency,
            queue_size=queue_size,
            idle_timeout=idle_timeout,
            dedup_size=0,
            name="background",
            key=_key,
            label=_label,
        )

    async def submit(self, key: str, name: str, run: Callable[[], Awaitable[None]]) -> bool:
        """Queue `run()` after the earlier work of `key`; False once shut down."""
        return await self._queue.submit(Work(key, name, run))

    async def run(self) -> None:
        """Run the work until `shutdown()` and until everything accepted has run."""
        await self._queue.run()

    async def shutdown(self) -> None:
        await self._queue.shutdown()

    @property
    def accepted(self) -> int:
        return self._queue.accepted

    @property
    def done(self) -> int:
        return self._queue.handled

    @property
    def failed(self) -> int:
        return self._queue.failed
