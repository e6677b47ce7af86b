"""Lexical search in PostgreSQL: a tsvector over the jieba tokens, ranked by FTS5's BM25.

A row's index text is `tokenize.index_text` (jieba tokens joined by spaces). `words` cuts it as
FTS5's `unicode61` does (runs of letters, digits and private-use characters, folded to lower
case; anything else separates) and the database makes the lexemes (`schema.TEXT_SEARCH`:
English words stemmed by Porter's algorithm, as FTS5's `porter`; CJK tokens as they are), so
PostgreSQL's own parser and stop words play no part. Each query term is a phrase (its own
words, in a row), and a row matches any of them.

Ranking is FTS5's BM25 (`ranked`): for each term its document frequency over the whole index
(`weights`: exact up to `EXACT_UP_TO` rows, estimated from the planner's statistics beyond),
for each matching row the term's frequency in its tsvector and the row's length (`fts_len`: its
words and its scope keys, as FTS5 counts every column), with FTS5's constants; the index's size
and mean row length come from `lexical_stats`, which triggers keep with the rows. So the scores
are SQLite's whenever every term is in at most `EXACT_UP_TO` rows; a more common term's weight
is an estimate (in a query of one term that only scales every score, so the order is still
SQLite's). The viewer's filter does not change a score, as in SQLite, but it picks the rows
scored: a search reads only the rows that match and pass it, never the whole index.
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
    idf, mean = weights(conn, table, terms)
    singles = [t for t in terms if len(t) == 1]
    multi = [t for t in terms if len(t) > 1]
    bm25 = f"w.idf * w.tf * {K1 + 1} / (w.tf + {K1} * ({1 - B} + {B} * r.fts_len / %s))"
    # one pass over the row's lexemes for every one-word term (its frequency is the count of its
    # positions), a phrase by `nahida_tf`; the phrases' sum is added after the words', as FTS5
    # adds a term's share in the order of the query's terms only up to rounding
    parts: list[str] = []
    values: list[Any] = []
    if singles:
        parts.append(
            f"(SELECT coalesce(sum({bm25}), 0) FROM (SELECT (%s::float8[])"
            "[array_position(%s::text[], u.lexeme)] AS idf, cardinality(u.positions)::float8 AS tf"
            " FROM unnest(r.fts) AS u WHERE u.lexeme = ANY (%s::text[])) w)"
        )
        lexemes = [t[0] for t in singles]
        values += [mean, [idf[t] for t in singles], lexemes, lexemes]
    if multi:
        parts.append(
            f"(SELECT coalesce(sum({bm25}), 0) FROM (SELECT p.idf, nahida_tf(r.fts,"
            " string_to_array(p.lexemes, ' '))::float8 AS tf FROM unnest(%s::text[],"
            " %s::float8[]) AS p (lexemes, idf)) w WHERE w.tf > 0)"
        )
        values += [mean, [" ".join(t) for t in multi], [idf[t] for t in multi]]
    queries = " || ".join(["nahida_query(%s::text[])"] * len(terms))
    values += [list(t) for t in terms]
    # the candidates are scored and cut to the best first, and only those rows are read whole;
    # the planner picks how to find the candidates: by the GIN index for a rare term, or by
    # the viewer's scopes (or chats) when those hold fewer rows than a common term matches
    sql = (
        f"SELECT r.id, {' + '.join(parts)} AS score FROM {table} r"
        f" WHERE r.fts @@ ({queries}) AND {where}"
    )
    sql, values = time_filter(sql, [*values, *params], time_column, search)
    sql = (
        f"SELECT {select}, s.score FROM ({sql} ORDER BY score DESC, r.id LIMIT {limit}) s"
        f" JOIN {table} r ON r.id = s.id ORDER BY s.score DESC, r.id"
    )
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


# A term in more rows than this has its document frequency estimated instead of counted: the
# count reads every row the term is in, and its weight barely moves at that frequency.
EXACT_UP_TO = 250


def weights(
    conn: Connection, table: str, terms: list[tuple[str, ...]]
) -> tuple[dict[tuple[str, ...], float], float]:
    """FTS5's inverse document frequency of each term over the whole index, and the index's
    mean row length (both from `lexical_stats`, kept by the writes: exact).

    A term's document frequency is counted (by the GIN index) up to `EXACT_UP_TO` rows: below
    that it is exact, and the weight is SQLite's. Beyond, it is estimated from the planner's
    statistics of the column (`pg_stats.most_common_elems`: a word's share of the indexed rows
    in ANALYZE's sample); a word they do not list is taken as common as the least common they
    list (at least the bound), and a phrase as its least common word. With no statistics yet
    (never analyzed), the term is counted in full."""
    row = conn.execute(
        "SELECT s.rows, s.total_len, p.most_common_elems::text::text[], p.most_common_elem_freqs"
        " FROM (SELECT sum(rows) AS rows, sum(total_len) AS total_len FROM lexical_stats"
        " WHERE tbl = %s) s LEFT JOIN pg_stats p ON p.schemaname = current_schema()"
        " AND p.tablename = %s AND p.attname = 'fts'",
        (table, table),
    ).fetchone()
    assert row is not None
    n = float(row[0] or 0)
    mean = float(row[1]) / n if n else 1.0
    shares = dict(zip(row[2] or (), row[3] or (), strict=False))
    least = min(shares.values()) if shares else None

    def estimate(term: tuple[str, ...]) -> float:
        assert least is not None
        return min((shares.get(w, least) * n for w in term), default=n)

    df: dict[tuple[str, ...], float] = {}
    count = [t for t in terms if len(t) > 1 or shares.get(t[0], 0.0) * n <= EXACT_UP_TO]
    for t in terms:
        if t not in count:
            df[t] = estimate(t)
    if count:
        bounded = ", ".join(
            f"(SELECT count(*) FROM (SELECT FROM {table} WHERE fts @@ nahida_query(%s::text[])"
            f" LIMIT {EXACT_UP_TO + 1}) x)"
            for _ in count
        )
        found = conn.execute(f"SELECT {bounded}", [list(t) for t in count], prepare=False)
        for t, c in zip(count, found.fetchone() or (), strict=True):
            df[t] = float(c)
    over = [t for t in count if df[t] > EXACT_UP_TO]
    if over and least is None:
        full = ", ".join(
            f"(SELECT count(*) FROM {table} WHERE fts @@ nahida_query(%s::text[]))" for _ in over
        )
        found = conn.execute(f"SELECT {full}", [list(t) for t in over], prepare=False)
        df.update(zip(over, map(float, found.fetchone() or ()), strict=True))
    elif over:
        df.update((t, max(estimate(t), EXACT_UP_TO + 1.0)) for t in over)
    idf = {t: max(math.log((n - df[t] + 0.5) / (df[t] + 0.5)), MIN_IDF) for t in terms}
    return idf, mean
