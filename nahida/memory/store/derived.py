"""The tables of what memory derives from history: warm summaries, profile bullets, episodes,
dream runs and cursors, the recalls recorded with replies, and the people seen speaking.

Protocols a backend implements, as those in `tables`; `base` gathers them into a `Tx`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from nahida.memory.core.models import (
    DreamRun,
    Episode,
    ProfileEntry,
    Turn,
    WarmSummary,
)
from nahida.memory.store.values import (
    DreamTally,
    DueChat,
    EpisodeMatch,
    NameUse,
    RecallRecord,
    RecallTally,
    SectionEntry,
    Seen,
    Slice,
    Span,
    TextSearch,
)


class SummaryRows(Protocol):
    """Warm summaries of sessions (working memory, DESIGN §7)."""

    def get(self, session_id: str) -> WarmSummary | None: ...

    def put(self, summary: WarmSummary) -> None:
        """Write the session's summary (insert or replace)."""

    def failed(self, session_id: str, chat: str, error: str, at: float) -> int:
        """Count a failed compaction of the session; returns the failures in a row."""

    def drop_told(self, item_id: str) -> int:
        """Delete the summaries of the sessions with turns hidden because of the forgotten item
        (they would tell it again); the next compaction summarises what is left."""

    def failing(self, limit: int) -> list[WarmSummary]:
        """Summaries whose last compaction failed, most failures first."""

    def updated(self, after: tuple[float, str], before: float, limit: int) -> list[WarmSummary]:
        """Written summaries (not empty, the last compaction did not fail) by (updated_at,
        session_id) after `after`, updated before `before`, oldest first."""


class ProfileRows(Protocol):
    """Profile bullets (the Ethan layer 3), one row each; archived, never deleted."""

    def add(self, entry: ProfileEntry, tokens: str) -> bool:
        """Store a bullet with its tokens; False (nothing written) when the id is taken."""

    def get(self, entry_id: str) -> ProfileEntry | None:
        """A bullet of any status."""

    def set_status(self, entry_id: str, status: str, at: float) -> bool:
        """Change a bullet's status (`updated_at` becomes `at`); False when there is none."""

    def of_user(self, user: str, public_only: bool) -> list[ProfileEntry]:
        """The person's active bullets (only the public ones: `public_only`), oldest first."""

    def of_section(self, user: str, section: str, public_only: bool) -> list[SectionEntry]:
        """The active bullets of one section of the person's profile, oldest first."""

    def users(self) -> list[str]:
        """The people with at least one active bullet, in order."""


class EpisodeRows(Protocol):
    """Episodes of finished sessions (the Ethan layer 4), one per session. An episode is seen
    only in its own chat, like the session's turns; its index text is computed before the call
    (`tokenize.index_text` of its keywords and summary)."""

    def put(self, episode: Episode, tokens: str) -> Episode:
        """Store the session's episode, or rewrite the one it had (keeping that one's id and
        creation time; a new text is looked at again for a vector). Returns what is stored."""

    def get(self, episode_id: str) -> Episode | None: ...

    def chats(self) -> list[str]:
        """The chats that have an episode."""

    def created(
        self, after: tuple[float, int], before: float, limit: int
    ) -> list[tuple[int, Episode]]:
        """(seq, episode) by (created_at, seq) after `after`, created before `before`, oldest
        first (a rewritten episode keeps its creation: it is not new again)."""

    def drop_told(self, item_id: str) -> int:
        """Delete the episodes of the sessions with turns hidden because of the forgotten item
        (they would tell it again)."""

    def of_session(self, session_id: str) -> Episode | None: ...

    def of_chat(self, chat: str, limit: int) -> list[Episode]:
        """The chat's episodes, the latest ended first."""

    def search(self, chats: Sequence[str] | None, search: TextSearch) -> list[EpisodeMatch]:
        """Episodes of these chats (every chat: None), best first; `time` is `ended_at` (without
        terms: the latest ended)."""

    def of_chats(self, chats: Sequence[str], offset: int, limit: int) -> Slice[Episode]:
        """The episodes of these chats, the latest ended first, as `of_chat` orders them."""


class DreamRows(Protocol):
    """Dream runs and per-chat cursors (DESIGN §8)."""

    def cursor(self, chat: str) -> tuple[int, bool]:
        """(the last turn dreamed, paused); (0, False) for a chat never dreamed."""

    def advance(self, chat: str, through: int, at: float) -> None:
        """Move the chat's cursor forward to `through` (never back)."""

    def pause(self, chat: str, paused: bool, at: float) -> None: ...

    def due(self, min_turns: int, limit: int) -> list[DueChat]:
        """Chats not paused with at least `min_turns` new turns, dreamed longest ago first."""

    def turns(self, chat: str, after: int, limit: int) -> list[Turn]:
        """The chat's user and assistant turns after `after`, oldest first, without turns a
        forgotten item was learned from."""

    def start(self, run: DreamRun) -> None: ...

    def save(self, run: DreamRun) -> None:
        """Store the run's counts, report and outcome."""

    def get(self, run_id: str) -> DreamRun | None: ...

    def latest(self, chat: str | None, limit: int) -> list[DreamRun]:
        """Newest first (of one chat, or of all)."""

    def abandoned(self, chat: str, before: float, at: float) -> int:
        """Mark the chat's runs still running since before `before` interrupted."""

    def unwritten(self, limit: int) -> list[DreamRun]:
        """Finished runs not yet in DREAMS.md, oldest first."""

    def mark_written(self, run_ids: list[str]) -> None: ...

    def purge(self, item_id: str, texts: Collection[str]) -> int:
        """Blank the content and reason of the proposals in run reports that carried a purged
        item's words: those that made or changed it (`item_id`), those that proposed a change to
        it (`item`) and made no item, and those that made no item whose content is one of
        `texts`. Returns how many runs changed."""

    def page(self, chat: str | None, offset: int, limit: int) -> Slice[DreamRun]:
        """Runs newest first (of one chat, or of all), as `latest`, each without its `report`
        (`get` has it)."""

    def tally(self, spans: Sequence[Span]) -> list[DreamTally]:
        """Runs started in each span and the sums of their counts (spans without one left out)."""


class RecallRows(Protocol):
    """What each answered user turn's prompt was given from memory (`RecallRecord`), one row
    per turn, gone with the turn."""

    def add(self, record: RecallRecord) -> None:
        """Record the turn's recall (replacing one it had)."""

    def of_turns(self, turn_ids: Sequence[int]) -> dict[int, RecallRecord]:
        """The recalls of those of these turns that have one, by turn."""

    def tally(self, spans: Sequence[Span]) -> list[RecallTally]:
        """Recalls recorded in each span and the hits they hold (spans without one left out)."""


class PeopleRows(Protocol):
    """People: the speakers of stored user turns (by `speaker`) up to the last `fold`, and the
    users with an active profile bullet. A turn is taken in by a fold, not when it is stored (so
    storing one costs nothing more); a deleted turn leaves at once."""

    def fold(self, limit: int) -> int:
        """Take in up to `limit` turns stored since the last fold, the oldest first; returns how
        many (fewer than `limit`: none is left)."""

    def count(self) -> int: ...

    def page(self, offset: int, limit: int) -> Slice[Seen]:
        """People, the latest seen first (then by user; those who never spoke last)."""

    def names(self, users: Sequence[str]) -> list[NameUse]:
        """The (name, chat) pairs these people spoke under in user turns, by user, then the
        latest used first (then by chat and name)."""
