"""`/rules`, `/rules forget <id>`: the behavioural rules in force here (DESIGN §12).

`/rules` lists what the sender's viewer sees of them here (their own rules, the chat's, global
ones; in a group never a member's private rule, DESIGN §4), newest first. `/rules forget <id>`
archives one with the permissions of `/memory forget` (the person it is about or who set it, a
group's owner or admins for the group's rules, bot admins).
"""

from __future__ import annotations

from nahida.commands.memory import actor_of, viewer_of, when
from nahida.commands.router import Command, CommandContext, CommandRouter
from nahida.i18n import t
from nahida.memory import MemoryPermissionError


async def listed(ctx: CommandContext) -> str:
    rules = await ctx.memory.procedures.in_force(viewer_of(ctx))
    if not rules:
        return t("rules_none", ctx.language)
    lines = [t("rules_header", ctx.language, n=len(rules))]
    for rule in rules:
        scope = rule.scope.split(":", 1)[0]
        context = f" ({rule.title})" if rule.title else ""
        day = when(rule.created_at, clock=False, tz=ctx.tz)
        lines.append(f"{rule.id} · {scope} · {day} · {rule.content}{context}")
    return "\n".join(lines)


async def forget(ctx: CommandContext, item_id: str) -> str:
    lang = ctx.language
    try:
        await ctx.memory.procedures.forget(item_id, viewer_of(ctx), actor_of(ctx))
    except LookupError:
        return t("rules_not_found", lang, id=item_id)
    except MemoryPermissionError:
        return t("memory_forget_denied", lang, id=item_id)
    return t("rules_forgotten", lang, id=item_id)


async def rules(ctx: CommandContext, args: str) -> str:
    name, _, rest = args.strip().partition(" ")
    if not name:
        return await listed(ctx)
    if name.lower() == "forget" and rest.strip() and " " not in rest.strip():
        return await forget(ctx, rest.strip())
    return t("rules_usage", ctx.language)


def register(router: CommandRouter) -> None:
    router.register(Command("rules", "cmd_rules", rules))
