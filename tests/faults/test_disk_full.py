"""A full disk: a write fails with a clear error, the chat hears so, the bot keeps running (its
background jobs too), and writing goes on once there is room again, without a restart — with the
store on a thread and in a process of its own.

The full disk is SQLite's own SQLITE_FULL: the store's connection may not grow the file past
the pages it has (`PRAGMA max_page_count`), after the free pages and the last pages of the job
tables were filled, so a write that needs one more page fails as on a full disk. As root, a
small tmpfs filled to its last byte does it for real (those tests are skipped otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from nahida.adapters.base import Submit
from nahida.app import App, Paths
from nahida.config import Config
from nahida.envelope import Envelope, Reply
from nahida.errors import StorageFull
from nahida.i18n import t
from nahida.memory import MemoryService, Store
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.store.sqlite.connection import Connection, driver
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from nahida.scheduler import JobContext, Schedule, Scheduler
from tests.faults.entry import nahida
from tests.helpers import History, envelope

ROOM = 1 << 31  # pages: as much as SQLite allows (the limit of a connection nobody limited)
LONG = "今天的会议记录：" + "讨论了下个季度的计划和预算安排。" * 200  # needs pages of its own
CHAT = "test:private:u1"


def limit(conn: Connection, pages: int) -> None:
    """On the store's own connection: the file may hold `pages` pages, no more."""
    conn.execute(f"PRAGMA max_page_count = {pages}")


def fill(db: Path) -> int:
    """Use up the free pages and the last pages of the job tables (rows that fit nowhere else
    need a page more); the database's page count, for `limit`."""
    conn = driver.connect(str(db), isolation_level=None, timeout=30)
    try:
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
        conn.execute(f"PRAGMA max_page_count = {pages}")
        fillers = (
            "INSERT INTO named_state (key, value, updated_at) VALUES ('filler' || ?, ?, 0)",
            "INSERT INTO job_leases (job, holder, expires_at) VALUES ('filler' || ?, ?, 0)",
            "INSERT INTO job_runs (job, holder, started_at) VALUES ('filler' || ?, ?, 0)",
        )
        for statement in fillers:
            for n in range(100_000):
                try:
                    conn.execute(statement, (n, "x" * (200 if "named" in statement else 8)))
                except driver.OperationalError as exc:
                    assert "full" in str(exc)
                    break
        assert int(conn.execute("PRAGMA freelist_count").fetchone()[0]) == 0
        return pages
    finally:
        conn.close()


# the scheduler: a job's books that cannot be written --------------------------------------


class Job:
    """A job that counts its runs; `then` runs inside it (the disk fills meanwhile, say)."""

    name = "counting"
    schedule = Schedule(every=3600.0)

    def __init__(self) -> None:
        self.runs = 0
        self.then: Any = None

    async def run(self, ctx: JobContext) -> None:
        self.runs += 1
        ctx.count("units")
        if self.then is not None:
            self.then()
            raise RuntimeError("the job's own write failed: " + "详细的错误说明" * 400)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened: Store = SqliteStore(tmp_path / "nahida.db")
    yield opened
    opened.close()


async def test_a_job_whose_lease_cannot_be_written_is_skipped_and_nothing_else_stops(
    store: Store, tmp_path: Path
) -> None:
    """Before, the failed write left `run_now` (and the app's TaskGroup with it) with the
    exception: the process exited."""
    memory = MemoryService(store)
    scheduler, job = Scheduler(memory.runs), Job()
    scheduler.add(job)
    store.db.call(limit, fill(tmp_path / "nahida.db"))  # type: ignore[attr-defined]
    with capture_logs() as logs:
        assert await scheduler.run_now(job.name) is None
    assert job.runs == 0
    failed = [e for e in logs if e["event"] == "job_record_failed"]
    assert [e["step"] for e in failed] == ["lease"]
    assert "the disk is full" in failed[0]["error"] and "nahida.db" in failed[0]["error"]
    store.db.call(limit, ROOM)  # type: ignore[attr-defined]  # room again: no restart
    assert await scheduler.run_now(job.name) == "ok"
    (run,) = await memory.runs.latest(job.name)
    assert (run.outcome, run.counts) == ("ok", {"units": 1})


async def test_a_run_whose_record_cannot_be_finished_still_ends_and_releases_its_lease(
    store: Store, tmp_path: Path
) -> None:
    memory = MemoryService(store)
    scheduler, job = Scheduler(memory.runs), Job()
    scheduler.add(job)
    job.then = lambda: store.db.call(limit, fill(tmp_path / "nahida.db"))  # type: ignore[attr-defined]
    with capture_logs() as logs:
        assert await scheduler.run_now(job.name) == "failed"
    steps = [e["step"] for e in logs if e["event"] == "job_record_failed"]
    assert steps == ["finish"]  # its long error needs pages; the lease's release does not
    store.db.call(limit, ROOM)  # type: ignore[attr-defined]
    job.then = None
    assert await scheduler.run_now(job.name) == "ok"  # the lease was released: runs at once


