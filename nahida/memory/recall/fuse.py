"""Fusing ranked lists (DESIGN §5, step 5): reciprocal rank fusion, then boosts, then dedup."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from nahida.memory.core.models import Hit
from nahida.memory.recall.plan import RRF_K

HALF_LIFE_DAYS = 30.0


def boost(hit: Hit, now: float) -> float:
    """Recency for every hit; confidence, importance and use for items."""
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
                scores[h.id] * boost(h, now),
                h.scope,
                h.message_ids,
                h.time,
                h.speaker,
                h.item,
                h.earlier,
            )
            for h in first.values()
        ),
        key=lambda h: (-h.score, h.id),
    )
    return unique_texts(ranked)


def text_key(hit: Hit) -> str:
    """What makes two hits the same line (the same text found as an item and a turn)."""
    return " ".join(hit.text.split()).casefold()


def unique_texts(hits: list[Hit]) -> list[Hit]:
    """The first hit of each text."""
    seen: set[str] = set()
    unique = []
    for hit in hits:
        key = text_key(hit)
        if key not in seen:
            seen.add(key)
            unique.append(hit)
    return unique


def combine(lexical: list[Hit], vector: list[Hit], k: float, weight: float) -> list[Hit]:
    """Hybrid search's second fusion: the fused lexical ranking and the fused vector ranking,
    by reciprocal rank again (a hit at rank r adds 1 / (k + r + 1), times `weight` for the
    vector ranking). Each ranking keeps its own boosts; a small `k` lets the top of each count."""
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for hits, share in ((lexical, 1.0), (vector, weight)):
        for rank, hit in enumerate(hits):
            scores[hit.id] = scores.get(hit.id, 0.0) + share / (k + rank + 1)
            first.setdefault(hit.id, hit)
    ranked = sorted(first.values(), key=lambda h: (-scores[h.id], h.id))
    return [replace(h, score=scores[h.id]) for h in ranked]
