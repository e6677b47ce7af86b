"""Conversation history: sessions and turns of every chat (the session layer).

A session belongs to one chat and is written only when its first user message arrives (its title is
the first 40 characters of that message). Each chat has a current session; `/new` clears it so the
next message starts a fresh one, `/resume` points it at an older one, and a message after a long
gap (`session.idle_split_minutes`) starts a new one too. Turns are indexed in `turns_fts` with the
same jieba tokens memory search uses, the chat's scope token inside the row.

All functions here are synchronous and take a connection; async code calls them through
`Database.run`.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nahida.db import Connection, transaction
from nahida.memory.tokens import index_text, match_query, scope_token, scoped_match

TITLE_CHARS = 40


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    chat: str
    title: str
    created_at: datetime
    updated_at: datetime
    turn_count: int


@dataclass(frozen=True, slots=True)
class Turn:
    id: int
    session_id: str
    chat: str
    role: str
    content: str
    time: datetime
    speaker: str | None = None
    speaker_name: str | None = None
    message_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    addressed: bool = True
    error: str | None = None


@dataclass(frozen=True, slots=True)
class NewTurn:
    """What the runner records; `time` is epoch seconds."""

    chat: str
    role: str
    content: str
    time: float
    speaker: str | None = None
    speaker_name: str | None = None
    message_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    addressed: bool = True
    error: str | None = None
    index: str | None = None  # index_text(content) when the caller computed it already


def chat_scope(chat: str) -> str:
    return f"chat:{chat}"


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _session(row: Any) -> Session:
    return Session(
        row["id"],
        row["chat"],
        row["title"],
        _dt(row["created_at"]),
        _dt(row["updated_at"]),
        row["turn_count"],
    )


def _turn(row: Any) -> Turn:
    return Turn(
        id=row["id"],
        session_id=row["session_id"],
        chat=row["chat"],
        role=row["role"],
        content=row["content"],
        time=_dt(row["time"]),
        speaker=row["speaker"],
        speaker_name=row["speaker_name"],
        message_id=row["message_id"],
        tool_calls=json.loads(row["tool_calls"]) if row["tool_calls"] else None,
        addressed=bool(row["addressed"]),
        error=row["error"],
    )


def new_session_id(conn: Connection, at: float) -> str:
    stamp = datetime.fromtimestamp(at, UTC).strftime("%Y%m%d_%H%M")
    while True:
        candidate = f"s_{stamp}_{secrets.token_hex(2)}"
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (candidate,)).fetchone() is None:
            return candidate


def current_session(conn: Connection, chat: str) -> str | None:
    row = conn.execute("SELECT current_session FROM chats WHERE chat = ?", (chat,)).fetchone()
    return row[0] if row else None


def _session_for(conn: Connection, turn: NewTurn, idle_split: float) -> str:
    """The session a user turn belongs to, creating it when needed."""
    row = conn.execute(
        "SELECT current_session, last_active FROM chats WHERE chat = ?", (turn.chat,)
    ).fetchone()
    if row and row[0] and not (idle_split and turn.time - row[1] > idle_split):
        return str(row[0])
    session_id = new_session_id(conn, turn.time)
    title = " ".join(turn.content.split())[:TITLE_CHARS] or "…"
    conn.execute(
        "INSERT INTO sessions (id, chat, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
        (session_id, turn.chat, title, turn.time, turn.time),
    )
    return session_id


def record(conn: Connection, turn: NewTurn, idle_split: float = 0.0) -> Turn | None:
    """Store a turn; a user turn may open a session. None when (chat, message_id) is known."""
    with transaction(conn):
        if (
            turn.message_id is not None
            and conn.execute(
                "SELECT 1 FROM turns WHERE chat = ? AND message_id = ?",
                (turn.chat, turn.message_id),
            ).fetchone()
        ):
            return None
        if turn.role == "user":
            session_id = _session_for(conn, turn, idle_split)
        else:
            current = current_session(conn, turn.chat)
            if current is None:  # an assistant turn never opens a session on its own
                return None
            session_id = current
        cursor = conn.execute(
            "INSERT INTO turns (session_id, chat, role, speaker, speaker_name, content,"
            " message_id, time, tool_calls, addressed, error)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                turn.chat,
                turn.role,
                turn.speaker,
                turn.speaker_name,
                turn.content,
                turn.message_id,
                turn.time,
                json.dumps(turn.tool_calls, ensure_ascii=False) if turn.tool_calls else None,
                int(turn.addressed),
                turn.error,
            ),
        )
        turn_id = int(cursor.lastrowid or 0)
        if turn.role in ("user", "assistant") and turn.content:
            conn.execute(
                "INSERT INTO turns_fts (rowid, body, scopes) VALUES (?, ?, ?)",
                (
                    turn_id,
                    turn.index or index_text(turn.content),
                    scope_token(chat_scope(turn.chat)),
                ),
            )
        conn.execute(
            "UPDATE sessions SET updated_at = max(updated_at, ?), turn_count = turn_count + 1"
            " WHERE id = ?",
            (turn.time, session_id),
        )
        if turn.role == "user":
            conn.execute(
                "INSERT INTO chats (chat, current_session, last_active) VALUES (?, ?, ?)"
                " ON CONFLICT (chat) DO UPDATE SET current_session = excluded.current_session,"
                " last_active = max(last_active, excluded.last_active)",
                (turn.chat, session_id, turn.time),
            )
    return Turn(
        id=turn_id,
        session_id=session_id,
        chat=turn.chat,
        role=turn.role,
        content=turn.content,
        time=_dt(turn.time),
        speaker=turn.speaker,
        speaker_name=turn.speaker_name,
        message_id=turn.message_id,
        tool_calls=turn.tool_calls,
        addressed=turn.addressed,
        error=turn.error,
    )


def record_with_window(
    conn: Connection, turn: NewTurn, idle_split: float, window: int
) -> tuple[Turn, list[Turn]] | None:
    """Record a user turn and return it with the `window` turns before it in its session."""
    recorded = record(conn, turn, idle_split)
    if recorded is None:
        return None
    rows = conn.execute(
        "SELECT * FROM turns WHERE session_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
        (recorded.session_id, recorded.id, window),
    ).fetchall()
    return recorded, [_turn(r) for r in reversed(rows)]


def mark_error(conn: Connection, turn_id: int, error: str) -> None:
    """Record why a turn got no proper answer (e.g. the provider failed)."""
    conn.execute("UPDATE turns SET error = ? WHERE id = ?", (error, turn_id))


def session_turns(conn: Connection, session_id: str) -> list[Turn]:
    rows = conn.execute("SELECT * FROM turns WHERE session_id = ? ORDER BY id", (session_id,))
    return [_turn(r) for r in rows]


def get_session(conn: Connection, session_id: str) -> Session | None:
    row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return _session(row) if row else None


def list_sessions(conn: Connection, chat: str | None = None, limit: int = 20) -> list[Session]:
    if chat is None:
        rows = conn.execute(
            "SELECT * FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ?", (limit,)
        )
    else:
        rows = conn.execute(
            "SELECT * FROM sessions WHERE chat = ? ORDER BY updated_at DESC, id DESC LIMIT ?",
            (chat, limit),
        )
    return [_session(r) for r in rows]


def resolve_session(conn: Connection, chat: str | None, ref: str) -> Session | None:
    """A session by full id, by id suffix (unique), or `last` (latest but the current one)."""
    ref = ref.strip()
    if ref == "last":
        current = current_session(conn, chat) if chat else None
        for session in list_sessions(conn, chat, limit=2):
            if session.id != current:
                return session
        return None
    exact = get_session(conn, ref)
    if exact and (chat is None or exact.chat == chat):
        return exact
    if len(ref) < 2:
        return None
    escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    params: tuple[Any, ...] = (f"%{escaped}",)
    sql = "SELECT * FROM sessions WHERE id LIKE ? ESCAPE '\\'"
    if chat is not None:
        sql += " AND chat = ?"
        params += (chat,)
    rows = conn.execute(sql + " LIMIT 2", params).fetchall()
    return _session(rows[0]) if len(rows) == 1 else None


def start_new(conn: Connection, chat: str) -> None:
    """The next user message of the chat opens a new session."""
    conn.execute("UPDATE chats SET current_session = NULL WHERE chat = ?", (chat,))


def resume(conn: Connection, chat: str, session_id: str) -> None:
    conn.execute(
        "INSERT INTO chats (chat, current_session, last_active) VALUES (?, ?, ?)"
        " ON CONFLICT (chat) DO UPDATE SET current_session = excluded.current_session,"
        " last_active = excluded.last_active",
        (chat, session_id, time.time()),
    )


def delete_session(conn: Connection, session_id: str) -> bool:
    with transaction(conn):
        conn.execute(
            "DELETE FROM turns_fts WHERE rowid IN (SELECT id FROM turns WHERE session_id = ?)",
            (session_id,),
        )
        cursor = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    return cursor.rowcount > 0


def cleanup_empty(conn: Connection) -> int:
    """Delete sessions without turns; returns how many."""
    cursor = conn.execute(
        "DELETE FROM sessions WHERE NOT EXISTS (SELECT 1 FROM turns WHERE session_id = sessions.id)"
    )
    return cursor.rowcount


def search_sessions(
    conn: Connection, query: str, chat: str | None = None, limit: int = 20
) -> list[tuple[Session, str]]:
    """Sessions whose title or turns match; each with the best matching snippet."""
    found: dict[str, tuple[Session, str]] = {}
    like = f"%{query.strip()}%"
    sql = "SELECT * FROM sessions WHERE title LIKE ?"
    params: tuple[Any, ...] = (like,)
    if chat is not None:
        sql += " AND chat = ?"
        params += (chat,)
    for row in conn.execute(sql + " ORDER BY updated_at DESC LIMIT ?", (*params, limit)):
        found[row["id"]] = (_session(row), row["title"])
    if chat is not None:
        expr = scoped_match(query, [chat_scope(chat)])
    else:
        body = match_query(query)
        expr = f"body : ({body})" if body else None
    if expr is not None:
        rows = conn.execute(
            "SELECT t.* FROM turns_fts f JOIN turns t ON t.id = f.rowid"
            " WHERE turns_fts MATCH ? ORDER BY bm25(turns_fts) LIMIT ?",
            (expr, limit * 5),
        ).fetchall()
        for row in rows:
            if row["session_id"] not in found and len(found) < limit:
                session = get_session(conn, row["session_id"])
                if session is not None:
                    found[session.id] = (session, row["content"])
    return list(found.values())[:limit]
