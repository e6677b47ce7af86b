"""The values a store's tables take and give (matches, deliveries, vector spaces, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, TypeVar

from nahida.clock import iso
from nahida.memory.core.models import (
    Candidate,
    Episode,
    Hit,
    MemoryItem,
    ProfileEntry,
)
from nahida.memory.core.scopes import Visibility, scope_family

if TYPE_CHECKING:  # numpy loads only where vectors are used (not for `nahida --help`)
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]  # one L2-normalised float32 row

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class StoreCapabilities:
    backend: str  # "sqlite"
    driver: str
    version: str
    fts: bool
    vectors: bool
    vectors_version: str | None = None


@dataclass(frozen=True, slots=True)
class TextSearch:
    """A lexical search. `terms=None`: no words, the latest rows (of the window, if any)."""

    terms: tuple[str, ...] | None
    limit: int
    at: float | None = None  # nothing said or stored after this moment
    window: tuple[float, float] | None = None  # only rows in [start, end)


class TurnMatch(NamedTuple):
    """A turn found by search, with what recall ranks and shows; `score` higher is better.
    (A named tuple: searches return many, and most are dropped after ranking.)"""

    id: int
    session_id: str
    chat: str
    content: str
    message_id: str | None
    time: float
    speaker: str | None
    speaker_name: str | None
    earlier_for: str | None = None  # evidence of a replaced item: what held earlier
    score: float = 0.0


# What became of the reply to a message due an answer (a user turn addressed to the bot):
# `pending` stored, not answered yet (or the bot stopped first); `delivered` the implementation
# acknowledged the reply; `undelivered` it never did (the reply was given up); `none` handled
# without a delivery on record (history stored before deliveries were recorded).
Fate = Literal["pending", "delivered", "undelivered", "none"]
FATES: tuple[Fate, ...] = ("pending", "delivered", "undelivered", "none")


class Delivery(NamedTuple):
    """A message due an answer and the fate of its reply; `error` why it went undelivered."""

    turn_id: int
    chat: str
    message_id: str | None
    time: float
    fate: Fate
    error: str | None


class KnownMessage(NamedTuple):
    """A stored turn found again by its message (`TurnRows.message`)."""

    id: int
    session_id: str
    addressed: bool
    fate: Fate | None  # None for a turn no answer was due (observed, the bot's own)


@dataclass(frozen=True, slots=True)
class ItemMatch:
    """An active item found by search; `body` is its indexed tokens, space-separated."""

    item: MemoryItem
    score: float
    body: str


class EpisodeMatch(NamedTuple):
    """An episode found by search; `score` higher is better."""

    episode: Episode
    score: float


Embedded = Literal["item", "turn", "episode"]  # what carries an embedding


@dataclass(frozen=True, slots=True)
class VectorSpace:
    """Where vectors come from; vectors of two spaces never meet in one query."""

    provider: str
    model: str
    dimension: int


@dataclass(frozen=True, slots=True)
class VectorSearch:
    """A nearest-neighbour search in one space, under the same moment and window as `TextSearch`;
    `score` of a match is the cosine similarity (higher is better)."""

    vector: Vector
    space: VectorSpace
    limit: int
    at: float | None = None
    window: tuple[float, float] | None = None


class Unembedded(NamedTuple):
    """A row whose text has no vector yet: `key` orders the rows of its kind. The text embedded
    is `title: content`; a turn's title is its speaker's name (measured on LoCoMo: vector
    recall@10 0.16 without the name, 0.52 with it), an episode's its keywords."""

    key: int
    title: str
    content: str
    hash: str | None = None  # the text's hash when it was looked at before


@dataclass(frozen=True, slots=True)
class VectorCounts:
    stored: int  # vectors in the space
    other: int  # vectors of other spaces (an earlier model)
    pending: int  # rows never looked at, or whose text has no vector in the space
    skipped: int  # rows too short to be worth a vector


class CandidateNote(NamedTuple):
    """A candidate row with what became of it, as the daily notes tell it."""

    id: str
    candidate: Candidate
    status: str  # pending, accepted, rejected, merged, refused
    item_id: str | None
    reason: str
    created_at: float
    decided_at: float | None  # = created_at when decided as it was proposed
    decided_by: str | None  # a reviewer (decided later)


class SectionEntry(NamedTuple):
    """An active profile bullet with its stored tokens (space-separated), for comparing bullets."""

    entry: ProfileEntry
    tokens: str


class DueChat(NamedTuple):
    chat: str
    cursor: int  # the last turn dreamed


class FileState(NamedTuple):
    """A projected Markdown file as last written or read (`markdown_files`)."""

    path: str  # relative to the workspace
    hash: str
    mtime: float
    snapshot: dict[str, dict[str, str]]  # id → {"group": kind or section, "text": …}
    rendered_at: float


