"""The `nahida` command as users run it (`python -m nahida`, in a process of its own), bounded in
time: a command that hangs fails its test instead of holding up the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
TIMEOUT = 90.0  # seconds; a command here takes one or two


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    @property
    def error_lines(self) -> list[str]:
        return self.err.splitlines()


def nahida(cwd: Path, *args: str, stdin: str = "", timeout: float = TIMEOUT) -> Ran:
    """Run `nahida ARGS` in `cwd`, lexical recall only, with no key of the developer's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NAHIDA", "OPENAI"))}
    env.update(PYTHONPATH=ROOT, NAHIDA__MEMORY__EMBEDDING__BACKEND="none")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "nahida", *args],
            cwd=cwd,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"`nahida {' '.join(args)}` hung ({timeout:.0f} s)") from None
    return Ran(done.returncode, done.stdout, done.stderr)
