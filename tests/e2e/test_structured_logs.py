"""Structured logs without secrets, proven on the logs of real processes.

The API (``campaign-engine serve``: uvicorn with its access log), the worker and the reference inbox run
as OS processes with real settings, against the session's Neo4j, one durable local queue file and a
loopback Postmark stand-in. An admin previews and dispatches a notify + email campaign through the API,
every member is POSTed and emailed, then one member unsubscribes through the web page (GET, then POST)
and one through the RFC 8058 one-click POST, using the links their emails carried, and the admin looks
up a member's address in ``suppressions.get`` (a GET: the address rides in the query string). All
processes log at DEBUG.

Each process's stderr is captured whole. Every line must be one JSON object; lines must carry
``requestId`` (the caller's, echoed in ``X-Request-Id``), ``campaignId``, ``dispatchId`` and
``deliveryId``; and no secret may appear anywhere, in any common encoding: the webhook, unsubscribe and
JWT secrets, the Postmark token, the admin's bearer token, every unsubscribe token issued and every
member's address. The access log really sees the tokens and the address (its lines for those requests
are asserted), so the test fails without the redaction step of ``observability/logs.py``.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, unquote

import httpx
import pytest
from pydantic import SecretStr

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID, TEST_JWT_SECRET, free_port
from tests.support.concurrency import wait_for as wait_until
from tests.support.delivery import WEBHOOK_SECRET, make_campaign
from tests.support.email import EMAIL_COPY, ORIGINS, UNSUBSCRIBE_SECRET, add_email_members, address_of
from tests.support.postmark_standin import PostmarkStandin
from tests.support.processes import CliProcess

pytestmark = pytest.mark.e2e

CAMPAIGN = "c-logs"
MEMBERS = ["ada", "bob", "chloé", "dan"]
POSTMARK_TOKEN = "9f8e7d6c-postmark-server-token-5b4a"
REQUEST_ID = "e2e-dispatch-0001"

wait_for = partial(wait_until, timeout=120.0, every=0.1)


@dataclass
class System:
    graph: Graph
    api: str
    inbox_db: Path
    postmark: PostmarkStandin
    admin_token: str
    processes: dict[str, CliProcess] = field(default_factory=dict)

    def admin(self, **headers: str) -> dict[str, str]:
        return {"authorization": f"Bearer {self.admin_token}", **headers}

    def inbox_count(self) -> int:
        conn = sqlite3.connect(f"file:{self.inbox_db}?mode=ro", uri=True, timeout=10)
        try:
            return int(conn.execute("SELECT count(*) FROM notifications").fetchone()[0])
        except sqlite3.OperationalError:  # created with the first notification
            return 0
        finally:
            conn.close()


def _env(tmp: Path, *, inbox_port: int, postmark_url: str, neo4j: Settings) -> dict[str, str]:
    prefixes = (
        "CAMPAIGN_",
        "NOTIFICATIONS_",
        "NEO4J_",
        "AUTH_",
        "AWS_",
        "SMTP_",
        "EMAIL_",
        "POSTMARK_",
        "LOG_",
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    return {
        **clean,
        "LOG_LEVEL": "DEBUG",
        "NEO4J_URI": neo4j.neo4j_uri,
        "NEO4J_USER": neo4j.neo4j_user,
        "NEO4J_PASSWORD": neo4j.neo4j_password.get_secret_value(),
        "AUTH_JWT_SECRET": TEST_JWT_SECRET,
        "CAMPAIGN_ADMIN_PROFILE_IDS": ADMIN_ID,
        "DOMAIN_NAME": "campaigns.test",
        "CAMPAIGN_QUEUE_BACKEND": "local",
        "CAMPAIGN_LOCAL_QUEUE_PATH": str(tmp / "queue.sqlite3"),
        "NOTIFICATIONS_WEBHOOK_URL": f"http://127.0.0.1:{inbox_port}/api/notifications/send",
        "NOTIFICATIONS_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
        "CAMPAIGN_LOCAL_DEVELOPMENT": "true",  # loopback http receivers on free ports
        "CAMPAIGN_EMAIL_PROVIDER": "postmark",
        "POSTMARK_API_KEY": POSTMARK_TOKEN,
        "POSTMARK_API_URL": postmark_url,
        "EMAIL_FROM": "news@campaigns.test",
        "CAMPAIGN_UNSUBSCRIBE_SECRET": UNSUBSCRIBE_SECRET,
        "CAMPAIGN_APP_ORIGINS": ORIGINS,
        "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
        "CAMPAIGN_DELIVERY_RETRY_SECONDS": "1",
        "CAMPAIGN_WORKER_THREADS": "2",
    }


def _start(name: str, args: list[str], env: dict[str, str], tmp: Path) -> CliProcess:
    return CliProcess(args, env, tmp / f"{name}.stdout", stderr=tmp / f"{name}.stderr")


def _stderr(process: CliProcess) -> Path:
    assert process.stderr is not None  # _start keeps it apart: the structured log
    return process.stderr


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def system(graph: Graph, base_settings: Settings, tmp_path: Path) -> Iterator[System]:
    inbox_port, api_port = free_port(), free_port()
    with PostmarkStandin(token=POSTMARK_TOKEN) as postmark:
        env = _env(tmp_path, inbox_port=inbox_port, postmark_url=postmark.url, neo4j=base_settings)
        settings = Settings(auth_jwt_secret=SecretStr(TEST_JWT_SECRET), _env_file=None)
        found = System(
            graph=graph,
            api=f"http://127.0.0.1:{api_port}",
            inbox_db=tmp_path / "inbox.sqlite3",
            postmark=postmark,
            admin_token=mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE),
        )
        try:
            inbox = ["inbox", "--port", str(inbox_port), "--db", str(found.inbox_db)]
            found.processes["inbox"] = _start("inbox", inbox, env, tmp_path)
            found.processes["api"] = _start("api", ["serve", "--port", str(api_port)], env, tmp_path)
            found.processes["worker"] = _start("worker", ["worker"], env, tmp_path)
            wait_for("the inbox", lambda: _answers(f"http://127.0.0.1:{inbox_port}/healthz"))
            wait_for("the API", lambda: _answers(f"{found.api}/healthz"))
            yield found
        finally:
            for process in found.processes.values():
                process.stop()


def _trpc_get(system: System, path: str, data: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.get(
        f"{system.api}/trpc/{path}",
        params={"input": json.dumps(data)},
        headers=system.admin(**headers),
        timeout=60,
    )


def _unsubscribe_tokens(postmark: PostmarkStandin) -> dict[str, str]:
    """Recipient address -> the unsubscribe token its email carried."""
    tokens = {}
    for message in postmark.accepted:
        headers = {h["Name"]: h["Value"] for h in message["Headers"]}
        match = re.fullmatch(
            r"<https://campaigns\.test/campaigns/unsubscribe\?token=([^>]+)>", headers["List-Unsubscribe"]
        )
        assert match is not None, headers
        tokens[message["To"]] = unquote(match.group(1))
    return tokens


def _encodings(secret: str) -> set[str]:
    """The forms a value takes on its way into a log line: as is, in a JSON string, and either of those
    in a URL (a tRPC query's input is JSON, then URL-encoded)."""
    plain = {secret, json.dumps(secret)[1:-1]}
    return plain | {quote(form, safe="") for form in plain} | {quote_plus(form) for form in plain}


def test_logs_of_a_full_dispatch_are_json_with_bound_ids_and_no_secrets(system: System) -> None:
    make_campaign(system.graph, CAMPAIGN, channels=["notify", "email"], email=EMAIL_COPY)
    add_email_members(system.graph, CAMPAIGN, MEMBERS)

    preview = _trpc_get(system, "campaigns.previewDispatch", {"campaignId": CAMPAIGN})
    assert preview.status_code == 200, preview.text
    started = httpx.post(
        f"{system.api}/trpc/campaigns.dispatch",
        json={
            "campaignId": CAMPAIGN,
            "expectedPreviewToken": preview.json()["result"]["data"]["previewToken"],
        },
        headers=system.admin(**{"X-Request-Id": REQUEST_ID}),
        timeout=60,
    )
    assert started.status_code == 200, started.text
    assert started.headers["x-request-id"] == REQUEST_ID
    generated = httpx.get(f"{system.api}/healthz", headers={"X-Request-Id": "bad id with spaces"}, timeout=10)
    assert re.fullmatch(r"[0-9a-f]{32}", generated.headers["x-request-id"])  # not a sane token: ours

    def completed() -> bool:
        found = list_dispatches(system.graph, CAMPAIGN)
        return len(found) == 2 and all(d.status == "completed" for d in found)

    wait_for("both dispatches to complete", completed)
    wait_for("every notification at the inbox", lambda: system.inbox_count() == len(MEMBERS))
    dispatch_ids = {d.dispatch_id for d in list_dispatches(system.graph, CAMPAIGN)}
    tokens = _unsubscribe_tokens(system.postmark)
    assert sorted(tokens) == sorted(address_of(m) for m in MEMBERS)

    # ada: the web page (GET shows the confirmation, POST confirms); bob: the RFC 8058 one-click POST.
    web_token, one_click_token = tokens[address_of("ada")], tokens[address_of("bob")]
    page = httpx.get(f"{system.api}/campaigns/unsubscribe/browser", params={"token": web_token}, timeout=30)
    assert page.status_code == 200, page.text
    form = {"content-type": "application/x-www-form-urlencoded"}
    done = httpx.post(
        f"{system.api}/campaigns/unsubscribe/browser", params={"token": web_token}, headers=form, timeout=30
    )
    assert done.status_code == 200, done.text
    one_click = httpx.post(
        f"{system.api}/campaigns/unsubscribe",
        params={"token": one_click_token},
        content=b"List-Unsubscribe=One-Click",
        headers=form,
        timeout=30,
    )
    assert one_click.status_code == 200, one_click.text
    opted_out = system.graph.run(  # the campaign tenant's opt-out, on its view (docs/people.md)
        "MATCH (p:Profile)-[:HAS_VIEW]->(v:TenantView) WHERE v.announcementEmailOptOut"
        " RETURN p.profileId AS id ORDER BY id"
    )
    assert [row["id"] for row in opted_out] == ["ada", "bob"]
    # chloé follows the email's tracked button: both hops carry her click token in the query.
    [chloe] = [m for m in system.postmark.accepted if m["To"] == address_of("chloé")]
    [click_token] = re.findall(r"https://campaigns\.test/c\?token=([A-Za-z0-9%._-]+)", chloe["TextBody"])
    click_token = unquote(click_token)
    hop = httpx.get(f"{system.api}/c", params={"token": click_token}, timeout=30)
    assert hop.status_code == 302 and hop.url.path == "/c"  # not followed: the destination is not ours
    landed = httpx.get(f"{system.api}{hop.headers['location']}", timeout=30)
    assert landed.status_code == 302, landed.text
    lookup = _trpc_get(system, "suppressions.get", {"address": address_of("chloé")})
    assert lookup.status_code == 404, lookup.text  # not suppressed; the address was in the query

    for process in system.processes.values():
        process.stop()

    logs = {name: _stderr(p).read_text(encoding="utf-8") for name, p in system.processes.items()}
    outputs = {name: p.log.read_text(encoding="utf-8") for name, p in system.processes.items()}
    events: dict[str, list[dict[str, Any]]] = {}
    for name, text in logs.items():
        lines = [line for line in text.splitlines() if line.strip()]
        assert lines, f"{name} logged nothing"
        for line in lines:
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError:
                pytest.fail(f"{name} logged a line that is not JSON: {line[:300]}")
            assert isinstance(parsed, dict), (name, line[:300])
        events[name] = [json.loads(line) for line in lines]

    secrets = {
        "webhook secret": WEBHOOK_SECRET,
        "unsubscribe secret": UNSUBSCRIBE_SECRET,
        "JWT secret": TEST_JWT_SECRET,
        "Postmark token": POSTMARK_TOKEN,
        "admin bearer token": system.admin_token,
        **{f"unsubscribe token of {to}": token for to, token in tokens.items()},
        "click token": click_token,
        **{f"address of {m}": address_of(m) for m in MEMBERS},
    }
    everything = {
        **{f"{n} stderr": t for n, t in logs.items()},
        **{f"{n} stdout": t for n, t in outputs.items()},
    }
    leaks = [
        f"{what} in {where}"
        for what, secret in secrets.items()
        for where, text in everything.items()
        if any(form in text for form in _encodings(secret))
    ]
    assert leaks == []

    api, worker, inbox = events["api"], events["worker"], events["inbox"]
    # The request id the caller chose, on the lines of its request (the access line among them).
    assert any(e.get("requestId") == REQUEST_ID and e["event"] == "http.request" for e in api)
    assert any(e.get("requestId") == REQUEST_ID and e["logger"].startswith("campaign_engine.") for e in api)
    # The access log saw every request whose query carried a token or an address: only paths remain.
    paths = [(e["method"], e["path"], e["status"]) for e in api if e["event"] == "http.request"]
    assert ("GET", "/campaigns/unsubscribe/browser?[redacted]", 200) in paths
    assert ("POST", "/campaigns/unsubscribe/browser?[redacted]", 200) in paths
    assert ("POST", "/campaigns/unsubscribe?[redacted]", 200) in paths
    assert ("GET", "/c?[redacted]", 302) in paths and ("GET", "/c/go?[redacted]", 302) in paths
    assert ("GET", "/trpc/suppressions.get?[redacted]", 404) in paths
    # The worker's page jobs and email pages name their campaign and dispatch; deliveries their id.
    assert {e.get("dispatchId") for e in worker if e.get("campaignId") == CAMPAIGN} >= dispatch_ids
    assert {e.get("channel") for e in worker if e["event"] == "jobs.page"} == {"notify", "email"}
    delivered = [e for e in worker if e.get("deliveryId") and e.get("campaignId") == CAMPAIGN]
    assert len({e["deliveryId"] for e in delivered}) == len(MEMBERS)
    assert {e["dispatchId"] for e in delivered} < dispatch_ids  # the notify Dispatch
    assert len({e.get("deliveryId") for e in inbox if e["event"] == "inbox.stored"}) == len(MEMBERS)
