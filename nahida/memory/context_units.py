"""The read unit behind a prompt's pinned memory (`MemoryService.context`): the viewer's
profile card's bullets and the rules in force (`pinned_unit`, rendered by `pin`)."""

from __future__ import annotations

from collections.abc import Callable

from nahida.memory.core.models import MemoryItem, Pinned, ProfileEntry
from nahida.memory.core.scopes import Viewer
from nahida.memory.procedures import guidelines, rules_in_force
from nahida.memory.profile_card import card_of, card_text
from nahida.memory.store.base import Tx

__all__ = ["pin", "pinned_unit"]

Raw = tuple[list[ProfileEntry], list[MemoryItem]]


def pinned_unit(viewer: Viewer) -> Callable[[Tx], Raw]:
    """The read unit of a viewer's pinned context: the profile bullets and the rules in force
    it sees (rendered after the read, off the database thread: `pin`)."""
    person = card_of(viewer)
    visibility = viewer.visibility()

    def run(tx: Tx) -> Raw:
        entries: list[ProfileEntry] = tx.profiles.of_user(*person) if person is not None else []
        return entries, rules_in_force(tx, visibility)

    return run


def pin(raw: Raw, profile_tokens: int) -> Pinned:
    entries, rules = raw
    text = guidelines(rules)
    shown = [rule for rule in rules if text is not None and f"[{rule.id}]" in text]
    return Pinned(card_text(entries, profile_tokens), text, any(map(sets_language, shown)))


def sets_language(rule: MemoryItem) -> bool:
    """Whether a rule says which language to answer in, or which not to."""
    slot = rule.slot or ""
    return slot == "reply:language" or slot.startswith("reply:avoid:")
