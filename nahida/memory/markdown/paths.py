"""Every path of a workspace file, made safe in one place (DESIGN §9).

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
from pathlib import Path

import structlog

from nahida.errors import UnsafePath

log = structlog.get_logger(__name__)

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
