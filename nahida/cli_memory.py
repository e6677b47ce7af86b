"""`nahida memory …`: long-term memory from the command line, as a bot admin (DESIGN §4, §10).

    nahida memory remember TEXT (--scope SCOPE | --chat CHAT [--user ID]) [--kind K]
    nahida memory list [--scope SCOPE ... | --chat CHAT [--user ID]] [--kind K] [--status S]
    nahida memory forget ID [--reason TEXT]
    nahida memory why ID
    nahida memory review [accept|reject CANDIDATE_ID]
    nahida memory export [--scope SCOPE ...] [--output FILE]
    nahida memory import FILE
    nahida memory search …            (nahida.cli_search)

The same operations as the chat's `/memory` commands, through `MemoryService`, with the CLI as the
actor (`Actor.cli()`: a bot admin). Scopes are named explicitly (`global`, `chat:<ChatKey>`,
`user:<UserKey>`), or `--chat`/`--user` give the scopes a question in that chat by that user sees;
`list` with neither lists every scope. Every read has `--json`. Export writes one item per line
(`MemoryItem.to_json()`); import keeps ids and is idempotent: export → import → export is lossless.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nahida.cli_search import search
from nahida.db import Connection, Database
from nahida.envelope import ChatKey
from nahida.memory import recall, store
from nahida.memory.models import KINDS, Candidate, Evidence, MemoryItem, iso
from nahida.memory.scopes import Viewer, admin_viewer, validate_scope
from nahida.memory.service import Actor, MemoryPermissionError, MemoryService, default_scope
from nahida.memory.write import SecretRefused

if TYPE_CHECKING:
    from nahida.cli import State

memory_app = typer.Typer(
    help="Long-term memory: search, remember, list, forget …", no_args_is_help=True
)
memory_app.command("search")(search)

STATUSES = ("active", "archived", "superseded", "rejected", "all")
SCOPE_HELP = "global | chat:<ChatKey> | user:<UserKey>"
ScopeOption = Annotated[list[str] | None, typer.Option("--scope", help=SCOPE_HELP)]
ChatOption = Annotated[str | None, typer.Option(help="ChatKey: the scopes seen in that chat.")]
UserOption = Annotated[str | None, typer.Option(help="User id on the chat's platform.")]
JsonOption = Annotated[bool, typer.Option("--json", help="JSON output.")]


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _service(ctx: typer.Context) -> MemoryService:
    state: State = ctx.obj
    db = Database(state.paths.database)
    return MemoryService(db, mode=state.config.memory.commit_mode)


def _viewer(scopes: list[str] | None, chat: str | None, user: str | None) -> Viewer | None:
    """Explicit scopes, or what a question in `chat` by `user` sees; None: every scope."""
    try:
        if scopes and chat:
            raise ValueError("give --scope or --chat, not both")
        if scopes:
            return admin_viewer(scopes)
        if chat:
            return recall.viewer_for(chat, user)
        if user:
            raise ValueError("--user needs --chat")
    except ValueError as exc:
        raise _fail(str(exc), 2) from None
    return None


def _line(item: MemoryItem) -> str:
    text = " ".join((f"{item.title}: {item.content}" if item.title else item.content).split())
    day = (iso(item.created_at) or "")[:10]
    return f"{item.id}  {item.kind:<10} {item.status:<10} {item.scope}  {day}  {text[:80]}"


# remember -------------------------------------------------------------------------------------


def _candidate(
    text: str, kind: str, scope: str | None, chat: str | None, user: str | None, sensitivity: str
) -> Candidate:
    subject = None
    if scope is not None:
        person = validate_scope(scope).startswith("user:")
        default, subject = ("private", scope[5:]) if person else ("public", None)
    elif chat is not None and user is not None:
        key = recall.viewer_for(chat, user)
        assert isinstance(key.chat, ChatKey) and key.user is not None
        scope, default = default_scope(key.chat, key.user)
        subject = None if key.chat.is_group else str(key.user)
    elif chat is not None:
        scope, default = f"chat:{ChatKey.parse(chat)}", "public"
    else:
        raise ValueError("give --scope, or --chat (with --user for a person's memory)")
    return Candidate(
        scope=scope,
        kind=kind,
        content=text.strip(),
        source="human_edit",
        confidence=0.95,
        importance=0.7,
        sensitivity=sensitivity if sensitivity != "default" else default,
        subject_user=subject,
        evidence=(Evidence(ref="cli", time=time.time()),),
    )


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
        raise _fail(f"--kind is one of {', '.join(KINDS)}; --sensitivity public or private", 2)
    try:
        candidate = _candidate(text, kind, scope, chat, user, sensitivity)
    except ValueError as exc:
        raise _fail(str(exc), 2) from None
    service = _service(ctx)
    try:
        result = asyncio.run(service.propose(candidate, Actor.cli().label))
    except SecretRefused as exc:
        raise _fail(f"not remembered: {exc}") from None
    finally:
        service.db.close()
    if as_json:
        _echo_json({"scope": candidate.scope, **asdict(result)})
    elif result.outcome == "rejected":
        raise _fail(f"not remembered: {result.reason}")
    else:
        ident = result.item_id or result.candidate_id
        extra = f" (replaces {result.replaced})" if result.replaced else ""
        typer.echo(f"{result.outcome} {ident} in {candidate.scope}{extra}")


# list / forget / why ------------------------------------------------------------------------


def _every_scope(conn: Connection, kind: str | None, status: str | None, limit: int) -> list[Any]:
    sql, params = "SELECT * FROM memory_items WHERE 1", []
    if status is not None:
        sql += " AND status = ?"
        params.append(status)
    if kind is not None:
        sql += " AND kind = ?"
        params.append(kind)
    rows = conn.execute(sql + " ORDER BY updated_at DESC, id LIMIT ?", [*params, limit])
    return [MemoryItem.from_row(r) for r in rows]


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
        raise _fail(
            f"--kind is one of {', '.join(KINDS)}; --status one of {', '.join(STATUSES)}", 2
        )
    viewer = _viewer(scope, chat, user)
    wanted = None if status == "all" else status
    service = _service(ctx)
    try:
        if viewer is None:
            items = service.db.call(_every_scope, kind, wanted, limit)
        else:
            items = service.db.call(
                lambda conn: store.list_items(conn, viewer, kind=kind, status=wanted, limit=limit)
            )
    finally:
        service.db.close()
    if as_json:
        _echo_json([i.to_json() for i in items])
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
    service = _service(ctx)
    try:
        item = asyncio.run(service.forget(item_id, Actor.cli(), reason))
    except (LookupError, MemoryPermissionError):
        raise _fail(f"no active item {item_id}") from None
    finally:
        service.db.close()
    if as_json:
        _echo_json({"forgotten": item.id, "status": item.status})
    else:
        typer.echo(f"archived {item.id}")


@memory_app.command()
def why(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="Item id.")],
    as_json: JsonOption = False,
) -> None:
    """An item with its source, evidence and audit trail."""
    service = _service(ctx)
    try:
        item = asyncio.run(service.get(item_id))
        found = asyncio.run(service.why(item_id, admin_viewer([item.scope]))) if item else None
    finally:
        service.db.close()
    if found is None:
        raise _fail(f"no item {item_id}")
    item = found.item
    if as_json:
        events = [asdict(e) for e in found.events]
        _echo_json({"item": item.to_json(), "events": events, "replaced_by": found.replaced_by})
        return
    lines = [_line(item), f"source {item.source} · confidence {item.confidence:.2f}"]
    lines += [f"evidence: {json.dumps(e.to_json(), ensure_ascii=False)}" for e in item.evidence]
    for event in found.events:
        reason = f" · {event.reason}" if event.reason else ""
        lines.append(f"{iso(event.time)} {event.action} by {event.actor}{reason}")
    if item.supersedes:
        lines.append(f"supersedes {item.supersedes}")
    if found.replaced_by:
        lines.append(f"replaced by {found.replaced_by}")
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
        raise _fail("usage: nahida memory review [accept|reject CANDIDATE_ID]", 2)
    service = _service(ctx)
    try:
        if action is None:
            pending = asyncio.run(service.pending(Actor.cli(), limit))
        else:
            assert candidate_id is not None
            result = asyncio.run(service.review(candidate_id, action == "accept", Actor.cli()))
    finally:
        service.db.close()
    if action is None:
        if as_json:
            _echo_json([{"id": c, "created_at": t, **asdict(cand)} for c, cand, t in pending])
            return
        for ident, cand, _ in pending:
            typer.echo(
                f"{ident}  {cand.kind:<10} {cand.scope}  {' '.join(cand.content.split())[:80]}"
            )
        if not pending:
            typer.echo("nothing to review")
        return
    if result is None:
        raise _fail(f"no pending candidate {candidate_id}")
    if as_json:
        _echo_json(asdict(result))
    else:
        typer.echo(
            f"{result.outcome} {candidate_id}" + (f" → {result.item_id}" if result.item_id else "")
        )


# export / import ------------------------------------------------------------------------------


def export_lines(items: list[MemoryItem]) -> list[str]:
    return [json.dumps(i.to_json(), ensure_ascii=False, sort_keys=True) for i in items]


@memory_app.command()
def export(
    ctx: typer.Context,
    scope: ScopeOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File (default stdout).")
    ] = None,
) -> None:
    """Every item (any status) as JSON Lines, oldest first."""
    try:
        scopes = [validate_scope(s) for s in scope] if scope else None
    except ValueError as exc:
        raise _fail(str(exc), 2) from None
    service = _service(ctx)
    try:
        items = asyncio.run(service.export(scopes))
    finally:
        service.db.close()
    text = "".join(line + "\n" for line in export_lines(items))
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        typer.echo(f"exported {len(items)} items to {output}", err=True)


def parse_item(line: str) -> MemoryItem:
    """One exported line as an item; ValueError says what is wrong."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    for key in ("id", "scope", "kind", "content"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ValueError(f"{key} must be a non-empty string")
    validate_scope(data["scope"])
    if data.get("status", "active") not in STATUSES[:-1]:
        raise ValueError(f"unknown status {data.get('status')!r}")
    for key in ("confidence", "importance", "created_at", "updated_at"):
        if key in data and (isinstance(data[key], bool) or not isinstance(data[key], int | float)):
            raise ValueError(f"{key} must be a number")
    try:
        return MemoryItem.from_json(data)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


