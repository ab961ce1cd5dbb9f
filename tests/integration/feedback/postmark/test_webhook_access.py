"""POST /webhooks/postmark against the real app and graph, replaying Postmark's documented record
shapes: the endpoint exists only when configured, weak credentials stop the app, wrong ones
change nothing, and hostile bodies are a clean 400."""

from __future__ import annotations

import base64

import pytest
from pydantic import SecretStr

from campaign_engine.api.app import create_app
from campaign_engine.config import ConfigError, Settings
from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient, api_client
from tests.support.hostile_json import HOSTILE_BODIES
from tests.support.postmark_feedback import (
    BOUNCE,
    PASSWORD,
    USER,
    post,
    suppressions,
)


def test_unconfigured_endpoints_do_not_exist(base_settings: Settings, graph: Graph) -> None:
    with api_client(base_settings, graph) as api:
        assert post(api, BOUNCE).status_code == 404
        assert api.http.post("/webhooks/ses", json={}).status_code == 404
    assert suppressions(graph) == {}


def test_half_or_weak_credentials_stop_the_app_at_start(base_settings: Settings, graph: Graph) -> None:
    for update in (
        {"postmark_webhook_username": USER},
        {"postmark_webhook_password": SecretStr(PASSWORD)},
        {"postmark_webhook_username": USER, "postmark_webhook_password": SecretStr("short")},
    ):
        with pytest.raises(ConfigError, match="POSTMARK_WEBHOOK"):
            create_app(base_settings.model_copy(update=update), graph=graph)


def test_wrong_or_missing_credentials_are_refused_and_change_nothing(api: TrpcClient, graph: Graph) -> None:
    for auth in (None, (USER, "wrong-password-0123456789"), ("someone", PASSWORD), (USER, PASSWORD + "x")):
        response = post(api, BOUNCE, auth=auth)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Basic")
    garbled = {"authorization": "Basic " + base64.b64encode(b"no-colon").decode()}
    assert api.http.post("/webhooks/postmark", json=BOUNCE, headers=garbled).status_code == 401
    assert (
        api.http.post("/webhooks/postmark", json=BOUNCE, headers={"authorization": "Basic %%%"}).status_code
        == 401
    )
    assert (
        graph.run("MATCH (n) WHERE n:EmailSuppression OR n:FeedbackRecord RETURN count(n) AS n")[0]["n"] == 0
    )


@pytest.mark.parametrize("body", HOSTILE_BODIES)
def test_hostile_bodies_are_a_clean_400(api: TrpcClient, graph: Graph, body: bytes) -> None:
    response = api.http.post(
        "/webhooks/postmark",
        content=body,
        auth=(USER, PASSWORD),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400, response.text
    assert graph.run("MATCH (n:FeedbackRecord) RETURN count(n) AS n")[0]["n"] == 0
