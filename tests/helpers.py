"""Builders shared by tests: envelopes and a console app wired to a fake model."""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.app import App, Paths, console_app
from nahida.config import Config
from nahida.envelope import ChatKey, Envelope, Role, Segment, Sender, UserKey

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
    )


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
