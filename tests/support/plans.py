"""Reading EXPLAIN plans in tests: the operators a hot statement compiles to."""

from __future__ import annotations

from typing import Any

__all__ = ["operators"]


def operators(plan: dict[str, Any]) -> list[str]:
    """Every operator of ``plan``, depth first, without the ``@database`` suffix."""
    return [str(plan["operatorType"]).split("@")[0]] + [
        op for child in plan.get("children", []) for op in operators(child)
    ]
