"""Sessions, turns, each chat's current session and the commands answered, in memory."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from nahida.memory.core.models import NewTurn, Session, Turn
from nahida.memory.store.reference import text
from nahida.memory.store.reference.data import ROLES, Data, SessionRow, TurnRow, check
from nahida.memory.store.values import (
    FATES,
    ChatActivity,
    CommandMessage,
    Delivery,
    Fate,
    HistoryTotals,
    KnownMessage,
    Slice,
    TextSearch,
    TurnMatch,
)

KEEP_COMMANDS = 30 * 86_400  # as long as the SQLite store keeps them


def forget_sessions(data: Data, session_ids: Collection[str]) -> None:
    """Delete sessions with what hangs on them: turns, episode, summary, a chat's pointer."""
    gone = set(session_ids)
    for session_id in gone:
        data.sessions.pop(session_id, None)
        data.episodes.pop(session_id, None)
        data.summaries.pop(session_id, None)
    for turn_id in [t.id for t in data.turns.values() if t.session_id in gone]:
        del data.turns[turn_id]
        data.recalls.pop(turn_id, None)
    for chat, (current, active) in list(data.chats.items()):
        if current in gone:
            data.chats[chat] = (None, active)


class SessionTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def create(self, session_id: str, chat: str, title: str, at: float) -> bool:
        if session_id in self.data.sessions:
            return False
        self.data.sessions[session_id] = SessionRow(session_id, chat, title, at, at)
        return True

    def get(self, session_id: str) -> Session | None:
        row = self.data.sessions.get(session_id)
        return row.session() if row else None

    def _of(self, chat: str | None) -> list[Session]:
        return [r.session() for r in self.data.sessions.values() if chat in (None, r.chat)]

    def latest(self, chat: str | None, limit: int) -> list[Session]:
        found = sorted(self._of(chat), key=lambda s: (s.updated_at, s.id), reverse=True)
        return found[:limit]

    def by_suffix(self, suffix: str, chat: str | None, limit: int) -> list[Session]:
        return [s for s in self._of(chat) if s.id.endswith(suffix)][:limit]

    def titled(self, text_: str, chat: str | None, limit: int) -> list[Session]:
        found = [s for s in self._of(chat) if text.contains_all(s.title, [text_])]
        found.sort(key=lambda s: s.updated_at, reverse=True)
        return found[:limit]

    def delete(self, session_id: str) -> bool:
        if session_id not in self.data.sessions:
            return False
        forget_sessions(self.data, [session_id])
        return True

    def delete_empty(self) -> int:
        used = {t.session_id for t in self.data.turns.values()}
        empty = [s for s in self.data.sessions if s not in used]
        forget_sessions(self.data, empty)
        return len(empty)

    def current(self, chat: str) -> tuple[str | None, float] | None:
        return self.data.chats.get(chat)

    def set_current(self, chat: str, session_id: str, at: float) -> None:
        _, active = self.data.chats.get(chat, (None, at))
        self.data.chats[chat] = (session_id, max(active, at))

    def clear_current(self, chat: str) -> None:
        if chat in self.data.chats:
            self.data.chats[chat] = (None, self.data.chats[chat][1])

    def retitle(self, session_id: str, title: str) -> None:
        row = self.data.sessions.get(session_id)
        if row is not None:
            self.data.sessions[session_id] = dataclasses.replace(row, title=title)

    def totals(self) -> HistoryTotals:
        rows = self.data.sessions.values()
        chats = {r.chat for r in rows}
        return HistoryTotals(len(chats), len(rows), sum(r.turn_count for r in rows))

    def _activity(self) -> list[ChatActivity]:
        by_chat: dict[str, list[SessionRow]] = {}
        for row in self.data.sessions.values():
            by_chat.setdefault(row.chat, []).append(row)
        found = [
            ChatActivity(
                chat,
                len(rows),
                sum(r.turn_count for r in rows),
                max(r.updated_at for r in rows),
            )
            for chat, rows in by_chat.items()
        ]
        return sorted(found, key=lambda c: (-c.last_active, c.chat))

    def chats(self, offset: int, limit: int) -> Slice[ChatActivity]:
        found = self._activity()
        return Slice(found[offset : offset + limit], len(found))

    def activity(self, chat: str) -> ChatActivity | None:
        return next((c for c in self._activity() if c.chat == chat), None)

    def page(self, chat: str, offset: int, limit: int) -> Slice[Session]:
        found = self.latest(chat, len(self.data.sessions))
        return Slice(found[offset : offset + limit], len(found))


class TurnTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def _change(self, row: TurnRow, **changes: object) -> None:
        self.data.turns[row.id] = dataclasses.replace(row, **changes)  # type: ignore[arg-type]

    def known(self, chat: str, message_id: str) -> bool:
        return any(t.chat == chat and t.message_id == message_id for t in self.data.turns.values())

    def message(
        self, chat: str, role: str, message_id: str, time: float, content: str
    ) -> KnownMessage | None:
        for t in reversed(self.data.turns.values()):
            if (t.chat, t.message_id, t.role) == (chat, message_id, role) and (
                t.time == time or t.content == content
            ):
                due = role == "user" and t.addressed
                fate = _fate(t.delivery) if due else None
                return KnownMessage(t.id, t.session_id, t.addressed, fate)
        return None

    def set_fate(self, turn_id: int, fate: Fate, error: str | None) -> None:
        row = self.data.turns.get(turn_id)
        if row is None:
            return
        if error is not None and row.error is not None:
            error = f"{row.error}; {error}"
        self._change(
            row,
            delivery=None if fate == "pending" else fate,
            error=row.error if error is None else error,
        )

    def _due(self) -> list[TurnRow]:
        return [t for t in self.data.turns.values() if t.role == "user" and t.addressed]

    def deliveries(self, fate: Fate, limit: int) -> list[Delivery]:
        found = [t for t in reversed(self._due()) if _fate(t.delivery) == fate][:limit]
        return [Delivery(t.id, t.chat, t.message_id, t.time, fate, t.error) for t in found]

    def fates(self) -> dict[Fate, int]:
        counted = [_fate(t.delivery) for t in self._due()]
        return {fate: counted.count(fate) for fate in FATES if fate in counted}

    def add(self, session_id: str, turn: NewTurn, tokens: str | None) -> int:
        data = self.data
        check("role", turn.role, ROLES)
        turn_id = data.next("turn")
        data.turns[turn_id] = TurnRow(
            turn_id,
            session_id,
            turn.chat,
            turn.role,
            turn.content,
            turn.time,
            turn.speaker,
            turn.speaker_name,
            turn.message_id,
            turn.tool_calls,
            turn.addressed,
            turn.error,
            body=tokens,
        )
        session = data.sessions[session_id]
        data.sessions[session_id] = dataclasses.replace(
            session,
            updated_at=max(session.updated_at, turn.time),
            turn_count=session.turn_count + 1,
        )
        return turn_id

    def _session(self, session_id: str) -> list[TurnRow]:
        return [t for t in self.data.turns.values() if t.session_id == session_id]

    def window(self, session_id: str, before: int, limit: int, after: int = 0) -> list[Turn]:
        found = [
            t for t in self._session(session_id) if after < t.id < before and t.hidden_by is None
        ]
        return [t.turn() for t in found[-limit:]] if limit > 0 else []

    def of_session(self, session_id: str) -> list[Turn]:
        return [t.turn() for t in self._session(session_id)]

    def after(self, session_id: str, after: int, limit: int) -> list[Turn]:
        found = [t for t in self._session(session_id) if t.id > after and t.spoken]
        return [t.turn() for t in found[:limit]]

    def mark_error(self, turn_id: int, error: str) -> None:
        row = self.data.turns.get(turn_id)
        if row is not None:
            self._change(row, error=error)

    def rewrite(self, turn_id: int, content: str, tokens: str | None) -> None:
        row = self.data.turns.get(turn_id)
        if row is not None:
            body = row.body if row.body is None or tokens is None else tokens
            # the old words' vector is named no more: recall by meaning never finds them again
            self._change(row, content=content, body=body, embed_hash=None)

    def _with_replies(
        self, turn_ids: Sequence[int], messages: Sequence[tuple[str, str]]
    ) -> list[int]:
        turns = self.data.turns
        ids = [i for i in turn_ids if i in turns]
        for chat, message_id in messages:
            ids += [t.id for t in turns.values() if (t.chat, t.message_id) == (chat, message_id)]
        for turn_id in list(ids):
            row = turns[turn_id]
            later = [t for t in turns.values() if t.session_id == row.session_id and t.id > row.id]
            if row.role == "user" and later and later[0].role == "assistant":
                ids.append(later[0].id)
        return list(dict.fromkeys(ids))

    def hide(self, turn_ids: Sequence[int], messages: Sequence[tuple[str, str]], by: str) -> int:
        hidden = 0
        for turn_id in self._with_replies(turn_ids, messages):
            row = self.data.turns[turn_id]
            if row.hidden_by is None:
                self._change(row, hidden_by=by, body=None)
                hidden += 1
        return hidden

    def mark_earlier(
        self, turn_ids: Sequence[int], messages: Sequence[tuple[str, str]], by: str
    ) -> int:
        marked = 0
        for turn_id in self._with_replies(turn_ids, messages):
            row = self.data.turns[turn_id]
            if row.earlier_for is None:
                self._change(row, earlier_for=by)
                marked += 1
        return marked

    def hidden_for(self, item_id: str) -> list[Turn]:
        return [
            t.turn() for t in self.data.turns.values() if item_id in (t.hidden_by, t.earlier_for)
        ]

    def search(self, chats: Sequence[str] | None, search: TextSearch) -> list[TurnMatch]:
        wanted = None if chats is None else set(chats)
        found = text.ranked(
            search.terms,
            self.data.indexed_turns(),
            lambda t: wanted is None or t.chat in wanted,
            lambda t: t.time,
            search,
        )
        return [t.match(score) for t, score in found]

    def any_besides(self, chats: Sequence[str], exclude: Collection[int], at: float | None) -> bool:
        return any(
            t.chat in chats and t.spoken and t.id not in exclude and (at is None or t.time <= at)
            for t in self.data.turns.values()
        )

    def containing(
        self, chats: Sequence[str], needles: Sequence[str], search: TextSearch
    ) -> list[TurnMatch]:
        found = [
            t
            for t in self.data.turns.values()
            if t.chat in chats
            and t.spoken
            and text.in_time(t.time, search)
            and text.contains_all(t.content, needles)
        ]
        found.sort(key=lambda t: t.time, reverse=True)
        return [t.match(1.0) for t in found[: search.limit]]

    def neighbours(self, ids: Sequence[int], at: float | None) -> list[tuple[int, TurnMatch]]:
        found: list[tuple[int, TurnMatch]] = []
        for turn_id in ids:
            row = self.data.turns.get(turn_id)
            if row is None:
                continue
            spoken = [t for t in self._session(row.session_id) if t.spoken]
            before = [t for t in spoken if t.id < turn_id][-1:]
            after = [t for t in spoken if t.id > turn_id][:1]
            found += [(turn_id, t.match(0.0)) for t in before + after if at is None or t.time <= at]
        return found

    def page(self, session_id: str, offset: int, limit: int) -> Slice[Turn]:
        found = self._session(session_id)
        return Slice([t.turn() for t in found[offset : offset + limit]], len(found))

    def around(self, turn_id: int, before: int, after: int) -> list[Turn]:
        row = self.data.turns.get(turn_id)
        if row is None:
            return []
        spoken = [t for t in self._session(row.session_id) if t.role in ("user", "assistant")]
        earlier = [t for t in spoken if t.id < turn_id][-before:] if before > 0 else []
        later = [t for t in spoken if t.id > turn_id][: max(0, after)]
        return [t.turn() for t in [*earlier, row, *later]]

    def of_messages(self, messages: Sequence[tuple[str, str]]) -> list[Turn]:
        wanted = set(messages)
        return [
            t.turn()
            for t in self.data.turns.values()
            if t.message_id is not None and (t.chat, t.message_id) in wanted
        ]


def _fate(delivery: str | None) -> Fate:
    return delivery or "pending"  # type: ignore[return-value]


class CommandTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def answered(self, command: CommandMessage) -> bool:
        return command in self.data.commands

    def add(self, command: CommandMessage, at: float) -> None:
        commands = self.data.commands
        commands.setdefault(command, at)
        for old in [c for c, answered in commands.items() if answered < at - KEEP_COMMANDS]:
            del commands[old]
