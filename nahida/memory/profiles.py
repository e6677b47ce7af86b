"""Profiles (the Ethan layer 3): one profile per person, in the fixed sections of
`PROFILE_SECTIONS`, as short bullets people can see (`/profile`) and correct.

    change = await memory.profiles.update("onebot:42", "目标与方向", "- 想转行做数据分析",
                                          mode="merge", actor="agent")
    card = await memory.profiles.card(viewer)  # Markdown for the system prompt, or None

A write names a section and one or more bullets (one a line) and a mode:

    append     add each bullet; one that an active bullet of the section already says is skipped
    overwrite  archive the section's bullets, then add
    merge      replace the bullet that says nearly the same (token Jaccard ≥ `SIMILAR`) or the
               opposite ("喜欢早起" / "不喜欢早起") instead of piling up beside it; else add

A section keeps at most `MAX_SECTION_ENTRIES` active bullets: beyond, the oldest are archived.

Visibility (DESIGN §4): a bullet said in a group is `public`, else `private`. A group sees only
public bullets, and a public write (from a group) only ever touches public bullets, never the
person's private ones. Secrets never enter a profile (`SecretRefused`); `基础特征` is written only
from what the person states, never from what the model infers. Nothing is deleted: every change
is audited in `memory_events` (`create`, `replace`, `archive`), and changed bullets are archived.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, get_args

from nahida.envelope import UserKey
from nahida.errors import MemoryPermissionError, SecretRefused
from nahida.memory.core import access
from nahida.memory.core.access import Actor
from nahida.memory.core.models import (
    PROFILE_SECTIONS,
    MemoryEvent,
    ProfileEntry,
    ProfileMode,
    new_id,
)
from nahida.memory.core.safety import contains_secret
from nahida.memory.core.scopes import Viewer, user_scope
from nahida.memory.core.tokenize import STOPWORDS, index_text, run_cpu
from nahida.memory.profile_card import card_of, in_order, normalised, render
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import SectionEntry

MAX_BULLET_CHARS = 300
MAX_SECTION_ENTRIES = 20
SIMILAR = 0.5  # token Jaccard at or above which a merge replaces the old bullet
STATED_ONLY = "基础特征"
SENSITIVITIES = ("public", "private")
HAND = "human_edit"  # the source of what people write into a profile by hand
HAND_EDIT = "edited by hand"
# Words that turn a statement into its opposite; "don't" is tokenized as "don", "t".
_NEGATIONS = """
    不 没 没有 不再 别 不要 不会 从不 从来不 并不 不用
    not no never don doesn didn isn aren wasn t
