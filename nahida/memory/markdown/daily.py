"""`workspace/memory/YYYY-MM-DD.md`: the daily notes (DESIGN §9), append-only — the session
summaries and episodes written that day, the candidates proposed and what became of them, and
the later reviews, one line each with its id:

    - 21:05 summary s_… (onebot:group:1, 15 rounds): …
    - 21:06 episode e_… (onebot:group:1, 40 turns): … — 奶茶, 考试
    - 21:07 candidate c_… proposed (rule_extract, fact, user:onebot:42): … → accepted m_…
    - 22:00 candidate c_… accepted m_… by admin

An event's own time (in the bot's zone) decides its day's file. Nothing here is ever loaded into
a prompt, and nothing written is rewritten: `catch_up` only appends what is new since its cursor
(`named_state` "daily": JSON, the last (time, id) of each of the four streams). Texts are
redacted (`safety.redact`) and cut; nothing is written that is not in the database.

The cursor advances after the lines are written. A crash in between would write those lines
again; before appending, the lines already at the end of a day file are skipped, so a repeat is
dropped (two identical lines of one summary written in the same minute are one line). Events of
the last `settle` seconds wait for the next run, so that a row committed a little after its
stamped time is not passed over. A day's file whose path leads out of the workspace (a
symlinked `memory/`, `paths.WorkspaceFiles`) stops the run with `UnsafePath` before any line is
written, so the cursor waits and nothing is lost once the link is gone.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from nahida.memory.core.models import Episode, WarmSummary
from nahida.memory.core.safety import redact
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import CandidateNote
from nahida.workspace import WorkspaceFiles, safe_name

STATE_KEY = "daily"
NOTES_DIR = "memory"
TEXT_CHARS = 160
MAX_EVENTS = 2000  # per catch_up; the rest next time
SETTLE_SECONDS = 5.0
STREAMS = ("summaries", "episodes", "proposed", "decided")


@dataclass(frozen=True, slots=True)
class Event:
    """One line to write: `key` is its stream's cursor once it is written."""

    time: float
    stream: str
    key: tuple[float, Any]
    line: Callable[[str], str]  # the line for its hh:mm


@dataclass(slots=True)
class Cursor:
    """Per stream, the last (time, id) written; (0.0, "") / (0.0, 0) before any."""

    keys: dict[str, tuple[float, Any]] = field(default_factory=dict)

    def of(self, stream: str) -> tuple[float, Any]:
        return self.keys.get(stream, (0.0, 0 if stream == "episodes" else ""))

    def dump(self) -> str:
        return json.dumps({s: list(k) for s, k in sorted(self.keys.items())})

    @classmethod
    def load(cls, text: str | None) -> Cursor:
        if not text:
            return cls()
        try:
            raw = json.loads(text)
            keys = {s: (float(v[0]), v[1]) for s, v in raw.items() if s in STREAMS}
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return cls()  # unreadable: start over (lines at the ends of files are not repeated)
        return cls(keys)


@dataclass(frozen=True, slots=True)
class Batch:
    cursor: Cursor
    summaries: list[WarmSummary]
    episodes: list[tuple[int, Episode]]
    proposed: list[CandidateNote]
    decided: list[CandidateNote]


