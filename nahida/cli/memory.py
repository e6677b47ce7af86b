"""`nahida memory …`: long-term memory from the command line, as a bot admin (DESIGN §4, §10).

    nahida memory remember TEXT (--scope SCOPE | --chat CHAT [--user ID]) [--kind K]
    nahida memory list [--scope SCOPE ... | --chat CHAT [--user ID]] [--kind K] [--status S]
    nahida memory forget ID [--reason TEXT]
    nahida memory restore ID [--reason TEXT]
    nahida memory purge ID --yes [--reason TEXT]
    nahida memory why ID
    nahida memory review [accept|reject CANDIDATE_ID]
    nahida memory export [--scope SCOPE ...] [--output FILE]
    nahida memory import FILE
    nahida memory search …            (nahida.cli.search)
    nahida memory embed [--rebuild]   (nahida.cli.embed)
    nahida memory dream [--chat C] [--list]   (nahida.cli.dream)
    nahida memory sync [--json]               (nahida.cli.sync)

The same operations as the chat's `/memory` commands, through `MemoryService`, with the CLI as the
actor (`Actor.cli()`: a bot admin); `remember` is an admin edit read as `/memory remember` reads
it (`memory.items.admin_candidate`: the trigger left out, dates resolved in `bot.timezone`). Scopes
are named explicitly (`global`, `chat:<ChatKey>`, `user:<UserKey>`), or `--chat`/`--user` give the
scopes a question in that chat by that user sees; `list` with neither lists every scope. Every
read has `--json`. Export writes one item per line (`MemoryItem.to_json()`); import keeps ids and
is idempotent: export → import → export is lossless. Import lists each bad line (its number and
what is wrong) and exits 1 when no line could be imported. Items only: profiles, episodes,
history and the rest are in `nahida backup` (docs/backup.md).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from datetime import tzinfo
from pathlib import Path
from typing import Annotated

import typer

from nahida.cli.dream import dream
from nahida.cli.embed import embed
from nahida.cli.profile import why_bullet
from nahida.cli.search import search
from nahida.cli.state import echo_json, fail, state_of
from nahida.cli.sync import sync
from nahida.cli.text import local_time
from nahida.clock import iso
from nahida.memory import (
    ITEM_STATUSES,
    KINDS,
    TOO_LONG,
    Actor,
    Evidence,
    MemoryItem,
    MemoryPermissionError,
    SecretRefused,
    Viewer,
)

memory_app = typer.Typer(
    help="Long-term memory: search, remember, list, forget …", no_args_is_help=True
)
memory_app.command("search")(search)
memory_app.command("embed")(embed)
memory_app.command("dream")(dream)
memory_app.command("sync")(sync)

STATUSES = (*ITEM_STATUSES, "all")
SCOPE_HELP = "global | chat:<ChatKey> | user:<UserKey>"
ScopeOption = Annotated[list[str] | None, typer.Option("--scope", help=SCOPE_HELP)]
ChatOption = Annotated[str | None, typer.Option(help="ChatKey: the scopes seen in that chat.")]
UserOption = Annotated[
    str | None, typer.Option(help="User id on the chat's platform (or a full UserKey).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="JSON output.")]


def _viewer(scopes: list[str] | None, chat: str | None, user: str | None) -> Viewer | None:
    """Explicit scopes, or what a question in `chat` by `user` sees; None: every scope."""
    try:
        if scopes and chat:
            raise ValueError("give --scope or --chat, not both")
        if scopes:
            return Viewer.admin(scopes)
        if chat:
            return Viewer.parse(chat, user)
        if user:
            raise ValueError("--user needs --chat")
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    return None


def _line(item: MemoryItem) -> str:
    text = " ".join((f"{item.title}: {item.content}" if item.title else item.content).split())
    day = (iso(item.created_at) or "")[:10]
    return f"{item.id}  {item.kind:<10} {item.status:<10} {item.scope}  {day}  {text[:80]}"


def _evidence(evidence: Evidence, tz: tzinfo) -> str:
    """Where an item came from: `2024-05-01 12:30 · onebot:group:1 · msg 77 · “…”`."""
    parts = [local_time(evidence.time, tz)] if evidence.time is not None else []
    parts += [p for p in (evidence.chat, evidence.ref) if p]
    if evidence.message_id:
        parts.append(f"msg {evidence.message_id}")
    if evidence.turn_id is not None:
        parts.append(f"turn {evidence.turn_id}")
    if evidence.quote:
        parts.append(f"“{evidence.quote}”")
    return " · ".join(parts)


# remember -------------------------------------------------------------------------------------


@memory_app.command()
def remember(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="What to remember.")],
    scope: Annotated[str | None, typer.Option(help=SCOPE_HELP)] = None,
    chat: ChatOption = None,
    user: UserOption = None,
    kind: Annotated[str, typer.Option(help=f"One of {', '.join(KINDS)}.")] = "fact",
    sensitivity: Annotated[
        str, typer.Option(help="public | private (default: private for a person, else public)")
    ] = "default",
    as_json: JsonOption = False,
) -> None:
    """Remember a fact (an admin edit: committed now, merged or superseding as usual)."""
    if kind not in KINDS or sensitivity not in ("default", "public", "private"):
        raise fail(
            f"--kind is one of {', '.join(KINDS)}; --sensitivity public or private",
            2,
            as_json=as_json,
        )
    with state_of(ctx).memory() as memory:
        try:
            candidate = memory.items.admin_candidate(
                text, kind=kind, scope=scope, chat=chat, user=user, sensitivity=sensitivity
            )
        except ValueError as exc:
            raise fail(str(exc), 2, as_json=as_json) from None
        try:
            result = asyncio.run(memory.items.propose(candidate, Actor.cli().label))
        except SecretRefused as exc:
            raise fail(f"not remembered: {exc}", as_json=as_json) from None
    if as_json:
        echo_json({"scope": candidate.scope, "title": candidate.title, **asdict(result)})
    elif result.reason == TOO_LONG:
        limit = state_of(ctx).config.limits.item_chars
        raise fail(
            f"not remembered: {len(text):,} characters, over limits.item_chars ({limit:,})",
            as_json=as_json,
        )
    elif result.outcome == "rejected":
        raise fail(f"not remembered: {result.reason}", as_json=as_json)
    else:
        ident = result.item_id or result.candidate_id
        when = f" ({candidate.title})" if candidate.title else ""  # the day, or how often
        extra = f" (replaces {result.replaced})" if result.replaced else ""
        typer.echo(f"{result.outcome} {ident} in {candidate.scope}{when}{extra}")


# list / forget / why ------------------------------------------------------------------------


@memory_app.command("list")
def list_(
    ctx: typer.Context,
    scope: ScopeOption = None,
    chat: ChatOption = None,
    user: UserOption = None,
    kind: Annotated[str | None, typer.Option(help=f"One of {', '.join(KINDS)}.")] = None,
    status: Annotated[str, typer.Option(help=" | ".join(STATUSES))] = "active",
    limit: Annotated[int, typer.Option(min=1)] = 50,
    as_json: JsonOption = False,
) -> None:
    """List items, most recently changed first."""
    if (kind is not None and kind not in KINDS) or status not in STATUSES:
        raise fail(
            f"--kind is one of {', '.join(KINDS)}; --status one of {', '.join(STATUSES)}",
            2,
            as_json=as_json,
        )
    viewer = _viewer(scope, chat, user)
    wanted = None if status == "all" else status
    with state_of(ctx).memory() as memory:
        items = asyncio.run(memory.items.latest(viewer, kind=kind, status=wanted, limit=limit))
    if as_json:
        echo_json([i.to_json() for i in items])
        return
    typer.echo("\n".join(_line(i) for i in items) if items else "no items")


@memory_app.command()
def forget(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="Item id, e.g. m_7f3a2c.")],
    reason: Annotated[str, typer.Option(help="Why (kept in the audit trail).")] = "forgotten (cli)",
    as_json: JsonOption = False,
) -> None:
    """Archive an item (audited; it stays traceable)."""
    with state_of(ctx).memory() as memory:
        try:
            item = asyncio.run(memory.items.forget(item_id, Actor.cli(), reason))
        except (LookupError, MemoryPermissionError):
            raise fail(f"no active item {item_id}", as_json=as_json) from None
    if as_json:
        echo_json({"forgotten": item.id, "status": item.status})
    else:
        typer.echo(f"archived {item.id}")


@memory_app.command()
def restore(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="Item id, e.g. m_7f3a2c.")],
    reason: Annotated[str | None, typer.Option(help="Why (kept in the audit trail).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Make a forgotten or superseded item active again (audited; refused, with the reason,
    while a newer item replaced it or holds its slot)."""
    with state_of(ctx).memory() as memory:
        try:
            item = asyncio.run(memory.items.restore(item_id, Actor.cli(), reason))
        except LookupError:
            raise fail(f"no item {item_id}", as_json=as_json) from None
        except ValueError as exc:
            raise fail(f"not restored: {exc}", as_json=as_json) from None
    if as_json:
        echo_json({"restored": item.id, "status": item.status})
    else:
        typer.echo(f"restored {item.id}")


