"""Input and output shapes shared by several routers."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.domain.camel import CamelModel

__all__ = ["AppCampaignRef", "CampaignRef", "Ok"]


class CampaignRef(CamelModel):
    model_config = ConfigDict(extra="forbid")

    campaign_id: Annotated[str, Field(min_length=1, max_length=64)]


class AppCampaignRef(CamelModel):
    """A campaign as apps name it: its storage id, which may be ``<tenantId>~<ref>`` (domain/tenancy.py)."""

    model_config = ConfigDict(extra="forbid")

    campaign_id: Annotated[str, Field(min_length=1, max_length=130)]


class Ok(BaseModel):
    ok: bool = True
