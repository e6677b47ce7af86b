"""The one module that opens SQLite connections, and how they are prepared.

Driver choice: CPython builds differ in whether their `sqlite3` can load extensions (this machine's
3.11 cannot). `sqlean` (the `sqlean.py` package: the same DB-API with extension loading and FTS5)
is preferred; the stdlib module is the fallback, with FTS5 but without sqlite-vec.

Every connection is prepared the same way: WAL (files only), foreign keys, busy timeout, autocommit
mode (transactions are explicit `BEGIN`s, nested ones savepoints), a statement cache with room for
all a chat runs, sqlite-vec when loadable. `db.Database` owns the store's connection.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import structlog

from nahida.errors import DatabaseDamaged, StorageError, StorageFull

log = structlog.get_logger(__name__)
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
    path = ""  # the file it opened (`storage_error` names it)
    statements = 0
    timings: dict[str, list[float]] | None = None  # statement → [count, CPU seconds]

    def cursor(self, factory: Any = _CountingCursor) -> Any:
        return super().cursor(factory)

    if driver is sqlite3:  # its `execute` runs the statement on a cursor without `execute()`

        def execute(self, sql: str, parameters: Any = (), /) -> Any:
            return self.cursor().execute(sql, parameters)

        def executemany(self, sql: str, parameters: Any, /) -> Any:
            return self.cursor().executemany(sql, parameters)


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
# every run, which was much of the store's CPU a message. The stdlib module's cache is LRU;
# room for all is cheap. A cached statement is only worth it if SQLite keeps it: no statement
# binds its LIMIT (it is written into the SQL as a number), since SQLite 3.50 (sqlean's)
# prepares a statement again at every run once a LIMIT parameter has been bound.
STATEMENT_CACHE = 512


def connect(path: str | Path, *, vec: bool = True, trace: bool = False) -> Connection:
    """Open and prepare a connection; `path` may be ':memory:'. A file that is no database, or
    whose first pages are damaged, raises `DatabaseDamaged` here."""
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
        raise storage_error(exc, target) or StorageError(
            f"cannot open database {target}: {exc}"
        ) from exc
    conn.path = target  # type: ignore[attr-defined]
    try:
        _prepare(conn, target, vec=vec, trace=trace)
    except driver.Error as exc:
        conn.close()
        raise storage_error(exc, target) or StorageError(
            f"cannot open database {target}: {exc}"
        ) from exc
    return conn


def _prepare(conn: Connection, target: str, *, vec: bool, trace: bool) -> None:
    conn.row_factory = driver.Row
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA cache_size = -32000")  # 32 MB page cache
    conn.execute("PRAGMA temp_store = MEMORY")
    # deleted content is overwritten with zeros, so that a purged memory's words leave the file
    conn.execute("PRAGMA secure_delete = ON")
    if target != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    if vec:
        conn.vec_version = _load_vec(conn)  # type: ignore[attr-defined]
    if trace or os.environ.get("NAHIDA_SQL_TRACE"):
        conn.set_trace_callback(lambda sql: log.debug("sql", sql=sql))


def _no_room(path: str) -> bool:
    """Whether the disk holding `path` is full (SQLite says "disk I/O error" when a write to
    its shared-memory file or a file's growth fails for want of room)."""
    try:
        return shutil.disk_usage(Path(path).parent).free < NO_ROOM
    except OSError:
        return False


def damaged(path: str, detail: str) -> DatabaseDamaged:
    """The one-line error for a damaged database file, with what to do about it."""
    return DatabaseDamaged(
        f"the database {path} is damaged ({detail}): run `nahida doctor` to check it and,"
        " with the bot stopped, restore your latest backup with `nahida restore FILE"
        " --replace` (docs/backup.md)"
    )


# SQLite's primary result codes (an extended code keeps its primary one in the low byte)
SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_NOTADB = 10, 11, 13, 26
NO_ROOM = 1 << 20  # bytes free on a disk SQLite could not write to: it was full


def storage_error(exc: BaseException, path: str) -> StorageError | None:
    """The clear error a SQLite failure stands for, naming `path` and what to do: a damaged
    file (`DatabaseDamaged`), a full disk (`StorageFull`) or a failing disk; None for any other
    failure (a constraint, a locked database, a bug), which stays as it is."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(code, int):
        return None
    primary = code & 0xFF
    if primary in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return damaged(path, str(exc))
    if primary == SQLITE_FULL or (primary == SQLITE_IOERR and _no_room(path)):
        return StorageFull(
            f"cannot write to {path}: the disk is full ({exc}); nothing of this change was"
            " stored: free some space and try again (a running bot writes again by itself"
            " once there is room)"
        )
    if primary == SQLITE_IOERR:
        return StorageError(
            f"cannot read or write {path}: disk I/O error ({exc}); check the disk and its free"
            " space, then run `nahida doctor`"
        )
    return None


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
    """`BEGIN IMMEDIATE … COMMIT`, or a savepoint when a transaction is already open. A COMMIT
    that fails (a full disk) rolls back: SQLite leaves the transaction open then."""
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
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def truncate_log(conn: Connection, wait: float = 5.0) -> bool:
    """`PRAGMA wal_checkpoint(TRUNCATE)` on `conn` (the whole log copied, the file emptied);
    True when done. While another connection checkpoints SQLite answers busy at once, without
    its busy timeout: tried again for up to `wait` seconds."""
    deadline = time.monotonic() + wait
    while True:
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if not busy or time.monotonic() >= deadline:
            return not busy
        time.sleep(0.01)