@memory_app.command()
def purge(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="Item id, e.g. m_7f3a2c.")],
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: this cannot be undone.")] = False,
    reason: Annotated[
        str, typer.Option(help="Why (kept; do not repeat the words).")
    ] = "purged (cli)",
    as_json: JsonOption = False,
) -> None:
    """Delete an item and its words for good (its audit trail keeps who did what and when)."""
    if not yes:
        raise fail(f"purging {item_id} cannot be undone: add --yes", 2, as_json=as_json)
    with state_of(ctx).memory() as memory:
        try:
            done = asyncio.run(memory.items.purge(item_id, Actor.cli(), reason))
        except LookupError:
            raise fail(f"no item {item_id}", as_json=as_json) from None
    if as_json:
        echo_json(asdict(done))
        return
    typer.echo(
        f"purged {done.item_id}: {done.events} events blanked, {done.candidates} candidates"
        f" and {done.runs} dream reports cleared, {done.hidden} turns hidden"
    )
    if done.earlier:
        typer.echo(f"earlier versions kept: {' '.join(done.earlier)} (purge them too)")


@memory_app.command()
def why(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="Item id.")],
    as_json: JsonOption = False,
) -> None:
    """An item (or a profile bullet, p_…) with its source, evidence and audit trail."""
    if item_id.startswith("p_"):
        why_bullet(ctx, item_id, as_json=as_json)
        return
    with state_of(ctx).memory() as memory:
        item = asyncio.run(memory.items.get(item_id))
        found = asyncio.run(memory.items.why(item_id, Viewer.admin([item.scope]))) if item else None
    if found is None:
        raise fail(f"no item {item_id}", as_json=as_json)
    item = found.item
    if as_json:
        events = [asdict(e) for e in found.events]
        hidden = [t.id for t in found.hidden]
        replaced_by = found.replaced_by
        echo_json(
            {
                "item": item.to_json(),
                "events": events,
                "replaced_by": replaced_by,
                "hidden_turns": hidden,
            }
        )
        return
    lines = [_line(item), f"source {item.source} · confidence {item.confidence:.2f}"]
    tz = state_of(ctx).config.bot.zone()
    lines += [f"evidence: {_evidence(e, tz)}" for e in item.evidence]
    for event in found.events:
        reason = f" · {event.reason}" if event.reason else ""
        lines.append(f"{local_time(event.time, tz)} {event.action} by {event.actor}{reason}")
    if item.supersedes:
        lines.append(f"supersedes {item.supersedes}")
    if found.replaced_by:
        lines.append(f"replaced by {found.replaced_by}")
    for turn in found.hidden:
        lines.append(f"hidden from recall: turn {turn.id} of {turn.session_id} ({turn.chat})")
    typer.echo("\n".join(lines))


