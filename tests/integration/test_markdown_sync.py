"""MEMORY.md and profile files as two-way Markdown (DESIGN §9): real SQLite, real files, the CLI
in-process (typer's runner in a thread) and the sync job on the real scheduler."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from nahida.cli import app
from nahida.memory import MemoryService, Viewer
from nahida.memory.jobs import MarkdownSyncJob
from nahida.memory.markdown.memory_md import BEGIN, END
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.write import candidates
from nahida.scheduler import Scheduler
from tests.helpers import History

KEY = "sk-abcdef0123456789abcdef0123"
MINE_BEFORE = "# Our bot\r\n\r\nNotes of the admins — keep  these   spaces.\r\n\r\n"
MINE_AFTER = "\n\n## After the block\n\n- an admin's own bullet, never a memory\n"
EVERYWHERE = Viewer(scopes=("global",))


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_bytes(f"{MINE_BEFORE}{BEGIN}\n{END}{MINE_AFTER}".encode())
    return ws


def service(tmp_path: Path) -> MemoryService:
    return MemoryService(SqliteStore(tmp_path / "data" / "nahida.db"), workspace=tmp_path / "ws")


async def remember(memory: MemoryService, text: str, kind: str = "fact") -> str:
    result = await memory.items.propose(
        candidates.admin_edit(text, kind=kind, scope="global"), "admin"
    )
    assert result.item_id is not None
    return result.item_id


async def cli(tmp_path: Path, *args: str) -> Result:
    argv = ["--data-dir", str(tmp_path / "data"), "--workspace", str(tmp_path / "ws"), *args]
    return await asyncio.to_thread(CliRunner().invoke, app, argv, env={})


def memory_md(tmp_path: Path) -> str:
    return (tmp_path / "ws" / "MEMORY.md").read_bytes().decode()


def outside(text: str) -> tuple[str, str]:
    return text[: text.index(BEGIN)], text[text.index(END) + len(END) :]


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


async def seeded(tmp_path: Path) -> tuple[MemoryService, dict[str, str]]:
    workspace(tmp_path)
    memory = service(tmp_path)
    ids = {
        "report": await remember(memory, "本群周五下午发周报"),
        "floor": await remember(memory, "公司在三楼"),
        "lunch": await remember(memory, "午饭十二点"),
        "wifi": await remember(memory, "访客 Wi-Fi 叫 guest"),
    }
    assert memory.markdown is not None
    await memory.markdown.sync()
    return memory, ids


def edit_file(tmp_path: Path, change: Any) -> None:
    path = tmp_path / "ws" / "MEMORY.md"
    path.write_bytes(change(path.read_bytes().decode()).encode())


async def test_an_edit_round_trip_gives_exactly_the_audited_changes(tmp_path: Path) -> None:
    memory, ids = await seeded(tmp_path)
    text = memory_md(tmp_path)
    assert outside(text) == (MINE_BEFORE, MINE_AFTER)
    assert f"- [{ids['report']}] 本群周五下午发周报" in text and "### fact" in text

    def change(text: str) -> str:
        text = text.replace("公司在三楼", "公司搬到四楼了")  # edited
        text = text.replace(f"- [{ids['lunch']}] 午饭十二点\n", "")  # deleted
        wifi = f"- [{ids['wifi']}] 访客 Wi-Fi 叫 guest\n"
        text = text.replace(wifi, "")  # moved under another kind's heading, with a new one:
        return text.replace(END, f"### warning\n\n{wifi}- 周一停电检修\n{END}")

    edit_file(tmp_path, change)
    edited = memory_md(tmp_path)
    floor_line, new_line = line_of(edited, "公司搬到四楼了"), line_of(edited, "周一停电检修")
    memory.close()
    result = await cli(tmp_path, "memory", "sync", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {k: report[k] for k in ("edited", "moved", "archived", "added", "refused")} == {
        "edited": 1,
        "moved": 1,
        "archived": 1,
        "added": 1,
        "refused": 0,
    }
    memory = service(tmp_path)
    try:
        old = await memory.items.get(ids["floor"])
        assert old is not None and old.status == "superseded"
        why = await memory.items.why(ids["floor"], EVERYWHERE)
        assert why is not None and why.replaced_by is not None
        new = await memory.items.get(why.replaced_by)
        assert new is not None and (new.content, new.source, new.supersedes) == (
            "公司搬到四楼了",
            "human_edit",
            ids["floor"],
        )
        assert new.evidence[0].ref == f"MEMORY.md:{floor_line}" and new.evidence[0].time
        explained = await memory.items.why(new.id, EVERYWHERE)
        assert explained is not None and explained.events[0].actor == "human_edit:MEMORY.md"
        lunch = await memory.items.get(ids["lunch"])
        assert lunch is not None and lunch.status == "archived"
        wifi = await memory.items.get(ids["wifi"])
        assert wifi is not None and (wifi.kind, wifi.status) == ("warning", "active")
        (added,) = [i for i in await memory.items.latest(EVERYWHERE) if i.content == "周一停电检修"]
        assert (added.kind, added.source, added.sensitivity) == ("warning", "human_edit", "public")
        assert added.evidence[0].ref == f"MEMORY.md:{new_line}"
    finally:
        memory.close()
    text = memory_md(tmp_path)
    assert outside(text) == (MINE_BEFORE, MINE_AFTER)  # byte for byte, CRLF and all
    assert f"[{why.replaced_by}] 公司搬到四楼了" in text and "午饭十二点" not in text
    assert f"[{added.id}] 周一停电检修" in text.split("### warning")[1]
    again = await cli(tmp_path, "memory", "sync", "--json")
    assert json.loads(again.stdout).get("edited") == 0  # nothing twice
    shown = await cli(tmp_path, "memory", "why", why.replaced_by)
    assert f"MEMORY.md:{floor_line}" in shown.stdout and "human_edit:MEMORY.md" in shown.stdout


async def test_a_secret_is_refused_with_its_line_and_dropped_from_the_block(
    tmp_path: Path,
) -> None:
    memory, _ = await seeded(tmp_path)
    edit_file(tmp_path, lambda t: t.replace(END, f"- 服务器密钥是 {KEY}\n{END}"))
    line = line_of(memory_md(tmp_path), KEY)
    assert memory.markdown is not None
    report = await memory.markdown.sync()
    (file,) = [f for f in report.files if f.path == "MEMORY.md"]
    assert file.refused == [(line, "looks like a secret: not stored")]
    assert KEY not in memory_md(tmp_path)
    with History(memory.store) as db:
        assert (
            db.sql("SELECT count(*) FROM memory_items WHERE content LIKE ?", f"%{KEY}%")[0][0] == 0
        )
    memory.close()


async def test_a_malformed_block_is_reported_with_its_line_and_nothing_is_applied(
    tmp_path: Path,
) -> None:
    memory, ids = await seeded(tmp_path)
    memory.close()

    def broken(text: str) -> str:  # an edit, then the end marker lost
        return text.replace("公司在三楼", "公司在五楼").replace(END, "")

    edit_file(tmp_path, broken)
    before = memory_md(tmp_path)
    result = await cli(tmp_path, "memory", "sync")
    assert result.exit_code == 2
    assert f"MEMORY.md:{line_of(before, BEGIN)}: malformed" in result.stdout
    assert memory_md(tmp_path) == before  # the admin's file is left as they wrote it

    edit_file(
        tmp_path,
        lambda t: t.replace("公司在五楼", "公司在三楼").replace(MINE_AFTER, END + MINE_AFTER),
    )
    edit_file(tmp_path, lambda t: t.replace(END, f"- [m_abcdef] 不存在的记忆\n{END}", 1))
    unknown = line_of(memory_md(tmp_path), "m_abcdef")
    result = await cli(tmp_path, "memory", "sync", "--json")
    assert result.exit_code == 2
    problems = json.loads(result.stdout)["files"][0]["problems"]
    assert problems == [{"line": unknown, "problem": "m_abcdef is not a record of this file"}]
    memory = service(tmp_path)
    floor = await memory.items.get(ids["floor"])
    assert floor is not None and (floor.status, floor.content) == ("active", "公司在三楼")
    memory.close()


async def test_file_and_database_changed_at_once_lose_nothing(tmp_path: Path) -> None:
    memory, ids = await seeded(tmp_path)
    edit_file(tmp_path, lambda t: t.replace("本群周五下午发周报", "本群周四下午发周报"))
    meanwhile = await remember(memory, "前台电话是 8001")  # the database, at the same time
    await memory.items.forget(ids["lunch"], _admin())
    assert memory.markdown is not None
    await memory.markdown.sync()
    text = memory_md(tmp_path)
    assert "本群周四下午发周报" in text and f"[{meanwhile}] 前台电话是 8001" in text
    assert "午饭十二点" not in text and "公司在三楼" in text
    report = await memory.items.get(ids["report"])
    assert report is not None and report.status == "superseded"
    memory.close()


async def test_the_job_takes_an_edit_over_within_seconds_and_records_only_real_work(
    tmp_path: Path,
) -> None:
    memory, ids = await seeded(tmp_path)
    scheduler = Scheduler(memory.runs)
    scheduler.add(MarkdownSyncJob(memory, every=0.2))
    try:
        async with asyncio.TaskGroup() as group:
            scheduler.start(group)
            await asyncio.sleep(1.0)  # idle ticks: nothing to do
            edit_file(tmp_path, lambda t: t.replace("公司在三楼", "公司在六楼"))
            async with asyncio.timeout(10):
                floor = await memory.items.get(ids["floor"])
                while floor is not None and floor.status == "active":
                    await asyncio.sleep(0.1)
                    floor = await memory.items.get(ids["floor"])
            await scheduler.stop()
    finally:
        memory.close()
    with History(tmp_path / "data" / "nahida.db") as db:
        runs = db.sql("SELECT counts FROM job_runs WHERE job = 'markdown_sync'")
    assert 1 <= len(runs) <= 2  # the first (forced) render and the edit; no idle tick
    assert any(json.loads(r[0]).get("edited") == 1 for r in runs)


async def test_a_profile_file_round_trip(tmp_path: Path) -> None:
    workspace(tmp_path)
    memory = service(tmp_path)
    await memory.profiles.update("onebot:42", "身份与背景", "是护士\n住在杭州", actor="t")
    assert memory.markdown is not None
    await memory.markdown.sync()
    path = tmp_path / "ws" / "users" / "onebot_42.md"
    text = path.read_text(encoding="utf-8")
    assert "# Profile · onebot:42" in text and "### 身份与背景" in text
    path.write_text(
        text.replace("是护士", "是护士长").replace(
            "<!-- nahida:profile:end -->", "### 目标与方向\n- 想学吉他\n<!-- nahida:profile:end -->"
        ),
        encoding="utf-8",
    )
    report = await memory.markdown.sync()
    (file,) = [f for f in report.files if f.path == "users/onebot_42.md"]
    assert file.counts == {"edited": 1, "archived": 0, "added": 1}
    texts = {
        (e.section, e.text) for e in await memory.profiles.entries("onebot:42", public_only=False)
    }
    assert texts == {
        ("身份与背景", "是护士长"),
        ("身份与背景", "住在杭州"),
        ("目标与方向", "想学吉他"),
    }
    memory.close()


def _admin() -> Any:
    from nahida.memory import Actor

    return Actor(label="admin", is_bot_admin=True)
