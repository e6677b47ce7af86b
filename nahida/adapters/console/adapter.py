"""Console adapter: a terminal chat through the same bus and runner as every platform.

Interactive (a TTY): a prompt, each reply awaited before the next prompt. Scripted (stdin is a pipe
or file): one message per line, each reply printed on stdout, and `run` returns at end of input.
Input is read on a daemon thread so a blocked `readline` never holds up shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import uuid
from datetime import UTC, datetime
from typing import TextIO

from nahida.adapters.base import Routes, Submit
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
    ) -> None:
        self._stdin = stdin or sys.stdin
        self._stdout = stdout or sys.stdout
        self.interactive = self._stdin.isatty() if interactive is None else interactive
        self._bot_name = bot_name
        self._user_name = user_name
        self._replied = asyncio.Event()

    def mount(self, server: Routes) -> None:
        return None

    def _reader(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None]) -> None:
        for line in self._stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line.rstrip("\r\n"))
        loop.call_soon_threadsafe(queue.put_nowait, None)

    async def run(self, submit: Submit) -> None:
        """Read messages until end of input; returns then (the app shuts down after)."""
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._reader, args=(loop, queue), daemon=True).start()
        while True:
            self._prompt()
            line = await queue.get()
            if line is None:
                if self.interactive:
                    self._stdout.write("\n")  # leave the prompt line on Ctrl-D
                    self._stdout.flush()
                return
            if not line.strip():
                continue
            self._replied.clear()
            accepted = await submit(self._envelope(line))
            if accepted and self.interactive:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(REPLY_WAIT):
                        await self._replied.wait()

    def _prompt(self) -> None:
        if self.interactive:
            self._stdout.write(f"{self._user_name} > ")
            self._stdout.flush()

    def _envelope(self, text: str) -> Envelope:
        return Envelope(
            platform=self.platform,
            self_id="console",
            chat=CHAT,
            sender=Sender(USER, self._user_name, Role.OWNER),
            message_id=f"console-{uuid.uuid4().hex[:16]}",
            time=datetime.now(UTC),
            segments=(Segment.plain(text),),
            text=text,
            to_me=True,
        )

    async def send(self, reply: Reply) -> str | None:
        text = reply.plain_text
        if self.interactive:
            text = f"{self._bot_name} > {text}"
        self._stdout.write(text + "\n")
        self._stdout.flush()
        self._replied.set()
        return f"console-out-{uuid.uuid4().hex[:16]}"
