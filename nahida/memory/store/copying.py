"""What `nahida store copy` copies (docs/postgres.md, Moving memory between stores): the tables of
the store, described once for every backend, and what a backend does for the copy (`Side`).

A table is copied as neutral rows: tuples of plain Python values in the order of `columns`
(JSON as the parsed value, a flag as a bool, a time as a float, an id as an int or a str, a
vector as its float32 little-endian bytes), so two backends compare and write them alike: a
vector's bytes are its exact value, so a copy changes no vector in the last bit. Tables are
copied in `TABLES`' order, which is the order their references need (a turn names its session,
a chat its current session, a recall its turn), in batches in key order.

A searched table's rows carry their index text as well (`Indexed`): the jieba tokens joined by
spaces the write path indexed (`tokenize.index_text`), None for a row out of the index, or
`KEPT_AS_LEXEMES` where the backend keeps only what it made of them (PostgreSQL's turns and
episodes keep a tsvector): the copy then makes the text again from the row, as the write path
made it (`IndexRule.text`), before it hands the row to the other backend, which indexes it its
own way.

Adding a table to the copy is one entry in `TABLES` (and, for a searched table, its rule in each
backend's `copying.py`; for a column named otherwise in a backend, its name there); `NEVER`
lists what is not copied, and why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from nahida.memory.core.tokenize import index_text

Row = tuple[Any, ...]
KEPT_AS_LEXEMES: Literal[True] = True
Indexed = str | Literal[True] | None


@dataclass(frozen=True)
class IndexRule:
    """How a searched table's index text is made from its row (the write path's own recipe),
    and the column a search's moment and window apply to (the copy's checks search a window)."""

    text: Callable[[dict[str, Any]], str]
    time: str


@dataclass(frozen=True)
class Table:
    """One table as the copy sees it.

    `key`: its primary key columns (first in `columns`); `json`, `flags`: the columns holding
    JSON and booleans; `late`: columns referring to rows of the same table, written once the
    whole table is there (an item's `supersedes` may name an item later in key order);
    `append_only`: rows are only ever added (the audit trail): a row the target holds already
    is changed only after the table's new rows are in (a purge blanks older events' text, and
    the target allows that only once it holds the purge's own event); `memory`: a table of
    people's memory (a target holding a row in one holds a memory); `vectors`: the columns
    holding a vector; `upkeep`: the store's own work the table may be behind on (through the
    seam: a call in one write transaction, how much it did), done on the source until it does
    nothing before the table is read, so the rows copied are complete (the speakers of every
    turn); `unique`: columns unique besides the key: the target's rows the source no longer
    holds are removed before the table is written, so a row made again under a new key (an
    episode made again for its session) finds its values free."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...] = ("id",)
    json: frozenset[str] = field(default_factory=frozenset)
    flags: frozenset[str] = field(default_factory=frozenset)
    index: IndexRule | None = None
    late: tuple[str, ...] = ()
    append_only: bool = False
    memory: bool = False
    vectors: frozenset[str] = field(default_factory=frozenset)
    upkeep: Callable[[Any], int] | None = None
    unique: tuple[str, ...] = ()

    def position(self, column: str) -> int:
        return self.columns.index(column)

    def keyed(self, row: Row) -> Row:
        return row[: len(self.key)]

    def as_dict(self, row: Row) -> dict[str, Any]:
        return dict(zip(self.columns, row, strict=True))


