"""The dependency rules of DESIGN §13, as one table, and what the memory facade exports; each
check also proves that it can fail.

Imports are read from the syntax tree (also those under `if TYPE_CHECKING:` and inside
functions): a rule is about what a module knows, not only what it loads at start.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple, Protocol

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "nahida"

# Backends, each with the package whose modules may import it besides the composition root.
CONCRETE = {
    "nahida.adapters.console": "nahida.adapters.console",
    "nahida.adapters.lark": "nahida.adapters.lark",
    "nahida.adapters.onebot": "nahida.adapters.onebot",
    "nahida.providers.anthropic": "nahida.providers",
    "nahida.providers.client": "nahida.providers",
    "nahida.providers.echo": "nahida.providers",
    "nahida.providers.openai": "nahida.providers",
    "nahida.memory.store.reference": "nahida.memory.store.reference",
    "nahida.memory.store.sqlite": "nahida.memory.store.sqlite",
    "nahida.memory.store.postgres": "nahida.memory.store.postgres",
}
THE_TURN = (  # what memory outside memory/turn/ never knows
    "nahida.runner",
    "nahida.bus",
    "nahida.hooks",
    "nahida.prompt",
    "nahida.tools",
    "nahida.commands",
    "nahida.adapters",
    "nahida.console",
)
SQL = re.compile(  # statement text, written the way this project writes SQL (keywords upper case)
    r"^\s*(SELECT\s.+\sFROM\s|SELECT\s+\d|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s"
    r"|CREATE\s+(TABLE|INDEX|UNIQUE|VIRTUAL|TRIGGER)\s|DROP\s+(TABLE|INDEX)\s|ALTER\s+TABLE\s"
    r"|PRAGMA\s|BEGIN\b|COMMIT\b|ROLLBACK\b|SAVEPOINT\s|RELEASE\s)",
    re.DOTALL,
)
SQL_CALLS = {"execute", "executemany", "executescript"}


def within(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def own_package(module: str) -> str:
    """`nahida.adapters.onebot.events` → `nahida.adapters.onebot`."""
    parts = module.split(".")
    return ".".join(parts[:3])


@dataclass(frozen=True)
class Rule:
    text: str
    applies: Callable[[str], bool]  # to the importing module
    allows: Callable[[str, str], bool]  # (importer, imported)
    breaking: tuple[str, str]  # a module and a source line that break the rule


def _adapter_imports(module: str, imported: str) -> bool:
    if not within(imported, "nahida"):
        return True
    allowed = (
        "nahida.envelope",
        "nahida.errors",
        "nahida.config",
        "nahida.clock",
        "nahida.adapters.base",
    )
    return within(imported, *allowed) or within(imported, own_package(module))


def _console_imports(module: str, imported: str) -> bool:
    if not within(imported, "nahida"):
        return True
    allowed = (
        "nahida.console",
        "nahida.config",
        "nahida.clock",
        "nahida.errors",
        "nahida.envelope",
        "nahida.i18n",
        "nahida.logs",
        "nahida.ratelimit",
    )
    return imported in ("nahida", "nahida.memory") or within(imported, *allowed)


def _outside_memory(module: str, imported: str) -> bool:
    if module == "nahida.logs":  # it screens log lines for secrets, before the facade exists
        return imported == "nahida.memory.core.safety" or not within(imported, "nahida.memory")
    wired = ("nahida.memory.turn", "nahida.memory.jobs", "nahida.memory.store.copier")
    if module == "nahida.app" and within(imported, *wired):
        return True  # the composition root wires memory into the turn and the scheduler, and
        # copies one store it opened into another
    return imported == "nahida.memory" or not within(imported, "nahida.memory")


def _store_imports(module: str, imported: str) -> bool:
    if not within(imported, "nahida"):
        return True
    leaves = ("nahida.errors", "nahida.envelope", "nahida.clock")
    return (
        imported == "nahida"  # the version, which a backup records
        or within(imported, "nahida.memory.core", "nahida.memory.store", *leaves)
    )


def _backend(module: str, imported: str) -> bool:
    for backend, family in CONCRETE.items():
        if within(imported, backend):
            return within(module, family, "nahida.app")
    return True


RULES = (
    Rule(
        "adapters import only envelope, errors, config, clock and their own package",
        lambda m: within(m, "nahida.adapters"),
        _adapter_imports,
        ("nahida.adapters.onebot.events", "from nahida.memory import MemoryService"),
    ),
    Rule(
        "core and memory import only providers/base.py of the providers",
        lambda m: not within(m, "nahida.app", "nahida.cli", "nahida.providers"),
        lambda m, i: not within(i, "nahida.providers") or i == "nahida.providers.base",
        ("nahida.runner", "from nahida.providers.router import ModelRouter"),
    ),
    Rule(
        "memory outside memory/turn/ never imports the runner, bus, hooks, prompt, tools,"
        " commands or adapters",
        lambda m: within(m, "nahida.memory") and not within(m, "nahida.memory.turn"),
        lambda m, i: not within(i, *THE_TURN),
        ("nahida.memory.recall.pack", "from nahida.prompt import estimate_tokens"),
    ),
    Rule(
        "everything outside memory/ imports only nahida.memory (app.py also memory.turn,"
        " memory.jobs and the store copier; logs.py the secret screen)",
        lambda m: within(m, "nahida") and not within(m, "nahida.memory"),
        _outside_memory,
        ("nahida.commands.session", "from nahida.memory.history.sessions import Sessions"),
    ),
    Rule(
        "the store imports only memory/core (and the errors, envelope and clock leaves)",
        lambda m: within(m, "nahida.memory.store"),
        _store_imports,
        ("nahida.memory.store.sqlite.migrations", "from nahida.memory.history import sessions"),
    ),
    Rule(
        "logs.py imports the secret screen, a leaf, not the memory facade",
        lambda m: m == "nahida.logs",
        lambda m, i: i == "nahida.memory.core.safety" or not within(i, "nahida.memory"),
        ("nahida.logs", "from nahida.memory import SecretRefused"),
    ),
    Rule(
        "the console imports the memory facade and the leaves (config, clock, errors, envelope,"
        " i18n, logs, ratelimit), never the app, the CLI, the turn or a backend",
        lambda m: within(m, "nahida.console"),
        _console_imports,
        ("nahida.console.settings", "from nahida.cli.doctor import diagnose"),
    ),
    Rule(
        "only app.py imports concrete backends",
        lambda m: True,
        _backend,
        ("nahida.cli.main", "from nahida.adapters.console.adapter import ConsoleAdapter"),
    ),
)


FACADE = ("MemoryService", "open_memory")  # what else `nahida.memory` exports is a value


def not_values(facade: object) -> list[str]:
    """What a facade's `__all__` names besides `FACADE` that is not a value type (a dataclass, a
    named tuple, an error, a protocol) or a value (a constant, a type alias): a module, a function,
    a class with behaviour. A helper is a method of the facade's parts or of a value type."""
    found = []
    for name in getattr(facade, "__all__", ()):
        value = getattr(facade, name)
        if name in FACADE:
            continue
        if inspect.isclass(value):
            typed = issubclass(value, tuple | BaseException) or dataclasses.is_dataclass(value)
            if not (typed or getattr(value, "_is_protocol", False)):
                found.append(name)
        elif inspect.ismodule(value) or inspect.isroutine(value):
            found.append(name)
    return found


