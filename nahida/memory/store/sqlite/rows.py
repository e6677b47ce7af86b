"""SQLite rows → memory records (and the JSON columns back and forth)."""

from __future__ import annotations

import json
from typing import Any

from nahida.memory.models import (
    Candidate,
    JobRun,
    MemoryEvent,
    MemoryItem,
    Session,
    Turn,
    load_evidence,
    moment,
)

# The columns `turn` reads, in its order: a turn is built by position, not by name (several
# microseconds less a turn, and a prompt window reads up to forty of them a message).
TURN_COLUMNS = (
    "id, session_id, chat, role, content, time, speaker, speaker_name, message_id, tool_calls,"
    " addressed, error, hidden_by, earlier_for"
)

# The fields of `TurnMatch` but its score, in its order (a row of them plus a score is one).
TURN_MATCH_COLUMNS = (
    "t.id, t.session_id, t.chat, t.content, t.message_id, t.time, t.speaker, t.speaker_name,"
    " t.earlier_for"
)


def item(row: Any) -> MemoryItem:
    return MemoryItem(
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


def candidate(row: Any) -> Candidate:
    return Candidate(
        scope=row["scope"],
        kind=row["kind"],
        content=row["content"],
        source=row["source"],
        confidence=row["confidence"],
        importance=row["importance"],
        sensitivity=row["sensitivity"],
        title=row["title"],
        subject_user=row["subject_user"],
        speaker_user=row["speaker_user"],
        slot=row["slot"],
        evidence=load_evidence(row["evidence"]),
        valid_from=row["valid_from"],
        valid_until=row["valid_until"],
        op=row["op"],
        target=row["target"],
        note=row["note"],
    )


def event(row: Any) -> MemoryEvent:
    return MemoryEvent(
        row["id"],
        row["item_id"],
        row["action"],
        row["actor"],
        json.loads(row["before"]) if row["before"] else None,
        json.loads(row["after"]) if row["after"] else None,
        row["reason"],
        row["time"],
    )


def session(row: Any) -> Session:
    return Session(
        row["id"],
        row["chat"],
        row["title"],
        moment(row["created_at"]),
        moment(row["updated_at"]),
        row["turn_count"],
    )


def turn(row: Any) -> Turn:
    """A turn from a row of `TURN_COLUMNS`."""
    (id_, session_id, chat, role, content, at, speaker, name, message_id, tool_calls, addressed,
     error, hidden_by, earlier_for) = row  # fmt: skip
    return Turn(
        id_,
        session_id,
        chat,
        role,
        content,
        moment(at),
        speaker,
        name,
        message_id,
        json.loads(tool_calls) if tool_calls else None,
        bool(addressed),
        error,
        hidden_by,
        earlier_for,
    )


def job_run(row: Any) -> JobRun:
    return JobRun(
        id=row["id"],
        job=row["job"],
        holder=row["holder"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        outcome=row["outcome"],
        counts=json.loads(row["counts"]),
        error=row["error"],
    )


def dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)
