"""End to end: `/profile` typed into the console, through the real App, bus, runner and SQLite."""

from __future__ import annotations

import io
from pathlib import Path

from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.app import App, Paths, console_app
from nahida.config import Config
from nahida.i18n import t
from nahida.memory import PROFILE_SECTIONS
from tests.helpers import History, config

YOU = "console:local"  # the console's user (`console:private:local`)
STYLE = "工作与沟通方式"


def _app(tmp_path: Path, lines: list[str], cfg: Config | None = None) -> tuple[App, io.StringIO]:
    """The console app over `lines`, built but not run yet (so a test can write first)."""
    out = io.StringIO()
    stdin = io.StringIO("\n".join(lines) + "\n")
    console = ConsoleAdapter(stdin=stdin, stdout=out, interactive=False)
    app = console_app(cfg or Config(), Paths(None, tmp_path / "data", tmp_path / "ws"), console)
    return app, out


async def test_profile_shows_and_forgets_a_section(tmp_path: Path) -> None:
    lines = ["/profile", f"/profile forget {STYLE}", "/profile", "/profile forget 爱好", "/help"]
    app, out = _app(tmp_path, lines)
    profiles = app.memory.profiles  # the app's own memory, on the database it runs on
    await profiles.update(YOU, "基础特征", "28 岁", source="user_explicit", actor=YOU)
    await profiles.update(YOU, STYLE, "- 喜欢简短的回答\n- 晚上效率高", actor="agent")
    await profiles.update(YOU, STYLE, "讨厌开会", sensitivity="public", actor="agent")
    await app.run()
    sections = "、".join(PROFILE_SECTIONS)
    assert out.getvalue().splitlines()[:11] == [
        t("profile_header", "zh"),
        "### 基础特征",
        "- 28 岁",
        f"### {STYLE}",
        "- 喜欢简短的回答",
        "- 晚上效率高",
        "- 讨厌开会",
        t("profile_forgotten", "zh", section=STYLE, n=3),
        t("profile_header", "zh"),
        "### 基础特征",
        "- 28 岁",
    ]
    assert t("profile_unknown_section", "zh", name="爱好", sections=sections) in out.getvalue()
    assert f"/profile — {t('cmd_profile', 'zh')}" in out.getvalue()

    with History(tmp_path / "data" / "nahida.db") as db:
        rows = db.sql(
            "SELECT p.text, p.status, e.actor, e.reason FROM profile_entries p"
            " JOIN memory_events e ON e.item_id = p.id AND e.action = 'archive' ORDER BY p.rowid"
        )
        assert [tuple(r) for r in rows] == [
            ("喜欢简短的回答", "archived", YOU, "forgotten"),
            ("晚上效率高", "archived", YOU, "forgotten"),
            ("讨厌开会", "archived", YOU, "forgotten"),
        ]
        assert db.sql("SELECT count(*) FROM profile_entries")[0][0] == 4  # nothing deleted


async def test_profile_in_english_on_an_empty_profile(tmp_path: Path) -> None:
    app, out = _app(tmp_path, ["/profile", "/profile nonsense"], config(bot={"language": "en"}))
    await app.run()
    sections = "、".join(PROFILE_SECTIONS)
    assert out.getvalue().splitlines() == [
        t("profile_empty", "en"),
        *t("profile_usage", "en", sections=sections).splitlines(),
    ]
