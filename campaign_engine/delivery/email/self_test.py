"""The email part of ``sendTestToMe``: the campaign's real email, sent to the calling admin only.

It bypasses the audience and the campaign status (a draft can be tested) and nothing else: the admin
must be email-eligible (one primary verified address, the email age policy, no email opt-out), because
a test that ignores preferences would teach the admin nothing true about a real send. It never writes
CAMPAIGN_STATE, so it takes no production claim and changes no statistics; the message carries the
fresh test id. The admin's ``campaignUnsubscribeId`` is allocated if missing, so the test's unsubscribe
link is as real as a production one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from campaign_engine.delivery.email.compose import compose_email, email_content_for
from campaign_engine.delivery.email.provider import EmailProvider
from campaign_engine.domain.campaign import CampaignPublic
from campaign_engine.domain.errors import BadRequest, NotFound, ServiceUnavailable
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.unsubscribe.optout import ensure_unsubscribe_ids
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens

__all__ = ["EmailSelfTester"]

_REASONS = {
    "opted_out": "you opted out of announcement email",
    "age_policy": "your profile does not meet the email age policy",
    "no_email": "your profile needs exactly one primary, verified email address",
    "suppressed": "your address is suppressed after a bounce or complaint (see suppressions.get)",
}


class EmailSelfTester:
    """A ``ChannelTester`` for ``email``."""

    def __init__(
        self,
        *,
        graph: Graph,
        provider: EmailProvider,
        tokens: UnsubscribeTokens,
        domain_name: str,
        app_origins: Mapping[str, Any],
        tenants: Mapping[str, Any],
        default_tenant: str,
        adult_age: int,
        clock: Clock = system_clock,
    ) -> None:
        self._graph = graph
        self._provider = provider
        self._tokens = tokens
        self._domain = domain_name
        self._origins = app_origins
        self._tenants = tenants
        self._default_tenant = default_tenant
        self._adult_age = adult_age
        self._clock = clock
        self._query = statement("email_test_recipient")

    def close(self) -> None:
        """Close the provider (its pooled connections): the tester owns the provider it was built with."""
        self._provider.close()

    def __call__(self, *, admin_id: str, campaign: CampaignPublic, test_id: str) -> None:
        address, unsubscribe_id, locale = self._graph.write(
            self._recipient, admin_id, campaign.id, now=self._clock()
        )
        content = email_content_for(  # in the admin's own language, as a recipient of theirs would get it
            campaign,
            origins=self._origins,
            tenants=self._tenants,
            default_tenant=self._default_tenant,
            locale=locale,
            variant_id=campaign.variant_of(admin_id),  # their own A/B variant, as on every channel
        )
        content = dataclasses.replace(
            content, copy=dataclasses.replace(content.copy, subject=f"[Test] {content.copy.subject}")
        )
        message = compose_email(
            content,
            key=test_id,
            to=address,
            unsubscribe_id=unsubscribe_id,
            tokens=self._tokens,
            domain_name=self._domain,
            tag="announcement-test",
            metadata={"campaignId": campaign.id, "campaignTestId": test_id},
            test=True,  # a working CTA that records no click: a test is not a recipient's
        )
        [result] = self._provider.send_batch([message])
        if result.outcome != "accepted":
            raise ServiceUnavailable(
                f"the email provider did not accept the test email ({result.outcome}: {result.reason})"
            )

    def _recipient(
        self, tx: Tx, admin_id: str, campaign_id: str, *, now: datetime
    ) -> tuple[str, str, str | None]:
        """The admin as the campaign's tenant sees them (its view over the shared facts)."""
        params = policy_params(now, self._adult_age)
        record = tx.run(self._query, profileId=admin_id, campaignId=campaign_id, **params).single()
        if record is None:
            raise NotFound("your profile is not in the graph; upsert it before sending yourself a test")
        if record["blocked"] is not None:
            raise BadRequest(f"cannot send you a test email: {_REASONS[record['blocked']]}")
        ids = ensure_unsubscribe_ids(tx, [admin_id])
        return str(record["address"]), ids[admin_id], record["locale"]
