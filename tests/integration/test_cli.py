"""The `nahida` command line, run as a real subprocess the way users and scripts run it."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from nahida.i18n import t
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import conversation

ROOT = str(Path(__file__).resolve().parents[2])


@dataclass
class Result:
    code: int
    out: str
    err: str


async def nahida(
    cwd: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> Result:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("NAHIDA", "OPENAI", "ANTHROPIC"))
    }
    base["PYTHONPATH"] = ROOT
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "nahida",
        *args,
        cwd=cwd,
        env={**base, **(env or {})},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 60)
    return Result(proc.returncode or 0, out.decode(), err.decode())


async def test_scripted_chat_without_model_then_sessions_cli(tmp_path: Path) -> None:
    result = await nahida(tmp_path, "chat", stdin="你好\n\n/help\n")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == t("no_model", "zh")
    assert any(line.startswith("/sessions") for line in lines)
    assert (tmp_path / "workspace" / "PERSONA.md").exists()

    listed = await nahida(tmp_path, "session", "list", "--json")
    sessions = json.loads(listed.out)
    assert [s["title"] for s in sessions] == ["你好"]
    assert sessions[0]["chat"] == "console:private:local"
    session_id = sessions[0]["id"]

    shown = json.loads((await nahida(tmp_path, "session", "show", session_id[-4:], "--json")).out)
    assert [turn["content"] for turn in shown["turns"]] == ["你好"]

    found = json.loads((await nahida(tmp_path, "session", "search", "你好", "--json")).out)
    assert [s["id"] for s in found] == [session_id]

    deleted = json.loads((await nahida(tmp_path, "session", "delete", session_id, "--json")).out)
    assert deleted == {"deleted": session_id}
    assert json.loads((await nahida(tmp_path, "session", "list", "--json")).out) == []
    missing = await nahida(tmp_path, "session", "show", "nope")
    assert missing.code == 1 and "no session matches" in missing.err


async def test_chat_against_openai_compatible_endpoint_and_resume(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    env = {"OPENAI_API_KEY": "sk-test-key-123456", "OPENAI_BASE_URL": openai_server.url}
    first = await nahida(tmp_path, "chat", stdin="记住我喜欢乌龙茶\n", env=env)
    assert first.code == 0, first.err
    assert first.out.strip() == "echo: 记住我喜欢乌龙茶"
    assert openai_server.requests[0].body["model"] == "gpt-4o-mini"

    resumed = await nahida(tmp_path, "chat", "--resume", "last", stdin="我喜欢什么？\n", env=env)
    assert resumed.code == 0, resumed.err
    contents = [m["content"] for m in openai_server.chat_requests[-1].body["messages"][1:]]
    memory, ack, *said = contents  # the recalled preference comes first (DESIGN §7)
    assert memory.startswith("[长期记忆]\n") and "喜欢乌龙茶" in memory and ack == "好的。"
    assert said == ["记住我喜欢乌龙茶", "echo: 记住我喜欢乌龙茶", "我喜欢什么？"]

    fresh = await nahida(tmp_path, "chat", stdin="新话题\n", env=env)
    assert fresh.code == 0
    # a new session shows no earlier turn verbatim (recalled memory may come before it, as a
    # `[长期记忆]` pair, once the background has embedded the first run's turns)
    assert conversation(openai_server.chat_requests[-1].body) == ["新话题"]
    for result in (first, resumed, fresh):
        assert "sk-test-key-123456" not in result.out + result.err


async def test_bad_config_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("bot:\n  language: fr\n", encoding="utf-8")
    result = await nahida(tmp_path, "--config", str(config), "chat", stdin="hi\n")
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        f"error: {config}: bot.language: Input should be 'zh' or 'en'"
    ]
    env_config = await nahida(
        tmp_path, "chat", stdin="hi\n", env={"NAHIDA_CONFIG": str(tmp_path / "missing.yaml")}
    )
    assert env_config.code == 2 and "missing.yaml" in env_config.err


async def test_init_creates_config_and_workspace_once(tmp_path: Path) -> None:
    result = await nahida(tmp_path, "init", "site")
    assert result.code == 0, result.err
    assert (tmp_path / "site" / "config" / "nahida.yaml").exists()
    assert (tmp_path / "site" / "workspace" / "MEMORY.md").exists()
    again = await nahida(tmp_path, "init", "site")
    assert again.code == 1 and "not overwriting" in again.err


async def test_doctor_reports_capabilities_and_masks_secrets(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    env = {"OPENAI_API_KEY": "sk-doctor-secret-999", "OPENAI_BASE_URL": openai_server.url}
    result = await nahida(tmp_path, "doctor", "--json", env=env)
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["sqlite"]["fts5"] is True
    assert report["jieba"]["loaded"] is True
    assert report["providers"][0]["reachable"] is True
    assert report["models"]["chat"] == "openai/gpt-4o-mini"
    embedding = report["embedding"]
    local = f"{embedding['provider']}/{embedding['model']}" if embedding["model"] else "none"
    assert report["models"]["embed"] == local  # what embeds, not the chat route
    assert "sk-doctor-secret-999" not in result.out + result.err
    assert report["config"]["providers"]["openai"]["api_key"] == "***"
    text = await nahida(tmp_path, "doctor", env={**env, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert text.code == 1
    assert "NOT reachable" in text.out


async def test_workspace_and_data_dir_options(tmp_path: Path) -> None:
    result = await nahida(
        tmp_path, "--data-dir", "d2", "--workspace", "w2", "chat", stdin="/sessions\n"
    )
    assert result.code == 0, result.err
    assert (tmp_path / "d2" / "nahida.db").exists()
    assert (tmp_path / "w2" / "PERSONA.md").exists()


async def test_doctor_shows_the_latest_run_of_each_job(tmp_path: Path) -> None:
    from nahida.memory import MemoryService
    from nahida.memory.store.sqlite import SqliteStore

    memory = MemoryService(SqliteStore(tmp_path / "data" / "nahida.db"))
    runs = memory.runs
    await runs.finish(await runs.start("cleanup_empty_sessions", "host:1"), "ok", {"deleted": 2})
    await runs.finish(await runs.start("dream", "host:1"), "failed", {}, "ProviderTimeoutError: x")
    memory.close()
    report = json.loads((await nahida(tmp_path, "doctor", "--json")).out)
    jobs = {run["job"]: run for run in report["jobs"]}
    assert jobs["cleanup_empty_sessions"]["outcome"] == "ok"
    assert jobs["cleanup_empty_sessions"]["counts"] == {"deleted": 2}
    assert jobs["dream"]["error"] == "ProviderTimeoutError: x"
    text = (await nahida(tmp_path, "doctor")).out
    assert "ok job cleanup_empty_sessions: ok at " in text and "(deleted 2)" in text
    assert "-- job dream: failed at " in text and "ProviderTimeoutError: x" in text
