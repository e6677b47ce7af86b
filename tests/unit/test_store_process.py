"""The store process (`memory.store_process`): what travels, and what happens when it cannot or
when the child dies; and what goes first in it (and on the database thread). The contract suite
runs every store test against it as well."""

from __future__ import annotations

import asyncio
import os
import pickletools
import signal
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from nahida.errors import StorageError
from nahida.memory.models import NewTurn, Session, Turn, spoken
from nahida.memory.sessions import record_with_window
from nahida.memory.store.base import Tx, answering
from nahida.memory.store.sqlite import SqliteStore, wire
from nahida.memory.store.sqlite.process import ProcessStore
from nahida.memory.store.sqlite.rows import TurnRows
from nahida.memory.store.sqlite.wire import RECV_BYTES, Frames, dumps, frame, loads

T0 = 1_780_000_000.0


@dataclass(frozen=True, slots=True)
class Pair:
    left: int
    right: list[str]


@dataclass
class Plain:  # no slots: its fields live in its __dict__
    left: int
    right: str = "r"


@dataclass(frozen=True, slots=True)
class Triple(Pair):  # two of its slots are its base's
    third: float = 0.5


class Outer:
    @dataclass(frozen=True, slots=True)
    class Inner:  # found by its qualified name
        key: str
        value: int


def test_lambdas_and_local_functions_travel_with_their_closures() -> None:
    offset, words = 5, ["a"]

    def counted(tx: object, n: int = 1, *, more: int = 0) -> int:
        return len(words) + offset + n + more

    moved = loads(dumps(counted))
    words.append("b")  # the copy took the values as they were
    assert moved(None) == 7
    assert moved(None, 2, more=3) == 11
    assert loads(dumps(lambda tx: offset * 2))(None) == 10


def test_dataclasses_travel_as_their_fields() -> None:
    pair = Pair(3, ["x", "y"])
    assert loads(dumps(pair)) == pair
    session = Session("s1", "qq:group:1", "title", None, None, 2)  # type: ignore[arg-type]
    assert loads(dumps([session, session])) == [session, session]
    plain, triple = loads(dumps((Plain(1), Triple(1, ["z"], 2.0))))
    assert (plain, triple) == (Plain(1), Triple(1, ["z"], 2.0))
    assert type(plain) is Plain and vars(plain) == {"left": 1, "right": "r"}
    inner = Outer.Inner("k", 2)
    assert loads(dumps([inner, inner])) == [inner, inner]
    # a class is named once as `module:qualname`, not as pickle names a global
    strings = [arg for _, arg, _ in pickletools.genops(dumps(pair)) if isinstance(arg, str)]
    assert f"{__name__}:Pair" in strings and "Pair" not in strings


def test_each_payload_stands_alone_though_the_pickler_is_reused() -> None:
    pair = Pair(3, ["x", "y"])
    first = dumps([pair, pair])
    with pytest.raises(TypeError):
        dumps([pair, threading.Lock()])  # fails halfway
    assert dumps([pair, pair]) == first  # nothing kept from before: not its memo, not its bytes
    assert loads(first) == [pair, pair]
    elsewhere: list[bytes] = []
    worker = threading.Thread(target=lambda: elsewhere.append(dumps([pair, pair])))
    worker.start()
    worker.join()
    assert elsewhere == [first]  # another thread's pickler


def test_a_pickler_that_wrote_a_big_payload_is_replaced() -> None:
    """Its memo would stay as large as that payload needed, and every later clear walks it."""
    pair = Pair(3, ["x", "y"])
    small = dumps(pair)
    kept = wire._dumper.pickler
    assert dumps(pair) == small and wire._dumper.pickler is kept
    rows = [(f"row {i}", i, float(i)) for i in range(1_000)]
    big = dumps(rows)
    assert len(big) > wire._RENEW_AFTER and wire._dumper.pickler is not kept
    assert loads(big) == rows
    assert dumps(pair) == small and loads(small) == pair


def test_datetimes_travel_exactly_a_utc_one_as_its_fields() -> None:
    utc = datetime(2026, 12, 6, 13, 45, 7, 123457, tzinfo=UTC)
    others = [
        utc.replace(fold=1),
        datetime(2026, 12, 6, 21, 45, tzinfo=ZoneInfo("Asia/Shanghai")),
        datetime(2026, 12, 6, 21, 45, tzinfo=timezone(timedelta(hours=8))),
        datetime(2026, 12, 6, 21, 45),  # naive
    ]
    moved = loads(dumps([utc, *others]))
    assert moved == [utc, *others]
    assert [(m.tzinfo, m.fold) for m in moved] == [(m.tzinfo, m.fold) for m in [utc, *others]]
    names = {arg for op, arg, _ in pickletools.genops(dumps(utc)) if op.name == "SHORT_BINUNICODE"}
    assert "_utc" in names and "timezone" not in names  # not pickle's own way (~5 times slower)


