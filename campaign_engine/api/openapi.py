"""OpenAPI 3.1 document generated from the procedure registry, in the exact tRPC wire shape.

One path per procedure: queries as GET with a JSON ``input`` query parameter, mutations as POST with
a JSON body; every success is ``{"result": {"data": <output>}}`` and every error the shared envelope.
The document promises exactly what the adapter does (``tests/e2e/test_api_fuzz.py`` holds it to that):
an input is required when its model refuses "no input", and otherwise may be absent or JSON ``null``,
which the adapter reads as no input.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from campaign_engine.api.errors import HTTP_STATUS, JSON_RPC_CODES
from campaign_engine.api.trpc import Procedure

__all__ = ["POST_QUERY_SUFFIX", "build_openapi"]

_REF = "#/components/schemas/{model}"
POST_QUERY_SUFFIX = ":post"  # the operationId of a query sent by POST: "<procedure>:post"

_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "code", "data"],
            "properties": {
                "message": {"type": "string"},
                "code": {"type": "integer", "enum": sorted(set(JSON_RPC_CODES.values()))},
                "data": {
                    "type": "object",
                    "required": ["code", "httpStatus"],
                    "properties": {
                        "code": {"type": "string", "enum": list(HTTP_STATUS)},
                        "httpStatus": {"type": "integer"},
                        "path": {"type": "string"},
                        "issues": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "path": {"type": "array", "items": {"type": ["string", "integer"]}},
                                    "message": {"type": "string"},
                                    "code": {"type": "string"},
                                },
                            },
                        },
                    },
                },
            },
        }
    },
}


def _schema(adapter: TypeAdapter[Any], components: dict[str, Any], mode: str) -> dict[str, Any]:
    schema = adapter.json_schema(ref_template=_REF, mode=mode)  # type: ignore[arg-type]
    components.update(schema.pop("$defs", {}))
    return schema


def _requires_input(model: type[BaseModel]) -> bool:
    """Whether the adapter refuses a call without input: it validates "no input" as ``{}``."""
    try:
        model.model_validate({})
    except ValidationError:
        return True
    return False


def _input(model: type[BaseModel], components: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """The input's JSON schema and whether it is required; an optional input may also be ``null``."""
    schema = _schema(TypeAdapter(model), components, "validation")
    if _requires_input(model):
        return True, schema
    return False, {"anyOf": [schema, {"type": "null"}]}


def build_openapi(procedures: Iterable[Procedure], *, title: str, version: str) -> dict[str, Any]:
    components: dict[str, Any] = {"TrpcError": _ERROR_SCHEMA}
    paths: dict[str, Any] = {}
    for proc in sorted(procedures, key=lambda p: p.path):
        success = {
            "type": "object",
            "required": ["result"],
            "properties": {
                "result": {
                    "type": "object",
                    "required": ["data"],
                    "properties": {"data": _schema(proc.output_adapter, components, "serialization")},
                }
            },
        }
        operation: dict[str, Any] = {
            "operationId": proc.path,
            "summary": proc.summary or proc.path,
            "tags": [proc.path.split(".")[0]],
            "responses": {
                "200": {"description": "Success", "content": {"application/json": {"schema": success}}},
                "default": {
                    "description": "tRPC error envelope",
                    "content": {"application/json": {"schema": {"$ref": _REF.format(model="TrpcError")}}},
                },
            },
        }
        if proc.access != "public":
            operation["security"] = [{"bearer": []}]
        operation["x-access"] = proc.access  # the role it needs (api/access.py)
        # A query is also answered by POST with its input as the body (tRPC's method override, which
        # LearnCard's client sends): the same procedure, documented as a second operation.
        posted = {**operation, "operationId": f"{proc.path}{POST_QUERY_SUFFIX}"}
        if proc.input_model is not None:
            required, input_schema = _input(proc.input_model, components)
            body = {"required": required, "content": {"application/json": {"schema": input_schema}}}
            posted["requestBody"] = body
            if proc.kind == "query":
                operation["parameters"] = [
                    {
                        "name": "input",
                        "in": "query",
                        "required": required,
                        "content": {"application/json": {"schema": input_schema}},
                    }
                ]
        paths[f"/trpc/{proc.path}"] = (
            {"get": operation, "post": posted}
            if proc.kind == "query"
            else {"post": {**posted, "operationId": proc.path}}
        )
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
        },
    }
