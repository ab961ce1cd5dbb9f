"""What a procedure handler receives: the services of this process and the resolved caller.

``Services`` is built once per process by ``create_app`` (the composition root of the API edge) and
carries the adapters; tests build it with their own clock, queue or testers instead of patching.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from starlette.concurrency import run_in_threadpool

from campaign_engine.api.access import ROLES, Access, Role, highest, role_satisfies
from campaign_engine.api.auth import Caller, TokenVerifier
from campaign_engine.campaigns.engagement.service import EngagementService
from campaign_engine.campaigns.self_test import ChannelTester
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.tenants.access_grants import roles_of
from campaign_engine.campaigns.tenants.tenancy import campaign_id_ever, campaign_in_tenant, dispatch_in_tenant
from campaign_engine.config import Settings
from campaign_engine.domain.errors import Forbidden, Unauthorized
from campaign_engine.domain.types import Clock
from campaign_engine.domain.webhook_keys import SecretBox
from campaign_engine.graph.audit import AuditContext
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.port import Queue
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens

__all__ = ["CHALLENGES", "TENANT_HEADER", "Context", "RateLimiter", "Services", "acting_tenant"]

CHALLENGES = "utilities.getChallenges"  # the one procedure a nonce-less DID-auth token may call

TENANT_HEADER = "x-campaign-tenant"  # the tenant the console acts in


def acting_tenant(caller: Caller | None, picked: str | None) -> tuple[str | None, bool, Forbidden | None]:
    """The tenant a call acts in, whether the tenant header picked it, and the refusal of a pick.

    The verified credential names the tenant. The header picks another only for a platform admin (any
    tenant) or a person whose token names none, as an organisation's identity provider issues them
    (there the grants decide, per call: ``Context.require``). A credential that names a tenant (a
    tenant claim, an API key) acts there alone: picking another is refused, never ignored."""
    tenant = caller.tenant_id if caller else None
    if not picked or caller is None or picked == tenant:
        return tenant, False, None
    if caller.is_admin or (tenant is None and not caller.is_api_key):
        return picked, True, None
    return tenant, False, Forbidden(f"this credential acts in tenant '{tenant}' only, not '{picked}'")


class RateLimiter(Protocol):
    def hit(self, profile_id: str) -> None:
        """Count one call; raise ``TooManyRequests`` past the limit, ``ServiceUnavailable`` if unsure."""

    async def hit_async(self, profile_id: str) -> None:
        """The same for a procedure running on the event loop; must not block it."""


@dataclass
class Services:
    settings: Settings
    graph: Graph
    clock: Clock
    verifier: TokenVerifier
    # getMyCampaigns/recordEvent, batched across the concurrent calls of this process.
    engagement: EngagementService
    rate_limiter: RateLimiter | None = None
    dispatch_queue: Queue | None = None  # page jobs; the API enqueues the first page of a dispatch
    self_test_testers: Mapping[str, ChannelTester] = field(default_factory=dict)  # notify, email
    unsubscribe_tokens: UnsubscribeTokens | None = None  # None: CAMPAIGN_UNSUBSCRIBE_SECRET is not set
    secret_box: SecretBox | None = None  # None: CAMPAIGN_SECRETS_KEY is not set (no receivers of their own)
    # What every reviewed send is judged by (preview, approval, dispatch, schedule), from ``settings``.
    dispatch_settings: DispatchSettings = field(init=False)

    def __post_init__(self) -> None:
        self.dispatch_settings = DispatchSettings.from_settings(self.settings)


@dataclass(frozen=True)
class Context:
    services: Services
    caller: Caller | None
    tenant_id: str
    auth_error: Exception | None = None  # a bad token fails only the procedures that need a caller
    request_id: str = ""  # the caller's X-Request-Id when well formed, else one we drew (api/trpc.py)
    procedure: str = ""  # the path of the call being handled; a batch shares the request, not this
    tenant_picked: bool = False  # the tenant header chose tenant_id, not the credential (acting_tenant)

    def user(self) -> Caller:
        if self.auth_error is not None:
            raise self.auth_error
        if self.caller is None:
            raise Unauthorized("sign in required")
        if self.caller.challenge_only and self.procedure != CHALLENGES:
            # A DID-auth token without a nonce can be replayed forever: it only ever fetches challenges.
            raise Unauthorized("a DID-auth token without a nonce may only call utilities.getChallenges")
        return self.caller

    def require(self, access: Access, *, tenant_id: str | None = None) -> Caller | None:
        """The caller, if they hold ``access`` in ``tenant_id`` (default: the tenant the request acts
        in); else UNAUTHORIZED, or FORBIDDEN naming what is missing. None for ``public``."""
        if access == "public":
            return None
        caller = self.user()
        if caller.is_admin:
            return caller
        if access == "user":
            # A tenant picked by header is one the person holds a role in, or none of their business.
            if self.tenant_picked and self.role_in(self.tenant_id) is None:
                raise Forbidden(f"you hold no role in tenant '{self.tenant_id}'")
            return caller
        if access == "platform":
            raise Forbidden(f"{self.procedure or 'this procedure'} needs a platform admin")
        tenant = tenant_id or self.tenant_id
        if not role_satisfies(self.role_in(tenant), access):
            what = self.procedure or "this procedure"
            raise Forbidden(f"{what} needs the {access} role in tenant '{tenant}'")
        return caller

    async def require_async(self, access: Access, *, tenant_id: str | None = None) -> Caller | None:
        """``require`` for the event loop: when it reads the caller's roles from the graph (``role_in``),
        on a worker thread, so a slow graph never stalls the loop; inline when it reads none."""
        if self._reads_roles(access):
            return await run_in_threadpool(lambda: self.require(access, tenant_id=tenant_id))
        return self.require(access, tenant_id=tenant_id)

    def _reads_roles(self, access: Access) -> bool:
        """Whether ``require(access)`` reads the graph: a signed-in caller other than a platform admin,
        held to a tenant role (or to ``user`` in a tenant a header picked)."""
        if access in ("public", "platform") or self.caller is None or self.auth_error is not None:
            return False
        if self.caller.is_admin:
            return False
        return self.tenant_picked if access == "user" else True

    def role_in(self, tenant_id: str) -> Role | None:
        """The caller's highest role in ``tenant_id``: their signed claims there, and their grants."""
        caller = self.user()
        held = {r for r in ROLES if r in caller.roles} if caller.tenant_id == tenant_id else set()
        granted = roles_of(self.services.graph, tenant_id=tenant_id, subject=caller.profile_id)
        held |= {r for r in ROLES if r in granted}
        return highest(held)

    def admin(self) -> Caller:
        """The caller of a procedure its table already let through (``api/trpc.py``)."""
        return self.user()

    def scope(self) -> str | None:
        """The tenant this caller's reads and writes are confined to; None for a platform admin."""
        return None if self.admin().is_admin else self.tenant_id

    def campaign(self, ref: str) -> str:
        """The storage id of this tenant's campaign ``ref``; NOT_FOUND for another tenant's."""
        return campaign_in_tenant(self.services.graph, tenant_id=self.tenant_id, ref=ref)

    def campaign_ever(self, ref: str) -> str:
        """The storage id this tenant's campaign ``ref`` has, or had if it was deleted."""
        return campaign_id_ever(self.services.graph, tenant_id=self.tenant_id, ref=ref)

    def dispatch(self, dispatch_id: str) -> str:
        """``dispatch_id``, once it is known to be one of this tenant's; else NOT_FOUND."""
        dispatch_in_tenant(self.services.graph, tenant_id=self.tenant_id, dispatch_id=dispatch_id)
        return dispatch_id

    def audit(self, *, tenant_id: str | None = None) -> AuditContext:
        """The audit entry of this admin call (``graph/audit.py``); the use case writes it in its
        transaction. The actor is the person the credential acts for (a token's subject, an API key's
        minter, with ``via`` naming the key), never anything the input claims; the tenant is the one the
        call acts in, or the one its input names (``access.*``)."""
        caller = self.admin()
        return AuditContext.begin(
            actor=caller.person,
            via=caller.profile_id if caller.minted_by else None,
            procedure=self.procedure,
            request_id=self.request_id,
            now=self.services.clock(),
            tenant_id=tenant_id or self.tenant_id,
        )
