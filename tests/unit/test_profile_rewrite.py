"""`memory.profiles.rewrite_section` over the reference store: an admin's text in place of a
section's bullets, taken as an edit of the person's profile file is, audited as the admin's."""

from __future__ import annotations

import pytest

from nahida.envelope import ChatKey, Role
from nahida.memory import (
    PROFILE_SECTIONS,
    Actor,
    MemoryPermissionError,
    MemoryService,
    ProfileChange,
    SecretRefused,
)
from nahida.memory.store.reference import ReferenceStore

ADMIN = Actor("console:ann", is_bot_admin=True)
ALICE = "qq:alice"
STYLE = PROFILE_SECTIONS[3]
KEY = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"


@pytest.fixture
async def memory() -> MemoryService:
    memory = MemoryService(ReferenceStore())
    await memory.profiles.update(ALICE, STYLE, "喜欢简短的回答\n讨厌开会", actor="agent")
    await memory.profiles.update(
        ALICE, STYLE, "晚上效率高", actor="agent", sensitivity="public", chat="qq:group:1"
    )
    return memory


async def section(memory: MemoryService) -> list[tuple[str, str, str]]:
    entries = await memory.profiles.entries(ALICE, public_only=False)
    return [(e.text, e.sensitivity, e.source) for e in entries if e.section == STYLE]


async def test_the_admins_text_becomes_the_section(memory: MemoryService) -> None:
    before = {e.text: e.id for e in await memory.profiles.entries(ALICE, public_only=False)}
    change = await memory.profiles.rewrite_section(
        ALICE, STYLE, "- 喜欢简短的回答\n- 晚上效率不高\n- 喜欢用表格", actor=ADMIN
    )
    assert change.unchanged == (before["喜欢简短的回答"],)
    ((old, new),) = change.replaced
    assert old == before["晚上效率高"]
    assert change.archived == (before["讨厌开会"],)
    assert len(change.added) == 1 and change.section == STYLE
    assert await section(memory) == [
        ("喜欢简短的回答", "private", "agent_proactive"),
        ("晚上效率不高", "public", "human_edit"),  # it keeps the sensitivity of what it replaces
        ("喜欢用表格", "private", "human_edit"),
    ]
    trail = await memory.profiles.why(new, None)
    assert trail is not None
    assert [(e.action, e.actor) for e in trail.events] == [("replace", "console:ann")]
    assert trail.events[0].before is not None and trail.events[0].before["text"] == "晚上效率高"
    gone = await memory.profiles.why(before["讨厌开会"], None)
    assert gone is not None and gone.entry.status == "archived"
    assert (gone.events[-1].action, gone.events[-1].actor) == ("archive", "console:ann")


async def test_the_same_text_changes_nothing(memory: MemoryService) -> None:
    change = await memory.profiles.rewrite_section(
        ALICE, STYLE, "喜欢简短的回答\n讨厌开会\n晚上效率高\n讨厌开会", actor=ADMIN
    )
    assert (change.added, change.replaced, change.archived) == ((), (), ())
    assert len(change.unchanged) == 3


async def test_an_empty_text_empties_the_section(memory: MemoryService) -> None:
    change = await memory.profiles.rewrite_section(ALICE, STYLE, "\n", actor=Actor.cli())
    assert len(change.archived) == 3 and await section(memory) == []
    assert change == ProfileChange(archived=change.archived, section=STYLE)


async def test_what_a_section_rewrite_refuses(memory: MemoryService) -> None:
    owner = Actor("qq:olga", ChatKey.parse("qq:group:1"), Role.OWNER)
    for actor in (owner, Actor(ALICE), Actor("system")):
        with pytest.raises(MemoryPermissionError):
            await memory.profiles.rewrite_section(ALICE, STYLE, "x", actor=actor)
    with pytest.raises(SecretRefused):
        await memory.profiles.rewrite_section(ALICE, STYLE, f"key {KEY}", actor=ADMIN)
    with pytest.raises(ValueError, match="unknown profile section"):
        await memory.profiles.rewrite_section(ALICE, "爱好", "x", actor=ADMIN)
    with pytest.raises(ValueError, match="characters"):
        await memory.profiles.rewrite_section(ALICE, STYLE, "长" * 400, actor=ADMIN)
    with pytest.raises(ValueError, match="sensitivity"):
        await memory.profiles.rewrite_section(ALICE, STYLE, "x", actor=ADMIN, sensitivity="x")
    assert len(await section(memory)) == 3
