"""`memory.profiles` on a real migrated SQLite: the three write modes, who may touch what, the
rules for 基础特征 and secrets, the section cap, the audit trail, and the card."""

from __future__ import annotations

import re

import pytest

from nahida.envelope import ChatKey, UserKey
from nahida.memory import (
    PROFILE_SECTIONS,
    MemoryEvent,
    MemoryService,
    ProfileChange,
    ProfileEntry,
    SecretRefused,
    Viewer,
)
from nahida.memory.core.tokenize import index_text
from nahida.memory.profiles import MAX_BULLET_CHARS, MAX_SECTION_ENTRIES, relation, words
from nahida.providers.base import estimate_tokens

ALICE = "qq:alice"
BASIC, IDENTITY, GOALS, STYLE = PROFILE_SECTIONS[:4]
DM = Viewer(ChatKey.parse("qq:private:alice"), UserKey.parse(ALICE))
GROUP = Viewer(ChatKey.parse("qq:group:g1"), UserKey.parse(ALICE))


async def texts(memory: MemoryService, public_only: bool = False) -> list[str]:
    return [e.text for e in await memory.profiles.entries(ALICE, public_only=public_only)]


async def events(memory: MemoryService, entry_id: str) -> list[MemoryEvent]:
    return await memory.store.read(lambda tx: tx.events.of_item(entry_id))


async def entry(memory: MemoryService, entry_id: str) -> ProfileEntry:
    found = await memory.store.read(lambda tx: tx.profiles.get(entry_id))
    assert found is not None
    return found


# append / overwrite --------------------------------------------------------------------------


async def test_append_adds_each_bullet_and_skips_what_is_already_there(
    memory: MemoryService,
) -> None:
    change = await memory.profiles.update(
        ALICE, STYLE, "- 喜欢简短的回答\n\n* 晚上效率高\n• 讨厌开会\n", actor="agent"
    )
    assert len(change.added) == 3 and all(re.fullmatch(r"p_[0-9a-f]{6}", i) for i in change.added)
    assert await texts(memory) == ["喜欢简短的回答", "晚上效率高", "讨厌开会"]

    again = await memory.profiles.update(
        ALICE, STYLE, "喜欢简短的回答。\n- 晚上  效率高", actor="a"
    )
    assert again.added == () and again.replaced == () and again.archived == ()
    assert set(again.unchanged) == {change.added[0], change.added[1]}
    assert "no change" not in str(again) and "already there" in str(again)
    assert await texts(memory) == ["喜欢简短的回答", "晚上效率高", "讨厌开会"]


async def test_overwrite_archives_the_section_then_adds(memory: MemoryService) -> None:
    first = await memory.profiles.update(ALICE, GOALS, "想学日语\n想换工作", actor="a")
    await memory.profiles.update(ALICE, IDENTITY, "在杭州做设计", actor="a")
    change = await memory.profiles.update(ALICE, GOALS, "想去读研", mode="overwrite", actor="a")
    assert set(change.archived) == set(first.added) and len(change.added) == 1
    assert await texts(memory) == ["在杭州做设计", "想去读研"]
    assert (await entry(memory, first.added[0])).status == "archived"


async def test_a_public_overwrite_touches_only_public_bullets(memory: MemoryService) -> None:
    private = await memory.profiles.update(ALICE, GOALS, "想离职创业", actor="a")
    public = await memory.profiles.update(
        ALICE, GOALS, "想学吉他", sensitivity="public", chat="qq:group:g1", actor="a"
    )
    change = await memory.profiles.update(
        ALICE, GOALS, "想跑半马", mode="overwrite", sensitivity="public", actor="a"
    )
    assert change.archived == public.added
    assert await texts(memory) == ["想离职创业", "想跑半马"]
    assert (await entry(memory, private.added[0])).status == "active"


# merge ---------------------------------------------------------------------------------------


