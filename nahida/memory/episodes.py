"""Episodes (the Ethan layer 4): one summary per finished session; filled in by the episodes
work."""

from __future__ import annotations

from collections.abc import Callable

from nahida.memory.store.base import Store


class Episodes:
    """`memory.episodes`."""

    def __init__(self, store: Store, changed: Callable[[], None] = lambda: None) -> None:
        self.store = store
        self.changed = changed