"""
NEGATIONS: frozenset[str] = frozenset(_NEGATIONS.split())
_MARKER = re.compile(r"^(?:[-*](?:\s+|$)|•\s*)")


@dataclass(frozen=True, slots=True)
class ProfileChange:
    """What an `update` did, by bullet id; `str()` says it in a line for the model."""

    added: tuple[str, ...] = ()
    replaced: tuple[tuple[str, str], ...] = ()  # (old id, new id)
    archived: tuple[str, ...] = ()  # overwritten, or beyond the section's cap
    unchanged: tuple[str, ...] = ()  # bullets already there, said again
    section: str = ""

    def summary(self) -> str:
        parts = []
        if self.added:
            parts.append(f"added {', '.join(self.added)}")
        if self.replaced:
            parts.append("replaced " + ", ".join(f"{old} with {new}" for old, new in self.replaced))
        if self.archived:
            parts.append(f"archived {', '.join(self.archived)}")
        if self.unchanged:
            parts.append(f"already there: {', '.join(self.unchanged)}")
        where = f"profile section {self.section}" if self.section else "profile"
        return f"{where}: {'; '.join(parts) or 'no change'}"

    def __str__(self) -> str:
        return self.summary()


@dataclass(frozen=True, slots=True)
class _Bullet:
    text: str
    key: str  # `normalised(text)`: what counts as the same bullet
    tokens: str  # `index_text(text)`


@dataclass(slots=True)
class _Changes:
    added: list[str] = field(default_factory=list)
    replaced: list[tuple[str, str]] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def done(self, section: str) -> ProfileChange:
        return ProfileChange(
            tuple(self.added),
            tuple(self.replaced),
            tuple(self.archived),
            tuple(self.unchanged),
            section,
        )


# bullets ---------------------------------------------------------------------------------------


def split_bullets(text: str) -> list[str]:
    """One bullet a line: list markers ("- ", "* ", "• ") stripped, blank lines dropped."""
    found = []
    for line in text.splitlines():
        bullet = " ".join(_MARKER.sub("", line.strip()).split())
        if bullet:
            found.append(bullet)
    return found


def words(tokens: str) -> frozenset[str]:
    """What a bullet is about (stopwords dropped), and any negation of it."""
    return frozenset(t for t in tokens.split() if t in NEGATIONS or t not in STOPWORDS)


def relation(new: frozenset[str], old: frozenset[str]) -> tuple[float, str] | None:
    """How strongly a new bullet replaces an old one, and why; None when it does not."""
    if not new or not old:
        return None
    if new != old and new - NEGATIONS == old - NEGATIONS and new - NEGATIONS:
        return 1.0, "contradicts it"
    score = len(new & old) / len(new | old)
    return (score, f"similar ({score:.2f})") if score >= SIMILAR else None


def check_section(section: str) -> None:
    if section not in PROFILE_SECTIONS:
        raise ValueError(
            f"unknown profile section {section!r}; the sections are: {', '.join(PROFILE_SECTIONS)}"
        )


def _prepare(text: str, section: str, inferred: bool) -> list[_Bullet]:
    """Validated bullets with their tokens (CPU work, before the store call)."""
    check_section(section)
    if inferred and section == STATED_ONLY:
        raise ValueError(f"{STATED_ONLY} is only written when the person states it")
    found = split_bullets(text)
    if not found:
        raise ValueError("the profile text is empty: give one bullet a line")
    if len(found) > MAX_SECTION_ENTRIES:
        raise ValueError(f"at most {MAX_SECTION_ENTRIES} bullets a section; got {len(found)}")
    for bullet in found:
        if len(bullet) > MAX_BULLET_CHARS:
            raise ValueError(
                f"a bullet has {len(bullet)} characters, over the {MAX_BULLET_CHARS} allowed:"
                f" keep each to one short point ({bullet[:40]}…)"
            )
        if contains_secret(bullet):
            raise SecretRefused("a profile bullet contains what looks like a secret")
    return [_Bullet(b, normalised(b), index_text(b)) for b in found]


# audited changes (units of work: tx first) ------------------------------------------------------


def _snapshot(entry: ProfileEntry) -> dict[str, Any]:
    return {
        "user": entry.user,
        "section": entry.section,
        "text": entry.text,
        "sensitivity": entry.sensitivity,
        "source": entry.source,
        "chat": entry.chat,
        "status": entry.status,
    }


def _archive(tx: Tx, entry: ProfileEntry, actor: str, reason: str, now: float) -> None:
    tx.profiles.set_status(entry.id, "archived", now)
    after = replace(entry, status="archived", updated_at=now)
    tx.events.add(entry.id, "archive", actor, _snapshot(entry), _snapshot(after), reason, now)


def _closest(active: list[SectionEntry], bullet: _Bullet) -> tuple[SectionEntry, str] | None:
    mine = words(bullet.tokens)
    best: tuple[float, SectionEntry, str] | None = None
    for old in active:
        found = relation(mine, words(old.tokens))
        if found is not None and (best is None or found[0] > best[0]):
            best = (found[0], old, found[1])
    return None if best is None else (best[1], best[2])


@dataclass(frozen=True, slots=True)
class _Write:
    user: str
    section: str
    bullets: list[_Bullet]
    mode: ProfileMode
    sensitivity: str
    source: str
    chat: str | None
    actor: str


def _update(tx: Tx, write: _Write) -> ProfileChange:
    now = time.time()
    changes = _Changes()
    # a public write (from a group) sees, and so touches, only the public bullets
    active = tx.profiles.of_section(write.user, write.section, write.sensitivity == "public")
    if write.mode == "overwrite":
        for old in active:
            _archive(tx, old.entry, write.actor, "overwritten", now)
            changes.archived.append(old.entry.id)
        active = []
    for bullet in write.bullets:
        same = next((a.entry for a in active if normalised(a.entry.text) == bullet.key), None)
        if same is not None:
            changes.unchanged.append(same.id)
            continue
        entry = _add(tx, write, bullet, now)
        closest = _closest(active, bullet) if write.mode == "merge" else None
        if closest is None:
            tx.events.add(entry.id, "create", write.actor, None, _snapshot(entry), None, now)
            changes.added.append(entry.id)
        else:
            old, why = closest
            _archive(tx, old.entry, write.actor, f"replaced by {entry.id}: {why}", now)
            tx.events.add(
                entry.id,
                "replace",
                write.actor,
                _snapshot(old.entry),
                _snapshot(entry),
                f"replaces {old.entry.id}: {why}",
                now,
            )
            changes.replaced.append((old.entry.id, entry.id))
            active.remove(old)
        active.append(SectionEntry(entry, bullet.tokens))
    for old in active[: max(0, len(active) - MAX_SECTION_ENTRIES)]:  # the oldest first
        reason = f"the section keeps at most {MAX_SECTION_ENTRIES} bullets"
        _archive(tx, old.entry, write.actor, reason, now)
        changes.archived.append(old.entry.id)
    return changes.done(write.section)


def _add(tx: Tx, write: _Write, bullet: _Bullet, now: float) -> ProfileEntry:
    while True:  # an id taken meanwhile (another process) is simply drawn again
        entry = ProfileEntry(
            id=new_id("p"),
            user=write.user,
            section=write.section,
            text=bullet.text,
            sensitivity=write.sensitivity,
            source=write.source,
            chat=write.chat,
            created_at=now,
            updated_at=now,
        )
        if tx.profiles.add(entry, bullet.tokens):
            return entry


def _forget(tx: Tx, user: str, section: str, actor: str, public_only: bool) -> int:
    now = time.time()
    found = tx.profiles.of_section(user, section, public_only)
    for old in found:
        _archive(tx, old.entry, actor, "forgotten", now)
    return len(found)


# the card ----------------------------------------------------------------------------------------


class Profiles:
    """`memory.profiles`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def update(
        self,
        user: UserKey | str,
        section: str,
        text: str,
        *,
        mode: ProfileMode = "append",
        sensitivity: str = "private",
        source: str = "agent_proactive",
        chat: str | None = None,
        actor: str,
        inferred: bool = False,
    ) -> ProfileChange:
        """Write bullets into a section of a person's profile (see the module docstring).

        Raises ValueError with a reason the model can act on (unknown section, empty text, a
        bullet too long, an inferred `基础特征`) and `SecretRefused` for a secret; nothing is
        written then."""
        if mode not in get_args(ProfileMode):
            raise ValueError(f"unknown mode {mode!r}; use append, overwrite or merge")
        if sensitivity not in SENSITIVITIES:
            raise ValueError(f"sensitivity is public or private, not {sensitivity!r}")
        person = str(UserKey.parse(str(user)))
        bullets = await run_cpu(_prepare, text, section, inferred, size=len(text))
        write = _Write(person, section, bullets, mode, sensitivity, source, chat, actor)
        return await self.store.write(_update, write)

    async def entries(self, user: UserKey | str, *, public_only: bool) -> list[ProfileEntry]:
        """The person's active bullets in section order, then oldest first."""
        found = await self.store.read(lambda tx: tx.profiles.of_user(str(user), public_only))
        return in_order(found)

    async def card(self, viewer: Viewer, *, budget_tokens: int = 400) -> str | None:
        """The profile of `viewer.person` as Markdown for the system prompt, as the viewer may
        see it: in a group only its public bullets, in the person's private chat all of them;
        None when there is nothing (or nobody) to show."""
        shown = card_of(viewer)
        if shown is None:
            return None
        entries = await self.entries(shown[0], public_only=shown[1])
        return render(entries, budget_tokens) if entries else None

    async def forget_section(
        self, user: UserKey | str, section: str, *, actor: str, public_only: bool = False
    ) -> int:
        """Archive the section's active bullets (only the public ones: `public_only`), audited;
        returns how many. Raises ValueError for an unknown section."""
        check_section(section)
        return await self.store.write(_forget, str(user), section, actor, public_only)

    async def users(self) -> list[str]:
        """The people with an active profile bullet."""
        return await self.store.read(lambda tx: tx.profiles.users())

    async def why(self, entry_id: str, viewer: Viewer | None) -> ProfileExplanation | None:
        """A bullet (any status) and its audit trail, when the viewer may see it as it sees
        items of the person's scope (DESIGN §4): their private chat, a group of theirs (public
        bullets only); None (the CLI): any. None when it is not there or not to be seen."""
        visibility = viewer.visibility() if viewer is not None else None

        def run(tx: Tx) -> ProfileExplanation | None:
            entry = tx.profiles.get(entry_id)
            if entry is None or (
                visibility is not None
                and not visibility.sees(user_scope(entry.user), entry.sensitivity)
            ):
                return None
            return ProfileExplanation(entry, tx.events.of_item(entry_id))

        return await self.store.read(run)

    async def rewrite_section(
        self,
        user: UserKey | str,
        section: str,
        text: str,
        *,
        actor: Actor,
        sensitivity: str = "private",
    ) -> ProfileChange:
        """An admin's text (one bullet a line; empty: none) in place of a section's bullets,
        public and private, taken as an edit of the person's file is (`rewrite`). Raises
        MemoryPermissionError (bot admins only), ValueError and `SecretRefused`, as `update`
        does; nothing is written then."""
        if not access.may_correct(actor):
            raise MemoryPermissionError("only a bot admin may correct memory")
        if sensitivity not in SENSITIVITIES:
            raise ValueError(f"sensitivity is public or private, not {sensitivity!r}")
        person = str(UserKey.parse(str(user)))
        check_section(section)
        bullets = []
        if split_bullets(text):
            bullets = await run_cpu(_prepare, text, section, False, size=len(text))
        write = _Write(person, section, bullets, "merge", sensitivity, HAND, None, actor.label)
        return await self.store.write(rewrite, write)


