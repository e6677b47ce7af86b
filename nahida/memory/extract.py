"""Rule-based extraction after each user turn (DESIGN §6): what people say about themselves.

Only the person's own words are read, never the bot's; `nahida.memory.rules` reads them into
statements, and this module turns statements into candidates and proposes them.

Scopes: in a private chat everything goes to `user:<U>`, private. In a group what is about the
speaker (preferences, identity, tasks, "我决定…", an explicit remember of a first-person sentence)
goes to `user:<U>` marked public, since it was said in public; group decisions ("以后我们…") and
other explicit remembers go to `chat:<G>`, public. Candidates carry evidence (chat, message, turn,
time, a short redacted quote) and are proposed as source `rule_extract`: a secret is redacted by
the write path, never refused, and the commit mode decides.
"""

from __future__ import annotations

import asyncio
import time as clock

import structlog

from nahida.envelope import ChatKey, UserKey
from nahida.hooks import TurnContext
from nahida.memory.models import Candidate, Evidence
from nahida.memory.rules import statements
from nahida.memory.safety import redact
from nahida.memory.scopes import chat_scope, user_scope
from nahida.memory.service import MemoryService

log = structlog.get_logger(__name__)

SOURCE = "rule_extract"
QUOTE_CHARS = 120
IMPORTANCE = {"fact": 0.7, "preference": 0.5, "decision": 0.7, "task": 0.6}


def _quote(sentence: str) -> str:
    quote = redact(" ".join(sentence.split()))
    return quote if len(quote) <= QUOTE_CHARS else quote[: QUOTE_CHARS - 1] + "…"


def extract(
    text: str,
    *,
    chat: ChatKey,
    user: UserKey,
    message_id: str | None = None,
    turn_id: int | None = None,
    time: float | None = None,
) -> list[Candidate]:
    """Candidates for what `user` said in `chat` (see the module docstring for scopes)."""
    at = clock.time() if time is None else time
    candidates = []
    for statement in statements(text):
        if chat.is_group and statement.about == "chat":
            scope, subject, sensitivity = chat_scope(chat), None, "public"
        else:
            scope, subject = user_scope(user), str(user)
            sensitivity = "public" if chat.is_group else "private"
        evidence = Evidence(str(chat), message_id, turn_id, at, quote=_quote(statement.quote))
        candidates.append(
            Candidate(
                scope=scope,
                kind=statement.kind,
                content=statement.content,
                source=SOURCE,
                confidence=statement.confidence,
                importance=IMPORTANCE.get(statement.kind, 0.5),
                sensitivity=sensitivity,
                subject_user=subject,
                speaker_user=str(user),
                slot=statement.slot,
                evidence=(evidence,),
                valid_from=at,
            )
        )
    return candidates


class ExtractionHook:
    """The post-turn hook "extract": proposes what the user said; never raises into the runner."""

    name = "extract"

    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory

    async def after_turn(self, turn: TurnContext, reply: str | None) -> None:
        envelope = turn.envelope
        bound = log.bind(chat=str(envelope.chat), msg=envelope.message_id)
        try:
            if turn.turn.role != "user":
                return
            candidates = await asyncio.to_thread(  # a long message can take some milliseconds
                extract,
                turn.turn.content,
                chat=envelope.chat,
                user=envelope.sender.user,
                message_id=envelope.message_id,
                turn_id=turn.turn.id,
                time=envelope.time.timestamp(),
            )
        except Exception:
            bound.exception("extraction_failed")
            return
        for candidate in candidates:
            try:
                result = await self.memory.propose(candidate, actor=SOURCE)
            except Exception:
                bound.exception("extraction_write_failed", kind=candidate.kind)
                continue
            bound.info(
                "memory_extracted",
                kind=candidate.kind,
                outcome=result.outcome,
                item=result.item_id,
                redacted=result.redacted,
            )
