"""What the graph-outage test uses: the outage's processes and servers, the worker's environment, the
seeded campaign, and the calls it makes while the graph is down with the answers they must get."""

from __future__ import annotations

import email
import email.policy
import json
import socket
import sqlite3
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns.sending.dispatch_reads import DispatchPublic, list_dispatches
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.local_neo4j import LocalNeo4j
from tests.conftest import ADMIN_ID
from tests.support.concurrency import wait_for as wait_until
from tests.support.delivery import make_campaign
from tests.support.email import EMAIL_COPY
from tests.support.processes import worker_env

CAMPAIGN = "c-outage"
MEMBERS = [f"m{i:04d}" for i in range(80)]
PAGE_SIZE = 10
CALL_BOUND = 10.0  # seconds: one API answer while the graph is down (the API waits ~1 s for it)
DEADLINE = 120.0


wait_for = partial(wait_until, timeout=DEADLINE, every=0.1)


@dataclass
class Outage:
    """The running system around ``neo4j``: what the test drives and reads back."""

    neo4j: LocalNeo4j
    settings: Settings
    graph: Graph
    api: str
    inbox_db: Path
    mailbox: Path
    worker: subprocess.Popen[bytes]

    def admin(self) -> dict[str, str]:
        return {
            "authorization": f"Bearer {mint_token(self.settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)}"
        }

    def user(self, profile_id: str) -> dict[str, str]:
        return {"authorization": f"Bearer {mint_token(self.settings, profile_id=profile_id)}"}

    def inbox_rows(self) -> dict[str, int]:
        """recipient -> how many POSTs the inbox received for its one durable record."""
        conn = sqlite3.connect(f"file:{self.inbox_db}?mode=ro", uri=True, timeout=10)
        try:
            rows = conn.execute(
                "SELECT recipient, receive_count FROM notifications WHERE campaign_id = ? AND test_id = ''",
                (CAMPAIGN,),
            ).fetchall()
        except sqlite3.OperationalError:  # the table is created with the first notification
            return {}
        finally:
            conn.close()
        return {str(recipient): int(count) for recipient, count in rows}

    def mail_to(self) -> Counter[str]:
        """How many caught messages went to each address."""
        counts: Counter[str] = Counter()
        for path in self.mailbox.glob("*.eml"):
            message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
            counts[str(message["To"])] += 1
        return counts

    def dispatches(self) -> dict[str, DispatchPublic]:
        return {d.channel: d for d in list_dispatches(self.graph, CAMPAIGN)}


def _worker_env(settings: Settings) -> dict[str, str]:
    return worker_env(
        settings,
        CAMPAIGN_DISPATCH_PAGE_SIZE=str(PAGE_SIZE),
        CAMPAIGN_EMAIL_PAGE_SIZE=str(PAGE_SIZE),
        CAMPAIGN_DISPATCH_DELAY_SECONDS="1",
        # Longer than the outage: a message comes back only if the worker gave up on work in hand,
        # which is what this test must catch (as a second POST at the inbox or a second email).
        CAMPAIGN_QUEUE_VISIBILITY_SECONDS="600",
        CAMPAIGN_DELIVERY_RETRY_SECONDS="1",
        CAMPAIGN_WEBHOOK_TIMEOUT_SECONDS="5",
    )


def _seed(graph: Graph) -> None:
    """A live notify + email campaign; members are adults with a verified primary address."""
    make_campaign(graph, CAMPAIGN, channels=["notify", "email"], email=EMAIL_COPY, now=datetime.now(UTC))
    graph.run(
        """
        UNWIND $ids AS id
        CREATE (p:Profile {profileId: id, dob: '1990-01-01', isManaged: false, isServiceProfile: false,
                           announcementPushOptOut: false, announcementEmailOptOut: false})
        CREATE (p)-[:HAS_CONTACT_METHOD]->(:ContactMethod {type: 'email', value: id + '@example.com',
                                                           isPrimary: true, isVerified: true})
        WITH p
        MATCH (c:Campaign {id: $campaignId})
        CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: p.profileId, source: 'test',
                                           addedAt: '2026-01-01T00:00:00.000000Z', selfEnrolled: false}]->(c)
        """,
        ids=MEMBERS,
        campaignId=CAMPAIGN,
    )


# --- what the API and the unsubscribe pages answer -----------------------------------------------------


@dataclass(frozen=True)
class Call:
    path: str
    method: str
    data: Any
    who: str  # "admin" or a profile id


def _calls() -> list[Call]:
    ref = {"campaignId": CAMPAIGN}
    return [
        Call("campaigns.list", "GET", {}, "admin"),
        Call("campaigns.get", "GET", ref, "admin"),
        Call("campaigns.previewDispatch", "GET", ref, "admin"),
        Call("profiles.upsert", "POST", {"profiles": [{"profileId": "newcomer"}]}, "admin"),
        Call("campaigns.setStatus", "POST", {**ref, "status": "paused"}, "admin"),
        Call("campaigns.getMyCampaigns", "GET", {}, MEMBERS[0]),  # rate limit + engagement batch
        Call("campaigns.recordEvent", "POST", {**ref, "event": "shown"}, MEMBERS[1]),
    ]


def _send(outage: Outage, call: Call) -> tuple[Call, httpx.Response, float]:
    headers = outage.admin() if call.who == "admin" else outage.user(call.who)
    started = time.monotonic()
    with httpx.Client(base_url=outage.api, timeout=60) as client:
        if call.method == "GET":
            answer = client.get(
                f"/trpc/{call.path}", params={"input": json.dumps(call.data)}, headers=headers
            )
        else:
            answer = client.post(f"/trpc/{call.path}", json=call.data, headers=headers)
    return call, answer, time.monotonic() - started


def _assert_unavailable_envelope(answer: httpx.Response, path: str) -> None:
    assert answer.status_code == 503, (path, answer.status_code, answer.text)
    error = answer.json()["error"]
    assert error["code"] == -32603, (path, error)
    assert error["data"]["code"] == "SERVICE_UNAVAILABLE", (path, error)
    assert error["data"]["httpStatus"] == 503, (path, error)
    assert error["data"]["path"] == path, (path, error)


def _page_headers(answer: httpx.Response) -> dict[str, str]:
    """What an unsubscribe answer promises the browser; per-answer values (length, date, request id)
    left out."""
    volatile = {"content-length", "date", "server", "retry-after", "x-request-id"}
    return {k: v for k, v in answer.headers.items() if k not in volatile}


def _unsubscribe(outage: Outage, token: str, *, one_click: bool, language: str = "en") -> httpx.Response:
    path = "/campaigns/unsubscribe" if one_click else "/campaigns/unsubscribe/browser"
    with httpx.Client(base_url=outage.api, timeout=60) as client:
        return client.post(
            path,
            params={"token": token},
            content=b"List-Unsubscribe=One-Click",
            headers={"content-type": "application/x-www-form-urlencoded", "accept-language": language},
        )


def _confirm_page(outage: Outage, token: str) -> httpx.Response:
    return httpx.get(f"{outage.api}/campaigns/unsubscribe", params={"token": token}, timeout=60)


def _refused(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) != 0
