"""`/profile` chat commands on a real migrated SQLite: only the sender's own profile, and in a
group only its public part."""

from __future__ import annotations

import pytest

from nahida.commands import profile as profile_commands
from nahida.commands.router import CommandContext, CommandRouter
from nahida.i18n import Language, t
from nahida.memory import PROFILE_SECTIONS, MemoryService
from tests.helpers import envelope

ALICE, BOB = "test:alice", "test:bob"
ALICE_DM, GROUP = "test:private:alice", "test:group:g1"
SECTIONS = "、".join(PROFILE_SECTIONS)
STYLE, PROMISES = "工作与沟通方式", "与 Agent 的约定"


class Chat:
    """Sends `/profile ...` as someone, somewhere, through the real router."""

    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory
        self.router = CommandRouter()
        profile_commands.register(self.router)

    async def __call__(
        self, text: str, *, user: str = ALICE, chat: str = ALICE_DM, lang: Language = "zh"
    ) -> str:
        ctx = CommandContext(envelope(text, chat=chat, user=user), lang, False, self.memory)
        return await self.router.dispatch(ctx, text)


@pytest.fixture
async def chat(memory: MemoryService) -> Chat:
    profiles = memory.profiles
    await profiles.update(ALICE, STYLE, "讨厌开会", sensitivity="public", actor="a")
    await profiles.update(ALICE, "基础特征", "正在备孕", actor="a")
    await profiles.update(ALICE, STYLE, "晚上效率高", actor="a")
    await profiles.update(BOB, STYLE, "鲍勃的秘密习惯", actor="a")
    await profiles.update(BOB, STYLE, "鲍勃爱喝咖啡", sensitivity="public", actor="a")
    return Chat(memory)


async def test_in_a_private_chat_the_whole_own_profile(chat: Chat) -> None:
    assert await chat("/profile") == "\n".join(
        [
            t("profile_header", "zh"),
            "### 基础特征",
            "- 正在备孕",
            f"### {STYLE}",
            "- 讨厌开会",
            "- 晚上效率高",
        ]
    )


async def test_in_a_group_only_the_public_part_and_never_anyone_elses(chat: Chat) -> None:
    reply = await chat("/profile", chat=GROUP)
    assert reply == "\n".join(
        [t("profile_header", "zh"), f"### {STYLE}", "- 讨厌开会", t("profile_private_hint", "zh")]
    )
    bob = await chat("/profile", user=BOB, chat=GROUP, lang="en")
    assert "鲍勃爱喝咖啡" in bob and "鲍勃的秘密习惯" not in bob and "讨厌开会" not in bob
    assert bob.endswith(t("profile_private_hint", "en"))


async def test_an_empty_profile_says_so(chat: Chat) -> None:
    assert await chat("/profile", user="test:carol", chat="test:private:carol") == t(
        "profile_empty", "zh"
    )
    assert await chat("/profile", user="test:carol", chat=GROUP, lang="en") == "\n".join(
        [t("profile_empty", "en"), t("profile_private_hint", "en")]
    )


async def test_forget_in_a_group_archives_only_the_public_part(chat: Chat) -> None:
    reply = await chat(f"/profile forget {STYLE}", chat=GROUP)
    assert reply == t("profile_forgotten", "zh", section=STYLE, n=1)
    assert [e.text for e in await chat.memory.profiles.entries(ALICE, public_only=False)] == [
        "正在备孕",
        "晚上效率高",
    ]
    again = await chat(f"/profile forget {STYLE}", chat=GROUP, lang="en")
    assert again == t("profile_forget_none", "en", section=STYLE)
    assert [e.text for e in await chat.memory.profiles.entries(BOB, public_only=False)] == [
        "鲍勃的秘密习惯",
        "鲍勃爱喝咖啡",
    ]


async def test_forget_in_a_private_chat_archives_the_whole_section(chat: Chat) -> None:
    assert await chat(f"/profile forget {STYLE}") == t(
        "profile_forgotten", "zh", section=STYLE, n=2
    )
    assert await chat("/profile") == "\n".join(
        [t("profile_header", "zh"), "### 基础特征", "- 正在备孕"]
    )


async def test_a_section_may_be_typed_without_its_spaces(chat: Chat) -> None:
    await chat.memory.profiles.update(ALICE, PROMISES, "叫我小艾", actor="a")
    reply = await chat("/profile forget 与agent的约定", lang="en")
    assert reply == t("profile_forgotten", "en", section=PROMISES, n=1)


async def test_an_unknown_section_or_bad_usage_says_what_there_is(chat: Chat) -> None:
    assert await chat("/profile forget 爱好") == t(
        "profile_unknown_section", "zh", name="爱好", sections=SECTIONS
    )
    usage = t("profile_usage", "en", sections=SECTIONS)
    assert await chat("/profile help", lang="en") == usage
    assert await chat("/profile forget", lang="en") == usage
    assert (
        "基础特征" in usage
        and len(await chat.memory.profiles.entries(ALICE, public_only=False)) == 3
    )


async def test_help_lists_the_command(chat: Chat) -> None:
    assert f"/profile — {t('cmd_profile', 'en')}" in await chat("/help", lang="en")


async def test_a_long_profile_is_shown_in_part(memory: MemoryService) -> None:
    bullets = "\n".join(f"习惯{n}" for n in range(20))
    for section in ("身份与背景", "目标与方向"):
        await memory.profiles.update(ALICE, section, bullets, actor="a")
    reply = await Chat(memory)("/profile")
    assert sum(1 for line in reply.splitlines() if line.startswith("- ")) == 30
    assert reply.endswith(t("profile_more", "zh", n=10))
