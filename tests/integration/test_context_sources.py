"""Context sources through the real runner, SQLite and the OpenAI SDK talking to the fake server:
what a source gathers reaches the prompt, and a source that fails is logged and left out while
the message is still answered, alone or beside another."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from structlog.testing import capture_logs

from nahida.app import build_model_router
from nahida.commands.router import CommandRouter
from nahida.envelope import Reply
from nahida.hooks import ContextSource, TurnContext
from nahida.memory import MemoryItem, MemoryService
from nahida.memory.core.tokenize import index_text
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.turn import MemoryInjection
from nahida.policy import ReplyPolicy
from nahida.providers.router import ModelRouter
from nahida.runner import RunnerSettings, SessionRunner
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import config, envelope, openai_provider


class Fixed:
    """A source that always gives the same profile text."""

    slot = "profile"

    def __init__(self, text: str) -> None:
        self.text = text

    async def gather(self, turn: TurnContext) -> str:
        return self.text


class Broken:
    slot = "rules"

    async def gather(self, turn: TurnContext) -> str:
        raise RuntimeError("the rules are unreadable")


@pytest.fixture
async def router(openai_server: FakeOpenAIServer) -> AsyncIterator[ModelRouter]:
    models = build_model_router(config(**openai_provider(openai_server.url)))
    yield models
    await models.aclose()


def runner(
    store: SqliteStore,
    router: ModelRouter,
    replies: list[str],
    sources: list[ContextSource],
    memory: MemoryService | None = None,
) -> SessionRunner:
    async def send(reply: Reply) -> str | None:
        replies.append(reply.plain_text)
        return None

    return SessionRunner(
        model=router,
        send=send,
        commands=CommandRouter(),
        policy=ReplyPolicy(),
        settings=RunnerSettings(),
        memory=memory or MemoryService(store, model=router),
        persona=lambda: "",
        sources=sources,
    )


@pytest.mark.parametrize(
    "sources",
    [[Broken()], [Broken(), Fixed("喜欢乌龙茶")], [Fixed("喜欢乌龙茶"), Broken()]],
    ids=["alone", "first-of-two", "second-of-two"],
)
async def test_a_failing_source_is_logged_and_left_out_and_the_message_answered(
    store: SqliteStore,
    router: ModelRouter,
    openai_server: FakeOpenAIServer,
    sources: list[ContextSource],
) -> None:
    replies: list[str] = []
    with capture_logs() as logs:
        await runner(store, router, replies, sources).handle(envelope("你好呀"))
    assert len(replies) == 1
    failed = [e for e in logs if e["event"] == "context_source_failed"]
    assert [e["slot"] for e in failed] == ["rules"]
    (request,) = openai_server.chat_requests
    system = request.body["messages"][0]["content"]
    assert "unreadable" not in system and "behavioral_guidelines" not in system
    assert ("喜欢乌龙茶" in system) is any(isinstance(s, Fixed) for s in sources)


async def test_a_single_source_fills_its_slot(
    store: SqliteStore, router: ModelRouter, openai_server: FakeOpenAIServer
) -> None:
    replies: list[str] = []
    await runner(store, router, replies, [Fixed("住在杭州")]).handle(envelope("我住哪"))
    (request,) = openai_server.chat_requests
    assert "住在杭州" in request.body["messages"][0]["content"]
    assert len(replies) == 1


async def test_memory_is_read_for_every_answered_message_and_reaches_the_prompt(
    store: SqliteStore, router: ModelRouter, openai_server: FakeOpenAIServer
) -> None:
    """Each answered message takes three store round trips (the turn with its window, the
    memory read, the reply), and one more once an item is found (its use recorded); the item
    added between two messages reaches the second one's prompt."""
    replies: list[str] = []
    memory = MemoryService(store, model=router)
    answering = runner(store, router, replies, [MemoryInjection(memory)], memory)
    await memory.episodes.in_any([])  # read once a process
    trips = [store.db.snapshot().round_trips]
    await answering.handle(envelope("周末去爬香山吧"))
    trips.append(store.db.snapshot().round_trips)
    item = MemoryItem("m_hill", "global", "fact", "香山周六人很多", created_at=1.0, updated_at=1.0)
    assert store.write_sync(lambda tx: tx.items.add(item, index_text(item.content)))
    trips.append(store.db.snapshot().round_trips)
    await answering.handle(envelope("香山人多吗"))
    trips.append(store.db.snapshot().round_trips)
    assert [trips[1] - trips[0], trips[3] - trips[2]] == [3, 4]
    first, second = (r.body["messages"] for r in openai_server.chat_requests)
    assert not any("[长期记忆]" in m["content"] for m in first)
    assert any("[长期记忆]" in m["content"] and "香山周六人很多" in m["content"] for m in second)
    assert len(replies) == 2
