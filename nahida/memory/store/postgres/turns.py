"""Turns in PostgreSQL: the history layer's rows, their fates and their lexical index.

A turn is indexed (its `fts` set) when it is stored with index text; hiding it clears `fts`, so
it leaves search as it left FTS5 in SQLite.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, cast

from nahida.memory.core.models import NewTurn, Turn
from nahida.memory.store.postgres import lexical, rows
from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.values import (
    FATES,
    Delivery,
    Fate,
    KnownMessage,
    Slice,
    TextSearch,
    TurnMatch,
)

_SELECT = f"SELECT {rows.TURN_COLUMNS} FROM turns"
_SPOKEN = "role IN ('user', 'assistant')"
_FATE: dict[Fate, str] = {
    "pending": "delivery IS NULL",
    "delivered": "delivery = 'delivered'",
    "undelivered": "delivery = 'undelivered'",
    "none": "delivery = 'none'",
}
# The bot's reply to a user turn: the next turn of its session, when it is the assistant's.
_REPLY = (
    "SELECT n.id FROM turns c JOIN turns n ON n.session_id = c.session_id"
    " AND n.id = (SELECT min(x.id) FROM turns x WHERE x.session_id = c.session_id AND x.id > c.id)"
    " WHERE c.id = %s AND c.role = 'user' AND n.role = 'assistant'"
)


def _match(row: Sequence[Any]) -> TurnMatch:
    id_, session_id, chat, content, message_id, time, speaker, name, earlier, score = row
    return TurnMatch(
        int(id_), session_id, chat, content, message_id, time, speaker, name, earlier, score
    )


class TurnTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def known(self, chat: str, message_id: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM turns WHERE chat = %s AND message_id = %s LIMIT 1", (chat, message_id)
        ).fetchone()
        return row is not None

    def message(
        self, chat: str, role: str, message_id: str, time: float, content: str
    ) -> KnownMessage | None:
        row = self.conn.execute(
            "SELECT id, session_id, addressed, delivery FROM turns"
            " WHERE chat = %s AND message_id = %s AND role = %s AND (time = %s OR content = %s)"
            " ORDER BY id DESC LIMIT 1",
            (chat, message_id, role, time, content),
        ).fetchone()
        if row is None:
            return None
        due = role == "user" and bool(row[2])
        fate = cast(Fate, row[3] or "pending") if due else None
        return KnownMessage(int(row[0]), row[1], bool(row[2]), fate)

    def set_fate(self, turn_id: int, fate: Fate, error: str | None) -> None:
        delivery = None if fate == "pending" else fate
        self.conn.execute(
            "UPDATE turns SET delivery = %s,"
            " error = CASE WHEN %s::text IS NULL THEN error"
            " WHEN error IS NULL THEN %s ELSE error || '; ' || %s END WHERE id = %s",
            (delivery, error, error, error, turn_id),
        )

    def deliveries(self, fate: Fate, limit: int) -> list[Delivery]:
        found = self.conn.execute(
            "SELECT id, chat, message_id, time, coalesce(delivery, 'pending'), error FROM turns"
            f" WHERE {_FATE[fate]} AND role = 'user' AND addressed ORDER BY id DESC"
            f" LIMIT {limit:d}"
        )
        return [Delivery(int(r[0]), r[1], r[2], r[3], cast(Fate, r[4]), r[5]) for r in found]

    def fates(self) -> dict[Fate, int]:
        found = dict(
            self.conn.execute(
                "SELECT coalesce(delivery, 'pending'), count(*) FROM turns"
                " WHERE role = 'user' AND addressed GROUP BY delivery"
            ).fetchall()
        )
        return {fate: int(found[fate]) for fate in FATES if found.get(fate)}

    def add(self, session_id: str, turn: NewTurn, tokens: str | None) -> int:
        words = None if tokens is None else lexical.words(tokens)
        row = self.conn.execute(
            "INSERT INTO turns (session_id, chat, role, content, time, speaker, speaker_name,"
            " message_id, tool_calls, addressed, error, fts, fts_len) VALUES"
            " (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s,"
            " CASE WHEN %s THEN nahida_tsvector(%s::text[]) END, %s) RETURNING id",
            (
                session_id,
                turn.chat,
                turn.role,
                turn.content,
                turn.time,
                turn.speaker,
                turn.speaker_name,
                turn.message_id,
                rows.dump(turn.tool_calls) if turn.tool_calls else None,
                bool(turn.addressed),
                turn.error,
                words is not None,
                words or [],
                0 if words is None else len(words) + 1,  # FTS5 counts the chat's scope token
            ),
        ).fetchone()
        assert row is not None
        self.conn.execute(
            "UPDATE sessions SET updated_at = greatest(updated_at, %s),"
            " turn_count = turn_count + 1 WHERE id = %s",
            (turn.time, session_id),
        )
        return int(row[0])

    def _turns(self, sql: str, params: Sequence[Any]) -> list[Turn]:
        return [rows.turn(r) for r in self.conn.execute(sql, params)]

    def window(self, session_id: str, before: int, limit: int, after: int = 0) -> list[Turn]:
        if limit <= 0:
            return []
        found = self._turns(
            f"{_SELECT} WHERE session_id = %s AND id < %s AND id > %s AND hidden_by IS NULL"
            f" ORDER BY id DESC LIMIT {limit:d}",
            (session_id, before, after),
        )
        found.reverse()
        return found

    def of_session(self, session_id: str) -> list[Turn]:
        return self._turns(f"{_SELECT} WHERE session_id = %s ORDER BY id", (session_id,))

    def after(self, session_id: str, after: int, limit: int) -> list[Turn]:
        return self._turns(
            f"{_SELECT} WHERE session_id = %s AND id > %s AND hidden_by IS NULL AND {_SPOKEN}"
            f" ORDER BY id LIMIT {limit:d}",
            (session_id, after),
        )

    def mark_error(self, turn_id: int, error: str) -> None:
        self.conn.execute("UPDATE turns SET error = %s WHERE id = %s", (error, turn_id))

    def rewrite(self, turn_id: int, content: str, tokens: str | None) -> None:
        if tokens is None:
            self.conn.execute("UPDATE turns SET content = %s WHERE id = %s", (content, turn_id))
            return
        words = lexical.words(tokens)  # a turn out of the index stays out
        self.conn.execute(
            "UPDATE turns SET content = %s, fts = CASE WHEN fts IS NOT NULL THEN"
            " nahida_tsvector(%s::text[]) END,"
            " fts_len = CASE WHEN fts IS NOT NULL THEN %s ELSE fts_len END WHERE id = %s",
            (content, words, len(words) + 1, turn_id),
        )

    def _with_replies(
        self, turn_ids: Sequence[int], messages: Sequence[tuple[str, str]]
    ) -> list[int]:
        """The turns named (by id or by (chat, message id)) and the bot's direct reply to each."""
        ids = list(turn_ids)
        for chat, message_id in messages:  # every turn with that id: implementations reuse ids
            found = self.conn.execute(
                "SELECT id FROM turns WHERE chat = %s AND message_id = %s", (chat, message_id)
            )
            ids.extend(int(row[0]) for row in found)
        for turn_id in list(ids):
            reply = self.conn.execute(_REPLY, (turn_id,)).fetchone()
            if reply is not None:
                ids.append(int(reply[0]))
        return list(dict.fromkeys(ids))

    def hide(self, turn_ids: Sequence[int], messages: Sequence[tuple[str, str]], by: str) -> int:
        cursor = self.conn.execute(
            "UPDATE turns SET hidden_by = %s, fts = NULL, fts_len = 0"
            " WHERE id = ANY(%s) AND hidden_by IS NULL",
            (by, self._with_replies(turn_ids, messages)),
        )
        return cursor.rowcount

    def mark_earlier(
        self, turn_ids: Sequence[int], messages: Sequence[tuple[str, str]], by: str
    ) -> int:
        cursor = self.conn.execute(
            "UPDATE turns SET earlier_for = %s WHERE id = ANY(%s) AND earlier_for IS NULL",
            (by, self._with_replies(turn_ids, messages)),
        )
        return cursor.rowcount

    def hidden_for(self, item_id: str) -> list[Turn]:
        return self._turns(
            f"{_SELECT} WHERE hidden_by = %s OR earlier_for = %s ORDER BY id", (item_id, item_id)
        )

    def search(self, chats: Sequence[str] | None, search: TextSearch) -> list[TurnMatch]:
        where, params = ("TRUE", []) if chats is None else ("r.chat = ANY(%s)", [list(chats)])
        query = lexical.ranked("turns", rows.TURN_MATCH_COLUMNS, "r.time", where, params, search)
        if query is None:
            return []
        return [_match(r) for r in self.conn.execute(*query)]

    def any_besides(self, chats: Sequence[str], exclude: Collection[int], at: float | None) -> bool:
        if not chats:
            return False
        sql = (
            f"SELECT 1 FROM turns WHERE chat = ANY(%s) AND hidden_by IS NULL AND {_SPOKEN}"
            " AND NOT (id = ANY(%s))"
        )
        params: list[Any] = [list(chats), [int(i) for i in exclude]]
        if at is not None:
            sql += " AND time <= %s"
            params.append(at)
        return self.conn.execute(f"{sql} LIMIT 1", params).fetchone() is not None

    def containing(
        self, chats: Sequence[str], needles: Sequence[str], search: TextSearch
    ) -> list[TurnMatch]:
        if not chats:
            return []
        sql = (
            f"SELECT {rows.TURN_MATCH_COLUMNS}, 1.0::float8 FROM turns r"
            f" WHERE r.chat = ANY(%s) AND r.hidden_by IS NULL AND r.{_SPOKEN}"
        )
        values: list[Any] = [list(chats)]
        for needle in needles:
            sql += f" AND strpos({lexical.ascii_fold('r.content')}, {lexical.ascii_fold('%s')}) > 0"
            values.append(needle)
        sql, values = lexical.time_filter(sql, values, "r.time", search)
        found = self.conn.execute(f"{sql} ORDER BY r.time DESC LIMIT {search.limit:d}", values)
        return [_match(r) for r in found]

    def neighbours(self, ids: Sequence[int], at: float | None) -> list[tuple[int, TurnMatch]]:
        if not ids:
            return []
        sql = (
            f"SELECT c.id AS of, {rows.TURN_MATCH_COLUMNS}, 0.0::float8 FROM turns c JOIN turns r"
            " ON r.session_id = c.session_id AND r.id IN ("
            "(SELECT max(p.id) FROM turns p WHERE p.session_id = c.session_id AND p.id < c.id"
            " AND p.role IN ('user', 'assistant') AND p.hidden_by IS NULL),"
            "(SELECT min(n.id) FROM turns n WHERE n.session_id = c.session_id AND n.id > c.id"
            " AND n.role IN ('user', 'assistant') AND n.hidden_by IS NULL))"
            " WHERE c.id = ANY(%s)"
        )
        params: list[Any] = [[int(i) for i in ids]]
        if at is not None:
            sql += " AND r.time <= %s"
            params.append(at)
        return [(int(r[0]), _match(r[1:])) for r in self.conn.execute(sql, params)]

    def page(self, session_id: str, offset: int, limit: int) -> Slice[Turn]:
        turns = self._turns(
            f"{_SELECT} WHERE session_id = %s ORDER BY id LIMIT {limit:d} OFFSET {offset:d}",
            (session_id,),
        )
        row = self.conn.execute(
            "SELECT count(*) FROM turns WHERE session_id = %s", (session_id,)
        ).fetchone()
        return Slice(turns, int(row[0]) if row else 0)

    def around(self, turn_id: int, before: int, after: int) -> list[Turn]:
        row = self.conn.execute(f"{_SELECT} WHERE id = %s", (turn_id,)).fetchone()
        if row is None:
            return []
        session_id = row[1]
        earlier = self._turns(
            f"{_SELECT} WHERE session_id = %s AND id < %s AND {_SPOKEN}"
            f" ORDER BY id DESC LIMIT {max(0, before):d}",
            (session_id, turn_id),
        )
        later = self._turns(
            f"{_SELECT} WHERE session_id = %s AND id > %s AND {_SPOKEN}"
            f" ORDER BY id LIMIT {max(0, after):d}",
            (session_id, turn_id),
        )
        return [*reversed(earlier), rows.turn(row), *later]

    def of_messages(self, messages: Sequence[tuple[str, str]]) -> list[Turn]:
        if not messages:
            return []
        chats, message_ids = zip(*dict.fromkeys(messages), strict=True)
        return self._turns(
            f"{_SELECT} WHERE (chat, message_id) IN"
            " (SELECT * FROM unnest(%s::text[], %s::text[])) ORDER BY id",
            (list(chats), list(message_ids)),
        )
