"""Helpers for the email tests: email-eligible members in the real graph, email settings, read-backs."""

from __future__ import annotations

import json
from typing import Any

from pydantic import SecretStr

from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.support.delivery import delivery_settings, make_campaign

UNSUBSCRIBE_SECRET = "test-unsubscribe-secret-0123456789abcdef"
ORIGINS = '{"default": "https://app.example", "t": "https://t.example"}'
EMAIL_COPY = {
    "subject": "Big news",
    "title": "Something happened",
    "body": "Line one\nLine <two>",
    "ctaLabel": "Open it",
}


def email_settings(base: Settings, postmark_url: str, token: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "campaign_email_provider": "postmark",
        "postmark_api_key": SecretStr(token),
        "postmark_api_url": postmark_url,
        "postmark_broadcast_stream": "broadcast",
        "campaign_unsubscribe_secret": SecretStr(UNSUBSCRIBE_SECRET),
        "campaign_app_origins": json.loads(ORIGINS),
        "email_from": "news@campaigns.test",
        "campaign_email_throttle_backoff_seconds": 0,
    }
    values.update(overrides)
    return delivery_settings(base, **values)


def make_email_campaign(graph: Graph, campaign_id: str = "c1", **extra: Any) -> str:
    extra.setdefault("channels", ["email"])
    extra.setdefault("email", EMAIL_COPY)
    return make_campaign(graph, campaign_id, **extra)


def address_of(profile_id: str) -> str:
    return f"{profile_id}@example.com"


def add_email_members(
    graph: Graph,
    campaign_id: str,
    profile_ids: list[str],
    *,
    dob: str | None = "1990-01-01",
    member: bool = True,
    emails: list[dict[str, Any]] | None = None,
    **props: Any,
) -> None:
    """Profiles with one valid primary verified address (``<id>@example.com``) unless ``emails`` says;
    1,000 per transaction, so a seed of thousands stays inside the graph's statement deadline."""
    if len(profile_ids) > 1000:
        for start in range(0, len(profile_ids), 1000):
            chunk = profile_ids[start : start + 1000]
            add_email_members(graph, campaign_id, chunk, dob=dob, member=member, emails=emails, **props)
        return
    graph.run(
        """
        UNWIND $ids AS id
        MERGE (p:Profile {profileId: id})
          ON CREATE SET p.announcementPushOptOut = false, p.announcementEmailOptOut = false,
                        p.isManaged = false, p.isServiceProfile = false
        SET p.dob = $dob, p += $props
        WITH p, id
        CALL (p, id) {
          UNWIND coalesce($emails, [{value: id + '@example.com', isPrimary: true, isVerified: true}]) AS e
          CREATE (p)-[:HAS_CONTACT_METHOD]->(:ContactMethod {
            type: 'email', value: e.value, isPrimary: e.isPrimary, isVerified: e.isVerified})
        }
        WITH p
        MATCH (c:Campaign {id: $campaignId})
        WHERE $member
        // By the pair, as delivery.add_members does (why: there).
        MERGE (p)-[m:IN_CAMPAIGN_AUDIENCE]->(c)
          ON CREATE SET m += {campaignId: c.id, profileId: p.profileId, source: 'test',
                              addedAt: '2026-01-01T00:00:00.000000Z', selfEnrolled: false}
        """,
        ids=profile_ids,
        dob=dob,
        props=props,
        emails=emails,
        member=member,
        campaignId=campaign_id,
    )


def email_states(graph: Graph, campaign_id: str) -> dict[str, dict[str, Any]]:
    rows = graph.run(
        "MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(:Campaign {id: $id}) RETURN p.profileId AS id, s {.*} AS s",
        id=campaign_id,
    )
    return {row["id"]: row["s"] for row in rows}


def emailed(graph: Graph, campaign_id: str) -> list[str]:
    return sorted(pid for pid, s in email_states(graph, campaign_id).items() if s.get("emailedAt"))


def claimed(graph: Graph, campaign_id: str) -> list[str]:
    return sorted(pid for pid, s in email_states(graph, campaign_id).items() if s.get("emailClaimedAt"))


def accepted_to(standin: Any) -> list[str]:
    return sorted(str(m["To"]) for m in standin.accepted)
