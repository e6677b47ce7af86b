"""Episodes of finished sessions in SQLite (the Ethan layer 4); filled in by the episodes work."""

from __future__ import annotations

from nahida.memory.store.sqlite.db import Connection


class EpisodeTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
