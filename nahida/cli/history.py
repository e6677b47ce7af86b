"""`nahida history import`: chat history from JSON Lines (see `nahida.memory.history.importer`).

    nahida history import chats.jsonl [--json]

Prints the counts (imported, duplicates, bad lines) and the rate; each bad line is reported on
stderr with its number and what was wrong, and skipped. Sessions split on the config's
`session.idle_split_minutes`. `--extract` also reads the turns for memories as live ones are (off
by default). A large file shows a progress bar on a terminal. Exit code 1 when the file cannot be
read. Embedding the new turns is left to the bot's upkeep job (or `nahida memory embed` now).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from nahida.cli.state import echo_json, fail, state_of

history_app = typer.Typer(help="Chat history: import.", no_args_is_help=True)
PROGRESS_FROM = 5000  # turns: smaller imports finish before a bar would help


class Progress:
    """`progress(done, total)` for the importer: a bar on stderr once an import is large."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._shown = 0

    def __call__(self, done: int, total: int) -> None:
        if total < PROGRESS_FROM:
            return
        if self._bar is None:
            self._bar = typer.progressbar(length=total, label="importing", file=sys.stderr)
            self._bar.render_progress()
        self._bar.update(done - self._shown)
        self._shown = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.render_finish()


@history_app.command("import")
def history_import(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSONL: one message per line.")],
    extract: Annotated[
        bool,
        typer.Option("--extract", help="Also read the turns for memories, as live ones are."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Import messages as history turns (idempotent on chat + message_id)."""
    state = state_of(ctx)
    if not file.is_file():
        raise fail(f"cannot read {file}", as_json=as_json)
    progress = Progress() if sys.stderr.isatty() and not as_json else None
    with state.memory() as memory:
        embedding = memory.embeddings.enabled
        try:
            limit = state.config.limits.import_line_bytes
            report = memory.import_history(
                file, extract=extract, max_line_bytes=limit, progress=progress
            )
        except (OSError, UnicodeDecodeError) as exc:
            raise fail(f"cannot read {file}: {exc}", as_json=as_json) from None
        finally:
            if progress is not None:
                progress.close()
    later = embedding and report.imported > 0
    if as_json:
        echo_json({**report.to_json(), "embedding": "left to upkeep" if later else None})
        if report.nothing_imported:
            raise typer.Exit(1)
        return
    for bad in report.bad:
        typer.echo(f"{file}:{bad.line}: {bad.error}", err=True)
    if report.memories:
        typer.echo(f"extraction proposed {report.memories} memories from them")
    typer.echo(
        f"imported {report.imported}, duplicates {report.duplicates}, bad {len(report.bad)}"
        f" in {report.seconds:.2f} s ({report.turns_per_second:,.0f} turns/s after"
        f" {report.startup:.2f} s of start-up)"
    )
    if later:
        typer.echo(
            "vectors for recall by meaning are made in the background by the running bot"
            " (embedding upkeep); to make them now: nahida memory embed"
        )
    if report.nothing_imported:
        raise fail(f"nothing imported: every line of {file} was bad (see above)")
