"""`ReferenceStore`: the `Store` seam in plain Python, over data kept in memory.

What it is for: the seam's meaning written once without a database (the contract suite runs
it beside SQLite), and a fast store for tests that are not about SQLite. Units run on the
caller's thread, one write at a time (`Data` explains how a unit's changes become all or
nothing). Data lives on a `Shelf` as long as the process: two stores on one shelf share it,
as two processes share a database file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any, TypeVar

from nahida import __version__
from nahida.errors import StorageError
from nahida.memory.store.reference.data import Data
from nahida.memory.store.reference.episodes import EpisodeTable, SummaryTable
from nahida.memory.store.reference.history import CommandTable, SessionTable, TurnTable
from nahida.memory.store.reference.items import CandidateTable, EventTable, ItemTable
from nahida.memory.store.reference.jobs import DreamTable, JobTable
from nahida.memory.store.reference.markdown import MarkdownTable, StateTable
from nahida.memory.store.reference.people import PeopleTable, RecallTable
from nahida.memory.store.reference.profiles import ProfileTable
from nahida.memory.store.reference.vectors import VectorTable
from nahida.memory.store.values import StoreCapabilities

T = TypeVar("T")

CAPABILITIES = StoreCapabilities(
    backend="reference",
    driver="python",
    version=__version__,
    fts=True,
    vectors=True,
)


class ReferenceTx:
    """The tables over one version of the data."""

    def __init__(self, data: Data) -> None:
        self.sessions = SessionTable(data)
        self.turns = TurnTable(data)
        self.items = ItemTable(data)
        self.events = EventTable(data)
        self.candidates = CandidateTable(data)
        self.jobs = JobTable(data)
        self.vectors = VectorTable(data)
        self.summaries = SummaryTable(data)
        self.profiles = ProfileTable(data)
        self.episodes = EpisodeTable(data)
        self.dreams = DreamTable(data)
        self.markdown = MarkdownTable(data)
        self.state = StateTable(data)
        self.commands = CommandTable(data)
        self.recalls = RecallTable(data)
        self.people = PeopleTable(data)


class Shelf:
    """Where a reference store keeps its data: the latest committed version."""

    def __init__(self) -> None:
        self.data = Data()
        self.writing = threading.Lock()


class ReferenceStore:
    def __init__(self, shelf: Shelf | None = None) -> None:
        self.shelf = shelf or Shelf()
        self._closed = False

    @property
    def capabilities(self) -> StoreCapabilities:
        return CAPABILITIES

    def _open(self) -> None:
        if self._closed:
            raise StorageError("the memory store is closed")

    def read_sync(self, unit: Callable[..., T], *args: Any) -> T:
        self._open()
        return unit(ReferenceTx(self.shelf.data), *args)

    def write_sync(self, unit: Callable[..., T], *args: Any) -> T:
        self._open()
        with self.shelf.writing:
            work = self.shelf.data.copy()
            result = unit(ReferenceTx(work), *args)
            self.shelf.data = work
        return result

    async def read(self, unit: Callable[..., T], *args: Any) -> T:
        return self.read_sync(unit, *args)

    async def write(self, unit: Callable[..., T], *args: Any) -> T:
        return self.write_sync(unit, *args)

    def chat_lock(self, chat: str) -> AbstractAsyncContextManager[object]:
        return nullcontext()  # one process owns the store

    def close(self) -> None:
        self._closed = True
