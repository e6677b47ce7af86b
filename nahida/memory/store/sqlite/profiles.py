"""Profile bullets in SQLite (the Ethan layer 3); filled in by the profiles work."""

from __future__ import annotations

from nahida.memory.store.sqlite.db import Connection


class ProfileTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
