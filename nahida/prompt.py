"""Builds the prompt (DESIGN §7): the system message, memory as acknowledged context, the hot
window and the current message.

    system     persona · language · now · the speaker's profile · <behavioral_guidelines>
               (the language line defers to the rules when one of them names the language:
               the `language` slot is then `LANGUAGE_BY_RULES`)
    user       [长期记忆] recalled long-term memory          assistant  好的。
    user       [对话摘要] the session's warm summary        assistant  好的。
    …          the hot rounds, verbatim
    user       the current message

Token counts are estimates (`providers.base.estimate_tokens`). When the budget is tight the oldest
hot-window turns go first; slots are trimmed by their sources.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from nahida.i18n import Language
from nahida.memory import Turn
from nahida.providers.base import Message, estimate_tokens

PROFILE_TITLE = "## About the person you are talking to"
RULES_INTRO = (
    "How to answer, as people here asked (each rule quoted; a group rule, set by the group's"
    " owner or admins, wins over one person's own rule, and a newer rule over an older one):"
)
# (label of the slot's message, the assistant's acknowledgement) per language
CONTEXT_LABELS: dict[Language, dict[str, str]] = {
    "zh": {"memory": "[长期记忆]", "summary": "[对话摘要]", "ack": "好的。"},
    "en": {"memory": "[Long-term memory]", "summary": "[Conversation summary]", "ack": "OK."},
}
LANGUAGE_LINE: dict[Language, str] = {
    "zh": "默认用简体中文回答，除非对方使用其他语言。",
    "en": "Answer in English unless the person writes in another language.",
}
# The `language` slot's value when a behavioural rule in force names the language to answer in
# (or one not to): the default line would contradict it, so this one stands in its place.
LANGUAGE_BY_RULES = "rules"
LANGUAGE_RULE_LINE: dict[Language, str] = {
    "zh": "回答用哪种语言，以下面行为规则里的为准（较新的优先）。",
    "en": "Answer in the language the rules below ask for (newer ones win).",
}


@dataclass(frozen=True, slots=True)
class Prompt:
    messages: tuple[Message, ...]
    tokens: int
    dropped_turns: int


def _line(role: str, content: str, name: str | None, is_group: bool) -> tuple[Message, int]:
    """A hot-window turn as the prompt shows it, and its token estimate."""
    text = f"{name}: {content}" if is_group and role == "user" and name else content
    return Message("user" if role == "user" else "assistant", text), estimate_tokens(text)


# A chat's window moves by a round a message, so most of its lines were made for the message
# before: remembered by what they are made of, they cost a lookup instead of being made again.
# Room for a thousand busy chats' windows; longer lines are made each time.
_remembered_line = lru_cache(maxsize=16_384)(_line)
REMEMBERED_CHARS = 120


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
    profile, rules = slots.get("profile", "").strip(), slots.get("rules", "").strip()
    by_rules = rules and slots.get("language") == LANGUAGE_BY_RULES
    language_line = (LANGUAGE_RULE_LINE if by_rules else LANGUAGE_LINE)[language]
    parts = [persona.strip(), language_line, f"Now: {now:%Y-%m-%d %H:%M %Z}"]
    if profile:
        parts.append(f"{PROFILE_TITLE}\n{profile}")
    if rules:
        parts.append(f"<behavioral_guidelines>\n{RULES_INTRO}\n{rules}\n</behavioral_guidelines>")
    system = Message("system", "\n\n".join(p for p in parts if p))
    labels = CONTEXT_LABELS[language]
    context: list[Message] = []
    for slot in ("memory", "summary"):
        text = slots.get(slot, "").strip()
        if text:
            context.append(Message("user", f"{labels[slot]}\n{text}"))
            context.append(Message("assistant", labels["ack"]))
    user_text = f"{current_name}: {current}" if is_group and current_name else current
    last = Message("user", user_text)
    used = sum(estimate_tokens(m.content) for m in (system, *context, last))
    history: list[Message] = []
    kept = 0
    eligible = [line for line in Turn.spoken(hot) if line[1] in ("user", "assistant") and line[2]]
    for _, role, content, name in reversed(eligible):
        line = _remembered_line if len(content) <= REMEMBERED_CHARS else _line
        message, cost = line(role, content, name, is_group)
        if used + cost > budget:
            break
        used += cost
        kept += 1
        history.append(message)
    history.reverse()
    return Prompt((system, *context, *history, last), used, len(eligible) - kept)
