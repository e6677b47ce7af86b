"""`/memory dream [pause|resume]`: dream this chat's new turns now, or pause and resume its
dreaming (DESIGN §8), for bot admins and a group's owner/admins (`memory.dreams.may_steer`).

A run may take a minute (model calls), so it goes to the background (`CommandContext.later`): the
command answers "started" at once and the run's summary comes as a second reply. Without a
background (`later` is None) the run is awaited and its summary is the reply.
"""

from __future__ import annotations

from collections import Counter

from nahida.commands.router import CommandContext
from nahida.i18n import Language, t
from nahida.memory import Actor, DreamRun, NoModel


async def dream(ctx: CommandContext, args: str) -> str:
    lang = ctx.language
    action = args.strip().lower()
    if action not in ("", "pause", "resume"):
        return t("memory_dream_usage", lang)
    dreams = ctx.memory.dreams
    actor = Actor.speaking(ctx.envelope, ctx.is_bot_admin)
    if not dreams.may_steer(ctx.chat, actor):
        return t("memory_dream_denied", lang)
    if action:
        await dreams.pause(ctx.chat, action == "pause", actor=actor)
        return t("memory_dream_paused_now" if action == "pause" else "memory_dream_resumed", lang)
    if not dreams.enabled:
        return t("memory_dream_no_model", lang)
    if await dreams.paused(ctx.chat):
        return t("memory_dream_paused", lang)

    async def work() -> str:
        return await run_now(ctx)

    if ctx.later is None:
        return await work()
    if not await ctx.later("dream", work):
        return t("command_later_refused", lang)
    return t("memory_dream_started", lang)


async def run_now(ctx: CommandContext) -> str:
    """One run over the chat, as its one-message summary."""
    try:
        actor = Actor.speaking(ctx.envelope, ctx.is_bot_admin)
        run = await ctx.memory.dreams.run(ctx.chat, "command", actor=actor)
    except NoModel:
        return t("memory_dream_no_model", ctx.language)
    return summary(run, ctx.language)


def summary(run: DreamRun | None, lang: Language) -> str:
    """A run in one message: what it did with the proposals, and its id."""
    if run is None:
        return t("memory_dream_busy", lang)
    if run.outcome == "skipped":
        key = "memory_dream_paused" if run.error == "paused" else "memory_dream_nothing"
        return t(key, lang)
    if run.outcome in ("failed", "interrupted") and not run.applied and not run.pending:
        return t("memory_dream_failed", lang, id=run.id, error=run.error or run.outcome)
    fates = Counter(run.fates)
    text = t(
        "memory_dream_done",
        lang,
        id=run.id,
        turns=run.turns,
        created=fates["created"],
        merged=fates["merged"],
        superseded=fates["superseded"] + fates["updated"],
        archived=fates["archived"],
        pending=run.pending,
        rejected=run.rejected,
    )
    if run.outcome == "degraded":
        text += t("memory_dream_degraded", lang)
    elif run.outcome in ("failed", "interrupted"):
        text += " " + t("memory_dream_failed", lang, id=run.id, error=run.error or run.outcome)
    return text
