"""What the `compress` model is asked, and how its answers are read (DESIGN §7).

Three requests, each one system message and one user message:

- `summary_request`: the warm summary so far and the rounds that left the hot window → the new
  summary (plain text).
- `roll_request`: a summary that covers `warm_capacity` rounds → JSON with the cold key facts, the
  profile bullets it shows about the person, and a shorter summary that replaces it.
- `episode_request`: a finished session (its summary and last turns) → JSON with the episode's
  summary and keywords.

Answers are model output, so nothing is trusted: a JSON answer is looked for in the text (a fenced
block, or the outermost braces), every field is checked, and what does not fit is dropped with a
reason (`Parsed.problems`); secrets are redacted before anything is kept. A summary is cut to its
bound. Transcript lines carry the speaker's name (a group has many) and the time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

from nahida.memory.core.kinds import DEFAULT, SAFE_KINDS, alternatives
from nahida.memory.core.models import PROFILE_SECTIONS, Turn
from nahida.memory.core.safety import redact
from nahida.providers.base import Message

SUMMARY_CHARS = 1200  # a warm summary longer than this is cut
FACT_CHARS = 200
EPISODE_CHARS = 600
MAX_FACTS = 12
MAX_KEYWORDS = 8
TURN_CHARS = 400  # one turn's text in a transcript
FACT_KINDS = SAFE_KINDS  # what a cold fact may be
STRONG = re.compile(
    r"记住|别忘|纠正|更正|不对|其实是|偏好|以后|remember|correct|actually|prefer", re.I
)

_SUMMARY_SYSTEM = """You keep the running summary of one conversation for an assistant's memory.
Merge the new turns into the summary so far. Keep who said what (by name), decisions, facts people
stated about themselves, open questions and commitments, with dates when given; drop small talk.
Write in the conversation's language, as short plain sentences, at most {chars} characters.
Never include passwords, keys or tokens. Answer with the updated summary only."""

_ROLL_SYSTEM = """You consolidate an assistant's working memory of one conversation.
From the summary, return JSON only, of this shape:
{{"facts": [{{"content": "...", "kind": "{kinds}", "explicit": false}}],
 "profile": [{{"section": "...", "text": "..."}}],
 "summary": "..."}}
- facts: lasting key facts worth remembering after this conversation (at most {facts}); each one
  short sentence in the conversation's language; "explicit": true only when a person asked to
  remember it, corrected something or stated a preference outright.
- profile: what the summary shows about {who} (may be empty), each bullet under one of these
  sections only: {sections}.
- summary: a shorter summary of the same conversation for what follows (at most {chars} chars).
Never include passwords, keys or tokens."""

_EPISODE_SYSTEM = """A conversation has ended. Write its episode for the assistant's memory, so it
can answer "what did we talk about last time?". Return JSON only:
{{"summary": "...", "keywords": ["...", "..."]}}
- summary: what was discussed and decided, in two to four sentences in the conversation's
  language (at most {chars} characters).
