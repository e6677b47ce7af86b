"""sqlite-vec and the numpy fallback rank vectors alike (the store contract runs both; here on
random vectors, where any difference in order would show)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nahida.memory.store.sqlite import SqliteStore
from tests.contract.test_store_vectors import (
    CHAT,
    OTHER,
    T0,
    add_turns,
    embed_rows,
    nearest_turns,
    unit,
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sqlite_vec_and_numpy_give_the_same_answers(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    stores = [SqliteStore(tmp_path / "vec.db"), SqliteStore(tmp_path / "numpy.db", vec=False)]
    texts = [f"text {n}" for n in range(60)]
    vectors = {t: unit(*rng.normal(size=4)) for t in texts}
    try:
        answers = []
        for store in stores:
            add_turns(store, *[(CHAT if n % 3 else OTHER, t, T0 + n) for n, t in enumerate(texts)])
            embed_rows(store, "turn", vectors)
            query = unit(*rng.normal(size=4)) if not answers else answers[0][0]
            found = nearest_turns(store, [CHAT], query, limit=15)
            answers.append((query, [c for c, _ in found], [s for _, s in found]))
        (_, first, first_scores), (_, second, second_scores) = answers
        assert first == second
        assert np.allclose(first_scores, second_scores, atol=1e-3)
        assert first_scores == sorted(first_scores, reverse=True)
    finally:
        for store in stores:
            store.close()
