"""Sessions, turns and each chat's current session in SQLite (the history layer's SQL)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any, cast

from nahida.memory.core.models import NewTurn, Session, Turn
from nahida.memory.core.scopes import chat_scope
from nahida.memory.store.sqlite import fts, rows
from nahida.memory.store.sqlite.connection import Connection
from nahida.memory.store.sqlite.episodes import forget_sql
from nahida.memory.store.sqlite.fts import like_escape
from nahida.memory.store.values import (
    FATES,
    ChatActivity,
    Delivery,
    Fate,
    HistoryTotals,
    KnownMessage,
    Slice,
    TextSearch,
    TurnMatch,
)

_MATCH_FROM = "turns_fts", rows.TURN_MATCH_COLUMNS, "turns t ON t.id = f.rowid", "t.time"


def _turn_match(cursor: Any, row: tuple[Any, ...]) -> TurnMatch:
    return TurnMatch._make(row)  # the columns are its fields, in order


def _neighbour(cursor: Any, row: tuple[Any, ...]) -> tuple[int, TurnMatch]:
    return row[0], TurnMatch._make(row[1:])


# The bot's reply to a user turn: the next turn of its session, when it is the assistant's.
_REPLY = (
    "SELECT n.id FROM turns c JOIN turns n ON n.session_id = c.session_id"
    " AND n.id = (SELECT min(x.id) FROM turns x WHERE x.session_id = c.session_id AND x.id > c.id)"
    " WHERE c.id = ? AND c.role = 'user' AND n.role = 'assistant'"
)

_SELECT_TURNS = f"SELECT {rows.TURN_COLUMNS} FROM turns"
# each fate as a condition on `delivery` (NULL: not settled yet), written out: an undelivered
# one is found by its partial index, which a bound parameter would hide from the planner
_FATE: dict[Fate, str] = {
    "pending": "delivery IS NULL",
    "delivered": "delivery = 'delivered'",
    "undelivered": "delivery = 'undelivered'",
    "none": "delivery = 'none'",
}
_INSERT_TURN = (  # the columns of `rows.TURN_COLUMNS` in its order, but the id and the marks
    "INSERT INTO turns (session_id, chat, role, content, time, speaker, speaker_name, message_id,"
    " tool_calls, addressed, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _fate(delivery: str | None) -> Fate:
    """A turn's `delivery` as a fate (NULL: not settled yet)."""
    return cast(Fate, delivery or "pending")


class SessionTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def create(self, session_id: str, chat: str, title: str, at: float) -> bool:
        cursor = self.conn.execute(
            "INSERT INTO sessions (id, chat, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO NOTHING",
            (session_id, chat, title, at, at),
        )
        return cursor.rowcount == 1

    def get(self, session_id: str) -> Session | None:
        row = self.conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return rows.session(row) if row else None

    def _where_chat(self, sql: str, params: list[Any], chat: str | None) -> tuple[str, list[Any]]:
        if chat is None:
            return sql, params
        return f"{sql} AND chat = ?", [*params, chat]

    def latest(self, chat: str | None, limit: int) -> list[Session]:
        sql, params = self._where_chat("SELECT * FROM sessions WHERE 1", [], chat)
        found = self.conn.execute(
            f"{sql} ORDER BY updated_at DESC, id DESC LIMIT {int(limit)}", params
        )
        return [rows.session(r) for r in found]

    def by_suffix(self, suffix: str, chat: str | None, limit: int) -> list[Session]:
        sql, params = self._where_chat(
            "SELECT * FROM sessions WHERE id LIKE ? ESCAPE '\\'", [f"%{like_escape(suffix)}"], chat
        )
        return [rows.session(r) for r in self.conn.execute(f"{sql} LIMIT {int(limit)}", params)]

    def titled(self, text: str, chat: str | None, limit: int) -> list[Session]:
        sql, params = self._where_chat(
            "SELECT * FROM sessions WHERE title LIKE ? ESCAPE '\\'",
            [f"%{like_escape(text)}%"],
            chat,
        )
        found = self.conn.execute(f"{sql} ORDER BY updated_at DESC LIMIT {int(limit)}", params)
        return [rows.session(r) for r in found]

    def retitle(self, session_id: str, title: str) -> None:
        self.conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (title, session_id))

    def delete(self, session_id: str) -> bool:
        self.conn.execute(
            "DELETE FROM turns_fts WHERE rowid IN (SELECT id FROM turns WHERE session_id = ?)",
            (session_id,),
        )
        self.conn.execute(forget_sql("?"), (session_id,))  # its episode goes by foreign key
        return self.conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

    def delete_empty(self) -> int:
        empty = "NOT EXISTS (SELECT 1 FROM turns WHERE session_id = sessions.id)"
        self.conn.execute(forget_sql(f"SELECT id FROM sessions WHERE {empty}"))
        return self.conn.execute(f"DELETE FROM sessions WHERE {empty}").rowcount

    def current(self, chat: str) -> tuple[str | None, float] | None:
        row = self.conn.execute(
            "SELECT current_session, last_active FROM chats WHERE chat = ?", (chat,)
        ).fetchone()
        return (row[0], float(row[1])) if row else None

    def set_current(self, chat: str, session_id: str, at: float) -> None:
        # Most user turns keep their chat's session: then only the time moves, by a statement
        # that leaves the foreign key alone (an upsert checks it: ~4x the CPU, measured).
        if self.conn.execute(
            "UPDATE chats SET last_active = max(last_active, ?)"
            " WHERE chat = ? AND current_session = ?",
            (at, chat, session_id),
        ).rowcount:
            return
        self.conn.execute(
            "INSERT INTO chats (chat, current_session, last_active) VALUES (?, ?, ?)"
            " ON CONFLICT (chat) DO UPDATE SET current_session = excluded.current_session,"
            " last_active = max(last_active, excluded.last_active)",
            (chat, session_id, at),
        )

    def clear_current(self, chat: str) -> None:
        self.conn.execute("UPDATE chats SET current_session = NULL WHERE chat = ?", (chat,))

    def totals(self) -> HistoryTotals:
        row = self.conn.execute(
            "SELECT count(DISTINCT chat), count(*), coalesce(sum(turn_count), 0) FROM sessions"
        ).fetchone()
        return HistoryTotals(int(row[0]), int(row[1]), int(row[2]))

    def chats(self, offset: int, limit: int) -> Slice[ChatActivity]:
        found = self.conn.execute(
            "SELECT chat, count(*), sum(turn_count), max(updated_at) AS active FROM sessions"
            f" GROUP BY chat ORDER BY active DESC, chat LIMIT {int(limit)} OFFSET {int(offset)}"
        )
        activity = [ChatActivity(*row) for row in found]
        (total,) = self.conn.execute("SELECT count(DISTINCT chat) FROM sessions").fetchone()
        return Slice(activity, int(total))

    def activity(self, chat: str) -> ChatActivity | None:
        row = self.conn.execute(
            "SELECT chat, count(*), sum(turn_count), max(updated_at) FROM sessions WHERE chat = ?",
            (chat,),
        ).fetchone()
        return ChatActivity(*row) if row[1] else None

    def page(self, chat: str, offset: int, limit: int) -> Slice[Session]:
        found = self.conn.execute(
            "SELECT * FROM sessions WHERE chat = ? ORDER BY updated_at DESC, id DESC"
            f" LIMIT {int(limit)} OFFSET {int(offset)}",
            (chat,),
        )
        sessions = [rows.session(r) for r in found]
        (total,) = self.conn.execute(
            "SELECT count(*) FROM sessions WHERE chat = ?", (chat,)
        ).fetchone()
        return Slice(sessions, int(total))


class TurnTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._merging = fts.Merging("turns_fts") if fts.merging_is_safe(conn) else None

    def known(self, chat: str, message_id: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM turns WHERE chat = ? AND message_id = ?", (chat, message_id)
        ).fetchone()
        return row is not None

    def message(
        self, chat: str, role: str, message_id: str, time: float, content: str
    ) -> KnownMessage | None:
        row = self.conn.execute(
            "SELECT id, session_id, addressed, delivery FROM turns"
            " WHERE chat = ? AND message_id = ? AND role = ? AND (time = ? OR content = ?)"
            " ORDER BY id DESC LIMIT 1",
            (chat, message_id, role, time, content),
        ).fetchone()
        if row is None:
            return None
        due = role == "user" and bool(row[2])
        return KnownMessage(int(row[0]), row[1], bool(row[2]), _fate(row[3]) if due else None)

    def set_fate(self, turn_id: int, fate: Fate, error: str | None) -> None:
        delivery = None if fate == "pending" else fate
        if error is None:
            self.conn.execute("UPDATE turns SET delivery = ? WHERE id = ?", (delivery, turn_id))
            return
        self.conn.execute(
            "UPDATE turns SET delivery = ?1,"
            " error = CASE WHEN error IS NULL THEN ?2 ELSE error || '; ' || ?2 END WHERE id = ?3",
            (delivery, error, turn_id),
        )

    def deliveries(self, fate: Fate, limit: int) -> list[Delivery]:
        found = self.conn.execute(
            "SELECT id, chat, message_id, time, coalesce(delivery, 'pending'), error FROM turns"
            f" WHERE {_FATE[fate]} AND role = 'user' AND addressed = 1 ORDER BY id DESC"
            f" LIMIT {int(limit)}"
        )
        return [Delivery(*row) for row in found]

    def fates(self) -> dict[Fate, int]:
        found = dict(
            self.conn.execute(
                "SELECT coalesce(delivery, 'pending'), count(*) FROM turns"
                " WHERE role = 'user' AND addressed = 1 GROUP BY delivery"
            ).fetchall()
        )
        return {fate: found[fate] for fate in FATES if found.get(fate)}

    def add(self, session_id: str, turn: NewTurn, tokens: str | None) -> int:
        conn = self.conn
        values = (
            session_id,
            turn.chat,
            turn.role,
            turn.content,
            turn.time,
            turn.speaker,
            turn.speaker_name,
            turn.message_id,
            rows.dump(turn.tool_calls) if turn.tool_calls else None,
            int(turn.addressed),
            turn.error,
        )
        turn_id = int(conn.execute(_INSERT_TURN, values).lastrowid or 0)
        if tokens is not None:
            conn.execute(
                "INSERT INTO turns_fts (rowid, body, scopes) VALUES (?, ?, ?)",
                (turn_id, tokens, fts.scope_token(chat_scope(turn.chat))),
            )
            if self._merging is not None:
                self._merging.written(conn)
        conn.execute(
            "UPDATE sessions SET updated_at = max(updated_at, ?), turn_count = turn_count + 1"
            " WHERE id = ?",
            (turn.time, session_id),
        )
        return turn_id

    def window(self, session_id: str, before: int, limit: int, after: int = 0) -> rows.TurnRows:
        """The last `limit` turns of the session before `before` (and after `after`) that are
        not hidden, oldest first."""
        if limit <= 0:
            return rows.TurnRows([])
        cursor = self.conn.cursor()
        cursor.row_factory = None  # plain tuples, built into turns only when looked at
        found = cursor.execute(
            _SELECT_TURNS + " WHERE session_id = ? AND id < ? AND id > ? AND hidden_by IS NULL"
            f" ORDER BY id DESC LIMIT {int(limit)}",
            (session_id, before, after),
        ).fetchall()
        found.reverse()
        return rows.TurnRows(found)

    def of_session(self, session_id: str) -> list[Turn]:
        found = self.conn.execute(
            _SELECT_TURNS + " WHERE session_id = ? ORDER BY id", (session_id,)
        )
        return [rows.turn(r) for r in found]

    def after(self, session_id: str, after: int, limit: int) -> rows.TurnRows:
        cursor = self.conn.cursor()
        cursor.row_factory = None  # plain tuples, as `window`'s (a compaction reads 20–40)
        found = cursor.execute(
            _SELECT_TURNS + " WHERE session_id = ? AND id > ? AND hidden_by IS NULL"
            f" AND role IN ('user', 'assistant') ORDER BY id LIMIT {int(limit)}",
            (session_id, after),
        ).fetchall()
        return rows.TurnRows(found)

    def mark_error(self, turn_id: int, error: str) -> None:
        self.conn.execute("UPDATE turns SET error = ? WHERE id = ?", (error, turn_id))

    def rewrite(self, turn_id: int, content: str, tokens: str | None) -> None:
        # the old words' vector is named no more: recall by meaning never finds them again
        self.conn.execute(
            "UPDATE turns SET content = ?, embed_hash = NULL WHERE id = ?", (content, turn_id)
        )
        if tokens is not None:  # an update, never an insert: a turn out of the index stays out
            self.conn.execute("UPDATE turns_fts SET body = ? WHERE rowid = ?", (tokens, turn_id))

    def _with_replies(
        self, turn_ids: Sequence[int], messages: Sequence[tuple[str, str]]
    ) -> list[int]:
        """The turns named (by id or by (chat, message id)) and the bot's direct reply to each."""
        conn = self.conn
        ids = list(turn_ids)
        for chat, message_id in messages:  # every turn with that id: implementations reuse ids
            found = conn.execute(
                "SELECT id FROM turns WHERE chat = ? AND message_id = ?", (chat, message_id)
            )
            ids.extend(int(row[0]) for row in found)
        for turn_id in list(ids):
            reply = conn.execute(_REPLY, (turn_id,)).fetchone()
            if reply is not None:
                ids.append(int(reply[0]))
        return list(dict.fromkeys(ids))

    def hide(self, turn_ids: Sequence[int], messages: Sequence[tuple[str, str]], by: str) -> int:
        hidden = 0
        for turn_id in self._with_replies(turn_ids, messages):
            cursor = self.conn.execute(
                "UPDATE turns SET hidden_by = ? WHERE id = ? AND hidden_by IS NULL", (by, turn_id)
            )
            if cursor.rowcount:
                self.conn.execute("DELETE FROM turns_fts WHERE rowid = ?", (turn_id,))
                hidden += 1
        return hidden

    def mark_earlier(
        self, turn_ids: Sequence[int], messages: Sequence[tuple[str, str]], by: str
    ) -> int:
        marked = 0
        for turn_id in self._with_replies(turn_ids, messages):
            cursor = self.conn.execute(
                "UPDATE turns SET earlier_for = ? WHERE id = ? AND earlier_for IS NULL",
                (by, turn_id),
            )
            marked += cursor.rowcount
        return marked

    def hidden_for(self, item_id: str) -> list[Turn]:
        found = self.conn.execute(
            _SELECT_TURNS + " WHERE hidden_by = ? OR earlier_for = ? ORDER BY id",
            (item_id, item_id),
        )
        return [rows.turn(r) for r in found]

    def search(self, chats: Sequence[str] | None, search: TextSearch) -> list[TurnMatch]:
        if chats and search.terms is None:
            return self._latest(chats, search)
        if self._merging is not None:
            self._merging.searched()
        expression = fts.chats_match(search.terms, chats)
        return fts.ranked(
            self.conn, *_MATCH_FROM, expression, search, _turn_match, records_after=True
        )

    def _latest(self, chats: Sequence[str], search: TextSearch) -> list[TurnMatch]:
        """The chats' latest indexed turns (those with an FTS row) up to the search's moment and
        in its window, each chat's by the turns' own index on chat and time. The FTS5 plan read
        every row of the chats' scope tokens however few were asked for (a chat of 124,000
        turns: 55 ms a search, now 0.3)."""
        sql, params = fts.time_filter(
            f"SELECT {rows.TURN_MATCH_COLUMNS}, 1.0 AS score FROM turns t WHERE t.chat = ?",
            [],
            "t.time",
            search,
        )
        sql += (
            " AND EXISTS (SELECT 1 FROM turns_fts f WHERE f.rowid = t.id)"
            f" ORDER BY t.time DESC LIMIT {int(search.limit)}"
        )
        cursor = self.conn.cursor()
        cursor.row_factory = _turn_match
        each = dict.fromkeys(chats)
        found = [m for chat in each for m in cursor.execute(sql, [chat, *params])]
        if len(each) > 1:  # several chats': the latest of them all
            found.sort(key=lambda match: match.time, reverse=True)
            del found[search.limit :]
        return found

    def any_besides(self, chats: Sequence[str], exclude: Collection[int], at: float | None) -> bool:
        if not chats:
            return False
        sql = (
            f"SELECT 1 FROM turns WHERE chat IN ({', '.join('?' * len(chats))})"
            " AND hidden_by IS NULL AND role IN ('user', 'assistant')"
            " AND id NOT IN (SELECT value FROM json_each(?))"
        )
        params: list[Any] = [*chats, json.dumps(list(exclude))]
        if at is not None:
            sql += " AND time <= ?"
            params.append(at)
        return self.conn.execute(f"{sql} LIMIT 1", params).fetchone() is not None

    def containing(
        self, chats: Sequence[str], needles: Sequence[str], search: TextSearch
    ) -> list[TurnMatch]:
        if not chats:
            return []
        sql = (
            f"SELECT {rows.TURN_MATCH_COLUMNS}, 1.0 FROM turns t"
            f" WHERE t.chat IN ({', '.join('?' * len(chats))}) AND t.hidden_by IS NULL"
            " AND t.role IN ('user', 'assistant')"
        )
        values: list[Any] = list(chats)
        for needle in needles:
            sql += " AND t.content LIKE ? ESCAPE '\\'"
            values.append(f"%{like_escape(needle)}%")
        sql, values = fts.time_filter(sql, values, "t.time", search)
        cursor = self.conn.cursor()
        cursor.row_factory = _turn_match
        return cursor.execute(
            f"{sql} ORDER BY t.time DESC LIMIT {int(search.limit)}", values
        ).fetchall()

    def neighbours(self, ids: Sequence[int], at: float | None) -> list[tuple[int, TurnMatch]]:
        if not ids:
            return []
        sql = (
            f"SELECT c.id AS of, {rows.TURN_MATCH_COLUMNS}, 0.0 FROM turns c JOIN turns t"
            " ON t.session_id = c.session_id AND t.id IN ("
            "(SELECT max(p.id) FROM turns p WHERE p.session_id = c.session_id AND p.id < c.id"
            " AND p.role IN ('user', 'assistant') AND p.hidden_by IS NULL),"
            "(SELECT min(n.id) FROM turns n WHERE n.session_id = c.session_id AND n.id > c.id"
            " AND n.role IN ('user', 'assistant') AND n.hidden_by IS NULL))"
            f" WHERE c.id IN ({', '.join('?' * len(ids))})"
        )
        params: list[Any] = list(ids)
        if at is not None:
            sql += " AND t.time <= ?"
            params.append(at)
        cursor = self.conn.cursor()
        cursor.row_factory = _neighbour
        return cursor.execute(sql, params).fetchall()

    def page(self, session_id: str, offset: int, limit: int) -> Slice[Turn]:
        found = self.conn.execute(
            _SELECT_TURNS + " WHERE session_id = ?"
            f" ORDER BY id LIMIT {int(limit)} OFFSET {int(offset)}",
            (session_id,),
        )
        turns = [rows.turn(r) for r in found]
        (total,) = self.conn.execute(
            "SELECT count(*) FROM turns WHERE session_id = ?", (session_id,)
        ).fetchone()
        return Slice(turns, int(total))

    def around(self, turn_id: int, before: int, after: int) -> list[Turn]:
        row = self.conn.execute(_SELECT_TURNS + " WHERE id = ?", (turn_id,)).fetchone()
        if row is None:
            return []
        spoken = " AND role IN ('user', 'assistant')"
        earlier = self.conn.execute(
            _SELECT_TURNS + f" WHERE session_id = ? AND id < ?{spoken}"
            f" ORDER BY id DESC LIMIT {max(0, int(before))}",
            (row["session_id"], turn_id),
        ).fetchall()
        later = self.conn.execute(
            _SELECT_TURNS + f" WHERE session_id = ? AND id > ?{spoken}"
            f" ORDER BY id LIMIT {max(0, int(after))}",
            (row["session_id"], turn_id),
        ).fetchall()
        return [rows.turn(r) for r in [*reversed(earlier), row, *later]]

    def of_messages(self, messages: Sequence[tuple[str, str]]) -> list[Turn]:
        found: dict[int, Turn] = {}
        for chat, message_id in dict.fromkeys(messages):
            for r in self.conn.execute(
                _SELECT_TURNS + " WHERE chat = ? AND message_id = ?", (chat, message_id)
            ):
                found[int(r["id"])] = rows.turn(r)
        return [found[turn_id] for turn_id in sorted(found)]
