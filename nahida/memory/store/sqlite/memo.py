"""`Memo`: what recall asks the SQLite store about every answered message, remembered exactly.

Recall asks the same few questions for every message, and their answers rarely change: does this
scope hold an active item (of this kind), does this chat hold history besides the turns the prompt
shows, what is this person's profile card, has this session a warm summary. Asked of SQLite they
are four statements of every answered message's ~17 (docs/throughput.md: the store's CPU a
message 5-10 % lower without them). The memo keeps each answer until something that could change
it happens, and it is exact:

- a change made through this connection reaches it as it happens: temporary triggers (this
  connection's only) on the tables behind the answers call back into Python with the keys the
  change touched, inside the statement. A unit that archives an item and then asks about its
  scope in the same transaction reads the database again;
- a transaction that does not end in a clean COMMIT (a failed write rolled back, a savepoint
  rolled back, SQLite's own rollback after an error) forgets everything (`clear`): what was read
  inside it may have been rolled back. `Database` calls `clear` on every such path;
- changes committed by other connections (the CLI, a second bot process, a history import) are
  seen by `PRAGMA data_version`, read by `sync` at the start of every transaction (the read fixes
  the transaction's snapshot, so nothing committed after it is visible to it either): when the
  version moved, everything is forgotten.

A turn added to a chat the memo knows is added to its entry instead of dropping it (two turns are
added per answered message). A chat's entry holds the ids of its user and assistant turns that are
not hidden, up to `TURN_IDS` of them; beyond that only that there are more (`MORE`), which is all
`any_besides` needs while the prompt shows fewer. Each kind keeps at most `MAX_ENTRIES` answers
(the oldest goes first).

The prompt windows' rows are kept the same way, in `tails` (`tails.py`): a session's latest
turns, which the turns it adds extend.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Final, TypeVar

from nahida.memory.store.sqlite.rows import TURN_COLUMNS
from nahida.memory.store.sqlite.tails import Tails

if TYPE_CHECKING:
    from nahida.memory.store.sqlite.connection import Connection

V = TypeVar("V")

MAX_ENTRIES = 10_000  # answers kept per kind
TURN_IDS = 64  # a chat's countable turns kept by id; beyond, only `MORE`
MORE: Final = "more"  # a chat with more than TURN_IDS countable turns

SCOPE = "scope"  # (scope, kind or None) → (any active item, any active public item)
CHAT = "chat"  # chat → ids of its user/assistant turns not hidden, or MORE
PROFILE = "profile"  # (user, public only) → the active profile entries
SUMMARY = "summary"  # session id → its warm summary or None
TAIL = "tail"  # session id → its latest turns' rows (`Tails`)

COUNTABLE = ("user", "assistant")  # the roles `any_besides` counts

_TRIGGERS = (
    # memory items: who holds an active one (of which kind, how sensitive)
    "AFTER INSERT ON main.memory_items BEGIN"
    " SELECT nahida_memo_item(NEW.scope, NEW.kind, NULL, NULL); END",
    "AFTER UPDATE OF scope, kind, status, sensitivity ON main.memory_items BEGIN"
    " SELECT nahida_memo_item(OLD.scope, OLD.kind, NEW.scope, NEW.kind); END",
    "AFTER DELETE ON main.memory_items BEGIN"
    " SELECT nahida_memo_item(OLD.scope, OLD.kind, NULL, NULL); END",
    # turns: a chat's countable ones (an added turn is told by `TurnTable.add`: a trigger on
    # INSERT would make SQLite journal every insert's pages, doubling its cost)
    "AFTER UPDATE OF id, chat, role, hidden_by ON main.turns BEGIN"
    " SELECT nahida_memo_drop('chat', OLD.chat, NEW.chat); END",
    "AFTER DELETE ON main.turns BEGIN SELECT nahida_memo_drop('chat', OLD.chat, NULL);"
    " SELECT nahida_memo_drop('tail', OLD.session_id, NULL); END",
    # turns: any value a prompt's window reads (not their vectors' `embed_hash`)
    f"AFTER UPDATE OF {TURN_COLUMNS} ON main.turns BEGIN"
    " SELECT nahida_memo_drop('tail', OLD.session_id, NEW.session_id); END",
    # profile entries: any change to a person's card
    "AFTER INSERT ON main.profile_entries BEGIN"
    " SELECT nahida_memo_drop('profile', NEW.user, NULL); END",
    "AFTER UPDATE ON main.profile_entries BEGIN"
    " SELECT nahida_memo_drop('profile', OLD.user, NEW.user); END",
    "AFTER DELETE ON main.profile_entries BEGIN"
    " SELECT nahida_memo_drop('profile', OLD.user, NULL); END",
    # warm summaries
    "AFTER INSERT ON main.session_summaries BEGIN"
    " SELECT nahida_memo_drop('summary', NEW.session_id, NULL); END",
    "AFTER UPDATE ON main.session_summaries BEGIN"
    " SELECT nahida_memo_drop('summary', OLD.session_id, NEW.session_id); END",
    "AFTER DELETE ON main.session_summaries BEGIN"
    " SELECT nahida_memo_drop('summary', OLD.session_id, NULL); END",
)


class Memo:
    """Answers by kind and key, kept exact by this connection's triggers, `sync` and `clear`."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.version: int | None = None  # PRAGMA data_version at the last `sync`
        self.off = False  # answer by `load` alone, keeping nothing (a batch with raw SQL)
        self.hits = 0
        self.misses = 0
        self._kinds: dict[str, dict[Hashable, Any]] = {
            SCOPE: {},
            CHAT: {},
            PROFILE: {},
            SUMMARY: {},
        }
        self.tails = Tails()  # kept the same way, asked by `TurnTable.window` (not counted)
        conn.create_function("nahida_memo_item", 4, self._item_changed)
        conn.create_function("nahida_memo_drop", 3, self._dropped)
        for number, trigger in enumerate(_TRIGGERS):
            conn.execute(f"CREATE TEMP TRIGGER IF NOT EXISTS nahida_memo_{number} {trigger}")

    def get(self, kind: str, key: Hashable, load: Callable[[], V]) -> V:
        """The answer kept for `key`, or `load()`'s (then kept)."""
        if self.off:
            return load()
        entries = self._kinds[kind]
        try:
            value: V = entries[key]
        except KeyError:
            self.misses += 1
            value = load()
            if len(entries) >= MAX_ENTRIES:
                del entries[next(iter(entries))]
            entries[key] = value
            return value
        self.hits += 1
        return value

    def sync(self) -> None:
        """At the start of a transaction: forget everything if another connection committed
        since the last one (this connection's own commits do not move the version)."""
        version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self.version:
            self.clear()
            self.version = version

    def clear(self) -> None:
        for entries in self._kinds.values():
            entries.clear()
        self.tails.clear()

    def turn_added(self, chat: str, turn_id: int, role: str) -> None:
        """From `TurnTable.add`, the only statement that adds turns (`INSERT INTO turns`)."""
        entries = self._kinds[CHAT]
        ids = entries.get(chat)
        if ids is None or ids is MORE or role not in COUNTABLE:
            return
        ids.add(turn_id)
        if len(ids) > TURN_IDS:
            entries[chat] = MORE

    # -- called by the triggers, inside the statement that made the change ----------------------

    def _item_changed(self, scope: Any, kind: Any, new_scope: Any, new_kind: Any) -> None:
        entries = self._kinds[SCOPE]
        for key in ((scope, None), (scope, kind), (new_scope, None), (new_scope, new_kind)):
            entries.pop(key, None)

    def _dropped(self, kind: str, key: Any, new_key: Any) -> None:
        if kind == TAIL:
            self.tails.drop(key)
            self.tails.drop(new_key)
            return
        entries = self._kinds[kind]
        if kind == PROFILE:
            for user in (key, new_key):
                entries.pop((user, True), None)
                entries.pop((user, False), None)
            return
        entries.pop(key, None)
        entries.pop(new_key, None)
