"""The config file as a plain YAML tree: read, checked, and `${VAR}` expanded.

What comes out is plain data for `nahida.config` to validate; every problem here is a
`ConfigError` naming the file and, where there is one, the dotted key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from nahida.errors import ConfigError


def read_yaml(path: Path) -> dict[str, Any]:
    source = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(f"cannot read config file: {reason}", source=source) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        byte = data[exc.start : exc.start + 1].hex()
        raise ConfigError(
            f"not valid UTF-8 text ({exc.reason}: byte 0x{byte} at line {line}, column {column});"
            " save the file as UTF-8",
            source=source,
        ) from None
    try:
        tree = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(_yaml_problem(exc, text), source=source) from None
    except RecursionError:
        raise ConfigError("the YAML is nested too deeply", source=source) from None
    if not isinstance(tree, dict):
        raise ConfigError("the top level must be a mapping of sections", source=source)
    return {str(k): v for k, v in tree.items()}


def _yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    mark = getattr(exc, "problem_mark", None)
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        char = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
        return f"invalid YAML at line {line}, column {column}: unacceptable character {char}"
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
    problem = getattr(exc, "problem", None) or "invalid YAML"
    return f"invalid YAML at {where}: {problem}"


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


# YAML aliases share one node between several keys; walking them copies what they point at, so a
# few lines of aliases can stand for an enormous (or, made recursive, endless) tree.
MAX_NODES = 100_000


def expand_vars(
    value: Any,
    env: Mapping[str, str],
    *,
    source: str | None = None,
    channels: bool = True,
) -> Any:
    """Expand `${VAR}` and `${VAR:-default}` in every string of a YAML tree.

    `${VAR}` with VAR unset is a `ConfigError` naming VAR and the key (`source` names the file);
    `${VAR:-default}` gives the default when VAR is unset or empty, so `${VAR:-}` is an explicit
    empty default. `channels=False`: an unset variable under `channels` stays as written, since
    only running the channels needs their secrets. A recursive alias, or aliases that expand past
    `MAX_NODES` values, is a `ConfigError` too."""
    try:
        return _Expansion(env, source, channels).expand(value, ())
    except RecursionError:
        raise ConfigError("the YAML is nested too deeply", source=source) from None


class _Expansion:
    def __init__(self, env: Mapping[str, str], source: str | None, channels: bool) -> None:
        self.env = env
        self.source = source
        self.channels = channels
        self.nodes = 0
        self.path: set[int] = set()  # the containers between the root and the current value

    def expand(self, value: Any, at: tuple[Any, ...]) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ConfigError(
                f"the file expands to more than {MAX_NODES:,} values (YAML aliases?)",
                source=self.source,
                key=dotted(at) or None,
            )
        if isinstance(value, str):
            return self._substitute(value, at)
        if not isinstance(value, list | dict):
            return value
        if id(value) in self.path:
            raise ConfigError(
                "a YAML alias refers to a mapping or list that contains it",
                source=self.source,
                key=dotted(at) or None,
            )
        self.path.add(id(value))
        try:
            if isinstance(value, list):
                return [self.expand(v, (*at, i)) for i, v in enumerate(value)]
            return {k: self.expand(v, (*at, k)) for k, v in value.items()}
        finally:
            self.path.discard(id(value))

    def _substitute(self, value: str, at: tuple[Any, ...]) -> str:
        env, source = self.env, self.source
        lenient = not self.channels and at[:1] == ("channels",)

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            found = env.get(name)
            if default is not None:
                return found or default
            if found is None:
                if lenient:
                    return match.group(0)
                raise ConfigError(
                    f"environment variable {name} is not set "
                    f"(write ${{{name}:-}} for an empty default)",
                    source=source,
                    key=dotted(at) or None,
                )
            return found

        return _VAR.sub(substitute, value)


def dotted(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc)
