"""Lexical search in PostgreSQL: a tsvector over the jieba tokens, ranked by FTS5's BM25.

A row's index text is `tokenize.index_text` (jieba tokens joined by spaces). `words` cuts it as
FTS5's `unicode61` does (runs of letters, digits and private-use characters, folded to lower
case; anything else separates) and the database makes the lexemes (`schema.TEXT_SEARCH`:
English words stemmed by Porter's algorithm, as FTS5's `porter`; CJK tokens as they are), so
PostgreSQL's own parser and stop words play no part. Each query term is a phrase (its own
words, in a row), and a row matches any of them.

Ranking is FTS5's BM25 (`ranked`): for each term its document frequency over the whole index
(a count, by the GIN index for a rare term), for each matching row the term's frequency in its
tsvector and the row's length (`fts_len`: its words and its scope keys, as FTS5 counts every
column), with FTS5's constants: the scores are SQLite's. The viewer's filter does not change a
score, as in SQLite. The index's size and mean row length are counted for every search (an
index-only scan of a partial index): linear in the rows, unlike FTS5, which keeps them; a
counter kept with the rows would make every writer wait for one row, across processes too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.values import TextSearch, VectorSearch

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6  # FTS5's floor for a term in more than half the rows

# FTS5 unicode61's token characters: letters, digits and the private-use area (`\w` is letters,
# digits and `_`, and the marks Python counts as alphanumeric)
_WORD = re.compile(r"(?:[^\W_]|[\ue000-\uf8ff])+")


def words(text: str) -> list[str]:
    """The words FTS5's unicode61 would cut `text` into, folded to lower case (not stemmed)."""
    return _WORD.findall(text.lower())


def phrases(terms: Sequence[str]) -> list[str]:
    """Each query term as the words of a phrase (terms with no word dropped)."""
    found = (" ".join(words(term)) for term in terms)
    return list(dict.fromkeys(p for p in found if p))


def like_escape(text: str) -> str:
    """`text` for a LIKE pattern (PostgreSQL's default escape, a backslash): its own % and _
    match themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_ASCII_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def ascii_fold(sql: str) -> str:
    """`sql` with ASCII letters folded to lower case, and only those (as SQLite's LIKE)."""
    return f"translate({sql}, '{_ASCII_UPPER}', '{_ASCII_UPPER.lower()}')"


def time_filter(
    sql: str, params: list[Any], column: str, search: TextSearch | VectorSearch
) -> tuple[str, list[Any]]:
    """`sql` and `params` with the search's moment (nothing later) and window added."""
    if search.at is not None:
        sql += f" AND {column} <= %s"
        params = [*params, search.at]
    if search.window is not None:
        sql += f" AND {column} >= %s AND {column} < %s"
        params = [*params, *search.window]
    return sql, params


def ranked(
    conn: Connection,
    table: str,
    select: str,
    time_column: str,
    where: str,
    params: Sequence[Any],
    search: TextSearch,
) -> list[tuple[Any, ...]]:
    """Rows `r` of `table` in the index that pass `where`, best first, each `select` and a
    score (higher is better); a search without terms lists the latest rows (score 1.0)."""
    limit = int(search.limit)
    if search.terms is None:
        sql, listed = time_filter(
            f"SELECT {select}, 1.0::float8 FROM {table} r WHERE r.fts IS NOT NULL AND {where}",
            list(params),
            time_column,
            search,
        )
        sql += f" ORDER BY {time_column} DESC, r.id DESC LIMIT {limit}"
        return conn.execute(sql, listed).fetchall()
    terms = _lexemes(conn, phrases(search.terms))
    if not terms:
        return []
    idf = _idf(conn, table, terms)
    queries = " || ".join(["nahida_query(%s::text[])"] * len(terms))
    # a term of one lexeme is counted from its positions; a phrase by `nahida_tf`
    tf = (
        "CASE WHEN cardinality(w.lexemes) = 1 THEN (SELECT cardinality(u.positions)"
        " FROM unnest(r.fts) AS u WHERE u.lexeme = w.lexemes[1])"
        " ELSE nahida_tf(r.fts, w.lexemes) END::float8"
    )
    sql = (
        "WITH weights AS MATERIALIZED (SELECT string_to_array(w.lexemes, ' ') AS lexemes, w.idf"
        " FROM unnest(%s::text[], %s::float8[]) AS w (lexemes, idf))"
        " SELECT {select}, r.score FROM (SELECT r.*, (SELECT coalesce(sum(w.idf * f.tf * "
        f"{K1 + 1} / (f.tf + {K1} * ({1 - B} + {B} * r.fts_len / %s))), 0)"
        f" FROM weights w CROSS JOIN LATERAL (SELECT {tf} AS tf) f WHERE f.tf > 0) AS score"
        f" FROM {table} r WHERE r.fts @@ ({queries}) AND {where}"
    ).replace("{select}", select)
    values: list[Any] = [[" ".join(t) for t in terms], [idf[t] for t in terms], idf[()]]
    values += [list(t) for t in terms]
    sql, values = time_filter(sql, [*values, *params], time_column, search)
    sql += f") r ORDER BY r.score DESC, r.id LIMIT {limit}"
    # planned with the terms' own queries (a rare word found by the GIN index, a common one by
    # a scan), never as a generic prepared plan
    return conn.execute(sql, values, prepare=False).fetchall()


def _lexemes(conn: Connection, found: list[str]) -> list[tuple[str, ...]]:
    """Each phrase's lexemes, as the index makes them (phrases without any left out)."""
    if not found:
        return []
    rows = conn.execute(
        "SELECT nahida_lexemes(string_to_array(p.words, ' ')) FROM unnest(%s::text[]) AS p (words)",
        (found,),
    ).fetchall()
    return list(dict.fromkeys(tuple(r[0]) for r in rows if r[0]))


def _idf(
    conn: Connection, table: str, terms: list[tuple[str, ...]]
) -> dict[tuple[str, ...], float]:
    """FTS5's inverse document frequency of each term over the whole index, and under the key
    `()` the index's mean row length: one statement, each count planned for its own term."""
    counts = ", ".join(
        f"(SELECT count(*) FROM {table} WHERE fts @@ nahida_query(%s::text[]))" for _ in terms
    )
    row = conn.execute(
        f"SELECT count(*), coalesce(avg(fts_len), 1)::float8, {counts} FROM {table}"
        " WHERE fts IS NOT NULL",
        [list(t) for t in terms],
        prepare=False,
    ).fetchone()
    assert row is not None
    n = float(row[0])
    weights: dict[tuple[str, ...], float] = {(): float(row[1]) or 1.0}
    for term, df in zip(terms, row[2:], strict=True):
        weights[term] = max(math.log((n - df + 0.5) / (df + 0.5)), MIN_IDF)
    return weights
