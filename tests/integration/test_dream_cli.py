"""`nahida memory dream` and the dreaming line of `nahida doctor`: the typer app in-process (in a
thread, so the fake OpenAI server keeps serving on the test's loop) against a real SQLite file,
with the real SDK over HTTP."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from nahida.cli import app
from nahida.memory import MemoryService, NewTurn, Viewer
from nahida.memory.store.sqlite import SqliteStore
from tests.fakes.llm_server import FakeOpenAIServer

G1, G2 = "qq:group:1", "qq:group:2"


async def cli(
    tmp_path: Path, *args: str, server: FakeOpenAIServer | None = None, **more: str
) -> Result:
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url} if server else {}
    env.update(more)
    argv = ["--data-dir", str(tmp_path / "data"), "--workspace", str(tmp_path / "ws"), *args]
    return await asyncio.to_thread(CliRunner().invoke, app, argv, env=env)


async def _memory(tmp_path: Path) -> MemoryService:
    return MemoryService(SqliteStore(tmp_path / "data" / "nahida.db"))


async def _talk(tmp_path: Path, chat: str, *said: tuple[str, str]) -> None:
    memory = await _memory(tmp_path)
    now = time.time() - 60
    for n, (who, text) in enumerate(said):
        await memory.sessions.record(NewTurn(chat, "user", text, now + n, speaker=who))
    memory.close()


def _runs(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    runs: list[dict[str, Any]] = json.loads(result.stdout)
    return runs


async def test_dream_one_chat_then_list_the_runs_newest_first(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    await _talk(tmp_path, G1, ("qq:alice", "我喜欢乌龙茶"), ("qq:bob", "记住周五开周会"))
    await _talk(tmp_path, G2, ("qq:carol", "我喜欢爬山"))
    (run,) = _runs(
        await cli(tmp_path, "memory", "dream", "--chat", G1, "--json", server=openai_server)
    )
    assert run["id"].startswith("d_") and run["chat"] == G1 and run["trigger"] == "cli"
    assert (run["outcome"], run["turns"], run["calls"]) == ("ok", 2, 1)
    assert (run["applied"], run["pending"], run["rejected"]) == (2, 0, 0)
    assert [p["fate"] for p in run["report"]] == ["created", "created"]

    # without --chat: every chat with a new turn (G1 has none left)
    text = await cli(tmp_path, "memory", "dream", server=openai_server)
    assert text.exit_code == 0, text.output
    (line,) = text.stdout.splitlines()
    assert line.startswith("d_") and f"  {G2}  ok  turns 1, calls 1, applied 1," in line
    again = await cli(tmp_path, "memory", "dream", server=openai_server)
    assert again.stdout.strip() == "nothing new to dream"

    listed = _runs(await cli(tmp_path, "memory", "dream", "--list", "--json"))
    assert [r["chat"] for r in listed] == [G2, G1]  # newest first
    assert listed[1]["id"] == run["id"] and listed[1]["applied"] == 2
    only = _runs(await cli(tmp_path, "memory", "dream", "--list", "--json", "--chat", G1))
    assert [r["id"] for r in only] == [run["id"]]
    table = await cli(tmp_path, "memory", "dream", "--list", "--limit", "1")
    (row,) = table.stdout.splitlines()
    assert row.startswith(listed[0]["id"]) and G2 in row and "applied 1" in row

    memory = await _memory(tmp_path)
    items = await memory.items.latest(Viewer.admin(["user:qq:alice", f"chat:{G1}"]))
    memory.close()
    assert sorted(i.content for i in items) == ["我喜欢乌龙茶", "记住周五开周会"]


async def test_without_a_provider_it_exits_2_with_one_line(tmp_path: Path) -> None:
    await _talk(tmp_path, G1, ("qq:alice", "我喜欢乌龙茶"))
    result = await cli(tmp_path, "memory", "dream", "--chat", G1)
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: no model is configured")
    as_json = await cli(tmp_path, "memory", "dream", "--json")
    assert as_json.exit_code == 2 and json.loads(as_json.stdout)["exit_code"] == 2


async def test_a_paused_chat_is_said_to_be_paused(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    await _talk(tmp_path, G1, ("qq:alice", "我喜欢乌龙茶"))
    memory = await _memory(tmp_path)
    await memory.dreams.pause(G1)
    memory.close()
    result = await cli(tmp_path, "memory", "dream", "--chat", G1, server=openai_server)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{G1}: dreaming is paused there")
    assert openai_server.memory_requests("dream") == []
    bad = await cli(tmp_path, "memory", "dream", "--chat", "nonsense", server=openai_server)
    assert bad.exit_code == 2 and bad.stderr.startswith("error: ")


async def test_doctor_shows_the_last_run_and_the_next(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    before = json.loads((await cli(tmp_path, "doctor", "--json", server=openai_server)).stdout)
    assert before["dreaming"]["state"] == "on" and before["dreaming"]["last_run"] is None
    text = await cli(tmp_path, "doctor", server=openai_server)
    assert (
        "ok dreaming with openai/gpt-4o-mini: no run yet; next scheduled about 300 s" in text.stdout
    )
    no_model = json.loads((await cli(tmp_path, "doctor", "--json")).stdout)
    assert no_model["dreaming"]["state"] == "no model"
    off = await cli(
        tmp_path, "doctor", server=openai_server, NAHIDA__MEMORY__DREAMING__ENABLED="false"
    )
    assert "-- dreaming: off (memory.dreaming.enabled: false)" in off.stdout

    await _talk(tmp_path, G1, ("qq:alice", "我喜欢乌龙茶"))
    (run,) = _runs(await cli(tmp_path, "memory", "dream", "--json", server=openai_server))
    memory = await _memory(tmp_path)
    job = await memory.runs.start("dreaming", "host:1")
    await memory.runs.finish(job, "ok", {"chats": 1})
    (started,) = await memory.runs.latest("dreaming", 1)
    memory.close()
    report = json.loads((await cli(tmp_path, "doctor", "--json", server=openai_server)).stdout)
    dreaming = report["dreaming"]
    assert dreaming["last_run"]["id"] == run["id"] and dreaming["last_run"]["chat"] == G1
    assert (dreaming["last_run"]["outcome"], dreaming["last_run"]["applied"]) == ("ok", 1)
    assert dreaming["next_run"] > dreaming["last_run"]["started_at"]
    assert started.started_at + 3600 - time.time() > 3500
    text = await cli(tmp_path, "doctor", server=openai_server)
    line = next(x for x in text.stdout.splitlines() if "dreaming" in x and "last run" in x)
    assert f"last run {run['id']} ({G1}) ok at " in line and "applied 1, pending 0" in line
    assert f"next scheduled at {dreaming['next_run']}" in line
