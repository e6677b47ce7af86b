"""The Markdown projection's record of its files, and named values, in memory."""

from __future__ import annotations

import copy

from nahida.memory.store.reference.data import Data
from nahida.memory.store.values import FileState


class MarkdownTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def file(self, path: str) -> FileState | None:
        return copy.deepcopy(self.data.files.get(path))  # a snapshot the caller may change

    def put_file(self, state: FileState) -> None:
        self.data.files[state.path] = copy.deepcopy(state)

    def fingerprint(self) -> tuple[object, ...]:
        """Changes whenever a global item or a profile bullet does (counts, latest change)."""
        items = [r.item.updated_at for r in self.data.items.values() if r.item.scope == "global"]
        profiles = [r.entry.updated_at for r in self.data.profiles.values()]
        return (
            len(items),
            max(items, default=None),
            len(profiles),
            max(profiles, default=None),
        )


class StateTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def get(self, key: str) -> str | None:
        return self.data.state.get(key)

    def put(self, key: str, value: str, at: float) -> None:
        self.data.state[key] = value
