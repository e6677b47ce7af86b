"""Sync between the database and the Markdown files people edit (DESIGN §9): MEMORY.md and
one profile file per person. The database is the authority; a file is its readable, editable
projection.

One sync, per file: when the file changed since it was last written or read (its hash), its
block is parsed (a malformed block — a marker missing, a line that is no bullet, an id that is
not this file's — is reported with its line, and nothing of that file is applied or rewritten);
the bullets are compared with what the block showed then (the snapshot in `markdown_files`), a
secret in an edited or added bullet is refused (reported with its line, never stored), and the
rest is applied as audited changes (`human_edit`). Then the block is rendered again from the
database, which now holds both the file's edits and every change made meanwhile elsewhere, and
written atomically (temp file + rename) — unless the file changed again while this ran (the next
sync takes it). Bytes outside the markers are kept as they were.

Guards, each leaving the file as the admin wrote it (not applied, not rewritten, so the next
sync or `nahida memory sync` can still take it):
- a file that once held the block and has lost a marker (an emptied file) is malformed, never
  read as "every bullet deleted";
- an edit that would archive more than `BULK_ARCHIVE` bullets of one file at once is held until
  confirmed (`archive_many`: `nahida memory sync --yes`); the background job never confirms.
  Nothing of a held file is applied, not even its other edits: applying half an edit would
  rewrite the file from the database and lose the rest of what the admin typed;
- a path that leads out of the workspace (a symlink) is refused (`paths.WorkspaceFiles`).

Cheap when nothing changed: a tick compares each file's mtime and size, and one fingerprint of
the database (global items and profiles), with what it saw last, and does nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import structlog

from nahida.errors import UnsafePath
from nahida.memory.core.safety import contains_secret
from nahida.memory.markdown import block
from nahida.memory.markdown.memory_md import MemoryFile
from nahida.memory.markdown.profiles_md import ProfileFile, file_name
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import FileState
from nahida.workspace import WorkspaceFiles

log = structlog.get_logger(__name__)
COUNTED = (
    "edited",
    "moved",
    "added",
    "merged",
    "archived",
    "refused",
    "malformed",
    "held",
    "unsafe",
    "written",
)
# An admin tidying a file by hand deletes a bullet or three; more at once is what an emptied
# block, a lost paste or a crashed editor looks like, and one confirmation costs little.
BULK_ARCHIVE = 3
REFUSED = (-1, -1)  # `_seen` of a path the guard refused


class Projection(Protocol):
    path: str  # relative to the workspace
    begin: str
    end: str
    groups: tuple[str, ...]
    header: str  # a new file's text before the block

    def shown(self, tx: Tx) -> tuple[str, dict[str, dict[str, str]]]: ...
    def known(self, tx: Tx, ids: set[str]) -> dict[str, dict[str, str]]: ...
    def prepare(self, changes: block.Changes) -> Any: ...
    def apply(self, tx: Tx, edits: Any) -> dict[str, int]: ...


@dataclass
class FileReport:
    path: str
    counts: dict[str, int] = field(default_factory=dict)
    refused: list[tuple[int, str]] = field(default_factory=list)  # (line, why): not applied
    problems: list[tuple[int, str]] = field(default_factory=list)  # malformed: nothing applied
    held: list[tuple[str, str]] = field(default_factory=list)  # (id, text): awaits confirmation
    unsafe: str = ""  # why the path was refused: nothing read or written
    written: bool = False

    def at(self, line: int, shown: object = None) -> str:
        """`path:line`, or the path alone for the whole file (line 0)."""
        where = str(shown if shown is not None else self.path)
        return f"{where}:{line}" if line else where

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            **self.counts,
            "refused": [{"line": n, "reason": r} for n, r in self.refused],
            "problems": [{"line": n or None, "problem": p} for n, p in self.problems],
            "held": [{"id": i, "text": t} for i, t in self.held],
            "unsafe": self.unsafe or None,
            "written": self.written,
        }


@dataclass
class SyncReport:
    files: list[FileReport] = field(default_factory=list)

    @property
    def malformed(self) -> bool:
        """A file's block was malformed or its path refused: nothing of it applied."""
        return any(f.problems or f.unsafe for f in self.files)

    @property
    def held(self) -> bool:
        """A file's bulk archiving awaits confirmation."""
        return any(f.held for f in self.files)

    def total(self) -> dict[str, int]:
        counts = dict.fromkeys(COUNTED, 0)
        for report in self.files:
            for key, n in report.counts.items():
                counts[key] = counts.get(key, 0) + n
            counts["refused"] = counts.get("refused", 0) + len(report.refused)
            counts["malformed"] = counts.get("malformed", 0) + int(bool(report.problems))
            counts["held"] = counts.get("held", 0) + len(report.held)
            counts["unsafe"] = counts.get("unsafe", 0) + int(bool(report.unsafe))
            counts["written"] = counts.get("written", 0) + int(report.written)
        return counts

    def to_json(self) -> dict[str, Any]:
        return {"files": [f.to_json() for f in self.files if _worth(f)], **self.total()}


