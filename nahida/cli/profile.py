"""`nahida profile …`: a person's profile from the command line, as a bot admin (DESIGN §4, §9).

    nahida profile show USER [--json]
    nahida profile edit USER [--yes] [--json]

USER is a full UserKey (`onebot:42`); one that does not parse exits 2. `show` of a person
without an active profile bullet exits 1.

`show` lists the active bullets by section (id, section, text, sensitivity, source, last
change); `--json` a list of objects, one a bullet. `nahida memory why p_…` explains one bullet
(`why_bullet`): its text, section, source and history, whatever its status.

`edit` opens the person's file of the Markdown projection (`workspace/users/<file>.md`) in
`$EDITOR` (else `$VISUAL`, else `vi`; the command may carry arguments): it syncs first, so the
file shows the database as it is now — for a person without a profile yet, every section
heading, empty, to add a first bullet under (left untouched, the file is removed again) —,
waits for the editor to exit, then syncs again and says what that sync did to the file —
bullets edited, added, archived, lines refused (a secret: never stored), and, when the block is
malformed, its problems by line (nothing applied; exit 2). A running `nahida run` syncs the
files too, so an edit saved while the editor is still open may already have been taken by the
time it closes. Deleting more than a few bullets at once (`BULK_ARCHIVE`) is held, nothing of
the file applied (exit 1), unless `--yes` was given; the file keeps the edit and `nahida memory
sync --yes` applies it later. An editor that exits non-zero: what it saved is synced and
reported all the same, then exit 1; one that cannot be started: exit 2, nothing synced after.
Without the projection (`memory.markdown.enabled: false`) it exits 2.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from nahida.cli.state import echo_json, fail, state_of
from nahida.cli.sync import held_lines
from nahida.cli.text import local_time
from nahida.envelope import UserKey
from nahida.memory import FileReport, MemoryService, ProfileEntry, SyncReport, UnsafePath

profile_app = typer.Typer(help="People's profiles: show, edit.", no_args_is_help=True)

UserArgument = Annotated[str, typer.Argument(help="UserKey, e.g. onebot:42.")]
JsonOption = Annotated[bool, typer.Option("--json", help="JSON output.")]
COUNTS = ("edited", "added", "archived")


def _user(text: str, *, as_json: bool = False) -> str:
    try:
        return str(UserKey.parse(text))
    except ValueError as exc:
        raise fail(str(exc), 2, as_json=as_json) from None


def _no_profile(user: str, *, as_json: bool = False) -> typer.Exit:
    return fail(f"{user} has no profile", 1, as_json=as_json)


def _entry(entry: ProfileEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "section": entry.section,
        "text": entry.text,
        "sensitivity": entry.sensitivity,
        "source": entry.source,
        "chat": entry.chat,
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
    }


# show -------------------------------------------------------------------------------------------


@profile_app.command()
def show(ctx: typer.Context, user: UserArgument, as_json: JsonOption = False) -> None:
    """A person's active profile bullets, by section."""
    person = _user(user, as_json=as_json)
    state = state_of(ctx)
    with state.memory() as memory:
        entries = asyncio.run(memory.profiles.entries(person, public_only=False))
    if not entries:
        raise _no_profile(person, as_json=as_json)
    if as_json:
        echo_json([_entry(e) for e in entries])
        return
    tz = state.config.bot.zone()
    lines: list[str] = []
    section = None
    for entry in entries:
        if entry.section != section:
            lines += ([""] if lines else []) + [f"### {entry.section}"]
            section = entry.section
        when = local_time(entry.updated_at, tz)
        lines.append(f"{entry.id}  {entry.sensitivity:<7} {entry.source:<16} {when}  {entry.text}")
    typer.echo("\n".join(lines))


# why (`nahida memory why p_…`) -------------------------------------------------------------------


def why_bullet(ctx: typer.Context, entry_id: str, *, as_json: bool = False) -> None:
    """A profile bullet, any person's, any status: text, section, source, its history."""
    state = state_of(ctx)
    with state.memory() as memory:
        found = asyncio.run(memory.profiles.why(entry_id, None))
    if found is None:
        raise fail(f"no item {entry_id}", as_json=as_json)
    entry = found.entry
    if as_json:
        echo_json(
            {
                "entry": {**_entry(entry), "user": entry.user, "status": entry.status},
                "events": [asdict(e) for e in found.events],
            }
        )
        return
    tz = state.config.bot.zone()
    day = local_time(entry.created_at, tz)[:10]
    said = f" · said in {entry.chat}" if entry.chat else ""
    lines = [
        f"{entry.id}  profile · {entry.section}  {entry.status}  {entry.user}  {day}  {entry.text}",
        f"source {entry.source} · {entry.sensitivity}{said}",
    ]
    for event in found.events:
        reason = f" · {event.reason}" if event.reason else ""
        lines.append(f"{local_time(event.time, tz)} {event.action} by {event.actor}{reason}")
    typer.echo("\n".join(lines))