# review ---------------------------------------------------------------------------------------


@memory_app.command()
def review(
    ctx: typer.Context,
    action: Annotated[str | None, typer.Argument(help="accept | reject")] = None,
    candidate_id: Annotated[str | None, typer.Argument(help="Candidate id, e.g. c_1a2b3c.")] = None,
    limit: Annotated[int, typer.Option(min=1)] = 50,
    as_json: JsonOption = False,
) -> None:
    """List candidates waiting for review, or accept / reject one."""
    if action is not None and (action not in ("accept", "reject") or candidate_id is None):
        raise fail("usage: nahida memory review [accept|reject CANDIDATE_ID]", 2, as_json=as_json)
    with state_of(ctx).memory() as memory:
        if action is None:
            pending = asyncio.run(memory.items.pending(Actor.cli(), limit))
        else:
            assert candidate_id is not None
            accept = action == "accept"
            result = asyncio.run(memory.items.review(candidate_id, accept, Actor.cli()))
    if action is None:
        if as_json:
            echo_json([{"id": c, "created_at": t, **asdict(cand)} for c, cand, t in pending])
            return
        for ident, cand, _ in pending:
            typer.echo(
                f"{ident}  {cand.kind:<10} {cand.scope}  {' '.join(cand.content.split())[:80]}"
            )
        if not pending:
            typer.echo("nothing to review")
        return
    if result is None:
        raise fail(f"no pending candidate {candidate_id}", as_json=as_json)
    if as_json:
        echo_json(asdict(result))
    else:
        typer.echo(
            f"{result.outcome} {candidate_id}"
            + (f" → {result.item_id}" if result.item_id else "")
            + (f": {result.reason}" if result.outcome == "rejected" and result.reason else "")
        )


