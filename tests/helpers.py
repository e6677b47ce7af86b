"""Builders shared by tests: envelopes and a console app wired to a fake model."""

from __future__ import annotations

import importlib.util
import io
import itertools
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from nahida.adapters.base import Adapter
from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.app import App, Paths, console_app
from nahida.config import Config
from nahida.envelope import ChatKey, Envelope, Reply, Role, Segment, Sender, UserKey
from nahida.memory import MemoryItem, Session, Turn, Viewer
from nahida.memory.store.sqlite import SqliteStore
from nahida.server import InboundServer

_ids = itertools.count(1)


def envelope(
    text: str,
    *,
    chat: str = "test:private:u1",
    user: str = "test:u1",
    name: str = "Alice",
    to_me: bool = True,
    role: Role = Role.MEMBER,
    message_id: str | None = None,
    time: datetime | None = None,
    received: datetime | None = None,
) -> Envelope:
    return Envelope(
        platform=chat.split(":", 1)[0],
        self_id="bot",
        chat=ChatKey.parse(chat),
        sender=Sender(UserKey.parse(user), name, role),
        message_id=message_id or f"m{next(_ids)}",
        time=time or datetime.now(UTC),
        segments=(Segment.plain(text),),
        text=text,
        to_me=to_me,
        received=received or datetime.now(UTC),
    )


class Silent(Adapter):
    """An adapter that receives nothing and keeps what the bot sends."""

    platform = "test"

    def __init__(self) -> None:
        self.sent: list[Reply] = []

    def mount(self, server: InboundServer) -> None:
        return None

    async def run(self, submit: object) -> None:
        return None

    async def send(self, reply: Reply) -> str | None:
        self.sent.append(reply)
        return None


def config(**tree: Any) -> Config:
    return Config.model_validate(tree)


def openai_provider(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "providers": {
            "main": {
                "type": "openai",
                "base_url": url,
                "api_key": "sk-test",
                "model": "m1",
                **extra,
            }
        }
    }


async def chat_through_console(
    tmp_path: Path,
    lines: list[str],
    cfg: Config | None = None,
    setup: Callable[[App], None] | None = None,
) -> tuple[str, App]:
    """Run the console app over `lines` (scripted mode); returns stdout and the finished app.

    `setup` can register tools, commands or hooks on the app before it runs."""
    out = io.StringIO()
    console = ConsoleAdapter(
        stdin=io.StringIO("\n".join(lines) + "\n"), stdout=out, interactive=False
    )
    paths = Paths(None, tmp_path / "data", tmp_path / "workspace")
    app = console_app(cfg or Config(), paths, console)
    if setup is not None:
        setup(app)
    await app.run()
    return out.getvalue(), app


class History:
    """What an app stored, read back from its database file (or its open store)."""

    def __init__(self, source: Path | SqliteStore) -> None:
        self.owned = not isinstance(source, SqliteStore)
        self.store = SqliteStore(source) if isinstance(source, Path) else source

    def sessions(self, chat: str | None = None, limit: int = 10) -> list[Session]:
        return self.store.read_sync(lambda tx: tx.sessions.latest(chat, limit))

    def turns(self, session_id: str) -> list[Turn]:
        return self.store.read_sync(lambda tx: tx.turns.of_session(session_id))

    def item(self, item_id: str) -> MemoryItem | None:
        return self.store.read_sync(lambda tx: tx.items.get(item_id))

    def items(self, viewer: Viewer) -> list[MemoryItem]:
        """Active items the viewer sees, most recently changed first."""
        visibility = viewer.visibility()
        return self.store.read_sync(
            lambda tx: tx.items.listed(visibility, kind=None, status="active", limit=50)
        )

    def close(self) -> None:
        self.__exit__()

    def sql(self, statement: str, *params: object) -> list[Any]:
        """Rows of one SQL statement on the SQLite file (to look at what was stored)."""
        return self.store.db.call(lambda conn: conn.execute(statement, params).fetchall())

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.owned:
            self.store.close()


MEMORY_LABELS = ("[长期记忆]\n", "[Long-term memory]\n")


def _content(message: dict[str, Any]) -> str:
    content = message.get("content", "")
    if isinstance(content, list):  # Anthropic blocks
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content)


def _labelled(body: dict[str, Any], labels: tuple[str, ...]) -> str | None:
    """The text after the label of the first user message that starts with one of them."""
    for message in body["messages"]:
        text = _content(message)
        for label in labels:
            if message.get("role") == "user" and text.startswith(label):
                return text[len(label) :]
    return None


def memory_block(body: dict[str, Any]) -> str | None:
    """The recalled memory a chat request carries: the `[长期记忆]` message's text (DESIGN §7)."""
    return _labelled(body, MEMORY_LABELS)


def conversation(body: dict[str, Any]) -> list[str]:
    """The texts of a chat request after its system prompt and its memory/summary pairs."""
    texts = [_content(m) for m in body["messages"] if m.get("role") != "system"]
    while len(texts) >= 2 and texts[0].startswith(("[", "（")) and texts[1] in ("好的。", "OK."):
        texts = texts[2:]
    return texts


def system_of(body: dict[str, Any]) -> str:
    """A chat request's system prompt (OpenAI: the first message; Anthropic: `system`)."""
    if "system" in body:
        system = body["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)
    first = body["messages"][0]
    return _content(first) if first.get("role") == "system" else ""


def summary_block(body: dict[str, Any]) -> str | None:
    """The warm summary a chat request carries: the `[对话摘要]` message's text (DESIGN §7)."""
    return _labelled(body, ("[对话摘要]\n", "[Conversation summary]\n"))


class Recorder:
    """An adapter of platform "test" that keeps the text of every reply sent."""

    platform = "test"

    def __init__(self) -> None:
        self.sent: list[str] = []

    def mount(self, server: object) -> None:
        return None

    async def run(self, submit: object) -> None:
        return None

    async def send(self, reply: Reply) -> str | None:
        self.sent.append(reply.plain_text)
        return None


def script(name: str) -> ModuleType:
    """`scripts/<name>.py` as a module (the evaluation scripts' corpora and scoring, for tests)."""
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module
