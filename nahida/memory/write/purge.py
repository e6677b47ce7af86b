"""Purging an item (docs/memory.md): its words leave every place memory keeps them, for good.

Forgetting archives an item: it stays, traceable, and can be restored. A purge is for words that
must go (a person asked for it, a secret slipped through); it cannot be undone, and only a bot
admin may ask for it (`access.may_purge`). One unit of work, one transaction:

- the turns the item was learned from are kept out of recall, as forgetting keeps them
  (`write.hide_evidence`; the summaries and episodes of their sessions, which may tell it, are
  dropped); the history itself stays: deleting a session is an action of its own;
- the candidates that carried its words are deleted, and the proposals of dream runs that did
  are blanked (`CandidateRows.purge`, `DreamRows.purge`);
- a last `purged` event, carrying no text, records who purged it and when; the item's earlier
  events keep their action, actor and time, their before, after and reason blanked
  (`EventRows.purge`, which the SQLite trigger allows only after that record);
- the item row, its index entry and its vector go (`ItemRows.purge`).

The SQLite store overwrites deleted content with zeros and rebuilds the items' index, so the
words leave the database file as well, once SQLite has checkpointed its write-ahead log.

What stays: the earlier versions the item superseded (items of their own, named in
`Purged.earlier`: purge each as well), the turns of the history, and what was written outside the
database before (DREAMS.md, the daily notes, backups). MEMORY.md drops the bullet, and the
record of what it showed, at its next sync.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nahida.memory.core.models import MemoryEvent, MemoryItem
from nahida.memory.store.base import Tx
from nahida.memory.write import write


@dataclass(frozen=True, slots=True)
class Purged:
    """What a purge did."""

    item_id: str
    events: int  # audit events of the item whose text was blanked
    candidates: int  # candidates deleted
    runs: int  # dream runs whose report was blanked
    hidden: int  # turns it was learned from, kept out of recall now
    earlier: tuple[str, ...] = ()  # earlier versions it superseded, still kept (newest first)


def texts(item: MemoryItem, events: Iterable[MemoryEvent]) -> set[str]:
    """Every title and content the item held, as its audit trail shows them."""
    said = {item.content, item.title}
    for event in events:
        for snapshot in (event.before, event.after):
            if snapshot:
                said.update(str(snapshot.get(k) or "") for k in ("content", "title"))
    return said - {""}


def earlier(tx: Tx, item: MemoryItem) -> tuple[str, ...]:
    """The items `item` superseded, one before another, that are still there."""
    found: list[str] = []
    older = item.supersedes
    while older is not None and older not in found and older != item.id:
        before = tx.items.get(older)
        if before is None:
            break
        found.append(older)
        older = before.supersedes
    return tuple(found)


def purge(tx: Tx, item_id: str, actor: str, reason: str, at: float) -> Purged:
    """Purge the item (see the module docstring). Raises LookupError when there is none."""
    item = tx.items.get(item_id)
    if item is None:
        raise LookupError(item_id)
    said = texts(item, tx.events.of_item(item_id))
    versions = earlier(tx, item)
    hidden = write.hide_evidence(tx, item)
    candidates = tx.candidates.purge(item_id, said)
    runs = tx.dreams.purge(item_id, said)
    tx.events.add(item_id, "purged", actor, None, None, reason, at)
    blanked = tx.events.purge(item_id)
    tx.items.purge(item_id)
    return Purged(item_id, blanked, candidates, runs, hidden, versions)
