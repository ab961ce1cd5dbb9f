"""What the end-to-end unsubscribe tests share: the secret and a profile's unsubscribe id, a clock one
second per call, profiles written and read straight in the graph, and the checks every answer passes
(headers, the HTML page, no profile data)."""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from campaign_engine.graph.graph import Graph
from tests.support.api import TrpcClient

SECRET = "integration-unsubscribe-secret-0123456789abcdef"
UID = "6c1f1c1e-2b7d-4c55-9d0e-7f1d2a3b4c5d"
ONE_CLICK = {"content-type": "application/x-www-form-urlencoded"}
ONE_CLICK_BODY = "List-Unsubscribe=One-Click"


class SteppingClock:
    """Each call is one second after the previous one."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def _profile(graph: Graph, profile_id: str = "p1", unsubscribe_id: str | None = UID, **props: Any) -> None:
    graph.run(
        "CREATE (p:Profile {profileId: $pid, did: $did, announcementEmailOptOut: false,"
        " announcementPushOptOut: false}) SET p += $props"
        " WITH p CREATE (p)-[:HAS_CONTACT_METHOD]->(:ContactMethod {type: 'email', value: $email,"
        " isVerified: true, isPrimary: true})",
        pid=profile_id,
        did=f"did:plc:{profile_id}-secret-did",
        email=f"{profile_id}.private@example.org",
        props={**props, **({"campaignUnsubscribeId": unsubscribe_id} if unsubscribe_id else {})},
    )


def _state(graph: Graph, profile_id: str = "p1") -> dict[str, Any]:
    rows = graph.run(
        "MATCH (p:Profile {profileId: $pid}) RETURN p.announcementEmailOptOut AS optOut,"
        " p.announcementEmailOptOutAt AS at, p.announcementPushOptOut AS push,"
        " p.campaignStateLock AS lock, p.campaignUnsubscribeId AS uid",
        pid=profile_id,
    )
    assert len(rows) == 1
    return rows[0]


def _no_profile_data(text: str, graph_profile_id: str = "p1") -> None:
    for secret in (graph_profile_id, UID, "secret-did", "private@example.org", "example.org"):
        assert secret not in text


def _assert_headers(response: Any) -> None:
    h = response.headers
    assert h["cache-control"] == "no-store"
    assert h["referrer-policy"] == "no-referrer"
    assert h["x-content-type-options"] == "nosniff"
    assert "set-cookie" not in h
    assert "location" not in h
    directives = {
        d.split()[0]: d.split()[1:] for d in (p.strip() for p in h["content-security-policy"].split(";"))
    }
    assert directives["default-src"] == ["'none'"]
    assert directives["form-action"] == ["'self'"]
    assert directives["frame-ancestors"] == ["'none'"]
    assert directives["base-uri"] == ["'none'"]
    assert len(directives["style-src"]) == 1
    assert directives["style-src"][0].startswith("'sha256-")
    assert not {"script-src", "img-src", "connect-src"} & set(directives)


def _assert_html_page(response: Any) -> None:
    """A self-contained page whose only inline style is the one the CSP hash allows."""
    _assert_headers(response)
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    styles = re.findall(r"<style>(.*?)</style>", html, flags=re.DOTALL)
    assert len(styles) == 1
    digest = base64.b64encode(hashlib.sha256(styles[0].encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in response.headers["content-security-policy"]
    lowered = html.lower()
    for forbidden in (
        "<script",
        "<img",
        "<link",
        "<iframe",
        "http://",
        "https://",
        "style=",
        "onclick",
        "src=",
    ):
        assert forbidden not in lowered


def _one_click(api: TrpcClient, token: str, **kwargs: Any) -> Any:
    kwargs.setdefault("content", ONE_CLICK_BODY)
    kwargs.setdefault("headers", ONE_CLICK)
    return api.http.post("/campaigns/unsubscribe", params={"token": token}, **kwargs)
