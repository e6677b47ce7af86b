"""`ProcessStore`: the SQLite store in a process of its own (`memory.store_process`).

In one process the database thread and the event loop take turns for the GIL: a burst keeps the
bot on one core (docs/throughput.md). Here a child process (`child.py`) owns the connection and
runs units exactly as `SqliteStore`'s thread does: the requests that arrived together are one
batch, with group commit (`Database.run_batch`). Units, their arguments, their results and their
errors travel pickled (`wire`: lambdas and local functions by code and closure). The event loop
watches its end of a socket pair itself, so the bot has no database thread at all; `*_sync`
calls (from any thread) use a second socket. If the child dies, the calls waiting on it fail
with `StorageError` and the next call starts a new child (a batch it was running either
committed or not, as with a crash in one process).

With `reader`, a second child opens the same file read-only (`PRAGMA query_only`) and runs the
`read_snapshot` units (recall) while the first one writes: WAL lets it read the transactions
committed before each of its batches, and the first child answers a write only once committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import structlog

from nahida.errors import StorageError
from nahida.memory.store.base import StoreCapabilities, answering
from nahida.memory.store.sqlite.db import DbStats
from nahida.memory.store.sqlite.store import probe
from nahida.memory.store.sqlite.wire import CLOSE, RECV_BYTES, SYNC_ID, Frames, loads, request

__all__ = ["ProcessStore", "probe"]

log = structlog.get_logger(__name__)
T = TypeVar("T")
_MODULE = "nahida.memory.store.sqlite.child"  # the child runs it with `python -m`


class _Connection:
    """One event loop's link to one child, on a socket of its own (non-blocking, watched by the
    loop): the futures of the requests sent over it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
        self.loop = loop
        self.sock = sock
        self.fd = sock.fileno()
        self.frames = Frames()
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.unsent = bytearray()
        self.writing = False
        self.open = True
        sock.setblocking(False)
        loop.add_reader(self.fd, self._readable)

    def send(self, request_id: int, frame: bytes) -> asyncio.Future[Any]:
        """Send a request at once: an idle child starts on it while this loop goes on (joining
        a loop iteration's requests in one write left both processes waiting on each other)."""
        future = self.loop.create_future()
        if not self.open:
            future.set_exception(StorageError("the store process went away (connection closed)"))
            return future
        self.pending[request_id] = future
        self.unsent += frame
        if not self.writing:  # else the child is busy: it gets the rest when it reads
            self._writable()
        return future

    def _writable(self) -> None:
        try:
            sent = self.sock.send(self.unsent)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._lost(exc)
            return
        del self.unsent[:sent]
        if self.unsent and not self.writing:  # the child is busy: the rest when it reads
            self.loop.add_writer(self.fd, self._writable)
            self.writing = True
        elif not self.unsent and self.writing:
            self.loop.remove_writer(self.fd)
            self.writing = False

    def _readable(self) -> None:
        try:
            data = self.sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lost(exc)
            return
        if not data:
            self._lost(None)
            return
        self._deliver(data)

    def _deliver(self, data: bytes) -> None:
        pending = self.pending
        for frame in self.frames.feed(data):
            for request_id, ok, value in loads(frame):
                future = pending.pop(request_id, None)
                if future is None or future.done():  # its caller was cancelled
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)

    def _lost(self, exc: OSError | None) -> None:
        self.close()
        self._fail(StorageError(f"the store process went away ({exc or 'connection closed'})"))

    def _fail(self, error: StorageError) -> None:
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(error)

    def finish(self, last: bytes) -> None:
        """Send what is queued, then `last`, waiting for the child to take it all."""
        self.sock.setblocking(True)
        self.sock.sendall(bytes(self.unsent) + last)
        self.unsent.clear()

    def drain(self) -> None:
        """Deliver every answer left on the socket (the child has exited), then close it."""
        self.sock.setblocking(True)
        while self.open:
            try:
                data = self.sock.recv(RECV_BYTES)
            except OSError:
                break
            if not data:
                break
            self._deliver(data)
        self.close()
        self._fail(StorageError("the store is closed"))

    def close(self) -> None:
        """Stop watching the socket (a no-op on a closed loop) and close it."""
        if not self.open:
            return
        self.open = False
        self.loop.remove_reader(self.fd)
        if self.writing:
            self.loop.remove_writer(self.fd)
        self.sock.close()


