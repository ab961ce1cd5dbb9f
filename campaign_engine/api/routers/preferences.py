"""``preferences.*`` user procedures: the caller's own announcement opt-outs."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns.engagement import preferences
from campaign_engine.campaigns.engagement.preferences import AnnouncementPreferences

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "getAnnouncementPreferences": "user",
    "updateAnnouncementPreferences": "user",
}
router = ProcedureRouter("preferences", ACCESS)


class AnnouncementPreferencesPatch(BaseModel):
    """Omitted (or null) choices stay as they are."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    announcement_email_opt_out: Annotated[StrictBool | None, Field(alias="announcementEmailOptOut")] = None
    announcement_push_opt_out: Annotated[StrictBool | None, Field(alias="announcementPushOptOut")] = None


class AnnouncementPreferencesOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    announcement_email_opt_out: Annotated[bool, Field(alias="announcementEmailOptOut")]
    announcement_push_opt_out: Annotated[bool, Field(alias="announcementPushOptOut")]


def _out(prefs: AnnouncementPreferences) -> AnnouncementPreferencesOut:
    return AnnouncementPreferencesOut(
        announcement_email_opt_out=prefs.email_opt_out, announcement_push_opt_out=prefs.push_opt_out
    )


@router.query("getAnnouncementPreferences")
def get_announcement_preferences(ctx: Context) -> AnnouncementPreferencesOut:
    """The caller's announcement email and push opt-outs."""
    caller = ctx.user()
    return _out(preferences.get_announcement_preferences(ctx.services.graph, caller.profile_id))


@router.mutation("updateAnnouncementPreferences")
def update_announcement_preferences(
    ctx: Context, data: AnnouncementPreferencesPatch
) -> AnnouncementPreferencesOut:
    """Change the caller's opt-outs; an omitted choice is unchanged."""
    caller = ctx.user()
    updated = preferences.update_announcement_preferences(
        ctx.services.graph,
        caller.profile_id,
        email_opt_out=data.announcement_email_opt_out,
        push_opt_out=data.announcement_push_opt_out,
        now=ctx.services.clock(),
    )
    return _out(updated)
