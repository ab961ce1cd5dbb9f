"""What the email-dispatch tests share: email workers (closed after each test by the package's
fixture), a dispatch started, one run of the real worker, and the email dispatch read back."""

from __future__ import annotations

from campaign_engine.campaigns.sending.dispatch import dispatch
from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.delivery.email.page_walk import EmailWorker
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_email_worker
from tests.support.delivery import NOW, StepClock

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=100)


_OPEN: list[EmailWorker] = []


def _email_worker(settings: Settings, graph: Graph, queues: Queues) -> EmailWorker:
    worker = build_email_worker(settings, graph, queues, clock=StepClock())
    assert worker is not None
    _OPEN.append(worker)
    return worker


def _dispatch(graph: Graph, queues: Queues, token: str | None = None, campaign_id: str = "c1") -> str:
    started = dispatch(
        graph,
        queues.dispatch,
        campaign_id=campaign_id,
        expected_token=token,
        now=NOW,
        settings=DispatchSettings(adult_age=18, max_recipients=10_000),
    )
    return started.dispatch_ids["email"]


def _email_dispatch(graph: Graph, campaign_id: str = "c1") -> dict[str, object]:
    found = [d for d in list_dispatches(graph, campaign_id) if d.channel == "email"]
    return found[0].model_dump()
