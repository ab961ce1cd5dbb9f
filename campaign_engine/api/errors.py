"""The only mapping from error codes to tRPC wire numbers and HTTP statuses (tRPC's own table)."""

from __future__ import annotations

from typing import Any

from campaign_engine.domain.errors import CampaignError, TrpcCode

__all__ = ["HTTP_STATUS", "JSON_RPC_CODES", "envelope_for", "error_envelope"]

JSON_RPC_CODES: dict[TrpcCode, int] = {
    "PARSE_ERROR": -32700,
    "BAD_REQUEST": -32600,
    "INTERNAL_SERVER_ERROR": -32603,
    "NOT_IMPLEMENTED": -32603,
    "SERVICE_UNAVAILABLE": -32603,
    "UNAUTHORIZED": -32001,
    "FORBIDDEN": -32003,
    "NOT_FOUND": -32004,
    "METHOD_NOT_SUPPORTED": -32005,
    "TIMEOUT": -32008,
    "CONFLICT": -32009,
    "PRECONDITION_FAILED": -32012,
    "PAYLOAD_TOO_LARGE": -32013,
    "UNSUPPORTED_MEDIA_TYPE": -32015,
    "UNPROCESSABLE_CONTENT": -32022,
    "TOO_MANY_REQUESTS": -32029,
}

HTTP_STATUS: dict[TrpcCode, int] = {
    "PARSE_ERROR": 400,
    "BAD_REQUEST": 400,
    "UNAUTHORIZED": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "METHOD_NOT_SUPPORTED": 405,
    "TIMEOUT": 408,
    "CONFLICT": 409,
    "PRECONDITION_FAILED": 412,
    "PAYLOAD_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "UNPROCESSABLE_CONTENT": 422,
    "TOO_MANY_REQUESTS": 429,
    "INTERNAL_SERVER_ERROR": 500,
    "NOT_IMPLEMENTED": 501,
    "SERVICE_UNAVAILABLE": 503,
}


def error_envelope(
    code: TrpcCode,
    message: str,
    *,
    path: str | None,
    issues: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
) -> tuple[int, dict[str, Any]]:
    status = HTTP_STATUS[code]
    data: dict[str, Any] = {**(extra or {}), "code": code, "httpStatus": status}
    if path is not None:
        data["path"] = path
    if issues is not None:
        data["issues"] = issues
    return status, {"error": {"message": message, "code": JSON_RPC_CODES[code], "data": data}}


def envelope_for(exc: BaseException, *, path: str | None) -> tuple[int, dict[str, Any]]:
    """Our errors keep their message; anything else becomes a generic INTERNAL_SERVER_ERROR."""
    if isinstance(exc, CampaignError):
        return error_envelope(exc.code, exc.message, path=path, issues=exc.issues, extra=exc.data)
    return error_envelope("INTERNAL_SERVER_ERROR", "Internal server error", path=path)
