"""The append-only audit trail in PostgreSQL (its trigger: `schema.EVENTS`)."""

from __future__ import annotations

from typing import Any

from nahida.memory.core.models import MemoryEvent
from nahida.memory.store.postgres import rows
from nahida.memory.store.postgres.db import Connection


class EventTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def add(
        self,
        item_id: str,
        action: str,
        actor: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        reason: str | None,
        at: float,
    ) -> None:
        self.conn.execute(
            "INSERT INTO memory_events (item_id, action, actor, before, after, reason, time)"
            " VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, %s, %s)",
            (item_id, action, actor, rows.dump(before), rows.dump(after), reason, at),
        )

    def of_item(self, item_id: str) -> list[MemoryEvent]:
        found = self.conn.execute(
            "SELECT id, item_id, action, actor, before, after, reason, time FROM memory_events"
            " WHERE item_id = %s ORDER BY id",
            (item_id,),
        )
        return [rows.event(r) for r in found]

    def purge(self, item_id: str) -> int:
        purged = self.conn.execute(
            "SELECT 1 FROM memory_events WHERE item_id = %s AND action = 'purged' LIMIT 1",
            (item_id,),
        ).fetchone()
        if purged is None:
            raise ValueError(f"{item_id} has no purged event: its trail keeps its text")
        return self.conn.execute(
            "UPDATE memory_events SET before = NULL, after = NULL, reason = NULL"
            " WHERE item_id = %s AND action <> 'purged'"
            " AND (before IS NOT NULL OR after IS NOT NULL OR reason IS NOT NULL)",
            (item_id,),
        ).rowcount
