"""What the PostgreSQL store promises beyond the contract suite: migrating once when several
processes open it at once, the audit trail's trigger, a writer connection the server dropped.

Run against the real server of `tests/pg.py` (skipped without one, failed with CI=true).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from nahida.errors import StorageError
from nahida.memory.store.postgres import PostgresStore
from nahida.memory.store.postgres.migrations import MIGRATIONS
from tests import pg


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    shared = pg.running()  # started by the contract suite's session fixture, which stops it
    pg.start(tmp_path_factory.mktemp("postgres"))
    yield pg.require()
    if not shared:
        pg.stop()


def test_stores_opened_at_once_migrate_once(uri: str, tmp_path: Path) -> None:
    schema = pg.schema_for(tmp_path)
    opened: list[PostgresStore] = []
    failed: list[BaseException] = []

    def open_one() -> None:
        try:
            opened.append(PostgresStore(uri, schema=schema))
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert failed == [] and len(opened) == 6
        with psycopg.connect(uri) as conn:
            names = conn.execute(
                psycopg.sql.SQL("SELECT name FROM {}.schema_migrations ORDER BY name").format(
                    psycopg.sql.Identifier(schema)
                )
            ).fetchall()
        assert [n for (n,) in names] == [step.name for step in MIGRATIONS]
    finally:
        for store in opened:
            store.close()


def test_the_audit_trail_refuses_every_change_but_a_purge(uri: str, tmp_path: Path) -> None:
    schema = pg.schema_for(tmp_path)
    store = PostgresStore(uri, schema=schema)
    try:
        store.write_sync(
            lambda tx: tx.events.add("m1", "create", "cli", None, {"content": "x"}, "said", 1.0)
        )
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute(
                psycopg.sql.SQL("SET search_path TO {}").format(psycopg.sql.Identifier(schema))
            )
            for statement in (
                "UPDATE memory_events SET actor = 'someone'",
                "UPDATE memory_events SET before = NULL, after = NULL, reason = NULL",
                "DELETE FROM memory_events",
                "TRUNCATE memory_events",
            ):
                with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                    conn.execute(statement)
        store.write_sync(lambda tx: tx.events.add("m1", "purged", "cli", None, None, None, 2.0))
        assert store.write_sync(lambda tx: tx.events.purge("m1")) == 1
        events = store.read_sync(lambda tx: tx.events.of_item("m1"))
        assert [(e.action, e.after, e.reason) for e in events] == [
            ("create", None, None),
            ("purged", None, None),
        ]
    finally:
        store.close()


def test_a_dropped_writer_connection_fails_one_unit_and_is_opened_again(
    uri: str, tmp_path: Path
) -> None:
    store = PostgresStore(uri, schema=pg.schema_for(tmp_path))
    try:

        def backend_pid(tx: object) -> int:
            return int(store.db._writer_conn.info.backend_pid)

        pid = store.write_sync(backend_pid)
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StorageError):
            store.write_sync(lambda tx: tx.sessions.create("s1", "qq:group:1", "t", 1.0))
        assert store.write_sync(lambda tx: tx.sessions.create("s1", "qq:group:1", "t", 1.0))
        assert store.read_sync(lambda tx: tx.sessions.get("s1")) is not None
    finally:
        store.close()


def test_capabilities_name_the_server(uri: str, tmp_path: Path) -> None:
    store = PostgresStore(uri, schema=pg.schema_for(tmp_path))
    try:
        caps = store.capabilities
        assert (caps.backend, caps.fts) == ("postgres", True)
        assert caps.version and caps.driver.startswith("psycopg")
    finally:
        store.close()
