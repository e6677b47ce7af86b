"""The per-chat reply rate limiter (`nahida/ratelimit.py`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nahida.clock import VirtualClock
from nahida.ratelimit import RateLimiter


def test_limits_each_chat_separately() -> None:
    clock = VirtualClock()
    limiter = RateLimiter(3, clock=clock)
    assert [limiter.allow("a") for _ in range(4)] == [True, True, True, False]
    assert limiter.allow("b") is True


def test_sliding_window_frees_one_reply_at_a_time() -> None:
    clock = VirtualClock()
    limiter = RateLimiter(2, clock=clock)
    assert limiter.allow("a")
    clock.now += 30
    assert limiter.allow("a")
    assert not limiter.allow("a")
    assert limiter.retry_after("a") == pytest.approx(30.0)
    clock.now += 30  # the first reply left the window, the second has not
    assert limiter.retry_after("a") == 0.0
    assert limiter.allow("a")
    assert not limiter.allow("a")


def test_one_notice_per_limited_stretch() -> None:
    clock = VirtualClock()
    limiter = RateLimiter(1, clock=clock)
    assert limiter.take_notice("a") is False  # not limited
    assert limiter.allow("a")
    assert not limiter.allow("a")
    assert limiter.take_notice("a") is True
    assert not limiter.allow("a")
    assert limiter.take_notice("a") is False  # already told
    clock.now += 61
    assert limiter.allow("a")  # a new stretch starts
    assert not limiter.allow("a")
    assert limiter.take_notice("a") is True


def test_zero_means_unlimited() -> None:
    limiter = RateLimiter(0)
    assert all(limiter.allow("a") for _ in range(1000))
    assert limiter.retry_after("a") == 0.0 and len(limiter) == 0


def test_idle_chats_are_forgotten() -> None:
    clock = VirtualClock()
    limiter = RateLimiter(5, clock=clock)
    for chat in range(100):
        limiter.allow(f"c{chat}")
    assert len(limiter) == 100
    clock.now += 61
    limiter.allow("fresh")
    assert len(limiter) == 1


def test_tracked_chats_are_capped() -> None:
    limiter = RateLimiter(5, clock=VirtualClock(), max_chats=10)
    for chat in range(100):
        limiter.allow(f"c{chat}")
    assert len(limiter) == 10


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        RateLimiter(-1)
    with pytest.raises(ValueError):
        RateLimiter(1, window=0)


@given(st.lists(st.floats(min_value=0, max_value=5), max_size=60), st.integers(1, 6))
def test_never_more_than_the_limit_in_any_window(gaps: list[float], limit: int) -> None:
    clock = VirtualClock()
    limiter = RateLimiter(limit, clock=clock, window=10.0)
    allowed: list[float] = []
    for gap in gaps:
        clock.now += gap
        if limiter.allow("a"):
            allowed.append(clock.now)
    for i, start in enumerate(allowed):
        inside = [t for t in allowed[i:] if t < start + 10.0]
        assert len(inside) <= limit
