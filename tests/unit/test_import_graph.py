"""The package's import graph: no cycles, and no module imports a layer above its own.

Layers, lowest first (docs/architecture.md, "Layers"): ``domain`` and ``config`` import nothing of ours
but each other's leaves; ``graph`` sits on them; ``campaigns``, ``delivery``, ``unsubscribe``,
``feedback`` and ``inbox`` are the use cases and adapters; ``api``, ``aws`` and ``cli`` (with ``watch``
and ``dev_stack``) are the edges, each with its own composition root. Every import counts, including
the lazy ones inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "campaign_engine"

LAYERS = {
    "domain": 0,
    "config": 0,
    "observability": 0,  # logs and metrics: third-party plumbing every layer may use
    "graph": 1,
    "campaigns": 2,
    "delivery": 2,
    "unsubscribe": 2,
    "inbox": 2,
    "feedback": 2,
    "api": 3,
    "aws": 3,
    "cli": 3,
    "dev_stack": 3,  # `campaign-engine dev`: the cli edge's process orchestration, moved out of cli.py
    "watch": 3,  # `campaign-engine dispatch watch`: a client of the public API, part of the cli edge
}


def _modules() -> dict[str, set[str]]:
    """Module name -> the ``campaign_engine`` modules it imports."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts).removesuffix(".__init__")
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("campaign_engine"):
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names if a.name.startswith("campaign_engine")}
        graph[name] = imported
    return graph


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def test_every_package_has_a_layer() -> None:
    tops = {name.split(".")[1] for name in _modules() if name.count(".") >= 1}
    assert tops <= set(LAYERS), sorted(tops - set(LAYERS))


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in _modules().items()
        for target in targets
        if (_layer(module) or 0) < (_layer(target) or 0)
    ]
    assert upward == []


def test_the_import_graph_has_no_cycle() -> None:
    graph = _modules()
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in graph:
                continue
            if state.get(target) == 1:
                cycles.append(" -> ".join([*stack[stack.index(target) :], target]))
            elif not state.get(target):
                visit(target, stack)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if not state.get(module):
            visit(module, [])
    assert cycles == []
