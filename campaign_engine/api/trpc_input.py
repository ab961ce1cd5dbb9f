"""The input of each call of one tRPC request: where it sits on the wire, parsed by one strict parser.

A query's input is the ``input`` query parameter, a mutation's the JSON body; a batch holds one per call
under ``"0"``, ``"1"``, ... The body is read incrementally and refused past ``MAX_BODY_BYTES``. Every
malformed input is one ``RequestError`` (PARSE_ERROR and friends) for the whole request, never an
exception escaping the adapter. A call's input sent as a JSON string holding it is ``unwrapped`` once.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json
from starlette.requests import ClientDisconnect, Request

from campaign_engine.domain.errors import BadRequest, TrpcCode

__all__ = ["MAX_BODY_BYTES", "NO_INPUT", "RequestError", "request_inputs", "unwrapped"]

NO_INPUT = object()
MAX_BODY_BYTES = 8 * 1024 * 1024  # a full profiles.upsert batch fits with room to spare


class RequestError(Exception):
    """A failure of the whole HTTP request (bad JSON, wrong content type), before any procedure runs."""

    def __init__(self, code: TrpcCode, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


async def request_inputs(request: Request, *, batch: bool, count: int) -> list[Any]:
    text: str | bytes | None
    if request.method == "GET":
        text = request.query_params.get("input")
    else:
        body = await read_body(request)
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if body and content_type != "application/json":
            raise RequestError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json")
        text = body or None
    if not text:
        return [NO_INPUT] * count
    try:
        # Every refusal is a ValueError: bad syntax or UTF-8, depth > 200, > 4,300 digits, NaN.
        value = from_json(text, allow_inf_nan=False)
    except ValueError as exc:
        raise RequestError("PARSE_ERROR", "Input is not valid JSON") from exc
    if not batch:
        return [value]
    if not isinstance(value, dict):
        raise RequestError("BAD_REQUEST", 'Batch input must be an object like {"0": ...}')
    return [value.get(str(index), NO_INPUT) for index in range(count)]


async def read_body(request: Request) -> bytes:
    """The request body, refused once it exceeds ``MAX_BODY_BYTES`` (read incrementally, never whole)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise RequestError("PAYLOAD_TOO_LARGE", f"Request body exceeds {MAX_BODY_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise RequestError("PAYLOAD_TOO_LARGE", f"Request body exceeds {MAX_BODY_BYTES} bytes")
            chunks.append(chunk)
    except ClientDisconnect as exc:  # nobody reads the answer; not a bug worth a traceback
        raise RequestError("BAD_REQUEST", "The request body ended early") from exc
    return b"".join(chunks)


def unwrapped(raw: Any) -> Any:
    """An input sent as a JSON string holding the value (LearnCard's input transformer stringifies every
    input) is that value; no input is a string, so a string is always such a wrapping. Unwrapped once,
    then validated like any other input; a string that is not JSON is BAD_REQUEST."""
    if not isinstance(raw, str):
        return raw
    try:
        return from_json(raw, allow_inf_nan=False)
    except ValueError as exc:
        raise BadRequest("Input is a string that does not hold JSON") from exc
