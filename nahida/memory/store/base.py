"""The store seam (DESIGN §1, §13): what the memory facade needs from a database, and nothing more.

A `Store` runs units of work. A unit is a plain function `unit(tx, *args)` that reads and writes
through the `Tx` it is given; the store runs it in one transaction (all of its changes or none)
on the store's own thread, so the event loop never blocks on the database:

    item = await store.read(lambda tx: tx.items.get("m_7f3a2c"))
    await store.write(write.propose, prepared, "auto_safe", "onebot:42")

`read` units change nothing and never wait for the write lock; `write` units may. The `*_sync`
twins are for code without an event loop (the CLI, imports, scripts). Everything a unit needs
that is not the database (jieba tokens, vectors, JSON) is computed before the store call.

The parts of a `Tx` are tables in the domain's words (`tables`; the values they pass are in
`values`). Visibility is passed as a `Visibility` and applied inside the backend's own query,
before ranking; search terms come as tokens (`tokenize.query_terms`), and each backend phrases
them in its own syntax (FTS5 MATCH in SQLite, a tsquery over the same tokens in PostgreSQL).
A backend is a package under `memory/store/`; `tests/contract/` runs the same suite against each.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeVar

from nahida.memory.store.derived import (
    DreamRows,
    EpisodeRows,
    PeopleRows,
    ProfileRows,
    RecallRows,
    SummaryRows,
)
from nahida.memory.store.tables import (
    CandidateRows,
    CommandRows,
    EventRows,
    ItemRows,
    JobRows,
    MarkdownRows,
    SessionRows,
    StateRows,
    TurnRows,
)
from nahida.memory.store.values import StoreCapabilities
from nahida.memory.store.vectors import VectorRows

T = TypeVar("T")


class Tx(Protocol):
    """One transaction's view of the database."""

    @property
    def sessions(self) -> SessionRows: ...
    @property
    def turns(self) -> TurnRows: ...
    @property
    def items(self) -> ItemRows: ...
    @property
    def events(self) -> EventRows: ...
    @property
    def candidates(self) -> CandidateRows: ...
    @property
    def jobs(self) -> JobRows: ...
    @property
    def vectors(self) -> VectorRows: ...
    @property
    def summaries(self) -> SummaryRows: ...
    @property
    def profiles(self) -> ProfileRows: ...
    @property
    def episodes(self) -> EpisodeRows: ...
    @property
    def dreams(self) -> DreamRows: ...
    @property
    def markdown(self) -> MarkdownRows: ...
    @property
    def state(self) -> StateRows: ...
    @property
    def commands(self) -> CommandRows: ...
    @property
    def recalls(self) -> RecallRows: ...
    @property
    def people(self) -> PeopleRows: ...


Unit = Callable[..., T]  # unit(tx, *args) -> T


class Store(Protocol):
    @property
    def capabilities(self) -> StoreCapabilities: ...

    async def read(self, unit: Callable[..., T], *args: Any) -> T:
        """Run `unit(tx, *args)`, which changes nothing, in one transaction."""

    async def write(self, unit: Callable[..., T], *args: Any) -> T:
        """Run `unit(tx, *args)` in one transaction: all of its changes, or none if it raises."""

    def read_sync(self, unit: Callable[..., T], *args: Any) -> T: ...

    def write_sync(self, unit: Callable[..., T], *args: Any) -> T: ...

    def chat_lock(self, chat: str) -> AbstractAsyncContextManager[object]:
        """Held while a message of `chat` is handled, from storing it to storing the reply:
        processes that share the store handle a chat's messages one at a time, in the order
        they take the lock, and the second to get a message delivered to both finds it stored.
        A store one process owns needs none (the bus orders each chat's messages already)."""

    def close(self) -> None:
        """Finish the queued units, then close; later calls raise StorageError."""
