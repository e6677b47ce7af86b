"""The store contract, part 3: embeddings by text hash and vector search, for every backend.

`sqlite` ranks with sqlite-vec, `sqlite-numpy` without the extension: both must give the same
answers (`tests/unit/test_vector_ranking.py` compares them on random vectors). Vectors here are
small and made by hand, so which row is nearest is known exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import product

import numpy as np

from nahida.memory.core.models import Episode, MemoryItem, NewTurn
from nahida.memory.core.scopes import Visibility
from nahida.memory.core.tokenize import index_text
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import VectorSearch, VectorSpace

T0 = 1_780_000_000.0
CHAT = "qq:group:1"
OTHER = "qq:group:2"
SPACE = VectorSpace("test", "tiny", 4)
ELSEWHERE = VectorSpace("test", "other-model", 4)


def unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


NORTH, EAST, NORTH_EAST = unit(1, 0, 0, 0), unit(0, 1, 0, 0), unit(1, 1, 0, 0)


def add_turns(store: Store, *turns: tuple[str, str, float]) -> list[int]:
    """(chat, content, time) turns by a user, each in its chat's session."""

    def run(tx: Tx) -> list[int]:
        made = []
        for chat, content, at in turns:
            session = f"s-{chat}"
            tx.sessions.create(session, chat, "t", T0)
            turn = NewTurn(chat, "user", content, at, speaker="qq:u1", speaker_name="Ann")
            made.append(tx.turns.add(session, turn, index_text(content)))
        return made

    return store.write_sync(run)


def embed_rows(store: Store, kind: str, vectors: dict[str, np.ndarray]) -> None:
    """Give every unhashed row of `kind` whose content is a key of `vectors` its vector (hash:
    the content itself); other rows are marked as not worth a vector."""
    rows = store.read_sync(lambda tx: tx.vectors.unhashed(kind, 100))

    def run(tx: Tx) -> None:
        known = [(r.content, vectors[r.content]) for r in rows if r.content in vectors]
        tx.vectors.put(SPACE, known, T0)
        tx.vectors.link(kind, [(r.key, r.content if r.content in vectors else "") for r in rows])

    store.write_sync(run)


def nearest_turns(
    store: Store, chats: Sequence[str] | None, vector: np.ndarray, **search: object
) -> list[tuple[str, float]]:
    space = search.pop("space", SPACE)
    limit = search.pop("limit", 10)
    query = VectorSearch(vector, space, limit, **search)  # type: ignore[arg-type]
    found = store.read_sync(lambda tx: tx.vectors.turns(chats, query))
    return [(m.content, round(m.score, 4)) for m in found]


def test_unhashed_lists_searchable_rows_until_they_are_linked(store: Store) -> None:
    add_turns(store, (CHAT, "north", T0), (CHAT, "好的", T0 + 1))
    rows = store.read_sync(lambda tx: tx.vectors.unhashed("turn", 10))
    assert [(r.title, r.content) for r in rows] == [("Ann", "north"), ("Ann", "好的")]
    assert rows[0].key < rows[1].key
    assert len(store.read_sync(lambda tx: tx.vectors.unhashed("turn", 1))) == 1
    embed_rows(store, "turn", {"north": NORTH})
    assert store.read_sync(lambda tx: tx.vectors.unhashed("turn", 10)) == []
    counts = store.read_sync(lambda tx: tx.vectors.counts(SPACE))
    assert (counts.stored, counts.pending, counts.skipped, counts.other) == (1, 0, 1, 0)


def test_a_text_has_one_vector_per_space(store: Store) -> None:
    def put(space: VectorSpace) -> int:
        pairs = [("h1", NORTH), ("h2", EAST)]
        return store.write_sync(lambda tx: tx.vectors.put(space, pairs, T0))

    assert put(SPACE) == 2
    assert put(SPACE) == 0  # already there: kept
    assert put(ELSEWHERE) == 2
    known = store.read_sync(lambda tx: tx.vectors.known(SPACE, ["h1", "h3", "h1"]))
    assert known == {"h1"}
    counts = store.read_sync(lambda tx: tx.vectors.counts(SPACE))
    assert (counts.stored, counts.other) == (2, 2)