@dataclass(frozen=True, slots=True)
class CommandMessage:
    """A chat command as a message: where, its id and its event time."""

    chat: str
    message_id: str
    time: float


# the read models of the admin console (`memory.admin`) ------------------------------------------

Span = tuple[float, float]  # [start, end) in epoch seconds: one day of a series


class Slice(NamedTuple, Generic[R]):
    """One page of a listing, and how many rows the whole listing holds."""

    rows: list[R]
    total: int


class Tally(NamedTuple):
    """Items counted by scope family (`global`, `chat`, `user`), kind and status."""

    family: str
    kind: str
    status: str
    total: int


class HistoryTotals(NamedTuple):
    chats: int  # with at least one session
    sessions: int
    turns: int


class SpanCount(NamedTuple):
    """Rows counted in one span of a series by `key` (`span`: the span's place among those
    asked for)."""

    span: int
    key: str
    total: int


class RecallTally(NamedTuple):
    span: int
    recalls: int  # user turns answered with memory
    hits: int  # lines of memory they were given


class DreamTally(NamedTuple):
    """Dream runs started in one span, with the sums of their counts."""

    span: int
    runs: int
    proposals: int
    applied: int
    pending: int
    rejected: int


@dataclass(frozen=True, slots=True)
class ItemFilter:
    """Which items a listing holds; every field that is not None narrows it.

    `family`: the scope's family (`global`, `chat`, `user`); `sources`/`source_prefixes`: a
    source named, or starting so (either matches); `person`: items of the person's `user:`
    scope or about them (`subject_user`); `created`: created in [start, end); `ids`: only these;
    `visibility`: only what it allows (any status).
    """

    scopes: tuple[str, ...] | None = None
    family: str | None = None
    kind: str | None = None
    status: str | None = None
    sources: tuple[str, ...] | None = None
    source_prefixes: tuple[str, ...] = ()
    person: str | None = None
    created: Span | None = None
    ids: tuple[str, ...] | None = None
    visibility: Visibility | None = None

    def holds(self, item: MemoryItem) -> bool:
        """Whether the item is one the filter keeps (what every backend's query means)."""
        sourced = self.sources is None and not self.source_prefixes
        return (
            (self.scopes is None or item.scope in self.scopes)
            and (self.family is None or scope_family(item.scope) == self.family)
            and self.kind in (None, item.kind)
            and self.status in (None, item.status)
            and (
                sourced
                or item.source in (self.sources or ())
                or item.source.startswith(self.source_prefixes)
            )
            and (
                self.person is None
                or item.scope == f"user:{self.person}"
                or item.subject_user == self.person
            )
            and (self.created is None or self.created[0] <= item.created_at < self.created[1])
            and (self.ids is None or item.id in self.ids)
            and (self.visibility is None or self.visibility.sees(item.scope, item.sensitivity))
        )


class ChatActivity(NamedTuple):
    """A chat with history: its sessions and turns, and its latest turn's time."""

    chat: str
    sessions: int
    turns: int
    last_active: float


class Seen(NamedTuple):
    """A person: a user who spoke in a stored turn, or has an active profile bullet."""

    user: str
    last_seen: float | None  # their latest turn (None: never spoke in a stored turn)
    turns: int


class NameUse(NamedTuple):
    """A name a person spoke under in a chat (None: no name), how often and when."""

    user: str
    name: str | None
    chat: str
    turns: int
    first_seen: float
    last_seen: float

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "chat": self.chat,
            "turns": self.turns,
            "first_seen": iso(self.first_seen),
            "last_seen": iso(self.last_seen),
        }


@dataclass(frozen=True, slots=True)
class RecallRecord:
    """What a user turn's prompt was given from memory: the ids of the hits injected, each
    kind best first. `time` is when the answer was stored with it."""

    turn_id: int
    chat: str
    time: float
    items: tuple[str, ...] = ()
    turns: tuple[int, ...] = ()
    episodes: tuple[str, ...] = ()

    @property
    def hits(self) -> int:
        return len(self.items) + len(self.turns) + len(self.episodes)

    @classmethod
    def of(cls, turn_id: int, chat: str, time: float, hits: Sequence[Hit]) -> RecallRecord:
        """The record of the hits a prompt kept (`pack`); a turn hit's id is `t_<turn id>`."""
        return cls(
            turn_id,
            chat,
            time,
            tuple(h.id for h in hits if h.kind == "item"),
            tuple(int(h.id.removeprefix("t_")) for h in hits if h.kind == "turn"),
            tuple(h.id for h in hits if h.kind == "episode"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "chat": self.chat,
            "time": iso(self.time),
            "items": list(self.items),
            "turns": list(self.turns),
            "episodes": list(self.episodes),
        }
