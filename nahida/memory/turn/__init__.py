"""What memory plugs into the runner: context sources for prompt slots and post-turn work.

`turn_parts(memory)` is what the app hands the runner; this package is the only part of memory
that knows the runner's protocols (`nahida.hooks`).
"""

from __future__ import annotations

from dataclasses import dataclass

from nahida.hooks import ContextSource, PostTurnHook
from nahida.memory.service import MemoryService
from nahida.memory.turn.context import (
    MemoryInjection,
    is_greeting,
)
from nahida.memory.turn.post_turn import CompactionHook, ExtractionHook
from nahida.memory.turn.tools import MemoryTools


@dataclass(frozen=True, slots=True)
class TurnParts:
    sources: tuple[ContextSource, ...]
    inline: tuple[PostTurnHook, ...]  # fast: they run on the chat's worker before its next turn
    background: tuple[PostTurnHook, ...] = ()  # slow: queued as background work


def turn_parts(memory: MemoryService) -> TurnParts:
    return TurnParts(
        sources=(MemoryInjection(memory),), inline=(ExtractionHook(memory), CompactionHook(memory))
    )


__all__ = [
    "CompactionHook",
    "ExtractionHook",
    "MemoryInjection",
    "MemoryTools",
    "TurnParts",
    "is_greeting",
    "turn_parts",
]
