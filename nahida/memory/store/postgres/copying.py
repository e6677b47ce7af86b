"""The PostgreSQL side of `nahida store copy` (`store.copying`): a table's rows a batch at a time,
and the rows of another store written with their lexical index.

A searched row's index is its `fts` tsvector (and `fts_len`); items keep their index text as
well (`fts_body`), turns only the tsvector, so a turn read here is marked `KEPT_AS_LEXEMES` and
the copy makes its text again. A row written gets its tsvector as the write path makes it
(`items.py`, `turns.py`): the words of its text (`lexical.words`) as lexemes, and its length as
FTS5 counts it (the words and the scope keys). Ids of identity columns are written as they are
(`OVERRIDING SYSTEM VALUE`), and each identity's next value is set past them afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

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
    "memory_items": IndexRule(
        "CASE WHEN t.fts IS NOT NULL THEN t.fts_body END",
        ("fts_body", "fts", "fts_len"),
        f"%s, {_TSVECTOR}, %s",
        _item_index,
    ),
}


def _keys_sql(table: Table, count: int, prefix: str = "") -> str:
    marks = "(" + ", ".join(["%s"] * len(table.key)) + ")"
    key = ", ".join(prefix + k for k in table.key)
    return f"({key}) IN (VALUES {', '.join([marks] * count)})"


def _flat(keys: Sequence[Row]) -> list[Any]:
    return [value for key in keys for value in key]


def _stored(table: Table, row: Row) -> list[Any]:
    if not table.json:
        return list(row)
    return [
        json.dumps(v, ensure_ascii=False) if name in table.json and v is not None else v
        for name, v in zip(table.columns, row, strict=True)
    ]


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
        columns = ", ".join(f"t.{c}" for c in table.columns)
        rule = INDEXES.get(table.name)
        extra = f", {rule.read}" if rule is not None else ""
        return f"SELECT {columns}{extra} FROM {table.name} t"

    def _batch(self, table: Table, found: list[Any]) -> Batch:
        if table.name not in INDEXES:
            return Batch([tuple(r) for r in found])
        width = len(table.columns)
        index: list[Indexed] = []
        for r in found:
            entry = r[width]
            # a turn: whether it is indexed; an item: its kept text, or NULL when out
            if entry is True:
                index.append(KEPT_AS_LEXEMES)
            else:
                index.append(None if entry is False else entry)
        return Batch([tuple(r[:width]) for r in found], index)

    def read(self, table: Table, after: Row | None, limit: int) -> Batch:
        def unit(conn: Connection) -> list[Any]:
            key = ", ".join(f"t.{k}" for k in table.key)
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
        columns = list(table.columns)
        marks = ["%s::jsonb" if c in table.json else "%s" for c in table.columns]
        rows = [_stored(table, row) for row in batch.rows]
        if rule is not None and batch.index is not None:
            columns += rule.columns
            marks.append(rule.marks)
            for values, row, text in zip(rows, batch.rows, batch.index, strict=True):
                if text is not None and not isinstance(text, str):
                    raise ValueError(f"{table.name}: an index entry without its text")
                values.extend(rule.values(table.as_dict(row), text))
        changed = [c for c in columns if c not in table.key]
        conflict = "DO NOTHING"
        if update and changed:
            conflict = "DO UPDATE SET " + ", ".join(f"{c} = EXCLUDED.{c}" for c in changed)
        overriding = " OVERRIDING SYSTEM VALUE" if self._identities(table) else ""
        sql = (
            f"INSERT INTO {table.name} ({', '.join(columns)}){overriding}"
            f" VALUES ({', '.join(marks)}) ON CONFLICT ({', '.join(table.key)}) {conflict}"
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
        """Each identity's next value past the ids written (a new turn gets a fresh id)."""
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
