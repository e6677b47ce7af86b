"""The SQLite store's memo answers recall's per-message questions exactly as SQL would: after
every kind of change made through the store, after a rolled-back write, after raw SQL on the
connection, and after a commit by another connection (a real file, a second connection)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from nahida.memory import sessions
from nahida.memory.models import MemoryItem, NewTurn, ProfileEntry, WarmSummary
from nahida.memory.scopes import Visibility
from nahida.memory.store.sqlite import tails
from nahida.memory.store.sqlite.db import Job
from nahida.memory.store.sqlite.memo import MORE, TURN_IDS
from nahida.memory.store.sqlite.store import SqliteStore, SqliteTx
from nahida.memory.store.sqlite.tails import Tails
from nahida.memory.tokenize import index_text

CHATS = ["onebot:group:1", "onebot:group:2", "onebot:private:3"]
SCOPES = ["global", "chat:onebot:group:1", "chat:onebot:group:2", "user:onebot:3"]
KINDS = [None, "procedure", "fact"]
USERS = ["onebot:3", "onebot:4"]


class Boom(Exception):
    """A unit that fails after writing (its batch is run again, apart)."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "nahida.db", vec=False, threaded=False)
    yield opened
    opened.close()


def run(store: SqliteStore, *units: Callable[[SqliteTx], Any], write: bool = True) -> list[Any]:
    """Units in one batch, as the store process runs them; their outcomes' values."""
    jobs = [Job(store.run_unit, (unit, ()), write, raw=False) for unit in units]
    return [value for _, _, value in store.db.run_batch(jobs)]


def answers(tx: SqliteTx, turn_ids: dict[str, list[int]], sessions_: list[str]) -> list[Any]:
    """Everything the memo answers, asked through `tx`."""
    found: list[Any] = []
    for scope in SCOPES:
        for kind in KINDS:
            found.append(tx.items.any_active(Visibility((scope,)), kind))
            found.append(tx.items.any_active(Visibility((), (scope,)), kind))
    group = Visibility(("global", "chat:onebot:group:1"), ("user:onebot:3",))
    found += [tx.items.any_active(group, kind) for kind in KINDS]
    for chat in CHATS:
        ids = turn_ids.get(chat, [])
        for shown in (ids, ids[-3:], ids[1:], [*ids, 10**9]):
            found.append(tx.turns.any_besides([chat], shown, None))
    both = turn_ids.get(CHATS[0], []) + turn_ids.get(CHATS[1], [])
    found.append(tx.turns.any_besides(CHATS[:2], both, None))
    for user in USERS:
        found += [tx.profiles.of_user(user, True), tx.profiles.of_user(user, False)]
    found += [tx.summaries.get(session) for session in sessions_]
    found += windows(tx, turn_ids, sessions_)
    return found


