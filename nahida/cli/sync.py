"""`nahida memory sync [--json]`: sync MEMORY.md and the profile files with the database now
(DESIGN §9) — the admins' edits applied (audited), the generated blocks rendered again.

Prints what was edited, moved, added, archived, and what was refused or found malformed, each
with its file and line; exits 0, or 2 when a file's block is malformed or its path leads out of
the workspace (nothing of that file was applied). The sync is a run record (`markdown_sync`, as
the job's runs), under the job's lease, so it never runs beside a running bot's sync.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from nahida.cli.state import echo_json, fail, state_of
from nahida.memory import MemoryService, SyncReport
from nahida.scheduler import process_label

JOB = "markdown_sync"
LEASE_WAIT = 15.0  # seconds to wait for a running bot's tick to finish


def sync(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Sync workspace/MEMORY.md and workspace/users/*.md with memory now."""
    state = state_of(ctx)
    with state.memory() as memory:
        if memory.markdown is None:
            raise fail(
                "the Markdown projection is off (memory.markdown.enabled)", 2, as_json=as_json
            )
        report = asyncio.run(_sync(memory))
    if report is None:
        raise fail("another process keeps syncing the files; try again", 1, as_json=as_json)
    if as_json:
        echo_json(report.to_json())
    else:
        typer.echo(_text(report))
    if report.malformed:
        raise typer.Exit(2)


async def _sync(memory: MemoryService) -> SyncReport | None:
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
        report = await memory.markdown.sync()
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
    return "\n".join(lines)
