"""``bench.email_send``'s measured dispatches: one through the real worker routing, the warm-ups, the
raw provider passes, and the language, click-tracking and capped runs set beside the plain one."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from bench._cpu import CpuMeter, CpuReading
from bench._email_send_campaigns import (
    JIT_SETTLED,
    NOW,
    Campaigns,
    set_click_tracking,
)
from bench._smtp_sink import SinkProcess, sink_process
from bench._standin import StandinProcess, standin_process
from bench.smtp_provider import pages as smtp_pages
from campaign_engine.campaigns.sending.dispatch import dispatch
from campaign_engine.campaigns.sending.dispatch_reads import list_dispatches
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.config import Settings
from campaign_engine.delivery.email.postmark import PostmarkProvider
from campaign_engine.delivery.email.provider import OutgoingEmail
from campaign_engine.delivery.email.smtp import SmtpProvider
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.local import LocalQueue
from campaign_engine.wiring import Queues, build_worker


def shared_ceiling(provider_rate: float, write_rate: float) -> float:
    """The rate the provider calls and the graph writes would reach run one after the other on the same
    cores: 1 / (1/provider + 1/writes)."""
    return 1 / (1 / provider_rate + 1 / write_rate)


class _WalkTimings(logging.Handler):
    """Sums the worker's ``email.walk`` stage timings: where the end-to-end time went."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.totals = {"pages": 0.0, "claim_s": 0.0, "wait_s": 0.0, "settle_s": 0.0}

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("email.walk"):
            for name in self.totals:
                self.totals[name] += float(getattr(record, name, 0.0))


def languages_run(
    settings: Settings,
    graph: Graph,
    work: Path,
    standin: StandinProcess | SinkProcess,
    campaigns: Campaigns,
    recipients: int,
    languages: int,
    variants: int = 1,
) -> float:
    """One dispatch of a campaign in ``languages`` languages (with ``variants`` A/B arms) over fresh
    profiles: its emails/s."""
    run = run_dispatch(settings, graph, work, campaigns.new(recipients, languages, variants))
    addresses = standin.addresses()
    assert len(addresses) == len(set(addresses)) == recipients, f"stand-in accepted {len(addresses)}"
    standin.reset()
    rate = recipients / run.elapsed
    arms = f", {variants} variants" if variants > 1 else ""
    print(f"{languages} languages{arms}: {recipients} emails in {run.elapsed:.2f} s ({rate:,.0f}/s; the "
          f"dispatch call {run.elapsed - run.walk:.2f} s, the page walk {run.walk:.2f} s)")  # fmt: skip
    return rate


def _own_cpu(run: Run, recipients: int) -> float:
    return (run.cpu.own + run.cpu.bolt + run.cpu.jit + run.cpu.jvm_other) / recipients * 1000


def tracked_run(
    settings: Settings,
    graph: Graph,
    work: Path,
    standin: StandinProcess | SinkProcess,
    campaigns: Campaigns,
    recipients: int,
    *,
    variants: int = 1,
) -> Run:
    """One dispatch with click tracking on over fresh profiles (then off again); with ``variants`` > 1,
    of a campaign with that many A/B variants (``--variants N --click-tracking``)."""
    set_click_tracking(graph, settings, on=True)
    try:
        run = run_dispatch(settings, graph, work, campaigns.new(recipients, variants=variants))
    finally:
        set_click_tracking(graph, settings, on=False)
    addresses = standin.addresses()
    assert len(addresses) == len(set(addresses)) == recipients, f"stand-in accepted {len(addresses)}"
    if isinstance(standin, StandinProcess):
        assert "/c?token=" in str(standin.sample(1)[0]["HtmlBody"]), "the CTA was not tracked"
    standin.reset()
    rate = recipients / run.elapsed
    arms = f", {variants} variants" if variants > 1 else ""
    print(f"click-tracked{arms}: {recipients} emails in {run.elapsed:.2f} s ({rate:,.0f}/s)")
    return run


class Run(NamedTuple):
    elapsed: float
    """Seconds end to end: the dispatch call (preview of the whole audience + confirm) included."""
    walk: float
    """Seconds of the page walk alone, from the first page job received to the last settled."""
    cpu: CpuReading


@contextmanager
def _receiver(provider: str) -> Iterator[StandinProcess | SinkProcess]:
    """The Postmark stand-in or the SMTP sink, each in its own process."""
    if provider == "smtp":
        with sink_process() as sink:
            yield sink
    else:
        with standin_process() as standin:
            yield standin


def raw_smtp_rate(sink: SinkProcess, total: int, page_size: int) -> float:
    """The SMTP provider alone, pre-composed pages, nothing else around it (``bench.smtp_provider``)."""
    todo = smtp_pages(total, page_size, 0)
    provider = SmtpProvider(host="127.0.0.1", port=sink.port, sender="news@bench.test", starttls="off")
    try:
        provider.send_batch(smtp_pages(100, 100, -1)[0])  # sessions open, as the worker's are
        start = time.perf_counter()
        for page in todo:
            assert all(r.outcome == "accepted" for r in provider.send_batch(page))
        return total / (time.perf_counter() - start)
    finally:
        provider.close()
        sink.reset()


