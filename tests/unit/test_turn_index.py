"""The chat-keyed turns index: the ranking it gives is FTS5's bm25 over one unkeyed index, its
term counts stay exact through every insert and delete, and no chat sees another's turns."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from nahida.memory import NewTurn, Query, recall, sessions, viewer_for
from nahida.memory.store.base import TextSearch
from nahida.memory.store.sqlite import SqliteTx, migrations, turn_index
from nahida.memory.store.sqlite.db import Connection, connect
from nahida.memory.store.sqlite.fts import chats_match
from nahida.memory.tokenize import index_text, query_terms, tokenize
from tests.unit.test_recall import _old_turn

T0 = 1_700_000_000.0
A, B, C = "test:group:a", "test:group:b", "test:private:c"
LINES = [
    "明天 下午 三点 开会 讨论 预算",
    "the budget meeting moved to friday afternoon",
    "我 喜欢 喝 乌龙茶 不 喜欢 咖啡",
    "friday is the budget deadline for the whole team",
    "预算 还 没 批 下来 明天 再 问",
    "coffee or tea before the meeting",
    "团队 周五 聚餐 地点 待定",
    "meeting notes: budget, deadline, friday",
]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Connection]:
    opened = connect(tmp_path / "t.db")
    migrations.migrate(opened)
    yield opened
    opened.close()


def say(conn: Connection, chat: str, text: str, n: int) -> None:
    turn = NewTurn(chat, "user", text, T0 + n, speaker="test:u1", message_id=f"{chat}-{n}")
    sessions.record(SqliteTx(conn), turn, index_text(text))


def fill(conn: Connection) -> None:
    for n in range(40):
        chat = (A, B, C)[n % 3]
        say(conn, chat, f"{LINES[(n * 5) % len(LINES)]} {LINES[n % len(LINES)]}", n)


def stored_counts(conn: Connection) -> Counter[str]:
    """Each token's rows, counted from the index bodies themselves."""
    counts: Counter[str] = Counter()
    for (body,) in conn.execute("SELECT body FROM turns_fts"):
        counts.update({token[turn_index.KEY_CHARS :] for token in body.split()})
    return counts


def test_scores_are_fts5_bm25_over_one_unkeyed_index(conn: Connection) -> None:
    fill(conn)
    conn.execute(  # the index as it was before keying: every chat's tokens in one doclist
        "CREATE VIRTUAL TABLE temp.plain USING fts5"
        " (body, scopes, tokenize = 'porter unicode61 remove_diacritics 0')"
    )
    conn.execute(
        "INSERT INTO plain (rowid, body, scopes) SELECT f.rowid, t.body, f.scopes"
        " FROM turns_fts f JOIN (SELECT rowid, body FROM turns_fts) t ON t.rowid = f.rowid"
    )
    for rowid, body in conn.execute("SELECT rowid, body FROM plain").fetchall():
        unkeyed = " ".join(token[turn_index.KEY_CHARS :] for token in body.split())
        conn.execute("UPDATE plain SET body = ? WHERE rowid = ?", (unkeyed, rowid))
    checked = 0
    for question in ["budget meeting friday", "明天 预算 开会", "coffee 乌龙茶 团队", "deadline"]:
        terms = query_terms(tokenize(question))
        for chats in ([A], [B, C]):
            expected = dict(
                conn.execute(
                    "SELECT rowid, -bm25(plain, 1.0, 0.0) FROM plain WHERE plain MATCH ?",
                    (chats_match(terms, chats),),
                ).fetchall()
            )
            found = turn_index.scores(conn, chats, terms)
            assert found.keys() == expected.keys()
            for turn_id, score in expected.items():
                assert found[turn_id] == pytest.approx(score, rel=1e-9)
            checked += len(expected)
    assert checked > 40  # the questions matched enough rows to compare


def test_term_counts_follow_every_insert_and_delete(conn: Connection) -> None:
    fill(conn)
    tx = SqliteTx(conn)
    assert dict(conn.execute("SELECT term, rows FROM turn_terms").fetchall()) == stored_counts(conn)
    tx.turns.hide([], [(A, f"{A}-0"), (B, f"{B}-1")], by="m_test")
    session = tx.sessions.latest(C, 1)[0]
    assert tx.sessions.delete(session.id)
    counts = stored_counts(conn)
    assert dict(conn.execute("SELECT term, rows FROM turn_terms").fetchall()) == counts
    assert conn.execute("SELECT count(*) FROM turns_fts").fetchone()[0] < 40
    assert conn.execute("SELECT count(*) FROM turn_terms WHERE rows <= 0").fetchone()[0] == 0


def test_a_chat_never_sees_another_chats_turns_even_when_their_keys_collide(
    conn: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turn_index, "chat_key", lambda chat: "bcdfghjklmnp")
    say(conn, A, "the secret budget is ten thousand", 1)
    say(conn, B, "our budget is small", 2)
    tx = SqliteTx(conn)
    found = tx.turns.search([B], TextSearch(("budget", "secret"), 10))
    assert [t.chat for t in found] == [B]
    everywhere = tx.turns.search(None, TextSearch(("budget",), 10))  # an admin's search
    assert sorted(t.chat for t in everywhere) == [A, B]


def test_many_chats_and_terms_are_matched_in_batches(conn: Connection) -> None:
    fill(conn)
    terms = (*(f"filler{n}" for n in range(120)), "budget")
    found = SqliteTx(conn).turns.search([A, B, C], TextSearch(terms, 50))  # 363 phrases
    assert found and all("budget" in t.content for t in found)
    assert {t.chat for t in found} == {A, B, C}
    assert [t.score for t in found] == sorted((t.score for t in found), reverse=True)


def test_the_keying_migration_keys_every_row_and_counts_its_terms(tmp_path: Path) -> None:
    conn = connect(tmp_path / "old.db")
    steps = [m.name for m in migrations.MIGRATIONS]
    migrations.migrate(conn, migrations.MIGRATIONS[: steps.index("0015_chat_keyed_turns")])
    _old_turn(conn, A, "the budget meeting moved to friday", T0, "1")
    _old_turn(conn, B, "friday we paint the office", T0 + 1, "2")
    before = dict(conn.execute("SELECT rowid, scopes FROM turns_fts").fetchall())
    assert migrations.migrate(conn) == ["0015_chat_keyed_turns"]
    assert dict(conn.execute("SELECT rowid, scopes FROM turns_fts").fetchall()) == before
    bodies = dict(conn.execute("SELECT rowid, body FROM turns_fts").fetchall())
    assert all(token.startswith(turn_index.chat_key(B)) for token in bodies[2].split())
    assert dict(conn.execute("SELECT term, rows FROM turn_terms").fetchall()) == {
        **{t: 1 for t in tokenize("budget meeting moved to we paint office")},
        "the": 2,
        "friday": 2,
    }
    query = Query("who paints on friday", viewer_for(B), at=T0 + 60)
    hits = recall.search(SqliteTx(conn), query, recall.plan(query))
    assert [h.message_ids for h in hits] == [["2"]]  # stemmed, and only chat B's
    conn.close()
