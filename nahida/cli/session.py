"""`nahida session list|show|delete|search`: conversation sessions from the command line."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import Annotated

import typer

from nahida.cli.state import echo_json, fail, state_of
from nahida.memory import MemoryService, Session

session_app = typer.Typer(help="Conversation sessions.", no_args_is_help=True)
JsonOption = Annotated[bool, typer.Option("--json")]


def _resolve(memory: MemoryService, ref: str, as_json: bool) -> Session:
    found = asyncio.run(memory.sessions.resolve(None, ref))
    if found is None:
        raise fail(f"no session matches {ref!r}", 1, as_json=as_json)
    return found


@session_app.command("list")
def session_list(
    ctx: typer.Context,
    chat: Annotated[str | None, typer.Option(help="Only this ChatKey.")] = None,
    limit: Annotated[int, typer.Option(min=1)] = 20,
    as_json: JsonOption = False,
) -> None:
    """List sessions, newest first."""
    with state_of(ctx).memory() as memory:
        found = asyncio.run(memory.sessions.latest(chat, limit))
    if as_json:
        echo_json([asdict(s) for s in found])
        return
    if not found:
        typer.echo("no sessions")
    for s in found:
        typer.echo(f"{s.id}  {s.updated_at:%Y-%m-%d %H:%M}  {s.turn_count:>4}  {s.chat}  {s.title}")


@session_app.command("show")
def session_show(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="Session id or a unique id suffix.")],
    as_json: JsonOption = False,
) -> None:
    """Show one session's turns."""
    with state_of(ctx).memory() as memory:
        found = _resolve(memory, session_id, as_json)
        turns = asyncio.run(memory.sessions.turns(found.id))
    if as_json:
        echo_json({"session": asdict(found), "turns": [asdict(t) for t in turns]})
        return
    typer.echo(f"{found.id} · {found.chat} · {found.title}")
    for turn in turns:
        who = turn.speaker_name or turn.speaker or turn.role
        error = f"  [error: {turn.error}]" if turn.error else ""
        typer.echo(f"[{turn.time:%Y-%m-%d %H:%M:%S}] {turn.role} {who}: {turn.content}{error}")


@session_app.command("delete")
def session_delete(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="Session id or a unique id suffix.")],
    as_json: JsonOption = False,
) -> None:
    """Delete a session and its turns."""
    with state_of(ctx).memory() as memory:
        found = _resolve(memory, session_id, as_json)
        deleted = asyncio.run(memory.sessions.delete(found.id))
    if as_json:
        echo_json({"deleted": found.id if deleted else None})
    else:
        typer.echo(f"deleted {found.id}")


@session_app.command("search")
def session_search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Words to look for in titles and turns.")],
    chat: Annotated[str | None, typer.Option(help="Only this ChatKey.")] = None,
    limit: Annotated[int, typer.Option(min=1)] = 20,
    as_json: JsonOption = False,
) -> None:
    """Search sessions by title and content."""
    with state_of(ctx).memory() as memory:
        found = asyncio.run(memory.sessions.search(query, chat, limit))
    if as_json:
        echo_json([{**asdict(s), "match": snippet} for s, snippet in found])
        return
    if not found:
        typer.echo("no matches")
    for s, snippet in found:
        typer.echo(f"{s.id}  {s.chat}  {s.title}\n    {snippet[:120]}")
