"""`nahida memory dream`: dream runs now, and the runs so far (DESIGN §8).

    nahida memory dream [--chat CHAT] [--json]
    nahida memory dream --list [--chat CHAT] [--limit N] [--json]

Without `--list`: one run over CHAT's new turns now, or over every chat with at least one new turn
(those dreamed longest ago first); each run's id and counts are printed. It needs a model (the
`dream` route, else `chat`): without one it exits 2 with one line. A paused chat is said to be
paused (exit 0). `--list`: the runs, newest first. `--json` prints `DreamRun.to_json()` objects
(a chat being dreamed elsewhere as `{"chat": …, "outcome": "busy"}`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import tzinfo
from typing import Annotated, Any

import typer

from nahida.app import build_model_router
from nahida.cli.state import State, echo_json, fail, state_of
from nahida.cli.text import local_time
from nahida.memory import DreamRun, MemoryService

EVERY_CHAT = 1_000_000  # `due` limit without --chat: every chat with a new turn


def dream(
    ctx: typer.Context,
    chat: Annotated[str | None, typer.Option(help="ChatKey, e.g. onebot:group:123.")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the runs, newest first.")] = False,
    limit: Annotated[int, typer.Option(min=1, help="Runs listed.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Dream now (one chat, or every chat with new turns), or list the runs."""
    state = state_of(ctx)
    if list_:
        with state.memory() as memory:
            runs = asyncio.run(memory.dreams.runs(chat, limit))
        if as_json:
            echo_json([r.to_json() for r in runs])
        else:
            tz = state.config.bot.zone()
            typer.echo("\n".join(_listed(r, tz) for r in runs) if runs else "no dream runs yet")
        return
    results = _dream_now(state, chat, as_json)
    if as_json:
        echo_json([r if isinstance(r, dict) else r.to_json() for r in results])
        return
    if not results:
        typer.echo("nothing new to dream")
    for result in results:
        typer.echo(_done(result))


def _dream_now(state: State, chat: str | None, as_json: bool) -> list[DreamRun | dict[str, Any]]:
    router = build_model_router(state.config, str(state.paths.config or "config"))
    with state.memory(model=router) as memory:
        try:
            if not memory.dreams.enabled:
                raise fail(
                    "no model is configured for dreaming (models.dream, else models.chat)",
                    2,
                    as_json=as_json,
                )
            return asyncio.run(_runs(memory, chat, router.aclose))
        except ValueError as exc:  # a chat key that does not parse
            raise fail(str(exc), 2, as_json=as_json) from None


async def _runs(
    memory: MemoryService, chat: str | None, close: Callable[[], Awaitable[None]]
) -> list[DreamRun | dict[str, Any]]:
    """A run over `chat`, or over every chat with a new turn; the router closed afterwards."""
    dreams = memory.dreams
    try:
        chats = [chat] if chat else [d.chat for d in await dreams.due(EVERY_CHAT, min_turns=1)]
        results: list[DreamRun | dict[str, Any]] = []
        for name in chats:
            run = await dreams.run(name, "cli")
            results.append({"chat": name, "outcome": "busy"} if run is None else run)
        return results
    finally:
        await close()


def _done(result: DreamRun | dict[str, Any]) -> str:
    if isinstance(result, dict):
        return f"{result['chat']}: being dreamed elsewhere (busy); try again later"
    run = result
    if run.outcome == "skipped":
        if run.error == "paused":
            return (
                f"{run.chat}: dreaming is paused there"
                " (`/memory dream resume` in the chat turns it back on)"
            )
        return f"{run.chat}: nothing new to dream"
    line = (
        f"{run.id}  {run.chat}  {run.outcome}  turns {run.turns}, calls {run.calls},"
        f" applied {run.applied}, pending {run.pending}, rejected {run.rejected}"
    )
    return f"{line} · {run.error}" if run.error else line


def _listed(run: DreamRun, tz: tzinfo | None) -> str:
    turns = f"t{run.from_turn}–t{run.through_turn}" if run.turns else "no turns"
    return (
        f"{run.id}  {local_time(run.started_at, tz)}  {run.chat}  {run.outcome:<11}  {turns}"
        f"  applied {run.applied}, pending {run.pending}, rejected {run.rejected}"
        f"  {run.model or '-'}"
    )
