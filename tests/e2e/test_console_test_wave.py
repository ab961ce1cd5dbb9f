"""The A/B test wave in the admin console, in Debian's Chromium: a testing dispatch
says who gets what and when it is decided, "Choose B now" decides it, and the decided dispatch shows the
winner, each variant's rate over its test recipients and who decided; a decision without evidence says
so in words.

The API serves the console in a thread; the worker runs in this process against the real Neo4j, the
Postmark stand-in and a durable local queue, so the test decides when pages run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from campaign_engine.api.app import create_app
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns.sending.dispatch import dispatch
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.domain.ab_variants import Experiment, in_test_wave
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.audit import AuditContext
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.test_wave import decide
from campaign_engine.wiring import build_worker
from tests.conftest import ADMIN_ID
from tests.support.console import assert_accessible, shot, signed_in
from tests.support.delivery import NOW, StepClock, drain, local_queues
from tests.support.email import EMAIL_COPY, add_email_members, email_settings, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin
from tests.support.servers import serve_in_thread

# A test wave of ten readers: the evidence rule has its own test (test_test_wave_evidence).
DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=100, experiment_min_per_variant=1)

SYSTEM = AuditContext(actor="system:test-wave", procedure="delivery.testWave", request_id="decide",
                      at=format_ts(NOW), tenant_id="default")  # fmt: skip

pytestmark = pytest.mark.e2e
expect.set_options(timeout=20_000)

READERS = [f"v{n:03d}" for n in range(40)]


def test_a_testing_dispatch_offers_each_variant_and_shows_the_decision(
    base_settings: Settings, graph: Graph, tmp_path: Path, browser: Browser
) -> None:
    queues = local_queues(tmp_path / "q.sqlite3")
    with PostmarkStandin() as postmark:
        settings = email_settings(base_settings, postmark.url, postmark.token)
        b_copy = {**EMAIL_COPY, "subject": "Subject B"}
        make_email_campaign(graph, variants=[{"id": "A"}, {"id": "B", "email": b_copy}])
        add_email_members(graph, "c1", READERS)
        experiment = Experiment(test_share=0.25, metric="emailClicked", decide_after_seconds=3600)
        started = dispatch(graph, queues.dispatch, campaign_id="c1", expected_token=None, now=NOW,
                           settings=DISPATCH_SETTINGS, experiment=experiment)  # fmt: skip
        dispatch_id = started.dispatch_ids["email"]
        testers = {p for p in READERS if in_test_wave("c1", p, 0.25)}
        worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
        try:
            drain(worker.handle, queues)
            assert {m["To"].split("@")[0] for m in postmark.accepted} == testers
            with serve_in_thread(
                create_app(settings, graph=graph, dispatch_queue=queues.dispatch, clock=StepClock())
            ) as url:
                token = mint_token(settings, profile_id=ADMIN_ID, scope=ADMIN_SCOPE)
                context, page, watch = signed_in(browser, url, token)
                try:
                    page.goto(f"{url}/admin#/c/c1")
                    article = page.locator("article[data-channel='email']")
                    notice = article.locator(f"#testing-{dispatch_id}")
                    expect(notice).to_contain_text(
                        "Testing variants: 25.0% of the recipients get their variant"
                    )
                    expect(notice).to_contain_text("email clicks")
                    shot(page, "dispatch-testing", "#progress")
                    assert_accessible(page, "dispatch-testing")

                    notice.get_by_role("button", name="Choose B now").click()
                    decided = article.locator(f"#decision-{dispatch_id}")
                    expect(decided).to_contain_text("Variant B won")
                    expect(decided.locator("[data-variant='A']")).to_contain_text("A: 0 of ")
                    expect(decided).to_contain_text(f"Decided by {ADMIN_ID}")
                    drain(worker.handle, queues)
                    page.reload()
                    expect(article).to_have_attribute("data-status", "completed")

                    # A decision the rates cannot make says so in words, not "Variant A won": a second
                    # test decided on time before anyone was reached (its jobs are never run).
                    make_email_campaign(
                        graph, "c2", variants=[{"id": "A"}, {"id": "B", "email": {"subject": "B"}}]
                    )
                    add_email_members(graph, "c2", READERS, emails=[])
                    again = dispatch(
                        graph, queues.dispatch, campaign_id="c2", expected_token=None, now=NOW,
                        settings=DISPATCH_SETTINGS, experiment=experiment,
                    )  # fmt: skip
                    second = again.dispatch_ids["email"]
                    graph.write(decide, campaign_id="c2", now=format_ts(NOW), audit=SYSTEM, only_if_due=False)
                    page.goto(f"{url}/admin#/c/c2")
                    undecided = page.locator(f"article[data-channel='email'] #decision-{second}")
                    expect(undecided).to_contain_text("Variant A is sent")
                    expect(
                        undecided.locator("[data-decision-reason='insufficient_evidence']")
                    ).to_contain_text("The test gave no evidence")
                    watch.assert_clean()
                finally:
                    context.close()
        finally:
            worker.close()
    assert get_dispatch(graph, dispatch_id).decision.winner == "B"  # type: ignore[union-attr]
    subjects = {m["To"].split("@")[0]: m["Subject"] for m in postmark.accepted}
    assert len(postmark.accepted) == len(subjects) == len(READERS)
    assert all(subjects[p] == "Subject B" for p in set(READERS) - testers)
