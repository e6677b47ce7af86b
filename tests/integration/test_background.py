"""Slow post-turn work runs in the background, and a stop during a long job loses nothing."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Awaitable, MutableMapping
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import LogCapture

from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.app import App, Paths, console_app
from nahida.config import Config
from nahida.hooks import TurnContext
from nahida.memory import MemoryService, NewTurn
from nahida.scheduler import JobContext, Schedule
from tests.helpers import History, config


class Stamped(io.StringIO):
    """stdout that remembers when each line was written."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def write(self, text: str) -> int:
        self.times.extend(time.monotonic() for line in text.splitlines() if line.strip())
        return super().write(text)


class SlowHook:
    """A post-turn hook that takes a while (think: a model call for compaction)."""

    name = "slow"

    def __init__(self) -> None:
        self.done: list[tuple[str, float]] = []

    async def after_turn(self, turn: TurnContext, reply: str | None) -> None:
        await asyncio.sleep(0.3)
        self.done.append((turn.turn.content, time.monotonic()))


def terminal(
    tmp_path: Path, lines: list[str], cfg: Config, stdin: io.StringIO | None = None
) -> tuple[App, Stamped]:
    out = Stamped()
    stdin = stdin or io.StringIO("\n".join(lines) + "\n")
    console = ConsoleAdapter(stdin=stdin, stdout=out)
    app = console_app(cfg, Paths(None, tmp_path / "data", tmp_path / "ws"), console)
    return app, out


async def test_a_slow_hook_never_holds_up_the_chats_next_message(tmp_path: Path) -> None:
    app, out = terminal(tmp_path, ["一", "二", "三"], config(scheduler={"enabled": False}))
    hook = SlowHook()
    app.runner.background_hooks.append(hook)
    await app.run()
    assert len(out.times) == 3  # three replies ("no model configured")
    first_hook_done = hook.done[0][1]
    assert out.times[-1] < first_hook_done  # the third reply went out before the first hook ended
    assert [text for text, _ in hook.done] == ["一", "二", "三"]  # in the chat's order, all drained
    assert app.background.done == 3 and app.background.failed == 0


class FailingHook:
    name = "failing"

    async def after_turn(self, turn: TurnContext, reply: str | None) -> None:
        raise RuntimeError("broken hook")


async def logged_with_context(work: Awaitable[object]) -> list[MutableMapping[str, Any]]:
    """The log lines `work` writes, with the context bound around them (as `nahida run` logs)."""
    capture, processors = LogCapture(), structlog.get_config()["processors"]
    structlog.configure(processors=[structlog.contextvars.merge_contextvars, capture])
    try:
        await work
    finally:
        structlog.configure(processors=processors)
    return capture.entries


@pytest.mark.parametrize("background", [False, True])
async def test_a_failing_hook_is_logged_with_its_message(tmp_path: Path, background: bool) -> None:
    app, out = terminal(tmp_path, ["一", "二"], config(scheduler={"enabled": False}))
    hooks = app.runner.background_hooks if background else app.runner.hooks
    hooks.append(FailingHook())
    logs = await logged_with_context(app.run())
    assert len(out.times) == 2  # both messages answered despite the hook
    failed = [line for line in logs if line["event"] == "post_turn_hook_failed"]
    assert [line["hook"] for line in failed] == ["failing", "failing"]
    assert {line.get("chat") for line in failed} == {"console:private:local"}
    assert len({line.get("msg") for line in failed}) == 2  # each line names its own message


class Steps:
    """A long job: one stored turn per unit of work."""

    name = "steps"
    schedule = Schedule(every=3600.0, first=0.0)

    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory

    async def run(self, ctx: JobContext) -> None:
        for n in range(10_000):
            if ctx.stopping:
                return
            turn = NewTurn("job:group:g", "user", f"unit {n}", 1_700_000_000.0 + n)
            await self.memory.sessions.record(turn)
            ctx.count("units")
            await asyncio.sleep(0.005)


async def test_stopping_during_a_long_job_loses_nothing(tmp_path: Path) -> None:
    app, _ = terminal(tmp_path, [], Config(), stdin=EndsLater(0.5))  # then the app stops
    app.scheduler.add(Steps(app.memory))
    await app.run()
    with History(tmp_path / "data" / "nahida.db") as db:
        (run,) = db.store.read_sync(lambda tx: tx.jobs.latest("steps", 5))
        stored = sum(s.turn_count for s in db.sessions("job:group:g", 10))
    assert run.outcome == "interrupted" and run.finished_at is not None
    assert 0 < run.counts["units"] < 10_000
    assert stored == run.counts["units"]


class EndsLater(io.StringIO):
    """stdin that reaches its end only after `delay` seconds (read on the console's thread)."""

    def __init__(self, delay: float) -> None:
        super().__init__("")
        self.delay = delay

    def __next__(self) -> str:
        time.sleep(self.delay)
        raise StopIteration