def _worth(report: FileReport) -> bool:
    return bool(
        any(report.counts.values())
        or report.refused
        or report.problems
        or report.held
        or report.unsafe
        or report.written
    )


class MarkdownSync:
    """`memory.markdown`: sync MEMORY.md and the profile files with the database."""

    def __init__(
        self,
        store: Store,
        workspace: Path,
        *,
        max_bullets: int = 200,
        changed: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.workspace = workspace
        self.files = WorkspaceFiles(workspace)
        self.max_bullets = max_bullets
        self.changed = changed  # told after edits were applied (new texts to embed)
        self._seen: dict[str, tuple[int, int] | None] = {}  # path → (mtime_ns, size) last seen
        self._fingerprint: object = None
        self._lock = asyncio.Lock()

    def profile_file(self, user: str) -> str:
        """The path of a person's profile file, relative to the workspace (`users/onebot_42.md`:
        the `FileReport.path` of its syncs)."""
        return file_name(user)

    def profile_path(self, user: str) -> Path:
        """The checked path of a person's profile file; raises `UnsafePath`."""
        return self.files.path(file_name(user))

    async def sync(
        self, *, force: bool = True, archive_many: bool = False, people: Sequence[str] = ()
    ) -> SyncReport:
        """Sync every projected file. `force` False (the job's tick): skip a file whose mtime and
        size are as last seen while the database's fingerprint is too. `archive_many`: apply an
        edit that archives more than `BULK_ARCHIVE` bullets of a file (else it is held).
        `people`: profile files synced even when the person has no profile yet (a first bullet
        added by hand)."""
        async with self._lock:
            fingerprint, users = await self.store.read(_where)
            same_db = fingerprint == self._fingerprint
            report = SyncReport()
            files: list[Projection] = [MemoryFile(self.max_bullets)]
            files.extend(ProfileFile(u) for u in dict.fromkeys([*users, *people]))
            for projection in files:
                try:
                    path, seen = await asyncio.to_thread(self._look, projection.path)
                except UnsafePath as exc:
                    if force or not same_db or self._seen.get(projection.path) != REFUSED:
                        report.files.append(FileReport(projection.path, unsafe=exc.reason))
                    self._seen[projection.path] = REFUSED
                    continue
                if not force and same_db and seen == self._seen.get(projection.path, False):
                    continue
                report.files.append(await self._one(projection, path, archive_many))
                self._seen[projection.path] = await asyncio.to_thread(_stat, path)
            # what this sync wrote changed the fingerprint: read it again, but only then
            changed = any(f.counts for f in report.files)
            self._fingerprint = (await self.store.read(_where))[0] if changed else fingerprint
            return report

    def _look(self, relative: str) -> tuple[Path, tuple[int, int] | None]:
        """The file's checked path and its (mtime_ns, size): one trip to a worker thread."""
        path = self.files.path(relative)
        return path, _stat(path)

    async def _one(self, projection: Projection, path: Path, archive_many: bool) -> FileReport:
        report = FileReport(projection.path)
        text = await asyncio.to_thread(_read, path)
        state = await self.store.read(lambda tx: tx.markdown.file(projection.path))
        if text is not None and (state is None or block.digest(text) != state.hash):
            found = block.parse(text, projection.begin, projection.end, projection.groups)
            if not found.found and not found.problems and state is not None:
                found.problems.append((0, _lost_markers(projection)))
            if not found.problems:
                await self._apply(projection, found, state, report, archive_many)
            if found.problems:
                report.problems = found.problems
                log.warning("markdown_malformed", path=projection.path, problems=found.problems)
                return report
            if report.held:
                return report  # the file keeps the admin's text until it is confirmed
        body, snapshot = await self.store.read(projection.shown)
        new = block.replace(
            text if text is not None else projection.header, projection.begin, projection.end, body
        )
        if new != text:
            if not await asyncio.to_thread(_write, path, new, text):
                return report  # edited again meanwhile: the next sync takes it
            report.written = True
        digest, mtime = block.digest(new), await asyncio.to_thread(_mtime, path)
        await self.store.write(
            lambda tx: tx.markdown.put_file(
                FileState(projection.path, digest, mtime, snapshot, time.time())
            )
        )
        return report

    async def _apply(
        self,
        projection: Projection,
        found: block.Block,
        state: FileState | None,
        report: FileReport,
        archive_many: bool,
    ) -> None:
        snapshot = dict(state.snapshot) if state is not None else {}
        ids = {b.id for b in found.bullets if b.id is not None}
        extra = await self.store.read(lambda tx: projection.known(tx, ids - snapshot.keys()))
        for bullet in found.bullets:
            if bullet.id is not None and bullet.id not in snapshot and bullet.id not in extra:
                found.problems.append((bullet.line, f"{bullet.id} is not a record of this file"))
        if found.problems:
            return
        baseline = {**snapshot, **extra}
        changes = block.diff(found.bullets, baseline)
        if len(changes.deleted) > BULK_ARCHIVE and not archive_many:
            report.held = [(i, baseline[i]["text"]) for i in changes.deleted]
            log.warning(
                "markdown_bulk_archive_held",
                path=projection.path,
                archive=len(report.held),
                confirm="nahida memory sync --yes",
            )
            return
        for kept in (changes.edited, changes.moved):
            for pair in list(kept):
                if contains_secret(pair[0].text):
                    kept.remove(pair)
                    report.refused.append((pair[0].line, "looks like a secret: not stored"))
        for bullet in list(changes.added):
            if contains_secret(bullet.text):
                changes.added.remove(bullet)
                report.refused.append((bullet.line, "looks like a secret: not stored"))
        if not changes:
            return
        ready = await asyncio.to_thread(projection.prepare, changes)
        report.counts = await self.store.write(lambda tx: projection.apply(tx, ready))
        self.changed()
        log.info(
            "markdown_synced", path=projection.path, **report.counts, refused=len(report.refused)
        )


def _lost_markers(projection: Projection) -> str:
    return (
        f"the markers {projection.begin} and {projection.end} are missing (an emptied file?);"
        " put them back around the bullets, or delete the file to have it written afresh"
    )


def _where(tx: Tx) -> tuple[object, list[str]]:
    """The database's fingerprint for the projection, and the people with a profile."""
    return tx.markdown.fingerprint(), tx.profiles.users()


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except FileNotFoundError:
        return None
    return found.st_mtime_ns, found.st_size


def _mtime(path: Path) -> float:
    return path.stat().st_mtime


def _read(path: Path) -> str | None:
    """The file's text as it is (no newline translation: a CRLF file stays one)."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


def _write(path: Path, text: str, expected: str | None) -> bool:
    """Write `text` atomically; False (nothing written) when the file no longer holds
    `expected` (someone saved it meanwhile)."""
    if _read(path) != expected:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(text.encode("utf-8"))
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    return True