@memory_app.command("import")
def import_(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSONL written by `nahida memory export`.")],
    as_json: JsonOption = False,
) -> None:
    """Import exported items as they were (same ids); items already present are skipped."""
    if not file.is_file():
        raise _fail(f"cannot read {file}")
    numbered: list[tuple[int, MemoryItem]] = []
    bad: list[dict[str, Any]] = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            numbered.append((number, parse_item(line)))
        except ValueError as exc:
            bad.append({"line": number, "error": str(exc)})
    numbered.sort(key=lambda pair: pair[1].created_at)  # the superseded item before its successor
    service = _service(ctx)
    try:
        known = {item.id for _, item in numbered}
        items = []
        for number, item in numbered:
            target = item.supersedes
            if target and target not in known and asyncio.run(service.get(target)) is None:
                bad.append({"line": number, "error": f"supersedes unknown item {target}"})
                continue
            items.append(item)
        added, present = asyncio.run(service.import_items(items, Actor.cli().label))
    finally:
        service.db.close()
    bad.sort(key=lambda entry: entry["line"])
    report = {"imported": added, "duplicates": present, "bad": len(bad), "errors": bad}
    if as_json:
        _echo_json(report)
        return
    for entry in bad:
        typer.echo(f"{file}:{entry['line']}: {entry['error']}", err=True)
    typer.echo(f"imported {added}, already present {present}, bad {len(bad)}")
