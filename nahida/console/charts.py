"""Bar charts drawn on the server as SVG geometry: the template draws `<rect>`s from these
numbers, so the page needs no script or chart library and its Content-Security-Policy holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

HEIGHT = 120  # px of the tallest bar
BAR = 14  # px of a bar's width
GAP = 4  # px between bars


@dataclass(frozen=True, slots=True)
class Segment:
    """One part of a stacked bar: what it counts, how many, and where it is drawn."""

    name: str
    value: int
    y: float
    height: float


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    total: int
    x: int
    segments: tuple[Segment, ...]  # the names counted here, bottom first
    counts: tuple[tuple[str, int], ...]  # every name of the chart with its count (its table)


@dataclass(frozen=True, slots=True)
class Chart:
    """Stacked bars, one a label (a day), with the names stacked in each, bottom first."""

    names: tuple[str, ...]
    bars: tuple[Bar, ...]
    width: int
    height: int = HEIGHT
    top: int = 0  # the largest total, which fills the height


def stacked(rows: Sequence[tuple[str, Mapping[str, int]]], names: Sequence[str]) -> Chart:
    """A chart of `rows` (label, counts by name), each bar scaled to the largest total."""
    top = max((sum(counts.get(n, 0) for n in names) for _, counts in rows), default=0)
    scale = HEIGHT / top if top else 0.0
    bars = []
    for index, (label, counts) in enumerate(rows):
        base = float(HEIGHT)
        segments = []
        for name in names:
            value = counts.get(name, 0)
            if value:
                size = value * scale
                base -= size
                segments.append(Segment(name, value, round(base, 2), round(size, 2)))
        shown = tuple((n, counts.get(n, 0)) for n in names)
        total = sum(value for _, value in shown)
        bars.append(Bar(label, total, index * (BAR + GAP), tuple(segments), shown))
    width = max(1, len(rows) * (BAR + GAP) - GAP)
    return Chart(tuple(names), tuple(bars), width, HEIGHT, top)
