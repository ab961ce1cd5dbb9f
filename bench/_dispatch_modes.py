"""``bench.dispatch``'s side-by-side modes after the rounds: event webhooks recorded and relayed, three
languages against one, a live segment against static members; and the timed delete of the largest."""

import statistics
import time
from datetime import UTC, datetime
from typing import Literal

from bench._dispatch_send import run_dispatch
from bench._dispatch_stack import (
    TENANT,
    Admin,
    Processes,
    cpu_seconds,
    seed,
)
from bench._event_sink import EventSink
from bench._languages import set_locales
from bench._support import (
    PROFILE_ID_CYPHER,
    SEED_BATCH,
    side_by_side,
)
from campaign_engine.campaigns import definitions
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.dispatch import RelayJob, job_json
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.port import Queue

EventMode = Literal["without", "recorded", "relayed"]
_HOLD = "MATCH (e:WebhookEndpoint {id: $id}) SET e.retryAt = $until"


def with_events(
    graph: Graph, admin: Admin, relay_queue: Queue, procs: Processes, *, n: int, rounds: int, give_up: float
) -> str:
    """Rounds of ``n`` in three modes, the order rotated every round: ``without`` (the endpoint for
    ``*`` disabled), ``recorded`` (enabled, so every event is written in the send's transactions, its
    relay held off by a far ``retryAt``: what recording costs a send) and ``relayed`` (enabled and
    relayed by the same worker while it sends: recording and a second POST per recipient on the same
    cores). Every queued event is delivered between rounds. Prints the rates side by side and returns
    the RESULT fields."""
    sink = EventSink()
    try:
        endpoint = admin.mutate("webhookEndpoints.create", {"url": sink.url, "events": ["*"]})["id"]
        modes: tuple[EventMode, ...] = ("without", "recorded", "relayed")
        rates: dict[EventMode, list[float]] = {mode: [] for mode in modes}
        # Worker + Neo4j CPU per recipient: what recording costs, steadier than rates on shared cores.
        cpu_ms: dict[EventMode, list[float]] = {mode: [] for mode in modes}
        pids = (procs.worker.pid, procs.database or -1)
        for k in range(1, rounds + 1):
            for mode in modes[k - 1 :] + modes[: k - 1]:
                admin.mutate("webhookEndpoints.update", {"id": endpoint, "enabled": mode != "without"})
                graph.run(
                    _HOLD, id=endpoint, until="9999-12-31T00:00:00.000000Z" if mode == "recorded" else None
                )
                time.sleep(6.0)  # every process's subscriber view (5 s) has seen the switch
                campaign_id = f"bench-events-{k}-{mode}"
                seed(graph, campaign_id, n)
                before = sink.received
                cpu_before = sum(cpu_seconds(pid) for pid in pids)
                _, elapsed, done = run_dispatch(graph, admin, campaign_id, n, give_up)
                spent = sum(cpu_seconds(pid) for pid in pids) - cpu_before
                cpu_ms[mode].append(1000 * spent / max(done, 1))
                rates[mode].append(done / elapsed)
                during = sink.received - before
                graph.run(_HOLD, id=endpoint, until=None)
                drained = 0.0
                if mode != "without":  # a disabled endpoint is never relayed: nothing to wait for
                    relay_queue.send_batch([job_json(RelayJob(endpoint_id=endpoint))])
                    drained = _drained(graph, endpoint, give_up)
                print(
                    f"events round {k} {mode}: {done / elapsed:.0f}/s, worker+neo4j CPU "
                    f"{cpu_ms[mode][-1]:.2f} ms per recipient ({during} events relayed during it, "
                    f"the rest in {drained:.1f}s after)",
                    flush=True,
                )
        fields = ""
        for mode in ("recorded", "relayed"):
            ratio = side_by_side(f"recipients/s {mode}", rates[mode], rates["without"], ref="without")
            cost = statistics.median(cpu_ms[mode]) / statistics.median(cpu_ms["without"])
            print(f"worker+neo4j CPU per recipient {mode}: median {statistics.median(cpu_ms[mode]):.2f} ms, "
                  f"without {statistics.median(cpu_ms['without']):.2f} ms, ratio {cost:.3f}")  # fmt: skip
            fields += (
                f" events_{mode}_per_s={statistics.median(rates[mode]):.0f} events_{mode}_ratio={ratio:.3f}"
                f" events_{mode}_cpu_ratio={cost:.3f}"
            )
        print(f"events relayed in all: {sink.received}", flush=True)
        return f" no_events_per_s={statistics.median(rates['without']):.0f}{fields}"
    finally:
        sink.close()


