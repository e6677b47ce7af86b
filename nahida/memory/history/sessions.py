"""Conversation history: sessions and turns of every chat (memory layer 1, DESIGN §3).

A session belongs to one chat and is written only when its first user message arrives (its title is
the first 40 characters of that message). Each chat has a current session; `/new` clears it so the
next message starts a fresh one, `/resume` points it at an older one, and a message after a long
gap (`session.idle_split_minutes`) starts a new one too. User and assistant turns are indexed with
the same jieba tokens memory search uses, under their chat. Turns are stored with secrets
redacted, and a turn that was evidence of a forgotten or replaced item is hidden from recall
(`write.hide_evidence`) but kept in its session.

The functions taking a `Tx` are units of work (run by the store in one transaction); `Sessions`
is the facade's part that runs them (`memory.sessions`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo
from typing import TypeVar

from nahida.memory.core.models import CommitMode, NewTurn, Session, Turn, session_title
from nahida.memory.core.safety import redact
from nahida.memory.core.tokenize import index_text, query_terms, run_cpu, tokenize
from nahida.memory.history.recalls import PendingRecalls
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import (
    CommandMessage,
    Delivery,
    Fate,
    KnownMessage,
    RecallRecord,
    TextSearch,
)

T = TypeVar("T")


def new_session_id(at: float) -> str:
    stamp = datetime.fromtimestamp(at, UTC).strftime("%Y%m%d_%H%M")
    return f"s_{stamp}_{secrets.token_hex(2)}"


def _open_session(tx: Tx, turn: NewTurn, idle_split: float) -> tuple[str, str | None]:
    """The session a user turn belongs to, creating it when needed; and the session that ended
    because this turn came after a long gap (idle split), if any."""
    pointer = tx.sessions.current(turn.chat)
    if pointer and pointer[0] and not (idle_split and turn.time - pointer[1] > idle_split):
        return pointer[0], None
    title = session_title(turn.content)
    while True:  # an id taken meanwhile (another process) is simply drawn again
        session_id = new_session_id(turn.time)
        if tx.sessions.create(session_id, turn.chat, title, turn.time):
            return session_id, (pointer[0] if pointer else None)


def record(tx: Tx, turn: NewTurn, tokens: str | None, idle_split: float = 0.0) -> Turn | None:
    """Store a turn; a user turn may open a session. None when its message is stored already
    (`TurnRows.message`), or for an assistant turn in a chat without a session. `tokens`:
    `index_text(content)`."""
    stored = _record(tx, turn, tokens, idle_split)
    return None if stored is None else turn.stored(stored[0], stored[1])


def add(tx: Tx, turn: NewTurn, tokens: str | None, idle_split: float = 0.0) -> bool:
    """`record`, answering only whether the turn was stored (no turn to send back)."""
    return _record(tx, turn, tokens, idle_split) is not None


# a turn as the store keeps it: its id, its session, and the session its arrival ended (if any)
Kept = tuple[int, str, str | None]


def _record(tx: Tx, turn: NewTurn, tokens: str | None, idle_split: float) -> Kept | None:
    if _stored(tx, turn) is not None:
        return None
    return _append(tx, turn, tokens, idle_split)


def _stored(tx: Tx, turn: NewTurn) -> KnownMessage | None:
    """The stored turn that is this turn's message, if any (the same chat, id and time or
    words: implementations reuse message ids)."""
    if turn.message_id is None:
        return None
    return tx.turns.message(turn.chat, turn.role, turn.message_id, turn.time, turn.content)


def _record_or_resume(
    tx: Tx, turn: NewTurn, tokens: str | None, idle_split: float
) -> tuple[Kept, bool] | None:
    """`_record` a user turn, or take up the stored one when this is a message due an answer
    that was never answered (the bot stopped before it could; the implementation delivered it
    again): the turn and whether it was stored before. None for a duplicate, which includes
    a message answered already and observed talk (no answer was due: none is now)."""
    known = _stored(tx, turn)
    if known is None:
        kept = _append(tx, turn, tokens, idle_split)
        return None if kept is None else (kept, False)
    if turn.addressed and known.fate in ("pending", "undelivered"):
        return (known.id, known.session_id, None), True
    return None


def append(
    tx: Tx, turn: NewTurn, tokens: str | None, idle_split: float
) -> tuple[Turn, str | None] | None:
    """`record` for a turn known to be new: the stored turn, and the session its arrival ended
    (a user turn after the idle split), if any."""
    kept = _append(tx, turn, tokens, idle_split)
    return None if kept is None else (turn.stored(kept[0], kept[1]), kept[2])


def _append(tx: Tx, turn: NewTurn, tokens: str | None, idle_split: float) -> Kept | None:
    ended = None
    if turn.role == "user":
        session_id, ended = _open_session(tx, turn, idle_split)
    else:
        pointer = tx.sessions.current(turn.chat)
        if pointer is None or pointer[0] is None:  # an assistant turn never opens a session
            return None
        session_id = pointer[0]
    turn_id = tx.turns.add(session_id, turn, tokens if turn.indexed else None)
    if turn.role == "user":
        tx.sessions.set_current(turn.chat, session_id, turn.time)
    return turn_id, session_id, ended


@dataclass(frozen=True, slots=True)
class Recorded:
    """A stored user turn with what its prompt needs: the hot window (the turns before it that
    the warm summary does not cover, at least `hot` of them when there are), the warm summary,
    and the session this turn's arrival ended (idle split), if any."""

    turn: Turn
    hot: Sequence[Turn]
    summary: str = ""
    ended: str | None = None
    again: bool = False  # stored before and never answered: delivered again, answered now

    @property
    def shown(self) -> frozenset[int]:
        """The ids of the turns a prompt shows verbatim: the user turn and its window's."""
        return frozenset([self.turn.id, *(line[0] for line in Turn.spoken(self.hot))])


