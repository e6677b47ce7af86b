"""The memory tools, behavioural rules, confidence and episodes' triggers (DESIGN §6, §7):
through the real App and runner, the OpenAI SDK over HTTP to the fake server (tool calls), or an
in-process echo model where there is no wire."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from nahida.app import App, Paths, build_model_router
from nahida.config import Config
from nahida.envelope import ChatKey, Role, UserKey
from nahida.hooks import TurnContext
from nahida.i18n import t
from nahida.memory import Viewer
from nahida.memory.turn import MemoryTools
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import (
    History,
    Silent,
    chat_through_console,
    config,
    envelope,
    openai_provider,
    system_of,
)

ME = Viewer(scopes=("user:console:local",))


def tool_results(server: FakeOpenAIServer) -> list[str]:
    """Each tool answer once (a later round of the same turn carries the earlier ones too)."""
    answers = {
        m["tool_call_id"] + m["content"]: m["content"]
        for r in server.chat_requests
        for m in r.body["messages"]
        if m.get("role") == "tool"
    }
    return list(answers.values())


async def test_the_model_writes_searches_and_sets_a_rule_through_its_tools(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    server = openai_server
    server.reply_tool_call("memory_write", {"content": "我的车是蓝色的", "category": "knowledge"})
    server.reply_text("记下了。")
    server.reply_tool_call("procedure_write", {"rule": "回答时先给结论", "context": "技术问题"})
    server.reply_text("好的。")
    server.reply_tool_call("memory_search", {"query": "车是什么颜色"})
    server.reply_text("蓝色。")
    server.reply_tool_call("memory_write", {"content": "我喜欢猫"}, call_id="c1")
    server.reply_tool_call(
        "memory_write",
        {"content": "我的 key 是 sk-abcdef0123456789abcdef01", "category": "knowledge"},
    )
    server.reply_text("不能保存密钥。")
    cfg = config(**openai_provider(server.url))
    lines = [
        "我的车是蓝色的，记一下",
        "以后技术问题先给结论",
        "我的车什么颜色？",
        "存一下我的key",
        "/rules",
    ]
    out, _ = await chat_through_console(tmp_path, lines, cfg)

    written, rule, found, missing, secret = tool_results(server)
    assert written.startswith("created m_")
    assert rule.startswith("created m_")
    assert "车是蓝色" in found and "Treat memory as helpful context" in found
    assert missing.startswith("error:") and "category" in missing
    assert secret.startswith("error:") and "secret" in secret
    with History(tmp_path / "data" / "nahida.db") as db:
        items = {i.content: i for i in db.items(ME)}
        car = db.item(written.split()[1])
        stored = json.dumps(db.sql("SELECT * FROM memory_items"), ensure_ascii=False, default=str)
    procedure = items["回答时先给结论"]
    assert car is not None and car.content == "我的车是蓝色的"
    assert (car.source, car.confidence, car.kind) == ("agent_proactive", 0.95, "fact")
    assert (procedure.kind, procedure.title, procedure.scope) == (
        "procedure",
        "技术问题",
        "user:console:local",
    )
    assert "sk-abcdef" not in stored
    # the rule is in every later request, in its place, and `/rules` lists it
    later = system_of(server.chat_requests[4].body)
    assert f"- [{procedure.id}] rule for 你: “回答时先给结论” (when: “技术问题”)" in later
    assert t("rules_header", "zh", n=1) in out and f"{procedure.id} · user · " in out

    out, _ = await chat_through_console(tmp_path, [f"/rules forget {procedure.id}", "你好"], cfg)
    assert t("rules_forgotten", "zh", id=procedure.id) in out
    assert "<behavioral_guidelines>" not in system_of(server.chat_requests[-1].body)


async def test_profile_update_tool_through_the_anthropic_sdk(tmp_path: Path) -> None:
    from tests.fakes.llm_server import FakeAnthropicServer

    async with FakeAnthropicServer() as server:
        server.reply_tool_call("profile_update", {"section": "目标与方向", "content": "想学日语"})
        server.reply_text("加油！")
        server.reply_tool_call("profile_update", {"section": "星座", "content": "双子"})
        server.reply_text("好。")
        cfg = config(
            providers={
                "c": {"type": "anthropic", "base_url": server.url, "api_key": "k", "model": "m"}
            }
        )
        await chat_through_console(tmp_path, ["我想学日语", "我是双子座", "再见"], cfg)
        results = [
            b["content"]
            for r in server.chat_requests
            for m in r.body["messages"]
            for b in (m["content"] if isinstance(m["content"], list) else [])
            if b.get("type") == "tool_result"
        ]
        assert results[0].startswith("profile section 目标与方向: added p_")
        assert results[1].startswith("error:") and "基础特征" in results[1]  # the sections
        assert "### 目标与方向\n- 想学日语" in system_of(server.chat_requests[-1].body)


def echo_app(tmp_path: Path, **tree: Any) -> App:
    model = ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "m"}))
    cfg = Config.model_validate(tree)
    app = App(cfg, Paths(None, tmp_path / "d", tmp_path / "w"), adapters=[Silent()], model=model)
    app.memory.working.schedule = None  # the app is not running: background work runs in place
    return app


async def test_a_members_rule_for_the_group_is_theirs_an_admins_is_the_groups(
    tmp_path: Path,
) -> None:
    app = echo_app(tmp_path)
    group = "test:group:g1"
    try:
        await app.runner.handle(envelope("以后回复都用英文", chat=group, user="test:bob"))
        await app.runner.handle(
            envelope("不要用韩语", chat=group, user="test:owner", role=Role.OWNER)
        )
        bob = await app.memory.procedures.in_force(
            Viewer(ChatKey.parse(group), UserKey.parse("test:bob"))
        )
        alice = await app.memory.procedures.in_force(
            Viewer(ChatKey.parse(group), UserKey.parse("test:alice"))
        )
        assert sorted((r.content, r.scope) for r in bob) == [
            ("不要用韩语回答", f"chat:{group}"),
            ("用英文回答", "user:test:bob"),
        ]
        assert [r.content for r in alice] == ["不要用韩语回答"]  # Bob's rule is not hers

        tools = MemoryTools(app.memory)
        member = TurnContext(envelope("x", chat=group, user="test:bob"), "s", None, "zh", False)  # type: ignore[arg-type]
        refused = await tools.procedure_write({"rule": "都用日语", "for_chat": True}, member)
        assert refused.startswith("error:") and "without for_chat" in refused
        owner = TurnContext(
            envelope("x", chat=group, user="test:owner", role=Role.OWNER),
            "s",
            None,
            "zh",
            False,  # type: ignore[arg-type]
        )
        assert (
            await tools.procedure_write({"rule": "都用日语", "for_chat": True}, owner)
        ).startswith("created")
        # a newer rule of the same slot supersedes: English → Chinese for Bob
        await app.runner.handle(envelope("以后回复都用中文", chat=group, user="test:bob"))
        bob = await app.memory.procedures.in_force(
            Viewer(ChatKey.parse(group), UserKey.parse("test:bob"))
        )
        assert "用英文回答" not in [r.content for r in bob] and "用中文回答" in [
            r.content for r in bob
        ]
    finally:
        app.memory.close()


async def test_unused_memories_decay_and_the_unsure_are_not_injected(tmp_path: Path) -> None:
    app = echo_app(tmp_path)
    memory = app.memory
    chat = ChatKey.parse("test:private:u1")
    user = UserKey.parse("test:u1")
    try:
        said = await memory.items.remember("我喜欢乌龙茶", chat=chat, user=user)
        inferred = await memory.items.remember("我喜欢乌龙茶的香味", chat=chat, user=user)
        old = time.time() - 40 * 86400
        db = History(memory.store)  # type: ignore[arg-type]
        db.sql(
            "UPDATE memory_items SET updated_at = ?, source = 'compress', confidence = 0.32"
            " WHERE id = ?",
            old,
            inferred.item_id,
        )
        db.sql("UPDATE memory_items SET updated_at = ? WHERE id = ?", old, said.item_id)
        assert await memory.items.decay(30 * 86400, 0.05, 0.1) == 1  # the explicit one keeps its
        item = await memory.items.get(str(inferred.item_id))
        assert item is not None and round(item.confidence, 2) == 0.27
        viewer = Viewer(chat, user)
        block = await memory.recall.block("乌龙茶", viewer, frozenset(), limit=15, mode="lexical")
        assert block is not None and f"[{said.item_id}]" in block
        assert f"[{inferred.item_id}]" not in block  # below 0.3: never injected
    finally:
        memory.close()


async def test_a_long_gap_and_new_end_a_session_with_an_episode(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    # messages of a day in May, answered now: no apology for being late; the fake server writes
    # the episode (an echo is not the JSON an episode is asked for)
    tree = {"session": {"idle_split_minutes": 60}, "bot": {"max_reply_delay": 0}}
    router = build_model_router(config(**openai_provider(openai_server.url)))
    cfg = Config.model_validate(tree)
    app = App(cfg, Paths(None, tmp_path / "d", tmp_path / "w"), adapters=[Silent()], model=router)
    app.memory.working.schedule = None  # the app is not running: background work runs in place
    start = datetime(2026, 5, 1, 9, tzinfo=UTC)
    try:
        for n, text in enumerate(["我们聊聊旅行计划", "去京都怎么样", "三月去"]):
            await app.runner.handle(envelope(text, time=start + timedelta(minutes=n)))
        await app.runner.handle(envelope("新的一天", time=start + timedelta(hours=5)))
        (episode,) = await app.memory.episodes.of_chat("test:private:u1")
        assert episode.turn_count == 6 and "旅行" in episode.summary + " ".join(episode.keywords)
        session = await app.memory.sessions.current("test:private:u1")
        assert session is not None and episode.session_id != session
        found = await app.memory.recall.search(
            app.memory.recall.query("上次我们聊到哪了？", Viewer(ChatKey.parse("test:private:u1")))
        )
        assert found and found[0].kind == "episode" and found[0].id == episode.id
    finally:
        app.memory.close()
        await router.aclose()
