"""Tokenisation for search (DESIGN §5, step 3): index text and query text alike, jieba only.

Index text and query text go through the same `tokenize()`:

1. NFKC (full-width → half-width, compatibility forms folded), then case folding;
2. split into runs of token characters; everything else (punctuation, spaces, symbols, emoji) is
   a separator and is dropped;
3. a run of Han characters is cut by jieba in search mode (`cut_for_search`, so "清华大学" gives
   "清华", "华大", "大学", "清华大学"); any other run (ASCII words, numbers, other scripts) is kept
   whole, so "GPT-4o" gives "gpt", "4o" and "v1.2.3" gives "v1", "2", "3".

jieba runs as jieba-rs (the `rjieba` binding): the same dictionary, the same model, the same
words as the Python jieba 0.42 — checked word for word against it over the eval datasets'
130,000 Han runs and 100,000 random ones (`tests/unit/test_tokens.py` keeps a seeded sample) —
at a tenth of the CPU, in a third of the memory, loaded in a tenth of a second. Python jieba cuts
only U+4E00–U+9FD5 with its dictionary and yields any other Han character (U+9FD6–U+9FFF and the
extension blocks) on its own; jieba-rs would join neighbouring ones, so those are split off
before it sees them. Indexes written with either are searched alike: nothing is re-tokenized.

Every token is one SQLite `unicode61` token: it contains only characters that tokenizer (Unicode
6.1 tables) treats as token characters, checked against SQLite over every code point. Characters
Python knows as letters but SQLite does not are separators here too. A store indexes
`index_text()` and searches for `query_terms()`; how it phrases that (an FTS5 MATCH, a tsquery)
is its own business, so nothing here knows a query syntax.

jieba-rs loads its dictionary (~0.1 s) on first use; `warm_up()` does it up front. All functions
here are CPU-bound: call them before a store call, never on the database thread.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache, lru_cache
from typing import Any, TypeVar

S = TypeVar("S")
T = TypeVar("T")
INLINE_CHARS = 400  # texts up to this long are cut on the caller's thread (well under a ms)

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
# What Python jieba cuts with its dictionary; any other Han character is a word of its own there.
_JIEBA_HAN = re.compile("([\u4e00-\u9fd5]+)")


async def run_cpu(fn: Callable[..., T], *args: Any, size: int) -> T:
    """`fn(*args)` right here for small inputs (`size` characters), on a worker thread for large
    ones, so the event loop never waits long on jieba or a regex."""
    if size <= INLINE_CHARS:
        return fn(*args)
    return await asyncio.to_thread(fn, *args)


def warm_up() -> None:
    """Load jieba's dictionary now (~0.1 s) instead of on the first `tokenize()`."""
    _cut_for_search()


def tokenize(text: str) -> list[str]:
    """Tokens of `text` in order, with repeats, for both indexing and querying.

    A message is cut several times on its way (stored, searched, read for memories): texts up
    to `INLINE_CHARS` are cut once and remembered (`_cut`), longer ones each time."""
    if len(text) <= INLINE_CHARS:
        return list(_cut(text))
    return _tokens(text)


@lru_cache(maxsize=2048)
def _cut(text: str) -> tuple[str, ...]:
    return tuple(_tokens(text))


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    for run, han in _runs(unicodedata.normalize("NFKC", text).casefold()):
        if han:
            tokens.extend(_han_words(run))
        else:
            tokens.append(run)
    return tokens


def index_text(text: str) -> str:
    """The text to store in the `body` column: tokens joined by single spaces."""
    return " ".join(tokenize(text))


def map_ahead(
    cut: Callable[[S], T], batches: Sequence[Sequence[S]], workers: int = 0
) -> Iterator[list[T]]:
    """`cut` of every element (say `index_text` of texts), batch by batch, in order. With
    `workers`, the next batch is cut in that many worker processes while the caller stores this
    one (bulk imports: jieba holds the GIL, so threads would not help); `cut` must then be a
    module-level function."""
    if workers < 1 or len(batches) < 2:
        for batch in batches:
            yield [cut(text) for text in batch]
        return
    spawn = multiprocessing.get_context("spawn")  # never fork a process that runs threads
    with spawn.Pool(workers, initializer=warm_up) as pool:
        pending = pool.map_async(cut, batches[0], chunksize=256)
        for n in range(len(batches)):
            tokens = pending.get()
            if n + 1 < len(batches):
                pending = pool.map_async(cut, batches[n + 1], chunksize=256)
            yield tokens


def query_terms(
    tokens: Sequence[str], *, max_terms: int = 32, stopwords: bool = True
) -> tuple[str, ...]:
    """The distinct terms to search for (first occurrence wins), at most `max_terms`.

    Stopwords and question words are dropped unless nothing else would remain.
    """
    if max_terms < 1:
        raise ValueError("max_terms must be at least 1")
    terms = list(dict.fromkeys(tokens))
    if stopwords:
        terms = [t for t in terms if t not in STOPWORDS] or terms
    return tuple(terms[:max_terms])


def has_content(text: str | Sequence[str]) -> bool:
    """Whether the text (or its tokens) has a searchable word that is not a stopword."""
    tokens = tokenize(text) if isinstance(text, str) else text
    return any(t not in STOPWORDS for t in tokens)


@lru_cache(maxsize=4096)
def name_tokens(name: str) -> tuple[str, ...]:
    """The tokens of a display name (names repeat: cut each once)."""
    return tuple(tokenize(name))


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


def _han_words(run: str) -> Iterator[str]:
    """jieba's search-mode words of a run of Han characters, as Python jieba cuts them."""
    cut = _cut_for_search()
    for n, part in enumerate(_JIEBA_HAN.split(run)):
        if n % 2:  # the basic block: jieba's dictionary and model
            yield from cut(part, True)
        else:  # other Han characters (or nothing): one word each
            yield from part


@cache
def _cut_for_search() -> Callable[[str, bool], list[str]]:
    """rjieba's module-level tokenizer (an instance of our own would cost another 24 MB; nothing
    here adds words to it). The import lock loads it once however many threads ask first."""
    import rjieba

    return rjieba.cut_for_search
