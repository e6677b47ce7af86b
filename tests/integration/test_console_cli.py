"""`nahida admin` (the console alone), its token and password hash, and the bot serving the
console when `admin.enabled`, on its own loopback port and nowhere else unless allowed."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import pytest
from typer.testing import CliRunner

from nahida.app import App, Paths
from nahida.cli import app as cli
from nahida.config import Config
from nahida.console.auth import PasswordHash, TokenFile
from nahida.errors import ConfigError
from tests.helpers import Silent

ROOT = str(Path(__file__).resolve().parents[2])


def test_admin_token_prints_the_token_and_rotates_it(tmp_path: Path) -> None:
    first = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "data"), "admin", "token"])
    assert first.exit_code == 0, first.output
    token = first.stdout.strip()
    assert token == TokenFile(tmp_path / "data").read()
    again = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "data"), "admin", "token"])
    assert again.stdout.strip() == token
    rotated = CliRunner().invoke(
        cli, ["--data-dir", str(tmp_path / "data"), "admin", "token", "--rotate"]
    )
    assert rotated.exit_code == 0 and rotated.stdout.strip() not in ("", token)
    assert TokenFile(tmp_path / "data").read() == rotated.stdout.strip()


def test_hash_password_reads_stdin_and_prints_a_hash_the_console_accepts(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["admin", "hash-password"], input="a long passphrase\n")
    assert result.exit_code == 0, result.output
    hashed = PasswordHash.parse(result.stdout.strip())
    assert hashed.matches("a long passphrase") and not hashed.matches("a long passphrase\n")
    assert "a long passphrase" not in result.output
    short = CliRunner().invoke(cli, ["admin", "hash-password"], input="short\n")
    assert short.exit_code == 1 and "at least 8" in short.stderr


@pytest.mark.parametrize(
    ("env", "key"),
    [
        ({"NAHIDA__ADMIN__HOST": "0.0.0.0"}, "admin.host"),
        ({"NAHIDA__ADMIN__HOST": "console.example.org"}, "admin.host"),
        ({"NAHIDA__ADMIN__PASSWORD_HASH": "plain text"}, "admin.password_hash"),
    ],
)
def test_admin_refuses_to_start_what_is_unsafe(
    tmp_path: Path, env: dict[str, str], key: str
) -> None:
    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "data"), "admin"], env=env)
    assert isinstance(result.exception, ConfigError)
    assert key in str(result.exception)
    assert not (tmp_path / "data" / "nahida.db").exists()  # refused before memory opened


def test_a_console_beyond_loopback_needs_allow_remote(tmp_path: Path) -> None:
    from nahida.console import check_settings

    remote = Config.model_validate({"admin": {"host": "0.0.0.0"}})
    with pytest.raises(ConfigError, match=r"admin\.host.*allow_remote"):
        check_settings(remote)
    check_settings(Config.model_validate({"admin": {"host": "0.0.0.0", "allow_remote": True}}))
    for host in ("127.0.0.1", "::1", "localhost"):
        check_settings(Config.model_validate({"admin": {"host": host}}))
    clash = Config.model_validate({"admin": {"port": 8080}})
    check_settings(clash)  # alone, `nahida admin` may take the bot's port
    with pytest.raises(ConfigError, match=r"admin\.port"):
        check_settings(clash, beside_server=True)


async def test_the_bot_serves_the_console_when_enabled(tmp_path: Path) -> None:
    config = Config.model_validate({"admin": {"enabled": True, "port": 0}})
    paths = Paths(None, tmp_path / "data", tmp_path / "workspace")
    bot = App(config, paths, adapters=[Silent()])
    assert bot.admin is not None
    running = asyncio.create_task(bot.run())
    try:
        for _ in range(200):
            if bot.admin.port:
                break
            await asyncio.sleep(0.01)
        async with aiohttp.ClientSession() as client:
            page = await client.get(bot.admin.url + "login")
            assert page.status == 200
            assert "令牌或密码" in await page.text()
            settings = await client.get(bot.admin.url + "settings", allow_redirects=False)
            assert settings.status == 303
    finally:
        bot.stop()
        await running


async def test_a_port_taken_is_one_clear_error(tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        config = Config.model_validate({"admin": {"enabled": True, "port": port}})
        paths = Paths(None, tmp_path / "data", tmp_path / "workspace")
        bot = App(config, paths, adapters=[Silent()])
        with pytest.raises(ConfigError, match=rf"admin\.port: .*127\.0\.0\.1:{port}"):
            await bot.run()
    finally:
        taken.close()


def test_the_bot_refuses_a_console_beyond_loopback(tmp_path: Path) -> None:
    config = Config.model_validate({"admin": {"enabled": True, "host": "0.0.0.0"}})
    paths = Paths(None, tmp_path / "data", tmp_path / "workspace")
    with pytest.raises(ConfigError, match=r"admin\.host"):
        App(config, paths, adapters=[Silent()])
    assert not paths.database.exists()  # refused before anything was opened
    assert App(Config(), paths, adapters=[Silent()]).admin is None  # off by default


@pytest.mark.slow
async def test_nahida_admin_serves_until_interrupted(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NAHIDA__ADMIN")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nahida", "--data-dir", str(tmp_path / "data"), "admin",
        "--port", "0", cwd=tmp_path, env={**env, "PYTHONPATH": ROOT},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        first = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert first.startswith("Nahida console: http://127.0.0.1:"), first
        url = first.split(": ", 1)[1].strip()
        second = (await asyncio.wait_for(proc.stdout.readline(), 10)).decode()
        assert "nahida admin token" in second
        async with aiohttp.ClientSession() as client:
            assert (await client.get(url + "login")).status == 200
            assert (await client.get(url + "api/search")).status == 401
    finally:
        proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 30)
    assert code == 0
    assert TokenFile(tmp_path / "data").path.exists()
