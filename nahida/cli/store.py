"""`nahida store copy --to WHERE [--from WHERE]`: memory from one store into another
(docs/postgres.md, Moving memory between stores).

    nahida store copy --to postgresql://nahida@127.0.0.1/nahida
                            the configured store (by default the data dir's SQLite file) into
                            a PostgreSQL database
    nahida --data-dir data-sqlite store copy --to sqlite
                            the configured store (PostgreSQL) into that data dir's SQLite file

WHERE is `sqlite` (the data dir's file), a `postgresql://` URI, a data dir, or a SQLite file
(a path ending in `.db`). Stop the bot first. Running it again writes only what the target
lacks. Exit codes: 0 copied and verified, 1 refused or not verified (the message says why),
3 a database cannot be used.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from nahida.app import copy_memory
from nahida.cli.doctor import shown_store
from nahida.cli.state import echo_json, fail, state_of

store_app = typer.Typer(help="Where memory is kept: copy it between stores.", no_args_is_help=True)


def _progress(table: str, seen: int, total: int) -> None:
    sys.stderr.write(f"\r{table}: {seen:,} of {total:,} rows looked at")
    if seen >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


@store_app.command("copy")
def store_copy(
    ctx: typer.Context,
    to: Annotated[str, typer.Option("--to", help="The target: sqlite, a URI, a dir or a .db.")],
    source: Annotated[
        str | None,
        typer.Option("--from", help="The source (default: the configured memory.store)."),
    ] = None,
    batch: Annotated[int | None, typer.Option(min=1, help="Rows a transaction.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Copy every table of memory into another store (stop the bot first), then check the
    counts and a few searches on both."""
    state = state_of(ctx)
    where = source if source is not None else state.config.memory.store
    progress = _progress if not as_json and sys.stderr.isatty() else None
    report: dict[str, Any] = copy_memory(state.paths, to, where, batch=batch, progress=progress)
    if as_json:
        echo_json(report)
    else:
        _show(report)
    if not report["ok"]:
        raise fail("the copy does not match its source (see above)", 1, as_json=as_json)


def _show(report: dict[str, Any]) -> None:
    typer.echo(f"copied {shown_store(report['source'])} to {shown_store(report['target'])}")
    typer.echo(f"{'table':<20} {'source':>10} {'target':>10} {'written':>9}  indexed")
    for t in report["tables"]:
        indexed = t.get("indexed")
        shown = f"{indexed['source']:,} / {indexed['target']:,}" if indexed else ""
        mark = "" if t["ok"] else "  MISMATCH"
        typer.echo(
            f"{t['table']:<20} {t['source']:>10,} {t['target']:>10,} {t['written']:>9,}"
            f"  {shown}{mark}"
        )
    same = sum(1 for s in report["searches"] if s["ok"])
    typer.echo(f"searches: {same} of {len(report['searches'])} found the same on both")
    for s in report["searches"]:
        if not s["ok"]:
            typer.echo(f"  {s['table']} {' '.join(s['terms'])}: {s['source']} vs {s['target']}")
    typer.echo(f"{report['written']:,} rows written in {report['seconds']} s")
