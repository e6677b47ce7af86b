"""End to end: plugins loaded into the real App, used from the console, next to broken ones."""

from __future__ import annotations

import io
import re
import textwrap
from pathlib import Path

from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.app import App, Paths, console_app
from nahida.commands import memory as memory_commands
from nahida.config import Config
from nahida.i18n import t
from nahida.plugins import LoadedPlugin, context_factory, load_plugins
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import History, config, openai_provider

REPO_PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
ITEM_ID = re.compile(r"\bm_[0-9a-f]{6}\b")

NO_WRITE = """
def setup(ctx):
    async def grab(call):
        await ctx.memory_store(call.args, subject=call.user)
        return "stored?"
    ctx.register_command("grab", grab)
"""

KEEPER = """
def setup(ctx):
    async def keep(turn, reply):
        text = turn.envelope.text
        if text.startswith("记得"):
            await ctx.memory_store(
                text.removeprefix("记得").strip(),
                subject=turn.envelope.sender.user,
                evidence=[],
            )
    ctx.register_hook(keep, name="keep")
"""


def add_plugin(root: Path, name: str, permissions: str, code: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(
        f"name: {name}\nversion: 0.1.0\npermissions: {permissions}\n", encoding="utf-8"
    )
    (folder / "plugin.py").write_text(textwrap.dedent(code), encoding="utf-8")


async def chat_with_plugins(
    tmp_path: Path, lines: list[str], folders: list[Path], cfg: Config | None = None
) -> tuple[str, App, list[LoadedPlugin]]:
    """The console app with /memory and the plugins of `folders` wired as app.py will wire them."""
    out = io.StringIO()
    console = ConsoleAdapter(
        stdin=io.StringIO("\n".join(lines) + "\n"), stdout=out, interactive=False
    )
    app = console_app(cfg or Config(), Paths(None, tmp_path / "data", tmp_path / "ws"), console)
    commands = app.runner.commands
    if not commands.knows("/memory"):
        memory_commands.register(commands)
    loaded: list[LoadedPlugin] = []
    for folder in folders:
        loaded.extend(load_plugins(folder, context_factory(app.memory, commands)))
    app.runner.hooks.extend(hook for plugin in loaded for hook in plugin.hooks)
    await app.run()
    return out.getvalue(), app, loaded


async def test_the_memo_plugin_stores_and_finds_notes(tmp_path: Path) -> None:
    out, _, loaded = await chat_with_plugins(
        tmp_path,
        ["/memo 周五下午交周报", "/memo find 周报", "/memory list", "/memo", "/help"],
        [REPO_PLUGINS],
    )
    assert [p.name for p in loaded] == ["memo"]
    lines = out.splitlines()
    found = ITEM_ID.search(lines[0])
    assert found and lines[0] == f"备忘已记下（{found.group(0)}）。"
    note = found.group(0)
    assert lines[1] == f"{note} · 周五下午交周报"
    assert any(line.startswith(f"{note} · fact · ") for line in lines)  # /memory sees it too
    assert "用法：/memo" in out and "/memo — 备忘" in out
    with History(tmp_path / "data" / "nahida.db") as db:
        (row,) = db.sql("SELECT scope, source, subject_user FROM memory_items WHERE id = ?", note)
    assert tuple(row) == ("user:console:local", "plugin:memo", "console:local")


async def test_memo_in_english_refuses_secrets(tmp_path: Path) -> None:
    out, _, _ = await chat_with_plugins(
        tmp_path,
        ["/memo password: hunter2hunter2", "/memo find hunter2"],
        [REPO_PLUGINS],
        config(bot={"language": "en"}),
    )
    assert out.splitlines() == [
        "The note seems to contain a key or password; nothing was saved.",
        "No matching notes.",
    ]


async def test_broken_and_unpermitted_plugins_do_not_stop_the_bot(tmp_path: Path) -> None:
    extra = tmp_path / "more_plugins"
    add_plugin(extra, "grabber", "[memory.read]", NO_WRITE)  # declares read, tries to write
    add_plugin(extra, "crasher", "[]", "def setup(ctx):\n    raise RuntimeError('boom')\n")
    (extra / "nomanifest").mkdir()
    out, _, loaded = await chat_with_plugins(
        tmp_path, ["/grab 偷偷记一笔", "/memo 还能用", "/crasher"], [REPO_PLUGINS, extra]
    )
    assert sorted(p.name for p in loaded) == ["grabber", "memo"]
    lines = out.splitlines()
    assert lines[0] == t("command_failed", "zh")  # the PermissionError was logged, not stored
    assert lines[1].startswith("备忘已记下")
    assert lines[2] == t("unknown_command", "zh", name="crasher")
    with History(tmp_path / "data" / "nahida.db") as db:
        contents = [r[0] for r in db.sql("SELECT content FROM memory_items")]
    assert contents == ["还能用"]


async def test_a_plugin_hook_runs_after_each_answered_turn(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    hooks = tmp_path / "hooks"
    add_plugin(hooks, "keeper", "[memory.write]", KEEPER)
    out, _, loaded = await chat_with_plugins(
        tmp_path,
        ["记得 我的工位在三楼东侧", "今天天气不错", "/memory search 工位"],
        [hooks],
        config(**openai_provider(openai_server.url)),
    )
    assert [h.name for p in loaded for h in p.hooks] == ["plugin:keeper:keep"]
    lines = out.splitlines()
    assert lines[:2] == ["echo: 记得 我的工位在三楼东侧", "echo: 今天天气不错"]
    kept = [line for line in lines if ITEM_ID.match(line)]
    assert len(kept) == 1 and kept[0].endswith("我的工位在三楼东侧")
