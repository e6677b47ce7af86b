"""`nahida doctor`: what this installation has and whether each part works.

Secrets are masked in the config it prints. Provider reachability is checked by listing models
(no tokens spent). The embedder says how `memory.embedding.backend` was resolved (the local model,
the `embed` route, or none: lexical recall only). When the database exists, the latest run of each
background job is shown, and how many vectors are stored and pending. Dreaming: off, no model, or
its last run and when the next scheduled one is due. The database file is checked whole (`PRAGMA
quick_check`); a damaged one is reported with what to do, and nothing else is read from it. With
memory on PostgreSQL (`memory.store`), the server must answer with pgvector installed. Each
enabled channel that has a check says whether it may start: OneBot without `access_token` fails it
when reachable beyond this machine (`nahida run` refuses it) and warns on loopback.
Replies: how many could not be delivered (the latest few with their chat and time) and how
many messages wait for an answer.
"""

from __future__ import annotations

import asyncio
import platform
import sys
import time
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

import typer
import yaml

from nahida.app import (
    Paths,
    build_provider,
    channel_checks,
    choose_embedder,
    database_problems,
    memory_for,
    open_store,
    store_capabilities,
)
from nahida.cli.state import State, echo_json, state_of
from nahida.clock import iso
from nahida.config import Config, masked_dump
from nahida.console import Checks, Checkup
from nahida.errors import ConfigError, NahidaError
from nahida.memory import MemoryService, StoreCapabilities
from nahida.providers.base import Task
from nahida.providers.router import Route, resolve_routes

PING_TIMEOUT = 5.0
Dream = dict[str, Any]  # the report's `dreaming` part
Queue = dict[str, Any] | None  # the report's `queue` part: what a running bot last wrote
Deliveries = dict[str, Any] | None  # the report's `deliveries` part: None without a database
LATEST_UNDELIVERED = 5


async def _providers(config: Config) -> list[dict[str, Any]]:
    results = []
    for name, settings in config.providers.items():
        # a quick check: one try, a short timeout (a dead endpoint must not hold doctor up)
        quick = settings.model_copy(update={"timeout": min(settings.timeout, PING_TIMEOUT)})
        provider = build_provider(name, quick.model_copy(update={"max_retries": 0}))
        entry: dict[str, Any] = {"name": name, "type": settings.type, "base_url": settings.base_url}
        started = time.perf_counter()
        try:
            await provider.ping()
            entry["reachable"] = True
        except NahidaError as exc:
            entry.update(reachable=False, error=f"{type(exc).__name__}: {exc}")
        finally:
            await provider.aclose()
        entry["took_ms"] = round((time.perf_counter() - started) * 1000, 1)
        results.append(entry)
    return results


async def _dreaming(config: Config, model: str | None, memory: MemoryService | None) -> Dream:
    """Whether dreaming is on, its model, the last run and when the next scheduled one is due
    (the latest `dreaming` job run + the interval; none yet: the delay after `nahida run`)."""
    settings = config.memory.dreaming
    report: Dream = {"enabled": settings.enabled, "model": model, "last_run": None}
    report["state"] = "off" if not settings.enabled else "no model" if model is None else "on"
    runs = await memory.dreams.runs(limit=1) if memory is not None else []
    if runs:
        last = runs[0]
        report["last_run"] = {
            "id": last.id,
            "chat": last.chat,
            "outcome": last.outcome,
            "started_at": iso(last.started_at),
            "applied": last.applied,
            "pending": last.pending,
            "rejected": last.rejected,
            "error": last.error,
        }
    jobs = await memory.runs.latest("dreaming", 1) if memory is not None else []
    report["next_run"] = iso(jobs[0].started_at + settings.interval_seconds) if jobs else None
    report["initial_delay_seconds"] = settings.initial_delay_seconds
    return report


