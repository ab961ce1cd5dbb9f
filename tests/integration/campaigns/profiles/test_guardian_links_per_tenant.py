"""Guardian links per tenant (docs/people.md): a tenant credential writes links of its own and never
changes or deletes another tenant's link or consent; platform credentials write the shared links."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from campaign_engine.api.auth import mint_token
from campaign_engine.campaigns.profiles.guardians import LinkPair, LinkRow, Provenance, set_guardians
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph, Tx
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok

ADULT, MINOR = "1980-01-01", "2016-01-01"


@pytest.fixture
def api(base_settings: Settings, graph: Graph) -> Iterator[TrpcClient]:
    with api_client(base_settings, graph) as client:
        yield client


@pytest.fixture
def shared_family(graph: Graph) -> None:
    """A child and a parent both tenants hold."""
    graph.run(
        "CREATE (:Profile {profileId: 'kid', dob: $minor, tenants: ['alpha', 'beta']}), "
        "(:Profile {profileId: 'mum', dob: $adult, tenants: ['alpha', 'beta']})",
        minor=MINOR, adult=ADULT,
    )  # fmt: skip


def _guardians(api: TrpcClient, tenant: str | None, links: list[tuple[str, str]]) -> Any:
    """kid's guardian set, written by an author of ``tenant`` (None: a platform admin)."""
    body = {
        "profiles": [{"profileId": "kid", "guardians": [{"profileId": g, "consent": c} for g, c in links]}]
    }
    if tenant is None:
        return ok(api.mutate("profiles.upsert", body, as_=ADMIN_ID, admin=True))
    token = mint_token(
        api.settings, profile_id=f"{tenant}-author", scope="", tenant_id=tenant, roles=["author"]
    )
    return ok(api.http.post("/trpc/profiles.upsert", json=body, headers={"authorization": f"Bearer {token}"}))


def _links(graph: Graph) -> dict[str | None, dict[str, Any]]:
    """kid's links by the tenant that recorded them (None: shared), each with every property."""
    rows = graph.run(
        "MATCH (:Profile {profileId: 'mum'})-[r:GUARDIAN_OF]->(:Profile {profileId: 'kid'}) "
        "RETURN r.tenantId AS tenant, properties(r) AS props"
    )
    found = {r["tenant"]: r["props"] for r in rows}
    assert len(found) == len(rows), rows  # one link per writer and pair
    return found


@pytest.mark.usefixtures("shared_family")
def test_a_tenant_never_changes_or_deletes_another_tenants_link(api: TrpcClient, graph: Graph) -> None:
    assert _guardians(api, None, [("mum", "granted")])["guardianLinks"] == 1
    assert _guardians(api, "beta", [("mum", "revoked")])["guardianLinks"] == 1
    before = _links(graph)
    assert {t: p["consent"] for t, p in before.items()} == {None: "granted", "beta": "revoked"}
    assert before["beta"]["setBy"] == "beta-author"

    # Alpha grants: a link of alpha's own; beta's revoked link and the shared one are as they were.
    assert _guardians(api, "alpha", [("mum", "granted")])["guardianLinks"] == 1
    after = _links(graph)
    assert {t: after[t] for t in before} == before
    assert after["alpha"]["consent"] == "granted" and after["alpha"]["setBy"] == "alpha-author"

    # Alpha's empty set removes alpha's link only.
    _guardians(api, "alpha", [])
    assert _links(graph) == before

    # The platform's set replaces the shared link only: beta's stays.
    _guardians(api, None, [])
    assert _links(graph) == {"beta": before["beta"]}
    # And beta's own again: unchanged consent writes nothing.
    assert _guardians(api, "beta", [("mum", "revoked")])["guardianLinks"] == 0


@pytest.mark.usefixtures("shared_family")
def test_a_tenants_first_link_without_consent_takes_the_shared_consent(api: TrpcClient, graph: Graph) -> None:
    """A roster carries no consent: a tenant importing one after the upgrade keeps the consent the
    shared link already had, rather than revoking it for that tenant."""
    _guardians(api, None, [("mum", "granted")])
    now = datetime(2026, 3, 1, tzinfo=UTC)

    def tx_fn(tx: Tx) -> int:
        rows = [LinkRow("kid", (LinkPair("mum", None),))]
        return set_guardians(tx, rows, tenant="alpha", adult_age=18, provenance=Provenance("oneroster", now))

    assert graph.write(tx_fn) == 1
    links = _links(graph)
    assert (links["alpha"]["consent"], links["alpha"]["source"]) == ("granted", "oneroster")
    assert links[None]["source"] == "api"
