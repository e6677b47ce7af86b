"""The runner's tool loop over the real OpenAI SDK and the fake server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nahida.hooks import TurnContext
from nahida.providers.base import ToolSpec
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import History, chat_through_console, config, openai_provider

WEATHER = ToolSpec(
    "weather",
    "Today's weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


async def test_tool_call_round_trip_is_answered_and_recorded(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    calls: list[dict[str, Any]] = []

    async def weather(args: dict[str, Any], turn: TurnContext) -> str:
        calls.append(args)
        return f"{args['city']}: 晴, 21°C"

    openai_server.reply_tool_call("weather", {"city": "杭州"}, call_id="call_w")
    openai_server.reply_text("杭州今天晴，21 度。")
    cfg = config(**openai_provider(openai_server.url))

    def register(app: Any) -> None:
        app.runner.tools.register(WEATHER, weather)

    out, _ = await chat_through_console(tmp_path, ["杭州天气怎么样？"], cfg, setup=register)
    assert out.strip() == "杭州今天晴，21 度。"
    assert calls == [{"city": "杭州"}]
    first, second = (r.body for r in openai_server.chat_requests)
    names = [t["function"]["name"] for t in first["tools"]]
    assert names == [
        "memory_write",
        "procedure_write",
        "profile_update",
        "memory_search",
        "weather",
    ]
    tool_message = second["messages"][-1]
    assert tool_message == {"role": "tool", "content": "杭州: 晴, 21°C", "tool_call_id": "call_w"}
    with History(tmp_path / "data" / "nahida.db") as db:
        session = db.sessions(None, 1)[0]
        turns = db.turns(session.id)
    assert turns[-1].tool_calls == [
        {"name": "weather", "arguments": {"city": "杭州"}, "result": "杭州: 晴, 21°C"}
    ]


async def test_a_failing_tool_is_reported_to_the_model_not_the_user(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    async def broken(args: dict[str, Any], turn: TurnContext) -> str:
        raise RuntimeError("service down")

    openai_server.reply_tool_call("weather", {"city": "x"})
    openai_server.reply_text("暂时查不到天气。")
    cfg = config(**openai_provider(openai_server.url))

    def register(app: Any) -> None:
        app.runner.tools.register(WEATHER, broken)

    out, _ = await chat_through_console(tmp_path, ["天气？"], cfg, setup=register)
    assert out.strip() == "暂时查不到天气。"
    assert openai_server.chat_requests[1].body["messages"][-1]["content"] == "error: service down"


async def test_tool_rounds_are_bounded(tmp_path: Path, openai_server: FakeOpenAIServer) -> None:
    async def weather(args: dict[str, Any], turn: TurnContext) -> str:
        return "sunny"

    for _ in range(5):
        openai_server.reply_tool_call("weather", {"city": "x"})
    openai_server.reply_text("done")
    cfg = config(**openai_provider(openai_server.url), bot={"max_tool_rounds": 2})

    def register(app: Any) -> None:
        app.runner.tools.register(WEATHER, weather)

    await chat_through_console(tmp_path, ["loop?"], cfg, setup=register)
    bodies = [r.body for r in openai_server.chat_requests]
    assert len(bodies) == 3  # two rounds with tools, then one without
    assert "tools" not in bodies[-1]
