"""How campaign ids are namespaced per tenant.

A tenant names its campaigns with its own ids (``ref``, what admins type and read), and no tenant can
learn which ids another uses. Below the API a campaign is known by its storage id ``Campaign.id``, which
is unique across the deployment: every membership, job, link, token and audit entry names that one, so
none of them changed when tenants came. A new campaign's storage id is its ref when no campaign ever
held that id in another tenant, else ``<tenantId>~<ref>``; ``~`` is in no campaign or tenant id, so the
ref is always the part after the first ``~`` and data made before tenants keeps its ids.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import PlainSerializer, StringConstraints

__all__ = ["TENANT_ID_PATTERN", "CampaignRefOut", "TenantId", "campaign_ref", "namespaced_id"]

SEPARATOR = "~"
TENANT_ID_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$"
TenantId = Annotated[str, StringConstraints(pattern=TENANT_ID_PATTERN)]


def campaign_ref(storage_id: str) -> str:
    """The id the campaign's tenant knows it by."""
    return storage_id.partition(SEPARATOR)[2] or storage_id


def namespaced_id(tenant_id: str, ref: str) -> str:
    """The storage id of ``ref`` when its plain form is, or once was, another tenant's."""
    return f"{tenant_id}{SEPARATOR}{ref}"


CampaignRefOut = Annotated[str, PlainSerializer(campaign_ref, return_type=str)]
"""A storage id held as is in Python and written as the tenant's ref in every admin answer."""
