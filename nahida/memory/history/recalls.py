"""What each answered prompt was given from memory, held from the prompt (`Recall.block_with`)
to its reply (`Sessions.record_reply`), whose write records it (`RecallRows`): recording it
costs the reply path no round trip to the store of its own.

A turn whose reply is never stored (the model failed, the bot stopped) is dropped: by
`Sessions.mark_error`, else as the oldest once more turns than `size` wait.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from nahida.memory.core.models import Hit
from nahida.memory.store.values import RecallRecord

SIZE = 1024  # turns waiting for their reply (the bot answers at most `bus.concurrency` at once)


class PendingRecalls:
    """Per user turn, the hits its prompt's memory block kept, until the reply is stored."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._hits: OrderedDict[int, Sequence[Hit]] = OrderedDict()

    def note(self, turn_id: int, hits: Sequence[Hit]) -> None:
        """The hits a prompt for `turn_id` was given (none: nothing to record)."""
        self._hits.pop(turn_id, None)
        if not hits:
            return
        self._hits[turn_id] = tuple(hits)
        while len(self._hits) > self.size:
            self._hits.popitem(last=False)

    def take(self, turn_id: int, chat: str, at: float) -> RecallRecord | None:
        """The record of what the turn's prompt was given, answered at `at`; None when nothing
        was recorded for it. It is held no longer."""
        hits = self._hits.pop(turn_id, None)
        return None if hits is None else RecallRecord.of(turn_id, chat, at, hits)

    def drop(self, turn_id: int) -> None:
        self._hits.pop(turn_id, None)

    def __len__(self) -> int:
        return len(self._hits)
