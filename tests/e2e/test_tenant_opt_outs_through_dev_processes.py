"""Opting out is per organisation, end to end through ``make dev``'s processes (the local Neo4j, the
SMTP catcher, the worker and the API as OS processes, ``bench/_chaos_stack.py`` without faults), driven
over HTTP as a mail client and a person drive them.

A parent both schools hold gets both schools' email. They unsubscribe from Riverside's with its RFC 8058
one-click POST; Riverside's next email does not reach them while Northside's does, and the page of that
link names Riverside. Then "from every organisation" (``scope=all``) on the page stops both."""

from __future__ import annotations

import re
from contextlib import ExitStack
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import parseaddr
from functools import partial
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from bench._chaos_stack import Stack
from bench.chaos import Api
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from tests.support.concurrency import wait_for

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
