"""The one module that opens SQLite connections, and the thread that owns the store's connection.

Driver choice: CPython builds differ in whether their `sqlite3` can load extensions (this machine's
3.11 cannot). `sqlean` (the `sqlean.py` package: the same DB-API with extension loading and FTS5)
is preferred; the stdlib module is the fallback, with FTS5 but without sqlite-vec.

Every connection is prepared the same way: WAL (files only), foreign keys, busy timeout, autocommit
mode (transactions are explicit `BEGIN`s, nested ones savepoints), sqlite-vec when loadable.
`Database` owns one connection and one worker thread: callers hand it functions (`run` from async
code, `call` from sync code), so SQLite never blocks the event loop, statements are serialised
without locks, and concurrent writers share commits. Each function is either a write (it runs in
a transaction of its own, or in its own savepoint of a shared one) or a read (a batch of reads
shares one deferred transaction: one snapshot, and no write lock). Its `memo` answers recall's
per-message questions without SQL, kept exact by every transaction it opens and rolls back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import os
import queue
import sqlite3
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import structlog

from nahida.errors import StorageError
from nahida.memory.store.base import answering
from nahida.memory.store.sqlite.memo import Memo

log = structlog.get_logger(__name__)
T = TypeVar("T")
Connection = sqlite3.Connection


def _pick_driver() -> ModuleType:
    if os.environ.get("NAHIDA_SQLITE_DRIVER") == "stdlib":
        return sqlite3
    try:
        module = importlib.import_module("sqlean")
    except ImportError:
        return sqlite3
    return module if hasattr(module.Connection, "enable_load_extension") else sqlite3


driver: ModuleType = _pick_driver()


class _CountingCursor(driver.Cursor):  # type: ignore[name-defined,misc]
    """Counts on its connection the statements it runs (`Connection.execute` runs through
    one too), and while the connection keeps `timings`, the CPU time of each (its first step:
    all of a sorted or aggregated query's work, the first row of a plain one)."""

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self._counted(super().execute, sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        return self._counted(super().executemany, sql, parameters)

    def _counted(self, run: Callable[[str, Any], Any], sql: str, parameters: Any) -> Any:
        conn = self.connection
        conn.statements += 1
        if conn.timings is None:
            return run(sql, parameters)
        started = time.thread_time()
        try:
            return run(sql, parameters)
        finally:
            _timed(conn.timings, sql, time.thread_time() - started)


def _timed(timings: dict[str, list[float]], sql: str, seconds: float) -> None:
    key = " ".join(sql.split())  # one entry a distinct statement (the driver caches each)
    entry = timings.get(key)
    if entry is None:
        timings[key] = [1, seconds]
    else:
        entry[0] += 1
        entry[1] += seconds


class _PreparedConnection(driver.Connection):  # type: ignore[name-defined,misc]
    """A connection that remembers which sqlite-vec version it loaded (None: not loaded), and
    counts the statements it was given (the benchmarks' per-message figures; the statements
    SQLite runs inside them, FTS5's shadow tables or triggers, are not counted)."""

    vec_version: str | None = None
    statements = 0
    timings: dict[str, list[float]] | None = None  # statement → [count, CPU seconds]

    def cursor(self, factory: Any = _CountingCursor) -> Any:
        return super().cursor(factory)


@dataclass(frozen=True)
class Capabilities:
    driver: str
    sqlite_version: str
    fts5: bool
    vec: bool
    vec_version: str | None


def _load_vec(conn: Connection) -> str | None:
    if not hasattr(conn, "enable_load_extension"):
        return None
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        row = conn.execute("SELECT vec_version()").fetchone()
        return str(row[0])
    except Exception as exc:  # extension missing or refused: FTS-only mode
        log.debug("sqlite_vec_unavailable", error=str(exc))
        return None


# Prepared statements the driver keeps per connection. sqlean's cache holds about a hundred by
# default and evicts the newest entry first, so the migrations' statements (run once, first)
# keep their places and a chat's statements beyond what is left are parsed and planned again at
# every run: with ~70 of the one and ~50-100 of the other, a third of the store's CPU a message
# went there (README, Throughput). The stdlib module's cache is LRU; room for all is cheap.
# A cached statement is only worth it if SQLite keeps it: no statement binds its LIMIT (it is
# written into the SQL as a number), since SQLite 3.50 (sqlean's) prepares a statement again at
# every run once a LIMIT parameter has been bound (the window's query cost 71-77 µs a run with
# `LIMIT ?`, 14 µs with the number written in).
STATEMENT_CACHE = 512


def connect(path: str | Path, *, vec: bool = True, trace: bool = False) -> Connection:
    """Open and prepare a connection; `path` may be ':memory:'."""
    target = str(path)
    if target != ":memory:":
        Path(target).parent.mkdir(parents=True, exist_ok=True)
    try:
        conn: Connection = driver.connect(
            target,
            isolation_level=None,
            check_same_thread=False,
            timeout=5.0,
            factory=_PreparedConnection,
            cached_statements=STATEMENT_CACHE,
        )
    except driver.Error as exc:
        raise StorageError(f"cannot open database {target}: {exc}") from exc
    conn.row_factory = driver.Row
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA cache_size = -32000")  # 32 MB page cache
    conn.execute("PRAGMA temp_store = MEMORY")
    if target != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    if vec:
        conn.vec_version = _load_vec(conn)  # type: ignore[attr-defined]
    if trace or os.environ.get("NAHIDA_SQL_TRACE"):
        conn.set_trace_callback(lambda sql: log.debug("sql", sql=sql))
    return conn


def capabilities(conn: Connection) -> Capabilities:
    version = conn.execute("SELECT sqlite_version()").fetchone()[0]
    try:
        conn.execute("CREATE VIRTUAL TABLE temp._fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp._fts5_probe")
        fts5 = True
    except driver.OperationalError:
        fts5 = False
    vec_version = getattr(conn, "vec_version", None)
    return Capabilities(driver.__name__, version, fts5, vec_version is not None, vec_version)


BUSY_WAIT = 60.0  # seconds a write waits for another process's transaction, in all


def begin_immediate(conn: Connection, wait: float = BUSY_WAIT) -> None:
    """`BEGIN IMMEDIATE`, waiting for another process that holds the write lock (an import, the
    CLI) with growing pauses, up to `wait` seconds in all; then StorageError. SQLite's own busy
    timeout covers each attempt; this covers a writer that keeps the lock longer or comes back."""
    deadline = time.monotonic() + wait
    pause = 0.05
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except driver.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise StorageError(f"the database stayed locked for {wait:.0f} s: {exc}") from exc
            log.info("database_busy_waiting", pause=pause)
            time.sleep(pause)
            pause = min(pause * 2, 2.0)


@contextlib.contextmanager
def transaction(conn: Connection) -> Iterator[Connection]:
    """`BEGIN IMMEDIATE … COMMIT`, or a savepoint when a transaction is already open."""
    if conn.in_transaction:
        name = f"sp_{threading.get_ident()}_{id(conn) % 9973}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    begin_immediate(conn)
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@dataclass
class Job:
    """`fn(conn, *args)`, a write or a read; `future` (on `loop`, if any) learns its outcome.
    `urgent`: a unit of a message being answered (`answering`), run ahead of the others. `raw`:
    a function of the bare connection (tests, scripts), whose SQL the memo cannot follow; a
    store's units (`SqliteStore.run_unit`) are not raw."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    write: bool
    future: asyncio.Future[Any] | concurrent.futures.Future[Any] | None = None
    loop: asyncio.AbstractEventLoop | None = None
    urgent: bool = False
    raw: bool = True


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
        _release(exc)
        return (job, False, exc)


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


def _run_apart(
    batch: list[Job], conn: Connection, failed: int, kept: Outcome, memo: Memo
) -> list[Outcome]:
    """Run `batch` again in a fresh transaction, each write in a savepoint of its own (a job
    that fails rolls back alone, and the memo forgets what it read); the job at `failed` keeps
    its outcome (`kept`), unrun."""
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
                conn.execute("ROLLBACK TO job")
                memo.clear()
            conn.execute("RELEASE job")
            outcomes.append(outcome)
    return outcomes


def _release(exc: BaseException) -> None:
    """Drop the locals of a failed unit's frames (the traceback still prints). A cursor left in a
    frame keeps its statement, and so an old read snapshot of the database, alive for as long as
    the exception lives: from then on every write of this connection meets SQLITE_BUSY_SNAPSHOT
    (waiting out the busy timeout, then "database is locked") and no checkpoint can reset the
    WAL. This is what kept a chat process started during a `history import` slow afterwards."""
    traceback.clear_frames(exc.__traceback__)
    for linked in (exc.__cause__, exc.__context__):
        if linked is not None and linked.__traceback__ is not None:
            traceback.clear_frames(linked.__traceback__)


@dataclass(slots=True)
class DbStats:
    """What the database thread has done (for the benchmarks): units run (`round_trips`),
    transactions (`batches`), batches run again because a write failed (`reruns`), SQL
    statements given to the connection and the memo's answers (`snapshot` fills them in) and
    the thread's CPU time."""

    round_trips: int = 0
    batches: int = 0
    reruns: int = 0
    statements: int = 0
    cpu_seconds: float = 0.0
    memo_hits: int = 0  # recall's questions answered from the memo
    memo_misses: int = 0  # ... and by SQL (then remembered)


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
        """`threaded=False`: no worker thread; the owner calls `run_batch` itself (the store
        process does, on its only thread)."""
        from nahida.memory.store.sqlite.migrations import migrate

        self.path = str(path)
        self.conn = connect(self.path, vec=vec)
        migrate(self.conn)
        self.memo = Memo(self.conn)  # recall's per-message questions, answered exactly
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self.stats = DbStats()
        self._thread: threading.Thread | None = None
        if threaded:
            self._thread = threading.Thread(target=self._work, name="nahida-db", daemon=True)
            self._thread.start()
        self._closed = False

    async def run(
        self, fn: Callable[..., T], *args: Any, write: bool = True, raw: bool = True
    ) -> T:
        """Run `fn(conn, *args)` on the database thread (`raw`: see `Job`)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._submit(Job(fn, args, write, future, loop, answering.get(), raw))
        return await future

    def call(self, fn: Callable[..., T], *args: Any, write: bool = True, raw: bool = True) -> T:
        """Run `fn(conn, *args)` on the database thread and wait (CLI, scripts, tests)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._submit(Job(fn, args, write, future, raw=raw))
        return future.result()

    def snapshot(self) -> DbStats:
        """The counts so far (the statements: of the connection)."""
        return replace(
            self.stats,
            statements=int(getattr(self.conn, "statements", 0)),
            memo_hits=self.memo.hits,
            memo_misses=self.memo.misses,
        )

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
            for outcomes in self.run_in_turn(batch):
                _hand_back(outcomes)
            self.stats.cpu_seconds += time.thread_time() - started

    def run_in_turn(self, batch: list[Job]) -> Iterator[list[Outcome]]:
        """`run_batch` the urgent jobs first, then the others (each a batch of its own), yielding
        the outcomes of each in turn: an answered message's callers learn theirs without waiting
        for the observed talk and background work that queued up with them."""
        if not batch:
            return
        urgent = [job for job in batch if job.urgent]
        if not urgent or len(urgent) == len(batch):
            yield self.run_batch(batch)
            return
        yield self.run_batch(urgent)
        yield self.run_batch([job for job in batch if not job.urgent])

    def run_batch(self, batch: list[Job]) -> list[Outcome]:
        """Run jobs in one transaction (reads alone: one snapshot), in order; each job's
        outcome is (job, True, result) or (job, False, exception). A batch with a raw job runs
        without the memo, which then forgets everything (the raw SQL may have changed it)."""
        self.stats.round_trips += len(batch)
        self.stats.batches += 1
        if not any(job.raw for job in batch):
            return self._run_batch(batch)
        self.memo.off = True
        try:
            return self._run_batch(batch)
        finally:
            self.memo.off = False
            self.memo.clear()

    def _run_batch(self, batch: list[Job]) -> list[Outcome]:
        conn = self.conn
        if not any(job.write for job in batch):  # one read snapshot, no write lock
            self._begin(write=False)
            try:
                return [_attempt(job, conn) for job in batch]
            finally:
                self._end()
        if len(batch) == 1:
            job = batch[0]
            try:
                self._begin()
                result = job.fn(conn, *job.args)
                conn.execute("COMMIT")
            except BaseException as exc:
                _release(exc)
                self._roll_back()
                return [(job, False, exc)]
            return [(job, True, result)]
        try:
            self._begin()
            outcomes, failed = _run_together(batch, conn)
            if failed is not None:  # a write failed: run the batch again, apart
                self.stats.reruns += 1
                self._roll_back()
                self._begin()
                outcomes = _run_apart(batch, conn, failed, outcomes[failed], self.memo)
            conn.execute("COMMIT")
        except Exception as exc:  # the batch itself failed: nobody's work was kept
            self._roll_back()
            error = StorageError(f"database write failed: {exc}")
            return [(job, False, error) for job in batch]
        return outcomes

    def _begin(self, write: bool = True) -> None:
        """Open a transaction (a write one waits for another process's, `begin_immediate`) and
        bring the memo up to date with what other connections committed."""
        if write:
            begin_immediate(self.conn)
        else:
            self.conn.execute("BEGIN")
        self.memo.sync()

    def _end(self) -> None:
        """COMMIT a read batch (which may have written, too)."""
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            self._roll_back()
            raise

    def _roll_back(self) -> None:
        """Roll back what is open (SQLite may have rolled back already) and forget what the
        memo read meanwhile."""
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self.memo.clear()

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
