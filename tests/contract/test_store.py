"""The store contract, part 1: units of work, sessions and turns, for every backend.

Everything here goes through the `Store` protocol (`nahida/memory/store/base.py`) and the domain
types only: no SQL, no backend attribute, so each test holds for any backend in `BACKENDS`
(`conftest.py`). Items, visibility, candidates, events and jobs are in `test_store_memory.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nahida.errors import StorageError
from nahida.memory.core.models import NewTurn, Session
from nahida.memory.core.tokenize import index_text, query_terms, tokenize
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import TextSearch

T0 = 1_780_000_000.0
CHAT = "qq:group:1"
OTHER = "qq:private:u1"
THIRD = "qq:group:2"
Factory = Callable[[Path], Store]  # as in conftest.py


class Boom(Exception):
    """What a failing unit raises."""


def dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def said(content: str, at: float, *, chat: str = CHAT, role: str = "user", **extra: Any) -> NewTurn:
    speaker = "qq:u1" if role == "user" else None
    return NewTurn(chat, role, content, at, speaker=speaker, **extra)


def new_session(
    store: Store, session_id: str, *, chat: str = CHAT, title: str = "", at: float = T0
) -> None:
    assert store.write_sync(lambda tx: tx.sessions.create(session_id, chat, title or "t", at))


def add_turns(store: Store, session_id: str, *turns: NewTurn, indexed: bool = True) -> list[int]:
    """Add turns to a session, with their index text unless `indexed` is False; their ids."""

    def unit(tx: Tx) -> list[int]:
        return [
            tx.turns.add(session_id, t, index_text(t.content) if indexed else None) for t in turns
        ]

    return store.write_sync(unit)


def ids(rows: Sequence[Session]) -> list[str]:
    return [row.id for row in rows]


def found_turns(
    store: Store, chats: Sequence[str] | None, text: str | None, limit: int = 50, **search: Any
) -> list[int]:
    """Ids of the turns `turns.search` finds for `text` (None: no terms), best first."""
    terms = None if text is None else query_terms(tokenize(text))
    query = TextSearch(terms, limit, **search)
    return [m.id for m in store.read_sync(lambda tx: tx.turns.search(chats, query))]


# units of work -------------------------------------------------------------------------------


def test_units_get_their_arguments_and_return_their_values(store: Store) -> None:
    def create(tx: Tx, session_id: str, title: str) -> bool:
        return tx.sessions.create(session_id, CHAT, title, T0)

    assert store.write_sync(create, "s1", "hello") is True
    assert store.read_sync(lambda tx, sid: tx.sessions.get(sid).title, "s1") == "hello"


def test_a_unit_that_raises_leaves_nothing_behind(store: Store) -> None:
    def unit(tx: Tx) -> None:
        tx.sessions.create("s1", CHAT, "gone", T0)
        tx.turns.add("s1", said("oolong", T0), "oolong")
        tx.sessions.set_current(CHAT, "s1", T0)
        tx.jobs.start("dream", "p1", T0)
        raise Boom("after writing")

    with pytest.raises(Boom, match="after writing"):
        store.write_sync(unit)

    def look(tx: Tx) -> tuple[object, ...]:
        return (
            tx.sessions.get("s1"),
            tx.sessions.current(CHAT),
            tx.turns.search(None, TextSearch(("oolong",), 5)),
            tx.jobs.latest(None, 5),
        )

    assert store.read_sync(look) == (None, None, [], [])


async def test_async_units_run_from_an_event_loop(store: Store) -> None:
    assert await store.write(lambda tx: tx.sessions.create("s1", CHAT, "async", T0)) is True
    session = await store.read(lambda tx: tx.sessions.get("s1"))
    assert session is not None and session.title == "async"


async def test_a_read_sees_every_write_answered_before_it(store: Store) -> None:
    def create(tx: Tx, session_id: str) -> bool:
        return tx.sessions.create(session_id, CHAT, session_id, T0)

    for n in range(4):
        assert await store.write(create, f"s{n}")
        seen = await store.read(lambda tx: ids(tx.sessions.latest(None, 10)))
        assert sorted(seen) == [f"s{k}" for k in range(n + 1)]


async def test_concurrent_writes_fail_alone(store: Store) -> None:
    def create(tx: Tx, session_id: str) -> bool:
        return tx.sessions.create(session_id, CHAT, session_id, T0)

    def create_then_fail(tx: Tx, session_id: str) -> bool:
        create(tx, session_id)
        raise Boom(session_id)

    units = [create_then_fail if n % 3 == 1 else create for n in range(9)]
    results = await asyncio.gather(
        *(store.write(unit, f"s{n}") for n, unit in enumerate(units)), return_exceptions=True
    )
    for n, result in enumerate(results):
        assert isinstance(result, Boom) if n % 3 == 1 else result is True
    kept = await store.read(lambda tx: tx.sessions.latest(None, 20))
    assert sorted(ids(kept)) == [f"s{n}" for n in range(9) if n % 3 != 1]


async def test_close_finishes_queued_units_then_refuses_calls(
    backend: Factory, tmp_path: Path
) -> None:
    opened = backend(tmp_path)

    def create(tx: Tx, session_id: str) -> bool:
        return tx.sessions.create(session_id, CHAT, session_id, T0)

    queued = [asyncio.ensure_future(opened.write(create, f"s{n}")) for n in range(20)]
    await asyncio.sleep(0)  # every task hands its unit to the store
    opened.close()
    assert await asyncio.gather(*queued) == [True] * 20
    with pytest.raises(StorageError):
        opened.read_sync(lambda tx: tx.sessions.get("s1"))
    with pytest.raises(StorageError):
        opened.write_sync(create, "late")
    with pytest.raises(StorageError):
        await opened.read(lambda tx: tx.sessions.get("s1"))
    with pytest.raises(StorageError):
        await opened.write(create, "later")

    reopened = backend(tmp_path)
    try:
        assert len(reopened.read_sync(lambda tx: tx.sessions.latest(None, 50))) == 20
    finally:
        reopened.close()


def test_a_read_unit_sees_one_snapshot(backend: Factory, tmp_path: Path) -> None:
    reader, writer = backend(tmp_path), backend(tmp_path)  # two handles on the same data
    try:
        new_session(writer, "s1")

        def unit(tx: Tx) -> tuple[list[str], list[str]]:
            before = ids(tx.sessions.latest(None, 10))
            new_session(writer, "s2", at=T0 + 1)  # another process commits meanwhile
            return before, ids(tx.sessions.latest(None, 10))

        assert reader.read_sync(unit) == (["s1"], ["s1"])
    finally:
        reader.close()
        writer.close()


# sessions ------------------------------------------------------------------------------------


def test_create_refuses_a_taken_id_and_writes_nothing(store: Store) -> None:
    new_session(store, "s1", title="first", at=T0)
    assert store.write_sync(lambda tx: tx.sessions.create("s1", OTHER, "second", T0 + 5)) is False
    assert store.read_sync(lambda tx: tx.sessions.get("s1")) == Session(
        "s1", CHAT, "first", dt(T0), dt(T0), 0
    )
    assert store.read_sync(lambda tx: tx.sessions.get("s2")) is None
    assert ids(store.read_sync(lambda tx: tx.sessions.latest(OTHER, 10))) == []


def test_latest_is_newest_last_turn_first_by_chat_and_limited(store: Store) -> None:
    new_session(store, "s1", at=T0)
    new_session(store, "s2", at=T0 + 10)
    new_session(store, "s3", chat=OTHER, at=T0 + 20)
    add_turns(store, "s1", said("later", T0 + 30))

    def latest(chat: str | None, limit: int = 10) -> list[str]:
        return ids(store.read_sync(lambda tx: tx.sessions.latest(chat, limit)))

    assert latest(None) == ["s1", "s3", "s2"]
    assert latest(None, 2) == ["s1", "s3"]
    assert latest(CHAT) == ["s1", "s2"]
    assert latest(OTHER) == ["s3"]
    assert latest(THIRD) == []


def test_by_suffix_matches_the_end_of_the_id_literally(store: Store) -> None:
    for session_id in ("s_a_12", "s_aX12", "s_b%9", "s_bc9"):
        new_session(store, session_id)
    new_session(store, "t_a_12", chat=OTHER)

    def suffix(text: str, chat: str | None = CHAT, limit: int = 10) -> list[str]:
        return sorted(ids(store.read_sync(lambda tx: tx.sessions.by_suffix(text, chat, limit))))

    assert suffix("_12") == ["s_a_12"]  # "_" is no wildcard
    assert suffix("%9") == ["s_b%9"]  # "%" neither
    assert suffix("X12") == ["s_aX12"]
    assert suffix("s_a") == []  # a suffix, not a substring
    assert suffix("12", None) == sorted(["s_a_12", "s_aX12", "t_a_12"])
    assert len(suffix("12", None, limit=2)) == 2


def test_titled_matches_a_literal_substring_newest_first(store: Store) -> None:
    new_session(store, "s1", title="50% off oolong", at=T0)
    new_session(store, "s2", title="500 off oolong", at=T0 + 1)
    new_session(store, "s3", title="snake_case notes", at=T0 + 2)
    new_session(store, "s4", title="snakeXcase notes", at=T0 + 3)
    new_session(store, "s5", title="oolong elsewhere", chat=OTHER, at=T0 + 4)

    def titled(text: str, chat: str | None = CHAT, limit: int = 10) -> list[str]:
        return ids(store.read_sync(lambda tx: tx.sessions.titled(text, chat, limit)))

    assert titled("50%") == ["s1"]
    assert titled("e_c") == ["s3"]
    assert titled("oolong") == ["s2", "s1"]
    assert titled("oolong", None) == ["s5", "s2", "s1"]
    assert titled("oolong", None, limit=1) == ["s5"]
    assert titled("espresso") == []


def test_retitle_replaces_that_sessions_title_and_nothing_else(store: Store) -> None:
    new_session(store, "s1", title="my key is sk-proj-abc", at=T0)
    new_session(store, "s2", title="my key is elsewhere", at=T0 + 1)
    store.write_sync(lambda tx: tx.sessions.retitle("s1", "my key is [REDACTED]"))
    assert store.read_sync(lambda tx: tx.sessions.get("s1")) == Session(
        "s1", CHAT, "my key is [REDACTED]", dt(T0), dt(T0), 0
    )
    assert store.read_sync(lambda tx: tx.sessions.get("s2")) == Session(
        "s2", CHAT, "my key is elsewhere", dt(T0 + 1), dt(T0 + 1), 0
    )
    assert ids(store.read_sync(lambda tx: tx.sessions.titled("sk-proj", None, 10))) == []
    assert ids(store.read_sync(lambda tx: tx.sessions.titled("REDACTED", None, 10))) == ["s1"]


def test_current_session_and_last_activity_that_never_goes_back(store: Store) -> None:
    new_session(store, "s1")
    new_session(store, "s2")

    def current(chat: str = CHAT) -> tuple[str | None, float] | None:
        return store.read_sync(lambda tx: tx.sessions.current(chat))

    def point(session_id: str, at: float) -> None:
        store.write_sync(lambda tx: tx.sessions.set_current(CHAT, session_id, at))

    assert current() is None  # a chat never seen
    point("s1", T0 + 100)
    assert current() == ("s1", T0 + 100)
    point("s2", T0 + 50)  # an earlier moment moves the pointer, not the activity
    assert current() == ("s2", T0 + 100)
    point("s2", T0 + 200)
    assert current() == ("s2", T0 + 200)
    point("s2", T0 + 150)  # the same session, an earlier moment: the activity stays
    assert current() == ("s2", T0 + 200)
    store.write_sync(lambda tx: tx.sessions.clear_current(CHAT))
    assert current() == (None, T0 + 200)
    assert current(OTHER) is None


def test_delete_removes_the_session_its_turns_and_their_index(store: Store) -> None:
    new_session(store, "s1")
    new_session(store, "s2")
    (kept,) = add_turns(store, "s2", said("oolong there", T0 + 1, message_id="m2"))
    add_turns(  # the newest turns: a backend may hand their ids out again
        store,
        "s1",
        said("oolong here", T0 + 2, message_id="m1"),
        said("espresso", T0 + 3, role="assistant"),
    )

    assert store.write_sync(lambda tx: tx.sessions.delete("s1")) is True
    assert store.read_sync(lambda tx: tx.sessions.get("s1")) is None
    assert store.read_sync(lambda tx: tx.turns.of_session("s1")) == []
    assert store.read_sync(lambda tx: tx.turns.known(CHAT, "m1")) is False
    assert store.read_sync(lambda tx: tx.turns.known(CHAT, "m2")) is True
    assert found_turns(store, None, "oolong") == [kept]
    assert found_turns(store, None, "espresso") == []
    assert ids(store.read_sync(lambda tx: tx.sessions.latest(None, 10))) == ["s2"]
    assert store.write_sync(lambda tx: tx.sessions.delete("s1")) is False
    later = add_turns(store, "s2", said("berlin", T0 + 4), said("hiking", T0 + 5))
    assert found_turns(store, None, "oolong") == [kept]  # no index entry outlived its turn
    assert found_turns(store, None, "espresso") == []
    assert sorted(found_turns(store, None, "berlin hiking")) == later


def test_delete_empty_removes_only_sessions_without_turns(store: Store) -> None:
    for session_id in ("s1", "s2", "s3"):
        new_session(store, session_id)
    add_turns(store, "s2", said("hello", T0 + 1))
    assert store.write_sync(lambda tx: tx.sessions.delete_empty()) == 2
    assert ids(store.read_sync(lambda tx: tx.sessions.latest(None, 10))) == ["s2"]
    assert store.write_sync(lambda tx: tx.sessions.delete_empty()) == 0


# turns ---------------------------------------------------------------------------------------


def test_add_returns_increasing_ids_and_counts_the_turn_in_its_session(store: Store) -> None:
    new_session(store, "s1", at=T0)
    first, second = add_turns(
        store, "s1", said("one", T0 + 10), said("two", T0 + 20, role="assistant")
    )
    (third,) = add_turns(store, "s1", said("imported late", T0 + 5))  # said before the last
    assert first < second < third
    session = store.read_sync(lambda tx: tx.sessions.get("s1"))
    assert session is not None
    assert (session.turn_count, session.updated_at) == (3, dt(T0 + 20))


def test_turns_of_a_session_come_back_as_stored_oldest_first(store: Store) -> None:
    new_session(store, "s1")
    new_session(store, "s2")
    turns = [
        NewTurn(CHAT, "user", "hi", T0 + 1, "qq:u1", "Alice", "m1"),
        NewTurn(
            CHAT,
            "assistant",
            "looking it up",
            T0 + 2.5,
            tool_calls=[{"name": "search", "arguments": {"q": "乌龙茶"}}],
            addressed=False,
        ),
        NewTurn(CHAT, "tool", "no result", T0 + 3, error="timeout"),
    ]
    stored = add_turns(store, "s1", *turns[:2])
    add_turns(store, "s2", said("elsewhere", T0 + 2))
    stored += add_turns(store, "s1", turns[2])
    expected = [t.stored(i, "s1") for t, i in zip(turns, stored, strict=True)]
    assert store.read_sync(lambda tx: tx.turns.of_session("s1")) == expected

    store.write_sync(lambda tx: tx.turns.mark_error(stored[0], "provider failed"))
    after = store.read_sync(lambda tx: tx.turns.of_session("s1"))
    assert [t.error for t in after] == ["provider failed", None, "timeout"]


def test_known_finds_a_message_id_only_in_its_chat(store: Store) -> None:
    new_session(store, "s1")
    add_turns(store, "s1", said("hi", T0, message_id="m1"))

    def known(chat: str, message_id: str) -> bool:
        return store.read_sync(lambda tx: tx.turns.known(chat, message_id))

    assert known(CHAT, "m1") is True
    assert known(OTHER, "m1") is False
    assert known(CHAT, "m2") is False


def test_window_is_the_last_turns_before_one_oldest_first(store: Store) -> None:
    new_session(store, "s1")
    new_session(store, "s2")
    mine = add_turns(store, "s1", said("one", T0 + 1), said("two", T0 + 2))
    theirs = add_turns(store, "s2", said("elsewhere", T0 + 3))
    mine += add_turns(
        store, "s1", said("three", T0 + 4), said("four", T0 + 5), said("five", T0 + 6)
    )

    def window(session_id: str, before: int, limit: int = 10, after: int = 0) -> list[int]:
        return [
            t.id
            for t in store.read_sync(lambda tx: tx.turns.window(session_id, before, limit, after))
        ]

    assert window("s1", mine[4], 3) == mine[1:4]
    assert window("s1", mine[1]) == mine[:1]
    assert window("s1", mine[0]) == []
    assert window("s2", mine[4]) == theirs
    # after a turn (what a summary covers): the last `limit` of those after it, fewer if need be
    assert window("s1", mine[4], 3, after=mine[1]) == mine[2:4]
    assert window("s1", mine[4], 2, after=mine[0]) == mine[2:4]
    assert window("s1", mine[4], 3, after=mine[3]) == []


def test_search_finds_only_indexed_turns_of_the_given_chats(store: Store) -> None:
    new_session(store, "s1")
    new_session(store, "s2", chat=OTHER)
    new_session(store, "s3", chat=THIRD)
    (here,) = add_turns(store, "s1", said("oolong tea", T0 + 1))
    (there,) = add_turns(store, "s2", said("oolong again", T0 + 2, chat=OTHER))
    (far,) = add_turns(store, "s3", said("oolong far away", T0 + 3, chat=THIRD))
    add_turns(store, "s1", said("oolong unindexed", T0 + 4), indexed=False)

    assert found_turns(store, [CHAT], "oolong") == [here]
    assert sorted(found_turns(store, [CHAT, OTHER], "oolong")) == sorted([here, there])
    assert sorted(found_turns(store, None, "oolong")) == sorted([here, there, far])
    assert found_turns(store, [], "oolong") == []
    assert found_turns(store, None, "espresso") == []


def test_rewrite_replaces_the_words_and_the_index_text_of_indexed_turns_only(store: Store) -> None:
    new_session(store, "s1")
    indexed, kept = add_turns(store, "s1", said("oolong secret", T0 + 1), said("oolong", T0 + 2))
    (unindexed,) = add_turns(store, "s1", said("oolong aside", T0 + 3), indexed=False)
    (hidden,) = add_turns(store, "s1", said("oolong hidden", T0 + 4))
    store.write_sync(lambda tx: tx.turns.hide([hidden], [], "m_forgotten"))
    before = store.read_sync(lambda tx: tx.turns.of_session("s1"))

    def rewrite(tx: Tx) -> None:
        for turn_id in (indexed, unindexed, hidden):
            tx.turns.rewrite(turn_id, "espresso now", index_text("espresso now"))

    store.write_sync(rewrite)
    after = store.read_sync(lambda tx: tx.turns.of_session("s1"))
    changed = (indexed, unindexed, hidden)
    assert after == [replace(t, content="espresso now") if t.id in changed else t for t in before]
    assert found_turns(store, None, "espresso") == [indexed]  # none came into the index
    assert found_turns(store, None, "secret") == []
    assert found_turns(store, None, "oolong") == [kept]
    assert store.read_sync(lambda tx: tx.turns.hidden_for("m_forgotten"))[0].id == hidden


def test_any_besides_tells_whether_a_search_leaving_turns_out_could_find_one(
    store: Store,
) -> None:
    new_session(store, "s1")
    new_session(store, "s2", chat=OTHER)
    first, second = add_turns(store, "s1", said("oolong", T0 + 1), said("tea", T0 + 2))
    add_turns(store, "s1", said("result", T0 + 3, role="tool"))
    add_turns(store, "s2", said("oolong", T0 + 4, chat=OTHER))

    def besides(chats: Sequence[str], exclude: set[int], at: float | None = None) -> bool:
        return store.read_sync(lambda tx: tx.turns.any_besides(chats, exclude, at))

    assert besides([CHAT], {first})  # the second is left
    assert besides([CHAT], {first, 10_000})  # ids of no turn here change nothing
    assert not besides([CHAT], {second, first, 10_000})
    assert not besides([CHAT], {first, second})  # a tool turn is never found
    assert besides([CHAT, OTHER], {first, second})
    assert not besides([CHAT], {second}, at=T0 + 0.5)  # nothing said by then
    assert besides([CHAT], {second}, at=T0 + 1)
    assert not besides([], set())
    assert store.write_sync(lambda tx: tx.turns.hide([second], [], "m1")) == 1
    assert not besides([CHAT], {first})  # a hidden turn is never found


def test_a_turn_match_carries_what_recall_shows(store: Store) -> None:
    new_session(store, "s1")
    turn = NewTurn(CHAT, "user", "berlin trip", T0 + 1.5, "qq:u1", "Alice", "m1")
    (turn_id,) = add_turns(store, "s1", turn)
    (match,) = store.read_sync(lambda tx: tx.turns.search([CHAT], TextSearch(("berlin",), 5)))
    shown = (match.id, match.session_id, match.chat, match.content, match.message_id)
    assert shown == (turn_id, "s1", CHAT, "berlin trip", "m1")
    assert (match.time, match.speaker, match.speaker_name) == (T0 + 1.5, "qq:u1", "Alice")


def test_search_respects_at_and_window(store: Store) -> None:
    new_session(store, "s1")
    early, middle, _ = add_turns(
        store, "s1", said("hiking", T0 + 10), said("hiking", T0 + 20), said("hiking", T0 + 30)
    )
    assert sorted(found_turns(store, [CHAT], "hiking", at=T0 + 20)) == [early, middle]
    assert sorted(found_turns(store, [CHAT], "hiking", window=(T0 + 10, T0 + 30))) == [
        early,
        middle,
    ]
    assert found_turns(store, [CHAT], "hiking", at=T0 + 25, window=(T0 + 15, T0 + 40)) == [middle]
    assert found_turns(store, [CHAT], "hiking", at=T0 + 5) == []


def test_search_without_terms_lists_the_latest_turns_of_the_chats(store: Store) -> None:
    new_session(store, "s1")
    new_session(store, "s2", chat=OTHER)
    first, last, middle = add_turns(
        store, "s1", said("oolong", T0 + 10), said("espresso", T0 + 30), said("berlin", T0 + 20)
    )
    (other,) = add_turns(store, "s2", said("hiking", T0 + 40, chat=OTHER))
    add_turns(store, "s1", said("violin", T0 + 50), indexed=False)

    assert found_turns(store, [CHAT], None) == [last, middle, first]
    assert found_turns(store, [CHAT], None, limit=2) == [last, middle]
    assert found_turns(store, [CHAT], None, window=(T0, T0 + 25)) == [middle, first]
    assert found_turns(store, [CHAT, OTHER], None, at=T0 + 45) == [other, last, middle, first]


def test_search_without_terms_or_chats_lists_the_latest_turns_of_every_chat(store: Store) -> None:
    new_session(store, "s1")
    new_session(store, "s2", chat=OTHER)
    (here,) = add_turns(store, "s1", said("oolong", T0 + 10))
    (there,) = add_turns(store, "s2", said("hiking", T0 + 20, chat=OTHER))
    assert found_turns(store, None, None) == [there, here]


def test_search_ranks_a_better_match_higher(store: Store) -> None:
    new_session(store, "s1")
    one, both, _ = add_turns(
        store,
        "s1",
        said("oolong with a few other words around it", T0 + 1),
        said("oolong espresso", T0 + 2),
        said("berlin", T0 + 3),
    )
    query = TextSearch(query_terms(tokenize("oolong espresso")), 10)
    matches = store.read_sync(lambda tx: tx.turns.search([CHAT], query))
    assert [m.id for m in matches] == [both, one]
    assert matches[0].score > matches[1].score
    assert found_turns(store, [CHAT], "oolong espresso", limit=1) == [both]


def test_neighbours_are_the_nearest_spoken_turns_of_the_same_session(store: Store) -> None:
    new_session(store, "s1")
    new_session(store, "s2")
    (asked,) = add_turns(store, "s1", said("question", T0 + 1))
    (elsewhere,) = add_turns(store, "s2", said("another session", T0 + 2))
    answered, tool = add_turns(
        store, "s1", said("answer", T0 + 3, role="assistant"), said("{}", T0 + 4, role="tool")
    )
    (again,) = add_turns(store, "s1", said("follow-up", T0 + 5))

    def neighbours(of: list[int], at: float | None = None) -> list[tuple[int, int]]:
        found = store.read_sync(lambda tx: tx.turns.neighbours(of, at))
        return sorted((turn_id, match.id) for turn_id, match in found)

    assert neighbours([answered]) == [(answered, asked), (answered, again)]
    assert neighbours([asked]) == [(asked, answered)]
    assert neighbours([again]) == [(again, answered)]  # the tool turn is skipped
    assert neighbours([tool]) == [(tool, answered), (tool, again)]
    assert neighbours([asked, again]) == [(asked, answered), (again, answered)]
    assert neighbours([answered], at=T0 + 4) == [(answered, asked)]  # not said after `at`
    assert neighbours([elsewhere]) == []
    assert neighbours([]) == []
    ((_, match),) = store.read_sync(lambda tx: tx.turns.neighbours([asked], None))
    assert (match.session_id, match.content, match.time) == ("s1", "answer", T0 + 3)


def test_containing_finds_a_character_inside_the_turns_of_these_chats(store: Store) -> None:
    new_session(store, "s1")
    new_session(store, "s2", chat=THIRD)
    first, hidden, _ = add_turns(
        store, "s1", said("我喜欢乌龙茶", T0), said("茶馆见", T0 + 1), said("你好", T0 + 2)
    )
    add_turns(store, "s2", said("红茶也行", T0 + 3, chat=THIRD))
    store.write_sync(lambda tx: tx.turns.hide([hidden], [], "m_x"))

    def containing(chats: Sequence[str], *needles: str, **search: Any) -> list[int]:
        query = TextSearch(None, 10, **search)
        return [
            m.id for m in store.read_sync(lambda tx: tx.turns.containing(chats, needles, query))
        ]

    assert containing([CHAT], "茶") == [first]  # not another chat's, not a hidden one
    assert len(containing([CHAT, THIRD], "茶")) == 2
    assert containing([CHAT], "茶", "喜") == [first] and containing([CHAT], "茶", "馆") == []
    assert containing([CHAT], "茶", at=T0 - 1) == []


def test_marked_earlier_turns_are_still_found_and_say_so(store: Store) -> None:
    new_session(store, "s1")
    said_it, reply, later = add_turns(
        store,
        "s1",
        said("我喜欢乌龙茶", T0),
        said("好的", T0 + 1, role="assistant"),
        said("我喜欢乌龙茶的香气", T0 + 2),
    )
    assert store.write_sync(lambda tx: tx.turns.mark_earlier([said_it], [], "m_old")) == 2
    query = TextSearch(query_terms(tokenize("乌龙茶")), 10)
    found = {
        m.id: m.earlier_for for m in store.read_sync(lambda tx: tx.turns.search([CHAT], query))
    }
    assert found == {said_it: "m_old", later: None}  # still found, marked; the other is not
    marked = store.read_sync(lambda tx: tx.turns.hidden_for("m_old"))
    assert [(t.id, t.earlier_for, t.hidden_by) for t in marked] == [
        (said_it, "m_old", None),
        (reply, "m_old", None),  # the bot's reply to it goes with it
    ]
