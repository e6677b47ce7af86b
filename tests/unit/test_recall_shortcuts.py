"""Recall leaves out a list that cannot find anything (a young chat's history is all in the
prompt; no active item the viewer may see), and what it returns is what the searches would."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from nahida.memory import (
    Actor,
    Hit,
    MemoryItem,
    MemoryService,
    NewTurn,
    ProfileEntry,
    Query,
    recall,
    shown_ids,
    viewer_for,
)
from nahida.memory.context_units import HISTORY, MEMORY, NOTHING, probe_unit
from nahida.memory.models import Pinned
from nahida.memory.recall import cascade
from nahida.memory.store.base import Tx
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.store.sqlite.episodes import EpisodeTable
from nahida.memory.store.sqlite.history import TurnTable
from nahida.memory.store.sqlite.items import ItemTable
from nahida.memory.tokenize import index_text
from tests.unit.test_recall import GROUP, T0, say

WORDS = ["budget", "oolong", "friday", "launch", "tea", "station", "vegan", "lake"]


def turn_ids(store: SqliteStore) -> list[int]:
    def unit(tx: Tx) -> list[int]:
        session = tx.sessions.latest(GROUP, 1)[0]
        return [t.id for t in tx.turns.of_session(session.id)]

    return store.read_sync(unit)


def add_item(store: SqliteStore, n: int, scope: str, text: str) -> None:
    item = MemoryItem(f"m{n}", scope, "fact", text, created_at=T0, updated_at=T0)
    assert store.write_sync(lambda tx: tx.items.add(item, index_text(text)))


def ask(store: SqliteStore, text: str, exclude: frozenset[int]) -> list[Hit]:
    query = Query(text, viewer_for(GROUP, "alice"), exclude_turns=exclude, at=T0 + 10_000)
    return store.read_sync(recall.search, query, recall.plan(query))


def refuse(monkeypatch: pytest.MonkeyPatch, table: type, method: str) -> None:
    def fail(*args: object) -> None:
        raise AssertionError(f"{table.__name__}.{method} ran")

    monkeypatch.setattr(table, method, fail)


def test_a_chat_whose_history_is_all_in_the_prompt_is_not_searched(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(6):
        say(store, f"the {WORDS[n]} is on friday", T0 + n, mid=str(n))
    shown = frozenset(turn_ids(store))
    refuse(monkeypatch, TurnTable, "search")
    refuse(monkeypatch, ItemTable, "search")  # no item anyone may see, either
    assert ask(store, "friday budget", shown) == []
    monkeypatch.undo()
    found = ask(store, "friday budget", shown - {min(shown)})  # one turn left out of the prompt
    assert [h.message_ids for h in found] == [["0"]]


def test_an_item_only_someone_else_may_see_does_not_make_a_search(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_item(store, 1, "user:test:bob", "bob drinks oolong")  # private to bob
    refuse(monkeypatch, ItemTable, "search")
    assert ask(store, "oolong", frozenset()) == []
    monkeypatch.undo()
    add_item(store, 2, "global", "the office serves oolong")
    assert [h.id for h in ask(store, "oolong", frozenset())] == ["m2"]


def test_leaving_lists_out_changes_no_answer(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    for n in range(12):
        words = " ".join(rng.sample(WORDS, 3))
        say(store, f"we talked about {words}", T0 + n, mid=str(n))
        if n % 5 == 0:
            add_item(store, n, rng.choice(["global", f"chat:{GROUP}", "user:test:bob"]), words)
    ids = turn_ids(store)
    for case in range(30):
        shown = frozenset(rng.sample(ids, rng.randrange(len(ids) + 1)))
        question = " ".join(rng.sample(WORDS, 2))
        fast = ask(store, question, shown)
        with monkeypatch.context() as patched:
            patched.setattr(cascade, "_leaving_out_the_empty", lambda tx, query, episodes: query)
            assert ask(store, question, shown) == fast, (case, question, sorted(shown))


async def test_episodes_are_searched_only_where_the_viewer_has_some(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = MemoryService(store)
    say(store, "we planned the lake trip on friday", T0, mid="1")
    question = Query("lake trip", viewer_for(GROUP, "alice"), at=T0 + 10_000)
    with monkeypatch.context() as patched:
        refuse(patched, EpisodeTable, "search")  # the chat has none: none is searched
        assert [h.message_ids for h in await memory.recall.search(question)] == [["1"]]
    session = store.read_sync(lambda tx: tx.sessions.latest(GROUP, 1))[0]
    await memory.episodes.add(
        session_id=session.id,
        chat=GROUP,
        summary="Alice planned a lake trip for friday",
        keywords=["lake", "trip"],
        started_at=T0,
        ended_at=T0 + 60,
        turn_count=1,
    )
    kinds = {h.kind for h in await memory.recall.search(question)}
    assert kinds == {"turn", "episode"}


async def test_the_probe_sent_with_the_turn_answers_what_the_read_would(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`MemoryService.recall_probe`'s probe, asked as a user turn is stored: where it says
    nothing is there, the prompt's memory read (recall and pinned context) answers nothing too
    — and is then not made. Random chats, items of every scope, profiles, rules and windows."""
    memory = MemoryService(store)
    rng = random.Random(11)
    chats = [f"test:group:g{k}" for k in range(12)] + ["test:private:alice"]
    seen: Counter[str] = Counter()
    await memory.episodes.in_any(chats)  # read once a process, then kept in step
    for step in range(160):
        action = rng.random()
        if action < 0.06:  # a global item makes every later probe say yes: only at the end
            scopes = [f"chat:{rng.choice(chats)}", "user:test:bob", "user:test:dave"]
            scope = "global" if step > 150 else rng.choice(scopes)
            add_item(store, step, scope, " ".join(rng.sample(WORDS, 2)))
        elif action < 0.09:
            writer = viewer_for(rng.choice(chats[:-1]), rng.choice(["carol", "dave"]))
            await memory.procedures.write(
                f"answer in {rng.choice(WORDS)} style",
                chat=writer.chat,
                user=writer.user,
                for_chat=rng.random() < 0.5,
                actor=Actor.cli(),
            )
        elif action < 0.11 or step == 5:  # erin has a card from early on
            entry = ProfileEntry(
                id=f"p_{step}",
                user="test:erin" if step == 5 else rng.choice(["test:alice", "test:dave"]),
                section="基础特征",
                text=f"likes {rng.choice(WORDS)}",
                sensitivity="public" if step == 5 else rng.choice(["public", "private"]),
                created_at=T0,
            )
            assert store.write_sync(lambda tx, entry=entry: tx.profiles.add(entry, "bullet"))
        chat = rng.choice(chats)
        people = ["alice"] if chat == chats[-1] else ["alice", "dave", "erin"]
        viewer = viewer_for(chat, rng.choice(people))
        text = " ".join(rng.sample(WORDS, 2))
        turn = NewTurn(
            chat, "user", text, T0 + step, speaker=str(viewer.user), message_id=str(step)
        )
        window = rng.choice([2, 6, 20])
        recorded = await memory.sessions.record_user_turn(turn, window, probe_unit(viewer))
        assert recorded is not None and recorded.probed is not None
        seen[recorded.probed] += 1
        if recorded.probed != NOTHING:  # the read is made as before (and touches what it injects)
            continue
        shown = shown_ids(recorded.turn.id, recorded.hot)
        trips = store.db.stats.round_trips
        nothing = (None, Pinned(None, None))
        assert await memory.context(text, viewer, shown, limit=10, recallable=NOTHING) == nothing
        assert store.db.stats.round_trips == trips  # no read made
        read = await memory.context(text, viewer, shown, limit=10)
        assert read == nothing, (step, chat, viewer)  # and the read would have found nothing
    assert seen[NOTHING] >= 20 and seen[HISTORY] >= 10 and seen[MEMORY] >= 10, seen


async def test_a_chat_longer_than_its_prompts_is_no_longer_probed(store: SqliteStore) -> None:
    """Once a probe found history beyond the window, the chat's messages go without one (the
    answer would be the same): the read is made as it was before probes."""
    memory = MemoryService(store)
    viewer = viewer_for(GROUP, "alice")
    for n in range(6):
        turn = NewTurn(GROUP, "user", f"第 {n} 句", T0 + n, speaker="test:alice", message_id=str(n))
        probe = memory.recall_probe(viewer)
        assert probe is not None, n
        recorded = await memory.sessions.record_user_turn(turn, 4, probe)
        assert recorded is not None
        assert recorded.probed == (NOTHING if n < 5 else HISTORY)  # a window of 4 turns
        shown = shown_ids(recorded.turn.id, recorded.hot)
        await memory.context(turn.content, viewer, shown, limit=5, recallable=recorded.probed)
    assert memory.recall_probe(viewer) is None
    assert memory.recall_probe(viewer_for("test:group:other", "alice")) is not None
