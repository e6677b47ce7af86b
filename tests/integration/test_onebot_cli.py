"""`nahida run` as users start it: a YAML config with `channels.onebot`, a real process, the fake
LLM server as the model and the fake implementation connecting over reverse WebSocket."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import aiohttp

from tests.fakes.llm_server import FakeOpenAIServer
from tests.fakes.onebot_impl import FakeOneBot, at, text

TOKEN = "cli-token-123"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def connect_when_up(impl: FakeOneBot, url: str, process: asyncio.subprocess.Process) -> None:
    async with asyncio.timeout(30):
        while True:
            assert process.returncode is None, "nahida run exited early"
            try:
                await impl.connect(url, token=TOKEN)
                return
            except aiohttp.ClientConnectorError:
                await asyncio.sleep(0.1)


def run_config(tmp_path: Path, port: int, model_url: str, more: str = "") -> Path:
    """A YAML config for `nahida run`: the inbound server on `port`, the fake OpenAI server as
    the provider, OneBot over reverse WS with the token from the environment; `more` YAML
    appended."""
    config = tmp_path / "nahida.yaml"
    config.write_text(
        f"""
server: {{host: 127.0.0.1, port: {port}}}
providers:
  main: {{type: openai, base_url: "{model_url}", api_key: sk-test, model: m1}}
channels:
  onebot:
    enabled: true
    mode: reverse_ws
    path: /onebot/v11/ws
    access_token: "${{ONEBOT_TOKEN}}"
bot: {{nicknames: [nahida], group_policy: mention}}
{more}""",
        encoding="utf-8",
    )
    return config


async def start_run(tmp_path: Path, config: Path) -> asyncio.subprocess.Process:
    """`nahida run` with this config, data and workspace under `tmp_path`, the OneBot token in
    its environment (none of the caller's NAHIDA_/OPENAI_ variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NAHIDA", "OPENAI"))}
    env["ONEBOT_TOKEN"] = TOKEN
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "nahida",
        "--config",
        str(config),
        "--data-dir",
        str(tmp_path / "data"),
        "--workspace",
        str(tmp_path / "workspace"),
        "run",
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


async def stop_run(process: asyncio.subprocess.Process) -> str:
    """Stop it as a service manager would (SIGTERM); what it logged."""
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
    async with asyncio.timeout(15):
        _, stderr = await process.communicate()
    return stderr.decode()


async def test_nahida_run_answers_over_reverse_ws(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    port = free_port()
    config = run_config(tmp_path, port, openai_server.url, "scheduler: {enabled: false}\n")
    process = await start_run(tmp_path, config)
    try:
        async with FakeOneBot(10001) as impl:
            await connect_when_up(impl, f"ws://127.0.0.1:{port}/onebot/v11/ws", process)
            sock = impl.sockets[-1]
            await sock.send(impl.group_message(20001, 30001, [at(10001), text(" 你好")]))
            (call,) = await impl.wait_calls("send_group_msg", within=15)
            words = "".join(s["data"].get("text", "") for s in call.params["message"])
            assert words.strip() == "echo: user30001: 你好"
            assert openai_server.requests[0].body["model"] == "m1"
    finally:
        stderr = await stop_run(process)
    assert process.returncode == 0, stderr[-2000:]
    assert TOKEN not in stderr  # the token never reaches the logs
