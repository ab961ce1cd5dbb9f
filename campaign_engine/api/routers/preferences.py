"""``preferences.*`` user procedures: the caller's own announcement opt-outs."""

from __future__ import annotations

from pydantic import ConfigDict, StrictBool

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns.engagement import preferences
from campaign_engine.campaigns.engagement.preferences import AnnouncementPreferences
from campaign_engine.domain.camel import CamelModel

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "getAnnouncementPreferences": "user",
    "updateAnnouncementPreferences": "user",
}
router = ProcedureRouter("preferences", ACCESS)


class AnnouncementPreferencesPatch(CamelModel):
    """Omitted (or null) choices stay as they are."""

    model_config = ConfigDict(extra="forbid")

    announcement_email_opt_out: StrictBool | None = None
    announcement_push_opt_out: StrictBool | None = None


class AnnouncementPreferencesOut(CamelModel):
    announcement_email_opt_out: bool
    announcement_push_opt_out: bool


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
