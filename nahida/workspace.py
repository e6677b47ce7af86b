"""The workspace folder: persona and the Markdown projection of memory (DESIGN §7).

Created from `workspace_template/` on first use. The persona (`PERSONA.md`) is re-read when the
file changes, so admins can edit it while the bot runs; like every workspace file it is opened
through `WorkspaceFiles`, so a PERSONA.md that is a symlink to outside the workspace is not read
(the fallback persona is used, and a warning says why).

Every path of a workspace file is made safe here, in one place (DESIGN §9), for memory's
Markdown projection and the persona alike.

A file name made of outside input — a user id (`users/onebot_42.md`), a day, a month read back
from a file's header — goes through `safe_name`; every reader and writer of workspace files
(the sync of MEMORY.md and the profile files, the daily notes, DREAMS.md, PERSONA.md, `nahida
profile edit`) opens its file through `WorkspaceFiles.path`, at each read and write, so that a
symlink put there meanwhile is seen too.

`safe_name`: a name of the allow-list — lower-case ASCII letters and digits, `_`, `-`, and `.`
after the first character, at most 100 characters — is kept as it is, so the files of ordinary
ids keep the names they have always had. Any other name becomes its allow-listed letters, `~`
and 24 hex digits of its SHA-256 (`onebot_somewhere-readme~3f2a…`). `~` is not in the
allow-list, so no kept name equals a hashed one, and the hash (96 bits) keeps hashed names
apart. Upper case is hashed too, so that two names never differ in case only (one file on a
case-blind disk).

`WorkspaceFiles.path`: each `/`-separated part must be a plain name (not empty, `.` or `..`, no
`\\` or NUL); the path is resolved, symlinks followed, and must stay under the resolved
workspace; else `UnsafePath`, and a warning `workspace_path_refused` (once, until the path is
safe again: a background job asks every few seconds). The resolved path is what is read and
written, so a symlink that stays inside the workspace is followed, one that leads out never is.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import time
from pathlib import Path

import structlog

from nahida.errors import UnsafePath

log = structlog.get_logger(__name__)

TEMPLATE = Path(__file__).resolve().parent.parent / "workspace_template"
FALLBACK_PERSONA = (
    "You are Nahida, a friendly and helpful assistant in a chat. Keep answers short and clear."
)

_KEPT = re.compile(r"[a-z0-9][a-z0-9_.-]{0,99}")
_READABLE = re.compile(r"[^a-z0-9_-]+")
HASH_CHARS = 24
READABLE_CHARS = 40


def safe_name(text: str) -> str:
    """`text` as one file name (no extension): itself when it is in the allow-list, else its
    readable letters with a hash of the whole (see the module docstring)."""
    if _KEPT.fullmatch(text):
        return text
    readable = _READABLE.sub("-", text.lower()).strip("-")[:READABLE_CHARS] or "x"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{readable}~{digest[:HASH_CHARS]}"


class WorkspaceFiles:
    """The workspace folder, as the one way to its files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._refused: set[str] = set()  # logged already; logged again once safe in between

    def path(self, relative: str) -> Path:
        """The resolved path of `relative` (`/`-separated), checked to stay in the workspace;
        raises `UnsafePath` otherwise."""
        parts = relative.split("/")
        if any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in parts):
            raise self._refuse(relative, "not a plain path inside the workspace")
        try:
            root = self.root.resolve()
            found = root.joinpath(*parts).resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise self._refuse(relative, f"cannot be resolved ({exc})") from None
        if not found.is_relative_to(root):
            raise self._refuse(relative, f"leads to {found}, outside the workspace")
        self._refused.discard(relative)
        return found

    def _refuse(self, relative: str, why: str) -> UnsafePath:
        if relative not in self._refused:
            self._refused.add(relative)
            log.warning(
                "workspace_path_refused",
                path=relative,
                workspace=str(self.root),
                reason=f"{why}: not read or written",
            )
        return UnsafePath(relative, f"{why}; not read or written")


def ensure_workspace(path: Path, template: Path = TEMPLATE) -> bool:
    """Create the workspace from the template when missing; True when created now."""
    if path.exists():
        return False
    if template.is_dir():
        shutil.copytree(template, path)
    else:
        path.mkdir(parents=True)
        (path / "PERSONA.md").write_text(FALLBACK_PERSONA + "\n", encoding="utf-8")
    return True


class Persona:
    CHECK_EVERY = 2.0  # seconds between looks at the file's mtime

    def __init__(self, workspace: Path) -> None:
        self.files = WorkspaceFiles(workspace)
        self._mtime: float | None = None
        self._text = FALLBACK_PERSONA
        self._checked = float("-inf")

    def __call__(self) -> str:
        now = time.monotonic()
        if now - self._checked < self.CHECK_EVERY:
            return self._text
        self._checked = now
        try:
            path = self.files.path("PERSONA.md")
            mtime = path.stat().st_mtime
        except OSError:  # missing, or refused (UnsafePath, logged where it is refused)
            self._text, self._mtime = FALLBACK_PERSONA, None
            return self._text
        if mtime != self._mtime:
            self._text = path.read_text(encoding="utf-8").strip() or FALLBACK_PERSONA
            self._mtime = mtime
        return self._text
