"""An in-process API client for integration tests: the real app, real graph, tRPC wire format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph


@dataclass
class TrpcClient:
    http: TestClient
    settings: Settings

    def token(self, profile_id: str, scope: str = "") -> str:
        return mint_token(self.settings, profile_id=profile_id, scope=scope)

    def headers_for(self, profile_id: str | None, *, admin: bool = False) -> dict[str, str]:
        if profile_id is None:
            return {}
        return {"authorization": f"Bearer {self.token(profile_id, ADMIN_SCOPE if admin else '')}"}

    def query(self, path: str, data: Any = None, *, as_: str | None = None, admin: bool = False) -> Any:
        params = {} if data is None else {"input": json.dumps(data)}
        return self.http.get(f"/trpc/{path}", params=params, headers=self.headers_for(as_, admin=admin))

    def mutate(self, path: str, data: Any = None, *, as_: str | None = None, admin: bool = False) -> Any:
        return self.http.post(f"/trpc/{path}", json=data, headers=self.headers_for(as_, admin=admin))


def ok(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return response.json()["result"]["data"]


def error_code(response: Any) -> str:
    return str(response.json()["error"]["data"]["code"])


@contextmanager
def api_client(settings: Settings, graph: Graph, **kwargs: Any) -> Iterator[TrpcClient]:
    app = create_app(settings, graph=graph, **kwargs)
    with TestClient(app, raise_server_exceptions=False) as http:
        yield TrpcClient(http=http, settings=settings)
