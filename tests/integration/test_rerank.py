"""The LLM reranker on the `rerank` route, through the real OpenAI SDK to the fake server: the
model's order is taken, and any failure keeps the fused order."""

from __future__ import annotations

import pytest

from nahida.memory.core.models import Hit
from nahida.memory.recall.rerank import LLMReranker, parse_order, rerank
from nahida.providers.client import ClientSettings
from nahida.providers.openai import OpenAIProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.fakes.llm_server import FakeOpenAIServer


def hits(*texts: str) -> list[Hit]:
    return [Hit("turn", f"t_{n}", text, 1.0, "chat:x", [], 0.0) for n, text in enumerate(texts)]


def test_parse_order_keeps_every_hit_once() -> None:
    assert parse_order("Sure: [3, 1, 3, 9]", 3) == [2, 0, 1]
    with pytest.raises(ValueError):
        parse_order("the second one", 3)


async def test_the_model_reorders_and_a_failure_keeps_the_order(
    openai_server: FakeOpenAIServer,
) -> None:
    provider = OpenAIProvider("main", ClientSettings(base_url=openai_server.url, api_key="sk"))
    router = ModelRouter({"main": provider}, resolve_routes({"rerank": "main/r1"}, {"main": "m"}))
    reranker = LLMReranker(router)
    found = hits("天气不错", "上周和老板吵架了", "今天吃了面")
    try:
        openai_server.reply_text("[2, 1, 3]")
        ordered = await rerank(reranker, "我最近心情不好", found)
        assert [h.text for h in ordered] == ["上周和老板吵架了", "天气不错", "今天吃了面"]
        request = openai_server.chat_requests[-1].body
        assert request["model"] == "r1"
        assert "[2] 上周和老板吵架了" in request["messages"][-1]["content"]
        openai_server.reply_text("I cannot rank these.")
        assert await rerank(reranker, "我最近心情不好", found) == found
        openai_server.fail(400)
        assert await rerank(reranker, "我最近心情不好", found) == found
    finally:
        await router.aclose()
