"""The console adapter's input: control sequences never become messages; readline on a terminal."""

from __future__ import annotations

import asyncio
import io
import os
import stat
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nahida.adapters.console import terminal
from nahida.adapters.console.adapter import CHAT, ConsoleAdapter
from nahida.adapters.console.terminal import clean_line
from nahida.envelope import Envelope, Reply
from tests.helpers import History, chat_through_console


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("\x1b[A", ""),  # up arrow
        ("\x1b[A\x1b[B\x1b[C\x1b[D", ""),  # all four arrows
        ("你好\x1b[D\x1b[D世界", "你好世界"),  # left arrows inside Chinese text
        ("\x1b[A纳西妲\x1b[B", "纳西妲"),
        ("\x1b[1;5C跳词", "跳词"),  # Ctrl+Right, with parameters
        ("删除\x1b[3~键", "删除键"),  # Delete
        ("\x1bOA\x1bOB应用模式", "应用模式"),  # SS3 arrows (application cursor keys)
        ("\x9bA八位", "八位"),  # 8-bit CSI
        ("\x1b[200~粘贴的文字\x1b[201~", "粘贴的文字"),  # bracketed paste marks
        ("\x1b]0;标题\x07正文", "正文"),  # OSC ended by BEL
        ("\x1b]8;;http://x\x1b\\链接\x1b]8;;\x1b\\", "链接"),  # OSC ended by ST
        ("Alt\x1bb", "Alt"),  # Alt+b
        ("末尾\x1b", "末尾"),  # a lone Escape
        ("不完整\x1b[12", "不完整"),  # a cut-off CSI
        ("退格\x08\x7f", "退格"),  # backspace and DEL
        ("a\x00b\rc\x1fd", "abcd"),  # other C0 controls
        ("a\tb", "a\tb"),  # tab stays
        ("^[[A 是字面文字", "^[[A 是字面文字"),  # printable caret notation is text
        ("普通的消息 [1] ~ @ \\ é 😀", "普通的消息 [1] ~ @ \\ é 😀"),
    ],
)
def test_clean_line_strips_terminal_sequences(raw: str, clean: str) -> None:
    assert clean_line(raw) == clean


class Submitted:
    """A `submit` that records envelopes; `reply` makes it answer through the adapter."""

    def __init__(self, adapter: ConsoleAdapter | None = None, log: list[str] | None = None):
        self.adapter = adapter
        self.texts: list[str] = []
        self.log = log if log is not None else []

    async def __call__(self, envelope: Envelope) -> bool:
        assert envelope.segments[0].text == envelope.text
        self.texts.append(envelope.text)
        self.log.append(f"submit {envelope.text}")
        if self.adapter is not None:
            await self.adapter.send(Reply.text(CHAT, f"echo: {envelope.text}"))
        return True


async def test_scripted_input_never_submits_control_sequences() -> None:
    stdin = io.StringIO(
        "你好\x1b[A\n"  # as typed without line editing: an arrow key before Enter
        "\x1b[A\x1b[B\n"  # only arrow keys: dropped
        "\x1b[D\x1b[D改\x1b[C过\r\n"
        "\x00\x07\n"  # only controls: dropped
        "第四\t行\n"
    )
    out = io.StringIO()
    console = ConsoleAdapter(stdin=stdin, stdout=out, interactive=False)
    submit = Submitted()
    await asyncio.wait_for(console.run(submit), 5)
    assert submit.texts == ["你好", "改过", "第四\t行"]
    assert out.getvalue() == ""  # scripted mode prints no prompt


async def test_bytes_that_are_not_text_never_stop_the_reader() -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b"ab\xffcd\n\xe4\xbd\xa0\xe5\xa5\xbd\n"), "utf-8")
    console = ConsoleAdapter(stdin=stdin, stdout=io.StringIO(), interactive=False)
    submit = Submitted()
    await asyncio.wait_for(console.run(submit), 5)
    assert submit.texts == ["ab\ufffdcd", "你好"]


async def test_scripted_chat_stores_no_escape_bytes(tmp_path: Path) -> None:
    out, _ = await chat_through_console(tmp_path, ["\x1b[A记住我喜欢乌龙茶\x1b[D", "\x1b[B"])
    assert "\x1b" not in out
    with History(tmp_path / "data" / "nahida.db") as db:
        sessions = db.sessions(None, 10)
        assert [s.title for s in sessions] == ["记住我喜欢乌龙茶"]
        turns = db.turns(sessions[0].id)
        assert [t.content for t in turns if t.role == "user"] == ["记住我喜欢乌龙茶"]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class FakeReadline(types.ModuleType):
    def __init__(self) -> None:
        super().__init__("readline")
        self.calls: list[tuple[str, Any]] = []

    def set_history_length(self, length: int) -> None:
        self.calls.append(("length", length))

    def read_history_file(self, path: str) -> None:
        self.calls.append(("read", path))

    def write_history_file(self, path: str) -> None:
        self.calls.append(("write", path))
        Path(path).write_text("第一句\n", encoding="utf-8")


def fake_input(lines: list[str], log: list[str]) -> Callable[[str], str]:
    remaining = list(lines)

    def read(prompt: str) -> str:
        log.append(f"input {prompt!r}")
        if not remaining:
            raise EOFError
        return remaining.pop(0)

    return read


def own_terminal(monkeypatch: pytest.MonkeyPatch) -> tuple[Tty, Tty]:
    """The process's stdin and stdout as terminals; stdin holds a line `input()` must not read.

    Called inside the test: pytest's output capture resets `sys.stdout` between a fixture's
    setup and the test."""
    stdin, stdout = Tty("read by iterating stdin\n"), Tty()
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", stdout)
    return stdin, stdout


