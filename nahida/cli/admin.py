"""`nahida admin`: the memory console alone over the data dir (no channels), its token and
password hash (docs/console.md).

    nahida admin [--host H] [--port P]      serve the console until Ctrl-C
    nahida admin token [--rotate]           print the login token (made on first use), or replace
                                            it (every session ends)
    nahida admin hash-password              read a password on stdin, print its scrypt hash for
                                            admin.password_hash
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import signal
import sys
from typing import Annotated

import typer

from nahida.cli.doctor import console_checks
from nahida.cli.state import State, fail, state_of
from nahida.config import Config
from nahida.console import ConsoleServer, check_settings, create_app
from nahida.console.auth import PasswordHash, TokenFile
from nahida.logs import configure_logging

admin_app = typer.Typer(
    help="The memory console: web pages over the data dir (docs/console.md).",
    no_args_is_help=False,
)


@admin_app.callback(invoke_without_command=True)
def admin(
    ctx: typer.Context,
    host: Annotated[str | None, typer.Option(help="Listen here (default admin.host).")] = None,
    port: Annotated[
        int | None, typer.Option(min=0, max=65535, help="Port (default admin.port; 0: any free).")
    ] = None,
) -> None:
    """Serve the memory console alone over the data dir (no channels run) until Ctrl-C."""
    if ctx.invoked_subcommand is not None:
        return
    state = state_of(ctx)
    config = state.config
    changes = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    if changes:
        admin_settings = config.admin.model_copy(update=changes)
        config = config.model_copy(update={"admin": admin_settings})
    check_settings(config)
    configure_logging(config.logging.level, config.logging.format, config.secrets())
    asyncio.run(_serve(state, config))


async def _serve(state: State, config: Config) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    with state.memory(foreground=True) as memory:
        await asyncio.to_thread(memory.warm_up)  # jieba before the first search
        await memory.embeddings.load()
        app = create_app(memory, config, state.paths.data_dir, checks=console_checks(state))
        server = ConsoleServer(app, config.admin.host, config.admin.port)
        await server.start()
        token = TokenFile(state.paths.data_dir).path
        typer.echo(f"Nahida console: {server.url}")
        typer.echo(f"log in with the token in {token} (`nahida admin token` prints it)")
        sys.stdout.flush()
        try:
            await stop.wait()
        finally:
            await server.stop()
            await memory.embeddings.aclose()


@admin_app.command()
def token(
    ctx: typer.Context,
    rotate: Annotated[
        bool, typer.Option("--rotate", help="Replace it: every console session ends.")
    ] = False,
) -> None:
    """Print the console's login token (made now if there is none), or replace it."""
    tokens = TokenFile(state_of(ctx).paths.data_dir)
    typer.echo(tokens.rotate() if rotate else tokens.read())


@admin_app.command("hash-password")
def hash_password() -> None:
    """Read a password on stdin (asked twice on a terminal) and print its hash for
    admin.password_hash."""
    if sys.stdin.isatty():
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            raise fail("the two passwords differ", 1)
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if len(password) < 8:
        raise fail("a password has at least 8 characters", 1)
    hashed = str(PasswordHash.make(password))
    typer.echo(hashed)
    typer.echo(f"config: admin: {{password_hash: '{hashed}'}}", err=True)
