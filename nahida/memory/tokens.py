"""Tokenisation for the FTS5 indexes and safe MATCH expressions (DESIGN §5, step 3).

Index text and query text go through the same `tokenize()`:

1. NFKC (full-width → half-width, compatibility forms folded), then case folding;
2. split into runs of token characters; everything else (punctuation, spaces, symbols, emoji) is
   a separator and is dropped;
3. a run of Han characters is cut by jieba in search mode (`cut_for_search`, so "清华大学" gives
   "清华", "华大", "大学", "清华大学"); any other run (ASCII words, numbers, other scripts) is kept
   whole, so "GPT-4o" gives "gpt", "4o" and "v1.2.3" gives "v1", "2", "3".

Every token is one `unicode61` token: it contains only characters that SQLite's unicode61
tokenizer (Unicode 6.1 tables) treats as token characters, checked against SQLite over every code
point. Characters Python knows as letters but SQLite does not are separators here too.

The FTS contract (the memory store creates its tables to match):

    CREATE VIRTUAL TABLE ... USING fts5(
        body,      -- index_text(title + content)
        scopes,    -- scopes_text([scope, ...]): one scope_token() per scope the row belongs to
        ...,
        tokenize = 'porter unicode61 remove_diacritics 0'
    )

FTS5's porter wrapper stems each of our tokens, in the index and in the query alike ("painted",
"painting" → "paint"); it changes only ASCII suffixes, so Chinese tokens pass through unchanged,
and a scope token can lose at most its last few hex digits: two scopes would have to share their
first 19 hex digits (76 bits of a hash) to collide.

`scoped_match(text, scopes)` gives `scopes : ("zs…" OR "zs…") AND body : ("t1" OR "t2")`, so the
scope filter sits inside the MATCH and applies before ranking. Rank with `bm25(table, 1.0, 0.0)`
(weight 0 for `scopes`) so the scope tokens do not move scores.

jieba loads its dictionary (about a second) on first use; `warm_up()` does it up front. All
functions here are CPU-bound: call them from a worker thread, not the event loop.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

BODY_COLUMN = "body"
SCOPES_COLUMN = "scopes"

_ZH_STOPWORDS = """
    的 了 是 在 我 你 他 她 它 我们 你们 他们 吗 呢 啊 吧 呀 哦 嗯 哈 啦 嘛 和 与 及 也 都 就 还
    这 那 这个 那个 一个 有 没 没有 不 很 把 被 给 让 着 过 之 又 或
"""
_EN_STOPWORDS = """
    the a an is are was were be been am to of in on at for and or but with as by it its this that
    these those i you he she we they me my your our his her do does did not no so if then than
    from what which who how can will just there here
"""
# Words that make a question a question and say nothing about what it is about.
_ZH_QUESTION_WORDS = """
    什么 啥 哪 哪里 哪儿 哪个 哪些 哪位 谁 怎么 怎样 怎么样 如何 为什么 为何 多少 几 是否 是不是
    来着 么 嘛 吗 呢 呀 啊
"""
_EN_QUESTION_WORDS = """
    when where why whom whose would could should has have had any some s t d ll m re ve
"""
QUESTION_WORDS: frozenset[str] = frozenset((_ZH_QUESTION_WORDS + _EN_QUESTION_WORDS).split())
STOPWORDS: frozenset[str] = frozenset((_ZH_STOPWORDS + _EN_STOPWORDS).split()) | QUESTION_WORDS

_UNICODE32 = unicodedata.ucd_3_2_0
_jieba_lock = threading.Lock()
_jieba: Any = None


def warm_up() -> None:
    """Load jieba's dictionary now (about a second) instead of on the first `tokenize()`."""
    _tokenizer()


