"""The workspace folder: persona and the Markdown projection of memory (DESIGN §7).

Created from `workspace_template/` on first use. The persona (`PERSONA.md`) is re-read when the
file changes, so admins can edit it while the bot runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

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
    def __init__(self, workspace: Path) -> None:
        self.path = workspace / "PERSONA.md"
        self._mtime: float | None = None
        self._text = FALLBACK_PERSONA

    def __call__(self) -> str:
        try:
            mtime = self.path.stat().st_mtime
        except OSError:
            return FALLBACK_PERSONA
        if mtime != self._mtime:
            self._text = self.path.read_text(encoding="utf-8").strip() or FALLBACK_PERSONA
            self._mtime = mtime
        return self._text