async def test_merge_replaces_a_contradicting_bullet(memory: MemoryService) -> None:
    old = await memory.profiles.update(ALICE, STYLE, "喜欢早起\n喜欢喝茶", actor="a")
    change = await memory.profiles.update(ALICE, STYLE, "不喜欢早起", mode="merge", actor="a")
    (replaced,) = change.replaced
    assert replaced[0] == old.added[0] and change.added == ()
    assert await texts(memory) == ["喜欢喝茶", "不喜欢早起"]
    archive = (await events(memory, old.added[0]))[-1]
    assert (archive.action, archive.reason) == (
        "archive",
        f"replaced by {replaced[1]}: contradicts it",
    )
    (create,) = await events(memory, replaced[1])
    assert (
        create.action == "replace" and create.reason == f"replaces {old.added[0]}: contradicts it"
    )
    assert create.before is not None and create.before["text"] == "喜欢早起"
    assert create.after is not None and create.after["text"] == "不喜欢早起"
    assert f"replaced {old.added[0]} with {replaced[1]}" in change.summary()


async def test_merge_replaces_a_similar_bullet_and_adds_a_new_one(memory: MemoryService) -> None:
    old = await memory.profiles.update(ALICE, IDENTITY, "后端工程师，住在北京", actor="a")
    change = await memory.profiles.update(
        ALICE, IDENTITY, "是一名后端工程师，在北京工作\n养了一只猫", mode="merge", actor="a"
    )
    assert [r[0] for r in change.replaced] == list(old.added) and len(change.added) == 1
    assert await texts(memory) == ["是一名后端工程师，在北京工作", "养了一只猫"]
    (event,) = await events(memory, change.replaced[0][1])
    assert event.reason is not None and event.reason.startswith(f"replaces {old.added[0]}: similar")


async def test_merges_of_the_same_point_never_pile_up(memory: MemoryService) -> None:
    said = ["喜欢早起", "不喜欢早起", "喜欢早起跑步", "不再喜欢早起", "喜欢早起。", "没有喜欢早起"]
    for text in said:
        await memory.profiles.update(ALICE, STYLE, text, mode="merge", actor="a")
        assert len(await texts(memory)) == 1, text
    assert await texts(memory) == ["没有喜欢早起"]


async def test_a_public_merge_never_replaces_a_private_bullet(memory: MemoryService) -> None:
    private = await memory.profiles.update(ALICE, STYLE, "喜欢早起", actor="a")
    change = await memory.profiles.update(
        ALICE, STYLE, "不喜欢早起", mode="merge", sensitivity="public", actor="a"
    )
    assert change.replaced == () and len(change.added) == 1
    assert (await entry(memory, private.added[0])).status == "active"
    assert await texts(memory, public_only=True) == ["不喜欢早起"]
    # a private merge sees both, and replaces the one closest
    later = await memory.profiles.update(ALICE, STYLE, "非常喜欢早起", mode="merge", actor="a")
    assert len(later.replaced) == 1


def test_a_negation_is_a_contradiction_even_where_the_words_barely_overlap() -> None:
    new, old = words(index_text("从不 不再 早起")), words(index_text("早起"))
    assert relation(new, old) == (1.0, "contradicts it")
    assert relation(words(index_text("喜欢猫")), words(index_text("喜欢狗"))) is None
    assert relation(frozenset(), old) is None


# what may not be written ---------------------------------------------------------------------


async def test_basic_traits_are_written_only_when_stated(memory: MemoryService) -> None:
    with pytest.raises(ValueError, match="基础特征 is only written when the person states it"):
        await memory.profiles.update(ALICE, BASIC, "大概三十岁", actor="a", inferred=True)
    assert await texts(memory) == []
    await memory.profiles.update(ALICE, BASIC, "28 岁", actor="a", source="user_explicit")
    await memory.profiles.update(ALICE, GOALS, "似乎想换工作", actor="a", inferred=True)
    assert await texts(memory) == ["28 岁", "似乎想换工作"]


@pytest.mark.parametrize(
    ("section", "text", "message"),
    [
        (
            "爱好",
            "喜欢猫",
            "unknown profile section '爱好'; the sections are: 基础特征, 身份与背景",
        ),
        (STYLE, " \n- \n", "the profile text is empty"),
        (STYLE, "短\n" + "长" * (MAX_BULLET_CHARS + 1), f"over the {MAX_BULLET_CHARS} allowed"),
        (STYLE, "\n".join(f"点{n}" for n in range(MAX_SECTION_ENTRIES + 1)), "at most 20"),
    ],
)
async def test_a_bad_write_says_why_and_stores_nothing(
    memory: MemoryService, section: str, text: str, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        await memory.profiles.update(ALICE, section, text, actor="a")
    assert await texts(memory) == []


async def test_a_bad_mode_sensitivity_or_user_is_refused(memory: MemoryService) -> None:
    with pytest.raises(ValueError, match="append, overwrite or merge"):
        await memory.profiles.update(ALICE, STYLE, "x", mode="replace", actor="a")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="public or private"):
        await memory.profiles.update(ALICE, STYLE, "x", sensitivity="group", actor="a")
    with pytest.raises(ValueError, match="platform:user_id"):
        await memory.profiles.update("alice", STYLE, "x", actor="a")


