"""Every script under `scripts/` still starts: its imports hold as the package moves on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# every script, not the modules they share (named with a leading underscore)
SCRIPTS = sorted(
    p for p in (Path(__file__).parents[2] / "scripts").glob("*.py") if not p.name.startswith("_")
)


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_the_script_answers_help(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage" in done.stdout.lower()
