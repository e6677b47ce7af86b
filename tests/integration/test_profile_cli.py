"""`nahida profile show|edit`: the typer app in-process (in a thread) against a real SQLite file
and workspace; the editor is a small Python script that rewrites the profile file as an admin
would, run through `$EDITOR` like any editor."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import textwrap
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from nahida.cli import app
from nahida.memory import MemoryService, ProfileEntry
from nahida.memory.store.sqlite import SqliteStore
from tests.helpers import History

USER = "onebot:42"
FILE = "users/onebot_42.md"
ACTOR = f"human_edit:{FILE}"
SECRET = "sk-" + "Ab3dEf9hIj2lMn7pQr5tUv8x"


async def cli(tmp_path: Path, *args: str, **env: str) -> Result:
    argv = ["--data-dir", str(tmp_path / "data"), "--workspace", str(tmp_path / "ws"), *args]
    return await asyncio.to_thread(CliRunner().invoke, app, argv, env=env)


def _memory(tmp_path: Path) -> MemoryService:
    (tmp_path / "data").mkdir(exist_ok=True)
    return MemoryService(SqliteStore(tmp_path / "data" / "nahida.db"))


async def _seed(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    await memory.profiles.update(
        USER, "目标与方向", "- 想转行做数据分析\n- 在学 SQL", actor="agent"
    )
    await memory.profiles.update(
        USER,
        "身份与背景",
        "- 在杭州工作",
        sensitivity="public",
        chat="onebot:group:1",
        actor="agent",
    )
    memory.close()


async def _entries(tmp_path: Path) -> list[ProfileEntry]:
    memory = _memory(tmp_path)
    try:
        return await memory.profiles.entries(USER, public_only=False)
    finally:
        memory.close()


def _editor(tmp_path: Path, body: str) -> str:
    """An `$EDITOR` command: a Python script given the file's path, editing `text` with `body`."""
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys\nfrom pathlib import Path\n"
        "path = Path(sys.argv[1])\ntext = path.read_text(encoding='utf-8')\n"
        + textwrap.dedent(body)
        + "\npath.write_text(text, encoding='utf-8')\n",
        encoding="utf-8",
    )
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def _json(result: Result) -> Any:
    return json.loads(result.stdout)


async def test_show_lists_the_bullets_by_section(tmp_path: Path) -> None:
    await _seed(tmp_path)
    result = await cli(tmp_path, "profile", "show", USER, "--json")
    assert result.exit_code == 0, result.output
    shown = _json(result)
    assert [(b["section"], b["text"]) for b in shown] == [
        ("身份与背景", "在杭州工作"),
        ("目标与方向", "想转行做数据分析"),
        ("目标与方向", "在学 SQL"),
    ]
    assert all(b["id"].startswith("p_") and b["source"] == "agent_proactive" for b in shown)
    assert [b["sensitivity"] for b in shown] == ["public", "private", "private"]
    assert all(isinstance(b["updated_at"], float) for b in shown)

    text = await cli(tmp_path, "profile", "show", USER)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0] == "### 身份与背景" and "### 目标与方向" in lines
    assert any(line.startswith(shown[2]["id"]) and line.endswith("在学 SQL") for line in lines)


async def test_show_a_bad_key_exits_2_and_an_unknown_person_1(tmp_path: Path) -> None:
    await _seed(tmp_path)
    bad = await cli(tmp_path, "profile", "show", "42")
    assert bad.exit_code == 2 and bad.stdout == ""
    (line,) = bad.stderr.splitlines()
    assert line.startswith("error: a user key looks like platform:user_id")
    nobody = await cli(tmp_path, "profile", "show", "onebot:7")
    assert nobody.exit_code == 1 and nobody.stderr == "error: onebot:7 has no profile\n"
    as_json = await cli(tmp_path, "profile", "show", "onebot:7", "--json")
    assert as_json.exit_code == 1 and _json(as_json)["exit_code"] == 1


