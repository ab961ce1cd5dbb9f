"""make dev's stand-in app at its app origin (the API): ``/m/<campaignId>`` shows the campaign's in-app
message, escaped, under a policy with no script; outside local development the route does not exist."""

from __future__ import annotations

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, ok

CAMPAIGN = {
    "id": "trip",
    "name": "Trip",
    "channels": ["inApp"],
    "message": {
        "title": "Trip <b>on</b> Friday",
        "body": "Bring a packed lunch.\n\nWe leave at nine.",
        "actions": [
            {"label": "Details", "action": {"type": "externalLink", "url": "https://school.example/trip"}},
            {"label": "Not now", "style": "dismiss", "action": {"type": "dismiss"}},
        ],
    },
}


def test_the_stand_in_app_shows_the_message_a_link_opens_in_local_development_only(
    base_settings: Settings, graph: Graph
) -> None:
    local = base_settings.model_copy(update={"campaign_local_development": True})
    with api_client(local, graph) as api:
        ok(api.mutate("campaigns.create", CAMPAIGN, as_=ADMIN_ID, admin=True))
        page = api.http.get("/m/trip?utm_source=email&utm_campaign=trip")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "script-src" not in page.headers["content-security-policy"]  # default-src 'none': no script
        assert "<h1>Trip &lt;b&gt;on&lt;/b&gt; Friday</h1>" in page.text
        assert "<p>Bring a packed lunch.</p><p>We leave at nine.</p>" in page.text
        assert '<a href="https://school.example/trip">Details</a>' in page.text
        assert "<strong>Not now</strong> (closes it)" in page.text
        missing = api.http.get("/m/nothing-here")
        assert missing.status_code == 404 and "No such campaign" in missing.text
    elsewhere = base_settings.model_copy(update={"campaign_local_development": False})
    with api_client(elsewhere, graph) as api:
        assert api.http.get("/m/trip").status_code == 404
        assert "No such campaign" not in api.http.get("/m/trip").text
