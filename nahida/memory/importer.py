"""Importing from JSON Lines: chat history (`nahida history import`, the recall evaluation) and
exported memory items (`nahida memory export` / `import`, at the end).

One object per line:

    {"chat": "<ChatKey>", "user": "<user id>", "name": "<display name>", "text": "…",
     "time": "<ISO-8601>", "message_id": "<id>", "role": "user" | "assistant"}

`user` is a user id on the chat's platform (the turn's speaker is the UserKey
`<platform>:<user>`); `name` is optional and so is `role` (default `user`). A time without a UTC
offset is taken as UTC. Turns enter history exactly as live messages do, through
`sessions.record` (same tokens, same index rows, sessions split on idle gaps), in time order (file
order for equal times). Importing is idempotent on (chat, message_id). A bad line is reported with
its number and what was wrong, and skipped; so is an assistant turn before any user turn of its
chat (live, such a turn opens no session either).

Work is batched: each store call records up to `BATCH` turns in one transaction. Large imports
cut their jieba tokens in worker processes, the next batch while the store writes this one.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nahida.envelope import ChatKey, UserKey
from nahida.memory import sessions
from nahida.memory.models import MemoryItem, NewTurn
from nahida.memory.scopes import validate_scope
from nahida.memory.store.base import Store, Tx
from nahida.memory.tokenize import index_ahead

BATCH = 2000
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
    seconds: float = 0.0

    @property
    def turns_per_second(self) -> float:
        handled = self.imported + self.duplicates
        return handled / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "imported": self.imported,
            "duplicates": self.duplicates,
            "bad": len(self.bad),
            "errors": [b.to_json() for b in self.bad],
            "seconds": round(self.seconds, 3),
            "turns_per_s": round(self.turns_per_second, 1),
        }


def parse_moment(value: object) -> datetime:
    """An aware datetime from an ISO-8601 string; a time without offset is UTC."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("time must be an ISO-8601 string")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"time is not ISO-8601: {value!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


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
    return text


def parse_line(text: str) -> NewTurn:
    """The turn one JSONL line describes; ValueError says what is wrong with it."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} at column {exc.colno}") from None
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
            speaker = str(UserKey(chat.platform, user.strip()))
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


def read_lines(lines: Iterable[str]) -> tuple[list[tuple[int, NewTurn]], list[BadLine]]:
    """Parse numbered lines (1-based); blank lines are skipped silently."""
    turns: list[tuple[int, NewTurn]] = []
    bad: list[BadLine] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            turns.append((number, parse_line(line)))
        except ValueError as exc:
            bad.append(BadLine(number, str(exc)))
    return turns, bad


def record_batch(
    tx: Tx, batch: list[tuple[int, NewTurn]], tokens: list[str], idle_split: float
) -> tuple[int, int, list[BadLine]]:
    """Record turns (in one transaction): (imported, duplicates, skipped lines)."""
    imported = duplicates = 0
    skipped: list[BadLine] = []
    for (number, turn), body in zip(batch, tokens, strict=True):
        if turn.message_id is not None and tx.turns.known(turn.chat, turn.message_id):
            duplicates += 1
        elif sessions.append(tx, turn, body, idle_split) is None:
            skipped.append(BadLine(number, "assistant turn before any user turn of its chat"))
        else:
            imported += 1
    return imported, duplicates, skipped


def workers_for(turns: int) -> int:
    """Tokenising processes for an import of this size (none for small ones)."""
    if turns < PARALLEL_FROM:
        return 0
    return max(1, min(4, os.cpu_count() or 1))


def import_lines(
    store: Store,
    lines: Iterable[str],
    idle_split: float,
    *,
    batch: int = BATCH,
    workers: int | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import JSONL lines into history; see the module docstring."""
    started = time.perf_counter()
    turns, bad = read_lines(lines)
    turns.sort(key=lambda pair: pair[1].time)  # stable: file order for equal times
    report = ImportReport(bad=bad)
    chunks = [turns[i : i + batch] for i in range(0, len(turns), batch)]
    texts = [[turn.content for _, turn in chunk] for chunk in chunks]
    ahead = index_ahead(texts, workers_for(len(turns)) if workers is None else workers)
    done = 0
    for chunk, tokens in zip(chunks, ahead, strict=True):
        imported, duplicates, skipped = store.write_sync(record_batch, chunk, tokens, idle_split)
        report.imported += imported
        report.duplicates += duplicates
        report.bad.extend(skipped)
        done += len(chunk)
        if progress is not None:
            progress(done, len(turns))
    report.bad.sort(key=lambda b: b.line)
    report.seconds = time.perf_counter() - started
    return report


def import_file(
    store: Store, path: Path, idle_split: float, *, progress: Progress | None = None
) -> ImportReport:
    with path.open(encoding="utf-8") as handle:
        return import_lines(store, handle, idle_split, progress=progress)


# memory items (`nahida memory export` / `import`) --------------------------------------------

ITEM_STATUSES = ("active", "archived", "superseded", "rejected")


def export_lines(items: Sequence[MemoryItem]) -> list[str]:
    """One exported item per line (`MemoryItem.to_json`); `read_items` reads them back."""
    return [json.dumps(i.to_json(), ensure_ascii=False, sort_keys=True) for i in items]


def parse_item(line: str) -> MemoryItem:
    """One exported line as an item; ValueError says what is wrong."""
    data = json.loads(line)
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


def read_items(lines: Iterable[str]) -> tuple[list[tuple[int, MemoryItem]], list[BadLine]]:
    """Numbered items (1-based lines) in creation order (a superseded item before its
    successor), and the bad lines; blank lines are skipped."""
    items: list[tuple[int, MemoryItem]] = []
    bad: list[BadLine] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            items.append((number, parse_item(line)))
        except ValueError as exc:  # JSONDecodeError is a ValueError
            bad.append(BadLine(number, str(exc)))
    items.sort(key=lambda pair: pair[1].created_at)
    return items, bad
