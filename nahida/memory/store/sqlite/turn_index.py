"""The turns' FTS5 index, keyed by chat, ranked with the whole table's term frequencies.

Every token a turn's `body` holds is prefixed with its chat's key (`chat_key`: 12 characters
that are never a vowel, so FTS5's porter stemmer stems "kq…painted" as it stems "painted"), so
a search of one chat walks only that chat's doclists, however large the rest of the table grows.

FTS5's bm25 would then count each term's documents in that chat only (a keyed term is a chat's
own): its IDF would be the chat's, which ranked worse on the dev sets than the whole table's.
So each term is matched on its own (`SELECT rowid, bm25(…) … MATCH 'body : "<key><term>"'`),
FTS5's per-chat IDF divided out of each row's bm25 (it counted exactly the rows returned: the
number of them), and the whole table's IDF put in instead: `turn_terms` counts, per token, the
index rows that hold it (kept with every insert and delete of an index row). A row's score is
then FTS5's bm25 over the unkeyed index, except that a term's count is of its exact token, not
of every token with its stem ("painting" counts the rows with "painting", not also those with
"painted"); N is FTS5's own row count (its averages record).

The `scopes` column keeps the chat's scope token, one token as before (so a row's length and the
average length bm25 uses are unchanged): it lists a chat's rows without words. Every row found
is read back from `turns` with `chat IN (…)`, so two chats whose keys collided (a 1 in 2^57
chance a pair) still never see each other's turns.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from nahida.memory.scopes import chat_scope
from nahida.memory.store.base import TextSearch
from nahida.memory.store.sqlite import fts
from nahida.memory.store.sqlite.db import Connection

_KEY_ALPHABET = "bcdfghjklmnpqrstvz0123456789"  # no vowel, no w/x/y (porter reads those)
KEY_CHARS = 12
_K1, _B = 1.2, 0.75  # FTS5's bm25 constants (its idf floor below too)
_BATCH = 200  # terms matched per statement (SQLite allows 500 SELECTs in a compound)
_AVERAGES_ROWID = 1  # FTS5's record of the row count and each column's token total


@lru_cache(maxsize=4096)
def chat_key(chat: str) -> str:
    """The prefix of every token a chat's turns hold in the index."""
    number = int.from_bytes(hashlib.blake2b(chat.encode("utf-8"), digest_size=8).digest())
    letters = []
    for _ in range(KEY_CHARS):
        number, digit = divmod(number, len(_KEY_ALPHABET))
        letters.append(_KEY_ALPHABET[digit])
    return "".join(letters)


def keyed_body(tokens: str, chat: str) -> str:
    """`tokens` (index text: tokens joined by spaces) as the index stores them for `chat`."""
    key = chat_key(chat)
    return " ".join(key + token for token in tokens.split())


def _terms(body: str) -> list[str]:
    """The distinct tokens of a stored (keyed) body, unkeyed."""
    return list(dict.fromkeys(token[KEY_CHARS:] for token in body.split()))


def add(
    conn: Connection, turn_id: int, tokens: str, chat: str, later: Counter[str] | None = None
) -> None:
    """Index a turn and count its terms (into `later`, when given, for `count_all`)."""
    body = keyed_body(tokens, chat)
    conn.execute(
        "INSERT INTO turns_fts (rowid, body, scopes) VALUES (?, ?, ?)",
        (turn_id, body, fts.scope_token(chat_scope(chat))),
    )
    terms = _terms(body)
    if later is not None:
        later.update(terms)
    elif terms:
        conn.execute(
            "INSERT INTO turn_terms (term, rows) SELECT value, 1 FROM json_each(?) WHERE true"
            " ON CONFLICT (term) DO UPDATE SET rows = rows + 1",
            (json.dumps(terms, ensure_ascii=False),),
        )


def count_all(conn: Connection, counts: Counter[str]) -> None:
    """Add each term's count at once (a bulk write's terms, gathered by `add`)."""
    conn.executemany(
        "INSERT INTO turn_terms (term, rows) VALUES (?, ?)"
        " ON CONFLICT (term) DO UPDATE SET rows = rows + excluded.rows",
        counts.items(),
    )


def remove(conn: Connection, where: str, params: Sequence[Any]) -> None:
    """Delete the index rows `rowid <where>` selects (`IN (SELECT …)`, `= ?`), uncounting
    their terms."""
    counts: Counter[str] = Counter()
    for (body,) in conn.execute(f"SELECT body FROM turns_fts WHERE rowid {where}", params):
        counts.update(_terms(body))
    conn.execute(f"DELETE FROM turns_fts WHERE rowid {where}", params)
    count_all(conn, Counter({term: -rows for term, rows in counts.items()}))
    conn.execute("DELETE FROM turn_terms WHERE rows <= 0")


