"""Opting out is per organisation, end to end through ``make dev``'s processes (the local Neo4j, the
SMTP catcher, the worker and the API as OS processes, ``bench/_chaos_stack.py`` without faults), driven
over HTTP as a mail client and a person drive them.

A parent both schools hold gets both schools' email. They unsubscribe from Riverside's with its RFC 8058
one-click POST; Riverside's next email does not reach them while Northside's does, and the page of that
link names Riverside. Then "from every organisation" (``scope=all``) on the page stops both.

The module's stack also carries a LearnCard-format tenant's notifications, verified by the reference
inbox against the API's DID document beside a standard tenant's, and the health guard's proof
(``test_the_guard_pauses_...``): its worker and API are restarted with waves of 20 and the Postmark
webhook's credentials, then put back."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import parseaddr
from functools import partial
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import httpx
import pytest

from bench._chaos_stack import Stack
from bench.chaos import Api
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from tests.support.concurrency import wait_for
from tests.support.health_guard import BOUNCE, COMPLAINT, PASSWORD, USER
from tests.support.postmark_standin import PostmarkStandin

pytestmark = pytest.mark.e2e

DEADLINE = 180.0
_wait = partial(wait_for, timeout=DEADLINE, every=0.2)
SCHOOLS = {"north": "Northside Academy", "river": "Riverside School"}


def _mail(mailbox: Path) -> set[tuple[str, str]]:
    """(recipient, subject) of every message the catcher holds."""
    return {(parseaddr(str(m["To"]))[1].split("@")[0], str(m["Subject"])) for m in _messages(mailbox)}


def _messages(mailbox: Path) -> list[EmailMessage]:
    parse = BytesParser(policy=policy.default).parsebytes
    return [cast(EmailMessage, parse(path.read_bytes())) for path in mailbox.glob("*.eml")]


def _send(api: Api, stack: Stack, tenant: str, campaign: str) -> None:
    """One email campaign of ``tenant`` to all its members, sent and walked to its end."""
    copy = {"subject": f"{campaign} news", "title": "Term dates", "body": "Read on", "ctaLabel": "Open"}
    api.mutate("campaigns.create", {"id": campaign, "name": campaign, "channels": ["email"], "email": copy})
    api.mutate("campaigns.addAudience", {"campaignId": campaign, "source": {"type": "all"}})
    api.mutate("campaigns.setStatus", {"campaignId": campaign, "status": "live"})
    preview = api.query("campaigns.previewDispatch", {"campaignId": campaign})
    started = api.mutate(
        "campaigns.dispatch", {"campaignId": campaign, "expectedPreviewToken": preview["previewToken"]}
    )
    dispatch_id = started["dispatchIds"]["email"]

    def finished() -> bool:
        return api.query("campaigns.getDispatch", {"dispatchId": dispatch_id})["finishedAt"] is not None

    _wait(f"{campaign} walked to its end", finished)


def test_a_parent_unsubscribes_from_one_school_and_then_from_every_one(
    dev_stack: Stack, dev_admin: Api
) -> None:
    with ExitStack() as clients:
        _journey(dev_stack, dev_admin, clients)


def _journey(dev_stack: Stack, dev_admin: Api, clients: ExitStack) -> None:
    settings = Settings(_env_file=dev_stack.env_file)  # type: ignore[call-arg]
    schools: dict[str, Api] = {}
    for tenant, name in SCHOOLS.items():
        dev_admin.mutate(
            "tenants.create", {"tenantId": tenant, "name": name, "appOrigin": f"https://{tenant}.example"}
        )
        token = mint_token(settings, profile_id="admin", scope=ADMIN_SCOPE, tenant_id=tenant)
        schools[tenant] = Api(dev_stack.api_url, token, patience=60)
        clients.enter_context(schools[tenant].client)
    # The platform names each person's tenants: the parent is held by both schools.
    people = {"parent": ["north", "river"], "north-neighbour": ["north"], "river-neighbour": ["river"]}
    rows: list[dict[str, Any]] = [
        {
            "profileId": pid,
            "tenants": tenants,
            "dob": "1980-01-01",
            "emails": [{"address": f"{pid}@example.com", "verified": True, "primary": True}],
        }
        for pid, tenants in people.items()
    ]
    dev_admin.mutate("profiles.upsert", {"profiles": rows})

    # Both schools reach the parent.
    for tenant, api in schools.items():
        _send(api, dev_stack, tenant, f"{tenant}-1")
    _wait(
        "both first emails",
        lambda: {("parent", "north-1 news"), ("parent", "river-1 news")} <= _mail(dev_stack.mailbox),
    )

    # One click in Riverside's email: the mail client's RFC 8058 POST to its List-Unsubscribe URL.
    [river_mail] = [m for m in _messages(dev_stack.mailbox) if str(m["Subject"]) == "river-1 news"
                    and "parent@" in str(m["To"])]  # fmt: skip
    link = re.fullmatch(r"<(.+)>", str(river_mail["List-Unsubscribe"]))
    assert link is not None and river_mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    one_click = httpx.post(
        link.group(1), content="List-Unsubscribe=One-Click",
        headers={"content-type": "application/x-www-form-urlencoded"}, timeout=30,
    )  # fmt: skip
    assert one_click.status_code == 200, one_click.text

    # The page of that link names Riverside, and offers every organisation.
    page = httpx.get(link.group(1), timeout=30)
    assert page.status_code == 200 and "Riverside School" in page.text and 'value="all"' in page.text
    assert "Northside" not in page.text

    # Riverside's next email does not reach the parent; Northside's does.
    for tenant, api in schools.items():
        _send(api, dev_stack, tenant, f"{tenant}-2")
    mail = _mail(dev_stack.mailbox)
    assert {("parent", "north-2 news"), ("river-neighbour", "river-2 news")} <= mail
    assert ("parent", "river-2 news") not in mail

    # "From every organisation" on the page: neither school's next email reaches them.
    action = re.search(r'action="([^"]+)"', page.text)
    assert action is not None
    every = httpx.post(
        httpx.URL(link.group(1)).join(action.group(1).replace("&amp;", "&")), content="scope=all",
        headers={"content-type": "application/x-www-form-urlencoded"}, timeout=30,
    )  # fmt: skip
    assert every.status_code == 200 and "from any organisation" in every.text
    for tenant, api in schools.items():
        _send(api, dev_stack, tenant, f"{tenant}-3")
    mail = _mail(dev_stack.mailbox)
    assert {("north-neighbour", "north-3 news"), ("river-neighbour", "river-3 news")} <= mail
    assert not {("parent", "north-3 news"), ("parent", "river-3 news")} & mail


# --- LearnCard's format through make dev's processes ----------------------------------------------


def _notify(api: Api, campaign: str) -> str:
    """One notify campaign of the caller's tenant to all its members, dispatched; its dispatch id."""
    copy = {"title": f"{campaign} news", "body": "Read on"}
    api.mutate(
        "campaigns.create", {"id": campaign, "name": campaign, "channels": ["notify"], "notification": copy}
    )
    api.mutate("campaigns.addAudience", {"campaignId": campaign, "source": {"type": "all"}})
    api.mutate("campaigns.setStatus", {"campaignId": campaign, "status": "live"})
    preview = api.query("campaigns.previewDispatch", {"campaignId": campaign})
    started = api.mutate(
        "campaigns.dispatch", {"campaignId": campaign, "expectedPreviewToken": preview["previewToken"]}
    )
    return str(started["dispatchIds"]["notify"])