def test_a_prompt_window_travels_as_its_rows_and_is_built_where_it_is_used(
    tmp_path: Path,
) -> None:
    store = ProcessStore(tmp_path / "nahida.db", vec=False)
    try:
        for n in range(4):
            role = "user" if n % 2 == 0 else "assistant"
            name = f"成员{n}" if role == "user" else None
            turn = NewTurn(
                "onebot:group:1", role, f"第 {n} 句", T0 + n, speaker_name=name, message_id=str(n)
            )
            recorded = store.write_sync(record_with_window, turn, None, 0.0, 3)
        assert recorded is not None
        (turn_id, session, _), hot, _, probed, again = (
            recorded  # plain values: the bot has the turn
        )
        assert again is False  # a new message, not one stored before
        assert probed is None  # no probe sent
        assert isinstance(hot, TurnRows)
        # what a prompt reads of them comes from the rows, as the built turns have it
        lines = hot.spoken()
        assert spoken(hot) == lines
        assert all(line[0] < turn_id for line in lines)  # the turns before the one recorded
        assert lines == [(t.id, t.role, t.content, t.speaker_name) for t in list(hot)]
        assert [line[1:] for line in lines] == [
            ("user", "第 0 句", "成员0"),
            ("assistant", "第 1 句", None),
            ("user", "第 2 句", "成员2"),
        ]
        assert [t.content for t in hot] == ["第 0 句", "第 1 句", "第 2 句"]
        assert all(isinstance(t, Turn) and t.time.tzinfo is not None for t in hot)
        # what crosses from the store process: plain values; no Turn is built there
        for answer in (
            recorded,
            store.read_sync(lambda tx: tx.turns.window(session, 99, 3)),
            store.read_sync(lambda tx: tx.turns.after(session, 0, 99)),  # a compaction's read
        ):
            names = {  # a class named by pickle or by the wire (`module:qualname`)
                arg.rpartition(":")[2]
                for _, arg, _ in pickletools.genops(dumps(answer))
                if isinstance(arg, str)
            }
            assert "TurnRows" in names and "Turn" not in names
        after = store.read_sync(lambda tx: tx.turns.after(session, 0, 99))
        assert [t.content for t in after] == [f"第 {n} 句" for n in range(4)]
    finally:
        store.close()


def test_what_cannot_travel_is_refused_with_its_reason(tmp_path: Path) -> None:
    store = ProcessStore(tmp_path / "p.db")
    lock = threading.Lock()
    try:
        with pytest.raises(StorageError, match="could not be sent to the store process"):
            store.read_sync(lambda tx: lock.locked())
        # the store goes on
        assert store.write_sync(lambda tx: tx.sessions.create("s1", "qq:group:1", "t", T0))
    finally:
        store.close()


async def test_an_async_unit_that_cannot_travel_fails_alone(tmp_path: Path) -> None:
    store = ProcessStore(tmp_path / "p.db")
    lock = threading.Lock()
    try:
        good = asyncio.ensure_future(
            store.write(lambda tx: tx.sessions.create("s1", "qq:group:1", "t", T0))
        )
        with pytest.raises(StorageError, match="could not be sent"):
            await store.read(lambda tx: lock.locked())
        assert await good is True
    finally:
        store.close()


def _create(tx: Tx, session_id: str) -> bool:
    return tx.sessions.create(session_id, "qq:group:1", session_id, T0)


async def test_a_dead_child_fails_its_callers_and_the_next_call_starts_another(
    tmp_path: Path,
) -> None:
    store = ProcessStore(tmp_path / "p.db")
    try:
        assert await store.write(_create, "s1")
        child = store._child
        assert child is not None
        os.kill(child.process.pid, signal.SIGKILL)
        child.process.wait()
        with pytest.raises(StorageError, match="went away"):
            await store.read(lambda tx: tx.sessions.get("s1"))
        # a new child, on the same file: what was committed is there
        found = await store.read(lambda tx: tx.sessions.get("s1"))
        assert found is not None and found.id == "s1"
        assert store._child is not child
        assert store.read_sync(lambda tx: tx.sessions.get("s1")) == found
    finally:
        store.close()


