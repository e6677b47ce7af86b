"""One search (DESIGN §5, steps 3–5): the lexical and vector lists of items and turns, by the
query's mode, fused by reciprocal rank and boosted. A unit of work: it runs on the store's
thread with a `Plan` made before (tokens and, for hybrid and vector search, the query vector)."""

from __future__ import annotations

from nahida.memory.models import Hit
from nahida.memory.recall import lexical, vector
from nahida.memory.recall.fuse import fuse
from nahida.memory.recall.plan import TUNING, Plan, Query, Tuning
from nahida.memory.store.base import Tx


def search(tx: Tx, query: Query, found: Plan, tuning: Tuning = TUNING) -> list[Hit]:
    """Items and turns for `query` (read as `found`), best first. Hybrid without a query vector
    is lexical; vector without one finds nothing. In hybrid search the vector lists weigh less
    and fall off more slowly than the lexical ones (`Tuning.vector_weight`, `vector_k`): on the
    dev sets an equal fusion lost to lexical search alone, which is tuned much further."""
    depth = max(query.limit * 3, 20)
    lists: list[list[Hit]] = []
    weights: list[tuple[float, float]] = []
    if query.mode != "vector":
        if query.items:
            lists.append(lexical.item_hits(tx, query, found, depth, tuning))
        if query.turns:
            lists.append(lexical.turn_hits(tx, query, found, depth, tuning))
        weights += [(1.0, tuning.rrf_k)] * len(lists)
    if query.mode != "lexical" and found.vector is not None:
        if query.items:
            lists.append(vector.item_hits(tx, query, found, depth, tuning))
            weights.append((tuning.vector_weight, tuning.vector_k))
        if query.turns:
            lists.append(vector.turn_hits(tx, query, found, depth, tuning))
            weights.append((tuning.vector_weight, tuning.vector_k))
    return fuse(lists, found.now, tuning.rrf_k, weights)[: query.limit]
