"""The `nahida` command line: global options, and `run`, `chat`, `init`.

Global options (each with an environment variable): `--config` (NAHIDA_CONFIG, default
`config/nahida.yaml` when it exists), `--data-dir` (NAHIDA_DATA_DIR, default `./data`),
`--workspace` (NAHIDA_WORKSPACE, default `./workspace`), `--plugins-dir` (NAHIDA_PLUGINS_DIR). A bad
config prints one line naming the file and key and exits with code 2; a database that cannot be
used (damaged, the disk full) one line saying what to do, with code 3. Every read command has
`--json`. The other command groups live beside this module: `doctor`, `backup` and `restore`,
`session`, `memory` (with `search`), `profile`, `history`, `admin` (the memory console), `store`
(copying memory between stores).
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from nahida import __version__
from nahida.app import App, Paths, TerminalApp, console_app, platform_adapters
from nahida.cli.admin import admin_app
from nahida.cli.backup import backup, restore
from nahida.cli.doctor import console_checks, doctor
from nahida.cli.history import history_app
from nahida.cli.memory import memory_app
from nahida.cli.profile import profile_app
from nahida.cli.session import session_app
from nahida.cli.state import State, fail, state_of
from nahida.cli.store import store_app
from nahida.config import Config
from nahida.errors import BackupError, CopyError, NahidaError, StorageError
from nahida.logs import configure_logging

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_CONFIG = REPO / "config" / "nahida.example.yaml"
DEFAULT_CONFIG = Path("config/nahida.yaml")

app = typer.Typer(
    help="Nahida: a chat bot for QQ and Lark/Feishu with a memory you can see and correct.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command()(doctor)
app.command()(backup)
app.command()(restore)
app.add_typer(session_app, name="session")
app.add_typer(memory_app, name="memory")
app.add_typer(profile_app, name="profile")
app.add_typer(history_app, name="history")
app.add_typer(admin_app, name="admin")
app.add_typer(store_app, name="store")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"nahida {__version__}")
        raise typer.Exit()


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
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version."
        ),
    ] = False,
) -> None:
    if config is None and DEFAULT_CONFIG.exists():
        config = DEFAULT_CONFIG
    ctx.obj = State(Paths(config, data_dir, workspace, plugins_dir))
    configure_logging("WARNING")  # on stderr, never into a command's output; run/chat set theirs


def _logging(config: Config, *, quiet: bool) -> None:
    level = config.logging.level
    if quiet and level in ("DEBUG", "INFO", "WARNING"):
        # a terminal chat: the bot answers what went wrong; logs would mix into the dialogue
        level = "ERROR" if sys.stderr.isatty() else "WARNING"
    configure_logging(level, config.logging.format, config.secrets())


def _banner(config: Config, bot: TerminalApp) -> None:
    if bot.interactive:
        hint = "（Ctrl-D 退出）" if config.bot.language == "zh" else "(Ctrl-D to quit)"
        route = bot.model.route("chat")
        if route is None:
            status = " · no model configured"
        else:
            base_url = config.providers[route.provider].base_url or "the provider's default URL"
            status = f" · {route.provider}/{route.model} @ {base_url}"
        typer.echo(f"{config.bot.name} · /help {hint}{status}", err=True)


def _terminal(config: Config, state: State) -> TerminalApp:
    """The terminal chat; like `nahida chat`, it starts a new session (`--resume` continues)."""
    bot = console_app(config, state.paths, checks=console_checks(state))
    asyncio.run(bot.memory.sessions.start_new(bot.chat))
    return bot


@app.command()
def chat(
    ctx: typer.Context,
    resume: Annotated[
        str | None, typer.Option("--resume", help="Continue a session: `last` or an id.")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show info logs.")] = False,
) -> None:
    """Chat with Nahida in the terminal (one message per line when stdin is not a terminal)."""
    state = state_of(ctx)
    config = state.config
    _logging(config, quiet=not verbose)
    bot = _terminal(config, state)
    sessions = bot.memory.sessions
    if resume:
        resumed = asyncio.run(sessions.resume(bot.chat, resume))
        if resumed is None:
            bot.memory.close()
            raise fail(f"no session matches {resume!r} (see `nahida session list`)", 1)
        typer.echo(f"resumed {resumed[0].id}: {resumed[0].title}", err=True)
    _banner(config, bot)
    asyncio.run(bot.run())


@app.command()
def run(ctx: typer.Context) -> None:
    """Run every enabled channel and the scheduler (the terminal chat when none is enabled)."""
    state = state_of(ctx)
    config = state.channel_config()
    adapters = platform_adapters(config, str(state.paths.config or "config"))
    if not adapters:
        _logging(config, quiet=True)
        bot = _terminal(config, state)
        _banner(config, bot)
        asyncio.run(bot.run())
        return
    _logging(config, quiet=False)
    checks = console_checks(state)
    asyncio.run(App(config, state.paths, adapters=adapters, checks=checks).run())


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


def exit_code(exc: NahidaError) -> int:
    """1: a backup could not be made or restored, a copy refused; 3: the database cannot be used
    (damaged, the disk full, a failing disk); 2: anything else (a bad config, most often)."""
    if isinstance(exc, StorageError):
        return 3
    return 1 if isinstance(exc, BackupError | CopyError) else 2


def main() -> None:
    try:
        app()
    except NahidaError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exit_code(exc))
