"""Background jobs on APScheduler (3.x, in-process, on our event loop).

Jobs are coroutines; a failing job is logged and retried at its next run. Later issues add
consolidation, dreaming, embedding upkeep and Markdown sync here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from apscheduler.schedulers.asyncio import AsyncIOScheduler

log = structlog.get_logger(__name__)

Job = Callable[[], Awaitable[None]]


class Scheduler:
    def __init__(self) -> None:
        self._scheduler = AsyncIOScheduler(timezone="UTC")
        self.jobs: dict[str, Job] = {}

    def every(self, name: str, job: Job, *, seconds: float, **options: Any) -> None:
        self.jobs[name] = job
        self._scheduler.add_job(
            self._guarded,
            "interval",
            args=(name, job),
            seconds=seconds,
            id=name,
            coalesce=True,
            max_instances=1,
            **options,
        )

    async def _guarded(self, name: str, job: Job) -> None:
        try:
            await job()
        except Exception:
            log.exception("job_failed", job=name)

    def start(self) -> None:
        self._scheduler.start()

    def stop(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
