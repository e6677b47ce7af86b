"""What each answered user turn's prompt was given from memory, in PostgreSQL (`turn_recalls`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nahida.memory.store.postgres import rows
from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.values import RecallRecord, RecallTally, Span


def _record(row: Sequence[Any]) -> RecallRecord:
    turn_id, chat, time, items, turns, episodes = row
    return RecallRecord(
        int(turn_id), chat, float(time), tuple(items), tuple(int(t) for t in turns), tuple(episodes)
    )


class RecallTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def add(self, record: RecallRecord) -> None:
        self.conn.execute(  # a turn not stored (or deleted meanwhile) keeps no recall
            "INSERT INTO turn_recalls (turn_id, chat, time, hits, items, turns, episodes)"
            " SELECT %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s::jsonb"
            " WHERE EXISTS (SELECT 1 FROM turns WHERE id = %s)"
            " ON CONFLICT (turn_id) DO UPDATE SET chat = excluded.chat, time = excluded.time,"
            " hits = excluded.hits, items = excluded.items, turns = excluded.turns,"
            " episodes = excluded.episodes",
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
            "SELECT turn_id, chat, time, items, turns, episodes FROM turn_recalls"
            " WHERE turn_id = ANY(%s)",
            ([int(t) for t in turn_ids],),
        )
        return {int(r[0]): _record(r) for r in found}

    def tally(self, spans: Sequence[Span]) -> list[RecallTally]:
        if not spans:
            return []
        starts, ends = zip(*spans, strict=True)
        found = self.conn.execute(
            "SELECT s.n - 1, count(*), sum(r.hits)"
            " FROM unnest(%s::float8[], %s::float8[]) WITH ORDINALITY AS s (start, stop, n)"
            " JOIN turn_recalls r ON r.time >= s.start AND r.time < s.stop"
            " GROUP BY s.n ORDER BY s.n",
            (list(starts), list(ends)),
        )
        return [RecallTally(int(r[0]), int(r[1]), int(r[2])) for r in found]
