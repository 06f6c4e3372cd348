"""The kernel's modules import each other without cycles, so each can be read (and
changed) knowing only what it imports.

Type-only imports (under ``TYPE_CHECKING``) and imports inside functions count, with no
exception: classes that name each other live in one module (``Tool``, ``ToolRuntime``
and ``Runtime`` in ``plait.tools``; ``ChatModel`` and its ``ModelCall`` effect in
``plait.models.base``), and a provider sees a tool through the ``ToolDefinition``
protocol, not the ``Tool`` class.
"""

from __future__ import annotations

import ast
import pathlib

import plait

CORE = pathlib.Path(plait.__file__).parent


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for path in CORE.rglob("*.py"):
        parts = ("plait", *path.relative_to(CORE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: pathlib.Path, known: set[str]) -> dict[str, bool]:
    """The kernel modules ``name`` imports, each mapped to whether only for typing."""
    edges: dict[str, bool] = {}

    def add(target: str, typing_only: bool) -> None:
        while target not in known and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in known and target not in (name, "plait"):
            edges[target] = edges.get(target, True) and typing_only

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, typing_only)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, typing_only)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
                for _ in range(node.level - 1):
                    package = package.rsplit(".", 1)[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:
                add(f"{base}.{alias.name}", typing_only)
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only)

    visit(ast.parse(path.read_text()), False)
    return edges


def _cycles(graph: dict[str, dict[str, bool]]) -> list[list[str]]:
    """Every elementary cycle, each listed once from its smallest module."""
    cycles: list[list[str]] = []

    def walk(start: str, node: str, path: list[str]) -> None:
        for nxt in graph[node]:
            if nxt == start:
                cycles.append(path)
            elif nxt > start and nxt not in path:
                walk(start, nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, start, [start])
    return cycles


def test_kernel_modules_import_each_other_without_cycles() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, set(modules)) for name, path in modules.items()}
    assert graph["plait.agent"] and graph["plait._loop"], "the graph was not read"
    cycles = [" -> ".join([*cycle, cycle[0]]) for cycle in _cycles(graph)]
    assert cycles == []


def test_the_run_depends_on_the_compiled_agent_not_on_the_agent() -> None:
    modules = _modules()
    for name in ("plait._loop", "plait._start", "plait._compiled", "plait._calls"):
        assert "plait.agent" not in _imports(name, modules[name], set(modules)), name


def test_a_type_only_cycle_is_found() -> None:
    graph = {"a": {"b": False}, "b": {"c": True}, "c": {"a": False}, "d": {"a": True}}
    assert _cycles(graph) == [["a", "b", "c"]]
