"""`nahida backup FILE` and `nahida restore FILE [--replace]` (docs/backup.md).

    nahida backup FILE             the whole memory, at one moment, into FILE (a running bot
                                   may go on meanwhile)
    nahida restore FILE            into an empty data dir; into one that holds this very backup,
                                   nothing changes
    nahida restore FILE --replace  over a data dir holding other memory or a damaged file (the
                                   old file is kept beside it)

Exit codes: 0 done, 1 the backup could not be made or restored (the message says why), 3 the
database cannot be used (damaged, the disk full).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from nahida.app import backup_database, restore_database
from nahida.cli.state import echo_json, state_of

JsonOption = Annotated[bool, typer.Option("--json", help="JSON output.")]
# what a person recognises, in the order they care about; the rest of the tables follow
SHOWN = (
    "memory_items",
    "memory_events",
    "profile_entries",
    "episodes",
    "sessions",
    "turns",
    "memory_candidates",
    "dream_runs",
    "job_runs",
    "embeddings",
)


def holding(counts: dict[str, int]) -> str:
    """`memory_items 12, memory_events 40, …`: the tables that hold rows."""
    order = [*SHOWN, *sorted(set(counts) - set(SHOWN))]
    return ", ".join(f"{t} {counts[t]:,}" for t in order if counts.get(t))


def backup(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The backup file to write (replaced if present).")],
    as_json: JsonOption = False,
) -> None:
    """Back up the whole memory (items with their audit trail, profiles, rules, episodes,
    sessions and turns, candidates, dream and job runs, vectors) into one file."""
    state = state_of(ctx)
    manifest = backup_database(state.paths, file, state.config.memory.store)
    if as_json:
        echo_json({"file": str(file), **manifest})
        return
    size = file.stat().st_size
    typer.echo(
        f"backed up {state.paths.database} to {file} ({size:,} bytes):"
        f" {holding(manifest['counts']) or 'no memory yet'}"
    )


def restore(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A file written by `nahida backup`.")],
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="Replace a database holding other memory (it is kept beside)."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Restore a backup into the data dir (stop the bot first)."""
    state = state_of(ctx)
    done: dict[str, Any] = restore_database(
        state.paths, file, replace=replace, where=state.config.memory.store
    )
    if as_json:
        echo_json(done)
        return
    manifest = done["manifest"]
    made = f"made {manifest['created_at']} by nahida {manifest['nahida']}"
    database = state.paths.database
    if done["outcome"] == "unchanged":
        typer.echo(f"{database} holds this backup already ({made}): nothing changed")
        return
    typer.echo(f"restored {file} ({made}) into {database}: {holding(manifest['counts'])}")
    if done["kept"]:
        typer.echo(f"the database it replaced is kept as {done['kept']}")
