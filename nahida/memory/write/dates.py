"""The day (and time) a statement about the future names: "提醒我明天下午三点开会", "下周三去上海".

`timeparse` reads the past windows a question asks about; this module reads the future a task or
plan is set for, so that the memory keeps the resolved date beside the words: next month
"下周三" still means the day it meant when it was said. Relative to `now` (aware; its zone decides
where days begin):

Day: 今天 今晚 明天 明早 明晚 后天 大后天 · N天后 · 下周三 / 这周五 / 周六 (the next one) ·
下个月5号 · 5月8日 · 8号 · today, tonight, tomorrow, the day after tomorrow, in 3 days,
(next) Monday, on Friday. Time: 早上/上午/中午/下午/晚上 + 3点 / 3点半 / 3点15 / 15:30 · at 3pm,
3:30 pm, 15:00. A time alone ("下午三点") is today's, or tomorrow's once it has passed. What
recurs (每周五, every Friday, 周五交周报, on Saturdays) names no one day, and gets none: it gets
its recurrence in words instead ("每周五", "每天 08:00", "every Monday 10:00", `recurrence`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from nahida.memory.write.timeparse import WEEKDAYS_CN, WEEKDAYS_EN, cn_number

_NUM = r"[0-9]{1,2}|[一二两三四五六七八九十]{1,3}"


@dataclass(frozen=True, slots=True)
class Due:
    """The day a statement names, and the time of day when it names one."""

    day: date
    at: time | None
    phrase: str

    def moment(self, now: datetime) -> datetime:
        """When it is due, in `now`'s zone (the end of the day when no time was named)."""
        if self.at is not None:
            return datetime.combine(self.day, self.at, now.tzinfo)
        return datetime.combine(self.day + timedelta(days=1), time(0), now.tzinfo)

    def label(self) -> str:
        """`2026-12-09 周三 15:00`, or `2026-12-09 Wed 15:00` when it was said in English: how
        the memory shows it, in the words' language."""
        if _CJK.search(self.phrase):
            weekday = "周" + "一二三四五六日"[self.day.weekday()]
        else:
            weekday = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[self.day.weekday()]
        clock = f" {self.at:%H:%M}" if self.at is not None else ""
        return f"{self.day:%Y-%m-%d} {weekday}{clock}"


_CJK = re.compile(r"[\u3400-\u9fff]")


_DAY_CN = re.compile(
    r"(?P<rel>大后天|后天|明天|明儿|明早|明晚|今天|今晚|今早)"
    rf"|(?P<n>{_NUM})天(?:后|以后|之后)"
    r"|(?<!每)(?P<next>下下?个?|这个?|本)?(?<!每)(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"
    rf"|(?P<nm>下个?月)(?P<md>{_NUM})[号日]"
    rf"|(?:(?P<m>{_NUM})月)?(?P<d>{_NUM})[号日]"
)
_TIME_CN = re.compile(
    r"(?P<part>凌晨|早上|早晨|上午|中午|下午|傍晚|晚上|今晚|明晚|明早)?"
    rf"(?P<h>{_NUM})[点时](?:(?P<half>半)|(?P<min>[0-9]{{1,2}}|[一二三四五]?十[一二三四五六七八九]?)分?)?"
)
_DAY_EN = re.compile(
    r"\b(?P<rel>today|tonight|tomorrow|the day after tomorrow)\b"
    r"|\bin (?P<n>\d{1,2}|a|one|two|three|four|five|six|seven) days?\b"
    r"|\b(?<!every )(?<!each )(?P<next>next |this |on )?"
    r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    re.IGNORECASE,
)
_TIME_EN = re.compile(
    r"\bat (?P<h>\d{1,2})(?::(?P<min>\d{2}))? ?(?P<ampm>am|pm|a\.m\.|p\.m\.)?\b"
    r"|\b(?P<h2>\d{1,2}):(?P<min2>\d{2})\b|\b(?P<h3>\d{1,2}) ?(?P<ampm3>am|pm)\b",
    re.IGNORECASE,
)
_EN_N = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_EVENING = ("下午", "傍晚", "晚上", "今晚", "明晚")