async def test_edit_applies_an_edit_a_deletion_and_an_addition(tmp_path: Path) -> None:
    await _seed(tmp_path)
    before = {e.text: e for e in await _entries(tmp_path)}
    editor = _editor(
        tmp_path,
        """
        lines = []
        for line in text.splitlines():
            if line.endswith("] 在学 SQL"):
                line = line.replace("在学 SQL", "在学 Python")
            elif line.endswith("] 想转行做数据分析"):
                continue
            lines.append(line)
            if line == "### 身份与背景":
                lines.append("- 周末爬山")
        text = "\\n".join(lines) + "\\n"
        """,
    )
    result = await cli(tmp_path, "profile", "edit", USER, "--json", EDITOR=editor)
    assert result.exit_code == 0, result.output
    report = _json(result)
    assert (report["edited"], report["archived"], report["added"]) == (1, 1, 1)
    assert report["refused"] == [] and report["problems"] == [] and report["path"] == FILE

    after = {e.text: e for e in await _entries(tmp_path)}
    assert sorted(after) == sorted(["周末爬山", "在杭州工作", "在学 Python"])
    assert after["在杭州工作"].id == before["在杭州工作"].id
    assert (
        after["在学 Python"].sensitivity == "private"
        and after["在学 Python"].source == "human_edit"
    )
    assert after["周末爬山"].section == "身份与背景"

    with History(tmp_path / "data" / "nahida.db") as history:
        archived = history.sql(
            "SELECT id FROM profile_entries WHERE status = 'archived' ORDER BY id"
        )
        events = history.sql(
            "SELECT item_id, action FROM memory_events WHERE actor = ? ORDER BY id", ACTOR
        )
    gone = sorted([before["在学 SQL"].id, before["想转行做数据分析"].id])
    assert [row[0] for row in archived] == gone
    assert sorted(tuple(row) for row in events) == sorted(
        [
            (after["在学 Python"].id, "replace"),
            (before["在学 SQL"].id, "archive"),
            (before["想转行做数据分析"].id, "archive"),
            (after["周末爬山"].id, "create"),
        ]
    )
    # the file shows the database again, new ids included
    text = (tmp_path / "ws" / FILE).read_text(encoding="utf-8")
    assert f"- [{after['周末爬山'].id}] 周末爬山" in text and "在学 SQL" not in text


async def test_edit_says_what_it_did_in_lines(tmp_path: Path) -> None:
    await _seed(tmp_path)
    editor = _editor(tmp_path, "text = text.replace('在杭州工作', '在上海工作')")
    result = await cli(tmp_path, "profile", "edit", USER, EDITOR=editor)
    assert result.exit_code == 0, result.output
    path = tmp_path / "ws" / FILE
    assert result.stdout == f"{path}: edited 1, added 0, archived 0, refused 0\n"
    unchanged = await cli(tmp_path, "profile", "edit", USER, EDITOR="true")
    assert unchanged.stdout == f"{path}: edited 0, added 0, archived 0, refused 0\n"


def _line_of(saved: Path, needle: str) -> int:
    """The 1-based line of the saved file holding `needle`."""
    lines = saved.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


SAVE_A_COPY = "Path(sys.argv[0]).with_name('saved.md').write_text(text, encoding='utf-8')"