def windows(tx: SqliteTx, turn_ids: dict[str, list[int]], sessions_: list[str]) -> list[Any]:
    """Prompt windows of the latest sessions (from their tails), as the exact rows: a value
    of another type (5 for 5.0) is a difference."""
    ids = sorted(i for listed in turn_ids.values() for i in listed)
    newest = ids[-1] if ids else 1
    middle = ids[len(ids) // 2] if ids else 0
    found: list[Any] = []
    for session in list(dict.fromkeys(reversed(sessions_)))[:6]:
        for before, limit, after in (
            (newest + 1, 4, 0),
            (newest + 1, 30, 0),
            (newest, 3, 0),
            (10**9, 2, middle),
        ):
            rows = tx.turns.window(session, before, limit, after)._rows
            found.append([tuple((type(v), v) for v in row) for row in rows])
    return found


def compare(store: SqliteStore, turn_ids: dict[str, list[int]], sessions_: list[str]) -> None:
    """The memo's answers and SQL's, in one transaction (the memo asked twice: a miss, a hit)."""

    def both(tx: SqliteTx) -> tuple[list[Any], list[Any]]:
        plain = SqliteTx(store.db.conn)  # no memo: every answer by SQL
        return answers(plain, turn_ids, sessions_), answers(tx, turn_ids, sessions_)

    for _ in range(2):
        ((by_sql, by_memo),) = run(store, both, write=False)
        assert by_memo == by_sql


def item(rng: random.Random, n: int) -> MemoryItem:
    return MemoryItem(
        id=f"m_{n}",
        scope=rng.choice(SCOPES),
        kind=rng.choice(["procedure", "fact", "preference"]),
        content=f"item {n}",
        sensitivity=rng.choice(["public", "private"]),
        created_at=float(n),
        updated_at=float(n),
    )


@pytest.mark.parametrize("seed", range(6))
def test_the_memo_answers_as_sql_does_after_every_kind_of_change(
    store: SqliteStore, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    turn_ids: dict[str, list[int]] = {}
    items: dict[str, MemoryItem] = {}
    entries: list[str] = []
    session_ids: list[str] = []
    other = sqlite3.connect(tmp_path / "nahida.db", isolation_level=None)  # another process's
    for step in range(160):
        chat = rng.choice(CHATS)
        action = rng.random()
        if action < 0.35:  # a turn (a user turn may open a session)
            role = rng.choice(["user", "user", "assistant", "tool"])
            turn = NewTurn(  # every column a window reads, of the types SQLite may change
                chat=chat,
                role=role,
                content=f"话 {step}",
                time=rng.choice([1000.0 + step, 1000 + step]),
                speaker=rng.choice([None, "onebot:3"]),
                speaker_name=rng.choice([None, "小明"]),
                message_id=rng.choice([None, f"m{step}", step]),  # type: ignore[arg-type]
                tool_calls=rng.choice([None, [{"name": "search"}]]),
                addressed=rng.choice([True, False]),
                error=rng.choice([None, "boom"]),
            )

            def record(tx: SqliteTx, turn: NewTurn = turn) -> Any:
                return sessions.record(tx, turn, index_text(turn.content))

            (stored,) = run(store, record)
            if stored is not None:
                turn_ids.setdefault(chat, []).append(stored.id)
                session_ids.append(stored.session_id)
        elif action < 0.42 and turn_ids.get(chat):  # forget a turn (hide it)
            hidden = rng.choice(turn_ids[chat])
            run(store, lambda tx, hidden=hidden: tx.turns.hide([hidden], [], "m_gone"))
        elif action < 0.45 and session_ids:  # delete a session (its turns by foreign key)
            session = rng.choice(session_ids)
            run(store, lambda tx, session=session: tx.sessions.delete(session))
        elif action < 0.6:  # an item
            new = item(rng, step)
            items[new.id] = new
            run(store, lambda tx, new=new: tx.items.add(new, index_text(new.content)))
        elif action < 0.7 and items:  # archive, revive, or move an item
            before = items[rng.choice(sorted(items))]
            after = replace(
                before,
                status=rng.choice(["active", "archived", "superseded"]),
                sensitivity=rng.choice(["public", "private"]),
            )
            items[after.id] = after
            run(store, lambda tx, b=before, a=after: tx.items.change(b, a, None))
        elif action < 0.78:  # a profile bullet, or one archived
            if entries and rng.random() < 0.4:
                gone = rng.choice(entries)
                run(store, lambda tx, gone=gone: tx.profiles.set_status(gone, "archived", 1.0))
            else:
                entry = ProfileEntry(
                    id=f"p_{step}",
                    user=rng.choice(USERS),
                    section="基础特征",
                    text=f"bullet {step}",
                    sensitivity=rng.choice(["public", "private"]),
                    created_at=float(step),
                )
                entries.append(entry.id)
                run(store, lambda tx, entry=entry: tx.profiles.add(entry, "bullet"))
        elif action < 0.84 and session_ids:  # a warm summary written
            session = rng.choice(session_ids)
            summary = WarmSummary(session, chat, f"summary {step}", updated_at=float(step))
            run(store, lambda tx, s=summary: tx.summaries.put(s))
        elif action < 0.92:  # writes that fail after changing things: rolled back
            # the first rolls back the batch's transaction, the second (when the batch runs
            # again, each write apart) only its savepoint
            failing = [
                (item(rng, 10_000 + step + k), NewTurn(chat, "user", f"失败 {k}", 2000.0 + step))
                for k in range(2)
            ]

            def fails(tx: SqliteTx, new: MemoryItem, turn: NewTurn) -> None:
                tx.items.add(new, "x")
                sessions.record(tx, turn, index_text(turn.content))
                answers(tx, turn_ids, session_ids)  # read what it changed into the memo
                raise Boom

            def asks(tx: SqliteTx) -> list[Any]:
                return answers(tx, turn_ids, session_ids)

            first, second = (partial(fails, new=new, turn=turn) for new, turn in failing)
            outcomes = run(store, asks, first, asks, second, asks)
            assert isinstance(outcomes[1], Boom) and isinstance(outcomes[3], Boom)
            assert outcomes[0] == outcomes[2] == outcomes[4]
        else:  # another connection commits (the CLI, a second process)
            if turn_ids.get(chat) and rng.random() < 0.5:
                hidden = rng.choice(turn_ids[chat])
                other.execute("UPDATE turns SET hidden_by = 'm_cli' WHERE id = ?", (hidden,))
            else:
                new = item(rng, 20_000 + step)
                other.execute(
                    "INSERT INTO memory_items (id, scope, kind, content, sensitivity, source,"
                    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'import', 0, 0)",
                    (new.id, new.scope, new.kind, new.content, new.sensitivity),
                )
        compare(store, turn_ids, session_ids)
    other.close()
    assert store.db.memo.hits > store.db.memo.misses  # it did answer from memory


def test_a_chat_with_more_turns_than_listed_still_answers_exactly(store: SqliteStore) -> None:
    chat = CHATS[0]
    ids: list[int] = []
    for n in range(TURN_IDS + 5):
        turn = NewTurn(chat=chat, role="user", content=f"话 {n}", time=1000.0 + n)
        (stored,) = run(store, lambda tx, turn=turn: sessions.record(tx, turn, None))
        ids.append(stored.id)
        compare(store, {chat: ids}, [])
    assert store.db.memo._kinds["chat"][chat] is MORE
    # as many shown as it has: the memo cannot tell, SQL answers
    (answer,) = run(store, lambda tx: tx.turns.any_besides([chat], ids, None), write=False)
    assert answer is False


def test_raw_sql_on_the_connection_is_followed(store: SqliteStore) -> None:
    turn = NewTurn(chat=CHATS[0], role="user", content="你好", time=1000.0)
    (first,) = run(store, lambda tx: sessions.record(tx, turn, None))
    shown = [first.id]
    (before,) = run(store, lambda tx: tx.turns.any_besides(CHATS[:1], shown, None))
    assert before is False

    def insert(conn: sqlite3.Connection) -> None:  # a test's or a script's SQL, not a unit
        conn.execute(
            "INSERT INTO turns (session_id, chat, role, content, time) VALUES (?, ?, 'user',"
            " 'raw', 1001.0)",
            (first.session_id, CHATS[0]),
        )

    store.db.run_batch([Job(insert, (), True)])
    (after,) = run(store, lambda tx: tx.turns.any_besides(CHATS[:1], shown, None))
    assert after is True


def test_only_one_statement_adds_turns() -> None:
    """A turn added elsewhere would not reach the memo (there is no INSERT trigger on turns:
    it would make SQLite journal every insert's pages)."""
    root = Path(__file__).resolve().parents[2] / "nahida"
    found = [
        path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        for line in path.read_text("utf-8").splitlines()
        if "INSERT INTO turns (" in line
    ]
    assert found == ["memory/store/sqlite/history.py"]


def test_a_prompt_window_is_read_from_its_sessions_tail(store: SqliteStore) -> None:
    """After the first window of a session, the next ones need no SQL: the turns added since
    come back from their own INSERT."""
    conn = store.db.conn
    read: list[int] = []
    for n in range(8):
        turn = NewTurn(chat=CHATS[0], role="user", content=f"话 {n}", time=1000.0 + n)

        def record(tx: SqliteTx, turn: NewTurn = turn) -> Any:
            stored = sessions.record(tx, turn, None)
            before = conn.statements
            window = tx.turns.window(stored.session_id, stored.id, 3)
            read.append(conn.statements - before)
            return [row[4] for row in window._rows]

        (shown,) = run(store, record)
        assert shown == [f"话 {k}" for k in range(max(0, n - 3), n)]
    assert read == [1] + [0] * 7


def test_tails_stay_within_their_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tails, "ENTRIES", 3)
    monkeypatch.setattr(tails, "CHARS", 100)
    monkeypatch.setattr(tails, "BUDGET", 12)

    def row(turn_id: int, text: str = "x" * 10) -> tuple[Any, ...]:
        return (turn_id, "s", "onebot:group:1", "user", text)

    kept = Tails()
    for session in "abcd":
        kept.keep(session, [row(1)], 0, 4)
    assert [s for s in "abcd" if s in kept] == ["b", "c", "d"]  # the oldest went first
    assert kept.window("b", 10, 5, 0) == [row(1)]  # read: now the most recent
    kept.keep("e", [row(1)], 0, 4)
    assert [s for s in "bcde" if s in kept] == ["b", "d", "e"]
    kept.keep("f", [row(1, "y" * 85)], 0, 4)  # over the characters: the least recent go
    assert [s for s in "bdef" if s in kept] == ["e", "f"]
    # a tail keeps as many rows as it was read with; a window reaching below them is not answered
    for turn_id in range(2, 7):
        kept.added("e", row(turn_id, ""))
    assert [r[0] for r in kept.window("e", 10, 4, 0) or []] == [3, 4, 5, 6]
    assert kept.window("e", 10, 5, 0) is None
    assert kept.window("e", 10, 5, 2) == kept.window("e", 10, 4, 0)  # all after 2 are held
    kept.added("e", row(6))  # not after the last: the tail is dropped, never wrong
    assert "e" not in kept
    # all tails' rows stay within BUDGET
    kept.keep("g", [row(n, "") for n in range(1, 7)], 0, 6)
    kept.added("g", row(7, ""))
    assert [r[0] for r in kept.window("g", 10, 6, 0) or []] == [2, 3, 4, 5, 6, 7]
    kept.keep("h", [row(n, "") for n in range(1, 7)], 0, 6)
    assert [s for s in "fgh" if s in kept] == ["g", "h"]  # 1 + 6 + 6 rows: over 12
