"""`PostgresStore`: the `Store` over a PostgreSQL database (DESIGN §16), its read pool and its
one writer (`db.Database`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from nahida.memory.store.postgres.candidates import CandidateTable
from nahida.memory.store.postgres.commands import CommandTable
from nahida.memory.store.postgres.db import Connection, Database
from nahida.memory.store.postgres.events import EventTable
from nahida.memory.store.postgres.items import ItemTable
from nahida.memory.store.postgres.jobs import JobTable
from nahida.memory.store.postgres.markdown import MarkdownTable, StateTable
from nahida.memory.store.postgres.sessions import SessionTable
from nahida.memory.store.postgres.turns import TurnTable
from nahida.memory.store.postgres.unbuilt import NotBuilt
from nahida.memory.store.values import StoreCapabilities

T = TypeVar("T")


class PostgresTx:
    """The tables of one connection; units get it inside the transaction the store opened."""

    def __init__(self, conn: Connection) -> None:
        self.sessions = SessionTable(conn)
        self.turns = TurnTable(conn)
        self.items = ItemTable(conn)
        self.events = EventTable(conn)
        self.candidates = CandidateTable(conn)
        self.jobs = JobTable(conn)
        self.markdown = MarkdownTable(conn)
        self.state = StateTable(conn)
        self.commands = CommandTable(conn)
        # the next part (derived.py and vectors.py)
        self.vectors: Any = NotBuilt("vectors")
        self.summaries: Any = NotBuilt("summaries")
        self.profiles: Any = NotBuilt("profiles")
        self.episodes: Any = NotBuilt("episodes")
        self.dreams: Any = NotBuilt("dreams")
        self.recalls: Any = NotBuilt("recalls")
        self.people: Any = NotBuilt("people")


def _capabilities(conn: Connection) -> StoreCapabilities:
    import psycopg

    version = conn.execute("SHOW server_version").fetchone()
    vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return StoreCapabilities(
        backend="postgres",
        driver=f"psycopg {psycopg.__version__}",
        version=str(version[0]) if version else "",
        fts=True,
        vectors=vector is not None,
        vectors_version=str(vector[0]) if vector else None,
    )


class PostgresStore:
    """The store on the database `dsn` names (a `postgresql://` URI or libpq's key=value
    string), in `schema` when given (created if missing; else the connection's own search
    path), migrated when opened."""

    def __init__(self, dsn: str, *, schema: str | None = None) -> None:
        self.db = Database(dsn, schema=schema)
        self._capabilities: StoreCapabilities | None = None

    @property
    def capabilities(self) -> StoreCapabilities:
        if self._capabilities is None:
            self._capabilities = self.db.call(_capabilities, write=False)
        return self._capabilities

    @staticmethod
    def run_unit(conn: Connection, unit: Callable[..., T], args: tuple[Any, ...]) -> T:
        """`unit(tx, *args)` on the tables of `conn` (a `Database` job's function)."""
        return unit(PostgresTx(conn), *args)

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

    def close(self) -> None:
        self.db.close()
