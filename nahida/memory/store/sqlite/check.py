"""Questions about a database file as a whole: is it sound (`problems`, `check`), what does it
hold (`counts`, `holds_memory`, `digest`), and does anyone have it open (`in_use`).

`nahida doctor` and the bot's start ask `problems`; `nahida backup` / `restore` the others.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path

from nahida.errors import DatabaseDamaged
from nahida.memory.store.sqlite.connection import Connection, connect, damaged, driver

# What people's memory is made of: a database with a row in none of these holds none (job runs,
# vectors and named state alone are the bot's own bookkeeping).
MEMORY_TABLES = (
    "sessions",
    "memory_items",
    "memory_candidates",
    "profile_entries",
    "episodes",
    "dream_runs",
)
# State a restore starts over (`backup.restore`), left out of `digest`: which Markdown files were
# projected and how (the next sync compares the workspace's files with the database afresh) and
# the leases of processes that are gone.
RESET_ON_RESTORE = ("markdown_files", "job_leases")


@contextlib.contextmanager
def opened(path: str | Path) -> Iterator[Connection]:
    conn = connect(path, vec=False)
    try:
        yield conn
    finally:
        conn.close()


def problems(path: str | Path, limit: int = 10) -> list[str]:
    """What SQLite's `PRAGMA quick_check` finds wrong with the file (at most `limit` lines; []
    when it is sound or does not exist). A file that cannot even be opened as a database is one
    problem, said the way SQLite says it."""
    if not Path(path).exists():
        return []
    try:
        with opened(path) as conn:
            rows = conn.execute(f"PRAGMA quick_check({int(limit)})").fetchall()
    except DatabaseDamaged as exc:
        return [str(exc.__cause__ or exc)]
    except driver.Error as exc:
        return [str(exc)]
    found = [
        line
        for row in rows
        for line in str(row[0]).splitlines()
        if line.strip() and not line.startswith("*** in database")
    ]
    return [] if found == ["ok"] else found[:limit]


def check(path: str | Path) -> None:
    """Raise `DatabaseDamaged` (saying what to do) when `problems` finds any."""
    found = problems(path, limit=2)
    if found:
        raise damaged(str(path), found[0] + (" and more" if len(found) > 1 else ""))


def _tables(conn: Connection) -> list[str]:
    """The ordinary tables, FTS5's own (shadow) tables and SQLite's left out."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
    virtual = [name for name, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL")]
    return sorted(
        name
        for name, sql in rows
        if not name.startswith("sqlite_")
        and name not in virtual
        and not any(name.startswith(f"{v}_") for v in virtual)
    )


def counts(conn: Connection) -> dict[str, int]:
    """Rows of every table (the manifest's and restore's report)."""
    return {
        table: int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
        for table in _tables(conn)
        if table != "schema_migrations"
    }


def holds_memory(conn: Connection) -> bool:
    present = set(_tables(conn))
    return any(
        conn.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone() is not None
        for table in MEMORY_TABLES
        if table in present
    )


def digest(conn: Connection) -> str:
    """A hash of every row of every table but those a restore starts over: two files with the
    same digest answer every question alike (the search indexes are made from these rows)."""
    hashed = hashlib.sha256()
    for table in _tables(conn):
        if table in RESET_ON_RESTORE:
            continue
        hashed.update(f"\0table {table}\0".encode())
        for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid'):
            hashed.update(repr(tuple(row)).encode())
    return hashed.hexdigest()


def in_use(path: str | Path) -> bool:
    """Whether another connection (a running bot, another command) has the file open: only
    then can an exclusive lock not be had at once."""
    if not Path(path).exists():
        return False
    conn = driver.connect(str(path), isolation_level=None, timeout=0)
    try:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("ROLLBACK")
        return False
    except driver.Error as exc:  # a damaged file cannot say: not in use as far as we know
        return "locked" in str(exc) or "busy" in str(exc)
    finally:
        conn.close()
