from __future__ import annotations

import asyncio

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
