"""`nahida store copy`: one store's memory into another, table by table (`copying.TABLES`), and
the proof that the target holds it (docs/postgres.md, Moving memory between stores).

Each table is read from the source in key order, a batch at a time; the target's rows of the
same keys are looked up, and only rows it lacks or holds otherwise are written (an upsert by
key, with its index entry). So a second run writes nothing, a run after an interruption or
after more was written to the source writes only what is missing or changed, and memory stays
bounded by the batch. Rows the target holds and the source no longer does (a session deleted
since the last copy) are removed, except from append-only tables, whose rows are never removed.

A copy goes only into an empty store or one holding the same memory: the memory's identity is
a named-state value (`MEMORY_ID`), made in the source on its first copy and written first into
the target, so an interrupted copy is recognised when it is run again. A target holding another
memory is refused before anything is written.

Verified at the end: rows and indexed rows per table on both sides, and the same lexical
searches (terms from a few source rows of each searched table) asked of both, through the seam.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from nahida.errors import CopyError
from nahida.memory.core.tokenize import query_terms
from nahida.memory.store.copying import (
    KEPT_AS_LEXEMES,
    MEMORY_ID,
    NEVER,
    TABLES,
    Batch,
    Indexed,
    Row,
    Side,
    Table,
    same_index,
)
from nahida.memory.store.values import TextSearch

BATCH = 2000  # rows a transaction: big enough to keep the round trips few, small in memory
SAMPLES = 4  # searches checked per searched table
SEARCH_LIMIT = 20
# The checks search around their row's moment: the same ranking over the whole index (each
# term's frequency counts every row), with only a window's rows to score, so a check costs
# alike on a small memory and a large one.
SEARCH_WINDOW = 600.0
Progress = Callable[[str, int, int], None]  # table, rows looked at, rows in the source
Sample = tuple[tuple[str, ...], tuple[float, float]]  # a check's terms and window


@dataclass
class TableReport:
    table: str
    source: int
    target: int
    written: int = 0
    deleted: int = 0
    source_indexed: int | None = None
    target_indexed: int | None = None

    @property
    def ok(self) -> bool:
        return self.source == self.target and self.source_indexed == self.target_indexed

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "table": self.table,
            "source": self.source,
            "target": self.target,
            "written": self.written,
            "deleted": self.deleted,
            "ok": self.ok,
        }
        if self.source_indexed is not None:
            found["indexed"] = {"source": self.source_indexed, "target": self.target_indexed}
        return found


@dataclass
class SearchCheck:
    """One lexical search asked of both stores: the ids found (hits tied at the last score of a
    full page left out: which of a tie makes the page is each database's own choice)."""

    table: str
    terms: tuple[str, ...]
    window: tuple[float, float]
    source: list[Any]
    target: list[Any]

    @property
    def ok(self) -> bool:
        return sorted(map(str, self.source)) == sorted(map(str, self.target))

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "terms": list(self.terms),
            "window": list(self.window),
            "source": self.source,
            "target": self.target,
            "ok": self.ok,
        }


@dataclass
class CopyReport:
    source: str
    target: str
    memory: str
    tables: list[TableReport] = field(default_factory=list)
    searches: list[SearchCheck] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tables) and all(s.ok for s in self.searches)

    @property
    def written(self) -> int:
        return sum(t.written for t in self.tables)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "memory": self.memory,
            "ok": self.ok,
            "written": self.written,
            "seconds": round(self.seconds, 2),
            "tables": [t.to_json() for t in self.tables],
            "searches": [s.to_json() for s in self.searches],
            "never_copied": NEVER,
        }


def copy(
    source: Side, target: Side, *, batch: int = BATCH, progress: Progress | None = None
) -> CopyReport:
    """Copy every table of `TABLES` from `source` into `target` and verify it (module docstring).
    CopyError when the target holds another memory, or is the source."""
    started = time.monotonic()
    if source.same_as(target):
        raise CopyError(f"{source.where} is both the source and the target of the copy")
    memory = _identity(source, target)
    report = CopyReport(source.where, target.where, memory)
    samples: dict[str, list[Sample]] = {}
    for table in TABLES:
        report.tables.append(_copy_table(source, target, table, batch, progress, samples))
    for name, found in samples.items():
        report.searches.extend(_search(source, target, name, *sample) for sample in found)
    report.seconds = time.monotonic() - started
    return report


def _named(side: Side, key: str) -> str | None:
    found: str | None = side.store.read_sync(lambda tx: tx.state.get(key))
    return found


def _holds_memory(side: Side) -> bool:
    return any(side.read(t, None, 1).rows for t in TABLES if t.memory)


def _identity(source: Side, target: Side) -> str:
    """The memory's identity (made in the source on its first copy) once the target is known to
    be empty or a copy of it; written into the target before any other row."""
    mine, theirs = _named(source, MEMORY_ID), _named(target, MEMORY_ID)
    if _holds_memory(target) and (mine is None or mine != theirs):
        raise CopyError(
            f"{target.where} holds another memory: nothing was copied. Copy into an empty"
            " store (a new data dir, a new PostgreSQL database or schema), or remove that"
            " memory first"
        )
    if mine is None:
        mine = uuid.uuid4().hex
        made = mine
        source.store.write_sync(lambda tx: tx.state.put(MEMORY_ID, made, time.time()))
    state = next(t for t in TABLES if t.name == "named_state")
    target.write(state, source.lookup(state, [(MEMORY_ID,)]))
    return mine


