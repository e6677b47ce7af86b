"""Scope isolation (DESIGN §4): no query from one context returns an item, turn or episode it may
not see.

| context             | sees                                                   |
|---------------------|--------------------------------------------------------|
| private chat with U | global · user:U · chat:(that chat)                     |
| group G, speaker U  | global · chat:G · user:U items marked public           |

History turns and episodes are seen only in the chat they were said in. The expected visibility
is computed here from the table, never by asking `Viewer`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nahida.envelope import ChatKey, UserKey
from nahida.memory import (
    Candidate,
    Episode,
    Evidence,
    MemoryService,
    NewTurn,
    Query,
    Viewer,
    recall,
)
from nahida.memory.core.tokenize import index_text, tokenize
from nahida.memory.history import sessions
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.reference import ReferenceStore
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.write import write
from nahida.memory.write.extract import extract
from tests import pg
from tests.pg import postgres_server  # noqa: F401 (a fixture)

USERS = ("u1", "u2", "u3")
GROUPS = ("g1", "g2")
# Each word is one token of its own and no part of another, so "contains a query word" is exact.
# No time words ("周末", "today"): recall reads those as a time window, not as text.
WORDS = ("oolong", "espresso", "berlin", "hiking", "violin", "火锅", "咖啡", "杭州", "熊猫", "篮球")


def private_chat(user: str) -> str:
    return f"qq:private:{user}"


def group_chat(group: str) -> str:
    return f"qq:group:{group}"


SCOPES = (
    "global",
    *(f"chat:{private_chat(u)}" for u in USERS),
    *(f"chat:{group_chat(g)}" for g in GROUPS),
    *(f"user:qq:{u}" for u in USERS),
)
CHATS = (*(private_chat(u) for u in USERS), *(group_chat(g) for g in GROUPS))


@dataclass(frozen=True)
class Context:
    chat: str  # a ChatKey
    user: str  # the speaker's id on "qq"

    @property
    def viewer(self) -> Viewer:
        return Viewer(chat=ChatKey.parse(self.chat), user=UserKey("qq", self.user))

    def sees_item(self, scope: str, sensitivity: str) -> bool:
        if scope == "global" or scope == f"chat:{self.chat}":
            return True
        if scope == f"user:qq:{self.user}":
            return self.chat == private_chat(self.user) or sensitivity == "public"
        return False

    def sees_turn(self, chat: str) -> bool:
        return chat == self.chat


contexts = st.one_of(
    st.builds(Context, st.sampled_from(USERS).map(private_chat), st.just("")).map(
        lambda c: Context(c.chat, c.chat.rsplit(":", 1)[1])
    ),
    st.builds(Context, st.sampled_from(GROUPS).map(group_chat), st.sampled_from(USERS)),
)
word_sets = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True)
items = st.lists(
    st.tuples(
        st.sampled_from(SCOPES),
        st.sampled_from(("public", "private")),
        st.sampled_from(("active", "active", "archived")),
        word_sets,
    ),
    min_size=1,
    max_size=14,
)
turns = st.lists(st.tuples(st.sampled_from(CHATS), word_sets), max_size=10)
episodes = st.lists(st.tuples(st.sampled_from(CHATS), word_sets), max_size=6)
queries = st.lists(st.tuples(contexts, word_sets), min_size=1, max_size=4)


@dataclass(frozen=True)
class Stored:
    id: str
    scope: str
    sensitivity: str
    status: str
    words: frozenset[str]


def store_items(tx: Tx, specs: list[tuple[str, str, str, list[str]]]) -> list[Stored]:
    stored = []
    for n, (scope, sensitivity, status, words) in enumerate(specs):
        subject = scope.split(":", 2)[-1] if scope.startswith("user:") else None
        candidate = Candidate(
            scope=scope,
            kind="fact",
            content=" ".join([*words, f"i{n}"]),  # a unique word keeps texts apart
            source="import",
            sensitivity=sensitivity,
            subject_user=subject,
            evidence=(Evidence(chat="qq:private:u1", message_id=f"m{n}"),),
        )
        item = write.create_item(tx, write.tokens_of(candidate), "test")
        if status != "active":
            item = write.update_item(tx, item, "test", "archive", status=status)
        stored.append(Stored(item.id, scope, sensitivity, status, frozenset(words)))
    return stored


def record_turns(tx: Tx, specs: list[tuple[str, list[str]]]) -> dict[str, tuple[str, set[str]]]:
    recorded = {}
    now = time.time()
    for n, (chat, words) in enumerate(specs):
        content = " ".join([*words, f"t{n}"])
        said = NewTurn(chat, "user", content, now - 100 + n, speaker="qq:u1")
        turn = sessions.record(tx, said, index_text(content))
        assert turn is not None
        recorded[f"t_{turn.id}"] = (chat, set(words))
    return recorded


def store_episodes(tx: Tx, specs: list[tuple[str, list[str]]]) -> dict[str, tuple[str, set[str]]]:
    """One episode per spec, each of a session of its own in its chat."""
    summarised = {}
    now = time.time()
    for n, (chat, words) in enumerate(specs):
        summary = " ".join([*words, f"e{n}"])
        tx.sessions.create(f"s_e{n}", chat, "t", now - 200)
        episode = Episode(f"e_{n:06d}", f"s_e{n}", chat, summary, (), now - 200, now - 150 + n, 2)
        tx.episodes.put(episode, index_text(summary))
        summarised[episode.id] = (chat, set(words))
    return summarised


def check(
    db: Store,
    stored: list[Stored],
    said: dict[str, tuple[str, set[str]]],
    ctx: Context,
    words: list[str],
) -> None:
    query = Query(" ".join(words), ctx.viewer, limit=200)
    hits = db.read_sync(recall.search, query, recall.plan(query))
    found = {h.id for h in hits}
    may_see = {s.id for s in stored if ctx.sees_item(s.scope, s.sensitivity)}
    may_see |= {tid for tid, (chat, _) in said.items() if ctx.sees_turn(chat)}
    assert found <= may_see, f"{ctx} saw {found - may_see}"
    last_time = Query("上次 " + " ".join(words), ctx.viewer, limit=200)  # the latest episode first
    hits = db.read_sync(recall.search, last_time, recall.plan(last_time))
    assert {h.id for h in hits} <= may_see, f"{ctx} saw {({h.id for h in hits}) - may_see}"
    # not vacuous: what is visible, active and has every word of the query is found
    wanted = set(words)
    full = {s.id for s in stored if s.status == "active" and wanted <= s.words}
    full |= {tid for tid, (_, w) in said.items() if wanted <= w}
    assert full & may_see <= found

    service = MemoryService(db)
    listed = asyncio.run(service.items.latest(ctx.viewer, status=None, limit=1000))
    assert {i.id for i in listed} == {s.id for s in stored if s.id in may_see}

    async def visible() -> set[str]:
        return {s.id for s in stored if await service.items.visible(s.id, ctx.viewer) is not None}

    assert asyncio.run(visible()) == {s.id for s in stored if s.id in may_see}


def test_vocabulary_words_are_single_tokens() -> None:
    for word in WORDS:
        assert tokenize(word) == [word]


# each opens an empty store (PostgreSQL: a schema of its own on the session's server, tests/pg.py)
BACKENDS: dict[str, Callable[[], Store]] = {
    "sqlite": lambda: SqliteStore(":memory:"),
    "reference": ReferenceStore,
    "postgres": pg.fresh_store,
}


@pytest.fixture(scope="module", params=list(BACKENDS))
def open_store(request: pytest.FixtureRequest) -> Callable[[], Store]:
    """How one backend opens an empty store (module-scoped: hypothesis runs many examples in
    one test call, so it refuses function-scoped fixtures)."""
    if request.param == "postgres":
        request.getfixturevalue("postgres_server")
        pg.require()
    return BACKENDS[request.param]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items, turns, queries, episodes)
def test_every_retrieval_path_respects_scopes(
    open_store: Callable[[], Store],
    item_specs: list[tuple[str, str, str, list[str]]],
    turn_specs: list[tuple[str, list[str]]],
    query_specs: list[tuple[Context, list[str]]],
    episode_specs: list[tuple[str, list[str]]],
) -> None:
    db = open_store()
    try:
        stored = db.write_sync(store_items, item_specs)
        said = db.write_sync(record_turns, turn_specs)
        said |= db.write_sync(store_episodes, episode_specs)  # seen, like turns, in their chat
        for ctx, words in query_specs:
            check(db, stored, said, ctx, words)
    finally:
        db.close()


# --- the cases other bots got wrong ---------------------------------------------------------

ALICE, BOB = UserKey("qq", "alice"), UserKey("qq", "bob")
ALICE_DM, BOB_DM = ChatKey.parse("qq:private:alice"), ChatKey.parse("qq:private:bob")
G1, G2 = ChatKey.parse("qq:group:1"), ChatKey.parse("qq:group:2")


async def say(service: MemoryService, text: str, chat: ChatKey, user: UserKey) -> None:
    """What the runner and the extraction hook do with a user's message."""
    turn = NewTurn(str(chat), "user", text, time.time() - 60, speaker=str(user))
    await service.sessions.record(turn)
    for candidate in extract(text, chat=chat, user=user):
        await service.items.propose(candidate, "rule_extract")


