"""The JSON Schema of every procedure, for the generated TypeScript client (``make client``).

One object: for each procedure path, its kind (``query``/``mutation``), its input as the adapter
validates it and its output as the adapter serializes it, with every model once under ``$defs``. An
input the adapter accepts absent is ``X | undefined`` and a procedure without input ``void``
(``tsType``, which json-schema-to-typescript writes as given), which is how tRPC's client makes the
argument optional. ``clients/typescript/scripts/generate.mjs`` turns it into ``src/procedures.ts``;
``tests/e2e/test_typescript_client.py`` regenerates it and fails when the committed file differs.

    python -m campaign_engine.api.client_schema > schema.json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from campaign_engine.api.trpc import Procedure

__all__ = ["client_schema"]

_REF = "#/$defs/{model}"


def _untitled(node: Any) -> Any:
    """``node`` as TypeScript can say it: without the titles pydantic gives every field (the generator
    would make each a type alias: ``Tenantid1``, ``Tenantid2``, ...; models keep theirs, as the
    ``$defs`` keys that name them), and without ``if``/``then`` rules between fields (a channel's copy
    required when the channel is chosen), which types cannot express and the API still enforces."""
    if isinstance(node, list):
        return [_untitled(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _untitled(value) for key, value in node.items() if key != "title"}
    if all(isinstance(rule, dict) and "if" in rule for rule in node.get("allOf", [None])):
        out.pop("allOf")
    if "properties" in node:
        out["properties"] = {name: _untitled(value) for name, value in node["properties"].items()}
    return out


def _schema(adapter: TypeAdapter[Any], defs: dict[str, Any], mode: str) -> dict[str, Any]:
    """A reference to the model under ``$defs`` (named by its title, plus ``Output`` where the output
    differs from the input of the same name), or the schema itself for anything else."""
    schema = adapter.json_schema(ref_template=_REF, mode=mode)  # type: ignore[arg-type]
    for name, definition in schema.pop("$defs", {}).items():
        defs[name] = _untitled(definition)
    title = schema.get("title")
    body: dict[str, Any] = _untitled(schema)
    if not isinstance(title, str) or schema.get("type") != "object":
        return body
    name = title if defs.get(title, body) == body else f"{title}{mode.title()}"
    defs[name] = body
    return {"$ref": _REF.format(model=name)}


def _accepts_no_input(model: type[BaseModel]) -> bool:
    try:
        model.model_validate({})
    except ValidationError:
        return False
    return True


def client_schema(procedures: Iterable[Procedure]) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    for proc in sorted(procedures, key=lambda p: p.path):
        if proc.input_model is None:
            input_schema: dict[str, Any] = {"tsType": "void"}
        else:
            input_schema = _schema(TypeAdapter(proc.input_model), defs, "validation")
            if _accepts_no_input(proc.input_model):
                input_schema = {"anyOf": [input_schema, {"tsType": "undefined"}]}
        properties[proc.path] = {
            "type": "object",
            "additionalProperties": False,
            "required": ["kind", "input", "output"],
            "properties": {
                "kind": {"const": proc.kind},
                "input": input_schema,
                "output": _schema(proc.output_adapter, defs, "serialization"),
            },
        }
    return {
        "title": "Procedures",
        "description": "Every procedure of the campaign-engine API: its kind, input and output.",
        "type": "object",
        "additionalProperties": False,
        "required": sorted(properties),
        "properties": properties,
        "$defs": dict(sorted(defs.items())),
    }


def main() -> None:
    from campaign_engine.api.app import ROUTERS

    procedures = [proc for router in ROUTERS for proc in router.procedures]
    json.dump(client_schema(procedures), sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
