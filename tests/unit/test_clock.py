from __future__ import annotations

import asyncio

import pytest

from nahida.clock import SYSTEM, VirtualClock


async def test_virtual_sleepers_wake_in_deadline_order_at_their_virtual_second() -> None:
    clock = VirtualClock()
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((name, clock.monotonic()))

    tasks = [asyncio.create_task(sleeper(n, s)) for n, s in (("c", 30), ("a", 10), ("b", 20))]
    await clock.advance(15)
    assert woke == [("a", 10.0)]
    await clock.advance(100)
    assert woke == [("a", 10.0), ("b", 20.0), ("c", 30.0)]
    assert clock.monotonic() == 115.0 and clock.time() == clock.epoch + 115.0
    await asyncio.gather(*tasks)


async def test_a_sleeper_woken_may_sleep_again_within_the_same_advance() -> None:
    clock = VirtualClock()
    ticks: list[float] = []

    async def ticker() -> None:
        for _ in range(3):
            await clock.sleep(5)
            ticks.append(clock.monotonic())

    task = asyncio.create_task(ticker())
    await clock.advance(60)
    assert ticks == [5.0, 10.0, 15.0]
    await task


async def test_the_system_clock_moves_forward() -> None:
    before = SYSTEM.monotonic()
    await SYSTEM.sleep(0)
    assert SYSTEM.monotonic() >= before and SYSTEM.time() > 1_700_000_000


async def test_a_virtual_timeout_fires_only_when_time_passes_its_deadline() -> None:
    clock = VirtualClock()
    outcome: list[str] = []

    async def waits(seconds: float) -> None:
        try:
            async with clock.timeout(seconds):
                await asyncio.Event().wait()
        except TimeoutError:
            outcome.append(f"timed out at {clock.monotonic()}")

    task = asyncio.create_task(waits(2.0))
    await clock.advance(1.9)
    assert outcome == [] and not task.done()
    await clock.advance(0.2)
    assert outcome == ["timed out at 2.0"]
    await task


async def test_a_body_done_in_time_is_not_cancelled_later() -> None:
    clock = VirtualClock()
    async with clock.timeout(1.0):
        await clock.sleep(0)
    await clock.advance(5)  # the alarm is gone: nothing is cancelled now
    await asyncio.sleep(0)
    async with clock.timeout(1.0):
        pass


async def test_the_system_timeout_is_asyncio_timeout() -> None:
    with pytest.raises(TimeoutError):
        async with SYSTEM.timeout(0.001):
            await asyncio.Event().wait()


async def test_run_moves_time_to_each_deadline_it_waits_for() -> None:
    clock = VirtualClock()

    async def naps() -> list[float]:
        seen = []
        for seconds in (3, 0.5, 10):
            await clock.sleep(seconds)
            seen.append(clock.monotonic())
        return seen

    assert await clock.run(naps()) == [3.0, 3.5, 13.5]
    assert clock.monotonic() == 13.5  # no further than the last deadline
