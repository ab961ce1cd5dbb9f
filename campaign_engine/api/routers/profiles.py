"""``profiles.*`` admin procedures: the recipients of campaigns."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.api.context import Context
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns import profiles
from campaign_engine.delivery.notify.egress import EgressBlocked
from campaign_engine.delivery.wiring import egress_rules
from campaign_engine.domain.errors import BadRequest, NotFound
from campaign_engine.domain.profile import ProfileOut, ProfileUpsert, UpsertResult

__all__ = ["router"]

router = ProcedureRouter("profiles")


class ProfileRef(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    profile_id: Annotated[str, Field(alias="profileId", min_length=1, max_length=128)]


class Deleted(BaseModel):
    deleted: bool


@router.mutation("upsert", auth="admin")
def upsert(ctx: Context, data: ProfileUpsert) -> UpsertResult:
    """Create or update up to 1000 profiles atomically.

    A row changes only the fields it names: an omitted field keeps its value, an explicit null clears it."""
    ctx.admin()
    rules = egress_rules(ctx.services.settings)
    for index, row in enumerate(data.profiles):
        if row.notifications_webhook:  # refused here, not first found out at every POST to it
            try:
                rules.check(row.notifications_webhook)
            except EgressBlocked as exc:
                raise BadRequest(f"profiles.{index}.notificationsWebhook: {exc.reason}") from None
    return profiles.upsert_profiles(ctx.services.graph, data, audit=ctx.audit())


@router.query("get", auth="admin")
def get(ctx: Context, data: ProfileRef) -> ProfileOut:
    """One profile with its contact methods, tags and connections."""
    return profiles.get_profile(ctx.services.graph, data.profile_id)


@router.mutation("delete", auth="admin")
def delete(ctx: Context, data: ProfileRef) -> Deleted:
    """Delete a profile with its memberships, engagement states and pending tests."""
    if not profiles.delete_profile(ctx.services.graph, data.profile_id, audit=ctx.audit()):
        raise NotFound(f"profile '{data.profile_id}' not found")
    return Deleted(deleted=True)
