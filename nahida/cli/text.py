"""Terminal text for the CLI's tables: widths as a terminal shows them, and local times.

A CJK character takes two columns, so padding by `len()` makes columns drift; `fit` pads and cuts
by display width. Times are shown in the bot's time zone (`bot.timezone`), not as epoch numbers.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime, tzinfo


def width(text: str) -> int:
    """Columns a terminal gives `text` (wide and full-width characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def fit(text: str, columns: int) -> str:
    """`text` in exactly `columns` columns: cut with "…" when longer, padded when shorter."""
    if width(text) > columns:
        kept, used = [], 0
        for char in text:
            w = width(char)
            if used + w > columns - 1:
                break
            kept.append(char)
            used += w
        text = "".join(kept) + "…"
    return text + " " * (columns - width(text))


def local_time(epoch: float | None, tz: tzinfo | None = None, *, seconds: bool = False) -> str:
    """`2024-05-01 12:30` in `tz` (None: the system's zone)."""
    if epoch is None:
        return "-"
    moment = datetime.fromtimestamp(epoch, tz) if tz else datetime.fromtimestamp(epoch).astimezone()
    return f"{moment:%Y-%m-%d %H:%M:%S}" if seconds else f"{moment:%Y-%m-%d %H:%M}"