def _database(paths: Paths, where: str) -> dict[str, Any]:
    """Whether the database file is sound (SQLite's quick check: every page read once), or the
    PostgreSQL server answers with the schema migrated and pgvector installed."""
    if where != "sqlite":
        return _server(paths, where)
    if not paths.database.exists():
        return {"backend": "sqlite", "exists": False, "ok": True, "problems": []}
    started = time.perf_counter()
    found = database_problems(paths)
    return {
        "backend": "sqlite",
        "exists": True,
        "ok": not found,
        "bytes": paths.database.stat().st_size,
        "problems": found,
        "took_ms": round((time.perf_counter() - started) * 1000, 1),
    }


def _server(paths: Paths, where: str) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        store = open_store(paths, where)
        try:
            caps = store.capabilities
        finally:
            store.close()
    except (NahidaError, OSError) as exc:
        return {"backend": "postgres", "exists": True, "ok": False, "problems": [str(exc)]}
    return {
        "backend": "postgres",
        "exists": True,
        "ok": caps.vectors,
        "server": f"PostgreSQL {caps.version}",
        "pgvector": caps.vectors_version or False,
        "problems": [] if caps.vectors else ["the vector extension (pgvector) is missing"],
        "took_ms": round((time.perf_counter() - started) * 1000, 1),
    }


def shown_store(where: str) -> str:
    """Where memory lives, as doctor shows it: a PostgreSQL URI without its password."""
    parts = urlsplit(where)
    if parts.password is None:
        return where
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def _database_line(database: dict[str, Any], path: str) -> str:
    if database.get("backend") == "postgres":
        return _server_line(database, path)
    if not database["exists"]:
        return f"ok database {path}: none yet (made at the first start)"
    if database["ok"]:
        return f"ok database {path}: sound (quick_check in {database['took_ms']} ms)"
    found = database["problems"]
    more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
    return (
        f"-- database {path} is DAMAGED: {'; '.join(found[:3])}{more}. Stop the bot and"
        " restore your latest backup: `nahida restore FILE --replace` (docs/backup.md)"
    )


def _server_line(database: dict[str, Any], where: str) -> str:
    if database["ok"]:
        return (
            f"ok database {where}: {database['server']}, pgvector {database['pgvector']}"
            f" (connected in {database['took_ms']} ms)"
        )
    return f"-- database {where}: {'; '.join(database['problems'])}"


async def _memory_state(
    config: Config, paths: Paths, dream_model: str | None, *, readable: bool = True
) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]], Dream, Queue]:
    """The latest run of each job, the embedder with its vectors stored and pending, the
    sessions whose last compaction failed, dreaming, and the bus queue a running bot last
    wrote."""
    try:
        choice = choose_embedder(config)
    except ConfigError as exc:
        error = {"backend": config.memory.embedding.backend, "error": str(exc)}
        return [], error, [], await _dreaming(config, dream_model, None), None
    embedder = choice.embedder
    embedding: dict[str, Any] = {
        "backend": config.memory.embedding.backend,
        "chosen": choice.why,
        "search": config.memory.search if embedder is not None else "lexical",
        "provider": embedder.name if embedder is not None else None,
        "model": embedder.model if embedder is not None else None,
        "dimension": embedder.dimension if embedder is not None else None,
    }
    if not readable or not _holds_memory(config, paths):
        return [], embedding, [], await _dreaming(config, dream_model, None), None
    memory = memory_for(config, paths, choice=choice)  # counts only: no model is loaded
    try:
        runs = [run.to_json() for run in await memory.runs.latest()]
        if embedder is not None:
            counts = await memory.embeddings.counts()
            embedding.update(
                stored=counts.stored,
                pending=counts.pending,
                skipped=counts.skipped,
                other_models=counts.other,
            )
        failing = [
            {
                "session": f.session_id,
                "chat": f.chat,
                "failures": f.failures,
                "last_error": f.last_error,
                "at": iso(f.updated_at),
            }
            for f in await memory.working.failing()
        ]
        queue = await memory.runs.queue_depth()
        return runs, embedding, failing, await _dreaming(config, dream_model, memory), queue
    finally:
        memory.close()
        if embedder is not None:
            await embedder.aclose()


