"""Episodes through the facade (`memory.episodes`) and in recall: redaction, rewriting, the index
kept in step with sessions, visibility, "last time" questions, and recall unchanged without them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from nahida.memory import MemoryService, NewTurn, Query, Viewer, recall
from nahida.memory.recall.plan import plan
from nahida.memory.store.sqlite import SqliteStore

GROUP = "test:group:g1"
OTHER = "test:group:g2"
T0 = datetime(2024, 4, 10, 12, 0, tzinfo=UTC).timestamp()
DAY = 86_400.0
KEY = "sk-proj-4hT9xQ2mL7vR1nB8kW3zY6pD5sF0gJ"  # looks like an API key to the safety filter


async def session_of(memory: MemoryService, chat: str, *texts: str, at: float = T0) -> str:
    """A session of `chat` with these user turns (a minute apart); its id."""
    for n, text in enumerate(texts):
        turn = NewTurn(chat, "user", text, at + 60 * n, speaker="test:alice", speaker_name="Alice")
        await memory.sessions.record(turn)
    session_id = await memory.sessions.current(chat)
    assert session_id is not None
    return session_id


async def episode_of(
    memory: MemoryService,
    session_id: str,
    summary: str,
    *,
    chat: str = GROUP,
    keywords: tuple[str, ...] = (),
    ended_at: float = T0 + 600,
) -> Any:
    return await memory.episodes.add(
        session_id=session_id,
        chat=chat,
        summary=summary,
        keywords=keywords,
        started_at=ended_at - 600,
        ended_at=ended_at,
        turn_count=4,
    )


def fts_rows(store: SqliteStore) -> int:
    return int(
        store.db.call(lambda c: c.execute("SELECT count(*) FROM episodes_fts").fetchone()[0])
    )


async def ask(
    memory: MemoryService, text: str, chat: str = GROUP, at: float | None = None, **fields: Any
) -> list[Any]:
    query = Query(text, Viewer.parse(chat, "alice"), at=at, limit=10, tz=UTC, **fields)
    return await memory.recall.search(query)


# the facade -----------------------------------------------------------------------------------


async def test_add_stores_a_redacted_episode_and_tells_the_upkeep(memory: MemoryService) -> None:
    told: list[None] = []
    memory.episodes.changed = lambda: told.append(None)
    session_id = await session_of(memory, GROUP, "我们周末去杭州爬山吧")
    stored = await episode_of(
        memory,
        session_id,
        f"  聊了周末去杭州爬山；Alice 贴了密钥 {KEY}  ",
        keywords=("爬山", " 杭州 ", "", "爬山", f"key {KEY}"),
    )
    assert stored.id.startswith("e_") and len(stored.id) == 8
    assert KEY not in stored.summary and "[REDACTED:" in stored.summary
    assert stored.summary.startswith("聊了周末去杭州爬山")
    assert stored.keywords[:2] == ("爬山", "杭州")  # trimmed, blank and repeated ones dropped
    assert len(stored.keywords) == 3 and KEY not in stored.keywords[2]
    assert (stored.session_id, stored.chat, stored.turn_count) == (session_id, GROUP, 4)
    assert told == [None]
    assert await memory.episodes.get(stored.id) == stored
    assert await memory.episodes.of_session(session_id) == stored
    assert await memory.episodes.of_chat(GROUP) == [stored]
    assert await memory.episodes.of_chat(OTHER) == []
    dump = memory.store.db.call(  # type: ignore[attr-defined]
        lambda c: c.execute("SELECT * FROM episodes_fts").fetchall()
    )
    assert KEY not in str([tuple(r) for r in dump])


async def test_a_session_that_ends_again_keeps_its_episode_id(memory: MemoryService) -> None:
    session_id = await session_of(memory, GROUP, "oolong tea tasting")
    first = await episode_of(memory, session_id, "Tasted oolong tea", keywords=("tea",))
    again = await episode_of(memory, session_id, "Tasted oolong, then espresso", ended_at=T0 + 3600)
    assert again.id == first.id and again.ended_at == T0 + 3600
    assert await memory.episodes.of_chat(GROUP) == [again]
    assert fts_rows(memory.store) == 1  # type: ignore[arg-type]
    assert [h.id for h in await ask(memory, "espresso")] == [first.id]


async def test_add_refuses_an_unknown_session_another_chat_and_an_empty_summary(
    memory: MemoryService,
) -> None:
    session_id = await session_of(memory, GROUP, "hello there everyone")
    with pytest.raises(LookupError):
        await episode_of(memory, "s_missing", "a summary")
    with pytest.raises(ValueError, match="test:group:g1"):
        await episode_of(memory, session_id, "a summary", chat=OTHER)
    with pytest.raises(ValueError, match="summary"):
        await episode_of(memory, session_id, "   ")
    assert await memory.episodes.of_chat(GROUP) == [] and await memory.episodes.of_chat(OTHER) == []


async def test_deleting_sessions_keeps_the_index_in_step(
    memory: MemoryService, store: SqliteStore
) -> None:
    kept = await session_of(memory, GROUP, "oolong tea tasting")
    await episode_of(memory, kept, "Tasted oolong tea")
    gone = await session_of(memory, OTHER, "espresso machines compared")
    await episode_of(memory, gone, "Compared espresso machines", chat=OTHER)
    assert fts_rows(store) == 2
    assert await memory.sessions.delete(gone)
    assert fts_rows(store) == 1
    assert await memory.episodes.of_chat(OTHER) == []
    empty = "s_empty"
    store.write_sync(lambda tx: tx.sessions.create(empty, GROUP, "t", T0))
    await episode_of(memory, empty, "A summary of nothing")
    assert fts_rows(store) == 2
    assert await memory.sessions.cleanup_empty() == 1
    assert fts_rows(store) == 1
    assert [e.session_id for e in await memory.episodes.of_chat(GROUP)] == [kept]


# recall ---------------------------------------------------------------------------------------


async def test_recall_finds_an_episode_by_its_keywords_only_in_its_chat(
    memory: MemoryService,
) -> None:
    here = await session_of(memory, GROUP, "周末去哪玩")
    stored = await episode_of(memory, here, "商量了周末的安排，决定去爬山", keywords=("杭州",))
    elsewhere = await session_of(memory, OTHER, "随便聊聊")
    await episode_of(memory, elsewhere, "另一个群也聊了杭州", chat=OTHER, keywords=("杭州",))
    hits = await ask(memory, "杭州")
    assert [(h.kind, h.id) for h in hits] == [("episode", stored.id)]
    hit = hits[0]
    assert (hit.text, hit.scope, hit.time, hit.message_ids) == (
        "商量了周末的安排，决定去爬山",  # the summary, readable: keywords only help find it
        f"chat:{GROUP}",
        T0 + 600,
        [],
    )
    assert hit.to_json()["kind"] == "episode"
    assert [h.text for h in await ask(memory, "杭州", chat=OTHER)] == ["另一个群也聊了杭州"]
    assert await ask(memory, "杭州", episodes=False) == []
    assert await ask(memory, "杭州", at=T0 + 599) == []  # not ended yet at that moment
    block, kept = recall.pack(hits, 500)
    assert block is not None and kept == hits
    assert block.splitlines()[0] == "- [episode · 2024-04-10] 商量了周末的安排，决定去爬山"


@pytest.mark.parametrize(
    "question",
    [
        "上次我们聊到哪了？",
        "what did we talk about last time?",
        "上回说到哪儿了",
        "Where did we leave off?",
    ],
)
async def test_a_last_time_question_gets_the_latest_episode_first(
    memory: MemoryService, question: str
) -> None:
    first = await session_of(memory, GROUP, "上次聊到的电影很好看", "what did we talk about")
    older = await episode_of(memory, first, "聊了电影和上次的聚会", ended_at=T0 + 600)
    await memory.sessions.start_new(GROUP)  # /new
    second = await session_of(memory, GROUP, "明天的会议几点", at=T0 + DAY)
    assert second != first
    latest = await episode_of(memory, second, "约了明天上午十点开会", ended_at=T0 + DAY + 600)
    elsewhere = await session_of(memory, OTHER, "别的群")
    await episode_of(memory, elsewhere, "别的群的最新话题", chat=OTHER, ended_at=T0 + 2 * DAY)
    hits = await ask(memory, question, at=T0 + 3 * DAY)
    assert hits[0].id == latest.id and hits[0].kind == "episode"
    assert hits[0].score >= max(h.score for h in hits)
    assert "别的群的最新话题" not in [h.text for h in hits]
    before = await ask(memory, question, at=T0 + DAY)  # the later one had not ended yet
    assert before[0].id == older.id
    assert len([h for h in hits if h.id == latest.id]) == 1


def test_last_time_is_read_from_the_question_not_from_other_words() -> None:
    viewer = Viewer.parse(GROUP, "alice")
    for text in ("上次我们聊到哪了", "上一次说的", "our last conversation", "LAST TIME we met"):
        assert plan(Query(text, viewer)).last_time, text
    for text in ("我马上回来", "last week we talked", "晚上回家", "the lasting time", "Biscuit"):
        assert not plan(Query(text, viewer)).last_time, text


async def test_without_episodes_recall_is_what_it_was(memory: MemoryService) -> None:
    await session_of(memory, GROUP, "上次我们去杭州爬山", "what did we talk about last time")
    await session_of(memory, OTHER, "上次的会议纪要")
    for question in ("上次我们聊到哪了？", "杭州爬山", "last time", "昨天呢？"):
        with_lists = await ask(memory, question, at=T0 + DAY)
        without = await ask(memory, question, at=T0 + DAY, episodes=False)
        assert with_lists == without, question
    assert await ask(memory, "杭州爬山", at=T0 + DAY)  # the turns are found


async def test_a_new_id_taken_by_another_episode_is_drawn_again(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nahida.memory.history import episodes

    ids = iter(["e_aaaaaa", "e_aaaaaa", "e_bbbbbb", "e_aaaaaa"])
    monkeypatch.setattr(episodes, "new_id", lambda prefix: next(ids))
    first = await session_of(memory, GROUP, "oolong tea tasting")
    second = await session_of(memory, OTHER, "espresso machines compared")
    assert (await episode_of(memory, first, "Tasted oolong")).id == "e_aaaaaa"
    assert (await episode_of(memory, second, "Compared espresso", chat=OTHER)).id == "e_bbbbbb"
    again = await episode_of(memory, first, "Tasted oolong again")  # its own id: a rewrite
    assert again.id == "e_aaaaaa" and again.summary == "Tasted oolong again"