def _columns(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# A turn's index text is its stored (already redacted) content's (`history.sessions.stored_text`).
TURN_TEXT = IndexRule(lambda row: index_text(row["content"]), "time")
# Both backends keep an item's index text (FTS5's row, PostgreSQL's `fts_body`); made again only
# for a backend that would not: `write.item_index`'s recipe.
ITEM_TEXT = IndexRule(lambda row: index_text(f"{row['title']} {row['content']}"), "created_at")
# An episode's: its keywords' and summary's tokens (`history.episodes.prepared`).
EPISODE_TEXT = IndexRule(
    lambda row: index_text(" ".join([*row["keywords"], row["summary"]])), "ended_at"
)
FOLD = 2000  # turns a fold of the speakers takes in a transaction


def _fold(tx: Any) -> int:
    return int(tx.people.fold(FOLD))


TABLES: tuple[Table, ...] = (
    Table("sessions", _columns("id chat title created_at updated_at turn_count"), memory=True),
    Table(
        "turns",
        _columns(
            "id session_id chat role speaker speaker_name content message_id time tool_calls"
            " addressed error hidden_by earlier_for delivery embed_hash"
        ),
        json=frozenset({"tool_calls"}),
        flags=frozenset({"addressed"}),
        index=TURN_TEXT,
    ),
    Table("chats", _columns("chat current_session last_active"), key=("chat",)),
    Table(
        "memory_items",
        _columns(
            "id scope kind title content status confidence importance sensitivity source"
            " subject_user speaker_user slot evidence supersedes valid_from valid_until"
            " last_accessed access_count created_at updated_at embed_hash"
        ),
        json=frozenset({"evidence"}),
        index=ITEM_TEXT,
        late=("supersedes",),
        memory=True,
    ),
    Table(
        "memory_events",
        _columns("id item_id action actor before after reason time"),
        json=frozenset({"before", "after"}),
        append_only=True,
    ),
    Table(
        "memory_candidates",
        _columns(
            "id scope kind title content confidence importance sensitivity source subject_user"
            " speaker_user slot evidence status item_id reason created_at decided_at decided_by"
            " valid_from valid_until op target note"
        ),
        json=frozenset({"evidence"}),
        memory=True,
    ),
    Table(
        "session_summaries",
        _columns(
            "session_id chat summary through_turn rounds total_rounds rolls failures last_error"
            " updated_at"
        ),
        key=("session_id",),
        memory=True,
    ),
    # `tokens` are the bullet's words as the write path cut them: kept on both sides as they
    # are. `user` is PostgreSQL's `person` (a reserved word there), as in `speakers`.
    Table(
        "profile_entries",
        _columns(
            "id user section text tokens sensitivity source chat status created_at updated_at"
        ),
        memory=True,
    ),
    Table(
        "episodes",
        _columns(
            "seq id session_id chat summary keywords started_at ended_at turn_count created_at"
            " embed_hash"
        ),
        key=("seq",),
        unique=("id", "session_id"),
        json=frozenset({"keywords"}),
        index=EPISODE_TEXT,
        memory=True,
    ),
    Table(
        "dream_cursors",
        _columns("chat through_turn paused updated_at"),
        key=("chat",),
        flags=frozenset({"paused"}),
    ),
    Table(
        "dream_runs",
        _columns(
            "seq id chat trigger holder from_turn through_turn turns model calls tokens_in"
            " tokens_out proposals applied pending rejected outcome error report fates started_at"
            " finished_at written"
        ),
        key=("seq",),
        unique=("id",),
        json=frozenset({"report", "fates"}),
        flags=frozenset({"written"}),
    ),
    Table(
        "turn_recalls",
        _columns("turn_id chat time hits items turns episodes"),
        key=("turn_id",),
        json=frozenset({"items", "turns", "episodes"}),
    ),
    # the speakers of every turn (the source folded first); the target's cursor then stands at
    # its last turn (`Side.finish`), or its next fold would count them again
    Table(
        "speakers",
        _columns("user chat name turns first_seen last_seen"),
        key=("user", "chat", "name"),
        upkeep=_fold,
    ),
    Table(
        "embeddings",
        _columns("id provider model dimension hash vector created_at"),
        vectors=frozenset({"vector"}),
    ),
    Table(
        "job_runs",
        _columns("id job holder started_at finished_at outcome counts error"),
        json=frozenset({"counts"}),
    ),
    Table(
        "markdown_files",
        _columns("path hash mtime snapshot rendered_at"),
        key=("path",),
        json=frozenset({"snapshot"}),
    ),
    Table("named_state", _columns("key value updated_at"), key=("key",)),
    Table(
        "answered_commands",
        _columns("chat message_id time answered_at"),
        key=("chat", "message_id", "time"),
    ),
)

# Never copied: state that belongs to the processes running on a store, not to its memory.
NEVER: dict[str, str] = {
    "job_leases": "which process may run a job now: the target starts with none",
    "schema_migrations": "each store's own schema history",
    "speakers_folded": "the cursor of the turns the speakers count: set past the copied turns",
}

MEMORY_ID = "memory.id"  # named state: which memory a store holds (a copy holds the same)


def same_index(a: Indexed, b: Indexed) -> bool:
    """Whether two index entries are the same: both out of the index, or both in it with the
    same text (a backend keeping lexemes only is taken at its word: its text is the row's)."""
    if a is None or b is None:
        return a is b
    return a is KEPT_AS_LEXEMES or b is KEPT_AS_LEXEMES or a == b


@dataclass
class Batch:
    """Rows of one table, in key order, with their index entries (a searched table's)."""

    rows: list[Row]
    index: list[Indexed] | None = None


class Side(Protocol):
    """A store as the copy reads and writes it: whole tables a batch at a time, under the
    store's own types and search index. Each call is one transaction."""

    @property
    def store(self) -> Any:
        """The `Store` (searches and the memory's named state go through the seam)."""

    @property
    def where(self) -> str:
        """The store in words (a path, or a server without its password)."""

    def same_as(self, other: Side) -> bool:
        """Whether `other` is this very database."""

    def read(self, table: Table, after: Row | None, limit: int) -> Batch:
        """Up to `limit` rows whose key comes after `after` (None: from the first), in key order."""

    def lookup(self, table: Table, keys: Sequence[Row]) -> Batch:
        """The rows of these keys this store holds (any order)."""

    def write(self, table: Table, batch: Batch, *, update: bool = True) -> None:
        """Insert these rows, or change the rows of their keys to them (`update=False`: leave a
        row already there alone), and index them as the store does: text given, or made."""

    def delete(self, table: Table, keys: Sequence[Row]) -> None:
        """Remove the rows of these keys (and their index entries)."""

    def count(self, table: Table) -> int: ...

    def indexed(self, table: Table) -> int:
        """How many of the table's rows are in its search index."""

    def finish(self, table: Table) -> None:
        """After a table was written: the store's own upkeep (the next id PostgreSQL hands, the
        speakers' cursor past the copied turns)."""

    def close(self) -> None: ...
