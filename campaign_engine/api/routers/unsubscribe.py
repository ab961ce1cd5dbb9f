"""``campaigns.unsubscribeFromAnnouncements``: the one-click opt-out for app clients.

Anonymous like the RFC 8058 endpoint: the signed token is the only authority, and the answer is the
same whether or not the token's profile still exists. A link that names its tenant opts out of that
tenant's email, or of every tenant's with ``scope: "all"``, as the page does.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.routers.common import Ok
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.unsubscribe.optout import opt_out_by_unsubscribe_id

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "unsubscribeFromAnnouncements": "public",
}
router = ProcedureRouter("campaigns", ACCESS)


class UnsubscribeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: Annotated[str, Field(min_length=1, max_length=512)]
    scope: Literal["tenant", "all"] = "tenant"


@router.mutation("unsubscribeFromAnnouncements")
def unsubscribe_from_announcements(ctx: Context, data: UnsubscribeInput) -> Ok:
    """Opt the token's profile out of announcement email from the link's tenant, or from every
    organisation (``scope: "all"``); idempotent."""
    tokens = ctx.services.unsubscribe_tokens
    if tokens is None:
        raise ServiceUnavailable("unsubscribing is not configured on this server")
    link = tokens.read_link(data.token)
    opt_out_by_unsubscribe_id(
        ctx.services.graph,
        link.unsubscribe_id,
        now=ctx.services.clock(),
        tenant_id=link.tenant_id,
        scope=data.scope,
        campaign=link.campaign,
        procedure="campaigns.unsubscribeFromAnnouncements",
    )
    return Ok()
