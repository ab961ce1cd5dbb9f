"""The published LearnCard client signs in with DID-auth and works against the real API.

``tests/e2e/learncard_client/run.mjs`` drives ``@learncard/network-brain-client`` (npm, as published)
with a DID-auth function from LearnCard's own wallet stack: ``@learncard/core``, the native DIDKit plugin
for Node (``@learncard/didkit-plugin-node``), did:key from a seed, and the VC plugin's ``getDidAuthVp``.
The client fetches challenges with a nonce-less token, then signs every request with one, POSTs every
query and JSON-stringifies every input. A did:web person (LearnCard's did:web plugin over the same
wallet) signs in too: the test serves their DID document on loopback (DIDKit and this API both read a
``localhost`` did:web over http) and ``DOMAIN_NAME`` names that host, so the DID is the profile's alias
``did:web:<DOMAIN_NAME>:users:<profileId>``. Node and npm are required: the test fails without them.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from campaign_engine.api.app import create_app
from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.profiles import records as profiles
from campaign_engine.config import Settings
from campaign_engine.did import did_key_of
from campaign_engine.did.keys import raw_bytes
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.profile import ProfileUpsert
from campaign_engine.domain.types import system_clock
from campaign_engine.graph.graph import Graph
from tests.support.servers import serve_in_thread

# pytest-xdist: npm install into tests/e2e/learncard_client (one folder for every worker): one worker runs it.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("test_learncard_client")]

CLIENT_DIR = Path(__file__).parent / "learncard_client"
SEED, WEB_SEED = "a1" * 32, "b2" * 32  # LearnCard's didkey plugin: the seed is the Ed25519 private key


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"'{name}' is required for the LearnCard client end-to-end test (install Node.js and npm)"
        )
    return path


@pytest.fixture(scope="session")
def learncard_client() -> Path:
    """Installs the pinned LearnCard packages from the committed lock. Not ``npm ci``: it refuses this
    lock, because ``@learncard/didkit-plugin-node`` names optional per-platform binaries that were never
    published (darwin-arm64 at 0.2.28 answers 404), which no lock can list; ``npm install --no-save``
    installs the lock's versions and leaves the lock as committed. ``--omit=peer`` leaves out the peer
    packages of LearnCard's React Native app (react-native, expo), which a Node client never loads:
    half the files (517 MB of 874) and of the install's CPU."""
    node, npm = _tool("node"), _tool("npm")
    probe = [node, "--input-type=module", "-e", "await import('@learncard/network-brain-client');"]
    if subprocess.run(probe, cwd=CLIENT_DIR, capture_output=True, timeout=60).returncode != 0:
        subprocess.run(
            [npm, "install", "--no-save", "--omit=peer", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=CLIENT_DIR,
            check=True,
            timeout=900,
        )
    return CLIENT_DIR / "run.mjs"


@pytest.fixture
def did_host() -> Iterator[tuple[dict[str, Any], str]]:
    """A loopback web host for did:web documents; yields (documents by path, host:port)."""
    documents: dict[str, Any] = {}

    async def serve(request: Request) -> Response:
        found = documents.get(request.url.path)
        return JSONResponse(found) if found else Response(status_code=404)

    with serve_in_thread(Starlette(routes=[Route("/{path:path}", serve)])) as url:
        yield documents, url.removeprefix("http://127.0.0.1:")


def _document(did: str, seed: str) -> dict[str, Any]:
    public = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed)).public_key()
    x = base64.urlsafe_b64encode(raw_bytes(public)).rstrip(b"=").decode()
    method = {
        "id": f"{did}#owner",
        "type": "JsonWebKey2020",
        "controller": did,
        "publicKeyJwk": {"kty": "OKP", "crv": "Ed25519", "x": x},
    }
    return {
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": did,
        "verificationMethod": [method],
        "authentication": [method["id"]],
        "assertionMethod": [method["id"]],
    }