@dataclass(frozen=True)
class Seen:
    items: str  # item texts from search, listing and the injected block
    history: str  # turn texts from search and the injected block


async def seen(service: MemoryService, text: str, chat: ChatKey, user: UserKey) -> Seen:
    viewer = Viewer(chat=chat, user=user)
    hits = await service.recall.search(Query(text, viewer, limit=50))
    listed = await service.items.latest(viewer, limit=100)
    block = await service.recall.block(text, viewer, frozenset(), limit=15) or ""
    lines = block.splitlines()
    items = [h.text for h in hits if h.kind == "item"] + [i.content for i in listed]
    items += [line for line in lines if line.startswith("- [m_")]
    turns = [h.text for h in hits if h.kind == "turn"]
    turns += [line for line in lines if line.startswith("- [history")]
    return Seen("\n".join(items), "\n".join(turns))


async def test_a_private_chat_fact_never_surfaces_in_a_group(memory: MemoryService) -> None:
    service = memory
    await say(service, "我喜欢乌龙茶", ALICE_DM, ALICE)
    mine = await seen(service, "乌龙茶", ALICE_DM, ALICE)
    assert "喜欢乌龙茶" in mine.items and "我喜欢乌龙茶" in mine.history
    assert await seen(service, "乌龙茶", G1, ALICE) == Seen("", "")
    (item,) = await service.items.latest(Viewer(chat=ALICE_DM, user=ALICE))
    assert await service.items.visible(item.id, Viewer(chat=G1, user=ALICE)) is None


