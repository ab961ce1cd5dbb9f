"""``utilities.*``: the DID-auth handshake. LearnCard's client signs a token without a nonce, calls
``getChallenges`` with it, then signs each request with one of the challenges it got (``did/auth.py``).

API-only, no console screen: it is a client's sign-in step, not something a person does. Not audited and
no event: it changes no data anyone reads, only the DID's own single-use challenges, which expire.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.did import challenges
from campaign_engine.domain.errors import BadRequest

__all__ = ["ACCESS", "router"]

ACCESS: dict[str, Access] = {"getChallenges": "user"}
router = ProcedureRouter("utilities", ACCESS)

DEFAULT_AMOUNT = 95  # what LearnCard's client asks for, give or take a few


class ChallengesInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    amount: Annotated[int, Field(ge=1, le=challenges.MAX_AMOUNT)] = DEFAULT_AMOUNT


@router.query("getChallenges")
def get_challenges(ctx: Context, data: ChallengesInput) -> list[str]:
    """Single-use challenges bound to the caller's DID, for the nonces of its DID-auth tokens."""
    caller = ctx.user()
    if caller.did is None:
        raise BadRequest("challenges are issued to a DID-auth caller: sign with your DID, without a nonce")
    return challenges.issue(ctx.services.graph, did=caller.did, amount=data.amount, now=ctx.services.clock())
