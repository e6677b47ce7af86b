"""The floor of recall by meaning (`recall.floor`, `recall.vector`), on hand-made vectors: a
list whose best hit does not beat what unrelated lines score against the query gives nothing;
otherwise its hits within the margin of its best."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from nahida.memory import Query, Viewer, recall
from nahida.memory.recall.floor import NEAREST, unrelated
from nahida.memory.recall.plan import Mode
from nahida.memory.store.sqlite import SqliteStore
from tests.contract.test_store_vectors import CHAT, SPACE, T0, add_turns, embed_rows

QUERY = np.asarray([1.0, 0.0, 0.0, 0.0], dtype=np.float32)


def scoring(cosine: float) -> np.ndarray:
    """A unit vector whose cosine similarity to `QUERY` is `cosine`."""
    return np.asarray([cosine, math.sqrt(1 - cosine**2), 0.0, 0.0], dtype=np.float32)


def test_what_unrelated_lines_score_is_the_mean_of_the_nearest_few() -> None:
    references = np.stack([scoring(c) for c in (0.1, 0.9, 0.2, 0.8, 0.7, 0.3)])
    assert NEAREST == 3
    assert math.isclose(unrelated(QUERY, references), (0.9 + 0.8 + 0.7) / 3, rel_tol=1e-6)


def found(store: SqliteStore, mode: Mode, near: float | None) -> list[str]:
    query = Query("zzz", Viewer.parse(CHAT), at=T0 + 100, mode=mode)
    plan = recall.plan(query).with_vector(QUERY, SPACE, near)
    return [h.text for h in store.read_sync(recall.search, query, plan)]


def test_a_list_whose_best_does_not_beat_unrelated_lines_gives_nothing(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "floor.db")
    try:
        lines = {"best": 0.80, "close": 0.77, "far": 0.70}
        add_turns(store, *((CHAT, text, T0 + n) for n, text in enumerate(lines)))
        embed_rows(store, "turn", {text: scoring(c) for text, c in lines.items()})
        # not known (no reference lines): the margin alone, as before the floor
        assert found(store, "vector", None) == ["best", "close"]
        # the best beats unrelated lines (0.78) by the vector floor (0.01): hits by the margin
        assert found(store, "vector", 0.78) == ["best", "close"]
        assert found(store, "vector", 0.795) == []  # 0.80 < 0.795 + 0.01: nothing is about it
        # hybrid search's floor is higher (0.02): the words back meaning up there
        assert found(store, "hybrid", 0.785) == []
        assert found(store, "hybrid", 0.775) == ["best", "close"]
    finally:
        store.close()
