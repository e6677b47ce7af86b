"""A profile bullet is explained like any memory, to whoever may see it, and a person without a
profile can be given a first bullet by hand: `/memory why p_…` through the real command router,
`nahida memory why p_…` and `nahida profile edit USER` through the typer app (in a thread), on a
real SQLite file and workspace."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path

from typer.testing import CliRunner, Result

from nahida.cli import app
from nahida.commands import memory as memory_commands
from nahida.commands.router import CommandContext, CommandRouter
from nahida.i18n import Language, t
from nahida.memory import MemoryService
from nahida.memory.store.sqlite import SqliteStore
from tests.helpers import History, envelope

ME, SOMEONE = "onebot:42", "onebot:7"
MY_DM, GROUP = "onebot:private:42", "onebot:group:1"


def service(tmp_path: Path) -> MemoryService:
    return MemoryService(SqliteStore(tmp_path / "data" / "nahida.db"), workspace=tmp_path / "ws")


async def cli(tmp_path: Path, *args: str, **env: str) -> Result:
    argv = ["--data-dir", str(tmp_path / "data"), "--workspace", str(tmp_path / "ws"), *args]
    return await asyncio.to_thread(CliRunner().invoke, app, argv, env=env)


async def ask(memory: MemoryService, text: str, chat: str, user: str, lang: Language = "zh") -> str:
    router = CommandRouter()
    memory_commands.register(router)
    ctx = CommandContext(envelope(text, chat=chat, user=user), lang, False, memory)
    return await router.dispatch(ctx, text)


async def bullets(memory: MemoryService) -> tuple[str, str, str]:
    """My private bullet (later replaced in its file), my public one, someone else's."""
    await memory.profiles.update(ME, "身份与背景", "是护士", actor="agent", chat=MY_DM)
    await memory.profiles.update(
        ME, "工作与沟通方式", "喜欢简短的回答", sensitivity="public", chat=GROUP, actor="agent"
    )
    await memory.profiles.update(SOMEONE, "身份与背景", "住在杭州", actor="agent")
    mine = {e.text: e.id for e in await memory.profiles.entries(ME, public_only=False)}
    (theirs,) = await memory.profiles.entries(SOMEONE, public_only=False)
    return mine["是护士"], mine["喜欢简短的回答"], theirs.id


async def test_memory_why_explains_a_profile_bullet_to_whom_may_see_it(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir(parents=True)
    memory = service(tmp_path)
    private, public, theirs = await bullets(memory)
    assert memory.markdown is not None
    await memory.markdown.sync()
    path = tmp_path / "ws" / "users" / "onebot_42.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("是护士", "是护士长"), encoding="utf-8"
    )
    await memory.markdown.sync()  # the admin's edit: the bullet replaced, audited
    (now,) = [e for e in await memory.profiles.entries(ME, public_only=False) if "护士" in e.text]

    reply = await ask(memory, f"/memory why {private}", MY_DM, ME)
    lines = reply.splitlines()
    assert lines[0] == f"{private} · 画像 · 身份与背景 · {t('memory_status_archived', 'zh')}"
    assert lines[1] == "是护士"
    assert "agent_proactive" in lines[2] and MY_DM in lines[2]
    assert lines[3] == t("memory_why_history", "zh")
    assert "创建 · agent" in lines[4]
    assert f"归档 · human_edit:users/onebot_42.md · replaced by {now.id}" in lines[5]
    edited = await ask(memory, f"/memory why {now.id}", MY_DM, ME, "en")
    assert edited.splitlines()[0] == f"{now.id} · profile · 身份与背景 · active"
    assert "replaced · human_edit:users/onebot_42.md" in edited and "human_edit" in edited

    # in a group only my public bullets; never anyone else's, anywhere
    in_group = await ask(memory, f"/memory why {public}", GROUP, ME)
    assert in_group.splitlines()[1] == "喜欢简短的回答"
    for asked, chat in ((private, GROUP), (theirs, MY_DM), (theirs, GROUP), ("p_000000", MY_DM)):
        assert await ask(memory, f"/memory why {asked}", chat, ME) == t(
            "memory_not_found", "zh", id=asked
        )
    memory.close()

    shown = await cli(tmp_path, "memory", "why", private)
    assert shown.exit_code == 0, shown.output
    out = shown.stdout.splitlines()
    assert out[0].startswith(f"{private}  profile · 身份与背景  archived  {ME}  ")
    assert out[0].endswith("是护士")
    assert out[1] == f"source agent_proactive · private · said in {MY_DM}"
    assert any(f"archive by human_edit:users/onebot_42.md · replaced by {now.id}" in x for x in out)
    as_json = json.loads((await cli(tmp_path, "memory", "why", theirs, "--json")).stdout)
    assert as_json["entry"]["user"] == SOMEONE and as_json["entry"]["text"] == "住在杭州"
    assert [e["action"] for e in as_json["events"]] == ["create"]
    missing = await cli(tmp_path, "memory", "why", "p_000000")
    assert missing.exit_code == 1 and "no item p_000000" in missing.stderr


def _editor(tmp_path: Path, body: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys\nfrom pathlib import Path\npath = Path(sys.argv[1])\n"
        "text = path.read_text(encoding='utf-8')\n"
        f"{body}\npath.write_text(text, encoding='utf-8')\n",
        encoding="utf-8",
    )
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


async def test_profile_edit_gives_a_person_a_first_bullet(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir(parents=True)
    service(tmp_path).close()
    editor = _editor(
        tmp_path, "text = text.replace('### 目标与方向\\n', '### 目标与方向\\n\\n- 想学吉他\\n')"
    )
    result = await cli(tmp_path, "profile", "edit", SOMEONE, EDITOR=editor)
    assert result.exit_code == 0, result.output
    path = tmp_path / "ws" / "users" / "onebot_7.md"
    assert result.stdout == f"{path}: edited 0, added 1, archived 0, refused 0\n"
    shown = await cli(tmp_path, "profile", "show", SOMEONE, "--json")
    assert [(b["section"], b["text"], b["source"]) for b in json.loads(shown.stdout)] == [
        ("目标与方向", "想学吉他", "human_edit")
    ]
    assert "[p_" in path.read_text(encoding="utf-8")

    # opened and closed without a bullet: nothing written, no file left behind
    nothing = await cli(tmp_path, "profile", "edit", "onebot:8", EDITOR="true")
    assert nothing.exit_code == 0, nothing.output
    assert not (tmp_path / "ws" / "users" / "onebot_8.md").exists()
    with History(tmp_path / "data" / "nahida.db") as db:
        assert db.sql("SELECT count(*) FROM profile_entries WHERE user = 'onebot:8'")[0][0] == 0
