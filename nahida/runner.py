"""SessionRunner: handles one envelope, in the order every turn follows.

    decide → (command → reply) | (persist → context → model → reply → persist → post-turn work)

Overload: at most `model_calls` answers wait on the model at once (a semaphore around the model
call, so group talk that is only stored never waits for it). A message that waited longer than
`max_reply_delay` seconds (since Nahida received it, not since the platform's event time) before
its turn came, or before a model call was free, is stored and fed to the hooks as usual but
answered with a short apology instead of a model call (`reply_too_late` in the log); commands are
answered as usual.

Commands are answered without entering the conversation history. This module only knows the
order; each step lives in its own module (policy, memory, prompt, tools, hooks). Post-turn hooks
are of two kinds: inline ones (fast, such as rule extraction) run on the chat's worker before its
next message; background ones are handed to the work queue, so the chat's next message never
waits for them (they keep the chat's order among themselves). A command may hand slow work (a
dream run) to the queue as well (`CommandContext.later`), under its own key (`<chat>:<name>`), so
the chat's next message never waits for it either; its text comes as a second reply.

Delivery: the fate of the reply to a message due an answer is recorded on it (and on the stored
reply): delivered when `send` returned (the platform acknowledged it), undelivered when it
raised. A message stored but never answered (the bot stopped first) is answered when the
platform delivers it again; a duplicate of one answered, or of observed talk, is dropped
(`Sessions.record_user_turn`).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

import structlog

from nahida.background import BackgroundWork
from nahida.clock import SYSTEM, Clock
from nahida.commands.router import CommandContext, CommandRouter
from nahida.commands.router import parse as parse_command
from nahida.envelope import Envelope, Reply
from nahida.errors import ProviderError, StorageError
from nahida.hooks import ContextSource, PostTurnHook, TurnContext
from nahida.i18n import Language, t
from nahida.memory import CommandMessage, MemoryService, NewTurn, Turn
from nahida.policy import ReplyPolicy
from nahida.prompt import build_prompt
from nahida.providers.base import ChatModel
from nahida.ratelimit import RateLimiter
from nahida.tools import Completion, ToolRegistry, complete

log = structlog.get_logger(__name__)

Send = Callable[[Reply], Awaitable[str | None]]


@dataclass(frozen=True)
class RunnerSettings:
    language: Language = "zh"
    admins: frozenset[str] = frozenset()
    hot_size: int = 10
    context_tokens: int = 6000
    max_tool_rounds: int = 4
    max_message_chars: int = 4000  # longer: a notice, not a model call; stored cut to this
    max_reply_chars: int = 4000  # a longer answer is sent and stored cut to this, with a note
    tz: tzinfo | None = None  # the bot's zone (`bot.timezone`) for "Now:" and command times
    max_reply_delay: float = 60.0  # seconds; an older message gets an apology (0: off)
    model_calls: int = 16  # answers waiting on the model at once (`bus.concurrency`)


class SessionRunner:
    def __init__(
        self,
        *,
        model: ChatModel,
        send: Send,
        commands: CommandRouter,
        policy: ReplyPolicy,
        settings: RunnerSettings,
        memory: MemoryService,
        persona: Callable[[], str],
        tools: ToolRegistry | None = None,
        sources: Sequence[ContextSource] = (),
        hooks: Sequence[PostTurnHook] = (),
        background_hooks: Sequence[PostTurnHook] = (),
        background: BackgroundWork | None = None,
        limiter: RateLimiter | None = None,
        clock: Clock = SYSTEM,
    ) -> None:
        self.model = model
        self.send = send
        self.commands = commands
        self.policy = policy
        self.memory = memory
        self.settings = settings
        self.persona = persona
        self.tools = tools or ToolRegistry()
        self.sources = list(sources)
        self.hooks = list(hooks)
        self.background_hooks = list(background_hooks)
        self.background = background  # None: background hooks run inline too
        self.limiter = limiter
        self.clock = clock
        self._model_calls = asyncio.Semaphore(settings.model_calls)

    def is_bot_admin(self, envelope: Envelope) -> bool:
        return str(envelope.sender.user) in self.settings.admins

    async def handle(self, envelope: Envelope) -> None:
        # Every log line of this message's journey (providers, memory, adapters) carries these
        # (bound and reset by token: `bound_contextvars` copies the whole context twice).
        bound = structlog.contextvars.bind_contextvars(
            chat=str(envelope.chat), msg=envelope.message_id
        )
        try:
            async with self.memory.handling(str(envelope.chat)):
                await self._handle(envelope)
        finally:
            structlog.contextvars.reset_contextvars(**bound)

    async def _handle(self, envelope: Envelope) -> None:
        if self._is_command_for_me(envelope):
            await self._command(envelope)
            return
        respond = self.policy.should_respond(envelope)
        limited = respond and self._over_limit(envelope)
        respond = respond and not limited
        late = self._late_by(envelope) if respond else None
        too_long = len(envelope.text) > self.settings.max_message_chars
        window = self.settings.hot_size * 2 if respond and late is None else 0
        try:
            recorded = await self.memory.sessions.record_user_turn(
                self._user_turn(envelope, respond), window
            )
        except StorageError as exc:  # a full disk: the bot goes on, and says so when asked
            log.error("turn_not_stored", error=str(exc))
            if respond:
                await self._reply(envelope, t("storage_failed", self.settings.language))
            return
        if recorded is None:  # the log's context holds the chat and the message id
            log.info("duplicate_message_dropped", time=envelope.time.timestamp())
            return
        if recorded.again:
            log.info("unanswered_message_answered")  # stored before the bot stopped
        turn, hot = recorded.turn, recorded.hot
        if recorded.ended is not None:  # a long gap ended the chat's last session
            await self.memory.working.finish(recorded.ended, str(envelope.chat))
        ctx = TurnContext(
            envelope,
            turn.session_id,
            turn,
            self.settings.language,
            self.is_bot_admin(envelope),
            recorded.shown,
            addressed=respond,
        )
        reply: str | None = None
        if limited:  # stored as observed; the chat hears once that the bot is pausing
            if self.limiter is not None and self.limiter.take_notice(str(envelope.chat)):
                await self._reply(envelope, t("rate_limited", ctx.language))
        elif not respond:
            pass  # observed group talk: stored, and the hooks still feed memory from it
        elif late is not None:
            await self._too_late(envelope, turn.id, late, ctx.language)
        elif too_long:
            limit = self.settings.max_message_chars
            notice = t("message_too_long", ctx.language, n=len(envelope.text), limit=limit)
            await self._notice(envelope, turn.id, notice)
        elif self.memory.items.asks_to_keep_a_secret(envelope.text):  # as /memory remember would
            await self._notice(envelope, turn.id, t("memory_secret_refused", ctx.language))
        elif not self.model.configured:
            await self._notice(envelope, turn.id, t("no_model", ctx.language))
        else:
            reply = await self._answer(ctx, hot, recorded.summary)
        await self._run_hooks(ctx, reply)

    async def _answer(self, ctx: TurnContext, hot: Sequence[Turn], summary: str) -> str | None:
        """Model → reply → persist; the stored answer, or None when the model failed or the
        message grew too old waiting for a model call."""
        envelope = ctx.envelope
        try:
            async with self._model_calls:
                late = self._late_by(envelope)  # the wait for a free model call counts too
                completion = None if late is not None else await self._complete(ctx, hot, summary)
        except ProviderError as exc:
            log.warning("provider_failed", error=str(exc), error_type=type(exc).__name__)
            failure = f"{type(exc).__name__}: {exc}"
            await _kept("provider_error", self.memory.sessions.mark_error(ctx.turn.id, failure))
            await self._notice(envelope, ctx.turn.id, t("provider_failed", ctx.language))
            return None
        if completion is None:
            await self._too_late(envelope, ctx.turn.id, late or 0.0, ctx.language)
            return None
        text = self._bounded(completion.text.strip() or t("empty_model_reply", ctx.language), ctx)
        sent_id, error = await self._reply(envelope, text)
        reply = NewTurn(
            chat=str(envelope.chat),
            role="assistant",
            content=text,
            time=time.time(),
            message_id=sent_id,
            tool_calls=completion.tool_calls or None,
            error=error,
        )
        await _kept("reply", self.memory.sessions.record_reply(ctx.turn, reply))
        return text

    def _bounded(self, text: str, ctx: TurnContext) -> str:
        """The answer as sent and stored: cut to `max_reply_chars`, saying so, when longer (a
        runaway model must not flood the chat, nor the history)."""
        limit = self.settings.max_reply_chars
        if len(text) <= limit:
            return text
        log.warning("reply_cut", chars=len(text), limit=limit)
        note = t("reply_cut", ctx.language, n=len(text), limit=limit)
        return f"{text[:limit].rstrip()}…\n{note}"

    async def _notice(self, envelope: Envelope, turn_id: int, text: str) -> None:
        """A reply that is not part of the conversation (an apology, a notice), sent; its fate
        is recorded on the message it answers (the turn `turn_id`)."""
        _, error = await self._reply(envelope, text)
        await _kept("delivery", self.memory.sessions.settle(turn_id, error))

    async def _too_late(
        self, envelope: Envelope, turn_id: int, late: float, language: Language
    ) -> None:
        """A stale answer helps nobody: say so, and be quick about it."""
        log.info("reply_too_late", delay=round(late, 1), limit=self.settings.max_reply_delay)
        await self._notice(envelope, turn_id, t("reply_too_late", language))

    def _late_by(self, envelope: Envelope) -> float | None:
        """How long the message waited since Nahida received it (not since the platform's event
        time: its clock may be off), when that is longer than `max_reply_delay`."""
        limit = self.settings.max_reply_delay
        if limit <= 0:
            return None
        delay = self.clock.time() - envelope.received.timestamp()
        return delay if delay > limit else None

    def _over_limit(self, envelope: Envelope) -> bool:
        if self.limiter is None or self.is_bot_admin(envelope):
            return False
        return not self.limiter.allow(str(envelope.chat))

    def _is_command_for_me(self, envelope: Envelope) -> bool:
        """Known commands as the policy allows; unknown ones only when addressed to the bot."""
        if self.commands.knows(envelope.text):
            return self.policy.accepts_command(envelope)
        addressed = envelope.to_me or not envelope.chat.is_group
        return addressed and parse_command(envelope.text) is not None

    def _user_turn(self, envelope: Envelope, addressed: bool) -> NewTurn:
        limit = self.settings.max_message_chars
        text = envelope.text if len(envelope.text) <= limit else envelope.text[:limit] + "…"
        return NewTurn(
            chat=str(envelope.chat),
            role="user",
            content=text,
            time=envelope.time.timestamp(),
            speaker=str(envelope.sender.user),
            speaker_name=envelope.sender.name or None,
            message_id=envelope.message_id,
            addressed=addressed,
        )

    async def _command(self, envelope: Envelope) -> None:
        """Answer a command, once: commands are not history, so a command message delivered
        again after a restart is known by its record here (written once its reply went out)."""
        said = CommandMessage(str(envelope.chat), envelope.message_id, envelope.time.timestamp())
        if await self.memory.sessions.command_answered(said):
            log.info("duplicate_command_dropped", time=said.time)
            return
        inline: list[Callable[[], Awaitable[None]]] = []

        async def later(name: str, work: Callable[[], Awaitable[str]]) -> bool:
            run = functools.partial(self._later, envelope, name, work)
            if self.background is None:  # after the command's own reply, on this worker
                inline.append(run)
                return True
            return await self.background.submit(f"{envelope.chat}:{name}", name, run)

        ctx = CommandContext(
            envelope,
            self.settings.language,
            self.is_bot_admin(envelope),
            self.memory,
            self.settings.tz,
            later,
        )
        _, error = await self._reply(envelope, await self.commands.dispatch(ctx, envelope.text))
        if error is None:
            await _kept("command", self.memory.sessions.command_done(said))
        for run in inline:
            await run()

    async def _later(
        self, envelope: Envelope, name: str, work: Callable[[], Awaitable[str]]
    ) -> None:
        """A command's background work; its text (or a short failure notice) as a reply."""
        with structlog.contextvars.bound_contextvars(
            chat=str(envelope.chat), msg=envelope.message_id
        ):
            try:
                text = await work()
            except Exception:
                log.exception("command_work_failed", work=name)
                text = t("command_failed", self.settings.language)
            await self._reply(envelope, text)

    async def _complete(self, ctx: TurnContext, hot: Sequence[Turn], summary: str) -> Completion:
        slots: dict[str, str] = {"summary": summary} if summary else {}
        gathered = await _gathered(self.sources, ctx)
        for source, text in zip(self.sources, gathered, strict=True):
            if isinstance(text, BaseException):
                log.error("context_source_failed", slot=source.slot, exc_info=text)
            elif isinstance(text, str):
                if text:
                    slots[source.slot] = text
            elif text:
                slots.update(text)
        envelope = ctx.envelope
        prompt = build_prompt(
            persona=self.persona(),
            language=ctx.language,
            now=datetime.now(self.settings.tz).astimezone(self.settings.tz),
            slots=slots,
            hot=hot,
            current=envelope.text,
            current_name=envelope.sender.name,
            is_group=envelope.chat.is_group,
            budget=self.settings.context_tokens,
        )
        return await complete(
            self.model,
            prompt.messages,
            self.tools,
            ctx,
            max_rounds=self.settings.max_tool_rounds,
        )

    async def _reply(self, envelope: Envelope, text: str) -> tuple[str | None, str | None]:
        group = envelope.chat.is_group
        reply = Reply.text(
            envelope.chat,
            text,
            quote=envelope.message_id if group else None,
            mention=envelope.sender.user if group else None,
        )
        try:
            return await self.send(reply), None
        except Exception as exc:
            log.warning("send_failed", error=str(exc))
            return None, f"send failed: {exc}"

    async def _run_hooks(self, ctx: TurnContext, reply: str | None) -> None:
        for hook in self.hooks:
            await _run_hook(hook, ctx, reply)
        if not self.background_hooks:
            return
        if self.background is None:
            for hook in self.background_hooks:
                await _run_hook(hook, ctx, reply)
            return
        for hook in self.background_hooks:
            work = functools.partial(_run_hook_later, hook, ctx, reply)
            if not await self.background.submit(str(ctx.envelope.chat), hook.name, work):
                log.warning("background_work_refused", hook=hook.name)  # shutting down


