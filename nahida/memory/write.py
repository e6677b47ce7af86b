"""The write path (DESIGN §6): safety filter → candidate → commit mode → merge / supersede / create.

Explicit writes (a person's `/memory remember`, a plugin's `memory_store`, an admin's edit) that
contain a secret are refused with a clear reason and nothing is stored; automatic writes (rule
extraction, dreaming, imports) are stored redacted. Every write is a candidate row first; the
commit mode decides whether it becomes an item now or waits for `/memory review`. An exact or near
duplicate merges into the existing item (confidence and access count rise, evidence joins); a
newer value for the same slot supersedes the old item, which stays, linked, never deleted.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from nahida.db import Connection, transaction
from nahida.memory import store
from nahida.memory.models import (
    Candidate,
    CommitMode,
    MemoryItem,
    WriteResult,
    dump_evidence,
    load_evidence,
    new_id,
)
from nahida.memory.safety import contains_secret, redact
from nahida.memory.tokens import scoped_match, tokenize

EXPLICIT_SOURCES = ("user_explicit", "human_edit")
TRUSTED_SOURCES = (*EXPLICIT_SOURCES, "import")
SAFE_KINDS = ("fact", "preference", "decision", "task")
SAFE_CONFIDENCE = 0.7
NEAR_DUPLICATE = 0.8  # token Jaccard at or above which two memories are the same memory
MAX_EVIDENCE = 20


class SecretRefused(ValueError):
    """An explicit write contained a secret; nothing was stored."""


def is_explicit(source: str) -> bool:
    return source in EXPLICIT_SOURCES or source.startswith("plugin:")


def commits_now(candidate: Candidate, mode: CommitMode) -> bool:
    if candidate.source in TRUSTED_SOURCES or mode == "auto_full":
        return True
    if mode == "manual_review":
        return False
    return candidate.kind in SAFE_KINDS and candidate.confidence >= SAFE_CONFIDENCE


def _normal(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


def similarity(a: str, b: str) -> float:
    ta, tb = _normal(a), _normal(b)
    if not ta or not tb:
        return 1.0 if a.strip() == b.strip() else 0.0
    return len(ta & tb) / len(ta | tb)


def find_duplicate(conn: Connection, candidate: Candidate) -> MemoryItem | None:
    """The active item in the same scope that says the same thing, if any.

    The index proposes the few most similar items of the scope; the token overlap decides.
    """
    expression = scoped_match(candidate.content, [candidate.scope])
    if expression is None:
        return None
    rows = conn.execute(
        "SELECT m.* FROM memory_items_fts f JOIN memory_items m ON m.rowid = f.rowid"
        " WHERE memory_items_fts MATCH ? ORDER BY bm25(memory_items_fts, 1.0, 0.0) LIMIT 8",
        (expression,),
    ).fetchall()
    best: tuple[float, MemoryItem] | None = None
    for item in map(MemoryItem.from_row, rows):
        if item.kind != candidate.kind or item.subject_user != candidate.subject_user:
            continue
        if (
            candidate.slot
            and item.slot == candidate.slot
            and _normal(item.content) != _normal(candidate.content)
        ):
            continue  # a new value for a slot ("不喜欢乌龙茶" after "喜欢乌龙茶") supersedes
        score = similarity(item.content, candidate.content)
        if score >= NEAR_DUPLICATE and (best is None or score > best[0]):
            best = (score, item)
    return best[1] if best else None


def _store_candidate(
    conn: Connection, candidate: Candidate, status: str, item_id: str | None, reason: str
) -> str:
    candidate_id = new_id("c")
    while conn.execute("SELECT 1 FROM memory_candidates WHERE id = ?", (candidate_id,)).fetchone():
        candidate_id = new_id("c")
    now = time.time()
    conn.execute(
        "INSERT INTO memory_candidates (id, scope, kind, title, content, confidence, importance,"
        " sensitivity, source, subject_user, speaker_user, slot, evidence, status, item_id,"
        " reason, created_at, decided_at) VALUES"
        " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            candidate_id,
            candidate.scope,
            candidate.kind,
            candidate.title,
            candidate.content,
            candidate.confidence,
            candidate.importance,
            candidate.sensitivity,
            candidate.source,
            candidate.subject_user,
            candidate.speaker_user,
            candidate.slot,
            dump_evidence(candidate.evidence),
            status,
            item_id,
            reason,
            now,
            None if status == "pending" else now,
        ),
    )
    return candidate_id


def commit(conn: Connection, candidate: Candidate, actor: str) -> WriteResult:
    """Turn a candidate into memory: merge into a duplicate, supersede a slot, or create."""
    with transaction(conn):
        duplicate = find_duplicate(conn, candidate)
        if duplicate is not None:
            evidence = tuple(dict.fromkeys((*duplicate.evidence, *candidate.evidence)))
            merged = store.update(
                conn,
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
            for old in store.by_slot(conn, candidate.scope, candidate.slot):
                if old.subject_user == candidate.subject_user:
                    replaced = old
                    break
        item = store.create(
            conn,
            candidate,
            actor,
            supersedes=replaced.id if replaced else None,
            reason=f"replaces {replaced.id}" if replaced else None,
        )
        if replaced is not None:
            store.update(
                conn,
                replaced,
                actor,
                "supersede",
                reason=f"replaced by {item.id}",
                status="superseded",
                valid_until=time.time(),
            )
            return WriteResult("superseded", item.id, replaced=replaced.id)
        return WriteResult("created", item.id)


def propose(conn: Connection, candidate: Candidate, mode: CommitMode, actor: str) -> WriteResult:
    """The one entry for every write. Raises `SecretRefused` for an explicit write with a secret."""
    redacted = False
    if contains_secret(candidate.content) or contains_secret(candidate.title):
        if is_explicit(candidate.source):
            raise SecretRefused("the text contains what looks like a secret")
        candidate = replace(
            candidate, content=redact(candidate.content), title=redact(candidate.title)
        )
        redacted = True
    quotes = tuple(replace(e, quote=redact(e.quote)) if e.quote else e for e in candidate.evidence)
    candidate = replace(candidate, evidence=quotes)
    if not candidate.content.strip():
        return WriteResult("rejected", reason="empty")
    with transaction(conn):
        if not commits_now(candidate, mode):
            candidate_id = _store_candidate(conn, candidate, "pending", None, f"waiting ({mode})")
            return WriteResult("pending", None, candidate_id, redacted=redacted)
        result = commit(conn, candidate, actor)
        status = "merged" if result.outcome == "merged" else "accepted"
        candidate_id = _store_candidate(conn, candidate, status, result.item_id, result.outcome)
    return replace(result, candidate_id=candidate_id, redacted=redacted)


def pending(
    conn: Connection, scopes: list[str] | None = None, limit: int = 20
) -> list[tuple[str, Candidate, float]]:
    """Pending candidates (id, candidate, created_at), oldest first; all scopes when None."""
    sql = "SELECT * FROM memory_candidates WHERE status = 'pending'"
    params: list[object] = []
    if scopes is not None:
        sql += f" AND scope IN ({', '.join('?' * len(scopes))})"
        params.extend(scopes)
    rows = conn.execute(sql + " ORDER BY created_at, id LIMIT ?", (*params, limit)).fetchall()
    return [(r["id"], _candidate(r), r["created_at"]) for r in rows]


def _candidate(row: Any) -> Candidate:
    return Candidate(
        scope=row["scope"],
        kind=row["kind"],
        content=row["content"],
        source=row["source"],
        confidence=row["confidence"],
        importance=row["importance"],
        sensitivity=row["sensitivity"],
        title=row["title"],
        subject_user=row["subject_user"],
        speaker_user=row["speaker_user"],
        slot=row["slot"],
        evidence=load_evidence(row["evidence"]),
    )


def decide(conn: Connection, candidate_id: str, accept: bool, actor: str) -> WriteResult | None:
    """Accept (commit now) or reject a pending candidate; None when no such pending candidate."""
    row = conn.execute(
        "SELECT * FROM memory_candidates WHERE id = ? AND status = 'pending'", (candidate_id,)
    ).fetchone()
    if row is None:
        return None
    with transaction(conn):
        if accept:
            result = commit(conn, _candidate(row), actor)
            status = "merged" if result.outcome == "merged" else "accepted"
        else:
            result = WriteResult("rejected", None)
            status = "rejected"
        conn.execute(
            "UPDATE memory_candidates SET status = ?, item_id = ?, decided_at = ?, decided_by = ?"
            " WHERE id = ?",
            (status, result.item_id, time.time(), actor, candidate_id),
        )
    return replace(result, candidate_id=candidate_id)
