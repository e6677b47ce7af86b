"""One candidate builder per source (DESIGN §6): where a memory goes, and what it carries.

- `remembered` (`user_explicit`, `/memory remember`): in a private chat about the person
  (private); in a group, the group's memory (public).
- `extracted` (`rule_extract`, after each turn): in a private chat about the person; in a group
  about the speaker (public), or the group's for group decisions.
- `admin_edit` (`human_edit`, the CLI): the scope named, or where `--chat`/`--user` would say it.
- `from_plugin` (`plugin:<name>`, `memory_store`): the person, the chat or global, as it says.
- `compressed` (`compress`, a warm summary's cold facts): in a private chat about the person
  (private); in a group, the group's memory (public: it was said there).
- `proactive` (`agent_proactive`, the model's `memory_write`) and `procedure` (`procedure_write`,
  and rules people state): where the speaker is, as `remembered` would put it.
- `dreamed` (`llm_dream`, a dream run's op): the scope its guards allowed (`dream/guards.py`).

Every builder returns a `Candidate`; the write path (`write.prepare` / `write.propose`) filters,
deduplicates and commits it. A builder raises ValueError for a target that does not parse.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, tzinfo
from typing import Literal

from nahida.envelope import ChatKey, UserKey
from nahida.memory import dates
from nahida.memory.models import KINDS, RUN_REF, Candidate, Evidence, MemoryItem, Turn
from nahida.memory.safety import contains_secret, redact
from nahida.memory.scopes import GLOBAL, chat_scope, user_scope, validate_scope, viewer_for
from nahida.memory.statements import Statement, statements

Audience = Literal["user", "chat", "global"]
_REMEMBER = re.compile(
    r"记住|记一下|记下来|帮我记|给我记|别忘了|不要忘了"
    r"|remember|don'?t forget|keep in mind|note that",
    re.IGNORECASE,
)
QUOTE_CHARS = 120
ASKED_CONFIDENCE = 0.95  # what someone asked to keep, or the model wrote on purpose
EXTRACTED_IMPORTANCE = {"fact": 0.7, "preference": 0.5, "decision": 0.7, "task": 0.6}


def asks_to_keep_a_secret(text: str) -> bool:
    """Whether a message asks, in words, to remember something that holds a secret: it gets the
    refusal `/memory remember` gives, not a redacted memory."""
    return _REMEMBER.search(text) is not None and contains_secret(text)


def explicit_scope(chat: ChatKey, user: UserKey) -> tuple[str, str, str | None]:
    """(scope, sensitivity, subject) of what someone asks to remember where they are."""
    if chat.is_group:
        return chat_scope(chat), "public", None
    return user_scope(user), "private", str(user)


def with_due(candidate: Candidate, text: str, at: float, tz: tzinfo | None) -> Candidate:
    """The candidate with the future day its words name (`dates.due`), resolved now: the date as
    its title, and as its validity (a task: due then; a plan: that day). The words stay."""
    now = datetime.fromtimestamp(at, tz).astimezone(tz)
    found = dates.due(text, now)
    if found is None:
        return candidate
    until = found.moment(now).timestamp()
    if candidate.kind == "task":
        return replace(candidate, title=found.label(), valid_until=until)
    start = datetime.combine(found.day, datetime.min.time(), now.tzinfo).timestamp()
    return replace(candidate, title=found.label(), valid_from=start, valid_until=until)


def remembered(
    text: str,
    *,
    chat: ChatKey,
    user: UserKey,
    message_id: str | None = None,
    kind: str = "fact",
    at: float | None = None,
    tz: tzinfo | None = None,
) -> Candidate:
    """`/memory remember`: read with the same rules as extraction, so slots supersede alike."""
    at = _now(at)
    candidate = _said_here(text, kind, "user_explicit", chat, user, message_id, at)
    return with_due(candidate, text, at, tz)


def _said_here(
    text: str,
    kind: str,
    source: str,
    chat: ChatKey,
    user: UserKey,
    message_id: str | None,
    at: float,
) -> Candidate:
    """What the speaker asked to keep, where they said it (`explicit_scope`), read for its kind
    and slot."""
    scope, sensitivity, subject = explicit_scope(chat, user)
    kind, slot = _read(text, kind)
    return Candidate(
        scope=scope,
        kind=kind,
        slot=slot,
        content=text.strip(),
        source=source,
        confidence=ASKED_CONFIDENCE,
        importance=0.7,
        sensitivity=sensitivity,
        subject_user=subject,
        speaker_user=str(user),
        evidence=(Evidence(chat=str(chat), message_id=message_id, time=at),),
    )


def _read(text: str, kind: str) -> tuple[str, str | None]:
    """(kind, slot) of a text to remember, read as extraction reads it: one statement gives its
    kind (unless one was asked for) and its slot."""
    read = statements(text)
    if len(read) != 1:
        return kind, None
    return (read[0].kind if kind == "fact" else kind), read[0].slot


def _quote(sentence: str) -> str:
    quote = redact(" ".join(sentence.split()))
    return quote if len(quote) <= QUOTE_CHARS else quote[: QUOTE_CHARS - 1] + "…"


def extracted(
    statement: Statement,
    *,
    chat: ChatKey,
    user: UserKey,
    message_id: str | None = None,
    turn_id: int | None = None,
    at: float | None = None,
    tz: tzinfo | None = None,
) -> Candidate:
    """A statement someone made: in a group, about themselves (public) or a group decision."""
    at = _now(at)
    if chat.is_group and statement.about == "chat":
        scope, subject, sensitivity = chat_scope(chat), None, "public"
    else:
        scope, subject = user_scope(user), str(user)
        sensitivity = "public" if chat.is_group else "private"
    evidence = Evidence(str(chat), message_id, turn_id, at, quote=_quote(statement.quote))
    candidate = Candidate(
        scope=scope,
        kind=statement.kind,
        content=statement.content,
        source="rule_extract",
        confidence=statement.confidence,
        importance=EXTRACTED_IMPORTANCE.get(statement.kind, 0.5),
        sensitivity=sensitivity,
        subject_user=subject,
        speaker_user=str(user),
        slot=statement.slot,
        evidence=(evidence,),
        valid_from=at,
    )
    return with_due(candidate, statement.quote or statement.content, at, tz)


def admin_edit(
    text: str,
    *,
    kind: str = "fact",
    scope: str | None = None,
    chat: str | None = None,
    user: str | None = None,
    sensitivity: str = "default",
) -> Candidate:
    """`nahida memory remember`: an admin's edit, in the scope named or where `chat`/`user` would
    say it. `sensitivity` "default": private for a person, public otherwise. Read with the same
    rules as `/memory remember`, so a new value supersedes and a repeat merges alike."""
    if kind not in KINDS:
        raise ValueError(f"kind is one of {', '.join(KINDS)}, not {kind!r}")
    kind, slot = _read(text, kind)
    subject = None
    if scope is not None:
        person = validate_scope(scope).startswith("user:")
        default, subject = ("private", scope[5:]) if person else ("public", None)
    elif chat is not None and user is not None:
        viewer = viewer_for(chat, user)
        assert viewer.chat is not None and viewer.user is not None
        scope, default, subject = explicit_scope(viewer.chat, viewer.user)
    elif chat is not None:
        scope, default = chat_scope(ChatKey.parse(chat)), "public"
    else:
        raise ValueError("give --scope, or --chat (with --user for a person's memory)")
    return Candidate(
        scope=scope,
        kind=kind,
        slot=slot,
        content=text.strip(),
        source="human_edit",
        confidence=0.95,
        importance=0.7,
        sensitivity=sensitivity if sensitivity != "default" else default,
        subject_user=subject,
        evidence=(Evidence(ref="cli", time=time.time()),),
    )


def from_plugin(
    plugin: str,
    content: str,
    *,
    kind: str = "fact",
    audience: Audience = "user",
    sensitivity: str = "private",
    confidence: float = 0.8,
    evidence: Sequence[Evidence] | None = None,
    subject: UserKey | None = None,
    chat: ChatKey | None = None,
    speaker: UserKey | None = None,
) -> Candidate:
    """A plugin's `memory_store`: about a person (`subject`), in a chat, or global."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if not 0.0 <= confidence <= 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    if audience == "user":
        if subject is None:
            raise ValueError('audience="user" needs subject= (e.g. call.user)')
        scope = user_scope(subject)
    elif audience == "chat":
        if chat is None:
            raise ValueError('audience="chat" needs chat= (e.g. call.chat)')
        scope = chat_scope(chat)
    else:
        scope = GLOBAL
    said_by = speaker if speaker is not None else subject
    source = f"plugin:{plugin}"
    return Candidate(
        scope=scope,
        kind=kind,
        content=content.strip(),
        source=source,
        confidence=confidence,
        sensitivity=sensitivity,
        subject_user=str(subject) if subject else None,
        speaker_user=str(said_by) if said_by else None,
        evidence=tuple(evidence) if evidence else (Evidence(ref=source, time=time.time()),),
    )


