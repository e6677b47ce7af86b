"""PostgreSQL rows → memory records (and the JSON columns back and forth)."""

from __future__ import annotations

import json
from typing import Any

from nahida.memory.core.models import (
    Candidate,
    Evidence,
    JobRun,
    MemoryEvent,
    MemoryItem,
    Session,
    Turn,
    moment,
)

# The columns `turn` reads, in its order.
TURN_COLUMNS = (
    "id, session_id, chat, role, content, time, speaker, speaker_name, message_id, tool_calls,"
    " addressed, error, hidden_by, earlier_for"
)

# The fields of `TurnMatch` but its score, in its order (a row of them plus a score is one).
TURN_MATCH_COLUMNS = (
    "r.id, r.session_id, r.chat, r.content, r.message_id, r.time, r.speaker, r.speaker_name,"
    " r.earlier_for"
)

SESSION_COLUMNS = "id, chat, title, created_at, updated_at, turn_count"

ITEM_COLUMNS = (
    "id, scope, kind, title, content, status, confidence, importance, sensitivity, source,"
    " subject_user, speaker_user, slot, evidence, supersedes, valid_from, valid_until,"
    " last_accessed, access_count, created_at, updated_at"
)

CANDIDATE_COLUMNS = (
    "id, scope, kind, title, content, confidence, importance, sensitivity, source, subject_user,"
    " speaker_user, slot, evidence, status, item_id, reason, created_at, decided_at, decided_by,"
    " valid_from, valid_until, op, target, note"
)


def dump(value: Any) -> str | None:
    """A value for a jsonb column (bound as text, cast in the statement)."""
    return None if value is None else json.dumps(value, ensure_ascii=False)


def evidence(value: Any) -> tuple[Evidence, ...]:
    return tuple(Evidence.from_json(e) for e in value or ())


def session(row: Any) -> Session:
    """A session from a row of `SESSION_COLUMNS`."""
    id_, chat, title, created, updated, turns = row
    return Session(id_, chat, title, moment(created), moment(updated), int(turns))


def turn(row: Any) -> Turn:
    """A turn from a row of `TURN_COLUMNS`."""
    (id_, session_id, chat, role, content, at, speaker, name, message_id, tool_calls, addressed,
     error, hidden_by, earlier_for) = row  # fmt: skip
    return Turn(
        int(id_),
        session_id,
        chat,
        role,
        content,
        moment(at),
        speaker,
        name,
        message_id,
        tool_calls or None,
        bool(addressed),
        error,
        hidden_by,
        earlier_for,
    )


def item(row: Any) -> MemoryItem:
    """An item from a row of `ITEM_COLUMNS` (a tuple, in that order)."""
    (id_, scope, kind, title, content, status, confidence, importance, sensitivity, source,
     subject_user, speaker_user, slot, evidence_, supersedes, valid_from, valid_until,
     last_accessed, access_count, created_at, updated_at) = row[:21]  # fmt: skip
    return MemoryItem(
        id=id_,
        scope=scope,
        kind=kind,
        content=content,
        status=status,
        title=title,
        confidence=confidence,
        importance=importance,
        sensitivity=sensitivity,
        source=source,
        subject_user=subject_user,
        speaker_user=speaker_user,
        slot=slot,
        evidence=evidence(evidence_),
        supersedes=supersedes,
        valid_from=valid_from,
        valid_until=valid_until,
        last_accessed=last_accessed,
        access_count=int(access_count),
        created_at=created_at,
        updated_at=updated_at,
    )


def candidate(row: Any) -> Candidate:
    """A candidate from a row of `CANDIDATE_COLUMNS`."""
    (_, scope, kind, title, content, confidence, importance, sensitivity, source, subject_user,
     speaker_user, slot, evidence_, _, _, _, _, _, _, valid_from, valid_until, op, target,
     note) = row  # fmt: skip
    return Candidate(
        scope=scope,
        kind=kind,
        content=content,
        source=source,
        confidence=confidence,
        importance=importance,
        sensitivity=sensitivity,
        title=title,
        subject_user=subject_user,
        speaker_user=speaker_user,
        slot=slot,
        evidence=evidence(evidence_),
        valid_from=valid_from,
        valid_until=valid_until,
        op=op,
        target=target,
        note=note,
    )


def event(row: Any) -> MemoryEvent:
    id_, item_id, action, actor, before, after, reason, at = row
    return MemoryEvent(int(id_), item_id, action, actor, before, after, reason, at)


def job_run(row: Any) -> JobRun:
    id_, job, holder, started_at, finished_at, outcome, counts, error = row
    return JobRun(
        id=int(id_),
        job=job,
        holder=holder,
        started_at=started_at,
        finished_at=finished_at,
        outcome=outcome,
        counts=dict(counts),
        error=error,
    )
