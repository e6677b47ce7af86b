"""The tables a store's `Tx` holds, in the domain's words, and the values they pass.

Each is a protocol a backend implements (`memory/store/sqlite/` for SQLite); `base` gathers them
into a `Tx` and declares the `Store` that runs units of work over them. The vectors' table is in
`vectors`; the tables of what memory derives from history (summaries, profiles, episodes,
dreams, recorded recalls, people) are in `derived`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from nahida.memory.core.models import (
    Candidate,
    JobRun,
    MemoryEvent,
    MemoryItem,
    NewTurn,
    Session,
    Turn,
)
from nahida.memory.core.scopes import Visibility
from nahida.memory.store.values import (
    CandidateNote,
    ChatActivity,
    CommandMessage,
    Delivery,
    Fate,
    FileState,
    HistoryTotals,
    ItemFilter,
    ItemMatch,
    KnownMessage,
    Slice,
    Span,
    SpanCount,
    Tally,
    TextSearch,
    TurnMatch,
)


class SessionRows(Protocol):
    def create(self, session_id: str, chat: str, title: str, at: float) -> bool:
        """Write a new session; False (and nothing written) when the id is taken."""

    def get(self, session_id: str) -> Session | None: ...

    def latest(self, chat: str | None, limit: int) -> list[Session]:
        """Newest first (by last turn); every chat when `chat` is None."""

    def by_suffix(self, suffix: str, chat: str | None, limit: int) -> list[Session]: ...

    def titled(self, text: str, chat: str | None, limit: int) -> list[Session]:
        """Sessions whose title contains `text` (literally; ASCII letters in any case), newest
        first."""

    def retitle(self, session_id: str, title: str) -> None:
        """Replace the session's title."""

    def delete(self, session_id: str) -> bool:
        """The session, its turns and their index entries."""

    def delete_empty(self) -> int: ...

    def current(self, chat: str) -> tuple[str | None, float] | None:
        """(the chat's current session, its last activity), or None for a chat never seen."""

    def set_current(self, chat: str, session_id: str, at: float) -> None:
        """Point the chat at a session; its last activity becomes `at` unless it was later."""

    def clear_current(self, chat: str) -> None: ...

    def totals(self) -> HistoryTotals:
        """Chats with a session, sessions, and turns (each session's count, summed)."""

    def chats(self, offset: int, limit: int) -> Slice[ChatActivity]:
        """Chats with a session, the latest active first (then by chat)."""

    def activity(self, chat: str) -> ChatActivity | None:
        """The chat as `chats` shows it; None for a chat without a session."""

    def page(self, chat: str, offset: int, limit: int) -> Slice[Session]:
        """The chat's sessions, newest first (by last turn), as `latest` orders them."""