- keywords: up to {keywords} short topic words in the conversation's language.
Never include passwords, keys or tokens."""


def transcript(turns: Sequence[Turn], tz: tzinfo | None, bot: str = "assistant") -> str:
    """Turns as `[MM-DD HH:MM] name: text` lines."""
    lines = []
    for turn in turns:
        who = bot if turn.role == "assistant" else (turn.speaker_name or turn.speaker or "user")
        text = " ".join(turn.content.split())
        if len(text) > TURN_CHARS:
            text = text[: TURN_CHARS - 1] + "…"
        stamp = turn.time.astimezone(tz).strftime("%m-%d %H:%M")
        lines.append(f"[{stamp}] {who}: {text}")
    return "\n".join(lines)


def summary_request(summary: str, turns: Sequence[Turn], tz: tzinfo | None) -> tuple[Message, ...]:
    so_far = summary.strip() or "(none yet)"
    return (
        Message("system", _SUMMARY_SYSTEM.format(chars=SUMMARY_CHARS)),
        Message("user", f"Summary so far:\n{so_far}\n\nNew turns:\n{transcript(turns, tz)}"),
    )


def roll_request(
    summary: str, *, person: str | None, sections: Sequence[str]
) -> tuple[Message, ...]:
    who = f"the person ({person})" if person else "nobody in particular (leave it empty)"
    system = _ROLL_SYSTEM.format(
        facts=MAX_FACTS,
        kinds=alternatives(FACT_KINDS, quoted=False),
        who=who,
        sections=", ".join(sections),
        chars=SUMMARY_CHARS // 2,
    )
    return (Message("system", system), Message("user", f"Summary:\n{summary.strip()}"))


def episode_request(summary: str, turns: Sequence[Turn], tz: tzinfo | None) -> tuple[Message, ...]:
    system = _EPISODE_SYSTEM.format(chars=EPISODE_CHARS, keywords=MAX_KEYWORDS)
    earlier = f"Summary of the earlier part:\n{summary.strip()}\n\n" if summary.strip() else ""
    return (
        Message("system", system),
        Message("user", f"{earlier}Turns:\n{transcript(turns, tz)}"),
    )


def bounded(text: str, limit: int) -> str:
    """Model text as kept: redacted, whitespace-normalised per line, at most `limit` chars."""
    clean = "\n".join(" ".join(line.split()) for line in redact(text).strip().splitlines())
    clean = re.sub(r"\n{2,}", "\n", clean).strip()
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Fact:
    content: str
    kind: str
    explicit: bool


@dataclass(frozen=True, slots=True)
class ProfileBullet:
    section: str
    text: str


@dataclass
class Parsed:
    """What an answer held that could be used, and why the rest was dropped."""

    facts: list[Fact] = field(default_factory=list)
    profile: list[ProfileBullet] = field(default_factory=list)
    summary: str = ""
    keywords: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a model answer: a fenced block, or from the first `{` to the last `}`."""
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            found = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(found, dict):
            return found
    return None


def read_roll(text: str, sections: Sequence[str] = PROFILE_SECTIONS) -> Parsed:
    parsed = Parsed()
    data = json_object(text)
    if data is None:
        parsed.problems.append("the answer holds no JSON object")
        return parsed
    facts = data.get("facts") or []
    if not isinstance(facts, list):
        parsed.problems.append("facts is not a list")
        facts = []
    for number, fact in enumerate(facts[:MAX_FACTS], 1):
        content = fact.get("content") if isinstance(fact, dict) else None
        if not isinstance(content, str) or not content.strip():
            parsed.problems.append(f"fact {number} has no content")
            continue
        kind = fact.get("kind", "fact")
        kind = kind if kind in FACT_KINDS else DEFAULT
        explicit = fact.get("explicit") is True or STRONG.search(content) is not None
        parsed.facts.append(Fact(bounded(content, FACT_CHARS), kind, explicit))
    bullets = data.get("profile") or []
    for number, bullet in enumerate(bullets if isinstance(bullets, list) else [], 1):
        section = bullet.get("section") if isinstance(bullet, dict) else None
        words = bullet.get("text") if isinstance(bullet, dict) else None
        if not isinstance(section, str) or section not in sections or not isinstance(words, str):
            parsed.problems.append(f"profile bullet {number} has no known section or no text")
            continue
        if not words.strip():
            parsed.problems.append(f"profile bullet {number} has no known section or no text")
            continue
        parsed.profile.append(ProfileBullet(section, bounded(words, FACT_CHARS)))
    summary = data.get("summary")
    if isinstance(summary, str):
        parsed.summary = bounded(summary, SUMMARY_CHARS)
    else:
        parsed.problems.append("summary is missing")
    return parsed


def read_episode(text: str) -> Parsed:
    """An episode answer. One without a JSON object gives no summary: its text may be anything
    (a refusal, an error page, the start of a cut-off answer), not a summary to keep."""
    parsed = Parsed()
    data = json_object(text)
    if data is None:
        parsed.problems.append("the answer holds no JSON object")
        return parsed
    summary = data.get("summary")
    if isinstance(summary, str) and summary.strip():
        parsed.summary = bounded(summary, EPISODE_CHARS)
    else:
        parsed.problems.append("summary is missing")
    keywords = data.get("keywords") or []
    if isinstance(keywords, list):
        words = [bounded(k, 30) for k in keywords if isinstance(k, str) and k.strip()]
        parsed.keywords = list(dict.fromkeys(words))[:MAX_KEYWORDS]
    else:
        parsed.problems.append("keywords is not a list")
    return parsed
