"""Embeddings and vector search in SQLite (DESIGN §5 step 4).

Vectors live in a plain table, one per (space, text hash). A search starts from the rows the
viewer may see (the chat index of turns and episodes, the scope index of items: visibility
inside the query, before ranking), joins each to its vector in the query's space and orders by
`vec_distance_cosine` when sqlite-vec is loaded. Without the extension the same rows come back
with their vectors and numpy ranks them: the same answers, slower. (Not vec0 virtual tables:
their partitions bloat the file with many small chats.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nahida.memory.core.scopes import Visibility
from nahida.memory.store.sqlite import fts, rows
from nahida.memory.store.sqlite.connection import Connection
from nahida.memory.store.sqlite.episodes import episode_of
from nahida.memory.store.sqlite.where import visibility_sql
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
        "coalesce(speaker_name, '') AS title, content",  # "Caroline: …" is what is meant
        "hidden_by IS NULL AND role IN ('user', 'assistant')",
    ),
    "item": ("memory_items", "rowid", "title, content", "status = 'active'"),
    "episode": (
        "episodes",
        "seq",
        # "keywords: summary" (the keywords, a JSON array, joined with commas)
        "coalesce((SELECT group_concat(k.value, ', ') FROM json_each(r.keywords) k), '')"
        " AS title, summary",
        "1",
    ),
}
_TURN_COLUMNS = rows.TURN_MATCH_COLUMNS.replace("t.", "r.")
_SPACE = "e.provider = ? AND e.model = ? AND e.dimension = ?"


def _space(space: VectorSpace) -> tuple[str, str, int]:
    return space.provider, space.model, space.dimension


def blob(vector: Vector) -> bytes:
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


class VectorTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    @property
    def native(self) -> bool:
        """Whether sqlite-vec ranks (else numpy does)."""
        return getattr(self.conn, "vec_version", None) is not None

    def unhashed(self, kind: Embedded, limit: int) -> list[Unembedded]:
        table, key, text, searchable = _ROWS[kind]
        found = self.conn.execute(
            f"SELECT {key}, {text} FROM {table} r WHERE embed_hash IS NULL AND {searchable}"
            f" ORDER BY {key} LIMIT {int(limit)}"
        )
        return [Unembedded(r[0], r[1], r[2]) for r in found]

    def missing(
        self, kind: Embedded, space: VectorSpace, after: int, limit: int
    ) -> list[Unembedded]:
        table, key, text, searchable = _ROWS[kind]
        found = self.conn.execute(
            f"SELECT {key}, {text}, embed_hash FROM {table} r"
            f" WHERE {key} > ? AND embed_hash != '' AND {searchable}"
            f" AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE {_SPACE} AND e.hash = r.embed_hash)"
            f" ORDER BY {key} LIMIT {int(limit)}",
            (after, *_space(space)),
        )
        return [Unembedded(r[0], r[1], r[2], r[3]) for r in found]

    def known(self, space: VectorSpace, hashes: Sequence[str]) -> set[str]:
        found: set[str] = set()
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            found.update(
                r[0]
                for r in self.conn.execute(
                    f"SELECT hash FROM embeddings e WHERE {_SPACE}"
                    f" AND hash IN ({', '.join('?' * len(chunk))})",
                    (*_space(space), *chunk),
                )
            )
        return found

    def put(self, space: VectorSpace, vectors: Sequence[tuple[str, Vector]], at: float) -> int:
        before = self.conn.total_changes
        self.conn.executemany(
            "INSERT INTO embeddings (provider, model, dimension, hash, vector, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(*_space(space), h, blob(v), at) for h, v in vectors],
        )
        return int(self.conn.total_changes - before)

    def link(self, kind: Embedded, hashes: Sequence[tuple[int, str]]) -> None:
        table, key, _, _ = _ROWS[kind]
        self.conn.executemany(
            f"UPDATE {table} SET embed_hash = ? WHERE {key} = ?", [(h, k) for k, h in hashes]
        )

    def counts(self, space: VectorSpace | None) -> VectorCounts:
        conn = self.conn
        total = int(conn.execute("SELECT count(*) FROM embeddings").fetchone()[0])
        stored = 0
        if space is not None:
            stored = int(
                conn.execute(
                    f"SELECT count(*) FROM embeddings e WHERE {_SPACE}", _space(space)
                ).fetchone()[0]
            )
        pending = skipped = 0
        for table, _, _, searchable in _ROWS.values():
            pending += int(
                conn.execute(
                    f"SELECT count(*) FROM {table} WHERE embed_hash IS NULL AND {searchable}"
                ).fetchone()[0]
            )
            skipped += int(
                conn.execute(
                    f"SELECT count(*) FROM {table} WHERE embed_hash = '' AND {searchable}"
                ).fetchone()[0]
            )
            if space is not None:
                pending += int(
                    conn.execute(
                        f"SELECT count(DISTINCT embed_hash) FROM {table} r"
                        f" WHERE embed_hash != '' AND {searchable} AND NOT EXISTS"
                        f" (SELECT 1 FROM embeddings e WHERE {_SPACE} AND e.hash = r.embed_hash)",
                        _space(space),
                    ).fetchone()[0]
                )
        return VectorCounts(stored, total - stored, pending, skipped)

    def clear(self) -> int:
        deleted = self.conn.execute("DELETE FROM embeddings").rowcount
        for table, _, _, _ in _ROWS.values():
            self.conn.execute(f"UPDATE {table} SET embed_hash = NULL WHERE embed_hash IS NOT NULL")
        return int(deleted)

    def sweep(self) -> int:
        named = " AND ".join(
            f"NOT EXISTS (SELECT 1 FROM {table} r WHERE r.embed_hash = embeddings.hash)"
            for table, _, _, _ in _ROWS.values()
        )
        return int(self.conn.execute(f"DELETE FROM embeddings WHERE {named}").rowcount)

    def _nearest(
        self,
        source: str,
        key: str,
        where: str,
        params: list[Any],
        time_column: str,
        search: VectorSearch,
    ) -> list[tuple[int, float]]:
        """(key, cosine similarity to the query) of the rows of `source` (aliased `r`) that pass
        `where`, nearest first (ties: the older vector). Only keys: the caller reads the rows
        it keeps, so a covering index can answer the search itself."""
        sql, values = fts.time_filter(
            f" FROM {source} CROSS JOIN embeddings e ON {_SPACE} AND e.hash = r.embed_hash"
            f" WHERE {where}",
            [*_space(search.space), *params],
            time_column,
            search,
        )
        if self.native:
            nearest = self.conn.execute(
                f"SELECT r.{key}, 1.0 - vec_distance_cosine(e.vector, ?) AS score{sql}"
                f" ORDER BY score DESC, e.id LIMIT {int(search.limit)}",
                [blob(search.vector), *values],
            )
            return [(int(r[0]), float(r[1])) for r in nearest]
        found: list[Any] = self.conn.execute(
            f"SELECT r.{key}, e.vector{sql} ORDER BY e.id", values
        ).fetchall()
        if not found:
            return []
        matrix = np.frombuffer(b"".join(r[1] for r in found), dtype="<f4")
        matrix = matrix.reshape(len(found), search.space.dimension)
        query = np.asarray(search.vector, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(query))
        scores = (matrix @ query) / np.where(norms > 0, norms, 1.0)
        best = np.argsort(-scores, kind="stable")[: search.limit]
        return [(int(found[i][0]), float(scores[i])) for i in best]

    def _rows(self, select: str, table: str, key: str, keys: Sequence[int]) -> dict[int, Any]:
        found = self.conn.execute(
            f"SELECT {key} AS nearest_key, {select} FROM {table} r"
            f" WHERE {key} IN ({', '.join('?' * len(keys))})",
            list(keys),
        )
        return {int(r[0]): r for r in found}

    def items(self, visibility: Visibility, search: VectorSearch) -> list[ItemMatch]:
        where, params = visibility_sql(visibility)
        nearest = self._nearest(
            "memory_items r",
            "rowid",
            f"r.status = 'active' AND {where}",  # scope and sensitivity: only items have them
            list(params),
            "r.created_at",
            search,
        )
        if not nearest:
            return []
        found = self._rows("r.*", "memory_items", "r.rowid", [k for k, _ in nearest])
        return [ItemMatch(rows.item(found[k]), score, "") for k, score in nearest]

    def turns(self, chats: Sequence[str] | None, search: VectorSearch) -> list[TurnMatch]:
        where = "r.hidden_by IS NULL AND r.role IN ('user', 'assistant')"
        params: list[Any] = []
        if chats is not None:
            if not chats:
                return []
            where += f" AND r.chat IN ({', '.join('?' * len(chats))})"
            params = list(chats)
        nearest = self._nearest("turns r", "id", where, params, "r.time", search)
        if not nearest:
            return []
        found = self._rows(_TURN_COLUMNS, "turns", "r.id", [k for k, _ in nearest])
        return [TurnMatch._make((*found[k][1:], score)) for k, score in nearest]

    def episodes(self, chats: Sequence[str] | None, search: VectorSearch) -> list[EpisodeMatch]:
        where, params = "1", list[Any]()
        if chats is not None:
            if not chats:
                return []
            where, params = f"r.chat IN ({', '.join('?' * len(chats))})", list(chats)
        nearest = self._nearest("episodes r", "seq", where, params, "r.ended_at", search)
        if not nearest:
            return []
        found = self._rows("r.*", "episodes", "r.seq", [k for k, _ in nearest])
        return [EpisodeMatch(episode_of(found[k]), score) for k, score in nearest]
