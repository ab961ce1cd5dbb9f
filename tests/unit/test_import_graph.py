"""The package's import graph: each package imports only its own modules and layers below its own.

Layers, lowest first (docs/architecture.md, "Layers"). ``domain`` imports nothing of ours; ``config`` only
domain leaves; ``graph``, ``queue`` and ``egress`` are the base adapters (the database, the queue port and
its two backends, the one safe HTTP client); ``unsubscribe`` and ``did`` sit on them; the use
cases ``campaigns``, ``delivery`` and ``feedback`` and the reference receiver ``inbox`` (which verifies
a LearnCard sender's bearer with ``did``) share a layer and therefore never import each other;
``wiring`` is the composition root above them that every edge builds through; ``api`` is the HTTP edge;
``aws`` (Lambda handlers), ``dev_stack`` and ``watch`` start or call it; ``cli`` starts them all. There
are no sideways imports at all, and no cycles. Every import counts, including the lazy ones inside
functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "campaign_engine"

LAYERS = {
    "domain": 0,
    "observability": 0,  # logs and metrics: third-party plumbing every layer may use
    "config": 1,
    "graph": 2,
    "queue": 2,
    "egress": 2,
    "unsubscribe": 3,
    "did": 3,  # DID resolution and EdDSA JWTs: did:web documents come through egress
    "campaigns": 4,
    "delivery": 4,
    "feedback": 4,
    "inbox": 4,  # the reference receiver: verifies a LearnCard sender's DID-auth bearer with did
    "wiring": 5,
    "api": 6,
    "aws": 7,
    "dev_stack": 7,  # `campaign-engine dev`: the cli edge's process orchestration, moved out of cli.py
    "watch": 7,  # `campaign-engine dispatch watch`: a client of the public API, part of the cli edge
    "cli": 8,
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


def _top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_no_module_imports_its_own_layer_or_one_above() -> None:
    """Upward and sideways alike: a use case that imports another (``delivery`` building ``campaigns``'
    sweep, ``campaigns`` reaching into ``delivery`` for the queue port) is what the composition root and
    the base layer are for."""
    crossing = [
        f"{module} -> {target}"
        for module, targets in _modules().items()
        for target in targets
        if _top(module) != _top(target) and (_layer(module) or 0) <= (_layer(target) or 0)
    ]
    assert crossing == []


def test_delivery_imports_nothing_above_it() -> None:
    """The issue-22 front door, said plainly: delivery builds no use case and no edge."""
    above = {"campaigns", "feedback", "wiring", "api", "aws", "cli", "dev_stack", "watch"}
    reaching = sorted(
        f"{module} -> {target}"
        for module, targets in _modules().items()
        if _top(module) == "delivery"
        for target in targets
        if _top(target) in above
    )
    assert reaching == []


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


ROOMS = ("sending", "audience", "engagement", "profiles", "tenants")
"""``campaigns``' rooms: each owns one part of the use cases and never imports another; what two rooms
share sits at the top of ``campaigns`` (definitions, deletion) or in a layer below."""


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "campaigns" and parts[2] in ROOMS else None


def _imported_rooms() -> dict[str, set[str]]:
    """Module -> the rooms it names, counting ``from campaign_engine.campaigns import <room>`` too
    (``_modules`` records that import as the ``campaigns`` package itself)."""
    rooms: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts).removesuffix(".__init__")
        named: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module]
                if node.module == "campaign_engine.campaigns":
                    targets += [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            named |= {room for room in map(_room, targets) if room is not None}
        rooms[name] = named
    return rooms


def test_no_room_of_campaigns_imports_another() -> None:
    """A room reaching into another (engagement reading sending's dispatch, audience calling
    engagement's cards) ties two owners' code together; lazy imports inside functions count too."""
    crossing = sorted(
        f"{module} -> campaigns.{room}"
        for module, rooms in _imported_rooms().items()
        if _room(module) is not None
        for room in rooms
        if room != _room(module)
    )
    assert crossing == []