def _holds_memory(config: Config, paths: Paths) -> bool:
    """Whether there is memory to read: the SQLite file exists (the server always holds it)."""
    return config.memory.store != "sqlite" or paths.database.exists()


async def _deliveries(config: Config, paths: Paths) -> Deliveries:
    """Replies never acknowledged by the platform (a count and the latest few), and messages
    stored but not answered yet (the bot is answering them, or stopped before it could)."""
    if not _holds_memory(config, paths):
        return None
    memory = MemoryService(open_store(paths, config.memory.store))
    try:
        counts = await memory.sessions.delivery_counts()
        latest = await memory.sessions.deliveries("undelivered", LATEST_UNDELIVERED)
    finally:
        memory.close()
    return {
        "undelivered": counts.get("undelivered", 0),
        "pending": counts.get("pending", 0),
        "delivered": counts.get("delivered", 0),
        "latest": [
            {"chat": d.chat, "message_id": d.message_id, "at": iso(d.time), "error": d.error}
            for d in latest
        ],
    }


def deliveries_lines(deliveries: Deliveries) -> list[str]:
    if deliveries is None:
        return []
    if not deliveries["undelivered"]:
        lines = [f"ok replies: {deliveries['delivered']} delivered, none undelivered"]
    else:
        lines = [
            f"-- replies: {deliveries['undelivered']} undelivered, never acknowledged by the"
            " platform (answered again if it delivers the message again after a restart); latest:"
        ]
        lines.extend(
            f"   {d['chat']} message {d['message_id']} at {d['at']}: {d['error']}"
            for d in deliveries["latest"]
        )
    if deliveries["pending"]:
        lines.append(
            f"-- replies: not answered yet: {deliveries['pending']} stored (being answered, or"
            " the bot stopped first: answered when the platform delivers the message again)"
        )
    return lines


async def diagnose(config: Config, paths: Paths) -> dict[str, Any]:
    where = config.memory.store
    caps = store_capabilities(where)
    started = time.perf_counter()
    jieba_ok = MemoryService.warm_up()
    jieba_ms = round((time.perf_counter() - started) * 1000, 1)
    routes = resolve_routes(config.models, {n: p.model for n, p in config.providers.items()})
    providers = await _providers(config)
    dream = routes.get("dream")
    dream_model = f"{dream.provider}/{dream.model}" if dream is not None else None
    database = _database(paths, where)
    jobs, embedding, failing, dreaming, queue = await _memory_state(
        config, paths, dream_model, readable=database["ok"]
    )
    report: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **_sqlite(caps),
        "jieba": {"loaded": jieba_ok, "init_ms": jieba_ms},
        "paths": {
            "config": str(paths.config) if paths.config else None,
            "data_dir": str(paths.data_dir),
            "database": str(paths.database) if where == "sqlite" else shown_store(where),
            "workspace": str(paths.workspace),
        },
        "models": _models(config, routes, embedding) if routes else None,
        "database": database,
        "providers": providers,
        "jobs": jobs,
        "embedding": embedding,
        "compaction_failing": failing,
        "dreaming": dreaming,
        "queue": queue,
        "channels": _channels(config),
        "deliveries": await _deliveries(config, paths) if database["ok"] else None,
        "config": masked_dump(config),
    }
    report["ok"] = (
        (caps is None or caps.fts)
        and jieba_ok
        and database["ok"]
        and all(p["reachable"] for p in providers)
        and all(c["level"] != "error" for c in report["channels"])
    )
    return report


def _sqlite(caps: StoreCapabilities | None) -> dict[str, Any]:
    """The report's `sqlite` part, when memory is in SQLite."""
    if caps is None:
        return {}
    return {
        "sqlite": {
            "driver": caps.driver,
            "version": caps.version,
            "fts5": caps.fts,
            "sqlite_vec": caps.vectors_version or False,
        }
    }


