"""Memory's background jobs (run by `nahida.scheduler`): the cleanup of empty sessions, the
upkeep of embeddings, the slow decay of unused memories' confidence, the retry of failed
episodes, dreaming, and the daily notes."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from nahida.memory.service import MemoryService
from nahida.scheduler import Job, JobContext, Schedule


class CleanupEmptySessions:
    """Deletes sessions left without turns, at start and then hourly."""

    name = "cleanup_empty_sessions"

    def __init__(self, memory: MemoryService, *, every: float = 3600.0) -> None:
        self.memory = memory
        self.schedule: Schedule = Schedule(every=every, first=0.0)

    async def run(self, ctx: JobContext) -> None:
        ctx.count("deleted", await self.memory.sessions.cleanup_empty())


class EmbeddingUpkeep:
    """Embeds what has no vector in the current space (after an import, a model change, a crash;
    new turns are embedded as they come by `memory.embeddings.run`) and drops vectors nothing
    names any more. Skipped without an embedder."""

    name = "embedding_upkeep"

    def __init__(self, memory: MemoryService, *, every: float = 600.0, first: float = 30.0):
        self.memory = memory
        self.schedule: Schedule = Schedule(every=every, first=first)

    async def run(self, ctx: JobContext) -> None:
        embeddings = self.memory.embeddings
        if not embeddings.enabled:
            ctx.skip("no embedder")
            return
        report = await embeddings.catch_up(lambda: ctx.stopping)
        ctx.count("embedded", report.embedded)
        ctx.count("cached", report.cached)
        ctx.count("skipped", report.skipped)
        ctx.count("swept", report.swept)


class ConfidenceDecay:
    """Items nobody has used (injected, merged, changed) for `idle_days` lose `step` of their
    confidence at each daily run, never below `floor`: what was once inferred and never needed
    sinks below what is injected (0.3, DESIGN §5.7) and is archived first when a scope is full;
    the next use or repeat reinforces it again. What people said explicitly (`user_explicit`,
    `human_edit`) keeps its confidence. One bulk update per run, counted in the run record (not
    an audit row per item: the audit keeps what people and models changed)."""

    name = "confidence_decay"

    def __init__(
        self,
        memory: MemoryService,
        *,
        every: float = 86400.0,
        first: float = 600.0,
        idle_days: float = 30.0,
        step: float = 0.01,
        floor: float = 0.1,
    ) -> None:
        self.memory = memory
        self.schedule: Schedule = Schedule(every=every, first=first)
        self.idle = idle_days * 86400.0
        self.step = step
        self.floor = floor

    async def run(self, ctx: JobContext) -> None:
        ctx.count("decayed", await self.memory.items.decay(self.idle, self.step, self.floor))


class EpisodeRetry:
    """The episodes the compress model failed to write (an error, or an answer without its JSON),
    tried again once the pause after each failure has passed; the sessions' turns were kept.
    Quiet: a tick with nothing to retry leaves no run record. Skipped without a model."""

    name = "episode_retry"
    quiet = True

    def __init__(self, memory: MemoryService, *, every: float = 600.0, first: float = 60.0):
        self.memory = memory
        self.schedule: Schedule = Schedule(every=every, first=first)

    async def run(self, ctx: JobContext) -> None:
        working = self.memory.working
        if not working.enabled:
            ctx.skip("no model")
            return
        written, failed = await working.retry_episodes()
        if written:
            ctx.count("written", written)
        if failed:
            ctx.count("failed", failed)


class DreamJob:
    """Dreaming on schedule (DESIGN §8): every `memory.dreaming.interval_seconds`, the chats with
    at least `min_new_turns` new turns (at most `max_chats`, dreamed longest ago first) are
    dreamed one after the other; an idle bot makes no model call. Skipped without a model."""

    name = "dreaming"

    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory
        settings = memory.dreams.settings
        self.schedule: Schedule = Schedule(every=settings.interval, first=settings.first)

    async def run(self, ctx: JobContext) -> None:
        dreams = self.memory.dreams
        if not dreams.enabled:
            ctx.skip("no model")
            return
        for due in await dreams.due():
            if ctx.stopping:
                break
            run = await dreams.run(due.chat, "schedule", stopping=lambda: ctx.stopping)
            if run is None:
                ctx.count("busy")  # being dreamed elsewhere
                continue
            ctx.count("chats")
            ctx.count(run.outcome)
            ctx.count("turns", run.turns)
            ctx.count("applied", run.applied)
            ctx.count("pending", run.pending)
            ctx.count("rejected", run.rejected)


class MarkdownSyncJob:
    """MEMORY.md and the profile files synced with the database every `every` seconds (first at
    start): admins' edits applied, the blocks rendered again after changes. Quiet: a tick that
    found nothing to do leaves no run record; one that applied, refused, rewrote or found a
    malformed file records its counts."""

    name = "markdown_sync"
    quiet = True

    def __init__(self, memory: MemoryService, *, every: float = 5.0) -> None:
        self.memory = memory
        self.schedule: Schedule = Schedule(every=every, first=0.0)
        self._first = True

    async def run(self, ctx: JobContext) -> None:
        markdown = self.memory.markdown
        if markdown is None:
            ctx.skip("no workspace")
            return
        report = await markdown.sync(force=self._first)
        self._first = False
        for key, n in report.total().items():
            if n:
                ctx.count(key, n)


class DailyNotesJob:
    """Appends what is new in memory to the day's notes (`workspace/memory/YYYY-MM-DD.md`,
    DESIGN §9): every minute, the first ten seconds after start. Skipped when they are off.
    Quiet: a minute with nothing new leaves no run record."""

    name = "daily_notes"
    quiet = True

    def __init__(self, memory: MemoryService, *, every: float = 60.0, first: float = 10.0):
        self.memory = memory
        self.schedule: Schedule = Schedule(every=every, first=first)

    async def run(self, ctx: JobContext) -> None:
        daily = self.memory.daily
        if daily is None:
            ctx.skip("daily notes off")
            return
        written = await daily.catch_up()
        if written:
            ctx.count("lines", written)


class QueueDepthJob:
    """Writes the bus's depth (`backlog()`: the fields of `nahida.bus.Backlog`) every 10 s
    where `nahida doctor` can read it: a `named_state` row holding JSON (waiting, largest,
    largest_chat, oldest_wait, at). Quiet: never a run record."""

    name = "queue_depth"
    quiet = True

    def __init__(self, memory: MemoryService, backlog: Callable[[], Mapping[str, Any]]) -> None:
        self.memory = memory
        self.backlog = backlog
        self.schedule: Schedule = Schedule(every=10.0, first=0.0)
        self._idle_written = False  # an idle bus is written once, not every 10 s

    async def run(self, ctx: JobContext) -> None:
        now = time.time()
        depth = dict(self.backlog())
        idle = not depth.get("waiting")
        if idle and self._idle_written:
            return
        self._idle_written = idle
        await self.memory.runs.record_queue_depth(depth, now)


def memory_jobs(
    memory: MemoryService,
    backlog: Callable[[], Mapping[str, Any]],
    *,
    dreaming: bool,
    markdown_every: float,
) -> list[Job]:
    """The background jobs a running bot schedules over its memory (each only where it applies)."""
    jobs: list[Job] = [
        CleanupEmptySessions(memory),
        EmbeddingUpkeep(memory),
        ConfidenceDecay(memory),
        EpisodeRetry(memory),
        QueueDepthJob(memory, backlog),
    ]
    if dreaming:
        jobs.append(DreamJob(memory))
    if memory.markdown is not None:
        jobs.append(MarkdownSyncJob(memory, every=markdown_every))
    if memory.daily is not None:
        jobs.append(DailyNotesJob(memory))
    return jobs
