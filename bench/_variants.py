"""A/B content variants in the benches (a send with variants within 10% of a plain one).

``with_variants`` gives a campaign ``count`` arms: ``A`` the control (the campaign's own copy) and each
other arm its own email copy in every language the campaign has email in (the rule a variant's override
must meet), so the page walk renders once per (language, variant) and assigns every recipient an arm.
"""

from __future__ import annotations

from typing import Any

__all__ = ["with_variants"]


def _marked(copy: dict[str, Any], arm: str) -> dict[str, Any]:
    return {k: f"{v} ({arm})" if isinstance(v, str) and k != "heroImageUrl" else v for k, v in copy.items()}


def with_variants(definition: dict[str, Any], count: int) -> dict[str, Any]:
    """``definition`` with ``count`` equal-weight email variants (1: unchanged)."""
    if count == 1:
        return definition
    if not 2 <= count <= 4:
        raise ValueError("a campaign has 2 to 4 variants")
    arms: list[dict[str, Any]] = [{"id": "A"}]
    for arm in "BCD"[: count - 1]:
        variant: dict[str, Any] = {"id": arm, "email": _marked(definition["email"], arm)}
        translations = {
            tag: {"email": _marked(content["email"], arm)}
            for tag, content in (definition.get("translations") or {}).items()
            if "email" in content
        }
        if translations:
            variant["translations"] = translations
        arms.append(variant)
    return {**definition, "variants": arms}
