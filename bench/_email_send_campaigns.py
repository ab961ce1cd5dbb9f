"""``bench.email_send``'s graph: the email-eligible profiles every campaign draws from, a fresh campaign
per dispatch over profiles no campaign had, and the default tenant's click tracking."""

from __future__ import annotations

from datetime import UTC, datetime

from bench._languages import translated
from bench._variants import with_variants
from campaign_engine.campaigns import definitions
from campaign_engine.config import Settings
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.tenant import TenantPatch
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.tenant_directory import tenants_of
from campaign_engine.graph.tenants import settings_seed, update_tenant

CAMPAIGN = "bench-email"
JIT_SETTLED = 0.05  # warm-ups stop once Neo4j's JIT compiler took less than this share of the CPU
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def seed_profiles(graph: Graph, count: int) -> None:
    """``count`` email-eligible profiles, the population every bench campaign draws its members from."""
    while graph.run("MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS n")[0]["n"]:
        pass  # wiped in chunks: one huge delete would need a huge transaction
    # As upsert_profiles makes them: a profile gets its campaignUnsubscribeId at creation (and older
    # ones from the schema backfill), so a claim allocates none.
    for start in range(0, count, 5000):
        graph.run(
            """
            UNWIND $ids AS id
            CREATE (p:Profile {profileId: id, dob: '1990-01-01', isManaged: false, isServiceProfile: false,
                               announcementEmailOptOut: false, announcementPushOptOut: false,
                               campaignUnsubscribeId: randomUUID(), tenants: ['default']})
            CREATE (p)-[:HAS_CONTACT_METHOD]->(:ContactMethod {type: 'email', value: id + '@example.com',
                                                              isPrimary: true, isVerified: true})
            """,
            ids=[f"u{i:07d}" for i in range(start, min(start + 5000, count))],
        )


def new_campaign(
    graph: Graph, number: int, first: int, members: int, languages: int = 1, variants: int = 1
) -> str:
    """A live email campaign whose audience is ``members`` profiles from the ``first``. Every dispatch of
    the bench gets its own, over profiles no campaign had, on a graph that only grows: wiping and
    reseeding it before each dispatch swung every count Neo4j plans with from 0 to N, so it replanned and
    JIT-compiled its statements inside the measured run. (Profiles already in many campaigns cost more
    per claim: see docs/architecture.md §9, "A recipient's campaign history".)"""
    campaign_id = f"{CAMPAIGN}-{number}"
    definitions.create_campaign(
        graph,
        data=CampaignCreate.model_validate(
            with_variants(
                translated(
                    {
                        "id": campaign_id,
                        "name": f"Bench {number}",
                        "channels": ["email"],
                        "email": {
                            "subject": "Bench news",
                            "title": "Hello",
                            "body": "One\nTwo",
                            "ctaLabel": "Open",
                        },
                    },
                    languages,
                ),
                variants,
            )
        ),
        tenant_id="default",
        now=NOW,
    )
    definitions.set_status(graph, campaign_id=campaign_id, status="live", now=NOW)
    for start in range(first, first + members, 5000):
        graph.run(
            """
            MATCH (c:Campaign {id: $campaignId})
            UNWIND $ids AS id
            MATCH (p:Profile {profileId: id})
            CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: id,
                                               addedAt: '2026-01-01T00:00:00.000000Z', source: 'bench',
                                               selfEnrolled: false}]->(c)
            """,
            ids=[f"u{i:07d}" for i in range(start, min(start + 5000, first + members))],
            campaignId=campaign_id,
        )
    return campaign_id


class Campaigns:
    """Each dispatch's campaign, over the next profiles no campaign had yet."""

    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._made = 0
        self._next_profile = 0

    def new(self, members: int, languages: int = 1, variants: int = 1) -> str:
        self._made += 1
        first, self._next_profile = self._next_profile, self._next_profile + members
        return new_campaign(self._graph, self._made, first, members, languages, variants)


def set_click_tracking(graph: Graph, settings: Settings, *, on: bool) -> None:
    """The default tenant's ``clickTracking`` (its record seeded first: the bench wiped the graph)."""
    directory = tenants_of(graph, settings)
    directory.seed_now(settings_seed(settings))
    patch = TenantPatch.model_validate({"tenantId": settings.campaign_default_tenant_id, "clickTracking": on})
    update_tenant(graph, patch=patch, now=NOW, audit=None)
    directory.invalidate()