def _models(config: Config, routes: dict[Task, Route], embedding: dict[str, Any]) -> dict[str, str]:
    """The model of each task as the bot uses it: `embed` is whatever embeds (the local model
    too), and `rerank` is off unless `memory.rerank` turns it on."""
    models: dict[str, str] = {
        task: f"{route.provider}/{route.model}" + (" (derived)" if route.derived else "")
        for task, route in routes.items()
        if task not in ("embed", "rerank")
    }
    models["embed"] = (
        f"{embedding['provider']}/{embedding['model']}" if embedding.get("model") else "none"
    )
    rerank = routes["rerank"]
    models["rerank"] = f"{rerank.provider}/{rerank.model}" if config.memory.rerank else "off"
    return models


def render(report: dict[str, Any]) -> str:
    """What `nahida doctor` prints: the checks, then the effective config (secrets masked)."""
    lines = check_lines(report)
    lines.append("effective config (secrets masked):")
    dumped = yaml.safe_dump(report["config"], allow_unicode=True, sort_keys=False)
    lines.extend("  " + line for line in dumped.splitlines())
    return "\n".join(lines)


def check_lines(report: dict[str, Any]) -> list[str]:
    """One line a check, `ok ` or `-- ` first where it passed or failed."""

    def mark(ok: object) -> str:
        return "ok " if ok else "-- "

    lines = [f"{mark(True)}Python {report['python']} on {report['platform']}"]
    if "sqlite" in report:
        sqlite = report["sqlite"]
        lines += [
            f"{mark(True)}SQLite {sqlite['version']} via {sqlite['driver']}",
            f"{mark(sqlite['fts5'])}FTS5 {'available' if sqlite['fts5'] else 'MISSING'}",
            f"{mark(sqlite['sqlite_vec'])}sqlite-vec "
            + (
                f"{sqlite['sqlite_vec']}"
                if sqlite["sqlite_vec"]
                else "not loadable (vector search falls back to numpy)"
            ),
        ]
    lines += [
        f"{mark(report['jieba']['loaded'])}jieba loaded in {report['jieba']['init_ms']} ms",
        _database_line(report["database"], report["paths"]["database"]),
    ]
    if not report["providers"]:
        lines.append("-- no model configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY")
    for p in report["providers"]:
        state = "reachable" if p["reachable"] else f"NOT reachable: {p.get('error', '')}"
        lines.append(f"{mark(p['reachable'])}provider {p['name']} ({p['type']}) {state}")
    models = report["models"] or {}
    lines.append("models: " + (", ".join(f"{t}={m}" for t, m in models.items()) or "none"))
    if report.get("channel_config"):
        lines.append(f"-- channels: {report['channel_config']} (`nahida run` needs it)")
    lines.append(_embedding_line(report["embedding"]))
    for f in report["compaction_failing"]:
        lines.append(
            f"-- working memory: compaction of session {f['session']} ({f['chat']}) failed"
            f" {f['failures']}× (last at {f['at']}: {f['last_error']}); its turns are kept and"
            " it is retried"
        )
    for c in report["channels"]:
        refused = "; `nahida run` refuses to start" if c["level"] == "error" else ""
        lines.append(f"{mark(c['level'] == 'ok')}{c['channel']}: {c['line']}{refused}")
    lines.append(_dreaming_line(report["dreaming"]))
    lines.append(queue_line(report["queue"]))
    lines.extend(deliveries_lines(report["deliveries"]))
    lines.append("paths: " + ", ".join(f"{k}={v}" for k, v in report["paths"].items()))
    if not report["jobs"]:
        lines.append("jobs: no run recorded yet")
    for run in report["jobs"]:
        ok = run["outcome"] in ("ok", "skipped", "running")
        counts = ", ".join(f"{k} {v}" for k, v in run["counts"].items())
        error = f" · {run['error']}" if run["error"] else ""
        lines.append(
            f"{mark(ok)}job {run['job']}: {run['outcome']} at {run['started_at']}"
            + (f" ({counts})" if counts else "")
            + error
        )
    return lines


