"""The read units behind a prompt's memory (`MemoryService.context`): the viewer's pinned
context (its profile card's bullets and the rules in force, `pinned_unit`, rendered by `pin`),
and the probe asked as the user turn is stored (`probe_unit`), which tells whether that read can
find anything at all."""

from __future__ import annotations

from collections.abc import Callable

from nahida.memory.models import MemoryItem, Pinned, ProfileEntry
from nahida.memory.procedures import guidelines, rules_in_force
from nahida.memory.profile_card import card_of, card_text
from nahida.memory.scopes import Viewer
from nahida.memory.sessions import Probe
from nahida.memory.store.base import Tx

__all__ = [
    "HISTORY",
    "MEMORY",
    "NOTHING",
    "Probe",
    "pin",
    "pinned_unit",
    "probe_unit",
]

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


# What `probe_unit` answers
NOTHING = ""  # the prompt's memory read would answer nothing (episodes apart)
HISTORY = "history"  # turns of the viewer's chats that the prompt does not show
MEMORY = "memory"  # an active item the viewer may see (its rules among them), or its card


def probe_unit(viewer: Viewer) -> Probe:
    """A probe for `Sessions.record_user_turn`: what `MemoryService.context` could find for
    `viewer` besides the turns the prompt shows (the probe's ids), episodes apart (known in the
    bot: `Episodes.in_any`). Each check is the one the read itself makes first
    (`cascade._leaving_out_the_empty`, `rules_in_force`, `pinned_unit`), so NOTHING means the
    read would answer nothing: a young chat whose history the window holds, a speaker with no
    memory yet. The store's memo answers all three."""
    chats = viewer.turn_chats()
    visibility = viewer.visibility()
    person = card_of(viewer)

    def probe(tx: Tx, shown: frozenset[int]) -> str:
        if tx.turns.any_besides(chats, shown, None):
            return HISTORY
        if tx.items.any_active(visibility) or (person is not None and tx.profiles.of_user(*person)):
            return MEMORY
        return NOTHING

    return probe


def pin(raw: Raw, profile_tokens: int) -> Pinned:
    entries, rules = raw
    text = guidelines(rules)
    shown = [rule for rule in rules if text is not None and f"[{rule.id}]" in text]
    return Pinned(card_text(entries, profile_tokens), text, any(map(sets_language, shown)))


def sets_language(rule: MemoryItem) -> bool:
    """Whether a rule says which language to answer in, or which not to."""
    slot = rule.slot or ""
    return slot == "reply:language" or slot.startswith("reply:avoid:")
