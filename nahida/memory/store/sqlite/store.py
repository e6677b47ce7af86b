"""`SqliteStore`: the `Store` over one SQLite file, its one database thread and group commit."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from nahida.memory.store.sqlite.commands import CommandTable
from nahida.memory.store.sqlite.connection import Connection, capabilities, connect
from nahida.memory.store.sqlite.db import Database
from nahida.memory.store.sqlite.dreams import DreamTable
from nahida.memory.store.sqlite.episodes import EpisodeTable
from nahida.memory.store.sqlite.history import SessionTable, TurnTable
from nahida.memory.store.sqlite.items import CandidateTable, EventTable, ItemTable
from nahida.memory.store.sqlite.jobs import JobTable
from nahida.memory.store.sqlite.markdown import MarkdownTable, StateTable
from nahida.memory.store.sqlite.people import PeopleTable
from nahida.memory.store.sqlite.profiles import ProfileTable
from nahida.memory.store.sqlite.recalls import RecallTable
from nahida.memory.store.sqlite.vectors import VectorTable
from nahida.memory.store.sqlite.working import SummaryTable
from nahida.memory.store.values import StoreCapabilities

T = TypeVar("T")


class SqliteTx:
    """The tables of one connection; units get it inside the transaction the store opened."""

    def __init__(self, conn: Connection) -> None:
        self.sessions = SessionTable(conn)
        self.turns = TurnTable(conn)
        self.items = ItemTable(conn)
        self.events = EventTable(conn)
        self.candidates = CandidateTable(conn)
        self.jobs = JobTable(conn)
        self.vectors = VectorTable(conn)
        self.summaries = SummaryTable(conn)
        self.profiles = ProfileTable(conn)
        self.episodes = EpisodeTable(conn)
        self.dreams = DreamTable(conn)
        self.markdown = MarkdownTable(conn)
        self.state = StateTable(conn)
        self.commands = CommandTable(conn)
        self.recalls = RecallTable(conn)
        self.people = PeopleTable(conn)


def _store_capabilities(conn: Connection) -> StoreCapabilities:
    caps = capabilities(conn)
    return StoreCapabilities(
        backend="sqlite",
        driver=caps.driver,
        version=caps.sqlite_version,
        fts=caps.fts5,
        vectors=caps.vec,
        vectors_version=caps.vec_version,
    )


class SqliteStore:
    """`vec=False` leaves sqlite-vec unloaded (vector search then ranks with numpy), as on a
    build that cannot load extensions."""

    def __init__(self, path: str | Path, *, vec: bool = True) -> None:
        self.db = Database(path, vec=vec)
        self.path = self.db.path
        self._tx = SqliteTx(self.db.conn)
        self._capabilities: StoreCapabilities | None = None

    @property
    def capabilities(self) -> StoreCapabilities:
        if self._capabilities is None:
            self._capabilities = self.db.call(_store_capabilities)  # DDL: a temp probe table
        return self._capabilities

    def run_unit(self, conn: Connection, unit: Callable[..., T], args: tuple[Any, ...]) -> T:
        """`unit(tx, *args)` on this store's tables (a `Database` job's function)."""
        return unit(self._tx, *args)

    async def read(self, unit: Callable[..., T], *args: Any) -> T:
        return await self.db.run(self.run_unit, unit, args, write=False)

    async def write(self, unit: Callable[..., T], *args: Any) -> T:
        return await self.db.run(self.run_unit, unit, args)

    def read_sync(self, unit: Callable[..., T], *args: Any) -> T:
        result: T = self.db.call(self.run_unit, unit, args, write=False)
        return result

    def write_sync(self, unit: Callable[..., T], *args: Any) -> T:
        result: T = self.db.call(self.run_unit, unit, args)
        return result

    def chat_lock(self, chat: str) -> AbstractAsyncContextManager[object]:
        return nullcontext()  # one process owns the store

    def close(self) -> None:
        self.db.close()


def probe() -> StoreCapabilities:
    """What this installation's SQLite can do (a throwaway in-memory connection)."""
    conn = connect(":memory:")
    try:
        return _store_capabilities(conn)
    finally:
        conn.close()