def test_turn_search_is_nearest_first_in_the_chats_and_the_space(store: Store) -> None:
    add_turns(
        store,
        (CHAT, "north", T0),
        (CHAT, "east", T0 + 1),
        (CHAT, "north-east", T0 + 2),
        (OTHER, "elsewhere north", T0 + 3),
    )
    embed_rows(
        store,
        "turn",
        {"north": NORTH, "east": EAST, "north-east": NORTH_EAST, "elsewhere north": NORTH},
    )
    assert nearest_turns(store, [CHAT], NORTH) == [
        ("north", 1.0),
        ("north-east", 0.7071),
        ("east", 0.0),
    ]
    assert [c for c, _ in nearest_turns(store, [CHAT], EAST, limit=1)] == ["east"]
    assert [c for c, _ in nearest_turns(store, [OTHER], NORTH)] == ["elsewhere north"]
    assert nearest_turns(store, [], NORTH) == []
    assert len(nearest_turns(store, None, NORTH)) == 4  # every chat: an admin's search
    assert nearest_turns(store, [CHAT], NORTH, space=ELSEWHERE) == []  # no vector of that model


def test_a_redacted_turn_is_not_found_by_its_old_words_meaning(store: Store) -> None:
    (secret, kept) = add_turns(store, (CHAT, "north", T0), (CHAT, "east", T0 + 1))
    embed_rows(store, "turn", {"north": NORTH, "east": EAST})
    store.write_sync(lambda tx: tx.turns.rewrite(secret, "[redacted]", index_text("[redacted]")))
    assert [c for c, _ in nearest_turns(store, [CHAT], NORTH)] == ["east"]
    again = store.read_sync(lambda tx: tx.vectors.unhashed("turn", 10))
    assert [(r.key, r.content) for r in again] == [(secret, "[redacted]")]  # embedded anew
    assert kept not in [r.key for r in again]


def test_turn_search_respects_at_window_and_hidden(store: Store) -> None:
    north, _, _ = add_turns(
        store, (CHAT, "north", T0), (CHAT, "east", T0 + 100), (CHAT, "north-east", T0 + 200)
    )
    embed_rows(store, "turn", {"north": NORTH, "east": EAST, "north-east": NORTH_EAST})
    assert [c for c, _ in nearest_turns(store, [CHAT], NORTH, at=T0 + 150)] == ["north", "east"]
    found = nearest_turns(store, [CHAT], NORTH, window=(T0 + 50, T0 + 250))
    assert [c for c, _ in found] == ["north-east", "east"]
    store.write_sync(lambda tx: tx.turns.hide([north], [], "m_gone"))
    assert [c for c, _ in nearest_turns(store, [CHAT], NORTH)] == ["north-east", "east"]


def item(item_id: str, content: str, scope: str, **fields: object) -> MemoryItem:
    return MemoryItem(
        item_id,
        scope,
        "fact",
        content,
        created_at=T0,
        updated_at=T0,
        **fields,  # type: ignore[arg-type]
    )


def add_items(store: Store, *items: MemoryItem) -> None:
    store.write_sync(lambda tx: [tx.items.add(i, index_text(i.content)) for i in items])


def nearest_items(store: Store, visibility: Visibility, vector: np.ndarray) -> list[str]:
    query = VectorSearch(vector, SPACE, 10)
    return [m.item.id for m in store.read_sync(lambda tx: tx.vectors.items(visibility, query))]


def test_item_search_keeps_visibility_status_and_follows_a_new_text(store: Store) -> None:
    add_items(
        store,
        item("m_pub", "north", "user:qq:u1", sensitivity="public"),
        item("m_priv", "north-east", "user:qq:u1"),
        item("m_glob", "east", "global"),
    )
    embed_rows(store, "item", {"north": NORTH, "north-east": NORTH_EAST, "east": EAST})
    owner = Visibility(("global", "user:qq:u1"))
    group = Visibility(("global",), ("user:qq:u1",))  # the person seen from a group
    assert nearest_items(store, owner, NORTH) == ["m_pub", "m_priv", "m_glob"]
    assert nearest_items(store, group, NORTH) == ["m_pub", "m_glob"]
    assert nearest_items(store, Visibility(()), NORTH) == []
    before = store.read_sync(lambda tx: tx.items.get("m_pub"))
    assert before is not None
    store.write_sync(lambda tx: tx.items.change(before, replace(before, status="archived"), None))
    assert nearest_items(store, owner, NORTH) == ["m_priv", "m_glob"]
    glob = store.read_sync(lambda tx: tx.items.get("m_glob"))
    assert glob is not None
    renamed = replace(glob, content="north too")
    store.write_sync(lambda tx: tx.items.change(glob, renamed, index_text("north too")))
    rows = store.read_sync(lambda tx: tx.vectors.unhashed("item", 10))
    assert [r.content for r in rows] == ["north too"]  # a new text is looked at again
    assert nearest_items(store, owner, NORTH) == ["m_priv"]


