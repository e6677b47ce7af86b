"""Time expressions in questions → windows relative to the question's moment, and the rest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nahida.memory.write import timeparse
from nahida.memory.write.timeparse import parse, strip

CHINA = timezone(timedelta(hours=8))
NOW = datetime(2024, 4, 10, 15, 30, tzinfo=CHINA)  # a Wednesday


def day(y: int, m: int, d: int, tz: timezone = CHINA) -> datetime:
    return datetime(y, m, d, tzinfo=tz)


def window(text: str, now: datetime = NOW) -> tuple[datetime, datetime] | None:
    found = parse(text, now).window
    return None if found is None else (found.start, found.end)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("我今天说了什么", day(2024, 4, 10), NOW),
        ("昨天聊了啥", day(2024, 4, 9), day(2024, 4, 10)),
        ("昨晚的电影", day(2024, 4, 9), day(2024, 4, 10)),
        ("前天", day(2024, 4, 8), day(2024, 4, 9)),
        ("大前天", day(2024, 4, 7), day(2024, 4, 8)),
        ("三天前说的", day(2024, 4, 7), day(2024, 4, 8)),
        ("3天前", day(2024, 4, 7), day(2024, 4, 8)),
        ("十二天前", day(2024, 3, 29), day(2024, 3, 30)),
        ("两周前的会议", day(2024, 3, 25), day(2024, 4, 1)),
        ("这周", day(2024, 4, 8), NOW),
        ("本周", day(2024, 4, 8), NOW),
        ("上周去了哪", day(2024, 4, 1), day(2024, 4, 8)),
        ("上个星期", day(2024, 4, 1), day(2024, 4, 8)),
        ("上周三", day(2024, 4, 3), day(2024, 4, 4)),
        ("上周末", day(2024, 4, 6), day(2024, 4, 8)),
        ("这个月", day(2024, 4, 1), NOW),
        ("上个月买的", day(2024, 3, 1), day(2024, 4, 1)),
        ("一个月前", day(2024, 3, 1), day(2024, 4, 1)),
        ("去年", day(2023, 1, 1), day(2024, 1, 1)),
        ("前年", day(2022, 1, 1), day(2023, 1, 1)),
        ("最近在忙什么", NOW - timedelta(days=30, hours=15, minutes=30), NOW),
        ("前几天", day(2024, 4, 3), NOW),
        ("2023年5月8日那天", day(2023, 5, 8), day(2023, 5, 9)),
        ("5月8号", day(2023, 5, 8), day(2023, 5, 9)),  # no year: the latest not after now
        ("4月1日", day(2024, 4, 1), day(2024, 4, 2)),
        ("2024-03-02", day(2024, 3, 2), day(2024, 3, 3)),
        ("2023年12月", day(2023, 12, 1), day(2024, 1, 1)),
    ],
)
def test_chinese_expressions(text: str, start: datetime, end: datetime) -> None:
    assert window(text) == (start, end)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("What did I say today?", day(2024, 4, 10), NOW),
        ("what did we talk about yesterday", day(2024, 4, 9), day(2024, 4, 10)),
        ("the day before yesterday", day(2024, 4, 8), day(2024, 4, 9)),
        ("last night", day(2024, 4, 9), day(2024, 4, 10)),
        ("3 days ago", day(2024, 4, 7), day(2024, 4, 8)),
        ("two weeks ago", day(2024, 3, 25), day(2024, 4, 1)),
        ("a month ago", day(2024, 3, 1), day(2024, 4, 1)),
        ("a few days ago", day(2024, 4, 3), NOW),
        ("this week", day(2024, 4, 8), NOW),
        ("Last week", day(2024, 4, 1), day(2024, 4, 8)),
        ("last weekend", day(2024, 4, 6), day(2024, 4, 8)),
        ("last Monday", day(2024, 4, 8), day(2024, 4, 9)),
        ("last Wednesday", day(2024, 4, 3), day(2024, 4, 4)),
        ("this month", day(2024, 4, 1), NOW),
        ("last month", day(2024, 3, 1), day(2024, 4, 1)),
        ("last year", day(2023, 1, 1), day(2024, 1, 1)),
        ("recently", NOW - timedelta(days=30, hours=15, minutes=30), NOW),
        ("on 8 May, 2023", day(2023, 5, 8), day(2023, 5, 9)),
        ("May 8th, 2023", day(2023, 5, 8), day(2023, 5, 9)),
        ("in May 2023", day(2023, 5, 1), day(2023, 6, 1)),
        ("in 2022", day(2022, 1, 1), day(2023, 1, 1)),
        ("on March 3", day(2024, 3, 3), day(2024, 3, 4)),
    ],
)
def test_english_expressions(text: str, start: datetime, end: datetime) -> None:
    assert window(text) == (start, end)


@pytest.mark.parametrize(
    "text",
    [
        "下周一晚上七点的活动",  # the future names no window of the past
        "明天去哪",
        "下个周末",
        "next week",
        "May I ask what you like?",  # "may" is not a month here
        "I have 2 cats and 3 dogs",
        "金融科技精英论坛的主要内容是什么？",
        "2月30日",  # not a date: left alone
    ],
)
def test_no_window(text: str) -> None:
    found = parse(text, NOW)
    assert found.window is None
    assert found.text == text


def test_the_words_are_stripped_from_the_text() -> None:
    assert parse("我昨天说的那家餐厅叫什么", NOW).text == "我 说的那家餐厅叫什么"
    assert strip("What did I say yesterday about the trip?", NOW) == (
        "What did I say about the trip?"
    )
    assert strip("what happened last week", NOW) == "what happened"
    assert strip("三天前", NOW) == ""


def test_days_are_calendar_days_in_the_zone_of_now() -> None:
    late_utc = datetime(2024, 4, 9, 23, 0, tzinfo=UTC)  # already the 10th in China
    assert window("yesterday", late_utc) == (day(2024, 4, 8, UTC), day(2024, 4, 9, UTC))
    in_china = late_utc.astimezone(CHINA)
    assert window("yesterday", in_china) == (day(2024, 4, 9), day(2024, 4, 10))
    with pytest.raises(ValueError):
        parse("yesterday", datetime(2024, 4, 10))  # naive: which day is it?


def test_absolute_dates_win_over_relative_ones_and_windows_join() -> None:
    found = parse("What did Joanna finish last Friday on 23 January, 2022?", NOW)
    assert found.window is not None
    assert (found.window.start, found.window.end) == (day(2022, 1, 23), day(2022, 1, 24))
    assert found.window.absolute
    assert found.text == "What did Joanna finish on ?"
    joined = parse("昨天和前天", NOW).window
    assert joined is not None
    assert (joined.start, joined.end) == (day(2024, 4, 8), day(2024, 4, 10))


def test_window_contains_is_half_open() -> None:
    found = parse("昨天", NOW).window
    assert found is not None
    start, end = found.bounds
    assert found.contains(start) and not found.contains(end)
    assert found.phrase == "昨天"


def test_month_arithmetic_crosses_years() -> None:
    january = datetime(2024, 1, 15, 9, 0, tzinfo=CHINA)
    assert window("上个月", january) == (day(2023, 12, 1), day(2024, 1, 1))
    assert window("两个月前", january) == (day(2023, 11, 1), day(2023, 12, 1))
    assert window("12月25日", january) == (day(2023, 12, 25), day(2023, 12, 26))


# The needles: a rule none of whose literals is in the text is not run -------------------------

_FRAGMENTS = [
    *("昨天", "前天", "大前天", "今晚", "今年", "去年", "前年", "最近", "这段时间", "前几天"),
    *(
        "这些天",
        "上周三",
        "这个星期",
        "本周末",
        "上个月",
        "这个月",
        "月饼",
        "3天前",
        "两个星期以前",
    ),
    *("5月4日", "2023年5月4日", "2023年5月", "2023-05-04", "2019/1/2"),
    "Yesterday",
    "last NIGHT",
    "3 weeks ago",
    "a few days ago",
    "the other day",
    "May 4, 2023",
    "4th of July 2022",
    "in 2021",
    "this past Friday",
    "Last Weekend",
    "THIS MONTH",
    "Sept. 9",
    "tonıght",
    "THİS WEEK",
    "ſeptember 3",
    "the past 5 days",
    "recently",
    "lately",
    "these days",
    "we",
    "吃饭",
    "ok",
    ".",
    "-",
    "/",
    "1",
    "20",
    "19",
    "年",
    "月",
    "日",
    "号",
    "前",
    "上",
    "周",
]


def _all_rules(text: str, now: datetime) -> list[tuple[int, int, object]]:
    """`_matches` with every rule run, whatever the text holds."""
    every = (1 << len(timeparse._RULES)) - 1
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(timeparse, "_possible", lambda text: every)
        return list(timeparse._matches(text, now))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=6), st.sampled_from(["", " ", "，"]))
def test_rules_left_out_for_want_of_a_needle_would_have_found_nothing(
    parts: list[str], glue: str
) -> None:
    text = glue.join(parts)
    assert list(timeparse._matches(text, NOW)) == _all_rules(text, NOW)


def test_the_needles_leave_most_chat_lines_to_a_few_substring_tests() -> None:
    lines = Path("tests/data/chat_lines_zh_en.txt").read_text("utf-8").splitlines()
    run = 0
    for line in lines:
        assert list(timeparse._matches(line, NOW)) == _all_rules(line, NOW), line
        run += bin(timeparse._possible(line)).count("1")
    assert run < len(lines) * len(timeparse._RULES) / 4  # most rules are never run
