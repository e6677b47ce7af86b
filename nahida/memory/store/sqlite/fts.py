"""FTS5 for the SQLite store: scope tokens and MATCH expressions built from query terms.

Every FTS table of the store has the same two columns:

    CREATE VIRTUAL TABLE ... USING fts5(
        body,      -- tokenize.index_text(text): jieba tokens joined by spaces
        scopes,    -- scopes_text([key, ...]): one scope_token() per way the row may be seen
        tokenize = 'porter unicode61 remove_diacritics 0'
    )

FTS5's porter wrapper stems each token, in the index and in the query alike ("painted",
"painting" → "paint"); it changes only ASCII suffixes, so Chinese tokens pass through unchanged,
and a scope token can lose at most its last few hex digits: two scopes would have to share their
first 19 hex digits (76 bits of a hash) to collide.

An item row carries one key per way it may be seen: its scope, and for a public item also
`<scope>#public`. A `Visibility` becomes the keys it may match (`visibility_keys`: a scope seen
in full by its own key, a scope seen in part by its public key), and
`scoped_match(terms, keys)` gives `scopes : ("zs…" OR "zs…") AND body : ("t1" OR "t2")`, so the
filter sits inside the MATCH and applies before ranking. Rank with `bm25(table, 1.0, 0.0)`
(weight 0 for `scopes`) so the scope tokens do not move scores. Only quoted terms are emitted:
no user text can become FTS5 syntax. `Compaction` keeps a small index (items, episodes) in few
segments.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

from nahida.memory.core.scopes import Visibility, chat_scope
from nahida.memory.store.sqlite.connection import Connection
from nahida.memory.store.values import TextSearch, VectorSearch

BODY_COLUMN = "body"
SCOPES_COLUMN = "scopes"
PUBLIC_SUFFIX = "#public"
EVERY_ROW = ""  # an "expression" that filters nothing (no MATCH at all)


@lru_cache(maxsize=4096)  # asked for every stored turn, of a few scopes
def scope_token(scope: str) -> str:
    """A deterministic single unicode61 token for a scope string such as `chat:onebot:group:1`."""
    return "zs" + hashlib.blake2b(scope.encode("utf-8"), digest_size=10).hexdigest()


def scopes_text(scopes: Iterable[str]) -> str:
    """The text to store in the `scopes` column of a row visible in these scopes."""
    return " ".join(dict.fromkeys(scope_token(s) for s in scopes))


def item_keys(scope: str, sensitivity: str) -> list[str]:
    """The visibility keys an item row carries in its `scopes` column."""
    keys = [scope]
    if sensitivity == "public":
        keys.append(scope + PUBLIC_SUFFIX)
    return keys


def visibility_keys(visibility: Visibility) -> list[str]:
    """The keys a viewer may match: a fully seen scope's own key (every row of it carries that
    one, its public rows the public key as well), the public key of the rest. Each key is one
    more phrase FTS5 sets up and counts per query, so none is given twice."""
    keys = list(visibility.full)
    keys += [scope + PUBLIC_SUFFIX for scope in visibility.public_only]
    return list(dict.fromkeys(keys))


def match(terms: Sequence[str]) -> str | None:
    """`"t1" OR "t2" ...`, or None when there is nothing to search for."""
    if not terms:
        return None
    return " OR ".join(_quote(t) for t in terms)


def scoped_match(terms: Sequence[str] | None, keys: Sequence[str]) -> str | None:
    """An expression for rows in any of `keys` that match any term; `terms=None` matches every
    row of those keys. None (search nothing) when no key or no term is given."""
    if not keys:
        return None
    scope_part = " OR ".join(_quote(t) for t in dict.fromkeys(scope_token(s) for s in keys))
    expression = f"{SCOPES_COLUMN} : ({scope_part})"
    if terms is None:
        return expression
    body = match(terms)
    if body is None:
        return None
    return f"{expression} AND {BODY_COLUMN} : ({body})"


def chats_match(terms: Sequence[str] | None, chats: Sequence[str] | None) -> str | None:
    """`scoped_match` for rows indexed under their chat's scope (turns, episodes): of these
    chats, or of every chat when `chats` is None (an admin's search)."""
    if chats is not None:
        return scoped_match(terms, [chat_scope(chat) for chat in chats])
    if terms is None:
        return EVERY_ROW
    body = match(terms)
    return f"{BODY_COLUMN} : ({body})" if body else None


def _quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def time_filter(
    sql: str, params: list[Any], column: str, search: TextSearch | VectorSearch
) -> tuple[str, list[Any]]:
    """`sql` and `params` with the search's moment (nothing later) and window added."""
    if search.at is not None:
        sql += f" AND {column} <= ?"
        params = [*params, search.at]
    if search.window is not None:
        sql += f" AND {column} >= ? AND {column} < ?"
        params = [*params, *search.window]
    return sql, params


def like_escape(text: str) -> str:
    """`text` for a LIKE pattern with `ESCAPE '\\'`: its own % and _ match themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def ranked(
    conn: Connection,
    table: str,
    select: str,
    join: str,
    time_column: str,
    expression: str | None,
    search: TextSearch,
    row: Callable[[Any, tuple[Any, ...]], Any] | None = None,
    records_after: bool = False,
) -> list[Any]:
    """Rows of `table` joined with their records that match `expression` (`EVERY_ROW`: all),
    best first, with a `score` column (higher is better); for a search without terms, the latest
    rows. None: nothing to search for. `row` builds each row (default: the connection's).

    `records_after` (`select` reads the records only, not `f`): a search with terms and no
    moment or window ranks the rowids alone and joins the best `limit` of them to their
    records, where the one query joined every match and sorted it whole with its record's
    columns (the same rows in the same order: 5 % less a search on 6,000 turns, 12 % on
    LoCoMo's 2,760, 23 % on 124,066 turns of one chat)."""
    if expression is None:
        return []
    limit = int(search.limit)
    bm25 = f"-bm25({table}, 1.0, 0.0)"
    if records_after and search.terms is not None and search.at is None and search.window is None:
        sql = (
            f"SELECT {select}, f.score AS score FROM (SELECT rowid, {bm25} AS score FROM {table}"
            f" WHERE {table} MATCH ? ORDER BY score DESC LIMIT {limit}) f"
            f" JOIN {join} ORDER BY f.score DESC"
        )
        params = [expression]
    else:
        where, params = "", list[Any]()
        if expression != EVERY_ROW:
            where, params = f" AND {table} MATCH ?", [expression]
        where, params = time_filter(where, params, time_column, search)
        # ordered by the score column, not by bm25() again: SQLite would score every match twice
        score, order = bm25, "score DESC"
        if search.terms is None:
            score, order = "1.0", f"{time_column} DESC"
        sql = (
            f"SELECT {select}, {score} AS score FROM {table} f JOIN {join}"
            f" WHERE 1{where} ORDER BY {order} LIMIT {limit}"
        )
    cursor = conn.cursor()
    if row is not None:
        cursor.row_factory = row
    return cursor.execute(sql, params).fetchall()


class Compaction:
    """Keeps a small FTS5 index in few segments: every write leaves a segment of its own (one
    row a transaction), and a search looks every phrase up in each (16 segments made an episode
    search of 1,000 rows cost 0.7 ms). After `EVERY` writes, or a `RATIO`-th of the index's
    rows when that is more (a rebuild re-reads every row: a few rows of work per write however
    large it grows), the index is rebuilt in one segment from its own content — up to
    `MAX_ROWS` rows (~0.1 s of the database thread); a larger index keeps FTS5's own merging,
    so no rebuild ever holds up the chats for long. An index searched far more often than
    written (the items: recall searches them for most messages, extraction writes one now and
    then) is rebuilt sooner, at the first write after as many searches as a rebuild costs
    (`ROWS_PER_SEARCH`).

    FTS5's `rebuild`, not its `merge`: the `merge` command corrupted an index under a stress
    test on SQLite 3.40.1 (the standard library's build); `rebuild` passed the same test there
    and on sqlean's. It runs inside the writer's transaction, so it rolls back with it."""

    COMMAND = "rebuild"
    EVERY = 16
    RATIO = 16
    MAX_ROWS = 20_000
    # A rebuild costs a little for every row, and each search over many segments costs more
    # than over one: worth a rebuild once the searches since the last one number a fiftieth of
    # the rows.
    ROWS_PER_SEARCH = 50

    def __init__(self, table: str) -> None:
        self.table = table
        self._writes = 0
        self._after = self.EVERY
        self._searches = 0
        self._rows: int | None = None  # at the last count (None: too many to rebuild)
        self._sized = False  # counted since this process opened the index

    def searched(self) -> None:
        self._searches += 1

    def written(self, conn: Connection) -> None:
        self._writes += 1
        if self._due(conn):
            self._compact(conn)

    def _due(self, conn: Connection) -> bool:
        if self._writes >= self._after:
            return True
        if not self._searches:
            return False
        if not self._sized:  # once a process; then kept up by `_compact`
            self._size(self._count(conn))
        rows = self._rows
        return rows is not None and self._searches * self.ROWS_PER_SEARCH >= rows + self._writes

    def _count(self, conn: Connection) -> int:
        return int(conn.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0])

    def _size(self, rows: int) -> None:
        self._rows, self._sized = (rows if rows <= self.MAX_ROWS else None), True

    def rebuild(self, conn: Connection) -> None:
        """Rebuild the index now, whatever its size: a purge leaves none of a deleted row's
        tokens in it."""
        conn.execute(f"INSERT INTO {self.table} ({self.table}) VALUES ('rebuild')")
        self._writes = self._searches = 0

    def _compact(self, conn: Connection) -> None:
        table = self.table
        rows = self._count(conn)
        if rows <= self.MAX_ROWS:
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('{self.COMMAND}')")
        self._writes, self._after = 0, max(self.EVERY, rows // self.RATIO)
        self._searches = 0
        self._size(rows)


class Merging(Compaction):
    """`Compaction` for the turns index, which grows to hundreds of thousands of rows: FTS5's
    `optimize`, which merges the segments as they are (about a microsecond a row: 0.01 s at
    6,000 turns, 0.1 s at 100,000), where a rebuild would re-read every turn. FTS5's own merging
    leaves a dozen segments or more, and a search walks each phrase's doclist in all of them
    and merges what it finds: the turns query costs a quarter to a third less on 6,000 turns
    kept merged; little less at 100,000, where walking the doclists is most of it.

    Only on SQLite 3.50 and newer (`merging_is_safe`), where it passed a stress test: 8,000 to
    20,000 rows written in batches of units, each unit in a savepoint and a tenth of them rolled
    back (as a failed unit of a write batch is), a twentieth of the batches rolled back whole,
    rows deleted and updated, `optimize` every 7 to 50 writes; FTS5's integrity check passed and
    every search found what an untouched index found, with the same bm25. On 3.40.1, the
    standard library's build here, the same test failed ("database disk image is malformed" at
    a savepoint's release), as `merge` had; `rebuild` passed it.

    Between two merges every transaction leaves a segment, and FTS5's own merging starts only
    every 64 leaf pages written or at 16 segments of a level (its `crisismerge`): ten commits
    after a merge a search costs a multiple of what it cost merged (each phrase is looked up in
    each segment, twice with bm25). While the index is searched often, its `crisismerge` is 2
    (`CRISIS_SEARCHED`): two segments of one level are merged as the second is written, so a
    few small ones remain besides the merged one; searches get cheaper for a little more work a
    commit. Judged
    anew every `CRISIS_EVERY` writes from the searches among them: observed talk alone, or a
    group that mostly chats among itself, keeps FTS5's default. The same stress test with
    `crisismerge` 2 (and `optimize` every 0, 7 and 300 writes) passed on 3.50.4 and 3.40.1."""

    COMMAND = "optimize"
    MAX_ROWS = 200_000  # beyond it a merge would hold the database thread too long
    # A merge costs work for each write since the last one and saves every later search more:
    # it is worth it when a search comes at least every 8 writes (a group that mostly chats
    # among itself, or observed talk alone, is left to FTS5's own merging).
    WRITES_PER_SEARCH = 8
    # Eager merging costs a little each write and saves each search more: worth it with a
    # search at least every 4 writes (an answered message writes two turns and searches once).
    CRISIS_EVERY = 64
    CRISIS_WRITES_PER_SEARCH = 4
    CRISIS_SEARCHED = 2
    CRISIS_DEFAULT = 16  # FTS5's own

    def __init__(self, table: str) -> None:
        super().__init__(table)
        self._crisis_writes = 0
        self._crisis_searches = 0

    def searched(self) -> None:
        super().searched()
        self._crisis_searches += 1

    def written(self, conn: Connection) -> None:
        super().written(conn)
        self._crisis_writes += 1
        if self._crisis_writes >= self.CRISIS_EVERY:
            often = self._crisis_searches * self.CRISIS_WRITES_PER_SEARCH >= self._crisis_writes
            self._set_crisismerge(conn, self.CRISIS_SEARCHED if often else self.CRISIS_DEFAULT)
            self._crisis_writes = self._crisis_searches = 0

    def _set_crisismerge(self, conn: Connection, value: int) -> None:
        """Set the index's `crisismerge` (kept in its config table, so read there each time: a
        transaction rolled back takes a change with it)."""
        table = self.table
        row = conn.execute(f"SELECT v FROM {table}_config WHERE k = 'crisismerge'").fetchone()
        if (self.CRISIS_DEFAULT if row is None else int(row[0])) != value:
            conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('crisismerge', ?)", (value,))

    def _due(self, conn: Connection) -> bool:
        return (
            self._writes >= self._after and self._searches * self.WRITES_PER_SEARCH >= self._writes
        )


MERGING_SAFE_FROM = (3, 50, 0)  # the oldest SQLite `optimize` passed the stress test on


def merging_is_safe(conn: Connection) -> bool:
    """Whether this connection's SQLite may run FTS5's `optimize` (`Merging`)."""
    version = conn.execute("SELECT sqlite_version()").fetchone()[0]
    return tuple(int(part) for part in version.split(".")[:3]) >= MERGING_SAFE_FROM
