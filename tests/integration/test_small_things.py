"""Issue 9, item 16 and friends: the small things a new user trips over."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import structlog
from typer.testing import CliRunner

from nahida.cli import app
from nahida.cli.search import table
from nahida.cli.text import width
from nahida.i18n import t
from nahida.memory import Hit
from nahida.memory.history.importer import parse_line
from tests.helpers import History, chat_through_console, config


def cli(tmp_path: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["--data-dir", str(tmp_path / "data"), *args])


def test_version(tmp_path: Path) -> None:
    result = cli(tmp_path, "--version")
    assert result.exit_code == 0 and result.stdout.startswith("nahida 0.")


def test_json_errors_are_json(tmp_path: Path) -> None:
    result = cli(tmp_path, "memory", "why", "m_000000", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {"error": "no item m_000000", "exit_code": 1}
    shown = cli(tmp_path, "session", "show", "s_nothing", "--json")
    assert shown.exit_code == 1 and "error" in json.loads(shown.stdout)


def test_a_json_error_says_at_only_once() -> None:
    with pytest.raises(ValueError) as caught:
        parse_line('{"chat": "qq:group:1", "text": "unterminated')
    assert "at at" not in str(caught.value) and "column" in str(caught.value)


async def test_resume_last_without_sessions_a_lone_slash_and_one_turn(tmp_path: Path) -> None:
    cfg = config(bot={"language": "en"})
    out, _ = await chat_through_console(tmp_path, ["/resume last", "/", "hello", "/sessions"], cfg)
    lines = out.splitlines()
    assert lines[0] == t("no_earlier_session", "en")
    assert "/help" in lines[2] and "/memory" in out  # "/" shows the commands
    assert any(line.endswith(" · 1 turn · hello") for line in lines), out
    with History(tmp_path / "data" / "nahida.db") as db:
        assert [s.title for s in db.sessions()] == ["hello"]  # "/" never became a session


def test_the_search_table_keeps_its_columns_with_wide_characters() -> None:
    hits = [
        Hit("turn", "t_1", "我们周末去杭州爬山吧", 0.5, "chat:qq:group:1", ["1"], 0.0, "小明同学"),
        Hit("turn", "t_22", "ok", 0.25, "chat:qq:group:1", ["2"], 0.0, "Bob"),
        Hit("item", "m_abcdef", "喜欢乌龙茶", 0.1, "user:console:local", [], 0.0),
    ]
    lines = table(hits, None)
    texts = ["text", *(h.text for h in hits)]
    starts = {width(line[: line.index(text)]) for line, text in zip(lines, texts, strict=True)}
    assert len(starts) == 1, lines  # the text column starts at the same column on every line
    assert "user:console:local" in lines[3]  # a scope is shown whole


def test_nahida_run_starts_a_new_terminal_session_like_chat(tmp_path: Path) -> None:
    try:
        for line in ("第一次", "第二次"):
            args = ["--data-dir", str(tmp_path / "data"), "run"]
            result = CliRunner().invoke(app, args, input=line)
            assert result.exit_code == 0, result.output
    finally:
        structlog.reset_defaults()  # `run` set up logging on the runner's (now closed) stderr
    with History(tmp_path / "data" / "nahida.db") as db:
        assert sorted(s.title for s in db.sessions()) == ["第一次", "第二次"]


def test_the_terminal_banner_names_the_model_and_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from nahida.adapters.console.adapter import ConsoleAdapter
    from nahida.app import Paths, console_app
    from nahida.cli.main import _banner
    from tests.helpers import openai_provider

    cfg = config(**openai_provider("http://127.0.0.1:9/v1"))
    console = ConsoleAdapter(stdin=io.StringIO(), stdout=io.StringIO(), interactive=True)
    bot = console_app(cfg, Paths(None, tmp_path / "data", tmp_path / "ws"), console)
    try:
        _banner(cfg, bot)
    finally:
        bot.memory.close()
    assert "main/m1 @ http://127.0.0.1:9/v1" in capsys.readouterr().err


async def test_doctor_gives_up_on_a_silent_endpoint_quickly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import time

    from nahida.app import Paths
    from nahida.cli import doctor
    from tests.helpers import openai_provider

    writers: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)  # accepts, never answers

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setattr(doctor, "PING_TIMEOUT", 0.5)
    cfg = config(**openai_provider(f"http://127.0.0.1:{port}/v1", max_retries=5, timeout=60))
    started = time.monotonic()
    try:
        report = await doctor.diagnose(cfg, Paths(None, tmp_path / "d", tmp_path / "w"))
    finally:
        server.close()
        for writer in writers:  # closed here, so no socket outlives the test
            writer.close()
            await writer.wait_closed()
        await server.wait_closed()
    assert report["providers"][0]["reachable"] is False
    assert time.monotonic() - started < 10  # not 60 s × 6 tries
