"""The SQLite backend of the store: one file, one database thread, FTS5 (+ sqlite-vec)."""

from nahida.memory.store.sqlite.check import check, problems
from nahida.memory.store.sqlite.store import SqliteStore, SqliteTx, probe

__all__ = ["SqliteStore", "SqliteTx", "check", "probe", "problems"]
