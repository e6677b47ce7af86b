"""`memory.admin`, part 2: people, chats, sessions and transcripts, dream runs; what the values
say in JSON (and what they never carry); who sees an item; source families; the recalls that wait
for their reply.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nahida.memory import (
    SOURCE_FAMILIES,
    Audience,
    Candidate,
    DreamRun,
    Episode,
    Hit,
    MemoryService,
    NewTurn,
    ProfileEntry,
    Proposal,
    RecallRecord,
)
from nahida.memory.core.sources import source_family
from nahida.memory.core.tokenize import index_text
from nahida.memory.history import sessions
from nahida.memory.history.recalls import PendingRecalls
from nahida.memory.store.base import Store
from nahida.memory.store.reference import ReferenceStore
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.write import write

T0 = 1_780_000_000.0
GROUP = "qq:group:1"
DM = "qq:private:u1"


@pytest.fixture(params=["reference", "sqlite"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    store: Store = (
        ReferenceStore() if request.param == "reference" else SqliteStore(tmp_path / "m.db")
    )
    service = MemoryService(store, idle_split=3600)
    yield service
    service.close()


def said(memory: MemoryService, chat: str, text: str, at: float, **fields: Any) -> int:
    role = fields.pop("role", "user")
    speaker = fields.pop("speaker", "qq:u1" if role == "user" else None)
    turn = NewTurn(chat, role, text, at, speaker=speaker, **fields)
    split = memory.sessions.idle_split
    stored = memory.store.write_sync(sessions.record, turn, index_text(text), split)
    assert stored is not None
    return stored.id


def item(memory: MemoryService, content: str, **fields: Any) -> str:
    values: dict[str, Any] = {"scope": "global", "kind": "fact", "source": "import", **fields}
    candidate = Candidate(content=content, **values)
    return memory.store.write_sync(
        lambda tx: write.create_item(tx, write.tokens_of(candidate), "test", now=T0)
    ).id


def episode_of(memory: MemoryService, turn_id: int, at: float) -> Episode:
    session_id = memory.store.read_sync(lambda tx: tx.turns.around(turn_id, 0, 0))[0].session_id
    chat = memory.store.read_sync(lambda tx: tx.sessions.get(session_id)).chat  # type: ignore[union-attr]
    episode = Episode(f"e_{turn_id}", session_id, chat, "聊了茶", ("茶",), at - 10, at, 2, at)
    return memory.store.write_sync(lambda tx: tx.episodes.put(episode, "茶 聊 了 茶"))


# people ----------------------------------------------------------------------------------------


async def test_people_are_listed_with_their_names_and_chats_latest_seen_first(
    memory: MemoryService,
) -> None:
    said(memory, GROUP, "大家好", T0, speaker_name="Alice")
    said(memory, GROUP, "我改名了", T0 + 5, speaker_name="Ally")
    said(memory, DM, "在吗", T0 + 9)
    said(memory, GROUP, "我是 Bob", T0 + 7, speaker="qq:u2", speaker_name="Bob")
    entry = ProfileEntry("p_1", "qq:u3", "基础特征", "住在杭州")
    memory.store.write_sync(lambda tx: tx.profiles.add(entry, "住在 杭州"))
    page = await memory.admin.people(limit=2)
    assert [(p.user, p.turns) for p in page.rows] == [("qq:u1", 3), ("qq:u2", 1)]
    assert (page.total, page.more) == (3, True)
    alice = page.rows[0]
    assert [(n.name, n.chat, n.turns) for n in alice.names] == [
        (None, DM, 1),
        ("Ally", GROUP, 1),
        ("Alice", GROUP, 1),
    ]
    assert alice.chats == (DM, GROUP) and alice.last_seen == T0 + 9
    rest = await memory.admin.people(offset=2)
    assert [(p.user, p.last_seen, p.names) for p in rest.rows] == [("qq:u3", None, ())]
    assert json.loads(json.dumps(page.to_json()))["rows"][0]["chats"] == [DM, GROUP]


async def test_a_persons_page_has_their_profile_rules_items_and_episodes(
    memory: MemoryService,
) -> None:
    in_group = said(memory, GROUP, "大家好", T0, speaker_name="Alice")
    in_private = said(memory, DM, "在吗", T0 + 10)
    elsewhere = said(memory, "qq:group:2", "路过", T0 + 20, speaker="qq:u2")
    for turn, at in ((in_group, T0 + 1), (in_private, T0 + 11), (elsewhere, T0 + 21)):
        episode_of(memory, turn, at)
    entry = ProfileEntry("p_1", "qq:u1", "基础特征", "住在杭州", sensitivity="public")
    memory.store.write_sync(lambda tx: tx.profiles.add(entry, "住在 杭州"))
    rule = item(memory, "用英文回答我", scope="user:qq:u1", kind="procedure", subject_user="qq:u1")
    own = item(memory, "喜欢乌龙茶", scope="user:qq:u1", kind="preference")
    about = item(memory, "Alice 是组长", scope=f"chat:{GROUP}", subject_user="qq:u1")
    item(memory, "Bob 喜欢咖啡", scope="user:qq:u2")
    page = await memory.admin.person("qq:u1")
    assert page is not None
    assert page.person.chats == (DM, GROUP) and page.person.turns == 2
    assert [e.id for e in page.profile] == ["p_1"]
    assert [r.id for r in page.rules.rows] == [rule]
    assert sorted(r.id for r in page.items.rows) == sorted([rule, own, about])
    assert [e.id for e in page.episodes.rows] == [f"e_{in_private}", f"e_{in_group}"]
    more = await memory.admin.episodes(person="qq:u1", offset=1, limit=1)
    assert [e.id for e in more.rows] == [f"e_{in_group}"] and more.total == 2
    assert (await memory.admin.episodes(chat="qq:group:2")).total == 1
    with pytest.raises(ValueError):
        await memory.admin.episodes()
    assert json.loads(json.dumps(page.to_json()))["profile"][0]["text"] == "住在杭州"
    assert await memory.admin.person("qq:nobody") is None
    only_profile = ProfileEntry("p_2", "qq:u9", "基础特征", "喜欢爬山")
    memory.store.write_sync(lambda tx: tx.profiles.add(only_profile, "喜欢 爬山"))
    found = await memory.admin.person("qq:u9")
    assert found is not None and found.person.last_seen is None and found.episodes.total == 0


# chats, sessions, transcripts ------------------------------------------------------------------


async def test_chats_sessions_and_a_chats_page(memory: MemoryService) -> None:
    said(memory, GROUP, "早", T0)
    said(memory, GROUP, "午安", T0 + 7200)  # an idle gap: a second session
    said(memory, DM, "在吗", T0 + 100)
    memory.store.write_sync(lambda tx: tx.dreams.advance(GROUP, 2, T0))
    memory.store.write_sync(lambda tx: tx.dreams.pause(GROUP, True, T0))
    rule = item(memory, "群里只说中文", scope=f"chat:{GROUP}", kind="procedure")
    for n in range(3):
        run = DreamRun(f"d_{n}", GROUP, "schedule", T0 + n)
        memory.store.write_sync(lambda tx, run=run: tx.dreams.start(run))
    chats = await memory.admin.chats()
    assert [(c.chat, c.sessions, c.turns) for c in chats.rows] == [(GROUP, 2, 2), (DM, 1, 1)]
    assert (chats.rows[0].dreamed_through, chats.rows[0].dreams_paused) == (2, True)
    page = await memory.admin.chat(GROUP)
    assert page is not None
    assert page.chat == chats.rows[0]
    assert [s.turn_count for s in page.sessions.rows] == [1, 1]
    assert page.sessions.rows[0].updated_at.timestamp() == T0 + 7200  # newest first
    assert [r.id for r in page.rules.rows] == [rule]
    assert [r.id for r in page.dreams.rows] == ["d_2", "d_1", "d_0"]
    older = await memory.admin.sessions(GROUP, offset=1, limit=1)
    assert older.rows[0].id == page.sessions.rows[1].id and older.total == 2
    assert json.loads(json.dumps(page.to_json()))["chat"]["dreams_paused"] is True
    assert await memory.admin.chat("qq:group:404") is None


async def test_a_transcript_shows_every_turn_without_tool_arguments_or_raw_errors(
    memory: MemoryService,
) -> None:
    asked = said(memory, DM, "查一下天气", T0)
    call = {"name": "memory_search", "arguments": '{"query": "sk-abcdefghijklmnopqrstuvwx"}'}
    said(memory, DM, "", T0 + 1, role="tool", tool_calls=[call])
    error = "401 from https://api.example.com with key sk-abcdefghijklmnopqrstuvwxyz012345"
    said(memory, DM, "晴", T0 + 2, role="assistant", error=error)
    session_id = memory.store.read_sync(lambda tx: tx.turns.around(asked, 0, 0))[0].session_id
    record = RecallRecord(asked, DM, T0 + 2, ("m_1",))
    memory.store.write_sync(lambda tx: tx.recalls.add(record))
    transcript = await memory.admin.transcript(session_id, offset=0, limit=2)
    assert transcript is not None and transcript.episode is None
    assert [t.turn.role for t in transcript.turns.rows] == ["user", "tool"]
    assert transcript.turns.rows[0].recall == record and transcript.turns.total == 3
    text = json.dumps((await memory.admin.transcript(session_id)).to_json())  # type: ignore[union-attr]
    assert "memory_search" in text and "sk-abc" not in text and "api.example.com" in text
    assert json.loads(text)["turns"]["rows"][2]["error"].startswith("401")
    assert await memory.admin.transcript("s_nope") is None


# dreams ----------------------------------------------------------------------------------------


async def test_dream_runs_are_listed_without_reports_and_shown_with_one(
    memory: MemoryService,
) -> None:
    proposal = Proposal("add", "fact", "喜欢茶", f"chat:{GROUP}", guard="evidence", detail="x")
    for n, chat in enumerate((GROUP, DM, GROUP)):
        run = DreamRun(f"d_{n}", chat, "schedule", T0 + n)
        memory.store.write_sync(lambda tx, run=run: tx.dreams.start(run))
        saved = replace(run, outcome="ok", proposals=1, rejected=1, report=(proposal,))
        memory.store.write_sync(lambda tx, saved=saved: tx.dreams.save(saved))
    listed = await memory.admin.dreams(limit=2)
    assert [r.id for r in listed.rows] == ["d_2", "d_1"] and listed.total == 3
    assert all(r.report == () for r in listed.rows)
    mine = await memory.admin.dreams(chat=GROUP)
    assert [r.id for r in mine.rows] == ["d_2", "d_0"]
    shown = await memory.admin.dream("d_0")
    assert shown is not None and shown.report == (proposal,)
    assert json.loads(json.dumps(listed.to_json()))["rows"][0]["outcome"] == "ok"
    assert await memory.admin.dream("d_nope") is None


# who sees what, where things come from ---------------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "sensitivity", "reach", "whom", "text"),
    [
        ("global", "private", "everyone", None, "everyone"),
        ("chat:qq:group:1", "private", "group", "qq:group:1", "this group (qq:group:1)"),
        ("chat:qq:private:42", "public", "private", "qq:42", "only qq:42 in private"),
        ("user:qq:42", "private", "private", "qq:42", "only qq:42 in private"),
        ("user:qq:42", "public", "person", "qq:42", "qq:42 and groups they're in (public)"),
        ("chat:nonsense", "public", "nobody", None, "no chat (admins only)"),
        ("team:x", "public", "nobody", None, "no chat (admins only)"),
    ],
)
def test_who_sees_an_item_follows_the_scope_rules(
    scope: str, sensitivity: str, reach: str, whom: str | None, text: str
) -> None:
    audience = Audience.of(scope, sensitivity)
    assert (audience.reach, audience.whom, audience.text) == (reach, whom, text)


def test_every_source_the_write_path_uses_has_its_family() -> None:
    assert {
        s: source_family(s)
        for s in (
            "user_explicit",
            "plugin:notes",
            "rule_extract",
            "agent_proactive",
            "compress",
            "llm_dream",
            "dream_v2",
            "human_edit",
            "import",
            "mystery",
        )
    } == {
        "user_explicit": "said",
        "plugin:notes": "said",
        "rule_extract": "extracted",
        "agent_proactive": "extracted",
        "compress": "extracted",
        "llm_dream": "dreamed",
        "dream_v2": "dreamed",
        "human_edit": "edited",
        "import": "imported",
        "mystery": "other",
    }
    assert SOURCE_FAMILIES["said"].holds("plugin:x") and not SOURCE_FAMILIES["said"].holds("plugin")


def hit(kind: str, hit_id: str) -> Hit:
    return Hit(kind, hit_id, "text", 1.0, "global", [], T0)  # type: ignore[arg-type]


def test_pending_recalls_are_taken_once_and_the_oldest_give_way() -> None:
    pending = PendingRecalls(size=2)
    pending.note(1, [hit("item", "m_a"), hit("turn", "t_7"), hit("episode", "e_b")])
    pending.note(2, [])  # nothing injected: nothing to record
    pending.note(3, [hit("item", "m_c")])
    pending.note(4, [hit("item", "m_d")])  # the third waiting: the oldest goes
    assert len(pending) == 2
    assert pending.take(1, GROUP, T0) is None
    assert pending.take(3, GROUP, T0) == RecallRecord(3, GROUP, T0, ("m_c",))
    assert pending.take(3, GROUP, T0) is None
    assert RecallRecord.of(9, GROUP, T0, [hit("turn", "t_7"), hit("item", "m_a")]) == (
        RecallRecord(9, GROUP, T0, ("m_a",), (7,))
    )
