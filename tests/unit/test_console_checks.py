"""The console's checkups: the doctor's checks run at most once a minute and one at a time;
the Overview takes the last one without waiting."""

from __future__ import annotations

import asyncio

import pytest

from nahida.clock import VirtualClock
from nahida.console.settings import MAX_AGE, Checkup, RecentChecks


async def settle() -> None:
    """Let the tasks started so far run up to where they wait."""
    for _ in range(5):
        await asyncio.sleep(0)


class Doctor:
    """Checks that count their runs and finish when told to."""

    def __init__(self) -> None:
        self.runs = 0
        self.release = asyncio.Event()

    async def __call__(self) -> Checkup:
        self.runs += 1
        await self.release.wait()
        return Checkup({"ok": True, "run": self.runs}, [f"ok run {self.runs}"])


async def test_fresh_runs_once_a_minute_and_one_at_a_time() -> None:
    clock = VirtualClock()
    doctor = Doctor()
    recent = RecentChecks(doctor, clock)
    waiting = [asyncio.ensure_future(recent.fresh()) for _ in range(3)]
    await settle()
    assert doctor.runs == 1  # three pages at once share one run
    doctor.release.set()
    assert [c.report["run"] for c in await asyncio.gather(*waiting)] == [1, 1, 1]
    await clock.advance(MAX_AGE)
    assert (await recent.fresh()).report["run"] == 1  # a minute old: still shown
    await clock.advance(1)
    assert (await recent.fresh()).report["run"] == 2
    assert doctor.runs == 2


async def test_last_never_waits_and_starts_a_run_when_stale() -> None:
    clock = VirtualClock()
    doctor = Doctor()
    recent = RecentChecks(doctor, clock)
    assert recent.last() is None  # nothing yet: the Overview shows no warnings...
    await settle()
    assert doctor.runs == 1  # ...and the checks have started
    assert recent.last() is None and doctor.runs == 1  # one run at a time
    doctor.release.set()
    await recent.fresh()
    assert recent.last() == Checkup({"ok": True, "run": 1}, ["ok run 1"])
    await clock.advance(MAX_AGE + 1)
    stale = recent.last()  # the stale one is shown while the next runs
    assert stale is not None and stale.report["run"] == 1
    await recent.fresh()
    last = recent.last()
    assert last is not None and last.report["run"] == 2
    await recent.close()


async def test_a_failing_run_is_reported_and_the_next_view_tries_again() -> None:
    calls = 0

    async def broken() -> Checkup:
        nonlocal calls
        calls += 1
        raise OSError("disk gone")

    recent = RecentChecks(broken, VirtualClock())
    with pytest.raises(OSError, match="disk gone"):
        await recent.fresh()
    assert recent.last() is None
    await settle()
    assert calls == 2
    await recent.close()
