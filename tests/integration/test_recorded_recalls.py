"""End to end: what memory gave an answered message's prompt is recorded with the reply, and the
console's transcript shows it beside the message (console → runner → SQLite → fake LLM)."""

from __future__ import annotations

from pathlib import Path

from nahida.memory import MemoryService
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import History, config, openai_provider
from tests.integration.test_memory_turns import chat, items_in, memory_section


async def test_the_items_a_prompt_was_given_are_recorded_with_the_answer(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    await chat(tmp_path, ["我喜欢乌龙茶", "/new", "我喜欢喝什么茶？"], cfg)
    first, second = (r.body for r in openai_server.requests)
    assert memory_section(first) is None
    shown = set(items_in(memory_section(second)))
    assert len(shown) == 1

    with History(tmp_path / "data" / "nahida.db") as db:
        memory = MemoryService(db.store)
        latest, earlier = (await memory.admin.sessions("console:private:local")).rows
        before = await memory.admin.transcript(earlier.id)
        after = await memory.admin.transcript(latest.id)
        assert before is not None and after is not None
        assert [t.recall for t in before.turns.rows] == [None, None]  # nothing known yet
        question, answer = after.turns.rows
        assert question.recall is not None and answer.recall is None
        assert set(question.recall.items) == shown
        assert question.recall.turn_id == question.turn.id
        series = await memory.admin.series(1)
        assert (series.days[0].recalls, series.days[0].recall_hits) == (1, question.recall.hits)
