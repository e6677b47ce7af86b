"""Terminal input for the console adapter: control sequences stripped, readline line editing.

`clean_line` removes what a terminal sends for keys rather than text (arrow keys arrive as
`ESC [ A`, shown as `^[[A`, when nothing edits the line), so a message never stores them.
`load_readline` gives the stdlib `readline` module when it can be imported: with it loaded,
`input()` on a terminal has arrow keys, editing and history within the session; a history file is
kept only when one is given (`load_history` / `save_history`, owner-only, never via a symlink).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

HISTORY_LENGTH = 1000
BRACKETED_PASTE_OFF = "\x1b[?2004l"  # GNU readline turns bracketed paste on while it reads

_CONTROL = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI: arrows \x1b[A, \x1b[1;5C, \x1b[3~, paste marks
    r"|(?:\x1b[P\]X^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x1b\\|\x9c|$)"  # OSC, DCS, PM, APC
    r"|\x1bO.?"  # SS3: arrows and F1-F4 in application mode (\x1bOA)
    r"|\x1b[ -/]*[0-~]?"  # any other escape (Alt+key, charset selection) or a lone ESC
    r"|[\x00-\x08\x0a-\x1f\x7f-\x9f]",  # the remaining C0 controls but tab, DEL and C1 controls
    re.DOTALL,
)


def clean_line(text: str) -> str:
    """`text` without terminal escape sequences or control characters (tab is kept)."""
    return _CONTROL.sub("", text)


def load_readline() -> ModuleType | None:
    """The `readline` module (loading it gives `input()` line editing), or None without one."""
    try:
        return importlib.import_module("readline")
    except ImportError:
        return None


def load_history(readline: ModuleType, path: Path | None) -> None:
    readline.set_history_length(HISTORY_LENGTH)
    if path is not None and path.is_file() and not path.is_symlink():
        with contextlib.suppress(OSError):
            readline.read_history_file(str(path))


def save_history(readline: ModuleType, path: Path | None) -> None:
    """Write the session's history to `path`, readable by its owner only; any failure is ignored
    (history is a convenience), and a symlink at `path` is never followed."""
    if path is None:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)  # an older file may have been readable by others
        finally:
            os.close(fd)
        readline.write_history_file(str(path))
    except OSError:
        return


class TerminalState:
    """The terminal's settings before line editing, to put back when the chat ends mid-line.

    readline puts the terminal in raw mode while it waits for a line; when the app shuts down
    (Ctrl-C) with the reading thread still inside `input()`, nothing else would undo that."""

    def __init__(self, stream: TextIO) -> None:
        self._fd: int | None = None
        self._attrs: list[Any] | None = None
        try:
            import termios
        except ImportError:  # Windows
            return
        try:
            fd = stream.fileno()
            self._attrs = termios.tcgetattr(fd)
        except (OSError, ValueError, termios.error):  # no file descriptor, or not a terminal
            return
        self._fd = fd

    def restore(self, stdout: TextIO) -> None:
        if self._fd is None or self._attrs is None:
            return
        import termios

        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._attrs)
        with contextlib.suppress(OSError, ValueError):
            stdout.write(BRACKETED_PASTE_OFF + "\n")
            stdout.flush()