@dataclass(frozen=True, slots=True)
class ProfileExplanation:
    """`/memory why p_…`: a profile bullet and every change of it (`create`, `replace`: the
    bullet it replaced is in `before`, `archive`: why, e.g. "replaced by p_…")."""

    entry: ProfileEntry
    events: list[MemoryEvent]


# hand edits (workspace/users/<user>.md) -----------------------------------------------------------


@dataclass(slots=True)
class HandEdits:
    """A person's profile as an admin changed it in its file, tokens made before the store call:
    (old id, section, new text, tokens) edited or moved, ids deleted, (section, text, tokens)
    added."""

    changed: list[tuple[str, str, str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    added: list[tuple[str, str, str]] = field(default_factory=list)


def hand_edit(tx: Tx, user: str, edits: HandEdits, actor: str, where: str) -> dict[str, int]:
    """Apply an admin's edits of a profile file, audited: a changed bullet (text or section) is
    archived and replaced by a new one (same sensitivity, source `human_edit`), a deleted one
    archived, an added one created (private: the file is not a group's)."""
    now = time.time()
    counts = {"edited": 0, "archived": 0, "added": 0}
    for old_id, section, text, tokens in edits.changed:
        old = tx.profiles.get(old_id)
        sensitivity = old.sensitivity if old is not None else "private"
        entry = _add(
            tx,
            _hand(user, section, sensitivity, actor),
            _Bullet(text, normalised(text), tokens),
            now,
        )
        if old is not None and old.status == "active":
            _archive(tx, old, actor, f"replaced by {entry.id} ({where})", now)
        before = _snapshot(old) if old is not None else None
        tx.events.add(
            entry.id, "replace", actor, before, _snapshot(entry), f"edited in {where}", now
        )
        counts["edited"] += 1
    for old_id in edits.deleted:
        old = tx.profiles.get(old_id)
        if old is not None and old.status == "active" and old.user == user:
            _archive(tx, old, actor, f"deleted from {where}", now)
            counts["archived"] += 1
    for section, text, tokens in edits.added:
        entry = _add(
            tx, _hand(user, section, "private", actor), _Bullet(text, normalised(text), tokens), now
        )
        tx.events.add(entry.id, "create", actor, None, _snapshot(entry), f"added in {where}", now)
        counts["added"] += 1
    return counts


def _hand(user: str, section: str, sensitivity: str, actor: str) -> _Write:
    return _Write(user, section, [], "append", sensitivity, HAND, None, actor)


def rewrite(tx: Tx, write: _Write) -> ProfileChange:
    """A section as an admin wrote it: a bullet already there (the same words) stays as it is;
    one that says nearly the same as, or the opposite of, a bullet not kept (`relation`)
    replaces it, with its sensitivity; any other is added (`write.sensitivity`); the bullets
    not kept are archived. Each change is audited as the admin's, the bullets `human_edit`."""
    now = time.time()
    changes = _Changes()
    left = tx.profiles.of_section(write.user, write.section, False)
    fresh: list[_Bullet] = []
    for bullet in {b.key: b for b in write.bullets}.values():
        same = next((a for a in left if normalised(a.entry.text) == bullet.key), None)
        if same is None:
            fresh.append(bullet)
        else:
            changes.unchanged.append(same.entry.id)
            left.remove(same)
    for bullet in fresh:
        closest = _closest(left, bullet)
        if closest is None:
            entry = _add(tx, write, bullet, now)
            tx.events.add(entry.id, "create", write.actor, None, _snapshot(entry), HAND_EDIT, now)
            changes.added.append(entry.id)
            continue
        old, why = closest
        entry = _add(tx, replace(write, sensitivity=old.entry.sensitivity), bullet, now)
        _archive(tx, old.entry, write.actor, f"replaced by {entry.id} ({HAND_EDIT})", now)
        before, after = _snapshot(old.entry), _snapshot(entry)
        reason = f"{HAND_EDIT}: replaces {old.entry.id}: {why}"
        tx.events.add(entry.id, "replace", write.actor, before, after, reason, now)
        changes.replaced.append((old.entry.id, entry.id))
        left.remove(old)
    for old in left:
        _archive(tx, old.entry, write.actor, f"removed ({HAND_EDIT})", now)
        changes.archived.append(old.entry.id)
    return changes.done(write.section)
