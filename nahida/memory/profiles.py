"""Profiles (the Ethan layer 3): one Markdown profile per person; filled in by the profiles work."""

from __future__ import annotations

from nahida.memory.store.base import Store


class Profiles:
    """`memory.profiles`."""

    def __init__(self, store: Store) -> None:
        self.store = store
