"""Embeddings by text hash and exact nearest-neighbour search with numpy, in memory."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from nahida.memory.core.scopes import Visibility
from nahida.memory.store.reference import text
from nahida.memory.store.reference.data import Data, EpisodeRow, ItemRow, TurnRow, VectorRow
from nahida.memory.store.reference.items import sees
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

R = TypeVar("R", TurnRow, ItemRow, EpisodeRow)


def _rows(data: Data, kind: Embedded) -> Iterator[tuple[int, Any]]:
    """(key, row) of every row of a kind, by key."""
    if kind == "turn":
        yield from data.turns.items()
    elif kind == "item":
        yield from sorted(((r.seq, r) for r in data.items.values()), key=lambda p: p[0])
    else:
        yield from sorted(((e.seq, e) for e in data.episodes.values()), key=lambda p: p[0])


def _searchable(data: Data, kind: Embedded) -> Iterator[tuple[int, str, str, Any]]:
    """(key, title, content, row) of the rows of a kind that vector search may find, by key.
    The text embedded is `title: content` (a turn's title is its speaker's name)."""
    for key, row in _rows(data, kind):
        if isinstance(row, TurnRow):
            if row.spoken:
                yield key, row.speaker_name or "", row.content, row
        elif isinstance(row, ItemRow):
            if row.item.status == "active":
                yield key, row.item.title, row.item.content, row
        else:
            yield key, ", ".join(row.episode.keywords), row.episode.summary, row


def _relink(data: Data, row: Any, embed_hash: str | None) -> None:
    changed = dataclasses.replace(row, embed_hash=embed_hash)
    if isinstance(row, TurnRow):
        data.turns[row.id] = changed
    elif isinstance(row, ItemRow):
        data.items[row.item.id] = changed
    else:
        data.episodes[row.episode.session_id] = changed


class VectorTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def _has(self, space: VectorSpace, embed_hash: str) -> bool:
        return (space, embed_hash) in self.data.vectors

    def unhashed(self, kind: Embedded, limit: int) -> list[Unembedded]:
        found = [
            Unembedded(key, title, content)
            for key, title, content, row in _searchable(self.data, kind)
            if row.embed_hash is None
        ]
        return found[:limit]

    def missing(
        self, kind: Embedded, space: VectorSpace, after: int, limit: int
    ) -> list[Unembedded]:
        found = [
            Unembedded(key, title, content, row.embed_hash)
            for key, title, content, row in _searchable(self.data, kind)
            if key > after and row.embed_hash and not self._has(space, row.embed_hash)
        ]
        return found[:limit]

    def known(self, space: VectorSpace, hashes: Sequence[str]) -> set[str]:
        return {h for h in hashes if self._has(space, h)}

    def put(self, space: VectorSpace, vectors: Sequence[tuple[str, Vector]], at: float) -> int:
        new = 0
        for embed_hash, vector in vectors:
            if not self._has(space, embed_hash):
                row = VectorRow(self.data.next("vector"), np.asarray(vector, dtype=np.float32))
                self.data.vectors[(space, embed_hash)] = row
                new += 1
        return new

    def link(self, kind: Embedded, hashes: Sequence[tuple[int, str]]) -> None:
        rows = dict(_rows(self.data, kind))
        for key, embed_hash in hashes:
            if key in rows:
                _relink(self.data, rows[key], embed_hash)

    def counts(self, space: VectorSpace | None) -> VectorCounts:
        stored = sum(1 for s, _ in self.data.vectors if s == space)
        pending = skipped = 0
        for kind in ("turn", "item", "episode"):
            rows = [row for _, _, _, row in _searchable(self.data, kind)]
            pending += sum(1 for r in rows if r.embed_hash is None)
            skipped += sum(1 for r in rows if r.embed_hash == "")
            if space is not None:
                pending += len(
                    {
                        r.embed_hash
                        for r in rows
                        if r.embed_hash and not self._has(space, r.embed_hash)
                    }
                )
        return VectorCounts(stored, len(self.data.vectors) - stored, pending, skipped)

    def clear(self) -> int:
        deleted = len(self.data.vectors)
        self.data.vectors.clear()
        for kind in ("turn", "item", "episode"):
            for _, row in list(_rows(self.data, kind)):
                if row.embed_hash is not None:
                    _relink(self.data, row, None)
        return deleted

    def sweep(self) -> int:
        named = {
            row.embed_hash
            for kind in ("turn", "item", "episode")
            for _, row in _rows(self.data, kind)
        }
        gone = [key for key in self.data.vectors if key[1] not in named]
        for key in gone:
            del self.data.vectors[key]
        return len(gone)

    def _nearest(
        self,
        rows: Sequence[R],
        embed_hash: Callable[[R], str | None],
        search: VectorSearch,
    ) -> list[tuple[R, float]]:
        """The rows with a vector in the search's space, nearest first (ties: the older
        vector)."""
        found = []
        for row in rows:
            stored = self.data.vectors.get((search.space, embed_hash(row) or ""))
            if stored is not None:
                found.append((stored.seq, row, stored.vector))
        if not found:
            return []
        found.sort(key=lambda f: f[0])
        matrix = np.stack([f[2] for f in found])
        query = np.asarray(search.vector, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(query))
        scores = (matrix @ query) / np.where(norms > 0, norms, 1.0)
        best = np.argsort(-scores, kind="stable")[: search.limit]
        return [(found[i][1], float(scores[i])) for i in best]

    def items(self, visibility: Visibility, search: VectorSearch) -> list[ItemMatch]:
        rows = [
            r
            for r in self.data.items.values()
            if r.item.status == "active"
            and sees(visibility, r.item)
            and text.in_time(r.item.created_at, search)
        ]
        nearest = self._nearest(rows, lambda r: r.embed_hash, search)
        return [ItemMatch(r.item, score, "") for r, score in nearest]

    def turns(self, chats: Sequence[str] | None, search: VectorSearch) -> list[TurnMatch]:
        rows = [
            t
            for t in self.data.turns.values()
            if t.spoken and (chats is None or t.chat in chats) and text.in_time(t.time, search)
        ]
        return [t.match(score) for t, score in self._nearest(rows, lambda t: t.embed_hash, search)]

    def episodes(self, chats: Sequence[str] | None, search: VectorSearch) -> list[EpisodeMatch]:
        rows = [
            e
            for e in self.data.episodes.values()
            if (chats is None or e.episode.chat in chats)
            and text.in_time(e.episode.ended_at, search)
        ]
        nearest = self._nearest(rows, lambda e: e.embed_hash, search)
        return [EpisodeMatch(e.episode, score) for e, score in nearest]