class DailyNotes:
    """`memory.daily`: appends what is new to the day files under `workspace/memory/`."""

    def __init__(
        self,
        store: Store,
        workspace: Path,
        tz: tzinfo | None = None,
        *,
        limit: int = MAX_EVENTS,
        settle: float = SETTLE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.files = WorkspaceFiles(workspace)
        self.tz = tz
        self.limit = limit
        self.settle = settle
        self.clock = clock
        self._lock = asyncio.Lock()  # one catch_up at a time in this process

    async def catch_up(self) -> int:
        """Append every event new since the cursor (at most `limit`); returns lines written."""
        async with self._lock:
            before = self.clock() - self.settle
            batch = await self.store.read(_read, before, self.limit)
            written, cursor = await asyncio.to_thread(self._write, batch)
            if cursor.keys != batch.cursor.keys:
                value = cursor.dump()
                await self.store.write(lambda tx: tx.state.put(STATE_KEY, value, time.time()))
            return written

    def path(self, day: str) -> Path:
        """The day's file, checked to stay in the workspace (`UnsafePath` otherwise)."""
        return self.files.path(f"{NOTES_DIR}/{safe_name(day)}.md")

    def _write(self, batch: Batch) -> tuple[int, Cursor]:
        """(lines written, the cursor after them): in a worker thread, never on the loop."""
        events = list(itertools.islice(_merged(batch), self.limit))
        cursor = Cursor(dict(batch.cursor.keys))
        days: dict[str, list[str]] = {}
        for event in events:
            moment = datetime.fromtimestamp(event.time, self.tz).astimezone(self.tz)
            days.setdefault(moment.strftime("%Y-%m-%d"), []).append(
                event.line(moment.strftime("%H:%M"))
            )
            cursor.keys[event.stream] = event.key
        # every path checked before a line is written: a refused one leaves the cursor as it was
        paths = {day: self.path(day) for day in days}
        written = sum(_append(paths[day], day, lines) for day, lines in days.items())
        return written, cursor


def _read(tx: Tx, before: float, limit: int) -> Batch:
    cursor = Cursor.load(tx.state.get(STATE_KEY))
    return Batch(
        cursor,
        tx.summaries.updated(cursor.of("summaries"), before, limit),
        tx.episodes.created(cursor.of("episodes"), before, limit),
        tx.candidates.proposed(cursor.of("proposed"), before, limit),
        tx.candidates.decided(cursor.of("decided"), before, limit),
    )


def _merged(batch: Batch) -> Iterator[Event]:
    """The four streams' events in time order (each stream's own order kept)."""
    streams = (
        (_summary(s) for s in batch.summaries),
        (_episode(seq, e) for seq, e in batch.episodes),
        (_proposed(c) for c in batch.proposed),
        (_decided(c) for c in batch.decided),
    )
    return heapq.merge(*streams, key=lambda e: e.time)


def _summary(s: WarmSummary) -> Event:
    head = f"summary {s.session_id} ({s.chat}, {s.rounds} rounds)"
    return _event(s.updated_at, "summaries", (s.updated_at, s.session_id), head, s.summary)


def _episode(seq: int, e: Episode) -> Event:
    text = e.summary + (f" — {', '.join(e.keywords)}" if e.keywords else "")
    head = f"episode {e.id} ({e.chat}, {e.turn_count} turns)"
    return _event(e.created_at, "episodes", (e.created_at, seq), head, text)


def _proposed(c: CandidateNote) -> Event:
    found = c.candidate
    acts = f"{found.op} {found.target}, " if found.op != "add" else ""
    head = f"candidate {c.id} proposed ({found.source}, {acts}{found.kind}, {found.scope})"
    later = c.decided_at is None or c.decided_at > c.created_at
    fate = "pending" if later else _fate(c)
    return _event(c.created_at, "proposed", (c.created_at, c.id), head, found.content, fate)


def _decided(c: CandidateNote) -> Event:
    at = c.decided_at or c.created_at
    by = f" by {redact(c.decided_by)}" if c.decided_by else ""
    head = f"candidate {c.id} {_fate(c)}{by}"
    return _event(at, "decided", (at, c.id), head, "")


def _fate(c: CandidateNote) -> str:
    fate = f"{c.status} {c.item_id}" if c.item_id else c.status
    if c.status in ("rejected", "refused") and c.reason:
        fate += f" ({_short(c.reason, 60)})"
    return fate


def _event(
    at: float, stream: str, key: tuple[float, Any], head: str, text: str, fate: str = ""
) -> Event:
    said = f": {_short(text)}" if text.strip() else ""
    tail = f" → {fate}" if fate else ""
    return Event(at, stream, key, lambda hhmm: f"- {hhmm} {head}{said}{tail}")


def _short(text: str, chars: int = TEXT_CHARS) -> str:
    text = " ".join(redact(text).split())
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _append(path: Path, day: str, lines: Sequence[str]) -> int:
    """Append the lines not already at the end of the file (a repeat after a crash); returns
    how many were written. A new file starts with its day's header."""
    block = "".join(f"{line}\n" for line in lines)
    head = ""
    if not path.exists() or path.stat().st_size == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        head = f"# {day}\n\n"
        fresh = list(lines)
    else:
        tail, ended = _tail(path, len(block.encode("utf-8")) + 4096)
        fresh = [line for line in lines if line not in tail]
        head = "" if ended else "\n"  # a line cut by a crash stays as it is, ended
    if fresh:
        with path.open("a", encoding="utf-8") as out:
            out.write(head + "".join(f"{line}\n" for line in fresh))
    return len(fresh)


def _tail(path: Path, size: int) -> tuple[set[str], bool]:
    """The whole lines among the file's last `size` bytes, and whether it ends with a newline."""
    with path.open("rb") as found:
        found.seek(0, 2)
        end = found.tell()
        start = max(0, end - size)
        found.seek(start)
        data = found.read()
    lines = data.decode("utf-8", errors="replace").split("\n")
    if start > 0:
        lines = lines[1:]  # the first may be cut
    return set(lines), data.endswith(b"\n")
