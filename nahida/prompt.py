"""Builds the prompt: persona, named memory slots, the hot window and the current message.

Token counts are estimates (`providers.base.estimate_tokens`). When the budget is tight the oldest
hot-window turns go first; slots are trimmed by their sources.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from nahida.hooks import SLOTS
from nahida.i18n import Language
from nahida.memory import Turn
from nahida.providers.base import Message, estimate_tokens

SLOT_TITLES = {
    "profile": "About the person you are talking to",
    "rules": "Behaviour rules",
    "summary": "Earlier in this conversation",
    "memory": "Relevant memory",
}
LANGUAGE_LINE: dict[Language, str] = {
    "zh": "默认用简体中文回答，除非对方使用其他语言。",
    "en": "Answer in English unless the person writes in another language.",
}


@dataclass(frozen=True, slots=True)
class Prompt:
    messages: tuple[Message, ...]
    tokens: int
    dropped_turns: int


def _speaker_line(turn: Turn, is_group: bool) -> str:
    if is_group and turn.role == "user" and turn.speaker_name:
        return f"{turn.speaker_name}: {turn.content}"
    return turn.content


def build_prompt(
    *,
    persona: str,
    language: Language,
    now: datetime,
    slots: Mapping[str, str],
    hot: Sequence[Turn],
    current: str,
    current_name: str | None,
    is_group: bool,
    budget: int,
) -> Prompt:
    parts = [persona.strip(), LANGUAGE_LINE[language], f"Now: {now:%Y-%m-%d %H:%M %Z}"]
    for slot in SLOTS:
        text = slots.get(slot)
        if text:
            parts.append(f"## {SLOT_TITLES[slot]}\n{text.strip()}")
    system = Message("system", "\n\n".join(p for p in parts if p))
    user_text = f"{current_name}: {current}" if is_group and current_name else current
    last = Message("user", user_text)
    used = estimate_tokens(system.content) + estimate_tokens(last.content)
    history: list[Message] = []
    kept = 0
    for turn in reversed([t for t in hot if t.role in ("user", "assistant") and t.content]):
        text = _speaker_line(turn, is_group)
        cost = estimate_tokens(text)
        if used + cost > budget:
            break
        used += cost
        kept += 1
        history.append(Message("user" if turn.role == "user" else "assistant", text))
    history.reverse()
    eligible = sum(1 for t in hot if t.role in ("user", "assistant") and t.content)
    return Prompt((system, *history, last), used, eligible - kept)
