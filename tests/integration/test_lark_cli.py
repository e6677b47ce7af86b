"""`nahida run` as a real process, with `channels.lark` from YAML, in each mode against the fake."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import aiohttp

from nahida.i18n import t
from tests.fakes.lark_events import message_event, url_verification, webhook_request
from tests.fakes.lark_server import FakeLarkServer

ROOT = str(Path(__file__).resolve().parents[2])
KEY = "enc-key-cli"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def write_config(tmp_path: Path, lark: FakeLarkServer, mode: str, port: int) -> Path:
    path = tmp_path / "nahida.yaml"
    path.write_text(
        f"""
server:
  host: 127.0.0.1
  port: {port}
bot:
  language: en
scheduler:
  enabled: false
channels:
  lark:
    enabled: true
    mode: {mode}
    app_id: {lark.app_id}
    app_secret: ${{LARK_APP_SECRET}}
    encrypt_key: {KEY}
    verification_token: v-token
    domain: {lark.url}
    path: /lark/events
""",
        encoding="utf-8",
    )
    return path


async def start(tmp_path: Path, config: Path) -> asyncio.subprocess.Process:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("NAHIDA", "OPENAI", "ANTHROPIC"))
    }
    env |= {"PYTHONPATH": ROOT, "LARK_APP_SECRET": "app-secret"}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "nahida",
        "--config",
        str(config),
        "run",
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def stop(process: asyncio.subprocess.Process) -> tuple[int, str]:
    process.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(process.communicate(), 20)
    return process.returncode or 0, err.decode()


async def test_nahida_run_long_connection(tmp_path: Path) -> None:
    async with FakeLarkServer() as lark:
        process = await start(tmp_path, write_config(tmp_path, lark, "long_connection", 0))
        try:
            await lark.wait_connected(seconds=30)
            ack = await lark.push(message_event("hello", chat_type="p2p"))
            [sent] = await lark.wait_messages(1)
        finally:
            code, err = await stop(process)
        await asyncio.sleep(0)
    assert ack.code == 200
    assert sent.content == {"text": t("no_model", "en")}  # no model configured: it says so
    assert sent.body["receive_id"] == "ou_alice"
    assert code == 0, err
    assert "Traceback" not in err and "lark_ready" in err


async def test_nahida_run_webhook(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/lark/events"
    async with FakeLarkServer() as lark, aiohttp.ClientSession() as http:
        process = await start(tmp_path, write_config(tmp_path, lark, "webhook", port))
        try:
            async with asyncio.timeout(30):
                while True:  # until the server listens
                    try:
                        body, headers = webhook_request(url_verification("c"), encrypt_key=KEY)
                        async with http.post(url, data=body, headers=headers) as response:
                            assert await response.json() == {"challenge": "c"}
                            break
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.1)
            body, headers = webhook_request(message_event("hi", chat_type="p2p"), encrypt_key=KEY)
            async with http.post(url, data=body, headers=headers) as response:
                status = response.status
            [sent] = await lark.wait_messages(1)
        finally:
            code, err = await stop(process)
    assert status == 200
    assert sent.content == {"text": t("no_model", "en")}
    assert code == 0, err
    assert "Traceback" not in err
