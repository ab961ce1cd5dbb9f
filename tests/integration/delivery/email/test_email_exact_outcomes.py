"""Exact outcomes per recipient: one recipient's trouble never re-sends anyone else.

Real components: the dev SMTP catcher (aiosmtpd) with and without SMTPUTF8, the real worker routing,
the local queue, real Neo4j. Back-off periods pass on an injected clock and through the sweeper, so
no test sleeps for them.
"""

from __future__ import annotations

import email
import email.policy
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller

from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.delivery.email.catcher import start_smtp_catcher
from campaign_engine.delivery.email.provider import OutgoingEmail, SendResult
from campaign_engine.delivery.email.smtp import SmtpProvider
from campaign_engine.domain.dispatch import PageJob, job_json
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_worker, run_sweep
from tests.conftest import free_port
from tests.support.delivery import StepClock, drain, local_queues, start_dispatch
from tests.support.email import add_email_members, email_settings, email_states, make_email_campaign

GOOD = ["a1", "a2", "a3", "a4"]
JOSE = "jose"
JOSE_ADDRESS = "josé@example.com"


def _catcher(path: Path, *, smtputf8: bool) -> Iterator[tuple[int, Path]]:
    port = free_port()
    controller: Controller = start_smtp_catcher("127.0.0.1", port, path, smtputf8=smtputf8)
    try:
        yield port, path
    finally:
        controller.stop()