CATEGORIES = {
    "preference": "preference",
    "decision": "decision",
    "knowledge": "fact",
    "correction": "fact",
}


def proactive(
    content: str,
    category: str,
    *,
    chat: ChatKey,
    user: UserKey,
    message_id: str | None = None,
    at: float | None = None,
) -> Candidate:
    """The model's `memory_write` for the person speaking: where `/memory remember` would put it
    (a private chat: about them; a group: the group's, public), read with the same rules, so a
    correction supersedes the value it corrects."""
    if category not in CATEGORIES:
        raise ValueError(f"category is one of {', '.join(CATEGORIES)}, not {category!r}")
    kind = CATEGORIES[category]
    return _said_here(content, kind, "agent_proactive", chat, user, message_id, _now(at))


def procedure(
    rule: str,
    *,
    context: str = "",
    chat: ChatKey,
    user: UserKey,
    for_chat: bool,
    source: str = "agent_proactive",
    message_id: str | None = None,
    at: float | None = None,
) -> Candidate:
    """A behavioural rule: for answering the person (`user:` scope; public in a group, where it
    was said) or, `for_chat`, for everyone in the chat. `context` says when it applies (its
    title). A rule about the answer's language or style has the slot extraction gives it, so a
    newer one supersedes."""
    if for_chat:
        scope, sensitivity, subject = chat_scope(chat), "public", None
    else:
        scope, subject = user_scope(user), str(user)
        sensitivity = "public" if chat.is_group else "private"
    read = statements(rule)
    slot = read[0].slot if len(read) == 1 and read[0].kind == "procedure" else None
    return Candidate(
        scope=scope,
        kind="procedure",
        slot=slot,
        title=context.strip(),
        content=rule.strip(),
        source=source,
        confidence=ASKED_CONFIDENCE,
        importance=0.8,
        sensitivity=sensitivity,
        subject_user=subject,
        speaker_user=str(user),
        evidence=(Evidence(chat=str(chat), message_id=message_id, time=_now(at)),),
    )


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
        kind=kind if kind in KINDS else "fact",
        content=content.strip(),
        source="compress",
        confidence=COMPRESSED_EXPLICIT if explicit else COMPRESSED_CONFIDENCE,
        importance=0.6,
        sensitivity="public" if person is None else "private",
        subject_user=None if person is None else str(person),
        evidence=(Evidence(chat=str(chat), ref=f"session:{session_id}", time=_now(at)),),
    )


def _now(at: float | None) -> float:
    return time.time() if at is None else at


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
        Evidence(t.chat, t.message_id, t.id, t.time.timestamp(), quote=_quote(t.content))
        for t in turns
    )
    speaker = next((t.speaker for t in turns if t.role == "user" and t.speaker), None)
    slot = target.slot if target is not None else _read(content, kind)[1]
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
