"""One candidate builder per source (DESIGN §6): where a memory goes, and what it carries.

- `remembered` (`user_explicit`, `/memory remember`): in a private chat about the person
  (private); in a group, the group's memory (public) — but a behavioural rule goes where
  `rule_scope` puts it.
- `admin_remember` (`human_edit`, `nahida memory remember`): the scope named, or where
  `--chat`/`--user` would say it. It reads the text as `remembered` does (`_kept`): the kind and
  slot extraction gives it, without the trigger ("提醒我…", "记住…") when it was said after one, so
  the memory is the one the same words said in chat keep; and when it happens (`with_due`).
- `extracted` (`rule_extract`, after each turn): in a private chat about the person; in a group
  about the speaker (public), or the group's for group decisions.
- `admin_edit` (`human_edit`, a bullet edited in MEMORY.md): the scope named, the words as written.
- `from_plugin` (`plugin:<name>`, `memory_store`): the person, the chat or global, as it says.
- `proactive` (`agent_proactive`, the model's `memory_write`): where the speaker is, as
  `remembered` would put it.
- `procedure` (`procedure_write`): a behavioural rule, where `rule_scope` puts it.

What a model proposes (a warm summary's cold facts, a dream run's ops) is built in `proposed`.

A behavioural rule (kind `procedure`, however it came: a rule someone stated, `/memory remember`,
`memory_write`, `procedure_write`, a plugin) is for everyone in a group only when its actor may set
the group's rules (`access.may_set_chat_rules`, asked in `rule_scope` and `from_plugin`); else it
is a rule for answering the person who gave it (public: said in the group).

Every builder returns a `Candidate`; the write path (`write.prepare` / `write.propose`) filters,
deduplicates and commits it. A builder raises ValueError for a target that does not parse, and
`from_plugin` MemoryPermissionError for a group's rule its actor may not set.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, tzinfo
from typing import Literal

from nahida.envelope import ChatKey, UserKey
from nahida.errors import MemoryPermissionError
from nahida.memory.core import access
from nahida.memory.core.access import Actor
from nahida.memory.core.kinds import KINDS
from nahida.memory.core.models import Candidate, Evidence
from nahida.memory.core.safety import contains_secret, redact
from nahida.memory.core.scopes import GLOBAL, Viewer, chat_scope, user_scope, validate_scope
from nahida.memory.write import dates
from nahida.memory.write.clauses import plain, sentences
from nahida.memory.write.statements import Statement, statements

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


def rule_scope(
    chat: ChatKey, user: UserKey, actor: Actor | None, *, for_chat: bool
) -> tuple[str, str, str | None]:
    """(scope, sensitivity, subject) of a behavioural rule `user` gave in `chat`: the group's
    when it is meant for everyone there and its actor may set the group's rules; else a rule for
    answering `user` (public in a group, where it was said)."""
    if for_chat and chat.is_group and access.may_set_chat_rules(actor, chat):
        return chat_scope(chat), "public", None
    return user_scope(user), "public" if chat.is_group else "private", str(user)


def _name(actor: Actor | None) -> str | None:
    return (actor.name or None) if actor is not None else None


def _placed(
    text: str, kind: str, chat: ChatKey, user: UserKey, actor: Actor | None
) -> tuple[str, str | None, tuple[str, str, str | None]]:
    """(kind, slot, where) of a text someone asked to keep where they are: a behavioural rule
    (whatever kind was asked for) where `rule_scope` puts it, anything else where
    `explicit_scope` does."""
    stated = _statement(text)
    if stated is not None and stated.kind == "procedure":
        where = rule_scope(chat, user, actor, for_chat=stated.about == "chat")
        return "procedure", stated.slot, where
    kind, slot = read_kind(text, kind, stated)
    return kind, slot, explicit_scope(chat, user)


def with_due(candidate: Candidate, text: str, at: float, tz: tzinfo | None) -> Candidate:
    """The candidate with when its words say it happens, resolved now. A habit
    ("本群周五下午发周报", "每天早上8点提醒我喝水") gets its recurrence as its title
    ("每周五", "每天 08:00": `dates.recurrence`) and no one day; a future day (`dates.due`)
    becomes the title and the validity (a task: due then; a plan: that day). The words stay."""
    recurs = dates.recurrence(text)
    if recurs is not None:
        return replace(candidate, title=recurs)
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
    actor: Actor | None = None,
) -> Candidate:
    """`/memory remember`, where it was said (`_placed`), read as `_kept` reads it. `actor`: who
    asks (their name, and whether a rule of theirs may be the group's)."""
    evidence = Evidence(chat=str(chat), message_id=message_id, time=_now(at), name=_name(actor))
    kind, _, where = _placed(text, kind, chat, user, actor)
    return _kept(text, kind, "user_explicit", where, user, evidence, tz)


def _kept(
    text: str,
    kind: str,
    source: str,
    where: tuple[str, str, str | None],
    speaker: UserKey | None,
    evidence: Evidence,
    tz: tzinfo | None,
) -> Candidate:
    """What someone asked to keep, as the same words said in chat are kept: kind and slot as
    extraction reads them, the trigger ("记住…", "提醒我…") left out, and when it happens
    (`with_due`), relative to the evidence's time."""
    kind, slot, content = _asked(text, kind)
    candidate = _candidate(content, kind, slot, source, where, speaker, evidence)
    at = evidence.time if evidence.time is not None else time.time()
    return with_due(candidate, text, at, tz)


def _candidate(
    content: str,
    kind: str,
    slot: str | None,
    source: str,
    where: tuple[str, str, str | None],
    speaker: UserKey | None,
    evidence: Evidence,
) -> Candidate:
    """A candidate someone asked for, `where` (scope, sensitivity, subject) it goes."""
    scope, sensitivity, subject = where
    return Candidate(
        scope=scope,
        kind=kind,
        slot=slot,
        content=content,
        source=source,
        confidence=ASKED_CONFIDENCE,
        importance=0.7,
        sensitivity=sensitivity,
        subject_user=subject,
        speaker_user=str(speaker) if speaker is not None else None,
        evidence=(evidence,),
    )


def _asked(text: str, kind: str) -> tuple[str, str | None, str]:
    """(kind, slot, content) of a text someone asked to keep. One statement in one sentence
    gives its kind (unless one was asked for) and slot, and, said after a trigger, its content
    (what extraction keeps: "提醒我明天开会" → "明天开会", "记住我叫小明" → "名字是小明"); else the
    words as said."""
    read = statements(text)
    if len(read) != 1 or len(sentences(plain(text))) != 1:
        return kind, None, text.strip()
    one = read[0]
    content = one.content if one.triggered else text.strip()
    return (one.kind if kind == "fact" else kind), one.slot, content


def _said_here(
    text: str,
    kind: str,
    source: str,
    chat: ChatKey,
    user: UserKey,
    message_id: str | None,
    at: float,
    actor: Actor | None,
) -> Candidate:
    """What the speaker asked to keep, where they said it (`_placed`), read for its kind and
    slot, in its words as given."""
    kind, slot, where = _placed(text, kind, chat, user, actor)
    evidence = Evidence(chat=str(chat), message_id=message_id, time=at, name=_name(actor))
    return _candidate(text.strip(), kind, slot, source, where, user, evidence)


def _statement(text: str) -> Statement | None:
    """The one statement a text to remember makes, as extraction reads it; None for none or more."""
    read = statements(text)
    return read[0] if len(read) == 1 else None


def read_kind(text: str, kind: str, stated: Statement | None = None) -> tuple[str, str | None]:
    """(kind, slot) of a text to remember, read as extraction reads it: one statement gives its
    kind (unless one was asked for) and its slot. `stated`: the text's statement, read already."""
    read = stated if stated is not None else _statement(text)
    if read is None:
        return kind, None
    return (read.kind if kind == "fact" else kind), read.slot


def evidence_quote(sentence: str) -> str:
    """A sentence as an evidence's short quote: one line, secrets taken out, bounded."""
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
    actor: Actor | None = None,
) -> Candidate:
    """A statement someone made: in a group, about themselves (public) or a group decision; a
    behavioural rule where `rule_scope` puts it."""
    at = _now(at)
    for_chat = statement.about == "chat"
    if statement.kind == "procedure":
        scope, sensitivity, subject = rule_scope(chat, user, actor, for_chat=for_chat)
    elif chat.is_group and for_chat:
        scope, subject, sensitivity = chat_scope(chat), None, "public"
    else:
        scope, subject = user_scope(user), str(user)
        sensitivity = "public" if chat.is_group else "private"
    quote = evidence_quote(statement.quote)
    evidence = Evidence(str(chat), message_id, turn_id, at, quote=quote, name=_name(actor))
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


