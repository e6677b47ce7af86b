"""What a dream's op must pass before it becomes a candidate (DESIGN §8, §4). Each guard has a
name, recorded with every op it rejects (`dream_runs.report`, DREAMS.md):

- `evidence`: every cited id is a turn of this chat inside the run's range (and there is one);
- `item`: an op on an item names one that exists, is active and is visible to this chat;
- `scope`: what is written stays in the chat: a group's run writes `chat:G` or public `user:U`
  items of people seen in this range, a private chat's run the chat's or its person's; an op on
  an item keeps the item's scope;
- `speaker`: a person's memory (`user:U`) cites something U said;
- `protected`: what people stated or edited (`user_explicit`, `human_edit`) is never rewritten
  or archived by a dream, only superseded by newer evidence (the write path holds this, and
  that no older turn counts against any item, for every other source too: `write.objection`);
- `secret`: the safety filter (a secret, or a redaction placeholder copied from history);
- `prompt`: a prompt fragment, or an instruction to the bot (`quotes.reads_as_instruction`);
- `bot_words`: the bot's own words presented as a person's (no person's turn cited, or the text
  is the bot's turn rather than theirs);
- `max_ops`: at most that many ops of one answer are taken (`check_all`).

An add that says what a shown memory says (token Jaccard ≥ 0.8, whatever kind the model gave)
is aimed at that memory, so the write path merges it instead of adding a near copy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from nahida.envelope import ChatKey
from nahida.memory.core.models import Candidate, MemoryItem, Proposal, Turn
from nahida.memory.core.safety import contains_secret, redact, was_redacted
from nahida.memory.core.scopes import chat_scope, user_scope
from nahida.memory.core.tokenize import tokenize
from nahida.memory.dream.proposals import Checked, ProposedOp
from nahida.memory.recall.quotes import reads_as_instruction
from nahida.memory.write import proposed, write
from nahida.memory.write.write import EXPLICIT_SOURCES, NEAR_DUPLICATE, similarity

WITHHELD = "[withheld: secret]"
BOT_ECHO = 0.5  # token Jaccard with a bot's turn above which a text is the bot's words

_PROMPT = re.compile(
    r"\[(长期记忆|对话摘要|long-term memory|conversation summary)\]|</?behavioral_guidelines>"
    r"|</?system>|treat memory as helpful context|\"ops\"\s*:|^\s*(system|assistant)\s*:"
    r"|^\s*candidate\s*:|scopes you may write|you consolidate the long-term memory",
    re.IGNORECASE | re.MULTILINE,
)


class Rejected(Exception):
    def __init__(self, guard: str, detail: str) -> None:
        super().__init__(f"{guard}: {detail}")
        self.guard = guard
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Batch:
    """What one model call saw, and where its ops may write."""

    run_id: str
    chat: ChatKey
    turns: Sequence[Turn]  # the call's turns, oldest first
    items: Mapping[str, MemoryItem]  # the items the answer names, as this chat sees them
    shown: Sequence[MemoryItem]  # the memories the call showed
    scopes: tuple[str, ...]  # where this call may write

    def turn(self, label: str) -> Turn | None:
        text = label.strip()
        for turn in self.turns:
            if text == f"t{turn.id}" or (turn.message_id is not None and text == turn.message_id):
                return turn
        return None


def writable_scopes(chat: ChatKey, speakers: Iterable[str]) -> tuple[str, ...]:
    """A group: its own scope and its speakers' (public items only); a private chat: its own
    and its person's."""
    if chat.is_group:
        return (chat_scope(chat), *(user_scope(s) for s in sorted(set(speakers))))
    person = chat.person
    return (chat_scope(chat), *((user_scope(person),) if person is not None else ()))


def check(op: ProposedOp, batch: Batch) -> Candidate:
    """The op as a candidate; raises `Rejected` with the guard that refused it."""
    turns = _evidence(op, batch)
    target = _target(op, batch)
    if target is not None:
        scope, subject, sensitivity = target.scope, target.subject_user, target.sensitivity
        if op.scope and op.scope != target.scope:
            raise Rejected("scope", f"{op.op} keeps {target.id}'s scope {target.scope}")
    else:
        scope = op.scope or ""
        subject = scope[len("user:") :] if scope.startswith("user:") else None
        sensitivity = "public" if batch.chat.is_group else "private"
    if scope not in batch.scopes:
        raise Rejected("scope", f"{scope or '(none)'} is not a scope this chat may write")
    if batch.chat.is_group and sensitivity != "public":
        raise Rejected("scope", f"{target.id if target else scope} is private")
    if subject is not None and not any(t.role == "user" and t.speaker == subject for t in turns):
        raise Rejected("speaker", f"nothing {subject} said is cited for their memory")
    _protected(op, target, turns)
    content = op.content if op.op != "archive" else (target.content if target else "")
    _text(content, turns)
    kind = op.kind or (target.kind if target is not None else "fact")
    if op.op == "add":
        same = _duplicate(content, scope, batch.shown)
        if same is not None:  # aimed at what it repeats: the write path merges
            kind, subject, sensitivity = same.kind, same.subject_user, same.sensitivity
    return proposed.dreamed(
        op=op.op,
        kind=kind,
        content=content,
        scope=scope,
        sensitivity=sensitivity,
        subject=subject,
        turns=turns,
        run_id=batch.run_id,
        confidence=op.confidence,
        reason=op.reason,
        target=target,
    )