def _seed(graph: Graph, alice_did: str) -> None:
    rows = [
        {"profileId": "alice", "did": alice_did, "dob": "2000-01-01"},
        {"profileId": "dana", "dob": "2000-01-01"},  # signs in by the alias of her profileId
    ]
    profiles.upsert_profiles(graph, ProfileUpsert.model_validate({"profiles": rows}), tenant_id="default")
    now = system_clock()
    for campaign_id, extra in (("lc-live", {}), ("lc-open", {"discoverable": True})):
        data = {
            "id": campaign_id,
            "name": campaign_id,
            "channels": ["inApp"],
            "message": {"title": campaign_id},
        }
        definitions.create_campaign(
            graph, data=CampaignCreate.model_validate({**data, **extra}), tenant_id="default", now=now
        )
        definitions.set_status(graph, campaign_id=campaign_id, status="live", now=now)
    graph.run(
        "UNWIND ['alice', 'dana'] AS id MATCH (p:Profile {profileId: id}), (c:Campaign {id: 'lc-live'}) "
        "CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: id, addedAt: 'x', source: 'test', "
        "selfEnrolled: false}]->(c)"
    )


def test_the_published_learncard_client_signs_in_with_did_auth(
    learncard_client: Path, base_settings: Settings, graph: Graph, did_host: tuple[dict[str, Any], str]
) -> None:
    documents, port = did_host
    web_did = f"did:web:localhost%3A{port}:users:dana"
    documents["/users/dana/did.json"] = _document(web_did, WEB_SEED)
    alice_did = did_key_of(Ed25519PrivateKey.from_private_bytes(bytes.fromhex(SEED)).public_key())
    _seed(graph, alice_did)
    settings = base_settings.model_copy(
        update={
            "domain_name": f"localhost:{port}",
            "campaign_local_development": True,  # http to a loopback did:web host
            "campaign_allow_private_webhooks": True,  # and its loopback address
        }
    )
    with serve_in_thread(create_app(settings, graph=graph)) as url:
        env = {**os.environ, "LC_SEED": SEED, "LC_WEB_SEED": WEB_SEED, "LC_WEB_DID": web_did}
        env |= {"LC_CAMPAIGN": "lc-live", "LC_OPEN": "lc-open"}
        done = subprocess.run(
            [_tool("node"), str(learncard_client), url],
            cwd=learncard_client.parent, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["did"] == alice_did  # the wallet's did:key is the one stored on alice's profile

    assert out["mine"]["ok"], out["mine"]
    assert [c["campaignId"] for c in out["mine"]["data"]["campaigns"]] == ["lc-live"]
    assert out["shown"]["ok"], out["shown"]
    assert [c["campaignId"] for c in out["discover"]["data"]["campaigns"]] == ["lc-open"], out["discover"]
    assert out["enroll"]["ok"], out["enroll"]
    assert out["preferences"]["ok"] and out["optOut"]["ok"], (out["preferences"], out["optOut"])
    assert {c["campaignId"] for c in out["mineAfter"]["data"]["campaigns"]} == {"lc-live", "lc-open"}

    assert out["bare"]["status"] == 401, out["bare"]  # a nonce-less token only fetches challenges
    assert out["first"]["status"] == 200, out["first"]
    assert out["replay"]["status"] == 401, out["replay"]  # the same nonce twice

    assert out["webDid"] == web_did
    assert out["webMine"]["ok"], out["webMine"]
    assert [c["campaignId"] for c in out["webMine"]["data"]["campaigns"]] == ["lc-live"]
    assert out["webShown"]["ok"], out["webShown"]

    shown = graph.run(
        "MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(:Campaign {id: 'lc-live'}) WHERE s.shownFirstAt IS NOT NULL "
        "RETURN p.profileId AS id ORDER BY id"
    )
    assert [row["id"] for row in shown] == ["alice", "dana"]
    opted = graph.run("MATCH (p:Profile {profileId: 'alice'}) RETURN p.announcementEmailOptOut AS o")
    assert opted == [{"o": True}]
