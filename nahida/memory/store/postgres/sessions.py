"""Sessions and each chat's current session in PostgreSQL."""

from __future__ import annotations

from typing import Any

from nahida.memory.core.models import Session
from nahida.memory.store.postgres import rows
from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.postgres.lexical import ascii_fold, like_escape
from nahida.memory.store.values import ChatActivity, HistoryTotals, Slice

_SELECT = f"SELECT {rows.SESSION_COLUMNS} FROM sessions"


class SessionTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def create(self, session_id: str, chat: str, title: str, at: float) -> bool:
        cursor = self.conn.execute(
            "INSERT INTO sessions (id, chat, title, created_at, updated_at)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
            (session_id, chat, title, at, at),
        )
        return cursor.rowcount == 1

    def get(self, session_id: str) -> Session | None:
        row = self.conn.execute(f"{_SELECT} WHERE id = %s", (session_id,)).fetchone()
        return rows.session(row) if row else None

    def _listed(self, where: str, params: list[Any], chat: str | None, tail: str) -> list[Session]:
        if chat is not None:
            where, params = f"{where} AND chat = %s", [*params, chat]
        found = self.conn.execute(f"{_SELECT} WHERE {where} {tail}", params)
        return [rows.session(r) for r in found]

    def latest(self, chat: str | None, limit: int) -> list[Session]:
        return self._listed("TRUE", [], chat, f"ORDER BY updated_at DESC, id DESC LIMIT {limit:d}")

    def by_suffix(self, suffix: str, chat: str | None, limit: int) -> list[Session]:
        return self._listed("id LIKE %s", [f"%{like_escape(suffix)}"], chat, f"LIMIT {limit:d}")

    def titled(self, text: str, chat: str | None, limit: int) -> list[Session]:
        pattern = f"%{like_escape(text)}%"
        return self._listed(
            f"{ascii_fold('title')} LIKE {ascii_fold('%s')}",
            [pattern],
            chat,
            f"ORDER BY updated_at DESC LIMIT {limit:d}",
        )

    def retitle(self, session_id: str, title: str) -> None:
        self.conn.execute("UPDATE sessions SET title = %s WHERE id = %s", (title, session_id))

    def delete(self, session_id: str) -> bool:
        # its turns go by foreign key, their index entries with them
        cursor = self.conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
        return cursor.rowcount > 0

    def delete_empty(self) -> int:
        cursor = self.conn.execute(
            "DELETE FROM sessions s WHERE NOT EXISTS (SELECT 1 FROM turns t"
            " WHERE t.session_id = s.id)"
        )
        return cursor.rowcount

    def current(self, chat: str) -> tuple[str | None, float] | None:
        row = self.conn.execute(
            "SELECT current_session, last_active FROM chats WHERE chat = %s", (chat,)
        ).fetchone()
        return (row[0], float(row[1])) if row else None

    def set_current(self, chat: str, session_id: str, at: float) -> None:
        self.conn.execute(
            "INSERT INTO chats (chat, current_session, last_active) VALUES (%s, %s, %s)"
            " ON CONFLICT (chat) DO UPDATE SET current_session = excluded.current_session,"
            " last_active = greatest(chats.last_active, excluded.last_active)",
            (chat, session_id, at),
        )

    def clear_current(self, chat: str) -> None:
        self.conn.execute("UPDATE chats SET current_session = NULL WHERE chat = %s", (chat,))

    def totals(self) -> HistoryTotals:
        row = self.conn.execute(
            "SELECT count(DISTINCT chat), count(*), coalesce(sum(turn_count), 0) FROM sessions"
        ).fetchone()
        assert row is not None
        return HistoryTotals(int(row[0]), int(row[1]), int(row[2]))

    def chats(self, offset: int, limit: int) -> Slice[ChatActivity]:
        found = self.conn.execute(
            "SELECT chat, count(*), sum(turn_count), max(updated_at) AS active FROM sessions"
            f" GROUP BY chat ORDER BY active DESC, chat LIMIT {limit:d} OFFSET {offset:d}"
        )
        activity = [_activity(row) for row in found]
        total = self.conn.execute("SELECT count(DISTINCT chat) FROM sessions").fetchone()
        return Slice(activity, int(total[0]) if total else 0)

    def activity(self, chat: str) -> ChatActivity | None:
        row = self.conn.execute(
            "SELECT chat, count(*), sum(turn_count), max(updated_at) FROM sessions"
            " WHERE chat = %s GROUP BY chat",
            (chat,),
        ).fetchone()
        return _activity(row) if row else None

    def page(self, chat: str, offset: int, limit: int) -> Slice[Session]:
        found = self.conn.execute(
            f"{_SELECT} WHERE chat = %s ORDER BY updated_at DESC, id DESC"
            f" LIMIT {limit:d} OFFSET {offset:d}",
            (chat,),
        )
        sessions = [rows.session(r) for r in found]
        total = self.conn.execute("SELECT count(*) FROM sessions WHERE chat = %s", (chat,))
        row = total.fetchone()
        return Slice(sessions, int(row[0]) if row else 0)


def _activity(row: Any) -> ChatActivity:
    chat, sessions, turns, active = row
    return ChatActivity(chat, int(sessions), int(turns), float(active))
