"""``preferences.*`` user procedures: the caller's own announcement opt-outs, for every tenant (no
``tenantId``: the deployment-wide choices) or for one of the caller's tenants (``tenantId``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, StrictBool

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


TenantRef = Annotated[str, Field(min_length=1, max_length=64)]


class PreferencesScope(CamelModel):
    """Omitted: every tenant; else one of the caller's tenants (FORBIDDEN for any other)."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: TenantRef | None = None


class AnnouncementPreferencesPatch(CamelModel):
    """Omitted (or null) choices stay as they are."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: TenantRef | None = None

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
def get_announcement_preferences(ctx: Context, data: PreferencesScope) -> AnnouncementPreferencesOut:
    """The caller's announcement email and push opt-outs: deployment-wide, or as ``tenantId`` honours
    them (its own or the deployment-wide choice)."""
    caller = ctx.user()
    graph = ctx.services.graph
    return _out(preferences.get_announcement_preferences(graph, caller.profile_id, tenant_id=data.tenant_id))


@router.mutation("updateAnnouncementPreferences")
def update_announcement_preferences(
    ctx: Context, data: AnnouncementPreferencesPatch
) -> AnnouncementPreferencesOut:
    """Change the caller's opt-outs, for every tenant or ``tenantId``'s; an omitted choice is unchanged."""
    caller = ctx.user()
    updated = preferences.update_announcement_preferences(
        ctx.services.graph,
        caller.profile_id,
        email_opt_out=data.announcement_email_opt_out,
        push_opt_out=data.announcement_push_opt_out,
        now=ctx.services.clock(),
        tenant_id=data.tenant_id,
    )
    return _out(updated)
