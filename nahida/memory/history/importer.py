"""Importing from JSON Lines: chat history (`nahida history import`, the recall evaluation) and
exported memory items (`nahida memory export` / `import`, at the end).

One object per line:

    {"chat": "<ChatKey>", "user": "<user id or UserKey>", "name": "<display name>", "text": "…",
     "time": "<ISO-8601>", "message_id": "<id>", "role": "user" | "assistant"}

`user` is a user id on the chat's platform (`42`: the speaker is the UserKey `<platform>:42`) or
a full UserKey of that platform (`onebot:42`); `name` is optional and so is `role` (default
`user`). A time without a UTC offset is taken as UTC. Turns enter history exactly as live
messages do: secrets redacted, the same tokens and index rows, sessions split on idle gaps — in
time order (file order for equal times). With `extract` (`nahida history import --extract`) they
are also read by rule extraction as live user turns are, the commit mode deciding what becomes a
memory; without it (the default) an import only fills history, which recall searches anyway: a
large archive would otherwise turn into thousands of items nobody reviewed. Importing is
idempotent on (chat, message_id).

A bad line is reported with its number and what was wrong, and skipped: not UTF-8, longer than
the line limit (read in bounded pieces, so a huge line never fills memory), not JSON, a field
missing or of the wrong type, text that is not valid Unicode; so is an assistant turn before any
user turn of its chat (live, such a turn opens no session either).

Work is batched: each store call records up to `BATCH` turns in one transaction, and the import
pauses briefly between batches so live traffic on the same database gets its turn. Large imports
cut tokens, redact and read statements in worker processes, the next batch while the store
writes this one.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import tzinfo
from pathlib import Path
from typing import Any, BinaryIO

from nahida.clock import parse_moment
from nahida.envelope import ChatKey, UserKey
from nahida.memory.core.models import CommitMode, MemoryItem, NewTurn
from nahida.memory.core.scopes import user_key, validate_scope
from nahida.memory.core.tokenize import map_ahead
from nahida.memory.history import sessions
from nahida.memory.store.base import Store, Tx
from nahida.memory.write import extract, write
from nahida.memory.write.extract import extract as extract_statements
from nahida.memory.write.write import Prepared

BATCH = 2000
PAUSE = 0.005  # seconds between batches: a live message waits at most one batch
MAX_LINE_BYTES = 1 << 20  # the default `limits.import_line_bytes`
PARALLEL_FROM = 20_000  # turns: below this, worker processes cost more than they save
ROLES = ("user", "assistant")
Progress = Callable[[int, int], None]  # (turns handled, turns in all)


@dataclass(frozen=True, slots=True)
class BadLine:
    line: int
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "error": self.error}


@dataclass(slots=True)
class ImportReport:
    imported: int = 0
    duplicates: int = 0
    bad: list[BadLine] = field(default_factory=list)
    seconds: float = 0.0  # in all
    startup: float = 0.0  # of which reading the file and starting the workers
    memories: int = 0  # what extraction proposed from the imported turns (stored or pending)

    @property
    def nothing_imported(self) -> bool:
        """Every line given was bad: the command exits 1 (a partly bad import exits 0 and
        lists its bad lines)."""
        return bool(self.bad) and not self.imported and not self.duplicates

    @property
    def turns_per_second(self) -> float:
        """The rate of storing, start-up left out."""
        handled = self.imported + self.duplicates
        storing = self.seconds - self.startup
        return handled / storing if storing > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "imported": self.imported,
            "duplicates": self.duplicates,
            "bad": len(self.bad),
            "errors": [b.to_json() for b in self.bad],
            "memories": self.memories,
            "seconds": round(self.seconds, 3),
            "startup_seconds": round(self.startup, 3),
            "turns_per_s": round(self.turns_per_second, 1),
        }


def parse_time(value: object) -> float:
    """Epoch seconds of an ISO-8601 string; a time without offset is UTC."""
    return parse_moment(value).timestamp()


def _text_field(data: dict[str, Any], key: str, *, required: bool) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            raise ValueError(f"{key} is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{key} must be a string")
    text = str(value)
    if required and not text.strip():
        raise ValueError(f"{key} is empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{key} is not valid Unicode (a lone surrogate such as \\ud800)") from None
    return text


def parse_line(text: str) -> NewTurn:
    """The turn one JSONL line describes; ValueError says what is wrong with it."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    chat_text = _text_field(data, "chat", required=True)
    assert chat_text is not None
    try:
        chat = ChatKey.parse(chat_text)
    except ValueError as exc:
        raise ValueError(f"chat: {exc}") from None
    role = data.get("role", "user")
    if role not in ROLES:
        raise ValueError(f"role must be user or assistant, not {role!r}")
    content = _text_field(data, "text", required=True)
    message_id = _text_field(data, "message_id", required=True)
    user = _text_field(data, "user", required=role == "user")
    name = _text_field(data, "name", required=False)
    speaker = None
    if role == "user":
        assert user is not None
        try:
            speaker = str(user_key(chat, user))
        except ValueError as exc:
            raise ValueError(f"user: {exc}") from None
    assert content is not None
    return NewTurn(
        chat=str(chat),
        role=role,
        content=content,
        time=parse_time(data.get("time")),
        speaker=speaker,
        speaker_name=(name.strip() or None) if name is not None else None,
        message_id=message_id,
    )


