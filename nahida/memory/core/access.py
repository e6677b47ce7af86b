"""Who may change what (DESIGN §4): the actor of a change and the rules for forgetting, review
and behavioural rules.

Reading is governed by `scopes.Viewer`; these rules decide changes. An item may be forgotten by
its subject or speaker, by a group's owner/admins for that group's items, and by bot admins (the
CLI and the console act as one). Pending candidates are reviewed by bot admins, and by a group's
owner/admins for that group; a chat's dreaming is steered by the same people. Correcting memory
by hand (an item's words, kind, scope or sensitivity, restoring it, a profile section) is for bot
admins, and so is a purge, which nothing else may do. A behavioural rule for everyone in a
group is set by its owner/admins and by bot admins only (`may_set_chat_rules`, the one check
every path that stores a rule asks: a chat message, `/memory remember`, the model's tools, a
plugin); anyone else's is a rule for answering them (docs/permissions.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from nahida.envelope import ChatKey, Envelope, Role
from nahida.memory.core.models import MemoryItem
from nahida.memory.core.scopes import chat_scope


@dataclass(frozen=True, slots=True)
class Actor:
    """Who asks for a change: a chat member (with their role there), a bot admin, or the CLI."""

    label: str  # a UserKey, or "cli" / "plugin:<name>" / "system"
    chat: ChatKey | None = None  # the group their role is in (None: no group role)
    role: Role = Role.MEMBER
    is_bot_admin: bool = False
    name: str = ""  # how they are called where they speak (memory lines name them so)

    @classmethod
    def cli(cls) -> Actor:
        return cls("cli", is_bot_admin=True)

    @classmethod
    def console(cls) -> Actor:
        """Whoever logged in to the memory console: a bot admin, named in the audit trail."""
        return cls("console", is_bot_admin=True)

    @classmethod
    def speaking(cls, envelope: Envelope, is_bot_admin: bool) -> Actor:
        """The sender of a message: their role counts only in a group, for that group."""
        chat = envelope.chat
        sender = envelope.sender
        group = chat if chat.is_group else None
        return cls(str(sender.user), group, sender.role, is_bot_admin, sender.name)

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


def may_set_chat_rules(actor: Actor | None, chat: ChatKey) -> bool:
    """Whether `actor` may set a behavioural rule for everyone in `chat`: the group's owner or
    admins (a role counts in its own group only) and bot admins. Nobody without an actor, and
    nobody in a private chat, where a rule is the person's own."""
    if actor is None or not chat.is_group:
        return False
    return actor.is_bot_admin or (actor.chat == chat and actor.is_chat_admin)


def review_scopes(actor: Actor) -> list[str] | None:
    """Pending candidates an actor may review: all (None) for bot admins, else their chat's."""
    if actor.is_bot_admin:
        return None
    if actor.chat is not None and actor.is_chat_admin:
        return [chat_scope(actor.chat)]
    return []


def may_correct(actor: Actor) -> bool:
    """Whether `actor` may correct memory by hand: edit an item's words, change its kind, scope
    or sensitivity, restore it, rewrite a profile section. Bot admins only."""
    return actor.is_bot_admin


def may_purge(actor: Actor) -> bool:
    """Whether `actor` may purge an item, which cannot be undone: bot admins only."""
    return actor.is_bot_admin


def may_steer_dreaming(actor: Actor, chat: ChatKey) -> bool:
    """Whether `actor` may pause, resume or run the dreaming of `chat`: bot admins, and a
    group's owner/admins for that group."""
    if actor.is_bot_admin:
        return True
    return chat.is_group and actor.chat == chat and actor.is_chat_admin
