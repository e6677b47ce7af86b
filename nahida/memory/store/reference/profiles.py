"""Profile bullets, one row each (archived, never deleted), in memory."""

from __future__ import annotations

import dataclasses

from nahida.memory.core.models import ProfileEntry
from nahida.memory.store.reference.data import (
    PROFILE_STATUSES,
    SENSITIVITIES,
    Data,
    ProfileRow,
    check,
)
from nahida.memory.store.values import SectionEntry


class ProfileTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def add(self, entry: ProfileEntry, tokens: str) -> bool:
        if entry.id in self.data.profiles:
            return False
        check("status", entry.status, PROFILE_STATUSES)
        check("sensitivity", entry.sensitivity, SENSITIVITIES)
        self.data.profiles[entry.id] = ProfileRow(self.data.next("profile"), entry, tokens)
        return True

    def get(self, entry_id: str) -> ProfileEntry | None:
        row = self.data.profiles.get(entry_id)
        return row.entry if row else None

    def set_status(self, entry_id: str, status: str, at: float) -> bool:
        check("status", status, PROFILE_STATUSES)
        row = self.data.profiles.get(entry_id)
        if row is None:
            return False
        entry = dataclasses.replace(row.entry, status=status, updated_at=at)
        self.data.profiles[entry_id] = dataclasses.replace(row, entry=entry)
        return True

    def _active(self, user: str, public_only: bool) -> list[ProfileRow]:
        found = [
            r
            for r in self.data.profiles.values()
            if r.entry.user == user
            and r.entry.status == "active"
            and (not public_only or r.entry.sensitivity == "public")
        ]
        return sorted(found, key=lambda r: (r.entry.created_at, r.seq))

    def of_user(self, user: str, public_only: bool) -> list[ProfileEntry]:
        return [r.entry for r in self._active(user, public_only)]

    def of_section(self, user: str, section: str, public_only: bool) -> list[SectionEntry]:
        return [
            SectionEntry(r.entry, r.tokens)
            for r in self._active(user, public_only)
            if r.entry.section == section
        ]

    def users(self) -> list[str]:
        return sorted(
            {r.entry.user for r in self.data.profiles.values() if r.entry.status == "active"}
        )
