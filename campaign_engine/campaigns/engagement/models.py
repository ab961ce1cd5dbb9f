"""The engagement procedures' wire models: the public card of a campaign and a reader's own state.

Users only ever see the public projection (``CampaignCard``) plus their own state: never audiences,
stats or other users' data. Shared by the reads (``cards.py``) and the writes (``events.py``), which
therefore never import each other.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.domain.campaign import Message

__all__ = ["CampaignCard", "EngagementState", "EventKind", "EventResult", "MyCampaign", "MyCampaigns"]

EventKind = Literal["shown", "clicked", "dismissed"]


class _Out(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class CampaignCard(_Out):
    """The public projection of a campaign: what any eligible user may read."""

    campaign_id: Annotated[str, Field(alias="campaignId")]
    name: str
    message: Message | None
    locale: str | None = Field(
        default=None, description="the language of `message`: the best match for the reader's locale"
    )
    variant_id: Annotated[str | None, Field(alias="variantId")] = Field(
        default=None, description="the A/B content variant of `message` this reader is assigned (issue 26)"
    )
    starts_at: Annotated[str | None, Field(alias="startsAt")]
    ends_at: Annotated[str | None, Field(alias="endsAt")]


class EngagementState(_Out):
    shown_first_at: Annotated[str | None, Field(alias="shownFirstAt")] = None
    shown_last_at: Annotated[str | None, Field(alias="shownLastAt")] = None
    shown_count: Annotated[int, Field(alias="shownCount")] = 0
    clicked_first_at: Annotated[str | None, Field(alias="clickedFirstAt")] = None
    clicked_last_at: Annotated[str | None, Field(alias="clickedLastAt")] = None
    clicked_count: Annotated[int, Field(alias="clickedCount")] = 0
    dismissed_first_at: Annotated[str | None, Field(alias="dismissedFirstAt")] = None
    dismissed_last_at: Annotated[str | None, Field(alias="dismissedLastAt")] = None
    dismissed_count: Annotated[int, Field(alias="dismissedCount")] = 0
    last_action_id: Annotated[str | None, Field(alias="lastActionId")] = None

    @classmethod
    def from_rel(cls, props: dict[str, Any] | None) -> EngagementState | None:
        # Other properties of the relationship (delivery stamps) are not the caller's business:
        # validation ignores them (pydantic's default for unknown keys).
        return None if props is None else cls.model_validate(props)


class MyCampaign(CampaignCard):
    state: EngagementState | None = None
    test_id: Annotated[str | None, Field(alias="testId")] = None


class MyCampaigns(_Out):
    campaigns: list[MyCampaign]


class EventResult(_Out):
    recorded: bool
    state: EngagementState | None = None
