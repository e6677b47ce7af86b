"""What a model proposes for long-term memory, as candidates (DESIGN §6; what people, admins
and plugins say is built in `candidates`):

- `compressed` (`compress`, a warm summary's cold facts): in a private chat about the person
  (private); in a group, the group's memory (public: it was said there).
- `dreamed` (`llm_dream`, a dream run's op): the scope its guards allowed (`dream/guards.py`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from nahida.envelope import ChatKey
from nahida.memory.core.kinds import DEFAULT, KINDS
from nahida.memory.core.models import RUN_REF, Candidate, Evidence, MemoryItem, Turn
from nahida.memory.core.scopes import chat_scope, user_scope
from nahida.memory.write.candidates import evidence_quote, read_kind


def _now(at: float | None) -> float:
    return time.time() if at is None else at


COMPRESSED_CONFIDENCE = 0.8
COMPRESSED_EXPLICIT = 0.9  # a person asked to remember it, corrected something, stated a preference


def compressed(
    content: str,
    *,
    kind: str,
    explicit: bool,
    chat: ChatKey,
    session_id: str,
    at: float | None = None,
) -> Candidate:
    """A cold key fact the compress model found in a session's warm summary."""
    person = None if chat.is_group else chat.person
    scope = chat_scope(chat) if person is None else user_scope(person)
    return Candidate(
        scope=scope,
        kind=kind if kind in KINDS else DEFAULT,
        content=content.strip(),
        source="compress",
        confidence=COMPRESSED_EXPLICIT if explicit else COMPRESSED_CONFIDENCE,
        importance=0.6,
        sensitivity="public" if person is None else "private",
        subject_user=None if person is None else str(person),
        evidence=(Evidence(chat=str(chat), ref=f"session:{session_id}", time=_now(at)),),
    )


DREAM_SOURCE = "llm_dream"
DREAM_IMPORTANCE = 0.6


def dreamed(
    *,
    op: str,
    kind: str,
    content: str,
    scope: str,
    sensitivity: str,
    subject: str | None,
    turns: Sequence[Turn],
    run_id: str,
    confidence: float,
    reason: str,
    target: MemoryItem | None = None,
    at: float | None = None,
) -> Candidate:
    """An op a dream run proposed (after its guards): the turns it cites as evidence, with the
    run's id; valid from the newest of them. An op on an item keeps its slot (and, rewriting
    it, its title); a new memory is read for its slot as `/memory remember` reads it."""
    at = _now(at)
    cited = tuple(
        Evidence(
            t.chat,
            t.message_id,
            t.id,
            t.time.timestamp(),
            quote=evidence_quote(t.content),
            name=t.speaker_name if t.role == "user" else None,
        )
        for t in turns
    )
    speaker = next((t.speaker for t in turns if t.role == "user" and t.speaker), None)
    slot = target.slot if target is not None else read_kind(content, kind)[1]
    return Candidate(
        scope=scope,
        kind=kind,
        content=content.strip(),
        source=DREAM_SOURCE,
        confidence=confidence,
        importance=target.importance if target is not None else DREAM_IMPORTANCE,
        sensitivity=sensitivity,
        title=target.title if target is not None and op == "update" else "",
        subject_user=subject,
        speaker_user=speaker,
        slot=slot,
        evidence=(*cited, Evidence(ref=f"{RUN_REF}{run_id}", time=at)),
        valid_from=max((t.time.timestamp() for t in turns), default=at),
        op=op,
        target=target.id if target is not None else None,
        note=reason.strip(),
    )