def _upcoming(today: date, weekday: int, next_week: bool) -> date:
    if next_week:  # in the calendar week after this one (weeks start on Monday)
        return today - timedelta(days=today.weekday()) + timedelta(days=7 + weekday)
    ahead = (weekday - today.weekday()) % 7
    return today + timedelta(days=ahead or 7)


def _day_cn(match: re.Match[str], today: date) -> date | None:
    rel = match["rel"]
    if rel:
        offset = {"今": 0, "明": 1, "后": 2, "大": 3}[rel[0]]
        return today + timedelta(days=offset)
    if match["n"]:
        return today + timedelta(days=cn_number(match["n"]))
    if match["wd"]:
        prefix = match["next"] or ""
        day = _upcoming(today, WEEKDAYS_CN[match["wd"]], prefix.startswith("下"))
        if prefix.startswith("下下"):
            day += timedelta(days=7)
        if prefix[:1] in ("这", "本"):
            day = today - timedelta(days=today.weekday()) + timedelta(days=WEEKDAYS_CN[match["wd"]])
        return day
    if match["nm"]:
        month = today.month % 12 + 1
        year = today.year + (today.month == 12)
        return _safe(year, month, cn_number(match["md"]))
    day_of_month = cn_number(match["d"])
    if match["m"]:
        found = _safe(today.year, cn_number(match["m"]), day_of_month)
        if found is not None and found < today:
            found = _safe(today.year + 1, cn_number(match["m"]), day_of_month)
        return found
    found = _safe(today.year, today.month, day_of_month)
    if found is not None and found < today:  # "8号" after the 8th: next month's
        month = today.month % 12 + 1
        found = _safe(today.year + (today.month == 12), month, day_of_month)
    return found


