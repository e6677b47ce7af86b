"""Time expressions in a question (Chinese and English) → a time window, and the text without them.

`parse("我昨天说了什么", now)` gives the window of yesterday (whole days in the time zone of `now`)
and the text "我说了什么". Recognised, relative to `now` (the moment the question is asked):

Day: 今天 今早 今晚 昨天 昨晚 前天 大前天 · today, tonight, this morning, yesterday, last night,
the day before yesterday. N back: 三天前 两周前 一个月前 两年前 · 3 days ago, two weeks ago.
Week: 这周 本周 上周 上星期 上周三 这周末 上周末 · this week, last week, last weekend, last Monday.
Month and year: 这个月 上个月 今年 去年 前年 · this month, last month, this year, last year.
Vague: 这几天 前几天 (7 days), 最近 近来 近期 (30 days) · the other day, a few days ago, the past
few days (7 days), recently, lately (30 days). Absolute: 2023年5月8日 5月8号 2023-05-08 2023年5月 ·
8 May 2023, May 8th, 2023, May 2023, in 2022.

A date without a year is the latest such date not after `now`. Future expressions (明天, 下周,
next week) name no window of the past and are left in the text. When several expressions are found,
absolute dates win over relative ones; windows of the same kind are joined. Windows are half-open
`[start, end)` and never end after `now`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from nahida.memory.write.needles import Prefilter, ones

__all__ = ["Parsed", "TimeWindow", "parse", "strip"]


@dataclass(frozen=True, slots=True)
class TimeWindow:
    start: datetime
    end: datetime  # exclusive
    phrase: str  # the words that named it
    absolute: bool = False

    @property
    def bounds(self) -> tuple[float, float]:
        return self.start.timestamp(), self.end.timestamp()

    def contains(self, epoch: float) -> bool:
        start, end = self.bounds
        return start <= epoch < end


@dataclass(frozen=True, slots=True)
class Parsed:
    window: TimeWindow | None
    text: str  # the question without its time expressions


_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "俩": 2, "三": 3, "四": 4, "五": 5}
_CN_DIGITS |= {"六": 6, "七": 7, "八": 8, "九": 9}
_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}
_MONTHS = {
    name: n
    for n, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
WEEKDAYS_EN = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
WEEKDAYS_CN = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}


def cn_number(text: str) -> int:
    """1–99 written in digits or Chinese numerals (三, 十二, 二十五, 两)."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, units = text.partition("十")
        return (_CN_DIGITS.get(tens, 1) if tens else 1) * 10 + (_CN_DIGITS[units] if units else 0)
    return _CN_DIGITS[text]


def _en_number(text: str) -> int:
    text = " ".join(text.lower().split())
    return int(text) if text.isdigit() else _EN_NUMBERS[text]


# calendar helpers: every window is built from whole days in the time zone of `now` -------------


def _day(now: datetime, back: int = 0) -> tuple[datetime, datetime]:
    start = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=back)
    return start, start + timedelta(days=1)


def _week(now: datetime, back: int = 0) -> tuple[datetime, datetime]:
    today, _ = _day(now)
    start = today - timedelta(days=today.weekday() + 7 * back)
    return start, start + timedelta(days=7)


def _weekend(now: datetime, back: int) -> tuple[datetime, datetime]:
    start, end = _week(now, back)
    return start + timedelta(days=5), end


def _weekday(now: datetime, weekday: int, back_weeks: int | None) -> tuple[datetime, datetime]:
    """That weekday in the week `back_weeks` ago, or (None) the latest one before today."""
    if back_weeks is None:
        today, _ = _day(now)
        days = (today.weekday() - weekday) % 7 or 7
        return _day(now, days)
    start, _ = _week(now, back_weeks)
    day = start + timedelta(days=weekday)
    return day, day + timedelta(days=1)


def _month_at(index: int, like: datetime) -> datetime:
    """The first moment of month number `index` (year * 12 + month - 1), in like's zone."""
    year, month = divmod(index, 12)
    return like.replace(
        year=year, month=month + 1, day=1, hour=0, minute=0, second=0, microsecond=0
    )


def _month(now: datetime, back: int = 0) -> tuple[datetime, datetime]:
    index = now.year * 12 + now.month - 1 - back
    return _month_at(index, now), _month_at(index + 1, now)