def bounded_lines(handle: BinaryIO, limit: int = MAX_LINE_BYTES) -> Iterator[str | BadLine]:
    """The lines of a binary file, decoded, or a `BadLine` for one that is not UTF-8 or is longer
    than `limit` bytes (its rest is skipped piece by piece, never held whole)."""
    number = 0
    while raw := handle.readline(limit + 1):
        number += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            while (rest := handle.readline(1 << 16)) and not rest.endswith(b"\n"):
                pass
            yield BadLine(number, f"longer than {limit:,} bytes (limits.import_line_bytes)")
            continue
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield BadLine(number, f"not UTF-8 (byte {exc.start + 1} of the line)")


def read_lines(lines: Iterable[str | BadLine]) -> tuple[list[tuple[int, NewTurn]], list[BadLine]]:
    """Parse numbered lines (1-based; a `BadLine` stands for a line that could not be read);
    blank lines are skipped silently."""
    turns: list[tuple[int, NewTurn]] = []
    bad: list[BadLine] = []
    for number, line in enumerate(lines, start=1):
        if isinstance(line, BadLine):
            bad.append(line)
        elif line.strip():
            try:
                turns.append((number, parse_line(line)))
            except ValueError as exc:
                bad.append(BadLine(number, str(exc)))
    return turns, bad


@dataclass(frozen=True, slots=True)
class ReadyTurn:
    """A turn as it will be stored (`sessions.stored_form`), with the memories its words give."""

    turn: NewTurn
    index: str
    memories: tuple[Prepared, ...]


def ready(turn: NewTurn, tz: tzinfo | None = None, *, extract: bool = False) -> ReadyTurn:
    """Redact, cut tokens and (with `extract`) read statements; run in worker processes for
    large imports."""
    clean, index = sessions.stored_form(turn)
    memories: tuple[Prepared, ...] = ()
    if extract and turn.role == "user" and turn.speaker is not None:
        found = extract_statements(
            clean.content,
            chat=ChatKey.parse(turn.chat),
            user=UserKey.parse(turn.speaker),
            message_id=turn.message_id,
            time=turn.time,
            tz=tz,
        )
        memories = tuple(write.prepare(c) for c in found)
    return ReadyTurn(clean, index, memories)


def _ready(turn: NewTurn, clean: str, index: str) -> ReadyTurn:
    return ReadyTurn(turn if clean == turn.content else replace(turn, content=clean), index, ())


def record_batch(
    tx: Tx, batch: list[tuple[int, ReadyTurn]], idle_split: float, mode: CommitMode
) -> tuple[int, int, int, list[BadLine]]:
    """Record turns and what they say (in one transaction): (imported, duplicates, memories,
    skipped lines)."""
    imported = duplicates = memories = 0
    skipped: list[BadLine] = []
    for number, item in batch:
        turn = item.turn
        if turn.message_id is not None and tx.turns.known(turn.chat, turn.message_id):
            duplicates += 1
            continue
        stored = sessions.append(tx, turn, item.index, idle_split)
        if stored is None:
            skipped.append(BadLine(number, "assistant turn before any user turn of its chat"))
            continue
        imported += 1
        for memory in item.memories:
            evidence = tuple(replace(e, turn_id=stored[0].id) for e in memory.candidate.evidence)
            with_turn = replace(memory, candidate=replace(memory.candidate, evidence=evidence))
            if write.propose(tx, with_turn, mode, extract.SOURCE).outcome != "rejected":
                memories += 1
    return imported, duplicates, memories, skipped


def workers_for(turns: int) -> int:
    """Worker processes for an import of this size (none for small ones)."""
    if turns < PARALLEL_FROM:
        return 0
    return max(1, min(4, os.cpu_count() or 1))


