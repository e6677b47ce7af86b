"""What a plugin's `setup(ctx)` gets: commands, post-turn hooks and memory behind permissions.

    def setup(ctx: PluginContext) -> None:
        async def memo(call: PluginCall) -> str:
            result = await ctx.memory_store(call.args, subject=call.user, chat=call.chat,
                                            evidence=[call.evidence()])
            return f"ok {result.item_id}"
        ctx.register_command("memo", memo, help={"zh": "记一条备忘", "en": "keep a note"})

Naming the target. Memory belongs to a chat or a person, and a plugin always works on behalf of
a message: a command handler gets a `PluginCall` (the envelope, `call.chat`, `call.user`), a
post-turn hook gets the runner's `TurnContext` (`turn.envelope`). The plugin passes these on
explicitly; nothing is taken from ambient state:

- `memory_store(audience="user", subject=call.user)` stores about that person (`user:` scope);
  `audience="chat", chat=call.chat` stores in that chat's memory; `audience="global"` needs the
  extra permission `memory.write.global`. `speaker` (default: the subject) is who said it: the
  subject and the speaker may later `/memory forget` the item.
- A behavioural rule (`kind="procedure"`) for a group, `audience="chat"`, is set for someone:
  `by=call` (or `by=turn` in a hook) names the message, and its sender must be the group's owner
  or admin, or a bot admin (`MemoryPermissionError` otherwise, and without `by`): the same check
  as every other path that stores a rule (docs/permissions.md).
- `memory_search(q, chat=call.chat, user=call.user)` sees exactly what that person sees in that
  chat (DESIGN §4: in a group, never other people's user memory nor their own private items).
  With neither, only global memory; a user without a chat is refused, since what a person may
  see depends on where they are asking.

Writes go through the write path like any other (`memory.items.propose`, source and actor
`plugin:<name>`): the secret filter (an explicit write with a secret raises `SecretRefused` to the
plugin; nothing is stored), candidates, commit mode, dedup and supersede. Without the declared
permission, `memory_store`/`memory_search` raise `PluginPermissionError` naming the plugin and the
permission. Commands and hooks registered in `setup` take effect only if `setup` returns normally.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import structlog

from nahida.commands.router import Command, CommandContext, CommandRouter, Handler, parse
from nahida.envelope import ChatKey, Envelope, UserKey
from nahida.errors import MemoryPermissionError
from nahida.hooks import PostTurnHook, TurnContext
from nahida.i18n import MESSAGES, Language
from nahida.memory import (
    GLOBAL,
    Actor,
    Evidence,
    Hit,
    MemoryService,
    Viewer,
    WriteResult,
)
from nahida.plugins.manifest import MANIFEST, Manifest, Permission, PluginError

Audience = Literal["user", "chat", "global"]
Sensitivity = Literal["private", "public"]


class PluginPermissionError(MemoryPermissionError):
    def __init__(self, plugin: str, permission: Permission, manifest: Path) -> None:
        self.plugin = plugin
        self.permission = permission
        super().__init__(
            f"plugin {plugin!r} lacks the permission {permission!r}:"
            f" declare it under `permissions:` in {manifest}"
        )


@dataclass(frozen=True, slots=True)
class PluginCall:
    """One use of a plugin's command: the message it came in, and the words after the name."""

    envelope: Envelope
    args: str
    language: Language
    is_bot_admin: bool
    is_chat_admin: bool

    @property
    def chat(self) -> ChatKey:
        return self.envelope.chat

    @property
    def user(self) -> UserKey:
        return self.envelope.sender.user

    def evidence(self) -> Evidence:
        """This message as the evidence of a memory."""
        return Evidence(
            chat=str(self.chat),
            message_id=self.envelope.message_id,
            time=self.envelope.time.timestamp(),
            name=self.envelope.sender.name or None,
        )


PluginHandler = Callable[[PluginCall], Awaitable[str]]
TurnHook = Callable[[TurnContext, str | None], Awaitable[None]]


@dataclass(slots=True)
class PluginHook:
    """A plugin's post-turn function as the runner's `PostTurnHook`."""

    name: str
    fn: TurnHook

    async def after_turn(self, turn: TurnContext, reply: str | None) -> None:
        if turn.addressed:  # plugins see the turns the bot answered
            await self.fn(turn, reply)


def _adapt(handler: PluginHandler) -> Handler:
    async def run(ctx: CommandContext, args: str) -> str:
        call = PluginCall(ctx.envelope, args, ctx.language, ctx.is_bot_admin, ctx.is_chat_admin)
        return await handler(call)

    return run


