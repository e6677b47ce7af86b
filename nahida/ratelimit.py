"""Per-chat reply rate limit (`bot.rate_limit.per_chat_per_minute`; 0 turns it off).

A sliding window: a chat may get at most `per_minute` replies in any 60 seconds. `allow(chat)`
takes one reply from the chat's allowance, or says no. While a chat is over its limit,
`take_notice(chat)` is True exactly once, so the runner sends a single "slow down" notice and stays
quiet afterwards; the notice is owed again only after the chat has been allowed a reply once
more. `retry_after(chat)` is how long until the next reply would be allowed, for a caller that
prefers to wait.

Memory is bounded: a chat whose last reply left the window holds nothing worth keeping and is
forgotten on the next call, and at most `max_chats` chats are tracked (the least recently used
goes first; forgetting only ever lets a reply through early, never blocks one).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field

from nahida.clock import SYSTEM, Clock


@dataclass(slots=True)
class _Window:
    sent: deque[float] = field(default_factory=deque)  # times of allowed replies, oldest first
    noticed: bool = False  # the "slow down" notice went out during this limited stretch


class RateLimiter:
    def __init__(
        self,
        per_minute: int,
        *,
        window: float = 60.0,
        max_chats: int = 10_000,
        clock: Clock = SYSTEM,
    ) -> None:
        if per_minute < 0:
            raise ValueError(f"per_minute must not be negative, not {per_minute}")
        if window <= 0 or max_chats < 1:
            raise ValueError("window must be positive and max_chats at least 1")
        self.per_minute = per_minute
        self.window = window
        self.max_chats = max_chats
        self._clock = clock
        self._chats: OrderedDict[str, _Window] = OrderedDict()  # least recently used first

    @property
    def enabled(self) -> bool:
        return self.per_minute > 0

    def __len__(self) -> int:
        """Chats currently tracked."""
        return len(self._chats)

    def allow(self, chat: str) -> bool:
        """Take one reply for `chat` if its allowance has room; False when it is over the limit."""
        if not self.enabled:
            return True
        now = self._clock.monotonic()
        self._forget_idle(now)
        state = self._touch(chat, now)
        if len(state.sent) >= self.per_minute:
            return False
        state.sent.append(now)
        state.noticed = False
        return True

    def take_notice(self, chat: str) -> bool:
        """True once per limited stretch: the caller should send its one "slow down" notice."""
        state = self._chats.get(chat)
        if state is None or state.noticed or len(state.sent) < self.per_minute:
            return False
        state.noticed = True
        return True

    def retry_after(self, chat: str) -> float:
        """Seconds until `allow(chat)` would succeed (0 when it would now)."""
        if not self.enabled:
            return 0.0
        state = self._chats.get(chat)
        if state is None:
            return 0.0
        now = self._clock.monotonic()
        self._expire(state, now)
        if len(state.sent) < self.per_minute:
            return 0.0
        return max(0.0, state.sent[0] + self.window - now)

    def _expire(self, state: _Window, now: float) -> None:
        edge = now - self.window
        while state.sent and state.sent[0] <= edge:
            state.sent.popleft()

    def _touch(self, chat: str, now: float) -> _Window:
        state = self._chats.get(chat)
        if state is None:
            state = self._chats[chat] = _Window()
            if len(self._chats) > self.max_chats:
                self._chats.popitem(last=False)
        else:
            self._chats.move_to_end(chat)
            self._expire(state, now)
        return state

    def _forget_idle(self, now: float) -> None:
        """Drop chats from the old end whose every reply has left the window."""
        edge = now - self.window
        while self._chats:
            state = next(iter(self._chats.values()))
            if state.sent and state.sent[-1] > edge:
                return
            self._chats.popitem(last=False)
