"""`memory.startup.warm_up`: what the per-message code would build on first use is built before
the first message, so no chat waits on the event loop while it is built."""

from __future__ import annotations

from datetime import UTC, datetime

from nahida.envelope import ChatKey, UserKey
from nahida.memory import MemoryService
from nahida.memory.write import statements, timeparse
from nahida.memory.write.extract import extract

TEXTS = [
    "我喜欢吃火锅，明天我们去看电影吧",
    "I really like hiking, call me Tom",
    "记住我下周三要交报告",
]


def test_after_the_warm_up_a_message_builds_nothing() -> None:
    statements._compiled.cache_clear()
    statements._prefilter.cache_clear()
    timeparse._prefilter.cache_clear()
    assert MemoryService.warm_up()
    compiled = statements._compiled.cache_info().currsize
    assert compiled == len({rule.pattern for rule in statements.RULES})
    assert statements._prefilter.cache_info().currsize == 1
    assert timeparse._prefilter.cache_info().currsize == 1
    now = datetime(2026, 12, 7, 10, tzinfo=UTC)
    found = []
    for text in TEXTS:
        found += extract(
            text, chat=ChatKey.parse("onebot:group:1"), user=UserKey.parse("onebot:user:2")
        )
        timeparse.parse(text, now)
    assert found  # the rules ran, and matched
    for cached in (statements._compiled, statements._prefilter, timeparse._prefilter):
        assert cached.cache_info().misses == cached.cache_info().currsize  # built once each
