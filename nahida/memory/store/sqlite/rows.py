"""SQLite rows → memory records (and the JSON columns back and forth)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, overload

from nahida.memory.core.models import (
    Candidate,
    JobRun,
    MemoryEvent,
    MemoryItem,
    Session,
    Spoken,
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


class TurnRows(Sequence[Turn]):
    """Turns kept as the rows they were read as (plain tuples of `TURN_COLUMNS`) and built when
    first looked at: a prompt's window often needs only what `Turn.spoken` reads, so the database
    thread does not build turns nobody looks at."""

    __slots__ = ("_built", "_rows")

    def __init__(self, found: list[tuple[Any, ...]]) -> None:
        self._rows = found
        self._built: list[Turn] | None = None

    def _turns(self) -> list[Turn]:
        if self._built is None:
            self._built = [turn(row) for row in self._rows]
        return self._built

    def spoken(self) -> list[Spoken]:
        """`Turn.spoken` of these turns, from their rows (no turn is built)."""
        return [(row[0], row[3], row[4], row[7]) for row in self._rows]

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> Turn: ...

    @overload
    def __getitem__(self, index: slice) -> list[Turn]: ...

    def __getitem__(self, index: int | slice) -> Turn | list[Turn]:
        return self._turns()[index]

    def __iter__(self) -> Iterator[Turn]:
        return iter(self._turns())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TurnRows | list | tuple):
            return self._turns() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like a list

    def __repr__(self) -> str:
        return f"TurnRows({self._turns()!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (TurnRows, (self._rows,))


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
