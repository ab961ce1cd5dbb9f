"""getStats: distinct-profile counts; tests never count; notified/emailed only from delivery fields."""

from __future__ import annotations

from datetime import UTC, datetime

from campaign_engine.campaigns import definitions
from campaign_engine.config import Settings
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, error_code, ok

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_stats_count_distinct_profiles(base_settings: Settings, graph: Graph) -> None:
    for pid in ("u1", "u2", "u3", ADMIN_ID):
        graph.run("CREATE (:Profile {profileId: $p, isManaged: false})", p=pid)
    data = {"id": "c1", "name": "S", "channels": ["inApp"], "message": {"title": "t"}, "discoverable": True}
    definitions.create_campaign(graph, data=CampaignCreate.model_validate(data), tenant_id="default", now=NOW)
    definitions.set_status(graph, campaign_id="c1", status="live", now=NOW)
    with api_client(base_settings, graph, clock=lambda: NOW) as api:

        def stats() -> dict[str, int]:
            return dict(ok(api.query("campaigns.getStats", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True)))

        zero = {
            "audience": 0,
            "enrolled": 0,
            "shown": 0,
            "clicked": 0,
            "dismissed": 0,
            "notified": 0,
            "emailed": 0,
            "bounced": 0,
            "complained": 0,
            "capped": 0,
            "emailClicked": 0,
            "unsubscribed": 0,
            "variants": {},  # no A/B variants
            "guardians": {"notified": 0, "emailed": 0},  # nobody routed to guardians
        }
        assert stats() == zero
        ok(
            api.mutate(
                "campaigns.addAudience",
                {"campaignId": "c1", "source": {"type": "profileIds", "profileIds": ["u1", "u2"]}},
                as_=ADMIN_ID,
                admin=True,
            )
        )
        ok(api.mutate("campaigns.enroll", {"campaignId": "c1"}, as_="u3"))
        for _ in range(3):
            ok(api.mutate("campaigns.recordEvent", {"campaignId": "c1", "event": "shown"}, as_="u1"))
        ok(api.mutate("campaigns.recordEvent", {"campaignId": "c1", "event": "shown"}, as_="u3"))
        ok(api.mutate("campaigns.recordEvent", {"campaignId": "c1", "event": "clicked"}, as_="u3"))
        # A self-test and its acknowledgement never count.
        test_id = ok(api.mutate("campaigns.sendTestToMe", {"campaignId": "c1"}, as_=ADMIN_ID, admin=True))[
            "testId"
        ]
        ok(
            api.mutate(
                "campaigns.recordEvent",
                {"campaignId": "c1", "event": "shown", "testId": test_id},
                as_=ADMIN_ID,
                admin=True,
            )
        )
        # Delivery workers write these; stats count distinct profiles carrying them.
        graph.run(
            "MATCH (p:Profile {profileId: 'u2'}), (c:Campaign {id: 'c1'}) "
            "MERGE (p)-[s:CAMPAIGN_STATE]->(c) SET s.notifiedAt = 'x', s.emailedAt = 'y'"
        )
        assert stats() == {
            "audience": 3,
            "enrolled": 1,
            "shown": 2,
            "clicked": 1,
            "dismissed": 0,
            "notified": 1,
            "emailed": 1,
            "bounced": 0,
            "complained": 0,
            "capped": 0,
            "emailClicked": 0,
            "unsubscribed": 0,
            "variants": {},
            "guardians": {"notified": 0, "emailed": 0},
        }
        assert error_code(api.query("campaigns.getStats", {"campaignId": "c1"}, as_="u1")) == "FORBIDDEN"
        assert error_code(
            api.query("campaigns.getStats", {"campaignId": "zz"}, as_=ADMIN_ID, admin=True)
        ) == ("NOT_FOUND")


def test_clients_cannot_write_delivery_fields(base_settings: Settings, graph: Graph) -> None:
    with api_client(base_settings, graph, clock=lambda: NOW) as api:
        response = api.mutate("campaigns.recordEvent", {"campaignId": "c1", "event": "notified"}, as_="u1")
        assert error_code(response) == "BAD_REQUEST"
        response = api.mutate(
            "campaigns.recordEvent", {"campaignId": "c1", "event": "shown", "notifiedAt": "x"}, as_="u1"
        )
        assert error_code(response) == "BAD_REQUEST"
