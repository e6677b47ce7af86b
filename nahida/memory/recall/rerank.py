"""Reranking (DESIGN §5, step 6): a model reorders the best fused hits; off by default.

`LLMReranker` asks the `rerank` route (a chat model) for the order of numbered passages as a
JSON list of numbers. An answer that is not such a list, or a failed call, keeps the fused
order: a reranker can only reorder, never lose a hit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import structlog

from nahida.errors import ProviderError
from nahida.memory.core.models import Hit
from nahida.providers.base import ChatModel, Message, Reranker

log = structlog.get_logger(__name__)

TOP_K = 20  # hits sent to the reranker; the rest keep their place after them
MAX_PASSAGE_CHARS = 300
_LIST = re.compile(r"\[[\d,\s]*\]")

PROMPT = (
    "Order the passages by how well they help answer the question, most helpful first. "
    "Answer with a JSON list of passage numbers only, e.g. [3, 1, 2]."
)


class LLMReranker:
    """A `Reranker` on a chat model's `rerank` route."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model

    async def order(self, query: str, texts: Sequence[str]) -> list[int]:
        passages = "\n".join(
            f"[{i + 1}] {' '.join(t.split())[:MAX_PASSAGE_CHARS]}" for i, t in enumerate(texts)
        )
        answer = await self.model.chat(
            "rerank",
            (
                Message("system", PROMPT),
                Message("user", f"Question: {query}\n\nPassages:\n{passages}"),
            ),
            max_tokens=8 * len(texts) + 16,
        )
        return parse_order(answer.content, len(texts))


def parse_order(text: str, count: int) -> list[int]:
    """Zero-based indexes from a "[3, 1, 2]" answer: known numbers once each, in its order, then
    the ones it left out in their old order. ValueError when there is no such list."""
    found = _LIST.search(text)
    if found is None:
        raise ValueError(f"no list of numbers in {text[:80]!r}")
    order: list[int] = []
    for number in json.loads(found.group(0)):
        index = int(number) - 1
        if 0 <= index < count and index not in order:
            order.append(index)
    return order + [i for i in range(count) if i not in order]


async def rerank(reranker: Reranker, query: str, hits: list[Hit], top_k: int = TOP_K) -> list[Hit]:
    """The first `top_k` hits in the reranker's order; on any failure, as they were."""
    head, tail = hits[:top_k], hits[top_k:]
    try:
        order = await reranker.order(query, [h.text for h in head])
    except (ProviderError, ValueError) as exc:
        log.warning("rerank_failed", error=str(exc))
        return hits
    if sorted(order) != list(range(len(head))):
        log.warning("rerank_failed", error="not a permutation")
        return hits
    return [head[i] for i in order] + tail
