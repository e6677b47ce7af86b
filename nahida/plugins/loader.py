"""Finding and loading plugins: one folder each under `plugins/`, skipped (and reported) if broken.

    plugins/
      memo/
        plugin.yaml      the manifest (see `manifest.py`)
        plugin.py        the entry module: `def setup(ctx: PluginContext) -> None`

Each plugin folder is imported as its own package, `nahida_plugin_<name>`, so an entry module
can import its siblings relatively (`from . import texts`). A folder whose manifest is missing or
invalid, whose entry module cannot be imported, has no `setup`, or whose `setup` raises, or that
registers a command another one already has, is logged as `plugin_skipped` with its path and the
reason, and nothing it registered takes effect; the bot keeps running with the others.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import inspect
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import structlog

from nahida.commands.router import CommandRouter
from nahida.hooks import PostTurnHook
from nahida.memory import MemoryService
from nahida.plugins.context import PluginContext
from nahida.plugins.manifest import Manifest, PluginError, read_manifest

log = structlog.get_logger(__name__)

PACKAGE_PREFIX = "nahida_plugin_"
ContextFactory = Callable[[Manifest, Path], PluginContext]


@dataclass(frozen=True, slots=True)
class LoadedPlugin:
    manifest: Manifest
    path: Path
    commands: tuple[str, ...]
    hooks: tuple[PostTurnHook, ...]

    @property
    def name(self) -> str:
        return self.manifest.name


def context_factory(memory: MemoryService, router: CommandRouter) -> ContextFactory:
    """The usual factory: every plugin shares the app's memory service and command router."""

    def build(manifest: Manifest, path: Path) -> PluginContext:
        return PluginContext(manifest, path, memory=memory, router=router)

    return build


def _forget_modules(package: str) -> None:
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]


def import_entry(folder: Path, manifest: Manifest) -> ModuleType:
    """Import the entry module of a plugin folder as `nahida_plugin_<name>.<entry>`."""
    entry = manifest.entry
    if not (folder / f"{entry}.py").is_file() and not (folder / entry / "__init__.py").is_file():
        raise PluginError(folder, f"entry module {entry!r} not found ({entry}.py)")
    package = PACKAGE_PREFIX + manifest.name
    _forget_modules(package)  # a reload, or another folder that had this name before
    spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
    spec.submodule_search_locations = [str(folder)]
    sys.modules[package] = importlib.util.module_from_spec(spec)
    importlib.invalidate_caches()
    try:
        return importlib.import_module(f"{package}.{entry}")
    except Exception as exc:
        _forget_modules(package)
        raise PluginError(
            folder, f"importing {entry}.py failed: {type(exc).__name__}: {exc}"
        ) from exc


def load_plugin(folder: Path, manifest: Manifest, ctx_factory: ContextFactory) -> LoadedPlugin:
    """Import, set up and activate one plugin; raises `PluginError` leaving nothing behind."""
    module = import_entry(folder, manifest)
    try:
        setup = getattr(module, "setup", None)
        if not callable(setup):
            raise PluginError(folder, f"{manifest.entry}.py has no setup(ctx) function")
        ctx = ctx_factory(manifest, folder)
        try:
            result = setup(ctx)
        except Exception as exc:
            raise PluginError(folder, f"setup() raised {type(exc).__name__}: {exc}") from exc
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise PluginError(folder, "setup(ctx) must be a plain function, not async")
        commands, hooks = ctx.activate()
    except PluginError:
        _forget_modules(PACKAGE_PREFIX + manifest.name)
        raise
    return LoadedPlugin(manifest, folder, commands, hooks)


def load_plugins(
    folder: Path,
    ctx_factory: ContextFactory,
    *,
    enabled: Collection[str] | None = None,
    disabled: Collection[str] = (),
) -> list[LoadedPlugin]:
    """Every plugin folder under `folder`, in name order; `enabled` (None: all) minus `disabled`."""
    if not folder.is_dir():
        return []
    loaded: list[LoadedPlugin] = []
    names: set[str] = set()
    for path in sorted(p for p in folder.iterdir() if p.is_dir()):
        if path.name.startswith((".", "_")):
            continue
        try:
            manifest = read_manifest(path)
            if manifest.name in disabled or (enabled is not None and manifest.name not in enabled):
                log.info("plugin_disabled", plugin=manifest.name, path=str(path))
                continue
            if manifest.name in names:
                raise PluginError(path, f"another plugin is already named {manifest.name!r}")
            plugin = load_plugin(path, manifest, ctx_factory)
        except PluginError as exc:
            log.warning("plugin_skipped", path=str(exc.path), error=exc.reason)
            continue
        names.add(plugin.name)
        loaded.append(plugin)
        log.info(
            "plugin_loaded",
            plugin=plugin.name,
            version=plugin.manifest.version,
            commands=list(plugin.commands),
            permissions=list(plugin.manifest.permissions),
        )
    return loaded