def with_languages(graph: Graph, admin: Admin, *, n: int, rounds: int, languages: int, give_up: float) -> str:
    """Rounds of ``n`` over located profiles, alternating one language and ``languages``; the RESULT
    fields."""
    set_locales(graph, "bench-")
    rates: dict[int, list[float]] = {1: [], languages: []}
    for k in range(1, rounds + 1):
        for count in (1, languages) if k % 2 else (languages, 1):
            campaign_id = f"bench-languages-{k}-{count}"
            seed(graph, campaign_id, n, count)
            _, elapsed, done = run_dispatch(graph, admin, campaign_id, n, give_up)
            rates[count].append(done / elapsed)
            print(f"languages round {k}: {count} -> {done / elapsed:.0f}/s", flush=True)
    ratio = side_by_side(f"recipients/s in {languages} languages", rates[languages], rates[1], ref="one")
    return (
        f" one_language_per_s={statistics.median(rates[1]):.0f}"
        f" languages_{languages}_per_s={statistics.median(rates[languages]):.0f} languages_ratio={ratio:.3f}"
    )


SEGMENT_TAG = "bench-segment"
_SEGMENT_PROFILES = f"""
MERGE (t:Tag {{slug: $slug}})
WITH t
UNWIND range($first, $last) AS i
WITH t, {PROFILE_ID_CYPHER} AS id
MERGE (p:Profile {{profileId: id}})
  ON CREATE SET p.announcementPushOptOut = false, p.announcementEmailOptOut = false
SET p.tenants = [$tenant]
MERGE (p)-[:HAS_TAG {{slug: t.slug, profileId: id}}]->(t)
"""


def seed_segment(graph: Graph, campaign_id: str) -> str:
    """A live notify campaign with no static member and a live segment: the profiles tagged
    SEGMENT_TAG, evaluated by the preview and again by every page of the walk."""
    now = datetime.now(UTC)
    data = {
        "id": campaign_id,
        "name": "Bench segment",
        "channels": ["notify"],
        "notification": {"title": "Bench", "body": "Throughput"},
        "segment": {"tag": SEGMENT_TAG},
    }
    created = definitions.create_campaign(
        graph, data=CampaignCreate.model_validate(data), tenant_id=TENANT, now=now
    )
    definitions.set_status(graph, campaign_id=campaign_id, status="live", now=now)
    return created.created_at


def with_segment(graph: Graph, admin: Admin, *, n: int, rounds: int, give_up: float) -> str:
    """Rounds of ``n``, alternating (the order swapped every round) a campaign whose audience is the
    first ``n`` bench profiles as static members and one whose live segment matches exactly them (a
    tag); the RESULT fields. Both walk the same recipients in the same order through the same worker."""
    for first in range(0, n, SEED_BATCH):
        graph.run(_SEGMENT_PROFILES, first=first, last=min(first + SEED_BATCH, n) - 1, prefix="bench-",
                  slug=SEGMENT_TAG, tenant=TENANT)  # fmt: skip
    rates: dict[str, list[float]] = {"static": [], "segment": []}
    for k in range(1, rounds + 1):
        for mode in ("static", "segment") if k % 2 else ("segment", "static"):
            campaign_id = f"bench-{mode}-{k}"
            if mode == "static":
                seed(graph, campaign_id, n)
            else:
                seed_segment(graph, campaign_id)
            _, elapsed, done = run_dispatch(graph, admin, campaign_id, n, give_up)
            rates[mode].append(done / elapsed)
            print(f"segment round {k}: {mode} -> {done / elapsed:.0f}/s", flush=True)
    ratio = side_by_side("recipients/s over a live segment", rates["segment"], rates["static"], ref="static")
    return (
        f" static_members_per_s={statistics.median(rates['static']):.0f}"
        f" live_segment_per_s={statistics.median(rates['segment']):.0f} segment_ratio={ratio:.3f}"
    )


_PENDING = "MATCH (b:WebhookBatch) WHERE b.endpointId = $id AND b.queueKey > '' RETURN count(b) AS n"


def _drained(graph: Graph, endpoint: str, give_up: float) -> float:
    """Seconds until the endpoint has no queued event (read where ``webhookEndpoints.list`` reads it)."""
    started = time.perf_counter()
    while graph.run(_PENDING, id=endpoint)[0]["n"]:
        if time.monotonic() > give_up:
            raise RuntimeError("the relay did not drain before the deadline")
        time.sleep(0.2)
    return time.perf_counter() - started


def delete_largest(admin: Admin, procs: Processes, campaign_id: str, n: int) -> None:
    """Delete a campaign of ``n`` members (and their states) through the API: retired in one
    transaction, reaped in bounded ones (campaigns/deletion.py)."""
    started = time.perf_counter()
    admin.mutate("campaigns.delete", {"campaignId": campaign_id})
    print(
        f"delete of a {n}-member campaign and its states: {time.perf_counter() - started:.1f}s; "
        f"{procs.peak_rss()}",
        flush=True,
    )
