"""``audit.*`` (admin): the trail of admin mutations, each written with its change (``graph/audit.py``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.campaign import UtcDatetime
from campaign_engine.graph.audit import ORDER_KEY_PATTERN, AuditPage, list_audit

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "list": "viewer",
}
router = ProcedureRouter("audit", ACCESS)


class ListInput(CamelModel):
    model_config = ConfigDict(extra="forbid")

    campaign_id: Annotated[str | None, Field(min_length=1, max_length=64)] = None
    actor: Annotated[str | None, Field(min_length=1, max_length=128)] = None
    since: Annotated[UtcDatetime | None, Field(alias="from")] = None
    until: Annotated[UtcDatetime | None, Field(alias="to")] = None
    cursor: Annotated[str | None, Field(pattern=ORDER_KEY_PATTERN)] = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50


@router.query("list")
def list_(ctx: Context, data: ListInput) -> AuditPage:
    """Audit entries newest first, keyset-paged; filter by campaignId, actor, and from (inclusive) / to
    (exclusive); a bad cursor or an empty range is BAD_REQUEST."""
    graph = ctx.services.graph
    return list_audit(
        graph,
        tenant_id=ctx.tenant_id,
        campaign_id=None if data.campaign_id is None else ctx.campaign_ever(data.campaign_id),
        actor=data.actor,
        since=data.since,
        until=data.until,
        cursor=data.cursor,
        limit=data.limit,
    )
