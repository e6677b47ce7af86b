"""The `nahida` command line.

Global options (each with an environment variable): `--config` (NAHIDA_CONFIG, default
`config/nahida.yaml` when it exists), `--data-dir` (NAHIDA_DATA_DIR, default `./data`),
`--workspace` (NAHIDA_WORKSPACE, default `./workspace`). A bad config prints one line naming the
file and key and exits with code 2. Every read command has `--json`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from nahida import history
from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.app import App, Paths, console_app, platform_adapters
from nahida.cli_history import history_app
from nahida.cli_memory import memory_app
from nahida.config import Config, load_config
from nahida.db import Database
from nahida.errors import NahidaError
from nahida.logs import configure_logging

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIG = REPO / "config" / "nahida.example.yaml"
DEFAULT_CONFIG = Path("config/nahida.yaml")

app = typer.Typer(
    help="Nahida: a chat bot for QQ and Lark/Feishu with a memory you can see and correct.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
session_app = typer.Typer(help="Conversation sessions.", no_args_is_help=True)
app.add_typer(session_app, name="session")
app.add_typer(memory_app, name="memory")
app.add_typer(history_app, name="history")


class State:
    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self._config: Config | None = None

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(self.paths.config)
        return self._config


def fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@app.callback()
def main_options(
    ctx: typer.Context,
    config: Annotated[
        Path | None, typer.Option("--config", envvar="NAHIDA_CONFIG", help="YAML config file.")
    ] = None,
    data_dir: Annotated[
        Path, typer.Option("--data-dir", envvar="NAHIDA_DATA_DIR", help="Database folder.")
    ] = Path("data"),
    workspace: Annotated[
        Path, typer.Option("--workspace", envvar="NAHIDA_WORKSPACE", help="Workspace folder.")
    ] = Path("workspace"),
    plugins_dir: Annotated[
        Path,
        typer.Option("--plugins-dir", envvar="NAHIDA_PLUGINS_DIR", help="Plugins folder."),
    ] = Path("plugins"),
) -> None:
    if config is None and DEFAULT_CONFIG.exists():
        config = DEFAULT_CONFIG
    ctx.obj = State(Paths(config, data_dir, workspace, plugins_dir))


def _state(ctx: typer.Context) -> State:
    state = ctx.obj
    assert isinstance(state, State)
    return state


def _echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _logging(config: Config, *, quiet: bool) -> None:
    level = config.logging.level
    if quiet and level in ("DEBUG", "INFO"):
        level = "WARNING"
    configure_logging(level, config.logging.format, config.secrets())


def _console(config: Config) -> ConsoleAdapter:
    you = "你" if config.bot.language == "zh" else "you"
    return ConsoleAdapter(bot_name=config.bot.name, user_name=you)


def _banner(config: Config, console: ConsoleAdapter, bot: App) -> None:
    if console.interactive:
        hint = "（Ctrl-D 退出）" if config.bot.language == "zh" else "(Ctrl-D to quit)"
        status = "" if bot.model.configured else " · no model configured"
        typer.echo(f"{config.bot.name} · /help {hint}{status}", err=True)


@app.command()
def chat(
    ctx: typer.Context,
    resume: Annotated[
        str | None, typer.Option("--resume", help="Continue a session: `last` or an id.")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show info logs.")] = False,
) -> None:
    """Chat with Nahida in the terminal (one message per line when stdin is not a terminal)."""
    from nahida.adapters.console.adapter import CHAT

    state = _state(ctx)
    config = state.config
    _logging(config, quiet=not verbose)
    console = _console(config)
    bot = console_app(config, state.paths, console)
    chat_key = str(CHAT)
    bot.db.call(history.start_new, chat_key)  # each terminal chat starts fresh unless resumed
    if resume:
        found = bot.db.call(history.resolve_session, chat_key, resume)
        if found is None:
            bot.db.close()
            raise fail(f"no session matches {resume!r} (see `nahida session list`)", 1)
        bot.db.call(history.resume, chat_key, found.id)
        typer.echo(f"resumed {found.id}: {found.title}", err=True)
    _banner(config, console, bot)
    asyncio.run(bot.run())


@app.command()
def run(ctx: typer.Context) -> None:
    """Run every enabled channel and the scheduler (the terminal chat when none is enabled)."""
    state = _state(ctx)
    config = state.config
    adapters = platform_adapters(config, str(state.paths.config or "config"))
    if not adapters:
        _logging(config, quiet=True)
        console = _console(config)
        bot = console_app(config, state.paths, console)
        _banner(config, console, bot)
        asyncio.run(bot.run())
        return
    _logging(config, quiet=False)
    asyncio.run(App(config, state.paths, adapters=adapters).run())


@app.command()
def init(
    directory: Annotated[
        Path, typer.Argument(help="Where to create config/ and workspace/.")
    ] = Path("."),
) -> None:
    """Create config/nahida.yaml and workspace/ from the templates."""
    from nahida.workspace import ensure_workspace

    target = directory / "config" / "nahida.yaml"
    if target.exists():
        raise fail(f"{target} exists already; not overwriting it", 1)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(EXAMPLE_CONFIG, target)
    created = ensure_workspace(directory / "workspace")
    typer.echo(f"wrote {target}")
    typer.echo(f"{'created' if created else 'kept'} {directory / 'workspace'}")


@app.command()
def doctor(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Check the installation: config, SQLite, FTS5, sqlite-vec, jieba, providers."""
    from nahida.doctor import diagnose, render

    state = _state(ctx)
    report = asyncio.run(diagnose(state.config, state.paths))
    if as_json:
        _echo_json(report)
    else:
        typer.echo(render(report))
    if not report["ok"]:
        raise typer.Exit(1)


