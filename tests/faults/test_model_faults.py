"""What the bot survives from a model endpoint that misbehaves: a 200 answer whose body is not JSON,
an answer of millions of characters, an episode answer that is not the JSON it was asked for.

Both SDKs talk over real HTTP to the fake servers (`tests/fakes/llm_server.py`); the chat goes
through the real console app and SQLite.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from nahida.app import Paths, build_model_router, memory_for
from nahida.cli.doctor import diagnose, render
from nahida.config import Config
from nahida.hooks import TurnContext
from nahida.i18n import t
from nahida.memory import Turn
from nahida.providers.base import ToolSpec
from nahida.tools import TOOL_CHARS
from tests.fakes.llm_server import FakeAnthropicServer, FakeLLMServer, FakeOpenAIServer
from tests.helpers import History, chat_through_console, config, openai_provider


@pytest.fixture(params=["openai", "anthropic"])
async def server(request: pytest.FixtureRequest) -> AsyncIterator[FakeLLMServer]:
    cls = FakeOpenAIServer if request.param == "openai" else FakeAnthropicServer
    async with cls() as running:
        yield running


def bot_config(server: FakeLLMServer, **more: Any) -> Config:
    kind = "anthropic" if isinstance(server, FakeAnthropicServer) else "openai"
    main = {"type": kind, "base_url": server.url, "api_key": "k-test", "model": "m1"}
    return config(providers={"main": main}, **more)


def turns(tmp_path: Path) -> list[Turn]:
    with History(tmp_path / "data" / "nahida.db") as db:
        (session,) = db.sessions()
        return db.turns(session.id)


# -- a 200 answer that is not JSON ------------------------------------------------------------


async def test_a_200_answer_that_is_not_json_gets_the_apology_and_the_bot_goes_on(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    server.reply_raw("<html><body>502 Bad Gateway</body></html>")  # as application/json
    out, _ = await chat_through_console(tmp_path, ["你好", "还在吗"], bot_config(server))
    sorry, answer = out.splitlines()
    assert sorry == t("provider_failed", "zh")
    assert answer.startswith("echo: ") and answer.endswith("还在吗")  # Anthropic: both turns
    first, *_ = turns(tmp_path)
    assert first.content == "你好" and first.error is not None
    assert "ProviderResponseError" in first.error and "could not be read" in first.error


# -- an answer of millions of characters --------------------------------------------------------


async def test_a_huge_answer_is_cut_and_says_so_as_sent_and_as_stored(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    server.reply_text("长" * 3_000_000)
    out, _ = await chat_through_console(tmp_path, ["写一篇长文"], bot_config(server))
    _, answer = turns(tmp_path)
    assert len(out) < 4100 and len(answer.content) < 4100  # not three million
    note = t("reply_cut", "zh", n=3_000_000, limit=4000)
    assert out == answer.content + "\n" == "长" * 4000 + "…\n" + note + "\n"


async def test_the_bound_is_limits_reply_chars(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.reply_text("long answer " * 100)  # 1200 characters, stripped: 1199
    cfg = bot_config(openai_server, bot={"language": "en"}, limits={"reply_chars": 100})
    await chat_through_console(tmp_path, ["hi"], cfg)
    _, answer = turns(tmp_path)
    text, note = answer.content.split("\n")
    assert text == ("long answer " * 100)[:100] + "…"
    assert note == "(the answer had 1199 characters, too many: only the first 100 are shown)"


# -- tool calls of millions of characters -------------------------------------------------------

ECHO = ToolSpec(
    "echo",
    "Say something back",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)


async def test_tool_arguments_and_results_are_bounded(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    ran: list[int] = []

    async def echo(args: dict[str, Any], turn: TurnContext) -> str:
        ran.append(len(args["text"]))
        return args["text"] * 1000

    openai_server.reply_tool_call("echo", {"text": "x" * 3_000_000}, call_id="call_big")
    openai_server.reply_tool_call("echo", {"text": "y" * 100}, call_id="call_small")
    openai_server.reply_text("done")

    def register(app: Any) -> None:
        app.runner.tools.register(ECHO, echo)

    cfg = config(**openai_provider(openai_server.url))
    out, _ = await chat_through_console(tmp_path, ["echo"], cfg, setup=register)
    assert out.strip() == "done" and ran == [100]  # the huge call was not run
    second, third = (r.body["messages"] for r in openai_server.chat_requests[1:])
    refused = second[-1]["content"]
    assert refused.startswith("error: the arguments were 3000012 characters, more than the")
    assert second[-2]["tool_calls"][0]["function"]["arguments"] == "{}"  # not sent back whole
    cut = third[-1]["content"]
    assert cut.startswith("y" * TOOL_CHARS + "…") and len(cut) < TOOL_CHARS + 100
    _, answer = turns(tmp_path)
    assert answer.tool_calls is not None
    assert [(c["arguments"], c["result"]) for c in answer.tool_calls] == [
        ({}, refused),
        ({"text": "y" * 100}, cut),
    ]


# -- an episode answer that is not JSON ---------------------------------------------------------


async def test_an_episode_answer_without_json_is_not_stored_and_is_retried(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    paths = Paths(None, tmp_path / "data", tmp_path / "workspace")
    openai_server.episode_script.append("Sorry, I cannot summarise this conversation.")
    await chat_through_console(tmp_path, ["我们去京都旅行吧", "好，下个月出发"], cfg)
    assert len(openai_server.memory_requests("episode")) == 1  # the console ended the session
    with History(tmp_path / "data" / "nahida.db") as db:
        assert db.sql("SELECT summary FROM episodes") == []
        (session,) = db.sessions()
        assert len(db.turns(session.id)) == 4  # every turn kept
        ((failures, error),) = db.sql("SELECT failures, last_error FROM session_summaries")
    assert failures == 1 and error.startswith("episode: ") and "no JSON object" in error
    report = await diagnose(cfg, paths)
    assert "no JSON object" in render(report)  # `nahida doctor` shows the failure

    router = build_model_router(cfg)
    memory = memory_for(cfg, paths, router)
    try:
        assert await memory.working.retry_episodes() == (0, 0)  # not before its pause
        assert await memory.working.retry_episodes(now=time.time() + 3600) == (1, 0)
        (episode,) = await memory.episodes.of_chat("console:private:local")
        assert episode.session_id == session.id and episode.summary.startswith("上次聊了：")
        assert await memory.working.failing() == []
    finally:
        memory.close()
        await router.aclose()
