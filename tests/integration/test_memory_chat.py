"""End to end: `/memory` typed into the console, through the real App, bus, runner and SQLite."""

from __future__ import annotations

import io
import re
from pathlib import Path

from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.app import App, Paths, console_app
from nahida.commands import memory as memory_commands
from nahida.config import Config
from nahida.i18n import t
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import History, config, openai_provider

ITEM_ID = re.compile(r"\bm_[0-9a-f]{6}\b")


async def chat_with_memory(
    tmp_path: Path, lines: list[str], cfg: Config | None = None
) -> tuple[str, App]:
    """`chat_through_console`, with the /memory command registered before the app runs.

    Once app.py registers it (see the report), `tests.helpers.chat_through_console` will do.
    """
    out = io.StringIO()
    console = ConsoleAdapter(
        stdin=io.StringIO("\n".join(lines) + "\n"), stdout=out, interactive=False
    )
    app = console_app(cfg or Config(), Paths(None, tmp_path / "data", tmp_path / "ws"), console)
    if not app.runner.commands.knows("/memory"):
        memory_commands.register(app.runner.commands)
    await app.run()
    return out.getvalue(), app


def _db(tmp_path: Path) -> History:
    return History(tmp_path / "data" / "nahida.db")


async def test_remember_search_why_forget_across_two_runs(tmp_path: Path) -> None:
    out, _ = await chat_with_memory(
        tmp_path,
        ["/memory remember 我喜欢乌龙茶", "/memory search 乌龙茶", "/memory list", "/help"],
    )
    lines = out.splitlines()
    found = ITEM_ID.search(lines[0])
    assert found, out
    item_id = found.group(0)
    assert lines[0] == t("memory_remembered", "zh", id=item_id)
    assert lines[1] == t("memory_search_header", "zh", query="乌龙茶")
    assert lines[2].startswith(f"{item_id} · preference · ") and lines[2].endswith("我喜欢乌龙茶")
    assert t("memory_list_header", "zh", n=1) in lines
    assert f"/memory — {t('cmd_memory', 'zh')}" in lines

    # a second run on the same database: the memory is still there, and can be explained
    out, _ = await chat_with_memory(
        tmp_path,
        [
            f"/memory why {item_id}",
            f"/memory forget {item_id}",
            f"/memory why {item_id}",
            "/memory search 乌龙茶",
        ],
    )
    assert f"{item_id} · preference · {t('memory_status_active', 'zh')}" in out
    assert "user_explicit" in out and "user:console:local" in out
    assert "console:private:local · msg console-" in out  # the evidence: where and which message
    assert t("memory_forgotten", "zh", id=item_id) in out
    assert f"{item_id} · preference · {t('memory_status_archived', 'zh')}" in out
    assert re.search(r"- \d{4}-\d{2}-\d{2} \d{2}:\d{2} 归档 · console:local · forgotten", out)
    assert out.rstrip().endswith(t("memory_no_results", "zh", query="乌龙茶"))

    with _db(tmp_path) as db:
        ((status, actor),) = db.sql(
            "SELECT m.status, e.actor FROM memory_items m JOIN memory_events e"
            " ON e.item_id = m.id WHERE m.id = ? AND e.action = 'archive'",
            item_id,
        )
    assert (status, actor) == ("archived", "console:local")


async def test_a_secret_is_refused_in_english(tmp_path: Path) -> None:
    cfg = config(bot={"language": "en"})
    out, _ = await chat_with_memory(
        tmp_path,
        ["/memory remember my key is sk-proj-abcdefghijklmnopqrstuvwxyz123456", "/memory"],
        cfg,
    )
    lines = out.splitlines()
    assert lines[0] == t("memory_secret_refused", "en")
    assert "\n".join(lines[1:]) == t("memory_usage", "en")
    with _db(tmp_path) as db:
        assert db.sql("SELECT count(*) FROM memory_items")[0][0] == 0


async def test_search_finds_what_was_said_in_the_chat(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    out, _ = await chat_with_memory(
        tmp_path, ["周末我们去了西湖划船", "/memory search 西湖", "/memory why t_1"], cfg
    )
    lines = out.splitlines()
    assert lines[0] == "echo: 周末我们去了西湖划船"
    assert lines[1] == t("memory_search_header", "zh", query="西湖")
    said = [line for line in lines[2:] if "周末我们去了西湖划船" in line]
    stamp = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}"
    assert any(re.fullmatch(rf"{stamp} · 你 · 周末我们去了西湖划船", line) for line in said), said
    bot = t("memory_bot_speaker", "zh")
    assert any(re.fullmatch(rf"{stamp} · {bot} · echo: 周末我们去了西湖划船", x) for x in said)
    assert lines[-1] == t("memory_not_found", "zh", id="t_1")  # why is for memory items
    assert len(openai_server.requests) == 1  # commands never reach the model
