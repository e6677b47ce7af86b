"""A plugin's manifest, `plugin.yaml`, and the error a plugin that cannot be loaded reports.

    name: memo                          # lower-case letters, digits, `_`; unique among plugins
    version: 0.1.0
    description: Notes kept in long-term memory
    permissions: [memory.read, memory.write]
    entry: plugin                       # the module `plugin.py` in the plugin's folder (default)

Permissions:

    memory.read          `PluginContext.memory_search()`, with the visibility of a chat (DESIGN §4)
    memory.write         `PluginContext.memory_store()` for user and chat memory
    memory.write.global  also `audience="global"`: knowledge every chat sees, so it must be
                         granted on purpose

Unknown keys are an error, like everywhere in Nahida's configuration: a typo must not silently
drop a permission.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nahida.errors import NahidaError

MANIFEST = "plugin.yaml"
Permission = Literal["memory.read", "memory.write", "memory.write.global"]


class PluginError(NahidaError):
    """A plugin could not be loaded; names the plugin's folder and what was wrong."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")
    version: str = Field(min_length=1)
    description: str = ""
    permissions: tuple[Permission, ...] = ()
    entry: str = Field("plugin", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    def allows(self, permission: Permission) -> bool:
        return permission in self.permissions


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(top)"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)


def read_manifest(folder: Path) -> Manifest:
    """The folder's `plugin.yaml`, validated; raises `PluginError` saying what is wrong."""
    path = folder / MANIFEST
    if not path.is_file():
        raise PluginError(folder, f"no {MANIFEST}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise PluginError(folder, f"{MANIFEST} cannot be read: {exc}") from exc
    if not isinstance(data, dict):
        raise PluginError(folder, f"{MANIFEST} must be a mapping of keys (name, version, ...)")
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise PluginError(folder, f"{MANIFEST} is invalid: {_describe(exc)}") from exc
