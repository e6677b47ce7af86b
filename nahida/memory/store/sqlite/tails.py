"""`Tails`: each busy session's latest turns, kept as rows, so a prompt's window needs no SQL.

Every answered message reads its session's last 20–30 turns (`TurnTable.window`). Asked of
SQLite that is one index walk and a table lookup a row, on pages that many chats' turns share:
7–10 % of the store's CPU a message (docs/throughput.md). A tail holds the rows that query
returns, exactly as SQLite returns them: a turn added through the store is appended as the row
a read of it would return (`history._as_read`); anything else that could change a window drops
the session's tail (`Memo`'s triggers on the turns, a rolled-back write, another connection's
commit), and the next window is read by SQL again and kept.

A tail is a suffix: every turn of the session that is not hidden and has an id of at least
`start` is among its rows (start 0: all of them). A window is answered from it when that covers
what the window may hold; otherwise by SQL.
"""

from __future__ import annotations

from typing import Any

Row = tuple[Any, ...]  # `rows.TURN_COLUMNS`: the id first, the content fifth

# What is kept, the session read least recently going first beyond any of these (~600 bytes a
# row of a short chat line: the budget is ~20 MB, more only for long texts, up to `CHARS`). A
# tail holds as many rows as its window and the turn after it (default: 21, 31 with a summary).
BUDGET = 32_768  # rows of all tails (a thousand busy chats' windows)
CHARS = 2_000_000  # the kept turns' text, in characters
ENTRIES = 2048  # sessions
_CONTENT = 4


class Tail:
    __slots__ = ("cap", "chars", "rows", "start")

    def __init__(self, found: list[Row], start: int, cap: int) -> None:
        self.rows = found  # oldest first
        self.start = start
        self.cap = cap  # rows kept at most
        self.chars = sum(len(row[_CONTENT]) for row in found)

    def window(self, before: int, limit: int, after: int) -> list[Row] | None:
        """The last `limit` rows with `after < id < before`, or None when some of them may be
        older than the tail."""
        found = self.rows
        end = len(found)
        while end and found[end - 1][0] >= before:
            end -= 1
        begin = max(0, end - limit)
        while begin < end and found[begin][0] <= after:
            begin += 1
        if end - begin < limit and self.start > after + 1:
            return None
        return found[begin:end]


class Tails:
    """The sessions' tails, least recently read first, within `BUDGET`, `CHARS` and `ENTRIES`."""

    def __init__(self) -> None:
        self._tails: dict[str, Tail] = {}
        self._rows = 0
        self._chars = 0

    def __contains__(self, session_id: str) -> bool:
        return session_id in self._tails

    def window(self, session_id: str, before: int, limit: int, after: int) -> list[Row] | None:
        """`TurnTable.window`'s rows from the session's tail, or None (no tail, or it is too
        short for this window)."""
        tails = self._tails
        tail = tails.pop(session_id, None)
        if tail is None:
            return None
        tails[session_id] = tail  # read most recently
        return tail.window(before, limit, after)

    def keep(self, session_id: str, found: list[Row], after: int, limit: int) -> None:
        """A window read by SQL: `found`, the session's last `limit` turns (oldest first) with
        an id above `after` that are not hidden — all of them if fewer."""
        self.drop(session_id)
        start = after + 1 if len(found) < limit else found[0][0]
        tail = self._tails[session_id] = Tail(found, start, limit)
        self._rows += len(found)
        self._chars += tail.chars
        self._shrink()

    def added(self, session_id: str, row: Row | None) -> None:
        """A turn the store added, at the end of its session: `row` as a read would return it,
        or None when that cannot be told (the session's tail is dropped)."""
        tail = self._tails.get(session_id)
        if tail is None:
            return
        found = tail.rows
        # an added turn's id is above its session's others; were it not, the tail is dropped
        if row is None or (found and found[-1][0] >= row[0]):
            self.drop(session_id)
            return
        found.append(row)
        size = len(row[_CONTENT])
        if len(found) > tail.cap:
            size -= len(found.pop(0)[_CONTENT])
            tail.start = found[0][0]
        else:
            self._rows += 1
        tail.chars += size
        self._chars += size
        self._shrink()

    def drop(self, session_id: Any) -> None:
        tail = self._tails.pop(session_id, None)
        if tail is not None:
            self._rows -= len(tail.rows)
            self._chars -= tail.chars

    def clear(self) -> None:
        self._tails.clear()
        self._rows = 0
        self._chars = 0

    def _shrink(self) -> None:
        tails = self._tails
        while tails and (len(tails) > ENTRIES or self._rows > BUDGET or self._chars > CHARS):
            self.drop(next(iter(tails)))
