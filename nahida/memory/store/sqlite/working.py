"""Warm summaries of sessions in SQLite (working memory, DESIGN §7)."""

from __future__ import annotations

from typing import Any

from nahida.memory.core.models import WarmSummary
from nahida.memory.store.sqlite.connection import Connection

_FIELDS = (
    "session_id, chat, summary, through_turn, rounds, total_rounds, rolls, failures, last_error,"
    " updated_at"
)


def _summary(row: Any) -> WarmSummary:
    return WarmSummary(**{k: row[k] for k in row.keys()})  # noqa: SIM118 (a Row, not a dict)


class SummaryTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def get(self, session_id: str) -> WarmSummary | None:
        row = self.conn.execute(
            f"SELECT {_FIELDS} FROM session_summaries WHERE session_id = ?", (session_id,)
        ).fetchone()
        return None if row is None else _summary(row)

    def put(self, summary: WarmSummary) -> None:
        self.conn.execute(
            f"INSERT OR REPLACE INTO session_summaries ({_FIELDS})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            " (SELECT DISTINCT session_id FROM turns WHERE hidden_by = ?)",
            (item_id,),
        ).rowcount

    def failed(self, session_id: str, chat: str, error: str, at: float) -> int:
        row = self.conn.execute(
            "INSERT INTO session_summaries (session_id, chat, failures, last_error, updated_at)"
            " VALUES (?, ?, 1, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
            " failures = failures + 1, last_error = excluded.last_error,"
            " updated_at = excluded.updated_at RETURNING failures",
            (session_id, chat, error, at),
        ).fetchone()
        return int(row[0])

    def updated(self, after: tuple[float, str], before: float, limit: int) -> list[WarmSummary]:
        found = self.conn.execute(
            f"SELECT {_FIELDS} FROM session_summaries WHERE (updated_at, session_id) > (?, ?)"
            " AND updated_at < ? AND failures = 0 AND summary != ''"
            f" ORDER BY updated_at, session_id LIMIT {int(limit)}",
            (*after, before),
        )
        return [_summary(r) for r in found]

    def failing(self, limit: int) -> list[WarmSummary]:
        found = self.conn.execute(
            f"SELECT {_FIELDS} FROM session_summaries WHERE failures > 0"
            f" ORDER BY failures DESC, updated_at DESC LIMIT {int(limit)}"
        )
        return [_summary(r) for r in found]
