"""The one error family. Each class names its tRPC code; ``api/errors.py`` maps codes to wire numbers.

Anything raised that is not a ``CampaignError`` is a bug and reaches clients only as a bare
INTERNAL_SERVER_ERROR, so messages here must be safe to show to the caller.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ValidationError

__all__ = [
    "BadRequest",
    "CampaignError",
    "Conflict",
    "Forbidden",
    "NotFound",
    "PayloadTooLarge",
    "ServiceUnavailable",
    "TooManyRequests",
    "TrpcCode",
    "Unauthorized",
    "UnsupportedMediaType",
    "bad_request_from",
    "validation_issues",
]

TrpcCode = Literal[
    "PARSE_ERROR",
    "BAD_REQUEST",
    "UNAUTHORIZED",
    "FORBIDDEN",
    "NOT_FOUND",
    "METHOD_NOT_SUPPORTED",
    "TIMEOUT",
    "CONFLICT",
    "PRECONDITION_FAILED",
    "PAYLOAD_TOO_LARGE",
    "UNSUPPORTED_MEDIA_TYPE",
    "UNPROCESSABLE_CONTENT",
    "TOO_MANY_REQUESTS",
    "INTERNAL_SERVER_ERROR",
    "NOT_IMPLEMENTED",
    "SERVICE_UNAVAILABLE",
]


class CampaignError(Exception):
    """Base of every error a caller may see. ``issues`` carries field-level details for BAD_REQUEST;
    ``data``, what else a client acts on (an import cut short: what it committed), beside them."""

    code: ClassVar[TrpcCode] = "INTERNAL_SERVER_ERROR"

    def __init__(
        self, message: str, *, issues: list[dict[str, Any]] | None = None, data: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.issues = issues
        self.data = data


class BadRequest(CampaignError):
    code = "BAD_REQUEST"


def validation_issues(exc: ValidationError) -> list[dict[str, Any]]:
    """Field paths and messages only: input values are never echoed back."""
    return [
        {"path": list(err["loc"]), "message": err["msg"], "code": err["type"]}
        for err in exc.errors(include_url=False, include_input=False, include_context=False)
    ]


def bad_request_from(exc: ValidationError, message: str = "Invalid input") -> BadRequest:
    """Caller input that failed validation inside a use case (e.g. a patch merged into a definition)."""
    return BadRequest(message, issues=validation_issues(exc))


class Unauthorized(CampaignError):
    code = "UNAUTHORIZED"


class Forbidden(CampaignError):
    code = "FORBIDDEN"


class NotFound(CampaignError):
    code = "NOT_FOUND"


class Conflict(CampaignError):
    code = "CONFLICT"


class TooManyRequests(CampaignError):
    code = "TOO_MANY_REQUESTS"


class PayloadTooLarge(CampaignError):
    code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(CampaignError):
    code = "UNSUPPORTED_MEDIA_TYPE"


class ServiceUnavailable(CampaignError):
    """A dependency the call needs (the graph, the rate-limit store) is unreachable: fail closed."""

    code = "SERVICE_UNAVAILABLE"
