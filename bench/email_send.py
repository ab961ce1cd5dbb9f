"""Email channel figures (not a test): prints them and ends with one RESULT line.

    .venv/bin/python -m bench.email_send [--recipients 20000] [--page-size 500] [--warm-up 40000]

Neo4j is the local launcher (``LocalNeo4j``, 2g heap, 1g page cache) unless ``NEO4J_URI`` names a
database, which is then WIPED. The provider is the loopback Postmark stand-in: a real uvicorn HTTP
server in its own process (``bench/_standin.py``), as a real provider is, so it does not parse JSON on
the worker's interpreter lock. ``--recipients`` email-eligible members are seeded, then one dispatch is
confirmed and its email pages run through the real worker routing (local SQLite queue, page jobs,
claim transaction, rendering, HMAC tokens, batch POST, outcome write, cursor CAS) until it completes:
messages/s end to end. In the same run the same number of pre-rendered messages is POSTed to the
stand-in in batches of the page size with nothing else around it: the raw batch-POST rate. The ratio
of the two is the efficiency: how much of the provider's own speed the pipeline keeps.

The measured dispatch is the second on this Neo4j: a first one of ``--warm-up`` recipients (default
40,000) goes before it, and its rate is printed too (``cold_emails_per_s``). A Neo4j started seconds
ago plans every statement for the first time and spends minutes JIT-compiling itself: on this 2-core
machine its C2 compiler threads took as much CPU as the Bolt workers running our statements, even
in a dispatch that followed a 2,000-recipient warm-up. That is the price of a restart, not of a send;
a production database has long paid it. Each dispatch prints where the CPU went (``bench/_cpu.py``):
the rate is bounded by CPU, not by waiting. ``--warm-up 0`` measures the cold database alone.

``--cap [JSON]`` (issue 12 item 5) then seeds the same audience again and runs the same dispatch with
``CAMPAIGN_FREQUENCY_CAPS`` set (default: 100 emails per 7 days, which nobody reaches, so every claim
pays the cap's check and its log write and nobody is held back), and prints both rates side by side.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import SecretStr

from bench._cpu import CpuMeter
from bench._standin import StandinProcess, standin_process
from bench._support import neo4j_uri
from campaign_engine.campaigns import definitions
from campaign_engine.campaigns.dispatch import dispatch
from campaign_engine.campaigns.dispatch_reads import list_dispatches
from campaign_engine.config import Settings
from campaign_engine.delivery.email.postmark import PostmarkProvider
from campaign_engine.delivery.email.provider import OutgoingEmail
from campaign_engine.delivery.queue.local import LocalQueue
from campaign_engine.delivery.wiring import Queues, build_worker
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.graph.graph import Graph, open_graph
from campaign_engine.graph.schema import apply_schema

CAMPAIGN = "bench-email"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def seed(graph: Graph, count: int) -> None:
    while graph.run("MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS n")[0]["n"]:
        pass  # wiped in chunks: one huge delete would need a huge transaction
    definitions.create_campaign(
        graph,
        data=CampaignCreate.model_validate(
            {
                "id": CAMPAIGN,
                "name": "Bench",
                "channels": ["email"],
                "email": {"subject": "Bench news", "title": "Hello", "body": "One\nTwo", "ctaLabel": "Open"},
            }
        ),
        tenant_id="default",
        now=NOW,
    )
    definitions.set_status(graph, campaign_id=CAMPAIGN, status="live", now=NOW)
    # As upsert_profiles makes them: a profile gets its campaignUnsubscribeId at creation (and older
    # ones from the schema backfill), so a claim allocates none.
    for start in range(0, count, 5000):
        ids = [f"u{i:07d}" for i in range(start, min(start + 5000, count))]
        graph.run(
            """
            MATCH (c:Campaign {id: $campaignId})
            UNWIND $ids AS id
            CREATE (p:Profile {profileId: id, dob: '1990-01-01', isManaged: false, isServiceProfile: false,
                               announcementEmailOptOut: false, announcementPushOptOut: false,
                               campaignUnsubscribeId: randomUUID()})
            CREATE (p)-[:HAS_CONTACT_METHOD]->(:ContactMethod {type: 'email', value: id + '@example.com',
                                                              isPrimary: true, isVerified: true})
            CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: id,
                                               addedAt: '2026-01-01T00:00:00.000000Z', source: 'bench',
                                               selfEnrolled: false}]->(c)
            """,
            ids=ids,
            campaignId=CAMPAIGN,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipients", type=int, default=20_000)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--cap", nargs="?", const=DEFAULT_CAP, default=None, help="also run with this cap")
    parser.add_argument("--warm-up", type=int, default=40_000, help="a first dispatch, printed apart")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-email-"))
    with standin_process() as standin, neo4j_uri() as uri:
        settings = Settings(
            neo4j_uri=uri,
            neo4j_user=os.environ.get("NEO4J_USER", "neo4j"),
            neo4j_password=SecretStr(os.environ.get("NEO4J_PASSWORD", "")),
            domain_name="bench.test",
            campaign_local_queue_path=str(work / "queue.sqlite3"),
            notifications_webhook_secret=SecretStr("whsec_YmVuY2gtd2ViaG9vay1zZWNyZXQtMDEyMzQ1Njc4OWE="),
            campaign_dispatch_delay_seconds=0,
            campaign_email_page_size=args.page_size,
            campaign_email_provider="postmark",
            postmark_api_key=SecretStr(standin.token),
            postmark_api_url=standin.url,
            campaign_unsubscribe_secret=SecretStr("bench-unsubscribe-secret-0123456789abcdef"),
            campaign_app_origins='{"default": "https://app.bench.test"}',
            email_from="news@bench.test",
            _env_file=None,  # type: ignore[call-arg]
        )
        graph = open_graph(settings)
        try:
            apply_schema(graph)
            cold_rate = None
            if args.warm_up:
                seed(graph, args.warm_up)
                cold, cold_walk = run_dispatch(settings, graph, work)
                cold_rate = args.warm_up / cold
                print(f"warm-up on the fresh database: {args.warm_up} emails in {cold:.2f} s "
                      f"({cold_rate:,.0f}/s; "
                      f"the dispatch call {cold - cold_walk:.2f} s), not counted below")  # fmt: skip
                standin.reset()
            t0 = time.perf_counter()
            seed(graph, args.recipients)
            print(f"seeded {args.recipients} email-eligible recipients in {time.perf_counter() - t0:.1f} s")
            end_to_end, walk = run_dispatch(settings, graph, work)
            print(f"end to end: {args.recipients} emails in {end_to_end:.2f} s "
                  f"(the dispatch call {end_to_end - walk:.2f} s, the page walk {walk:.2f} s)")  # fmt: skip
            capped = with_cap(settings, graph, work, args.recipients, args.cap) if args.cap else None
        finally:
            graph.close()
        addresses = standin.addresses()
        runs = 2 if capped else 1  # the capped run emails the same addresses again (a fresh graph)
        accepted = len(addresses)
        assert accepted == runs * args.recipients, f"stand-in accepted {accepted}, expected {args.recipients}"
        assert len(set(addresses)) == args.recipients, "an address was emailed twice"
        sample = standin.sample(args.page_size)
        standin.reset()
        raw = raw_rate(standin, sample, args.recipients, args.page_size)
    e2e_rate = args.recipients / end_to_end
    walk_rate = args.recipients / walk
    ratio = e2e_rate / raw
    print(f"end-to-end rate: {e2e_rate:,.0f} emails/s (pages of {args.page_size})")
    print(f"page walk alone: {walk_rate:,.0f} emails/s ({walk_rate / raw:.2f} of raw)")
    print(f"raw batch-POST rate to the stand-in: {raw:,.0f} messages/s")
    print(f"efficiency (end to end / raw): {ratio:.2f}")
    shutil.rmtree(work, ignore_errors=True)
    cap_result = ""
    if capped:
        cap_rate, cap_walk_rate = args.recipients / capped[0], args.recipients / capped[1]
        print(f"with the cap: {cap_rate:,.0f} emails/s end to end (without: {e2e_rate:,.0f}), page walk "
              f"{cap_walk_rate:,.0f} emails/s (without: {walk_rate:,.0f}); cap {args.cap}")  # fmt: skip
        cap_result = f" capped_emails_per_s={cap_rate:.0f} capped_walk_emails_per_s={cap_walk_rate:.0f}"
    result = f"emails_per_s={e2e_rate:.0f} efficiency={ratio:.2f} walk_emails_per_s={walk_rate:.0f}"
    if cold_rate is not None:
        result += f" cold_emails_per_s={cold_rate:.0f}"
    print(f"RESULT {result}{cap_result}")


class _WalkTimings(logging.Handler):
    """Sums the worker's ``email.walk`` stage timings: where the end-to-end time went."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.totals = {"pages": 0.0, "claim_s": 0.0, "wait_s": 0.0, "settle_s": 0.0}

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("email.walk"):
            for name in self.totals:
                self.totals[name] += float(getattr(record, name, 0.0))


