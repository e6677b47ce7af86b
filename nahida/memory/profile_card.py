"""The profile card: a person's bullets as the system prompt shows them (`Profiles.card`), in
section order within a token budget, and whose card a viewer sees.

A person's agreements with the bot are shown without their links and contacts (as a person's own
rule is, `quotes.rule_text`); a bullet that reads as an instruction to the model is quoted and
marked, as memory lines are.
"""

from __future__ import annotations

import unicodedata

from nahida.memory.core.models import PROFILE_SECTIONS, ProfileEntry
from nahida.memory.core.scopes import Viewer, user_scope
from nahida.memory.recall import quotes
from nahida.providers.base import estimate_tokens

_TRAILING = "。.!;,、"  # after NFKC: full-width stops are ASCII


def normalised(text: str) -> str:
    """What counts as the same bullet: width, case, spacing and a closing stop aside."""
    return "".join(unicodedata.normalize("NFKC", text).casefold().split()).rstrip(_TRAILING)


def in_order(entries: list[ProfileEntry]) -> list[ProfileEntry]:
    """Section order of `PROFILE_SECTIONS` (then oldest first, as the store gives them)."""
    rank = {s: n for n, s in enumerate(PROFILE_SECTIONS)}
    return sorted(entries, key=lambda e: rank.get(e.section, len(rank)))


def left_out_line(n: int) -> str:
    return f"({n} more profile bullets left out)"


def render(entries: list[ProfileEntry], budget_tokens: int) -> str:
    """`### section` headings with `- bullet` lines, within `budget_tokens`; when bullets are
    cut, a last line says how many. A bullet that does not fit is left out, shorter ones after
    it may still fit. Bullets saying the same thing (public and private twins) show once."""
    seen: set[str] = set()
    unique = []
    for entry in entries:
        if (key := normalised(entry.text)) not in seen:
            seen.add(key)
            unique.append(entry)
    full, _ = _lines(unique, None)
    if estimate_tokens("\n".join(full)) <= budget_tokens:
        return "\n".join(full)
    room = budget_tokens - estimate_tokens("\n" + left_out_line(len(unique)))
    lines, shown = _lines(unique, room)
    return "\n".join([*lines, left_out_line(len(unique) - shown)])


AGREEMENTS = "与 Agent 的约定"  # the person's rules for the bot, in their own words
BULLET_CHARS = 300


def bullet_text(entry: ProfileEntry) -> str:
    """A bullet as the card shows it: a person's agreements with the bot without their links and
    contacts (as a person's own rule, `quotes.rule_text`); words that read as an instruction to
    the model quoted and marked, as memory lines are."""
    text = quotes.without_links(entry.text) if entry.section == AGREEMENTS else entry.text
    if quotes.reads_as_instruction(entry.text):
        return f"({quotes.MARK}) {quotes.quoted(text, BULLET_CHARS)}"
    return text


def _lines(entries: list[ProfileEntry], room: int | None) -> tuple[list[str], int]:
    """The card's lines (within `room` tokens, if given) and how many bullets they hold."""
    lines: list[str] = []
    used = shown = 0
    section = None
    for entry in entries:
        new = [f"### {entry.section}"] if entry.section != section else []
        if new and lines:
            new.insert(0, "")
        new.append(f"- {bullet_text(entry)}")
        cost = estimate_tokens("\n" + "\n".join(new))
        if room is not None and used + cost > room:
            continue
        lines.extend(new)
        used += cost
        shown += 1
        section = entry.section
    return lines, shown


def card_of(viewer: Viewer) -> tuple[str, bool] | None:
    """Whose profile the viewer's card shows, and whether only its public bullets: the person of
    `viewer.person` as far as the viewer sees their scope; None for nobody."""
    person = viewer.person
    if person is None:
        return None
    visibility = viewer.visibility()
    scope = user_scope(person)
    if scope not in visibility.full and scope not in visibility.public_only:
        return None
    return str(person), scope not in visibility.full


def card_text(entries: list[ProfileEntry], budget_tokens: int) -> str | None:
    """`render` of a person's bullets as the store gives them, or None when there are none."""
    return render(in_order(entries), budget_tokens) if entries else None