def admin_remember(
    text: str,
    *,
    kind: str = "fact",
    scope: str | None = None,
    chat: str | None = None,
    user: str | None = None,
    sensitivity: str = "default",
    at: float | None = None,
    tz: tzinfo | None = None,
) -> Candidate:
    """`nahida memory remember`: an admin's edit, in the scope named or where `chat`/`user` would
    say it (`_admin_scope`), read as `/memory remember` reads it (`_kept`): the trigger left out,
    the day or the recurrence resolved, and a new value supersedes and a repeat merges alike."""
    where, default, subject = _admin_scope(kind, scope, chat, user)
    sensitivity = sensitivity if sensitivity != "default" else default
    evidence = Evidence(ref="cli", time=_now(at))
    return _kept(text, kind, "human_edit", (where, sensitivity, subject), None, evidence, tz)


def _admin_scope(
    kind: str, scope: str | None, chat: str | None, user: str | None
) -> tuple[str, str, str | None]:
    """(scope, default sensitivity, subject) of an admin's edit: the scope named, or where a
    person in `chat` would ask (a private chat names its person); private for a person, public
    otherwise. Raises ValueError for what does not parse or fit."""
    if kind not in KINDS:
        raise ValueError(f"kind is one of {', '.join(KINDS)}, not {kind!r}")
    if scope is not None:
        person = validate_scope(scope).startswith("user:")
        return (scope, "private", scope[5:]) if person else (scope, "public", None)
    if chat is None:
        raise ValueError("give --scope, or --chat (with --user for a person's memory)")
    viewer = Viewer.parse(chat, user)
    assert viewer.chat is not None
    if viewer.user is not None:
        return explicit_scope(viewer.chat, viewer.user)
    return chat_scope(viewer.chat), "public", None


