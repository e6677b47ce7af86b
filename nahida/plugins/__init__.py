"""Plugins: folders under `plugins/` that add chat commands, post-turn hooks and memory use.

A plugin declares what it may do in its manifest (`manifest.py`), gets a `PluginContext` in its
`setup(ctx)` (`context.py`: commands, hooks, `memory_store`/`memory_search` behind permissions),
and is found and loaded by `load_plugins` (`loader.py`), which skips broken plugins with a report.
The app wires them:

    loaded = load_plugins(Path("plugins"), context_factory(memory, commands))
    hooks = [hook for plugin in loaded for hook in plugin.hooks]

Plugins import what they use from here: the context and call types, and the memory types that
cross the boundary (`Evidence`, `WriteResult`, `Hit`, `SecretRefused`).
"""

from nahida.memory import Evidence, Hit, SecretRefused, WriteResult
from nahida.plugins.context import (
    PluginCall,
    PluginContext,
    PluginHook,
    PluginPermissionError,
)
from nahida.plugins.loader import LoadedPlugin, context_factory, load_plugin, load_plugins
from nahida.plugins.manifest import Manifest, Permission, PluginError, read_manifest

__all__ = [
    "Evidence",
    "Hit",
    "LoadedPlugin",
    "Manifest",
    "Permission",
    "PluginCall",
    "PluginContext",
    "PluginError",
    "PluginHook",
    "PluginPermissionError",
    "SecretRefused",
    "WriteResult",
    "context_factory",
    "load_plugin",
    "load_plugins",
    "read_manifest",
]
