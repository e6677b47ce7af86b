"""Memory items with their FTS rows, candidates, and the append-only audit trail in SQLite.

Only active items have an FTS row; its `scopes` column carries the item's visibility keys
(`fts.item_keys`), so status and visibility are decided inside the MATCH.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import fields
from typing import Any

from nahida.memory.core.models import Candidate, MemoryEvent, MemoryItem, dump_evidence
from nahida.memory.core.scopes import Visibility
from nahida.memory.store.sqlite import fts, rows
from nahida.memory.store.sqlite.connection import Connection
from nahida.memory.store.sqlite.fts import like_escape
from nahida.memory.store.sqlite.where import filter_sql, visibility_sql
from nahida.memory.store.values import (
    CandidateNote,
    ItemFilter,
    ItemMatch,
    Slice,
    Span,
    SpanCount,
    Tally,
    TextSearch,
)

_COLUMNS = tuple(f.name for f in fields(MemoryItem))
# an item's scope family ("chat:qq:group:1" -> "chat"), as the tally index (schema step 0019) has it
FAMILY = (
    "(CASE WHEN instr(scope, ':') = 0 THEN scope ELSE substr(scope, 1, instr(scope, ':') - 1) END)"
)
_INSERT = (
    f"INSERT INTO memory_items ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
    " ON CONFLICT (id) DO NOTHING"
)
_MATCH_FROM = (
    "memory_items_fts",
    "m.*, f.body AS body",
    "memory_items m ON m.rowid = f.rowid",
    "m.created_at",
)
_INDEXED = ("title", "content", "scope", "sensitivity", "status")


def _values(item: MemoryItem) -> list[Any]:
    return [
        dump_evidence(item.evidence) if name == "evidence" else getattr(item, name)
        for name in _COLUMNS
    ]


class ItemTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._compaction = fts.Compaction("memory_items_fts")

    def get(self, item_id: str) -> MemoryItem | None:
        row = self.conn.execute("SELECT * FROM memory_items WHERE id = ?", (item_id,)).fetchone()
        return rows.item(row) if row else None

    def add(self, item: MemoryItem, tokens: str) -> bool:
        cursor = self.conn.execute(_INSERT, _values(item))
        if cursor.rowcount != 1:
            return False
        if item.status == "active":
            self._index(int(cursor.lastrowid or 0), item, tokens)
        return True

    def _index(self, rowid: int, item: MemoryItem, tokens: str) -> None:
        self.conn.execute(
            "INSERT INTO memory_items_fts (rowid, body, scopes) VALUES (?, ?, ?)",
            (rowid, tokens, fts.scopes_text(fts.item_keys(item.scope, item.sensitivity))),
        )
        self._compaction.written(self.conn)

    def change(self, before: MemoryItem, after: MemoryItem, tokens: str | None) -> None:
        conn = self.conn
        changed = [n for n in _COLUMNS if n != "id" and getattr(before, n) != getattr(after, n)]
        if not changed:
            return
        values = [
            dump_evidence(after.evidence) if n == "evidence" else getattr(after, n) for n in changed
        ]
        sets = ", ".join(f"{n} = ?" for n in changed)
        if "title" in changed or "content" in changed:
            sets += ", embed_hash = NULL"  # a new text needs a new vector
        row = conn.execute(
            f"UPDATE memory_items SET {sets} WHERE id = ? RETURNING rowid",
            (*values, before.id),
        ).fetchone()
        if row is None or not set(changed) & set(_INDEXED):
            return
        rowid = int(row[0])
        old = conn.execute("SELECT body FROM memory_items_fts WHERE rowid = ?", (rowid,)).fetchone()
        conn.execute("DELETE FROM memory_items_fts WHERE rowid = ?", (rowid,))
        if after.status != "active":
            self._compaction.written(conn)
            return
        text_changed = before.title != after.title or before.content != after.content
        body = tokens if tokens is not None else (None if text_changed or old is None else old[0])
        if body is None:
            raise ValueError(f"re-indexing {after.id} needs the tokens of its new text")
        self._index(rowid, after, body)

    def touch(self, ids: Sequence[str], at: float) -> None:
        self.conn.executemany(
            "UPDATE memory_items SET last_accessed = ?, access_count = access_count + 1"
            " WHERE id = ?",
            [(at, i) for i in ids],
        )

    def decay(self, before: float, step: float, floor: float, keep: Sequence[str]) -> int:
        marks = ", ".join("?" * len(keep)) or "''"
        return self.conn.execute(
            "UPDATE memory_items SET confidence = max(?, confidence - ?)"
            " WHERE status = 'active' AND confidence > ?"
            " AND coalesce(last_accessed, updated_at) < ?"
            f" AND source NOT IN ({marks})",
            (floor, step, floor, before, *keep),
        ).rowcount

    def listed(
        self, visibility: Visibility | None, *, kind: str | None, status: str | None, limit: int
    ) -> list[MemoryItem]:
        where, params = visibility_sql(visibility) if visibility is not None else ("1", [])
        sql = f"SELECT * FROM memory_items WHERE {where}"
        values: list[Any] = list(params)
        if status is not None:
            sql += " AND status = ?"
            values.append(status)
        if kind is not None:
            sql += " AND kind = ?"
            values.append(kind)
        sql += f" ORDER BY updated_at DESC, id LIMIT {int(limit)}"
        return [rows.item(r) for r in self.conn.execute(sql, values)]

    def visible(self, item_id: str, visibility: Visibility) -> MemoryItem | None:
        where, params = visibility_sql(visibility)
        row = self.conn.execute(
            f"SELECT * FROM memory_items WHERE id = ? AND {where}", (item_id, *params)
        ).fetchone()
        return rows.item(row) if row else None

    def in_slot(self, scope: str, slot: str) -> list[MemoryItem]:
        found = self.conn.execute(
            "SELECT * FROM memory_items WHERE scope = ? AND slot = ? AND status = 'active'",
            (scope, slot),
        )
        return [rows.item(r) for r in found]

    def replaced_by(self, item_id: str) -> str | None:
        row = self.conn.execute(
            "SELECT id FROM memory_items WHERE supersedes = ?", (item_id,)
        ).fetchone()
        return str(row[0]) if row else None

    def exported(self, scopes: Sequence[str] | None) -> list[MemoryItem]:
        if scopes is None:
            found = self.conn.execute("SELECT * FROM memory_items ORDER BY created_at, id")
        else:
            found = self.conn.execute(
                f"SELECT * FROM memory_items WHERE scope IN ({', '.join('?' * len(scopes))})"
                " ORDER BY created_at, id",
                tuple(scopes),
            )
        return [rows.item(r) for r in found]

    def search(self, visibility: Visibility | None, search: TextSearch) -> list[ItemMatch]:
        if visibility is None:  # every scope: the words alone (`chats_match` of every chat)
            expression = fts.chats_match(search.terms, None)
        else:
            expression = fts.scoped_match(search.terms, fts.visibility_keys(visibility))
        if expression:  # a MATCH: its cost grows with the segments (`fts.Compaction`)
            self._compaction.searched()
        found = fts.ranked(self.conn, *_MATCH_FROM, expression, search)
        return [ItemMatch(rows.item(r), float(r["score"]), r["body"]) for r in found]

    def any_active(self, visibility: Visibility, kind: str | None = None) -> bool:
        where, params = visibility_sql(visibility)
        sql = f"SELECT 1 FROM memory_items WHERE status = 'active' AND {where}"
        if kind is not None:
            sql, params = f"{sql} AND kind = ?", [*params, kind]
        return self.conn.execute(f"{sql} LIMIT 1", params).fetchone() is not None

    def containing(
        self, visibility: Visibility | None, needles: Sequence[str], search: TextSearch
    ) -> list[ItemMatch]:
        where, params = visibility_sql(visibility) if visibility is not None else ("1", [])
        sql = (
            "SELECT m.*, f.body AS body FROM memory_items m"
            " JOIN memory_items_fts f ON f.rowid = m.rowid"
            f" WHERE m.status = 'active' AND {where}"
        )
        values: list[Any] = list(params)
        for needle in needles:
            sql += " AND (m.content LIKE ? ESCAPE '\\' OR m.title LIKE ? ESCAPE '\\')"
            values += [f"%{like_escape(needle)}%"] * 2
        sql, values = fts.time_filter(sql, values, "m.created_at", search)
        found = self.conn.execute(
            f"{sql} ORDER BY m.created_at DESC LIMIT {int(search.limit)}", values
        )
        return [ItemMatch(rows.item(r), 1.0, r["body"]) for r in found]

    def purge(self, item_id: str) -> bool:
        conn = self.conn
        row = conn.execute(
            "SELECT rowid, embed_hash FROM memory_items WHERE id = ?", (item_id,)
        ).fetchone()
        if row is None:
            return False
        conn.execute("DELETE FROM memory_items_fts WHERE rowid = ?", (row[0],))
        conn.execute("UPDATE memory_items SET supersedes = NULL WHERE supersedes = ?", (item_id,))
        conn.execute("DELETE FROM memory_items WHERE id = ?", (item_id,))
        if row[1]:
            conn.execute(_UNNAMED_VECTOR, (row[1],) * 4)
        # a deleted row's tokens stay in the index's segments until they are written anew
        self._compaction.rebuild(conn)
        if conn.execute(_STAT4).fetchone() is not None:
            conn.execute("ANALYZE memory_items")  # its samples may hold the item's slot
        return True

    def tally(self) -> list[Tally]:
        # in the order of the tally index (schema step 0019), read from it alone
        found = self.conn.execute(
            f"SELECT {FAMILY}, kind, status, count(*) FROM memory_items GROUP BY 1, 2, 3"
        )
        return [Tally(*row) for row in found]

    def added(self, spans: Sequence[Span]) -> list[SpanCount]:
        found = self.conn.execute(
            "SELECT s.key, m.source, count(*) FROM json_each(?) s CROSS JOIN memory_items m"
            " ON m.created_at >= json_extract(s.value, '$[0]')"
            " AND m.created_at < json_extract(s.value, '$[1]')"
            " GROUP BY s.key, m.source",
            (rows.dump([list(span) for span in spans]),),
        )
        return [SpanCount(*row) for row in found]

    def page(self, where: ItemFilter, offset: int, limit: int) -> Slice[MemoryItem]:
        sql, params = filter_sql(where)
        order = "ORDER BY updated_at DESC, id"
        # the page's rows found first, then read, and without a filter on a few scopes, ids or a
        # person found in the listing's index alone (every column filtered on, in the listing's
        # order), so a page costs at most one pass over that index whatever the planner guesses
        selective = where.scopes is not None or where.ids is not None or where.person is not None
        hint = "" if selective else " INDEXED BY memory_items_listed"
        found = self.conn.execute(
            f"SELECT * FROM memory_items WHERE rowid IN (SELECT rowid FROM memory_items{hint}"
            f" WHERE {sql} {order} LIMIT {int(limit)} OFFSET {int(offset)}) {order}",
            params,
        )
        (total,) = self.conn.execute(
            f"SELECT count(*) FROM memory_items WHERE {sql}", params
        ).fetchone()
        return Slice([rows.item(r) for r in found], int(total))


_UNNAMED_VECTOR = (
    "DELETE FROM embeddings WHERE hash = ?"
    " AND NOT EXISTS (SELECT 1 FROM memory_items WHERE embed_hash = ?)"
    " AND NOT EXISTS (SELECT 1 FROM turns WHERE embed_hash = ?)"
    " AND NOT EXISTS (SELECT 1 FROM episodes WHERE embed_hash = ?)"
)
_STAT4 = "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat4'"


class EventTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def add(
        self,
        item_id: str,
        action: str,
        actor: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        reason: str | None,
        at: float,
    ) -> None:
        self.conn.execute(
            "INSERT INTO memory_events (item_id, action, actor, before, after, reason, time)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (item_id, action, actor, rows.dump(before), rows.dump(after), reason, at),
        )

    def of_item(self, item_id: str) -> list[MemoryEvent]:
        found = self.conn.execute(
            "SELECT * FROM memory_events WHERE item_id = ? ORDER BY id", (item_id,)
        )
        return [rows.event(r) for r in found]

    def purge(self, item_id: str) -> int:
        conn = self.conn
        if (
            conn.execute(
                "SELECT 1 FROM memory_events WHERE item_id = ? AND action = 'purged'", (item_id,)
            ).fetchone()
            is None
        ):
            raise ValueError(f"{item_id} has no purged event: its trail keeps its text")
        return int(
            conn.execute(
                "UPDATE memory_events SET before = NULL, after = NULL, reason = NULL"
                " WHERE item_id = ? AND action != 'purged'"
                " AND (before IS NOT NULL OR after IS NOT NULL OR reason IS NOT NULL)",
                (item_id,),
            ).rowcount
        )


class CandidateTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def add(
        self,
        candidate_id: str,
        candidate: Candidate,
        status: str,
        item_id: str | None,
        reason: str,
        at: float,
    ) -> bool:
        cursor = self.conn.execute(
            "INSERT INTO memory_candidates (id, scope, kind, title, content, confidence,"
            " importance, sensitivity, source, subject_user, speaker_user, slot, evidence, status,"
            " item_id, reason, created_at, decided_at, valid_from, valid_until, op, target, note)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO NOTHING",
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
                at,
                None if status == "pending" else at,
                candidate.valid_from,
                candidate.valid_until,
                candidate.op,
                candidate.target,
                candidate.note,
            ),
        )
        return cursor.rowcount == 1

    def pending(
        self, scopes: Sequence[str] | None, limit: int
    ) -> list[tuple[str, Candidate, float]]:
        sql = "SELECT * FROM memory_candidates WHERE status = 'pending'"
        params: list[Any] = []
        if scopes is not None:
            sql += f" AND scope IN ({', '.join('?' * len(scopes))})"
            params.extend(scopes)
        found = self.conn.execute(f"{sql} ORDER BY created_at, id LIMIT {int(limit)}", params)
        return [(r["id"], rows.candidate(r), r["created_at"]) for r in found]

    def pending_count(self) -> int:
        sql = "SELECT count(*) FROM memory_candidates WHERE status = 'pending'"
        return int(self.conn.execute(sql).fetchone()[0])

    def get_pending(self, candidate_id: str) -> Candidate | None:
        row = self.conn.execute(
            "SELECT * FROM memory_candidates WHERE id = ? AND status = 'pending'", (candidate_id,)
        ).fetchone()
        return rows.candidate(row) if row else None

    def decide(
        self, candidate_id: str, status: str, item_id: str | None, actor: str, at: float
    ) -> None:
        self.conn.execute(
            "UPDATE memory_candidates SET status = ?, item_id = ?, decided_at = ?, decided_by = ?"
            " WHERE id = ?",
            (status, item_id, at, actor, candidate_id),
        )

    def proposed(self, after: tuple[float, str], before: float, limit: int) -> list[CandidateNote]:
        found = self.conn.execute(
            "SELECT * FROM memory_candidates WHERE (created_at, id) > (?, ?) AND created_at < ?"
            f" ORDER BY created_at, id LIMIT {int(limit)}",
            (*after, before),
        )
        return [_note(r) for r in found]

    def cited_turns(
        self, source: str, chat: str, turn_ids: Sequence[int], since: float
    ) -> set[int]:
        if not turn_ids:
            return set()
        found = self.conn.execute(
            "SELECT DISTINCT json_extract(e.value, '$.turn_id') FROM memory_candidates AS c,"
            " json_each(c.evidence) AS e WHERE c.created_at >= ? AND c.source = ?"
            " AND json_extract(e.value, '$.chat') = ?"
            f" AND json_extract(e.value, '$.turn_id') IN ({', '.join('?' * len(turn_ids))})",
            (since, source, chat, *turn_ids),
        )
        return {int(r[0]) for r in found}

    def decided(self, after: tuple[float, str], before: float, limit: int) -> list[CandidateNote]:
        found = self.conn.execute(
            "SELECT * FROM memory_candidates WHERE decided_at > created_at"
            " AND (decided_at, id) > (?, ?) AND decided_at < ?"
            f" ORDER BY decided_at, id LIMIT {int(limit)}",
            (*after, before),
        )
        return [_note(r) for r in found]

    def purge(self, item_id: str, texts: Collection[str]) -> int:
        said = [t for t in texts if t]
        marks = ", ".join("?" * len(said)) or "NULL"
        return int(
            self.conn.execute(
                "DELETE FROM memory_candidates WHERE item_id = ?"
                " OR (item_id IS NULL AND (target = ?"
                f" OR content IN ({marks}) OR title IN ({marks})))",
                (item_id, item_id, *said, *said),
            ).rowcount
        )


def _note(row: Any) -> CandidateNote:
    return CandidateNote(
        row["id"],
        rows.candidate(row),
        row["status"],
        row["item_id"],
        row["reason"] or "",
        row["created_at"],
        row["decided_at"],
        row["decided_by"],
    )
