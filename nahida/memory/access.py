"""Who may change what (DESIGN §4): the actor of a change and the rules for forgetting and review.

Reading is governed by `scopes.Viewer`; these rules decide changes. An item may be forgotten by
its subject or speaker, by a group's owner/admins for that group's items, and by bot admins (the
CLI acts as one). Pending candidates are reviewed by bot admins, and by a group's owner/admins
for that group.
"""

from __future__ import annotations

from dataclasses import dataclass

from nahida.envelope import ChatKey, Role
from nahida.memory.models import MemoryItem
from nahida.memory.scopes import chat_scope


@dataclass(frozen=True, slots=True)
class Actor:
    """Who asks for a change: a chat member (with their role there), a bot admin, or the CLI."""

    label: str  # a UserKey, or "cli" / "plugin:<name>" / "system"
    chat: ChatKey | None = None
    role: Role = Role.MEMBER
    is_bot_admin: bool = False

    @classmethod
    def cli(cls) -> Actor:
        return cls("cli", is_bot_admin=True)

    @property
    def is_chat_admin(self) -> bool:
        return self.role in (Role.OWNER, Role.ADMIN)


def can_forget(item: MemoryItem, actor: Actor) -> bool:
    """Its subject or speaker; a group's owner/admins for its chat-scope items; bot admins."""
    if actor.is_bot_admin:
        return True
    if actor.label in (item.subject_user, item.speaker_user):
        return True
    if actor.chat is not None and actor.is_chat_admin:
        return item.scope == chat_scope(actor.chat)
    return False


def review_scopes(actor: Actor) -> list[str] | None:
    """Pending candidates an actor may review: all (None) for bot admins, else their chat's."""
    if actor.is_bot_admin:
        return None
    if actor.chat is not None and actor.is_chat_admin:
        return [chat_scope(actor.chat)]
    return []
