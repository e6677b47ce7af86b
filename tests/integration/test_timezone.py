"""`bot.timezone`: prompts, command times and the dates a plan or task names."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from nahida.config import Config
from nahida.errors import ConfigError
from nahida.memory import Viewer
from nahida.memory.write.dates import due
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import History, chat_through_console, config, openai_provider

SHANGHAI = ZoneInfo("Asia/Shanghai")


def test_the_zone_is_checked_and_defaults_to_the_systems() -> None:
    assert Config().bot.zone().utcoffset(datetime.now()) == datetime.now().astimezone().utcoffset()
    assert config(bot={"timezone": "Asia/Shanghai"}).bot.zone() == SHANGHAI
    with pytest.raises((ConfigError, ValueError), match="unknown time zone"):
        config(bot={"timezone": "Mars/Olympus"})


async def test_prompt_and_commands_speak_the_bots_time(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url), bot={"timezone": "Asia/Shanghai"})
    before = datetime.now(SHANGHAI)
    out, _ = await chat_through_console(tmp_path, ["你好", "/sessions"], cfg)
    system = openai_server.requests[0].body["messages"][0]["content"]
    now = datetime.now(SHANGHAI)
    stamp = re.search(r"Now: (\d{4}-\d{2}-\d{2} \d{2}:\d{2}) (\S+)", system)
    assert stamp is not None and stamp.group(2) == "CST"
    shown = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=SHANGHAI)
    assert abs(shown - now) < timedelta(minutes=2)  # eight hours ahead of UTC, not UTC
    listed = [line for line in out.splitlines() if line.startswith("s_")]
    assert any(f"{t:%m-%d %H:}" in listed[0] for t in (before, now))  # an hour may turn between


async def test_a_task_and_a_plan_keep_their_resolved_dates(tmp_path: Path) -> None:
    cfg = config(bot={"timezone": "Asia/Shanghai"})
    await chat_through_console(
        tmp_path, ["提醒我明天下午三点开会", "/memory remember 我下周三要去上海出差"], cfg
    )
    now = datetime.now(SHANGHAI)
    with History(tmp_path / "data" / "nahida.db") as db:
        items = {i.kind: i for i in db.items(Viewer(scopes=("user:console:local",)))}
    task = items["task"]
    tomorrow = (now + timedelta(days=1)).date()
    assert task.title.startswith(f"{tomorrow:%Y-%m-%d}") and task.title.endswith("15:00")
    assert (
        task.valid_until
        == datetime(tomorrow.year, tomorrow.month, tomorrow.day, 15, tzinfo=SHANGHAI).timestamp()
    )
    (plan,) = [i for i in items.values() if "上海" in i.content]
    wednesday = now.date() - timedelta(days=now.weekday()) + timedelta(days=9)
    assert plan.content == "我下周三要去上海出差"  # the words stay
    assert plan.title == f"{wednesday:%Y-%m-%d} 周三"
    assert datetime.fromtimestamp(plan.valid_from or 0, SHANGHAI).date() == wednesday


def test_dates_in_words() -> None:
    now = datetime(2026, 12, 1, 10, 0, tzinfo=SHANGHAI)  # a Tuesday
    cases = {
        "提醒我明天下午三点开会": "2026-12-02 周三 15:00",
        "下周三去上海出差": "2026-12-09 周三",
        "周六去爬山": "2026-12-05 周六",
        "提醒我晚上8点半吃药": "2026-12-01 周二 20:30",
        "下个月5号交房租": "2027-01-05 周二",
        "3号交报告": "2026-12-03 周四",
        "remind me tomorrow at 3pm to call mom": "2026-12-02 Wed 15:00",
        "in 3 days": "2026-12-04 Fri",
        "三天后": "2026-12-04 周五",
        "后天上午10点": "2026-12-03 周四 10:00",
    }
    assert {text: (d.label() if (d := due(text, now)) else None) for text in cases} == cases
    for text in ("快一点", "我喜欢乌龙茶", "每周五下午三点开组会", "every monday standup"):
        assert due(text, now) is None, text
