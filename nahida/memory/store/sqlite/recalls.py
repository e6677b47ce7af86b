"""What each answered user turn's prompt was given from memory, in SQLite (`turn_recalls`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from nahida.memory.store.sqlite import rows
from nahida.memory.store.sqlite.connection import Connection
from nahida.memory.store.values import RecallRecord, RecallTally, Span


def _record(row: Any) -> RecallRecord:
    return RecallRecord(
        row["turn_id"],
        row["chat"],
        row["time"],
        tuple(json.loads(row["items"])),
        tuple(json.loads(row["turns"])),
        tuple(json.loads(row["episodes"])),
    )


class RecallTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def add(self, record: RecallRecord) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO turn_recalls (turn_id, chat, time, hits, items, turns,"
            " episodes) SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM turns WHERE id = ?)",
            (
                record.turn_id,
                record.chat,
                record.time,
                record.hits,
                rows.dump(list(record.items)),
                rows.dump(list(record.turns)),
                rows.dump(list(record.episodes)),
                record.turn_id,
            ),
        )

    def of_turns(self, turn_ids: Sequence[int]) -> dict[int, RecallRecord]:
        found = self.conn.execute(
            "SELECT * FROM turn_recalls WHERE turn_id IN (SELECT value FROM json_each(?))",
            (rows.dump(list(turn_ids)),),
        )
        return {int(r["turn_id"]): _record(r) for r in found}

    def tally(self, spans: Sequence[Span]) -> list[RecallTally]:
        found = self.conn.execute(
            "SELECT s.key, count(*), sum(r.hits) FROM json_each(?) s CROSS JOIN turn_recalls r"
            " ON r.time >= json_extract(s.value, '$[0]') AND r.time < json_extract(s.value, '$[1]')"
            " GROUP BY s.key ORDER BY s.key",
            (rows.dump([list(span) for span in spans]),),
        )
        return [RecallTally(*row) for row in found]
