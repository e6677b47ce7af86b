"""The advisory locks that let several bot processes share one PostgreSQL memory.

Every write unit takes the store's write lock for its transaction (`WRITE_LOCK`), so writes run
one at a time across processes as they do in SQLite: a unit that reads, decides and writes (is
this message stored already? which session is current?) never meets another process's unit
halfway. A chat's lock (`ChatLocks`) is held by a process from storing a message of the chat to
storing its reply (`Store.chat_lock`); it is a session-level lock on a connection of its own, so
it spans the unit's transactions, and it is gone the moment that connection is (a process that
dies holds nothing). Keys are made from the schema's name, so stores in other schemas of one
database never wait for each other.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import psycopg

from nahida.errors import StorageError

# the write lock of the store in this connection's schema (a one-key lock)
WRITE_LOCK = "SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':nahida-writes'))"
_CHAT = "hashtext(current_schema() || ':nahida-chats'), hashtext(%s)"  # a two-key lock
FIRST_WAIT = 0.005  # seconds before asking again for a chat another process holds
LONGEST_WAIT = 0.025  # a handover between processes waits at most this long


class ChatLocks:
    """Chat locks on one connection of their own (opened on first use, again after a loss)."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], where: str) -> None:
        self._connect = connect
        self._where = where
        self._conn: psycopg.Connection[Any] | None = None
        self._guard = threading.Lock()  # one statement on the connection at a time

    @asynccontextmanager
    async def hold(self, chat: str) -> AsyncIterator[None]:
        wait = FIRST_WAIT
        while not await asyncio.to_thread(self._run, f"SELECT pg_try_advisory_lock({_CHAT})", chat):
            await asyncio.sleep(wait)
            wait = min(wait * 2, LONGEST_WAIT)
        try:
            yield
        finally:
            await asyncio.to_thread(self._run, f"SELECT pg_advisory_unlock({_CHAT})", chat)

    def _run(self, sql: str, chat: str) -> bool:
        with self._guard:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._connect()
                row = self._conn.execute(sql, (chat,)).fetchone()
            except psycopg.OperationalError as exc:
                # the connection went with every lock on it: the next call opens another
                self._conn = None
                raise StorageError(f"PostgreSQL at {self._where} failed: {exc}") from exc
            return bool(row and row[0])

    def close(self) -> None:
        with self._guard:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
