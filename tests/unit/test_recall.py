"""Recall ranking: stemming, question words, speakers, neighbours, time windows, the moment."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from nahida.memory import Hit, NewTurn, Query, Tuning, Viewer, recall
from nahida.memory.core.tokenize import index_text, query_terms, tokenize
from nahida.memory.history import sessions
from nahida.memory.service import Recall
from nahida.memory.store.sqlite import SqliteStore, SqliteTx, migrations
from nahida.memory.store.sqlite.connection import Connection, connect
from nahida.memory.store.sqlite.fts import match, scoped_match, scopes_text

GROUP = "test:group:g1"
OTHER = "test:group:g2"
T0 = datetime(2024, 4, 10, 12, 0, tzinfo=UTC).timestamp()
DAY = 86_400.0


def say(
    db: SqliteStore, text: str, at: float, who: str = "alice", chat: str = GROUP, mid: str = ""
) -> None:
    turn = NewTurn(
        chat, "user", text, at, speaker=f"test:{who}", speaker_name=who.title(), message_id=mid
    )
    assert db.write_sync(sessions.record, turn, index_text(text), 0.0) is not None


def search(db: SqliteStore, query: Query, tuning: Tuning = recall.TUNING) -> list[Hit]:
    return db.read_sync(recall.search, query, recall.plan(query, tuning), tuning)


def ask(
    db: SqliteStore, text: str, *, at: float | None = None, chat: str = GROUP, **tuning: object
) -> list[Hit]:
    query = Query(text, Viewer.parse(chat, "alice"), at=at, limit=10, tz=UTC)
    return search(db, query, Tuning(**tuning))  # type: ignore[arg-type]


def match_query(text: str) -> str | None:
    return match(query_terms(tokenize(text)))


def texts(hits: list[Hit]) -> list[str]:
    return [h.text for h in hits]


def test_english_is_stemmed_the_same_way_in_index_and_query(store: SqliteStore) -> None:
    say(store, "I painted a sunrise over the lake", T0, mid="1")
    say(store, "Lunch was fine", T0 + 1, mid="2")
    found = ["I painted a sunrise over the lake"]
    assert texts(ask(store, "paintings", neighbours=0.0)) == found
    assert texts(ask(store, "What has she been painting?", neighbours=0.0)) == found


def test_question_words_do_not_count() -> None:
    assert match_query("When did Caroline go where?") == '"caroline" OR "go"'
    assert match_query("你表哥的电话号码是多少？") == '"表哥" OR "电话" OR "号码" OR "电话号码"'


def test_a_named_speaker_own_turns_come_before_mentions_of_them(store: SqliteStore) -> None:
    say(store, "Bob, did you finish the adoption research?", T0, who="alice", mid="1")
    say(store, "Yes! I researched adoption agencies all week", T0 + 1, who="bob", mid="2")
    say(store, "Alice told me Bob likes adoption stories", T0 + 2, who="carol", mid="3")
    hits = ask(store, "What did Bob research about adoption?")
    assert hits[0].message_ids == ["2"]
    plain = ask(store, "What did Bob research about adoption?", speaker=0.0)
    assert plain[0].message_ids != ["2"]


def test_the_turn_after_a_match_comes_with_it(store: SqliteStore) -> None:
    say(store, "How did the charity race go?", T0, who="bob", mid="1")
    say(store, "Great, we raised money for mental health", T0 + 1, who="alice", mid="2")
    for n in range(8):
        say(store, f"unrelated chatter number {n}", T0 + 10 + n, who="bob", mid=f"x{n}")
    with_context = [h.message_ids[0] for h in ask(store, "charity race")]
    assert with_context[:2] == ["1", "2"]
    assert [h.message_ids[0] for h in ask(store, "charity race", neighbours=0.0)] == ["1"]


def test_neighbours_stay_in_the_session_the_chat_and_before_the_moment(store: SqliteStore) -> None:
    say(store, "the quarterly budget review", T0, mid="1")
    say(store, "secret follow-up in the same chat but later", T0 + 100, mid="2")
    say(store, "a turn of another chat", T0 + 1, chat=OTHER, mid="3")
    ids = [h.message_ids[0] for h in ask(store, "quarterly budget", at=T0 + 50)]
    assert ids == ["1"]
    assert [h.message_ids[0] for h in ask(store, "quarterly budget")] == ["1", "2"]


def test_another_chat_is_never_searched(store: SqliteStore) -> None:
    say(store, "oolong tea in the other group", T0, chat=OTHER, mid="o1")
    say(store, "coffee here", T0, mid="g1")
    assert ask(store, "oolong tea") == []
    assert texts(ask(store, "oolong tea", chat=OTHER)) == ["oolong tea in the other group"]


def test_a_time_window_prefers_its_turns_and_is_taken_out_of_the_query(store: SqliteStore) -> None:
    now = T0 + 10 * DAY
    say(store, "我们去杭州爬山了", T0 + 9 * DAY, mid="yesterday")  # 昨天 from `now`
    say(store, "我们去杭州爬山了，风景很好", T0 + 2 * DAY, mid="older")
    say(store, "昨天的事情我忘了", T0 + 5 * DAY, mid="says-yesterday")
    hits = ask(store, "昨天去杭州做了什么", at=now, neighbours=0.0)
    assert [h.message_ids for h in hits] == [["yesterday"], ["older"]]  # not the one saying 昨天
    restricted = ask(store, "昨天去杭州做了什么", at=now, window=-1.0)
    assert [h.message_ids for h in restricted] == [["yesterday"]]


def test_a_question_that_is_only_a_time_lists_that_window(store: SqliteStore) -> None:
    now = T0 + 10 * DAY
    say(store, "第一件事", T0 + 9 * DAY, mid="a")
    say(store, "第二件事", T0 + 9 * DAY + 60, mid="b")
    say(store, "更早的事", T0, mid="c")
    assert {h.message_ids[0] for h in ask(store, "昨天呢？", at=now)} == {"a", "b"}
    assert ask(store, "yesterday", at=T0 - DAY) == []


def test_a_window_without_matches_falls_back_to_everything(store: SqliteStore) -> None:
    say(store, "Joanna finished her screenplay", T0, who="joanna", mid="1")
    hits = ask(store, "What did Joanna finish last week?", at=T0 + 365 * DAY)
    assert [h.message_ids for h in hits] == [["1"]]


def test_nothing_said_after_the_question_is_returned(store: SqliteStore) -> None:
    say(store, "the launch is on friday", T0, mid="before")
    say(store, "the launch moved to monday", T0 + DAY, mid="after")
    hits = ask(store, "launch", at=T0 + 60)
    assert [h.message_ids for h in hits] == [["before"]]


def test_excluded_turns_are_not_returned_even_as_neighbours(store: SqliteStore) -> None:
    say(store, "where is the vegan restaurant", T0, mid="1")
    say(store, "next to the station", T0 + 1, mid="2")
    session = store.read_sync(lambda tx: tx.sessions.latest(GROUP, 1))[0]
    rows = [t.id for t in store.read_sync(lambda tx: tx.turns.of_session(session.id))]
    query = Query("vegan restaurant", Viewer.parse(GROUP), exclude_turns=frozenset(rows[1:]))
    assert [h.message_ids for h in search(store, query)] == [["1"]]


def _old_schema_db(path: str) -> Connection:
    conn = connect(path)
    migrations.migrate(conn, migrations.MIGRATIONS[:2])  # before 0003_porter_fts
    turn = NewTurn(GROUP, "user", "she was painting all day", T0, message_id="1")
    # `append`, not `record`: it asks nothing of columns a later migration adds
    sessions.append(SqliteTx(conn), turn, index_text(turn.content), 0.0)
    return conn


def test_the_porter_migration_keeps_every_row_and_stems_them(tmp_path: object) -> None:
    conn = _old_schema_db(str(tmp_path) + "/old.db")
    before = conn.execute("SELECT rowid, body, scopes FROM turns_fts").fetchall()
    assert (
        conn.execute("SELECT count(*) FROM turns_fts WHERE turns_fts MATCH 'painted'").fetchone()[0]
        == 0
    )
    assert migrations.migrate(conn, migrations.MIGRATIONS[:3]) == ["0003_porter_fts"]
    after = conn.execute("SELECT rowid, body, scopes FROM turns_fts").fetchall()
    assert [tuple(r) for r in after] == [tuple(r) for r in before]
    migrations.migrate(conn)  # the later steps, so today's recall can read it
    query = Query("painted", Viewer.parse(GROUP), at=T0 + 1)
    hits = recall.search(SqliteTx(conn), query, recall.plan(query))
    assert [h.message_ids for h in hits] == [["1"]]
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memory_items_fts'").fetchone()
    assert "porter" in sql[0]
    conn.close()


def test_hits_are_ordered_and_limited(store: SqliteStore) -> None:
    for n in range(30):
        say(store, f"hiking trip number {n} " + "hiking " * (n % 3), T0 + n, mid=str(n))
    hits = ask(store, "hiking")
    assert len(hits) == 10
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.kind == "turn" and h.scope == f"chat:{GROUP}" for h in hits)
    assert datetime.fromtimestamp(hits[0].time, UTC) - datetime.fromtimestamp(T0, UTC) < timedelta(
        days=1
    )


PORTER = (
    "CREATE VIRTUAL TABLE t USING fts5(body, scopes,"
    " tokenize='porter unicode61 remove_diacritics 0')"
)


def test_porter_leaves_chinese_alone_and_keeps_scope_tokens_distinct() -> None:
    with closing(sqlite3.connect(":memory:")) as db:
        db.execute(PORTER)
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
        text = index_text("我们去杭州爬山 painted skies")
        db.execute("INSERT INTO t(body) VALUES (?)", (text,))
        terms = {term for (term,) in db.execute("SELECT term FROM v")}
        assert {"我们", "杭州", "爬山", "paint", "ski"} <= terms
        scopes = [f"chat:qq:group:{n}" for n in range(20_000)]
        db.executemany("INSERT INTO t(scopes) VALUES (?)", [(scopes_text([s]),) for s in scopes])
        stemmed = db.execute("SELECT count(*) FROM v WHERE term LIKE 'zs%'").fetchone()[0]
    assert stemmed == len(scopes)  # no two scope tokens stem to the same term


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(max_size=20), st.sampled_from(["global", "user:qq:1", "chat:qq:group:1"])
        ),
        max_size=6,
    ),
    st.text(max_size=20),
)
def test_porter_index_finds_what_the_query_names_and_nothing_of_other_scopes(
    rows: list[tuple[str, str]], text: str
) -> None:
    expression = scoped_match(query_terms(tokenize(text)), ["user:qq:1"])
    if expression is None:
        return
    with closing(sqlite3.connect(":memory:")) as db:
        db.execute(PORTER)
        db.execute(
            "INSERT INTO t(body, scopes) VALUES (?, ?)",
            (index_text(text), scopes_text(["user:qq:1"])),
        )
        db.executemany(
            "INSERT INTO t(body, scopes) VALUES (?, ?)",
            [(index_text(body), scopes_text([scope])) for body, scope in rows],
        )
        found = {r for (r,) in db.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,))}
    assert 1 in found
    assert all(r == 1 or rows[r - 2][1] == "user:qq:1" for r in found)


async def test_a_query_without_a_zone_reads_its_days_in_the_recalls_zone(
    store: SqliteStore,
) -> None:
    """`Recall` plans in its configured zone when the query names none (the store is sent the
    query without one): at one instant, 昨天 is a different day in Shanghai and in LA."""
    noon = datetime(2024, 4, 10, 12, 0, tzinfo=UTC).timestamp()  # 20:00 in Shanghai, 05:00 in LA
    say(store, "第一件事", noon - 33 * 3600, mid="sh")  # 04-09 11:00 in Shanghai, 04-08 in LA
    say(store, "第二件事", noon - 26 * 3600, mid="both")  # 04-09 18:00 and 04-09 03:00
    say(store, "第三件事", noon - 16 * 3600, mid="la")  # 04-10 04:00 in Shanghai, 04-09 in LA
    for zone, expected in (
        ("Asia/Shanghai", {"sh", "both"}),
        ("America/Los_Angeles", {"la", "both"}),
    ):
        found = Recall(store, 1000, ZoneInfo(zone))
        query = found.query("昨天呢？", Viewer.parse(GROUP, "alice"), at=noon)
        assert query.tz is None
        assert {h.message_ids[0] for h in await found.search(query)} == expected, zone