def rebuild(conn: Connection) -> None:
    """Fill an empty index and `turn_terms` from `turns_fts_0015` (unkeyed bodies)."""
    counts: Counter[str] = Counter()
    found = conn.execute(
        "SELECT f.rowid, f.body, f.scopes, t.chat FROM turns_fts_0015 f"
        " JOIN turns t ON t.id = f.rowid"
    )
    while batch := found.fetchmany(1000):
        rows = []
        for turn_id, tokens, scopes, chat in batch:
            body = keyed_body(tokens, chat)
            counts.update(_terms(body))
            rows.append((turn_id, body, scopes))
        conn.executemany("INSERT INTO turns_fts (rowid, body, scopes) VALUES (?, ?, ?)", rows)
    conn.executemany("INSERT INTO turn_terms (term, rows) VALUES (?, ?)", sorted(counts.items()))


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint (big-endian 7-bit groups; a ninth byte holds 8 bits) at `at`."""
    value = 0
    for n in range(9):
        byte = data[at]
        at += 1
        if n == 8:
            return (value << 8) | byte, at
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value, at


def row_count(conn: Connection) -> int:
    """The number of rows FTS5's bm25 counts (the first varint of its averages record)."""
    found = conn.execute(
        "SELECT block FROM turns_fts_data WHERE id = ?", (_AVERAGES_ROWID,)
    ).fetchone()
    return _varint(bytes(found[0]), 0)[0] if found and found[0] else 0


def _idf(rows: int, holding: int) -> float:
    idf = math.log((rows - holding + 0.5) / (holding + 0.5))
    return idf if idf > 0.0 else 1e-6


def scores(conn: Connection, chats: Sequence[str], terms: Sequence[str]) -> dict[int, float]:
    """Every row of `chats` that holds a term, with its bm25 (higher is better)."""
    phrases = [(chat_key(chat) + term, term) for chat in chats for term in terms]
    total = row_count(conn)
    if not phrases or total == 0:
        return {}
    held = dict(
        conn.execute(
            "SELECT term, rows FROM turn_terms WHERE term IN (SELECT value FROM json_each(?))",
            (json.dumps(list(dict.fromkeys(terms)), ensure_ascii=False),),
        ).fetchall()
    )
    found: dict[int, float] = {}
    for start in range(0, len(phrases), _BATCH):
        batch = phrases[start : start + _BATCH]
        sql = " UNION ALL ".join(
            f"SELECT {n}, rowid, bm25(turns_fts, 1.0, 0.0) FROM turns_fts WHERE turns_fts MATCH ?"
            for n in range(len(batch))
        )
        matched = conn.execute(
            sql, [f"{fts.BODY_COLUMN} : {fts.quote(keyed)}" for keyed, _ in batch]
        ).fetchall()
        holding = Counter(n for n, _, _ in matched)
        weight = [  # a term's rows in the chat: a floor for its rows with the stem anywhere
            _idf(total, max(held.get(term, 0), holding[n])) / _idf(total, holding[n])
            for n, (_, term) in enumerate(batch)
        ]
        for n, turn_id, bm25 in matched:
            found[turn_id] = found.get(turn_id, 0.0) - bm25 * weight[n]
    return found


def ranked(
    conn: Connection,
    chats: Sequence[str],
    search: TextSearch,
    select: str,
    build: Callable[[Sequence[Any]], Any],
) -> list[Any]:
    """The best `search.limit` turns of `chats` for `search.terms` (and its moment and window),
    best first, latest first among equals; each `build` of `select`'s columns and its score
    (read from `turns t`, the best first, `search.limit` at a time until enough pass)."""
    found = scores(conn, chats, search.terms or ())
    order = sorted(found, key=lambda turn_id: (-found[turn_id], -turn_id))
    sql, params = fts.time_filter(
        f"SELECT t.id, {select} FROM turns t WHERE t.id IN (SELECT value FROM json_each(?))"
        " AND t.chat IN (SELECT value FROM json_each(?))",
        [json.dumps(list(chats), ensure_ascii=False)],
        "t.time",
        search,
    )
    kept: list[Any] = []
    for start in range(0, len(order), max(search.limit, 1)):
        chunk = order[start : start + search.limit]
        read = {r[0]: r[1:] for r in conn.execute(sql, [json.dumps(chunk), *params])}
        kept += [build((*read[i], found[i])) for i in chunk if i in read]
        if len(kept) >= search.limit:
            break
    return kept[: search.limit]
