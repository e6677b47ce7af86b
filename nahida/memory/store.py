"""Item storage: rows, their FTS entries and the audit trail, always changed together.

Every function takes a connection and runs inside `transaction()`; each change to an item appends
a `memory_events` row (who, what, before, after, why). Only active items have an FTS row.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from nahida.db import Connection, transaction
from nahida.memory.models import Candidate, MemoryEvent, MemoryItem, dump_evidence, new_id
from nahida.memory.scopes import Viewer, item_scope_keys
from nahida.memory.tokens import index_text, scopes_text

AUDITED = ("content", "title", "status", "confidence", "importance", "sensitivity", "scope", "kind")


def _snapshot(item: MemoryItem) -> dict[str, Any]:
    data = {k: getattr(item, k) for k in AUDITED}
    data["evidence"] = [e.to_json() for e in item.evidence]
    return data


def add_event(
    conn: Connection,
    item_id: str,
    action: str,
    actor: str,
    *,
    before: MemoryItem | None = None,
    after: MemoryItem | None = None,
    reason: str | None = None,
) -> None:
    conn.execute(
        "INSERT INTO memory_events (item_id, action, actor, before, after, reason, time)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            item_id,
            action,
            actor,
            json.dumps(_snapshot(before), ensure_ascii=False) if before else None,
            json.dumps(_snapshot(after), ensure_ascii=False) if after else None,
            reason,
            time.time(),
        ),
    )


def events(conn: Connection, item_id: str) -> list[MemoryEvent]:
    rows = conn.execute("SELECT * FROM memory_events WHERE item_id = ? ORDER BY id", (item_id,))
    return [
        MemoryEvent(
            r["id"],
            r["item_id"],
            r["action"],
            r["actor"],
            json.loads(r["before"]) if r["before"] else None,
            json.loads(r["after"]) if r["after"] else None,
            r["reason"],
            r["time"],
        )
        for r in rows
    ]


def _rowid(conn: Connection, item_id: str) -> int | None:
    row = conn.execute("SELECT rowid FROM memory_items WHERE id = ?", (item_id,)).fetchone()
    return int(row[0]) if row else None


def _index(conn: Connection, item: MemoryItem) -> None:
    rowid = _rowid(conn, item.id)
    conn.execute("DELETE FROM memory_items_fts WHERE rowid = ?", (rowid,))
    if item.status == "active":
        conn.execute(
            "INSERT INTO memory_items_fts (rowid, body, scopes) VALUES (?, ?, ?)",
            (
                rowid,
                index_text(f"{item.title} {item.content}"),
                scopes_text(item_scope_keys(item.scope, item.sensitivity)),
            ),
        )


def get(conn: Connection, item_id: str) -> MemoryItem | None:
    row = conn.execute("SELECT * FROM memory_items WHERE id = ?", (item_id,)).fetchone()
    return MemoryItem.from_row(row) if row else None


def _unused_id(conn: Connection) -> str:
    while True:
        candidate = new_id("m")
        if conn.execute("SELECT 1 FROM memory_items WHERE id = ?", (candidate,)).fetchone() is None:
            return candidate


def create(
    conn: Connection,
    candidate: Candidate,
    actor: str,
    *,
    supersedes: str | None = None,
    item_id: str | None = None,
    now: float | None = None,
    reason: str | None = None,
) -> MemoryItem:
    now = time.time() if now is None else now
    item = MemoryItem(
        id=item_id or _unused_id(conn),
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
    return insert(conn, item, actor, reason=reason)


def insert(
    conn: Connection, item: MemoryItem, actor: str, *, reason: str | None = None
) -> MemoryItem:
    """Store a complete item as is (creation, import); audited as `create`."""
    with transaction(conn):
        conn.execute(
            "INSERT INTO memory_items (id, scope, kind, title, content, status, confidence,"
            " importance, sensitivity, source, subject_user, speaker_user, slot, evidence,"
            " supersedes, valid_from, valid_until, last_accessed, access_count, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item.id,
                item.scope,
                item.kind,
                item.title,
                item.content,
                item.status,
                item.confidence,
                item.importance,
                item.sensitivity,
                item.source,
                item.subject_user,
                item.speaker_user,
                item.slot,
                dump_evidence(item.evidence),
                item.supersedes,
                item.valid_from,
                item.valid_until,
                item.last_accessed,
                item.access_count,
                item.created_at,
                item.updated_at,
            ),
        )
        _index(conn, item)
        add_event(conn, item.id, "create", actor, after=item, reason=reason)
    return item


def update(
    conn: Connection,
    before: MemoryItem,
    actor: str,
    action: str,
    reason: str | None = None,
    **changes: Any,
) -> MemoryItem:
    """Change fields of an item, re-index it and audit the change under `action`."""
    after = replace(before, **changes, updated_at=time.time())
    columns = [k for k in changes if k in asdict(before)]
    values = [
        dump_evidence(after.evidence) if k == "evidence" else getattr(after, k) for k in columns
    ]
    with transaction(conn):
        assignments = ", ".join(f"{k} = ?" for k in columns)
        conn.execute(
            f"UPDATE memory_items SET {assignments}, updated_at = ? WHERE id = ?",
            (*values, after.updated_at, before.id),
        )
        _index(conn, after)
        add_event(conn, before.id, action, actor, before=before, after=after, reason=reason)
    return after


def touch(conn: Connection, item_ids: Sequence[str], at: float | None = None) -> None:
    """Count an injection: last_accessed and access_count (not audited: not a change of meaning)."""
    at = time.time() if at is None else at
    conn.executemany(
        "UPDATE memory_items SET last_accessed = ?, access_count = access_count + 1 WHERE id = ?",
        [(at, i) for i in item_ids],
    )


def list_items(
    conn: Connection,
    viewer: Viewer,
    *,
    kind: str | None = None,
    status: str | None = "active",
    limit: int = 50,
) -> list[MemoryItem]:
    where, scope_params = viewer.item_filter()
    params: list[Any] = list(scope_params)
    sql = f"SELECT * FROM memory_items WHERE {where}"
    if status is not None:
        sql += " AND status = ?"
        params.append(status)
    if kind is not None:
        sql += " AND kind = ?"
        params.append(kind)
    sql += " ORDER BY updated_at DESC, id LIMIT ?"
    params.append(limit)
    return [MemoryItem.from_row(r) for r in conn.execute(sql, params)]


def by_slot(conn: Connection, scope: str, slot: str) -> list[MemoryItem]:
    rows = conn.execute(
        "SELECT * FROM memory_items WHERE scope = ? AND slot = ? AND status = 'active'",
        (scope, slot),
    )
    return [MemoryItem.from_row(r) for r in rows]
