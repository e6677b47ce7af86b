"""The vector lists of the retrieval cascade (DESIGN §5, step 4): items, turns and episodes
nearest to the question's embedding, in the viewer's visibility (applied by the store inside its
query), not said, stored or ended after the question's moment, without the turns the prompt
shows verbatim.

Hits inside the question's time window weigh `1 + window` times more, as in the lexical lists.
A nearest neighbour always exists, related or not. So a list gives nothing when its best hit
does not beat what unrelated lines score against the question by `vector_floor` (`hybrid_floor`
in hybrid search; `Plan.unrelated`, `recall.floor`: nothing in that memory is about the
question), and otherwise the hits within `vector_margin` of its best: what is clearly nearer
than the rest, not the padding of an unrelated question. Both floors are the largest that keep
every dev-set figure (docs/recall.md); a floor under every hit, not only the best, lost weak
evidence that rides with a strong hit (some of MemDaily's score only just above unrelated lines).
"""

from __future__ import annotations

import math

from nahida.memory.core.models import Hit
from nahida.memory.recall.lexical import episode_hit, item_hit, turn_hit
from nahida.memory.recall.plan import TUNING, Plan, Query, Tuning
from nahida.memory.store.base import Tx
from nahida.memory.store.values import VectorSearch


def _search(query: Query, found: Plan, limit: int) -> VectorSearch | None:
    if found.vector is None or found.space is None:
        return None
    return VectorSearch(found.vector, found.space, limit, query.at)


def _weight(time: float, found: Plan, tuning: Tuning) -> float:
    window = found.window
    if window is None or tuning.window <= 0:
        return 1.0
    start, end = window.bounds
    return 1.0 + tuning.window if start <= time < end else 1.0


def _ranked(hits: list[Hit], depth: int) -> list[Hit]:
    return sorted(hits, key=lambda h: (-h.score, -h.time, h.id))[:depth]


def _close(scores: list[float], query: Query, found: Plan, tuning: Tuning) -> float:
    """The least similarity kept: none when the list's best is not above the floor."""
    best = max(scores, default=0.0)
    floor = tuning.hybrid_floor if query.mode == "hybrid" else tuning.vector_floor
    if found.unrelated is not None and best < found.unrelated + floor:
        return math.inf
    return best - tuning.vector_margin


def item_hits(tx: Tx, query: Query, found: Plan, depth: int, tuning: Tuning = TUNING) -> list[Hit]:
    search = _search(query, found, depth)
    if search is None:
        return []
    matches = tx.vectors.items(query.viewer.visibility(), search)
    least = _close([m.score for m in matches], query, found, tuning)
    hits = [
        item_hit(m.item, m.score * _weight(m.item.created_at, found, tuning))
        for m in matches
        if m.score >= least
    ]
    return _ranked(hits, depth)


def turn_hits(tx: Tx, query: Query, found: Plan, depth: int, tuning: Tuning = TUNING) -> list[Hit]:
    search = _search(query, found, depth + len(query.exclude_turns))
    if search is None:
        return []
    matches = [
        m
        for m in tx.vectors.turns(query.viewer.turn_chats(), search)
        if m.id not in query.exclude_turns
    ]
    least = _close([m.score for m in matches], query, found, tuning)
    hits = [
        turn_hit(m, m.score * _weight(m.time, found, tuning)) for m in matches if m.score >= least
    ]
    return _ranked(hits, depth)


def episode_hits(
    tx: Tx, query: Query, found: Plan, depth: int, tuning: Tuning = TUNING
) -> list[Hit]:
    search = _search(query, found, depth)
    if search is None:
        return []
    matches = tx.vectors.episodes(query.viewer.turn_chats(), search)
    least = _close([m.score for m in matches], query, found, tuning)
    hits = [
        episode_hit(m.episode, m.score * _weight(m.episode.ended_at, found, tuning))
        for m in matches
        if m.score >= least
    ]
    return _ranked(hits, depth)
