"""Background jobs: a record per run, one process at a time (leases), a stop that loses nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nahida.clock import VirtualClock
from nahida.memory import MemoryService, NewTurn
from nahida.memory.jobs import CleanupEmptySessions
from nahida.memory.store.sqlite import SqliteStore
from nahida.scheduler import JobContext, Schedule, Scheduler


class Steps:
    """A job of `units` units of work, each one write (a turn), `pause` seconds apart."""

    name = "steps"

    def __init__(self, memory: MemoryService, units: int, pause: float = 0.0) -> None:
        self.memory = memory
        self.units = units
        self.pause = pause
        self.schedule = Schedule(every=3600.0, first=0.0)
        self.started = asyncio.Event()
        self.stored_one = asyncio.Event()
        self.ignore_stop = False

    async def run(self, ctx: JobContext) -> None:
        self.started.set()
        for n in range(self.units):
            if ctx.stopping and not self.ignore_stop:
                return
            turn = NewTurn("job:group:g", "user", f"unit {n}", 1_700_000_000.0 + n)
            await self.memory.sessions.record(turn)
            ctx.count("units")
            self.stored_one.set()
            await asyncio.sleep(self.pause)


class Failing:
    name = "failing"
    schedule = Schedule(every=3600.0)

    async def run(self, ctx: JobContext) -> None:
        ctx.count("tried")
        raise RuntimeError("the model said no")


class Skipping:
    name = "skipping"
    schedule = Schedule(every=3600.0)

    async def run(self, ctx: JobContext) -> None:
        ctx.skip("no model")


async def stored(memory: MemoryService) -> int:
    return sum(s.turn_count for s in await memory.sessions.latest("job:group:g", 10))


async def test_every_run_is_recorded_with_its_outcome_and_counts(memory: MemoryService) -> None:
    scheduler = Scheduler(memory.runs, holder="here")
    for job in (Steps(memory, 3), Failing(), Skipping(), CleanupEmptySessions(memory)):
        scheduler.add(job)
    assert await scheduler.run_now("steps") == "ok"
    assert await scheduler.run_now("failing") == "failed"
    assert await scheduler.run_now("skipping") == "skipped"
    assert await scheduler.run_now("cleanup_empty_sessions") == "ok"
    runs = {run.job: run for run in await memory.runs.latest()}
    assert set(runs) == {"steps", "failing", "skipping", "cleanup_empty_sessions"}
    assert (runs["steps"].outcome, runs["steps"].counts) == ("ok", {"units": 3})
    assert runs["failing"].outcome == "failed"
    assert runs["failing"].error == "RuntimeError: the model said no"
    assert runs["failing"].counts == {"tried": 1}
    assert (runs["skipping"].outcome, runs["skipping"].error) == ("skipped", "no model")
    assert runs["cleanup_empty_sessions"].counts == {"deleted": 0}
    for run in runs.values():
        assert run.holder == "here" and run.finished_at is not None
        assert run.finished_at >= run.started_at
    assert await stored(memory) == 3


async def test_a_job_leased_by_another_process_is_skipped_there(tmp_path: Path) -> None:
    one, two = SqliteStore(tmp_path / "shared.db"), SqliteStore(tmp_path / "shared.db")
    first, second = MemoryService(one), MemoryService(two)
    try:
        slow = Steps(first, units=3, pause=0.1)
        here = Scheduler(first.runs, holder="process-1")
        there = Scheduler(second.runs, holder="process-2")
        here.add(slow)
        there.add(Steps(second, units=3))
        running = asyncio.create_task(here.run_now("steps"))
        await slow.started.wait()
        assert await there.run_now("steps") is None  # the lease is held: no run, no record
        assert await running == "ok"
        assert [r.holder for r in await second.runs.latest("steps")] == ["process-1"]
        assert await there.run_now("steps") == "ok"  # released at the end of the run
        assert [r.holder for r in await second.runs.latest("steps")] == ["process-2", "process-1"]
    finally:
        one.close()
        two.close()


async def test_an_expired_lease_is_taken_over(memory: MemoryService) -> None:
    assert await memory.runs.lease("steps", "crashed-process", 0.0)  # expires at once
    scheduler = Scheduler(memory.runs, holder="here")
    scheduler.add(Steps(memory, 1))
    assert await scheduler.run_now("steps") == "ok"


async def test_stop_lets_a_running_job_finish_its_unit_and_loses_nothing(
    memory: MemoryService,
) -> None:
    job = Steps(memory, units=1000, pause=0.01)
    scheduler = Scheduler(memory.runs, holder="here", deadline=5.0)
    scheduler.add(job)
    async with asyncio.TaskGroup() as group:
        scheduler.start(group)
        await job.started.wait()
        await asyncio.sleep(0.1)
        await scheduler.stop()
    (run,) = await memory.runs.latest("steps")
    assert run.outcome == "interrupted" and run.error is None
    done = run.counts["units"]
    assert 0 < done < 1000
    assert await stored(memory) == done  # every unit it counted is stored, no half unit
    assert await memory.runs.lease("steps", "someone-else", 60.0)  # the lease was released


async def test_a_job_that_ignores_stop_is_cancelled_at_the_deadline(
    memory: MemoryService,
) -> None:
    clock = VirtualClock()
    job = Steps(memory, units=1000, pause=0.01)
    job.ignore_stop = True
    scheduler = Scheduler(memory.runs, holder="here", deadline=10.0, clock=clock)
    scheduler.add(job)
    async with asyncio.TaskGroup() as group:
        scheduler.start(group)
        await job.stored_one.wait()
        stopping = asyncio.create_task(scheduler.stop())
        await clock.advance(9.9)
        assert not stopping.done()  # the job had its deadline to finish
        await clock.advance(0.2)
        await stopping
    (run,) = await memory.runs.latest("steps")
    assert run.outcome == "interrupted"
    assert run.error == "stopped at the shutdown deadline"
    assert await stored(memory) >= run.counts["units"] > 0


class Clocked:
    """Notes the virtual second of each run; `hold` keeps a run going until it is set."""

    name = "clocked"
    schedule = Schedule(every=60.0, first=10.0)

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.ran: list[float] = []
        self.hold: asyncio.Event | None = None

    async def run(self, ctx: JobContext) -> None:
        self.ran.append(self.clock.monotonic())
        if self.hold is not None:
            await self.hold.wait()


async def test_jobs_fire_on_their_schedule_inside_the_task_group() -> None:
    clock = VirtualClock()
    job = Clocked(clock)
    scheduler = Scheduler(clock=clock)
    scheduler.add(job)
    async with asyncio.TaskGroup() as group:
        scheduler.start(group)
        await clock.advance(9.9)
        assert job.ran == []
        await clock.advance(200)
        assert job.ran == [10.0, 70.0, 130.0, 190.0]
        await scheduler.stop()
        await clock.advance(600)
    assert job.ran == [10.0, 70.0, 130.0, 190.0]  # stopped: no timer left


async def test_a_run_still_going_when_the_next_is_due_is_not_doubled() -> None:
    clock = VirtualClock()
    job = Clocked(clock)
    job.hold = asyncio.Event()
    scheduler = Scheduler(clock=clock)
    scheduler.add(job)
    async with asyncio.TaskGroup() as group:
        scheduler.start(group)
        await clock.advance(200)
        assert job.ran == [10.0]
        job.hold.set()
        await clock.advance(60)
        assert job.ran == [10.0, 250.0]
        await scheduler.stop()


def test_a_job_name_is_scheduled_once(memory: MemoryService) -> None:
    scheduler = Scheduler(memory.runs)
    scheduler.add(Failing())
    with pytest.raises(ValueError, match="already scheduled"):
        scheduler.add(Failing())


class Ticking:
    """A quiet job: does something only when there is something (`work` units)."""

    name = "ticking"
    schedule = Schedule(every=3600.0)
    quiet = True

    def __init__(self) -> None:
        self.work = 0

    async def run(self, ctx: JobContext) -> None:
        if self.work:
            ctx.count("done", self.work)
            self.work = 0


async def test_a_quiet_job_is_recorded_only_when_it_did_something(memory: MemoryService) -> None:
    job = Ticking()
    scheduler = Scheduler(memory.runs, holder="here")
    scheduler.add(job)
    for _ in range(3):
        assert await scheduler.run_now("ticking") == "ok"
    assert await memory.runs.latest("ticking") == []
    job.work = 2
    assert await scheduler.run_now("ticking") == "ok"
    assert await scheduler.run_now("ticking") == "ok"
    (run,) = await memory.runs.latest("ticking")
    assert (run.outcome, run.counts) == ("ok", {"done": 2})
