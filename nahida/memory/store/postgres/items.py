"""Memory items and their lexical index in PostgreSQL.

Only active items are indexed (`fts` set; `fts_body` keeps the index text a match shows), so an
item search is a filter on the table itself: status and visibility decided in the same query
as the match, before ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from nahida.memory.core.models import MemoryItem, dump_evidence
from nahida.memory.core.scopes import Visibility
from nahida.memory.store.postgres import lexical, rows
from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.postgres.where import filter_sql, visibility_sql
from nahida.memory.store.values import (
    ItemFilter,
    ItemMatch,
    Slice,
    Span,
    SpanCount,
    Tally,
    TextSearch,
)

_COLUMNS = tuple(f.name for f in fields(MemoryItem))
_SELECT = f"SELECT {rows.ITEM_COLUMNS} FROM memory_items r"
_MATCH_SELECT = ", ".join(f"r.{c.strip()}" for c in rows.ITEM_COLUMNS.split(",")) + ", r.fts_body"
_INDEXED = ("title", "content", "scope", "sensitivity", "status")
_INDEX_SET = "fts_body = %s, fts = nahida_tsvector(%s::text[]), fts_len = %s"


def _value(item: MemoryItem, name: str) -> Any:
    return dump_evidence(item.evidence) if name == "evidence" else getattr(item, name)


def _index(item: MemoryItem, tokens: str) -> list[Any]:
    """The values of `_INDEX_SET` for an active item: FTS5 counts its scope keys as words."""
    words = lexical.words(tokens)
    keys = 2 if item.sensitivity == "public" else 1
    return [tokens, words, len(words) + keys]


def _items(found: Any) -> list[MemoryItem]:
    return [rows.item(r) for r in found]


class ItemTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def get(self, item_id: str) -> MemoryItem | None:
        row = self.conn.execute(f"{_SELECT} WHERE r.id = %s", (item_id,)).fetchone()
        return rows.item(row) if row else None

    def add(self, item: MemoryItem, tokens: str) -> bool:
        marks = ", ".join("%s::jsonb" if n == "evidence" else "%s" for n in _COLUMNS)
        cursor = self.conn.execute(
            f"INSERT INTO memory_items ({', '.join(_COLUMNS)}) VALUES ({marks})"
            " ON CONFLICT (id) DO NOTHING",
            [_value(item, n) for n in _COLUMNS],
        )
        if cursor.rowcount != 1:
            return False
        if item.status == "active":
            self.conn.execute(
                f"UPDATE memory_items SET {_INDEX_SET} WHERE id = %s",
                [*_index(item, tokens), item.id],
            )
        return True

    def change(self, before: MemoryItem, after: MemoryItem, tokens: str | None) -> None:
        changed = [n for n in _COLUMNS if n != "id" and getattr(before, n) != getattr(after, n)]
        if not changed:
            return
        sets = ", ".join(f"{n} = %s::jsonb" if n == "evidence" else f"{n} = %s" for n in changed)
        # (the vectors' part clears the item's `embed_hash` here when its title or content
        # changed: a new text needs a new vector)
        row = self.conn.execute(
            f"UPDATE memory_items SET {sets} WHERE id = %s RETURNING fts_body",
            [*(_value(after, n) for n in changed), before.id],
        ).fetchone()
        if row is None or not set(changed) & set(_INDEXED):
            return
        if after.status != "active":
            self.conn.execute(
                "UPDATE memory_items SET fts_body = NULL, fts = NULL, fts_len = 0 WHERE id = %s",
                (after.id,),
            )
            return
        text_changed = before.title != after.title or before.content != after.content
        body = tokens if tokens is not None else (None if text_changed else row[0])
        if body is None:
            raise ValueError(f"re-indexing {after.id} needs the tokens of its new text")
        self.conn.execute(
            f"UPDATE memory_items SET {_INDEX_SET} WHERE id = %s", [*_index(after, body), after.id]
        )

    def touch(self, ids: Sequence[str], at: float) -> None:
        self.conn.execute(
            "UPDATE memory_items SET last_accessed = %s, access_count = access_count + n"
            " FROM (SELECT i, count(*) AS n FROM unnest(%s::text[]) AS u (i) GROUP BY i) t"
            " WHERE id = t.i",
            (at, list(ids)),
        )

    def decay(self, before: float, step: float, floor: float, keep: Sequence[str]) -> int:
        return self.conn.execute(
            "UPDATE memory_items SET confidence = greatest(%s, confidence - %s)"
            " WHERE status = 'active' AND confidence > %s"
            " AND coalesce(last_accessed, updated_at) < %s AND NOT (source = ANY(%s))",
            (floor, step, floor, before, list(keep)),
        ).rowcount

    def listed(
        self, visibility: Visibility | None, *, kind: str | None, status: str | None, limit: int
    ) -> list[MemoryItem]:
        where, params = visibility_sql(visibility) if visibility is not None else ("TRUE", [])
        sql = f"{_SELECT} WHERE {where}"
        if status is not None:
            sql, params = f"{sql} AND r.status = %s", [*params, status]
        if kind is not None:
            sql, params = f"{sql} AND r.kind = %s", [*params, kind]
        found = self.conn.execute(f"{sql} ORDER BY r.updated_at DESC, r.id LIMIT {limit:d}", params)
        return _items(found)

    def visible(self, item_id: str, visibility: Visibility) -> MemoryItem | None:
        where, params = visibility_sql(visibility)
        row = self.conn.execute(
            f"{_SELECT} WHERE r.id = %s AND {where}", [item_id, *params]
        ).fetchone()
        return rows.item(row) if row else None

    def in_slot(self, scope: str, slot: str) -> list[MemoryItem]:
        return _items(
            self.conn.execute(
                f"{_SELECT} WHERE r.scope = %s AND r.slot = %s AND r.status = 'active'",
                (scope, slot),
            )
        )

    def replaced_by(self, item_id: str) -> str | None:
        row = self.conn.execute(
            "SELECT id FROM memory_items WHERE supersedes = %s LIMIT 1", (item_id,)
        ).fetchone()
        return str(row[0]) if row else None

    def exported(self, scopes: Sequence[str] | None) -> list[MemoryItem]:
        if scopes is None:
            return _items(self.conn.execute(f"{_SELECT} ORDER BY r.created_at, r.id"))
        return _items(
            self.conn.execute(
                f"{_SELECT} WHERE r.scope = ANY(%s) ORDER BY r.created_at, r.id", (list(scopes),)
            )
        )

    def search(self, visibility: Visibility | None, search: TextSearch) -> list[ItemMatch]:
        where, params = visibility_sql(visibility) if visibility is not None else ("TRUE", [])
        query = lexical.ranked("memory_items", _MATCH_SELECT, "r.created_at", where, params, search)
        if query is None:
            return []
        return [ItemMatch(rows.item(r), float(r[22]), r[21]) for r in self.conn.execute(*query)]

    def any_active(self, visibility: Visibility, kind: str | None = None) -> bool:
        where, params = visibility_sql(visibility)
        sql = f"SELECT 1 FROM memory_items r WHERE r.status = 'active' AND {where}"
        if kind is not None:
            sql, params = f"{sql} AND r.kind = %s", [*params, kind]
        return self.conn.execute(f"{sql} LIMIT 1", params).fetchone() is not None

    def containing(
        self, visibility: Visibility | None, needles: Sequence[str], search: TextSearch
    ) -> list[ItemMatch]:
        where, params = visibility_sql(visibility) if visibility is not None else ("TRUE", [])
        sql = f"SELECT {_MATCH_SELECT} FROM memory_items r WHERE r.fts IS NOT NULL AND {where}"
        values: list[Any] = list(params)
        needle = lexical.ascii_fold("%s")
        for text in needles:
            sql += (
                f" AND (strpos({lexical.ascii_fold('r.content')}, {needle}) > 0"
                f" OR strpos({lexical.ascii_fold('r.title')}, {needle}) > 0)"
            )
            values += [text, text]
        sql, values = lexical.time_filter(sql, values, "r.created_at", search)
        found = self.conn.execute(
            f"{sql} ORDER BY r.created_at DESC, r.id LIMIT {search.limit:d}", values
        )
        return [ItemMatch(rows.item(r), 1.0, r[21]) for r in found]

    def purge(self, item_id: str) -> bool:
        conn = self.conn
        conn.execute("UPDATE memory_items SET supersedes = NULL WHERE supersedes = %s", (item_id,))
        # its index entry goes with its row (the vectors' part also drops its vector here when
        # no other row has the same text)
        return conn.execute("DELETE FROM memory_items WHERE id = %s", (item_id,)).rowcount > 0

    def tally(self) -> list[Tally]:
        found = self.conn.execute(
            "SELECT split_part(scope, ':', 1) AS family, kind, status, count(*)"
            " FROM memory_items GROUP BY family, kind, status"
        )
        return [Tally(r[0], r[1], r[2], int(r[3])) for r in found]

    def added(self, spans: Sequence[Span]) -> list[SpanCount]:
        if not spans:
            return []
        starts, ends = zip(*spans, strict=True)
        found = self.conn.execute(
            "SELECT s.n - 1, m.source, count(*)"
            " FROM unnest(%s::float8[], %s::float8[]) WITH ORDINALITY AS s (start, stop, n)"
            " JOIN memory_items m ON m.created_at >= s.start AND m.created_at < s.stop"
            " GROUP BY s.n, m.source",
            (list(starts), list(ends)),
        )
        return [SpanCount(int(r[0]), r[1], int(r[2])) for r in found]

    def page(self, where: ItemFilter, offset: int, limit: int) -> Slice[MemoryItem]:
        sql, params = filter_sql(where)
        found = self.conn.execute(
            f"{_SELECT} WHERE {sql} ORDER BY r.updated_at DESC, r.id"
            f" LIMIT {limit:d} OFFSET {offset:d}",
            params,
        )
        items = _items(found)
        total = self.conn.execute(f"SELECT count(*) FROM memory_items r WHERE {sql}", params)
        row = total.fetchone()
        return Slice(items, int(row[0]) if row else 0)
