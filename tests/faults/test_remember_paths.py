"""One path for what people ask to keep: `nahida memory remember` (the CLI's real entry point),
`/memory remember` in chat and "记住…"/"提醒我…" said in a message keep the same memory — the
trigger left out, the day resolved — and a habit ("本群周五下午发周报", "每周一例会", "每天早上8点
提醒我喝水") is kept as recurring, never pinned to one day."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from nahida.envelope import ChatKey, UserKey
from nahida.memory import MemoryItem, Viewer
from nahida.memory.write import candidates, dates
from tests.helpers import History, chat_through_console, config

ROOT = str(Path(__file__).resolve().parents[2])
SHANGHAI = ZoneInfo("Asia/Shanghai")
ME = "console:private:local"
GROUP = "console:group:g1"


async def nahida(cwd: Path, *args: str) -> tuple[int, str, str]:
    """The installed entry point, as scripts run it (`python -m nahida`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NAHIDA", "OPENAI"))}
    env["PYTHONPATH"] = ROOT
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nahida", "--config", str(cwd / "nahida.yaml"), *args, cwd=cwd,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


def items_of(db_dir: Path, scope: str) -> list[MemoryItem]:
    with History(db_dir / "nahida.db") as db:
        return db.items(Viewer(scopes=(scope,)))


def kept(item: MemoryItem) -> tuple[str, str, str, float | None]:
    return item.kind, item.content, item.title, item.valid_until


SAID = ["提醒我明天下午三点开会", "记住我下周三要去上海出差", "记住我叫小明"]


async def test_the_cli_the_chat_command_and_words_in_chat_keep_the_same_memory(
    tmp_path: Path,
) -> None:
    (tmp_path / "nahida.yaml").write_text("bot:\n  timezone: Asia/Shanghai\n", "utf-8")
    cfg = config(bot={"timezone": "Asia/Shanghai"})
    cli, command, words = [], [], []
    for n, text in enumerate(SAID):
        code, out, err = await nahida(
            tmp_path, "--data-dir", f"cli{n}", "memory", "remember", text, "--chat", ME, "--json"
        )
        assert code == 0, err
        (item,) = items_of(tmp_path / f"cli{n}", "user:console:local")
        assert json.loads(out)["title"] == item.title  # the CLI says when, as it keeps it
        cli.append(kept(item))
        await chat_through_console(tmp_path / f"cmd{n}", [f"/memory remember {text}"], cfg)
        (item,) = items_of(tmp_path / f"cmd{n}" / "data", "user:console:local")
        command.append(kept(item))
        await chat_through_console(tmp_path / f"say{n}", [text], cfg)
        (item,) = items_of(tmp_path / f"say{n}" / "data", "user:console:local")
        words.append(kept(item))
    assert cli == command == words
    task, plan, name = cli
    assert task[:2] == ("task", "明天下午三点开会") and task[2].endswith("15:00")  # no "提醒我"
    assert plan[1] == "我下周三要去上海出差" and plan[2].endswith("周三")  # no "记住"
    assert name[:2] == ("fact", "名字是小明")
    assert task[3] is not None and plan[3] is not None


HABITS = [
    ("本群周五下午发周报", "每周五"),
    ("每周一例会", "每周一"),
    ("每天早上8点提醒我喝水", "每天 08:00"),
    ("周五交周报", "每周五"),
    ("we have a standup every Monday at 10am", "every Monday 10:00"),
    ("I go swimming on Saturdays", "every Saturday"),
]


@pytest.mark.parametrize(("text", "label"), HABITS)
def test_a_habit_is_recurring_not_one_day(text: str, label: str) -> None:
    now = datetime(2026, 12, 1, 10, 0, tzinfo=SHANGHAI)  # a Tuesday
    assert dates.due(text, now) is None
    assert dates.recurrence(text) == label
    for chat in (ChatKey.parse(GROUP), ChatKey.parse(ME)):
        made = candidates.remembered(
            text, chat=chat, user=UserKey.parse("console:local"), at=now.timestamp(), tz=SHANGHAI
        )
        assert (made.title, made.valid_from, made.valid_until) == (label, None, None)


@pytest.mark.parametrize(
    ("text", "day"),
    [("这周五交周报", "2026-12-04 周五"), ("下周一例会改到下午", "2026-12-07 周一")],
)
def test_a_named_week_is_still_one_day(text: str, day: str) -> None:
    now = datetime(2026, 12, 1, 10, 0, tzinfo=SHANGHAI)
    found = dates.due(text, now)
    assert dates.recurrence(text) is None and found is not None and found.label() == day


async def test_a_habit_kept_from_the_cli_is_listed_as_recurring(tmp_path: Path) -> None:
    (tmp_path / "nahida.yaml").write_text("bot:\n  timezone: Asia/Shanghai\n", "utf-8")
    code, out, err = await nahida(
        tmp_path, "memory", "remember", "本群周五下午发周报", "--chat", GROUP
    )
    assert code == 0, err
    assert "(每周五)" in out
    (item,) = items_of(tmp_path / "data", f"chat:{GROUP}")
    assert (item.title, item.valid_from, item.valid_until) == ("每周五", None, None)
    code, out, err = await nahida(tmp_path, "memory", "list", "--chat", GROUP, "--json")
    assert code == 0, err
    assert [(i["title"], i["content"]) for i in json.loads(out)] == [
        ("每周五", "本群周五下午发周报")
    ]
