"""LearnCard's receiver format against LearnCard's own published validator: a Node server
(``tests/e2e/learncard_receiver/receiver.mjs``) checks every POST of a ``learncard``-format dispatch, a
self-test and a guardian-routed send with ``@learncard/types``' ``LCNNotificationValidator`` (its type
enum extended by ANNOUNCEMENT), verifies each bearer JWT with ``jose`` against the API's
``/.well-known/did.json`` and answers ``true`` (bare, or in a tRPC envelope). Every recipient is counted
once. Node and npm are required: without them this test fails, it never skips.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.config import Settings
from campaign_engine.did.engine import new_seed
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_queues, build_worker
from tests.conftest import ADMIN_ID
from tests.support.delivery import StepClock, add_members, delivery_settings, drain, make_campaign, notified
from tests.support.servers import serve_in_thread

# pytest-xdist: npm ci into tests/e2e/learncard_receiver (one folder for every worker): one worker runs it.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("test_learncard_receiver")]

RECEIVER_DIR = Path(__file__).parent / "learncard_receiver"
ADULT, MINOR = "1980-05-17", "2015-09-01"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"'{name}' is required for the LearnCard receiver end-to-end test (install Node.js and npm)"
        )
    return path


@pytest.fixture(scope="module")
def installed() -> Path:
    """The pinned packages, installed the way CI does: ``npm ci`` from the committed lock."""
    node, npm = _tool("node"), _tool("npm")
    probe = [node, "--input-type=module", "-e", "await import('@learncard/types'); await import('jose');"]
    if subprocess.run(probe, cwd=RECEIVER_DIR, capture_output=True, timeout=60).returncode != 0:
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=RECEIVER_DIR,
                       check=True, timeout=300)  # fmt: skip
    return RECEIVER_DIR / "receiver.mjs"


@contextmanager
def _receiver(script: Path, did_url: str, answer: str) -> Iterator[str]:
    process = subprocess.Popen(
        [_tool("node"), str(script), did_url, answer], cwd=script.parent, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def _audience(graph: Graph, hook: str) -> None:
    """A member, and a minor whose guardian (no member) is routed the guardian copy; the admin who
    tests the campaign. Ids of three characters or more: LearnCard's profileId validator wants them."""
    copy = {"notification": {"title": "For families", "body": "News from class"}}
    make_campaign(graph, "c1", minors="guardians", guardianCopy=copy)
    add_members(graph, "c1", ["member-1"], webhook=hook, dob=ADULT, tenants=["default"])
    add_members(graph, "c1", ["minor-1"], webhook=hook, dob=MINOR, isManaged=True, tenants=["default"])
    graph.run(
        "UNWIND [$admin, 'guardian-1'] AS id"
        " CREATE (g:Profile {profileId: id, dob: $adult, tenants: ['default'],"
        " notificationsWebhook: $hook, announcementPushOptOut: false, announcementEmailOptOut: false})"
        " WITH g WHERE g.profileId = 'guardian-1' MATCH (k:Profile {profileId: 'minor-1'})"
        " CREATE (g)-[:GUARDIAN_OF {consent: 'granted', source: 'api'}]->(k)",
        admin=ADMIN_ID, adult=ADULT, hook=hook,
    )  # fmt: skip


@pytest.mark.parametrize("answer", ["bare", "envelope"])
def test_learncards_validator_takes_every_post_and_each_recipient_counts_once(
    base_settings: Settings, graph: Graph, tmp_path: Path, installed: Path, answer: str
) -> None:
    settings = delivery_settings(
        base_settings, notifications_format="learncard", campaign_did_key=SecretStr(new_seed()),
        campaign_local_queue_path=str(tmp_path / "queue.sqlite3"),
    )  # fmt: skip
    queues = build_queues(settings)
    headers = {"authorization": f"Bearer {mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)}"}
    app = create_app(settings, graph=graph, clock=StepClock())
    with serve_in_thread(app) as api, _receiver(installed, f"{api}/.well-known/did.json", answer) as hook:

        def call(path: str, data: dict[str, Any], *, mutation: bool = False) -> Any:
            if mutation:
                answer = httpx.post(f"{api}/trpc/campaigns.{path}", json=data, headers=headers, timeout=60)
            else:
                query = {"input": json.dumps(data)}
                answer = httpx.get(f"{api}/trpc/campaigns.{path}", params=query, headers=headers, timeout=60)
            return answer.json()["result"]["data"]

        _audience(graph, f"{hook}/hook")
        test_id = call("sendTestToMe", {"campaignId": "c1"}, mutation=True)["testId"]
        token = call("previewDispatch", {"campaignId": "c1"})["previewToken"]
        started = call("dispatch", {"campaignId": "c1", "expectedPreviewToken": token}, mutation=True)
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
        seen: list[dict[str, Any]] = httpx.get(f"{hook}/log", timeout=30).json()
        stats = call("getStats", {"campaignId": "c1"})
    assert [entry["errors"] for entry in seen] == [[]] * len(seen)
    by_recipient = {entry["body"]["to"]["profileId"]: entry["body"] for entry in seen}
    assert (
        sorted(by_recipient) == sorted([ADMIN_ID, "member-1", "guardian-1"]) and len(seen) == 3
    )  # the minor's goes to their guardian
    assert by_recipient[ADMIN_ID]["data"]["metadata"]["campaignTestId"] == test_id
    assert by_recipient["guardian-1"]["message"]["title"] == "For families"
    assert by_recipient["guardian-1"]["data"]["metadata"]["audience"] == "guardian"
    assert "campaignTestId" not in by_recipient["member-1"]["data"]["metadata"]
    assert {entry["issuer"] for entry in seen} == {f"did:web:{settings.domain_name}"}
    assert notified(graph, "c1") == ["guardian-1", "member-1"]  # the test never counts
    assert get_dispatch(graph, started["dispatchId"]).acknowledged == 2
    assert stats["notified"] == 2  # the member and the guardian, once each; the test never
