"""`nahida memory search`: recall as a person asking in a chat would get it, from the command line.

    nahida memory search "她上周去哪了" --chat onebot:group:1 --user 42 [--at ISO] [--json]
    nahida memory search --queries questions.jsonl [--limit N] [--json]
    … [--mode hybrid|lexical|vector]

Visibility is that of the question asked in that chat by that user (`Viewer.parse`: DESIGN §4; a
private chat's user is the one its key names, `--user` may be `42` or `qq:42`), over all of that
chat's history (no hot window is excluded). `--at` (a query's `time`) is the
moment the question is asked, default now: "yesterday" resolves against it, in its UTC offset, and
nothing said or stored later is returned. A queries file has one object per line, `{"id": …,
"chat": …, "user": …, "q": …, "time": …}` (user and time optional); the output has one JSON line
per input line, `{"id": …, "hits": [...], "took_ms": …}` (a hit as `/admin/api/search` answers
it), or `{"id": …, "error": …}` for a bad one.
`--mode` chooses lexical, vector or hybrid search (default `memory.search`, hybrid, when an
embedder is available; lexical without one); vector and hybrid find only what has been embedded
(`nahida memory embed`).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Annotated, Any

import typer

from nahida.cli.state import fail, state_of
from nahida.cli.text import fit, width
from nahida.clock import parse_moment
from nahida.console.search import answer, hit_json
from nahida.memory import MODES, Hit, MemoryService, Mode, Query, Viewer

TEXT_WIDTH = 72  # terminal columns of the text
WHO_WIDTH = 32
KIND_WIDTH = 7  # turn, item, episode


@dataclass(frozen=True, slots=True)
class Question:
    chat: str
    q: str
    user: str | None = None
    at: datetime | None = None

    def query(self, limit: int, mode: Mode = "hybrid") -> Query:
        return Query(
            self.q,
            Viewer.parse(self.chat, self.user),
            at=self.at.timestamp() if self.at else None,
            limit=limit,
            tz=self.at.tzinfo if self.at else None,
            mode=mode,
        )


async def ask(
    memory: MemoryService, question: Question, limit: int, mode: Mode | None = None
) -> tuple[list[Hit], float]:
    """The hits and the milliseconds the search took (the query's embedding included)."""
    query = question.query(limit, mode or memory.recall.mode)
    started = time.perf_counter()
    hits = await memory.recall.search(query)
    return hits, (time.perf_counter() - started) * 1000


def question_of(data: object) -> Question:
    """A queries-file line as a question; ValueError says what is wrong."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    chat, q, user = data.get("chat"), data.get("q"), data.get("user")
    if not isinstance(chat, str):
        raise ValueError("chat must be a ChatKey string")
    if not isinstance(q, str) or not q.strip():
        raise ValueError("q must be a non-empty string")
    if user is not None and not isinstance(user, str | int):
        raise ValueError("user must be a user id")
    at = parse_moment(data["time"]) if data.get("time") is not None else None
    Viewer.parse(chat, str(user) if user is not None else None)  # validates the keys
    return Question(chat, q, str(user) if user is not None else None, at)


def _when(epoch: float, at: datetime | None, tz: tzinfo | None = None) -> str:
    zone = at.tzinfo if at else tz
    moment = datetime.fromtimestamp(epoch, zone) if zone else datetime.fromtimestamp(epoch)
    return f"{moment:%Y-%m-%d %H:%M}"


def table(hits: list[Hit], at: datetime | None, tz: tzinfo | None = None) -> list[str]:
    """A readable table: rank, score, id, time, kind, who (or scope) and the text."""
    if not hits:
        return ["no hits"]
    whos = [(hit.speaker or "") if hit.kind == "turn" else hit.scope for hit in hits]
    who_width = min(max([width("who / scope"), *map(width, whos)]), WHO_WIDTH)
    lines = [
        f"{'#':>2}  {'score':>8}  {'id':<10}  {'time':<16}  {'kind':<{KIND_WIDTH}}"
        f"  {fit('who / scope', who_width)}  text"
    ]
    for rank, (hit, who) in enumerate(zip(hits, whos, strict=True), start=1):
        text = fit(" ".join(hit.text.split()), TEXT_WIDTH).rstrip()
        lines.append(
            f"{rank:>2}  {hit.score:>8.4f}  {hit.id:<10}  {_when(hit.time, at, tz):<16}"
            f"  {hit.kind:<{KIND_WIDTH}}  {fit(who, who_width)}  {text}"
        )
    return lines


async def _run_file(
    memory: MemoryService, path: Path, limit: int, as_json: bool, mode: Mode | None
) -> None:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            ident: Any = None
            try:
                data = json.loads(line)
                ident = data.get("id") if isinstance(data, dict) else None
                question = question_of(data)
            except ValueError as exc:  # JSONDecodeError is a ValueError
                if as_json:
                    typer.echo(json.dumps({"id": ident, "error": f"line {number}: {exc}"}))
                else:
                    typer.echo(f"line {number}: {exc}", err=True)
                continue
            hits, took = await ask(memory, question, limit, mode)
            if as_json:
                out = {"id": ident, "hits": [hit_json(h) for h in hits], "took_ms": round(took, 3)}
                typer.echo(json.dumps(out, ensure_ascii=False))
            else:
                typer.echo(f"== {ident if ident is not None else number}: {question.q}")
                typer.echo("\n".join(table(hits, question.at, memory.tz)))


def search(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="The question.")] = None,
    chat: Annotated[str | None, typer.Option(help="ChatKey the question is asked in.")] = None,
    user: Annotated[str | None, typer.Option(help="User id (on the chat's platform).")] = None,
    at: Annotated[
        str | None,
        typer.Option(help="ISO-8601 moment of the question (no offset: UTC; default now)."),
    ] = None,
    queries: Annotated[
        Path | None, typer.Option(help="JSONL of questions: {id, chat, user, q, time}.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=200)] = 10,
    mode: Annotated[
        str | None,
        typer.Option(help="hybrid | lexical | vector (default: memory.search in the config)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Search memory items, history and episodes as a question asked in a chat."""
    if (query is None) == (queries is None):
        raise fail("give a QUERY with --chat, or --queries FILE", 2, as_json=as_json)
    if mode is not None and mode not in MODES:
        raise fail(f"--mode must be one of {', '.join(MODES)}", 2, as_json=as_json)
    chosen: Mode | None = mode  # checked against MODES above
    question: Question | None = None
    if query is not None:
        if chat is None:
            raise fail("--chat is required with a QUERY", 2, as_json=as_json)
        try:
            moment = parse_moment(at) if at is not None else None
            Viewer.parse(chat, user)
        except ValueError as exc:
            raise fail(str(exc), 2, as_json=as_json) from None
        question = Question(chat, query, user, moment)
    elif queries is not None and not queries.is_file():
        raise fail(f"cannot read {queries}", 1, as_json=as_json)
    MemoryService.warm_up()
    with state_of(ctx).memory(foreground=True) as memory:
        if chosen == "vector" and not memory.embeddings.enabled:
            raise fail(f"no vector search: {memory.embeddings.why}", 2, as_json=as_json)
        if chosen != "lexical":
            asyncio.run(memory.embeddings.load())  # the bounded query wait is for the query only
        if question is None:
            assert queries is not None
            asyncio.run(_run_file(memory, queries, limit, as_json, chosen))
            return
        used = chosen or memory.recall.mode
        hits, took = asyncio.run(ask(memory, question, limit, chosen))
    if as_json:
        out = answer(
            question.q,
            question.chat,
            question.user,
            question.at.isoformat() if question.at else None,
            used if memory.embeddings.enabled else "lexical",
            hits,
            took,
        )
        typer.echo(json.dumps(out, ensure_ascii=False, indent=2))
        return
    typer.echo("\n".join(table(hits, question.at, state_of(ctx).config.bot.zone())))