async def _kept(what: str, write: Awaitable[object]) -> None:
    """A record written once the reply is decided: a full disk loses the record, not the reply."""
    try:
        await write
    except StorageError as exc:
        log.error("not_stored", what=what, error=str(exc))


_Gathered = str | Mapping[str, str] | None | BaseException


async def _gathered(sources: Sequence[ContextSource], ctx: TurnContext) -> list[_Gathered]:
    """What each source gave, or the exception it raised. Several are read at once (their reads
    share one batch of the store); one, the usual case, is awaited as it is: `asyncio.gather`
    would make it a task and take two more passes of the loop for nothing."""
    if len(sources) != 1:
        return await asyncio.gather(*(s.gather(ctx) for s in sources), return_exceptions=True)
    try:
        return [await sources[0].gather(ctx)]
    except Exception as exc:
        return [exc]


async def _run_hook(hook: PostTurnHook, ctx: TurnContext, reply: str | None) -> None:
    """A hook run inside `handle`, whose log context (chat, msg) is already bound."""
    try:
        await hook.after_turn(ctx, reply)
    except Exception:
        log.exception("post_turn_hook_failed", hook=hook.name)


async def _run_hook_later(hook: PostTurnHook, ctx: TurnContext, reply: str | None) -> None:
    """A hook run as background work, outside `handle`: its log lines get the message's context."""
    envelope = ctx.envelope
    with structlog.contextvars.bound_contextvars(chat=str(envelope.chat), msg=envelope.message_id):
        await _run_hook(hook, ctx, reply)