class TurnRows(Protocol):
    def known(self, chat: str, message_id: str) -> bool: ...

    def message(
        self, chat: str, role: str, message_id: str, time: float, content: str
    ) -> KnownMessage | None:
        """The stored turn of `role` that is this message: the same chat and message id, said
        at the same time or in the same words (implementations reuse ids: per chat, or from 0
        after a restart; a message redelivered without its own time still has its words)."""

    def set_fate(self, turn_id: int, fate: Fate, error: str | None) -> None:
        """Record what became of the reply to a user turn; `error` is added to the turn's
        error, if any."""

    def deliveries(self, fate: Fate, limit: int) -> list[Delivery]:
        """Messages due an answer whose reply had this fate, newest first."""

    def fates(self) -> dict[Fate, int]:
        """How many messages due an answer had each fate (fates with none left out)."""

    def add(self, session_id: str, turn: NewTurn, tokens: str | None) -> int:
        """Store a turn (indexed under its chat when `tokens` is given) and count it in its
        session; returns its id."""

    def window(self, session_id: str, before: int, limit: int, after: int = 0) -> Sequence[Turn]:
        """The last `limit` turns of the session before turn `before`, oldest first; with
        `after`, only those after that turn (what a warm summary does not cover). A sequence,
        not necessarily a list: a backend may build the turns only when they are looked at."""

    def of_session(self, session_id: str) -> list[Turn]: ...

    def after(self, session_id: str, after: int, limit: int) -> Sequence[Turn]:
        """Unhidden user/assistant turns of the session after turn `after`, oldest first (a
        sequence, as `window`'s)."""

    def mark_error(self, turn_id: int, error: str) -> None: ...

    def rewrite(self, turn_id: int, content: str, tokens: str | None) -> None:
        """Replace a turn's words (a redaction), and its index text when the turn is indexed
        (`tokens`: the new index text); the turn names no vector until upkeep embeds the new
        words, so the old ones are never found by meaning."""

    def hide(self, turn_ids: Sequence[int], messages: Sequence[tuple[str, str]], by: str) -> int:
        """Keep these turns (by id, or by (chat, message id)) and the bot's direct reply to each
        out of search, windows and neighbours, marked as hidden by item `by`; they stay in the
        session. Returns how many were hidden now."""

    def mark_earlier(
        self, turn_ids: Sequence[int], messages: Sequence[tuple[str, str]], by: str
    ) -> int:
        """Mark these turns (and the bot's direct reply to each) as saying what replaced item
        `by` held: still searched, recalled as earlier. Returns how many were marked now."""

    def hidden_for(self, item_id: str) -> list[Turn]:
        """The turns hidden or marked earlier because of an item, in order."""

    def search(self, chats: Sequence[str] | None, search: TextSearch) -> list[TurnMatch]:
        """Indexed turns of these chats (every chat: None), best first."""

    def any_besides(self, chats: Sequence[str], exclude: Collection[int], at: float | None) -> bool:
        """Whether these chats hold a user or assistant turn, not hidden, said by `at`, other
        than `exclude`: whether a history search that leaves `exclude` out could find any."""

    def containing(
        self, chats: Sequence[str], needles: Sequence[str], search: TextSearch
    ) -> list[TurnMatch]:
        """Indexed, unhidden turns of these chats whose text contains every needle literally (a
        single character a word index cannot find), latest first (`search.terms` unused)."""

    def neighbours(self, ids: Sequence[int], at: float | None) -> list[tuple[int, TurnMatch]]:
        """(id, turn) for the user/assistant turn just before and after each of `ids` in its
        session, not said after `at`."""

    def page(self, session_id: str, offset: int, limit: int) -> Slice[Turn]:
        """The session's turns in order, every role, hidden ones too (a transcript)."""

    def around(self, turn_id: int, before: int, after: int) -> list[Turn]:
        """The turn, with up to `before` and `after` user/assistant turns on either side in its
        session (hidden ones too), in order; [] for a turn not stored."""

    def of_messages(self, messages: Sequence[tuple[str, str]]) -> list[Turn]:
        """The turns that are these (chat, message id) messages, in order (every turn with the
        id: implementations reuse ids)."""


class ItemRows(Protocol):
    def get(self, item_id: str) -> MemoryItem | None: ...

    def add(self, item: MemoryItem, tokens: str) -> bool:
        """Store an item (indexed when active); False (nothing written) when the id is taken."""

    def change(self, before: MemoryItem, after: MemoryItem, tokens: str | None) -> None:
        """Write `after` over `before`, keeping the index in step: `tokens` are needed only when
        the title or content changed while the item stays active."""

    def touch(self, ids: Sequence[str], at: float) -> None:
        """Count an injection: last accessed and access count."""

    def decay(self, before: float, step: float, floor: float, keep: Sequence[str]) -> int:
        """Lower by `step`, not below `floor`, the confidence of active items last used (accessed,
        else changed) before `before`, but those of the sources `keep`; returns how many."""

    def listed(
        self, visibility: Visibility | None, *, kind: str | None, status: str | None, limit: int
    ) -> list[MemoryItem]:
        """Most recently changed first; every scope when `visibility` is None."""

    def visible(self, item_id: str, visibility: Visibility) -> MemoryItem | None: ...

    def in_slot(self, scope: str, slot: str) -> list[MemoryItem]:
        """Active items of a scope that hold a value for `slot`."""

    def replaced_by(self, item_id: str) -> str | None: ...

    def exported(self, scopes: Sequence[str] | None) -> list[MemoryItem]:
        """Every item of these scopes (all: None), any status, oldest first."""

    def search(self, visibility: Visibility | None, search: TextSearch) -> list[ItemMatch]:
        """Active items the visibility allows (every scope: None, an admin's), best first."""

    def any_active(self, visibility: Visibility, kind: str | None = None) -> bool:
        """Whether the visibility allows any active item (of `kind`): whether an item search
        or listing could find one."""

    def containing(
        self, visibility: Visibility | None, needles: Sequence[str], search: TextSearch
    ) -> list[ItemMatch]:
        """Active items the visibility allows (every scope: None) whose title or content
        contains every needle literally, latest first (`search.terms` unused)."""

    def tally(self) -> list[Tally]:
        """Every item counted by scope family, kind and status (counts of 0 left out)."""

    def added(self, spans: Sequence[Span]) -> list[SpanCount]:
        """Items created in each span, by source (`key`; counts of 0 left out)."""

    def page(self, where: ItemFilter, offset: int, limit: int) -> Slice[MemoryItem]:
        """The items `where` holds (`ItemFilter.holds`), most recently changed first (then by
        id), as `listed` orders them."""

    def purge(self, item_id: str) -> bool:
        """Delete an item for good: its row, its index entry (the index rebuilt, so that none of
        its words stay in it) and its vector when no other row has the same text; an item that
        superseded it stops naming it. False when there is none."""