@pytest.fixture
def plain_relay(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A relay that does not offer SMTPUTF8."""
    yield from _catcher(tmp_path / "plain", smtputf8=False)


@pytest.fixture
def utf8_relay(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    yield from _catcher(tmp_path / "utf8", smtputf8=True)


def _smtp_settings(base: Settings, port: int, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "campaign_email_provider": "smtp",
        "smtp_host": "127.0.0.1",
        "smtp_port": port,
        # No back-off: before the fix the throttled page came straight back and re-sent the accepted
        # recipients in a loop; a back-off period here is a step of the injected clock plus a sweep.
        "campaign_email_throttle_backoff_seconds": 0,
        **overrides,
    }
    return email_settings(base, "http://unused.invalid", "unused", **values)


def _mailbox(path: Path) -> list[str]:
    """The To address of every message the relay stored (one .eml per accepted message)."""
    tos = []
    for stored in sorted(path.glob("*.eml")):
        parsed = email.message_from_bytes(stored.read_bytes(), policy=email.policy.default)
        tos.append(str(parsed["To"]))
    return sorted(tos)


def _seed(graph: Graph) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", GOOD)
    add_email_members(
        graph, "c1", [JOSE], emails=[{"value": JOSE_ADDRESS, "isPrimary": True, "isVerified": True}]
    )


def _back_off_periods(
    settings: Settings, graph: Graph, queues: Queues, clock: StepClock, first_page: PageJob, *, periods: int
) -> None:
    """Let several back-off periods pass: the clock moves, the sweeper runs, the first page job comes
    back as a duplicate (a redelivery), and the worker drains whatever is due."""
    worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
    try:
        for _ in range(periods):
            clock.now += timedelta(seconds=61)
            run_sweep(settings, graph, queues.dispatch, clock=clock)
            queues.dispatch.send_batch([job_json(first_page)])
            drain(worker.handle, queues)
    finally:
        worker.close()


def _first_page(graph: Graph) -> PageJob:
    [record] = [d for d in list_dispatches(graph, "c1") if d.channel == "email"]
    return PageJob.model_validate(
        {
            "dispatchId": record.dispatch_id,
            "campaignId": "c1",
            "campaignCreatedAt": record.campaign_created_at,
            "channel": "email",
            "cursor": None,
        }
    )


def test_a_relay_without_smtputf8_rejects_one_recipient_and_everyone_else_gets_one_email_ever(
    base_settings: Settings, graph: Graph, tmp_path: Path, plain_relay: tuple[int, Path]
) -> None:
    port, mailbox = plain_relay
    settings = _smtp_settings(base_settings, port)
    queues = local_queues(tmp_path / "q.sqlite3")
    clock = StepClock()
    _seed(graph)
    start_dispatch(graph, queues.dispatch, max_recipients=100)
    first = _first_page(graph)
    worker = build_worker(settings, graph, queues=queues, clock=clock, sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()
    assert _mailbox(mailbox) == sorted(f"{p}@example.com" for p in GOOD)
    state = email_states(graph, "c1")[JOSE]
    assert (state["emailOutcome"], state["emailOutcomeReason"]) == ("rejected", "smtputf8_not_offered")
    assert state["emailClaimedAt"] and state.get("emailedAt") is None  # the claim is kept

    _back_off_periods(settings, graph, queues, clock, first, periods=4)
    assert _mailbox(mailbox) == sorted(f"{p}@example.com" for p in GOOD)  # still one each, ever
    [record] = list_dispatches(graph, "c1")
    assert (record.status, record.emailed, record.rejected, record.throttled) == ("completed", 4, 1, 0)
    assert record.last_error == "rejected: smtputf8_not_offered"


def test_a_relay_with_smtputf8_takes_the_non_ascii_address(
    base_settings: Settings, graph: Graph, tmp_path: Path, utf8_relay: tuple[int, Path]
) -> None:
    port, mailbox = utf8_relay
    settings = _smtp_settings(base_settings, port)
    queues = local_queues(tmp_path / "q.sqlite3")
    _seed(graph)
    start_dispatch(graph, queues.dispatch, max_recipients=100)
    worker = build_worker(settings, graph, queues=queues, clock=StepClock(), sweep_every=None)
    try:
        drain(worker.handle, queues)
    finally:
        worker.close()
    assert _mailbox(mailbox) == sorted([JOSE_ADDRESS] + [f"{p}@example.com" for p in GOOD])
    raw = next(p.read_bytes() for p in mailbox.glob("*.eml") if JOSE_ADDRESS.encode() in p.read_bytes())
    assert f"To: {JOSE_ADDRESS}".encode() in raw  # RFC 6531: the header carries raw UTF-8
    [record] = list_dispatches(graph, "c1")
    assert (record.status, record.emailed, record.rejected) == ("completed", 5, 0)


class _RaisesAfterSending:
    """An adapter that breaks the port contract: it hands the batch to a real relay, then raises (as a
    ``UnicodeEncodeError`` on a late RCPT once did). A fake at the port, around the real SMTP adapter."""

    def __init__(self, inner: SmtpProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    def verify(self) -> None:
        self.inner.verify()

    def send_batch(self, messages: Sequence[OutgoingEmail]) -> list[SendResult]:
        self.calls += 1
        self.inner.send_batch(messages[:-1])
        raise UnicodeEncodeError("ascii", "é", 0, 1, "ordinal not in range(128)")

    def close(self) -> None:
        self.inner.close()


def test_an_exception_after_the_relay_accepted_never_releases_a_claim(
    base_settings: Settings, graph: Graph, tmp_path: Path, utf8_relay: tuple[int, Path]
) -> None:
    port, mailbox = utf8_relay
    settings = _smtp_settings(base_settings, port)
    queues = local_queues(tmp_path / "q.sqlite3")
    clock = StepClock()
    _seed(graph)
    start_dispatch(graph, queues.dispatch, max_recipients=100)
    first = _first_page(graph)
    provider = _RaisesAfterSending(
        SmtpProvider(host="127.0.0.1", port=port, sender=settings.email_from, starttls="off")
    )
    worker = build_worker(
        settings, graph, queues=queues, clock=clock, sweep_every=None, email_provider=provider
    )
    try:
        drain(worker.handle, queues)
        for _ in range(4):  # several back-off periods, and the first page delivered again each time
            clock.now += timedelta(seconds=61)
            run_sweep(settings, graph, queues.dispatch, clock=clock)
            queues.dispatch.send_batch([job_json(first)])
            drain(worker.handle, queues)
    finally:
        worker.close()
    sent = _mailbox(mailbox)
    assert len(sent) == len(set(sent)) == 4  # what the relay took, once each
    assert provider.calls == 1
    states = email_states(graph, "c1")
    assert {s["emailOutcome"] for s in states.values()} == {"uncertain"}  # fate unknown: claims kept
    assert {s["emailOutcomeReason"] for s in states.values()} == {"provider_error:UnicodeEncodeError"}
    [record] = list_dispatches(graph, "c1")
    assert (record.status, record.uncertain, record.throttled) == ("completed", 5, 0)
