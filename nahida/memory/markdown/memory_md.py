"""`workspace/MEMORY.md` (DESIGN §9): the generated block of the bot's active public global
items, grouped by kind (`### fact`, …), one bullet each with its id; at most `max_bullets` (the
most recently changed), the rest counted in a comment. Edits sync back as `human_edit` changes,
with the file and line as evidence:

- a bullet's text edited → a new item superseding it (the old one kept, linked);
- a bullet moved under another kind's heading → the item's kind changes;
- a bullet deleted → the item is archived;
- a bullet added without an id → a new global item (public, confidence 0.95).

The prompt never loads the file: global items reach a prompt through recall, within
`memory.budget_tokens`, like every other memory.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from nahida.memory.core.kinds import DEFAULT, HEADINGS
from nahida.memory.core.models import Candidate, Evidence, MemoryItem
from nahida.memory.core.scopes import GLOBAL, Visibility
from nahida.memory.markdown.block import Bullet, Changes, flat
from nahida.memory.markdown.block import render as render_block
from nahida.memory.store.base import Tx
from nahida.memory.write import candidates, corrections, write

PATH = "MEMORY.md"
BEGIN = "<!-- nahida:memory:begin -->"
END = "<!-- nahida:memory:end -->"
GROUPS = HEADINGS
ACTOR = "human_edit:MEMORY.md"
ALL_GLOBAL = 100_000
HEADER = """# Memory

The bot's workspace knowledge: what every chat may be told. The block below is generated from
memory; edit a bullet's text, move it under another heading, delete it, or add a bullet without
an id, and the bot takes the change over within seconds (`nahida memory sync` does it at once).
Deleting more than three bullets at once waits for `nahida memory sync --yes`. Everything outside
the markers is yours and is never changed.

"""


@dataclass
class MemoryEdits:
    """An admin's changes of MEMORY.md with the write path's tokens, made before the
    transaction."""

    edited: list[tuple[str, write.Prepared]] = field(default_factory=list)  # (old id, new)
    moved: list[tuple[str, str]] = field(default_factory=list)  # (id, new kind)
    deleted: list[str] = field(default_factory=list)
    added: list[write.Prepared] = field(default_factory=list)


class MemoryFile:
    """The projection of MEMORY.md (for `sync.MarkdownSync`)."""

    path = PATH
    begin = BEGIN
    end = END
    groups = GROUPS
    header = HEADER

    def __init__(self, max_bullets: int) -> None:
        self.max_bullets = max_bullets

    def shown(self, tx: Tx) -> tuple[str, dict[str, dict[str, str]]]:
        """The block's body and its snapshot."""
        found = [i for i in _global(tx) if i.sensitivity == "public"]
        kept = found[: self.max_bullets]
        kept.sort(key=lambda i: (GROUPS.index(_group(i)), i.created_at, i.id))
        groups = [(kind, [(i.id, i.content) for i in kept if _group(i) == kind]) for kind in GROUPS]
        left = len(found) - len(kept)
        note = f"{left} more not shown (memory.markdown.max_bullets)" if left else ""
        snapshot = {i.id: {"group": _group(i), "text": flat(i.content)} for i in kept}
        return render_block(groups, note), snapshot

    def known(self, tx: Tx, ids: set[str]) -> dict[str, dict[str, str]]:
        """Of `ids`, the active public global items (bullets the file names, not in the
        snapshot)."""
        found: dict[str, dict[str, str]] = {}
        for item_id in ids:
            item = tx.items.get(item_id)
            if item is not None and _ours(item) and item.status == "active":
                found[item_id] = {"group": _group(item), "text": flat(item.content)}
        return found

    def prepare(self, changes: Changes) -> MemoryEdits:
        """Tokens for every new text (a worker thread); secrets were refused before."""
        now = time.time()
        edits = MemoryEdits(moved=[(b.id or "", b.group) for b, _ in changes.moved])
        edits.deleted = list(changes.deleted)
        for bullet, _ in changes.edited:
            edits.edited.append((bullet.id or "", write.tokens_of(_edit(bullet, now))))
        edits.added = [write.tokens_of(_edit(bullet, now)) for bullet in changes.added]
        return edits

    def apply(self, tx: Tx, edits: MemoryEdits) -> dict[str, int]:
        """The admin's changes as audited item changes; counts by what was done."""
        counts = {"edited": 0, "moved": 0, "archived": 0, "added": 0, "merged": 0}
        for old_id, new in edits.edited:
            old = tx.items.get(old_id)
            if old is not None and old.status == "active":
                superseding = corrections.superseding(new.candidate, old)  # keeps its title
                index = write.item_index(superseding.title, superseding.content)
                new = replace(new, candidate=superseding, index=index)
            # else changed in the database meanwhile: the edit is kept as a memory of its own
            write.propose(tx, new, "auto_safe", ACTOR)  # human_edit: committed in any mode
            counts["edited"] += 1
        for item_id, kind in edits.moved:
            item = tx.items.get(item_id)
            if item is not None and item.status == "active" and item.kind != kind:
                reason = f"moved under {kind} in {PATH}"
                write.update_item(tx, item, ACTOR, "update", reason, kind=kind)
                counts["moved"] += 1
        for item_id in edits.deleted:
            item = tx.items.get(item_id)
            if item is not None and item.status == "active":
                reason = f"deleted from {PATH}"
                write.update_item(tx, item, ACTOR, "archive", reason, status="archived")
                counts["archived"] += 1
        for new in edits.added:
            result = write.propose(tx, new, "auto_safe", ACTOR)
            counts["merged" if result.outcome == "merged" else "added"] += 1
        return counts


def _edit(bullet: Bullet, now: float) -> Candidate:
    """A bullet as an admin's edit, with its file and line as evidence."""
    made = candidates.admin_edit(bullet.text, kind=bullet.group, scope=GLOBAL, sensitivity="public")
    return replace(
        made,
        evidence=(Evidence(ref=f"{PATH}:{bullet.line}", time=now),),
        valid_from=now,
        note=f"edited in {PATH}, line {bullet.line}",
    )


def _global(tx: Tx) -> list[MemoryItem]:
    return tx.items.listed(Visibility((GLOBAL,)), kind=None, status="active", limit=ALL_GLOBAL)


def _ours(item: MemoryItem) -> bool:
    return item.scope == GLOBAL and item.sensitivity == "public"


def _group(item: MemoryItem) -> str:
    return item.kind if item.kind in GROUPS else DEFAULT
