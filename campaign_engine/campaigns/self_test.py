"""``sendTestToMe``: an admin previews a campaign on their own account, on every testable channel.

The test ignores audience, status and dates, never enrols the admin and never touches CAMPAIGN_STATE,
so stats cannot see it. One fresh ``testId`` names the whole test. Every channel shows the admin's own
A/B content variant, the one a recipient with their profile id would get. The inApp part is a
private snapshot on CAMPAIGN_TEST (the latest replaces a pending one; deleting the campaign deletes it).

Other channels slot in as ``ChannelTester``s (the notify and email issues provide them): each one is
called after the snapshot commits, outside any transaction, because it does network I/O. Every channel
the campaign has content for is tested. One this API cannot test (no tester wired, because its setting
is missing here) refuses the whole test with BAD_REQUEST naming that setting, before anything is
written: a test that silently left out a channel would pass for one that reached it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from pydantic import Field

from campaign_engine.campaigns.definitions import campaign_from_node
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.campaign import CampaignPublic, Channel
from campaign_engine.domain.errors import BadRequest, NotFound
from campaign_engine.domain.tenancy import campaign_ref
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_profiles

__all__ = ["ChannelTester", "SelfTestResult", "in_app_snapshot", "send_test_to_me", "testable_channels"]


class ChannelTester(Protocol):
    def __call__(self, *, admin_id: str, campaign: CampaignPublic, test_id: str) -> None:
        """Deliver the test on this channel to ``admin_id`` only; raise a ``CampaignError`` on failure."""


class SelfTestResult(CamelModel):
    test_id: str
    channels: list[Channel]
    variant_id: str | None = Field(
        default=None,
        description="the A/B content variant the test shows on every channel: the admin's own assignment,"
        " as a recipient's (campaigns.previewEmail renders any variant)",
    )


# What wires each tester (wiring/ ``build_self_testers``), for the error that names it.
_ENABLED_BY = {"notify": "NOTIFICATIONS_WEBHOOK_SECRET", "email": "CAMPAIGN_EMAIL_PROVIDER"}


def testable_channels(campaign: CampaignPublic, testers: Mapping[str, ChannelTester]) -> list[Channel]:
    """The channels the campaign has content for; ``BadRequest`` if one of them has no tester here."""
    content = {"inApp": campaign.message, "notify": campaign.notification, "email": campaign.email}
    channels = [channel for channel in campaign.channels if content[channel] is not None]
    # inApp is built in; the other channels need a tester.
    untestable = [channel for channel in channels if channel != "inApp" and channel not in testers]
    if untestable:
        missing = ", ".join(
            f"{channel} (set {_ENABLED_BY.get(channel, 'its settings')})" for channel in untestable
        )
        raise BadRequest(f"this API is not configured to test every channel of the campaign: {missing}")
    return channels


def in_app_snapshot(campaign: CampaignPublic, locale: str | None = None, admin_id: str | None = None) -> str:
    """What the admin's client renders: the public projection at the time of the test, in the admin's
    own language (the variant their locale is served, as any reader's would be) and their own A/B
    content variant (``domain/ab_variants.py``)."""
    assert campaign.message is not None
    wire = campaign.wire()
    variant_id = None if admin_id is None else campaign.variant_of(admin_id)
    served, message = campaign.content("message", locale, variant_id)
    return json.dumps(
        {"name": campaign.name, "message": message.model_dump(mode="json", by_alias=True, exclude_none=True),
         "locale": served, "variantId": variant_id, "startsAt": wire.get("startsAt"),
         "endsAt": wire.get("endsAt")},
        separators=(",", ":"),
    )  # fmt: skip


def _read(tx: Tx, campaign_id: str) -> CampaignPublic | None:
    record = tx.run("MATCH (c:Campaign {id: $id}) RETURN c {.*} AS c", id=campaign_id).single()
    return None if record is None else campaign_from_node(dict(record["c"]))


def send_test_to_me(
    graph: Graph,
    *,
    admin_id: str,
    campaign_id: str,
    now: datetime,
    testers: Mapping[str, ChannelTester] | None = None,
    audit: AuditContext | None = None,
) -> SelfTestResult:
    wired = testers or {}
    test_id = uuid.uuid4().hex

    def tx_fn(tx: Tx) -> tuple[CampaignPublic, list[Channel]]:
        campaign = _read(tx, campaign_id)
        if campaign is None:
            raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
        channels = testable_channels(campaign, wired)
        if not channels:
            raise BadRequest("this campaign has no channel content that can be tested yet")
        if "inApp" in channels:
            if not lock_profiles(tx, [admin_id]):
                raise NotFound("your profile is not in the graph; upsert it before sending yourself a test")
            own = tx.run(statement("self_test_locale"), profileId=admin_id, campaignId=campaign_id).single()
            locale = None if own is None else own["locale"]
            snapshot = in_app_snapshot(campaign, locale, admin_id)
            tx.run(statement("send_test_in_app"), profileId=admin_id, campaignId=campaign_id, testId=test_id,
                   snapshot=snapshot, now=format_ts(now)).consume()  # fmt: skip
        # Audited whatever the channels: the test is sent (after this commit) on the entry's word.
        record_audit(tx, audit, target_type="campaign", target_id=campaign.id,
                     campaign={"id": campaign.id, "createdAt": campaign.created_at},
                     revision_before=campaign.revision, revision_after=campaign.revision,
                     detail={"testId": test_id, "channels": channels})  # fmt: skip
        return campaign, channels

    campaign, channels = graph.write(tx_fn)
    for channel in channels:
        if channel != "inApp":
            wired[channel](admin_id=admin_id, campaign=campaign, test_id=test_id)
    return SelfTestResult(test_id=test_id, channels=channels, variant_id=campaign.variant_of(admin_id))
