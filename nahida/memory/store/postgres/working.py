"""Warm summaries of sessions in PostgreSQL (working memory, DESIGN §7)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nahida.memory.core.models import WarmSummary
from nahida.memory.store.postgres.db import Connection

_FIELDS = (
    "session_id, chat, summary, through_turn, rounds, total_rounds, rolls, failures, last_error,"
    " updated_at"
)


def _summary(row: Sequence[Any]) -> WarmSummary:
    session_id, chat, summary, through, rounds, total, rolls, failures, error, at = row
    return WarmSummary(
        session_id,
        chat,
        summary,
        int(through),
        int(rounds),
        int(total),
        int(rolls),
        int(failures),
        error,
        float(at),
    )


class SummaryTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def get(self, session_id: str) -> WarmSummary | None:
        row = self.conn.execute(
            f"SELECT {_FIELDS} FROM session_summaries WHERE session_id = %s", (session_id,)
        ).fetchone()
        return None if row is None else _summary(row)

    def put(self, summary: WarmSummary) -> None:
        self.conn.execute(
            f"INSERT INTO session_summaries ({_FIELDS})"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE"
            " SET chat = excluded.chat, summary = excluded.summary,"
            " through_turn = excluded.through_turn, rounds = excluded.rounds,"
            " total_rounds = excluded.total_rounds, rolls = excluded.rolls,"
            " failures = excluded.failures, last_error = excluded.last_error,"
            " updated_at = excluded.updated_at",
            (
                summary.session_id,
                summary.chat,
                summary.summary,
                summary.through_turn,
                summary.rounds,
                summary.total_rounds,
                summary.rolls,
                summary.failures,
                summary.last_error,
                summary.updated_at,
            ),
        )

    def drop_told(self, item_id: str) -> int:
        return self.conn.execute(
            "DELETE FROM session_summaries WHERE session_id IN"
            " (SELECT session_id FROM turns WHERE hidden_by = %s)",
            (item_id,),
        ).rowcount

    def failed(self, session_id: str, chat: str, error: str, at: float) -> int:
        row = self.conn.execute(
            "INSERT INTO session_summaries (session_id, chat, failures, last_error, updated_at)"
            " VALUES (%s, %s, 1, %s, %s) ON CONFLICT (session_id) DO UPDATE SET"
            " failures = session_summaries.failures + 1, last_error = excluded.last_error,"
            " updated_at = excluded.updated_at RETURNING failures",
            (session_id, chat, error, at),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def updated(self, after: tuple[float, str], before: float, limit: int) -> list[WarmSummary]:
        found = self.conn.execute(
            f"SELECT {_FIELDS} FROM session_summaries WHERE (updated_at, session_id) > (%s, %s)"
            " AND updated_at < %s AND failures = 0 AND summary <> ''"
            f" ORDER BY updated_at, session_id LIMIT {limit:d}",
            (*after, before),
        )
        return [_summary(r) for r in found]

    def failing(self, limit: int) -> list[WarmSummary]:
        found = self.conn.execute(
            f"SELECT {_FIELDS} FROM session_summaries WHERE failures > 0"
            f" ORDER BY failures DESC, updated_at DESC LIMIT {limit:d}"
        )
        return [_summary(r) for r in found]
