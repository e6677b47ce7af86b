"""Tokenisation for FTS5: jieba search mode, one tokenizer for index and query, safe MATCH
(`memory/core/tokenize.py` cuts the words, the SQLite store's `fts.py` phrases the MATCH)."""

from __future__ import annotations

import logging
import random
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from typing import Any

import jieba
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nahida.memory.core.tokenize as tokens
from nahida.memory.core.tokenize import STOPWORDS, index_text, query_terms, tokenize, warm_up
from nahida.memory.store.sqlite import fts
from nahida.memory.store.sqlite.fts import scope_token, scopes_text


def match_query(text: str, *, max_terms: int = 32, stopwords: bool = True) -> str | None:
    """The MATCH body the store builds for a text (what `tokens.match_query` was)."""
    return fts.match(query_terms(tokenize(text), max_terms=max_terms, stopwords=stopwords))


def scoped_match(text: str | None, scopes: Sequence[str]) -> str | None:
    terms = None if text is None else query_terms(tokenize(text))
    return fts.scoped_match(terms, scopes)


FTS_SCHEMA = (
    "CREATE VIRTUAL TABLE t USING fts5(body, scopes, tokenize='unicode61 remove_diacritics 0')"
)
QUERY_SYNTAX = ['"', '""', "(", ")", "*", "-", "+", "^", ":", "NEAR", "AND", "OR", "NOT", "{", "}"]
# Text that looks like FTS5 syntax, mixed with Chinese, English and arbitrary unicode.
HOSTILE = st.lists(
    st.one_of(
        st.sampled_from([*QUERY_SYNTAX, "body:", "scopes:", "NEAR(", " ", "北京大学", "GPT-4o"]),
        st.text(max_size=8),
    ),
    max_size=10,
).map("".join)


@pytest.fixture(scope="module", autouse=True)
def _jieba_loaded() -> None:
    warm_up()


@contextmanager
def _db() -> Iterator[sqlite3.Connection]:
    """An in-memory FTS5 table `t`, closed after use (Python 3.13 warns of a connection left
    to the collector, and the tests turn warnings into errors)."""
    with closing(sqlite3.connect(":memory:")) as db:
        db.execute(FTS_SCHEMA)
        yield db


def _terms(expression: str) -> list[str]:
    """The quoted tokens of a `"a" OR "b"` expression."""
    return [t.replace('""', '"') for t in re.findall(r'"((?:[^"]|"")*)"', expression)]


def test_chinese_is_cut_in_search_mode() -> None:
    assert tokenize("我来到北京清华大学") == [
        "我",
        "来到",
        "北京",
        "清华",
        "华大",
        "大学",
        "清华大学",
    ]
    assert {"北京", "大学", "北京大学"} <= set(tokenize("北京大学的学生"))


def test_ascii_words_are_kept_whole_and_case_folded() -> None:
    assert tokenize("Hello, World! GPT-4o rocks.") == ["hello", "world", "gpt", "4o", "rocks"]
    assert tokenize("kubernetes typescript") == ["kubernetes", "typescript"]
    assert tokenize("用 git rebase -i 整理提交") == ["用", "git", "rebase", "i", "整理", "提交"]
    assert tokenize("v1.2.3 commit 3f2a9c1") == ["v1", "2", "3", "commit", "3f2a9c1"]
    assert tokenize("iPhone15手机") == ["iphone15", "手机"]


def test_full_width_is_folded_and_punctuation_dropped() -> None:
    assert tokenize("ＧＩＴ　ｒｅｂａｓｅ，１２３！") == ["git", "rebase", "123"]
    assert tokenize("café naïve Straße ΣΊΣΥΦΟΣ") == ["café", "naïve", "strasse", "σίσυφοσ"]
    assert tokenize("🎉🎉 ... ，。！？ ") == []
    assert tokenize("") == []


def test_index_text_joins_the_tokens() -> None:
    assert index_text("我爱北京天安门 GPT-4o") == "我 爱 北京 天安 天安门 gpt 4o"


def test_query_uses_the_index_tokens() -> None:
    text = "我昨天在北京大学用 GPT-4o 写了 FTS5 查询"
    indexed = index_text(text).split()
    query = match_query(text, stopwords=False)
    assert query is not None
    assert _terms(query) == list(dict.fromkeys(indexed))


def test_match_query_quotes_dedups_and_drops_stopwords() -> None:
    assert match_query("git rebase git") == '"git" OR "rebase"'
    assert match_query("the cat is on the mat") == '"cat" OR "mat"'
    assert match_query("我的猫") == '"猫"'
    assert match_query("的 了 是") == '"的" OR "了" OR "是"'  # only stopwords: keep them
    assert match_query("the cat", stopwords=False) == '"the" OR "cat"'
    assert match_query("a b c d e", max_terms=2, stopwords=False) == '"a" OR "b"'
    assert {"的", "the", "吗"} <= STOPWORDS


