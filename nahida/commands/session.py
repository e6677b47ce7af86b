"""Session commands: `/new`, `/sessions`, `/resume <id|suffix|last>`."""

from __future__ import annotations

from nahida.commands.router import Command, CommandContext, CommandRouter
from nahida.i18n import t


async def new(ctx: CommandContext, args: str) -> str:
    ended = await ctx.memory.sessions.start_new(ctx.chat)
    if ended is not None:
        await ctx.memory.working.finish(ended, ctx.chat)
    return t("new_session", ctx.language)


async def sessions(ctx: CommandContext, args: str) -> str:
    found = await ctx.memory.sessions.latest(ctx.chat, 10)
    if not found:
        return t("no_sessions", ctx.language)
    current = await ctx.memory.sessions.current(ctx.chat)
    lines = [t("sessions_header", ctx.language)]
    for s in found:
        mark = t("current_marker", ctx.language) if s.id == current else ""
        count = t(
            "turns_count_one" if s.turn_count == 1 else "turns_count", ctx.language, n=s.turn_count
        )
        changed = s.updated_at.astimezone(ctx.tz)
        lines.append(f"{s.id}{mark} {changed:%m-%d %H:%M} · {count} · {s.title}")
    return "\n".join(lines)


async def resume(ctx: CommandContext, args: str) -> str:
    if not args:
        return t("resume_usage", ctx.language)
    resumed = await ctx.memory.sessions.resume(ctx.chat, args)
    found = resumed[0] if resumed else None
    if resumed is not None and resumed[1] is not None:
        await ctx.memory.working.finish(resumed[1], ctx.chat)
    if found is None and args.strip() == "last":
        return t("no_earlier_session", ctx.language)
    if found is None:
        return t("session_not_found", ctx.language, ref=args)
    return t("resumed", ctx.language, id=found.id, title=found.title)


def register(router: CommandRouter) -> None:
    router.register(Command("new", "cmd_new", new))
    router.register(Command("sessions", "cmd_sessions", sessions))
    router.register(Command("resume", "cmd_resume", resume))
