"""Input and output shapes shared by several routers."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AppCampaignRef", "CampaignRef", "Ok"]


class CampaignRef(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    campaign_id: Annotated[str, Field(alias="campaignId", min_length=1, max_length=64)]


class AppCampaignRef(BaseModel):
    """A campaign as apps name it: its storage id, which may be ``<tenantId>~<ref>`` (domain/tenancy.py)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    campaign_id: Annotated[str, Field(alias="campaignId", min_length=1, max_length=130)]


class Ok(BaseModel):
    ok: bool = True
