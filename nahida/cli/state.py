"""What every command of the CLI shares: the paths and config of this invocation, memory opened
the way the app opens it (`app.memory_for`), and the two ways a command ends badly or prints."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import typer

from nahida.app import Paths, memory_for
from nahida.config import Config, load_config
from nahida.memory import MemoryService
from nahida.providers.router import ModelRouter


class State:
    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self._config: Config | None = None

    @property
    def config(self) -> Config:
        """The config as a command that runs no channel needs it: a `${VAR}` under `channels`
        that is not set is no error (reading memory needs no QQ token)."""
        if self._config is None:
            self._config = load_config(self.paths.config, channels=False)
        return self._config

    def channel_config(self) -> Config:
        """The whole config, the channels' secrets too (`nahida run`)."""
        return load_config(self.paths.config)

    @contextlib.contextmanager
    def memory(
        self, *, foreground: bool = False, model: ModelRouter | None = None
    ) -> Iterator[MemoryService]:
        """Memory for the length of one command; closed (its queue drained) afterwards.
        `foreground`: a command a person waits for (`memory embed`, `memory search`): the local
        embedder may use every core, and its query vectors are not rationed (no chat shares
        this process: rationed, a file of questions went lexical after its first few); `model`:
        the models memory may call (`memory dream`; the caller closes it), else none."""
        config = self.config
        if foreground:
            embedding = config.memory.embedding.model_copy(
                update={"background_threads": 0, "query_share": 1.0}
            )
            config = config.model_copy(
                update={"memory": config.memory.model_copy(update={"embedding": embedding})}
            )
        memory = memory_for(config, self.paths, model)
        try:
            yield memory
        finally:
            memory.close()


def state_of(ctx: typer.Context) -> State:
    state = ctx.obj
    assert isinstance(state, State)
    return state


def fail(message: str, code: int = 1, *, as_json: bool = False) -> typer.Exit:
    """Print `error: message` on stderr (with `--json`: `{"error": message}` on stdout); raise
    the returned Exit with `code`."""
    if as_json:
        echo_json({"error": message, "exit_code": code})
    else:
        typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def echo_json(data: Any, *, indent: int | None = 2) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=indent, default=str))