def import_lines(
    store: Store,
    lines: Iterable[str | BadLine],
    idle_split: float,
    *,
    mode: CommitMode = "auto_safe",
    tz: tzinfo | None = None,
    extract: bool = False,
    batch: int = BATCH,
    pause: float = PAUSE,
    workers: int | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import JSONL lines into history; see the module docstring."""
    started = time.perf_counter()
    turns, bad = read_lines(lines)
    turns.sort(key=lambda pair: pair[1].time)  # stable: file order for equal times
    report = ImportReport(bad=bad)
    chunks = [turns[i : i + batch] for i in range(0, len(turns), batch)]
    processes = workers_for(len(turns)) if workers is None else workers
    if extract:  # the whole turn goes to the workers: statements need its chat and speaker
        cut = functools.partial(ready, tz=tz, extract=True)
        ahead = map_ahead(cut, [[turn for _, turn in chunk] for chunk in chunks], processes)
    else:  # only the text travels (what crosses to a process is pickled both ways)
        texts = [[turn.content for _, turn in chunk] for chunk in chunks]
        cuts = map_ahead(sessions.stored_text, texts, processes)
        ahead = (
            [_ready(turn, *cut) for (_, turn), cut in zip(chunk, cut_chunk, strict=True)]
            for chunk, cut_chunk in zip(chunks, cuts, strict=True)
        )
    done = 0
    for n, (chunk, prepared) in enumerate(zip(chunks, ahead, strict=True)):
        if n == 0:
            report.startup = time.perf_counter() - started
        if n and pause:
            time.sleep(pause)  # live traffic on the same database gets its turn
        numbered = [(number, item) for (number, _), item in zip(chunk, prepared, strict=True)]
        imported, duplicates, memories, skipped = store.write_sync(
            record_batch, numbered, idle_split, mode
        )
        report.imported += imported
        report.duplicates += duplicates
        report.memories += memories
        report.bad.extend(skipped)
        done += len(chunk)
        if progress is not None:
            progress(done, len(turns))
    report.bad.sort(key=lambda b: b.line)
    report.seconds = time.perf_counter() - started
    return report


def import_file(
    store: Store,
    path: Path,
    idle_split: float,
    *,
    mode: CommitMode = "auto_safe",
    tz: tzinfo | None = None,
    extract: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
    progress: Progress | None = None,
) -> ImportReport:
    with path.open("rb") as handle:
        lines = bounded_lines(handle, max_line_bytes)
        return import_lines(
            store, lines, idle_split, mode=mode, tz=tz, extract=extract, progress=progress
        )


# memory items (`nahida memory export` / `import`) --------------------------------------------

ITEM_STATUSES = ("active", "archived", "superseded", "rejected")


def export_lines(items: Sequence[MemoryItem]) -> list[str]:
    """One exported item per line (`MemoryItem.to_json`); `read_items` reads them back."""
    return [json.dumps(i.to_json(), ensure_ascii=False, sort_keys=True) for i in items]


def parse_item(line: str) -> MemoryItem:
    """One exported line as an item; ValueError says what is wrong."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    for key in ("id", "scope", "kind", "content"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ValueError(f"{key} must be a non-empty string")
    validate_scope(data["scope"])
    if data.get("status", "active") not in ITEM_STATUSES:
        raise ValueError(f"unknown status {data.get('status')!r}")
    for key in ("confidence", "importance", "created_at", "updated_at"):
        if key in data and (isinstance(data[key], bool) or not isinstance(data[key], int | float)):
            raise ValueError(f"{key} must be a number")
    try:
        return MemoryItem.from_json(data)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def read_items(
    lines: Iterable[str | BadLine],
) -> tuple[list[tuple[int, MemoryItem]], list[BadLine]]:
    """Numbered items (1-based lines) in creation order (a superseded item before its
    successor), and the bad lines (a `BadLine`: one that could not be read); blank lines are
    skipped."""
    items: list[tuple[int, MemoryItem]] = []
    bad: list[BadLine] = []
    for number, line in enumerate(lines, start=1):
        if isinstance(line, BadLine):
            bad.append(line)
            continue
        if not line.strip():
            continue
        try:
            items.append((number, parse_item(line)))
        except ValueError as exc:  # JSONDecodeError is a ValueError
            bad.append(BadLine(number, str(exc)))
    items.sort(key=lambda pair: pair[1].created_at)
    return items, bad
