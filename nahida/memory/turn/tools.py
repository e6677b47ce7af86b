"""The memory tools the model may call (DESIGN §6): `memory_write`, `procedure_write`,
`profile_update`, `memory_search`.

Each acts for the person speaking, where they are speaking (`Actor.speaking`: their role counts
in their group only): a write goes through the one candidate builder and write path of its kind
(safety filter, commit mode, audit) in the scope of the current chat and speaker — a behavioural
rule for the whole group only when they may set one (`access.may_set_chat_rules`, asked by the
builder), whichever tool writes it — and a search sees what that person may see here (DESIGN
§4). A bad argument or a refused write is answered to the model as `error: …` with what to change
(`ToolRegistry.call` turns exceptions into that too), never silently dropped. The answers are
short and name the ids.
"""

from __future__ import annotations

from typing import Any

from nahida.errors import MemoryPermissionError, SecretRefused
from nahida.hooks import TurnContext
from nahida.memory.core.access import Actor
from nahida.memory.core.models import PROFILE_SECTIONS, ProfileMode, WriteResult
from nahida.memory.core.safety import contains_secret
from nahida.memory.core.scopes import Viewer
from nahida.memory.recall import pack
from nahida.memory.service import MemoryService
from nahida.memory.write import candidates
from nahida.providers.base import ToolSpec
from nahida.tools import ToolRegistry

SEARCH_LIMIT = 8
SEARCH_TOKENS = 800
MODES: dict[str, ProfileMode] = {"append": "append", "merge": "merge", "overwrite": "overwrite"}

MEMORY_WRITE = ToolSpec(
    "memory_write",
    "Save one lasting thing about the person you are talking to (or this group) for later"
    " conversations: a preference, a decision, a piece of knowledge, or a correction of what"
    " you knew. One short sentence in their language. Never save passwords, keys or tokens.",
    {
        "type": "object",
        "properties": {
            "content": {"type": "string", "description": "what to remember, one sentence"},
            "category": {
                "type": "string",
                "enum": list(candidates.CATEGORIES),
                "description": "preference | decision | knowledge | correction",
            },
        },
        "required": ["content", "category"],
    },
)
PROCEDURE_WRITE = ToolSpec(
    "procedure_write",
    "Save a behavioural rule the person asked you to follow from now on (e.g. 'answer in"
    " English', 'keep answers short'). It applies to answering them; `for_chat` true makes it"
    " a rule for everyone in this group (only the group's owner or admins may).",
    {
        "type": "object",
        "properties": {
            "rule": {"type": "string", "description": "the rule, as an instruction to you"},
            "context": {"type": "string", "description": "when it applies (optional)"},
            "for_chat": {"type": "boolean", "description": "a rule for the whole group"},
        },
        "required": ["rule"],
    },
)
PROFILE_UPDATE = ToolSpec(
    "profile_update",
    "Update the profile of the person you are talking to. Sections: "
    + ", ".join(PROFILE_SECTIONS)
    + ". 基础特征 (name, age, birthday…) only with what they stated themselves. mode: append"
    " (default) adds bullets; merge replaces a similar or contradicting bullet; overwrite"
    " replaces the whole section.",
    {
        "type": "object",
        "properties": {
            "section": {"type": "string", "enum": list(PROFILE_SECTIONS)},
            "content": {"type": "string", "description": "one or more bullets, one per line"},
            "mode": {"type": "string", "enum": ["append", "merge", "overwrite"]},
        },
        "required": ["section", "content"],
    },
)
MEMORY_SEARCH = ToolSpec(
    "memory_search",
    "Search long-term memory and earlier conversations of this chat for what you need to"
    " answer (what you may see here only).",
    {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to look for"}},
        "required": ["query"],
    },
)


SECRET = "error: it holds a secret (a key, token or password); secrets are never saved"


def _text(args: dict[str, Any], name: str, *, required: bool = True) -> str:
    value = args.get(name, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise ValueError(f"`{name}` must be a non-empty string")
    if contains_secret(value):  # refused, as `/memory remember` refuses it: not stored redacted
        raise SecretRefused(name)
    return value.strip()


def _saved(result: WriteResult) -> str:
    if result.outcome == "pending":
        return f"proposed {result.candidate_id}: waiting for review by an admin"
    if result.outcome in ("rejected", "refused"):
        return f"error: not saved ({result.reason or result.outcome})"
    replaced = f", replacing {result.replaced}" if result.replaced else ""
    return f"{result.outcome} {result.item_id}{replaced}"


class MemoryTools:
    """The four tools over one `MemoryService`; `register` adds them to a registry."""

    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory

    def register(self, registry: ToolRegistry) -> None:
        registry.register(MEMORY_WRITE, self.memory_write)
        registry.register(PROCEDURE_WRITE, self.procedure_write)
        registry.register(PROFILE_UPDATE, self.profile_update)
        registry.register(MEMORY_SEARCH, self.memory_search)

    async def memory_write(self, args: dict[str, Any], turn: TurnContext) -> str:
        envelope = turn.envelope
        try:
            candidate = candidates.proactive(
                _text(args, "content"),
                _text(args, "category"),
                at=envelope.time.timestamp(),  # when it was said, as the turns are dated
                chat=envelope.chat,
                user=envelope.sender.user,
                message_id=envelope.message_id,
                actor=Actor.speaking(envelope, turn.is_bot_admin),
            )
            return _saved(await self.memory.items.propose(candidate, "agent_proactive"))
        except SecretRefused:
            return SECRET

    async def procedure_write(self, args: dict[str, Any], turn: TurnContext) -> str:
        envelope = turn.envelope
        for_chat = args.get("for_chat") is True
        try:
            rule = _text(args, "rule")
            context = _text(args, "context", required=False)
            result = await self.memory.procedures.write(
                rule,
                chat=envelope.chat,
                user=envelope.sender.user,
                context=context,
                for_chat=for_chat,
                actor=Actor.speaking(envelope, turn.is_bot_admin),
                message_id=envelope.message_id,
            )
        except MemoryPermissionError as exc:
            return f"error: {exc}; save it without for_chat (a rule for answering this person)"
        except SecretRefused:
            return SECRET
        return _saved(result)

    async def profile_update(self, args: dict[str, Any], turn: TurnContext) -> str:
        envelope = turn.envelope
        mode = MODES.get(args.get("mode") or "append")
        if mode is None:
            raise ValueError("`mode` is append, merge or overwrite")
        try:
            section, content = _text(args, "section"), _text(args, "content")
            change = await self.memory.profiles.update(
                envelope.sender.user,
                section,
                content,
                mode=mode,
                sensitivity="public" if envelope.chat.is_group else "private",
                source="agent_proactive",
                chat=str(envelope.chat),
                actor=str(envelope.sender.user),
            )
        except SecretRefused:
            return SECRET
        return change.summary()

    async def memory_search(self, args: dict[str, Any], turn: TurnContext) -> str:
        envelope = turn.envelope
        viewer = Viewer(chat=envelope.chat, user=envelope.sender.user)
        query = self.memory.recall.query(
            _text(args, "query"), viewer, limit=SEARCH_LIMIT, exclude_turns=turn.recent_turn_ids
        )
        hits = await self.memory.recall.search(query)
        block, _ = pack(hits, SEARCH_TOKENS)
        return block or "nothing found"