def warm_up(
    settings: Settings,
    graph: Graph,
    work: Path,
    standin: StandinProcess | SinkProcess,
    campaigns: Campaigns,
    recipients: int,
    most: int,
) -> float | None:
    """Dispatches of ``recipients`` until Neo4j's JIT took under ``JIT_SETTLED`` of the machine's CPU (at
    most ``most``): the rate of a database that has long been running. The first one's rate is returned:
    what a dispatch right after a restart gets."""
    cold = None
    for number in range(1, most + 1 if recipients else 1):
        run = run_dispatch(settings, graph, work, campaigns.new(recipients))
        standin.reset()
        rate = recipients / run.elapsed
        cold = cold or rate
        print(f"warm-up {number}: {recipients} emails at {rate:,.0f}/s (the dispatch call "
              f"{run.elapsed - run.walk:.2f} s), Neo4j's JIT took {run.cpu.jit_share:.0%} of the CPU; "
              f"not counted below")  # fmt: skip
        if run.cpu.jit_share < JIT_SETTLED:
            break
    return cold


def run_dispatch(settings: Settings, graph: Graph, work: Path, campaign_id: str) -> Run:
    """One dispatch of the seeded audience through the real worker routing, until it completes."""
    queues = Queues(
        dispatch=LocalQueue(work / "queue.sqlite3", "dispatch", visibility_timeout=300),
        delivery=LocalQueue(work / "queue.sqlite3", "delivery", visibility_timeout=300),
    )
    worker = build_worker(settings, graph, queues=queues, sweep_every=None)
    timings = _WalkTimings()
    walk_log = logging.getLogger("campaign_engine.delivery.email.page_walk")
    walk_log.addHandler(timings)
    walk_log.setLevel(logging.INFO)
    cpu = CpuMeter(settings.neo4j_uri)
    start = time.perf_counter()
    # acceptFallback: over --languages' locales a one-language campaign falls back
    dispatch(
        graph,
        queues.dispatch,
        campaign_id=campaign_id,
        expected_token=None,
        now=NOW,
        settings=DispatchSettings(adult_age=18, max_recipients=10**7),
        accept_fallback=True,
    )
    walk_start = time.perf_counter()
    try:
        while True:
            messages = queues.dispatch.receive(max_messages=10)
            if not messages:
                break
            worker.handle(queues.dispatch, messages)
    finally:
        worker.close()
        walk_log.removeHandler(timings)
    elapsed = time.perf_counter() - start
    walk = time.perf_counter() - walk_start
    t = timings.totals
    print(f"where the page walk's time went ({t['pages']:.0f} pages): claim transactions "
          f"{t['claim_s']:.2f} s, waiting for the provider {t['wait_s']:.2f} s, record + cursor CAS "
          f"{t['settle_s']:.2f} s (a send overlaps the next claim and the previous record)")  # fmt: skip
    reading = cpu.reading(elapsed)
    print(reading.line())
    [record] = list_dispatches(graph, campaign_id)
    assert record.status == "completed", record.status
    print(f"dispatch {record.status}: pages={record.pages} emailed={record.emailed} "
          f"throttled={record.throttled} uncertain={record.uncertain}")  # fmt: skip
    return Run(elapsed, walk, reading)


def raw_rate(standin: StandinProcess, sample: list[dict[str, object]], total: int, page_size: int) -> float:
    provider = PostmarkProvider(api_key=standin.token, stream="broadcast", sender="news@bench.test",
                                base_url=standin.url)  # fmt: skip
    messages = [
        OutgoingEmail(
            key=str(i),
            to=f"raw{i}@example.com",
            subject=str(sample[i % len(sample)]["Subject"]),
            html=str(sample[i % len(sample)]["HtmlBody"]),
            text=str(sample[i % len(sample)]["TextBody"]),
            headers={"List-Unsubscribe": "<https://bench.test/campaigns/unsubscribe?token=x>"},
        )
        for i in range(total)
    ]
    provider.verify()
    try:
        start = time.perf_counter()
        for offset in range(0, total, page_size):
            results = provider.send_batch(messages[offset : offset + page_size])
            assert all(r.outcome == "accepted" for r in results)
        return total / (time.perf_counter() - start)
    finally:
        provider.close()


DEFAULT_CAP = '{"*": {"email": {"max": 100, "windowSeconds": 604800}}}'


def with_cap(
    settings: Settings, graph: Graph, work: Path, campaign_id: str, recipients: int, cap: str
) -> tuple[float, float]:
    """The same dispatch, of one more campaign, with CAMPAIGN_FREQUENCY_CAPS = ``cap``."""
    caps = Settings(campaign_frequency_caps=cap, _env_file=None).campaign_frequency_caps
    capped = settings.model_copy(update={"campaign_frequency_caps": caps})
    end_to_end, walk, _ = run_dispatch(capped, graph, work, campaign_id)
    [record] = list_dispatches(graph, campaign_id)
    assert record.capped == 0, "the bench cap must not hold anyone back"
    assert record.emailed == recipients
    print(f"with the cap: {recipients} emails in {end_to_end:.2f} s (the page walk {walk:.2f} s)")
    return end_to_end, walk
