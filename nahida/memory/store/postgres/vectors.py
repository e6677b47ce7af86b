"""Embeddings and vector search in PostgreSQL with pgvector (DESIGN §5 step 4).

Vectors live in `embeddings`, one per (space, text hash), in pgvector's untyped `vector` column:
a store holds vectors of several models, so of several dimensions, and every query is filtered
to one space before a distance is taken. A search starts from the rows the viewer may see (the
chats of turns and episodes, `where.visibility_sql` for items: visibility inside the query,
before ranking), joins each to its vector in the query's space and orders by the exact cosine
distance (`<=>`) of those rows alone. No approximate index: one filtered after its scan can
return fewer rows than asked for when most of the nearest are not visible; an exact scan of
the visible rows cannot. Vectors travel as pgvector's binary format (`pgvector.psycopg`,
registered on every connection by `db.Database`): exact float32, and no text to format or parse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nahida.memory.core.scopes import Visibility
from nahida.memory.store.postgres import episodes, lexical, rows
from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.postgres.where import visibility_sql
from nahida.memory.store.values import (
    Embedded,
    EpisodeMatch,
    ItemMatch,
    TurnMatch,
    Unembedded,
    VectorCounts,
    VectorSearch,
    VectorSpace,
)

if TYPE_CHECKING:
    from nahida.memory.store.values import Vector

# What each kind searches: its table, key, text columns and the rows that are searchable.
_ROWS: dict[str, tuple[str, str, str, str]] = {
    "turn": (
        "turns",
        "id",
        "coalesce(r.speaker_name, '') AS title, r.content",  # "Caroline: …" is what is meant
        "r.hidden_by IS NULL AND r.role IN ('user', 'assistant')",
    ),
    "item": ("memory_items", "seq", "r.title, r.content", "r.status = 'active'"),
    "episode": (
        "episodes",
        "seq",
        # "keywords: summary" (the keywords joined with commas)
        "coalesce((SELECT string_agg(k.word, ', ' ORDER BY k.n)"
        " FROM jsonb_array_elements_text(r.keywords) WITH ORDINALITY AS k (word, n)), '')"
        " AS title, r.summary",
        "TRUE",
    ),
}
_SPACE = "e.provider = %s AND e.model = %s AND e.dimension = %s"
_ITEM_COLUMNS = ", ".join(f"r.{c.strip()}" for c in rows.ITEM_COLUMNS.split(","))


def _space(space: VectorSpace) -> list[Any]:
    return [space.provider, space.model, space.dimension]


class VectorTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def unhashed(self, kind: Embedded, limit: int) -> list[Unembedded]:
        table, key, text, searchable = _ROWS[kind]
        found = self.conn.execute(
            f"SELECT r.{key}, {text} FROM {table} r WHERE r.embed_hash IS NULL AND {searchable}"
            f" ORDER BY r.{key} LIMIT {limit:d}"
        )
        return [Unembedded(int(r[0]), r[1], r[2]) for r in found]

    def missing(
        self, kind: Embedded, space: VectorSpace, after: int, limit: int
    ) -> list[Unembedded]:
        table, key, text, searchable = _ROWS[kind]
        found = self.conn.execute(
            f"SELECT r.{key}, {text}, r.embed_hash FROM {table} r"
            f" WHERE r.{key} > %s AND r.embed_hash <> '' AND {searchable} AND NOT EXISTS"
            f" (SELECT 1 FROM embeddings e WHERE {_SPACE} AND e.hash = r.embed_hash)"
            f" ORDER BY r.{key} LIMIT {limit:d}",
            [after, *_space(space)],
        )
        return [Unembedded(int(r[0]), r[1], r[2], r[3]) for r in found]

    def known(self, space: VectorSpace, hashes: Sequence[str]) -> set[str]:
        found = self.conn.execute(
            f"SELECT e.hash FROM embeddings e WHERE {_SPACE} AND e.hash = ANY(%s)",
            [*_space(space), list(dict.fromkeys(hashes))],
        )
        return {r[0] for r in found}

    def put(self, space: VectorSpace, vectors: Sequence[tuple[str, Vector]], at: float) -> int:
        if not vectors:
            return 0
        with self.conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO embeddings (provider, model, dimension, hash, vector, created_at)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [(*_space(space), h, v, at) for h, v in vectors],
            )
            return max(cursor.rowcount, 0)

    def link(self, kind: Embedded, hashes: Sequence[tuple[int, str]]) -> None:
        if not hashes:
            return
        table, key, _, _ = _ROWS[kind]
        keys, named = zip(*hashes, strict=True)
        self.conn.execute(
            f"UPDATE {table} r SET embed_hash = l.hash"
            " FROM unnest(%s::bigint[], %s::text[]) AS l (key, hash)"
            f" WHERE r.{key} = l.key",
            (list(keys), list(named)),
        )

    def _count(self, sql: str, params: Sequence[Any] = ()) -> int:
        row = self.conn.execute(sql, params).fetchone()
        return int(row[0]) if row else 0

    def counts(self, space: VectorSpace | None) -> VectorCounts:
        total = self._count("SELECT count(*) FROM embeddings")
        stored = 0
        if space is not None:
            stored = self._count(f"SELECT count(*) FROM embeddings e WHERE {_SPACE}", _space(space))
        pending = skipped = 0
        for table, _, _, searchable in _ROWS.values():
            pending += self._count(
                f"SELECT count(*) FROM {table} r WHERE r.embed_hash IS NULL AND {searchable}"
            )
            skipped += self._count(
                f"SELECT count(*) FROM {table} r WHERE r.embed_hash = '' AND {searchable}"
            )
            if space is not None:
                pending += self._count(
                    f"SELECT count(DISTINCT r.embed_hash) FROM {table} r"
                    f" WHERE r.embed_hash <> '' AND {searchable} AND NOT EXISTS"
                    f" (SELECT 1 FROM embeddings e WHERE {_SPACE} AND e.hash = r.embed_hash)",
                    _space(space),
                )
        return VectorCounts(stored, total - stored, pending, skipped)

    def clear(self) -> int:
        deleted = self.conn.execute("DELETE FROM embeddings").rowcount
        for table, _, _, _ in _ROWS.values():
            self.conn.execute(f"UPDATE {table} SET embed_hash = NULL WHERE embed_hash IS NOT NULL")
        return int(deleted)

    def sweep(self) -> int:
        named = " AND ".join(
            f"NOT EXISTS (SELECT 1 FROM {table} r WHERE r.embed_hash = e.hash)"
            for table, _, _, _ in _ROWS.values()
        )
        return int(self.conn.execute(f"DELETE FROM embeddings e WHERE {named}").rowcount)

    def _nearest(
        self,
        table: str,
        key: str,
        select: str,
        where: str,
        params: list[Any],
        time_column: str,
        search: VectorSearch,
    ) -> list[Any]:
        """`select` and the cosine similarity to the query of the rows `r` of `table` that pass
        `where` and have a vector in the query's space, nearest first (ties: the older vector)."""
        nearest, values = lexical.time_filter(
            f"SELECT r.{key} AS key, e.id AS vector_id, e.vector <=> %s AS distance"
            f" FROM {table} r JOIN embeddings e ON {_SPACE} AND e.hash = r.embed_hash"
            f" WHERE {where}",
            [search.vector, *_space(search.space), *params],
            time_column,
            search,
        )
        return self.conn.execute(
            f"SELECT {select}, 1.0 - n.distance FROM ({nearest}"
            f" ORDER BY distance, vector_id, key LIMIT {search.limit:d}) n"
            f" JOIN {table} r ON r.{key} = n.key ORDER BY n.distance, n.vector_id, n.key",
            values,
        ).fetchall()

    def items(self, visibility: Visibility, search: VectorSearch) -> list[ItemMatch]:
        seen, params = visibility_sql(visibility)  # scope and sensitivity: only items have them
        found = self._nearest(
            "memory_items",
            "seq",
            _ITEM_COLUMNS,
            f"r.status = 'active' AND {seen}",
            params,
            "r.created_at",
            search,
        )
        return [ItemMatch(rows.item(r), float(r[21]), "") for r in found]

    def turns(self, chats: Sequence[str] | None, search: VectorSearch) -> list[TurnMatch]:
        where = "r.hidden_by IS NULL AND r.role IN ('user', 'assistant')"
        params: list[Any] = []
        if chats is not None:
            where += " AND r.chat = ANY(%s)"
            params.append(list(chats))
        found = self._nearest(
            "turns", "id", rows.TURN_MATCH_COLUMNS, where, params, "r.time", search
        )
        return [TurnMatch._make((int(r[0]), *r[1:9], float(r[9]))) for r in found]

    def episodes(self, chats: Sequence[str] | None, search: VectorSearch) -> list[EpisodeMatch]:
        where, params = "TRUE", list[Any]()
        if chats is not None:
            where, params = "r.chat = ANY(%s)", [list(chats)]
        found = self._nearest(
            "episodes", "seq", episodes.MATCH_COLUMNS, where, params, "r.ended_at", search
        )
        return [EpisodeMatch(episodes.episode(r), float(r[9])) for r in found]