# what `record_with_window` answers: the user turn as kept, its prompt's turns, the warm
# summary, whether the turn was stored before (`_record_or_resume`)
Window = tuple[Kept, Sequence[Turn], str, bool]


def record_with_window(
    tx: Tx,
    turn: NewTurn,
    tokens: str | None,
    idle_split: float,
    hot: int,
    slack: int = 0,
) -> Window | None:
    """Record a user turn and read its prompt's history in the same unit: up to `hot + slack`
    turns before it, of which those the warm summary covers are left out — or, without a
    summary, all but the last `hot`. Plain
    values (`Sessions.record_user_turn` makes the `Recorded`: the bot has the turn already, so
    it is not built here and sent back)."""
    recorded = _record_or_resume(tx, turn, tokens, idle_split)
    if recorded is None:
        return None
    kept, again = recorded
    turn_id, session_id, _ = kept
    if hot <= 0:
        return kept, [], "", again
    warm = tx.summaries.get(session_id) if slack else None
    if warm is None or not warm.summary:  # the last `hot`: no need to read the slack's rows
        shown, summary = tx.turns.window(session_id, turn_id, hot), ""
    else:
        shown = tx.turns.window(session_id, turn_id, hot + slack, warm.through_turn)
        summary = warm.summary
    return kept, shown, summary, again


def record_reply(
    tx: Tx,
    question: Turn,
    reply: NewTurn,
    tokens: str | None,
    recalled: RecallRecord | None = None,
) -> int:
    """Store the bot's reply to `question` in its session (never deduplicated: the reply's id
    is the implementation's, and may be one a member's message had), settle the question's
    fate — delivered, or undelivered when `reply.error` says why (the reply keeps its error) —
    and record what its prompt was given from memory, if anything. Returns the reply's id."""
    reply_id = tx.turns.add(question.session_id, reply, tokens if reply.indexed else None)
    fate: Fate = "delivered" if reply.error is None else "undelivered"
    tx.turns.set_fate(question.id, fate, reply.error)
    if recalled is not None:
        tx.recalls.add(recalled)
    return reply_id