class EventRows(Protocol):
    """The append-only audit trail: rows are never deleted, and changed only by `purge`."""

    def add(
        self,
        item_id: str,
        action: str,
        actor: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        reason: str | None,
        at: float,
    ) -> None: ...

    def of_item(self, item_id: str) -> list[MemoryEvent]: ...

    def purge(self, item_id: str) -> int:
        """Blank the before, after and reason of the item's events but its `purged` ones (their
        action, actor and time stay): the one change the trail allows, and only once a `purged`
        event of the item is recorded (ValueError before). Returns how many held text."""


class CandidateRows(Protocol):
    def add(
        self,
        candidate_id: str,
        candidate: Candidate,
        status: str,
        item_id: str | None,
        reason: str,
        at: float,
    ) -> bool:
        """False (nothing written) when the id is taken."""

    def pending(
        self, scopes: Sequence[str] | None, limit: int
    ) -> list[tuple[str, Candidate, float]]:
        """(id, candidate, created) waiting for review, oldest first; all scopes when None."""

    def get_pending(self, candidate_id: str) -> Candidate | None: ...

    def decide(
        self, candidate_id: str, status: str, item_id: str | None, actor: str, at: float
    ) -> None: ...

    def proposed(self, after: tuple[float, str], before: float, limit: int) -> list[CandidateNote]:
        """Candidates by (created_at, id) after `after`, created before `before`, oldest first."""

    def cited_turns(
        self, source: str, chat: str, turn_ids: Sequence[int], since: float
    ) -> set[int]:
        """The turns among `turn_ids` (of `chat`) that a candidate of `source` created at or
        after `since` cites as evidence."""

    def decided(self, after: tuple[float, str], before: float, limit: int) -> list[CandidateNote]:
        """Candidates decided after they were proposed (a review), by (decided_at, id) after
        `after`, decided before `before`, oldest decision first."""

    def purge(self, item_id: str, texts: Collection[str]) -> int:
        """Delete the candidates that carried a purged item's words: those that made it, merged
        into it or changed it (`item_id`), those that proposed a change to it (`target`) and
        made no item, and those that made no item whose content or title is one of `texts`.
        Returns how many."""

    def pending_count(self) -> int:
        """How many candidates wait for review, in every scope."""


class JobRows(Protocol):
    def lease(self, job: str, holder: str, until: float, now: float) -> bool:
        """Take or extend the job's lease for `holder` until `until`; False while another
        holder's lease has not expired."""

    def release(self, job: str, holder: str) -> None: ...

    def start(self, job: str, holder: str, at: float) -> int:
        """Record a run as started; returns its id."""

    def finish(
        self, run_id: int, outcome: str, counts: dict[str, int], error: str | None, at: float
    ) -> None: ...

    def latest(self, job: str | None, limit: int) -> list[JobRun]:
        """Runs newest first: of one job, or the latest run of each job when `job` is None."""


class MarkdownRows(Protocol):
    """The Markdown projection's record of its files (DESIGN §9)."""

    def file(self, path: str) -> FileState | None: ...

    def put_file(self, state: FileState) -> None: ...

    def fingerprint(self) -> tuple[object, ...]:
        """Changes whenever a global item or a profile bullet does."""


class StateRows(Protocol):
    """Small values background work keeps under a name (a cursor, a last measurement)."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, value: str, at: float) -> None: ...


class CommandRows(Protocol):
    """Chat commands answered (they are not history): a command delivered again is known by its
    chat, id and event time."""

    def answered(self, command: CommandMessage) -> bool: ...

    def add(self, command: CommandMessage, at: float) -> None:
        """Record it answered (records older than a month go)."""
