"""The lexical retrieval cascade (DESIGN §5, steps 3 and 5): items and history turns, fused.

Both searches put the viewer's visibility inside the FTS MATCH (`scoped_match`), so nothing the
viewer may not see is ever ranked. Turns said after the moment of the question are never returned;
nor are turns the prompt already shows verbatim (the hot window). Results are fused by reciprocal
rank, boosted by confidence, importance, recency and use, and deduplicated by text.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from nahida.db import Connection
from nahida.memory.models import MemoryItem
from nahida.memory.scopes import Viewer
from nahida.memory.tokens import scoped_match

RRF_K = 60.0
HALF_LIFE_DAYS = 30.0


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    viewer: Viewer
    at: float | None = None  # the moment the question is asked; nothing later is returned
    limit: int = 10
    exclude_turns: frozenset[int] = frozenset()
    items: bool = True
    turns: bool = True


@dataclass(frozen=True, slots=True)
class Hit:
    kind: Literal["turn", "item"]
    id: str
    text: str
    score: float
    scope: str
    message_ids: list[str]
    time: float
    speaker: str | None = None
    item: MemoryItem | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, object]:
        from nahida.memory.models import iso

        return {
            "kind": self.kind,
            "id": self.id,
            "text": self.text,
            "score": round(self.score, 6),
            "scope": self.scope,
            "message_ids": self.message_ids,
            "time": iso(self.time),
        }


def item_hits(conn: Connection, query: Query, depth: int) -> list[Hit]:
    expression = scoped_match(query.text, query.viewer.item_keys())
    if expression is None:
        return []
    sql = (
        "SELECT m.* FROM memory_items_fts f JOIN memory_items m ON m.rowid = f.rowid"
        " WHERE memory_items_fts MATCH ?"
    )
    params: list[object] = [expression]
    if query.at is not None:
        sql += " AND m.created_at <= ?"
        params.append(query.at)
    sql += " ORDER BY bm25(memory_items_fts, 1.0, 0.0) LIMIT ?"
    params.append(depth)
    hits = []
    for row in conn.execute(sql, params):
        item = MemoryItem.from_row(row)
        text = f"{item.title}: {item.content}" if item.title else item.content
        hits.append(
            Hit(
                "item", item.id, text, 0.0, item.scope, item.message_ids, item.created_at, item=item
            )
        )
    return hits


def turn_hits(conn: Connection, query: Query, depth: int) -> list[Hit]:
    expression = scoped_match(query.text, query.viewer.turn_scopes())
    if expression is None:
        return []
    sql = (
        "SELECT t.id, t.chat, t.content, t.message_id, t.time, t.speaker_name, t.speaker"
        " FROM turns_fts f JOIN turns t ON t.id = f.rowid WHERE turns_fts MATCH ?"
    )
    params: list[object] = [expression]
    if query.at is not None:
        sql += " AND t.time <= ?"
        params.append(query.at)
    sql += " ORDER BY bm25(turns_fts, 1.0, 0.0) LIMIT ?"
    params.append(depth + len(query.exclude_turns))
    hits = []
    for row in conn.execute(sql, params):
        if row["id"] in query.exclude_turns:
            continue
        hits.append(
            Hit(
                "turn",
                f"t_{row['id']}",
                row["content"],
                0.0,
                f"chat:{row['chat']}",
                [row["message_id"]] if row["message_id"] else [],
                row["time"],
                speaker=row["speaker_name"] or row["speaker"],
            )
        )
    return hits[:depth]


def _boost(hit: Hit, now: float) -> float:
    age_days = max(0.0, now - hit.time) / 86_400
    recency: float = math.exp(-math.log(2) * age_days / HALF_LIFE_DAYS)
    if hit.item is None:
        return 1.0 + 0.1 * recency
    item = hit.item
    return (
        (0.6 + 0.4 * item.confidence)
        * (0.8 + 0.4 * item.importance)
        * (1.0 + 0.15 * recency)
        * (1.0 + 0.05 * math.log1p(item.access_count))
    )


def fuse(lists: Sequence[list[Hit]], now: float) -> list[Hit]:
    """Reciprocal rank fusion of ranked lists, then boosts; duplicates by text keep the best."""
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for hits in lists:
        for rank, hit in enumerate(hits):
            scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (RRF_K + rank + 1)
            first.setdefault(hit.id, hit)
    ranked = sorted(
        (
            Hit(
                h.kind,
                h.id,
                h.text,
                scores[h.id] * _boost(h, now),
                h.scope,
                h.message_ids,
                h.time,
                h.speaker,
                h.item,
            )
            for h in first.values()
        ),
        key=lambda h: (-h.score, h.id),
    )
    seen: set[str] = set()
    unique = []
    for hit in ranked:
        key = " ".join(hit.text.split()).casefold()
        if key in seen:
            continue
        seen.add(key)
        unique.append(hit)
    return unique


def search(conn: Connection, query: Query) -> list[Hit]:
    depth = max(query.limit * 3, 20)
    lists = []
    if query.items:
        lists.append(item_hits(conn, query, depth))
    if query.turns:
        lists.append(turn_hits(conn, query, depth))
    now = query.at if query.at is not None else time.time()
    return fuse(lists, now)[: query.limit]
