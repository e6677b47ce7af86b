"""`nahida backup FILE` / `nahida restore FILE`: the whole memory in one file, and back.

A backup is a zip archive of two members:

- `manifest.json`: `{"format": "nahida-backup", "version": 1, "created_at", "nahida", "sqlite",
  "schema": [the migrations applied], "database": {"name", "bytes", "sha256"}, "counts": {table:
  rows}}`, first, so that a reader learns what the file is before it reads the rest;
- `nahida.db`: the SQLite database as it was at one moment, copied by SQLite's online backup.

A copy of the database rather than its rows as JSON lines: it is everything the bot knows in the
form it uses it — items with their audit trail, profiles, rules, episodes, sessions and turns,
candidates, dream and job runs, vectors, and the search indexes made from them — so a restored
data dir answers every query the original did by construction: nothing is re-embedded or
re-indexed (the vectors are in it, for the model that made them), and a table added later is in
the next backup without a line here. The online backup copies every page in one step, under one
read transaction: a running bot goes on writing, and the copy holds what was committed when it
began. Page for page, not row by row (`VACUUM INTO`): SQLite does not promise to keep the
implicit rowids that tie the items' search index to the items when it copies rows. The copy is
checked (`PRAGMA quick_check`) before the archive is written: a damaged database is reported, not
backed up. The archive is deflated and readable by its owner only.

`restore` checks a backup whole before it touches the data dir (its format and version, a schema
this Nahida knows, the copy's checksum, SQLite's quick check), brings the copy's schema up to
this version, and starts over the state that belongs to one running bot and one workspace (the
Markdown projection's snapshots: the next sync compares the workspace's files with the restored
memory afresh and takes no missing bullet for a deletion; the job leases). Then:

- no database yet, or one holding no memory (no session, item, candidate, profile, episode or
  dream run): the copy takes its place;
- one holding exactly what the backup holds: nothing changes (restoring twice is a no-op);
- one holding other memory, or damaged: refused, unless `replace`, which keeps the old file
  beside it as `nahida.db.replaced-<time>` (never deleted: a restore loses nothing).

It refuses while another process (a running bot, another command) has the database open.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nahida import __version__
from nahida.errors import BackupError, DatabaseDamaged
from nahida.memory.store.sqlite.check import (
    RESET_ON_RESTORE,
    counts,
    digest,
    holds_memory,
    in_use,
    opened,
    problems,
)
from nahida.memory.store.sqlite.connection import damaged, driver, storage_error
from nahida.memory.store.sqlite.migrations import MIGRATIONS, applied, migrate

FORMAT = "nahida-backup"
VERSION = 1
MANIFEST = "manifest.json"
DATABASE = "nahida.db"
CHUNK = 1 << 20


@dataclass(frozen=True)
class Restored:
    """What `restore` did: `restored` (the copy is in place) or `unchanged` (it was already);
    `kept`: where the file it replaced is kept (with `replace`)."""

    outcome: str
    manifest: dict[str, Any]
    kept: Path | None = None

    def to_json(self) -> dict[str, Any]:
        kept = str(self.kept) if self.kept is not None else None
        return {"outcome": self.outcome, "kept": kept, "manifest": self.manifest}


def backup(db: Path, target: Path) -> dict[str, Any]:
    """Write a backup of the database `db` to `target` (replaced only once the new one is whole);
    its manifest."""
    if not db.exists():
        raise BackupError(f"no database at {db}: nothing to back up")
    target.parent.mkdir(parents=True, exist_ok=True)
    with _scratch(target.parent, ".nahida-backup-") as scratch:
        copy = scratch / DATABASE
        try:
            with opened(db) as conn, contextlib.closing(driver.connect(str(copy))) as out:
                conn.backup(out)  # every page in one step: one snapshot
        except driver.Error as exc:
            damage = storage_error(exc, str(db))
            if isinstance(damage, DatabaseDamaged):
                raise damage from exc
            raise BackupError(f"cannot copy {db} to {target.parent}: {exc}") from exc
        found = problems(copy)
        if found:  # pages are copied as they are: damage too
            raise damaged(str(db), f"{found[0]}; no backup was written")
        with opened(copy) as conn:
            manifest = {
                "format": FORMAT,
                "version": VERSION,
                "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "nahida": __version__,
                "sqlite": str(conn.execute("SELECT sqlite_version()").fetchone()[0]),
                "schema": applied(conn),
                "database": {"name": DATABASE, "bytes": 0, "sha256": ""},
                "counts": counts(conn),
            }
        manifest["database"] = {"name": DATABASE, **_fingerprint(copy)}
        archive = scratch / "backup.zip"
        try:
            with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
                zipped.writestr(MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=2))
                zipped.write(copy, DATABASE)
            archive.chmod(0o600)  # a person's memory: for the owner's eyes
            os.replace(archive, target)
        except OSError as exc:  # a full disk, say: the old backup, if any, stays as it was
            raise BackupError(f"cannot write {target}: {exc}") from exc
    return manifest


def read_manifest(source: Path) -> dict[str, Any]:
    """The manifest of a backup this Nahida can restore; BackupError says why not."""
    if not source.is_file():
        raise BackupError(f"cannot read {source}: no such file")
    if not zipfile.is_zipfile(source):
        raise BackupError(f"{source} is not a Nahida backup (not a zip archive)")
    with zipfile.ZipFile(source) as zipped:
        try:
            manifest = json.loads(zipped.read(MANIFEST))
        except KeyError:
            raise BackupError(f"{source} is not a Nahida backup (no {MANIFEST})") from None
        except (ValueError, zipfile.BadZipFile) as exc:
            raise BackupError(f"{source}: {MANIFEST} cannot be read: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{source} is not a Nahida backup ({MANIFEST} names no {FORMAT!r})")
    version = manifest.get("version")
    if not isinstance(version, int) or version < 1:
        raise BackupError(f"{source}: {MANIFEST} has no valid version")
    if version > VERSION:
        raise BackupError(
            f"{source} was made by a newer Nahida (backup format {version}; this one reads"
            f" {VERSION}): upgrade Nahida to restore it"
        )
    known = [step.name for step in MIGRATIONS]
    schema = manifest.get("schema")
    if not isinstance(schema, list) or schema != known[: len(schema)]:
        unknown = [s for s in schema or [] if s not in known]
        raise BackupError(
            f"{source} holds a database of a newer Nahida (schema steps unknown here:"
            f" {', '.join(map(str, unknown)) or 'in another order'}): upgrade Nahida to restore it"
        )
    return manifest


def restore(db: Path, source: Path, *, replace: bool = False) -> Restored:
    """Restore the backup `source` into the database `db` (see the module docstring)."""
    manifest = read_manifest(source)
    if in_use(db):
        raise BackupError(
            f"{db} is open in another process (a running bot?): stop it, then restore"
        )
    db.parent.mkdir(parents=True, exist_ok=True)
    with _scratch(db.parent, ".nahida-restore-") as scratch:
        copy = _extract(source, manifest, scratch)
        with opened(copy) as conn:
            migrate(conn)
            for table in RESET_ON_RESTORE:
                conn.execute(f"DELETE FROM {table}")
            wanted = digest(conn)
        held = _held(db) if db.exists() else None
        if held is not None and held[0] == wanted:
            return Restored("unchanged", manifest)
        if held is not None and not replace:
            raise BackupError(
                f"{db} {held[1]}; to replace it with the backup, stop the bot and run"
                f" `nahida restore {source} --replace` (the file it replaces is kept beside it)"
            )
        kept = _set_aside(db) if held is not None else None
        _remove(db)
        os.replace(copy, db)
        return Restored("restored", manifest, kept)


def _held(db: Path) -> tuple[str, str] | None:
    """None when the database at `db` holds no memory (it may simply go); else its digest
    ('' when it is damaged) and what it holds, in a few words."""
    try:
        with opened(db) as conn:
            if not holds_memory(conn):
                return None
            found = counts(conn)
            words = ", ".join(
                f"{t} {found.get(t, 0):,}" for t in ("sessions", "turns", "memory_items")
            )
            return digest(conn), f"holds other memory ({words})"
    except (DatabaseDamaged, driver.Error) as exc:
        return "", f"is damaged ({exc.__cause__ or exc})"


def _extract(source: Path, manifest: dict[str, Any], scratch: Path) -> Path:
    """The backup's database, checked against the manifest's checksum and by SQLite."""
    database = manifest.get("database")
    if not isinstance(database, dict) or database.get("name") != DATABASE:
        raise BackupError(f"{source}: {MANIFEST} names no database")
    copy = scratch / DATABASE
    hashed = hashlib.sha256()
    try:
        with (
            zipfile.ZipFile(source) as zipped,
            zipped.open(DATABASE) as member,
            copy.open("wb") as out,
        ):
            while chunk := member.read(CHUNK):
                hashed.update(chunk)
                out.write(chunk)
    except (KeyError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise BackupError(f"{source}: its database cannot be read: {exc}") from None
    if hashed.hexdigest() != database.get("sha256"):
        raise BackupError(f"{source} is damaged: its database does not match its checksum")
    found = problems(copy)
    if found:
        raise BackupError(f"{source} is damaged: {'; '.join(found[:3])}")
    return copy


def _fingerprint(path: Path) -> dict[str, Any]:
    hashed = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            hashed.update(chunk)
    return {"bytes": path.stat().st_size, "sha256": hashed.hexdigest()}


def _companions(db: Path) -> Iterator[Path]:
    """The database and the files SQLite keeps beside it (the log and its index)."""
    yield db
    for suffix in ("-wal", "-shm", "-journal"):
        yield db.with_name(db.name + suffix)


def _set_aside(db: Path) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    kept = db.with_name(f"{db.name}.replaced-{stamp}")
    for path in _companions(db):
        if path.exists():
            os.replace(path, kept.with_name(kept.name + path.name[len(db.name) :]))
    return kept


def _remove(db: Path) -> None:
    for path in _companions(db):
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def _scratch(where: Path, prefix: str) -> Iterator[Path]:
    """A folder beside the target (the same disk: the result is moved into place whole)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=where))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


__all__ = ["FORMAT", "VERSION", "Restored", "backup", "read_manifest", "restore"]
