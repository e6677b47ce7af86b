"""Sessions and turns: lazy creation, titles, splitting, resume, search, cleanup, migrations."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from nahida.errors import StorageError
from nahida.memory import MemoryService, NewTurn
from nahida.memory.history.sessions import Sessions
from nahida.memory.store.sqlite import SqliteStore, migrations
from nahida.memory.store.sqlite.connection import Connection, connect, truncate_log

CHAT = "test:group:g1"
T0 = 1_780_000_000.0


def user(text: str, at: float, message_id: str | None = None, chat: str = CHAT) -> NewTurn:
    return NewTurn(chat, "user", text, at, speaker="test:u1", message_id=message_id)


def bot(text: str, at: float, chat: str = CHAT) -> NewTurn:
    return NewTurn(chat, "assistant", text, at)


async def test_session_written_with_first_user_message_titled_by_it(
    memory: MemoryService,
) -> None:
    sessions = memory.sessions
    assert await sessions.latest(None, 10) == []
    assert await sessions.record(bot("hello", T0)) is None  # no session from a bot turn
    long = "今天我们来讨论一下这个季度的产品路线图以及每个人负责的部分，还有下周的发布计划安排"
    turn = await sessions.record(user(long, T0, "a1"))
    assert turn is not None
    assert re.fullmatch(r"s_\d{8}_\d{4}_[0-9a-f]{4}", turn.session_id)
    session = await sessions.get(turn.session_id)
    assert session is not None
    assert session.title == long[:40]
    assert session.turn_count == 1


async def test_a_message_is_not_stored_twice_but_a_reused_id_is_a_new_one(
    memory: MemoryService,
) -> None:
    sessions = memory.sessions
    assert await sessions.record(user("one", T0, "x")) is not None
    assert await sessions.record(user("one", T0, "x")) is None  # delivered twice
    assert await sessions.record(user("one", T0 + 5, "x")) is None  # again, without its time
    assert await sessions.record(user("two", T0 + 60, "x")) is not None  # the id used again
    session = (await sessions.latest(CHAT, 5))[0]
    assert [t.content for t in await sessions.turns(session.id)] == ["one", "two"]


async def test_a_message_never_answered_is_taken_up_when_it_comes_again(
    memory: MemoryService,
) -> None:
    sessions = memory.sessions
    asked = user("question", T0, "q")
    first = await sessions.record_user_turn(asked, 0)
    assert first is not None and not first.again
    again = await sessions.record_user_turn(asked, 2)  # the bot stopped before it answered
    assert again is not None and again.again and again.turn.id == first.turn.id
    assert await sessions.delivery_counts() == {"pending": 1}
    await sessions.record_reply(again.turn, replace(bot("lost", T0 + 1), error="closed"))
    assert await sessions.delivery_counts() == {"undelivered": 1}
    third = await sessions.record_user_turn(asked, 2)  # never delivered: answered again
    assert third is not None and third.again and [t.content for t in third.hot] == []
    await sessions.record_reply(third.turn, bot("answer", T0 + 2))
    assert await sessions.delivery_counts() == {"delivered": 1}
    assert await sessions.record_user_turn(asked, 2) is None  # answered: a duplicate now

    observed = replace(user("talk", T0 + 3, "t"), addressed=False)
    assert await sessions.record_user_turn(observed, 0) is not None
    assert await sessions.record_user_turn(observed, 0) is None
    assert await sessions.record_user_turn(replace(observed, addressed=True), 0) is None
    session = (await sessions.latest(CHAT, 5))[0]
    turns = [(t.role, t.content) for t in await sessions.turns(session.id)]
    assert turns == [
        ("user", "question"),
        ("assistant", "lost"),
        ("assistant", "answer"),
        ("user", "talk"),
    ]
    assert await sessions.deliveries("undelivered") == []


async def test_add_stores_like_record_and_answers_only_whether_it_did(
    memory: MemoryService,
) -> None:
    sessions = memory.sessions
    assert await sessions.add(bot("no session yet", T0)) is False
    assert await sessions.add(user("one", T0, "x")) is True
    assert await sessions.add(user("one", T0, "x")) is False  # a known message
    assert await sessions.add(bot("a reply", T0 + 2)) is True
    session = (await sessions.latest(CHAT, 5))[0]
    turns = await sessions.turns(session.id)
    assert [(t.role, t.content) for t in turns] == [("user", "one"), ("assistant", "a reply")]


async def test_new_then_message_opens_a_new_session_and_resume_goes_back(
    memory: MemoryService,
) -> None:
    sessions = memory.sessions
    first = await sessions.record(user("first topic", T0, "1"))
    await sessions.start_new(CHAT)
    second = await sessions.record(user("second topic", T0 + 10, "2"))
    assert first and second and first.session_id != second.session_id
    last = await sessions.resolve(CHAT, "last")
    assert last is not None and last.id == first.session_id
    await sessions.resume(CHAT, first.session_id)
    third = await sessions.record(user("back again", T0 + 20, "3"))
    assert third is not None and third.session_id == first.session_id


async def test_resolve_by_suffix_is_unique_and_chat_bound(memory: MemoryService) -> None:
    sessions = memory.sessions
    turn = await sessions.record(user("hello", T0, "1"))
    assert turn is not None
    suffix = turn.session_id[-4:]
    found = await sessions.resolve(CHAT, suffix)
    assert found is not None and found.id == turn.session_id
    assert await sessions.resolve("test:group:other", suffix) is None
    assert await sessions.resolve(CHAT, "%") is None


async def test_idle_gap_splits_sessions(store: SqliteStore) -> None:
    sessions = Sessions(store, idle_split=3600.0)
    a = await sessions.record(user("morning", T0, "1"))
    b = await sessions.record(user("still morning", T0 + 60, "2"))
    c = await sessions.record(user("next day", T0 + 86_400, "3"))
    assert a and b and c
    assert a.session_id == b.session_id != c.session_id


async def test_search_finds_titles_and_contents_chinese_and_english(
    memory: MemoryService,
) -> None:
    sessions = memory.sessions
    await sessions.record(user("周末去爬山吧", T0, "1"))
    await sessions.record(bot("好主意，记得带水", T0 + 1))
    await sessions.start_new(CHAT)
    await sessions.record(user("deploy the release tonight", T0 + 100, "2"))
    await sessions.record(user("其他群的爬山计划", T0, "o1", chat="test:group:other"))
    hits = await sessions.search("带水", CHAT, 10)
    assert [s.title for s, _ in hits] == ["周末去爬山吧"]
    assert "带水" in hits[0][1]
    assert [s.title for s, _ in await sessions.search("release", CHAT, 10)] == [
        "deploy the release tonight"
    ]
    everywhere = {s.chat for s, _ in await sessions.search("爬山", None, 10)}
    assert everywhere == {CHAT, "test:group:other"}
    assert await sessions.search('"NEAR( *', CHAT, 10) == []


async def test_delete_and_cleanup_of_empty_sessions(
    memory: MemoryService, store: SqliteStore
) -> None:
    sessions = memory.sessions
    turn = await sessions.record(user("bye", T0, "1"))
    assert turn is not None
    assert await sessions.delete(turn.session_id)
    assert await sessions.get(turn.session_id) is None
    assert await sessions.search("bye", None, 5) == []
    assert store.write_sync(lambda tx: tx.sessions.create("s_x", CHAT, "empty", 0.0))
    assert await sessions.cleanup_empty() == 1


def test_migrations_are_recorded_once_and_failures_roll_back() -> None:
    conn = connect(":memory:")
    assert migrations.migrate(conn) == [m.name for m in migrations.MIGRATIONS]
    assert migrations.migrate(conn) == []

    def broken(c: Connection) -> None:
        c.execute("CREATE TABLE half_done (x)")
        c.execute("THIS IS NOT SQL")

    with pytest.raises(StorageError, match="9999_broken"):
        migrations.migrate(conn, [migrations.Migration("9999_broken", broken)])
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "half_done" not in tables
    assert "9999_broken" not in migrations.applied(conn)
    conn.close()


def test_history_from_before_deliveries_keeps_its_answers_and_lets_ids_repeat(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    conn = connect(path)
    migrations.migrate(conn, [m for m in migrations.MIGRATIONS if m.name != "0015_deliveries"])
    conn.execute(
        "INSERT INTO sessions (id, chat, title, created_at, updated_at) VALUES"
        " ('s1', ?, 't', 0, 0)",
        (CHAT,),
    )
    for content, addressed in (("asked", 1), ("talk", 0)):
        conn.execute(
            "INSERT INTO turns (session_id, chat, role, content, message_id, time, addressed)"
            " VALUES ('s1', ?, 'user', ?, ?, ?, ?)",
            (CHAT, content, content, T0, addressed),
        )
    conn.commit()
    conn.close()
    store = SqliteStore(path)  # migrates: nobody recorded those answers, none is pending
    try:
        assert store.read_sync(lambda tx: tx.turns.fates()) == {"none": 1}
        again = user("asked again", T0 + 60, "asked")  # the id used again: a new message
        assert store.write_sync(lambda tx: tx.turns.add("s1", again, None)) > 0
    finally:
        store.close()


async def test_a_session_id_taken_meanwhile_is_drawn_again(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nahida.memory.history import sessions as module

    first = await memory.sessions.record(user("hello", T0, "1"))
    assert first is not None
    drawn = iter([first.session_id, "s_20260101_0000_beef"])
    monkeypatch.setattr(module, "new_session_id", lambda at: next(drawn))
    second = await memory.sessions.record(user("other chat", T0, "2", chat="test:group:g2"))
    assert second is not None and second.session_id == "s_20260101_0000_beef"
    assert [t.content for t in await memory.sessions.turns(first.session_id)] == ["hello"]


def test_memory_opened_on_older_history_redacts_the_secrets_in_it_once(tmp_path: Path) -> None:
    from nahida.config import Config
    from nahida.memory import open_memory
    from nahida.memory.core.tokenize import index_text
    from nahida.memory.history import sessions as units

    key = "sk-proj-abcdefghijklmnopqrstuvwxyz123456"
    path = tmp_path / "nahida.db"

    def store_as_older_versions_did(text: str, message_id: str) -> None:
        said = user(text, T0, message_id)
        store = SqliteStore(path)
        store.write_sync(units.record, said, index_text(said.content))  # not redacted
        store.close()

    def stored() -> list[str]:
        conn = connect(path)
        found = [r[0] for r in conn.execute("SELECT content FROM turns ORDER BY id")]
        found += [r[0] for r in conn.execute("SELECT body FROM turns_fts ORDER BY rowid")]
        found += [r[0] for r in conn.execute("SELECT title FROM sessions")]
        conn.close()
        return found

    def open_and_close() -> None:
        open_memory(SqliteStore(path), Config(), tmp_path / "workspace").close()

    store_as_older_versions_did(f"{key} 是我的key", "1")  # the session's title is cut from it
    assert sum("abcdefghij" in value for value in stored()) == 3  # the turn, its index, the title
    open_and_close()
    redacted = stored()
    assert all(key not in value and "abcdefghij" not in value for value in redacted), redacted
    assert redacted == [
        "[REDACTED:openai_key] 是我的key",
        "redacted openai key 是 我 的 key",
        "[REDACTED:openai_key] 是我的key",  # the title, cut again from the redacted turn
    ]
    store_as_older_versions_did(f"again {key}", "2")
    open_and_close()  # done once: what came later is no older history
    assert stored()[:2] == [redacted[0], f"again {key}"]


def test_a_failed_unit_leaves_no_read_snapshot_behind(store: SqliteStore) -> None:
    """Issue 9 (a chat slow forever after an import): a unit that raises with a cursor still
    open must not keep its statement, and so an old snapshot, alive through the exception."""
    for n in range(200):
        store.write_sync(lambda tx, n=n: tx.sessions.create(f"s_{n}", CHAT, "t", T0 + n))

    def fails_midway(tx: object) -> None:
        rows = store.db.conn.execute("SELECT * FROM sessions")
        rows.fetchone()
        raise RuntimeError("a bug in a unit")

    kept = []
    for write in (False, True):
        try:
            store.db.call(fails_midway, write=write)
        except RuntimeError as exc:
            kept.append(exc)  # the caller holds on to it, as a logged future would
        other = connect(store.path)
        other.execute("PRAGMA busy_timeout = 100")
        other.execute("INSERT INTO chats (chat, last_active) VALUES (?, 0)", (f"c{write}",))
        assert truncate_log(other, wait=2.0)  # no reader left behind
        other.close()
    assert store.write_sync(lambda tx: tx.sessions.create("s_after", CHAT, "t", T0))  # no wait


def test_a_write_waits_for_another_process_longer_than_the_busy_timeout(
    store: SqliteStore,
) -> None:
    import threading

    store.db.call(lambda conn: conn.execute("PRAGMA busy_timeout = 100"))
    other = connect(store.path, vec=False)
    other.execute("BEGIN IMMEDIATE")  # an import's batch, say
    releasing = threading.Event()

    def release() -> None:
        releasing.set()
        other.execute("COMMIT")

    threading.Timer(0.6, release).start()  # six busy timeouts later
    assert store.write_sync(lambda tx: tx.sessions.create("s_waited", CHAT, "t", T0))
    assert releasing.is_set()  # it waited for the other writer instead of giving up
    other.close()


def test_the_database_counts_and_times_the_statements_it_runs(store: SqliteStore) -> None:
    before = store.db.snapshot()
    assert store.db.statement_times() == {}  # not timed until asked
    store.db.time_statements()
    for n in range(3):
        store.write_sync(lambda tx, n=n: tx.sessions.create(f"s_{n}", CHAT, "t", T0 + n))
    store.db.call(lambda conn: conn.execute("SELECT   count(*)\n FROM sessions").fetchone())
    after = store.db.snapshot()
    assert after.round_trips - before.round_trips == 4
    assert after.statements - before.statements >= 4
    times = store.db.statement_times()
    inserts = [n for sql, (n, _) in times.items() if sql.startswith("INSERT INTO sessions")]
    assert inserts == [3]
    assert times["SELECT count(*) FROM sessions"][0] == 1  # keyed by its words
    assert all(seconds >= 0 for _, seconds in times.values())


def test_a_search_without_terms_gives_the_latest_indexed_turns_as_the_fts_plan_did() -> None:
    """A search of chats without terms (a time window alone) reads the turns' index on chat and
    time, not every FTS row of the chats: the same turns as the FTS5 plan gave, in the same
    order, through hidden turns, turns without index text, several chats, moments and windows."""
    import random

    from nahida.memory.core.tokenize import index_text
    from nahida.memory.history import sessions as units
    from nahida.memory.store.sqlite import SqliteTx, fts
    from nahida.memory.store.sqlite.history import _MATCH_FROM, _turn_match
    from nahida.memory.store.values import TextSearch

    rng = random.Random(7)
    conn = connect(":memory:")
    migrations.migrate(conn)
    tx = SqliteTx(conn)
    chats = ["test:group:a", "test:group:b", "test:private:c"]
    times = rng.sample(range(100_000), 600)  # distinct: the order is the times'
    for n, at in enumerate(times):
        text = rng.choice(["去爬山", "好的", "🙂", "明天见", "painted"])
        turn = user(text, T0 + at, str(n), chat=rng.choice(chats))
        units.record(tx, turn, index_text(text) or None)
    hide = [r[0] for r in conn.execute("SELECT id FROM turns ORDER BY random() LIMIT 60")]
    tx.turns.hide(hide, [], "mem_x")
    for _ in range(200):
        chosen = rng.sample(chats, rng.randint(1, 3))
        at = T0 + rng.randrange(100_000) if rng.random() < 0.7 else None
        window = None
        if rng.random() < 0.5:
            start = T0 + rng.randrange(100_000)
            window = (start, start + rng.randrange(1, 30_000))
        search = TextSearch(None, rng.randint(1, 50), at, window)
        fts_plan = fts.ranked(
            conn, *_MATCH_FROM, fts.chats_match(None, chosen), search, _turn_match
        )
        assert tx.turns.search(chosen, search) == fts_plan
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    tx.turns.search(["test:group:a"], TextSearch(None, 10, T0 + 50_000, (T0, T0 + 90_000)))
    conn.set_trace_callback(None)
    (sql,) = [s for s in seen if not s.startswith("--")]  # the search's (values bound in it)
    assert "MATCH" not in sql
    plan = " ".join(str(tuple(r)) for r in conn.execute("EXPLAIN QUERY PLAN " + sql))
    assert "turns_by_chat_time" in plan and "TEMP B-TREE" not in plan
    conn.close()


def test_a_search_with_terms_ranks_the_ids_apart_and_finds_what_one_join_found() -> None:
    """A search with terms and no moment or window ranks FTS rowids alone and joins the best to
    their turns: the same matches, scores and order as joining every match (ties among equal
    texts included), and the turns table is read for the best `limit` only."""
    import random

    from nahida.memory.core.tokenize import index_text, query_terms, tokenize
    from nahida.memory.history import sessions as units
    from nahida.memory.store.sqlite import SqliteTx, fts
    from nahida.memory.store.sqlite.history import _MATCH_FROM, _turn_match
    from nahida.memory.store.values import TextSearch

    rng = random.Random(11)
    conn = connect(":memory:")
    migrations.migrate(conn)
    tx = SqliteTx(conn)
    chats = ["test:group:a", "test:group:b"]
    words = ["爬山", "香山", "枫叶", "周末", "painted", "fence", "咖啡", "好的"]
    for n in range(400):
        text = " ".join(rng.choices(words, k=rng.randint(1, 4)))  # many equal texts: ties
        units.record(tx, user(text, T0 + n, str(n), chat=rng.choice(chats)), index_text(text))
    for _ in range(100):
        chosen = rng.sample(chats, rng.randint(1, 2))
        terms = query_terms(tokenize(" ".join(rng.sample(words, rng.randint(1, 3)))))
        search = TextSearch(terms, rng.randint(1, 60))
        joined = fts.ranked(conn, *_MATCH_FROM, fts.chats_match(terms, chosen), search, _turn_match)
        assert tx.turns.search(chosen, search) == joined
        assert tx.turns.search(None, search) == fts.ranked(
            conn, *_MATCH_FROM, fts.chats_match(terms, None), search, _turn_match
        )
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    tx.turns.search(chats[:1], TextSearch(("爬山",), 5))
    conn.set_trace_callback(None)
    (sql,) = [s for s in seen if not s.startswith("--")]
    plan = " ".join(str(tuple(r)) for r in conn.execute("EXPLAIN QUERY PLAN " + sql))
    assert re.search(r"(CO-ROUTINE|MATERIALIZE) f", plan) and "LIMIT 5)" in sql  # ids first
    conn.close()
