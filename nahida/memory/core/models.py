"""Memory records (DESIGN §3): sessions and turns, items, candidates, evidence, audit events,
search hits and job runs. Plain frozen values; no storage code.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from nahida.clock import iso
from nahida.scheduler import JobOutcome

Status = Literal["active", "archived", "superseded", "rejected"]
Sensitivity = Literal["public", "private"]
CommitMode = Literal["auto_safe", "manual_review", "auto_full"]
INJECTED_CONFIDENCE = 0.3  # an item less sure than this is never injected (DESIGN §5.7)


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(3)}"


TITLE_CHARS = 40


def session_title(text: str) -> str:
    """A session's title: the words of its first user turn, on one line, cut short."""
    return " ".join(text.split())[:TITLE_CHARS] or "…"


RUN_REF = "dream:"  # an evidence ref naming the dream run that read the cited turns


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a memory came from: a message (chat + message id), a turn, or a file. `time` is when
    it was said or written, except for a dream run's reference (`RUN_REF`), whose time is when
    the run read the turns it cites."""

    chat: str | None = None
    message_id: str | None = None
    turn_id: int | None = None
    time: float | None = None
    ref: str | None = None  # e.g. "MEMORY.md:12" or "import:file.jsonl:3"
    quote: str | None = None  # the words that support it, when short
    name: str | None = None  # how the one who said it was called there (memory lines name them)

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
    op: str = "add"  # or, from a dream, "update" / "supersede" / "archive" of `target`
    target: str | None = None  # the item an op acts on
    note: str = ""  # why it was proposed (a dream's reason), kept in the audit


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


WriteOutcome = Literal[
    "created", "merged", "superseded", "updated", "archived", "pending", "refused", "rejected"
]


@dataclass(frozen=True, slots=True)
class WriteResult:
    outcome: WriteOutcome
    item_id: str | None = None
    candidate_id: str | None = None
    reason: str = ""
    redacted: bool = False
    replaced: str | None = None  # the item a supersede replaced


@dataclass(frozen=True, slots=True)
class Explanation:
    """`/memory why`: an item, its audit trail, the item that replaced it (if any), and the
    history turns it was learned from that recall now leaves out (forgotten) or marks as earlier
    (replaced)."""

    item: MemoryItem
    events: list[MemoryEvent]
    replaced_by: str | None
    hidden: list[Turn] = field(default_factory=list)


# history ----------------------------------------------------------------------------------------


def moment(epoch: float) -> datetime:
    """Epoch seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(epoch, UTC)


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    chat: str
    title: str
    created_at: datetime
    updated_at: datetime
    turn_count: int


@dataclass(frozen=True, slots=True)
class Turn:
    id: int
    session_id: str
    chat: str
    role: str
    content: str
    time: datetime
    speaker: str | None = None
    speaker_name: str | None = None
    message_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    addressed: bool = True
    error: str | None = None
    hidden_by: str | None = None  # the forgotten item it was evidence of: out of recall
    earlier_for: str | None = None  # the replaced item it was evidence of: recalled as earlier

    @staticmethod
    def spoken(turns: Sequence[Turn]) -> list[Spoken]:
        """What a prompt needs of each of `turns`, read from a window's rows without building
        its turns where the window has them (`TurnRows.spoken`), which is much cheaper."""
        from_rows = getattr(turns, "spoken", None)
        if from_rows is not None:
            lines: list[Spoken] = from_rows()
            return lines
        return [(t.id, t.role, t.content, t.speaker_name) for t in turns]


# A turn as a prompt shows it: (id, role, content, speaker name).
Spoken = tuple[int, str, str, str | None]


@dataclass(frozen=True, slots=True)
class NewTurn:
    """What the runner (or an import) records; `time` is epoch seconds."""

    chat: str
    role: str
    content: str
    time: float
    speaker: str | None = None
    speaker_name: str | None = None
    message_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    addressed: bool = True
    error: str | None = None

    @property
    def indexed(self) -> bool:
        """Whether the turn enters the search index (what people and the bot said)."""
        return self.role in ("user", "assistant") and bool(self.content)

    def stored(self, turn_id: int, session_id: str) -> Turn:
        return Turn(
            id=turn_id,
            session_id=session_id,
            chat=self.chat,
            role=self.role,
            content=self.content,
            time=moment(self.time),
            speaker=self.speaker,
            speaker_name=self.speaker_name,
            message_id=self.message_id,
            tool_calls=self.tool_calls,
            addressed=self.addressed,
            error=self.error,
        )


# search -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hit:
    """One recalled line: a memory item, an older history turn or an episode."""

    kind: Literal["turn", "item", "episode"]
    id: str
    text: str
    score: float
    scope: str
    message_ids: list[str]
    time: float
    speaker: str | None = None
    item: MemoryItem | None = field(default=None, compare=False)
    earlier: bool = False  # a turn saying what a newer memory has since replaced

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "id": self.id,
            "text": self.text,
            "score": round(self.score, 6),
            "scope": self.scope,
            "message_ids": self.message_ids,
            "time": iso(self.time),
        }


