"""Console adapter: a terminal chat through the same bus and runner as every platform.

Interactive (a TTY): a prompt, each reply awaited before the next prompt; on the process's own
terminal, lines are read with `input()` and the stdlib `readline` module (arrow keys, editing,
history) when it can be imported. Scripted (stdin is a pipe or file): one message per line, each
reply printed on stdout, and `run` returns at end of input. Either way terminal escape sequences and
control characters are stripped from a line, and a line left empty is dropped. Input is read on a
daemon thread so a blocked read never holds up shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import TextIO

from nahida.adapters.base import Routes, Submit
from nahida.adapters.console import terminal
from nahida.envelope import ChatKey, Envelope, Reply, Role, Segment, Sender, UserKey

CHAT = ChatKey("console", "private", "local")
USER = UserKey("console", "local")
REPLY_WAIT = 600.0


class ConsoleAdapter:
    platform = "console"

    def __init__(
        self,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        interactive: bool | None = None,
        bot_name: str = "Nahida",
        user_name: str = "你",
        history_file: Path | None = None,
    ) -> None:
        """`history_file` keeps line-editing history between chats (None: this chat only)."""
        self._stdin = stdin or sys.stdin
        self._stdout = stdout or sys.stdout
        self.interactive = self._stdin.isatty() if interactive is None else interactive
        self._bot_name = bot_name
        self._user_name = user_name
        self._history_file = history_file
        self._replied = asyncio.Event()
        self._editing = False  # the edited-line reader is inside `input()`

    def mount(self, server: Routes) -> None:
        return None

    def _line_editor(self) -> ModuleType | None:
        """`readline`, when this chat is interactive on the process's own terminal (`input()`
        reads `sys.stdin` and prompts on `sys.stdout`) and the module can be imported."""
        if not self.interactive or self._stdin is not sys.stdin or self._stdout is not sys.stdout:
            return None
        return terminal.load_readline()

    def _reader(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None]) -> None:
        reconfigure = getattr(self._stdin, "reconfigure", None)
        if reconfigure is not None:  # bytes that are not text become U+FFFD, never a dead reader
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="replace")
        for line in self._stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line.rstrip("\r\n"))
        loop.call_soon_threadsafe(queue.put_nowait, None)

    def _edited_reader(
        self,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue[str | None],
        wanted: threading.Semaphore,
        stopped: threading.Event,
    ) -> None:
        """Read one line with `input()` each time `run` asks, so the prompt follows the reply."""
        line: str | None = None
        while True:
            wanted.acquire()
            if stopped.is_set():
                return
            self._editing = True
            try:
                line = input(self._prompt_text())
            except EOFError:
                line = None
            except UnicodeDecodeError:  # bytes the terminal's encoding cannot read: ask again
                line = ""
            finally:
                self._editing = False
            with contextlib.suppress(RuntimeError):  # the loop is gone: the chat has ended
                loop.call_soon_threadsafe(queue.put_nowait, line)
            if line is None:
                return

    async def run(self, submit: Submit) -> None:
        """Read messages until end of input; returns then (the app shuts down after)."""
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        editor = self._line_editor()
        wanted, stopped = threading.Semaphore(0), threading.Event()
        saved: terminal.TerminalState | None = None
        if editor is None:
            reader = threading.Thread(target=self._reader, args=(loop, queue), daemon=True)
        else:
            saved = terminal.TerminalState(self._stdin)
            terminal.load_history(editor, self._history_file)
            args = (loop, queue, wanted, stopped)
            reader = threading.Thread(target=self._edited_reader, args=args, daemon=True)
        reader.start()
        try:
            await self._chat(submit, queue, None if editor is None else wanted)
        finally:
            if editor is not None:
                stopped.set()
                wanted.release()  # a reader waiting for its next turn ends
                terminal.save_history(editor, self._history_file)
                if saved is not None and self._editing:  # ended mid-line: undo readline's raw mode
                    saved.restore(self._stdout)

    async def _chat(
        self,
        submit: Submit,
        queue: asyncio.Queue[str | None],
        wanted: threading.Semaphore | None,
    ) -> None:
        while True:
            if wanted is None:
                self._prompt()
            else:
                wanted.release()  # `input()` prints the prompt itself
            raw = await queue.get()
            if raw is None:
                if self.interactive:
                    self._stdout.write("\n")  # leave the prompt line on Ctrl-D
                    self._stdout.flush()
                return
            line = terminal.clean_line(raw)
            if not line.strip():
                continue
            self._replied.clear()
            accepted = await submit(self._envelope(line))
            if accepted and self.interactive:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(REPLY_WAIT):
                        await self._replied.wait()

    def _prompt_text(self) -> str:
        return f"{self._user_name} > "

    def _prompt(self) -> None:
        if self.interactive:
            self._stdout.write(self._prompt_text())
            self._stdout.flush()

    def _envelope(self, text: str) -> Envelope:
        now = datetime.now(UTC)  # the line was read just now: sent and received at once
        return Envelope(
            platform=self.platform,
            self_id="console",
            chat=CHAT,
            sender=Sender(USER, self._user_name, Role.OWNER),
            message_id=f"console-{uuid.uuid4().hex[:16]}",
            time=now,
            segments=(Segment.plain(text),),
            text=text,
            to_me=True,
            received=now,
        )

    async def send(self, reply: Reply) -> str | None:
        text = reply.plain_text
        if self.interactive:
            text = f"{self._bot_name} > {text}"
        self._stdout.write(text + "\n")
        self._stdout.flush()
        self._replied.set()
        return f"console-out-{uuid.uuid4().hex[:16]}"