@dataclass
class _Child:
    process: subprocess.Popen[bytes]
    async_sock: socket.socket
    sync_sock: socket.socket
    sync_frames: Frames = field(default_factory=Frames)

    def answer(self) -> list[tuple[int, bool, Any]] | None:
        """The next answer on the sync socket (None: the child went away)."""
        while True:
            try:
                data = self.sync_sock.recv(RECV_BYTES)
            except OSError:
                return None
            if not data:
                return None
            frames = self.sync_frames.feed(data)
            if frames:
                answered: list[tuple[int, bool, Any]] = loads(frames[0])
                return answered

    def close(self) -> None:
        self.async_sock.close()
        self.sync_sock.close()


class ProcessStats:
    """What the benchmarks read from `SqliteStore.db`, answered by the children (their CPU is
    the whole child processes': the store's and its reader's, when it has one)."""

    def __init__(self, store: ProcessStore) -> None:
        self.store = store

    def _all(self, kind: str) -> list[Any]:
        return [worker.sync(kind, False, None, ()) for worker in self.store._workers()]

    def snapshot(self) -> DbStats:
        total = DbStats()
        for stats in self._all("stats"):
            total.round_trips += stats.round_trips
            total.batches += stats.batches
            total.reruns += stats.reruns
            total.statements += stats.statements
            total.cpu_seconds += stats.cpu_seconds
            total.memo_hits += stats.memo_hits
            total.memo_misses += stats.memo_misses
        return total

    def time_statements(self) -> None:
        self._all("time")

    def statement_times(self) -> dict[str, tuple[int, float]]:
        merged: dict[str, tuple[int, float]] = {}
        for times in self._all("times"):
            for sql, (n, seconds) in times.items():
                had = merged.get(sql, (0, 0.0))
                merged[sql] = (had[0] + n, had[1] + seconds)
        return merged

    def call(self, fn: Callable[..., T], *args: Any, write: bool = True) -> T:
        """`fn(conn, *args)` in the store's child."""
        result: T = self.store._main.sync("conn", write, fn, args)
        return result