def _safe(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _time_cn(match: re.Match[str]) -> time | None:
    hour = cn_number(match["h"])
    minute = 30 if match["half"] else (cn_number(match["min"]) if match["min"] else 0)
    part = match["part"] or ""
    if (part in _EVENING and hour < 12) or (part == "中午" and hour < 6):
        hour += 12
    if hour > 23 or minute > 59:
        return None
    return time(hour, minute)


def _day_en(match: re.Match[str], today: date) -> date:
    rel = (match["rel"] or "").lower()
    if rel in ("today", "tonight"):
        return today
    if rel == "tomorrow":
        return today + timedelta(days=1)
    if rel:
        return today + timedelta(days=2)
    if match["n"]:
        n = match["n"].lower()
        return today + timedelta(days=int(n) if n.isdigit() else _EN_N[n])
    weekday = WEEKDAYS_EN.index(match["wd"].lower())
    return _upcoming(today, weekday, (match["next"] or "").lower().startswith("next"))


def _time_en(match: re.Match[str]) -> time | None:
    hour_text = match["h"] or match["h2"] or match["h3"]
    minute = int(match["min"] or match["min2"] or 0)
    ampm = (match["ampm"] or match["ampm3"] or "").lower().replace(".", "")
    hour = int(hour_text)
    if ampm == "pm" and hour < 12:
        hour += 12
    elif ampm == "am" and hour == 12:
        hour = 0
    if hour > 23 or minute > 59:
        return None
    return time(hour, minute)


_RECURRING = re.compile(
    r"每(?:天|日|周|星期|礼拜|个?月|年|晚|早)|\b(?:every|each)\b|\bdaily\b", re.I
)
# What recurs, and how the memory shows it ("每周五", "every Monday"): a period with 每/every, a
# weekday said plainly of a habit ("周五交周报", "本群周五下午发周报": a weekly thing, "周五都…",
# "平时周六…"), a plural weekday ("on Saturdays"). A weekday with 这/下/本/上 is one day.
_PERIOD_CN = re.compile(
    r"(?:每逢?|逢)(?:个)?(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"
    rf"|每个?月(?P<md>{_NUM})[号日]"
    r"|(?P<unit>每天|每日|天天|每晚|每早|每个?工作日|工作日|每周|每星期|每礼拜|每个?月|每年)"
)
_WEEKLY_CN = r"周报|周会|例会|晨会|站会|组会|双周会|值班|轮值|周例会"
_HABIT_CN = re.compile(
    r"(?<![这下本上每逢])(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])(?=[^，。！？；\n]*(?:"
    + _WEEKLY_CN
    + r"))"
    r"|(?<![这下本上每逢])(?:周|星期|礼拜)(?P<wd2>[一二三四五六日天])(?:早上|上午|中午|下午|晚上)?都"
    r"|(?:通常|一般|平时|固定|总是|向来|照例|习惯)[^，。！？；\n]{0,6}?(?<![这下本上每逢])"
    r"(?:周|星期|礼拜)(?P<wd3>[一二三四五六日天])"
)
_PERIOD_EN = re.compile(
    r"\b(?:every|each)\s+(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
    r"|\b(?:on\s+)?(?P<wds>monday|tuesday|wednesday|thursday|friday|saturday|sunday)s\b"
    r"|\b(?P<day>daily|every\s+(?:day|morning|evening|night|weekday)|each\s+day)\b"
    r"|\b(?P<week>weekly|every\s+week)\b|\b(?P<month>monthly|every\s+month)\b",
    re.I,
)
_UNITS_CN = {"每天": "每天", "每日": "每天", "天天": "每天", "每晚": "每天", "每早": "每天"}
_UNITS_CN |= {"每星期": "每周", "每礼拜": "每周", "每个月": "每月", "每个工作日": "工作日"}
_UNITS_CN |= {"每工作日": "工作日"}


def recurrence(text: str) -> str | None:
    """How often `text` says something recurs, as the memory shows it: "每周五", "每天 08:00",
    "每月5号", "every Monday 10:00"; None for what happens once (or recurs in words not read)."""
    clock = None
    if (label := _recurs_cn(text)) is not None:
        found = _TIME_CN.search(text)
        if found is not None and (found["part"] or found["h"].isdigit()):  # not "快一点"
            clock = _time_cn(found)
    elif (label := _recurs_en(text)) is not None:
        found_en = _TIME_EN.search(text)
        clock = _time_en(found_en) if found_en is not None else None
    if label is None:
        return None
    return f"{label} {clock:%H:%M}" if clock is not None else label


def _recurs_cn(text: str) -> str | None:
    if (found := _PERIOD_CN.search(text)) is not None:
        if found["wd"]:
            return "每周" + found["wd"].replace("天", "日")
        if found["md"]:
            return f"每月{cn_number(found['md'])}号"
        return _UNITS_CN.get(found["unit"], found["unit"])
    if (habit := _HABIT_CN.search(text)) is not None:
        return "每周" + (habit["wd"] or habit["wd2"] or habit["wd3"]).replace("天", "日")
    return None


def _recurs_en(text: str) -> str | None:
    found = _PERIOD_EN.search(text)
    if found is None:
        return None
    weekday = found["wd"] or found["wds"]
    if weekday:
        return f"every {weekday.capitalize()}"
    return "every day" if found["day"] else "every week" if found["week"] else "every month"


def due(text: str, now: datetime) -> Due | None:
    """The future day (and time) `text` names relative to `now`, or None (also for what recurs:
    "每周五", "周五交周报", "every morning" name no one day: `recurrence`)."""
    if _RECURRING.search(text) or recurrence(text) is not None:
        return None
    today = now.date()
    day: date | None = None
    at: time | None = None
    phrases: list[str] = []
    if (found := _DAY_CN.search(text)) is not None:
        day = _day_cn(found, today)
        phrases.append(found.group(0))
    elif (found_en := _DAY_EN.search(text)) is not None:
        day = _day_en(found_en, today)
        phrases.append(found_en.group(0))
    clock = _TIME_CN.search(text)
    if clock is not None and not (clock["part"] or clock["h"].isdigit() or day is not None):
        clock = None  # "快一点" is "a little faster", not one o'clock
    if clock is not None:
        at = _time_cn(clock)
        phrases.append(clock.group(0))
        if day is None and (clock["part"] or "").startswith("明"):
            day = today + timedelta(days=1)
    elif (clock_en := _TIME_EN.search(text)) is not None:
        at = _time_en(clock_en)
        phrases.append(clock_en.group(0))
    if day is None and at is not None:  # a time alone: today's, or tomorrow's once passed
        day = today if at > now.time() else today + timedelta(days=1)
    if day is None or day < today:
        return None
    return Due(day, at, " ".join(dict.fromkeys(phrases)))
