"""The vector lists of the retrieval cascade (DESIGN §5, step 4): items, turns and episodes
nearest to the question's embedding, in the viewer's visibility (applied by the store inside its
query), not said, stored or ended after the question's moment, without the turns the prompt
shows verbatim.

Hits inside the question's time window weigh `1 + window` times more, as in the lexical lists.
A nearest neighbour always exists, related or not, so a hit is kept only when its cosine
similarity is at least `vector_floor` and within `vector_margin` of the list's best: what is
clearly nearer than the rest, not the padding of an unrelated question.
"""

from __future__ import annotations

from nahida.memory.models import Hit
from nahida.memory.recall.lexical import episode_hit, item_hit, turn_hit
from nahida.memory.recall.plan import TUNING, Plan, Query, Tuning
from nahida.memory.store.base import Tx, VectorSearch


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


def _close(scores: list[float], tuning: Tuning) -> float:
    """The least similarity kept."""
    return max(tuning.vector_floor, max(scores, default=0.0) - tuning.vector_margin)


def item_hits(tx: Tx, query: Query, found: Plan, depth: int, tuning: Tuning = TUNING) -> list[Hit]:
    search = _search(query, found, depth)
    if search is None:
        return []
    matches = tx.vectors.items(query.viewer.visibility(), search)
    least = _close([m.score for m in matches], tuning)
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
    least = _close([m.score for m in matches], tuning)
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
    least = _close([m.score for m in matches], tuning)
    hits = [
        episode_hit(m.episode, m.score * _weight(m.episode.ended_at, found, tuning))
        for m in matches
        if m.score >= least
    ]
    return _ranked(hits, depth)
