"""Episodes (the Ethan layer 4): one summary and its keywords per finished session, recallable.

Whoever decides that a session has ended (an idle split, `/new`) has the compress model write
the summary and keywords and stores them here; a resumed session that ends again gets its
episode rewritten (same id). An episode is seen only in its own chat, exactly like the turns it
summarises (`Viewer.turn_chats`), and recall searches it with items and turns (by words, and by
meaning once `memory.embeddings` has embedded `keywords: summary`). Secrets are redacted from
the summary and keywords before anything is stored.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from nahida.memory.core.models import Episode, new_id
from nahida.memory.core.safety import redact
from nahida.memory.core.tokenize import index_text, run_cpu
from nahida.memory.store.base import Store, Tx


def cleaned(summary: str, keywords: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The summary and keywords as stored: secrets redacted, keywords on one line each, blank and
    repeated ones dropped. Raises ValueError for an empty summary."""
    text = redact(summary.strip())
    if not text:
        raise ValueError("an episode needs a summary")
    words = (redact(" ".join(k.split())) for k in keywords)
    return text, tuple(dict.fromkeys(w for w in words if w))


def prepared(summary: str, keywords: Sequence[str]) -> tuple[str, tuple[str, ...], str]:
    """`cleaned` summary and keywords, and their index text (the tokens of both)."""
    text, words = cleaned(summary, keywords)
    return text, words, index_text(" ".join([*words, text]))


def put(tx: Tx, episode: Episode, tokens: str) -> Episode:
    """Store the episode of a session of its chat (LookupError: no such session; ValueError: the
    session is another chat's). A new id taken by another episode is drawn again."""
    session = tx.sessions.get(episode.session_id)
    if session is None:
        raise LookupError(episode.session_id)
    if session.chat != episode.chat:
        raise ValueError(f"session {episode.session_id} is of {session.chat}, not {episode.chat}")
    while (taken := tx.episodes.get(episode.id)) is not None:
        if taken.session_id == episode.session_id:
            break
        episode = replace(episode, id=new_id("e"))
    return tx.episodes.put(episode, tokens)


class Episodes:
    """`memory.episodes`."""

    def __init__(self, store: Store, changed: Callable[[], None] = lambda: None) -> None:
        self.store = store
        self.changed = changed  # told after a write (its text needs a vector)
        self._chats: set[str] | None = None  # chats with an episode, read once (`in_any`)

    async def in_any(self, chats: Sequence[str]) -> bool:
        """Whether any of these chats may have an episode, so recall searches episodes only
        where there are some (most chats have none: a statement or two per message saved).
        Read once per process, kept in step by `add`; episodes are written by this process
        only (a deleted one leaves a chat in the set: one search that finds nothing)."""
        if self._chats is None:
            found: list[str] = await self.store.read(lambda tx: tx.episodes.chats())
            self._chats = set(found)
        return any(chat in self._chats for chat in chats)

    async def add(
        self,
        *,
        session_id: str,
        chat: str,
        summary: str,
        keywords: Sequence[str],
        started_at: float,
        ended_at: float,
        turn_count: int,
    ) -> Episode:
        """Store the episode of a finished session (or rewrite the one it had); returns it as
        stored. Raises LookupError for an unknown session, ValueError for an empty summary or a
        session of another chat."""
        size = len(summary) + sum(map(len, keywords))
        text, words, tokens = await run_cpu(prepared, summary, keywords, size=size)
        episode = Episode(
            id=new_id("e"),
            session_id=session_id,
            chat=chat,
            summary=text,
            keywords=words,
            started_at=started_at,
            ended_at=ended_at,
            turn_count=turn_count,
            created_at=time.time(),
        )
        stored = await self.store.write(put, episode, tokens)
        if self._chats is not None:
            self._chats.add(chat)
        self.changed()
        return stored

    async def get(self, episode_id: str) -> Episode | None:
        return await self.store.read(lambda tx: tx.episodes.get(episode_id))

    async def of_chat(self, chat: str, limit: int = 20) -> list[Episode]:
        """The chat's episodes, the latest ended first."""
        return await self.store.read(lambda tx: tx.episodes.of_chat(chat, limit))

    async def of_session(self, session_id: str) -> Episode | None:
        return await self.store.read(lambda tx: tx.episodes.of_session(session_id))