def resolve(tx: Tx, chat: str | None, ref: str) -> Session | None:
    """A session by full id, by id suffix (unique), or `last` (latest but the current one)."""
    ref = ref.strip()
    if ref == "last":
        pointer = tx.sessions.current(chat) if chat else None
        current = pointer[0] if pointer else None
        for session in tx.sessions.latest(chat, 2):
            if session.id != current:
                return session
        return None
    exact = tx.sessions.get(ref)
    if exact and (chat is None or exact.chat == chat):
        return exact
    if len(ref) < 2:
        return None
    found = tx.sessions.by_suffix(ref, chat, 2)
    return found[0] if len(found) == 1 else None


def search(
    tx: Tx, text: str, terms: tuple[str, ...], chat: str | None, limit: int
) -> list[tuple[Session, str]]:
    """Sessions whose title or turns match; each with the best matching snippet."""
    found: dict[str, tuple[Session, str]] = {}
    for session in tx.sessions.titled(text.strip(), chat, limit):
        found[session.id] = (session, session.title)
    if terms:
        chats = [chat] if chat is not None else None
        for match in tx.turns.search(chats, TextSearch(terms, limit * 5)):
            if match.session_id not in found and len(found) < limit:
                owner = tx.sessions.get(match.session_id)
                if owner is not None:
                    found[owner.id] = (owner, match.content)
    return list(found.values())[:limit]


def stored_text(text: str) -> tuple[str, str]:
    """A turn's text as history keeps it, and its index text: secrets redacted with the write
    path's filter (the model saw the words once; no later prompt, search or export sees them)."""
    clean = redact(text)
    return clean, index_text(clean)


def stored_form(turn: NewTurn) -> tuple[NewTurn, str]:
    """`stored_text` of a turn: the turn as history keeps it, and its index text."""
    clean, index = stored_text(turn.content)
    return (turn if clean == turn.content else replace(turn, content=clean)), index


