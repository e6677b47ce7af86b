"""Ordered, named schema migrations for PostgreSQL; each applied in one transaction together with
its record, under an advisory lock so that two processes starting at once do not both migrate.

Add a step by appending to `MIGRATIONS`; never remove, edit or reorder a step that has shipped.
The steps are PostgreSQL's own (their names do not follow SQLite's: the two schemas are reached
by different histories).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import psycopg

from nahida.errors import StorageError
from nahida.memory.store.postgres.lexical_stats import LEXICAL_STATS
from nahida.memory.store.postgres.schema import (
    ANSWERED_COMMANDS,
    CANDIDATES,
    DREAMS,
    EPISODES,
    EVENTS,
    ITEMS,
    JOBS,
    MARKDOWN,
    PROFILES,
    RECALLS,
    SESSIONS_AND_TURNS,
    SPEAKERS,
    TEXT_SEARCH,
    VECTORS,
    WORKING_MEMORY,
)

# The advisory lock's key: one per schema (`hashtext` of the schema's name and this tag), so
# stores in other schemas of the same database migrate side by side.
_KEY = "hashtext(coalesce(%s, current_schema()) || ':nahida-migrations')"


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str


MIGRATIONS: list[Migration] = [
    Migration("0001_text_search", TEXT_SEARCH),
    Migration("0002_sessions_and_turns", SESSIONS_AND_TURNS),
    Migration("0003_items", ITEMS),
    Migration("0004_events", EVENTS),
    Migration("0005_candidates", CANDIDATES),
    Migration("0006_jobs", JOBS),
    Migration("0007_markdown", MARKDOWN),
    Migration("0008_answered_commands", ANSWERED_COMMANDS),
    Migration("0009_working_memory", WORKING_MEMORY),
    Migration("0010_profiles", PROFILES),
    Migration("0011_episodes", EPISODES),
    Migration("0012_dreams", DREAMS),
    Migration("0013_recalls", RECALLS),
    Migration("0014_speakers", SPEAKERS),
    Migration("0015_vectors", VECTORS),
    Migration("0016_lexical_stats", LEXICAL_STATS),
]


def applied(conn: psycopg.Connection[Any]) -> list[str]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations"
        " (name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
    )
    return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]


def migrate(
    conn: psycopg.Connection[Any], schema: str | None = None, steps: list[Migration] | None = None
) -> list[str]:
    """Create `schema` when it is missing, then apply the steps not applied yet, in order;
    returns the names applied now. `conn` is in autocommit mode, its search path set: each step
    opens its own transaction."""
    steps = MIGRATIONS if steps is None else steps
    # held by the session until unlocked: across the steps' transactions (and the schema's
    # creation, which races with another's: IF NOT EXISTS does not make it safe)
    conn.execute(f"SELECT pg_advisory_lock({_KEY})", (schema,))
    try:
        if schema is not None:
            _create_schema(conn, schema)
        done = set(applied(conn))
        now_applied = []
        for step in steps:
            if step.name in done:
                continue
            try:
                with conn.transaction():
                    conn.execute(step.sql)  # several statements: simple query protocol
                    conn.execute(
                        "INSERT INTO schema_migrations (name, applied_at) VALUES (%s, %s)",
                        (step.name, time.time()),
                    )
            except psycopg.Error as exc:
                raise StorageError(f"migration {step.name} failed: {exc}") from exc
            now_applied.append(step.name)
        return now_applied
    finally:
        conn.execute(f"SELECT pg_advisory_unlock({_KEY})", (schema,))


def _create_schema(conn: psycopg.Connection[Any], schema: str) -> None:
    """Create the schema when missing (a role that may not create schemas can still use one
    made for it)."""
    found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    if found is None:
        name = psycopg.sql.Identifier(schema)
        conn.execute(psycopg.sql.SQL("CREATE SCHEMA {}").format(name))
