"""MemoryService: the one facade for reading and writing memory (DESIGN §1).

The runner, chat commands, CLI, scheduler jobs and plugins all go through it; nothing else writes
memory tables. Every method runs its SQLite work on the database thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from nahida.db import Connection, Database, transaction
from nahida.envelope import ChatKey, Role, UserKey
from nahida.memory import recall, store, write
from nahida.memory.models import (
    Candidate,
    CommitMode,
    Evidence,
    MemoryEvent,
    MemoryItem,
    WriteResult,
)
from nahida.memory.pack import pack
from nahida.memory.recall import Hit, Query
from nahida.memory.rules import statements
from nahida.memory.scopes import Viewer, chat_scope, user_scope


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


class MemoryPermissionError(PermissionError):
    pass


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


def default_scope(chat: ChatKey, user: UserKey) -> tuple[str, str]:
    """Where an explicit `remember` goes: private chat → the person (private), group → the chat."""
    if chat.is_group:
        return chat_scope(chat), "public"
    return user_scope(user), "private"


@dataclass(frozen=True, slots=True)
class Explanation:
    item: MemoryItem
    events: list[MemoryEvent]
    replaced_by: str | None


class MemoryService:
    def __init__(
        self, db: Database, *, mode: CommitMode = "auto_safe", budget_tokens: int = 1500
    ) -> None:
        self.db = db
        self.mode = mode
        self.budget_tokens = budget_tokens

    # writes ---------------------------------------------------------------------------------

    async def propose(self, candidate: Candidate, actor: str) -> WriteResult:
        """Any write: filter, candidate, commit mode. Raises `write.SecretRefused` (explicit)."""
        return await self.db.run(write.propose, candidate, self.mode, actor)

    async def remember(
        self,
        text: str,
        *,
        chat: ChatKey,
        user: UserKey,
        message_id: str | None = None,
        kind: str = "fact",
    ) -> WriteResult:
        scope, sensitivity = default_scope(chat, user)
        read = statements(text)  # the same reading as extraction, so slots supersede alike
        if len(read) == 1 and kind == "fact":
            kind = read[0].kind
        candidate = Candidate(
            scope=scope,
            kind=kind,
            slot=read[0].slot if len(read) == 1 else None,
            content=text.strip(),
            source="user_explicit",
            confidence=0.95,
            importance=0.7,
            sensitivity=sensitivity,
            subject_user=None if chat.is_group else str(user),
            speaker_user=str(user),
            evidence=(Evidence(chat=str(chat), message_id=message_id, time=time.time()),),
        )
        return await self.propose(candidate, str(user))

    async def forget(self, item_id: str, actor: Actor, reason: str = "forgotten") -> MemoryItem:
        """Archive an item (audited). Raises LookupError or MemoryPermissionError."""

        def run(conn: Connection) -> MemoryItem:
            with transaction(conn):
                item = store.get(conn, item_id)
                if item is None or item.status != "active":
                    raise LookupError(item_id)
                if not can_forget(item, actor):
                    raise MemoryPermissionError(item_id)
                return store.update(conn, item, actor.label, "archive", reason, status="archived")

        return await self.db.run(run)

    async def pending(self, actor: Actor, limit: int = 20) -> list[tuple[str, Candidate, float]]:
        scopes = review_scopes(actor)
        if scopes == []:
            raise MemoryPermissionError("review")
        return await self.db.run(write.pending, scopes, limit)

    async def review(self, candidate_id: str, accept: bool, actor: Actor) -> WriteResult | None:
        """Accept or reject a pending candidate the actor may review; None when there is none."""
        scopes = review_scopes(actor)
        if scopes == []:
            raise MemoryPermissionError("review")

        def run(conn: Connection) -> WriteResult | None:
            row = conn.execute(
                "SELECT scope FROM memory_candidates WHERE id = ? AND status = 'pending'",
                (candidate_id,),
            ).fetchone()
            if row is None or (scopes is not None and row["scope"] not in scopes):
                return None
            return write.decide(conn, candidate_id, accept, actor.label)

        return await self.db.run(run)

    # reads ----------------------------------------------------------------------------------

    async def search(self, query: Query) -> list[Hit]:
        return await self.db.run(recall.search, query)

    async def get(self, item_id: str) -> MemoryItem | None:
        return await self.db.run(store.get, item_id)

    async def visible_item(self, item_id: str, viewer: Viewer) -> MemoryItem | None:
        """The item when the viewer may see it (any status), else None."""

        def run(conn: Connection) -> MemoryItem | None:
            where, params = viewer.item_filter()
            row = conn.execute(
                f"SELECT * FROM memory_items WHERE id = ? AND {where}", (item_id, *params)
            ).fetchone()
            return MemoryItem.from_row(row) if row else None

        return await self.db.run(run)

    async def list_items(
        self, viewer: Viewer, *, kind: str | None = None, limit: int = 20
    ) -> list[MemoryItem]:
        return await self.db.run(
            lambda conn: store.list_items(conn, viewer, kind=kind, limit=limit)
        )

    async def why(self, item_id: str, viewer: Viewer) -> Explanation | None:
        item = await self.visible_item(item_id, viewer)
        if item is None:
            return None

        def run(conn: Connection) -> Explanation:
            row = conn.execute(
                "SELECT id FROM memory_items WHERE supersedes = ?", (item_id,)
            ).fetchone()
            return Explanation(item, store.events(conn, item_id), row["id"] if row else None)

        return await self.db.run(run)

    async def recall_block(
        self, text: str, viewer: Viewer, exclude_turns: frozenset[int], *, limit: int
    ) -> str | None:
        """The memory slot for a prompt; injected items get their access recorded."""
        hits = await self.search(Query(text, viewer, limit=limit, exclude_turns=exclude_turns))
        block, kept = pack(hits, self.budget_tokens)
        used = [h.item.id for h in kept if h.item is not None]
        if used:
            await self.db.run(store.touch, used)
        return block

    # export / import ------------------------------------------------------------------------

    async def export(self, scopes: Sequence[str] | None = None) -> list[MemoryItem]:
        def run(conn: Connection) -> list[MemoryItem]:
            if scopes is None:
                rows = conn.execute("SELECT * FROM memory_items ORDER BY created_at, id")
            else:
                marks = ", ".join("?" * len(scopes))
                rows = conn.execute(
                    f"SELECT * FROM memory_items WHERE scope IN ({marks}) ORDER BY created_at, id",
                    tuple(scopes),
                )
            return [MemoryItem.from_row(r) for r in rows]

        return await self.db.run(run)

    async def import_items(self, items: Sequence[MemoryItem], actor: str) -> tuple[int, int]:
        """Insert exported items as they were (same ids); returns (added, already present)."""

        def run(conn: Connection) -> tuple[int, int]:
            added = skipped = 0
            with transaction(conn):
                for item in items:
                    if store.get(conn, item.id) is not None:
                        skipped += 1
                        continue
                    store.insert(conn, item, actor, reason="import")
                    added += 1
            return added, skipped

        return await self.db.run(run)
