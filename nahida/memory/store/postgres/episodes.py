"""Episodes of finished sessions in PostgreSQL (the Ethan layer 4), each with its lexical index.

An episode's `fts` is its index text's tsvector and `fts_len` counts its words and its chat's
scope key, as FTS5 counts the episode's row in SQLite: like the session's turns, an episode is
seen in its own chat and nowhere else, a filter on `chat` in the same query as the match.
Deleting a session removes its episode (a foreign key), its index with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nahida.memory.core.models import Episode
from nahida.memory.store.postgres import lexical, rows
from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.values import EpisodeMatch, Slice, TextSearch

# `episode` reads these, in this order (with the alias `r`: `MATCH_COLUMNS`)
COLUMNS = "id, session_id, chat, summary, keywords, started_at, ended_at, turn_count, created_at"
MATCH_COLUMNS = ", ".join(f"r.{c.strip()}" for c in COLUMNS.split(","))
_SELECT = f"SELECT {COLUMNS} FROM episodes"

# A session that ends again after a resume gets its episode rewritten: same id and creation
# time; a new text drops the old vector's name (upkeep embeds the new one).
_PUT = (
    f"INSERT INTO episodes ({COLUMNS}, fts, fts_len)"
    " VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, nahida_tsvector(%s::text[]), %s)"
    " ON CONFLICT (session_id) DO UPDATE SET chat = excluded.chat, summary = excluded.summary,"
    " keywords = excluded.keywords, started_at = excluded.started_at,"
    " ended_at = excluded.ended_at, turn_count = excluded.turn_count, fts = excluded.fts,"
    " fts_len = excluded.fts_len, embed_hash = CASE WHEN episodes.summary = excluded.summary"
    " AND episodes.keywords = excluded.keywords THEN episodes.embed_hash END"
    f" RETURNING {COLUMNS}"
)


def episode(row: Sequence[Any]) -> Episode:
    """An episode from a row of `COLUMNS` (in that order)."""
    id_, session_id, chat, summary, keywords, started, ended, turn_count, created = row[:9]
    return Episode(
        id=id_,
        session_id=session_id,
        chat=chat,
        summary=summary,
        keywords=tuple(keywords),
        started_at=started,
        ended_at=ended,
        turn_count=int(turn_count),
        created_at=created,
    )


class EpisodeTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def put(self, episode_: Episode, tokens: str) -> Episode:
        words = lexical.words(tokens)
        row = self.conn.execute(
            _PUT,
            (
                episode_.id,
                episode_.session_id,
                episode_.chat,
                episode_.summary,
                rows.dump(list(episode_.keywords)),
                episode_.started_at,
                episode_.ended_at,
                episode_.turn_count,
                episode_.created_at,
                words,
                len(words) + 1,
            ),
        ).fetchone()
        assert row is not None
        return episode(row)

    def drop_told(self, item_id: str) -> int:
        return self.conn.execute(
            "DELETE FROM episodes WHERE session_id IN"
            " (SELECT session_id FROM turns WHERE hidden_by = %s)",
            (item_id,),
        ).rowcount

    def get(self, episode_id: str) -> Episode | None:
        row = self.conn.execute(f"{_SELECT} WHERE id = %s", (episode_id,)).fetchone()
        return episode(row) if row else None

    def of_session(self, session_id: str) -> Episode | None:
        row = self.conn.execute(f"{_SELECT} WHERE session_id = %s", (session_id,)).fetchone()
        return episode(row) if row else None

    def created(
        self, after: tuple[float, int], before: float, limit: int
    ) -> list[tuple[int, Episode]]:
        found = self.conn.execute(
            f"SELECT {COLUMNS}, seq FROM episodes WHERE (created_at, seq) > (%s, %s)"
            f" AND created_at < %s ORDER BY created_at, seq LIMIT {limit:d}",
            (*after, before),
        )
        return [(int(r[9]), episode(r)) for r in found]

    def chats(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT DISTINCT chat FROM episodes")]

    def of_chat(self, chat: str, limit: int) -> list[Episode]:
        found = self.conn.execute(
            f"{_SELECT} WHERE chat = %s ORDER BY ended_at DESC, seq DESC LIMIT {limit:d}",
            (chat,),
        )
        return [episode(r) for r in found]

    def of_chats(self, chats: Sequence[str], offset: int, limit: int) -> Slice[Episode]:
        if not chats:
            return Slice([], 0)
        found = self.conn.execute(
            f"{_SELECT} WHERE chat = ANY(%s) ORDER BY ended_at DESC, seq DESC"
            f" LIMIT {limit:d} OFFSET {offset:d}",
            (list(chats),),
        )
        episodes = [episode(r) for r in found]
        row = self.conn.execute(
            "SELECT count(*) FROM episodes WHERE chat = ANY(%s)", (list(chats),)
        ).fetchone()
        return Slice(episodes, int(row[0]) if row else 0)

    def search(self, chats: Sequence[str] | None, search: TextSearch) -> list[EpisodeMatch]:
        where, params = ("TRUE", []) if chats is None else ("r.chat = ANY(%s)", [list(chats)])
        found = lexical.ranked(
            self.conn, "episodes", MATCH_COLUMNS, "r.ended_at", where, params, search
        )
        return [EpisodeMatch(episode(r), float(r[9])) for r in found]