# the bot: a message that cannot be stored ---------------------------------------------------


class Chat:
    """An adapter of platform "test": the test hands it envelopes, it keeps the replies."""

    platform = "test"

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[Envelope] = asyncio.Queue()
        self.replies: asyncio.Queue[str] = asyncio.Queue()

    def mount(self, server: object) -> None:
        return None

    async def run(self, submit: Submit) -> None:
        while True:
            await submit(await self.inbox.get())

    async def send(self, reply: Reply) -> str | None:
        await self.replies.put(reply.plain_text)
        return None

    async def say(self, text: str) -> str:
        await self.inbox.put(envelope(text, chat=CHAT))
        return await asyncio.wait_for(self.replies.get(), 60)


@contextlib.asynccontextmanager
async def running(data: Path) -> AsyncIterator[tuple[App, Chat]]:
    chat = Chat()
    model = ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "m"}))
    config = Config()
    app = App(config, Paths(None, data, data.parent / "ws"), adapters=[chat], model=model)
    task = asyncio.create_task(app.run())
    try:
        yield app, chat
        assert not task.done(), task  # it kept running through it all
    finally:
        app.stop()
        await asyncio.wait_for(task, 60)


async def test_a_message_that_cannot_be_stored_gets_a_notice_and_the_next_one_an_answer(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    async with running(data) as (app, chat):
        assert await chat.say("你好") == "echo: 你好"
        app.memory.store.db.call(limit, fill(data / "nahida.db"))  # type: ignore[attr-defined]
        with capture_logs() as logs:
            assert await chat.say(LONG) == t("storage_failed", "zh")
        (failed,) = [e for e in logs if e["event"] == "turn_not_stored"]
        assert "the disk is full" in failed["error"]
        assert await app.scheduler.run_now("cleanup_empty_sessions") in ("ok", None)
        app.memory.store.db.call(limit, ROOM)  # type: ignore[attr-defined]
        assert await chat.say(LONG + "（续）") == f"echo: {LONG}（续）"
    with History(data / "nahida.db") as history:
        (session,) = history.sessions(CHAT)
        stored = [turn.content for turn in history.turns(session.id)]
    assert stored == ["你好", "echo: 你好", LONG + "（续）", f"echo: {LONG}（续）"]


def test_the_error_says_what_happened_and_what_to_do(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "nahida.db")
    try:
        store.db.call(limit, fill(tmp_path / "nahida.db"))
        with pytest.raises(StorageFull) as raised:
            store.write_sync(lambda tx: tx.state.put("note", LONG, 0.0))
        assert str(raised.value).startswith(f"cannot write to {tmp_path / 'nahida.db'}: the disk")
        assert "free some space" in str(raised.value)
        store.db.call(limit, ROOM)
        store.write_sync(lambda tx: tx.state.put("note", LONG, 0.0))
        assert store.read_sync(lambda tx: tx.state.get("note")) == LONG
    finally:
        store.close()


# a real full disk (root only) ------------------------------------------------------------------

needs_root = pytest.mark.skipif(
    os.name != "posix" or os.geteuid() != 0, reason="mounting a small tmpfs needs root"
)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def fill_up(disk: Path) -> Path:
    """Write a file until the disk has no byte left; its path (delete it: room again)."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as handle:  # unbuffered: closing has nothing to write
        for size in (65536, 1):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * size)
    return filler


def without_wal(db: Path) -> None:
    """Copy the log into the file and cut it to nothing, so the next write must grow it."""
    conn = driver.connect(str(db), isolation_level=None, timeout=30)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


@needs_root
async def test_on_a_really_full_disk_the_bot_goes_on_and_recovers(small_disk: Path) -> None:
    data = small_disk / "data"
    async with running(data) as (app, chat):
        assert await chat.say("你好") == "echo: 你好"
        without_wal(data / "nahida.db")
        filler = fill_up(small_disk)
        with capture_logs() as logs:
            assert await chat.say(LONG) == t("storage_failed", "zh")
            await app.scheduler.run_now("cleanup_empty_sessions")  # its books fail: logged
        assert any(e["event"] == "job_record_failed" for e in logs)
        filler.unlink()
        assert await chat.say("还在吗") == "echo: 还在吗"


@needs_root
def test_the_command_line_on_a_really_full_disk_says_so_in_one_line(small_disk: Path) -> None:
    assert nahida(small_disk, "memory", "remember", "爱喝乌龙茶", "--scope", "global").code == 0
    without_wal(small_disk / "data" / "nahida.db")
    filler = fill_up(small_disk)
    ran = nahida(small_disk, "memory", "remember", "周末去爬山", "--scope", "global")
    assert ran.code == 3 and "Traceback" not in ran.err, ran
    (line,) = ran.error_lines
    assert line.startswith("error: cannot write to data/nahida.db: the disk is full ("), line
    filler.unlink()
    assert nahida(small_disk, "memory", "remember", "周末去爬山", "--scope", "global").code == 0
