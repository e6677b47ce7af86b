"""A careless edit of MEMORY.md or a profile file loses nothing: an emptied file or a lost marker
is reported and nothing applied; archiving more than a few bullets of a file at once waits for
`nahida memory sync --yes`, and the background job never does it — the file keeps the admin's
text until then. Real SQLite, real files, the CLI through its typer app (in a thread) and the
sync job on the real scheduler."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner, Result

from nahida.cli import app
from nahida.memory import MemoryService
from nahida.memory.jobs import MarkdownSyncJob
from nahida.memory.markdown.memory_md import BEGIN, END
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.write import candidates
from nahida.scheduler import Scheduler
from tests.helpers import History

FACTS = ("本群周五下午发周报", "公司在三楼", "午饭十二点", "访客 Wi-Fi 叫 guest", "前台电话是 8001")
PROFILE = "users/onebot_42.md"


def service(tmp_path: Path) -> MemoryService:
    return MemoryService(SqliteStore(tmp_path / "data" / "nahida.db"), workspace=tmp_path / "ws")


async def cli(tmp_path: Path, *args: str) -> Result:
    argv = ["--data-dir", str(tmp_path / "data"), "--workspace", str(tmp_path / "ws"), *args]
    return await asyncio.to_thread(CliRunner().invoke, app, argv, env={})


async def seeded(tmp_path: Path, facts: tuple[str, ...] = FACTS) -> list[str]:
    """Global items and a profile, synced once to their files; the items' ids."""
    (tmp_path / "ws").mkdir(parents=True)
    memory = service(tmp_path)
    ids = []
    for fact in facts:
        result = await memory.items.propose(
            candidates.admin_edit(fact, kind="fact", scope="global"), "admin"
        )
        assert result.item_id is not None
        ids.append(result.item_id)
    await memory.profiles.update("onebot:42", "身份与背景", "是护士\n住在杭州", actor="t")
    assert memory.markdown is not None
    await memory.markdown.sync()
    memory.close()
    return ids


def active(tmp_path: Path) -> tuple[int, int]:
    """(active global items, active profile bullets)."""
    with History(tmp_path / "data" / "nahida.db") as db:
        items = db.sql("SELECT count(*) FROM memory_items WHERE status = 'active'")[0][0]
        bullets = db.sql("SELECT count(*) FROM profile_entries WHERE status = 'active'")[0][0]
    return items, bullets


def emptied_block(text: str) -> str:
    return text[: text.index(BEGIN) + len(BEGIN)] + "\n" + text[text.index(END) :]


async def test_an_emptied_file_is_reported_and_nothing_is_archived(tmp_path: Path) -> None:
    await seeded(tmp_path)
    ws = tmp_path / "ws"
    (ws / "MEMORY.md").write_text("", encoding="utf-8")  # `: > workspace/MEMORY.md`
    profile = ws / PROFILE
    profile.write_text("# 画像\n\n我把标记删了\n", encoding="utf-8")

    result = await cli(tmp_path, "memory", "sync")
    assert result.exit_code == 2, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("synced: edited 0, moved 0, added 0, archived 0;")
    for path, begin in (("MEMORY.md", BEGIN), (PROFILE, "<!-- nahida:profile:begin -->")):
        (said,) = [line for line in lines if line.startswith(f"{path}: malformed:")]
        assert begin in said and "missing" in said and "nothing applied" in said
    assert active(tmp_path) == (len(FACTS), 2)
    assert (ws / "MEMORY.md").read_text(encoding="utf-8") == ""  # the admin's file, as it was
    assert profile.read_text(encoding="utf-8") == "# 画像\n\n我把标记删了\n"

    as_json = await cli(tmp_path, "memory", "sync", "--json")
    assert as_json.exit_code == 2
    files = {f["path"]: f for f in json.loads(as_json.stdout)["files"]}
    assert files["MEMORY.md"]["problems"][0]["line"] is None  # the whole file
    # a deleted file is written afresh from memory, nothing archived either
    (ws / "MEMORY.md").unlink()
    again = await cli(tmp_path, "memory", "sync")
    assert FACTS[0] in (ws / "MEMORY.md").read_text(encoding="utf-8")
    assert active(tmp_path) == (len(FACTS), 2) and again.exit_code == 2  # the profile still is


