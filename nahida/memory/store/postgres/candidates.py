"""Candidates for long-term memory, with their fate, in PostgreSQL."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from nahida.memory.core.models import Candidate, dump_evidence
from nahida.memory.store.postgres import rows
from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.values import CandidateNote

_SELECT = f"SELECT {rows.CANDIDATE_COLUMNS} FROM memory_candidates"
_INSERT = (
    f"INSERT INTO memory_candidates ({rows.CANDIDATE_COLUMNS}) VALUES"
    " (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s, %s,"
    " %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING"
)


def _note(row: Sequence[Any]) -> CandidateNote:
    """A note from a row of `rows.CANDIDATE_COLUMNS`."""
    return CandidateNote(
        row[0], rows.candidate(row), row[13], row[14], row[15] or "", row[16], row[17], row[18]
    )


class CandidateTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def add(
        self,
        candidate_id: str,
        candidate: Candidate,
        status: str,
        item_id: str | None,
        reason: str,
        at: float,
    ) -> bool:
        c = candidate
        values = (
            candidate_id, c.scope, c.kind, c.title, c.content, c.confidence, c.importance,
            c.sensitivity, c.source, c.subject_user, c.speaker_user, c.slot,
            dump_evidence(c.evidence), status, item_id, reason, at,
            None if status == "pending" else at, None, c.valid_from, c.valid_until, c.op,
            c.target, c.note,
        )  # fmt: skip
        return self.conn.execute(_INSERT, values).rowcount == 1

    def pending(
        self, scopes: Sequence[str] | None, limit: int
    ) -> list[tuple[str, Candidate, float]]:
        sql, params = f"{_SELECT} WHERE status = 'pending'", list[Any]()
        if scopes is not None:
            sql, params = f"{sql} AND scope = ANY(%s)", [list(scopes)]
        found = self.conn.execute(f"{sql} ORDER BY created_at, id LIMIT {limit:d}", params)
        return [(r[0], rows.candidate(r), r[16]) for r in found]

    def pending_count(self) -> int:
        row = self.conn.execute(
            "SELECT count(*) FROM memory_candidates WHERE status = 'pending'"
        ).fetchone()
        return int(row[0]) if row else 0

    def get_pending(self, candidate_id: str) -> Candidate | None:
        row = self.conn.execute(
            f"{_SELECT} WHERE id = %s AND status = 'pending'", (candidate_id,)
        ).fetchone()
        return rows.candidate(row) if row else None

    def decide(
        self, candidate_id: str, status: str, item_id: str | None, actor: str, at: float
    ) -> None:
        self.conn.execute(
            "UPDATE memory_candidates SET status = %s, item_id = %s, decided_at = %s,"
            " decided_by = %s WHERE id = %s",
            (status, item_id, at, actor, candidate_id),
        )

    def proposed(self, after: tuple[float, str], before: float, limit: int) -> list[CandidateNote]:
        found = self.conn.execute(
            f"{_SELECT} WHERE (created_at, id) > (%s, %s) AND created_at < %s"
            f" ORDER BY created_at, id LIMIT {limit:d}",
            (*after, before),
        )
        return [_note(r) for r in found]

    def cited_turns(
        self, source: str, chat: str, turn_ids: Sequence[int], since: float
    ) -> set[int]:
        if not turn_ids:
            return set()
        found = self.conn.execute(
            "SELECT DISTINCT e ->> 'turn_id' FROM memory_candidates c,"
            " jsonb_array_elements(c.evidence) AS e WHERE c.created_at >= %s AND c.source = %s"
            " AND e ->> 'chat' = %s AND e ->> 'turn_id' = ANY(%s)",
            (since, source, chat, [str(int(t)) for t in turn_ids]),
        )
        return {int(r[0]) for r in found}

    def decided(self, after: tuple[float, str], before: float, limit: int) -> list[CandidateNote]:
        found = self.conn.execute(
            f"{_SELECT} WHERE decided_at > created_at AND (decided_at, id) > (%s, %s)"
            f" AND decided_at < %s ORDER BY decided_at, id LIMIT {limit:d}",
            (*after, before),
        )
        return [_note(r) for r in found]

    def purge(self, item_id: str, texts: Collection[str]) -> int:
        said = [t for t in texts if t]
        return self.conn.execute(
            "DELETE FROM memory_candidates WHERE item_id = %s OR (item_id IS NULL"
            " AND (target = %s OR content = ANY(%s) OR title = ANY(%s)))",
            (item_id, item_id, said, said),
        ).rowcount
