"""Memory's background jobs (run by `nahida.scheduler`): today the cleanup of empty sessions."""

from __future__ import annotations

from nahida.memory.service import MemoryService
from nahida.scheduler import JobContext, Schedule


class CleanupEmptySessions:
    """Deletes sessions left without turns, at start and then hourly."""

    name = "cleanup_empty_sessions"

    def __init__(self, memory: MemoryService, *, every: float = 3600.0) -> None:
        self.memory = memory
        self.schedule: Schedule = Schedule(every=every, first=0.0)

    async def run(self, ctx: JobContext) -> None:
        ctx.count("deleted", await self.memory.sessions.cleanup_empty())
