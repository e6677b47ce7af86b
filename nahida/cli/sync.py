"""`nahida memory sync [--yes] [--json]`: sync MEMORY.md and the profile files with the
database now (DESIGN §9) — the admins' edits applied (audited), the generated blocks rendered
again.

Prints what was edited, moved, added, archived, and what was refused or found malformed, each
with its file and line. An edit that would archive more than a few bullets of one file at once
(`BULK_ARCHIVE`) is held: nothing of that file is applied, the file keeps the admin's text, and
the bullets it would archive are listed with the command that confirms it (`--yes`). Exits 0;
2 when a file's block is malformed (a marker lost, an emptied file) or its path leads out of
the workspace (nothing of that file read or applied); 1 when an archive awaits `--yes`. The
sync is a run record (`markdown_sync`, as the job's runs), under the job's lease, so it never
runs beside a running bot's sync.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from nahida.cli.state import echo_json, fail, state_of
from nahida.memory import BULK_ARCHIVE, FileReport, MemoryService, SyncReport
from nahida.scheduler import process_label

JOB = "markdown_sync"
LEASE_WAIT = 15.0  # seconds to wait for a running bot's tick to finish


def sync(
    ctx: typer.Context,
    yes: Annotated[
        bool, typer.Option("--yes", help="Archive many bullets of a file at once when asked to.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Sync workspace/MEMORY.md and workspace/users/*.md with memory now."""
    state = state_of(ctx)
    with state.memory() as memory:
        if memory.markdown is None:
            raise fail(
                "the Markdown projection is off (memory.markdown.enabled)", 2, as_json=as_json
            )
        report = asyncio.run(_sync(memory, archive_many=yes))
    if report is None:
        raise fail("another process keeps syncing the files; try again", 1, as_json=as_json)
    if as_json:
        echo_json(report.to_json())
    else:
        typer.echo(_text(report))
    if report.malformed:
        raise typer.Exit(2)
    if report.held:
        raise typer.Exit(1)


async def _sync(memory: MemoryService, *, archive_many: bool = False) -> SyncReport | None:
    assert memory.markdown is not None
    holder = process_label()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LEASE_WAIT
    while not await memory.runs.lease(JOB, holder, 60.0):
        if loop.time() > deadline:
            return None
        await asyncio.sleep(0.2)
    try:
        run_id = await memory.runs.start(JOB, holder)
        report = await memory.markdown.sync(archive_many=archive_many)
        counts = {k: n for k, n in report.total().items() if n}
        await memory.runs.finish(run_id, "ok", counts)
        return report
    finally:
        await memory.runs.release(JOB, holder)


def _text(report: SyncReport) -> str:
    total = report.total()
    done = ", ".join(f"{k} {total.get(k, 0)}" for k in ("edited", "moved", "added", "archived"))
    refused, written = total.get("refused", 0), total.get("written", 0)
    lines = [f"synced: {done}; refused {refused}; files written {written}"]
    for file in report.files:
        if file.unsafe:
            lines.append(f"{file.path}: refused: {file.unsafe}")
        lines.extend(f"{file.at(n)}: refused: {why}" for n, why in file.refused)
        lines.extend(
            f"{file.at(n)}: malformed: {what} (nothing applied)" for n, what in file.problems
        )
        lines.extend(held_lines(file, "nahida memory sync --yes"))
    return "\n".join(lines)


def held_lines(file: FileReport, confirm: str) -> list[str]:
    """What a held file would archive, and how to confirm it."""
    if not file.held:
        return []
    return [
        f"{file.path}: would archive {len(file.held)} bullets at once (more than"
        f" {BULK_ARCHIVE}); nothing of this file applied, it keeps your text:",
        *(f"  - [{i}] {text}" for i, text in file.held),
        f"to archive them: {confirm}",
    ]
