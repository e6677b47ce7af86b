"""A generated block inside a Markdown file people edit (DESIGN §9): between two marker comments,
headings (`### <group>`) over bullets that carry their record's id (`- [m_7f3a2c] text`); a bullet
without an id is one an admin added. Everything outside the markers is the admins' own and is
kept byte for byte.

`parse` reads a block strictly: a missing or doubled marker, a heading of an unknown group, a
line that is not a bullet, a bullet before any heading, an id written twice — each is a problem
with its line number, and a caller applies nothing from a block with problems. `diff` compares
the bullets with what the block showed when it was last written (the snapshot).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

_BULLET = re.compile(r"^[-*]\s+(?:\[(?P<id>[a-z]_[0-9a-f]{6})\]\s*)?(?P<text>.*?)\s*$")
_HEADING = re.compile(r"^#{2,4}\s+(?P<group>.+?)\s*$")
_COMMENT = re.compile(r"^<!--.*-->$")

Snapshot = Mapping[str, Mapping[str, str]]  # id → {"group": …, "text": …}


@dataclass(frozen=True, slots=True)
class Bullet:
    line: int  # 1-based, in the whole file
    group: str
    id: str | None
    text: str


@dataclass
class Block:
    bullets: list[Bullet] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (line, what is wrong)
    found: bool = False  # both markers were there


@dataclass
class Changes:
    edited: list[tuple[Bullet, str]] = field(default_factory=list)  # (bullet, text it had)
    moved: list[tuple[Bullet, str]] = field(default_factory=list)  # (bullet, group it had)
    deleted: list[str] = field(default_factory=list)  # ids
    added: list[Bullet] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.edited or self.moved or self.deleted or self.added)


def flat(text: str) -> str:
    """A record's text as one bullet line."""
    return " ".join(text.split())


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse(text: str, begin: str, end: str, groups: Collection[str]) -> Block:
    block = Block()
    lines = text.splitlines()
    starts = [n for n, line in enumerate(lines, 1) if line.strip() == begin]
    ends = [n for n, line in enumerate(lines, 1) if line.strip() == end]
    if not starts and not ends:
        return block  # no block yet: it is added at the end when first written
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        where = (starts or ends)[0]
        block.problems.append((where, f"the block needs one {begin} and, after it, one {end}"))
        return block
    block.found = True
    group: str | None = None
    seen: set[str] = set()
    for number in range(starts[0] + 1, ends[0]):
        line = lines[number - 1].strip()
        if not line or _COMMENT.match(line):
            continue
        heading = _HEADING.match(line)
        if heading:
            group = heading["group"]
            if group not in groups:
                block.problems.append((number, f"unknown heading {group!r}"))
            continue
        bullet = _BULLET.match(line)
        if bullet is None:
            block.problems.append((number, "not a bullet (`- text`, or `- [id] text`)"))
            continue
        if group is None:
            block.problems.append((number, "a bullet before any heading"))
            continue
        item_id, words = bullet["id"], bullet["text"]
        if item_id is not None and item_id in seen:
            block.problems.append((number, f"{item_id} is there twice"))
            continue
        if item_id is not None:
            seen.add(item_id)
        if not words and item_id is None:
            continue  # an empty "- ": nothing
        block.bullets.append(Bullet(number, group, item_id, words))
    return block


def diff(bullets: Sequence[Bullet], baseline: Snapshot) -> Changes:
    """What the admin changed against `baseline` (ids the file names → what they were). An id
    of the baseline missing from the file was deleted; a bullet without id was added."""
    changes = Changes()
    named = {b.id for b in bullets if b.id is not None}
    for bullet in bullets:
        if bullet.id is None:
            changes.added.append(bullet)
            continue
        was = baseline[bullet.id]
        if bullet.text != was["text"]:
            changes.edited.append((bullet, was["text"]))
        elif bullet.group != was["group"]:
            changes.moved.append((bullet, was["group"]))
    changes.deleted = [i for i in baseline if i not in named]
    return changes


def render(groups: Sequence[tuple[str, Sequence[tuple[str, str]]]], note: str = "") -> str:
    """The block's body: each group's heading and its (id, text) bullets; `note` (a comment
    line, e.g. how many were left out) last."""
    lines: list[str] = []
    for group, bullets in groups:
        if not bullets:
            continue
        lines.append(f"\n### {group}\n")
        lines.extend(f"- [{i}] {flat(t)}" for i, t in bullets)
    if note:
        lines.append(f"\n<!-- {note} -->")
    return "\n".join(lines).lstrip("\n")


def replace(text: str, begin: str, end: str, body: str) -> str:
    """`text` with the block between the markers set to `body`; without markers, the block is
    appended at the end. Nothing outside the markers changes."""
    inner = f"{begin}\n{body}\n{end}" if body else f"{begin}\n{end}"
    first = re.search(rf"^[ \t]*{re.escape(begin)}[ \t\r]*$", text, re.MULTILINE)
    if first is None:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return f"{text}{sep}{inner}\n"
    last = re.compile(rf"^[ \t]*{re.escape(end)}[ \t\r]*$", re.MULTILINE).search(text, first.end())
    assert last is not None, "parse() found the block well formed first"
    return text[: first.start()] + inner + text[last.end() :]
