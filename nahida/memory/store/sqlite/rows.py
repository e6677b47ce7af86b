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
    return Turn(
        id=row["id"],
        session_id=row["session_id"],
        chat=row["chat"],
        role=row["role"],
        content=row["content"],
        time=moment(row["time"]),
        speaker=row["speaker"],
        speaker_name=row["speaker_name"],
        message_id=row["message_id"],
        tool_calls=json.loads(row["tool_calls"]) if row["tool_calls"] else None,
        addressed=bool(row["addressed"]),
        error=row["error"],
        hidden_by=row["hidden_by"],
        earlier_for=row["earlier_for"],
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
