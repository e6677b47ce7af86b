"""Memory items with their index text, the audit trail and candidates, in memory."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

from nahida.memory.core.models import Candidate, MemoryEvent, MemoryItem
from nahida.memory.core.scopes import Visibility, scope_family
from nahida.memory.store.reference import text
from nahida.memory.store.reference.data import (
    CANDIDATE_STATUSES,
    ITEM_STATUSES,
    SENSITIVITIES,
    CandidateRow,
    Data,
    ItemRow,
    check,
)
from nahida.memory.store.values import (
    CandidateNote,
    ItemFilter,
    ItemMatch,
    Slice,
    Span,
    SpanCount,
    Tally,
    TextSearch,
)

_INDEXED = ("title", "content", "scope", "sensitivity", "status")


def _checked(item: MemoryItem) -> MemoryItem:
    check("status", item.status, ITEM_STATUSES)
    check("sensitivity", item.sensitivity, SENSITIVITIES)
    return item


def sees(visibility: Visibility | None, item: MemoryItem) -> bool:
    return visibility is None or visibility.sees(item.scope, item.sensitivity)


class ItemTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def get(self, item_id: str) -> MemoryItem | None:
        row = self.data.items.get(item_id)
        return row.item if row else None

    def add(self, item: MemoryItem, tokens: str) -> bool:
        if item.id in self.data.items:
            return False
        _checked(item)
        body = tokens if item.status == "active" else None
        self.data.items[item.id] = ItemRow(self.data.next("item"), item, body)
        return True

    def change(self, before: MemoryItem, after: MemoryItem, tokens: str | None) -> None:
        row = self.data.items.get(before.id)
        if row is None or before == after:
            return
        _checked(after)
        text_changed = before.title != after.title or before.content != after.content
        body = row.body
        if any(getattr(before, n) != getattr(after, n) for n in _INDEXED):
            if after.status != "active":
                body = None
            else:
                body = tokens if tokens is not None else (None if text_changed else row.body)
                if body is None:
                    raise ValueError(f"re-indexing {after.id} needs the tokens of its new text")
        embed_hash = None if text_changed else row.embed_hash  # a new text needs a new vector
        after = dataclasses.replace(after, id=before.id)
        self.data.items[before.id] = ItemRow(row.seq, after, body, embed_hash)

    def touch(self, ids: Sequence[str], at: float) -> None:
        for item_id in ids:
            row = self.data.items.get(item_id)
            if row is not None:
                item = row.item
                changed = dataclasses.replace(
                    item, last_accessed=at, access_count=item.access_count + 1
                )
                self.data.items[item_id] = dataclasses.replace(row, item=changed)

    def decay(self, before: float, step: float, floor: float, keep: Sequence[str]) -> int:
        lowered = 0
        for item_id, row in list(self.data.items.items()):
            item = row.item
            used = item.last_accessed if item.last_accessed is not None else item.updated_at
            if (
                item.status == "active"
                and item.confidence > floor
                and used < before
                and item.source not in keep
            ):
                changed = dataclasses.replace(item, confidence=max(floor, item.confidence - step))
                self.data.items[item_id] = dataclasses.replace(row, item=changed)
                lowered += 1
        return lowered

    def listed(
        self, visibility: Visibility | None, *, kind: str | None, status: str | None, limit: int
    ) -> list[MemoryItem]:
        found = [
            r.item
            for r in self.data.items.values()
            if sees(visibility, r.item)
            and status in (None, r.item.status)
            and kind in (None, r.item.kind)
        ]
        found.sort(key=lambda i: i.id)
        found.sort(key=lambda i: i.updated_at, reverse=True)
        return found[:limit]

    def visible(self, item_id: str, visibility: Visibility) -> MemoryItem | None:
        item = self.get(item_id)
        return item if item is not None and sees(visibility, item) else None

    def in_slot(self, scope: str, slot: str) -> list[MemoryItem]:
        return [
            r.item
            for r in self.data.items.values()
            if (r.item.scope, r.item.slot, r.item.status) == (scope, slot, "active")
        ]

    def replaced_by(self, item_id: str) -> str | None:
        for row in self.data.items.values():
            if row.item.supersedes == item_id:
                return row.item.id
        return None

    def exported(self, scopes: Sequence[str] | None) -> list[MemoryItem]:
        found = [
            r.item for r in self.data.items.values() if scopes is None or r.item.scope in scopes
        ]
        return sorted(found, key=lambda i: (i.created_at, i.id))

    def search(self, visibility: Visibility | None, search: TextSearch) -> list[ItemMatch]:
        found = text.ranked(
            search.terms,
            self.data.indexed_items(),
            lambda r: sees(visibility, r.item),
            lambda r: r.item.created_at,
            search,
        )
        return [ItemMatch(r.item, score, r.body or "") for r, score in found]

    def any_active(self, visibility: Visibility, kind: str | None = None) -> bool:
        return any(
            r.item.status == "active" and sees(visibility, r.item) and kind in (None, r.item.kind)
            for r in self.data.items.values()
        )

    def containing(
        self, visibility: Visibility | None, needles: Sequence[str], search: TextSearch
    ) -> list[ItemMatch]:
        found = [
            r
            for r in self.data.items.values()
            if r.body is not None
            and sees(visibility, r.item)
            and text.in_time(r.item.created_at, search)
            and all(
                text.contains_all(r.item.content, [n]) or text.contains_all(r.item.title, [n])
                for n in needles
            )
        ]
        found.sort(key=lambda r: r.item.created_at, reverse=True)
        return [ItemMatch(r.item, 1.0, r.body or "") for r in found[: search.limit]]

    def purge(self, item_id: str) -> bool:
        data = self.data
        row = data.items.pop(item_id, None)
        if row is None:
            return False
        for other in list(data.items.values()):
            if other.item.supersedes == item_id:
                unlinked = dataclasses.replace(other.item, supersedes=None)
                data.items[other.item.id] = dataclasses.replace(other, item=unlinked)
        if row.embed_hash and not _named(data, row.embed_hash):
            for key in [k for k in data.vectors if k[1] == row.embed_hash]:
                del data.vectors[key]
        return True

    def tally(self) -> list[Tally]:
        counted = Counter(
            (scope_family(r.item.scope), r.item.kind, r.item.status)
            for r in self.data.items.values()
        )
        return [Tally(*key, total) for key, total in sorted(counted.items())]

    def added(self, spans: Sequence[Span]) -> list[SpanCount]:
        counted = Counter(
            (n, r.item.source)
            for n, (start, end) in enumerate(spans)
            for r in self.data.items.values()
            if start <= r.item.created_at < end
        )
        return [SpanCount(*key, total) for key, total in sorted(counted.items())]

    def page(self, where: ItemFilter, offset: int, limit: int) -> Slice[MemoryItem]:
        found = [r.item for r in self.data.items.values() if where.holds(r.item)]
        found.sort(key=lambda i: i.id)
        found.sort(key=lambda i: i.updated_at, reverse=True)
        return Slice(found[offset : offset + limit], len(found))


def _named(data: Data, embed_hash: str) -> bool:
    """Whether any row's text has this hash."""
    return (
        any(r.embed_hash == embed_hash for r in data.turns.values())
        or any(r.embed_hash == embed_hash for r in data.items.values())
        or any(r.embed_hash == embed_hash for r in data.episodes.values())
    )


