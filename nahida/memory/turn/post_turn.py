"""Post-turn work memory does after a turn: rule extraction (inline: well under a millisecond of
CPU, and a write only when a statement was found)."""

from __future__ import annotations

import structlog

from nahida.hooks import TurnContext
from nahida.memory.core.access import Actor
from nahida.memory.core.tokenize import run_cpu
from nahida.memory.service import MemoryService
from nahida.memory.write.extract import SOURCE, extract

log = structlog.get_logger(__name__)


class ExtractionHook:
    """The post-turn hook "extract": proposes what the user said; never raises into the runner."""

    name = "extract"

    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory

    async def after_turn(self, turn: TurnContext, reply: str | None) -> None:
        envelope = turn.envelope
        if turn.turn.role != "user":
            return
        about = {"chat": str(envelope.chat), "msg": envelope.message_id}  # given to each log line
        try:
            text = turn.turn.content
            candidates = await run_cpu(  # a long message can take some milliseconds
                lambda: extract(
                    text,
                    chat=envelope.chat,
                    user=envelope.sender.user,
                    message_id=envelope.message_id,
                    turn_id=turn.turn.id,
                    time=envelope.time.timestamp(),
                    tz=self.memory.tz,
                    actor=Actor.speaking(envelope, turn.is_bot_admin),
                ),
                size=len(text),
            )
        except Exception:
            log.exception("extraction_failed", **about)
            return
        for candidate in candidates:
            try:
                result = await self.memory.items.propose(candidate, actor=SOURCE)
            except Exception:
                log.exception("extraction_write_failed", kind=candidate.kind, **about)
                continue
            log.info(
                "memory_extracted",
                kind=candidate.kind,
                outcome=result.outcome,
                item=result.item_id,
                redacted=result.redacted,
                **about,
            )


class CompactionHook:
    """The post-turn hook "compact" (inline: it only counts the turn, `WorkingMemory.after_turn`):
    when a batch of rounds may have left the hot window, the compaction of the session's warm
    summary is handed to the background work, keyed by chat (it logs its own failures)."""

    name = "compact"

    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory

    async def after_turn(self, turn: TurnContext, reply: str | None) -> None:
        chat = str(turn.envelope.chat)
        work = self.memory.working.after_turn(turn.session_id, chat)
        if work is None:
            return
        schedule = self.memory.working.schedule
        if schedule is None or not await schedule(chat, self.name, work):
            await work()
