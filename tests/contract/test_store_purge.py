"""The store contract, part 6: what a purge asks of every backend — an item deleted with its
index entry and vector, its audit trail's text blanked (and only then), the candidates and
dream proposals that carried its words gone or blanked."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from nahida.memory.core.models import Candidate, DreamRun, MemoryItem, NewTurn, Proposal
from nahida.memory.core.scopes import Visibility
from nahida.memory.core.tokenize import index_text, query_terms, tokenize
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import TextSearch, VectorSearch, VectorSpace

T0 = 1_780_000_000.0
SCOPE = "chat:qq:group:1"
EVERY = Visibility(("global", SCOPE))
SPACE = VectorSpace("test", "tiny", 4)
NORTH = np.asarray([1, 0, 0, 0], dtype=np.float32)


def memory(item_id: str, content: str, **fields: Any) -> MemoryItem:
    return MemoryItem(item_id, SCOPE, "fact", content, created_at=T0, updated_at=T0, **fields)


def add(store: Store, *items: MemoryItem) -> None:
    store.write_sync(lambda tx: [tx.items.add(i, index_text(i.content)) for i in items])


def found(store: Store, text: str) -> list[str]:
    search = TextSearch(query_terms(tokenize(text)), 10)
    return [m.item.id for m in store.read_sync(lambda tx: tx.items.search(EVERY, search))]


def purge(store: Store, item_id: str) -> bool:
    return store.write_sync(lambda tx: tx.items.purge(item_id))


# items -----------------------------------------------------------------------------------------


def test_purge_deletes_the_item_and_its_index_entry(store: Store) -> None:
    add(store, memory("m1", "oolong berlin"), memory("m2", "oolong violin"))
    assert sorted(found(store, "oolong")) == ["m1", "m2"]
    assert purge(store, "m1") is True
    assert store.read_sync(lambda tx: tx.items.get("m1")) is None
    assert found(store, "oolong") == ["m2"]
    assert found(store, "berlin") == []
    assert purge(store, "m1") is False


def test_purge_of_an_archived_item_deletes_it_too(store: Store) -> None:
    item = memory("m1", "oolong")
    add(store, item)
    store.write_sync(lambda tx: tx.items.change(item, replace(item, status="archived"), None))
    assert purge(store, "m1") is True
    assert store.read_sync(lambda tx: tx.items.exported(None)) == []


def test_an_item_that_superseded_the_purged_one_stops_naming_it(store: Store) -> None:
    old = memory("m1", "oolong", status="superseded")
    add(store, old, memory("m2", "espresso", supersedes="m1"), memory("m3", "violin"))
    assert purge(store, "m1") is True
    kept = store.read_sync(lambda tx: tx.items.get("m2"))
    assert kept is not None and kept.supersedes is None
    assert store.read_sync(lambda tx: tx.items.replaced_by("m1")) is None


def _embed_items(store: Store, vectors: dict[str, np.ndarray]) -> None:
    rows = store.read_sync(lambda tx: tx.vectors.unhashed("item", 100))

    def run(tx: Tx) -> None:
        tx.vectors.put(SPACE, [(r.content, vectors[r.content]) for r in rows], T0)
        tx.vectors.link("item", [(r.key, r.content) for r in rows])

    store.write_sync(run)


def nearest(store: Store) -> list[str]:
    search = VectorSearch(NORTH, SPACE, 10)
    return [m.item.id for m in store.read_sync(lambda tx: tx.vectors.items(EVERY, search))]


def test_purge_deletes_the_vector_no_other_row_names(store: Store) -> None:
    add(store, memory("m1", "oolong"), memory("m2", "violin"))
    _embed_items(store, {"oolong": NORTH, "violin": NORTH})
    assert store.read_sync(lambda tx: tx.vectors.counts(SPACE)).stored == 2
    assert purge(store, "m1") is True
    assert store.read_sync(lambda tx: tx.vectors.counts(SPACE)).stored == 1
    assert store.read_sync(lambda tx: tx.vectors.known(SPACE, ["oolong", "violin"])) == {"violin"}
    assert nearest(store) == ["m2"]


def test_purge_keeps_a_vector_another_row_names(store: Store) -> None:
    """Vectors are kept by text: a turn that says the same words keeps its vector."""

    def turn(tx: Tx) -> None:
        tx.sessions.create("s1", "qq:group:1", "t", T0)
        tx.turns.add("s1", NewTurn("qq:group:1", "user", "oolong", T0), index_text("oolong"))

    store.write_sync(turn)
    add(store, memory("m1", "oolong"))
    turns = store.read_sync(lambda tx: tx.vectors.unhashed("turn", 10))
    _embed_items(store, {"oolong": NORTH})
    store.write_sync(lambda tx: tx.vectors.link("turn", [(turns[0].key, "oolong")]))
    assert purge(store, "m1") is True
    assert store.read_sync(lambda tx: tx.vectors.known(SPACE, ["oolong"])) == {"oolong"}


# the audit trail -------------------------------------------------------------------------------


def _trail(store: Store, item_id: str) -> list[tuple[str, str, Any, Any, Any, float]]:
    events = store.read_sync(lambda tx: tx.events.of_item(item_id))
    return [(e.action, e.actor, e.before, e.after, e.reason, e.time) for e in events]


def _events(tx: Tx, item_id: str) -> None:
    tx.events.add(item_id, "create", "cli", None, {"content": "oolong"}, "said oolong", T0)
    tx.events.add(item_id, "update", "dream:d_1", {"content": "oolong"}, {"content": "x"}, None, T0)
    tx.events.add(item_id, "archive", "cli", None, None, None, T0 + 1)


def test_the_trail_is_blanked_only_after_its_purge_is_recorded(store: Store) -> None:
    store.write_sync(lambda tx: (_events(tx, "m1"), _events(tx, "m2")))
    with pytest.raises(ValueError, match="m1"):
        store.write_sync(lambda tx: tx.events.purge("m1"))
    assert _trail(store, "m1")[0][3] == {"content": "oolong"}  # the failed unit changed nothing

    def run(tx: Tx) -> int:
        tx.events.add("m1", "purged", "console:ann", None, None, "asked by the person", T0 + 2)
        return tx.events.purge("m1")

    assert store.write_sync(run) == 2  # the archive held no text
    assert _trail(store, "m1") == [
        ("create", "cli", None, None, None, T0),
        ("update", "dream:d_1", None, None, None, T0),
        ("archive", "cli", None, None, None, T0 + 1),
        ("purged", "console:ann", None, None, "asked by the person", T0 + 2),
    ]
    assert _trail(store, "m2")[0][3:5] == ({"content": "oolong"}, "said oolong")
    assert store.write_sync(lambda tx: tx.events.purge("m1")) == 0


# candidates ------------------------------------------------------------------------------------


def _candidate(content: str, **fields: Any) -> Candidate:
    return Candidate(scope=SCOPE, kind="fact", content=content, source="llm_dream", **fields)


def test_purge_deletes_the_candidates_that_carried_the_words(store: Store) -> None:
    rows = {
        "c_made": (_candidate("oolong"), "accepted", "m1"),
        "c_merged": (_candidate("oolong again"), "merged", "m1"),
        "c_pending": (_candidate("oolong?", op="update", target="m1"), "pending", None),
        "c_refused": (_candidate("oolong!", op="archive", target="m1"), "rejected", None),
        "c_same": (_candidate("oolong"), "rejected", None),
        "c_titled": (_candidate("tea", title="oolong"), "rejected", None),
        # kept: a replacement that made another item, another item's, unrelated words
        "c_other": (_candidate("espresso", op="supersede", target="m1"), "accepted", "m2"),
        "c_twin": (_candidate("oolong"), "accepted", "m3"),
        "c_else": (_candidate("violin"), "rejected", None),
    }

    def run(tx: Tx) -> None:
        for n, (cid, (candidate, status, item)) in enumerate(rows.items()):
            assert tx.candidates.add(cid, candidate, status, item, "why", T0 + n)

    store.write_sync(run)
    purged = store.write_sync(lambda tx: tx.candidates.purge("m1", {"oolong", ""}))
    assert purged == 6
    left = store.read_sync(lambda tx: tx.candidates.proposed((0.0, ""), T0 + 100, 100))
    assert [n.id for n in left] == ["c_other", "c_twin", "c_else"]
    assert store.read_sync(lambda tx: tx.candidates.pending(None, 10)) == []


# dream reports ---------------------------------------------------------------------------------


def test_purge_blanks_the_dream_proposals_that_carried_the_words(store: Store) -> None:
    def proposal(content: str, op: str = "add", **fields: Any) -> Proposal:
        return Proposal(op, "fact", content, SCOPE, reason=f"because {content}", **fields)

    report = (
        proposal("oolong", fate="created", item_id="m1"),
        proposal("oolong tea", op="update", item="m1", fate="pending"),
        proposal("oolong"),  # rejected by a guard: no item
        proposal("espresso", op="supersede", item="m1", fate="superseded", item_id="m2"),
        proposal("violin", fate="created", item_id="m3"),
    )
    other = (proposal("violin", fate="created", item_id="m3"),)

    def run(tx: Tx) -> None:
        for run_id, proposals in (("d_1", report), ("d_2", other)):
            tx.dreams.start(DreamRun(run_id, "qq:group:1", "cli", T0))
            tx.dreams.save(DreamRun(run_id, "qq:group:1", "cli", T0, report=proposals))

    store.write_sync(run)
    assert store.write_sync(lambda tx: tx.dreams.purge("m1", {"oolong"})) == 1
    kept = store.read_sync(lambda tx: tx.dreams.get("d_1"))
    assert kept is not None
    assert [(p.content, p.reason) for p in kept.report] == [
        ("", ""),
        ("", ""),
        ("", ""),
        ("espresso", "because espresso"),
        ("violin", "because violin"),
    ]
    assert [p.fate for p in kept.report] == [p.fate for p in report]
    assert store.read_sync(lambda tx: tx.dreams.get("d_2")) is not None
    assert store.write_sync(lambda tx: tx.dreams.purge("m1", {"oolong"})) == 0
