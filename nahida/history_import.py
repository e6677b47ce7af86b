"""Importing chat history from JSON Lines (`nahida history import`, the recall evaluation).

One object per line:

    {"chat": "<ChatKey>", "user": "<user id>", "name": "<display name>", "text": "…",
     "time": "<ISO-8601>", "message_id": "<id>", "role": "user" | "assistant"}

`user` is a user id on the chat's platform (the turn's speaker is the UserKey
`<platform>:<user>`); `name` is optional and so is `role` (default `user`). A time without a UTC
offset is taken as UTC. Turns enter history exactly as live messages do, through
`history.record` (same tokenizer, same FTS rows, sessions split on idle gaps), in time order (file
order for equal times). Importing is idempotent on (chat, message_id). A bad line is reported with
its number and what was wrong, and skipped; so is an assistant turn before any user turn of its
chat (live, such a turn opens no session either).

Work is batched: each `Database.call` records up to `BATCH` turns inside one transaction.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nahida import history
from nahida.db import Connection, Database, transaction
from nahida.envelope import ChatKey, UserKey
from nahida.history import NewTurn

BATCH = 1000
ROLES = ("user", "assistant")


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
    conn: Connection, batch: list[tuple[int, NewTurn]], idle_split: float
) -> tuple[int, int, list[BadLine]]:
    """Record turns in one transaction: (imported, duplicates, skipped lines)."""
    imported = duplicates = 0
    skipped: list[BadLine] = []
    with transaction(conn):
        for number, turn in batch:
            if (
                conn.execute(
                    "SELECT 1 FROM turns WHERE chat = ? AND message_id = ?",
                    (turn.chat, turn.message_id),
                ).fetchone()
                is not None
            ):
                duplicates += 1
            elif history.record(conn, turn, idle_split) is None:
                skipped.append(BadLine(number, "assistant turn before any user turn of its chat"))
            else:
                imported += 1
    return imported, duplicates, skipped


def _batches(items: list[tuple[int, NewTurn]], size: int) -> Iterator[list[tuple[int, NewTurn]]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def import_lines(
    db: Database, lines: Iterable[str], idle_split: float, *, batch: int = BATCH
) -> ImportReport:
    """Import JSONL lines into history; see the module docstring."""
    started = time.perf_counter()
    turns, bad = read_lines(lines)
    turns.sort(key=lambda pair: pair[1].time)  # stable: file order for equal times
    report = ImportReport(bad=bad)
    for chunk in _batches(turns, batch):
        imported, duplicates, skipped = db.call(record_batch, chunk, idle_split)
        report.imported += imported
        report.duplicates += duplicates
        report.bad.extend(skipped)
    report.bad.sort(key=lambda b: b.line)
    report.seconds = time.perf_counter() - started
    return report


def import_file(db: Database, path: Path, idle_split: float) -> ImportReport:
    with path.open(encoding="utf-8") as handle:
        return import_lines(db, handle, idle_split)