async def test_archiving_many_at_once_waits_for_yes(tmp_path: Path) -> None:
    ids = await seeded(tmp_path)
    path = tmp_path / "ws" / "MEMORY.md"
    path.write_text(emptied_block(path.read_text(encoding="utf-8")), encoding="utf-8")
    edited = path.read_text(encoding="utf-8")

    held = await cli(tmp_path, "memory", "sync")
    assert held.exit_code == 1, held.output
    assert "MEMORY.md: would archive 5 bullets at once" in held.stdout
    assert f"  - [{ids[1]}] 公司在三楼" in held.stdout
    assert "to archive them: nahida memory sync --yes" in held.stdout
    assert active(tmp_path) == (len(FACTS), 2) and path.read_text(encoding="utf-8") == edited
    as_json = json.loads((await cli(tmp_path, "memory", "sync", "--json")).stdout)
    assert as_json["held"] == 5 and as_json["archived"] == 0

    done = await cli(tmp_path, "memory", "sync", "--yes")
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("synced: edited 0, moved 0, added 0, archived 5;")
    assert active(tmp_path) == (0, 2)


async def test_three_at_once_need_no_confirmation(tmp_path: Path) -> None:
    ids = await seeded(tmp_path)
    path = tmp_path / "ws" / "MEMORY.md"
    text = path.read_text(encoding="utf-8")
    for item_id, fact in list(zip(ids, FACTS, strict=True))[:3]:
        text = text.replace(f"- [{item_id}] {fact}\n", "")
    path.write_text(text, encoding="utf-8")
    result = await cli(tmp_path, "memory", "sync")
    assert result.exit_code == 0, result.output
    assert active(tmp_path) == (2, 2)


async def test_the_background_job_never_archives_in_bulk_and_keeps_the_edit(
    tmp_path: Path,
) -> None:
    ids = await seeded(tmp_path)
    path = tmp_path / "ws" / "MEMORY.md"
    text = path.read_text(encoding="utf-8")
    for item_id, fact in list(zip(ids, FACTS, strict=True))[:4]:
        text = text.replace(f"- [{item_id}] {fact}\n", "")
    edited = text.replace(FACTS[4], "前台电话改成 8002")  # and one more edit beside them
    path.write_text(edited, encoding="utf-8")

    memory = service(tmp_path)
    scheduler = Scheduler(memory.runs)
    scheduler.add(MarkdownSyncJob(memory))
    try:
        assert await scheduler.run_now("markdown_sync") == "ok"  # a tick, as `nahida run` has
        (run,) = await memory.runs.latest("markdown_sync")
    finally:
        memory.close()
    assert run.counts.get("held") == 4 and not run.counts.get("archived")
    assert active(tmp_path) == (len(FACTS), 2)  # nothing applied, not even the edit
    assert path.read_text(encoding="utf-8") == edited

    done = await cli(tmp_path, "memory", "sync", "--yes")  # the admin's edit, whole, later
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("synced: edited 1, moved 0, added 0, archived 4;")
    assert "前台电话改成 8002" in path.read_text(encoding="utf-8")


async def test_a_profile_emptied_in_the_editor_waits_for_yes(tmp_path: Path) -> None:
    await seeded(tmp_path)
    memory = service(tmp_path)
    for n in range(3):
        await memory.profiles.update("onebot:42", "目标与方向", f"目标{n}号", actor="t")
    memory.close()
    editor = tmp_path / "empty.sh"
    editor.write_text('#!/bin/sh\nsed -i "/^- \\[p_/d" "$1"\n', encoding="utf-8")  # every bullet
    editor.chmod(0o755)
    argv = ["--data-dir", str(tmp_path / "data"), "--workspace", str(tmp_path / "ws")]
    invoke = CliRunner().invoke
    held = await asyncio.to_thread(
        invoke, app, [*argv, "profile", "edit", "onebot:42"], env={"EDITOR": str(editor)}
    )
    assert held.exit_code == 1, held.output
    assert f"{PROFILE}: would archive 5 bullets at once" in held.stdout
    assert active(tmp_path) == (len(FACTS), 5)
    done = await asyncio.to_thread(
        invoke, app, [*argv, "profile", "edit", "onebot:42", "--yes"], env={"EDITOR": "true"}
    )
    assert done.exit_code == 0, done.output
    assert active(tmp_path) == (len(FACTS), 0)