class Sessions:
    """`memory.sessions`: history as the runner, the chat commands and the CLI use it."""

    def __init__(
        self,
        store: Store,
        *,
        idle_split: float = 0.0,
        mode: CommitMode = "auto_safe",
        tz: tzinfo | None = None,
        changed: Callable[[], None] = lambda: None,
        slack: int = 0,
        recalls: PendingRecalls | None = None,
    ) -> None:
        self.store = store
        # what each prompt was given from memory, recorded with the reply (`record_reply`)
        self.recalls = PendingRecalls() if recalls is None else recalls
        self.idle_split = idle_split
        self.slack = slack  # turns beyond the hot window a prompt may show (not yet summarised)
        self.mode = mode  # for what extraction finds in imported turns
        self.tz = tz
        self.changed = changed  # told after a turn is stored (its text may need a vector)

    async def record_user_turn(self, turn: NewTurn, hot: int) -> Recorded | None:
        """Store a user turn (`stored_form`) and read what its prompt shows of the session (the
        last `hot` turns and those after the warm summary, and the summary) in one round trip;
        None for a duplicate message."""
        turn, tokens = await run_cpu(stored_form, turn, size=len(turn.content))
        stored = await self.store.write(
            record_with_window, turn, tokens, self.idle_split, hot, self.slack
        )
        self.changed()
        if stored is None:
            return None
        (turn_id, session_id, ended), shown, summary, again = stored
        return Recorded(turn.stored(turn_id, session_id), shown, summary, ended, again)

    async def record_reply(self, question: Turn, reply: NewTurn) -> int:
        """Store the bot's reply to a user turn, settle its fate and record what its prompt was
        given from memory (`record_reply`)."""
        reply, tokens = await run_cpu(stored_form, reply, size=len(reply.content))
        recalled = self.recalls.take(question.id, question.chat, reply.time)
        stored = await self.store.write(record_reply, question, reply, tokens, recalled)
        self.changed()
        return stored

    async def settle(self, turn_id: int, error: str | None) -> None:
        """Record the fate of a user turn's reply when the reply is not stored (an apology, a
        notice): delivered, or undelivered with `error`."""
        fate: Fate = "delivered" if error is None else "undelivered"
        await self.store.write(lambda tx: tx.turns.set_fate(turn_id, fate, error))

    async def command_answered(self, command: CommandMessage) -> bool:
        """Whether this command message was answered before (a redelivery after a restart)."""
        return await self.store.read(lambda tx: tx.commands.answered(command))

    async def command_done(self, command: CommandMessage) -> None:
        """Record a command message answered (its reply acknowledged)."""
        now = time.time()
        await self.store.write(lambda tx: tx.commands.add(command, now))

    async def deliveries(self, fate: Fate = "undelivered", limit: int = 20) -> list[Delivery]:
        """Messages due an answer whose reply had this fate, newest first."""
        return await self.store.read(lambda tx: tx.turns.deliveries(fate, limit))

    async def delivery_counts(self) -> dict[Fate, int]:
        """How many messages due an answer had each fate (`pending`: not answered yet)."""
        return await self.store.read(lambda tx: tx.turns.fates())

    async def record(self, turn: NewTurn) -> Turn | None:
        return await self._store(record, turn)

    async def add(self, turn: NewTurn) -> bool:
        """`record` for a caller that needs only to know whether the turn was stored."""
        return await self._store(add, turn)

    async def _store(self, unit: Callable[[Tx, NewTurn, str, float], T], turn: NewTurn) -> T:
        turn, tokens = await run_cpu(stored_form, turn, size=len(turn.content))
        stored = await self.store.write(unit, turn, tokens, self.idle_split)
        self.changed()
        return stored

    async def mark_error(self, turn_id: int, error: str) -> None:
        """Record why a turn got no proper answer (e.g. the provider failed)."""
        self.recalls.drop(turn_id)  # no answer: nothing to record
        await self.store.write(lambda tx: tx.turns.mark_error(turn_id, error))

    async def current(self, chat: str) -> str | None:
        pointer = await self.store.read(lambda tx: tx.sessions.current(chat))
        return pointer[0] if pointer else None

    async def start_new(self, chat: str) -> str | None:
        """The next user message of the chat opens a new session; returns the session this
        ended, if there was one."""

        def run(tx: Tx) -> str | None:
            pointer = tx.sessions.current(chat)
            tx.sessions.clear_current(chat)
            return pointer[0] if pointer else None

        return await self.store.write(run)

    async def resume(self, chat: str, ref: str) -> tuple[Session, str | None] | None:
        """Make the session `ref` names (see `resolve`) the chat's current one; returns it and
        the session this ended (the one current before, when another), or None."""

        def run(tx: Tx) -> tuple[Session, str | None] | None:
            found = resolve(tx, chat, ref)
            if found is None:
                return None
            pointer = tx.sessions.current(chat)
            before = pointer[0] if pointer else None
            tx.sessions.set_current(chat, found.id, time.time())
            return found, (before if before != found.id else None)

        return await self.store.write(run)

    async def resolve(self, chat: str | None, ref: str) -> Session | None:
        return await self.store.read(resolve, chat, ref)

    async def latest(self, chat: str | None = None, limit: int = 20) -> list[Session]:
        return await self.store.read(lambda tx: tx.sessions.latest(chat, limit))

    async def get(self, session_id: str) -> Session | None:
        return await self.store.read(lambda tx: tx.sessions.get(session_id))

    async def turns(self, session_id: str) -> list[Turn]:
        return await self.store.read(lambda tx: tx.turns.of_session(session_id))

    async def delete(self, session_id: str) -> bool:
        return await self.store.write(lambda tx: tx.sessions.delete(session_id))

    async def cleanup_empty(self) -> int:
        """Delete sessions without turns; returns how many."""
        return await self.store.write(lambda tx: tx.sessions.delete_empty())

    async def search(
        self, text: str, chat: str | None = None, limit: int = 20
    ) -> list[tuple[Session, str]]:
        terms = query_terms(tokenize(text))
        return await self.store.read(search, text, terms, chat, limit)
