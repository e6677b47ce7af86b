"""OneBot without an access token accepts whoever connects, and that one speaks for the QQ account:
a channel reachable beyond this machine without a token does not start (`nahida run` exits 2
naming `channels.onebot.access_token`, `nahida doctor` fails on it); on loopback it starts, with
a warning at start and in `nahida doctor`."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from nahida.app import platform_adapters
from nahida.config import Config
from nahida.errors import ConfigError
from tests.fakes.onebot_harness import running_app
from tests.fakes.onebot_impl import FakeOneBot

ROOT = str(Path(__file__).resolve().parents[2])
KEY = "channels.onebot.access_token"
ELSEWHERE = "192.0.2.7"  # TEST-NET-1: never dialled, the channel stops before


def config(host: str, **channel: Any) -> Config:
    return Config.model_validate(
        {"server": {"host": host, "port": 0}, "channels": {"onebot": {"enabled": True, **channel}}}
    )


@pytest.mark.parametrize(
    ("host", "channel", "named"),
    [
        ("0.0.0.0", {"mode": "reverse_ws"}, "server.host '0.0.0.0'"),
        ("::", {"mode": "reverse_ws"}, "server.host '::'"),
        ("", {"mode": "reverse_ws"}, "server.host ''"),
        ("192.168.1.5", {"mode": "reverse_ws"}, "server.host '192.168.1.5'"),
        ("nahida.lan", {"mode": "reverse_ws"}, "server.host 'nahida.lan'"),
        ("0.0.0.0", {"mode": "http", "url": "http://127.0.0.1:3000"}, "server.host '0.0.0.0'"),
        ("127.0.0.1", {"mode": "forward_ws", "url": f"ws://{ELSEWHERE}:3001/"}, ELSEWHERE),
        (
            "127.0.0.1",
            {"mode": "forward_ws", "api_url": "ws://[::1]:3001/api", "event_url": "ws://napcat/e"},
            "ws://napcat/e",
        ),
        (
            "127.0.0.1",
            {"mode": "http", "url": f"http://{ELSEWHERE}:3000", "secret": "s"},
            ELSEWHERE,
        ),
    ],
)
def test_a_channel_open_beyond_loopback_without_a_token_does_not_start(
    host: str, channel: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        platform_adapters(config(host, **channel))
    assert refused.value.key == KEY
    assert named in str(refused.value)


@pytest.mark.parametrize(
    ("host", "channel"),
    [
        ("0.0.0.0", {"mode": "reverse_ws", "access_token": "t0ken"}),
        ("0.0.0.0", {"mode": "http", "url": "http://localhost:3000", "secret": "s"}),
        ("127.0.0.1", {"mode": "reverse_ws"}),
        ("127.0.0.2", {"mode": "http", "url": "http://127.0.0.1:3000"}),
        ("localhost", {"mode": "reverse_ws"}),
        ("::1", {"mode": "reverse_ws"}),
        ("0.0.0.0", {"mode": "forward_ws", "url": "ws://127.0.0.1:3001/"}),  # we only dial out
        ("0.0.0.0", {"mode": "forward_ws", "url": f"ws://{ELSEWHERE}:3001/", "access_token": "t"}),
        ("127.0.0.1", {"mode": "forward_ws", "url": f"ws://{ELSEWHERE}:3001/?access_token=t"}),
    ],
)
def test_a_token_or_loopback_lets_the_channel_start(host: str, channel: dict[str, Any]) -> None:
    assert [a.platform for a in platform_adapters(config(host, **channel))] == ["onebot"]


async def test_on_loopback_without_a_token_it_starts_and_warns(tmp_path: Path) -> None:
    with capture_logs() as logs:
        async with running_app(tmp_path, {"mode": "reverse_ws"}) as app, FakeOneBot() as impl:
            await impl.connect(f"ws://127.0.0.1:{app.server.port}/onebot/v11/ws")
    warned = [e for e in logs if e["event"] == "onebot_access_token_empty"]
    assert [(e["log_level"], e["key"]) for e in warned] == [("warning", KEY)]
    assert "any program on this machine" in warned[0]["reason"]


async def nahida(tmp_path: Path, host: str, token: str, *args: str) -> tuple[int, str, str]:
    """The real CLI with a config whose OneBot channel listens on `host` with `token`; a process
    still running after 30 s is stopped (that is a failure: it should have exited)."""
    (tmp_path / "nahida.yaml").write_text(
        f"""
server: {{host: "{host}", port: 0}}
channels:
  onebot: {{enabled: true, mode: reverse_ws, access_token: "{token}"}}
scheduler: {{enabled: false}}
""",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NAHIDA", "OPENAI"))}
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "nahida", "--config", str(tmp_path / "nahida.yaml")),
        *("--data-dir", str(tmp_path / "data"), "--workspace", str(tmp_path / "ws"), *args),
        cwd=tmp_path,
        env={**env, "PYTHONPATH": ROOT},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(30):
            out, err = await process.communicate()
    except TimeoutError:
        process.kill()
        out, err = await process.communicate()
        pytest.fail(f"`nahida {' '.join(args)}` did not exit: {err.decode()[-500:]}")
    return process.returncode or 0, out.decode(), err.decode()


async def test_nahida_run_exits_2_naming_the_key(tmp_path: Path) -> None:
    code, _, err = await nahida(tmp_path, "0.0.0.0", "", "run")
    assert code == 2
    assert err.startswith(f"error: {KEY}: required while server.host '0.0.0.0' lets other")
    # commands that start no channel do not care
    assert (await nahida(tmp_path, "0.0.0.0", "", "session", "list"))[0] == 0


async def test_nahida_doctor_fails_on_an_open_channel_and_warns_on_loopback(
    tmp_path: Path,
) -> None:
    code, out, _ = await nahida(tmp_path, "0.0.0.0", "", "doctor")
    assert code == 1
    assert (
        f"-- onebot: {KEY}: required while server.host '0.0.0.0' lets other machines connect" in out
    )
    assert "`nahida run` refuses to start" in out
    code, out, _ = await nahida(tmp_path, "127.0.0.1", "", "doctor")
    assert code == 0
    assert f"-- onebot: {KEY}: empty: any program on this machine can act as" in out
    code, out, _ = await nahida(tmp_path, "0.0.0.0", "s3cret-t0ken", "doctor")
    assert code == 0
    assert f"ok onebot: {KEY}: set" in out.splitlines()
    assert "s3cret-t0ken" not in out
