"""The Markdown projection's files (`markdown_files`) and named values (`named_state`)."""

from __future__ import annotations

import json

from nahida.memory.store.postgres import unbuilt
from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.values import FileState


class MarkdownTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def file(self, path: str) -> FileState | None:
        row = self.conn.execute(
            "SELECT path, hash, mtime, snapshot, rendered_at FROM markdown_files WHERE path = %s",
            (path,),
        ).fetchone()
        if row is None:
            return None
        return FileState(row[0], row[1], row[2], row[3], row[4])

    def put_file(self, state: FileState) -> None:
        self.conn.execute(
            "INSERT INTO markdown_files (path, hash, mtime, snapshot, rendered_at)"
            " VALUES (%s, %s, %s, %s::jsonb, %s) ON CONFLICT (path) DO UPDATE SET"
            " hash = excluded.hash, mtime = excluded.mtime, snapshot = excluded.snapshot,"
            " rendered_at = excluded.rendered_at",
            (
                state.path,
                state.hash,
                state.mtime,
                json.dumps(state.snapshot, ensure_ascii=False),
                state.rendered_at,
            ),
        )

    def fingerprint(self) -> tuple[object, ...]:
        """Changes whenever a global item or a profile bullet does (counts, latest change)."""
        # the profile bullets' half comes with `profile_entries` (the derived tables' part)
        unbuilt.refuse("markdown.fingerprint (it needs profile_entries)")


class StateTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def get(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM named_state WHERE key = %s", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, value: str, at: float) -> None:
        self.conn.execute(
            "INSERT INTO named_state (key, value, updated_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at",
            (key, value, at),
        )