def admin_edit(
    text: str,
    *,
    kind: str = "fact",
    scope: str | None = None,
    chat: str | None = None,
    user: str | None = None,
    sensitivity: str = "default",
) -> Candidate:
    """A bullet an admin edited in MEMORY.md: in the scope named (or where `chat`/`user` would
    say it), its words as written, which the file shows again. `sensitivity` "default": private
    for a person, public otherwise. Read for kind and slot as `/memory remember` reads it, so a
    new value supersedes and a repeat merges alike."""
    scope, default, subject = _admin_scope(kind, scope, chat, user)
    kind, slot = read_kind(text, kind)
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
    actor: Actor | None = None,
) -> Candidate:
    """A plugin's `memory_store`: about a person (`subject`), in a chat, or global. A behavioural
    rule for a chat needs the `actor` it is stored for to be allowed to set the chat's rules
    (MemoryPermissionError)."""
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
        if kind == "procedure" and chat.is_group and not access.may_set_chat_rules(actor, chat):
            raise MemoryPermissionError(
                "a behavioural rule for a group is set by its owner or admins only: pass"
                " by= (the call or turn it is set for) from one of them"
            )
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
    actor: Actor | None = None,
) -> Candidate:
    """The model's `memory_write` for the person speaking: where `/memory remember` would put it
    (a private chat: about them; a group: the group's, public; a rule: `rule_scope`), read with
    the same rules, so a correction supersedes the value it corrects."""
    if category not in CATEGORIES:
        raise ValueError(f"category is one of {', '.join(CATEGORIES)}, not {category!r}")
    kind = CATEGORIES[category]
    return _said_here(content, kind, "agent_proactive", chat, user, message_id, _now(at), actor)


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
    actor: Actor | None = None,
) -> Candidate:
    """A behavioural rule: for answering the person (`user:` scope; public in a group, where it
    was said) or, `for_chat` and allowed (`rule_scope`), for everyone in the chat. `context` says
    when it applies (its title). A rule about the answer's language or style has the slot
    extraction gives it, so a newer one supersedes."""
    scope, sensitivity, subject = rule_scope(chat, user, actor, for_chat=for_chat)
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
        evidence=(
            Evidence(chat=str(chat), message_id=message_id, time=_now(at), name=_name(actor)),
        ),
    )


def _now(at: float | None) -> float:
    return time.time() if at is None else at
