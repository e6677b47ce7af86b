"""Episodes of finished sessions in SQLite (the Ethan layer 4), with their FTS rows.

An episode's FTS row (`episodes_fts`, keyed by the episode's `seq`) carries its chat's scope
token only: like the session's turns, an episode is seen in its own chat and nowhere else, and
that is decided inside the MATCH. Deleting a session removes its episode (a foreign key) and
`SessionTable` removes the FTS row with it (`forget_sql`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from nahida.memory.core.models import Episode
from nahida.memory.core.scopes import chat_scope
from nahida.memory.store.sqlite import fts
from nahida.memory.store.sqlite.connection import Connection
from nahida.memory.store.values import EpisodeMatch, Slice, TextSearch

_COLUMNS = "id, session_id, chat, summary, keywords, started_at, ended_at, turn_count, created_at"
_MATCH_FROM = "episodes_fts", "e.*", "episodes e ON e.seq = f.rowid", "e.ended_at"

# A session that ends again after a resume gets its episode rewritten: same id and creation
# time; a new text drops the old vector's name (upkeep embeds the new one).
_PUT = (
    f"INSERT INTO episodes ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (session_id) DO UPDATE SET chat = excluded.chat, summary = excluded.summary,"
    " keywords = excluded.keywords, started_at = excluded.started_at,"
    " ended_at = excluded.ended_at, turn_count = excluded.turn_count,"
    " embed_hash = CASE WHEN summary = excluded.summary AND keywords = excluded.keywords"
    " THEN embed_hash END"
    " RETURNING *"
)


def episode_of(row: Any) -> Episode:
    return Episode(
        id=row["id"],
        session_id=row["session_id"],
        chat=row["chat"],
        summary=row["summary"],
        keywords=tuple(json.loads(row["keywords"])),
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        turn_count=row["turn_count"],
        created_at=row["created_at"],
    )


def forget_sql(sessions: str) -> str:
    """A statement deleting the FTS rows of the episodes of the sessions `sessions` selects
    (a subquery of session ids); run it before the sessions are deleted."""
    return (
        "DELETE FROM episodes_fts WHERE rowid IN"
        f" (SELECT seq FROM episodes WHERE session_id IN ({sessions}))"
    )


class EpisodeTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._compaction = fts.Compaction("episodes_fts")

    def put(self, episode: Episode, tokens: str) -> Episode:
        conn = self.conn
        row = conn.execute(
            _PUT,
            (
                episode.id,
                episode.session_id,
                episode.chat,
                episode.summary,
                json.dumps(list(episode.keywords), ensure_ascii=False),
                episode.started_at,
                episode.ended_at,
                episode.turn_count,
                episode.created_at,
            ),
        ).fetchone()
        seq = int(row["seq"])
        conn.execute("DELETE FROM episodes_fts WHERE rowid = ?", (seq,))
        conn.execute(
            "INSERT INTO episodes_fts (rowid, body, scopes) VALUES (?, ?, ?)",
            (seq, tokens, fts.scope_token(chat_scope(episode.chat))),
        )
        self._compaction.written(conn)
        return episode_of(row)

    def drop_told(self, item_id: str) -> int:
        sessions = "SELECT DISTINCT session_id FROM turns WHERE hidden_by = ?"
        self.conn.execute(forget_sql(sessions), (item_id,))
        return self.conn.execute(
            f"DELETE FROM episodes WHERE session_id IN ({sessions})", (item_id,)
        ).rowcount

    def get(self, episode_id: str) -> Episode | None:
        row = self.conn.execute("SELECT * FROM episodes WHERE id = ?", (episode_id,)).fetchone()
        return episode_of(row) if row else None

    def of_session(self, session_id: str) -> Episode | None:
        row = self.conn.execute(
            "SELECT * FROM episodes WHERE session_id = ?", (session_id,)
        ).fetchone()
        return episode_of(row) if row else None

    def created(
        self, after: tuple[float, int], before: float, limit: int
    ) -> list[tuple[int, Episode]]:
        found = self.conn.execute(
            "SELECT * FROM episodes WHERE (created_at, seq) > (?, ?) AND created_at < ?"
            f" ORDER BY created_at, seq LIMIT {int(limit)}",
            (*after, before),
        )
        return [(int(r["seq"]), episode_of(r)) for r in found]

    def chats(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT DISTINCT chat FROM episodes")]

    def of_chat(self, chat: str, limit: int) -> list[Episode]:
        found = self.conn.execute(
            "SELECT * FROM episodes WHERE chat = ?"
            f" ORDER BY ended_at DESC, seq DESC LIMIT {int(limit)}",
            (chat,),
        )
        return [episode_of(r) for r in found]

    def of_chats(self, chats: Sequence[str], offset: int, limit: int) -> Slice[Episode]:
        if not chats:
            return Slice([], 0)
        among = f"chat IN ({', '.join('?' * len(chats))})"
        found = self.conn.execute(
            f"SELECT * FROM episodes WHERE {among} ORDER BY ended_at DESC, seq DESC"
            f" LIMIT {int(limit)} OFFSET {int(offset)}",
            tuple(chats),
        )
        episodes = [episode_of(r) for r in found]
        (total,) = self.conn.execute(
            f"SELECT count(*) FROM episodes WHERE {among}", tuple(chats)
        ).fetchone()
        return Slice(episodes, int(total))

    def search(self, chats: Sequence[str] | None, search: TextSearch) -> list[EpisodeMatch]:
        expression = fts.chats_match(search.terms, chats)
        if expression:  # a MATCH: its cost grows with the segments (`fts.Compaction`)
            self._compaction.searched()
        found = fts.ranked(self.conn, *_MATCH_FROM, expression, search)
        return [EpisodeMatch(episode_of(r), float(r["score"])) for r in found]
