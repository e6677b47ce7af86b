"""What the reference store holds: plain dicts of immutable rows.

A write unit runs on a copy of the dicts (`Data.copy`: each container copied, the rows shared,
since rows are never changed in place: a change is a new row) and the copy replaces the data
when the unit returns; a unit that raises leaves the data as it was. A read runs on the data
as it is, which later writes replace but never change: one snapshot.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nahida.memory.core.models import (
    Candidate,
    DreamRun,
    Episode,
    JobRun,
    MemoryEvent,
    MemoryItem,
    ProfileEntry,
    Session,
    Turn,
    WarmSummary,
    moment,
)
from nahida.memory.store.reference.text import Indexed, tokens
from nahida.memory.store.values import (
    CommandMessage,
    FileState,
    RecallRecord,
    TurnMatch,
    VectorSpace,
)

if TYPE_CHECKING:
    from nahida.memory.store.values import Vector

# The values a column may hold (the SQLite schema's CHECK constraints).
ROLES = ("user", "assistant", "tool", "system")
ITEM_STATUSES = ("active", "archived", "superseded", "rejected")
CANDIDATE_STATUSES = ("pending", "accepted", "rejected", "merged", "refused")
PROFILE_STATUSES = ("active", "archived")
SENSITIVITIES = ("public", "private")


def check(column: str, value: object, allowed: tuple[str, ...]) -> None:
    """Refuse a value outside its column's domain, as a database's constraint would."""
    if value not in allowed:
        raise ValueError(f"{column} {value!r} is not one of {', '.join(allowed)}")


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    chat: str
    title: str
    created_at: float
    updated_at: float
    turn_count: int = 0

    def session(self) -> Session:
        return Session(
            self.id,
            self.chat,
            self.title,
            moment(self.created_at),
            moment(self.updated_at),
            self.turn_count,
        )


@dataclass(frozen=True, slots=True)
class TurnRow:
    id: int
    session_id: str
    chat: str
    role: str
    content: str
    time: float
    speaker: str | None
    speaker_name: str | None
    message_id: str | None
    tool_calls: list[dict[str, Any]] | None
    addressed: bool
    error: str | None
    hidden_by: str | None = None
    earlier_for: str | None = None
    delivery: str | None = None  # None: not settled yet
    body: str | None = None  # its index text; None: not in the index
    embed_hash: str | None = None

    @property
    def spoken(self) -> bool:
        """Said by a person or the bot, and not hidden."""
        return self.hidden_by is None and self.role in ("user", "assistant")

    def turn(self) -> Turn:
        return Turn(
            self.id,
            self.session_id,
            self.chat,
            self.role,
            self.content,
            moment(self.time),
            self.speaker,
            self.speaker_name,
            self.message_id,
            self.tool_calls,
            self.addressed,
            self.error,
            self.hidden_by,
            self.earlier_for,
        )

    def match(self, score: float) -> TurnMatch:
        return TurnMatch(
            self.id,
            self.session_id,
            self.chat,
            self.content,
            self.message_id,
            self.time,
            self.speaker,
            self.speaker_name,
            self.earlier_for,
            score,
        )


@dataclass(frozen=True, slots=True)
class ItemRow:
    seq: int  # the order items were stored in
    item: MemoryItem
    body: str | None = None  # its index text while active; None: not in the index
    embed_hash: str | None = None


@dataclass(frozen=True, slots=True)
class CandidateRow:
    id: str
    candidate: Candidate
    status: str
    item_id: str | None
    reason: str
    created_at: float
    decided_at: float | None
    decided_by: str | None = None


@dataclass(frozen=True, slots=True)
class ProfileRow:
    seq: int
    entry: ProfileEntry
    tokens: str


@dataclass(frozen=True, slots=True)
class EpisodeRow:
    seq: int
    episode: Episode
    body: str  # its index text
    embed_hash: str | None = None


@dataclass(frozen=True, slots=True)
class VectorRow:
    seq: int  # the older vector wins a tie
    vector: Vector


@dataclass(frozen=True, slots=True)
class DreamRow:
    seq: int
    run: DreamRun
    written: bool = False


@dataclass(frozen=True, slots=True)
class Cursor:
    through: int = 0
    paused: bool = False
    updated_at: float = 0.0


@dataclass
class Data:
    sessions: dict[str, SessionRow] = field(default_factory=dict)
    chats: dict[str, tuple[str | None, float]] = field(default_factory=dict)  # current, active
    turns: dict[int, TurnRow] = field(default_factory=dict)  # by id, in order
    items: dict[str, ItemRow] = field(default_factory=dict)
    events: list[MemoryEvent] = field(default_factory=list)
    candidates: dict[str, CandidateRow] = field(default_factory=dict)
    job_runs: dict[int, JobRun] = field(default_factory=dict)
    leases: dict[str, tuple[str, float]] = field(default_factory=dict)  # holder, expires
    vectors: dict[tuple[VectorSpace, str], VectorRow] = field(default_factory=dict)
    summaries: dict[str, WarmSummary] = field(default_factory=dict)
    profiles: dict[str, ProfileRow] = field(default_factory=dict)
    episodes: dict[str, EpisodeRow] = field(default_factory=dict)  # by session
    cursors: dict[str, Cursor] = field(default_factory=dict)
    dreams: dict[str, DreamRow] = field(default_factory=dict)
    files: dict[str, FileState] = field(default_factory=dict)
    state: dict[str, str] = field(default_factory=dict)
    commands: dict[CommandMessage, float] = field(default_factory=dict)  # answered at
    recalls: dict[int, RecallRecord] = field(default_factory=dict)  # by turn
    counters: dict[str, int] = field(default_factory=dict)

    def copy(self) -> Data:
        """A copy whose containers a unit may change without touching these."""
        return Data(
            **{
                f.name: getattr(self, f.name).copy()
                for f in dataclasses.fields(self)  # each a dict or a list
            }
        )

    def next(self, counter: str) -> int:
        """The next number of a sequence (ids of turns, runs, ...), from 1."""
        value = self.counters.get(counter, 0) + 1
        self.counters[counter] = value
        return value

    def indexed_turns(self) -> list[Indexed[TurnRow]]:
        return [Indexed(t, tokens(t.body)) for t in self.turns.values() if t.body is not None]

    def indexed_items(self) -> list[Indexed[ItemRow]]:
        return [
            Indexed(r, tokens(r.body), 2 if r.item.sensitivity == "public" else 1)
            for r in self.items.values()
            if r.body is not None
        ]

    def indexed_episodes(self) -> list[Indexed[EpisodeRow]]:
        return [Indexed(r, tokens(r.body)) for r in self.episodes.values()]
