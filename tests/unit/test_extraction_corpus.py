"""Extraction against the hand-labelled corpus (tests/data/extraction_corpus.jsonl, scored by
scripts/eval_extract.py), and the phrasings people were seen to use, through the write path:
"以后回答我都用英文", "我对花生过敏", "我不吃香菜", "我现在不喜欢红茶，喜欢绿茶"."""

from __future__ import annotations

import pytest

from nahida.memory.core.kinds import KINDS
from nahida.memory.write.statements import slot_for, statements
from tests.helpers import script

# The floors sit a little below what the corpus measured when each part was written (the
# figures are in docs/rules.md), so a few new misses or false ones fail.
FLOORS = {"all": (0.97, 0.91), "zh": (0.97, 0.89), "en": (0.97, 0.95), "rules": (0.97, 0.95)}


ev = script("eval_extract")


def read(text: str) -> list[tuple[str, str, str | None]]:
    return [(s.kind, s.content, s.slot) for s in statements(text)]


# --- the corpus ------------------------------------------------------------------------------


def test_the_corpus_is_well_formed() -> None:
    lines = ev.load()
    assert len(lines) >= 100
    assert len({line.text for line in lines}) == len(lines), "a text appears twice"
    empty = [line for line in lines if not line.expect]
    assert len(empty) >= 30
    langs = [line.lang for line in lines]
    assert langs.count("zh") > langs.count("en") >= 30  # Chinese the majority, both present
    assert {"zh", "en"} <= {line.lang for line in empty}
    for line in lines:
        for item in line.expect:
            assert item.kind in KINDS, (line.number, item)
            assert item.contents and all(c.strip() for c in item.contents), line.number
            assert item.slot is None or item.slot.strip() == item.slot != "", line.number


def test_matching_normalises_spacing_punctuation_and_particles() -> None:
    assert ev.normalise("喜欢用 Vim！") == ev.normalise("喜欢用vim") == "喜欢用vim"
    assert ev.normalise("老家是湖南的") == ev.normalise("老家是湖南")
    assert ev.normalise("doesn't eat pork.") == "doesnteatpork"
    line = ev.Line(1, "x", (ev.Item("preference", ("喜欢红茶",)),))
    wrong_kind = ev.score(line, [ev.Item("fact", ("喜欢红茶",))])
    assert (len(wrong_kind.missed), len(wrong_kind.false)) == (1, 1)
    right = ev.score(line, [ev.Item("preference", ("喜欢红茶。",))])
    assert (len(right.matched), right.missed, right.false) == (1, [], [])


def test_precision_and_recall_stay_above_their_floors() -> None:
    outcomes, groups, _ = ev.evaluate(ev.load())
    got = {name: (round(t.precision, 3), round(t.recall, 3)) for name, t in groups.items()}
    for name, (precision, recall) in FLOORS.items():
        assert got[name][0] >= precision and got[name][1] >= recall, (
            name,
            got,
            ev.details(outcomes),
        )
    quiet = [o for o in outcomes if not o.line.expect]
    noisy = [o.line.text for o in quiet if o.predicted]
    assert len(noisy) <= len(quiet) // 30, noisy  # lines that ask for nothing stay quiet


