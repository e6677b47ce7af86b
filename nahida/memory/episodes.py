"""Episodes (the Ethan layer 4): one summary per finished session; filled in by the episodes
work."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nahida.memory.models import Episode
from nahida.memory.store.base import Store


class Episodes:
    """`memory.episodes`."""

    def __init__(self, store: Store, changed: Callable[[], None] = lambda: None) -> None:
        self.store = store
        self.changed = changed

    async def add(
        self,
        *,
        session_id: str,
        chat: str,
        summary: str,
        keywords: Sequence[str],
        started_at: float,
        ended_at: float,
        turn_count: int,
    ) -> Episode:
        raise NotImplementedError  # the episodes work