async def test_said_in_a_group_is_seen_there_by_the_speaker_only(memory: MemoryService) -> None:
    service = memory
    await say(service, "我住在杭州", G1, ALICE)
    assert "住在杭州" in (await seen(service, "杭州", G1, ALICE)).items
    assert (
        "住在杭州" in (await seen(service, "杭州", ALICE_DM, ALICE)).items
    )  # hers, said in public
    bob = await seen(service, "杭州", G1, BOB)
    assert bob.items == "" and "我住在杭州" in bob.history  # the group's talk, not her memory
    elsewhere = await seen(service, "杭州", G2, ALICE)  # her public memory goes with her
    assert "住在杭州" in elsewhere.items and elsewhere.history == ""
    assert await seen(service, "杭州", G2, BOB) == Seen("", "")


async def test_another_members_facts_never_surface_in_someone_elses_private_chat(
    memory: MemoryService,
) -> None:
    service = memory
    await say(service, "我喜欢乌龙茶", BOB_DM, BOB)
    await say(service, "我住在杭州", G1, BOB)  # public, but about Bob
    assert "住在杭州" in (await seen(service, "杭州", G1, BOB)).items
    for query in ("乌龙茶", "杭州", "喜欢 住在"):
        assert await seen(service, query, ALICE_DM, ALICE) == Seen("", "")


async def test_another_groups_chat_items_and_history_never_surface(memory: MemoryService) -> None:
    service = memory
    await say(service, "以后我们统一用英文写文档", G2, BOB)
    await say(service, "英文文档放在共享盘", G2, BOB)
    there = await seen(service, "英文文档", G2, ALICE)
    assert "以后我们统一用英文写文档" in there.items and "共享盘" in there.history
    for chat in (G1, ALICE_DM, BOB_DM):
        assert await seen(service, "英文文档", chat, BOB) == Seen("", "")