def test_match_query_returns_none_when_nothing_is_searchable() -> None:
    assert match_query("") is None
    assert match_query('!!! "" () * - ^ : 🎉') is None
    with pytest.raises(ValueError):
        match_query("x", max_terms=0)


@pytest.mark.parametrize(
    "text",
    [
        'foo" OR bar',
        "NEAR(a b, 3)",
        "a AND NOT b",
        "body: secret",
        "scopes : zsdeadbeef",
        "pre*",
        "-excluded ^first",
        '"unbalanced',
        "((nested)",
        "{body scopes}: x",
    ],
)
def test_fts_syntax_in_user_text_is_only_words(text: str) -> None:
    query = match_query(text)
    assert query is not None
    assert re.fullmatch(r'"[^"\s]+"(?: OR "[^"\s]+")*', query)
    with _db() as db:
        db.execute("INSERT INTO t(body) VALUES (?)", (index_text(text),))
        assert db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (query,)).fetchone() == (1,)


@settings(max_examples=150, deadline=None)
@given(st.one_of(HOSTILE, st.text()))
def test_any_text_gives_a_query_fts5_accepts_and_that_finds_it(text: str) -> None:
    query = match_query(text)
    if not tokenize(text):
        assert query is None
        return
    assert query is not None
    with _db() as db:
        db.execute("INSERT INTO t(body) VALUES ('unrelated words only')")
        db.execute("INSERT INTO t(body) VALUES (?)", (index_text(text),))
        rows = {r for (r,) in db.execute("SELECT rowid FROM t WHERE t MATCH ?", (query,))}
    assert 2 in rows


NON_ASCII = st.text(st.characters(min_codepoint=0x80, max_codepoint=0x3FFFF), max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.one_of(HOSTILE, st.text(), NON_ASCII))
def test_every_token_is_one_unicode61_token(text: str) -> None:
    """SQLite sees exactly our tokens: none is split, merged or folded differently."""
    with _db() as db:
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        db.execute("INSERT INTO t(body) VALUES (?)", (index_text(text),))
        seen = [term for (term,) in db.execute("SELECT term FROM v ORDER BY offset")]
    assert seen == tokenize(text)


def test_scope_token_is_deterministic_distinct_and_one_token() -> None:
    scopes = ["global", "chat:onebot:group:123", "chat:onebot:group:1234", "user:lark:ou_abc"]
    found = [scope_token(s) for s in scopes]
    assert found == [scope_token(s) for s in scopes]
    assert len(set(found)) == len(scopes)
    assert all(re.fullmatch(r"zs[0-9a-f]{20}", t) for t in found)
    assert tokenize(scope_token("global")) == [scope_token("global")]
    assert scopes_text(["global", "global", "user:x"]) == (
        f"{scope_token('global')} {scope_token('user:x')}"
    )


def test_scoped_match_shape() -> None:
    a, b = scope_token("global"), scope_token("user:onebot:42")
    assert scoped_match("北京大学", ["global", "user:onebot:42"]) == (
        f'scopes : ("{a}" OR "{b}") AND body : ("北京" OR "大学" OR "北京大学")'
    )
    assert scoped_match(None, ["global"]) == f'scopes : ("{a}")'
    assert scoped_match("北京", []) is None
    assert scoped_match("！？", ["global"]) is None


@contextmanager
def _scoped_db(rows: Sequence[tuple[str, str]]) -> Iterator[sqlite3.Connection]:
    with _db() as db:
        db.executemany(
            "INSERT INTO t(body, scopes) VALUES (?, ?)",
            [(index_text(body), scopes_text([scope])) for body, scope in rows],
        )
        yield db


def _search(db: sqlite3.Connection, expression: str | None) -> Iterator[int]:
    if expression is not None:
        yield from (r for (r,) in db.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)))


