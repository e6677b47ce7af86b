"""The bus depth a running bot writes (`QueueDepthJob`) is what `nahida doctor` shows."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from nahida.app import Paths
from nahida.bus import Backlog
from nahida.cli.doctor import diagnose, queue_line, render
from nahida.config import Config
from nahida.memory.jobs import QueueDepthJob
from nahida.scheduler import JobContext
from tests.integration.test_reply_delay import make_app


async def test_doctor_shows_the_queue_the_bot_last_wrote(tmp_path: Path) -> None:
    app, _, _, _ = make_app(tmp_path)
    try:
        job = QueueDepthJob(app.memory, lambda: dataclasses.asdict(Backlog(42, 17, "g1", 12.4)))
        await job.run(JobContext(asyncio.Event()))
    finally:
        app.memory.close()
    report = await diagnose(Config(), Paths(None, tmp_path / "d", tmp_path / "w"))
    assert report["queue"]["waiting"] == 42
    line = next(x for x in render(report).splitlines() if x.startswith("queue:"))
    assert line.startswith("queue: 42 waiting (largest chat 17), oldest 12s, at ")


def test_no_record_says_so() -> None:
    assert queue_line(None).startswith("queue: not recorded")
