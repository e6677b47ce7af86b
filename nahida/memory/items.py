"""`memory.items`: long-term items, written through the write path (DESIGN §6) and read as a
viewer may see them; their review; an admin's corrections (edit, change, restore, purge), each
checked in `core/access.py`; their export and import (one JSON line an item); and the write
path's builders and checks that callers outside memory need (the runner, the CLI, plugins)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import tzinfo
from pathlib import Path

from nahida.envelope import ChatKey, UserKey
from nahida.errors import MemoryPermissionError
from nahida.memory.core import access
from nahida.memory.core.access import Actor, can_forget, review_scopes
from nahida.memory.core.kinds import KINDS
from nahida.memory.core.models import Candidate, CommitMode, Explanation, MemoryItem, WriteResult
from nahida.memory.core.scopes import Viewer, validate_scope
from nahida.memory.core.tokenize import run_cpu
from nahida.memory.history import importer
from nahida.memory.history.importer import BadLine, ImportReport
from nahida.memory.store.base import Store, Tx
from nahida.memory.write import candidates, corrections, purge, review, write
from nahida.memory.write.purge import Purged
from nahida.memory.write.review import Pending

MAX_ITEM_CHARS = 1000  # the default `limits.item_chars`
TOO_LONG = "too_long"
SENSITIVITIES = ("public", "private")


def _size(candidate: Candidate) -> int:
    return len(candidate.content) + len(candidate.title)


def _reviewing(actor: Actor) -> list[str] | None:
    """The scopes whose candidates the actor reviews (every scope: None)."""
    scopes = review_scopes(actor)
    if scopes == []:
        raise MemoryPermissionError("review")
    return scopes


def _allowed(allowed: bool, what: str) -> None:
    if not allowed:
        raise MemoryPermissionError(f"only a bot admin may {what}")


class Items:
    """`memory.items`: every write goes through `propose` (the write path, DESIGN §6)."""

    # what the runner asks of a message before it answers (it gets `/memory remember`'s refusal)
    asks_to_keep_a_secret = staticmethod(candidates.asks_to_keep_a_secret)
    # a plugin's `memory_store` (`PluginContext`), proposed by the caller as the plugin
    plugin_candidate = staticmethod(candidates.from_plugin)

    def __init__(
        self,
        store: Store,
        mode: CommitMode,
        max_chars: int = MAX_ITEM_CHARS,
        tz: tzinfo | None = None,
        changed: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.mode = mode
        self.max_chars = max_chars
        self.tz = tz
        self.changed = changed  # told after every write that may add a text to embed

    async def propose(self, candidate: Candidate, actor: str) -> WriteResult:
        """Filter, candidate, commit mode. Raises `SecretRefused` for an explicit write; a text
        over `max_chars` is rejected (`reason="too_long"`), nothing stored."""
        if len(candidate.content) + len(candidate.title) > self.max_chars:
            return WriteResult("rejected", reason=TOO_LONG)
        prepared = await run_cpu(write.prepare, candidate, size=_size(candidate))
        result = await self.store.write(write.propose, prepared, self.mode, actor)
        self.changed()
        return result

    async def remember(
        self,
        text: str,
        *,
        chat: ChatKey,
        user: UserKey,
        message_id: str | None = None,
        kind: str = "fact",
        actor: Actor | None = None,
    ) -> WriteResult:
        """`/memory remember`; `actor`: who asks (a rule of theirs is the group's only when they
        may set the group's rules, `candidates.rule_scope`)."""
        candidate = candidates.remembered(
            text, chat=chat, user=user, message_id=message_id, kind=kind, tz=self.tz, actor=actor
        )
        return await self.propose(candidate, str(user))

    def admin_candidate(
        self,
        text: str,
        *,
        kind: str = "fact",
        scope: str | None = None,
        chat: str | None = None,
        user: str | None = None,
        sensitivity: str = "default",
    ) -> Candidate:
        """`nahida memory remember`: an admin's edit in the scope named or where `chat`/`user`
        would say it, read as `/memory remember` reads it, its dates in the bot's zone
        (`candidates.admin_remember`); raises ValueError for what does not parse or fit."""
        return candidates.admin_remember(
            text, kind=kind, scope=scope, chat=chat, user=user, sensitivity=sensitivity, tz=self.tz
        )

    async def forget(self, item_id: str, actor: Actor, reason: str = "forgotten") -> MemoryItem:
        """Archive an item (audited). Raises LookupError or MemoryPermissionError."""

        def run(tx: Tx) -> MemoryItem:
            item = tx.items.get(item_id)
            if item is None or item.status != "active":
                raise LookupError(item_id)
            if not can_forget(item, actor):
                raise MemoryPermissionError(item_id)
            archived = write.update_item(
                tx, item, actor.label, "archive", reason, status="archived"
            )
            write.hide_evidence(tx, item)
            return archived

        return await self.store.write(run)

    # an admin's corrections (DESIGN §15): bot admins only (`access.may_correct`), each an
    # audited event whose actor is the admin's label, as a CLI or MEMORY.md edit is

    async def edit(
        self, item_id: str, text: str, actor: Actor, reason: str | None = None
    ) -> WriteResult:
        """An admin's new words for an active item, as an edited MEMORY.md bullet is taken: a
        `human_edit` item that supersedes it (`corrections.edited`: the result's `item_id` is
        the new item, `replaced` the old one, kept and linked). The same words again change
        nothing (`merged` into the item as it is). Raises MemoryPermissionError, LookupError
        (no active item), ValueError (no text) and `SecretRefused`; a text over `max_chars` is
        rejected (`reason="too_long"`), nothing stored."""
        _allowed(access.may_correct(actor), "correct memory")
        if not text.strip():
            raise ValueError("the text is empty: forget the item instead")
        item = await self.get(item_id)
        if item is None or item.status != "active":
            raise LookupError(item_id)
        if text.strip() == item.content:
            return WriteResult("merged", item.id, reason="unchanged")
        note = reason or "edited by hand"
        candidate = corrections.edited(item, text, actor.label, time.time(), note)
        return await self.propose(candidate, actor.label)

    async def change(
        self,
        item_id: str,
        actor: Actor,
        *,
        kind: str | None = None,
        scope: str | None = None,
        sensitivity: str | None = None,
        reason: str | None = None,
    ) -> MemoryItem:
        """Change an item's kind, scope or sensitivity in place (audited as `update`, before and
        after; the index and who may see it follow). Raises MemoryPermissionError, LookupError,
        and ValueError for a kind, scope or sensitivity that is none, for nothing to change, or
        when an active item of the new scope holds the same slot."""
        _allowed(access.may_correct(actor), "correct memory")
        fields: dict[str, str] = {}
        if kind is not None:
            if kind not in KINDS:
                raise ValueError(f"kind is one of {', '.join(KINDS)}, not {kind!r}")
            fields["kind"] = kind
        if scope is not None:
            fields["scope"] = validate_scope(scope)
        if sensitivity is not None:
            if sensitivity not in SENSITIVITIES:
                raise ValueError(f"sensitivity is public or private, not {sensitivity!r}")
            fields["sensitivity"] = sensitivity
        if not fields:
            raise ValueError("name a kind, scope or sensitivity to change")
        return await self.store.write(corrections.change, item_id, fields, actor.label, reason)

    async def restore(self, item_id: str, actor: Actor, reason: str | None = None) -> MemoryItem:
        """Make an archived (forgotten) or superseded item active again, audited as `restore`.
        The turns it was learned from stay out of recall, as forgetting left them. Raises
        MemoryPermissionError, LookupError, and ValueError saying why when it may not return: it
        is active, an item that replaced it is active, or an active item holds its slot."""
        _allowed(access.may_correct(actor), "correct memory")
        item = await self.get(item_id)
        if item is None:
            raise LookupError(item_id)
        size = len(item.title) + len(item.content)
        index = await run_cpu(write.item_index, item.title, item.content, size=size)
        indexed = (item.title, item.content, index)
        restored = await self.store.write(
            corrections.restore, item_id, indexed, actor.label, reason
        )
        self.changed()  # active again: its text may need a vector
        return restored

    async def purge(self, item_id: str, actor: Actor, reason: str = "purged") -> Purged:
        """Delete an item for good, in any status: its words leave every place memory keeps
        them, and its audit trail keeps only who did what when, ending with a `purged` event
        (`purge.purge`). Cannot be undone: the caller confirms first. `reason` is kept in that
        event: it should not repeat the words. Raises MemoryPermissionError (bot admins only)
        and LookupError."""
        _allowed(access.may_purge(actor), "purge memory")
        return await self.store.write(purge.purge, item_id, actor.label, reason, time.time())

    async def pending(self, actor: Actor, limit: int = 20) -> list[tuple[str, Candidate, float]]:
        scopes = _reviewing(actor)
        return await self.store.read(lambda tx: tx.candidates.pending(scopes, limit))

    async def review_queue(self, actor: Actor, limit: int = 20) -> list[Pending]:
        """`pending`, each with the item it would change as that item is now (`Pending.target`,
        `Pending.before`: what a page shows a diff against)."""
        return await self.store.read(review.waiting, _reviewing(actor), limit)

    async def review(
        self, candidate_id: str, accept: bool, actor: Actor, *, text: str | None = None
    ) -> WriteResult | None:
        """Accept or reject a pending candidate the actor may review; None when there is none.
        `text`: accept it with these words in place of its own, as the reviewer's
        (`review.edited`; ValueError when rejecting, for an archive or for no text,
        `SecretRefused` for a secret, rejected `too_long` over `max_chars`). A dream's op on an
        item is decided the same way: accepted, it updates, supersedes or archives the item."""
        scopes = _reviewing(actor)
        found = await self.store.read(lambda tx: tx.candidates.get_pending(candidate_id))
        if found is None or (scopes is not None and found.scope not in scopes):
            return None
        if text is None:
            prepared = await run_cpu(write.tokens_of, found, size=_size(found))
        elif not accept:
            raise ValueError("only an accepted candidate takes the reviewer's words")
        else:
            found = review.edited(found, text, actor.label, time.time())
            if _size(found) > self.max_chars:
                return WriteResult("rejected", candidate_id=candidate_id, reason=TOO_LONG)
            prepared = await run_cpu(write.prepare, found, size=_size(found))
        result = await self.store.write(write.decide, candidate_id, prepared, accept, actor.label)
        self.changed()
        return result

    async def review_many(
        self, candidate_ids: Sequence[str], accept: bool, actor: Actor
    ) -> dict[str, WriteResult | None]:
        """One decision for several candidates, each decided on its own (`review`): what became
        of each, by id (None: not pending, or not the actor's to review)."""
        _reviewing(actor)
        return {c: await self.review(c, accept, actor) for c in dict.fromkeys(candidate_ids)}

    async def get(self, item_id: str) -> MemoryItem | None:
        return await self.store.read(lambda tx: tx.items.get(item_id))

    async def decay(self, idle: float, step: float, floor: float) -> int:
        """Lower by `step` (not below `floor`) the confidence of active items unused for `idle`
        seconds, but those people stated explicitly; returns how many."""
        before = time.time() - idle
        keep = write.EXPLICIT_SOURCES
        return await self.store.write(lambda tx: tx.items.decay(before, step, floor, keep))

    async def visible(self, item_id: str, viewer: Viewer) -> MemoryItem | None:
        """The item when the viewer may see it (any status), else None."""
        visibility = viewer.visibility()
        return await self.store.read(lambda tx: tx.items.visible(item_id, visibility))

    async def latest(
        self,
        viewer: Viewer | None,
        *,
        kind: str | None = None,
        status: str | None = "active",
        limit: int = 20,
    ) -> list[MemoryItem]:
        """Most recently changed first, as the viewer sees them (every scope: None)."""
        visibility = viewer.visibility() if viewer is not None else None
        return await self.store.read(
            lambda tx: tx.items.listed(visibility, kind=kind, status=status, limit=limit)
        )

    async def why(self, item_id: str, viewer: Viewer) -> Explanation | None:
        visibility = viewer.visibility()

        def run(tx: Tx) -> Explanation | None:
            item = tx.items.visible(item_id, visibility)
            if item is None:
                return None
            return Explanation(
                item,
                tx.events.of_item(item_id),
                tx.items.replaced_by(item_id),
                tx.turns.hidden_for(item_id),
            )

        return await self.store.read(run)

    async def export(self, scopes: Sequence[str] | None = None) -> list[str]:
        """Every item of `scopes` (every scope: None), any status, oldest first, as one JSON line
        each (`importer.export_lines`: what `import_file` reads back). Raises ValueError for a
        scope that is not one."""
        named = [validate_scope(s) for s in scopes] if scopes is not None else None
        items = await self.store.read(lambda tx: tx.items.exported(named))
        return importer.export_lines(items)

    async def import_file(
        self, path: Path, actor: str, max_line_bytes: int = importer.MAX_LINE_BYTES
    ) -> ImportReport:
        """`import_exported` of a file `export` wrote; a line longer than `max_line_bytes` is a
        bad line, never read whole (`importer.bounded_lines`)."""

        def read() -> list[str | BadLine]:
            with path.open("rb") as handle:
                return list(importer.bounded_lines(handle, max_line_bytes))

        return await self.import_exported(await asyncio.to_thread(read), actor)

    async def import_exported(self, lines: Iterable[str | BadLine], actor: str) -> ImportReport:
        """Exported items (`importer.export_lines`) back as they were, same ids; an item already
        present counts as a duplicate, one superseding an item found nowhere is a bad line."""
        started = time.perf_counter()
        numbered, bad = importer.read_items(lines)
        indexes = await asyncio.to_thread(
            lambda: [write.item_index(item.title, item.content) for _, item in numbered]
        )
        in_file = {item.id for _, item in numbered}

        def run(tx: Tx) -> ImportReport:
            report = ImportReport(bad=bad)
            for (number, item), index in zip(numbered, indexes, strict=True):
                target = item.supersedes
                if target and target not in in_file and tx.items.get(target) is None:
                    report.bad.append(BadLine(number, f"supersedes unknown item {target}"))
                elif write.insert_item(tx, item, index, actor, reason="import"):
                    report.imported += 1
                else:
                    report.duplicates += 1
            return report

        report = await self.store.write(run)
        self.changed()
        report.bad.sort(key=lambda b: b.line)
        report.seconds = time.perf_counter() - started
        return report
