"""Background jobs (DESIGN §1): the `Job` protocol, and the scheduler that runs jobs.

A job is an object with a `name`, a `schedule` and `async run(ctx)`. A timer per job, on the
app's clock, decides when; each run is a child task of the app's TaskGroup, and:

- a run still going when the next is due makes the timer skip that one (no backlog of runs);
- at most one run of a job at a time, across processes sharing the database: a run first takes
  the job's lease (`RunRecords`: the memory's `runs`), renews it while it runs and releases it
  at the end; a process that finds it taken skips that run;
- one record per run (`job_runs`: job, process, started, finished, outcome, counts, error), shown
  by `nahida doctor` — a `quiet` job (one that ticks every few seconds) is recorded only when a
  run counted something or did not end ok; outcomes are `ok`, `failed` (the error is
  recorded), `skipped` (the job said why), `interrupted` (the app stopped during the run);
- `stop()` asks running jobs to stop (`ctx.stopping`): a job checks it between units of work and
  returns after finishing the current one. A run still going after the deadline is cancelled;
  the unit the store is executing completes anyway, since the store drains its queue before the
  database closes.

A failing job is logged and recorded, and runs again at its next time. The lease and the record
are bookkeeping: when they cannot be written (a full disk), that is logged and the app goes on; a
run whose lease could not be taken does not start, and a lease that could not be released
expires by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

import structlog

from nahida.clock import SYSTEM, Clock

log = structlog.get_logger(__name__)
T = TypeVar("T")

JobOutcome = Literal["running", "ok", "failed", "interrupted", "skipped"]  # of one run
LEASE_SECONDS = 60.0
STOP_DEADLINE = 10.0


@dataclass(frozen=True, slots=True)
class Schedule:
    every: float  # seconds between runs
    first: float | None = None  # seconds until the first run after start (None: `every`)


@dataclass(slots=True)
class JobContext:
    """What a run sees: whether to stop, and where to count what it did."""

    _stop: asyncio.Event
    counts: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None

    @property
    def stopping(self) -> bool:
        """The app is stopping: finish the current unit of work and return."""
        return self._stop.is_set()

    def count(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def skip(self, reason: str) -> None:
        """Record the run as skipped (e.g. "no model"), with the reason."""
        self.skipped = reason


class Job(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def schedule(self) -> Schedule: ...

    async def run(self, ctx: JobContext) -> None: ...


class RunRecords(Protocol):
    """Where runs are recorded and leased (`memory.runs`)."""

    async def lease(self, job: str, holder: str, seconds: float) -> bool: ...
    async def release(self, job: str, holder: str) -> None: ...
    async def start(self, job: str, holder: str) -> int: ...
    async def finish(
        self, run_id: int, outcome: str, counts: dict[str, int], error: str | None = None
    ) -> None: ...


def process_label() -> str:
    """Who holds a lease: host, pid and a random part (a pid can be reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Scheduler:
    def __init__(
        self,
        runs: RunRecords | None = None,
        *,
        holder: str | None = None,
        lease_seconds: float = LEASE_SECONDS,
        deadline: float = STOP_DEADLINE,
        clock: Clock = SYSTEM,
    ) -> None:
        self.runs = runs  # None: no leases, no records (tests of the timing alone)
        self.holder = holder or process_label()
        self.lease_seconds = lease_seconds
        self.deadline = deadline
        self.clock = clock
        self.jobs: dict[str, Job] = {}
        self._group: asyncio.TaskGroup | None = None
        self._timers: list[asyncio.Task[None]] = []
        self._running: dict[str, asyncio.Task[JobOutcome | None]] = {}
        self._stop = asyncio.Event()

    def add(self, job: Job) -> None:
        if job.name in self.jobs:
            raise ValueError(f"job {job.name!r} is already scheduled")
        self.jobs[job.name] = job

    def start(self, group: asyncio.TaskGroup) -> None:
        """Start firing jobs; each job's timer and each run are tasks of `group`."""
        self._group = group
        for name, job in self.jobs.items():
            timer = group.create_task(self._timer(name, job.schedule), name=f"timer {name}")
            self._timers.append(timer)

    async def _timer(self, name: str, schedule: Schedule) -> None:
        wait = schedule.every if schedule.first is None else schedule.first
        while not self._stop.is_set():
            await self.clock.sleep(wait)
            self._fire(name)
            wait = schedule.every

    def _fire(self, name: str) -> None:
        """Hand a run to the app's TaskGroup, unless the last one is still going."""
        if self._group is None or self._stop.is_set() or name in self._running:
            return
        task = self._group.create_task(self.run_now(name), name=f"job {name}")
        self._running[name] = task
        task.add_done_callback(lambda _: self._running.pop(name, None))

    async def run_now(self, name: str) -> JobOutcome | None:
        """Run a job once, now (leased and recorded); None when another process holds it."""
        job = self.jobs[name]
        bound = log.bind(job=name)
        runs = self.runs
        if runs is not None:
            leased = await _booked(
                bound, "lease", runs.lease(name, self.holder, self.lease_seconds)
            )
            if not leased:
                if leased is not None:
                    bound.info("job_leased_elsewhere")
                return None
        ctx = JobContext(self._stop)
        quiet = bool(getattr(job, "quiet", False))  # recorded only when it did something
        run_id = 0
        if runs is not None and not quiet:
            run_id = await _booked(bound, "start", runs.start(name, self.holder)) or 0
        renew = asyncio.create_task(self._keep_lease(runs, name)) if runs is not None else None
        outcome: JobOutcome = "ok"
        error: str | None = None
        try:
            await job.run(ctx)
            if ctx.skipped is not None:
                outcome, error = "skipped", ctx.skipped
            elif ctx.stopping:
                outcome = "interrupted"
        except asyncio.CancelledError:
            outcome, error = "interrupted", "stopped at the shutdown deadline"
            raise
        except Exception as exc:
            outcome, error = "failed", f"{type(exc).__name__}: {exc}"
            bound.exception("job_failed")
        finally:
            if renew is not None:
                renew.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renew
            if runs is not None:
                if quiet and (ctx.counts or outcome not in ("ok", "skipped")):
                    run_id = await _booked(bound, "start", runs.start(name, self.holder)) or 0
                if run_id:
                    await _booked(bound, "finish", runs.finish(run_id, outcome, ctx.counts, error))
                await _booked(bound, "release", runs.release(name, self.holder))
            if not quiet or ctx.counts:
                bound.info("job_finished", outcome=outcome, **ctx.counts)
        return outcome

    async def _keep_lease(self, runs: RunRecords, name: str) -> None:
        bound = log.bind(job=name)
        while True:
            await self.clock.sleep(self.lease_seconds / 3)
            await _booked(bound, "renew", runs.lease(name, self.holder, self.lease_seconds))

    async def stop(self) -> None:
        """No new runs; running ones finish their unit of work, or are cancelled after the
        deadline. Returns when none is left."""
        self._stop.set()
        for timer in self._timers:
            timer.cancel()
        running = list(self._running.values())
        if not running:
            return
        with contextlib.suppress(TimeoutError):
            async with self.clock.timeout(self.deadline):
                await asyncio.wait(running)
        late = [task for task in running if not task.done()]
        for task in late:
            log.warning("job_cancelled_at_deadline", job=task.get_name())
            task.cancel()
        if late:
            await asyncio.wait(late)


async def _booked(
    bound: structlog.typing.FilteringBoundLogger, step: str, call: Awaitable[T]
) -> T | None:
    """A lease or run record written; None when it could not be (logged: the app goes on)."""
    try:
        return await call
    except Exception as exc:  # a full disk, a damaged file: the job's books, never the app
        bound.warning("job_record_failed", step=step, error=str(exc))
        return None
