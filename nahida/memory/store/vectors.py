"""The vectors' table of a store's `Tx` (the other tables are in `tables`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from nahida.memory.core.scopes import Visibility
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


class VectorRows(Protocol):
    """Embeddings by text (a cache: one vector per space and text hash) and vector search.

    A backend without a vector extension computes the same answers with numpy."""

    def unhashed(self, kind: Embedded, limit: int) -> list[Unembedded]:
        """Searchable rows (active items; unhidden user/assistant turns; episodes) not looked at
        yet."""

    def missing(
        self, kind: Embedded, space: VectorSpace, after: int, limit: int
    ) -> list[Unembedded]:
        """Searchable rows after `after` whose text was looked at but has no vector in `space`."""

    def known(self, space: VectorSpace, hashes: Sequence[str]) -> set[str]:
        """The hashes that have a vector in `space`."""

    def put(self, space: VectorSpace, vectors: Sequence[tuple[str, Vector]], at: float) -> int:
        """Store vectors by text hash (an existing one is kept); returns how many are new."""

    def link(self, kind: Embedded, hashes: Sequence[tuple[int, str]]) -> None:
        """Name each row's text by hash (`''`: not worth a vector)."""

    def counts(self, space: VectorSpace | None) -> VectorCounts: ...

    def clear(self) -> int:
        """Delete every vector and forget every row's hash (a rebuild); returns the vectors."""

    def sweep(self) -> int:
        """Delete vectors no row names any more (deleted sessions, changed items, rewritten
        episodes)."""

    def items(self, visibility: Visibility, search: VectorSearch) -> list[ItemMatch]:
        """Active items the visibility allows, nearest first."""

    def turns(self, chats: Sequence[str] | None, search: VectorSearch) -> list[TurnMatch]:
        """Unhidden user/assistant turns of these chats (every chat: None), nearest first."""

    def episodes(self, chats: Sequence[str] | None, search: VectorSearch) -> list[EpisodeMatch]:
        """Episodes of these chats (every chat: None), nearest first (`time`: `ended_at`)."""
