"""A sender's own pending self-tests in ``getMyCampaigns``, read for a batch of callers at once.

``sendTestToMe`` needs the author role in the campaign's tenant, so a test shows to its sender while
they hold author, publisher or admin there (a signed claim for the tenant their token names, or a
grant), and to a platform admin always. A tenant author who tests a campaign sees the test in the app
as a platform admin does; one who lost the role no longer does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from campaign_engine.campaigns.engagement.models import MyCampaign

__all__ = ["TESTER_ROLES", "Viewer", "tests_by_profile", "visible_tests"]

TESTER_ROLES = frozenset({"author", "publisher", "admin"})  # the roles sendTestToMe accepts or outranks


@dataclass(frozen=True)
class Viewer:
    """Who reads: a platform admin, or the tenant and roles their credential claims."""

    is_admin: bool = False
    tenant_id: str | None = None
    roles: frozenset[str] = frozenset()

    def sees(self, tenant_id: str | None, granted: Iterable[str]) -> bool:
        if self.is_admin:
            return True
        claimed = self.roles if tenant_id is not None and tenant_id == self.tenant_id else frozenset()
        return bool((set(granted) | claimed) & TESTER_ROLES)


def tests_by_profile(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each profile's pending test snapshots, newest first, from the ``tests`` part of
    ``cypher/engagement/my_campaigns.cypher``."""
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(row["profileId"], []).append(dict(row))
    return found


def visible_tests(rows: Iterable[dict[str, Any]], viewer: Viewer) -> list[MyCampaign]:
    """The test cards ``viewer`` may read among their own ``rows``."""
    return [
        MyCampaign.model_validate(
            {**json.loads(row["snapshot"]), "campaignId": row["campaignId"], "testId": row["testId"]}
        )
        for row in rows
        if viewer.sees(row["tenantId"], row["granted"])
    ]
