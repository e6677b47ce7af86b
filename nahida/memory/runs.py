"""Background job runs and their leases (`memory.runs`), and the bus depth a running bot
leaves for `nahida doctor`."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from nahida.memory.core.models import JobRun
from nahida.memory.store.base import Store

QUEUE_STATE = "bus_queue"  # the `named_state` key `nahida doctor` reads the queue depth from


class Runs:
    """`memory.runs`: the record of background job runs, and the lease that lets one process
    run a job at a time."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def lease(self, job: str, holder: str, seconds: float) -> bool:
        now = time.time()
        return await self.store.write(lambda tx: tx.jobs.lease(job, holder, now + seconds, now))

    async def release(self, job: str, holder: str) -> None:
        await self.store.write(lambda tx: tx.jobs.release(job, holder))

    async def start(self, job: str, holder: str) -> int:
        now = time.time()
        return await self.store.write(lambda tx: tx.jobs.start(job, holder, now))

    async def finish(
        self, run_id: int, outcome: str, counts: dict[str, int], error: str | None = None
    ) -> None:
        now = time.time()
        await self.store.write(lambda tx: tx.jobs.finish(run_id, outcome, counts, error, now))

    async def latest(self, job: str | None = None, limit: int = 20) -> list[JobRun]:
        """Of one job, newest first; or the latest run of each job."""
        return await self.store.read(lambda tx: tx.jobs.latest(job, limit))

    async def record_queue_depth(self, depth: Mapping[str, Any], now: float) -> None:
        value = json.dumps({**depth, "at": now})
        await self.store.write(lambda tx: tx.state.put(QUEUE_STATE, value, now))

    async def queue_depth(self) -> dict[str, Any] | None:
        """What `QueueDepthJob` last wrote, or None."""
        value = await self.store.read(lambda tx: tx.state.get(QUEUE_STATE))
        if value is None:
            return None
        data = json.loads(value)
        return data if isinstance(data, dict) else None
