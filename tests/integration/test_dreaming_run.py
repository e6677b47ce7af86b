"""`nahida run` dreams on schedule (DESIGN §8): a real process with a YAML config, the fake
OneBot implementation over reverse WebSocket, the fake OpenAI server as the chat and dream model."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tests.fakes.llm_server import FakeOpenAIServer, Hang
from tests.fakes.onebot_impl import FakeOneBot, at, text
from tests.helpers import History
from tests.integration.test_onebot_cli import (
    connect_when_up,
    free_port,
    run_config,
    start_run,
    stop_run,
)


async def test_the_scheduler_dreams_a_chat_in_nahida_run(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    port = free_port()
    more = (
        "models: {dream: main/m-dream}\n"
        "memory:\n"
        "  embedding: {backend: none}\n"
        "  dreaming: {interval_seconds: 1, initial_delay_seconds: 1, min_new_turns: 2}\n"
    )
    config = run_config(tmp_path, port, openai_server.url, more)
    process = await start_run(tmp_path, config)
    made: list[str] = []
    try:
        async with FakeOneBot(10001) as impl:
            await connect_when_up(impl, f"ws://127.0.0.1:{port}/onebot/v11/ws", process)
            sock = impl.sockets[-1]
            await sock.send(impl.group_message(20001, 30001, [at(10001), text(" 我喜欢乌龙茶")]))
            await impl.wait_calls("send_group_msg", within=15)
            async with asyncio.timeout(20):
                while not made:
                    await asyncio.sleep(0.3)
                    with History(tmp_path / "data" / "nahida.db") as db:
                        made = [
                            r[0]
                            for r in db.sql(
                                "SELECT content FROM memory_items WHERE source = 'llm_dream'"
                            )
                        ]
            dreams = openai_server.memory_requests("dream")
            assert dreams and dreams[0].body["model"] == "m-dream"  # the dream route
    finally:
        stderr = await stop_run(process)
    assert process.returncode == 0, stderr[-2000:]
    assert made == ["我喜欢乌龙茶"]
    journal = (tmp_path / "workspace" / "DREAMS.md").read_text(encoding="utf-8")
    assert "schedule ·" in journal and "### Accepted" in journal


async def test_two_processes_dreaming_one_chat_one_runs(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    """Two `nahida memory dream` processes on one database: the chat's lease lets one run; the
    other says the chat is busy. Nothing is applied twice."""
    from nahida.memory import NewTurn
    from nahida.memory.service import MemoryService
    from nahida.memory.store.sqlite import SqliteStore

    memory = MemoryService(SqliteStore(tmp_path / "data" / "nahida.db"))
    now = time.time() - 60
    for n, said in enumerate(["我喜欢乌龙茶", "记住周五开周会"]):
        await memory.sessions.record(NewTurn("qq:group:1", "user", said, now + n, speaker="qq:a"))
    memory.close()
    openai_server.dream_script.append(Hang(2.0))  # the first call takes two seconds…
    openai_server.dream_script.append('{"ops": []}')  # …and is retried (it was no JSON)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NAHIDA", "OPENAI"))}
    env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=openai_server.url)

    async def dream() -> tuple[int, list[dict[str, Any]]]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "nahida", "--data-dir", str(tmp_path / "data"),
            "--workspace", str(tmp_path / "workspace"), "memory", "dream", "--chat",
            "qq:group:1", "--json", env=env, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, err.decode()[-2000:]
        return process.returncode, json.loads(out)

    (_, first), (_, second) = await asyncio.gather(dream(), dream())
    outcomes = sorted(r[0]["outcome"] for r in (first, second))
    assert outcomes == ["busy", "ok"]
    assert len(openai_server.memory_requests("dream")) == 2  # the one run's call and retry
    with History(tmp_path / "data" / "nahida.db") as db:
        assert db.sql("SELECT count(*) FROM dream_runs")[0][0] == 1
