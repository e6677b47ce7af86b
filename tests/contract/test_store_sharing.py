"""Two processes on one PostgreSQL memory, played by two stores on one schema (each with its own
connections, so PostgreSQL sees two sessions): a chat is held by one at a time, a holder that
dies lets go, and write units run one at a time across them.

What waits is seen in `pg_locks` (a lock asked for and not granted), never by timing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from nahida.memory.core.models import NewTurn
from nahida.memory.store.base import Tx
from tests import pg

pytestmark = pytest.mark.usefixtures("postgres_server")


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    pg.require()
    first, second = pg.store(tmp_path), pg.store(tmp_path)
    yield first, second
    second.close()
    first.close()


def waiting() -> int:
    """Advisory locks some session is waiting for right now."""
    with psycopg.connect(pg.require(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()
    return int(row[0]) if row else 0


async def until(check: Any, what: str) -> None:
    """Let the other side run until `check()` holds (a bounded number of looks)."""
    for _ in range(2_000):
        if check():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never: {what}")


async def test_a_chat_is_held_by_one_process_at_a_time(two: tuple[Any, Any]) -> None:
    first, second = two
    order: list[str] = []
    released = asyncio.Event()

    async def hold_first() -> None:
        async with first.chat_lock("qq:group:1"):
            order.append("first holds")
            await released.wait()
            order.append("first lets go")

    async def hold_second() -> None:
        async with second.chat_lock("qq:group:1"):
            order.append("second holds")

    holding = asyncio.ensure_future(hold_first())
    await until(lambda: order == ["first holds"], "the first process holds the chat")
    trying = asyncio.ensure_future(hold_second())
    async with second.chat_lock("qq:group:2"):  # another chat is free meanwhile
        order.append("second holds another chat")
    for _ in range(20):  # the second asks again and again, and is refused each time
        await asyncio.sleep(0.01)
    assert order == ["first holds", "second holds another chat"]
    released.set()
    await asyncio.gather(holding, trying)
    assert order[2:] == ["first lets go", "second holds"]


async def test_a_process_that_dies_lets_go_of_its_chats(two: tuple[Any, Any]) -> None:
    first, second = two
    await first.chat_lock("lark:group:oc_1").__aenter__()  # and never leaves: it dies holding
    first.close()  # its connections go with it, as with kill -9

    async def take() -> bool:
        async with second.chat_lock("lark:group:oc_1"):
            return True

    assert await asyncio.wait_for(take(), 60)  # a guard against hanging, not a measurement


def test_write_units_run_one_at_a_time_across_processes(two: tuple[Any, Any]) -> None:
    first, second = two
    first.write_sync(lambda tx: tx.sessions.create("s1", "qq:group:1", "t", 1.0))
    inside, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def slow(tx: Tx) -> None:
        tx.turns.add("s1", NewTurn("qq:group:1", "user", "one", 2.0, "qq:1", "A"), None)
        inside.set()
        assert release.wait(30)

    def count(tx: Tx) -> None:
        seen.append(len(tx.turns.of_session("s1")))
        tx.turns.add("s1", NewTurn("qq:group:1", "user", "two", 3.0, "qq:2", "B"), None)

    writer = threading.Thread(target=first.write_sync, args=(slow,))
    writer.start()
    assert inside.wait(30)
    other = threading.Thread(target=second.write_sync, args=(count,))
    other.start()
    for _ in range(2_000):  # the second process's unit waits for the write lock
        if waiting():
            break
        threading.Event().wait(0.005)
    assert waiting() == 1 and seen == []
    release.set()
    writer.join(30)
    other.join(30)
    assert seen == [1]  # it ran after the first committed, and saw its turn
    contents = [t.content for t in second.read_sync(lambda tx: tx.turns.of_session("s1"))]
    assert contents == ["one", "two"]