async def test_a_terminal_chat_reads_with_readline_input(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, stdout = own_terminal(monkeypatch)
    readline = FakeReadline()
    monkeypatch.setitem(sys.modules, "readline", readline)
    log: list[str] = []
    lines = ["你好", "\x1b[A", "再\x1b[D见"]
    monkeypatch.setattr("builtins.input", fake_input(lines, log))
    history = tmp_path / "history"
    console = ConsoleAdapter(user_name="你", history_file=history)
    assert console.interactive
    submit = Submitted(console, log)
    await asyncio.wait_for(console.run(submit), 5)
    assert submit.texts == ["你好", "再见"]
    assert log == [  # each prompt only after the reply to the line before
        "input '你 > '",
        "submit 你好",
        "input '你 > '",
        "input '你 > '",
        "submit 再见",
        "input '你 > '",
    ]
    # input() printed the prompts; the adapter wrote only the replies and the newline after Ctrl-D
    assert stdout.getvalue() == "Nahida > echo: 你好\nNahida > echo: 再见\n\n"
    assert readline.calls[0] == ("length", terminal.HISTORY_LENGTH)
    assert readline.calls[-1] == ("write", str(history))
    assert stat.S_IMODE(history.stat().st_mode) == 0o600


async def test_without_readline_a_terminal_chat_reads_lines_and_prompts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, stdout = own_terminal(monkeypatch)
    monkeypatch.setitem(sys.modules, "readline", None)  # `import readline` fails
    assert terminal.load_readline() is None

    def no_input(prompt: str) -> str:
        raise AssertionError("input() used without readline")

    monkeypatch.setattr("builtins.input", no_input)
    console = ConsoleAdapter(user_name="你")
    submit = Submitted(console)
    await asyncio.wait_for(console.run(submit), 5)
    assert submit.texts == ["read by iterating stdin"]
    assert stdout.getvalue() == "你 > Nahida > echo: read by iterating stdin\n你 > \n"


async def test_given_streams_are_read_directly_even_when_they_are_terminals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_input(prompt: str) -> str:
        raise AssertionError("input() reads sys.stdin, not the adapter's stream")

    monkeypatch.setattr("builtins.input", no_input)
    monkeypatch.setitem(sys.modules, "readline", FakeReadline())
    out = Tty()
    console = ConsoleAdapter(stdin=Tty("\x1b[A一\n"), stdout=out)
    assert console.interactive
    submit = Submitted(console)
    await asyncio.wait_for(console.run(submit), 5)
    assert submit.texts == ["一"]


async def test_shutting_down_mid_line_restores_the_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    own_terminal(monkeypatch)
    monkeypatch.setitem(sys.modules, "readline", FakeReadline())
    reading, release = threading.Event(), threading.Event()

    def blocking_input(prompt: str) -> str:
        reading.set()
        release.wait(5)
        return "too late"

    monkeypatch.setattr("builtins.input", blocking_input)
    restored: list[object] = []

    class State:
        def __init__(self, stream: object) -> None:
            pass

        def restore(self, stdout: object) -> None:
            restored.append(stdout)

    monkeypatch.setattr(terminal, "TerminalState", State)
    console = ConsoleAdapter()
    submit = Submitted(console)
    task = asyncio.create_task(console.run(submit))
    assert await asyncio.to_thread(reading.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert restored == [sys.stdout]
    release.set()  # the reader thread sees the chat has ended and stops
    await asyncio.sleep(0.05)
    assert submit.texts == []


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_terminal_state_puts_back_the_saved_settings() -> None:
    import termios
    import tty

    master, slave = os.openpty()
    try:
        with os.fdopen(os.dup(slave), "r", encoding="utf-8") as stream:
            before = termios.tcgetattr(slave)
            state = terminal.TerminalState(stream)
            tty.setraw(slave)  # what readline leaves behind when it is stopped mid-line
            assert termios.tcgetattr(slave) != before
            out = io.StringIO()
            state.restore(out)
            assert termios.tcgetattr(slave) == before
            assert out.getvalue() == terminal.BRACKETED_PASTE_OFF + "\n"
    finally:
        os.close(master)
        os.close(slave)


def test_terminal_state_of_a_non_terminal_does_nothing() -> None:
    out = io.StringIO()
    terminal.TerminalState(io.StringIO()).restore(out)
    assert out.getvalue() == ""


def test_history_file_is_owner_only_and_never_through_a_symlink(tmp_path: Path) -> None:
    readline = FakeReadline()
    path = tmp_path / "history"
    terminal.load_history(readline, path)  # no file yet: nothing read
    assert readline.calls == [("length", terminal.HISTORY_LENGTH)]
    path.write_text("old\n", encoding="utf-8")
    path.chmod(0o644)
    terminal.load_history(readline, path)
    assert readline.calls[-1] == ("read", str(path))
    terminal.save_history(readline, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text(encoding="utf-8") == "第一句\n"

    target = tmp_path / "elsewhere"
    target.write_text("keep\n", encoding="utf-8")
    link = tmp_path / "linked"
    link.symlink_to(target)
    readline.calls.clear()
    terminal.load_history(readline, link)
    terminal.save_history(readline, link)
    assert readline.calls == [("length", terminal.HISTORY_LENGTH)]  # neither read nor written
    assert target.read_text(encoding="utf-8") == "keep\n"

    terminal.save_history(readline, None)
    assert len(readline.calls) == 1
