"""A person shared by tenants A and B is sent, previewed, counted and explained for B by B's view of
them over the shared facts, never by A's (docs/people.md), against the real graph, the real worker,
loopback receivers that verify signatures and the Postmark stand-in.

``p-shared``: A wrote a view of its own (its receiver and secret, an email, a locale, a minor's dob, a
time zone); B wrote nothing, so B reads the shared facts. ``p-own``: A's view as above, and B's own
view (its receiver and secret, an email, a locale): B reads B's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks import Webhook, WebhookVerificationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from campaign_engine.campaigns.audience.explain import explain_recipient
from campaign_engine.campaigns.audience.exports import recipient_rows
from campaign_engine.campaigns.audience.stats import get_stats
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.delivery.frequency_cap import email_page_query
from campaign_engine.domain.types import format_ts
from campaign_engine.domain.webhook_keys import KeyRing, SecretBox, generate_secret
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy, policy_params
from campaign_engine.wiring import Queues, build_worker
from tests.support.delivery import NOW, StepClock, delivery_settings, drain, local_queues, make_campaign
from tests.support.email import EMAIL_COPY, add_email_members, email_settings
from tests.support.postmark_standin import PostmarkStandin
from tests.support.servers import serve_in_thread
from tests.support.tenant_views import write_view

SETTINGS = DispatchSettings(adult_age=18, max_recipients=100)
A, B = "a", "t"  # two tenants; the campaign is B's (tests/support/email.py gives "t" its app origin)
NOTIFICATION = {"title": "Big news", "body": "Something happened"}
# The copy's language shows in what each recipient gets: the subject of an email, a notification's title.
TRANSLATIONS = {
    tag: {"notification": {**NOTIFICATION, "title": title}, "email": {**EMAIL_COPY, "subject": title}}
    for tag, title in (("fr", "Grande nouvelle"), ("de", "Große Neuigkeit"))
}


@dataclass
class Receiver:
    """A receiver holding one secret: what it was sent, and whether each POST verified with it."""

    secret: str = field(default_factory=generate_secret)
    posts: list[tuple[bool, dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> Starlette:
        async def hook(request: Request) -> JSONResponse:
            body, headers = await request.body(), dict(request.headers)
            try:
                payload, verified = Webhook(self.secret).verify(body, headers), True
            except WebhookVerificationError:
                payload, verified = {}, False
            with self.lock:
                self.posts.append((verified, payload))
            return JSONResponse({"sent": verified}, status_code=200 if verified else 400)

        return Starlette(routes=[Route("/hook", hook, methods=["POST"])])


@pytest.fixture
def postmark() -> Iterator[PostmarkStandin]:
    with PostmarkStandin() as standin:
        yield standin


@pytest.fixture
def settings(base_settings: Settings, postmark: PostmarkStandin) -> Settings:
    return email_settings(base_settings, postmark.url, postmark.token)


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


def _box(settings: Settings) -> SecretBox:
    box = settings.secret_box()
    assert box is not None
    return box


def _people(graph: Graph, settings: Settings, urls: dict[str, str], receivers: dict[str, Receiver]) -> None:
    """Both people in B's campaign c1 with shared facts (an adult, English, the shared receiver); A's
    view of both (a minor, French, A's receiver and address, another zone); B's view of p-own."""
    make_campaign(graph, "c1", tenant_id=B, channels=["notify", "email"], notification=NOTIFICATION,
                  email=EMAIL_COPY, translations=TRANSLATIONS)  # fmt: skip
    box = _box(settings)
    for pid in ("p-shared", "p-own"):
        shared = [{"value": f"{pid}@shared.example", "isPrimary": True, "isVerified": True}]
        add_email_members(graph, "c1", [pid], emails=shared, tenants=[A, B], locale="en", timeZone="UTC",
                          notificationsWebhook=urls["shared"],
                          notificationsWebhookKeys=box.seal(KeyRing(receivers["shared"].secret)))  # fmt: skip
        write_view(graph, A, pid, emails=[f"{pid}@a.example"], notificationsWebhook=urls["a"],
                   secret=receivers["a"].secret, box=box, locale="fr", dob="2015-01-01", isManaged=True,
                   timeZone="Pacific/Kiritimati")  # fmt: skip
    write_view(graph, B, "p-own", emails=["p-own@b.example"], notificationsWebhook=urls["b"],
               secret=receivers["b"].secret, box=box, locale="de", timeZone="Asia/Tokyo")  # fmt: skip


@pytest.fixture
def receivers() -> Iterator[tuple[dict[str, Receiver], dict[str, str]]]:
    found = {name: Receiver() for name in ("shared", "a", "b")}
    with (
        serve_in_thread(found["shared"].app()) as shared,
        serve_in_thread(found["a"].app()) as url_a,
        serve_in_thread(found["b"].app()) as url_b,
    ):
        yield found, {"shared": f"{shared}/hook", "a": f"{url_a}/hook", "b": f"{url_b}/hook"}


def test_b_sends_by_its_own_view_or_the_shared_facts_never_by_a_view_of_a(
    settings: Settings,
    graph: Graph,
    queues: Queues,
    postmark: PostmarkStandin,
    receivers: tuple[dict[str, Receiver], dict[str, str]],
) -> None:
    found, urls = receivers
    _people(graph, settings, urls, found)

    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=SETTINGS)
    assert (preview.notification_recipient_count, preview.email_recipient_count) == (2, 2)
    assert preview.locale_counts == {"notify": {"en": 1, "de": 1}, "email": {"en": 1, "de": 1}}

    dispatch(graph, queues.dispatch, campaign_id="c1", expected_token=None, now=NOW, settings=SETTINGS)
    worker = build_worker(delivery_settings(settings), graph, queues=queues, clock=StepClock(),
                          sweep_every=None)  # fmt: skip
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()

    # The receiver each tenant's view names, signed with that view's own secret; A's never reached.
    posted = {name: [(ok, body.get("recipient"), body.get("title")) for ok, body in r.posts]
              for name, r in found.items()}  # fmt: skip
    assert posted == {
        "shared": [(True, "p-shared", "Big news")],
        "b": [(True, "p-own", "Große Neuigkeit")],
        "a": [],
    }
    mails = sorted(str(m["Subject"]) for m in postmark.accepted)
    assert mails == ["Big news", "Große Neuigkeit"]


def test_b_explains_exports_and_counts_by_its_view_never_by_a_view_of_a(
    settings: Settings, graph: Graph, receivers: tuple[dict[str, Receiver], dict[str, str]]
) -> None:
    found, urls = receivers
    _people(graph, settings, urls, found)
    policy = Policy(now=NOW, adult_age=18, domain=settings.domain_name)

    for pid, locale in (("p-shared", "en"), ("p-own", "de")):
        told = explain_recipient(graph, campaign_id="c1", profile_id=pid, now=NOW, adult_age=18)
        assert [(ch.channel, ch.would_receive) for ch in told.channels] == [("notify", True), ("email", True)]
        assert told.language is not None and told.language.locale == locale

    rows = list(recipient_rows(graph, campaign_id="c1", policy=policy))
    assert [(row["profileId"], row["eligibleNow"]) for row in rows] == [("p-own", True), ("p-shared", True)]
    assert get_stats(graph, campaign_id="c1", policy=policy).audience == 2


def test_both_pages_wait_for_each_member_in_the_zone_b_reads(
    settings: Settings, graph: Graph, receivers: tuple[dict[str, Receiver], dict[str, str]]
) -> None:
    """Readiness (a per-recipient schedule, quiet hours) by B's zone: p-own waits in B's Tokyo, p-shared
    is ready in the shared UTC (A's Kiribati zone would have held them back)."""
    found, urls = receivers
    _people(graph, settings, urls, found)
    created = graph.run("MATCH (c:Campaign {id: 'c1'}) RETURN c.createdAt AS at")[0]["at"]
    later, earlier = format_ts(NOW + timedelta(hours=3)), format_ts(NOW - timedelta(hours=1))
    params = {
        "campaignId": "c1", "campaignCreatedAt": created, "cursor": "", "limit": 10, "now": format_ts(NOW),
        "readyAt": {"UTC": earlier, "Asia/Tokyo": later, "Pacific/Kiritimati": later},
        "fallbackReadyAt": earlier, "staleBefore": None, "claimId": "k1", "dispatchId": "d1",
        "caps": None, "capKeepSince": None, "capKeep": 0, **policy_params(NOW, 18),
    }  # fmt: skip
    with graph.driver.session(database=graph.database) as session:
        tx = session.begin_transaction()
        try:  # the email page claims: read what it would claim, then leave the graph as it was
            notify = tx.run(statement("dispatch_page"), **params).single(strict=True)
            email = tx.run(email_page_query(False), **params).single(strict=True)
        finally:
            tx.rollback()
    assert (notify["eligible"], notify["deferred"], notify["readyAt"]) == (["p-shared"], 1, later)
    assert ([c[0] for c in email["claimed"]], email["deferred"], email["readyAt"]) == (["p-shared"], 1, later)
