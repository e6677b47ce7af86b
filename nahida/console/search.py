"""Recall as a viewer: what the bot would recall for person P asking in chat C.

The Memory page and `/admin/api/search` run the bot's own recall (`memory.recall.search`) over a
`Viewer.parse(chat, user)`, exactly as `/memory search` in that chat would for that person: the
scope rules are recall's, applied inside the store's query, never filtered again here. The answer
has the shape `nahida memory search --json` prints (`answer`, `hit_json`: the CLI uses them too).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nahida.memory import Hit, MemoryService, Viewer

LIMIT = 10
MAX_LIMIT = 50
MAX_QUESTION = 1000  # characters: a question, not a document


@dataclass(frozen=True, slots=True)
class Question:
    chat: str
    q: str
    user: str | None = None
    limit: int = LIMIT

    @classmethod
    def read(cls, fields: Mapping[str, str]) -> Question | None:
        """The form's fields (or the query string's): None when nothing was asked yet; raises
        ValueError for what does not parse, or a person who is not the private chat's."""
        chat = fields.get("chat", "").strip()
        q = fields.get("q", "").strip()
        user = fields.get("user", "").strip() or None
        if not chat and not q:
            return None
        if not chat:
            raise ValueError("a chat is needed (a ChatKey such as onebot:group:123)")
        if not q:
            raise ValueError("a question is needed")
        if len(q) > MAX_QUESTION:
            raise ValueError(f"a question has at most {MAX_QUESTION} characters")
        limit = fields.get("limit", "").strip() or str(LIMIT)
        if not limit.isdigit() or not 1 <= int(limit) <= MAX_LIMIT:
            raise ValueError(f"limit is a number from 1 to {MAX_LIMIT}")
        Viewer.parse(chat, user)
        return cls(chat, q, user, int(limit))

    def viewer(self) -> Viewer:
        return Viewer.parse(self.chat, self.user)


@dataclass(frozen=True, slots=True)
class Found:
    question: Question
    viewer: Viewer
    hits: list[Hit]
    mode: str
    took_ms: float

    def to_json(self) -> dict[str, Any]:
        asked = self.question
        return answer(asked.q, asked.chat, asked.user, None, self.mode, self.hits, self.took_ms)


async def search(memory: MemoryService, question: Question) -> Found:
    viewer = question.viewer()
    query = memory.recall.query(question.q, viewer, limit=question.limit)
    started = time.perf_counter()
    hits = await memory.recall.search(query)
    took = (time.perf_counter() - started) * 1000
    mode = query.mode if memory.embeddings.enabled else "lexical"
    return Found(question, viewer, hits, mode, took)


def hit_json(hit: Hit) -> dict[str, Any]:
    """One hit as the CLI and the API write it: `Hit.to_json` and who said it (turns)."""
    return {**hit.to_json(), "speaker": hit.speaker}


def answer(
    q: str,
    chat: str,
    user: str | None,
    at: str | None,
    mode: str,
    hits: list[Hit],
    took_ms: float,
) -> dict[str, Any]:
    """A search's answer: `nahida memory search --json` and `/admin/api/search` alike."""
    return {
        "q": q,
        "chat": chat,
        "user": user,
        "at": at,
        "mode": mode,
        "hits": [hit_json(h) for h in hits],
        "took_ms": round(took_ms, 3),
    }