def _evidence(op: ProposedOp, batch: Batch) -> list[Turn]:
    turns: list[Turn] = []
    for label in op.evidence:
        turn = batch.turn(label)
        if turn is None:
            first, last = batch.turns[0].id, batch.turns[-1].id
            raise Rejected("evidence", f"{label} is not a turn of this chat in t{first}–t{last}")
        if turn not in turns:
            turns.append(turn)
    if not turns:
        raise Rejected("evidence", "no turn is cited")
    return turns


def _target(op: ProposedOp, batch: Batch) -> MemoryItem | None:
    if op.op == "add":
        return None
    item = batch.items.get(op.item or "")
    if item is None:
        raise Rejected("item", f"{op.item} is not a memory this chat can see")
    if item.status != "active":
        raise Rejected("item", f"{item.id} is {item.status}, not active")
    return item


def _protected(op: ProposedOp, target: MemoryItem | None, turns: Sequence[Turn]) -> None:
    if target is None or target.source not in EXPLICIT_SOURCES:
        return
    if op.op != "supersede":
        raise Rejected(
            "protected", f"{target.id} is {target.source}: only a supersede may replace it"
        )
    newest = max(t.time.timestamp() for t in turns)
    if newest <= write.known_at(target):
        raise Rejected("protected", f"{target.id} is {target.source}: no newer evidence cited")


def _text(content: str, turns: Sequence[Turn]) -> None:
    if contains_secret(content) or was_redacted(content):
        raise Rejected("secret", "the text holds a secret")
    if _PROMPT.search(content):
        raise Rejected("prompt", "the text is a fragment of a prompt")
    if reads_as_instruction(content):
        raise Rejected("prompt", "the text is an instruction to the bot")
    people = [t for t in turns if t.role == "user"]
    if not people:
        raise Rejected("bot_words", "only the bot's own turns are cited")
    mine = frozenset(tokenize(content))
    bot = max(
        (similarity(mine, frozenset(tokenize(t.content))) for t in turns if t not in people),
        default=0.0,
    )
    said = max(similarity(mine, frozenset(tokenize(t.content))) for t in people)
    if bot >= BOT_ECHO and bot > said:
        raise Rejected("bot_words", "the text is the bot's turn, not a person's")


def _duplicate(content: str, scope: str, shown: Sequence[MemoryItem]) -> MemoryItem | None:
    mine = frozenset(tokenize(content))
    best: tuple[float, MemoryItem] | None = None
    for item in shown:
        if item.scope != scope or item.status != "active":
            continue
        score = similarity(mine, frozenset(tokenize(item.content)))
        if score >= NEAR_DUPLICATE and (best is None or score > best[0]):
            best = (score, item)
    return best[1] if best else None


def check_all(ops: Sequence[ProposedOp], batch: Batch, max_ops: int) -> list[Checked]:
    """Each op of an answer through the guards (then `max_ops`) and the safety filter, in
    order (a worker thread: tokenising)."""
    checked: list[Checked] = []
    taken = 0
    for op in ops:
        proposal = Proposal(
            op.op,
            op.kind or "",
            op.content,
            op.scope or "",
            op.item,
            tuple(op.evidence),
            op.confidence,
            op.reason,
        )
        try:
            candidate = check(op, batch)
            if taken >= max_ops:
                raise Rejected("max_ops", f"more than {max_ops} ops in one answer")
        except Rejected as no:
            checked.append((rejected(proposal, no.guard, no.detail), None))
            continue
        taken += 1
        checked.append((proposal, write.prepare(candidate)))
    return checked


def rejected(proposal: Proposal, guard: str, detail: str) -> Proposal:
    """The record of a rejected op: its text redacted, or withheld when it held a secret."""
    content = WITHHELD if guard == "secret" else redact(proposal.content)
    return replace(proposal, content=content, fate="rejected", guard=guard, detail=detail)
