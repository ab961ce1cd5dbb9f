"""The engagement procedures' wire models: the public card of a campaign and a reader's own state.

Users only ever see the public projection (``CampaignCard``) plus their own state: never audiences,
stats or other users' data. Shared by the reads (``cards.py``) and the writes (``events.py``), which
therefore never import each other.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.campaign import Message
from campaign_engine.domain.content import OMIT_ABSENT, absent

__all__ = ["CampaignCard", "EngagementState", "EventKind", "EventResult", "MyCampaign", "MyCampaigns"]

EventKind = Literal["shown", "clicked", "dismissed"]


class CampaignCard(CamelModel):
    """The public projection of a campaign: what any eligible user may read. A field without a value is
    left out, never ``null``: LearnCard's validators refuse ``null`` where they expect a string."""

    campaign_id: str
    name: str
    message: Message | None = OMIT_ABSENT
    locale: str | None = Field(
        default=None,
        exclude_if=absent,
        description="the language of `message`: the best match for the reader's locale",
    )
    variant_id: str | None = Field(
        default=None,
        exclude_if=absent,
        description="the A/B content variant of `message` this reader is assigned",
    )
    starts_at: str | None = OMIT_ABSENT
    ends_at: str | None = OMIT_ABSENT

    @model_validator(mode="after")
    def _message_named(self) -> CampaignCard:
        """The message's ``id`` is the campaign's where the author gave none: LearnCard's app keys its
        dismissal and frequency state by it."""
        if self.message is not None and self.message.id is None:
            self.message = self.message.model_copy(update={"id": self.campaign_id})
        return self


class EngagementState(CamelModel):
    shown_first_at: str | None = None
    shown_last_at: str | None = None
    shown_count: int = 0
    clicked_first_at: str | None = None
    clicked_last_at: str | None = None
    clicked_count: int = 0
    dismissed_first_at: str | None = None
    dismissed_last_at: str | None = None
    dismissed_count: int = 0
    last_action_id: str | None = None

    @classmethod
    def from_rel(cls, props: dict[str, Any] | None) -> EngagementState | None:
        # Other properties of the relationship (delivery stamps) are not the caller's business:
        # validation ignores them (pydantic's default for unknown keys).
        return None if props is None else cls.model_validate(props)


class MyCampaign(CampaignCard):
    state: EngagementState | None = OMIT_ABSENT
    test_id: str | None = OMIT_ABSENT


class MyCampaigns(CamelModel):
    campaigns: list[MyCampaign]


class EventResult(CamelModel):
    recorded: bool
    state: EngagementState | None = None
