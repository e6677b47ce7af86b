"""`/profile`, `/profile forget <section>`: the sender's own profile, from the chat (DESIGN §12).

Only ever the sender's own profile, never anyone else's. In a group only its public bullets are
shown or forgotten (DESIGN §4); the private part is there in the person's private chat. Section
names are the profile's fixed Chinese headings in every language; spaces in them are optional.
"""

from __future__ import annotations

from nahida.commands.router import Command, CommandContext, CommandRouter
from nahida.i18n import t
from nahida.memory import PROFILE_SECTIONS, ProfileEntry

SECTION_LIST = "、".join(PROFILE_SECTIONS)
SHOWN = 30  # bullets one `/profile` reply shows


def section_named(name: str) -> str | None:
    """The section a typed name means ("与Agent的约定" is "与 Agent 的约定"), or None."""
    wanted = "".join(name.split()).casefold()
    return next((s for s in PROFILE_SECTIONS if "".join(s.split()).casefold() == wanted), None)


def lines_of(entries: list[ProfileEntry]) -> list[str]:
    """`### section` headings and `- bullet` lines, in the order given."""
    lines: list[str] = []
    section = None
    for entry in entries:
        if entry.section != section:
            lines.append(f"### {entry.section}")
            section = entry.section
        lines.append(f"- {entry.text}")
    return lines


async def show(ctx: CommandContext) -> str:
    in_group = ctx.envelope.chat.is_group
    entries = await ctx.memory.profiles.entries(ctx.envelope.sender.user, public_only=in_group)
    lang = ctx.language
    shown = entries[:SHOWN]
    lines = [t("profile_header", lang), *lines_of(shown)] if entries else [t("profile_empty", lang)]
    if len(entries) > SHOWN:  # a chat message stays readable; `/profile forget` still sees all
        lines.append(t("profile_more", lang, n=len(entries) - SHOWN))
    if in_group:
        lines.append(t("profile_private_hint", lang))
    return "\n".join(lines)


async def forget(ctx: CommandContext, name: str) -> str:
    lang = ctx.language
    section = section_named(name)
    if section is None:
        return t("profile_unknown_section", lang, name=name, sections=SECTION_LIST)
    sender = ctx.envelope.sender.user
    n = await ctx.memory.profiles.forget_section(
        sender, section, actor=str(sender), public_only=ctx.envelope.chat.is_group
    )
    if n == 0:
        return t("profile_forget_none", lang, section=section)
    return t("profile_forgotten", lang, section=section, n=n)


async def profile(ctx: CommandContext, args: str) -> str:
    name, _, rest = args.strip().partition(" ")
    if not name:
        return await show(ctx)
    if name.lower() == "forget" and rest.strip():
        return await forget(ctx, rest.strip())
    return t("profile_usage", ctx.language, sections=SECTION_LIST)


def register(router: CommandRouter) -> None:
    router.register(Command("profile", "cmd_profile", profile))
