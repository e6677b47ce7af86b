"""The values a store's tables take and give (matches, deliveries, vector spaces, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

from nahida.memory.core.models import (
    Candidate,
    Episode,
    MemoryItem,
    ProfileEntry,
)

if TYPE_CHECKING:  # numpy loads only where vectors are used (not for `nahida --help`)
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]  # one L2-normalised float32 row


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
