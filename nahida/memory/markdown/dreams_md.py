"""`workspace/DREAMS.md`: one section per dream run, appended (DESIGN §8) — what was accepted,
what waits for review and what was rejected, each with its ids and reason. The file holds one
month: the first run of a new month moves it to `dreams/YYYY-MM.md` beside it and starts
afresh, so it stays small. Nothing ever loads it into a prompt. Its folder is the workspace: both
files are opened through `paths.WorkspaceFiles` (a symlink out of it is refused, `UnsafePath`), and
the month read back from the header names the archive only when it is one (`2026-05`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, tzinfo
from pathlib import Path

from nahida.memory.core.models import DreamRun, Proposal
from nahida.workspace import WorkspaceFiles

HEADER = (
    "# Dreams · {month}\n\nWhat dreaming changed in memory, one section per run (newest last).\n"
)
ARCHIVE_DIR = "dreams"
TEXT_CHARS = 160
_MONTH = re.compile(r"\d{4}-\d{2}")


def append(journal: Path, runs: Sequence[DreamRun], tz: tzinfo | None = None) -> None:
    """Append the runs' sections to `journal` (`workspace/DREAMS.md`), rotating the file when a
    run belongs to a newer month. Raises `UnsafePath` for a path that leaves the workspace."""
    files = WorkspaceFiles(journal.parent)
    for run in runs:
        month = _moment(run.started_at, tz).strftime("%Y-%m")
        path = files.path(journal.name)
        _rotate(path, month, files)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(HEADER.format(month=month), encoding="utf-8")
        with path.open("a", encoding="utf-8") as out:
            out.write(section(run, tz))


def _rotate(path: Path, month: str, files: WorkspaceFiles) -> None:
    if not path.exists():
        return
    with path.open(encoding="utf-8") as found:
        first = found.readline()
    held = first.removeprefix("# Dreams · ").strip()
    if not first.startswith("# Dreams · ") or not _MONTH.fullmatch(held) or held >= month:
        return  # a header that is not ours names no archive: the file grows instead
    archive = files.path(f"{ARCHIVE_DIR}/{held}.md")
    archive.parent.mkdir(parents=True, exist_ok=True)
    if archive.exists():  # rotated before, then written again: keep both, in order
        with archive.open("a", encoding="utf-8") as out:
            out.write(path.read_text(encoding="utf-8"))
        path.unlink()
    else:
        path.replace(archive)


def section(run: DreamRun, tz: tzinfo | None = None) -> str:
    started = _moment(run.started_at, tz).strftime("%Y-%m-%d %H:%M")
    span = f"t{run.from_turn}–t{run.through_turn}" if run.turns else "no new turns"
    lines = [
        f"\n## {run.id} · {started} · {run.chat} · {run.outcome}\n",
        f"{run.trigger} · {span} ({run.turns} turns) · model {run.model or '-'} · "
        f"{run.calls} calls · tokens {run.tokens_in}/{run.tokens_out} · {run.seconds:.1f} s",
    ]
    if run.error:
        lines.append(f"\n> {run.error}")
    accepted = [p for p in run.report if p.fate not in ("pending", "rejected")]
    review = [p for p in run.report if p.fate == "pending"]
    rejected = [p for p in run.report if p.fate == "rejected"]
    for title, found in (
        ("Accepted", accepted),
        ("Needs review", review),
        ("Rejected", rejected),
    ):
        if found:
            lines.append(f"\n### {title}\n")
            lines.extend(_line(p) for p in found)
    if not run.report:
        lines.append("\nNothing proposed.")
    return "\n".join(lines) + "\n"


def _line(p: Proposal) -> str:
    ids = []
    if p.item_id:
        ids.append(p.item_id)
    if p.item and p.item != p.item_id:
        ids.append(f"on {p.item}")
    if p.candidate_id:
        ids.append(p.candidate_id)
    fate = f"{p.fate} ({p.guard}: {p.detail})" if p.guard else p.fate
    text = " ".join(p.content.split())
    if len(text) > TEXT_CHARS:
        text = text[: TEXT_CHARS - 1] + "…"
    cited = ", ".join(p.evidence)
    reason = f" — {p.reason}" if p.reason else ""
    head = f"{p.op} {p.kind}".strip()
    return f"- {head} · {' · '.join(ids) or '-'} · {fate} · {text}{reason} [{cited}]"


def _moment(epoch: float, tz: tzinfo | None) -> datetime:
    return datetime.fromtimestamp(epoch, tz).astimezone(tz)
