"""The write path (DESIGN §6): safety filter → candidate → commit mode → merge / supersede / create.

Explicit writes (a person's `/memory remember`, a plugin's `memory_store`, an admin's edit) that
contain a secret are refused with a clear reason and nothing is stored; automatic writes (rule
extraction, dreaming, imports) are stored redacted. Every write is a candidate row first; the
commit mode decides whether it becomes an item now or waits for `/memory review`. An exact or near
duplicate merges into the existing item (confidence and access count rise, evidence joins); a
newer value for the same slot supersedes the old item, which stays, linked, never deleted.

Nothing replaces, rewrites or archives an item on evidence older than the item's own (a turn
read again, an old history import, a late review); and what people stated or edited
(`user_explicit`, `human_edit`) is only ever replaced by newer evidence, never rewritten or
archived by a model or a rule (`objection`, checked in `commit`, which every write passes; a
person's own write is the newest word and exempt).

`prepare()` does the filtering and tokenising before the store call; `propose()`, `decide()` and
the audited item changes below are units of work (`tx` first), run in one transaction. Every
change to an item appends a `memory_events` row (who, what, before, after, why).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from nahida.errors import SecretRefused
from nahida.memory.core.kinds import SAFE_KINDS
from nahida.memory.core.models import (
    RUN_REF,
    Candidate,
    CommitMode,
    Evidence,
    MemoryItem,
    WriteResult,
    new_id,
)
from nahida.memory.core.safety import contains_secret, redact
from nahida.memory.core.scopes import Visibility
from nahida.memory.core.tokenize import query_terms, tokenize
from nahida.memory.store.base import Tx
from nahida.memory.store.values import TextSearch

EXPLICIT_SOURCES = ("user_explicit", "human_edit")
TRUSTED_SOURCES = (*EXPLICIT_SOURCES, "import")
# a behavioural rule commits at once when it is what the person said or asked for in the chat;
# one a model inferred (dreaming, compaction) waits for review
RULE_SOURCES = ("rule_extract", "agent_proactive")
SAFE_CONFIDENCE = 0.7
NEAR_DUPLICATE = 0.8  # token Jaccard at or above which two memories are the same memory
MAX_EVIDENCE = 20
DUPLICATE_POOL = 8  # most similar items of the scope the index proposes
AUDITED = ("content", "title", "status", "confidence", "importance", "sensitivity", "scope", "kind")

__all__ = ["Prepared", "SecretRefused", "decide", "prepare", "propose"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A candidate that passed the safety filter, with its jieba tokens."""

    candidate: Candidate
    tokens: tuple[str, ...]  # of the content
    index: str  # what the index stores: the tokens of title and content
    redacted: bool = False


def is_explicit(source: str) -> bool:
    return source in EXPLICIT_SOURCES or source.startswith("plugin:")


def commits_now(candidate: Candidate, mode: CommitMode) -> bool:
    if candidate.source in TRUSTED_SOURCES or mode == "auto_full":
        return True
    if mode == "manual_review" or candidate.op == "archive":
        return False  # an archive takes a memory out of recall: a person decides (auto_safe)
    if candidate.kind == "procedure" and candidate.source in RULE_SOURCES:
        return candidate.confidence >= SAFE_CONFIDENCE
    return candidate.kind in SAFE_KINDS and candidate.confidence >= SAFE_CONFIDENCE


def item_index(title: str, content: str) -> str:
    return " ".join(tokenize(f"{title} {content}"))


def tokens_of(candidate: Candidate, *, redacted: bool = False) -> Prepared:
    return Prepared(
        candidate,
        tuple(tokenize(candidate.content)),
        item_index(candidate.title, candidate.content),
        redacted,
    )


