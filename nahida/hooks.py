"""Where memory plugs into a turn: context sources fill prompt slots, post-turn hooks run after.

The runner knows only these protocols. Memory fills the slots `profile`, `rules` and `memory`
through a `ContextSource` (the runner adds `summary`, read with the turn); extraction and
compaction register `PostTurnHook`s. `prompt.build_prompt` decides where each slot goes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from nahida.envelope import Envelope
from nahida.i18n import Language

if TYPE_CHECKING:
    from nahida.memory import Turn


@dataclass(frozen=True, slots=True)
class TurnContext:
    """One addressed user turn as the runner sees it."""

    envelope: Envelope
    session_id: str
    turn: Turn
    language: Language
    is_bot_admin: bool
    recent_turn_ids: frozenset[int] = frozenset()  # the hot window the prompt shows verbatim
    addressed: bool = True  # False: group talk the bot only observed (no reply)


class ContextSource(Protocol):
    slot: str

    async def gather(self, turn: TurnContext) -> str | Mapping[str, str] | None:
        """Text for this source's slot, already within its budget; or texts by slot, for a
        source that fills several in one go (`slot` then only names it in the log)."""


class PostTurnHook(Protocol):
    name: str

    async def after_turn(self, turn: TurnContext, reply: str | None) -> None:
        """Runs after the reply was sent and stored, and after observed group talk was stored
        (`turn.addressed` False); `reply` is None when none was produced."""
