"""Lark's send limit: about 5 messages per second into one chat.

A sliding window per chat: `acquire(chat)` returns at once while fewer than `rate` sends went to
that chat in the last `period` seconds, and otherwise sleeps until the oldest of them leaves the
window. Chats with no send inside the window are forgotten, so memory follows the number of chats
currently being written to, not all chats ever seen.
"""

from __future__ import annotations

from collections import deque

from nahida.clock import SYSTEM, Clock


class SendLimiter:
    def __init__(self, rate: int = 5, period: float = 1.0, *, clock: Clock = SYSTEM) -> None:
        if rate < 1 or period <= 0:
            raise ValueError(f"need rate >= 1 and period > 0, not {rate}/{period}")
        self.rate = rate
        self.period = period
        self._clock = clock
        self._sent: dict[str, deque[float]] = {}

    def __len__(self) -> int:
        """Chats with a send inside the window (after the last prune)."""
        return len(self._sent)

    async def acquire(self, chat: str) -> None:
        while True:
            now = self._clock.monotonic()
            self._prune(now)
            times = self._sent.setdefault(chat, deque())
            if len(times) < self.rate:
                times.append(now)  # no await since the check: concurrent senders cannot overshoot
                return
            await self._clock.sleep(times[0] + self.period - now)

    def _prune(self, now: float) -> None:
        horizon = now - self.period
        for chat in list(self._sent):
            times = self._sent[chat]
            while times and times[0] <= horizon:
                times.popleft()
            if not times:
                del self._sent[chat]
