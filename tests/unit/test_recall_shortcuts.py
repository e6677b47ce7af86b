"""Recall leaves out a list that cannot find anything (a young chat's history is all in the
prompt; no active item the viewer may see), and what it returns is what the searches would."""

from __future__ import annotations

import random

import pytest

from nahida.memory import Hit, MemoryItem, MemoryService, Query, Viewer, recall
from nahida.memory.core.tokenize import index_text
from nahida.memory.recall import cascade
from nahida.memory.store.base import Tx
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.store.sqlite.episodes import EpisodeTable
from nahida.memory.store.sqlite.history import TurnTable
from nahida.memory.store.sqlite.items import ItemTable
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
    query = Query(text, Viewer.parse(GROUP, "alice"), exclude_turns=exclude, at=T0 + 10_000)
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
    question = Query("lake trip", Viewer.parse(GROUP, "alice"), at=T0 + 10_000)
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