# background jobs --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobRun:
    """One run of a background job (`nahida doctor` shows the latest of each)."""

    id: int
    job: str
    holder: str  # which process ran it
    started_at: float
    finished_at: float | None
    outcome: JobOutcome
    counts: dict[str, int]
    error: str | None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["started_at"] = iso(self.started_at)
        data["finished_at"] = iso(self.finished_at)
        return data


# dreaming ---------------------------------------------------------------------------------------

DreamOutcome = Literal["running", "ok", "degraded", "failed", "skipped", "interrupted"]


@dataclass(frozen=True, slots=True)
class Proposal:
    """One op a dream model proposed, and what became of it (`fate`): an outcome of the write
    path (created, merged, superseded, updated, archived), pending (for `/memory review`), or
    rejected (by `guard`, e.g. "evidence", with `detail`)."""

    op: str
    kind: str
    content: str
    scope: str
    item: str | None = None  # the item it acts on
    evidence: tuple[str, ...] = ()  # the turns it cites
    confidence: float = 0.0
    reason: str = ""
    fate: str = "rejected"
    guard: str | None = None
    detail: str = ""
    item_id: str | None = None  # the item it made or changed
    candidate_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["evidence"] = list(self.evidence)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Proposal:
        values = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        values["evidence"] = tuple(data.get("evidence", ()))
        return cls(**values)

    def carries(self, item_id: str, texts: Collection[str]) -> bool:
        """Whether it carried the words of a purged item (`texts`: what the item said): it made
        or changed the item, or it made none and proposed a change to it or said one of them."""
        if self.item_id == item_id:
            return True
        return self.item_id is None and (self.item == item_id or self.content in texts)


@dataclass(frozen=True, slots=True)
class DreamRun:
    """One dream run over one chat (`dream_runs`)."""

    id: str
    chat: str
    trigger: str  # schedule | command | cli
    started_at: float
    holder: str = ""
    from_turn: int = 0  # the first turn read
    through_turn: int = 0  # the last turn read (the chat's cursor after the run)
    turns: int = 0
    model: str = ""
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    proposals: int = 0
    applied: int = 0
    pending: int = 0
    rejected: int = 0
    outcome: DreamOutcome = "running"
    error: str | None = None
    report: tuple[Proposal, ...] = ()  # the first proposals (a few hundred), with their fates
    fates: dict[str, int] = field(default_factory=dict)  # every proposal counted by its fate
    finished_at: float | None = None

    @property
    def seconds(self) -> float:
        return 0.0 if self.finished_at is None else self.finished_at - self.started_at

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["report"] = [p.to_json() for p in self.report]
        data["started_at"] = iso(self.started_at)
        data["finished_at"] = iso(self.finished_at)
        return data


# working memory, profiles, episodes -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WarmSummary:
    """A session's warm summary (DESIGN §7): what its rounds older than the hot window said."""

    session_id: str
    chat: str
    summary: str = ""
    through_turn: int = 0  # the last turn the summary covers
    rounds: int = 0  # rounds it covers since it was last rolled into cold facts
    total_rounds: int = 0  # rounds ever summarised
    rolls: int = 0
    failures: int = 0  # compactions failed in a row (they retry)
    last_error: str | None = None
    updated_at: float = 0.0


PROFILE_SECTIONS: tuple[str, ...] = (
    "基础特征",
    "身份与背景",
    "目标与方向",
    "工作与沟通方式",
    "心理与情绪",
    "个人语言与激励",
    "与 Agent 的约定",
)
ProfileMode = Literal["append", "overwrite", "merge"]


@dataclass(frozen=True, slots=True)
class ProfileEntry:
    """One bullet of a person's profile. `sensitivity` public: said where others could hear it
    (a group), so a group may see it; private: only the person's private chat and the CLI."""

    id: str  # "p_7f3a2c"
    user: str  # UserKey
    section: str  # one of PROFILE_SECTIONS
    text: str
    sensitivity: str = "private"
    source: str = "agent_proactive"
    chat: str | None = None  # where it was said
    status: str = "active"  # active | archived
    created_at: float = 0.0
    updated_at: float = 0.0


@dataclass(frozen=True, slots=True)
class Pinned:
    """What every prompt of a viewer carries: the profile card and the rules in force (each
    None when there is nothing), and whether one of those rules says which language to answer
    in (then the prompt's default-language line gives way to it)."""

    profile: str | None
    rules: str | None
    language: bool = False


@dataclass(frozen=True, slots=True)
class Episode:
    """One finished session, summarised (the Ethan layer 4): recallable in its chat."""

    id: str  # "e_7f3a2c"
    session_id: str
    chat: str
    summary: str
    keywords: tuple[str, ...]
    started_at: float
    ended_at: float
    turn_count: int
    created_at: float = 0.0
