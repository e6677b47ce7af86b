"""Routes `/name args` messages to registered command handlers.

A handler gets a `CommandContext` and the argument text and returns the reply text. A
`CommandError` is shown to the user as is; any other exception is logged and answered with a short
notice, so a broken command never stops the bus.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import tzinfo

import structlog

from nahida.envelope import Envelope, Role
from nahida.errors import CommandError
from nahida.i18n import Language, t
from nahida.memory import MemoryService

log = structlog.get_logger(__name__)


Later = Callable[[str, Callable[[], Awaitable[str]]], Awaitable[bool]]


@dataclass(frozen=True, slots=True)
class CommandContext:
    envelope: Envelope
    language: Language
    is_bot_admin: bool
    memory: MemoryService
    tz: tzinfo | None = None  # where times are shown (`bot.timezone`); None: the system's
    # `later(name, work)`: run `work` in the background under `name` and send the text it
    # returns as a reply to this command's message (after the command's own reply); False when
    # refused (shutting down). None: no background here (a handler awaits the work itself).
    later: Later | None = None

    @property
    def chat(self) -> str:
        return str(self.envelope.chat)

    @property
    def is_chat_admin(self) -> bool:
        """Bot admins, and owners/admins of a group for that group."""
        return self.is_bot_admin or self.envelope.sender.role in (Role.OWNER, Role.ADMIN)


Handler = Callable[[CommandContext, str], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    help_key: str  # i18n key of the one-line description
    handler: Handler


def parse(text: str) -> tuple[str, str] | None:
    """`/name rest` → (name, rest); None when the text is not a command."""
    stripped = text.strip()
    if stripped == "/":  # a lone slash asks what there is
        return "help", ""
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    name, _, rest = stripped[1:].partition(" ")
    if not name or not all(ch.isalnum() or ch in "-_" for ch in name):
        return None
    return name.lower(), rest.strip()


class CommandRouter:
    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}
        self.register(Command("help", "cmd_help", self._help))

    def register(self, command: Command) -> None:
        if command.name in self._commands:
            raise ValueError(f"command /{command.name} is already registered")
        self._commands[command.name] = command

    def knows(self, text: str) -> bool:
        parsed = parse(text)
        return parsed is not None and parsed[0] in self._commands

    async def dispatch(self, ctx: CommandContext, text: str) -> str:
        parsed = parse(text)
        if parsed is None:
            raise ValueError("dispatch() needs a command text")
        name, args = parsed
        command = self._commands.get(name)
        if command is None:
            return t("unknown_command", ctx.language, name=name)
        try:
            return await command.handler(ctx, args)
        except CommandError as exc:
            return str(exc)
        except Exception:
            log.exception("command_failed", command=name)
            return t("command_failed", ctx.language)

    async def _help(self, ctx: CommandContext, args: str) -> str:
        lines = [f"/{c.name} — {t(c.help_key, ctx.language)}" for c in self._commands.values()]
        return t("help", ctx.language, commands="\n".join(lines))