def run_dispatch(settings: Settings, graph: Graph, work: Path) -> tuple[float, float]:
    """Seconds end to end (the dispatch call, preview of the whole audience + confirm, included) and of
    the page walk alone (from the first page job received to the last settled)."""
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
    dispatch(graph, queues.dispatch, campaign_id=CAMPAIGN, expected_token=None, now=NOW, adult_age=18,
             max_recipients=10**7)  # fmt: skip
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
    print(cpu.line(elapsed))
    [record] = list_dispatches(graph, CAMPAIGN)
    assert record.status == "completed", record.status
    print(f"dispatch {record.status}: pages={record.pages} emailed={record.emailed} "
          f"throttled={record.throttled} uncertain={record.uncertain}")  # fmt: skip
    return elapsed, walk


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


def with_cap(settings: Settings, graph: Graph, work: Path, recipients: int, cap: str) -> tuple[float, float]:
    """The same dispatch on a freshly seeded graph with CAMPAIGN_FREQUENCY_CAPS = ``cap``."""
    caps = Settings(campaign_frequency_caps=cap, _env_file=None).campaign_frequency_caps
    seed(graph, recipients)
    capped = settings.model_copy(update={"campaign_frequency_caps": caps})
    end_to_end, walk = run_dispatch(capped, graph, work)
    [record] = list_dispatches(graph, CAMPAIGN)
    assert record.capped == 0, "the bench cap must not hold anyone back"
    assert record.emailed == recipients
    print(f"with the cap: {recipients} emails in {end_to_end:.2f} s (the page walk {walk:.2f} s)")
    return end_to_end, walk


if __name__ == "__main__":
    main()
