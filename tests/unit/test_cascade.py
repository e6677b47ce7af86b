"""Hybrid search's answer keeps room for what only meaning found."""

from __future__ import annotations

from nahida.memory.core.models import Hit
from nahida.memory.recall.cascade import _with_room_for_meaning


def hits(*names: str) -> list[Hit]:
    return [Hit("turn", f"t_{n}", n, 1.0, "chat:x", [], 0.0) for n in names]


def texts(found: list[Hit]) -> list[str]:
    return [h.text for h in found]


def test_the_last_places_go_to_the_best_hits_by_meaning_left_out() -> None:
    fused = hits(*"abcdefghijkl")
    by_meaning = hits("c", "x", "a", "y", "z")
    answer = _with_room_for_meaning(fused, by_meaning, 10, 2)
    assert texts(answer) == [*"abcdefgh", "x", "y"]


def test_nothing_is_repeated_and_a_short_answer_keeps_most_of_the_fusion() -> None:
    fused = hits("a", "b", "c", "x")
    answer = _with_room_for_meaning(fused, hits("x", "b"), 5, 2)
    assert texts(answer) == ["a", "b", "c", "x"]  # a reserve of 1 (a third of 5): x, not twice
    assert texts(_with_room_for_meaning(fused, [], 3, 2)) == ["a", "b", "c"]
    assert texts(_with_room_for_meaning(fused, hits("y"), 2, 2)) == ["a", "b"]  # no room
