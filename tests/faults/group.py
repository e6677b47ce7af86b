"""One group chat with several people in it, answered by the real App and runner over the OpenAI
SDK to the fake server: what each person is told, and what each request carried."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nahida.app import App, Paths
from nahida.envelope import ChatKey, Role, UserKey
from nahida.memory import MemoryItem, Viewer
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import Recorder, config, envelope, memory_block, openai_provider, system_of

GROUP = "test:group:g1"
PEOPLE: dict[str, tuple[str, Role]] = {
    "owner": ("Olga", Role.OWNER),
    "bob": ("Bob", Role.MEMBER),
    "alice": ("Alice", Role.MEMBER),
}


@dataclass
class Group:
    app: App
    server: FakeOpenAIServer
    sent: Recorder

    async def say(self, who: str, text: str, *, name: str | None = None) -> str:
        """`who` says `text` to the bot in the group; the bot's reply (the last one sent)."""
        shown, role = PEOPLE[who]
        before = len(self.sent.sent)
        message = envelope(
            text, chat=GROUP, user=f"test:{who}", name=shown if name is None else name, role=role
        )
        await self.app.runner.handle(message)
        replies = self.sent.sent[before:]
        return replies[-1] if replies else ""

    def last_request(self) -> dict[str, Any]:
        body: dict[str, Any] = self.server.chat_requests[-1].body
        return body

    def system(self) -> str:
        return system_of(self.last_request())

    def memory(self) -> str:
        return memory_block(self.last_request()) or ""

    async def rules_for(self, who: str) -> list[MemoryItem]:
        viewer = Viewer(ChatKey.parse(GROUP), UserKey.parse(f"test:{who}"))
        return await self.app.memory.procedures.in_force(viewer)


@asynccontextmanager
async def group_app(
    tmp_path: Path, server: FakeOpenAIServer, plugins: Path | None = None
) -> AsyncIterator[Group]:
    sent = Recorder()
    paths = Paths(None, tmp_path / "data", tmp_path / "workspace", plugins)
    app = App(config(**openai_provider(server.url)), paths, adapters=[sent])  # type: ignore[list-item]
    app.memory.working.schedule = None  # the app is not running: background work runs in place
    try:
        yield Group(app, server, sent)
    finally:
        await app.model.aclose()
        app.memory.close()