def test_missing_lists_looked_at_rows_without_a_vector_in_the_space(store: Store) -> None:
    add_turns(store, (CHAT, "north", T0), (CHAT, "east", T0 + 1))
    embed_rows(store, "turn", {"north": NORTH, "east": EAST})
    assert store.read_sync(lambda tx: tx.vectors.missing("turn", SPACE, 0, 10)) == []
    missing = store.read_sync(lambda tx: tx.vectors.missing("turn", ELSEWHERE, 0, 10))
    assert [(r.content, r.hash) for r in missing] == [("north", "north"), ("east", "east")]
    after = missing[0].key
    rest = store.read_sync(lambda tx: tx.vectors.missing("turn", ELSEWHERE, after, 10))
    assert [r.content for r in rest] == ["east"]
    assert store.read_sync(lambda tx: tx.vectors.counts(ELSEWHERE)).pending == 2


def test_sweep_drops_vectors_nothing_names_and_clear_drops_all(store: Store) -> None:
    add_turns(store, (CHAT, "north", T0))
    embed_rows(store, "turn", {"north": NORTH})
    store.write_sync(lambda tx: tx.vectors.put(SPACE, [("orphan", EAST)], T0))
    assert store.write_sync(lambda tx: tx.vectors.sweep()) == 1
    assert store.read_sync(lambda tx: tx.vectors.known(SPACE, ["north", "orphan"])) == {"north"}
    assert store.write_sync(lambda tx: tx.vectors.clear()) == 1
    assert len(store.read_sync(lambda tx: tx.vectors.unhashed("turn", 10))) == 1


# a text many rows share: one vector, every owner's row --------------------------------------

SHARED_CHATS = (CHAT, OTHER, "qq:private:u1", "qq:private:u2")
SHARED_SCOPES = ("global", f"chat:{CHAT}", "user:qq:u1", "user:qq:u2")
SHARED_TEXTS = {"north": NORTH, "east": EAST, "north-east": NORTH_EAST}


def subsets(values: Sequence[str]) -> list[tuple[str, ...]]:
    return [
        tuple(v for n, v in enumerate(values) if mask >> n & 1) for mask in range(2 ** len(values))
    ]


