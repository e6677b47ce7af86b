"""`memory.admin`: the console's read models over the reference store (and over SQLite where the
store's own query matters), built through the facade's own write paths.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from nahida.memory import (
    Candidate,
    DreamRun,
    Evidence,
    MemoryService,
    NewTurn,
    ProfileEntry,
    RecallRecord,
    Viewer,
)
from nahida.memory.core.tokenize import index_text
from nahida.memory.history import sessions
from nahida.memory.store.base import Store
from nahida.memory.store.reference import ReferenceStore
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.write import write

SHANGHAI = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 5, 10, 12, 0, tzinfo=SHANGHAI).timestamp()
DAY = 86_400.0
GROUP = "qq:group:1"
DM = "qq:private:u1"


@pytest.fixture(params=["reference", "sqlite"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    store: Store = (
        ReferenceStore() if request.param == "reference" else SqliteStore(tmp_path / "m.db")
    )
    service = MemoryService(store, tz=SHANGHAI, mode="auto_full")
    yield service
    service.close()


def item(memory: MemoryService, content: str, **fields: Any) -> str:
    values: dict[str, Any] = {
        "scope": "global",
        "kind": "fact",
        "source": "import",
        "confidence": 0.9,
        **fields,
    }
    created = values.pop("at", None)
    candidate = Candidate(content=content, **values)
    made = memory.store.write_sync(
        lambda tx: write.create_item(tx, write.tokens_of(candidate), "test", now=created)
    )
    return made.id


def said(memory: MemoryService, chat: str, text: str, at: float, **fields: Any) -> int:
    role = fields.pop("role", "user")
    speaker = fields.pop("speaker", "qq:u1" if role == "user" else None)
    turn = NewTurn(chat, role, text, at, speaker=speaker, **fields)
    stored = memory.store.write_sync(sessions.record, turn, index_text(text))
    assert stored is not None
    return stored.id


def session_of(memory: MemoryService, turn_id: int) -> str:
    found = memory.store.read_sync(lambda tx: tx.turns.around(turn_id, 0, 0))
    return found[0].session_id


# overview and series ---------------------------------------------------------------------------


async def test_the_overview_counts_items_people_history_and_reviews(memory: MemoryService) -> None:
    item(memory, "公司在杭州")
    item(memory, "周五发周报", scope=f"chat:{GROUP}", kind="task")
    item(memory, "喜欢乌龙茶", scope="user:qq:u1", kind="preference", subject_user="qq:u1")
    gone = item(memory, "旧的事实", scope=f"chat:{GROUP}")
    memory.store.write_sync(
        lambda tx: write.update_item(
            tx,
            tx.items.get(gone),
            "test",
            "archive",
            "test",
            status="archived",  # type: ignore[arg-type]
        )
    )
    said(memory, GROUP, "大家好", NOW, speaker_name="Alice")
    said(memory, GROUP, "你好", NOW + 1, speaker="qq:u2", speaker_name="Bob")
    said(memory, GROUP, "收到", NOW + 2, role="assistant")
    said(memory, DM, "在吗", NOW + 3)
    entry = ProfileEntry("p_1", "qq:u3", "基础特征", "住在杭州")
    memory.store.write_sync(lambda tx: tx.profiles.add(entry, "住在 杭州"))
    memory.store.write_sync(
        lambda tx: write.propose(
            tx,
            write.tokens_of(Candidate("global", "fact", "待审", "rule_extract")),
            "manual_review",
            "t",
        )
    )
    seen = await memory.admin.overview()
    assert (seen.items, seen.people, seen.chats, seen.sessions, seen.turns) == (4, 3, 2, 2, 4)
    assert seen.by_kind == {"fact": 2, "task": 1, "preference": 1}
    assert seen.by_family == {"global": 1, "chat": 2, "user": 1}
    assert seen.by_status == {"active": 3, "archived": 1}
    assert seen.pending_reviews == 1
    assert json.loads(json.dumps(seen.to_json()))["by_family"]["chat"] == 2


async def test_a_series_counts_each_day_in_the_bots_zone(memory: MemoryService) -> None:
    midnight = datetime(2026, 5, 9, tzinfo=SHANGHAI).timestamp()  # 16:00 UTC the day before
    item(memory, "五月九日零点后", at=midnight + 60, source="user_explicit")
    item(memory, "五月八日深夜", at=midnight - 60, source="rule_extract")
    item(memory, "插件写的", at=midnight + 120, source="plugin:notes")
    item(memory, "梦到的", at=NOW, source="llm_dream")
    item(memory, "手改的", at=NOW, source="human_edit")
    item(memory, "太早了", at=midnight - 3 * DAY)
    asked = said(memory, GROUP, "乌龙茶", midnight + 30)
    memory.store.write_sync(
        lambda tx: tx.recalls.add(RecallRecord(asked, GROUP, midnight + 90, ("m_1", "m_2"), (7,)))
    )
    run = DreamRun("d_1", GROUP, "schedule", midnight - 10)
    memory.store.write_sync(lambda tx: tx.dreams.start(run))
    done = replace(run, proposals=5, applied=3, pending=1, rejected=1, outcome="ok")
    memory.store.write_sync(lambda tx: tx.dreams.save(done))
    job = memory.store.write_sync(lambda tx: tx.jobs.start("upkeep", "me", NOW))

    series = await memory.admin.series(3, now=NOW)
    assert [d.day for d in series.days] == [date(2026, 5, 8), date(2026, 5, 9), date(2026, 5, 10)]
    before, day, today = series.days
    assert before.added["extracted"] == 1 and sum(before.added.values()) == 1
    assert (before.dream_runs, before.proposals, before.applied) == (1, 5, 3)
    assert (before.pending, before.rejected) == (1, 1)
    assert day.added == {
        "said": 2,
        "extracted": 0,
        "dreamed": 0,
        "edited": 0,
        "imported": 0,
        "other": 0,
    }
    assert (day.recalls, day.recall_hits, day.dream_runs) == (1, 3, 0)
    assert (today.added["dreamed"], today.added["edited"], today.recalls) == (1, 1, 0)
    assert [j.id for j in series.jobs] == [job]
    assert json.loads(json.dumps(series.to_json()))["days"][1]["day"] == "2026-05-09"
    with pytest.raises(ValueError):
        await memory.admin.series(0)


# items -----------------------------------------------------------------------------------------


async def test_items_are_listed_newest_changed_first_a_page_at_a_time(
    memory: MemoryService,
) -> None:
    made = [item(memory, f"第{n}件事 oolong{n}", at=NOW + n) for n in range(5)]
    page = await memory.admin.items(offset=1, limit=2)
    assert [r.id for r in page.rows] == [made[3], made[2]]
    assert (page.total, page.offset, page.limit, page.more) == (5, 1, 2, True)
    last = await memory.admin.items(offset=4, limit=2)
    assert [r.id for r in last.rows] == [made[0]] and not last.more
    for offset, limit in ((-1, 5), (0, 0)):
        with pytest.raises(ValueError):
            await memory.admin.items(offset=offset, limit=limit)
    assert (await memory.admin.items(limit=10_000)).limit == 500


async def test_items_are_filtered_by_scope_kind_status_source_person_and_days(
    memory: MemoryService,
) -> None:
    midnight = datetime(2026, 5, 9, tzinfo=SHANGHAI).timestamp()
    g = item(memory, "公司在杭州", at=midnight - 60)
    c = item(
        memory, "周五发周报", scope=f"chat:{GROUP}", kind="task", source="plugin:notes", at=NOW
    )
    u = item(
        memory,
        "喜欢乌龙茶",
        scope="user:qq:u1",
        kind="preference",
        source="user_explicit",
        at=midnight + 60,
        sensitivity="public",
    )
    about = item(memory, "Alice 是组长", scope=f"chat:{GROUP}", subject_user="qq:u1", at=NOW)

    async def ids(**filters: Any) -> list[str]:
        return sorted(r.id for r in (await memory.admin.items(**filters)).rows)

    assert await ids(scope="chat") == sorted([c, about])
    assert await ids(scope="global") == [g]
    assert await ids(scope=f"chat:{GROUP}", kind="task") == [c]
    assert await ids(source="said") == sorted([c, u])  # a family: user_explicit and plugin:*
    assert await ids(source="plugin:notes") == [c]
    assert await ids(person="qq:u1") == sorted([u, about])
    assert await ids(since=date(2026, 5, 9), until=date(2026, 5, 9)) == [u]
    assert await ids(until=date(2026, 5, 8)) == [g]
    assert await ids(status="archived") == []
    assert await ids(viewer=Viewer.parse(GROUP, "qq:u1")) == sorted([g, c, u, about])
    assert await ids(viewer=Viewer.parse(GROUP, "qq:u2")) == sorted([g, c, about])
    for bad in ({"scope": "chat:nope"}, {"kind": "gossip"}, {"status": "lost"}):
        with pytest.raises(ValueError):
            await memory.admin.items(**bad)
    listed = (await memory.admin.items(scope="user")).rows[0]
    assert listed.audience.text == "qq:u1 and groups they're in (public)"
    assert listed.to_json()["source_family"] == "said"


async def test_a_text_filter_uses_the_lexical_search_as_an_admin_or_a_viewer(
    memory: MemoryService,
) -> None:
    tea = item(memory, "喜欢乌龙茶", scope="user:qq:u1", subject_user="qq:u1", at=NOW)
    group = item(memory, "群里下午茶喝乌龙茶", scope=f"chat:{GROUP}", at=NOW + 5)
    item(memory, "周五发周报", scope=f"chat:{GROUP}")
    found = await memory.admin.items(text="乌龙茶")
    assert [r.id for r in found.rows] == [group, tea] and found.total == 2
    as_bob = await memory.admin.items(text="乌龙茶", viewer=Viewer.parse(GROUP, "qq:u2"))
    assert [r.id for r in as_bob.rows] == [group]  # Alice's private item is not his to see
    narrowed = await memory.admin.items(text="乌龙茶", scope="user")
    assert [r.id for r in narrowed.rows] == [tea]
    assert (await memory.admin.items(text="咖啡")).total == 0
    assert (await memory.admin.items(text="茶")).total == 2  # one character: found literally
    assert (await memory.admin.items(text="   ")).total == 3  # no words: no text filter


# an item's page --------------------------------------------------------------------------------


async def test_an_items_page_has_its_trail_its_evidence_in_context_and_its_chain(
    memory: MemoryService,
) -> None:
    turns = [said(memory, GROUP, f"第{n}句", NOW + n, message_id=f"msg{n}") for n in range(6)]
    said(memory, GROUP, "同一个编号的另一句", NOW + 1000, message_id="msg2")  # an id reused
    first = Candidate(
        "user:qq:u1",
        "preference",
        "喜欢乌龙茶",
        "rule_extract",
        subject_user="qq:u1",
        slot="pref:tea",
        evidence=(
            Evidence(chat=GROUP, turn_id=turns[1], time=NOW + 1),
            Evidence(chat=GROUP, message_id="msg2", time=NOW + 2),
            Evidence(ref="MEMORY.md:3"),
        ),
    )
    old = (await memory.items.propose(first, "test")).item_id
    second = replace(first, content="喜欢红茶", evidence=(Evidence(chat=GROUP, turn_id=turns[4]),))
    new = (await memory.items.propose(second, "test")).item_id
    third = replace(first, content="喜欢绿茶", evidence=(Evidence(chat=GROUP, turn_id=turns[5]),))
    newest = (await memory.items.propose(third, "test")).item_id
    assert old and new and newest

    page = await memory.admin.item(old, around=1)
    assert page is not None
    assert page.item.status == "superseded" and page.item.valid_until is not None
    assert [e.action for e in page.events] == ["create", "supersede"]
    assert page.events[1].before is not None and page.events[1].after is not None
    by_id, by_message, by_file = page.provenance
    assert by_id.turn is not None and by_id.turn.id == turns[1]
    assert [t.id for t in by_id.context] == turns[0:3]
    assert by_message.turn is not None and by_message.turn.id == turns[2]  # said nearest its time
    assert by_file.turn is None and by_file.context == ()
    assert page.earlier == ()
    assert [i.id for i in page.later] == [new, newest]
    assert page.audience.text == "only qq:u1 in private"
    middle = await memory.admin.item(new)
    assert middle is not None
    assert [i.id for i in middle.earlier] == [old] and [i.id for i in middle.later] == [newest]
    assert [t.id for t in middle.hidden] == [turns[4]]  # recalled as earlier now
    assert json.loads(json.dumps(page.to_json()))["later"][0]["id"] == new
    assert await memory.admin.item("m_nope") is None


# recorded recalls ------------------------------------------------------------------------------


async def test_what_a_prompt_was_given_is_recorded_with_its_reply(memory: MemoryService) -> None:
    tea = item(memory, "喜欢乌龙茶", scope="user:qq:u1", subject_user="qq:u1")
    said(memory, DM, "上次的乌龙茶很好喝", NOW - 3600)
    question = memory.store.write_sync(
        sessions.record, NewTurn(DM, "user", "推荐乌龙茶", NOW, speaker="qq:u1"), "推荐 乌龙茶"
    )
    assert question is not None
    viewer = Viewer.parse(DM)
    block, _ = await memory.context(
        "推荐乌龙茶", viewer, frozenset({question.id}), limit=15, turn=question.id
    )
    assert block is not None
    assert await memory.admin.recalls([question.id]) == {}  # not before the reply
    reply = NewTurn(DM, "assistant", "好的", NOW + 1)
    await memory.sessions.record_reply(question, reply)
    recorded = (await memory.admin.recalls([question.id]))[question.id]
    assert recorded.items == (tea,) and len(recorded.turns) == 1
    assert (recorded.chat, recorded.time, recorded.hits) == (DM, NOW + 1, 2)
    transcript = await memory.admin.transcript(question.session_id)
    assert transcript is not None
    assert [t.recall for t in transcript.turns.rows][-2:] == [recorded, None]


async def test_no_recall_is_recorded_without_memory_or_without_an_answer(
    memory: MemoryService,
) -> None:
    item(memory, "喜欢乌龙茶", scope="user:qq:u1")
    viewer = Viewer.parse(DM)
    for text, at in (("今天天气不错", NOW), ("乌龙茶", NOW + 10)):
        asked = memory.store.write_sync(
            sessions.record, NewTurn(DM, "user", text, at, speaker="qq:u1"), index_text(text)
        )
        assert asked is not None
        await memory.context(text, viewer, frozenset({asked.id}), limit=15, turn=asked.id)
        if text == "乌龙茶":  # the model failed: no answer to record it with
            await memory.sessions.mark_error(asked.id, "ProviderError: down")
        await memory.sessions.record_reply(asked, NewTurn(DM, "assistant", "嗯", at + 1))
        assert await memory.admin.recalls([asked.id]) == {}
    assert len(memory.recall.recalls) == 0
