"""The lexical retrieval cascade (DESIGN §5, steps 3 and 5): items and history turns, fused.

Both searches put the viewer's visibility inside the FTS MATCH (`scoped_match`), so nothing the
viewer may not see is ever ranked. Nothing said (turns) or stored (items) after the moment of the
question is returned, nor turns the prompt already shows verbatim (the hot window).

How a question is read and ranked (each step measured by scripts/eval_recall.py; see `Tuning`):

1. Time expressions ("昨天", "last week", "8 May 2023"; `timeparse`) come out of the lexical query
   and name a window relative to the question's moment. Hits inside it weigh `1 + window` times
   more; a window is a preference, not a filter (a filter lost recall: words like "上周" are often
   small talk). A question that is only a time expression lists that window's latest turns.
2. Query terms: jieba tokens minus stopwords and question words (`tokens.match_query`), matched
   with FTS5 bm25 against indexes that stem English (porter).
3. A speaker the question names ("What did Caroline research?") is taken out of the lexical query
   (it mostly matches the other person addressing them) and that speaker's turns weigh
   `1 + speaker` times more.
4. A turn scores at least `neighbours` times the best score of the turn just before or after it
   in its session: an answer often follows the turn that names the topic.
5. Items and turns are fused by reciprocal rank, boosted (confidence, importance, recency, use),
   and deduplicated by text.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any, Literal

from nahida.db import Connection
from nahida.envelope import ChatKey, UserKey
from nahida.memory import timeparse
from nahida.memory.models import MemoryItem
from nahida.memory.scopes import Viewer
from nahida.memory.timeparse import TimeWindow
from nahida.memory.tokens import has_content, scoped_match, tokenize

RRF_K = 60.0
HALF_LIFE_DAYS = 30.0


@dataclass(frozen=True, slots=True)
class Tuning:
    """Ranking knobs; the defaults are the best measured by scripts/eval_recall.py."""

    max_terms: int = 128  # query terms sent to FTS after stopwords (long, chatty questions)
    depth: int = 50  # lexical candidates per list before re-ranking
    neighbours: float = 0.6  # a turn scores at least this share of an adjacent turn's score
    speaker: float = 1.0  # extra weight for turns said by a speaker the question names
    window: float = 1.0  # extra weight for hits inside the question's time window; < 0: only those
    strip_time: bool = True  # take time expressions out of the lexical query
    rrf_k: float = RRF_K


TUNING = Tuning()


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    viewer: Viewer
    at: float | None = None  # the moment the question is asked; nothing later is returned
    limit: int = 10
    exclude_turns: frozenset[int] = frozenset()
    items: bool = True
    turns: bool = True
    tz: tzinfo | None = None  # where "today" is for time expressions; None: the local zone


def viewer_for(chat: str, user: str | None = None) -> Viewer:
    """The viewer of a question asked in `chat` by `user` (a user id on the chat's platform)."""
    key = ChatKey.parse(chat)
    return Viewer(key, UserKey(key.platform, user) if user else None)


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


@dataclass(frozen=True, slots=True)
class Plan:
    """What one search looks for."""

    text: str | None  # the lexical part; None when the question is only a time expression
    window: TimeWindow | None
    now: float


def plan(query: Query, tuning: Tuning = TUNING) -> Plan:
    now = query.at if query.at is not None else time.time()
    if query.tz is not None:
        moment = datetime.fromtimestamp(now, query.tz)
    else:
        moment = datetime.fromtimestamp(now).astimezone()
    parsed = timeparse.parse(query.text, moment)
    text: str | None = parsed.text if tuning.strip_time else query.text
    if parsed.window is not None and not (text and has_content(text)):
        text = None  # only a time expression: list the window
    return Plan(text, parsed.window, now)


def _time_filter(column: str, query: Query, window: TimeWindow | None) -> tuple[str, list[Any]]:
    sql, params = "", []
    if query.at is not None:
        sql += f" AND {column} <= ?"
        params.append(query.at)
    if window is not None:
        start, end = window.bounds
        sql += f" AND {column} >= ? AND {column} < ?"
        params += [start, end]
    return sql, params


@dataclass(frozen=True, slots=True)
class _Index:
    table: str  # the FTS table
    select: str  # columns of the joined rows
    join: str
    time: str  # the column compared with the question's moment and window


ITEMS = _Index("memory_items_fts", "m.*", "memory_items m ON m.rowid = f.rowid", "m.created_at")
TURNS = _Index(
    "turns_fts",
    "t.id, t.session_id, t.chat, t.content, t.message_id, t.time, t.speaker_name, t.speaker",
    "turns t ON t.id = f.rowid",
    "t.time",
)


def _ranked(
    conn: Connection,
    index: _Index,
    expression: str | None,
    lexical: bool,
    query: Query,
    window: TimeWindow | None,
    limit: int,
) -> list[Any]:
    """Rows matching `expression` (the scope filter inside it), best first; not `lexical`: the
    window's latest rows."""
    if expression is None:
        return []
    where, params = _time_filter(index.time, query, window)
    score, order = f"-bm25({index.table}, 1.0, 0.0)", f"bm25({index.table}, 1.0, 0.0)"
    if not lexical:
        score, order = "1.0", f"{index.time} DESC"
    return conn.execute(
        f"SELECT {index.select}, {score} AS score FROM {index.table} f JOIN {index.join}"
        f" WHERE {index.table} MATCH ?{where} ORDER BY {order} LIMIT ?",
        [expression, *params, limit],
    ).fetchall()


def _gather(
    fetch: Any, lexical: list[Any], found: Plan, text: str | None, tuning: Tuning
) -> tuple[dict[Any, Any], dict[Any, float], set[Any]]:
    """Rows by id, their scores, and the ids inside the window (`fetch(text, window)`)."""
    rows: dict[Any, Any] = {}
    scores: dict[Any, float] = {}
    for row in lexical:
        rows[row[0]] = row
        scores[row[0]] = float(row["score"])
    inside: set[Any] = set()
    if found.window is not None and tuning.window != 0:
        for row in fetch(text, found.window):
            rows.setdefault(row[0], row)
            scores.setdefault(row[0], float(row["score"]))
            inside.add(row[0])
    return rows, scores, inside


def _prefer_window(final: dict[Any, float], inside: set[Any], tuning: Tuning) -> dict[Any, float]:
    if not inside:
        return final
    if tuning.window < 0:
        return {i: v for i, v in final.items() if i in inside}
    return {i: v * (1.0 + tuning.window) if i in inside else v for i, v in final.items()}


def item_hits(
    conn: Connection,
    query: Query,
    depth: int,
    tuning: Tuning = TUNING,
    found: Plan | None = None,
) -> list[Hit]:
    found = found or plan(query, tuning)
    keys = query.viewer.item_keys()

    def fetch(text: str | None, window: TimeWindow | None) -> list[Any]:
        expression = scoped_match(text, keys, max_terms=tuning.max_terms)
        return _ranked(conn, ITEMS, expression, text is not None, query, window, depth)

    lexical = fetch(found.text, None) if found.text is not None else []
    rows, scores, inside = _gather(fetch, lexical, found, found.text, tuning)
    final = _prefer_window(scores, inside, tuning)
    hits = []
    for item_id in sorted(final, key=lambda i: (-final[i], -rows[i]["created_at"], i))[:depth]:
        item = MemoryItem.from_row(rows[item_id])
        text = f"{item.title}: {item.content}" if item.title else item.content
        score, when = final[item_id], item.created_at
        hits.append(
            Hit("item", item.id, text, score, item.scope, item.message_ids, when, item=item)
        )
    return hits


def _neighbours(conn: Connection, ids: Sequence[int], query: Query) -> Iterable[tuple[int, Any]]:
    """(id, turn) for the user/assistant turn just before and after each of `ids` in its session,
    not said after the question."""
    if not ids:
        return []
    sql = (
        f"SELECT c.id AS of, {TURNS.select} FROM turns c JOIN turns t"
        " ON t.session_id = c.session_id AND t.id IN ("
        "(SELECT max(p.id) FROM turns p WHERE p.session_id = c.session_id AND p.id < c.id"
        " AND p.role IN ('user', 'assistant')),"
        "(SELECT min(n.id) FROM turns n WHERE n.session_id = c.session_id AND n.id > c.id"
        " AND n.role IN ('user', 'assistant')))"
        f" WHERE c.id IN ({', '.join('?' * len(ids))})"
    )
    params: list[Any] = list(ids)
    if query.at is not None:
        sql += " AND t.time <= ?"
        params.append(query.at)
    return [(row["of"], row) for row in conn.execute(sql, params)]


def named_speakers(rows: Iterable[Any], text: str) -> set[str]:
    """Speaker names (of these turns) that the text names in full."""
    words = set(tokenize(text))
    named = set()
    for name in {r["speaker_name"] for r in rows if r["speaker_name"]}:
        parts = tokenize(name)
        if parts and words.issuperset(parts):
            named.add(name)
    return named


def _without_names(text: str, names: set[str]) -> str:
    drop = {part for name in names for part in tokenize(name)}
    return " ".join(t for t in tokenize(text) if t not in drop)


def turn_hits(
    conn: Connection,
    query: Query,
    depth: int,
    tuning: Tuning = TUNING,
    found: Plan | None = None,
) -> list[Hit]:
    found = found or plan(query, tuning)
    pool = max(depth, tuning.depth) + len(query.exclude_turns)
    scopes = query.viewer.turn_scopes()

    def fetch(text: str | None, window: TimeWindow | None) -> list[Any]:
        expression = scoped_match(text, scopes, max_terms=tuning.max_terms)
        return _ranked(conn, TURNS, expression, text is not None, query, window, pool)

    text = found.text
    lexical = fetch(text, None) if text is not None else []
    named: set[str] = set()
    if text is not None and tuning.speaker > 0:
        named = named_speakers(lexical, text)
        rest = _without_names(text, named) if named else ""
        if has_content(rest):
            text = rest
            lexical = fetch(text, None)
        elif named and found.window is not None:
            text, lexical = None, []  # "what did Gina say last week": her turns of that week
    rows, scores, inside = _gather(fetch, lexical, found, text, tuning)
    for turn_id in query.exclude_turns:
        rows.pop(turn_id, None)
        scores.pop(turn_id, None)
    final = dict(scores)
    if tuning.neighbours > 0 and text is not None:
        for of, row in _neighbours(conn, list(scores), query):
            if row["id"] in query.exclude_turns:
                continue
            rows.setdefault(row["id"], row)
            lent = tuning.neighbours * scores[of]
            final[row["id"]] = max(final.get(row["id"], 0.0), lent)
    if named:
        for turn_id, row in rows.items():
            if row["speaker_name"] in named and turn_id in final:
                final[turn_id] *= 1.0 + tuning.speaker
    final = _prefer_window(final, inside, tuning)
    ranked = sorted(final, key=lambda i: (-final[i], -rows[i]["time"], i))[:depth]  # ties: latest
    return [_turn_hit(rows[i], final[i]) for i in ranked]


def _turn_hit(row: Any, score: float) -> Hit:
    return Hit(
        "turn",
        f"t_{row['id']}",
        row["content"],
        score,
        f"chat:{row['chat']}",
        [row["message_id"]] if row["message_id"] else [],
        row["time"],
        speaker=row["speaker_name"] or row["speaker"],
    )


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


def fuse(lists: Sequence[list[Hit]], now: float, rrf_k: float = RRF_K) -> list[Hit]:
    """Reciprocal rank fusion of ranked lists, then boosts; duplicates by text keep the best."""
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for hits in lists:
        for rank, hit in enumerate(hits):
            scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (rrf_k + rank + 1)
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


def search(conn: Connection, query: Query, tuning: Tuning = TUNING) -> list[Hit]:
    depth = max(query.limit * 3, 20)
    found = plan(query, tuning)
    lists = []
    if query.items:
        lists.append(item_hits(conn, query, depth, tuning, found))
    if query.turns:
        lists.append(turn_hits(conn, query, depth, tuning, found))
    return fuse(lists, found.now, tuning.rrf_k)[: query.limit]
