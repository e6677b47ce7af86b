"""Shared fixtures: a fresh migrated store and memory on it, fake LLM servers, and the no-network
switch.

Every test runs with outbound connections limited to loopback: a real network call fails loudly
instead of reaching the internet (the switch pydantic-ai keeps in its conftest).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from nahida.memory import MemoryService
from nahida.memory.store.sqlite import SqliteStore
from tests import pg
from tests.fakes.llm_fixtures import anthropic_server, openai_server
from tests.pg import postgres_server

__all__ = ["anthropic_server", "openai_server", "postgres_server"]

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


class RealNetworkCallError(RuntimeError):
    pass


def _check(address: Any) -> None:
    if isinstance(address, tuple) and address:
        host = address[0]
        try:
            if ipaddress.ip_address(host).is_loopback:
                return
        except ValueError:
            if host == "localhost":
                return
        raise RealNetworkCallError(f"tests may only connect to loopback, not {host!r}")


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _check(address)
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _check(address)
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True, scope="session")
def _no_network() -> Iterator[None]:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    yield
    socket.socket.connect = _real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _default_logging() -> Iterator[None]:
    """A test that configures logging (the command line run in-process does) leaves the next one
    structlog's defaults, so a test capturing info lines sees them whatever ran before."""
    yield
    structlog.reset_defaults()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's keys or overrides."""
    import os

    for name in list(os.environ):
        if name.startswith("NAHIDA") or name in (
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
        ):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _lexical_unless_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests recall lexically, as on a machine without the local model, unless marked
    `embeddings` (those use the real model): most tests are about something else, and the
    model would add seconds of embedding to each. Subprocesses get the same by config."""
    if request.node.get_closest_marker("embeddings") is not None:
        return
    from nahida.providers import local_embed

    monkeypatch.setattr(local_embed, "available", lambda: False)
    monkeypatch.setenv("NAHIDA__MEMORY__EMBEDDING__BACKEND", "none")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "test.db")
    yield opened
    opened.close()


@pytest.fixture
def memory(store: SqliteStore) -> MemoryService:
    return MemoryService(store)


# Tests that start `nahida` in a child process or load the real local model: seconds each, so
# `-m "not slow"` leaves them out of the quick run (CI runs everything).
SLOW_MODULES = frozenset(
    {
        "tests/faults/test_backup_restore.py",
        "tests/faults/test_onebot_token.py",
        "tests/faults/test_profile_bullets_by_hand.py",
        "tests/faults/test_remember_paths.py",
        "tests/integration/test_cli.py",
        "tests/integration/test_dreaming_run.py",
        "tests/integration/test_import_side_by_side.py",
        "tests/integration/test_lark_cli.py",
        "tests/integration/test_onebot_cli.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        module = item.path.relative_to(root).as_posix()
        if module in SLOW_MODULES or item.get_closest_marker("embeddings") is not None:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def postgres_uri(postgres_server: None) -> str:
    """The URI of the session's PostgreSQL server (`tests/pg.py`): a test that needs one is
    skipped when it cannot start, and fails instead with CI=true."""
    return pg.require()