# export / import ------------------------------------------------------------------------------


@memory_app.command()
def export(
    ctx: typer.Context,
    scope: ScopeOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File (default stdout).")
    ] = None,
) -> None:
    """Every item (any status) as JSON Lines, oldest first (items only: `nahida backup` keeps
    everything)."""
    with state_of(ctx).memory() as memory:
        try:
            lines = asyncio.run(memory.items.export(scope or None))
        except ValueError as exc:
            raise fail(str(exc), 2) from None
    text = "".join(line + "\n" for line in lines)
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        typer.echo(f"exported {len(lines)} items to {output}", err=True)


@memory_app.command("import")
def import_(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSONL written by `nahida memory export`.")],
    as_json: JsonOption = False,
) -> None:
    """Import exported items as they were (same ids); items already present are skipped. Exits
    1 when every line was bad."""
    if not file.is_file():
        raise fail(f"cannot read {file}", as_json=as_json)
    state = state_of(ctx)
    with state.memory() as memory:
        report = asyncio.run(
            memory.items.import_file(file, Actor.cli().label, state.config.limits.import_line_bytes)
        )
    bad = [b.to_json() for b in report.bad]
    if as_json:
        echo_json(
            {
                "imported": report.imported,
                "duplicates": report.duplicates,
                "bad": len(bad),
                "errors": bad,
            }
        )
        if report.nothing_imported:
            raise typer.Exit(1)
        return
    for entry in report.bad:
        typer.echo(f"{file}:{entry.line}: {entry.error}", err=True)
    typer.echo(f"imported {report.imported}, already present {report.duplicates}, bad {len(bad)}")
    if report.nothing_imported:
        raise fail(f"nothing imported: every line of {file} was bad (see above)")