def imports_of(tree: ast.AST) -> Iterator[str]:
    """Every module an import names (the project uses absolute imports only)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import"
            yield node.module or ""


def import_violations(module: str, source: str) -> list[str]:
    tree = ast.parse(source)
    found = []
    for rule in RULES:
        if not rule.applies(module):
            continue
        bad = [name for name in imports_of(tree) if not rule.allows(module, name)]
        found += [f"{rule.text}: {name}" for name in bad]
    return found


def sql_violations(module: str, source: str) -> list[str]:
    """SQL (a statement string, or a DB-API execute call) outside `memory/store/`."""
    if within(module, "nahida.memory.store"):
        return []
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value):
            found.append(f"SQL text: {node.value[:40]!r}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_CALLS
        ):
            found.append(f"SQL call: .{node.func.attr}()")
    return found


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module → the modules it imports, among `sources`: `from X import Y` names X.Y when that is
    a module, else X (imports inside functions and under `if TYPE_CHECKING:` count too)."""
    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        edges = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in sources)
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    named = f"{node.module}.{alias.name}"
                    if named in sources:
                        edges.add(named)
                    elif node.module in sources:
                        edges.add(node.module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, or one importing itself
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph.get(node, ()):
                        found.append(sorted(component))
    return found


def modules() -> Iterator[tuple[str, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path.read_text(encoding="utf-8")


def test_the_tree_keeps_every_import_rule() -> None:
    found = {m: v for m, source in modules() if (v := import_violations(m, source))}
    assert found == {}


def test_no_import_cycles() -> None:
    assert cycles(import_graph(dict(modules()))) == []


def test_the_cycle_check_can_fail() -> None:
    sources = {
        "nahida.a": "from nahida import b\n",  # a module named by `from X import Y`
        "nahida.b": "def f():\n    from nahida.c import g\n",  # inside a function
        "nahida.c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import nahida.a\n",
        "nahida.d": "from nahida.d import x\n",  # itself
        "nahida.e": "from nahida.a import b\n",  # into the cycle, not part of it
        "nahida": "",
    }
    assert cycles(import_graph(sources)) == [["nahida.a", "nahida.b", "nahida.c"], ["nahida.d"]]
    sources["nahida.c"] = ""
    assert cycles(import_graph(sources)) == [["nahida.d"]]


def test_sql_lives_only_in_the_store() -> None:
    found = {m: v for m, source in modules() if (v := sql_violations(m, source))}
    assert found == {}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.text[:40])
def test_each_import_rule_can_fail(rule: Rule) -> None:
    module, line = rule.breaking
    assert rule.applies(module)
    assert any(v.startswith(rule.text) for v in import_violations(module, line + "\n"))


def test_the_facade_exports_the_service_and_value_types_only() -> None:
    import nahida.memory as facade

    assert not_values(facade) == []
    assert set(FACADE) <= set(facade.__all__)


def test_the_facade_check_can_fail() -> None:
    @dataclass(frozen=True)
    class Value:
        text: str

    class Pair(NamedTuple):
        a: int
        b: int

    class Seam(Protocol):
        def read(self) -> str: ...

    class Parts:  # behaviour, not a value
        def __init__(self) -> None:
            self.store = None

    values = {"GLOBAL": "global", "Mode": Literal["a", "b"], "DEFAULT": Value("x")}
    kinds = {"Value": Value, "Pair": Pair, "Seam": Seam, "Refused": ValueError}
    helpers = {"redact": str.strip, "viewer_for": lambda chat: chat, "candidates": types}
    exported = {**values, **kinds, **helpers, "Parts": Parts, "open_memory": lambda: None}
    facade = types.SimpleNamespace(__all__=list(exported), **exported)
    assert not_values(facade) == ["redact", "viewer_for", "candidates", "Parts"]


def test_an_import_under_type_checking_counts() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from nahida.bus import X\n"
    assert import_violations("nahida.memory.write.write", source)


def test_the_sql_check_can_fail() -> None:
    assert sql_violations("nahida.runner", "conn.execute('UPDATE turns SET error = ?', ())\n")
    assert sql_violations("nahida.cli.memory", "QUERY = 'SELECT * FROM memory_items'\n")
    assert sql_violations("nahida.memory.store.sqlite.items", "q = 'SELECT 1'\n") == []


def test_the_tree_has_the_layout_of_design_13() -> None:
    """The packages and modules DESIGN §13 names for what exists today."""
    for path in (
        "app.py",
        "prompt.py",
        "scheduler.py",
        "cli/main.py",
        "cli/admin.py",
        "console/app.py",
        "console/auth.py",
        "console/security.py",
        "console/views.py",
        "console/api.py",
        "console/templates/base.html",
        "console/static/console.css",
        "console/static/console.js",
        "memory/__init__.py",
        "memory/service.py",
        "memory/core/models.py",
        "memory/core/scopes.py",
        "memory/core/access.py",
        "memory/core/kinds.py",
        "memory/core/tokenize.py",
        "memory/core/safety.py",
        "memory/write/candidates.py",
        "memory/write/write.py",
        "memory/write/statements.py",
        "memory/write/extract.py",
        "memory/write/timeparse.py",
        "memory/history/sessions.py",
        "memory/history/importer.py",
        "memory/history/working.py",
        "memory/history/compress.py",
        "memory/history/episodes.py",
        "memory/jobs.py",
        "memory/runs.py",
        "memory/recall/plan.py",
        "memory/recall/lexical.py",
        "memory/recall/fuse.py",
        "memory/recall/pack.py",
        "memory/turn/__init__.py",
        "memory/store/base.py",
        "memory/store/reference/store.py",
        "memory/store/sqlite/connection.py",
        "memory/store/sqlite/db.py",
        "memory/store/sqlite/migrations.py",
        "memory/store/sqlite/schema.py",
        "memory/store/sqlite/fts.py",
    ):
        assert (PACKAGE / path).is_file(), path
    for gone in ("db.py", "history.py", "history_import.py", "context.py", "cli.py", "doctor.py"):
        assert not (PACKAGE / gone).exists(), gone
    flat = {p.stem for p in (PACKAGE / "memory").glob("*.py")} - {"__init__"}
    layered = {
        p.stem
        for layer in ("core", "write", "history")
        for p in (PACKAGE / "memory" / layer).glob("*.py")
    }
    assert flat & layered == set(), "a module lives in one layer, not also at memory/'s top"