def prepare(candidate: Candidate) -> Prepared:
    """Filter secrets and tokenise. Raises `SecretRefused` for an explicit write with a secret."""
    redacted = False
    if contains_secret(candidate.content) or contains_secret(candidate.title):
        if is_explicit(candidate.source):
            raise SecretRefused("the text contains what looks like a secret")
        candidate = replace(
            candidate, content=redact(candidate.content), title=redact(candidate.title)
        )
        redacted = True
    quotes = tuple(replace(e, quote=redact(e.quote)) if e.quote else e for e in candidate.evidence)
    return tokens_of(replace(candidate, evidence=quotes), redacted=redacted)


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def find_duplicate(tx: Tx, prepared: Prepared) -> MemoryItem | None:
    """The active item in the same scope that says the same thing, if any.

    The index proposes the few most similar items of the scope; the token overlap decides.
    """
    candidate = prepared.candidate
    terms = query_terms(prepared.tokens)
    if not terms:
        return None
    mine = frozenset(prepared.tokens)  # of the content alone
    best: tuple[float, MemoryItem] | None = None
    found = tx.items.search(Visibility((candidate.scope,)), TextSearch(terms, DUPLICATE_POOL))
    for match in found:
        item, words = match.item, match.body.split()
        if item.title:  # the body is the title's tokens, then the content's: compare contents
            words = words[len(tokenize(item.title)) :]
        theirs = frozenset(words)
        if item.kind != candidate.kind or item.subject_user != candidate.subject_user:
            continue
        if candidate.slot and item.slot == candidate.slot and theirs != mine:
            continue  # a new value for a slot ("不喜欢乌龙茶" after "喜欢乌龙茶") supersedes
        score = similarity(theirs, mine)
        if score >= NEAR_DUPLICATE and (best is None or score > best[0]):
            best = (score, item)
    return best[1] if best else None


def said_at(evidence: Sequence[Evidence]) -> float | None:
    """When the newest of this evidence was said or written; None when none says. A dream run's
    reference is left out: its time is when the run read the turns it cites."""
    times = [e.time for e in evidence if e.time is not None and not _run_ref(e)]
    return max(times, default=None)


def _run_ref(evidence: Evidence) -> bool:
    return evidence.ref is not None and evidence.ref.startswith(RUN_REF)


def known_at(item: MemoryItem) -> float:
    """When the newest evidence of an item was said: never later than its last change, which
    is the bot's own clock (a platform whose clock runs ahead dates its turns in the future)."""
    said = said_at(item.evidence)
    return item.updated_at if said is None else min(said, item.updated_at or said)


def objection(candidate: Candidate, target: MemoryItem, now: float) -> str | None:
    """Why `candidate` may not replace, rewrite or archive `target`, or None when it may.

    A turn older than an item is never evidence against it; what people stated or edited is
    only ever replaced by newer evidence, never rewritten or archived. An explicit write (a
    person's, or a plugin's `memory_store`, which only adds) is exempt from both: it is the
    newest word by being made now. Evidence without a time counts as said `now`."""
    if is_explicit(candidate.source):
        return None
    guarded = target.source in EXPLICIT_SOURCES
    if guarded and candidate.op in ("update", "archive"):
        return f"{target.id} is {target.source}: only newer evidence may replace it"
    said = said_at(candidate.evidence)
    said = now if said is None else said
    cited = {(e.chat, e.message_id) for e in candidate.evidence if e.chat and e.message_id}
    for e in target.evidence:  # the same message, dated by another clock, is no older
        if e.time is not None and (e.chat, e.message_id) in cited:
            said = max(said, e.time)
    known = known_at(target)
    if said < known or (guarded and said == known):
        return f"{target.id} is newer than this evidence"
    return None


# audited item changes ------------------------------------------------------------------------


def _snapshot(item: MemoryItem) -> dict[str, Any]:
    data = {k: getattr(item, k) for k in AUDITED}
    data["evidence"] = [e.to_json() for e in item.evidence]
    return data


def insert_item(
    tx: Tx, item: MemoryItem, index: str, actor: str, *, reason: str | None = None
) -> bool:
    """Store a complete item as is (creation, import), audited as `create`; False when its id is
    taken (nothing written)."""
    if not tx.items.add(item, index):
        return False
    tx.events.add(item.id, "create", actor, None, _snapshot(item), reason, time.time())
    return True


def create_item(
    tx: Tx,
    prepared: Prepared,
    actor: str,
    *,
    supersedes: str | None = None,
    now: float | None = None,
    reason: str | None = None,
) -> MemoryItem:
    """A new item from a candidate, with a fresh id."""
    now = time.time() if now is None else now
    candidate = prepared.candidate
    while True:  # an id taken meanwhile (another process) is simply drawn again
        item = MemoryItem(
            id=new_id("m"),
            scope=candidate.scope,
            kind=candidate.kind,
            content=candidate.content,
            title=candidate.title,
            confidence=candidate.confidence,
            importance=candidate.importance,
            sensitivity=candidate.sensitivity,
            source=candidate.source,
            subject_user=candidate.subject_user,
            speaker_user=candidate.speaker_user,
            slot=candidate.slot,
            evidence=tuple(candidate.evidence),
            supersedes=supersedes,
            valid_from=candidate.valid_from,
            valid_until=candidate.valid_until,
            created_at=now,
            updated_at=now,
        )
        if insert_item(tx, item, prepared.index, actor, reason=reason):
            return item