async def test_a_secret_is_refused_with_its_line_and_never_stored(tmp_path: Path) -> None:
    await _seed(tmp_path)
    editor = _editor(
        tmp_path,
        f"""
        text = text.replace("### 目标与方向\\n", "### 目标与方向\\n- 我的 key 是 {SECRET}\\n")
        {SAVE_A_COPY}
        """,
    )
    result = await cli(tmp_path, "profile", "edit", USER, EDITOR=editor)
    assert result.exit_code == 0, result.output
    path = tmp_path / "ws" / FILE
    number = _line_of(tmp_path / "saved.md", SECRET)
    assert result.stdout.splitlines() == [
        f"{path}:{number}: refused: looks like a secret: not stored",
        f"{path}: edited 0, added 0, archived 0, refused 1",
    ]
    assert SECRET not in path.read_text(encoding="utf-8")  # rendered again from the database
    assert len(await _entries(tmp_path)) == 3

    with History(tmp_path / "data" / "nahida.db") as history:
        tables = history.sql("SELECT name FROM sqlite_master WHERE type = 'table'")
        stored = {
            t: repr([tuple(r) for r in history.sql(f'SELECT * FROM "{t}"')]) for (t,) in tables
        }
    assert "在学 SQL" in stored["profile_entries"]  # the dump does show what is stored
    assert [t for t, rows in stored.items() if SECRET in rows] == []


async def test_a_broken_block_exits_2_with_its_line_and_applies_nothing(tmp_path: Path) -> None:
    await _seed(tmp_path)
    before = await _entries(tmp_path)
    editor = _editor(
        tmp_path,
        f"""
        text = text.replace("在杭州工作", "在上海工作")
        text = text.replace("<!-- nahida:profile:end -->\\n", "")
        {SAVE_A_COPY}
        """,
    )
    result = await cli(tmp_path, "profile", "edit", USER, EDITOR=editor)
    assert result.exit_code == 2, result.output
    path = tmp_path / "ws" / FILE
    number = _line_of(tmp_path / "saved.md", "<!-- nahida:profile:begin -->")
    assert f"{path}:{number}: malformed: the block needs one" in result.stderr
    assert "nothing applied" in result.stderr
    assert await _entries(tmp_path) == before
    # the admin's text stays in the file, to be fixed
    assert "在上海工作" in path.read_text(encoding="utf-8")
    as_json = await cli(tmp_path, "profile", "edit", USER, "--json", EDITOR="true")
    assert as_json.exit_code == 2
    assert _json(as_json)["problems"][0]["line"] == number


async def test_edit_refuses_a_bad_key_and_no_projection(tmp_path: Path) -> None:
    await _seed(tmp_path)
    marker = tmp_path / "ran"
    editor = _editor(tmp_path, f"Path({str(marker)!r}).touch()")
    bad = await cli(tmp_path, "profile", "edit", "nobody", EDITOR=editor)
    assert bad.exit_code == 2 and len(bad.stderr.splitlines()) == 1
    off = await cli(
        tmp_path, "profile", "edit", USER, EDITOR=editor, NAHIDA__MEMORY__MARKDOWN__ENABLED="false"
    )
    assert off.exit_code == 2
    assert off.stderr == "error: the Markdown projection is off (memory.markdown.enabled: false)\n"
    assert not marker.exists()
    assert not (tmp_path / "ws" / FILE).exists()


async def test_the_editor_command_may_carry_arguments_and_may_fail(tmp_path: Path) -> None:
    await _seed(tmp_path)
    script = tmp_path / "ed.sh"
    script.write_text('#!/bin/sh\n[ "$1" = "--flag" ] || exit 3\nexit "$2"\n', encoding="utf-8")
    script.chmod(0o755)
    ok = await cli(tmp_path, "profile", "edit", USER, EDITOR=f"{script} --flag 0")
    assert ok.exit_code == 0, ok.output
    failed = await cli(tmp_path, "profile", "edit", USER, EDITOR=f"{script} --flag 5")
    assert failed.exit_code == 1 and "error: the editor exited with code 5" in failed.stderr
    visual = await cli(tmp_path, "profile", "edit", USER, EDITOR="", VISUAL=f"{script} --flag 0")
    assert visual.exit_code == 0, visual.output
    missing = await cli(tmp_path, "profile", "edit", USER, EDITOR=str(tmp_path / "no-such-editor"))
    assert missing.exit_code == 2 and "cannot run the editor" in missing.stderr