def _channels(config: Config) -> list[dict[str, str]]:
    """Each enabled channel's own check (OneBot: whether a token guards it, and where it
    listens): ok, warn, or error (`nahida run` refuses such a channel)."""
    return [
        {"channel": name, "level": level, "line": line}
        for name, level, line in channel_checks(config)
    ]


def queue_line(queue: Queue) -> str:
    """What waited in a running bot's bus when it last wrote it (every 10 s)."""
    if queue is None:
        return "queue: not recorded (no bot has run with this database)"
    return (
        f"queue: {queue['waiting']} waiting (largest chat {queue['largest']}),"
        f" oldest {queue['oldest_wait']:.0f}s, at {iso(queue['at'])}"
    )


def _embedding_line(embedding: dict[str, Any]) -> str:
    if "error" in embedding:
        return f"-- embeddings: {embedding['error']}"
    if embedding["model"] is None:
        return f"-- embeddings: {embedding['chosen']}; recall is lexical only"
    dimension = embedding["dimension"] or "?"
    line = (
        f"ok embeddings: {embedding['chosen']}, {dimension} dimensions,"
        f" search {embedding['search']}"
    )
    if "stored" in embedding:
        line += (
            f"; vectors stored {embedding['stored']}, pending {embedding['pending']},"
            f" too short {embedding['skipped']}"
        )
        if embedding["other_models"]:
            line += f", of other models {embedding['other_models']}"
    return line


def _dreaming_line(dream: Dream) -> str:
    if dream["state"] == "off":
        return "-- dreaming: off (memory.dreaming.enabled: false)"
    if dream["state"] == "no model":
        return "-- dreaming: no model (models.dream, else models.chat)"
    last = dream["last_run"]
    if last is None:
        done = "no run yet"
    else:
        ok = last["outcome"] in ("ok", "skipped", "running")
        done = (
            f"last run {last['id']} ({last['chat']}) {last['outcome']} at {last['started_at']}:"
            f" applied {last['applied']}, pending {last['pending']}, rejected {last['rejected']}"
            + (f" · {last['error']}" if last["error"] else "")
        )
        if not ok:
            return f"-- dreaming with {dream['model']}: {done}"
    if dream["next_run"]:
        upcoming = f"next scheduled at {dream['next_run']}"
    else:
        delay = f"{dream['initial_delay_seconds']:g}"
        upcoming = f"next scheduled about {delay} s after `nahida run` starts"
    return f"ok dreaming with {dream['model']}: {done}; {upcoming}"


def _channel_config(state: State) -> str | None:
    """What stops `nahida run` from loading the channels' part of the config (an unset
    `${VAR}`), which every other command may leave aside; None when nothing does."""
    try:
        state.channel_config()
    except ConfigError as exc:
        return str(exc)
    return None


async def checkup(state: State) -> Checkup:
    """What `nahida doctor` finds, as its JSON report and its lines: the command prints them,
    the console's Settings page shows them."""
    report = await diagnose(state.config, state.paths)
    report["channel_config"] = _channel_config(state)
    report["ok"] = report["ok"] and report["channel_config"] is None
    return Checkup(report, check_lines(report))


def console_checks(state: State) -> Checks:
    """The doctor's checks for the console, each run in a thread with its own loop, so the
    database check and the providers' pings never hold up the loop that serves pages."""

    async def run() -> Checkup:
        return await asyncio.to_thread(lambda: asyncio.run(checkup(state)))

    return run


def doctor(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Check the installation: config, SQLite, FTS5, sqlite-vec, jieba, providers, jobs."""
    state = state_of(ctx)
    report = asyncio.run(checkup(state)).report
    if as_json:
        echo_json(report)
    else:
        typer.echo(render(report))
    if not report["ok"]:
        raise typer.Exit(1)