def tokenize(text: str) -> list[str]:
    """Tokens of `text` in order, with repeats, for both indexing and querying."""
    tokens: list[str] = []
    for run, han in _runs(unicodedata.normalize("NFKC", text).casefold()):
        if han:
            words: Iterable[str] = _tokenizer().cut_for_search(run)
            tokens.extend(w for w in words if w)
        else:
            tokens.append(run)
    return tokens


def index_text(text: str) -> str:
    """The text to store in the `body` column: tokens joined by single spaces."""
    return " ".join(tokenize(text))


def match_query(text: str, *, max_terms: int = 32, stopwords: bool = True) -> str | None:
    """An FTS5 expression `"t1" OR "t2" ...` for `text`, or None when nothing is searchable.

    Only quoted tokens are emitted, so no user input can become FTS5 syntax. Duplicates are
    removed (first occurrence wins) and stopwords dropped unless nothing else would remain.
    """
    if max_terms < 1:
        raise ValueError("max_terms must be at least 1")
    terms = list(dict.fromkeys(tokenize(text)))
    if stopwords:
        terms = [t for t in terms if t not in STOPWORDS] or terms
    if not terms:
        return None
    return " OR ".join(_quote(t) for t in terms[:max_terms])


def has_content(text: str) -> bool:
    """Whether the text has a searchable word that is not a stopword."""
    return any(t not in STOPWORDS for t in tokenize(text))


def scope_token(scope: str) -> str:
    """A deterministic single unicode61 token for a scope string such as `chat:onebot:group:1`."""
    return "zs" + hashlib.blake2b(scope.encode("utf-8"), digest_size=10).hexdigest()


def scopes_text(scopes: Iterable[str]) -> str:
    """The text to store in the `scopes` column of a row visible in these scopes."""
    return " ".join(dict.fromkeys(scope_token(s) for s in scopes))


def scoped_match(
    text: str | None, scopes: Sequence[str], *, max_terms: int = 32, stopwords: bool = True
) -> str | None:
    """An FTS5 expression for user `text` restricted to rows in any of `scopes`.

    `text=None` matches every row in the scopes. Returns None (search nothing) when no scope is
    given or when `text` has nothing searchable.
    """
    if not scopes:
        return None
    scope_part = " OR ".join(_quote(t) for t in dict.fromkeys(scope_token(s) for s in scopes))
    expression = f"{SCOPES_COLUMN} : ({scope_part})"
    if text is None:
        return expression
    query = match_query(text, max_terms=max_terms, stopwords=stopwords)
    if query is None:
        return None
    return f"{expression} AND {BODY_COLUMN} : ({query})"


def _quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def _runs(text: str) -> Iterable[tuple[str, bool]]:
    """Maximal runs of token characters as (run, is_han); separators are dropped."""
    start = 0
    kind = 0  # 0 separator, 1 Han, 2 other token character
    for i, char in enumerate(text):
        char_kind = _char_kind(char)
        if char_kind != kind:
            if kind:
                yield text[start:i], kind == 1
            start, kind = i, char_kind
    if kind:
        yield text[start:], kind == 1


@lru_cache(maxsize=8192)
def _char_kind(char: str) -> int:
    if char.isascii():
        return 2 if char.isalnum() else 0
    code = ord(char)
    han = 0x3400 <= code <= 0x4DBF or 0x4E00 <= code <= 0x9FFF or 0x20000 <= code <= 0x323AF
    if unicodedata.category(char)[0] not in "LN":
        return 0
    if han:
        return 1
    # Letters and digits that were already letters and digits in Unicode 3.2 are token
    # characters for SQLite's unicode61 (Unicode 6.1) too; later additions may not be.
    return 2 if _UNICODE32.category(char)[0] in "LN" else 0


def _tokenizer() -> Any:
    global _jieba
    tokenizer = _jieba
    if tokenizer is None:
        with _jieba_lock:
            if _jieba is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                loaded = jieba.Tokenizer()
                loaded.initialize()
                _jieba = loaded
            tokenizer = _jieba
    return tokenizer
