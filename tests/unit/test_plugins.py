"""Plugins: manifests, loading (broken ones skipped with a report), commands, hooks, permissions."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from nahida.commands import memory as memory_commands
from nahida.commands.router import CommandContext, CommandRouter
from nahida.envelope import ChatKey, UserKey
from nahida.hooks import TurnContext
from nahida.i18n import Language, t
from nahida.memory import MemoryService, Viewer
from nahida.memory.store.sqlite import SqliteStore
from nahida.plugins import (
    Evidence,
    LoadedPlugin,
    Manifest,
    PluginContext,
    PluginError,
    PluginPermissionError,
    SecretRefused,
    context_factory,
    load_plugins,
    read_manifest,
)
from tests.helpers import envelope

REPO_PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
BOTH = "[memory.read, memory.write]"

ECHO = """
from nahida.plugins import PluginCall, PluginContext

def setup(ctx: PluginContext) -> None:
    async def echo(call: PluginCall) -> str:
        return f"{call.language}|{call.chat}|{call.user}|{call.args}"
    ctx.register_command("echo", echo, help={"zh": "回声", "en": "echo back"})
"""


def write_plugin(
    root: Path, folder: str, code: str | None = ECHO, manifest: str | None = None, **files: str
) -> Path:
    path = root / folder
    path.mkdir(parents=True)
    if manifest is None:
        manifest = f"name: {folder}\nversion: 0.1.0\npermissions: {BOTH}\n"
    (path / "plugin.yaml").write_text(manifest, encoding="utf-8")
    if code is not None:
        (path / "plugin.py").write_text(textwrap.dedent(code), encoding="utf-8")
    for name, text in files.items():
        (path / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return path


class Harness:
    def __init__(self, store: SqliteStore, tmp_path: Path, mode: Any = "auto_safe") -> None:
        self.store = store
        self.root = tmp_path / "plugins"
        self.root.mkdir(exist_ok=True)
        self.memory = MemoryService(store, mode=mode)
        self.router = CommandRouter()
        memory_commands.register(self.router)

    def load(self, **kw: Any) -> tuple[list[LoadedPlugin], list[dict[str, Any]]]:
        with capture_logs() as logs:
            loaded = load_plugins(self.root, context_factory(self.memory, self.router), **kw)
        return loaded, [e for e in logs if e["event"] == "plugin_skipped"]

    def context(self, permissions: str = BOTH, name: str = "probe") -> PluginContext:
        manifest = Manifest.model_validate(
            {"name": name, "version": "1", "permissions": _yaml_list(permissions)}
        )
        return PluginContext(manifest, self.root / name, memory=self.memory, router=self.router)

    async def send(
        self,
        text: str,
        *,
        chat: str = "test:private:u1",
        user: str = "test:u1",
        lang: Language = "zh",
    ) -> str:
        ctx = CommandContext(envelope(text, chat=chat, user=user), lang, False, self.memory)
        return await self.router.dispatch(ctx, text)


def _yaml_list(text: str) -> list[str]:
    return [p.strip() for p in text.strip("[]").split(",") if p.strip()]


@pytest.fixture
def h(store: SqliteStore, tmp_path: Path) -> Harness:
    return Harness(store, tmp_path)


# loading ------------------------------------------------------------------------------------


async def test_a_plugin_registers_a_command_with_bilingual_help(h: Harness) -> None:
    write_plugin(h.root, "echo")
    loaded, skipped = h.load()
    assert skipped == []
    assert [(p.name, p.commands, p.manifest.permissions) for p in loaded] == [
        ("echo", ("echo",), ("memory.read", "memory.write"))
    ]
    reply = await h.send("/echo 你好 世界", chat="test:group:g", user="test:bob", lang="en")
    assert reply == "en|test:group:g|test:bob|你好 世界"
    assert "/echo — 回声" in await h.send("/help")
    assert "/echo — echo back" in await h.send("/help", lang="en")


async def test_entry_module_can_import_its_siblings(h: Harness) -> None:
    code = """
    from . import texts

    def setup(ctx):
        async def hi(call):
            return texts.HELLO
        ctx.register_command("hi", hi)
    """
    write_plugin(h.root, "greeter", code, texts="HELLO = 'hello from a sibling'\n")
    loaded, skipped = h.load()
    assert skipped == [] and loaded[0].commands == ("hi",)
    assert await h.send("/hi") == "hello from a sibling"


BAD_MANIFESTS = [
    ("name: [unclosed\n", "cannot be read"),
    ("- just\n- a list\n", "must be a mapping"),
    ("version: 1.0\n", "name: Field required"),
    ("name: Bad Name\nversion: '1'\n", "name: String should match pattern"),
    ("name: x\nversion: '1'\npermissions: [memory.delete]\n", "permissions.0"),
    ("name: x\nversion: '1'\nperms: [memory.read]\n", "perms: Extra inputs are not permitted"),
    ("name: x\nversion: '1'\nentry: ../evil\n", "entry: String should match pattern"),
]


@pytest.mark.parametrize(("manifest", "reason"), BAD_MANIFESTS)
async def test_a_broken_manifest_is_reported_and_skipped(
    h: Harness, manifest: str, reason: str
) -> None:
    bad = write_plugin(h.root, "broken", manifest=manifest)
    write_plugin(h.root, "echo")
    loaded, skipped = h.load()
    assert [p.name for p in loaded] == ["echo"]
    assert len(skipped) == 1
    assert skipped[0]["path"] == str(bad) and skipped[0]["log_level"] == "warning"
    assert reason in skipped[0]["error"], skipped[0]["error"]


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("def setup(ctx):\n    raise RuntimeError('boom')\n", "setup() raised RuntimeError: boom"),
        ("def setup(ctx) -> None\n", "importing plugin.py failed: SyntaxError"),
        ("import no_such_module_anywhere\n", "ModuleNotFoundError"),
        ("raise ValueError('at import')\n", "ValueError: at import"),
        ("SETUP = 1\n", "has no setup(ctx) function"),
        ("async def setup(ctx):\n    pass\n", "must be a plain function, not async"),
        (None, "entry module 'plugin' not found"),
    ],
)
async def test_a_plugin_that_fails_to_load_is_reported_and_skipped(
    h: Harness, code: str | None, reason: str
) -> None:
    bad = write_plugin(h.root, "bad", code)
    write_plugin(h.root, "echo")
    loaded, skipped = h.load()
    assert [p.name for p in loaded] == ["echo"]
    assert [(s["path"], reason in s["error"]) for s in skipped] == [(str(bad), True)], skipped
    assert await h.send("/echo ok") == "zh|test:private:u1|test:u1|ok"


async def test_nothing_of_a_failed_setup_takes_effect(h: Harness) -> None:
    code = """
    def setup(ctx):
        async def half(call):
            return "should not exist"
        ctx.register_command("half", half)
        raise RuntimeError("after registering")
    """
    write_plugin(h.root, "half", code)
    loaded, skipped = h.load()
    assert loaded == [] and len(skipped) == 1
    assert not h.router.knows("/half")
    assert "/half" not in await h.send("/help")


@pytest.mark.parametrize("taken", ["memory", "help"])
async def test_a_plugin_cannot_take_an_existing_command(h: Harness, taken: str) -> None:
    code = f"""
    def setup(ctx):
        async def mine(call):
            return "mine"
        ctx.register_command("other", mine)
        ctx.register_command("{taken}", mine)
    """
    write_plugin(h.root, "greedy", code)
    loaded, skipped = h.load()
    assert loaded == []
    assert f"command already registered: /{taken}" in skipped[0]["error"]
    assert not h.router.knows("/other")  # all or nothing
    assert await h.send("/memory") == t("memory_usage", "zh")


async def test_two_plugins_with_one_name_keep_the_first(h: Harness) -> None:
    write_plugin(h.root, "a_echo", manifest="name: echo\nversion: '1'\n")
    second = write_plugin(h.root, "b_echo", manifest="name: echo\nversion: '2'\n")
    loaded, skipped = h.load()
    assert [(p.name, p.manifest.version) for p in loaded] == [("echo", "1")]
    assert skipped[0]["path"] == str(second) and "already named 'echo'" in skipped[0]["error"]


async def test_enabled_and_disabled(h: Harness, tmp_path: Path) -> None:
    for name in ("one", "two", "three"):
        write_plugin(h.root, name, ECHO.replace('"echo"', f'"{name}"'))
    assert [p.name for p in h.load(enabled=["two", "three"], disabled=["three"])[0]] == ["two"]
    assert h.load(enabled=[])[0] == []
    assert load_plugins(tmp_path / "missing", context_factory(h.memory, CommandRouter())) == []


def test_hidden_folders_and_files_are_ignored(h: Harness) -> None:
    (h.root / "__pycache__").mkdir()
    (h.root / ".git").mkdir()
    (h.root / "README.md").write_text("notes", encoding="utf-8")
    assert h.load() == ([], [])


def test_read_manifest_names_the_folder(tmp_path: Path) -> None:
    with pytest.raises(PluginError) as caught:
        read_manifest(tmp_path)
    assert str(tmp_path) in str(caught.value) and "no plugin.yaml" in str(caught.value)


def test_the_example_plugin_declares_both_permissions() -> None:
    manifest = read_manifest(REPO_PLUGINS / "memo")
    assert manifest.name == "memo" and manifest.entry == "plugin"
    assert set(manifest.permissions) == {"memory.read", "memory.write"}


# hooks --------------------------------------------------------------------------------------


async def test_post_turn_hooks_are_handed_to_the_app(h: Harness) -> None:
    code = """
    SEEN = []

    def setup(ctx):
        async def after(turn, reply):
            SEEN.append((turn.envelope.text, reply))
        ctx.register_hook(after, name="watch")
    """
    write_plugin(h.root, "watcher", code)
    loaded, _ = h.load()
    (hook,) = loaded[0].hooks
    assert hook.name == "plugin:watcher:watch"
    turn = TurnContext(envelope("你好"), "s1", None, "zh", False)  # type: ignore[arg-type]
    await hook.after_turn(turn, "回答")
    import nahida_plugin_watcher.plugin as module  # type: ignore[import-not-found]

    assert module.SEEN == [("你好", "回答")]


# permissions and the memory API -------------------------------------------------------------


async def test_store_without_write_permission_names_plugin_and_permission(h: Harness) -> None:
    ctx = h.context("[memory.read]", name="reader")
    with pytest.raises(PluginPermissionError) as caught:
        await ctx.memory_store("笔记", subject="test:u1")
    message = str(caught.value)
    assert "'reader'" in message and "'memory.write'" in message and "plugin.yaml" in message
    assert caught.value.plugin == "reader" and caught.value.permission == "memory.write"
    assert isinstance(caught.value, PermissionError)


async def test_search_without_read_permission_names_plugin_and_permission(h: Harness) -> None:
    ctx = h.context("[memory.write]", name="writer")
    with pytest.raises(PluginPermissionError, match=r"'writer'.*'memory\.read'"):
        await ctx.memory_search("笔记", chat="test:private:u1", user="test:u1")


async def test_global_writes_need_their_own_permission(h: Harness) -> None:
    with pytest.raises(PluginPermissionError, match=r"memory\.write\.global"):
        await h.context().memory_store("公司地址在杭州", audience="global")
    ctx = h.context("[memory.write, memory.write.global]")
    result = await ctx.memory_store("公司地址在杭州", audience="global")
    item = await h.memory.items.get(result.item_id or "")
    assert item is not None and item.scope == "global"


async def test_store_goes_through_the_write_path(h: Harness) -> None:
    ctx = h.context(name="notes")
    where = ChatKey.parse("test:group:g")
    evidence = Evidence(chat=str(where), message_id="42", time=1.0)
    result = await ctx.memory_store(
        "周五交周报", audience="chat", chat=where, speaker="test:bob", evidence=[evidence]
    )
    assert result.outcome == "created" and result.item_id
    item = await h.memory.items.get(result.item_id)
    assert item is not None
    assert (item.scope, item.source, item.speaker_user, item.evidence) == (
        "chat:test:group:g",
        "plugin:notes",
        "test:bob",
        (evidence,),
    )
    again = await ctx.memory_store("周五交周报", audience="chat", chat="test:group:g")
    assert (again.outcome, again.item_id) == ("merged", item.id)
    viewer = Viewer(chat=where, user=UserKey.parse("test:bob"))
    explanation = await h.memory.items.why(item.id, viewer)
    assert explanation is not None
    assert [e.actor for e in explanation.events] == ["plugin:notes", "plugin:notes"]


async def test_a_user_note_belongs_to_the_subject(h: Harness) -> None:
    result = await h.context().memory_store("我对花生过敏", subject=UserKey("test", "u1"))
    item = await h.memory.items.get(result.item_id or "")
    assert item is not None
    assert (item.scope, item.sensitivity, item.subject_user, item.speaker_user) == (
        "user:test:u1",
        "private",
        "test:u1",
        "test:u1",
    )
    assert item.evidence[0].ref == "plugin:probe"  # no evidence given: the plugin is the source
    reply = await h.send(f"/memory forget {item.id}")  # the subject may forget it
    assert reply == t("memory_forgotten", "zh", id=item.id)


async def test_a_secret_is_refused_to_the_plugin_and_nothing_stored(h: Harness) -> None:
    with pytest.raises(SecretRefused):
        await h.context().memory_store(
            "token=ghp_abcdefghijklmnopqrstuvwxyz0123456789", subject="t:u"
        )
    assert (
        h.store.db.call(lambda c: c.execute("SELECT count(*) FROM memory_items").fetchone()[0]) == 0
    )


async def test_manual_review_makes_plugin_writes_wait(store: SqliteStore, tmp_path: Path) -> None:
    h = Harness(store, tmp_path, mode="manual_review")
    result = await h.context().memory_store("下周一放假", audience="chat", chat="test:group:g")
    assert result.outcome == "pending" and result.candidate_id and result.item_id is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"audience": "user"}, "needs subject="),
        ({"audience": "chat"}, "needs chat="),
        ({"subject": "test:u1", "kind": "gossip"}, "kind must be one of"),
        ({"subject": "test:u1", "confidence": 1.5}, "between 0 and 1"),
        ({"subject": "no-colon"}, "user key"),
    ],
)
async def test_store_arguments_are_checked(
    h: Harness, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        await h.context().memory_store("内容", **kwargs)


async def test_search_sees_what_that_person_sees_in_that_chat(h: Harness) -> None:
    writer = h.context("[memory.write, memory.write.global]")
    await writer.memory_store("Alice 的乌龙茶偏好", subject="test:alice")  # private to Alice
    await writer.memory_store("群里的乌龙茶团购", audience="chat", chat="test:group:g")
    await writer.memory_store("公司茶水间有乌龙茶", audience="global")
    reader = h.context()

    async def texts(**kw: Any) -> set[str]:
        return {hit.text for hit in await reader.memory_search("乌龙茶", 10, **kw)}

    assert await texts(chat="test:private:alice", user="test:alice") == {
        "Alice 的乌龙茶偏好",
        "公司茶水间有乌龙茶",
    }
    assert await texts(chat="test:group:g", user="test:alice") == {
        "群里的乌龙茶团购",
        "公司茶水间有乌龙茶",
    }
    assert await texts(chat="test:private:bob", user="test:bob") == {"公司茶水间有乌龙茶"}
    assert await texts() == {"公司茶水间有乌龙茶"}
    with pytest.raises(ValueError, match="needs chat="):
        await reader.memory_search("乌龙茶", user="test:alice")
