"""Profile bullets in SQLite (the Ethan layer 3): `profile_entries`, one row per bullet.

Rows come back oldest first (`created_at`, then `rowid` for bullets written in one moment).
"""

from __future__ import annotations

from typing import Any

from nahida.memory.core.models import ProfileEntry
from nahida.memory.store.sqlite.connection import Connection
from nahida.memory.store.values import SectionEntry

_FIELDS = "id, user, section, text, sensitivity, source, chat, status, created_at, updated_at"
_PUBLIC = " AND sensitivity = 'public'"


def _entry(row: Any) -> ProfileEntry:
    return ProfileEntry(
        id=row["id"],
        user=row["user"],
        section=row["section"],
        text=row["text"],
        sensitivity=row["sensitivity"],
        source=row["source"],
        chat=row["chat"],
        status=row["status"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


class ProfileTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def add(self, entry: ProfileEntry, tokens: str) -> bool:
        cursor = self.conn.execute(
            f"INSERT INTO profile_entries ({_FIELDS}, tokens)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            (
                entry.id,
                entry.user,
                entry.section,
                entry.text,
                entry.sensitivity,
                entry.source,
                entry.chat,
                entry.status,
                entry.created_at,
                entry.updated_at,
                tokens,
            ),
        )
        return cursor.rowcount == 1

    def get(self, entry_id: str) -> ProfileEntry | None:
        row = self.conn.execute(
            f"SELECT {_FIELDS} FROM profile_entries WHERE id = ?", (entry_id,)
        ).fetchone()
        return None if row is None else _entry(row)

    def set_status(self, entry_id: str, status: str, at: float) -> bool:
        cursor = self.conn.execute(
            "UPDATE profile_entries SET status = ?, updated_at = ? WHERE id = ?",
            (status, at, entry_id),
        )
        return cursor.rowcount == 1

    def of_user(self, user: str, public_only: bool) -> list[ProfileEntry]:
        found = self.conn.execute(
            f"SELECT {_FIELDS} FROM profile_entries WHERE user = ? AND status = 'active'"
            f"{_PUBLIC if public_only else ''} ORDER BY created_at, rowid",
            (user,),
        )
        return [_entry(r) for r in found]

    def of_section(self, user: str, section: str, public_only: bool) -> list[SectionEntry]:
        found = self.conn.execute(
            f"SELECT {_FIELDS}, tokens FROM profile_entries"
            " WHERE user = ? AND status = 'active' AND section = ?"
            f"{_PUBLIC if public_only else ''} ORDER BY created_at, rowid",
            (user, section),
        )
        return [SectionEntry(_entry(r), r["tokens"]) for r in found]

    def users(self) -> list[str]:
        found = self.conn.execute(
            "SELECT DISTINCT user FROM profile_entries WHERE status = 'active' ORDER BY user"
        )
        return [r[0] for r in found]
