"""`/memory remember|search|list|forget|why|review|dream`: long-term memory from the chat (DESIGN
§10); `dream` lives in `commands/dream.py`.

Every subcommand sees memory as the person asking sees it in this chat (DESIGN §4): the viewer is
the chat and the sender, so an id from a scope they cannot see is answered "not found", never "not
allowed", and nothing of other scopes leaks. Changes are made as an `Actor` built from the envelope
(the sender, their role in a group, whether they are a bot admin); `MemoryService` decides what
that actor may do (`memory/core/access.py`). This module parses and words the replies only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, tzinfo

from nahida.commands.dream import dream
from nahida.commands.router import Command, CommandContext, CommandRouter
from nahida.i18n import MESSAGES, Language, t
from nahida.memory import (
    KINDS,
    TOO_LONG,
    Actor,
    Evidence,
    Explanation,
    Hit,
    MemoryEvent,
    MemoryItem,
    MemoryPermissionError,
    ProfileExplanation,
    SecretRefused,
    Turn,
    Viewer,
    WriteResult,
)

SEARCH_LIMIT = 5
LIST_LIMIT = 10
REVIEW_LIMIT = 10
EVIDENCE_SHOWN = 3
SNIPPET = 80

Subcommand = Callable[[CommandContext, str], Awaitable[str]]


def actor_of(ctx: CommandContext) -> Actor:
    """The sender as an actor: their role counts only in a group, for that group."""
    return Actor.speaking(ctx.envelope, ctx.is_bot_admin)


def viewer_of(ctx: CommandContext) -> Viewer:
    return Viewer(chat=ctx.envelope.chat, user=ctx.envelope.sender.user)


def when(epoch: float, *, clock: bool = True, tz: tzinfo | None = None) -> str:
    """A moment in the bot's zone (`bot.timezone`; None: the system's): `2024-05-01 12:30`, or
    the date alone."""
    moment = datetime.fromtimestamp(epoch, tz) if tz else datetime.fromtimestamp(epoch).astimezone()
    return f"{moment:%Y-%m-%d %H:%M}" if clock else f"{moment:%Y-%m-%d}"


def snippet(text: str, width: int = SNIPPET) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def item_line(item: MemoryItem, tz: tzinfo | None = None) -> str:
    text = f"{item.title}: {item.content}" if item.title else item.content
    day = when(item.created_at, clock=False, tz=tz)
    return f"{item.id} · {item.kind} · {day} · {snippet(text)}"


def hit_line(hit: Hit, lang: Language, tz: tzinfo | None = None) -> str:
    """An item as `item_line`; an episode as its id, end and summary; a turn as time, speaker
    (the bot's own turns have none) and text."""
    if hit.item is not None:
        return item_line(hit.item, tz)
    if hit.kind == "episode":
        label = t("memory_episode", lang)
        return f"{hit.id} · {label} · {when(hit.time, tz=tz)} · {snippet(hit.text)}"
    speaker = hit.speaker or t("memory_bot_speaker", lang)
    earlier = t("memory_earlier", lang) if hit.earlier else ""
    return f"{when(hit.time, tz=tz)} · {speaker} · {earlier}{snippet(hit.text)}"


def _word(prefix: str, value: str, lang: Language) -> str:
    """A translated status or action word; unknown values are shown as they are."""
    key = f"{prefix}{value}"
    return t(key, lang) if key in MESSAGES else value


def _one_id(args: str) -> str | None:
    parts = args.split()
    return parts[0].lower() if len(parts) == 1 else None


# remember / search / list -------------------------------------------------------------------


async def remember(ctx: CommandContext, args: str) -> str:
    if not args.strip():
        return t("memory_remember_usage", ctx.language)
    envelope = ctx.envelope
    try:
        result = await ctx.memory.items.remember(
            args,
            chat=envelope.chat,
            user=envelope.sender.user,
            message_id=envelope.message_id,
            actor=actor_of(ctx),
        )
    except SecretRefused:
        return t("memory_secret_refused", ctx.language)
    if result.reason == TOO_LONG:
        limit = ctx.memory.items.max_chars
        return t("memory_too_long", ctx.language, n=len(args.strip()), limit=limit)
    return written(result, ctx.language) + await _whose_rule(ctx, result)


async def _whose_rule(ctx: CommandContext, result: WriteResult) -> str:
    """In a group, what a behavioural rule became: the group's, or one for answering the sender
    alone (a member's; their links and contacts kept from the model)."""
    if not ctx.envelope.chat.is_group or result.item_id is None:
        return ""
    item = await ctx.memory.items.get(result.item_id)
    if item is None or item.kind != "procedure":
        return ""
    lang = ctx.language
    gap = "" if lang == "zh" else " "  # between sentences
    if not item.scope.startswith("user:"):
        return gap + t("memory_rule_group", lang)
    withheld = ctx.memory.procedures.withholds_links(item)
    links = gap + t("memory_rule_links", lang) if withheld else ""
    return gap + t("memory_rule_yours", lang) + links


def written(result: WriteResult, lang: Language) -> str:
    """The reply to a write: the new id, the id it merged into, or the candidate awaiting review."""
    if result.outcome == "created":
        return t("memory_remembered", lang, id=result.item_id)
    if result.outcome == "merged":
        return t("memory_merged", lang, id=result.item_id)
    if result.outcome == "superseded":
        return t("memory_superseded", lang, id=result.item_id, old=result.replaced)
    if result.outcome == "pending":
        return t("memory_pending", lang, id=result.candidate_id)
    return t("memory_remember_usage", lang)  # rejected: nothing left to remember


async def search(ctx: CommandContext, args: str) -> str:
    query = args.strip()
    if not query:
        return t("memory_search_usage", ctx.language)
    recall = ctx.memory.recall
    hits = await recall.search(recall.query(query, viewer_of(ctx), limit=SEARCH_LIMIT))
    if not hits:
        return t("memory_no_results", ctx.language, query=snippet(query, 30))
    lines = [t("memory_search_header", ctx.language, query=snippet(query, 30))]
    lines.extend(hit_line(h, ctx.language, ctx.tz) for h in hits)
    return "\n".join(lines)


async def list_(ctx: CommandContext, args: str) -> str:
    kind = args.strip().lower() or None
    if kind is not None and kind not in KINDS:
        return t("memory_list_usage", ctx.language, kinds=", ".join(KINDS))
    items = await ctx.memory.items.latest(viewer_of(ctx), kind=kind, limit=LIST_LIMIT)
    if not items:
        return t("memory_list_empty", ctx.language)
    lines = [t("memory_list_header", ctx.language, n=len(items))]
    lines.extend(item_line(i, ctx.tz) for i in items)
    return "\n".join(lines)


# forget / why -------------------------------------------------------------------------------


async def forget(ctx: CommandContext, args: str) -> str:
    lang = ctx.language
    item_id = _one_id(args)
    if item_id is None:
        return t("memory_forget_usage", lang)
    item = await ctx.memory.items.visible(item_id, viewer_of(ctx))
    if item is None:
        return t("memory_not_found", lang, id=item_id)
    if item.status != "active":
        return t(
            "memory_not_active", lang, id=item_id, status=_word("memory_status_", item.status, lang)
        )
    try:
        await ctx.memory.items.forget(item_id, actor_of(ctx))
    except MemoryPermissionError:
        return t("memory_forget_denied", lang, id=item_id)
    except LookupError:  # archived by someone else meanwhile
        return t("memory_not_found", lang, id=item_id)
    return t("memory_forgotten", lang, id=item_id)


async def why(ctx: CommandContext, args: str) -> str:
    item_id = _one_id(args)
    if item_id is None:
        return t("memory_why_usage", ctx.language)
    if item_id.startswith("p_"):  # a profile bullet's id
        bullet = await ctx.memory.profiles.why(item_id, viewer_of(ctx))
        if bullet is None:
            return t("memory_not_found", ctx.language, id=item_id)
        return explain_bullet(bullet, ctx.language, ctx.tz)
    found = await ctx.memory.items.why(item_id, viewer_of(ctx))
    if found is None:
        return t("memory_not_found", ctx.language, id=item_id)
    return explain(found, ctx.language, str(ctx.envelope.chat), ctx.tz)


def explain_bullet(found: ProfileExplanation, lang: Language, tz: tzinfo | None = None) -> str:
    """A profile bullet: its section and status, text, source and visibility, its history."""
    entry = found.entry
    status = _word("memory_status_", entry.status, lang)
    sensitivity = _word("memory_sensitivity_", entry.sensitivity, lang)
    source = t("memory_why_bullet_source", lang, source=entry.source, sensitivity=sensitivity)
    lines = [
        t("memory_why_bullet", lang, id=entry.id, section=entry.section, status=status),
        snippet(entry.text, 200),
        f"{source} · {entry.chat}" if entry.chat else source,
    ]
    if found.events:
        lines.append(t("memory_why_history", lang))
        lines.extend(f"- {event_line(e, lang, tz)}" for e in found.events)
    return "\n".join(lines)


def explain(found: Explanation, lang: Language, here: str, tz: tzinfo | None = None) -> str:
    """Source, evidence, the audit trail and the superseding item, in a few short lines."""
    item = found.item
    lines = [
        f"{item.id} · {item.kind} · {_word('memory_status_', item.status, lang)}",
        snippet(item.content, 200),
        t(
            "memory_why_source",
            lang,
            source=item.source,
            scope=item.scope,
            confidence=f"{item.confidence:.2f}",
        ),
    ]
    if item.evidence:
        lines.append(t("memory_why_evidence", lang))
        shown = item.evidence[-EVIDENCE_SHOWN:]
        lines.extend(f"- {evidence_line(e, here, tz)}" for e in shown)
        if len(item.evidence) > len(shown):
            lines.append(t("memory_why_more", lang, n=len(item.evidence) - len(shown)))
    else:
        lines.append(t("memory_why_no_evidence", lang))
    if found.events:
        lines.append(t("memory_why_history", lang))
        lines.extend(f"- {event_line(e, lang, tz)}" for e in found.events)
    if item.supersedes:
        lines.append(t("memory_why_supersedes", lang, id=item.supersedes))
    if found.replaced_by:
        lines.append(t("memory_why_replaced_by", lang, id=found.replaced_by))
    if found.hidden:
        lines.append(t("memory_why_hidden", lang, n=len(found.hidden)))
        lines.extend(f"- {hidden_line(turn, here, tz)}" for turn in found.hidden[-EVIDENCE_SHOWN:])
    return "\n".join(lines)


def hidden_line(turn: Turn, here: str, tz: tzinfo | None = None) -> str:
    """A hidden turn: when and where; its words only when they were said in this chat."""
    parts = [when(turn.time.timestamp(), tz=tz), turn.chat, f"turn {turn.id}"]
    if turn.hidden_by is None:  # replaced, not forgotten: recalled as earlier
        parts.append("↺")
    if turn.chat == here:
        parts.append(f"“{snippet(turn.content, 60)}”")
    return " · ".join(parts)


def evidence_line(evidence: Evidence, here: str, tz: tzinfo | None = None) -> str:
    """Time, place and message; the quoted words only when they were said in this chat."""
    parts = [when(evidence.time, tz=tz) if evidence.time is not None else "?"]
    if evidence.chat:
        parts.append(evidence.chat)
    if evidence.message_id:
        parts.append(f"msg {evidence.message_id}")
    if evidence.turn_id is not None:
        parts.append(f"turn {evidence.turn_id}")
    if evidence.ref:
        parts.append(evidence.ref)
    if evidence.quote and evidence.chat == here:
        parts.append(f"“{snippet(evidence.quote, 60)}”")
    return " · ".join(parts)


def event_line(event: MemoryEvent, lang: Language, tz: tzinfo | None = None) -> str:
    action = _word("memory_event_", event.action, lang)
    line = f"{when(event.time, tz=tz)} {action} · {event.actor}"
    return f"{line} · {event.reason}" if event.reason else line


# review -------------------------------------------------------------------------------------


async def review(ctx: CommandContext, args: str) -> str:
    action, _, rest = args.strip().partition(" ")
    if not action:
        return await _pending(ctx)
    candidate_id = _one_id(rest)
    if action.lower() not in ("accept", "reject") or candidate_id is None:
        return t("memory_review_usage", ctx.language)
    return await _decide(ctx, candidate_id, accept=action.lower() == "accept")


async def _pending(ctx: CommandContext) -> str:
    lang = ctx.language
    try:
        pending = await ctx.memory.items.pending(actor_of(ctx), limit=REVIEW_LIMIT)
    except MemoryPermissionError:
        return t("memory_review_denied", lang)
    if not pending:
        return t("memory_review_empty", lang)
    lines = [t("memory_review_header", lang)]
    for candidate_id, c, created in pending:
        acts = f" · {c.op} {c.target}" if c.op != "add" else ""  # a dream's op on an item
        lines.append(
            f"{candidate_id} · {c.kind} · {c.scope}{acts} · {when(created, clock=False, tz=ctx.tz)}"
            f" · {snippet(c.content)}"
        )
    return "\n".join(lines)


async def _decide(ctx: CommandContext, candidate_id: str, *, accept: bool) -> str:
    lang = ctx.language
    try:
        result = await ctx.memory.items.review(candidate_id, accept, actor_of(ctx))
    except MemoryPermissionError:
        return t("memory_review_denied", lang)
    if result is None:
        return t("memory_review_not_found", lang, id=candidate_id)
    if not accept:
        return t("memory_review_rejected", lang, id=candidate_id)
    key = REVIEWED.get(result.outcome, "memory_review_accepted")
    return t(key, lang, id=candidate_id, item=result.item_id, reason=result.reason)


# what accepting a candidate did, by the write's outcome: a dream's op may archive, update or
# supersede an item instead of adding one
REVIEWED = {
    "merged": "memory_review_merged",
    "archived": "memory_review_archived",
    "updated": "memory_review_updated",
    "superseded": "memory_review_superseded",
    "rejected": "memory_review_not_applied",
}


# the command --------------------------------------------------------------------------------

SUBCOMMANDS: dict[str, Subcommand] = {
    "remember": remember,
    "search": search,
    "list": list_,
    "forget": forget,
    "why": why,
    "review": review,
    "dream": dream,
}


async def memory(ctx: CommandContext, args: str) -> str:
    name, _, rest = args.strip().partition(" ")
    sub = SUBCOMMANDS.get(name.lower())
    if sub is None:
        return t("memory_usage", ctx.language)
    return await sub(ctx, rest.strip())


def register(router: CommandRouter) -> None:
    router.register(Command("memory", "cmd_memory", memory))