def _open_db(state: State) -> Database:
    return Database(state.paths.database)


@session_app.command("list")
def session_list(
    ctx: typer.Context,
    chat: Annotated[str | None, typer.Option(help="Only this ChatKey.")] = None,
    limit: Annotated[int, typer.Option(min=1)] = 20,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List sessions, newest first."""
    db = _open_db(_state(ctx))
    try:
        found = db.call(history.list_sessions, chat, limit)
    finally:
        db.close()
    if as_json:
        _echo_json([asdict(s) for s in found])
        return
    if not found:
        typer.echo("no sessions")
    for s in found:
        typer.echo(f"{s.id}  {s.updated_at:%Y-%m-%d %H:%M}  {s.turn_count:>4}  {s.chat}  {s.title}")


@session_app.command("show")
def session_show(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="Session id or a unique id suffix.")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show one session's turns."""
    db = _open_db(_state(ctx))
    try:
        found = db.call(history.resolve_session, None, session_id)
        if found is None:
            raise fail(f"no session matches {session_id!r}", 1)
        turns = db.call(history.session_turns, found.id)
    finally:
        db.close()
    if as_json:
        _echo_json({"session": asdict(found), "turns": [asdict(t) for t in turns]})
        return
    typer.echo(f"{found.id} · {found.chat} · {found.title}")
    for turn in turns:
        who = turn.speaker_name or turn.speaker or turn.role
        error = f"  [error: {turn.error}]" if turn.error else ""
        typer.echo(f"[{turn.time:%Y-%m-%d %H:%M:%S}] {turn.role} {who}: {turn.content}{error}")


@session_app.command("delete")
def session_delete(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="Session id or a unique id suffix.")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Delete a session and its turns."""
    db = _open_db(_state(ctx))
    try:
        found = db.call(history.resolve_session, None, session_id)
        if found is None:
            raise fail(f"no session matches {session_id!r}", 1)
        deleted = db.call(history.delete_session, found.id)
    finally:
        db.close()
    if as_json:
        _echo_json({"deleted": found.id if deleted else None})
    else:
        typer.echo(f"deleted {found.id}")


@session_app.command("search")
def session_search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Words to look for in titles and turns.")],
    chat: Annotated[str | None, typer.Option(help="Only this ChatKey.")] = None,
    limit: Annotated[int, typer.Option(min=1)] = 20,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Search sessions by title and content."""
    db = _open_db(_state(ctx))
    try:
        found = db.call(history.search_sessions, query, chat, limit)
    finally:
        db.close()
    if as_json:
        _echo_json([{**asdict(s), "match": snippet} for s, snippet in found])
        return
    if not found:
        typer.echo("no matches")
    for s, snippet in found:
        typer.echo(f"{s.id}  {s.chat}  {s.title}\n    {snippet[:120]}")


def main() -> None:
    try:
        app()
    except NahidaError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
