"""POST /webhooks/postmark against the real app and graph, replaying Postmark's documented record
shapes: a suppressed address gets no email, end to end."""

from __future__ import annotations

from pathlib import Path

from campaign_engine.campaigns.sending.dispatch import preview_dispatch
from campaign_engine.config import Settings
from campaign_engine.delivery.email.catcher import start_smtp_catcher
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_worker
from tests.conftest import free_port
from tests.support.api import TrpcClient
from tests.support.delivery import NOW, StepClock, drain, local_queues, start_dispatch
from tests.support.email import add_email_members, address_of, email_settings, make_email_campaign
from tests.support.postmark_feedback import (
    BOUNCE,
    DISPATCH_SETTINGS,
    applied,
    record,
)


def test_a_suppressed_address_gets_no_email_end_to_end(
    api: TrpcClient, settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", ["a", "b", "c"])
    # "b" shares its address with a profile outside the campaign, whose bounce suppresses it for both.
    add_email_members(
        graph,
        "c1",
        ["other"],
        member=False,
        emails=[{"value": "B@EXAMPLE.com", "isPrimary": True, "isVerified": True}],
    )
    assert applied(api, record(BOUNCE, Email="B@Example.com")) == "applied"
    preview = preview_dispatch(graph, campaign_id="c1", now=NOW, settings=DISPATCH_SETTINGS)
    assert preview.email_recipient_count == 2
    port = free_port()
    catcher = start_smtp_catcher("127.0.0.1", port, tmp_path / "mail")
    try:
        smtp = email_settings(
            settings,
            "http://127.0.0.1:1",
            "unused",
            campaign_email_provider="smtp",
            smtp_host="127.0.0.1",
            smtp_port=port,
        )
        queues = local_queues(tmp_path / "q.sqlite3")
        start_dispatch(graph, queues.dispatch)
        worker = build_worker(smtp, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
        finally:
            worker.close()
    finally:
        catcher.stop()
    recipients = sorted(
        line.split(":", 1)[1].strip()
        for mail in (tmp_path / "mail").glob("*.eml")
        for line in mail.read_text().splitlines()
        if line.startswith("To:")
    )
    assert recipients == [address_of("a"), address_of("c")]