def update_item(
    tx: Tx,
    before: MemoryItem,
    actor: str,
    action: str,
    reason: str | None = None,
    *,
    index: str | None = None,
    **changes: Any,
) -> MemoryItem:
    """Change fields of an item, keep its index in step and audit the change under `action`.
    `index` (`item_index` of the new text) is needed when the title or content changes."""
    now = time.time()
    after = replace(before, **changes, updated_at=now)
    tx.items.change(before, after, index)
    tx.events.add(before.id, action, actor, _snapshot(before), _snapshot(after), reason, now)
    return after


def _evidence_turns(
    item: MemoryItem, keep: Sequence[Evidence]
) -> tuple[list[int], list[tuple[str, str]]]:
    """The turns (by id, or by (chat, message id)) an item was learned from, but those that are
    evidence of `keep` too."""
    kept_turns = {e.turn_id for e in keep if e.turn_id is not None}
    kept_messages = {(e.chat, e.message_id) for e in keep if e.chat and e.message_id}
    turn_ids, messages = [], []
    for e in item.evidence:
        if e.turn_id is not None:
            if e.turn_id not in kept_turns and (e.chat, e.message_id) not in kept_messages:
                turn_ids.append(e.turn_id)
        elif e.chat and e.message_id and (e.chat, e.message_id) not in kept_messages:
            messages.append((e.chat, e.message_id))
    return turn_ids, messages


def hide_evidence(tx: Tx, item: MemoryItem) -> int:
    """Keep the turns a forgotten item was learned from out of recall (they would bring it
    back); they stay in the history. The warm summaries and episodes of their sessions, which
    may tell it too, are dropped (a summary is made again from the turns left)."""
    hidden = tx.turns.hide(*_evidence_turns(item, ()), item.id)
    tx.summaries.drop_told(item.id)
    tx.episodes.drop_told(item.id)
    return hidden


def mark_evidence_earlier(tx: Tx, item: MemoryItem, keep: Sequence[Evidence]) -> int:
    """Recall the turns a replaced item was learned from as what held earlier ("以前…"), but
    not those that are evidence of its successor (`keep`)."""
    return tx.turns.mark_earlier(*_evidence_turns(item, keep), item.id)


# the write path ------------------------------------------------------------------------------


def _store_candidate(
    tx: Tx, candidate: Candidate, status: str, item_id: str | None, reason: str
) -> str:
    now = time.time()
    while True:
        candidate_id = new_id("c")
        if tx.candidates.add(candidate_id, candidate, status, item_id, reason, now):
            return candidate_id


def commit(tx: Tx, prepared: Prepared, actor: str) -> WriteResult:
    """Turn a candidate into memory: merge into a duplicate, supersede a slot, or create."""
    candidate = prepared.candidate
    if candidate.op != "add":
        return act_on(tx, prepared, actor)
    duplicate = find_duplicate(tx, prepared)
    if duplicate is not None:
        if _known(candidate.evidence, duplicate.evidence):
            return WriteResult("merged", duplicate.id)  # the same words again: no new evidence
        evidence = tuple(dict.fromkeys((*duplicate.evidence, *candidate.evidence)))
        merged = update_item(
            tx,
            duplicate,
            actor,
            "merge",
            reason=f"same as a new {candidate.source} memory",
            confidence=min(1.0, max(duplicate.confidence, candidate.confidence) + 0.05),
            access_count=duplicate.access_count + 1,
            evidence=evidence[-MAX_EVIDENCE:],
        )
        return WriteResult("merged", merged.id)
    replaced = None
    if candidate.slot:
        for old in tx.items.in_slot(candidate.scope, candidate.slot):
            if old.subject_user == candidate.subject_user:
                replaced = old
                break
    if replaced is not None and (no := objection(candidate, replaced, time.time())):
        return WriteResult("rejected", reason=no)
    item = create_item(
        tx,
        prepared,
        actor,
        supersedes=replaced.id if replaced else None,
        reason=candidate.note or (f"replaces {replaced.id}" if replaced else None),
    )
    if replaced is not None:
        update_item(
            tx,
            replaced,
            actor,
            "supersede",
            reason=f"replaced by {item.id}",
            status="superseded",
            valid_until=time.time(),
        )
        mark_evidence_earlier(tx, replaced, keep=candidate.evidence)
        return WriteResult("superseded", item.id, replaced=replaced.id)
    return WriteResult("created", item.id)