def _stored(db: Path, campaign: str) -> dict[str, dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute(
            "SELECT recipient, payload, receive_count FROM notifications WHERE campaign_id = ?", (campaign,)
        ).fetchall()
    finally:
        conn.close()
    return {str(r[0]): {**json.loads(r[1]), "receiveCount": r[2]} for r in rows}


def test_a_learncard_tenant_is_delivered_to_the_reference_inbox_beside_a_standard_one(
    dev_stack: Stack, dev_admin: Api
) -> None:
    """``make dev`` as it runs with LearnCard's format: the worker signs with the env file's
    ``CAMPAIGN_DID_KEY``, the reference inbox trusts the engine's DID (``did:web:<DOMAIN_NAME>``) and
    verifies every bearer against the API's ``/.well-known/did.json``. A tenant's ``notificationFormat``
    changes its own sends only: the other tenant's arrive in the standard format, in the same inbox."""
    settings = Settings(_env_file=dev_stack.env_file)  # type: ignore[call-arg]
    formats = {"lcn": "learncard", "std": None}
    people = {f"{tenant}-{i}": tenant for tenant in formats for i in range(3)}
    dev_admin.mutate("profiles.upsert", {"profiles": [
        {"profileId": pid, "tenants": [tenant], "dob": "1980-01-01"} for pid, tenant in people.items()
    ]})  # fmt: skip
    dispatches = {}
    with ExitStack() as clients:
        for tenant, fmt in formats.items():
            record = {"tenantId": tenant, "name": tenant, **({"notificationFormat": fmt} if fmt else {})}
            dev_admin.mutate("tenants.create", record)
            token = mint_token(settings, profile_id="admin", scope=ADMIN_SCOPE, tenant_id=tenant)
            api = Api(dev_stack.api_url, token, patience=60)
            clients.enter_context(api.client)
            dispatches[tenant] = (api, _notify(api, f"{tenant}-news"))
        for tenant, (api, dispatch_id) in dispatches.items():
            _wait(f"{tenant}'s members notified", lambda api=api, d=dispatch_id: api.query(
                "campaigns.getDispatch", {"dispatchId": d})["acknowledged"] == 3)  # fmt: skip
    did = "did:web:" + quote(f"127.0.0.1:{dev_stack.api_port}", safe="")
    assert httpx.get(f"{dev_stack.api_url}/.well-known/did.json", timeout=30).json()["id"] == did
    learncard, standard = _stored(dev_stack.inbox_db, "lcn-news"), _stored(dev_stack.inbox_db, "std-news")
    assert sorted(learncard) == ["lcn-0", "lcn-1", "lcn-2"] and sorted(standard) == [
        "std-0",
        "std-1",
        "std-2",
    ]
    for pid, item in learncard.items():
        assert item["type"] == "ANNOUNCEMENT" and item["from"] == {"did": did}
        assert item["to"]["profileId"] == pid and item["message"]["title"] == "lcn-news news"
        assert item["receiveCount"] == 1
    for pid, item in standard.items():
        assert item["recipient"] == pid and "from" not in item and item["receiveCount"] == 1


# --- the health guard through make dev's processes ------------------------------------------------

GUARD_ENV = {
    "CAMPAIGN_EMAIL_PAGE_SIZE": "20",
    "CAMPAIGN_DISPATCH_PAGE_SIZE": "20",
    "CAMPAIGN_DISPATCH_DELAY_SECONDS": "4",  # the window the webhook posts land in, between waves
    "CAMPAIGN_GUARD_MIN_SAMPLE": "20",
    "POSTMARK_WEBHOOK_USERNAME": USER,
    "POSTMARK_WEBHOOK_PASSWORD": PASSWORD,
}
GUARD_PEOPLE = [f"guard{i:03d}" for i in range(100)]


@contextmanager
def _restarted(stack: Stack, env: dict[str, str]) -> Iterator[None]:
    """The worker and the API with ``env`` added; both restarted as they were afterwards."""
    saved = dict(stack.env)

    def restart() -> None:
        stack.kill_worker()
        stack.start_worker()
        stack.stop_api()
        stack.start_api()

    stack.env.update(env)
    restart()
    try:
        yield
    finally:
        stack.env.clear()
        stack.env.update(saved)
        restart()


def _dispatch(api: Api, campaign: str) -> str:
    copy = {"subject": f"{campaign} news", "title": "Term dates", "body": "Read on", "ctaLabel": "Open"}
    api.mutate("campaigns.create", {"id": campaign, "name": campaign, "channels": ["email"], "email": copy})
    api.mutate("campaigns.addAudience", {"campaignId": campaign, "source": {"type": "all"}})
    api.mutate("campaigns.setStatus", {"campaignId": campaign, "status": "live"})
    preview = api.query("campaigns.previewDispatch", {"campaignId": campaign})
    started = api.mutate(
        "campaigns.dispatch", {"campaignId": campaign, "expectedPreviewToken": preview["previewToken"]}
    )
    return str(started["dispatchIds"]["email"])


def _post(stack: Stack, base: dict[str, Any], record_id: int, message_id: str, to: str) -> None:
    body = {**base, "ID": record_id, "MessageID": message_id, "Email": to}
    answer = httpx.post(f"{stack.api_url}/webhooks/postmark", json=body, auth=(USER, PASSWORD), timeout=30)
    assert answer.status_code == 200 and answer.json()["result"] == "applied", answer.text


def _paused(api: Api, dispatch_id: str) -> dict[str, Any]:
    def held() -> bool:
        return api.query("campaigns.getDispatch", {"dispatchId": dispatch_id})["status"] in (
            "paused",
            "completed",
        )

    _wait(f"{dispatch_id} paused or completed", held)
    found: dict[str, Any] = api.query("campaigns.getDispatch", {"dispatchId": dispatch_id})
    return found


def test_the_guard_pauses_a_bad_send_through_the_dev_processes_for_both_providers(
    dev_stack: Stack, dev_admin: Api
) -> None:
    """100 recipients in waves of 20: two hard bounces of the first SMTP wave, posted as soon as the
    catcher holds it (Message-IDs with and without their brackets), pause that send with the hard-bounce
    rate; a spam complaint about the first wave through the Postmark stand-in pauses the other tenant's
    send with the complaint rate. Each counts only on its own dispatch, though the people are in both."""
    settings = Settings(_env_file=dev_stack.env_file)  # type: ignore[call-arg]
    tenants = {"guard-smtp": "Guard SMTP", "guard-pm": "Guard Postmark"}
    apis: dict[str, Api] = {}
    with ExitStack() as clients, PostmarkStandin() as postmark:
        for tenant, name in tenants.items():
            dev_admin.mutate("tenants.create", {"tenantId": tenant, "name": name,
                                                "appOrigin": f"https://{tenant}.example"})  # fmt: skip
            token = mint_token(settings, profile_id="admin", scope=ADMIN_SCOPE, tenant_id=tenant)
            apis[tenant] = Api(dev_stack.api_url, token, patience=60)
            clients.enter_context(apis[tenant].client)
        rows = [{"profileId": pid, "tenants": list(tenants), "dob": "1980-01-01",
                 "emails": [{"address": f"{pid}@example.com", "verified": True, "primary": True}]}
                for pid in GUARD_PEOPLE]  # fmt: skip
        dev_admin.mutate("profiles.upsert", {"profiles": rows})

        with _restarted(dev_stack, GUARD_ENV):
            smtp = _dispatch(apis["guard-smtp"], "guard-smtp-1")

            def first_wave() -> list[EmailMessage]:
                return [m for m in _messages(dev_stack.mailbox) if str(m["Subject"]) == "guard-smtp-1 news"]

            _wait("the first SMTP wave", lambda: len(first_wave()) >= 20)
            wave = first_wave()[:2]
            _post(
                dev_stack,
                BOUNCE,
                41_001,
                str(wave[0]["Message-ID"]).strip(),
                parseaddr(str(wave[0]["To"]))[1],
            )
            _post(dev_stack, BOUNCE, 41_002, str(wave[1]["Message-ID"]).strip().strip("<>"),
                  parseaddr(str(wave[1]["To"]))[1])  # fmt: skip
            paused = _paused(apis["guard-smtp"], smtp)
            sent = len(first_wave())
        assert paused["status"] == "paused", paused
        assert paused["pauseReason"]["rate"] == "hardBounce" and paused["hardBounces"] == 2
        assert paused["pauseReason"]["message"].startswith("hard_bounce_rate ")
        assert sent < len(GUARD_PEOPLE)

        pm_env = {**GUARD_ENV, "CAMPAIGN_EMAIL_PROVIDER": "postmark", "POSTMARK_API_KEY": postmark.token,
                  "POSTMARK_API_URL": postmark.url, "POSTMARK_BROADCAST_STREAM": "broadcast"}  # fmt: skip
        with _restarted(dev_stack, pm_env):
            other = _dispatch(apis["guard-pm"], "guard-pm-1")
            _wait("the first Postmark wave", lambda: len(postmark.accepted) >= 20)
            first = postmark.accepted[0]
            _post(dev_stack, COMPLAINT, 42_001, str(first["MessageID"]), str(first["To"]))
            held = _paused(apis["guard-pm"], other)
            accepted = len(postmark.accepted)
        assert held["status"] == "paused", held
        assert held["pauseReason"]["rate"] == "complaint"
        assert (held["complaints"], held["hardBounces"]) == (1, 0)  # the SMTP bounces are not its own
        assert accepted < len(GUARD_PEOPLE) - 2  # the two bounced addresses are suppressed for all
        assert apis["guard-smtp"].query("campaigns.getDispatch", {"dispatchId": smtp})["complaints"] == 0
        for tenant, dispatch_id in (("guard-smtp", smtp), ("guard-pm", other)):  # each pause audited
            trail = apis[tenant].query("audit.list", {})["records"]
            assert [e["procedure"] for e in trail if e["actor"] == "system:health-guard"
                    and e["targetId"] == dispatch_id] == ["delivery.healthGuard"]  # fmt: skip
