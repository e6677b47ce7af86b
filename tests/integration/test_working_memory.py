"""The working memory and the personal layers end to end (DESIGN §3, §5 step 2, §6, §7): a long
terminal chat through the real App, both SDKs over real HTTP to the fake servers, whose memory
answers (`tests.fakes.memory_model`) are made from what each request carried.

40 rounds: a stated rule, a tool call writing a profile bullet, an important fact; the rounds
that leave the hot window are summarised by the compress model (routed to the chat model's
cheaper sibling), the summary is rolled into cold facts, and the session's episode is written
when the console exits. A second run resumes the session: its request shows the summary, the
profile, the rules and the recalled cold fact, each in its place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nahida.app import Paths
from nahida.cli.doctor import diagnose, render
from nahida.memory import Viewer
from tests.fakes.llm_server import FakeAnthropicServer, FakeLLMServer, FakeOpenAIServer
from tests.helpers import (
    History,
    chat_through_console,
    config,
    conversation,
    memory_block,
    summary_block,
    system_of,
)

ME = "user:console:local"
ROUNDS = 40


def provider(server: FakeLLMServer) -> tuple[dict[str, Any], str, str]:
    """(config tree, chat model, the compress model routing derives from it)."""
    if isinstance(server, FakeAnthropicServer):
        kind, chat, cheap = "anthropic", "claude-sonnet-4-5", "claude-haiku-4-5"
    else:
        kind, chat, cheap = "openai", "gpt-4o", "gpt-4o-mini"
    tree = {"providers": {"main": {"type": kind, "base_url": server.url, "api_key": "k-test"}}}
    tree["models"] = {"chat": f"main/{chat}"}
    return tree, chat, cheap


@pytest.fixture(params=["openai", "anthropic"])
async def server(request: pytest.FixtureRequest) -> Any:
    cls = FakeOpenAIServer if request.param == "openai" else FakeAnthropicServer
    async with cls() as running:
        yield running


def lines() -> list[str]:
    said = [
        "以后回答我都用英文",
        "我是做什么工作的你记一下",
        "重要：项目代号是青鸟",
        "我喜欢乌龙茶",
    ]
    return said + [f"第{n}轮：我们继续聊话题{n}" for n in range(len(said) + 1, ROUNDS + 1)]


async def test_a_long_chat_keeps_summary_profile_rules_and_cold_facts_in_place(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    tree, chat_model, compress_model = provider(server)
    cfg = config(**tree)
    # the second chat request calls profile_update, then the model answers in words
    server.reply_text("Sure.")
    server.reply_tool_call(
        "profile_update", {"section": "身份与背景", "content": "是一名护士"}, call_id="call_p"
    )
    server.reply_text("Noted: you are a nurse.")
    out, _ = await chat_through_console(tmp_path, lines(), cfg)
    assert "Noted: you are a nurse." in out

    chats = [r.body for r in server.chat_requests]
    assert len(chats) == ROUNDS + 1  # one more for the tool round
    assert all(body["model"] == chat_model for body in chats)
    # a stated rule changes the next request; the tool's bullet is in the next system prompt
    assert "<behavioral_guidelines>" not in system_of(chats[0])
    assert "希望用英文回答" in system_of(chats[1])
    assert "是一名护士" not in system_of(chats[1]) and "是一名护士" in system_of(chats[3])

    summaries = server.memory_requests("summary")
    assert summaries and all(r.body["model"] == compress_model for r in summaries)
    assert len(server.memory_requests("roll")) == 1  # 20 rounds summarised → rolled once
    (episode,) = server.memory_requests("episode")  # the console exited
    assert episode.body["model"] == compress_model

    # every request stays within its budgets while the summary carries what left the window
    late = chats[-1]
    summary = summary_block(late)
    assert summary is not None and "第25轮" in summary
    shown = conversation(late)
    assert shown[-1] == f"第{ROUNDS}轮：我们继续聊话题{ROUNDS}"
    assert not any("第5轮" in text for text in shown)  # summarised, not verbatim
    assert 20 <= len(shown) - 1 <= 30  # the hot rounds and what no summary covers yet

    with History(tmp_path / "data" / "nahida.db") as db:
        items = db.items(Viewer(scopes=(ME,)))
        cold = [i for i in items if i.source == "compress"]
        rules = [i for i in items if i.kind == "procedure"]
    assert any("青鸟" in i.content for i in cold), [i.content for i in items]
    assert [r.content for r in rules] == ["希望用英文回答"]

    # the next run resumes the session: its summary, profile, rules and the cold fact return
    _resumed, _ = await chat_through_console(
        tmp_path, ["/resume last", "项目代号是什么？上次我们聊到哪了？"], cfg
    )
    body = server.chat_requests[-1].body
    system = system_of(body)
    assert system.index("## About the person") < system.index("<behavioral_guidelines>")
    assert "- 是一名护士" in system and "希望用英文回答" in system
    memory = memory_block(body)
    assert memory is not None
    qingniao = next(i for i in cold if "青鸟" in i.content)
    assert f"[{qingniao.id}]" in memory  # the cold fact, recalled
    assert "[episode ·" in memory  # the last session's episode
    assert summary_block(body) is not None
    texts = conversation(body)
    assert texts[-1] == "项目代号是什么？上次我们聊到哪了？"
    roles = [m["role"] for m in body["messages"] if m["role"] != "system"]
    assert roles[:4] == ["user", "assistant", "user", "assistant"]  # the two context pairs


async def test_a_failed_compaction_keeps_the_turns_and_is_counted(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    tree = provider(openai_server)[0]
    tree["providers"]["main"]["max_retries"] = 0
    cfg = config(**tree, session={"hot_size": 2, "compress_batch": 1})
    openai_server.memory_failures = 1  # the first memory request fails, later ones work
    await chat_through_console(tmp_path, [f"话题{n}" for n in range(1, 7)], cfg)
    with History(tmp_path / "data" / "nahida.db") as db:
        (session,) = db.sessions(None, 5)
        assert len(db.turns(session.id)) == 12  # nothing lost
        (row,) = db.sql(
            "SELECT summary, failures, last_error FROM session_summaries WHERE session_id = ?",
            session.id,
        )
    assert openai_server.memory_requests("summary")
    summary, failures, last_error = row
    assert failures == 1 and "ProviderServerError" in last_error and summary == ""
    report = await diagnose(cfg, Paths(None, tmp_path / "data", tmp_path / "workspace"))
    (failing,) = report["compaction_failing"]
    assert (failing["session"], failing["failures"]) == (session.id, 1)
    assert f"compaction of session {session.id} (console:private:local) failed 1×" in render(report)
