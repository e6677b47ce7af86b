"""WAL checkpoints off the writer's thread (`Checkpointer`).

SQLite checkpoints on the connection that commits, once the log holds `wal_autocheckpoint`
pages (1,000 by default): it syncs the log, copies its pages into the database file and syncs
that, 8–10 ms of waiting on the disk here during which the store runs nothing and every chat
waits on it (`synchronous = OFF`, no syncs at all, made `bench_pipeline` 1,000 × 10 40 % faster:
docs/throughput.md, stop 45). Here a thread of the writer's process copies the log with a
connection of its own (a PASSIVE checkpoint: it waits for no writer and no writer for it),
syncs included, while the writer goes on. The writer's `synchronous = NORMAL` is unchanged, so
a commit is as durable as before: a pass comes every `PASS_EVERY` commits (about as many pages
as SQLite's 1,000), and `IDLE_PASS` seconds after the last one when the bot is quiet (where
SQLite's own waited for its 1,000 pages).

SQLite starts the log over only at a write that finds every page of it copied, and a writer
that commits all the time adds pages during every pass. So once a pass finds `BOUND` pages in
the log the thread chases the writer with passes back to back, each copying the pages added
during the one before, while those shrink by half or more, to a few (`TAIL`); then it leaves
the next checkpoint to the writer, which runs it between two batches: only the pages since that
last pass are left to copy (a few ms, mostly the two syncs, against 8–10 ms every 1,000 pages
before), and its next transaction starts the log over.
SQLite's own automatic checkpoint stays on at `BACKSTOP` pages, should the thread fail.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import structlog

from nahida.errors import StorageError
from nahida.memory.store.sqlite.connection import Connection, connect

log = structlog.get_logger(__name__)


class Checkpointer:
    """Checkpoints the database at `path` on a thread, for the one connection (`writer`) that
    writes it in this process: the writer calls `committed` after each write transaction and
    `between_batches` when it has nothing open."""

    # the writer's commits between two passes (~25–30 pages a commit): a page written again and
    # again is copied once a pass (16 made the burst 2–6 % slower, 96 the runner's p99 higher)
    PASS_EVERY = 48
    IDLE_PASS = 5.0  # seconds after the last commit a pass comes at the latest
    BOUND = 4_000  # pages (16 MB) of log before the writer finishes a checkpoint itself
    # then the thread's passes chase the writer's pages while they shrink to at most TAIL new
    # ones (~5 commits), CHASE passes at most: the writer's own took 8.0–8.4 ms (medians of
    # runs), now 4.2–5.7, and 1,000 × 10's runner p99 is 1.6–6 ms lower (docs/throughput.md)
    TAIL = 150
    CHASE = 8
    BACKSTOP = 8_000  # SQLite's automatic checkpoint on the writer, should the thread fail

    def __init__(self, path: str | Path, writer: Connection) -> None:
        self.writer = writer
        self.own = connect(path, vec=False)
        writer.execute(f"PRAGMA wal_autocheckpoint = {self.BACKSTOP}")
        self.passes = 0  # the thread's
        self.finishes = 0  # the writer's
        self._commits = 0  # since the thread's last pass
        self._log_pages = 0  # in the log at the last checkpoint
        self._finish_at = self.BOUND  # log pages from which the writer finishes a checkpoint
        self._in_pass = False
        self._closed = False
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._work, name="nahida-checkpoint", daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, path: str, writer: Connection) -> Checkpointer | None:
        """A checkpointer for a file database; None (SQLite's own checkpoints) for one in
        memory, or when a second connection cannot be opened."""
        if path == ":memory:":
            return None
        try:
            return cls(path, writer)
        except StorageError as exc:
            log.warning("checkpoint_thread_unavailable", error=str(exc))
            return None

    def committed(self) -> None:
        self._commits += 1
        if self._commits >= self.PASS_EVERY and not self._wake.is_set():  # set() takes a lock
            self._wake.set()

    def between_batches(self) -> None:
        """Once the log has grown to `BOUND` pages (the thread then chases it and stops): copy
        the rest of it on the writer, so that its next write starts the log over. A reader's
        snapshot can keep some pages from being copied: then the thread goes on, and the writer
        tries again `BOUND` / 4 pages later."""
        if self._log_pages < self._finish_at or self._in_pass or self.writer.in_transaction:
            return
        try:
            busy, pages, copied = self.writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except Exception as exc:  # a full disk, say: the next write learns it, not the loop
            log.warning("checkpoint_failed", error=str(exc))
            self._finish_at = self._log_pages + self.BOUND // 4
            return
        if busy:  # another connection's checkpoint: after the next batch
            return
        self.finishes += 1
        if pages == copied:  # its next write starts the log over
            self._log_pages, self._finish_at = 0, self.BOUND
        else:
            self._log_pages, self._finish_at = pages, pages + self.BOUND // 4

    def _work(self) -> None:
        while True:
            woken = self._wake.wait(self.IDLE_PASS)  # else the writer has been idle a while
            if not woken and not self._commits:
                continue
            self._wake.clear()
            if self._closed:
                return
            if woken and self._log_pages >= self._finish_at:  # the writer's turn
                continue
            self._commits = 0
            self._in_pass = True
            try:
                before = self._log_pages
                pages = self._pass()
                if pages >= self._finish_at:  # the writer's turn next
                    # what this pass found added since the last (all of it: a log started over)
                    self._chase(pages - before if pages > before else pages)
                if self._log_pages < self.BOUND:  # the log started over since
                    self._finish_at = self.BOUND
            except Exception as exc:  # the writer's own checkpoints (BACKSTOP) go on
                log.warning("checkpoint_failed", error=str(exc))
            finally:
                self._in_pass = False

    def _pass(self) -> int:
        """A PASSIVE checkpoint on the thread's connection; the pages in the log."""
        pages = int(self.own.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
        self.passes += 1
        self._log_pages = pages  # however much it copied: the writer goes on writing
        return pages

    def _chase(self, added: int) -> None:
        """Passes back to back, each copying what the writer added during the one before, while
        that shrinks: until a pass finds at most `TAIL` pages added, or more than half as many
        as the pass before it (`added`: the copying does not catch up, as after a reader held
        the log a long while), or after `CHASE` passes. What the writer then copies itself,
        while its chats wait, is that little."""
        pages = self._log_pages
        for _ in range(self.CHASE):
            if self._closed:
                return
            more = self._pass()
            if more - pages <= self.TAIL or 2 * (more - pages) > added:
                return  # (fewer pages than before: the log started over)
            pages, added = more, more - pages

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        self._thread.join()
        self.own.close()


def truncate_log(conn: Connection, wait: float = 5.0) -> bool:
    """`PRAGMA wal_checkpoint(TRUNCATE)` on `conn` (the whole log copied, the file emptied);
    True when done. While another connection checkpoints (a store's thread) SQLite answers busy
    at once, without its busy timeout: tried again for up to `wait` seconds."""
    deadline = time.monotonic() + wait
    while True:
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if not busy or time.monotonic() >= deadline:
            return not busy
        time.sleep(0.01)