def _chat(value: ChatKey | str) -> ChatKey:
    return value if isinstance(value, ChatKey) else ChatKey.parse(value)


def _user(value: UserKey | str) -> UserKey:
    return value if isinstance(value, UserKey) else UserKey.parse(value)


class PluginContext:
    def __init__(
        self, manifest: Manifest, path: Path, *, memory: MemoryService, router: CommandRouter
    ) -> None:
        self.manifest = manifest
        self.path = path
        self.log = structlog.get_logger("nahida.plugins").bind(plugin=manifest.name)
        self._memory = memory
        self._router = router
        self._commands: dict[str, tuple[PluginHandler, dict[Language, str]]] = {}
        self._hooks: list[PostTurnHook] = []

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def source(self) -> str:
        return f"plugin:{self.name}"

    # registration (during setup) --------------------------------------------------------

    def register_command(
        self, name: str, handler: PluginHandler, *, help: str | Mapping[str, str] = ""
    ) -> None:
        """`/name args` → `await handler(call)`; `help` is one line, or {"zh": …, "en": …}."""
        if parse(f"/{name}") != (name, ""):
            raise ValueError(f"a command name is lower-case letters, digits, - or _: {name!r}")
        if name in self._commands:
            raise ValueError(f"plugin {self.name!r} registers /{name} twice")
        texts = {"zh": help, "en": help} if isinstance(help, str) else dict(help)
        zh = texts.get("zh") or texts.get("en") or self.manifest.description or self.name
        en = texts.get("en") or texts.get("zh") or self.manifest.description or self.name
        self._commands[name] = (handler, {"zh": zh, "en": en})

    def register_hook(self, hook: TurnHook, *, name: str | None = None) -> None:
        """`await hook(turn, reply)` after every answered turn (errors are logged, not raised)."""
        self._hooks.append(PluginHook(f"{self.source}:{name or len(self._hooks)}", hook))

    def activate(self) -> tuple[tuple[str, ...], tuple[PostTurnHook, ...]]:
        """Put what `setup` registered into effect: all of it, or nothing when a name is taken."""
        taken = [n for n in self._commands if self._router.knows(f"/{n}")]
        if taken:
            names = ", ".join(f"/{n}" for n in taken)
            raise PluginError(self.path, f"command already registered: {names}")
        for name, (handler, help_texts) in self._commands.items():
            key = f"plugin.{self.name}.{name}"
            MESSAGES[key] = help_texts
            self._router.register(Command(name, key, _adapt(handler)))
        return tuple(self._commands), tuple(self._hooks)

    # memory --------------------------------------------------------------------------------

    def _require(self, permission: Permission) -> None:
        if not self.manifest.allows(permission):
            raise PluginPermissionError(self.name, permission, self.path / MANIFEST)

    async def memory_store(
        self,
        content: str,
        *,
        kind: str = "fact",
        audience: Audience = "user",
        sensitivity: Sensitivity = "private",
        confidence: float = 0.8,
        evidence: Sequence[Evidence] | None = None,
        subject: UserKey | str | None = None,
        chat: ChatKey | str | None = None,
        speaker: UserKey | str | None = None,
        by: PluginCall | TurnContext | None = None,
    ) -> WriteResult:
        """Propose a memory; the write path decides (created, merged, pending...). `by`: the
        message it is stored for (a group's rule needs its sender to be allowed to set one)."""
        self._require("memory.write")
        if audience == "global":
            self._require("memory.write.global")
        candidate = self._memory.items.plugin_candidate(
            self.name,
            content,
            kind=kind,
            audience=audience,
            sensitivity=sensitivity,
            confidence=confidence,
            evidence=evidence,
            subject=_user(subject) if subject is not None else None,
            chat=_chat(chat) if chat is not None else None,
            speaker=_user(speaker) if speaker is not None else None,
            actor=None if by is None else Actor.speaking(by.envelope, by.is_bot_admin),
        )
        return await self._memory.items.propose(candidate, self.source)

    async def memory_search(
        self,
        query: str,
        limit: int = 5,
        *,
        chat: ChatKey | str | None = None,
        user: UserKey | str | None = None,
        history: bool = False,
    ) -> list[Hit]:
        """Items (and with `history=True` older turns) that person may see in that chat."""
        self._require("memory.read")
        if chat is None:
            if user is not None:
                raise ValueError("memory_search(user=...) needs chat= too: visibility is per chat")
            viewer = Viewer(scopes=(GLOBAL,))
        else:
            viewer = Viewer(chat=_chat(chat), user=_user(user) if user is not None else None)
        return await self._memory.recall.search(
            self._memory.recall.query(query, viewer, limit=max(1, min(limit, 50)), turns=history)
        )
