"""Connections to PostgreSQL and the threads units run on.

psycopg 3's sync API: the seam hands the store plain sync functions `unit(tx, *args)`, so a
sync driver runs them as they are, on a worker thread, with no event loop inside the database
code. Reads run on a small thread pool, each on a connection of a `psycopg_pool.ConnectionPool`
in a REPEATABLE READ, READ ONLY transaction (one snapshot for the whole unit). Writes run on one
writer thread with one connection of their own, in a transaction each: the process's writes are
serialised as SQLite's are, and across processes too: each takes the store's write lock
(`locks.py`), so a unit never meets another's halfway.

Every connection is opened in autocommit mode and each unit opens its transaction explicitly
(`conn.transaction()`, which starts it with the connection's characteristics: a read
connection's BEGIN says REPEATABLE READ, READ ONLY), so nothing is left open between units. A
writer connection the server dropped is opened again for the next unit. Every connection knows
pgvector's types once the schema is migrated, so vectors travel in its binary format.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool, PoolTimeout

from nahida.errors import StorageError, StorageFull
from nahida.memory.store.postgres.locks import WRITE_LOCK
from nahida.memory.store.postgres.migrations import migrate

T = TypeVar("T")

READERS = 4  # read units at once: recall reads while the bot writes, a few chats at a time
WAIT = 10.0  # seconds a read waits for a connection (the server gone: the error, not a hang)
Connection = psycopg.Connection[Any]


def storage_error(exc: BaseException, where: str) -> StorageError | None:
    """The clear error a PostgreSQL failure stands for: the server unreachable or gone, or out of
    room; None for any other failure (a constraint, a bug in a unit), which stays as it is."""
    if isinstance(exc, psycopg.errors.DiskFull):
        return StorageFull(
            f"PostgreSQL at {where} is out of disk space ({exc}); nothing of this change was stored"
        )
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return StorageError(f"PostgreSQL at {where} failed: {exc}")
    return None


def _where(dsn: str) -> str:
    """The server a DSN names, for messages (never its password)."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "the configured server"
    host, db = info.get("host") or "localhost", info.get("dbname") or ""
    return f"{host}/{db}"


class Database:
    """The pool of read connections, the writer's connection and the threads that use them.

    `schema`: the schema every table lives in (created when missing; each connection's
    `search_path`), so several stores can share one database (the tests give each its own)."""

    def __init__(self, dsn: str, *, schema: str | None = None, readers: int = READERS) -> None:
        self.dsn = dsn
        self.where = _where(dsn)
        self.schema = schema
        try:
            self._writer_conn = self.connect()
        except psycopg.Error as exc:
            raise StorageError(f"cannot open PostgreSQL at {self.where}: {exc}") from exc
        try:
            migrate(self._writer_conn, schema)
            register_vector(self._writer_conn)  # the type exists once migrated
        except BaseException as exc:
            self._writer_conn.close()
            if isinstance(exc, psycopg.Error):
                raise StorageError(f"cannot open PostgreSQL at {self.where}: {exc}") from exc
            raise
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=readers,
            kwargs={"autocommit": True},
            configure=self._prepare_reader,
            timeout=WAIT,
            open=True,
            name="nahida-read",
        )
        self._readers = concurrent.futures.ThreadPoolExecutor(readers, "nahida-pg-read")
        self._writer = concurrent.futures.ThreadPoolExecutor(1, "nahida-pg-write")
        self._closing = threading.Lock()
        self._closed = False

    def connect(self) -> Connection:
        """A connection to this store, set up as every other (the writer's, the chat locks')."""
        conn = psycopg.connect(self.dsn, autocommit=True)
        try:
            self._prepare(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: Connection) -> None:
        """Every connection: the store's schema first on the search path (`public` after it,
        where extensions such as pgvector usually live)."""
        if self.schema is not None:
            path = psycopg.sql.SQL("SET search_path TO {}, public")
            conn.execute(path.format(psycopg.sql.Identifier(self.schema)))

    def _prepare_reader(self, conn: Connection) -> None:
        self._prepare(conn)
        register_vector(conn)  # the type exists: the writer migrated first
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ  # one snapshot a unit
        conn.read_only = True

    # running units --------------------------------------------------------------------------

    def _read(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        try:
            with self._pool.connection() as conn:
                return self._in_transaction(conn, fn, args)
        except PoolTimeout as exc:
            raise StorageError(f"no connection to PostgreSQL at {self.where}: {exc}") from exc

    def _write(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        """On the writer thread: its connection, opened again when the server dropped it."""
        if self._writer_conn.broken or self._writer_conn.closed:
            self._writer_conn.close()
            try:
                self._writer_conn = self.connect()
                register_vector(self._writer_conn)
            except psycopg.Error as exc:
                raise StorageError(f"cannot reach PostgreSQL at {self.where}: {exc}") from exc
        return self._in_transaction(self._writer_conn, fn, args, write=True)

    def _in_transaction(
        self, conn: Connection, fn: Callable[..., T], args: tuple[Any, ...], *, write: bool = False
    ) -> T:
        try:
            with conn.transaction():
                if write:
                    conn.execute(WRITE_LOCK)  # one write at a time, across processes too
                return fn(conn, *args)
        except Exception as exc:
            found = storage_error(exc, self.where)
            if found is None:
                raise
            raise found from exc

    def _submit(
        self, fn: Callable[..., T], args: tuple[Any, ...], write: bool
    ) -> concurrent.futures.Future[T]:
        if self._closed:
            raise StorageError("the database is closed")
        try:
            if write:
                return self._writer.submit(self._write, fn, args)
            return self._readers.submit(self._read, fn, args)
        except RuntimeError as exc:  # the executor shut down meanwhile
            raise StorageError("the database is closed") from exc

    async def run(self, fn: Callable[..., T], *args: Any, write: bool = True) -> T:
        """Run `fn(conn, *args)` in a transaction on a worker thread."""
        return await asyncio.wrap_future(self._submit(fn, args, write))

    def call(self, fn: Callable[..., T], *args: Any, write: bool = True) -> T:
        """Run `fn(conn, *args)` in a transaction and wait (CLI, scripts, tests). A read runs on
        the caller's thread: it holds no lock another unit could be waiting for."""
        if write:
            return self._submit(fn, args, write).result()
        if self._closed:
            raise StorageError("the database is closed")
        return self._read(fn, args)

    def close(self) -> None:
        """Finish what was handed over, then close every connection."""
        with self._closing:
            if self._closed:
                return
            self._closed = True
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        self._pool.close()
        self._writer_conn.close()
