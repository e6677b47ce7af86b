"""What `memory.admin` answers: small frozen values, each with `to_json()` for the console's API
and the CLI's `--json` (times as ISO-8601 text in UTC).

Nothing here carries what history keeps raw: turns are shown without their tool calls' arguments
(only the tools' names) and with their error redacted; everything else is stored redacted
already (turns, items, profile bullets, dream reports).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date
from typing import Any, Generic, TypeVar

from nahida.clock import iso
from nahida.memory.core.models import (
    DreamRun,
    Episode,
    Evidence,
    JobRun,
    MemoryEvent,
    MemoryItem,
    ProfileEntry,
    Session,
    Turn,
)
from nahida.memory.core.safety import redact
from nahida.memory.core.scopes import Audience
from nahida.memory.core.sources import source_family
from nahida.memory.store.values import NameUse, RecallRecord

T = TypeVar("T")

_ITEM_TIMES = ("valid_from", "valid_until", "last_accessed", "created_at", "updated_at")


def item_json(item: MemoryItem) -> dict[str, Any]:
    data = item.to_json()
    data.update({k: iso(getattr(item, k)) for k in _ITEM_TIMES})
    data["evidence"] = [evidence_json(e) for e in item.evidence]
    return data


def evidence_json(evidence: Evidence) -> dict[str, Any]:
    data = evidence.to_json()
    if evidence.time is not None:
        data["time"] = iso(evidence.time)
    return data


def turn_json(turn: Turn) -> dict[str, Any]:
    """A turn without its tool calls' arguments (which history keeps as the model gave them)."""
    tools = [str(call.get("name", "")) for call in turn.tool_calls or ()]
    return {
        "id": turn.id,
        "session_id": turn.session_id,
        "chat": turn.chat,
        "role": turn.role,
        "content": turn.content,
        "time": turn.time.isoformat(),
        "speaker": turn.speaker,
        "speaker_name": turn.speaker_name,
        "message_id": turn.message_id,
        "tools": tools,
        "addressed": turn.addressed,
        "error": None if turn.error is None else redact(turn.error),
        "hidden_by": turn.hidden_by,
        "earlier_for": turn.earlier_for,
    }


def session_json(session: Session) -> dict[str, Any]:
    return {
        "id": session.id,
        "chat": session.chat,
        "title": session.title,
        "created_at": session.created_at.isoformat(),
        "updated_at": session.updated_at.isoformat(),
        "turn_count": session.turn_count,
    }


def episode_json(episode: Episode) -> dict[str, Any]:
    data = asdict(episode)
    data["keywords"] = list(episode.keywords)
    data.update({k: iso(getattr(episode, k)) for k in ("started_at", "ended_at", "created_at")})
    return data


def entry_json(entry: ProfileEntry) -> dict[str, Any]:
    data = asdict(entry)
    data.update({k: iso(getattr(entry, k)) for k in ("created_at", "updated_at")})
    return data


def event_json(event: MemoryEvent) -> dict[str, Any]:
    data = asdict(event)
    data["time"] = iso(event.time)
    return data


def dream_json(run: DreamRun) -> dict[str, Any]:
    data = run.to_json()
    data["error"] = None if run.error is None else redact(run.error)
    return data


def job_json(run: JobRun) -> dict[str, Any]:
    data = run.to_json()
    data["error"] = None if run.error is None else redact(run.error)
    return data


def to_json(value: object) -> Any:
    """A value of this module, or a record it holds, as JSON."""
    for kind, convert in _CONVERTERS:
        if isinstance(value, kind):
            return convert(value)
    own = getattr(value, "to_json", None)
    if own is None:
        raise TypeError(f"no JSON for {type(value).__name__}")
    return own()


