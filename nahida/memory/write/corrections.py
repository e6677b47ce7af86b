"""An admin's corrections of long-term items (DESIGN §15): what the console and the CLI do by
hand, each audited with the admin as actor, as a CLI or MEMORY.md edit is.

- `edited`: the candidate an admin's new words for an item make, as MEMORY.md makes one of an
  edited bullet (`superseding`): a `human_edit` that supersedes the item (kept, linked), in its
  scope and sensitivity, with its slot and title, read for its kind as the file's edit is. What
  people edit is never rewritten or archived by a model or a rule (`write.objection`).
- `change`: an item's kind, scope or sensitivity in place (`update`), its index in step.
- `restore`: an archived or superseded item active again (`restore`), unless a newer item that
  replaced it is active or an active item holds the same slot.

The units (`tx` first) run in one transaction; each raises LookupError for an item that is not
there and ValueError, saying why, for a change that may not be made.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nahida.memory.core.models import Candidate, Evidence, MemoryItem
from nahida.memory.store.base import Tx
from nahida.memory.write import candidates, write

RESTORABLE = ("archived", "superseded")


def superseding(candidate: Candidate, old: MemoryItem) -> Candidate:
    """An edit of `old` as the candidate that supersedes it, keeping its slot and its title (a
    task's day)."""
    return replace(candidate, op="supersede", target=old.id, slot=old.slot, title=old.title)


def edited(item: MemoryItem, text: str, ref: str, now: float, note: str) -> Candidate:
    """An admin's new words for `item` (`ref`: who, as the evidence names them)."""
    made = candidates.admin_edit(
        text, kind=item.kind, scope=item.scope, sensitivity=item.sensitivity
    )
    made = replace(made, evidence=(Evidence(ref=ref, time=now),), valid_from=now, note=note)
    return superseding(made, item)


def _get(tx: Tx, item_id: str) -> MemoryItem:
    item = tx.items.get(item_id)
    if item is None:
        raise LookupError(item_id)
    return item


def _holder(tx: Tx, item: MemoryItem, scope: str) -> MemoryItem | None:
    """Another active item of `scope` that holds a value for the item's slot about the same
    person: the item would be a second value beside it."""
    if not item.slot:
        return None
    for other in tx.items.in_slot(scope, item.slot):
        if other.id != item.id and other.subject_user == item.subject_user:
            return other
    return None


def change(
    tx: Tx, item_id: str, fields: dict[str, str], actor: str, reason: str | None
) -> MemoryItem:
    """Change the item's kind, scope or sensitivity (`fields`, checked by the caller) in place;
    moved into a person's scope, the item is about that person. Nothing changes, and no event
    is written, when the fields are as they were."""
    item = _get(tx, item_id)
    changes: dict[str, Any] = {k: v for k, v in fields.items() if getattr(item, k) != v}
    if not changes:
        return item
    scope = changes.get("scope")
    if scope is not None and scope.startswith("user:"):
        changes["subject_user"] = scope[len("user:") :]
    moved = replace(item, **changes)
    if scope is not None and item.status == "active" and (held := _holder(tx, moved, scope)):
        raise ValueError(
            f"{held.id} holds the same slot ({item.slot}) in {scope}: edit or forget it first"
        )
    said = "; ".join(f"{k} {getattr(item, k)} → {v}" for k, v in fields.items() if k in changes)
    return write.update_item(tx, item, actor, "update", reason or said, **changes)


def restore(
    tx: Tx, item_id: str, indexed: tuple[str, str, str], actor: str, reason: str | None
) -> MemoryItem:
    """Make an archived or superseded item active again (`indexed`: its title and content as
    read before, and `write.item_index` of them). Refused while an item that replaced it is
    still active, or an active item holds the same slot: that one is the memory now, to edit
    or forget first."""
    item = _get(tx, item_id)
    if item.status == "active":
        raise ValueError(f"{item_id} is active already")
    if item.status not in RESTORABLE:
        raise ValueError(f"{item_id} is {item.status}: only archived or superseded items return")
    newer, seen = tx.items.replaced_by(item_id), {item_id}
    while newer is not None and newer not in seen:
        successor = tx.items.get(newer)
        if successor is not None and successor.status == "active":
            raise ValueError(
                f"{newer} replaced {item_id} and is active: edit it, or forget it first"
            )
        seen.add(newer)
        newer = tx.items.replaced_by(newer)
    held = _holder(tx, item, item.scope)
    if held is not None:
        raise ValueError(
            f"{held.id} holds the same slot ({item.slot}) and is active: forget it first"
        )
    title, content, index = indexed
    if (item.title, item.content) != (title, content):
        raise ValueError(f"{item_id} changed meanwhile: try again")
    # a supersede ended its validity when it was replaced; active again, it holds again
    until = None if item.status == "superseded" else item.valid_until
    return write.update_item(
        tx,
        item,
        actor,
        "restore",
        reason or f"restored from {item.status}",
        index=index,
        status="active",
        valid_until=until,
    )
