"""Episodes of finished sessions and warm summaries of sessions, in memory."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from nahida.memory.core.models import Episode, WarmSummary
from nahida.memory.store.reference import text
from nahida.memory.store.reference.data import Data, EpisodeRow
from nahida.memory.store.values import EpisodeMatch, Slice, TextSearch


def told_sessions(data: Data, item_id: str) -> set[str]:
    """The sessions with turns hidden because of the forgotten item."""
    return {t.session_id for t in data.turns.values() if t.hidden_by == item_id}


class EpisodeTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def put(self, episode: Episode, tokens: str) -> Episode:
        old = self.data.episodes.get(episode.session_id)
        if old is None:
            row = EpisodeRow(self.data.next("episode"), episode, tokens)
        else:  # rewritten: its id and creation stay; a new text needs a new vector
            kept = old.episode
            same_text = (kept.summary, kept.keywords) == (episode.summary, episode.keywords)
            episode = dataclasses.replace(episode, id=kept.id, created_at=kept.created_at)
            row = EpisodeRow(old.seq, episode, tokens, old.embed_hash if same_text else None)
        self.data.episodes[episode.session_id] = row
        return episode

    def get(self, episode_id: str) -> Episode | None:
        for row in self.data.episodes.values():
            if row.episode.id == episode_id:
                return row.episode
        return None

    def chats(self) -> list[str]:
        return list(dict.fromkeys(r.episode.chat for r in self.data.episodes.values()))

    def created(
        self, after: tuple[float, int], before: float, limit: int
    ) -> list[tuple[int, Episode]]:
        found = sorted(
            (r.episode.created_at, r.seq, r.episode)
            for r in self.data.episodes.values()
            if (r.episode.created_at, r.seq) > after and r.episode.created_at < before
        )
        return [(seq, episode) for _, seq, episode in found[:limit]]

    def drop_told(self, item_id: str) -> int:
        dropped = 0
        for session_id in told_sessions(self.data, item_id):
            dropped += self.data.episodes.pop(session_id, None) is not None
        return dropped

    def of_session(self, session_id: str) -> Episode | None:
        row = self.data.episodes.get(session_id)
        return row.episode if row else None

    def of_chat(self, chat: str, limit: int) -> list[Episode]:
        found = [r for r in self.data.episodes.values() if r.episode.chat == chat]
        found.sort(key=lambda r: (r.episode.ended_at, r.seq), reverse=True)
        return [r.episode for r in found[:limit]]

    def of_chats(self, chats: Sequence[str], offset: int, limit: int) -> Slice[Episode]:
        found = [r for r in self.data.episodes.values() if r.episode.chat in chats]
        found.sort(key=lambda r: (r.episode.ended_at, r.seq), reverse=True)
        return Slice([r.episode for r in found[offset : offset + limit]], len(found))

    def search(self, chats: Sequence[str] | None, search: TextSearch) -> list[EpisodeMatch]:
        rows = sorted(self.data.indexed_episodes(), key=lambda r: r.row.seq)
        found = text.ranked(
            search.terms,
            rows,
            lambda r: chats is None or r.episode.chat in chats,
            lambda r: r.episode.ended_at,
            search,
        )
        return [EpisodeMatch(r.episode, score) for r, score in found]


class SummaryTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def get(self, session_id: str) -> WarmSummary | None:
        return self.data.summaries.get(session_id)

    def put(self, summary: WarmSummary) -> None:
        self.data.summaries[summary.session_id] = summary

    def failed(self, session_id: str, chat: str, error: str, at: float) -> int:
        old = self.data.summaries.get(session_id) or WarmSummary(session_id, chat)
        summary = dataclasses.replace(
            old, failures=old.failures + 1, last_error=error, updated_at=at
        )
        self.data.summaries[session_id] = summary
        return summary.failures

    def drop_told(self, item_id: str) -> int:
        told = told_sessions(self.data, item_id)
        return sum(self.data.summaries.pop(s, None) is not None for s in told)

    def failing(self, limit: int) -> list[WarmSummary]:
        found = [s for s in self.data.summaries.values() if s.failures > 0]
        found.sort(key=lambda s: (s.failures, s.updated_at), reverse=True)
        return found[:limit]

    def updated(self, after: tuple[float, str], before: float, limit: int) -> list[WarmSummary]:
        found = [
            s
            for s in self.data.summaries.values()
            if (s.updated_at, s.session_id) > after
            and s.updated_at < before
            and s.failures == 0
            and s.summary != ""
        ]
        found.sort(key=lambda s: (s.updated_at, s.session_id))
        return found[:limit]