def _copy_table(
    source: Side,
    target: Side,
    table: Table,
    size: int,
    progress: Progress | None,
    samples: dict[str, list[Sample]],
) -> TableReport:
    if table.upkeep is not None:
        _upkeep(source, table.upkeep)
    total = source.count(table)
    report = TableReport(table.name, total, 0)
    if table.unique:  # before the writes: a row under a new key may need its old one's values
        report.deleted = _remove_extra(source, target, table, size)
    every = max(1, total // SAMPLES) if table.index is not None else 0
    seen, held = 0, False
    for batch in _batches(source, table, size):
        if every:
            _sample(table, batch, seen, every, samples.setdefault(table.name, []))
        written, holding = _sync(target, table, batch, hold=True)
        report.written += written
        held = held or holding
        seen += len(batch.rows)
        if progress is not None:
            progress(table.name, seen, total)
    if held:  # the values held back, now that every row they name is there
        for batch in _batches(source, table, size):
            _sync(target, table, batch, hold=False)
    if not table.append_only and target.count(table) != total:
        report.deleted += _remove_extra(source, target, table, size)
    target.finish(table)
    report.target = target.count(table)
    if table.index is not None:
        report.source_indexed, report.target_indexed = source.indexed(table), target.indexed(table)
    return report


def _upkeep(side: Side, work: Callable[[Any], int]) -> None:
    """The store's own work a table is behind on, a transaction at a time until none is left."""
    while side.store.write_sync(work):
        pass


def _batches(side: Side, table: Table, size: int) -> Iterator[Batch]:
    after: Row | None = None
    while True:
        batch = side.read(table, after, size)
        if not batch.rows:
            return
        yield batch
        if len(batch.rows) < size:
            return
        after = table.keyed(batch.rows[-1])


def _sync(target: Side, table: Table, batch: Batch, *, hold: bool) -> tuple[int, bool]:
    """Write the rows of `batch` the target lacks or holds otherwise; how many, and whether
    any value was held back (`hold`: an append-only row's change, a reference to the same
    table: written in a second pass)."""
    theirs = target.lookup(table, [table.keyed(r) for r in batch.rows])
    held: dict[Row, tuple[Row, Indexed]] = {}
    for i, row in enumerate(theirs.rows):
        held[table.keyed(row)] = (row, theirs.index[i] if theirs.index is not None else None)
    rows: list[Row] = []
    index: list[Indexed] = []
    holding = False
    for i, row in enumerate(batch.rows):
        entry = batch.index[i] if batch.index is not None else None
        existing = held.get(table.keyed(row))
        if existing is not None and existing[0] == row and same_index(entry, existing[1]):
            continue
        if hold and table.append_only and existing is not None:
            holding = True
            continue
        written = row
        if hold and table.late:
            written = _without_late(table, row, existing[0] if existing is not None else None)
            holding = holding or written != row
        if entry is KEPT_AS_LEXEMES and table.index is not None:
            entry = table.index.text(table.as_dict(row))
        rows.append(written)
        index.append(entry)
    if rows:
        out = Batch(rows, index if table.index is not None else None)
        target.write(table, out, update=not (hold and table.append_only))
    return len(rows), holding


def _without_late(table: Table, row: Row, existing: Row | None) -> Row:
    """`row` with its references to the same table as the target holds them (None for a new
    row): a row they name may come later in key order."""
    out = list(row)
    for name in table.late:
        i = table.position(name)
        out[i] = existing[i] if existing is not None else None
    return tuple(out)


def _remove_extra(source: Side, target: Side, table: Table, size: int) -> int:
    """Remove the target's rows whose keys the source no longer holds; how many."""
    removed = 0
    for batch in _batches(target, table, size):  # deleting behind the keys read: still in order
        keys = [table.keyed(r) for r in batch.rows]
        there = {table.keyed(r) for r in source.lookup(table, keys).rows}
        gone = [k for k in keys if k not in there]
        target.delete(table, gone)
        removed += len(gone)
    return removed


def _sample(table: Table, batch: Batch, seen: int, every: int, found: list[Sample]) -> None:
    """Search terms and a moment from every `every`-th row of the source that is indexed."""
    assert batch.index is not None and table.index is not None
    for i, entry in enumerate(batch.index):
        if (seen + i) % every or entry is None or len(found) >= SAMPLES:
            continue
        row = table.as_dict(batch.rows[i])
        text = entry if isinstance(entry, str) else table.index.text(row)
        # its longest words: the rarer, so the check tells rows apart (and scores few)
        terms = tuple(sorted(query_terms(text.split()), key=len, reverse=True)[:2])
        if terms:
            moment = float(row[table.index.time])
            found.append((terms, (moment - SEARCH_WINDOW, moment + SEARCH_WINDOW)))


def _search(
    source: Side, target: Side, table: str, terms: tuple[str, ...], window: tuple[float, float]
) -> SearchCheck:
    search = TextSearch(terms, SEARCH_LIMIT, window=window)

    def hits(tx: Any) -> list[tuple[Any, float]]:
        if table == "turns":
            return [(m.id, m.score) for m in tx.turns.search(None, search)]
        if table == "episodes":
            return [(m.episode.id, m.score) for m in tx.episodes.search(None, search)]
        return [(m.item.id, m.score) for m in tx.items.search(None, search)]

    def ids(side: Side) -> list[Any]:
        found = side.store.read_sync(hits)
        if len(found) == SEARCH_LIMIT:
            last = min(score for _, score in found)
            found = [(i, s) for i, s in found if abs(s - last) > 1e-9 * max(1.0, abs(last))]
        return [i for i, _ in found]

    return SearchCheck(table, terms, window, ids(source), ids(target))
