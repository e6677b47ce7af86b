"""The store contract for the admin console's read models: counts, series by time spans, and
listings a page at a time (items, chats, sessions, transcripts, episodes, dream runs), for every
backend. People and recorded recalls are in `test_store_people.py`.

As in `test_store.py`, only the `Store` protocol and the domain types are used.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from nahida.memory.core.models import Candidate, DreamRun, Episode, MemoryItem, NewTurn, Proposal
from nahida.memory.core.scopes import Visibility
from nahida.memory.core.tokenize import index_text, query_terms, tokenize
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import (
    ChatActivity,
    DreamTally,
    HistoryTotals,
    ItemFilter,
    SpanCount,
    Tally,
    TextSearch,
)

T0 = 1_780_000_000.0
DAY = 86_400.0
GROUP = "qq:group:1"
DM = "qq:private:u1"


def memory(item_id: str, scope: str = "global", kind: str = "fact", **fields: Any) -> MemoryItem:
    values: dict[str, Any] = {"created_at": T0, "updated_at": T0, **fields}
    return MemoryItem(item_id, scope, kind, "oolong tea", **values)


def add_items(store: Store, *items: MemoryItem) -> None:
    def run(tx: Tx) -> list[bool]:
        return [tx.items.add(i, index_text(f"{i.title} {i.content}")) for i in items]

    assert store.write_sync(run) == [True] * len(items)


def page(
    store: Store, where: ItemFilter, offset: int = 0, limit: int = 50
) -> tuple[list[str], int]:
    found = store.read_sync(lambda tx: tx.items.page(where, offset, limit))
    return [i.id for i in found.rows], found.total


def turns_of(store: Store, session_id: str, chat: str, *turns: tuple[str, str]) -> list[int]:
    """Store (role, words) turns in a session (made when missing), a second apart; their ids."""

    def run(tx: Tx) -> list[int]:
        tx.sessions.create(session_id, chat, "t", T0)
        made = []
        for n, (role, words) in enumerate(turns):
            speaker = "qq:u1" if role == "user" else None
            turn = NewTurn(chat, role, words, T0 + n, speaker=speaker, message_id=f"{words}")
            made.append(tx.turns.add(session_id, turn, index_text(words)))
        return made

    return store.write_sync(run)


# items -----------------------------------------------------------------------------------------


def test_tally_counts_every_item_by_scope_family_kind_and_status(store: Store) -> None:
    assert store.read_sync(lambda tx: tx.items.tally()) == []
    add_items(
        store,
        memory("m1"),
        memory("m2", kind="procedure"),
        memory("m3", f"chat:{GROUP}"),
        memory("m4", f"chat:{DM}", status="archived"),
        memory("m5", "user:qq:u1", status="archived"),
        memory("m6", "user:qq:u2", status="archived"),
    )
    assert sorted(store.read_sync(lambda tx: tx.items.tally())) == [
        Tally("chat", "fact", "active", 1),
        Tally("chat", "fact", "archived", 1),
        Tally("global", "fact", "active", 1),
        Tally("global", "procedure", "active", 1),
        Tally("user", "fact", "archived", 2),
    ]


def test_added_counts_items_created_in_each_span_by_source(store: Store) -> None:
    add_items(
        store,
        memory("m1", created_at=T0 - 1),  # before the first span
        memory("m2", created_at=T0, source="rule_extract"),  # a span's start is inside it
        memory("m3", created_at=T0 + DAY - 1, source="rule_extract"),
        memory("m4", created_at=T0 + DAY, source="llm_dream", status="archived"),  # any status
        memory("m5", created_at=T0 + 3 * DAY),  # a span's end is outside it
    )
    spans = [(T0, T0 + DAY), (T0 + DAY, T0 + 2 * DAY), (T0 + 2 * DAY, T0 + 3 * DAY)]
    assert sorted(store.read_sync(lambda tx: tx.items.added(spans))) == [
        SpanCount(0, "rule_extract", 2),
        SpanCount(1, "llm_dream", 1),
    ]
    assert store.read_sync(lambda tx: tx.items.added([])) == []


def test_page_is_newest_changed_first_a_slice_at_a_time_with_the_total(store: Store) -> None:
    add_items(
        store,
        memory("m1", updated_at=T0 + 1),
        memory("m2", updated_at=T0 + 3),
        memory("m4", updated_at=T0 + 2),
        memory("m3", updated_at=T0 + 2),  # a tie: by id
    )
    every = ItemFilter()
    assert page(store, every) == (["m2", "m3", "m4", "m1"], 4)
    assert page(store, every, offset=1, limit=2) == (["m3", "m4"], 4)
    assert page(store, every, offset=4) == ([], 4)


FILTERED = (
    memory("g1", kind="procedure", source="human_edit", created_at=T0 - DAY),
    memory("c1", f"chat:{GROUP}", source="plugin:notes", subject_user="qq:u2"),
    memory("c2", f"chat:{DM}", status="archived", source="user_explicit"),
    memory("u1", "user:qq:u1", source="llm_dream", created_at=T0 + DAY, sensitivity="public"),
    memory("u2", "user:qq:u2", source="dream_v2"),
    memory("x1", "chatty", source="import"),  # a scope of no family but its own name
)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (ItemFilter(scopes=("global", f"chat:{DM}")), ["c2", "g1"]),
        (ItemFilter(scopes=()), []),
        (ItemFilter(family="chat"), ["c1", "c2"]),
        (ItemFilter(family="user"), ["u1", "u2"]),
        (ItemFilter(family="global"), ["g1"]),
        (ItemFilter(family="chatty"), ["x1"]),
        (ItemFilter(family="chat:qq"), []),
        (ItemFilter(kind="procedure"), ["g1"]),
        (ItemFilter(status="archived"), ["c2"]),
        (ItemFilter(sources=("import", "human_edit")), ["g1", "x1"]),
        (ItemFilter(source_prefixes=("dream", "plugin:")), ["c1", "u2"]),
        (ItemFilter(sources=("llm_dream",), source_prefixes=("dream",)), ["u1", "u2"]),
        (ItemFilter(sources=()), []),
        (ItemFilter(person="qq:u2"), ["c1", "u2"]),
        (ItemFilter(created=(T0, T0 + DAY)), ["c1", "c2", "u2", "x1"]),
        (ItemFilter(ids=("u1", "g1", "nope")), ["g1", "u1"]),
        (ItemFilter(ids=()), []),
        (ItemFilter(family="user", source_prefixes=("dream",), created=(T0, T0 + 1)), ["u2"]),
        (ItemFilter(visibility=Visibility(("global", f"chat:{DM}"))), ["c2", "g1"]),
        (ItemFilter(visibility=Visibility((), ("user:qq:u1", "user:qq:u2"))), ["u1"]),
        (ItemFilter(visibility=Visibility(("user:qq:u2",), ("user:qq:u1",))), ["u1", "u2"]),
    ],
)
def test_page_holds_what_the_filter_holds(
    store: Store, where: ItemFilter, expected: list[str]
) -> None:
    add_items(store, *FILTERED)
    found, total = page(store, where)
    assert sorted(found) == expected
    assert total == len(expected)
    assert sorted(i.id for i in FILTERED if where.holds(i)) == expected  # the filter's meaning


def test_a_search_of_every_scope_finds_active_items_anywhere(store: Store) -> None:
    add_items(
        store,
        memory("m1"),
        memory("m2", "user:qq:u1", sensitivity="private"),
        memory("m3", f"chat:{GROUP}", status="archived"),
    )
    terms = query_terms(tokenize("oolong"))
    search = TextSearch(terms, 10)
    found = store.read_sync(lambda tx: tx.items.search(None, search))
    assert sorted(m.item.id for m in found) == ["m1", "m2"]
    literal = store.read_sync(lambda tx: tx.items.containing(None, ["oolo"], search))
    assert sorted(m.item.id for m in literal) == ["m1", "m2"]


def test_pending_count_counts_candidates_waiting_in_every_scope(store: Store) -> None:
    def propose(tx: Tx) -> None:
        for n, (scope, status) in enumerate(
            [("global", "pending"), (f"chat:{GROUP}", "pending"), ("global", "accepted")]
        ):
            candidate = Candidate(scope, "fact", f"fact {n}", "rule_extract")
            tx.candidates.add(f"c{n}", candidate, status, None, "", T0)

    assert store.read_sync(lambda tx: tx.candidates.pending_count()) == 0
    store.write_sync(propose)
    assert store.read_sync(lambda tx: tx.candidates.pending_count()) == 2
    store.write_sync(lambda tx: tx.candidates.decide("c0", "rejected", None, "cli", T0 + 1))
    assert store.read_sync(lambda tx: tx.candidates.pending_count()) == 1


# history ---------------------------------------------------------------------------------------


def test_totals_count_chats_sessions_and_their_turns(store: Store) -> None:
    assert store.read_sync(lambda tx: tx.sessions.totals()) == HistoryTotals(0, 0, 0)
    turns_of(store, "s1", GROUP, ("user", "a"), ("assistant", "b"))
    turns_of(store, "s2", GROUP, ("user", "c"))
    turns_of(store, "s3", DM, ("user", "d"))
    store.write_sync(lambda tx: tx.sessions.create("s4", DM, "empty", T0))
    assert store.read_sync(lambda tx: tx.sessions.totals()) == HistoryTotals(2, 4, 4)
    store.write_sync(lambda tx: tx.sessions.delete("s1"))
    assert store.read_sync(lambda tx: tx.sessions.totals()) == HistoryTotals(2, 3, 2)


def test_chats_are_the_latest_active_first_with_their_sessions_and_turns(store: Store) -> None:
    turns_of(store, "s1", GROUP, ("user", "a"), ("assistant", "b"), ("user", "c"))  # until T0+2
    turns_of(store, "s2", GROUP, ("user", "d"))  # T0
    turns_of(store, "s3", DM, ("user", "e"), ("assistant", "f"), ("user", "g"))  # a tie: by chat
    turns_of(store, "s4", "qq:group:0", ("user", "h"))
    chats = store.read_sync(lambda tx: tx.sessions.chats(0, 10))
    assert chats.rows == [
        ChatActivity(GROUP, 2, 4, T0 + 2),
        ChatActivity(DM, 1, 3, T0 + 2),
        ChatActivity("qq:group:0", 1, 1, T0),
    ]
    assert chats.total == 3
    assert store.read_sync(lambda tx: tx.sessions.chats(1, 1)) == ([chats.rows[1]], 3)
    assert store.read_sync(lambda tx: tx.sessions.activity(DM)) == chats.rows[1]
    store.write_sync(lambda tx: tx.sessions.create("s5", "qq:group:7", "empty", T0))
    assert store.read_sync(lambda tx: tx.sessions.activity("qq:group:7")) == (
        ChatActivity("qq:group:7", 1, 0, T0)
    )
    assert store.read_sync(lambda tx: tx.sessions.activity("qq:group:8")) is None


def test_a_chats_sessions_come_a_page_at_a_time_newest_first(store: Store) -> None:
    for n in range(4):
        store.write_sync(lambda tx, n=n: tx.sessions.create(f"s{n}", GROUP, "t", T0 + n))
    store.write_sync(lambda tx: tx.sessions.create("other", DM, "t", T0 + 9))
    found = store.read_sync(lambda tx: tx.sessions.page(GROUP, 1, 2))
    assert ([s.id for s in found.rows], found.total) == (["s2", "s1"], 4)
    assert store.read_sync(lambda tx: tx.sessions.page("qq:group:9", 0, 5)) == ([], 0)


def test_a_transcript_is_every_turn_of_the_session_in_order(store: Store) -> None:
    ids = turns_of(
        store, "s1", GROUP, ("user", "a"), ("tool", "b"), ("assistant", "c"), ("user", "d")
    )
    turns_of(store, "s2", GROUP, ("user", "e"))
    store.write_sync(lambda tx: tx.turns.hide([ids[3]], [], "m_x"))
    found = store.read_sync(lambda tx: tx.turns.page("s1", 1, 2))
    assert [t.id for t in found.rows] == ids[1:3]
    assert found.total == 4
    last = store.read_sync(lambda tx: tx.turns.page("s1", 3, 10)).rows
    assert [(t.id, t.hidden_by) for t in last] == [(ids[3], "m_x")]  # hidden ones too
    assert store.read_sync(lambda tx: tx.turns.page("nope", 0, 10)) == ([], 0)


def test_around_a_turn_are_the_spoken_turns_on_either_side_in_its_session(store: Store) -> None:
    ids = turns_of(
        store,
        "s1",
        GROUP,
        ("user", "a"),
        ("assistant", "b"),
        ("tool", "c"),
        ("user", "d"),
        ("assistant", "e"),
        ("user", "f"),
    )
    turns_of(store, "s2", GROUP, ("user", "g"))
    store.write_sync(lambda tx: tx.turns.hide([ids[4]], [], "m_x"))

    def around(turn_id: int, before: int, after: int) -> list[int]:
        return [t.id for t in store.read_sync(lambda tx: tx.turns.around(turn_id, before, after))]

    assert around(ids[3], 2, 1) == [ids[0], ids[1], ids[3], ids[4]]  # no tool turn; hidden too
    assert around(ids[2], 0, 0) == [ids[2]]  # the turn itself, whatever its role
    assert around(ids[5], 1, 5) == [ids[4], ids[5]]  # never another session's
    assert around(ids[0], 3, 1) == [ids[0], ids[1]]
    assert around(10_000, 1, 1) == []


def test_of_messages_finds_every_turn_with_the_message_id_in_its_chat(store: Store) -> None:
    first = turns_of(store, "s1", GROUP, ("user", "hello"), ("user", "bye"))
    again = turns_of(store, "s2", GROUP, ("user", "hello"))  # the id reused
    turns_of(store, "s3", DM, ("user", "hello"))  # another chat's

    def of(*messages: tuple[str, str]) -> list[int]:
        return [t.id for t in store.read_sync(lambda tx: tx.turns.of_messages(messages))]

    assert of((GROUP, "hello")) == [first[0], again[0]]
    assert of((GROUP, "bye"), (GROUP, "hello"), (GROUP, "bye")) == [first[0], first[1], again[0]]
    assert of((GROUP, "nope")) == of() == []


def test_episodes_of_chats_come_a_page_at_a_time_latest_ended_first(store: Store) -> None:
    def put(tx: Tx) -> None:
        for n, chat in enumerate([GROUP, DM, GROUP, "qq:group:9"]):
            tx.sessions.create(f"s{n}", chat, "t", T0)
            ended = T0 + 10 * n
            episode = Episode(f"e{n}", f"s{n}", chat, "summary", (), ended - 5, ended, 2, ended)
            tx.episodes.put(episode, "summary")

    store.write_sync(put)
    found = store.read_sync(lambda tx: tx.episodes.of_chats([GROUP, DM], 0, 2))
    assert ([e.id for e in found.rows], found.total) == (["e2", "e1"], 3)
    assert [e.id for e in store.read_sync(lambda tx: tx.episodes.of_chats([GROUP], 1, 5)).rows] == [
        "e0"
    ]
    assert store.read_sync(lambda tx: tx.episodes.of_chats([], 0, 5)) == ([], 0)


# dreams ----------------------------------------------------------------------------------------


def dream(run_id: str, chat: str, started: float, **counts: int) -> DreamRun:
    return DreamRun(run_id, chat, "schedule", started, **counts)  # type: ignore[arg-type]


def test_dream_runs_come_a_page_at_a_time_newest_first_without_their_report(store: Store) -> None:
    proposal = Proposal("add", "fact", "likes tea", f"chat:{GROUP}", fate="created")

    def run(tx: Tx) -> None:
        for n, chat in enumerate([GROUP, DM, GROUP]):
            started = dream(f"d{n}", chat, T0 + n)
            tx.dreams.start(started)
            tx.dreams.save(replace(started, proposals=1, report=(proposal,), outcome="ok"))

    store.write_sync(run)
    found = store.read_sync(lambda tx: tx.dreams.page(None, 0, 2))
    assert ([r.id for r in found.rows], found.total) == (["d2", "d1"], 3)
    assert [(r.report, r.proposals, r.outcome) for r in found.rows] == [((), 1, "ok")] * 2
    mine = store.read_sync(lambda tx: tx.dreams.page(GROUP, 1, 5))
    assert ([r.id for r in mine.rows], mine.total) == (["d0"], 2)
    assert store.read_sync(lambda tx: tx.dreams.get("d0")).report == (proposal,)  # type: ignore[union-attr]


def test_dream_tally_sums_the_runs_started_in_each_span(store: Store) -> None:
    def run(tx: Tx) -> None:
        for run_id, started, counts in [
            ("d0", T0 - 1, {"proposals": 9}),
            ("d1", T0, {"proposals": 4, "applied": 2, "pending": 1, "rejected": 1}),
            ("d2", T0 + DAY - 1, {"proposals": 2, "applied": 1, "rejected": 1}),
            ("d3", T0 + 2 * DAY, {"proposals": 1, "applied": 1}),
        ]:
            tx.dreams.start(dream(run_id, GROUP, started))
            tx.dreams.save(dream(run_id, GROUP, started, **counts))

    store.write_sync(run)
    spans = [(T0, T0 + DAY), (T0 + DAY, T0 + 2 * DAY), (T0 + 2 * DAY, T0 + 3 * DAY)]
    assert store.read_sync(lambda tx: tx.dreams.tally(spans)) == [
        DreamTally(0, 2, 6, 3, 1, 2),
        DreamTally(2, 1, 1, 1, 0, 0),
    ]
