"""Sessions and turns: lazy creation, titles, splitting, resume, search, cleanup, migrations."""

from __future__ import annotations

import re

import pytest

from nahida import history, migrations
from nahida.db import Database, connect
from nahida.errors import StorageError
from nahida.history import NewTurn

CHAT = "test:group:g1"
T0 = 1_780_000_000.0


def user(text: str, at: float, message_id: str | None = None, chat: str = CHAT) -> NewTurn:
    return NewTurn(chat, "user", text, at, speaker="test:u1", message_id=message_id)


def bot(text: str, at: float, chat: str = CHAT) -> NewTurn:
    return NewTurn(chat, "assistant", text, at)


def test_session_written_with_first_user_message_titled_by_it(db: Database) -> None:
    assert db.call(history.list_sessions, None, 10) == []
    assert db.call(history.record, bot("hello", T0)) is None  # no session from a bot turn
    long = "今天我们来讨论一下这个季度的产品路线图以及每个人负责的部分，还有下周的发布计划安排"
    turn = db.call(history.record, user(long, T0, "a1"))
    assert turn is not None
    assert re.fullmatch(r"s_\d{8}_\d{4}_[0-9a-f]{4}", turn.session_id)
    session = db.call(history.get_session, turn.session_id)
    assert session is not None
    assert session.title == long[:40]
    assert session.turn_count == 1


def test_duplicate_message_id_is_not_stored_twice(db: Database) -> None:
    assert db.call(history.record, user("one", T0, "x")) is not None
    assert db.call(history.record, user("one again", T0 + 1, "x")) is None
    session = db.call(history.list_sessions, CHAT, 5)[0]
    assert [t.content for t in db.call(history.session_turns, session.id)] == ["one"]


def test_new_then_message_opens_a_new_session_and_resume_goes_back(db: Database) -> None:
    first = db.call(history.record, user("first topic", T0, "1"))
    db.call(history.start_new, CHAT)
    second = db.call(history.record, user("second topic", T0 + 10, "2"))
    assert first and second and first.session_id != second.session_id
    last = db.call(history.resolve_session, CHAT, "last")
    assert last is not None and last.id == first.session_id
    db.call(history.resume, CHAT, first.session_id)
    third = db.call(history.record, user("back again", T0 + 20, "3"))
    assert third is not None and third.session_id == first.session_id


def test_resolve_by_suffix_is_unique_and_chat_bound(db: Database) -> None:
    turn = db.call(history.record, user("hello", T0, "1"))
    assert turn is not None
    suffix = turn.session_id[-4:]
    found = db.call(history.resolve_session, CHAT, suffix)
    assert found is not None and found.id == turn.session_id
    assert db.call(history.resolve_session, "test:group:other", suffix) is None
    assert db.call(history.resolve_session, CHAT, "%") is None


def test_idle_gap_splits_sessions(db: Database) -> None:
    a = db.call(history.record, user("morning", T0, "1"), 3600.0)
    b = db.call(history.record, user("still morning", T0 + 60, "2"), 3600.0)
    c = db.call(history.record, user("next day", T0 + 86_400, "3"), 3600.0)
    assert a and b and c
    assert a.session_id == b.session_id != c.session_id


def test_search_finds_titles_and_contents_chinese_and_english(db: Database) -> None:
    db.call(history.record, user("周末去爬山吧", T0, "1"))
    db.call(history.record, bot("好主意，记得带水", T0 + 1))
    db.call(history.start_new, CHAT)
    db.call(history.record, user("deploy the release tonight", T0 + 100, "2"))
    db.call(history.record, user("其他群的爬山计划", T0, "o1", chat="test:group:other"))
    hits = db.call(history.search_sessions, "带水", CHAT, 10)
    assert [s.title for s, _ in hits] == ["周末去爬山吧"]
    assert "带水" in hits[0][1]
    assert [s.title for s, _ in db.call(history.search_sessions, "release", CHAT, 10)] == [
        "deploy the release tonight"
    ]
    everywhere = {s.chat for s, _ in db.call(history.search_sessions, "爬山", None, 10)}
    assert everywhere == {CHAT, "test:group:other"}
    assert db.call(history.search_sessions, '"NEAR( *', CHAT, 10) == []


def test_delete_and_cleanup_of_empty_sessions(db: Database) -> None:
    turn = db.call(history.record, user("bye", T0, "1"))
    assert turn is not None
    assert db.call(history.delete_session, turn.session_id)
    assert db.call(history.get_session, turn.session_id) is None
    assert db.call(history.search_sessions, "bye", None, 5) == []

    def orphan(conn: history.Connection) -> None:
        conn.execute(
            "INSERT INTO sessions (id, chat, title, created_at, updated_at)"
            " VALUES ('s_x', ?, 'empty', 0, 0)",
            (CHAT,),
        )

    db.call(orphan)
    assert db.call(history.cleanup_empty) == 1


def test_migrations_are_recorded_once_and_failures_roll_back() -> None:
    conn = connect(":memory:")
    assert migrations.migrate(conn) == [m.name for m in migrations.MIGRATIONS]
    assert migrations.migrate(conn) == []

    def broken(c: history.Connection) -> None:
        c.execute("CREATE TABLE half_done (x)")
        c.execute("THIS IS NOT SQL")

    with pytest.raises(StorageError, match="9999_broken"):
        migrations.migrate(conn, [migrations.Migration("9999_broken", broken)])
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "half_done" not in tables
    assert "9999_broken" not in migrations.applied(conn)
    conn.close()
