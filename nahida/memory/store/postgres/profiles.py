"""Profile bullets in PostgreSQL (the Ethan layer 3): `profile_entries`, one row per bullet.

Rows come back oldest first (`created_at`, then `seq` for bullets written in one moment). The
person is the column `person` (SQLite's `user`, a reserved word here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nahida.memory.core.models import ProfileEntry
from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.values import SectionEntry

_FIELDS = "id, person, section, text, sensitivity, source, chat, status, created_at, updated_at"
_PUBLIC = " AND sensitivity = 'public'"


def _entry(row: Sequence[Any]) -> ProfileEntry:
    id_, person, section, text, sensitivity, source, chat, status, created, updated = row[:10]
    return ProfileEntry(
        id=id_,
        user=person,
        section=section,
        text=text,
        sensitivity=sensitivity,
        source=source,
        chat=chat,
        status=status,
        created_at=created,
        updated_at=updated,
    )


class ProfileTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def add(self, entry: ProfileEntry, tokens: str) -> bool:
        cursor = self.conn.execute(
            f"INSERT INTO profile_entries ({_FIELDS}, tokens)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
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
            f"SELECT {_FIELDS} FROM profile_entries WHERE id = %s", (entry_id,)
        ).fetchone()
        return None if row is None else _entry(row)

    def set_status(self, entry_id: str, status: str, at: float) -> bool:
        cursor = self.conn.execute(
            "UPDATE profile_entries SET status = %s, updated_at = %s WHERE id = %s",
            (status, at, entry_id),
        )
        return cursor.rowcount == 1

    def of_user(self, user: str, public_only: bool) -> list[ProfileEntry]:
        found = self.conn.execute(
            f"SELECT {_FIELDS} FROM profile_entries WHERE person = %s AND status = 'active'"
            f"{_PUBLIC if public_only else ''} ORDER BY created_at, seq",
            (user,),
        )
        return [_entry(r) for r in found]

    def of_section(self, user: str, section: str, public_only: bool) -> list[SectionEntry]:
        found = self.conn.execute(
            f"SELECT {_FIELDS}, tokens FROM profile_entries"
            " WHERE person = %s AND status = 'active' AND section = %s"
            f"{_PUBLIC if public_only else ''} ORDER BY created_at, seq",
            (user, section),
        )
        return [SectionEntry(_entry(r), r[10]) for r in found]

    def users(self) -> list[str]:
        found = self.conn.execute(
            "SELECT DISTINCT person FROM profile_entries WHERE status = 'active' ORDER BY person"
        )
        return [r[0] for r in found]
