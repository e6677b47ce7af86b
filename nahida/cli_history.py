"""`nahida history import`: chat history from JSON Lines (see `nahida.history_import`).

    nahida history import chats.jsonl [--json]

Prints the counts (imported, duplicates, bad lines) and the rate; each bad line is reported on
stderr with its number and what was wrong, and skipped. Sessions split on the config's
`session.idle_split_minutes`. Exit code 1 when the file cannot be read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nahida.db import Database
from nahida.history_import import import_file

if TYPE_CHECKING:
    from nahida.cli import State

history_app = typer.Typer(help="Chat history: import.", no_args_is_help=True)


def _state(ctx: typer.Context) -> State:
    state: State = ctx.obj
    return state


@history_app.command("import")
def history_import(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSONL: one message per line.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Import messages as history turns (idempotent on chat + message_id)."""
    state = _state(ctx)
    idle_split = state.config.session.idle_split_minutes * 60.0
    if not file.is_file():
        typer.echo(f"error: cannot read {file}", err=True)
        raise typer.Exit(1)
    db = Database(state.paths.database)
    try:
        report = import_file(db, file, idle_split)
    except (OSError, UnicodeDecodeError) as exc:
        typer.echo(f"error: cannot read {file}: {exc}", err=True)
        raise typer.Exit(1) from None
    finally:
        db.close()
    if as_json:
        typer.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
        return
    for bad in report.bad:
        typer.echo(f"{file}:{bad.line}: {bad.error}", err=True)
    typer.echo(
        f"imported {report.imported}, duplicates {report.duplicates}, bad {len(report.bad)}"
        f" in {report.seconds:.2f} s ({report.turns_per_second:,.0f} turns/s)"
    )