# edit -------------------------------------------------------------------------------------------


def editor_command() -> list[str]:
    """`$EDITOR`, else `$VISUAL`, else `vi`, split as a shell would (it may carry arguments)."""
    command = os.environ.get("EDITOR") or os.environ.get("VISUAL") or "vi"
    return shlex.split(command)


@profile_app.command()
def edit(
    ctx: typer.Context,
    user: UserArgument,
    yes: Annotated[
        bool, typer.Option("--yes", help="Archive many bullets at once when the edit does.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Edit a person's profile file in $EDITOR; the edits are synced back when it exits."""
    person = _user(user, as_json=as_json)
    state = state_of(ctx)
    try:
        command = editor_command()
    except ValueError as exc:
        raise fail(f"cannot read the editor command: {exc}", 2, as_json=as_json) from None
    if not command:
        raise fail("the editor command ($EDITOR) is empty", 2, as_json=as_json)
    with state.memory() as memory:
        if memory.markdown is None:
            raise fail(
                "the Markdown projection is off (memory.markdown.enabled: false)",
                2,
                as_json=as_json,
            )
        try:
            path = memory.markdown.profile_path(person)
        except UnsafePath as exc:
            raise fail(str(exc), 2, as_json=as_json) from None
        if not as_json and person not in asyncio.run(memory.profiles.users()):
            typer.echo(f"{person} has no profile yet: add a bullet under a heading", err=True)
        before, code, after = asyncio.run(_edit(memory, person, [*command, str(path)], yes))
    if code is None:
        raise fail(f"cannot run the editor {command[0]!r}", 2, as_json=as_json)
    if before.problems and not as_json:
        typer.echo(f"{path}: was malformed before the edit", err=True)
    assert after is not None
    if as_json:
        echo_json({**{k: 0 for k in COUNTS}, **after.to_json(), "editor_exit_code": code})
    else:
        _report(path, after)
    if after.problems or after.unsafe:
        raise typer.Exit(2)
    if code != 0 or after.held:
        if not as_json:
            typer.echo(f"error: the editor exited with code {code}", err=True)
        raise typer.Exit(1)


async def _edit(
    memory: MemoryService, user: str, command: list[str], archive_many: bool
) -> tuple[FileReport, int | None, FileReport | None]:
    """Sync, edit, sync: the file's report before the editor, the editor's exit code (None: it
    could not be started; nothing synced after) and the file's report after."""
    markdown = memory.markdown
    assert markdown is not None
    wanted = markdown.profile_file(user)
    before = _of(await markdown.sync(people=[user]), wanted)
    path = markdown.profile_path(user)
    shown = await asyncio.to_thread(_text_of, path)
    try:
        done = await asyncio.to_thread(subprocess.run, command, check=False)
    except OSError:
        return before, None, None
    after = _of(await markdown.sync(archive_many=archive_many, people=[user]), wanted)
    if (
        user not in await memory.profiles.users()
        and await asyncio.to_thread(_text_of, path) == shown
    ):
        await asyncio.to_thread(path.unlink, missing_ok=True)  # opened for nobody: no file left
    return before, done.returncode, after


def _text_of(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _of(report: SyncReport, wanted: str) -> FileReport:
    found = next((f for f in report.files if f.path == wanted), None)
    return found if found is not None else FileReport(wanted)


def _report(path: Path, report: FileReport) -> None:
    if report.unsafe:
        typer.echo(f"{path}: refused: {report.unsafe}", err=True)
        return
    for line, problem in report.problems:
        typer.echo(f"{report.at(line, path)}: malformed: {problem}", err=True)
    if report.problems:
        typer.echo(f"{path}: nothing applied (fix it: `nahida profile edit` again)", err=True)
        return
    if report.held:
        typer.echo("\n".join(held_lines(report, "nahida memory sync --yes")))
        return
    for line, reason in report.refused:
        typer.echo(f"{path}:{line}: refused: {reason}")
    counts = ", ".join(f"{k} {report.counts.get(k, 0)}" for k in COUNTS)
    typer.echo(f"{path}: {counts}, refused {len(report.refused)}")
