"""The store process: `python -m nahida.memory.store.sqlite.child PATH VEC LEVEL FORMAT ROLE
FD FD` (ROLE: `store`, or `reader`, which only reads).

It owns one `SqliteStore` without a worker thread and serves the bot's two sockets (`process.py`)
on its only thread: each round of requests that arrived together is one `Database.run_batch`
(group commit), and each socket gets its answers in one frame. It stops at a close request or
when the bot goes away (its sockets close), never at a signal the bot gets too: Ctrl-C reaches
the whole foreground process group and a service manager's SIGTERM every process of the
service, while the bot, shutting down, still stores what it holds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from nahida.errors import StorageError
from nahida.memory.store.sqlite.db import Job
from nahida.memory.store.sqlite.store import SqliteStore, _store_capabilities
from nahida.memory.store.sqlite.wire import (
    CLOSE_ID,
    ID,
    RECV_BYTES,
    SYNC_ID,
    Frames,
    dumps,
    frame,
    loads,
)


def _sendable(error: BaseException) -> BaseException:
    """`error`, if it survives the trip back; else a StorageError that names it."""
    try:
        loads(dumps(error))
    except Exception:
        return StorageError(f"{type(error).__name__}: {error}")
    return error


class _Server:
    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.cpu_at_start = time.process_time()

    def special(self, kind: str) -> Any:
        db = self.store.db
        if kind == "stats":  # the CPU: this whole process's
            cpu = time.process_time() - self.cpu_at_start
            return dataclasses.replace(db.snapshot(), cpu_seconds=cpu)
        if kind == "time":
            return db.time_statements()
        if kind == "times":
            return db.statement_times()
        if kind == "caps":
            return _store_capabilities(db.conn)
        raise StorageError(f"unknown store request {kind!r}")

    def serve(
        self, requests: list[tuple[int, int, bytes]], send: Callable[[int, list[Any]], None]
    ) -> None:
        """Answer `(socket, id, payload)` requests that arrived together, each socket's in one
        frame at a time: special requests and refusals at once, then the units' answers, those
        of answered messages first (`run_in_turn`)."""
        now: list[tuple[int, tuple[int, bool, Any]]] = []
        jobs: dict[int, tuple[int, int]] = {}  # id(job): (socket, request id)
        batch: list[Job] = []
        for sock, request_id, payload in requests:
            try:
                kind, write, fn, args = loads(payload)
                if kind in ("tx", "tx!"):
                    job = Job(
                        self.store.run_unit, (fn, args), write, urgent=kind == "tx!", raw=False
                    )
                elif kind == "conn":
                    job = Job(fn, args, write)
                else:
                    now.append((sock, (request_id, True, self.special(kind))))
                    continue
                jobs[id(job)] = (sock, request_id)
                batch.append(job)
            except Exception as exc:
                now.append((sock, (request_id, False, _sendable(exc))))
        _send_by_socket(now, send)
        for outcomes in self.store.db.run_in_turn(batch):
            answers = []
            for job, ok, value in outcomes:
                sock, request_id = jobs[id(job)]
                answers.append((sock, (request_id, ok, value if ok else _sendable(value))))
            _send_by_socket(answers, send)


def _send_by_socket(
    answers: list[tuple[int, tuple[int, bool, Any]]], send: Callable[[int, list[Any]], None]
) -> None:
    by_socket: dict[int, list[Any]] = {}
    for sock, answer in answers:
        by_socket.setdefault(sock, []).append(answer)
    for sock, answered in by_socket.items():
        send(sock, answered)


def _answer(sock: socket.socket, answered: list[Any]) -> None:
    try:
        payload = dumps(answered)
    except Exception:  # a result that cannot travel: its caller learns why, the others theirs
        fixed = []
        for request_id, ok, value in answered:
            try:
                dumps(value)
            except Exception as exc:
                error = StorageError(f"a store result could not be sent back: {exc}")
                fixed.append((request_id, False, error))
            else:
                fixed.append((request_id, ok, value))
        payload = dumps(fixed)
    with contextlib.suppress(OSError):  # the bot went away
        sock.sendall(frame(payload))


def main(argv: list[str]) -> None:
    from nahida.logs import configure_logging

    path, vec, level, fmt, role, async_fd, sync_fd = argv
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # the bot stops it (above)
    configure_logging(level, fmt)
    socks = [socket.socket(fileno=int(async_fd)), socket.socket(fileno=int(sync_fd))]
    try:
        store = SqliteStore(path, vec=vec == "1", threaded=False, reader=role == "reader")
    except Exception as exc:  # the first request (the parent's start-up check) learns why
        _answer(socks[1], [(SYNC_ID, False, _sendable(exc))])
        return
    server = _Server(store)
    frames = [Frames(), Frames()]
    running = True
    while running:
        ready, _, _ = select.select(socks, [], [])
        requests: list[tuple[int, int, bytes]] = []
        for index, sock in enumerate(socks):
            if sock not in ready:
                continue
            data = sock.recv(RECV_BYTES)
            if not data:  # the bot went away
                running = False
                continue
            for received in frames[index].feed(data):
                (request_id,) = ID.unpack_from(received)
                if request_id == CLOSE_ID:
                    running = False
                    continue
                requests.append((index, request_id, received[ID.size :]))
        server.serve(requests, lambda index, answered: _answer(socks[index], answered))
        store.db.between_batches()
    store.close()


if __name__ == "__main__":
    if os.environ.get("NAHIDA_STORE_PROFILE"):  # cProfile the child into this file
        import cProfile

        cProfile.run("main(sys.argv[1:])", os.environ["NAHIDA_STORE_PROFILE"])
    else:
        main(sys.argv[1:])