class _Worker:
    """One child process, started again if it dies: the store's own (it migrates the file,
    reads and writes) or a reader (`PRAGMA query_only`). Async calls come from one event loop at
    a time (a new loop gets a new link); sync calls from any thread."""

    def __init__(self, path: str, argv: list[str]) -> None:
        self.path = path
        self.argv = argv
        self.lock = threading.Lock()  # the child's (re)start and the sync socket
        self.child: _Child | None = None
        self.link: _Connection | None = None
        self.closed = False

    def running(self) -> _Child:
        """The child, started (again, if it died); under `lock`."""
        if self.closed:
            raise StorageError("the store is closed")
        child = self.child
        if child is not None and child.process.poll() is None:
            return child
        if child is not None:
            log.warning(
                "store_process_restarted", role=self.argv[-1], exit_code=child.process.returncode
            )
            child.close()
        mine_async, its_async = socket.socketpair()
        mine_sync, its_sync = socket.socketpair()
        fds = (its_async.fileno(), its_sync.fileno())
        command = [sys.executable, "-m", _MODULE, self.path, *self.argv, *map(str, fds)]
        try:
            process = subprocess.Popen(command, pass_fds=fds, env=_child_env())
        finally:
            its_async.close()
            its_sync.close()
        self.child = _Child(process, mine_async, mine_sync)
        return self.child

    def _connect(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        with self.lock:
            child = self.running()
        if self.link is not None:
            self.link.close()
        self.link = _Connection(loop, child.async_sock.dup())  # its own socket, to close
        return self.link

    async def run(self, request_id: int, frame: bytes) -> Any:
        link = self.link
        loop = asyncio.get_running_loop()
        if link is None or link.loop is not loop or not link.open:
            link = self._connect(loop)
        return await link.send(request_id, frame)

    def sync(self, kind: str, write: bool, fn: Any, args: tuple[Any, ...]) -> Any:
        frame = request(SYNC_ID, kind, write, fn, args)
        with self.lock:
            child = self.running()
            try:
                child.sync_sock.sendall(frame)
            except OSError:
                answered = None
            else:
                answered = child.answer()
        if answered is None:
            code = child.process.poll()
            raise StorageError(f"the store process went away (exit code {code})")
        ((_, ok, value),) = answered
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Stop the child once it has run every unit already handed to it (their callers get
        their answers), then refuse calls."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            child, link = self.child, self.link
            if child is None:
                return
            with contextlib.suppress(OSError):  # the child is gone already
                if link is not None and link.open:
                    link.finish(CLOSE)  # after the units queued on the link
                else:
                    child.sync_sock.sendall(CLOSE)
            try:
                child.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                log.error("store_process_killed", reason="did not stop within 30 s")
                child.process.kill()
                child.process.wait()
        if link is not None:
            link.drain()
        child.close()


class ProcessStore:
    """The `Store` over one SQLite file, run by a child process; with `reader`, a second,
    read-only child runs `read_snapshot` units (recall) beside the first one's writes (WAL: it
    sees every transaction committed before it starts one)."""

    def __init__(
        self,
        path: str | Path,
        *,
        vec: bool = True,
        log_level: str = "INFO",
        log_format: str = "auto",
        reader: bool = False,
    ) -> None:
        argv = ["1" if vec else "0", log_level, log_format]
        self.path = str(path)
        self._ids = itertools.count(1)
        self._main = _Worker(self.path, [*argv, "store"])
        self._main.sync("stats", False, None, ())  # up and migrated, or its error raised here
        self._reader = _Worker(self.path, [*argv, "reader"]) if reader else None
        self._capabilities: StoreCapabilities | None = None
        self.db = ProcessStats(self)

    @property
    def _child(self) -> _Child | None:  # the store's own child (tests)
        return self._main.child

    def _workers(self) -> list[_Worker]:
        return [self._main] if self._reader is None else [self._main, self._reader]

    @property
    def capabilities(self) -> StoreCapabilities:
        if self._capabilities is None:
            self._capabilities = self._main.sync("caps", False, None, ())
        return self._capabilities

    async def _run(
        self, worker: _Worker, write: bool, unit: Callable[..., T], args: tuple[Any, ...]
    ) -> T:
        request_id = next(self._ids)
        kind = "tx!" if answering.get() else "tx"  # "!": run ahead of the others (wire.py)
        result: T = await worker.run(request_id, request(request_id, kind, write, unit, args))
        return result

    async def read(self, unit: Callable[..., T], *args: Any) -> T:
        return await self._run(self._main, False, unit, args)

    async def read_snapshot(self, unit: Callable[..., T], *args: Any) -> T:
        return await self._run(self._reader or self._main, False, unit, args)

    async def write(self, unit: Callable[..., T], *args: Any) -> T:
        return await self._run(self._main, True, unit, args)

    def read_sync(self, unit: Callable[..., T], *args: Any) -> T:
        result: T = self._main.sync("tx", False, unit, args)
        return result

    def write_sync(self, unit: Callable[..., T], *args: Any) -> T:
        result: T = self._main.sync("tx", True, unit, args)
        return result

    def close(self) -> None:
        """Stop the children once they have run every unit already handed to the store (their
        callers get their answers), then refuse calls."""
        if self._reader is not None:
            self._reader.close()
        self._main.close()


def _child_env() -> dict[str, str]:
    """This environment, with this checkout's `nahida` first on the path (a script may have
    imported it from its checkout without installing it)."""
    root = str(Path(__file__).resolve().parents[4])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}
