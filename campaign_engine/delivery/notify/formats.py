"""Which format each notification POST takes: the deployment's ``NOTIFICATIONS_FORMAT``, overridden by
its campaign's tenant (``notificationFormat``), read once per batch like the tenant's other settings.
A tenant's format affects only its own campaigns' sends."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Formats", "NoEngineDid"]


class NoEngineDid(Exception):
    """A LearnCard-format send where this worker has no DID to sign with (``CAMPAIGN_DID_KEY``)."""


@dataclass(frozen=True)
class Formats:
    default: str = "standard"
    tenants: Mapping[str, str] = field(default_factory=dict)
    """tenant -> its format (a live view of the tenant records in production)."""
    did: str = ""
    """The engine's DID: ``from.did`` of a LearnCard notification."""
    domain: str = "localhost"
    """``DOMAIN_NAME``: a profile without a stored DID is named by its LearnCard did:web alias there."""

    def now(self) -> Formats:
        """This batch's answer: the tenants' formats read once, so one batch never mixes two views."""
        return Formats(self.default, dict(self.tenants), self.did, self.domain)

    def of(self, tenant_id: str | None) -> str:
        return self.tenants.get(tenant_id or "") or self.default

    def learncard(self, tenant_id: str | None) -> bool:
        """Whether the tenant's sends take LearnCard's format; ``NoEngineDid`` if they do and this
        worker has no DID to sign them with."""
        if self.of(tenant_id) != "learncard":
            return False
        if not self.did:
            raise NoEngineDid
        return True