async def test_a_secret_never_enters_a_profile(memory: MemoryService) -> None:
    text = "喜欢简短\n- 我的 key 是 sk-proj-abcdefghijklmnopqrstuvwxyz123456"
    with pytest.raises(SecretRefused):
        await memory.profiles.update(ALICE, STYLE, text, mode="merge", actor="a")
    assert await texts(memory) == []
    assert await memory.profiles.users() == []


# the cap and the audit trail -------------------------------------------------------------------


async def test_a_section_keeps_at_most_twenty_bullets_archiving_the_oldest(
    memory: MemoryService,
) -> None:
    first = await memory.profiles.update(
        ALICE, GOALS, "\n".join(f"目标{n:02d}" for n in range(18)), actor="a"
    )
    change = await memory.profiles.update(
        ALICE, GOALS, "\n".join(f"计划{n:02d}" for n in range(5)), actor="a"
    )
    assert len(change.added) == 5 and change.archived == first.added[:3]
    kept = await texts(memory)
    assert len(kept) == MAX_SECTION_ENTRIES and kept[0] == "目标03" and kept[-1] == "计划04"
    (created, archived) = await events(memory, first.added[0])
    assert created.action == "create" and archived.action == "archive"
    assert archived.reason == "the section keeps at most 20 bullets"
    assert archived.before is not None and archived.before["status"] == "active"
    assert archived.after is not None and archived.after["status"] == "archived"
    # nothing is deleted: the archived bullets are all still there
    every = await memory.store.read(lambda tx: [tx.profiles.get(i) for i in first.added])
    assert all(e is not None for e in every)


async def test_every_write_is_audited_with_its_actor(memory: MemoryService) -> None:
    change = await memory.profiles.update(
        ALICE,
        IDENTITY,
        "在杭州做设计",
        sensitivity="public",
        source="user_explicit",
        chat="qq:group:g1",
        actor="qq:alice",
    )
    (event,) = await events(memory, change.added[0])
    assert (event.action, event.actor, event.before) == ("create", "qq:alice", None)
    assert event.after == {
        "user": ALICE,
        "section": IDENTITY,
        "text": "在杭州做设计",
        "sensitivity": "public",
        "source": "user_explicit",
        "chat": "qq:group:g1",
        "status": "active",
    }


# reading: entries, card, forget, users ---------------------------------------------------------


async def test_entries_come_in_section_order_then_age(memory: MemoryService) -> None:
    await memory.profiles.update(ALICE, STYLE, "晚上效率高", actor="a")
    await memory.profiles.update(ALICE, BASIC, "28 岁", actor="a")
    await memory.profiles.update(ALICE, STYLE, "讨厌开会", sensitivity="public", actor="a")
    await memory.profiles.update(ALICE, IDENTITY, "设计师", actor="a")
    assert await texts(memory) == ["28 岁", "设计师", "晚上效率高", "讨厌开会"]
    assert await texts(memory, public_only=True) == ["讨厌开会"]


async def test_the_card_shows_sections_in_order_and_a_group_only_the_public_part(
    memory: MemoryService,
) -> None:
    assert await memory.profiles.card(DM) is None
    await memory.profiles.update(ALICE, STYLE, "晚上效率高", sensitivity="public", actor="a")
    await memory.profiles.update(ALICE, BASIC, "正在备孕", actor="a")  # private
    await memory.profiles.update(ALICE, STYLE, "讨厌开会", actor="a")  # private
    card = await memory.profiles.card(DM)
    assert card == "### 基础特征\n- 正在备孕\n\n### 工作与沟通方式\n- 晚上效率高\n- 讨厌开会"
    assert await memory.profiles.card(GROUP) == "### 工作与沟通方式\n- 晚上效率高"
    bob_in_group = Viewer(ChatKey.parse("qq:group:g1"), UserKey.parse("qq:bob"))
    assert await memory.profiles.card(bob_in_group) is None
    assert await memory.profiles.card(Viewer(scopes=("global",))) is None
    # a viewer without a chat (the CLI) sees a profile only when it names the person's scope
    alice = UserKey.parse(ALICE)
    assert await memory.profiles.card(Viewer(user=alice, scopes=("global",))) is None
    assert await memory.profiles.card(Viewer(user=alice, scopes=(f"user:{ALICE}",))) == card


