"""Reviewing pending candidates (DESIGN §6): what a reviewer is shown, and what their edit makes.

Everything that waits for review is a candidate: what the commit mode held back, what a model
inferred (compaction's cold facts, a behavioural rule), and a dream's ops on existing items
(`update`, `supersede`, `archive` of `target`). A reviewer sees each with the item it would
change as that item is now (`Pending.target`), so that a page can show the change as a diff. An
accepted candidate goes through the write path's commit (`write.decide`); one whose words the
reviewer edited first is committed as theirs (`edited`: `human_edit`, which no model or rule
rewrites later).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from nahida.memory.core.models import Candidate, Evidence, MemoryItem
from nahida.memory.store.base import Tx

EDITED_CONFIDENCE = 0.95  # a reviewer's own words, as an admin's edit is held


@dataclass(frozen=True, slots=True)
class Pending:
    """A candidate waiting for review (`id`, created at `created`), with the item it would
    change as that item is now: what a dream's op acts on, or the active item whose slot a new
    value would take over; None for a memory of its own."""

    id: str
    candidate: Candidate
    created: float
    target: MemoryItem | None = None

    @property
    def before(self) -> str | None:
        """The words the change would replace (the target's content), or None."""
        return self.target.content if self.target is not None else None


def target_of(tx: Tx, candidate: Candidate) -> MemoryItem | None:
    """The item a candidate would change, as it is now (see `Pending`)."""
    if candidate.target:
        return tx.items.get(candidate.target)
    if candidate.slot:
        for item in tx.items.in_slot(candidate.scope, candidate.slot):
            if item.subject_user == candidate.subject_user:
                return item
    return None


def waiting(tx: Tx, scopes: list[str] | None, limit: int) -> list[Pending]:
    """A unit: the pending candidates of `scopes` (all: None), oldest first, with targets."""
    found = tx.candidates.pending(scopes, limit)
    return [Pending(i, c, at, target_of(tx, c)) for i, c, at in found]


def edited(candidate: Candidate, text: str, ref: str, now: float) -> Candidate:
    """The candidate with a reviewer's words in place of its own: theirs now (`human_edit`),
    its evidence kept and theirs (`ref`) added. Raises ValueError for an op that proposes no
    words (an archive) and for an empty text."""
    if candidate.op == "archive":
        raise ValueError("an archive proposes no words to edit: accept or reject it")
    if not text.strip():
        raise ValueError("the text is empty: reject the candidate instead")
    said = "words edited in review"
    return replace(
        candidate,
        content=text.strip(),
        source="human_edit",
        confidence=max(candidate.confidence, EDITED_CONFIDENCE),
        evidence=(*candidate.evidence, Evidence(ref=ref, time=now)),
        note=f"{candidate.note}; {said}" if candidate.note else said,
    )