def test_scoped_match_finds_only_rows_in_the_scopes() -> None:
    rows = [
        ("我喜欢北京烤鸭", "chat:onebot:group:1"),
        ("我喜欢北京烤鸭", "chat:onebot:group:12"),
        ("我喜欢北京烤鸭", "user:onebot:7"),
        ("北京烤鸭太油了", "global"),
    ]
    with _scoped_db(rows) as db:
        assert set(_search(db, scoped_match("北京烤鸭", ["chat:onebot:group:1"]))) == {1}
        assert set(_search(db, scoped_match("北京烤鸭", ["global", "user:onebot:7"]))) == {3, 4}
        assert set(_search(db, scoped_match(None, ["chat:onebot:group:12"]))) == {2}
        # typing a column filter for another scope does not widen the search
        sneaky = f'北京 OR scopes : "{scope_token("global")}"'
        assert set(_search(db, scoped_match(sneaky, ["chat:onebot:group:1"]))) == {1}
        ranked = db.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t, 1.0, 0.0)",
            (scoped_match("北京", ["global", "user:onebot:7"]),),
        ).fetchall()
        assert {r for (r,) in ranked} == {3, 4}


SCOPES = st.sampled_from(
    ["global", "chat:onebot:group:1", "chat:onebot:group:12", "user:onebot:1", "user:lark:ou_1"]
)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.one_of(HOSTILE, st.text(max_size=20)), SCOPES), max_size=8),
    st.one_of(st.none(), HOSTILE, st.text(max_size=20)),
    st.lists(SCOPES, max_size=3),
)
def test_scoped_match_never_leaks_other_scopes(
    rows: list[tuple[str, str]], query: str | None, visible: list[str]
) -> None:
    with _scoped_db(rows) as db:
        found = list(_search(db, scoped_match(query, visible)))
    assert all(rows[rowid - 1][1] in visible for rowid in found)
    if query is None and visible:
        assert sorted(found) == [i + 1 for i, (_, s) in enumerate(rows) if s in visible]


@pytest.fixture(scope="module")
def python_jieba() -> Any:
    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer


def _random_han_runs(words: list[str], count: int, seed: int) -> Iterator[str]:
    """Runs of dictionary words and of random Han characters of every block tokenize() treats
    as Han (the extension blocks are where jieba-rs and Python jieba part ways)."""
    rng = random.Random(seed)
    # the basic block, its tail past U+9FD5 again (42 characters: else hardly ever drawn),
    # extension A, extensions B and beyond
    blocks = [(0x4E00, 0x9FFF), (0x9FD6, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x323AF)]
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 16)):
            if rng.random() < 0.7:
                parts.append(rng.choice(words))
            else:
                low, high = rng.choice(blocks)
                parts.append("".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 4))))
        yield "".join(parts)


def test_han_runs_are_cut_word_for_word_as_python_jieba_cuts_them(python_jieba: Any) -> None:
    han = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\U00020000-\U000323af]+")
    words = sorted(w for w, n in python_jieba.FREQ.items() if n and han.fullmatch(w))
    runs = [
        "南京市长江大桥",
        "他来到了网易杭研大厦",  # 杭研: a word of jieba's model, not of its dictionary
        "𡔦𠊠好㾉𣔴鿕鿖",  # neighbouring extension characters: one word each in Python jieba
        *_random_han_runs(words, 3000, seed=14),
    ]
    differ = [r for r in runs if list(tokens._han_words(r)) != list(python_jieba.cut_for_search(r))]
    assert differ == []


def test_text_around_han_runs_keeps_its_own_tokens() -> None:
    assert tokenize("用GPT-4o读《清华大学》v1.2𡔦𠊠") == [
        *["用", "gpt", "4o", "读", "清华", "华大", "大学", "清华大学"],
        *["v1", "2", "𡔦", "𠊠"],
    ]


def test_a_remembered_cut_is_the_same_and_cannot_be_changed_by_a_caller() -> None:
    text = "我昨天去了北京大学 and painted"
    first = tokenize(text)
    first.append("changed")
    assert tokenize(text) == tokenize(text) == first[:-1]
    remembered = tokens._cut.cache_info().currsize
    long_text = "北京大学" * (tokens.INLINE_CHARS // 4 + 1)  # not remembered, cut each time
    assert (
        tokenize(long_text)
        == tokenize(long_text)
        == ["北京", "大学", "北京大学"] * (tokens.INLINE_CHARS // 4 + 1)
    )
    assert tokens._cut.cache_info().currsize == remembered


def test_visibility_keys_give_each_row_one_way_in() -> None:
    from nahida.memory.core.scopes import Visibility

    seen = Visibility(("global", "chat:onebot:group:1"), ("user:onebot:42",))
    keys = fts.visibility_keys(seen)
    assert keys == ["global", "chat:onebot:group:1", "user:onebot:42#public"]
    # every row a viewer may see carries one of these keys, and no other row does
    assert set(fts.item_keys("global", "public")) & set(keys) == {"global"}
    assert set(fts.item_keys("user:onebot:42", "private")).isdisjoint(keys)
    assert set(fts.item_keys("user:onebot:42", "public")) & set(keys) == {"user:onebot:42#public"}
