"""Lexical search in PostgreSQL: a tsvector over the jieba tokens, ranked by FTS5's BM25.

A row's index text is `tokenize.index_text` (jieba tokens joined by spaces). `words` cuts it as
FTS5's `unicode61` does (runs of letters, digits and private-use characters, folded to lower
case; anything else separates) and the database makes the lexemes (`schema.TEXT_SEARCH`:
English words stemmed by Porter's algorithm, as FTS5's `porter`; CJK tokens as they are), so
PostgreSQL's own parser and stop words play no part. Each query term is a phrase (its own
words, in a row), and a row matches any of them.

Ranking is FTS5's BM25, computed in the query (`ranked`): for each term its document frequency
over the whole index (a count on the GIN index), for each matching row the term's frequency
in its tsvector (`nahida_tf`) and the row's length (`fts_len`: its words and its scope keys, as
FTS5 counts every column), with FTS5's constants: the scores are SQLite's. The viewer's filter
does not change a score, as in SQLite. Counting the index's rows and their mean length is a
scan of the table: cheap at a bot's size; a counter kept with the rows would be the next step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from nahida.memory.store.values import TextSearch, VectorSearch

K1 = 1.2
B = 0.75

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
    table: str,
    select: str,
    time_column: str,
    where: str,
    params: Sequence[Any],
    search: TextSearch,
) -> tuple[str, list[Any]] | None:
    """The query for rows `r` of `table` in the index that pass `where`, best first, with a
    `score` column after `select` (higher is better); a search without terms lists the latest
    rows (score 1.0). None when there is nothing to search for."""
    limit = int(search.limit)
    if search.terms is None:
        sql, listed = time_filter(
            f"SELECT {select}, 1.0::float8 AS score FROM {table} r"
            f" WHERE r.fts IS NOT NULL AND {where}",
            list(params),
            time_column,
            search,
        )
        return f"{sql} ORDER BY {time_column} DESC, r.id DESC LIMIT {limit}", listed
    found = phrases(search.terms)
    if not found:
        return None
    # the terms, their lexemes and document frequencies, then each matching row's BM25
    sql = (
        "WITH lexemes AS (SELECT nahida_lexemes(string_to_array(p.words, ' ')) AS lexemes"
        " FROM unnest(%s::text[]) AS p (words)),"
        " terms AS (SELECT lexemes, nahida_query(lexemes) AS query FROM lexemes"
        " WHERE cardinality(lexemes) > 0),"
        " totals AS (SELECT count(*)::float8 AS n, coalesce(avg(fts_len), 1)::float8 AS avglen"
        f" FROM {table} WHERE fts IS NOT NULL),"
        " weights AS (SELECT t.lexemes, greatest(ln((s.n - d.df + 0.5) / (d.df + 0.5)), 1e-6)"
        " AS idf FROM terms t CROSS JOIN totals s CROSS JOIN LATERAL"
        f" (SELECT count(*)::float8 AS df FROM {table} x WHERE x.fts @@ t.query) d),"
        " matched AS (SELECT r.*, (SELECT coalesce(sum(w.idf * f.tf * "
        f"{K1 + 1} / (f.tf + {K1} * ({1 - B} + {B} * r.fts_len / s.avglen))), 0)"
        " FROM weights w CROSS JOIN LATERAL (SELECT nahida_tf(r.fts, w.lexemes)::float8 AS tf) f"
        " WHERE f.tf > 0) AS score"
        f" FROM {table} r CROSS JOIN totals s"
        " WHERE r.fts @@ (SELECT nahida_any(query) FROM terms)"
    )
    values: list[Any] = [found]
    sql, values = time_filter(f"{sql} AND {where}", [*values, *params], time_column, search)
    sql += f") SELECT {select}, r.score FROM matched r ORDER BY r.score DESC, r.id LIMIT {limit}"
    return sql, values