class EventTable:
    """Append-only: events are added, never changed or deleted."""

    def __init__(self, data: Data) -> None:
        self.data = data

    def add(
        self,
        item_id: str,
        action: str,
        actor: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        reason: str | None,
        at: float,
    ) -> None:
        event_id = self.data.next("event")
        self.data.events.append(
            MemoryEvent(event_id, item_id, action, actor, before, after, reason, at)
        )

    def of_item(self, item_id: str) -> list[MemoryEvent]:
        return [e for e in self.data.events if e.item_id == item_id]

    def purge(self, item_id: str) -> int:
        events = self.data.events
        if not any(e.item_id == item_id and e.action == "purged" for e in events):
            raise ValueError(f"{item_id} has no purged event: its trail keeps its text")
        blanked = 0
        for n, e in enumerate(events):
            held = (e.before, e.after, e.reason) != (None, None, None)
            if e.item_id == item_id and e.action != "purged" and held:
                events[n] = dataclasses.replace(e, before=None, after=None, reason=None)
                blanked += 1
        return blanked


class CandidateTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def add(
        self,
        candidate_id: str,
        candidate: Candidate,
        status: str,
        item_id: str | None,
        reason: str,
        at: float,
    ) -> bool:
        if candidate_id in self.data.candidates:
            return False
        check("status", status, CANDIDATE_STATUSES)
        decided = None if status == "pending" else at
        self.data.candidates[candidate_id] = CandidateRow(
            candidate_id, candidate, status, item_id, reason, at, decided
        )
        return True

    def pending(
        self, scopes: Sequence[str] | None, limit: int
    ) -> list[tuple[str, Candidate, float]]:
        found = [
            r
            for r in self.data.candidates.values()
            if r.status == "pending" and (scopes is None or r.candidate.scope in scopes)
        ]
        found.sort(key=lambda r: (r.created_at, r.id))
        return [(r.id, r.candidate, r.created_at) for r in found[:limit]]

    def pending_count(self) -> int:
        return sum(r.status == "pending" for r in self.data.candidates.values())

    def get_pending(self, candidate_id: str) -> Candidate | None:
        row = self.data.candidates.get(candidate_id)
        return row.candidate if row is not None and row.status == "pending" else None

    def decide(
        self, candidate_id: str, status: str, item_id: str | None, actor: str, at: float
    ) -> None:
        check("status", status, CANDIDATE_STATUSES)
        row = self.data.candidates.get(candidate_id)
        if row is not None:
            self.data.candidates[candidate_id] = dataclasses.replace(
                row, status=status, item_id=item_id, decided_at=at, decided_by=actor
            )

    def proposed(self, after: tuple[float, str], before: float, limit: int) -> list[CandidateNote]:
        found = [
            r
            for r in self.data.candidates.values()
            if (r.created_at, r.id) > after and r.created_at < before
        ]
        found.sort(key=lambda r: (r.created_at, r.id))
        return [_note(r) for r in found[:limit]]

    def cited_turns(
        self, source: str, chat: str, turn_ids: Sequence[int], since: float
    ) -> set[int]:
        wanted = set(turn_ids)
        return {
            e.turn_id
            for r in self.data.candidates.values()
            if r.created_at >= since and r.candidate.source == source
            for e in r.candidate.evidence
            if e.chat == chat and e.turn_id in wanted
        }

    def decided(self, after: tuple[float, str], before: float, limit: int) -> list[CandidateNote]:
        found = [
            r
            for r in self.data.candidates.values()
            if r.decided_at is not None
            and r.decided_at > r.created_at
            and (r.decided_at, r.id) > after
            and r.decided_at < before
        ]
        found.sort(key=lambda r: (r.decided_at or 0.0, r.id))
        return [_note(r) for r in found[:limit]]

    def purge(self, item_id: str, texts: Collection[str]) -> int:
        said = {t for t in texts if t}

        def carried(row: CandidateRow) -> bool:
            if row.item_id == item_id:
                return True
            c = row.candidate
            return row.item_id is None and (
                c.target == item_id or c.content in said or c.title in said
            )

        gone = [r.id for r in self.data.candidates.values() if carried(r)]
        for candidate_id in gone:
            del self.data.candidates[candidate_id]
        return len(gone)


def _note(row: CandidateRow) -> CandidateNote:
    return CandidateNote(
        row.id,
        row.candidate,
        row.status,
        row.item_id,
        row.reason or "",
        row.created_at,
        row.decided_at,
        row.decided_by,
    )