# --- the phrasings people use -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("以后回答我都用英文", [("procedure", "希望用英文回答", "reply:language")]),
        ("以后用中文回答我就行", [("procedure", "希望用中文回答", "reply:language")]),
        ("能不能以后都用中文回答我？", [("procedure", "希望用中文回答", "reply:language")]),
        (
            "from now on answer me in English",
            [("procedure", "wants answers in English", "reply:language")],
        ),
        (
            "From now on, answer me in English.",
            [("procedure", "wants answers in English", "reply:language")],
        ),
        ("我对花生过敏", [("fact", "对花生过敏", "allergy:花生")]),
        ("我海鲜过敏", [("fact", "对海鲜过敏", "allergy:海鲜")]),
        ("我对花生不过敏了", [("fact", "对花生不过敏", "allergy:花生")]),
        ("I'm allergic to peanuts", [("fact", "allergic to peanuts", "allergy:peanuts")]),
        ("我不吃香菜", [("preference", "不吃香菜", "pref:香菜")]),
        ("I don't eat cilantro", [("preference", "doesn't eat cilantro", "pref:cilantro")]),
        (
            "我现在不喜欢红茶，喜欢绿茶",
            [("preference", "不喜欢红茶", "pref:红茶"), ("preference", "喜欢绿茶", "pref:绿茶")],
        ),
        # and the other common phrasings
        ("我在腾讯工作", [("fact", "在腾讯工作", "workplace")]),
        ("我是一名护士", [("fact", "是护士", "job")]),
        ("I work as a nurse", [("fact", "works as a nurse", "job")]),
        ("I'm a nurse", [("fact", "is a nurse", "job")]),
        ("我养了一只猫", [("fact", "养了一只猫", "pet:猫")]),
        ("我最近在学吉他", [("fact", "在学吉他", "learning:吉他")]),
        ("我是3月5号生日", [("fact", "生日是3月5号", "birthday")]),
        ("my favourite food is hotpot", [("preference", "favourite food is hotpot", "fav:food")]),
        ("叫我小北就行", [("preference", "希望被叫作小北", "nickname")]),
        (
            "我是杭州人，现在在上海工作",
            [("fact", "是杭州人", "hometown"), ("fact", "在上海工作", "workplace")],
        ),
    ],
)
def test_the_phrasings_people_use(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert read(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "用英文回答我：什么是闭包？",  # one answer, not a lasting wish
        "用英文回答我",
        "他说他对花生过敏",  # someone else
        "我老婆对花生过敏",
        "她不吃香菜",
        "他喜欢红茶，喜欢绿茶",  # no first person to carry
        "我不吃了，饱了",
        "叫我起床的闹钟又没响",
        "I'm a bit tired today",
        "call me when you land",
    ],
)
def test_what_the_new_rules_leave_alone(text: str) -> None:
    assert read(text) == []


def test_a_clause_after_a_pet_is_about_the_pet() -> None:
    assert read("我养了一只猫，喜欢晒太阳") == [("fact", "养了一只猫", "pet:猫")]
    assert read("我叫小雨，住在成都，平时喜欢爬山") == [
        ("fact", "名字是小雨", "name"),
        ("fact", "住在成都", "home"),
        ("preference", "喜欢爬山", "pref:爬山"),
    ]


def test_the_decisions_of_the_chat_stay_decisions() -> None:
    """Without a lasting word after the trigger it stays a decision; without "me" a rule of
    how to answer is the chat's behavioural rule."""
    assert read("从现在起，用英文回答我") == [("decision", "从现在起，用英文回答我", None)]
    assert read("From now on, answer in English.") == [
        ("procedure", "answer in English", "reply:language")
    ]
    assert read("以后回复都用英文") == [("procedure", "用英文回答", "reply:language")]
    assert read("不要用韩语") == [("procedure", "不要用韩语回答", "reply:avoid:韩语")]
    assert read("以后我们每周五开会") == [("decision", "以后我们每周五开会", None)]


def test_diet_and_likes_share_a_slot() -> None:
    assert (
        slot_for("我不吃香菜") == slot_for("我喜欢吃香菜") == slot_for("我讨厌香菜") == "pref:香菜"
    )
    assert slot_for("我不能吃辣") == slot_for("我喜欢吃辣") == slot_for("我吃不了辣") == "pref:吃辣"
    assert slot_for("I don't eat cilantro") == slot_for("I love eating cilantro") == "pref:cilantro"
    assert slot_for("以后回答我都用英文") == slot_for("以后用中文回答我") == "reply:language"
    assert slot_for("from now on answer me in English") == "reply:language"
