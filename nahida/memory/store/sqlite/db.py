"""The thread that owns the store's connection (opened by `connection.connect`).

`Database` owns one connection and one worker thread: callers hand it functions (`run` from async
code, `call` from sync code), so SQLite never blocks the event loop, statements are serialised
without locks, and concurrent writers share commits. Each function is either a write (it runs in
a transaction of its own, or in its own savepoint of a shared one) or a read (a batch of reads
shares one deferred transaction: one snapshot, and no write lock). The WAL is checkpointed by
SQLite itself, on this connection, as it grows (`wal_autocheckpoint`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import structlog

from nahida.errors import StorageError
from nahida.memory.store.sqlite.connection import (
    Connection,
    begin_immediate,
    connect,
    driver,
    storage_error,
)

log = structlog.get_logger(__name__)
T = TypeVar("T")


@dataclass
class Job:
    """`fn(conn, *args)`, a write or a read; `future` (on `loop`, if any) learns its outcome."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    write: bool
    future: asyncio.Future[Any] | concurrent.futures.Future[Any] | None = None
    loop: asyncio.AbstractEventLoop | None = None


Outcome = tuple[Job, bool, Any]  # a job, whether it succeeded, its result or exception


def _deliver(outcome: Outcome) -> None:
    job, ok, value = outcome
    future = job.future
    if future is None or future.done():  # the awaiting task was cancelled
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def _deliver_all(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        _deliver(outcome)


def _hand_back(outcomes: list[Outcome]) -> None:
    """From the database thread: each job's caller learns its outcome, one wake-up per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Outcome]] = {}
    for outcome in outcomes:
        loop = outcome[0].loop
        if loop is None:
            _deliver(outcome)
        else:
            by_loop.setdefault(loop, []).append(outcome)
    for loop, delivered in by_loop.items():
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(_deliver_all, delivered)


def _attempt(job: Job, conn: Connection) -> Outcome:
    try:
        return (job, True, job.fn(conn, *job.args))
    except BaseException as exc:
        return (job, False, _clear(exc, conn))


def _clear(exc: BaseException, conn: Connection) -> BaseException:
    """What a unit's caller learns: a damaged file or a full disk as the clear error it is
    (`storage_error`), any other exception as it was raised; its frames' locals dropped
    (`_release`: a cursor kept in one outlives the connection, and SQLite's zombie connection
    then crashes the process when the cursor is collected)."""
    _release(exc)
    found = storage_error(exc, getattr(conn, "path", ""))
    if found is None:
        return exc
    found.__cause__ = exc
    return found


def _batch_error(exc: BaseException, conn: Connection) -> StorageError:
    """The error every job of a batch that failed as a whole learns."""
    found = _clear(exc, conn)
    return found if isinstance(found, StorageError) else StorageError(f"database failed: {exc}")


def _run_together(batch: list[Job], conn: Connection) -> tuple[list[Outcome], int | None]:
    """Run `batch` in the open transaction without a savepoint between its jobs: FTS5 writes
    its pending index data out as a new segment at every savepoint (2.4x the CPU of an FTS5
    insert, measured), so a batch of turns pays for one segment instead of one each. The
    outcomes so far and None, or, at the first write that fails, its place in the batch (its
    outcome is the last; the caller rolls back: its partial work goes with the others')."""
    outcomes: list[Outcome] = []
    for place, job in enumerate(batch):
        outcomes.append(_attempt(job, conn))
        if job.write and not outcomes[-1][1]:
            return outcomes, place
    return outcomes, None


def _run_apart(batch: list[Job], conn: Connection, failed: int, kept: Outcome) -> list[Outcome]:
    """Run `batch` again in a fresh transaction, each write in a savepoint of its own (a job
    that fails rolls back alone); the job at `failed` keeps its outcome (`kept`), unrun."""
    outcomes: list[Outcome] = []
    for place, job in enumerate(batch):
        if place == failed:
            outcomes.append(kept)
        elif not job.write:
            outcomes.append(_attempt(job, conn))
        else:
            conn.execute("SAVEPOINT job")
            outcome = _attempt(job, conn)
            if not outcome[1]:
                if not conn.in_transaction:  # SQLite rolled back all (a full disk does)
                    raise outcome[2]
                conn.execute("ROLLBACK TO job")
            conn.execute("RELEASE job")
            outcomes.append(outcome)
    return outcomes


def _release(exc: BaseException) -> None:
    """Drop the locals of a failed unit's frames (the traceback still prints). A cursor left in a
    frame keeps its statement, and so an old read snapshot of the database, alive for as long as
    the exception lives: from then on every write of this connection meets SQLITE_BUSY_SNAPSHOT
    (waiting out the busy timeout, then "database is locked") and no checkpoint can reset the
    WAL."""
    traceback.clear_frames(exc.__traceback__)
    for linked in (exc.__cause__, exc.__context__):
        if linked is not None and linked.__traceback__ is not None:
            traceback.clear_frames(linked.__traceback__)


@dataclass(slots=True)
class DbStats:
    """What the database thread has done (for the benchmarks): units run (`round_trips`),
    transactions (`batches`), batches run again because a write failed (`reruns`), SQL
    statements given to the connection (`snapshot` fills them in) and the thread's CPU time."""

    round_trips: int = 0
    batches: int = 0
    reruns: int = 0
    statements: int = 0
    cpu_seconds: float = 0.0


class Database:
    """One migrated connection, used only by one worker thread, with group commit.

    Jobs queue up while the thread works; the next batch runs in one transaction, and every
    job's caller learns its result only after the batch committed. A writing job that fails
    rolls back alone: the batch then runs again with each write in a savepoint of its own
    (savepoints are not free with FTS5, so only then). Many chats writing at once then share
    one commit instead of paying one each. A job alone runs in a transaction of its own when
    it writes.
    """

    MAX_BATCH = 256

    def __init__(self, path: str | Path, *, vec: bool = True, threaded: bool = True) -> None:
        """`threaded=False`: no worker thread; the owner calls `run_batch` itself (tests that
        choose what one batch holds)."""
        from nahida.memory.store.sqlite.migrations import migrate

        self.path = str(path)
        self.conn = connect(self.path, vec=vec)
        try:
            migrate(self.conn)
        except BaseException as exc:
            _release(exc)
            self.conn.close()
            if isinstance(exc, driver.Error):  # the schema itself could not be read
                raise _batch_error(exc, self.conn) from exc
            raise
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self.stats = DbStats()
        self._thread: threading.Thread | None = None
        if threaded:
            self._thread = threading.Thread(target=self._work, name="nahida-db", daemon=True)
            self._thread.start()
        self._closed = False

    async def run(self, fn: Callable[..., T], *args: Any, write: bool = True) -> T:
        """Run `fn(conn, *args)` on the database thread."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._submit(Job(fn, args, write, future, loop))
        return await future

    def call(self, fn: Callable[..., T], *args: Any, write: bool = True) -> T:
        """Run `fn(conn, *args)` on the database thread and wait (CLI, scripts, tests)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._submit(Job(fn, args, write, future))
        return future.result()

    def snapshot(self) -> DbStats:
        """The counts so far (the statements: of the connection)."""
        return replace(self.stats, statements=int(getattr(self.conn, "statements", 0)))

    def time_statements(self) -> None:
        """From now on, time each statement (`statement_times`; the benchmarks)."""
        self.conn.timings = {}  # type: ignore[attr-defined]  # a _PreparedConnection

    def statement_times(self) -> dict[str, tuple[int, float]]:
        """Statements timed so far, by their words: (count, CPU seconds)."""
        timings = dict(getattr(self.conn, "timings", None) or {})
        return {sql: (int(n), float(seconds)) for sql, (n, seconds) in timings.items()}

    def _submit(self, job: Job) -> None:
        if self._thread is None:
            raise StorageError("this database has no worker thread (run_batch only)")
        if self._closed:
            raise StorageError("the database is closed")
        self._jobs.put(job)

    def _work(self) -> None:
        running = True
        while running:
            first = self._jobs.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < self.MAX_BATCH:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    running = False
                    break
                batch.append(job)
            started = time.thread_time()
            try:
                _hand_back(self.run_batch(batch))
            except Exception as exc:  # never reached, by design; if it is, nobody waits forever
                log.exception("database_batch_failed")
                error = _batch_error(exc, self.conn)
                _hand_back([(job, False, error) for job in batch])  # the answered keep theirs
            self.stats.cpu_seconds += time.thread_time() - started

    def run_batch(self, batch: list[Job]) -> list[Outcome]:
        """Run jobs in one transaction (reads alone: one snapshot), in order; each job's
        outcome is (job, True, result) or (job, False, exception)."""
        self.stats.round_trips += len(batch)
        self.stats.batches += 1
        conn = self.conn
        if not any(job.write for job in batch):  # one read snapshot, no write lock
            try:
                self._begin(write=False)
                outcomes = [_attempt(job, conn) for job in batch]
                self._commit()  # a read batch may have written too (a temp table, say)
            except Exception as exc:  # a damaged page met by SQLite itself, say
                error = _batch_error(exc, conn)
                self._roll_back()
                return [(job, False, error) for job in batch]
            return outcomes
        if len(batch) == 1:
            job = batch[0]
            try:
                self._begin()
                result = job.fn(conn, *job.args)
                self._commit()
            except BaseException as exc:
                failure = _clear(exc, conn)
                self._roll_back()
                return [(job, False, failure)]
            return [(job, True, result)]
        try:
            self._begin()
            outcomes, failed = _run_together(batch, conn)
            if failed is not None:  # a write failed: run the batch again, apart
                self.stats.reruns += 1
                self._roll_back()
                self._begin()
                outcomes = _run_apart(batch, conn, failed, outcomes[failed])
            self._commit()
        except Exception as exc:  # the batch itself failed: nobody's work was kept
            error = _batch_error(exc, conn)
            self._roll_back()
            return [(job, False, error) for job in batch]
        return outcomes

    def _begin(self, write: bool = True) -> None:
        """Open a transaction (a write one waits for another process's, `begin_immediate`)."""
        if write:
            begin_immediate(self.conn)
        else:
            self.conn.execute("BEGIN")

    def _commit(self) -> None:
        self.conn.execute("COMMIT")

    def _roll_back(self) -> None:
        """Roll back what is open (SQLite may have rolled back already)."""
        if not self.conn.in_transaction:
            return
        try:
            self.conn.execute("ROLLBACK")
        except driver.Error as exc:  # a damaged file: the failure the caller learns says so
            log.warning("rollback_failed", error=str(exc))

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join()
        with contextlib.suppress(Exception):
            self.conn.execute("PRAGMA optimize")
        self.conn.close()
