"""Memory records: items, candidates, evidence, audit events (DESIGN §3)."""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Kind = Literal["fact", "preference", "decision", "task", "procedure", "warning", "summary"]
KINDS: tuple[str, ...] = (
    "fact",
    "preference",
    "decision",
    "task",
    "procedure",
    "warning",
    "summary",
)
Status = Literal["active", "archived", "superseded", "rejected"]
Sensitivity = Literal["public", "private"]
CommitMode = Literal["auto_safe", "manual_review", "auto_full"]


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(3)}"


def iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat()


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a memory came from: a message (chat + message id), a turn, or a file."""

    chat: str | None = None
    message_id: str | None = None
    turn_id: int | None = None
    time: float | None = None
    ref: str | None = None  # e.g. "MEMORY.md:12" or "import:file.jsonl:3"
    quote: str | None = None  # the words that support it, when short

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def dump_evidence(evidence: tuple[Evidence, ...] | list[Evidence]) -> str:
    return json.dumps([e.to_json() for e in evidence], ensure_ascii=False)


def load_evidence(text: str | None) -> tuple[Evidence, ...]:
    if not text:
        return ()
    return tuple(Evidence.from_json(e) for e in json.loads(text))


@dataclass(frozen=True, slots=True)
class MemoryItem:
    id: str
    scope: str
    kind: str
    content: str
    status: str = "active"
    title: str = ""
    confidence: float = 0.5
    importance: float = 0.5
    sensitivity: str = "private"
    source: str = "user_explicit"
    subject_user: str | None = None
    speaker_user: str | None = None
    slot: str | None = None
    evidence: tuple[Evidence, ...] = ()
    supersedes: str | None = None
    valid_from: float | None = None
    valid_until: float | None = None
    last_accessed: float | None = None
    access_count: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0

    @property
    def message_ids(self) -> list[str]:
        return [e.message_id for e in self.evidence if e.message_id]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["evidence"] = [e.to_json() for e in self.evidence]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MemoryItem:
        values = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        values["evidence"] = tuple(Evidence.from_json(e) for e in data.get("evidence", []))
        return cls(**values)

    @classmethod
    def from_row(cls, row: Any) -> MemoryItem:
        return cls(
            id=row["id"],
            scope=row["scope"],
            kind=row["kind"],
            content=row["content"],
            status=row["status"],
            title=row["title"],
            confidence=row["confidence"],
            importance=row["importance"],
            sensitivity=row["sensitivity"],
            source=row["source"],
            subject_user=row["subject_user"],
            speaker_user=row["speaker_user"],
            slot=row["slot"],
            evidence=load_evidence(row["evidence"]),
            supersedes=row["supersedes"],
            valid_from=row["valid_from"],
            valid_until=row["valid_until"],
            last_accessed=row["last_accessed"],
            access_count=row["access_count"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


@dataclass(frozen=True, slots=True)
class Candidate:
    """A proposed memory, before the commit mode decides its fate."""

    scope: str
    kind: str
    content: str
    source: str
    confidence: float = 0.5
    importance: float = 0.5
    sensitivity: str = "private"
    title: str = ""
    subject_user: str | None = None
    speaker_user: str | None = None
    slot: str | None = None  # what it is about, e.g. "pref:乌龙茶": a newer value supersedes
    evidence: tuple[Evidence, ...] = field(default_factory=tuple)
    valid_from: float | None = None
    valid_until: float | None = None


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    id: int
    item_id: str
    action: str
    actor: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    reason: str | None
    time: float


WriteOutcome = Literal["created", "merged", "superseded", "pending", "refused", "rejected"]


@dataclass(frozen=True, slots=True)
class WriteResult:
    outcome: WriteOutcome
    item_id: str | None = None
    candidate_id: str | None = None
    reason: str = ""
    redacted: bool = False
    replaced: str | None = None  # the item a supersede replaced