def _year(now: datetime, back: int = 0, year: int | None = None) -> tuple[datetime, datetime]:
    year = now.year - back if year is None else year
    start = now.replace(year=year, month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    return start, start.replace(year=year + 1)


def _last_days(now: datetime, days: int) -> tuple[datetime, datetime]:
    start, _ = _day(now, days)
    return start, now


def _date(
    now: datetime, year: int | None, month: int, day: int | None
) -> tuple[datetime, datetime]:
    """A calendar day (a month when `day` is None); without a year, the latest not after now."""
    for candidate in [year] if year is not None else [now.year, now.year - 1]:
        if day is None:
            index = candidate * 12 + month - 1
            if not 1 <= month <= 12:
                raise ValueError("no such month")
            start, end = _month_at(index, now), _month_at(index + 1, now)
        else:
            start = now.replace(
                year=candidate, month=month, day=day, hour=0, minute=0, second=0, microsecond=0
            )
            end = start + timedelta(days=1)
        if year is not None or start <= now:
            return start, end
    raise ValueError("no such date")


# the patterns ---------------------------------------------------------------------------------

Window = Callable[[re.Match[str], datetime], tuple[datetime, datetime]]
# A compiled pattern, its window, and whether it names a date. A rule is run only when the text
# holds one of the literals its every match holds (`needles.Prefilter`): most texts name no
# time, so 45 regex scans become a few substring tests.
Rule = tuple[re.Pattern[str], Window, bool]

_CN_NUM = r"(\d{1,2}|[一二两俩三四五六七八九十]{1,3})"
_EN_NUM = (
    r"(\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|a couple of|a few|few|several)"
)
_EN_MONTH = r"(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_EN_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_EN_WEEKDAY = r"(" + "|".join(WEEKDAYS_EN) + r")"
_YEAR = r"((?:19|20)\d{2})"

_UNITS_CN = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month"}
_UNITS_CN |= {"年": "year"}


def _back(unit: str, n: int, now: datetime) -> tuple[datetime, datetime]:
    if unit.startswith("day"):
        return _day(now, n)
    if unit.startswith("week"):
        return _week(now, n)
    if unit.startswith("month"):
        return _month(now, n)
    return _year(now, n)


def _rules() -> list[Rule]:
    cn: list[tuple[str, Window, bool]] = [
        (
            _YEAR + r"\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]",
            lambda m, now: _date(now, int(m[1]), int(m[2]), int(m[3])),
            True,
        ),
        (
            _YEAR + r"[-/.](\d{1,2})[-/.](\d{1,2})",
            lambda m, now: _date(now, int(m[1]), int(m[2]), int(m[3])),
            True,
        ),
        (
            _YEAR + r"\s*年\s*(\d{1,2})\s*月(?!\s*\d)",
            lambda m, now: _date(now, int(m[1]), int(m[2]), None),
            True,
        ),
        (
            r"(?<![\d年])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]",
            lambda m, now: _date(now, None, int(m[1]), int(m[2])),
            True,
        ),
        (
            _CN_NUM + r"\s*(?:个)?\s*(天|日|周|星期|礼拜|月|年)(?:以前|之前|前)",
            lambda m, now: _back(_UNITS_CN[m[2]], cn_number(m[1]), now),
            False,
        ),
        (
            r"前几天|几天前|这几天|这些天|近几天|最近几天",
            lambda m, now: _last_days(now, 7),
            False,
        ),
        (r"大前天", lambda m, now: _day(now, 3), False),
        (r"前天|前日", lambda m, now: _day(now, 2), False),
        (r"昨天|昨日|昨儿|昨晚|昨夜|昨早", lambda m, now: _day(now, 1), False),
        (r"今天|今日|今儿|今早|今晚|今夜|今晨", lambda m, now: _day(now), False),
        (
            r"最近|近来|近期|这段时间",
            lambda m, now: _last_days(now, 30),
            False,
        ),
        (
            r"上(?:个)?(?:周|星期|礼拜)([一二三四五六日天])",
            lambda m, now: _weekday(now, WEEKDAYS_CN[m[1]], 1),
            False,
        ),
        (
            r"(?:这|本)(?:个)?(?:周|星期|礼拜)([一二三四五六日天])",
            lambda m, now: _weekday(now, WEEKDAYS_CN[m[1]], 0),
            False,
        ),
        (r"上(?:个)?(?:周末|星期天?末|礼拜末)", lambda m, now: _weekend(now, 1), False),
        (r"(?<![上下个])(?:这个?|本)?周末", lambda m, now: _weekend(now, 0), False),
        (r"上(?:个)?(?:周|星期|礼拜)", lambda m, now: _week(now, 1), False),
        (
            r"(?:这|本)(?:个)?(?:周|星期|礼拜)",
            lambda m, now: _week(now, 0),
            False,
        ),
        (r"上(?:个)?月", lambda m, now: _month(now, 1), False),
        (r"(?:这|本)(?:个)?月(?![饼亮光])", lambda m, now: _month(now, 0), False),
        (r"前年", lambda m, now: _year(now, 2), False),
        (r"去年", lambda m, now: _year(now, 1), False),
        (r"今年", lambda m, now: _year(now, 0), False),
    ]
    en: list[tuple[str, Window, bool]] = [
        (
            _EN_DAY + r"(?:\s+of)?\s+" + _EN_MONTH + r",?\s+" + _YEAR,
            lambda m, now: _date(now, int(m[3]), _MONTHS[m[2].lower()], int(m[1])),
            True,
        ),
        (
            _EN_MONTH + r"\s+" + _EN_DAY + r",?\s+" + _YEAR,
            lambda m, now: _date(now, int(m[3]), _MONTHS[m[1].lower()], int(m[2])),
            True,
        ),
        (
            _EN_MONTH + r",?\s+" + _YEAR,
            lambda m, now: _date(now, int(m[2]), _MONTHS[m[1].lower()], None),
            True,
        ),
        (
            _EN_DAY + r"(?:\s+of)?\s+" + _EN_MONTH + r"(?![a-z])",
            lambda m, now: _date(now, None, _MONTHS[m[2].lower()], int(m[1])),
            True,
        ),
        (
            _EN_MONTH + r"\s+" + _EN_DAY + r"(?![\d:])",
            lambda m, now: _date(now, None, _MONTHS[m[1].lower()], int(m[2])),
            True,
        ),
        (
            r"(?:the\s+)?day\s+before\s+yesterday",
            lambda m, now: _day(now, 2),
            False,
        ),
        (r"yesterday|last\s+night", lambda m, now: _day(now, 1), False),
        (
            r"today|tonight|this\s+(?:morning|afternoon|evening)",
            lambda m, now: _day(now),
            False,
        ),
        (
            r"(?:a\s+)?(?:few|couple\s+of|several)\s+days\s+ago",
            lambda m, now: _last_days(now, 7),
            False,
        ),
        (
            _EN_NUM + r"\s+(days?|weeks?|months?|years?)\s+ago",
            lambda m, now: _back(m[2].lower(), _en_number(m[1]), now),
            False,
        ),
        (
            r"(?:in\s+)?the\s+(?:past|last)\s+" + _EN_NUM + r"\s+days",
            lambda m, now: _last_days(now, _en_number(m[1])),
            False,
        ),
        (
            r"the\s+other\s+day|(?:in\s+)?the\s+(?:past|last)\s+(?:few|couple\s+of)\s+days",
            lambda m, now: _last_days(now, 7),
            False,
        ),
        (
            r"recently|lately|these\s+days",
            lambda m, now: _last_days(now, 30),
            False,
        ),
        (r"last\s+weekend", lambda m, now: _weekend(now, 1), False),
        (r"this\s+weekend", lambda m, now: _weekend(now, 0), False),
        (
            r"(?:last|this\s+past)\s+" + _EN_WEEKDAY,
            lambda m, now: _weekday(now, WEEKDAYS_EN.index(m[1].lower()), None),
            False,
        ),
        (r"(?:last|past)\s+week", lambda m, now: _week(now, 1), False),
        (r"this\s+week", lambda m, now: _week(now, 0), False),
        (r"last\s+month", lambda m, now: _month(now, 1), False),
        (r"this\s+month", lambda m, now: _month(now, 0), False),
        (r"last\s+year", lambda m, now: _year(now, 1), False),
        (r"this\s+year", lambda m, now: _year(now, 0), False),
        (r"\bin\s+" + _YEAR + r"(?!\d)", lambda m, now: _year(now, 0, int(m[1])), True),
    ]
    rules: list[Rule] = [(re.compile(p), fn, a) for p, fn, a in cn]
    rules += [
        (re.compile(r"(?<![a-z0-9])(?:" + p + r")(?![a-z0-9])", re.IGNORECASE), fn, a)
        for p, fn, a in en
    ]
    return rules


_RULES = _rules()


@functools.cache
def _prefilter() -> Prefilter:
    return Prefilter((pattern.pattern, pattern.flags) for pattern, *_ in _RULES)


def warm_up() -> None:
    """The prefilter built now (~4 ms), not by the first query or message that needs it."""
    _prefilter()


def _possible(text: str) -> int:
    """The rules (bit i: `_RULES[i]`) that may match in `text`."""
    return _prefilter().possible(text)


def _matches(text: str, now: datetime) -> Iterator[tuple[int, int, TimeWindow]]:
    """Non-overlapping expressions, earlier rules first (they are the more specific)."""
    taken: list[tuple[int, int]] = []
    for index in ones(_possible(text)):  # the rules whose literals are in the text
        pattern, window_of, absolute = _RULES[index]
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < e and s < end for s, e in taken):
                continue
            try:
                begin, finish = window_of(match, now)
            except (ValueError, KeyError, OverflowError):
                continue  # "2月30日", a month 13: not a date, leave the words alone
            taken.append((start, end))
            finish = min(finish, now) if begin < now else finish
            yield start, end, TimeWindow(begin, finish, match.group(0), absolute)


def parse(text: str, now: datetime) -> Parsed:
    """The window the question's time expressions name (None if none) and the rest of the text.

    `now` must be timezone-aware: "yesterday" is the calendar day before now's, in now's zone.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    found = sorted(_matches(text, now), key=lambda m: m[0])
    if not found:
        return Parsed(None, text)
    windows = [w for _, _, w in found]
    chosen = [w for w in windows if w.absolute] or windows
    window = TimeWindow(
        min(w.start for w in chosen),
        max(w.end for w in chosen),
        " ".join(w.phrase for w in chosen),
        chosen[0].absolute,
    )
    pieces, last = [], 0
    for start, end, _ in found:
        pieces.append(text[last:start])
        last = end
    pieces.append(text[last:])
    return Parsed(window, " ".join(" ".join(pieces).split()) if pieces else text)


def strip(text: str, now: datetime) -> str:
    """The text without its time expressions."""
    return parse(text, now).text
