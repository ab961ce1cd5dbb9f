"""``/metrics`` on the API and on the worker process, scraped during and after a real dispatch.

The worker runs as an OS process (``python -m campaign_engine.cli worker``) with ``METRICS_PORT`` set,
against the session's Neo4j, a durable local queue file, the reference inbox and the SMTP catcher. The
API is the real app in this process, dispatching into the same queue file through the tRPC wire. Both
endpoints are parsed with ``prometheus_client.parser``; the delivery counters must equal the Dispatch
records' own counts, and the tRPC counters must show exactly the calls this test made.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from campaign_engine.campaigns.sending.dispatch_reads import DispatchPublic, list_dispatches
from campaign_engine.config import Settings
from campaign_engine.delivery.email.catcher import start_smtp_catcher
from campaign_engine.graph.graph import Graph
from campaign_engine.observability import metrics
from tests.conftest import ADMIN_ID, free_port
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.concurrency import wait_for as wait_until
from tests.support.delivery import WEBHOOK_SECRET, inbox_server, make_campaign
from tests.support.email import EMAIL_COPY, ORIGINS, UNSUBSCRIBE_SECRET, add_email_members
from tests.support.processes import CliProcess, worker_env

pytestmark = pytest.mark.e2e

CAMPAIGN = "metrics"
MEMBERS = [f"m{i:03d}" for i in range(30)]
PAGE_SIZE = 10
TOKEN = "metrics-scrape-token-0123456789"
# Generous: the shared 2-core machine has taken 25 s for one claim under load; no timing is asserted.
wait_for = partial(wait_until, timeout=300.0, every=0.2)

DELIVERIES = "campaign_engine_deliveries_total"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@dataclass
class Stack:
    graph: Graph
    api: TrpcClient
    worker_metrics: str
    worker: subprocess.Popen[bytes]

    def scrape_worker(self, token: str | None = TOKEN) -> httpx.Response:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.get(self.worker_metrics, headers=headers, timeout=10)

    def worker_samples(self) -> Samples:
        answer = self.scrape_worker()
        assert answer.status_code == 200, answer.text
        return parse(answer.text)

    def api_samples(self) -> Samples:
        answer = self.api.http.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 200, answer.text
        return parse(answer.text)

    def dispatches(self) -> dict[str, DispatchPublic]:
        return {d.channel: d for d in list_dispatches(self.graph, CAMPAIGN)}


def _worker_env(settings: Settings, metrics_port: int) -> dict[str, str]:
    return worker_env(
        settings,
        CAMPAIGN_DISPATCH_PAGE_SIZE=str(PAGE_SIZE),
        CAMPAIGN_EMAIL_PAGE_SIZE=str(PAGE_SIZE),
        CAMPAIGN_DISPATCH_DELAY_SECONDS="0",
        CAMPAIGN_DELIVERY_RETRY_SECONDS="1",
        METRICS_PORT=str(metrics_port),
        METRICS_BEARER_TOKEN=TOKEN,
    )


@pytest.fixture
def stack(base_settings: Settings, graph: Graph, tmp_path: Path) -> Iterator[Stack]:
    smtp_port = free_port()
    catcher = start_smtp_catcher("127.0.0.1", smtp_port, tmp_path / "mail")
    try:
        with inbox_server(tmp_path) as inbox:
            settings = base_settings.model_copy(
                update={
                    "campaign_local_queue_path": str(tmp_path / "queue.sqlite3"),
                    "notifications_webhook_url": f"{inbox.url}/api/notifications/send",
                    "notifications_webhook_secret": SecretStr(WEBHOOK_SECRET),
                    "campaign_allow_private_webhooks": True,
                    "campaign_local_development": True,
                    "campaign_email_provider": "smtp",
                    "smtp_host": "127.0.0.1",
                    "smtp_port": smtp_port,
                    "email_from": "news@campaigns.test",
                    "campaign_unsubscribe_secret": SecretStr(UNSUBSCRIBE_SECRET),
                    "campaign_app_origins": json.loads(ORIGINS),
                    "metrics_bearer_token": SecretStr(TOKEN),
                }
            )
            metrics_port = free_port()
            worker = CliProcess(["worker"], _worker_env(settings, metrics_port), tmp_path / "worker.log")
            # This process's API records to Prometheus even if a Lambda handler ran here before (EMF).
            previous = metrics.record_to(None)
            try:
                with api_client(settings, graph) as api:
                    the_stack = Stack(graph, api, f"http://127.0.0.1:{metrics_port}/metrics", worker.popen)
                    wait_for("the worker's /metrics", lambda: _answers(the_stack))
                    yield the_stack
            finally:
                worker.stop()
                metrics.record_to(previous)
    finally:
        catcher.stop()


def _answers(stack: Stack) -> bool:
    assert stack.worker.poll() is None, "the worker exited; see worker.log"
    try:
        return stack.scrape_worker().status_code == 200
    except httpx.HTTPError:
        return False


def _seed(graph: Graph) -> None:
    make_campaign(graph, CAMPAIGN, channels=["notify", "email"], email=EMAIL_COPY, now=datetime.now(UTC))
    add_email_members(graph, CAMPAIGN, MEMBERS)


def _delivery_counts(samples: Samples) -> dict[str, float]:
    return {
        "acknowledged": value(samples, DELIVERIES, channel="notify", outcome="acknowledged"),
        "emailed": value(samples, DELIVERIES, channel="email", outcome="accepted"),
        "notify_pages": value(samples, "campaign_engine_pages_walked_total", channel="notify"),
        "email_pages": value(samples, "campaign_engine_pages_walked_total", channel="email"),
    }  # fmt: skip


def _dispatch_counts(dispatches: Mapping[str, DispatchPublic]) -> dict[str, float]:
    notify, email = dispatches.get("notify"), dispatches.get("email")
    return {
        "acknowledged": float(notify.acknowledged if notify else 0),
        "emailed": float(email.emailed if email else 0),
        "notify_pages": float(notify.pages if notify else 0),
        "email_pages": float(email.pages if email else 0),
    }


def test_worker_counters_equal_the_dispatch_counts_during_and_after(stack: Stack) -> None:
    _seed(stack.graph)
    ok(stack.api.mutate("campaigns.dispatch", {"campaignId": CAMPAIGN}, as_=ADMIN_ID, admin=True))

    # During: every scrape answers, and no counter is ever ahead of what the Dispatch records show.
    scrapes = 0

    def settled() -> bool:
        nonlocal scrapes
        samples = stack.worker_samples()
        recorded = _dispatch_counts(stack.dispatches())  # read after the scrape: it can only be ahead
        scraped = _delivery_counts(samples)
        scrapes += 1
        assert all(scraped[k] <= recorded[k] for k in scraped), (scraped, recorded)
        done = all(d.status == "completed" for d in stack.dispatches().values())
        everyone = recorded["acknowledged"] == recorded["emailed"] == len(MEMBERS)
        return done and everyone and scraped == recorded

    wait_for("the counters to settle on the Dispatch counts", settled)
    assert scrapes >= 1

    # After: the same numbers, one for one, and the gauges read at scrape time agree.
    dispatches = stack.dispatches()
    samples = stack.worker_samples()
    assert _delivery_counts(samples) == _dispatch_counts(dispatches)
    assert dispatches["notify"].pages == dispatches["email"].pages == len(MEMBERS) // PAGE_SIZE + 1
    for channel in ("notify", "email"):
        assert value(samples, "campaign_engine_dispatches", channel=channel, status="completed") == 1
        assert value(samples, "campaign_engine_dispatches", channel=channel, status="sending") == 0
    for outcome in ("rejected", "blocked", "uncertain"):
        assert value(samples, "campaign_engine_deliveries_total", channel="notify", outcome=outcome) == 0
    answered = value(samples, "campaign_engine_webhook_post_duration_seconds_count", result="answered")
    assert answered == len(MEMBERS)  # one POST each, each timed
    batches = value(
        samples,
        "campaign_engine_email_provider_call_duration_seconds_count",
        provider="smtp",
        outcome="accepted",
    )
    assert batches == len(MEMBERS) // PAGE_SIZE  # one provider call per page that claimed someone

    def drained() -> bool:
        now = stack.worker_samples()
        return all(
            value(now, "campaign_engine_queue_messages", queue=queue, state=state) == 0
            for queue in ("dispatch", "delivery")
            for state in ("visible", "in_flight", "delayed")
        )

    wait_for("both queues to drain", drained)
    assert ("campaign_engine_queue_oldest_message_age_seconds", frozenset({("queue", "delivery")})) not in (
        stack.worker_samples()
    )  # an empty queue has no oldest message


def test_trpc_calls_are_counted_by_procedure_and_code(stack: Stack) -> None:
    _seed(stack.graph)
    before = stack.api_samples()
    ok(stack.api.mutate("campaigns.dispatch", {"campaignId": CAMPAIGN}, as_=ADMIN_ID, admin=True))
    refused = stack.api.query("campaigns.getDispatch", {"dispatchId": 5}, as_=ADMIN_ID, admin=True)
    assert error_code(refused) == "BAD_REQUEST"  # deliberately failing: a number is no dispatch id
    assert error_code(stack.api.query("campaigns.noSuchProcedure")) == "NOT_FOUND"
    batch = stack.api.http.get(
        "/trpc/campaigns.listDispatches,campaigns.listDispatches",
        params={"batch": "1", "input": json.dumps({"0": {"campaignId": CAMPAIGN}, "1": {}})},
        headers=stack.api.headers_for(ADMIN_ID, admin=True),
    )
    assert batch.status_code == 207  # one OK, one BAD_REQUEST: each call counted on its own
    after = stack.api_samples()

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    requests = "campaign_engine_trpc_requests_total"
    assert delta(requests, procedure="campaigns.dispatch", code="OK") == 1
    assert delta(requests, procedure="campaigns.getDispatch", code="BAD_REQUEST") == 1
    assert delta(requests, procedure="(unknown)", code="NOT_FOUND") == 1
    assert delta(requests, procedure="campaigns.listDispatches", code="OK") == 1
    assert delta(requests, procedure="campaigns.listDispatches", code="BAD_REQUEST") == 1
    assert delta("campaign_engine_trpc_request_duration_seconds_count", procedure="campaigns.dispatch") == 1
    assert not any(
        dict(labels).get("procedure") == "campaigns.noSuchProcedure" for _, labels in after
    )  # an unknown path never becomes a label


def test_both_endpoints_require_the_bearer_token_when_it_is_set(stack: Stack) -> None:
    assert stack.scrape_worker(token=None).status_code == 401
    assert stack.scrape_worker(token="wrong-token").status_code == 401
    assert stack.scrape_worker().status_code == 200
    assert stack.api.http.get("/metrics").status_code == 401
    assert stack.api.http.get("/metrics", headers={"authorization": "Bearer nope"}).status_code == 401
    answer = stack.api.http.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    assert "# TYPE campaign_engine_trpc_requests_total counter" in answer.text
    assert "/metrics" not in stack.api.http.get("/openapi.json").json().get("paths", {})
