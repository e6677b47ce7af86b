"""The core never imports a concrete adapter or provider; only app.py wires them (DESIGN §1)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "nahida"
CORE = ["envelope.py", "bus.py", "runner.py", "history.py", "context.py", "tools.py", "hooks.py"]
CORE_DIRS = ["memory", "commands"]
ALLOWED = {"nahida.adapters.base", "nahida.providers.base", "nahida.providers.router"}
FORBIDDEN_PREFIXES = ("nahida.adapters", "nahida.providers", "nahida.app", "nahida.cli")


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def core_files() -> list[Path]:
    files = [PACKAGE / name for name in CORE]
    for folder in CORE_DIRS:
        files.extend(sorted((PACKAGE / folder).rglob("*.py")))
    return files


def violations(path: Path) -> list[str]:
    return [
        name
        for name in imports_of(path)
        if name.startswith(FORBIDDEN_PREFIXES) and name not in ALLOWED
    ]


def test_core_imports_only_interfaces() -> None:
    found = {str(p.relative_to(PACKAGE)): violations(p) for p in core_files()}
    assert {k: v for k, v in found.items() if v} == {}


def test_adapters_never_import_memory_or_providers() -> None:
    bad = {}
    for path in (PACKAGE / "adapters").rglob("*.py"):
        names = [
            n
            for n in imports_of(path)
            if n.startswith(("nahida.memory", "nahida.providers", "nahida.runner"))
        ]
        if names:
            bad[str(path.relative_to(PACKAGE))] = names
    assert bad == {}


def test_the_check_can_fail(tmp_path: Path) -> None:
    sneaky = tmp_path / "runner.py"
    sneaky.write_text("from nahida.providers.openai import OpenAIProvider\n", encoding="utf-8")
    assert violations(sneaky) == ["nahida.providers.openai"]
