"""Ordered, named schema migrations; each applied in one transaction together with its record.

Add a step by appending to `MIGRATIONS`; never remove, edit or reorder a step that has shipped.
A step whose work moved out of the schema (to memory's own upgrades, `history/upgrade.py`) keeps
its name and place, and does nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from nahida.errors import StorageError
from nahida.memory.store.sqlite.connection import (
    Connection,
    driver,
    storage_error,
    transaction,
)
from nahida.memory.store.sqlite.schema import (
    ANSWERED_COMMANDS,
    CANDIDATE_VALIDITY,
    CONSOLE,
    DAILY_NOTES,
    DELIVERIES,
    DREAMS,
    EMBEDDINGS,
    EPISODES,
    HIDDEN_TURNS,
    JOB_TABLES,
    MARKDOWN,
    MEMORY_TABLES,
    PROFILES,
    PURGEABLE_EVENTS,
    SESSIONS_AND_TURNS,
    TALLY,
    WORKING_MEMORY,
)


def driver_complete(sql: str) -> bool:
    return bool(driver.complete_statement(sql))


@dataclass(frozen=True)
class Migration:
    name: str
    apply: Callable[[Connection], None]


def _sql(script: str) -> Callable[[Connection], None]:
    """Run a script statement by statement (inside the caller's transaction, unlike
    `executescript`); statements end with `;` at the end of a line."""
    statements: list[str] = []
    current: list[str] = []
    for line in script.strip().splitlines():
        current.append(line)
        text = "\n".join(current)
        if line.rstrip().endswith(";") and driver_complete(text):
            statements.append(text)
            current = []
    if current:
        statements.append("\n".join(current))

    def apply(conn: Connection) -> None:
        for statement in statements:
            conn.execute(statement)

    return apply


def _porter_fts(conn: Connection) -> None:
    """Re-create both FTS indexes with FTS5's porter stemmer over unicode61 (English "painted"
    finds "painting"); the stored jieba tokens are copied over, so nothing is re-tokenized."""
    for table in ("turns_fts", "memory_items_fts"):
        conn.execute(f"ALTER TABLE {table} RENAME TO {table}_0002")
        conn.execute(
            f"CREATE VIRTUAL TABLE {table} USING fts5"
            " (body, scopes, tokenize = 'porter unicode61 remove_diacritics 0')"
        )
        conn.execute(
            f"INSERT INTO {table} (rowid, body, scopes)"
            f" SELECT rowid, body, scopes FROM {table}_0002"
        )
        conn.execute(f"DROP TABLE {table}_0002")


MIGRATIONS: list[Migration] = [
    Migration("0001_sessions_and_turns", _sql(SESSIONS_AND_TURNS)),
    Migration("0002_memory", _sql(MEMORY_TABLES)),
    Migration("0003_porter_fts", _porter_fts),
    Migration("0004_jobs", _sql(JOB_TABLES)),
    Migration("0005_candidate_validity", _sql(CANDIDATE_VALIDITY)),
    Migration("0006_hidden_turns", _sql(HIDDEN_TURNS)),
    # redacting history needs memory's rules: memory does it when it opens (history/upgrade.py)
    Migration("0007_redact_history", _sql("")),
    Migration("0008_embeddings", _sql(EMBEDDINGS)),
    Migration("0009_working_memory", _sql(WORKING_MEMORY)),
    Migration("0010_profiles", _sql(PROFILES)),
    Migration("0011_episodes", _sql(EPISODES)),
    Migration("0012_dreams", _sql(DREAMS)),
    Migration("0013_markdown", _sql(MARKDOWN)),
    Migration("0014_daily_notes", _sql(DAILY_NOTES)),
    Migration("0015_deliveries", _sql(DELIVERIES)),
    Migration("0016_answered_commands", _sql(ANSWERED_COMMANDS)),
    Migration("0017_purgeable_events", _sql(PURGEABLE_EVENTS)),
    Migration("0018_console", _sql(CONSOLE)),
    Migration("0019_tally", _sql(TALLY)),
]


def applied(conn: Connection) -> list[str]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL)"
    )
    return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")]


def migrate(conn: Connection, steps: list[Migration] | None = None) -> list[str]:
    """Apply the steps not applied yet, in order; returns the names applied now."""
    steps = MIGRATIONS if steps is None else steps
    done = set(applied(conn))
    now_applied = []
    for step in steps:
        if step.name in done:
            continue
        try:
            with transaction(conn):
                step.apply(conn)
                conn.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                    (step.name, time.time()),
                )
        except Exception as exc:
            found = storage_error(exc, getattr(conn, "path", ""))
            raise found or StorageError(f"migration {step.name} failed: {exc}") from exc
        now_applied.append(step.name)
    return now_applied