def test_every_owner_of_a_shared_text_finds_it_by_meaning_and_no_one_else_does(
    store: Store,
) -> None:
    """Every chat says every text (a group's own line among them) and summed up a conversation
    in it, and every scope holds every text, public and private, active and archived: one
    vector per text serves them all. For every set of chats and every visibility, a search by
    each text's vector returns exactly the rows the viewer may see, each of those saying the
    text scoring 1."""
    turn_ids = add_turns(
        store,
        *(
            (chat, text, T0 + n)
            for n, (chat, text) in enumerate(product(SHARED_CHATS, SHARED_TEXTS))
        ),
    )
    turns = dict(zip(turn_ids, product(SHARED_CHATS, SHARED_TEXTS), strict=True))
    hidden = turn_ids[-1]  # hidden by a forgotten item: found by no one
    store.write_sync(lambda tx: tx.turns.hide([hidden], [], "m_gone"))
    items = {
        f"m{n}": item(f"m{n}", text, scope, sensitivity=sensitivity, status=status)
        for n, (scope, sensitivity, status, text) in enumerate(
            product(SHARED_SCOPES, ("public", "private"), ("active", "archived"), SHARED_TEXTS)
        )
    }
    add_items(store, *items.values())
    episodes = {
        f"e_{n:06d}": Episode(f"e_{n:06d}", f"e-{n}", chat, text, (), T0, T0 + 1, 4, T0 + 1)
        for n, (chat, text) in enumerate(product(SHARED_CHATS, SHARED_TEXTS))
    }

    def put_episodes(tx: Tx) -> None:
        for e in episodes.values():
            tx.sessions.create(e.session_id, e.chat, "t", e.started_at)
            tx.episodes.put(e, index_text(e.summary))

    store.write_sync(put_episodes)
    for kind in ("turn", "item", "episode"):
        embed_rows(store, kind, SHARED_TEXTS)
    assert store.read_sync(lambda tx: tx.vectors.counts(SPACE)).stored == len(SHARED_TEXTS)

    for chats in subsets(SHARED_CHATS):
        for text, vector in SHARED_TEXTS.items():
            query = VectorSearch(vector, SPACE, 100)
            found = store.read_sync(lambda tx, c=chats, q=query: tx.vectors.turns(c, q))
            expected = {t for t, (chat, _) in turns.items() if chat in chats and t != hidden}
            assert {m.id for m in found} == expected, (chats, text)
            saying = {m.id for m in found if round(m.score, 4) == 1.0}
            assert saying == {t for t in expected if turns[t][1] == text}, (chats, text)
            summed = store.read_sync(lambda tx, c=chats, q=query: tx.vectors.episodes(c, q))
            expected = {e.id for e in episodes.values() if e.chat in chats}
            assert {m.episode.id for m in summed} == expected, (chats, text)
            saying = {m.episode.id for m in summed if round(m.score, 4) == 1.0}
            assert saying == {e for e in expected if episodes[e].summary == text}, (chats, text)
    for full in subsets(SHARED_SCOPES):
        for public in subsets(SHARED_SCOPES):
            view = Visibility(full, public)
            allowed = {
                i.id
                for i in items.values()
                if i.status == "active" and view.sees(i.scope, i.sensitivity)
            }
            for text, vector in SHARED_TEXTS.items():
                query = VectorSearch(vector, SPACE, 100)
                found_items = store.read_sync(lambda tx, v=view, q=query: tx.vectors.items(v, q))
                assert {m.item.id for m in found_items} == allowed, (view, text)
                saying = {m.item.id for m in found_items if round(m.score, 4) == 1.0}
                assert saying == {i for i in allowed if items[i].content == text}, (view, text)


# a small scope in a big table ------------------------------------------------------------------

CROWD = 2_000


def link_all(store: Store, kind: str, vectors: dict[str, np.ndarray]) -> None:
    """Give every unhashed row of `kind` the vector its content names (hash: the content)."""
    rows = store.read_sync(lambda tx: tx.vectors.unhashed(kind, 10 * CROWD))

    def run(tx: Tx) -> None:
        tx.vectors.put(SPACE, list(vectors.items()), T0)
        tx.vectors.link(kind, [(r.key, r.content) for r in rows])

    store.write_sync(run)


def crowd(near: str, far: str) -> dict[str, np.ndarray]:
    """`CROWD` texts all nearer to NORTH than the three `far` ones, each its own vector."""
    texts = {f"{near} {n}": unit(1, n / CROWD, 0, 0) for n in range(CROWD)}
    return texts | {f"{far} {n}": unit(1, 4 + n, 1, 0) for n in range(3)}


def test_a_small_scope_gets_all_of_its_rows_however_many_others_are_nearer(store: Store) -> None:
    """Visibility is applied before the nearest are taken: three visible items (or turns) among
    thousands nearer to the query that the viewer may not see all come back in the top 10."""
    vectors = crowd("crowded", "mine")
    add_items(
        store,
        *(
            item(f"m_{n}", text, "chat:qq:group:big" if "crowded" in text else "chat:qq:group:few")
            for n, text in enumerate(vectors)
        ),
    )
    link_all(store, "item", vectors)
    mine = Visibility(("chat:qq:group:few",))
    found = store.read_sync(lambda tx: tx.vectors.items(mine, VectorSearch(NORTH, SPACE, 10)))
    assert [m.item.content for m in found] == ["mine 0", "mine 1", "mine 2"]

    add_turns(store, *((OTHER if "crowded" in t else CHAT, t, T0) for t in vectors))
    link_all(store, "turn", vectors)
    assert [c for c, _ in nearest_turns(store, [CHAT], NORTH)] == ["mine 0", "mine 1", "mine 2"]
