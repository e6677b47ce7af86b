"""The SQLite side of `nahida store copy` (`store.copying`): a table's rows a batch at a time, and
the rows of another store written with their FTS5 rows.

FTS5 keeps each searched row's index text (`body`) beside its `scopes` keys, so a row read here
carries its text; a row written gets its FTS5 row made as the write path makes it (`fts.py`):
the body given, the keys computed here from the row (a turn's chat, an item's scope and
sensitivity, an episode's chat). A turn's FTS5 rowid is its id, an episode's its `seq`; an
item's is the implicit rowid of its row, which an upsert keeps. A vector is a float32
little-endian BLOB here, the copy's own form of it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nahida.errors import CopyError
from nahida.memory.core.scopes import chat_scope
from nahida.memory.store.copying import Batch, Indexed, Row, Side, Table
from nahida.memory.store.sqlite import fts
from nahida.memory.store.sqlite.check import in_use
from nahida.memory.store.sqlite.connection import Connection
from nahida.memory.store.sqlite.history import SessionTable
from nahida.memory.store.sqlite.store import SqliteStore


class FtsRule:
    """A searched table's FTS5 index: its table, how a row is joined to it (the FTS5 rowid), and
    the `scopes` keys of a row."""

    def __init__(self, fts_table: str, rowid: str, scopes: Callable[[dict[str, Any]], str]):
        self.fts_table = fts_table
        self.rowid = rowid
        self.scopes = scopes


INDEXES: dict[str, FtsRule] = {
    "turns": FtsRule("turns_fts", "id", lambda r: fts.scope_token(chat_scope(r["chat"]))),
    "memory_items": FtsRule(
        "memory_items_fts",
        "rowid",
        lambda r: fts.scopes_text(fts.item_keys(r["scope"], r["sensitivity"])),
    ),
    "episodes": FtsRule("episodes_fts", "seq", lambda r: fts.scope_token(chat_scope(r["chat"]))),
}


# Rows whose deletion takes others' FTS5 rows along (a session's turns and episode go by foreign
# key; their FTS5 rows only as the store's own delete takes them).
DELETES: dict[str, Callable[[Connection, Row], object]] = {
    "sessions": lambda conn, key: SessionTable(conn).delete(key[0]),
}

# After a table was written: the speakers count every copied turn (the source's were folded
# first), so the cursor stands at the last one; a fold takes in only turns written after.
FINISH: dict[str, str] = {
    "speakers": "UPDATE speakers_folded SET through = (SELECT coalesce(max(id), 0) FROM turns)",
}


def _keys_sql(table: Table, count: int, prefix: str = "") -> str:
    """`(k1, k2) IN (VALUES (?, ?), …)` for `count` keys (columns named with `prefix`)."""
    marks = "(" + ", ".join("?" * len(table.key)) + ")"
    key = ", ".join(prefix + k for k in table.key)
    return f"({key}) IN (VALUES {', '.join([marks] * count)})"


def _flat(keys: Sequence[Row]) -> list[Any]:
    return [value for key in keys for value in key]


def _neutral(table: Table, row: Sequence[Any]) -> Row:
    """A stored row as neutral values: JSON parsed, flags as bools."""
    if not table.json and not table.flags:
        return tuple(row)
    out = list(row)
    for i, name in enumerate(table.columns):
        if name in table.json and out[i] is not None:
            out[i] = json.loads(out[i])
        elif name in table.flags and out[i] is not None:
            out[i] = bool(out[i])
    return tuple(out)


def _stored(table: Table, row: Row) -> list[Any]:
    out = list(row)
    for i, name in enumerate(table.columns):
        if name in table.json and out[i] is not None:
            out[i] = json.dumps(out[i], ensure_ascii=False)
        elif name in table.flags and out[i] is not None:
            out[i] = int(out[i])
    return out


class SqliteSide:
    """A SQLite file as one side of a copy (opened, and migrated, by the store)."""

    def __init__(self, path: Path) -> None:
        if in_use(path):
            raise CopyError(
                f"{path} is open in another process (a running bot?): stop it, then copy"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path.resolve()
        self._store = SqliteStore(path)

    @property
    def store(self) -> SqliteStore:
        return self._store

    @property
    def where(self) -> str:
        return str(self.path)

    def same_as(self, other: Side) -> bool:
        return isinstance(other, SqliteSide) and other.path == self.path

    def _call(self, fn: Callable[..., Any], *args: Any, write: bool = False) -> Any:
        return self._store.db.call(fn, *args, write=write)

    # reading ------------------------------------------------------------------------------

    def _select(self, table: Table) -> str:
        columns = ", ".join(f"t.{c}" for c in table.columns)
        rule = INDEXES.get(table.name)
        if rule is None:
            return f"SELECT {columns} FROM {table.name} t"
        return (
            f"SELECT {columns}, f.body FROM {table.name} t"
            f" LEFT JOIN {rule.fts_table} f ON f.rowid = t.{rule.rowid}"
        )

    def _batch(self, table: Table, found: list[Any]) -> Batch:
        if table.name not in INDEXES:
            return Batch([_neutral(table, r) for r in found])
        width = len(table.columns)
        index: list[Indexed] = [r[width] for r in found]
        return Batch([_neutral(table, r[:width]) for r in found], index)

    def read(self, table: Table, after: Row | None, limit: int) -> Batch:
        def unit(conn: Connection) -> list[Any]:
            key = ", ".join(f"t.{k}" for k in table.key)
            sql, params = self._select(table), list[Any]()
            if after is not None:
                marks = ", ".join("?" * len(after))
                sql += f" WHERE ({key}) > ({marks})"
                params = list(after)
            cursor = conn.cursor()
            cursor.row_factory = None
            return cursor.execute(f"{sql} ORDER BY {key} LIMIT {int(limit)}", params).fetchall()

        return self._batch(table, self._call(unit))

    def lookup(self, table: Table, keys: Sequence[Row]) -> Batch:
        if not keys:
            return Batch([], [] if table.name in INDEXES else None)

        def unit(conn: Connection) -> list[Any]:
            keyed = _keys_sql(table, len(keys), "t.")
            cursor = conn.cursor()
            cursor.row_factory = None
            return cursor.execute(f"{self._select(table)} WHERE {keyed}", _flat(keys)).fetchall()

        return self._batch(table, self._call(unit))

    def count(self, table: Table) -> int:
        return int(
            self._call(lambda c: c.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0])
        )

    def indexed(self, table: Table) -> int:
        rule = INDEXES.get(table.name)
        if rule is None:
            return 0
        sql = f"SELECT count(*) FROM {rule.fts_table}"
        return int(self._call(lambda c: c.execute(sql).fetchone()[0]))

    # writing ------------------------------------------------------------------------------

    def write(self, table: Table, batch: Batch, *, update: bool = True) -> None:
        if batch.rows:
            self._call(self._write, table, batch, update, write=True)

    def _write(self, conn: Connection, table: Table, batch: Batch, update: bool) -> None:
        columns = ", ".join(table.columns)
        marks = ", ".join("?" * len(table.columns))
        changed = [c for c in table.columns if c not in table.key]
        conflict = "DO NOTHING"
        if update and changed:
            conflict = "DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in changed)
        conn.executemany(
            f"INSERT INTO {table.name} ({columns}) VALUES ({marks})"
            f" ON CONFLICT ({', '.join(table.key)}) {conflict}",
            [_stored(table, row) for row in batch.rows],
        )
        rule = INDEXES.get(table.name)
        if rule is None or batch.index is None:
            return
        keys = [table.keyed(row) for row in batch.rows]
        rowids = self._rowids(conn, table, rule, keys)
        conn.executemany(
            f"DELETE FROM {rule.fts_table} WHERE rowid = ?", [(r,) for r in rowids.values()]
        )
        entries = []
        for row, text in zip(batch.rows, batch.index, strict=True):
            if text is None:
                continue
            if not isinstance(text, str):  # made by the copy before a row reaches a side
                raise ValueError(f"{table.name}: an index entry without its text")
            values = table.as_dict(row)
            entries.append((rowids[table.keyed(row)], text, rule.scopes(values)))
        conn.executemany(
            f"INSERT INTO {rule.fts_table} (rowid, body, scopes) VALUES (?, ?, ?)", entries
        )

    def _rowids(
        self, conn: Connection, table: Table, rule: FtsRule, keys: Sequence[Row]
    ) -> dict[Row, int]:
        if rule.rowid == table.key[0]:
            return {key: int(key[0]) for key in keys}
        key = ", ".join(table.key)
        found = conn.execute(
            f"SELECT {key}, {rule.rowid} FROM {table.name} WHERE {_keys_sql(table, len(keys))}",
            _flat(keys),
        ).fetchall()
        width = len(table.key)
        return {tuple(r[:width]): int(r[width]) for r in found}

    def delete(self, table: Table, keys: Sequence[Row]) -> None:
        if keys:
            self._call(self._delete, table, keys, write=True)

    def _delete(self, conn: Connection, table: Table, keys: Sequence[Row]) -> None:
        own = DELETES.get(table.name)
        if own is not None:
            for key in keys:
                own(conn, key)
            return
        rule = INDEXES.get(table.name)
        if rule is not None:
            rowids = self._rowids(conn, table, rule, keys).values()
            conn.executemany(
                f"DELETE FROM {rule.fts_table} WHERE rowid = ?", [(r,) for r in rowids]
            )
        conn.execute(f"DELETE FROM {table.name} WHERE {_keys_sql(table, len(keys))}", _flat(keys))

    def finish(self, table: Table) -> None:
        sql = FINISH.get(table.name)
        if sql is not None:
            self._call(lambda c: c.execute(sql), write=True)
        rule = INDEXES.get(table.name)
        if rule is not None:  # written in many segments: merged into one where that is safe
            self._call(self._merge, rule.fts_table, write=True)

    @staticmethod
    def _merge(conn: Connection, fts_table: str) -> None:
        if fts.merging_is_safe(conn):
            conn.execute(f"INSERT INTO {fts_table} ({fts_table}) VALUES ('optimize')")

    def close(self) -> None:
        self._store.close()


def open_side(path: Path) -> SqliteSide:
    """The SQLite file at `path` (made if missing) as a side of a copy; refused while another
    process has it open."""
    return SqliteSide(path)
