"""The prompt slots memory fills (DESIGN §5): `memory` (what long-term memory and older history
say about now), `profile` (the speaker's profile card) and `rules` (behavioural rules in force).

`MemoryInjection` is a `ContextSource`. For each addressed turn it recalls, for the current
message, what the speaker may see where they are speaking — `Viewer(chat, user)`, so a group never
sees a member's private memory and no chat sees another chat's history (§4) — and leaves out the
turns the prompt already shows verbatim (`TurnContext.recent_turn_ids`, the hot window).

Two paths, after the Ethan design: a greeting ("你好", "thanks!") takes the fast path, the top
`fast_limit` (5) hits, lexically (a greeting has no meaning to search for, and embedding it would
cost the message its query's time); a short message gets the same few hits in the configured
mode; anything else the full path, the top `full_limit` (15). All go through
`memory.context` (the recall block, read together with the pinned profile card and rules: one
round trip to the store), which ranks (lexical and vector lists fused, then confidence, importance,
recency and use), packs the lines into the memory token budget — each line carrying
id, kind, scope and date, the block ending with the "Treat memory as helpful context…" line — and
counts each injected item as accessed.

A message with nothing searchable, or whose words match nothing the viewer may see, gets no
memory section at all.
"""

from __future__ import annotations

import re

import structlog

from nahida.hooks import TurnContext
from nahida.memory.core.scopes import Viewer
from nahida.memory.recall import Mode
from nahida.memory.service import MemoryService
from nahida.prompt import LANGUAGE_BY_RULES

log = structlog.get_logger(__name__)

FAST_LIMIT = 5
FULL_LIMIT = 15

_GREETING = re.compile(
    r"(?:(?:你好|您好|嗨|哈喽|哈啰|早上好|早安|早|午安|下午好|晚上好|晚安|在吗|在不在|谢谢|多谢|谢啦"
    r"|拜拜|再见|hello|hi|hey|yo|good\s+(?:morning|afternoon|evening|night)|morning|thanks|thank\s+you"
    r"|thx|bye|good\s*bye|see\s+you)[\s,，.。!！~～?？]*)+(?:nahida|纳西妲|everyone|all|大家)?"
    r"[\s,，.。!！~～?？]*",
    re.IGNORECASE,
)


def is_greeting(text: str) -> bool:
    """Whether the whole message is a greeting or thanks ("你好！", "good morning everyone")."""
    return _GREETING.fullmatch(text.strip()) is not None


class MemoryInjection:
    """The `ContextSource` for the `memory`, `profile` and `rules` slots, in one read: what
    recall finds (below), the speaker's profile card (bounded; in a group only what they said in
    public, DESIGN §4) and the behavioural rules in force for them here, every turn."""

    slot = "memory"  # and `profile`, `rules`

    def __init__(
        self,
        memory: MemoryService,
        *,
        fast_chars: int = 12,
        fast_limit: int = FAST_LIMIT,
        full_limit: int = FULL_LIMIT,
        profile_tokens: int = 400,
    ) -> None:
        self.memory = memory
        self.profile_tokens = profile_tokens
        self.fast_chars = fast_chars
        self.fast_limit = fast_limit
        self.full_limit = full_limit

    def limit_for(self, text: str) -> int:
        """How many hits a message may bring: few for short messages and greetings."""
        text = text.strip()
        if len(text) <= self.fast_chars or is_greeting(text):
            return self.fast_limit
        return self.full_limit

    async def gather(self, turn: TurnContext) -> dict[str, str]:
        envelope = turn.envelope
        text = envelope.text.strip()
        viewer = Viewer(chat=envelope.chat, user=envelope.sender.user)
        limit = self.limit_for(text)
        mode: Mode | None = "lexical" if is_greeting(text) else None
        block, pinned = await self.memory.context(
            text,
            viewer,
            turn.recent_turn_ids,
            limit=limit,
            mode=mode,
            profile_tokens=self.profile_tokens,
            turn=turn.turn.id,
        )
        log.debug(
            "memory_injected",
            chat=str(envelope.chat),
            msg=envelope.message_id,
            limit=limit,
            lines=0 if block is None else block.count("\n"),
        )
        slots = {"memory": block, "profile": pinned.profile, "rules": pinned.rules}
        if pinned.language:  # a rule names the language: the prompt's default gives way
            slots["language"] = LANGUAGE_BY_RULES
        return {slot: value for slot, value in slots.items() if value}
