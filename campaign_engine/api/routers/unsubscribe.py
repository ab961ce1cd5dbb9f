"""``campaigns.unsubscribeFromAnnouncements``: the one-click opt-out for app clients.

Anonymous like the RFC 8058 endpoint: the signed token is the only authority, and the answer is the
same whether or not the token's profile still exists.
"""

from __future__ import annotations

from typing import Annotated

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


@router.mutation("unsubscribeFromAnnouncements")
def unsubscribe_from_announcements(ctx: Context, data: UnsubscribeInput) -> Ok:
    """Opt the token's profile out of announcement email (idempotent)."""
    tokens = ctx.services.unsubscribe_tokens
    if tokens is None:
        raise ServiceUnavailable("unsubscribing is not configured on this server")
    unsubscribe_id = tokens.read(data.token)
    opt_out_by_unsubscribe_id(ctx.services.graph, unsubscribe_id, now=ctx.services.clock())
    return Ok()