_CONVERTERS: tuple[tuple[type[Any], Any], ...] = (
    (MemoryItem, item_json),
    (Turn, turn_json),
    (Session, session_json),
    (Episode, episode_json),
    (ProfileEntry, entry_json),
    (MemoryEvent, event_json),
    (DreamRun, dream_json),
    (JobRun, job_json),
)


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing: its rows, how many the listing holds, and where the page is."""

    rows: tuple[T, ...]
    total: int
    offset: int
    limit: int

    @property
    def more(self) -> bool:
        """Whether a later page has rows."""
        return self.offset + len(self.rows) < self.total

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": [to_json(row) for row in self.rows],
            "total": self.total,
            "offset": self.offset,
            "limit": self.limit,
        }


@dataclass(frozen=True, slots=True)
class Overview:
    """How much memory holds: items by kind, by scope family and by status; people, chats,
    sessions and turns in history; candidates waiting for review."""

    items: int
    by_kind: Mapping[str, int]
    by_family: Mapping[str, int]
    by_status: Mapping[str, int]
    people: int
    chats: int
    sessions: int
    turns: int
    pending_reviews: int

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("by_kind", "by_family", "by_status"):
            data[name] = dict(getattr(self, name))
        return data


@dataclass(frozen=True, slots=True)
class Day:
    """One day of a series, in the bot's time zone: items added by source family
    (`core.sources`), user turns answered with memory and the lines they were given, dream runs
    started and the sums of their proposals by fate."""

    day: date
    added: Mapping[str, int]
    recalls: int = 0
    recall_hits: int = 0
    dream_runs: int = 0
    proposals: int = 0
    applied: int = 0
    pending: int = 0
    rejected: int = 0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["day"] = self.day.isoformat()
        data["added"] = dict(self.added)
        return data


@dataclass(frozen=True, slots=True)
class Series:
    """The last days, oldest first, and the latest run of each background job."""

    days: tuple[Day, ...]
    jobs: tuple[JobRun, ...]

    def to_json(self) -> dict[str, Any]:
        return {"days": [d.to_json() for d in self.days], "jobs": [job_json(j) for j in self.jobs]}


@dataclass(frozen=True, slots=True)
class ListedItem:
    """An item as a listing shows it: its words, where it lives and who sees it there, how sure
    and where from, when it was last used (injected) and changed."""

    id: str
    title: str
    content: str
    kind: str
    scope: str
    sensitivity: str
    audience: Audience
    status: str
    confidence: float
    source: str
    last_used: float | None
    uses: int
    created_at: float
    updated_at: float

    @classmethod
    def of(cls, item: MemoryItem) -> ListedItem:
        return cls(
            item.id,
            item.title,
            item.content,
            item.kind,
            item.scope,
            item.sensitivity,
            Audience.of(item.scope, item.sensitivity),
            item.status,
            item.confidence,
            item.source,
            item.last_accessed,
            item.access_count,
            item.created_at,
            item.updated_at,
        )

    def to_json(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        data["audience"] = self.audience.to_json()
        data["source_family"] = source_family(self.source)
        for name in ("last_used", "created_at", "updated_at"):
            data[name] = iso(getattr(self, name))
        return data


@dataclass(frozen=True, slots=True)
class Provenance:
    """One piece of an item's evidence: the turn it names (by id, or by its message) with the
    conversation around it in its session, when history still has it."""

    evidence: Evidence
    turn: Turn | None = None
    context: tuple[Turn, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "evidence": evidence_json(self.evidence),
            "turn_id": None if self.turn is None else self.turn.id,
            "context": [turn_json(t) for t in self.context],
        }


@dataclass(frozen=True, slots=True)
class ItemPage:
    """An item's page: the item and who sees it; its audit trail (each change with before and
    after); where it came from; the history turns recall leaves out (it was forgotten) or shows
    as earlier (it was replaced) because of it; and its supersede chain both ways, the nearest
    first (each item with its validity)."""

    item: MemoryItem
    audience: Audience
    events: tuple[MemoryEvent, ...]
    provenance: tuple[Provenance, ...]
    hidden: tuple[Turn, ...]
    earlier: tuple[MemoryItem, ...]  # what it superseded, and what that superseded, …
    later: tuple[MemoryItem, ...]  # what superseded it, …

    def to_json(self) -> dict[str, Any]:
        return {
            "item": item_json(self.item),
            "audience": self.audience.to_json(),
            "events": [event_json(e) for e in self.events],
            "provenance": [p.to_json() for p in self.provenance],
            "hidden": [turn_json(t) for t in self.hidden],
            "earlier": [item_json(i) for i in self.earlier],
            "later": [item_json(i) for i in self.later],
        }


@dataclass(frozen=True, slots=True)
class Person:
    """A person: a user who spoke in a stored turn or has a profile; the names they spoke
    under, each in its chat, the latest used first."""

    user: str
    last_seen: float | None
    turns: int
    names: tuple[NameUse, ...] = ()

    @property
    def chats(self) -> tuple[str, ...]:
        """The chats they spoke in, the latest first."""
        return tuple(dict.fromkeys(n.chat for n in self.names))

    def to_json(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "last_seen": iso(self.last_seen),
            "turns": self.turns,
            "names": [n.to_json() for n in self.names],
            "chats": list(self.chats),
        }


@dataclass(frozen=True, slots=True)
class PersonPage:
    """A person's page: their profile bullets (active, every section), the behavioural rules
    for answering them, the first page of their items (of their `user:` scope or about them,
    any status) and of the episodes of the chats they spoke in."""

    person: Person
    profile: tuple[ProfileEntry, ...]
    rules: Page[ListedItem]
    items: Page[ListedItem]
    episodes: Page[Episode]

    def to_json(self) -> dict[str, Any]:
        return {
            "person": self.person.to_json(),
            "profile": [entry_json(e) for e in self.profile],
            "rules": self.rules.to_json(),
            "items": self.items.to_json(),
            "episodes": self.episodes.to_json(),
        }


@dataclass(frozen=True, slots=True)
class ChatSummary:
    """A chat with history: sessions, turns, its latest turn, how far dreaming has read it and
    whether dreaming is paused there."""

    chat: str
    sessions: int
    turns: int
    last_active: float
    dreamed_through: int = 0
    dreams_paused: bool = False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["last_active"] = iso(self.last_active)
        return data


@dataclass(frozen=True, slots=True)
class ChatPage:
    """A chat's page: its summary, the first page of its sessions (newest first), its
    behavioural rules (active, of its own scope) and its latest dream runs (without reports)."""

    chat: ChatSummary
    sessions: Page[Session]
    rules: Page[ListedItem]
    dreams: Page[DreamRun]

    def to_json(self) -> dict[str, Any]:
        return {
            "chat": self.chat.to_json(),
            "sessions": self.sessions.to_json(),
            "rules": self.rules.to_json(),
            "dreams": self.dreams.to_json(),
        }


@dataclass(frozen=True, slots=True)
class TranscriptTurn:
    """A turn of a transcript, with what its prompt was given from memory (if recorded)."""

    turn: Turn
    recall: RecallRecord | None = None

    def to_json(self) -> dict[str, Any]:
        data = turn_json(self.turn)
        data["recall"] = None if self.recall is None else self.recall.to_json()
        return data


@dataclass(frozen=True, slots=True)
class Transcript:
    """A session, its episode (once it ended) and a page of its turns in order."""

    session: Session
    episode: Episode | None
    turns: Page[TranscriptTurn]

    def to_json(self) -> dict[str, Any]:
        return {
            "session": session_json(self.session),
            "episode": None if self.episode is None else episode_json(self.episode),
            "turns": self.turns.to_json(),
        }
