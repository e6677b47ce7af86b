"""The store contract, part 4: episodes (one per session, seen only in its chat), by words and by
vector, for every backend.

Through the `Store` protocol and the domain types only, as in `test_store.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from nahida.memory.core.models import Episode, NewTurn, WarmSummary
from nahida.memory.core.tokenize import index_text, query_terms, tokenize
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import TextSearch, VectorSearch
from tests.contract.test_store_vectors import EAST, NORTH, NORTH_EAST, SPACE, embed_rows

T0 = 1_780_000_000.0
CHAT = "qq:group:1"
OTHER = "qq:group:2"


def episode(
    episode_id: str,
    session_id: str,
    summary: str,
    *,
    chat: str = CHAT,
    keywords: tuple[str, ...] = (),
    ended_at: float = T0 + 100,
) -> Episode:
    return Episode(
        episode_id,
        session_id,
        chat,
        summary,
        keywords,
        started_at=ended_at - 100,
        ended_at=ended_at,
        turn_count=4,
        created_at=ended_at,
    )


def put(store: Store, *episodes: Episode) -> list[Episode]:
    """Store episodes, each with a session of its chat (made when missing)."""

    def run(tx: Tx) -> list[Episode]:
        stored = []
        for e in episodes:
            tx.sessions.create(e.session_id, e.chat, "t", e.started_at)
            stored.append(tx.episodes.put(e, index_text(" ".join([*e.keywords, e.summary]))))
        return stored

    return store.write_sync(run)


def found(
    store: Store, chats: Sequence[str] | None, text: str | None, limit: int = 10, **search: object
) -> list[str]:
    terms = None if text is None else query_terms(tokenize(text))
    query = TextSearch(terms, limit, **search)  # type: ignore[arg-type]
    return [m.episode.id for m in store.read_sync(lambda tx: tx.episodes.search(chats, query))]


def nearest(
    store: Store, chats: Sequence[str] | None, vector: np.ndarray, **search: object
) -> list[str]:
    query = VectorSearch(vector, SPACE, 10, **search)  # type: ignore[arg-type]
    return [m.episode.id for m in store.read_sync(lambda tx: tx.vectors.episodes(chats, query))]


def test_an_episode_comes_back_as_stored_by_id_session_and_chat(store: Store) -> None:
    first = episode("e_000001", "s1", "我们聊了周末去杭州爬山", keywords=("爬山", "杭州"))
    later = episode("e_000002", "s2", "Planned the quarterly budget", ended_at=T0 + 500)
    elsewhere = episode("e_000003", "s3", "another group", chat=OTHER, ended_at=T0 + 900)
    assert put(store, first, later, elsewhere) == [first, later, elsewhere]
    assert store.read_sync(lambda tx: tx.episodes.get("e_000001")) == first
    assert store.read_sync(lambda tx: tx.episodes.get("e_missing")) is None
    assert store.read_sync(lambda tx: tx.episodes.of_session("s2")) == later
    assert store.read_sync(lambda tx: tx.episodes.of_session("s9")) is None
    newest = store.read_sync(lambda tx: tx.episodes.of_chat(CHAT, 10))
    assert newest == [later, first]
    assert store.read_sync(lambda tx: tx.episodes.of_chat(CHAT, 1)) == [later]
    assert store.read_sync(lambda tx: tx.episodes.of_chat("qq:group:9", 10)) == []


def test_a_session_ending_again_rewrites_its_episode_and_its_index(store: Store) -> None:
    (first,) = put(store, episode("e_000001", "s1", "oolong tea tasting", keywords=("tea",)))
    again = replace(
        first, id="e_fresh1", summary="espresso machines", keywords=("coffee",), turn_count=9
    )
    again = replace(again, ended_at=T0 + 300, created_at=T0 + 300)
    (stored,) = put(store, again)
    assert stored.id == "e_000001" and stored.created_at == first.created_at  # the same episode
    assert (stored.summary, stored.keywords, stored.turn_count) == (
        "espresso machines",
        ("coffee",),
        9,
    )
    assert stored.ended_at == T0 + 300
    assert store.read_sync(lambda tx: tx.episodes.get("e_fresh1")) is None
    assert store.read_sync(lambda tx: tx.episodes.of_chat(CHAT, 10)) == [stored]
    assert found(store, [CHAT], "oolong tea") == []
    assert found(store, [CHAT], "coffee espresso") == ["e_000001"]


def test_search_finds_keywords_and_summary_in_the_given_chats_only(store: Store) -> None:
    put(
        store,
        episode("e_here01", "s1", "聊了周末的安排", keywords=("爬山", "杭州")),
        episode("e_here02", "s2", "Talked about painting a sunrise", ended_at=T0 + 200),
        episode("e_there1", "s3", "也聊了爬山", chat=OTHER, keywords=("爬山",)),
    )
    assert found(store, [CHAT], "杭州爬山") == ["e_here01"]  # a keyword is searched
    assert found(store, [CHAT], "paintings") == ["e_here02"]  # stemmed like the other indexes
    assert found(store, [OTHER], "爬山") == ["e_there1"]
    assert sorted(found(store, [CHAT, OTHER], "爬山")) == ["e_here01", "e_there1"]
    assert found(store, [], "爬山") == []
    assert sorted(found(store, None, "爬山")) == ["e_here01", "e_there1"]  # every chat: admin
    assert found(store, ["qq:group:9"], "爬山") == []


def test_search_ranks_respects_the_moment_and_lists_the_latest_without_terms(store: Store) -> None:
    put(
        store,
        episode("e_000001", "s1", "tea", ended_at=T0 + 100),
        episode("e_000002", "s2", "tea tea oolong tea", keywords=("tea",), ended_at=T0 + 200),
        episode("e_000003", "s3", "coffee", ended_at=T0 + 300),
        episode("e_000004", "s4", "tea elsewhere", chat=OTHER, ended_at=T0 + 400),
    )
    assert found(store, [CHAT], "tea") == ["e_000002", "e_000001"]
    assert found(store, [CHAT], "tea", at=T0 + 150) == ["e_000001"]
    assert found(store, [CHAT], "tea", window=(T0 + 150, T0 + 250)) == ["e_000002"]
    assert found(store, [CHAT], None) == ["e_000003", "e_000002", "e_000001"]
    assert found(store, [CHAT], None, limit=1, at=T0 + 250) == ["e_000002"]


def test_deleting_a_session_removes_its_episode_and_its_index(store: Store) -> None:
    put(
        store,
        episode("e_kept01", "s1", "oolong there"),
        episode("e_gone01", "s2", "espresso here"),  # the newest: its key may be handed out again
    )
    assert store.write_sync(lambda tx: tx.sessions.delete("s2")) is True
    assert store.read_sync(lambda tx: tx.episodes.get("e_gone01")) is None
    assert store.read_sync(lambda tx: tx.episodes.of_session("s2")) is None
    assert found(store, None, "espresso") == []
    put(store, episode("e_new001", "s3", "berlin hiking"))
    assert found(store, None, "espresso") == []  # no index entry outlived its episode
    assert found(store, None, "berlin") == ["e_new001"]
    assert found(store, None, "oolong") == ["e_kept01"]


def test_deleting_empty_sessions_removes_their_episodes(store: Store) -> None:
    put(store, episode("e_empty1", "s1", "espresso talk"), episode("e_full01", "s2", "oolong"))
    turn = NewTurn(CHAT, "user", "oolong please", T0 + 50, speaker="qq:u1")
    store.write_sync(lambda tx: tx.turns.add("s2", turn, index_text(turn.content)))
    assert store.write_sync(lambda tx: tx.sessions.delete_empty()) == 1
    assert store.read_sync(lambda tx: tx.episodes.get("e_empty1")) is None
    assert found(store, None, "espresso") == []
    put(store, episode("e_new001", "s3", "berlin"))
    assert found(store, None, "espresso") == []
    assert store.read_sync(lambda tx: tx.episodes.get("e_full01")) is not None


def test_vectors_of_episodes_are_upkept_and_searched_in_their_chat_only(store: Store) -> None:
    put(
        store,
        episode("e_north1", "s1", "north", keywords=("up", "cold")),
        episode("e_east01", "s2", "east", ended_at=T0 + 200),
        episode("e_ne0001", "s3", "north-east", ended_at=T0 + 300),
        episode("e_other1", "s4", "north", chat=OTHER),
    )
    rows = store.read_sync(lambda tx: tx.vectors.unhashed("episode", 10))
    assert [(r.title, r.content) for r in rows] == [
        ("up, cold", "north"),  # embedded as "up, cold: north"
        ("", "east"),
        ("", "north-east"),
        ("", "north"),
    ]
    assert store.read_sync(lambda tx: tx.vectors.counts(SPACE)).pending == 4
    embed_rows(store, "episode", {"north": NORTH, "east": EAST, "north-east": NORTH_EAST})
    assert store.read_sync(lambda tx: tx.vectors.unhashed("episode", 10)) == []
    counts = store.read_sync(lambda tx: tx.vectors.counts(SPACE))
    assert (counts.stored, counts.pending) == (3, 0)
    assert nearest(store, [CHAT], NORTH) == ["e_north1", "e_ne0001", "e_east01"]
    assert nearest(store, [OTHER], NORTH) == ["e_other1"]
    assert nearest(store, [OTHER], EAST) == ["e_other1"]  # the only one it may see
    assert nearest(store, [], NORTH) == []
    assert len(nearest(store, None, NORTH)) == 4
    assert nearest(store, [CHAT], NORTH, at=T0 + 250) == ["e_north1", "e_east01"]
    assert nearest(store, [CHAT], NORTH, window=(T0 + 250, T0 + 350)) == ["e_ne0001"]
    matches = store.read_sync(lambda tx: tx.vectors.episodes([CHAT], VectorSearch(NORTH, SPACE, 1)))
    assert matches[0].episode.summary == "north" and round(matches[0].score, 4) == 1.0


def test_a_rewritten_or_deleted_episode_gives_up_its_vector(store: Store) -> None:
    (first,) = put(store, episode("e_north1", "s1", "north"))
    put(store, episode("e_east01", "s2", "east"))
    embed_rows(store, "episode", {"north": NORTH, "east": EAST})
    put(store, replace(first, turn_count=7))  # the same text: the vector stays
    assert store.read_sync(lambda tx: tx.vectors.unhashed("episode", 10)) == []
    put(store, replace(first, summary="north-east"))  # a new text is looked at again
    rows = store.read_sync(lambda tx: tx.vectors.unhashed("episode", 10))
    assert [r.content for r in rows] == ["north-east"]
    assert nearest(store, [CHAT], NORTH) == ["e_east01"]  # no vector for its new text yet
    store.write_sync(lambda tx: tx.sessions.delete("s2"))
    assert store.write_sync(lambda tx: tx.vectors.sweep()) == 2  # "north" and "east"
    embed_rows(store, "episode", {"north-east": NORTH_EAST})
    assert nearest(store, [CHAT], NORTH) == ["e_north1"]
    assert store.write_sync(lambda tx: tx.vectors.clear()) == 1
    assert [r.content for r in store.read_sync(lambda tx: tx.vectors.unhashed("episode", 10))] == [
        "north-east"
    ]


def test_episodes_and_summaries_are_read_by_their_time_for_the_daily_notes(store: Store) -> None:
    """(seq, episode) by (created_at, seq), a rewrite not new again; written summaries (not
    empty, not failing) by (updated_at, session_id); both bounded by `before` and the limit."""
    put(store, episode("e_000002", "s2", "later", ended_at=T0 + 200))
    put(store, episode("e_000001", "s1", "first", ended_at=T0 + 100))
    created = store.read_sync(lambda tx: tx.episodes.created((0.0, 0), T0 + 999, 10))
    assert [e.id for _, e in created] == ["e_000001", "e_000002"]
    (seq, _), _ = created
    assert store.read_sync(lambda tx: tx.episodes.created((T0 + 100, seq), T0 + 999, 10)) == [
        created[1]
    ]
    assert store.read_sync(lambda tx: tx.episodes.created((0.0, 0), T0 + 200, 10)) == [created[0]]
    assert store.read_sync(lambda tx: tx.episodes.created((0.0, 0), T0 + 999, 1)) == [created[0]]
    put(store, replace(created[0][1], summary="rewritten", ended_at=T0 + 500))
    last = (T0 + 200, created[1][0])
    assert store.read_sync(lambda tx: tx.episodes.created(last, T0 + 999, 10)) == []  # kept

    def summaries(tx: Tx) -> None:
        tx.summaries.put(WarmSummary("s2", CHAT, "two", updated_at=T0 + 10))
        tx.summaries.put(WarmSummary("s1", CHAT, "one", updated_at=T0 + 10))
        tx.sessions.create("s3", CHAT, "t", T0)
        tx.summaries.failed("s3", CHAT, "boom", T0 + 20)  # nothing written yet

    store.write_sync(summaries)
    updated = store.read_sync(lambda tx: tx.summaries.updated((0.0, ""), T0 + 999, 10))
    assert [(s.session_id, s.summary) for s in updated] == [("s1", "one"), ("s2", "two")]
    assert store.read_sync(lambda tx: tx.summaries.updated((T0 + 10, "s1"), T0 + 999, 10)) == [
        updated[1]
    ]
    assert store.read_sync(lambda tx: tx.summaries.updated((0.0, ""), T0 + 10, 10)) == []