def _known(new: Sequence[Evidence], old: Sequence[Evidence]) -> bool:
    """Whether every message or turn `new` cites is evidence in `old` already (a rerun over the
    same turns reinforces nothing)."""
    cited = {(e.chat, e.message_id, e.turn_id) for e in new if e.message_id or e.turn_id}
    return bool(cited) and cited <= {(e.chat, e.message_id, e.turn_id) for e in old}


def act_on(tx: Tx, prepared: Prepared, actor: str) -> WriteResult:
    """A proposal that acts on an existing item (a dream's op): `update` rewrites it in place,
    `supersede` replaces it by a new item (valid from the evidence's time; the old one valid
    until then, kept and linked), `archive` takes it out of recall. Every change is audited with
    the proposal's reason. Rejected when the item is no longer active."""
    candidate = prepared.candidate
    target = tx.items.get(candidate.target) if candidate.target else None
    if target is None or target.status != "active":
        return WriteResult("rejected", reason=f"{candidate.target} is no longer active")
    if no := objection(candidate, target, time.time()):
        return WriteResult("rejected", reason=no)
    reason = candidate.note or f"{candidate.op} by {candidate.source}"
    evidence = tuple(dict.fromkeys((*target.evidence, *candidate.evidence)))[-MAX_EVIDENCE:]
    if candidate.op == "archive":
        update_item(tx, target, actor, "archive", reason, status="archived", evidence=evidence)
        return WriteResult("archived", target.id)
    if candidate.op == "update":
        # a reviewer's edit of the op makes the words theirs, which no model rewrites later
        source = candidate.source if candidate.source in EXPLICIT_SOURCES else target.source
        changed = update_item(
            tx,
            target,
            actor,
            "update",
            reason,
            index=prepared.index,
            content=candidate.content,
            title=candidate.title,
            kind=candidate.kind,
            confidence=max(target.confidence, candidate.confidence),
            evidence=evidence,
            source=source,
        )
        return WriteResult("updated", changed.id)
    if candidate.op != "supersede":
        return WriteResult("rejected", reason=f"unknown op {candidate.op!r}")
    since = candidate.valid_from if candidate.valid_from is not None else time.time()
    item = create_item(tx, prepared, actor, supersedes=target.id, reason=reason)
    update_item(
        tx,
        target,
        actor,
        "supersede",
        reason=f"replaced by {item.id}",
        status="superseded",
        valid_until=since,
    )
    mark_evidence_earlier(tx, target, keep=candidate.evidence)
    return WriteResult("superseded", item.id, replaced=target.id)


def propose(tx: Tx, prepared: Prepared, mode: CommitMode, actor: str) -> WriteResult:
    """The one entry for every write (after `prepare`): candidate row, commit mode, commit."""
    candidate = prepared.candidate
    if not candidate.content.strip():
        return WriteResult("rejected", reason="empty")
    if not commits_now(candidate, mode):
        candidate_id = _store_candidate(tx, candidate, "pending", None, f"waiting ({mode})")
        return WriteResult("pending", None, candidate_id, redacted=prepared.redacted)
    result = commit(tx, prepared, actor)
    status = _status(result)
    candidate_id = _store_candidate(
        tx, candidate, status, result.item_id, result.reason or result.outcome
    )
    return replace(result, candidate_id=candidate_id, redacted=prepared.redacted)


def _status(result: WriteResult) -> str:
    """A committed candidate's status: merged, accepted, or rejected (its item was gone)."""
    if result.outcome in ("merged", "rejected"):
        return result.outcome
    return "accepted"


def decide(
    tx: Tx, candidate_id: str, prepared: Prepared, accept: bool, actor: str
) -> WriteResult | None:
    """Accept (commit now) or reject a pending candidate (`prepared`: its tokens); None when it
    is no longer pending."""
    if tx.candidates.get_pending(candidate_id) is None:
        return None
    if accept:
        result = commit(tx, prepared, actor)
        status = _status(result)
    else:
        result = WriteResult("rejected", None)
        status = "rejected"
    tx.candidates.decide(candidate_id, status, result.item_id, actor, time.time())
    return replace(result, candidate_id=candidate_id)
