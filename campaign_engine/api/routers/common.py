"""Input and output shapes shared by several routers."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CampaignRef", "Ok"]


class CampaignRef(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    campaign_id: Annotated[str, Field(alias="campaignId", min_length=1, max_length=64)]


class Ok(BaseModel):
    ok: bool = True
