"""The background work queue: order per key, concurrency across keys, failures, drain."""

from __future__ import annotations

import asyncio

from nahida.background import BackgroundWork


async def test_work_of_one_key_keeps_its_order_and_keys_run_side_by_side() -> None:
    work = BackgroundWork(concurrency=4)
    done: list[str] = []
    running = 0
    most = 0

    def piece(name: str, pause: float) -> object:
        async def run() -> None:
            nonlocal running, most
            running += 1
            most = max(most, running)
            await asyncio.sleep(pause)
            running -= 1
            done.append(name)

        return run

    async with asyncio.TaskGroup() as group:
        group.create_task(work.run())
        for n in range(3):
            assert await work.submit("a", f"a{n}", piece(f"a{n}", 0.05 - n * 0.02))  # type: ignore[arg-type]
            assert await work.submit("b", f"b{n}", piece(f"b{n}", 0.01))  # type: ignore[arg-type]
        await work.shutdown()
    assert [d for d in done if d[0] == "a"] == ["a0", "a1", "a2"]  # not by duration
    assert [d for d in done if d[0] == "b"] == ["b0", "b1", "b2"]
    assert most == 2  # a and b at once, never two of one key
    assert work.accepted == work.done == 6


async def test_a_failing_piece_is_counted_and_the_rest_still_runs() -> None:
    work = BackgroundWork()
    done: list[int] = []

    async def boom() -> None:
        raise RuntimeError("compaction failed")

    async def fine() -> None:
        done.append(1)

    async with asyncio.TaskGroup() as group:
        group.create_task(work.run())
        await work.submit("chat", "boom", boom)
        await work.submit("chat", "fine", fine)
        await work.shutdown()
    assert (work.failed, done) == (1, [1])
    assert not await work.submit("chat", "late", fine)  # closed: refused, never half-run
