"""Lexical search in plain Python, with the answers of the SQLite store's FTS5 index.

A row's index text is `tokenize.index_text` (jieba tokens joined by spaces). Like FTS5's
`porter unicode61` tokenizer, it is split into tokens of letters, digits and private-use
characters (anything else separates), folded to lower case and stemmed (`porter`). The
categories are today's Unicode: SQLite's tables are older, and a character unassigned there
(many emoji) is part of a token in SQLite and a separator here.

Each query term is a phrase: its own tokens, in a row. Rows are ranked by FTS5's BM25 (its
constants; a row's length counts its scope keys too, as FTS5 counts every column), over every
row of the index: the viewer's filter does not change a row's score.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Generic, TypeVar

from nahida.memory.store.reference.porter import stem
from nahida.memory.store.values import TextSearch, VectorSearch

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6  # FTS5's floor for a term in more than half the rows

R = TypeVar("R")


def _token_char(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category[0] in "LN" or category == "Co"


@lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[str, ...]:
    """The index tokens of a text, in order."""
    found: list[str] = []
    current: list[str] = []
    for ch in text:
        if _token_char(ch):
            current.append(ch)
        elif current:
            found.append(stem("".join(current).lower()))
            current = []
    if current:
        found.append(stem("".join(current).lower()))
    return tuple(found)


def occurrences(phrase: Sequence[str], body: Sequence[str]) -> int:
    """How often the phrase's tokens stand in a row in the body."""
    n = len(phrase)
    if n == 0:
        return 0
    if n == 1:
        return body.count(phrase[0])
    return sum(1 for i in range(len(body) - n + 1) if tuple(body[i : i + n]) == tuple(phrase))


@dataclass(frozen=True, slots=True)
class Indexed(Generic[R]):
    """A row of an index with the tokens of its index text. `keys`: the scope keys the SQLite
    store's row carries beside its text (FTS5 counts them in a row's length, unweighted)."""

    row: R
    body: tuple[str, ...]
    keys: int = 1

    @property
    def length(self) -> int:
        return len(self.body) + self.keys


def bm25(
    terms: Sequence[str], rows: Sequence[Indexed[R]], among: Iterable[Indexed[R]]
) -> list[tuple[R, float]]:
    """The rows of `among` that hold any of the terms, with their BM25 score (higher is
    better); `rows` is the whole index, which the statistics are taken from."""
    phrases = [p for p in dict.fromkeys(tokens(t) for t in terms) if p]
    if not phrases or not rows:
        return []
    total = len(rows)
    average = sum(r.length for r in rows) / total
    idf = {}
    for phrase in phrases:
        holding = sum(1 for r in rows if occurrences(phrase, r.body))
        idf[phrase] = max(math.log((total - holding + 0.5) / (holding + 0.5)), MIN_IDF)
    scored: list[tuple[R, float]] = []
    for r in among:
        counts = Counter({p: occurrences(p, r.body) for p in phrases})
        if not any(counts.values()):
            continue
        norm = K1 * (1 - B + B * r.length / average)
        score = sum(idf[p] * (f * (K1 + 1)) / (f + norm) for p, f in counts.items() if f)
        scored.append((r.row, score))
    return scored


def in_time(moment: float, search: TextSearch | VectorSearch) -> bool:
    """Whether a row of this moment is inside the search's moment and window."""
    if search.at is not None and moment > search.at:
        return False
    return search.window is None or search.window[0] <= moment < search.window[1]


def ranked(
    terms: Sequence[str] | None,
    rows: Sequence[Indexed[R]],
    allowed: Callable[[R], bool],
    moment: Callable[[R], float],
    search: TextSearch,
) -> list[tuple[R, float]]:
    """The rows that pass `allowed` and the search's time, best first (ties: the older row);
    without terms, the latest (score 1.0)."""
    among = [r for r in rows if allowed(r.row) and in_time(moment(r.row), search)]
    if terms is None:
        among.sort(key=lambda r: moment(r.row), reverse=True)
        return [(r.row, 1.0) for r in among[: search.limit]]
    scored = bm25(terms, rows, among)
    scored.sort(key=lambda pair: pair[1], reverse=True)  # stable: index order breaks ties
    return scored[: search.limit]


def contains_all(text: str, needles: Sequence[str]) -> bool:
    """SQLite's `LIKE '%needle%'` for each needle: literal, ASCII letters in any case."""
    folded = _ascii_fold(text)
    return all(_ascii_fold(n) in folded for n in needles)


def _ascii_fold(text: str) -> str:
    return "".join(ch.lower() if ch.isascii() else ch for ch in text)
