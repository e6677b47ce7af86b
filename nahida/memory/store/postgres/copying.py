"""The PostgreSQL side of `nahida store copy` (`store.copying`): a table's rows a batch at a time,
and the rows of another store written with their lexical index.

A searched row's index is its `fts` tsvector (and `fts_len`); items keep their index text as
well (`fts_body`), turns only the tsvector, so a turn read here is marked `KEPT_AS_LEXEMES` and
the copy makes its text again. A row written gets its tsvector as the write path makes it
(`items.py`, `turns.py`): the words of its text (`lexical.words`) as lexemes, and its length as
FTS5 counts it (the words and the scope keys). Ids of identity columns are written as they are
(`OVERRIDING SYSTEM VALUE`), and each identity's next value is set past them afterwards.

A column SQLite names with a word reserved here is named otherwise (`NAMES`). A vector is read
in pgvector's binary form (`vector_send`: its float32 values, big-endian) and turned into the
copy's little-endian bytes, and written as float32 in the binary format, so no value passes
through decimal text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nahida.memory.store.copying import KEPT_AS_LEXEMES, Batch, Indexed, Row, Side, Table
from nahida.memory.store.postgres import lexical
from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.postgres.store import PostgresStore

_TSVECTOR = "CASE WHEN %s THEN nahida_tsvector(%s::text[]) END"


class IndexRule:
    """A searched table's columns of the index: what a read returns for a row (SQL over `t`),
    the columns a write sets, and their values for a row and its index text (None: out)."""

    def __init__(
        self,
        read: str,
        columns: tuple[str, ...],
        marks: str,
        values: Callable[[dict[str, Any], str | None], list[Any]],
    ) -> None:
        self.read = read
        self.columns = columns
        self.marks = marks
        self.values = values


def _turn_index(row: dict[str, Any], text: str | None) -> list[Any]:
    words = lexical.words(text) if text is not None else []
    return [text is not None, words, len(words) + 1 if text is not None else 0]


def _item_index(row: dict[str, Any], text: str | None) -> list[Any]:
    words = lexical.words(text) if text is not None else []
    keys = 2 if row["sensitivity"] == "public" else 1
    return [text, text is not None, words, len(words) + keys if text is not None else 0]


INDEXES: dict[str, IndexRule] = {
    "turns": IndexRule("t.fts IS NOT NULL", ("fts", "fts_len"), f"{_TSVECTOR}, %s", _turn_index),
    # an episode's length counts its chat's scope key, as a turn's does
    "episodes": IndexRule("t.fts IS NOT NULL", ("fts", "fts_len"), f"{_TSVECTOR}, %s", _turn_index),
    "memory_items": IndexRule(
        "CASE WHEN t.fts IS NOT NULL THEN t.fts_body END",
        ("fts_body", "fts", "fts_len"),
        f"%s, {_TSVECTOR}, %s",
        _item_index,
    ),
}


# SQLite's `user` (a reserved word here) is `person` in PostgreSQL's tables.
NAMES: dict[str, dict[str, str]] = {
    "profile_entries": {"user": "person"},
    "speakers": {"user": "person"},
}

# After a table was written: the speakers count every copied turn (the source's were folded
# first), so the cursor stands at the last one; a fold takes in only turns written after.
FINISH: dict[str, str] = {
    "speakers": "UPDATE speakers_folded"
    " SET through_turn = (SELECT coalesce(max(id), 0) FROM turns)",
}


def _name(table: Table, column: str) -> str:
    return NAMES.get(table.name, {}).get(column, column)


def _key(table: Table, prefix: str = "") -> str:
    return ", ".join(prefix + _name(table, k) for k in table.key)


def _keys_sql(table: Table, count: int, prefix: str = "") -> str:
    marks = "(" + ", ".join(["%s"] * len(table.key)) + ")"
    return f"({_key(table, prefix)}) IN (VALUES {', '.join([marks] * count)})"


def _flat(keys: Sequence[Row]) -> list[Any]:
    return [value for key in keys for value in key]


def _stored(table: Table, row: Row) -> list[Any]:
    if not table.json and not table.vectors:
        return list(row)
    out = list(row)
    for i, name in enumerate(table.columns):
        if out[i] is None:
            continue
        if name in table.json:
            out[i] = json.dumps(out[i], ensure_ascii=False)
        elif name in table.vectors:
            out[i] = np.frombuffer(out[i], dtype="<f4")
    return out


def _neutral(table: Table, row: Sequence[Any]) -> Row:
    """A row as read, its vectors (`vector_send`: dimension and a spare int16, then float32
    big-endian) as float32 little-endian bytes."""
    if not table.vectors:
        return tuple(row)
    out = list(row)
    for i, name in enumerate(table.columns):
        if name in table.vectors and out[i] is not None:
            out[i] = np.frombuffer(out[i], dtype=">f4", offset=4).astype("<f4").tobytes()
    return tuple(out)


class PostgresSide:
    """A PostgreSQL database (or schema) as one side of a copy (opened, and migrated, by the
    store)."""

    def __init__(self, dsn: str, *, schema: str | None = None) -> None:
        self._store = PostgresStore(dsn, schema=schema)
        self._identity: dict[str, list[str]] = {}
        db = self._store.db
        self._at = (db.where, db.schema)

    @property
    def store(self) -> PostgresStore:
        return self._store

    @property
    def where(self) -> str:
        where, schema = self._at
        return f"PostgreSQL {where}" + (f" (schema {schema})" if schema else "")

    def same_as(self, other: Side) -> bool:
        return isinstance(other, PostgresSide) and other._at == self._at

    def _call(self, fn: Callable[..., Any], *args: Any, write: bool = False) -> Any:
        return self._store.db.call(fn, *args, write=write)

    # reading ------------------------------------------------------------------------------

    def _select(self, table: Table) -> str:
        columns = ", ".join(
            f"vector_send(t.{c})" if c in table.vectors else f"t.{_name(table, c)}"
            for c in table.columns
        )
        rule = INDEXES.get(table.name)
        extra = f", {rule.read}" if rule is not None else ""
        return f"SELECT {columns}{extra} FROM {table.name} t"

    def _batch(self, table: Table, found: list[Any]) -> Batch:
        if table.name not in INDEXES:
            return Batch([_neutral(table, r) for r in found])
        width = len(table.columns)
        index: list[Indexed] = []
        for r in found:
            entry = r[width]
            # a turn, an episode: whether it is indexed; an item: its kept text, or NULL when out
            if entry is True:
                index.append(KEPT_AS_LEXEMES)
            else:
                index.append(None if entry is False else entry)
        return Batch([tuple(r[:width]) for r in found], index)

    def read(self, table: Table, after: Row | None, limit: int) -> Batch:
        def unit(conn: Connection) -> list[Any]:
            key = _key(table, "t.")
            sql, params = self._select(table), list[Any]()
            if after is not None:
                sql += f" WHERE ({key}) > ({', '.join(['%s'] * len(after))})"
                params = list(after)
            return conn.execute(f"{sql} ORDER BY {key} LIMIT {int(limit)}", params).fetchall()

        return self._batch(table, self._call(unit))

    def lookup(self, table: Table, keys: Sequence[Row]) -> Batch:
        if not keys:
            return Batch([], [] if table.name in INDEXES else None)
        sql = f"{self._select(table)} WHERE {_keys_sql(table, len(keys), 't.')}"
        return self._batch(table, self._call(lambda c: c.execute(sql, _flat(keys)).fetchall()))

    def count(self, table: Table) -> int:
        sql = f"SELECT count(*) FROM {table.name}"
        return int(self._call(lambda c: c.execute(sql).fetchone()[0]))

    def indexed(self, table: Table) -> int:
        if table.name not in INDEXES:
            return 0
        sql = f"SELECT count(*) FROM {table.name} WHERE fts IS NOT NULL"
        return int(self._call(lambda c: c.execute(sql).fetchone()[0]))

    # writing ------------------------------------------------------------------------------

    def _identities(self, table: Table) -> list[str]:
        if table.name not in self._identity:
            sql = (
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
                " AND table_schema = current_schema() AND is_identity = 'YES'"
            )
            found = self._call(lambda c: c.execute(sql, (table.name,)).fetchall())
            self._identity[table.name] = [r[0] for r in found]
        return self._identity[table.name]

    def write(self, table: Table, batch: Batch, *, update: bool = True) -> None:
        if not batch.rows:
            return
        rule = INDEXES.get(table.name) if batch.index is not None else None
        columns = [_name(table, c) for c in table.columns]
        marks = [
            "%s::jsonb" if c in table.json else "%b" if c in table.vectors else "%s"
            for c in table.columns
        ]
        rows = [_stored(table, row) for row in batch.rows]
        if rule is not None and batch.index is not None:
            columns += rule.columns
            marks.append(rule.marks)
            for values, row, text in zip(rows, batch.rows, batch.index, strict=True):
                if text is not None and not isinstance(text, str):
                    raise ValueError(f"{table.name}: an index entry without its text")
                values.extend(rule.values(table.as_dict(row), text))
        keys = {_name(table, k) for k in table.key}
        changed = [c for c in columns if c not in keys]
        conflict = "DO NOTHING"
        if update and changed:
            conflict = "DO UPDATE SET " + ", ".join(f"{c} = EXCLUDED.{c}" for c in changed)
        overriding = " OVERRIDING SYSTEM VALUE" if self._identities(table) else ""
        sql = (
            f"INSERT INTO {table.name} ({', '.join(columns)}){overriding}"
            f" VALUES ({', '.join(marks)}) ON CONFLICT ({_key(table)}) {conflict}"
        )

        def unit(conn: Connection) -> None:
            with conn.cursor() as cursor:
                cursor.executemany(sql, rows)

        self._call(unit, write=True)

    def delete(self, table: Table, keys: Sequence[Row]) -> None:
        if keys:
            sql = f"DELETE FROM {table.name} WHERE {_keys_sql(table, len(keys))}"
            self._call(lambda c: c.execute(sql, _flat(keys)), write=True)

    def finish(self, table: Table) -> None:
        """Each identity's next value past the ids written (a new turn gets a fresh id), and the
        table's own `FINISH`."""
        finishing = FINISH.get(table.name)
        if finishing is not None:
            self._call(lambda c: c.execute(finishing), write=True)
        for column in self._identities(table):
            sql = (
                f"SELECT setval(pg_get_serial_sequence(%s, %s), coalesce(max({column}), 0) + 1,"
                f" false) FROM {table.name}"
            )
            self._call(lambda c, s=sql, col=column: c.execute(s, (table.name, col)), write=True)

    def close(self) -> None:
        self._store.close()


def open_side(dsn: str, *, schema: str | None = None) -> PostgresSide:
    """The PostgreSQL database `dsn` names (migrated when opened) as a side of a copy."""
    return PostgresSide(dsn, schema=schema)
