"""History import from JSONL: counts, idempotence, bad lines, sessions split on gaps, indexing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nahida.memory import ImportReport, Query, Viewer, recall
from nahida.memory.history.importer import import_lines as import_into
from nahida.memory.store.sqlite import SqliteStore
from tests.helpers import History

CHAT = "qq:group:100"
SPLIT = 720 * 60.0
KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz123456"


@pytest.fixture
def db(store: SqliteStore) -> History:
    return History(store)


def import_lines(db: History, lines: list[str], idle_split: float) -> ImportReport:
    return import_into(db.store, lines, idle_split)


def line(text: str, mid: str, time: str, **extra: Any) -> str:
    record = {
        "chat": extra.pop("chat", CHAT),
        "user": "42",
        "name": "Alice",
        "text": text,
        "time": time,
        "message_id": mid,
        "role": "user",
    }
    record.update(extra)
    return json.dumps(record, ensure_ascii=False)


GOOD = [
    line("我们周末去杭州爬山吧", "1", "2024-04-01T09:00:00+08:00"),
    line("好呀，我来订票", "2", "2024-04-01T09:01:00+08:00", user="43", name="Bob"),
    line("票订好了", "3", "2024-04-01T09:05:00+08:00", role="assistant", user=None, name=None),
    line("the hike was great", "4", "2024-04-03T10:00:00Z"),  # two days later: a new session
    line("photos are up", "5", "2024-04-03T10:02:00"),  # no offset: UTC
]


def test_turns_are_imported_like_live_messages(db: History) -> None:
    report = import_lines(db, GOOD, SPLIT)
    assert (report.imported, report.duplicates, report.bad) == (5, 0, [])
    assert report.turns_per_second > 0
    sessions = db.sessions(CHAT, 10)
    assert sorted(s.turn_count for s in sessions) == [2, 3]
    first = min(sessions, key=lambda s: s.created_at)
    turns = db.turns(first.id)
    assert [(t.role, t.speaker, t.speaker_name, t.message_id) for t in turns] == [
        ("user", "qq:42", "Alice", "1"),
        ("user", "qq:43", "Bob", "2"),
        ("assistant", None, None, "3"),
    ]
    assert first.title == "我们周末去杭州爬山吧"
    assert turns[0].time.isoformat() == "2024-04-01T01:00:00+00:00"
    query = Query("杭州爬山", Viewer.parse(CHAT), tz=None)
    hits = db.store.read_sync(recall.search, query, recall.plan(query))
    assert hits[0].message_ids == ["1"]


def test_importing_again_changes_nothing(db: History) -> None:
    import_lines(db, GOOD, SPLIT)
    again = import_lines(db, [*GOOD, GOOD[0]], SPLIT)
    assert (again.imported, again.duplicates, again.bad) == (0, 6, [])
    count = db.sql("SELECT count(*) FROM turns")[0][0]
    fts = db.sql("SELECT count(*) FROM turns_fts")[0][0]
    assert (count, fts) == (5, 5)


def test_a_repeated_message_id_in_one_file_is_a_duplicate(db: History) -> None:
    report = import_lines(db, [GOOD[0], GOOD[1], GOOD[0]], SPLIT)
    assert (report.imported, report.duplicates) == (2, 1)


def test_bad_lines_are_reported_with_their_number_and_skipped(db: History) -> None:
    lines = [
        GOOD[0],
        "{not json",
        "",  # blank lines are skipped silently
        json.dumps(["a", "list"]),
        line("x", "b1", "2024-04-01T10:00:00Z", chat="qq:channel:1"),
        line("x", "b2", "yesterday"),
        line("x", "b3", "2024-04-01T10:00:00Z", role="system"),
        line("", "b4", "2024-04-01T10:00:00Z"),
        line("x", "", "2024-04-01T10:00:00Z"),
        line("x", "b6", "2024-04-01T10:00:00Z", user=None),
        GOOD[1],
    ]
    report = import_lines(db, lines, SPLIT)
    assert (report.imported, report.duplicates) == (2, 0)
    errors = {bad.line: bad.error for bad in report.bad}
    assert sorted(errors) == [2, 4, 5, 6, 7, 8, 9, 10]
    assert errors[2].startswith("not JSON")
    assert errors[4] == "not a JSON object"
    assert errors[5].startswith("chat:")
    assert "ISO-8601" in errors[6]
    assert "role" in errors[7]
    assert errors[8] == "text is empty"
    assert errors[9] == "message_id is empty"
    assert errors[10] == "user is missing"
    assert report.to_json()["bad"] == 8
    assert report.to_json()["errors"][0] == {"line": 2, "error": errors[2]}


def test_an_assistant_turn_before_any_user_turn_opens_no_session(db: History) -> None:
    orphan = line("hello, I am the bot", "0", "2024-03-31T08:00:00Z", role="assistant")
    report = import_lines(db, [orphan, GOOD[0]], SPLIT)
    assert report.imported == 1
    assert [(b.line, b.error) for b in report.bad] == [
        (1, "assistant turn before any user turn of its chat")
    ]


def test_sessions_split_on_the_idle_gap_in_time_order(db: History) -> None:
    def at(minutes: int, mid: str) -> str:
        hour, minute = divmod(minutes, 60)
        return line(f"message {mid}", mid, f"2024-04-01T{hour:02d}:{minute:02d}:00Z")

    shuffled = [at(0, "a"), at(200, "d"), at(10, "b"), at(20, "c"), at(210, "e")]
    report = import_lines(db, shuffled, 60 * 60.0)  # a gap over an hour starts a session
    assert report.imported == 5
    sessions = sorted(db.sessions(CHAT, 10), key=lambda s: s.created_at)
    contents = [[t.message_id for t in db.turns(s.id)] for s in sessions]
    assert contents == [["a", "b", "c"], ["d", "e"]]
    no_split = import_lines(db, [line("later", "z", "2024-04-02T12:00:00Z")], 0.0)
    assert no_split.imported == 1
    assert len(db.sessions(CHAT, 10)) == 2  # 0 never splits


def test_unreadable_lines_are_reported_and_the_rest_imported(db: History, tmp_path: Any) -> None:
    """Issue 9: a non-UTF-8 line, a lone surrogate and an over-long line are bad lines, not a
    failed import; the line limit is read in pieces (a huge line never sits in memory)."""
    from nahida.memory.history.importer import import_file

    path = tmp_path / "mixed.jsonl"
    good = [line(f"第{n}条消息", str(n), "2024-04-01T09:00:00Z") for n in range(3)]
    surrogate = line("\\ud800 broken", "s", "2024-04-01T09:00:00Z").replace("\\\\ud800", "\\ud800")
    huge = line("x" * 5000, "h", "2024-04-01T09:00:00Z")
    path.write_bytes(
        b"\n".join(
            [
                good[0].encode(),
                b'{"chat": "\xff\xfe"}',
                surrogate.encode(),
                huge.encode(),
                good[1].encode(),
                good[2].encode(),
            ]
        )
        + b"\n"
    )
    report = import_file(db.store, path, SPLIT, max_line_bytes=1000)
    assert report.imported == 3
    assert [(b.line, b.error.split(" (")[0]) for b in report.bad] == [
        (2, "not UTF-8"),
        (3, "text is not valid Unicode"),
        (4, "longer than 1,000 bytes"),
    ]


def test_a_full_user_key_is_taken_as_it_is(db: History) -> None:
    lines = [
        line("hi", "1", "2024-04-01T09:00:00Z", chat="onebot:group:7", user="onebot:1"),
        line("yo", "2", "2024-04-01T09:01:00Z", chat="onebot:group:7", user="2"),
        line("no", "3", "2024-04-01T09:02:00Z", chat="onebot:group:7", user="lark:3"),
    ]
    report = import_lines(db, lines, SPLIT)
    assert report.imported == 2 and [b.line for b in report.bad] == [3]
    (session,) = db.sessions("onebot:group:7")
    assert [t.speaker for t in db.turns(session.id)] == ["onebot:1", "onebot:2"]


def test_imported_turns_are_read_for_memories_like_live_ones(db: History) -> None:
    from nahida.memory import Viewer

    lines = [
        line("我喜欢吃榴莲", "1", "2024-04-01T09:00:00Z"),
        line("今天天气不错", "2", "2024-04-01T09:01:00Z"),
        line(f"记住我的key是 {KEY}", "3", "2024-04-01T09:02:00Z"),
    ]
    assert import_into(db.store, lines[:1], SPLIT).memories == 0  # history only, by default
    report = import_into(db.store, lines, SPLIT, extract=True)
    assert (report.imported, report.duplicates, report.memories) == (2, 1, 0)
    report = import_into(
        db.store, [line("我喜欢吃榴莲", "4", "2024-04-01T09:03:00Z")], SPLIT, extract=True
    )
    assert (report.imported, report.memories) == (1, 1)
    (item,) = db.items(Viewer(scopes=("user:qq:42",)))
    assert (item.content, item.source, item.sensitivity) == ("喜欢吃榴莲", "rule_extract", "public")
    assert item.evidence[0].message_id == "4" and item.evidence[0].turn_id is not None
    stored = [t.content for s in db.sessions(CHAT) for t in db.turns(s.id)]
    assert f"记住我的key是 {KEY}" not in stored and "记住我的key是 [REDACTED:openai_key]" in stored