async def test_payloads_many_reads_long_travel_whole_both_ways(tmp_path: Path) -> None:
    """A read takes at most `RECV_BYTES`: a longer request or answer arrives in pieces and is
    put back together (async and sync sockets, several at once)."""
    texts = [f"{i}:" + "长" * (RECV_BYTES // 2 + 1000 * i) for i in range(3)]  # ~1.5-2 reads each

    def echo(tx: Tx, text: str) -> str:
        return text[::-1]

    store = ProcessStore(tmp_path / "p.db")
    try:
        got = await asyncio.gather(*(store.read(echo, text) for text in texts))
        assert got == [text[::-1] for text in texts]
        assert store.read_sync(echo, texts[2]) == texts[2][::-1]
    finally:
        store.close()


def test_frames_split_anywhere_come_back_whole() -> None:
    payloads = [b"", b"a", bytes(range(256)) * 300, b"tail"]
    stream = b"".join(frame(p) for p in payloads)
    for step in (1, 3, 4, 5, 4096, len(stream)):
        frames = Frames()
        got = [f for i in range(0, len(stream), step) for f in frames.feed(stream[i : i + step])]
        assert got == payloads, step


def test_a_unit_error_comes_back_as_itself_or_as_a_storage_error(tmp_path: Path) -> None:
    class Local(Exception):  # cannot be pickled by reference: a local class
        pass

    def boom(tx: Tx) -> None:
        raise KeyError("missing")

    def local(tx: Tx) -> None:
        raise Local("mine")

    store = ProcessStore(tmp_path / "p.db")
    try:
        with pytest.raises(KeyError, match="missing"):
            store.write_sync(boom)
        with pytest.raises(StorageError):
            store.write_sync(local)
    finally:
        store.close()


def test_the_child_outlives_the_signals_that_stop_the_bot(tmp_path: Path) -> None:
    store = ProcessStore(tmp_path / "p.db")
    child = store._child
    assert child is not None
    try:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # Ctrl-C, systemd, a hangup
            os.kill(child.process.pid, signum)
        assert store.write_sync(_create, "s1")  # what the bot stores while it shuts down
        assert child.process.poll() is None
    finally:
        store.close()
    assert child.process.returncode == 0


def test_the_child_stops_when_the_bot_goes_away(tmp_path: Path) -> None:
    store = ProcessStore(tmp_path / "p.db")
    child = store._child
    assert child is not None
    assert store.write_sync(_create, "s1")
    child.close()  # the bot's ends of the sockets, as when it dies
    assert child.process.wait(timeout=30) == 0
    store._main.closed = True  # nothing left to stop


def test_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = ProcessStore(tmp_path / "p.db")
    child = store._child
    store.close()
    assert child is not None and child.process.poll() == 0
    with pytest.raises(StorageError, match="closed"):
        store.read_sync(lambda tx: None)


async def test_a_reader_runs_snapshot_reads_read_only_and_is_restarted_and_stopped(
    tmp_path: Path,
) -> None:
    store = ProcessStore(tmp_path / "p.db", reader=True)
    try:
        assert await store.write(_create, "s1")
        before = store.db.snapshot()
        found = await store.read_snapshot(lambda tx: tx.sessions.get("s1"))
        assert found is not None and found.id == "s1"
        reader = store._reader
        assert reader is not None and reader.child is not None
        assert reader.child is not store._child  # a process of its own
        assert store.db.snapshot().round_trips == before.round_trips + 1  # counted, by both
        with pytest.raises(Exception, match="readonly"):  # query_only: it cannot write
            await store.read_snapshot(_create, "s2")
        os.kill(reader.child.process.pid, signal.SIGKILL)
        reader.child.process.wait()
        with pytest.raises(StorageError, match="went away"):
            await store.read_snapshot(lambda tx: tx.sessions.get("s1"))
        again = await store.read_snapshot(lambda tx: tx.sessions.get("s1"))
        assert again == found  # a new reader on the same file
        children = [store._child, reader.child]
    finally:
        store.close()
    assert [child.process.returncode for child in children if child] == [0, 0]


def _create_after(tx: Tx, other: str, session_id: str) -> bool:
    """Create `session_id`; whether `other` was there before."""
    seen = tx.sessions.get(other) is not None
    _create(tx, session_id)
    return seen


def _hold(tx: Tx, seconds: float) -> None:
    time.sleep(seconds)  # the store is busy: what comes meanwhile queues up as one batch


@pytest.mark.parametrize("threaded", [False, True], ids=["process", "thread"])
async def test_the_units_of_an_answered_message_run_ahead_of_those_sent_with_them(
    tmp_path: Path, threaded: bool
) -> None:
    store = SqliteStore(tmp_path / "p.db") if threaded else ProcessStore(tmp_path / "p.db")

    async def unit(session_id: str, other: str, urgent: bool) -> bool:
        answering.set(urgent)  # this task's context only
        return await store.write(_create_after, other, session_id)

    try:
        for n in range(3):
            held = asyncio.ensure_future(store.write(_hold, 0.2))
            await asyncio.sleep(0.05)
            observed = asyncio.ensure_future(unit(f"o{n}", f"a{n}", False))
            answered = asyncio.ensure_future(unit(f"a{n}", f"o{n}", True))
            # the answered one, sent second, ran first
            assert (await answered, await observed) == (False, True)
            await held
        assert answering.get() is False
    finally:
        store.close()
