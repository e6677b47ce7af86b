"""No file outside the workspace: a name made from outside input (a user id, a day, a header read
back from a file) never leads out of it, and a symlink in it that points outside is neither read
nor written through. Real files, real SQLite; the hostile id comes in as a OneBot event over a
real WebSocket, and its profile is written by the model's `profile_update` tool call (the OpenAI
SDK over HTTP to the fake server)."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from typer.testing import CliRunner, Result

from nahida.app import App, Paths, platform_adapters
from nahida.cli import app as cli_app
from nahida.errors import UnsafePath
from nahida.memory import MemoryService
from nahida.memory.core.models import DreamRun
from nahida.memory.markdown import dreams_md
from nahida.memory.markdown.daily import DailyNotes
from nahida.memory.markdown.profiles_md import file_name
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.write import candidates
from nahida.workspace import FALLBACK_PERSONA, Persona, WorkspaceFiles, safe_name
from tests.fakes.llm_server import FakeOpenAIServer
from tests.fakes.onebot_impl import FakeOneBot
from tests.helpers import config, openai_provider

BOT = 10001
HOSTILE = "../../../../somewhere/README"  # users/onebot_../ + three more: out of the workspace
PRECIOUS = "# somewhere\n\nnot the bot's to touch\n"


def service(tmp_path: Path) -> MemoryService:
    return MemoryService(SqliteStore(tmp_path / "data" / "nahida.db"), workspace=tmp_path / "ws")


def every_file(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def outside(tmp_path: Path, workspace: str) -> set[Path]:
    """The files under `tmp_path` that are neither the workspace's nor the database's."""
    return every_file(tmp_path) - every_file(tmp_path / workspace) - every_file(tmp_path / "data")


async def test_a_hostile_user_id_through_onebot_and_a_tool_call_stays_in_the_workspace(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    target = tmp_path / "somewhere" / "README.md"
    target.parent.mkdir()
    target.write_text(PRECIOUS, encoding="utf-8")
    outside_before = outside(tmp_path, "workspace")
    openai_server.reply_tool_call("profile_update", {"section": "身份与背景", "content": "是护士"})
    openai_server.reply_text("记住了。")
    cfg = config(
        server={"host": "127.0.0.1", "port": 0},
        channels={"onebot": {"enabled": True, "mode": "reverse_ws"}},
        scheduler={"enabled": False},
        **openai_provider(openai_server.url),
    )
    paths = Paths(None, tmp_path / "data", tmp_path / "workspace")
    bot = App(cfg, paths, adapters=platform_adapters(cfg))
    task = asyncio.create_task(bot.run())
    try:
        async with asyncio.timeout(10):
            while bot.server.port == 0:  # noqa: ASYNC110 - the server names its port once bound
                await asyncio.sleep(0.01)
        async with FakeOneBot(BOT) as impl:
            sock = await impl.connect(f"ws://127.0.0.1:{bot.server.port}/onebot/v11/ws")
            await sock.send(impl.private_message(HOSTILE, "我是护士"))  # type: ignore[arg-type]
            await impl.wait_calls("send_private_msg")
        assert await bot.memory.profiles.users() == [f"onebot:{HOSTILE}"]
        assert bot.memory.markdown is not None
        report = await bot.memory.markdown.sync()
    finally:
        bot.stop()
        await task
    assert target.read_text(encoding="utf-8") == PRECIOUS
    assert outside(tmp_path, "workspace") == outside_before
    (profile,) = [f for f in report.files if f.path.startswith("users/")]
    assert profile.written and not profile.problems
    written = tmp_path / "workspace" / profile.path
    assert written.parent == tmp_path / "workspace" / "users"
    assert "是护士" in written.read_text(encoding="utf-8")


def test_ordinary_names_are_kept_and_no_two_ids_share_a_file() -> None:
    assert file_name("onebot:42") == "users/onebot_42.md"
    assert file_name("lark:ou_7d8a6e6df7621556ce0d21922b676706") == (
        "users/lark_ou_7d8a6e6df7621556ce0d21922b676706.md"
    )
    assert file_name("console:local") == "users/console_local.md"
    hostile = [
        "onebot:../x",
        "onebot:..",
        "onebot:.",
        "onebot:a/b",
        "onebot:a\\b",
        "onebot:a\x00b",
        "onebot:/etc/passwd",
        "onebot:ABC",
        "onebot:abc~0",
        "onebot:" + "9" * 300,
        "onebot:群友",
    ]
    names = [file_name(u) for u in ["onebot:abc", *hostile]]
    assert len(set(names)) == len(names)
    assert len({n.casefold() for n in names}) == len(names)  # a case-blind disk too
    for name in names:
        head, _, base = name.partition("/")
        assert head == "users" and "/" not in base and "\\" not in base and "\x00" not in base
        assert not base.startswith(".") and len(base.encode()) <= 255
    # a kept name never has the hash mark, so no chosen id can take a hashed name
    assert "~" not in safe_name("onebot_42") and "~" in safe_name("onebot_ABC")


def test_the_guard_refuses_every_way_out(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "users").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "inside-link.md").symlink_to(root / "users")
    (root / "out").symlink_to(tmp_path / "outside")
    guard = WorkspaceFiles(root)
    assert guard.path("users/onebot_42.md") == root.resolve() / "users" / "onebot_42.md"
    assert guard.path("inside-link.md") == (root / "users").resolve()
    bad = ("../x.md", "users/../../x.md", "/etc/passwd", "", "users//x", "out/x.md", "a\x00")
    with capture_logs() as logs:
        for relative in bad:
            with pytest.raises(UnsafePath):
                guard.path(relative)
        with pytest.raises(UnsafePath):
            guard.path("out/x.md")  # asked again (a job's next tick): said once
    refused = [e["path"] for e in logs if e["event"] == "workspace_path_refused"]
    assert refused == list(bad)


async def test_a_symlink_to_outside_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text(PRECIOUS, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").symlink_to(outside)
    (ws / "users").symlink_to(elsewhere)
    memory = service(tmp_path)
    await memory.items.propose(
        candidates.admin_edit("公司在三楼", kind="fact", scope="global"), "a"
    )
    await memory.profiles.update("onebot:42", "身份与背景", "是护士", actor="t")
    memory.close()

    argv = ["--data-dir", str(tmp_path / "data"), "--workspace", str(ws), "memory", "sync"]
    result: Result = await asyncio.to_thread(CliRunner().invoke, cli_app, argv, env={})
    assert result.exit_code == 2, result.output
    assert "MEMORY.md: refused:" in result.stdout and "outside the workspace" in result.stdout
    assert "users/onebot_42.md: refused:" in result.stdout
    assert outside.read_text(encoding="utf-8") == PRECIOUS  # neither copied in nor written
    assert (ws / "MEMORY.md").is_symlink() and list(elsewhere.iterdir()) == []


async def test_daily_notes_and_dreams_stay_in_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (ws / "memory").symlink_to(tmp_path / "elsewhere")
    store = SqliteStore(tmp_path / "data" / "nahida.db")
    memory = MemoryService(store, workspace=ws)
    await memory.items.propose(
        candidates.admin_edit("公司在三楼", kind="fact", scope="global"), "a"
    )
    daily = DailyNotes(store, ws, UTC, settle=0.0)
    with pytest.raises(UnsafePath):
        await daily.catch_up()
    assert list((tmp_path / "elsewhere").iterdir()) == []
    (ws / "memory").unlink()
    assert await daily.catch_up() == 1  # nothing was lost meanwhile: the cursor waited
    memory.close()

    # a header read back from DREAMS.md names the month it is moved under
    journal = ws / "DREAMS.md"
    journal.write_text("# Dreams · ../../../stolen\n", encoding="utf-8")
    started = datetime(2026, 5, 1, tzinfo=UTC).timestamp()
    run = DreamRun(id="d_1", chat="onebot:group:1", trigger="schedule", started_at=started)
    await asyncio.to_thread(dreams_md.append, journal, [run], UTC)
    assert outside(tmp_path, "ws") == set()
    assert "## d_1" in journal.read_text(encoding="utf-8")

    journal.unlink()
    journal.symlink_to(tmp_path / "outside-dreams.md")
    with pytest.raises(UnsafePath):
        await asyncio.to_thread(dreams_md.append, journal, [run], UTC)
    assert not (tmp_path / "outside-dreams.md").exists()


def test_a_persona_outside_the_workspace_is_not_read(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n", encoding="utf-8")
    (ws / "PERSONA.md").symlink_to(secret)
    with capture_logs() as logs:
        assert Persona(ws)() == FALLBACK_PERSONA
    assert [e["path"] for e in logs if e["event"] == "workspace_path_refused"] == ["PERSONA.md"]
    os.unlink(ws / "PERSONA.md")
    (ws / "PERSONA.md").write_text("You are Nahida.\n", encoding="utf-8")
    persona = Persona(ws)
    assert persona() == "You are Nahida."


async def test_a_user_id_cannot_write_a_marker_into_its_file(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    memory = service(tmp_path)
    user = "onebot:x\n<!-- nahida:profile:end -->\n"
    await memory.profiles.update(user, "身份与背景", "是护士", actor="t")
    assert memory.markdown is not None
    first = await memory.markdown.sync()
    (path,) = [f.path for f in first.files if f.path.startswith("users/")]
    text = (tmp_path / "ws" / path).read_text(encoding="utf-8")
    file = tmp_path / "ws" / path
    file.write_text(text.replace("是护士", "是护士长"), encoding="utf-8")
    second = await memory.markdown.sync()
    (report,) = [f for f in second.files if f.path == path]
    assert not report.problems and report.counts["edited"] == 1
    memory.close()