async def test_a_group_card_of_only_private_bullets_is_none(memory: MemoryService) -> None:
    await memory.profiles.update(ALICE, BASIC, "正在备孕", actor="a")
    assert await memory.profiles.card(GROUP) is None
    assert await memory.profiles.card(DM) is not None


async def test_the_card_stays_within_its_budget_and_says_what_it_left_out(
    memory: MemoryService,
) -> None:
    for section in PROFILE_SECTIONS[1:]:
        bullets = [f"{section}的第{n}条：" + "这是一段比较长的描述" * 3 for n in range(6)]
        await memory.profiles.update(ALICE, section, "\n".join(bullets), actor="a")
    full = await memory.profiles.card(DM, budget_tokens=100_000)
    assert full is not None and "left out" not in full and full.count("\n- ") == 36
    for budget in (60, 150, 400):
        card = await memory.profiles.card(DM, budget_tokens=budget)
        assert card is not None and estimate_tokens(card) <= budget, budget
        shown = card.count("- ")
        found = re.search(r"\((\d+) more profile bullets left out\)$", card)
        assert found and int(found.group(1)) == 36 - shown, card
        assert card.startswith("### 身份与背景\n- ")


async def test_public_and_private_twins_show_once(memory: MemoryService) -> None:
    await memory.profiles.update(ALICE, STYLE, "讨厌开会", actor="a")
    await memory.profiles.update(ALICE, STYLE, "讨厌开会", sensitivity="public", actor="a")
    assert await memory.profiles.card(DM) == "### 工作与沟通方式\n- 讨厌开会"


async def test_forget_section_archives_it_audited(memory: MemoryService) -> None:
    private = await memory.profiles.update(ALICE, STYLE, "晚上效率高\n讨厌开会", actor="a")
    public = await memory.profiles.update(ALICE, STYLE, "爱喝咖啡", sensitivity="public", actor="a")
    await memory.profiles.update(ALICE, GOALS, "想学日语", actor="a")
    assert await memory.profiles.forget_section(ALICE, STYLE, actor="g", public_only=True) == 1
    assert (await events(memory, public.added[0]))[-1].reason == "forgotten"
    assert await texts(memory) == ["想学日语", "晚上效率高", "讨厌开会"]
    assert await memory.profiles.forget_section(ALICE, STYLE, actor="qq:alice") == 2
    assert (await events(memory, private.added[1]))[-1].actor == "qq:alice"
    assert await texts(memory) == ["想学日语"]
    assert await memory.profiles.forget_section(ALICE, STYLE, actor="qq:alice") == 0
    with pytest.raises(ValueError, match="the sections are"):
        await memory.profiles.forget_section(ALICE, "爱好", actor="qq:alice")


async def test_users_are_the_people_with_an_active_profile(memory: MemoryService) -> None:
    await memory.profiles.update("qq:bob", GOALS, "想学日语", actor="a")
    await memory.profiles.update(ALICE, GOALS, "想换工作", actor="a")
    await memory.profiles.update("qq:carol", GOALS, "想读研", actor="a")
    await memory.profiles.forget_section("qq:carol", GOALS, actor="a")
    assert await memory.profiles.users() == [ALICE, "qq:bob"]


def test_a_change_reads_as_one_line_for_the_model() -> None:
    change = ProfileChange(("p_1",), (("p_2", "p_3"),), ("p_4",), ("p_5",), STYLE)
    assert str(change) == (
        "profile section 工作与沟通方式: added p_1; replaced p_2 with p_3; archived p_4;"
        " already there: p_5"
    )
    assert ProfileChange().summary() == "profile: no change"
