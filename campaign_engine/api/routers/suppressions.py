"""``suppressions.*`` admin procedures: the addresses provider feedback stopped email to, and lifting one.

Addresses are matched in their normal form (``feedback/events.py``), so any spelling of a suppressed
address finds it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.routers.common import Ok
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.domain.errors import NotFound
from campaign_engine.feedback import store
from campaign_engine.feedback.events import SuppressionReason

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "list": "viewer",
    "get": "viewer",
    "remove": "platform",
}
router = ProcedureRouter("suppressions", ACCESS)

# No \s in the pattern: JSON Schema's and pydantic's regex dialects disagree about which spaces it means.
Address = Annotated[str, Field(min_length=3, max_length=254, pattern=r"^[^@]+@[^@]+$")]


class ListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: SuppressionReason | None = None
    cursor: Annotated[str, Field(max_length=254)] | None = None
    limit: Annotated[int, Field(ge=1, le=500)] = 100


class AddressInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    address: Address


@router.query("list")
def list_(ctx: Context, data: ListInput) -> store.SuppressionPage:
    """Suppressed addresses in address order, keyset-paged, optionally of one reason; a tenant's
    credential sees only its members' addresses, detailed only where its own sends caused them."""
    return store.list_suppressions(
        ctx.services.graph, reason=data.reason, cursor=data.cursor, limit=data.limit, tenant_id=ctx.scope()
    )


@router.query("get")
def get(ctx: Context, data: AddressInput) -> store.Suppression:
    """The suppression of one address: why, from which provider, since when (to a tenant only when its
    own sends caused it; else only that the address is suppressed)."""
    return store.get_suppression(ctx.services.graph, data.address, tenant_id=ctx.scope())


@router.mutation("remove")
def remove(ctx: Context, data: AddressInput) -> Ok:
    """Lift the suppression of one address (e.g. the mailbox works again); its profiles' own opt-outs stay."""
    if not store.remove_suppression(ctx.services.graph, data.address, audit=ctx.audit()):
        raise NotFound("this address is not suppressed")
    return Ok()
