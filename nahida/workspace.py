"""The workspace folder: persona and the Markdown projection of memory (DESIGN §7).

Created from `workspace_template/` on first use. The persona (`PERSONA.md`) is re-read when the
file changes, so admins can edit it while the bot runs; like every workspace file it is opened
through `WorkspaceFiles`, so a PERSONA.md that is a symlink to outside the workspace is not read
(the fallback persona is used, and a warning says why).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from nahida.memory import WorkspaceFiles

TEMPLATE = Path(__file__).resolve().parent.parent / "workspace_template"
FALLBACK_PERSONA = (
    "You are Nahida, a friendly and helpful assistant in a chat. Keep answers short and clear."
)


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
