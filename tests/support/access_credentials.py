"""The credentials the access registry walks every procedure with (tests/integration/api/
test_access_registry.py): anonymous, dead keys, a user, each role of tenant A by signed claims, by a
grant, by an API key and by DID-auth, B's admin, roles without a tenant, and a platform admin."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from tests.conftest import ADMIN_ID
from tests.integration.did.test_did_auth import Person as DidPerson
from tests.support.api import TrpcClient, ok

__all__ = ["CREDENTIALS", "DID_ADMIN", "A", "B", "Credential", "jwt_header"]

A, B = "alpha", "beta"


@dataclass(frozen=True)
class Credential:
    name: str
    header: Callable[[TrpcClient], dict[str, str]]
    tenant_role: str | None = None  # its role in A, if any
    platform: bool = False
    signed_in: bool = True  # False: anonymous, or a key that no longer works
    tenant_b_admin: bool = False
    api_key: bool = False  # an API key, refused the procedures only a person may call (PEOPLE_ONLY)


def jwt_header(
    sub: str, *, tenant: str | None = None, roles: list[str] | None = None, scope: str = ""
) -> Any:
    def header(api: TrpcClient) -> dict[str, str]:
        token = mint_token(api.settings, profile_id=sub, scope=scope, tenant_id=tenant, roles=roles)
        return {"authorization": f"Bearer {token}"}

    return header


# A person signed in by DID-auth (LearnCard's wallet: a presentation JWT over a fresh challenge),
# holding the admin grant in A: the registry must answer it as it answers admin-a's JWT.
DID_ADMIN = DidPerson()


def _did_auth(api: TrpcClient) -> dict[str, str]:
    asked = {"authorization": f"Bearer {DID_ADMIN.token()}"}
    [nonce] = ok(
        api.http.get("/trpc/utilities.getChallenges", params={"input": '{"amount": 1}'}, headers=asked)
    )
    return {"authorization": f"Bearer {DID_ADMIN.token(nonce)}"}


def _key(name: str) -> Callable[[TrpcClient], dict[str, str]]:
    return lambda api: {"authorization": f"Bearer {api.keys[name]}"}  # type: ignore[attr-defined]


CREDENTIALS = [
    Credential("anonymous", lambda api: {}, signed_in=False),
    Credential("revoked key", _key("revoked"), signed_in=False),
    Credential("expired key", _key("expired"), signed_in=False),
    Credential("user", jwt_header("u-1")),
    # The viewer holds a grant (access.grant), the others signed claims: both paths of Context.role_in.
    Credential("viewer of A", jwt_header("viewer-a", tenant=A), tenant_role="viewer"),
    Credential("author of A", jwt_header("author-a", tenant=A, roles=["author"]), tenant_role="author"),
    Credential(
        "publisher of A", jwt_header("publisher-a", tenant=A, roles=["publisher"]), tenant_role="publisher"
    ),
    Credential("admin key of A", _key("live"), tenant_role="admin", api_key=True),
    Credential("admin of A", jwt_header("admin-a", tenant=A, roles=["admin"]), tenant_role="admin"),
    Credential("DID-auth admin of A", _did_auth, tenant_role="admin"),
    Credential("admin of B", jwt_header("admin-b", tenant=B, roles=["admin"]), tenant_b_admin=True),
    # Roles signed without a tenant count for nothing: the call acts in the default tenant, roleless.
    Credential("admin roles without a tenant", jwt_header("admin-a", roles=["admin"])),
    Credential("platform admin in A", jwt_header(ADMIN_ID, tenant=A, scope=ADMIN_SCOPE), platform=True),
]
