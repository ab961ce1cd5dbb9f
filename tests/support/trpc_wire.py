"""What the tRPC wire-protocol tests share: a campaign to create, and the one error envelope they
assert (its shape, code, status and path)."""

from __future__ import annotations

from typing import Any

from tests.support.api import TrpcClient, ok

JSON = "application/json"
NEW_CAMPAIGN = {
    "id": "c1",
    "name": "Hello",
    "channels": ["notify"],
    "notification": {"title": "Title", "body": "Body"},
}


def _create(api: TrpcClient, admin: dict[str, str], campaign_id: str = "c1") -> dict[str, Any]:
    created: dict[str, Any] = ok(
        api.http.post("/trpc/campaigns.create", json={**NEW_CAMPAIGN, "id": campaign_id}, headers=admin)
    )
    return created


def _error(body: Any, code: str, status: int, path: str | None = None) -> dict[str, Any]:
    """Asserts one tRPC error envelope and returns its ``error`` object."""
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert set(error) == {"message", "code", "data"}, error
    assert isinstance(error["message"], str) and error["message"]
    assert error["data"]["code"] == code, error
    assert error["data"]["httpStatus"] == status, error
    if path is not None:
        assert error["data"]["path"] == path, error
    return error


def error_code_of(body: Any) -> str:
    return str(body["error"]["data"]["code"])
