"""The store contract, part 2: memory items, visibility, candidates, events and jobs.

As in `test_store.py`, only the `Store` protocol and the domain types are used, so every test
holds for any backend in `BACKENDS`. The visibility property computes what each viewer may see
from the rule in DESIGN §4 itself, never by asking the store, for every path: list, get, text
search and vector search.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nahida.memory.core.models import Candidate, Evidence, JobRun, MemoryItem
from nahida.memory.core.scopes import Visibility
from nahida.memory.core.tokenize import index_text, query_terms, tokenize
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import ItemMatch, TextSearch, VectorSearch, VectorSpace

T0 = 1_780_000_000.0
CHAT = "qq:group:1"
SCOPES = ("global", "chat:qq:group:1", "chat:qq:private:u1", "user:qq:u1", "user:qq:u2")
EVERY_SCOPE = Visibility(SCOPES)
# Each word is a single token, no stopword and no part of another, so matches are exact.
WORDS = ("oolong", "espresso", "berlin", "hiking", "violin")
Factory = Callable[[Path], Store]  # as in conftest.py


def memory(
    item_id: str,
    *words: str,
    scope: str = "global",
    kind: str = "fact",
    at: float = T0,
    **fields: Any,
) -> MemoryItem:
    """An item saying `words` ("oolong" when none), created and last changed `at`."""
    content = " ".join(words) or "oolong"
    return MemoryItem(item_id, scope, kind, content, created_at=at, updated_at=at, **fields)


def tokens_of(item: MemoryItem) -> str:
    return index_text(f"{item.title} {item.content}")


def add_items(store: Store, *items: MemoryItem) -> None:
    added = store.write_sync(lambda tx: [tx.items.add(i, tokens_of(i)) for i in items])
    assert added == [True] * len(items)


def change(store: Store, before: MemoryItem, after: MemoryItem, tokens: str | None = None) -> None:
    store.write_sync(lambda tx: tx.items.change(before, after, tokens))


def get(store: Store, item_id: str) -> MemoryItem | None:
    return store.read_sync(lambda tx: tx.items.get(item_id))


def matches(
    store: Store, visibility: Visibility, text: str | None, **search: Any
) -> list[ItemMatch]:
    terms = None if text is None else query_terms(tokenize(text))
    query = TextSearch(terms, 100, **search)
    return store.read_sync(lambda tx: tx.items.search(visibility, query))


def found(store: Store, visibility: Visibility, text: str | None, **search: Any) -> list[str]:
    return [m.item.id for m in matches(store, visibility, text, **search)]


def ids(items: Sequence[MemoryItem]) -> list[str]:
    return [item.id for item in items]


# items ---------------------------------------------------------------------------------------


def test_add_stores_an_item_as_given_and_refuses_a_taken_id(store: Store) -> None:
    item = memory(
        "m1",
        "oolong",
        scope="user:qq:u1",
        title="tea",
        confidence=0.9,
        importance=0.7,
        sensitivity="public",
        source="import",
        subject_user="qq:u1",
        speaker_user="qq:u2",
        slot="pref:tea",
        evidence=(
            Evidence(chat=CHAT, message_id="42", turn_id=3, time=T0, quote="喜欢乌龙茶"),
            Evidence(ref="MEMORY.md:12"),
        ),
        valid_from=T0 - 10,
        valid_until=T0 + 99.5,
        last_accessed=T0 + 1,
        access_count=2,
    )
    add_items(store, item)
    assert get(store, "m1") == item
    taken = replace(item, content="espresso")
    assert store.write_sync(lambda tx: tx.items.add(taken, "espresso")) is False
    assert get(store, "m1") == item
    assert found(store, EVERY_SCOPE, "espresso") == []
    assert get(store, "m2") is None


def test_change_writes_every_changed_field(store: Store) -> None:
    before = memory("m1", "oolong")
    add_items(store, before)
    after = replace(
        before,
        kind="preference",
        importance=0.9,
        slot="pref:tea",
        evidence=(Evidence(message_id="7"),),
        valid_until=T0 + 5,
        updated_at=T0 + 10,
    )
    change(store, before, after)
    assert get(store, "m1") == after


def test_archiving_or_superseding_takes_an_item_out_of_search(store: Store) -> None:
    archived, superseded, kept = (memory(f"m{n}", "oolong") for n in range(3))
    add_items(store, archived, superseded, kept)
    change(store, archived, replace(archived, status="archived"))
    change(store, superseded, replace(superseded, status="superseded"))
    assert found(store, EVERY_SCOPE, "oolong") == ["m2"]
    statuses = [item.status for n in range(3) if (item := get(store, f"m{n}"))]
    assert statuses == ["archived", "superseded", "active"]


def test_new_text_is_searched_by_its_new_tokens(store: Store) -> None:
    before = memory("m1", "oolong")
    add_items(store, before)
    after = replace(before, content="espresso", title="coffee")
    change(store, before, after, tokens_of(after))
    assert found(store, EVERY_SCOPE, "oolong") == []
    (match,) = matches(store, EVERY_SCOPE, "espresso")
    assert (match.item, match.body) == (after, tokens_of(after))


def test_new_text_of_an_active_item_needs_its_tokens(store: Store) -> None:
    before = memory("m1", "oolong")
    add_items(store, before)
    for after in (replace(before, content="espresso"), replace(before, title="espresso")):
        with pytest.raises(ValueError):
            change(store, before, after)
        assert get(store, "m1") == before  # the failed unit changed nothing
    assert found(store, EVERY_SCOPE, "oolong") == ["m1"]
    leaving = replace(before, content="espresso", status="archived")  # out of the index: no tokens
    change(store, before, leaving)
    assert get(store, "m1") == leaving


def test_a_change_outside_the_text_keeps_the_old_body(store: Store) -> None:
    before = memory("m1", "oolong", title="tea")
    add_items(store, before)
    after = replace(before, confidence=0.95, updated_at=T0 + 1)
    change(store, before, after)
    (match,) = matches(store, EVERY_SCOPE, "oolong")
    assert (match.item, match.body) == (after, tokens_of(before))


def test_a_change_of_sensitivity_or_scope_moves_the_item_in_search(store: Store) -> None:
    private = memory("m1", "oolong", scope="user:qq:u1")
    add_items(store, private)
    group = Visibility(("global", CHAT), ("user:qq:u1",))
    assert found(store, group, "oolong") == []
    public = replace(private, sensitivity="public")
    change(store, private, public)
    assert found(store, group, "oolong") == ["m1"]
    moved = replace(public, scope="user:qq:u2")
    change(store, public, moved)
    assert found(store, group, "oolong") == []
    (match,) = matches(store, Visibility(("user:qq:u2",)), "oolong")
    assert (match.item, match.body) == (moved, tokens_of(private))


def test_touch_counts_an_injection(store: Store) -> None:
    add_items(store, *(memory(f"m{n}") for n in range(3)))
    store.write_sync(lambda tx: tx.items.touch(["m0", "m1"], T0 + 5))
    store.write_sync(lambda tx: tx.items.touch(["m0"], T0 + 9))
    seen = [get(store, f"m{n}") for n in range(3)]
    assert [(i.last_accessed, i.access_count) for i in seen if i] == [
        (T0 + 9, 2),
        (T0 + 5, 1),
        (None, 0),
    ]


def test_listed_filters_and_puts_the_latest_change_first(store: Store) -> None:
    first = memory("m1", scope="global", at=T0 + 1)
    add_items(
        store,
        first,
        memory("m2", scope="user:qq:u1", kind="preference", at=T0 + 3),
        memory("m3", scope="user:qq:u1", sensitivity="public", at=T0 + 2),
        memory("m4", scope=CHAT, status="archived", at=T0 + 4),
    )

    def listed(
        visibility: Visibility | None,
        kind: str | None = None,
        status: str | None = None,
        limit: int = 10,
    ) -> list[str]:
        return ids(
            store.read_sync(
                lambda tx: tx.items.listed(visibility, kind=kind, status=status, limit=limit)
            )
        )

    assert listed(None) == ["m4", "m2", "m3", "m1"]
    assert listed(None, limit=2) == ["m4", "m2"]
    assert listed(None, status="active") == ["m2", "m3", "m1"]
    assert listed(None, status="archived") == ["m4"]
    assert listed(None, kind="preference") == ["m2"]
    assert listed(Visibility(("global",), ("user:qq:u1",))) == ["m3", "m1"]
    assert listed(Visibility(("user:qq:u1", CHAT))) == ["m4", "m2", "m3"]
    assert listed(Visibility(())) == []
    change(store, first, replace(first, confidence=0.9, updated_at=T0 + 10))
    assert listed(None) == ["m1", "m4", "m2", "m3"]


def test_visible_returns_an_item_of_any_status_only_to_who_may_see_it(store: Store) -> None:
    private = memory("m1", scope="user:qq:u1")
    public = memory("m2", scope="user:qq:u1", sensitivity="public")
    archived = memory("m3", status="archived")
    add_items(store, private, public, archived)
    group = Visibility(("global", CHAT), ("user:qq:u1",))

    def visible(item_id: str, visibility: Visibility = group) -> MemoryItem | None:
        return store.read_sync(lambda tx: tx.items.visible(item_id, visibility))

    assert visible("m1") is None
    assert visible("m2") == public
    assert visible("m3") == archived
    assert visible("m1", Visibility(("user:qq:u1",))) == private
    assert visible("m9") is None


def test_in_slot_lists_the_active_items_of_a_scope_holding_the_slot(store: Store) -> None:
    add_items(
        store,
        memory("m1", scope="user:qq:u1", slot="pref:tea"),
        memory("m2", scope="user:qq:u1", slot="pref:tea", status="superseded"),
        memory("m3", scope="user:qq:u2", slot="pref:tea"),
        memory("m4", scope="user:qq:u1", slot="pref:coffee"),
    )

    def in_slot(scope: str, slot: str) -> list[str]:
        return ids(store.read_sync(lambda tx: tx.items.in_slot(scope, slot)))

    assert in_slot("user:qq:u1", "pref:tea") == ["m1"]
    assert in_slot("user:qq:u2", "pref:tea") == ["m3"]
    assert in_slot("user:qq:u1", "pref:music") == []


def test_replaced_by_names_the_item_that_superseded_one(store: Store) -> None:
    add_items(store, memory("m1", status="superseded"), memory("m2", supersedes="m1"))
    assert store.read_sync(lambda tx: tx.items.replaced_by("m1")) == "m2"
    assert store.read_sync(lambda tx: tx.items.replaced_by("m2")) is None


def test_exported_is_every_item_of_the_scopes_oldest_first(store: Store) -> None:
    newest = memory("m1", scope="global", at=T0 + 3)
    oldest = memory("m2", scope="user:qq:u1", status="archived", at=T0 + 1)
    middle = memory("m3", scope=CHAT, at=T0 + 2)
    add_items(store, newest, oldest, middle)

    def exported(scopes: list[str] | None) -> list[MemoryItem]:
        return store.read_sync(lambda tx: tx.items.exported(scopes))

    assert exported(None) == [oldest, middle, newest]
    assert exported(["global", "user:qq:u1"]) == [oldest, newest]
    assert exported([]) == []


def test_search_finds_active_items_with_their_indexed_body(store: Store) -> None:
    early = memory("m1", "oolong", "tea", title="drinks", at=T0 + 1)
    late = memory("m3", "oolong", at=T0 + 30)
    add_items(store, early, memory("m2", "oolong", status="archived", at=T0 + 2), late)
    found_matches = matches(store, EVERY_SCOPE, "oolong")
    assert sorted((m.item.id, m.body) for m in found_matches) == [
        ("m1", index_text("drinks oolong tea")),
        ("m3", tokens_of(late)),
    ]
    assert [m.item for m in found_matches if m.item.id == "m1"] == [early]
    assert found(store, EVERY_SCOPE, "oolong", at=T0 + 10) == ["m1"]
    assert found(store, EVERY_SCOPE, "oolong", window=(T0 + 20, T0 + 40)) == ["m3"]
    assert found(store, EVERY_SCOPE, None) == ["m3", "m1"]  # no terms: the latest first
    assert found(store, EVERY_SCOPE, "espresso") == []


# visibility: a property over random items and viewers ---------------------------------------

item_specs = st.lists(
    st.tuples(
        st.sampled_from(SCOPES),
        st.sampled_from(("public", "private")),
        st.sampled_from(("active", "active", "archived")),
        st.sets(st.sampled_from(WORDS), min_size=1, max_size=3),
    ),
    min_size=1,
    max_size=12,
)
scope_sets = st.lists(st.sampled_from(SCOPES), unique=True, max_size=len(SCOPES)).map(tuple)
visibilities = st.builds(Visibility, scope_sets, scope_sets)


def may_see(visibility: Visibility, item: MemoryItem) -> bool:
    """DESIGN §4: a scope seen in full, or a public item of a scope seen public-only."""
    if item.scope in visibility.full:
        return True
    return item.scope in visibility.public_only and item.sensitivity == "public"


SPACE = VectorSpace("test", "tiny", 2)
nearby = VectorSearch(np.asarray([1.0, 0.0], dtype=np.float32), SPACE, 100)


def give_vectors(store: Store) -> None:
    """A vector for every active item (each its own text), so vector search may return any."""
    rows = store.read_sync(lambda tx: tx.vectors.unhashed("item", 100))
    vectors = [(f"h{r.key}", np.asarray([1.0, r.key / 100], dtype=np.float32)) for r in rows]

    def run(tx: Tx) -> None:
        tx.vectors.put(SPACE, vectors, T0)
        tx.vectors.link("item", [(r.key, f"h{r.key}") for r in rows])

    store.write_sync(run)


def test_every_path_shows_exactly_what_the_visibility_allows(
    backend: Factory, tmp_path: Path
) -> None:
    searches: list[tuple[bool, bool]] = []  # (something to find, something hidden)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(item_specs, st.lists(visibilities, min_size=1, max_size=3))
    def check(specs: list[tuple[str, str, str, set[str]]], views: list[Visibility]) -> None:
        items = [
            memory(f"m{n}", *sorted(words), f"i{n}", scope=scope, sensitivity=sens, status=status)
            for n, (scope, sens, status, words) in enumerate(specs)
        ]
        opened = backend(Path(tempfile.mkdtemp(dir=tmp_path)))
        by_id = {i.id: i for i in items}
        try:
            add_items(opened, *items)
            give_vectors(opened)
            for view in views:
                allowed = {i.id for i in items if may_see(view, i)}
                listed = opened.read_sync(
                    lambda tx, v=view: tx.items.listed(v, kind=None, status=None, limit=100)
                )
                assert set(ids(listed)) == allowed
                shown = {
                    i.id
                    for i in items
                    if opened.read_sync(lambda tx, i=i, v=view: tx.items.visible(i.id, v))
                }
                assert shown == allowed
                active = any(by_id[i].status == "active" for i in allowed)
                for kind, expected_any in ((None, active), ("fact", active), ("rule", False)):
                    assert (
                        opened.read_sync(lambda tx, v=view, k=kind: tx.items.any_active(v, k))
                        == expected_any
                    )
                near = opened.read_sync(lambda tx, v=view: tx.vectors.items(v, nearby))
                assert {m.item.id for m in near} == {
                    i for i in allowed if by_id[i].status == "active"
                }
                for word in WORDS:
                    saying = {
                        i.id for i in items if i.status == "active" and word in i.content.split()
                    }
                    expected = saying & allowed
                    assert set(found(opened, view, word)) == expected
                    searches.append((bool(expected), bool(saying - expected)))
        finally:
            opened.close()

    check()
    assert any(find for find, _ in searches), "no search had anything to find"
    assert any(hidden for _, hidden in searches), "no search had anything to hide"


# candidates ----------------------------------------------------------------------------------


def proposal(content: str, scope: str = "global", **fields: Any) -> Candidate:
    return Candidate(scope=scope, kind="fact", content=content, source="rule_extract", **fields)


def add_candidate(
    store: Store, candidate_id: str, candidate: Candidate, at: float, status: str = "pending"
) -> bool:
    item_id = None if status == "pending" else "m1"
    return store.write_sync(
        lambda tx: tx.candidates.add(candidate_id, candidate, status, item_id, "test", at)
    )


def pending(store: Store, scopes: list[str] | None, limit: int = 10) -> list[str]:
    return [c for c, _, _ in store.read_sync(lambda tx: tx.candidates.pending(scopes, limit))]


def test_a_pending_candidate_comes_back_and_its_id_is_taken(store: Store) -> None:
    candidate = proposal(
        "喜欢乌龙茶",
        scope="user:qq:u1",
        confidence=0.6,
        importance=0.4,
        sensitivity="public",
        title="tea",
        subject_user="qq:u1",
        speaker_user="qq:u1",
        slot="pref:乌龙茶",
        evidence=(Evidence(chat=CHAT, message_id="9", time=T0, quote="我喜欢乌龙茶"),),
    )
    assert add_candidate(store, "c1", candidate, T0) is True
    assert add_candidate(store, "c1", proposal("espresso"), T0 + 1) is False
    assert store.read_sync(lambda tx: tx.candidates.get_pending("c1")) == candidate
    assert store.read_sync(lambda tx: tx.candidates.pending(None, 10)) == [("c1", candidate, T0)]


def test_a_pending_candidate_keeps_its_validity(store: Store) -> None:
    candidate = proposal("oolong", valid_from=T0 - 60, valid_until=T0 + 3600)
    assert add_candidate(store, "c1", candidate, T0)
    assert store.read_sync(lambda tx: tx.candidates.get_pending("c1")) == candidate


def test_pending_is_oldest_first_by_scope_and_limited(store: Store) -> None:
    add_candidate(store, "c1", proposal("oolong", "user:qq:u1"), T0 + 2)
    add_candidate(store, "c2", proposal("espresso"), T0 + 1)
    add_candidate(store, "c3", proposal("berlin", "user:qq:u2"), T0 + 3)
    add_candidate(store, "c4", proposal("hiking"), T0, status="accepted")
    assert pending(store, None) == ["c2", "c1", "c3"]
    assert pending(store, None, limit=2) == ["c2", "c1"]
    assert pending(store, ["user:qq:u1", "user:qq:u2"]) == ["c1", "c3"]
    assert pending(store, ["global"]) == ["c2"]
    assert pending(store, []) == []
    assert store.read_sync(lambda tx: tx.candidates.get_pending("c4")) is None


def test_a_decided_candidate_is_no_longer_pending(store: Store) -> None:
    add_candidate(store, "c1", proposal("oolong"), T0)
    add_candidate(store, "c2", proposal("espresso"), T0 + 1)
    store.write_sync(lambda tx: tx.candidates.decide("c1", "accepted", "m1", "qq:admin", T0 + 5))
    assert store.read_sync(lambda tx: tx.candidates.get_pending("c1")) is None
    assert pending(store, None) == ["c2"]
    store.write_sync(lambda tx: tx.candidates.decide("c2", "rejected", None, "cli", T0 + 6))
    assert pending(store, None) == []


# events --------------------------------------------------------------------------------------


def test_events_come_back_in_order_with_their_snapshots(store: Store) -> None:
    created = {"content": "喜欢乌龙茶", "confidence": 0.5, "evidence": [{"message_id": "42"}]}
    merged = {**created, "confidence": 0.55, "slot": None, "tags": ["a", "b"]}
    written = [
        ("m1", "create", "qq:u1", None, created, None, T0),
        ("m2", "create", "cli", None, {"content": "other"}, None, T0 + 1),
        ("m1", "merge", "rule_extract", created, merged, "same as a new memory", T0 + 2),
        ("m1", "archive", "cli", merged, {}, "wrong", T0 + 3),
    ]

    def unit(tx: Tx) -> None:
        for event in written:
            tx.events.add(*event)

    store.write_sync(unit)
    events = store.read_sync(lambda tx: tx.events.of_item("m1"))
    shown = [(e.item_id, e.action, e.actor, e.before, e.after, e.reason, e.time) for e in events]
    assert shown == [written[0], written[2], written[3]]
    assert events[0].id < events[1].id < events[2].id
    assert store.read_sync(lambda tx: tx.events.of_item("m9")) == []


# jobs ----------------------------------------------------------------------------------------


def test_a_lease_has_one_holder_until_it_expires(store: Store) -> None:
    def lease(holder: str, until: float, now: float, job: str = "dream") -> bool:
        return store.write_sync(lambda tx: tx.jobs.lease(job, holder, until, now))

    assert lease("p1", T0 + 60, T0) is True
    assert lease("p2", T0 + 70, T0 + 10) is False  # p1 holds it
    assert lease("p1", T0 + 120, T0 + 30) is True  # the holder renews
    assert lease("p2", T0 + 130, T0 + 90) is False  # renewed: still valid
    assert lease("p2", T0 + 200, T0 + 121) is True  # expired: taken over
    assert lease("p1", T0 + 300, T0 + 150) is False
    assert lease("p1", T0 + 300, T0 + 150, job="decay") is True  # leases are per job


def test_release_frees_a_lease_only_for_its_holder(store: Store) -> None:
    def lease(holder: str, now: float) -> bool:
        return store.write_sync(lambda tx: tx.jobs.lease("dream", holder, T0 + 60, now))

    assert lease("p1", T0)
    store.write_sync(lambda tx: tx.jobs.release("dream", "p2"))
    assert lease("p2", T0 + 1) is False
    store.write_sync(lambda tx: tx.jobs.release("dream", "p1"))
    assert lease("p2", T0 + 2) is True


def test_runs_are_recorded_and_listed_newest_first(store: Store) -> None:
    def start(job: str, holder: str, at: float) -> int:
        return store.write_sync(lambda tx: tx.jobs.start(job, holder, at))

    def finish(
        run: int, outcome: str, counts: dict[str, int], error: str | None, at: float
    ) -> None:
        store.write_sync(lambda tx: tx.jobs.finish(run, outcome, counts, error, at))

    def latest(job: str | None, limit: int = 10) -> list[JobRun]:
        return store.read_sync(lambda tx: tx.jobs.latest(job, limit))

    first = start("dream", "p1", T0)
    finish(first, "ok", {"items": 3, "merged": 1}, None, T0 + 5)
    running = start("decay", "p1", T0 + 10)
    failed = start("dream", "p2", T0 + 20)
    finish(failed, "failed", {}, "boom", T0 + 21)
    assert first < running < failed

    ok_run = JobRun(first, "dream", "p1", T0, T0 + 5, "ok", {"items": 3, "merged": 1}, None)
    failed_run = JobRun(failed, "dream", "p2", T0 + 20, T0 + 21, "failed", {}, "boom")
    running_run = JobRun(running, "decay", "p1", T0 + 10, None, "running", {}, None)
    assert latest("dream") == [failed_run, ok_run]
    assert latest("dream", 1) == [failed_run]
    assert latest(None) == [failed_run, running_run]  # the latest run of each job
    assert latest(None, 1) == [failed_run]
    assert latest("prune") == []


def test_containing_finds_a_character_inside_words_where_the_viewer_may_look(store: Store) -> None:
    add_items(
        store,
        memory("m_tea", "喜欢乌龙茶", scope="user:qq:u1", at=T0),
        memory("m_pct", "100% 乌龙茶_special", at=T0 + 1),
        memory("m_other", "喜欢红茶", scope="user:qq:u2", at=T0 + 2),
        memory("m_gone", "茶馆关门了", status="archived", at=T0 + 3),
    )
    mine = Visibility(("global", "user:qq:u1"))

    def containing(*needles: str, **search: Any) -> list[str]:
        query = TextSearch(None, 10, **search)
        return [
            m.item.id for m in store.read_sync(lambda tx: tx.items.containing(mine, needles, query))
        ]

    assert containing("茶") == ["m_pct", "m_tea"]  # latest first; never u2's, never archived
    assert containing("茶", "喜") == ["m_tea"]  # every needle
    assert containing("%") == ["m_pct"] and containing("_") == ["m_pct"]  # literally
    assert containing("茶", at=T0 + 0.5) == ["m_tea"]


def test_candidates_are_read_by_creation_and_by_a_later_decision(store: Store) -> None:
    """The daily notes' reads: keyset order (time, then id), the bound `before`, the limit."""
    fact = Candidate(scope="chat:x", kind="fact", content="c", source="rule_extract")

    def seed(tx: Tx) -> None:
        tx.candidates.add("c_b", fact, "accepted", "m_1", "created", 10.0)
        tx.candidates.add("c_a", fact, "pending", None, "waiting", 10.0)
        tx.candidates.add("c_c", fact, "pending", None, "waiting", 20.0)
        tx.candidates.decide("c_a", "rejected", None, "admin", 30.0)

    store.write_sync(seed)
    read = store.read_sync
    ids = lambda found: [c.id for c in found]  # noqa: E731
    assert ids(read(lambda tx: tx.candidates.proposed((0.0, ""), 99.0, 10))) == [
        "c_a",
        "c_b",
        "c_c",
    ]
    assert ids(read(lambda tx: tx.candidates.proposed((10.0, "c_a"), 99.0, 10))) == ["c_b", "c_c"]
    assert ids(read(lambda tx: tx.candidates.proposed((0.0, ""), 20.0, 10))) == ["c_a", "c_b"]
    assert ids(read(lambda tx: tx.candidates.proposed((0.0, ""), 99.0, 1))) == ["c_a"]
    decided = read(lambda tx: tx.candidates.decided((0.0, ""), 99.0, 10))
    assert [(c.id, c.status, c.decided_at, c.decided_by) for c in decided] == [
        ("c_a", "rejected", 30.0, "admin")
    ]
    assert read(lambda tx: tx.candidates.decided((30.0, "c_a"), 99.0, 10)) == []
    first = read(lambda tx: tx.candidates.proposed((10.0, "c_a"), 99.0, 1))[0]
    assert (first.status, first.item_id, first.reason, first.decided_at) == (
        "accepted",
        "m_1",
        "created",
        10.0,
    )
