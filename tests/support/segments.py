"""What the live-segment tests share: profiles, tags and campaign states written straight to the graph,
a campaign given a segment, the page jobs and deliveries on a queue, and the audience read back."""

from __future__ import annotations

from typing import Any

from campaign_engine.campaigns.audience.members import get_audience
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.domain.dispatch import PageJob, parse_job
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import Policy, policy_params
from campaign_engine.graph.rules.segment import compile_for
from campaign_engine.graph.rules.segment_statements import segment_query
from campaign_engine.queue.port import Queue
from tests.support.delivery import (
    NOW,
    make_campaign,
)

DISPATCH_SETTINGS = DispatchSettings(adult_age=18, max_recipients=100)

HOOK = "http://127.0.0.1:9/hook"


def _profiles(graph: Graph, ids: list[str], *, tenant: str = "default", **props: Any) -> None:
    graph.run(
        "UNWIND $ids AS id MERGE (p:Profile {profileId: id}) "
        "SET p.tenants = [$tenant], p.notificationsWebhook = $hook, p += $props",
        ids=ids, tenant=tenant, hook=HOOK, props=props,
    )  # fmt: skip


def _tag(graph: Graph, ids: list[str], slug: str) -> None:
    graph.run(
        "MERGE (t:Tag {slug: $slug}) WITH t UNWIND $ids AS id MATCH (p:Profile {profileId: id}) "
        "MERGE (p)-[:HAS_TAG {slug: t.slug, profileId: id}]->(t)",  # as upsert_profiles.cypher writes it
        slug=slug, ids=ids,
    )  # fmt: skip


def _state(graph: Graph, campaign_id: str, profile_id: str, **props: Any) -> None:
    graph.run(
        "MATCH (p:Profile {profileId: $pid}), (c:Campaign {id: $cid}) CREATE (p)-[s:CAMPAIGN_STATE]->(c) "
        "SET s += $props",
        pid=profile_id, cid=campaign_id, props=props,
    )  # fmt: skip


def _segmented(graph: Graph, campaign_id: str, segment: dict[str, Any], **extra: Any) -> None:
    make_campaign(graph, campaign_id, segment=segment, **extra)


def _page_jobs(queue: Queue) -> list[PageJob]:
    out = []
    for message in queue.receive(max_messages=10):
        job = parse_job(message.body)
        assert isinstance(job, PageJob)
        queue.delete(message.receipt)
        out.append(job)
    return out


def _delivered(queue: Queue) -> list[str]:
    found: list[str] = []
    while batch := queue.receive(max_messages=10):
        found += [parse_job(m.body).profile_id for m in batch]  # type: ignore[union-attr]
        for m in batch:
            queue.delete(m.receipt)
    return sorted(found)


def _policy() -> Policy:
    return Policy(now=NOW, adult_age=18, domain="campaigns.test")


def _audience(graph: Graph, campaign_id: str, limit: int = 100) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = get_audience(graph, campaign_id=campaign_id, cursor=cursor, limit=limit, policy=_policy())
        ids += [r.profile_id for r in page.records]
        if not page.has_more:
            return ids
        cursor = page.cursor


def _plan_statement(graph: Graph, campaign_id: str) -> tuple[str, dict[str, Any]]:
    node = graph.run("MATCH (c:Campaign {id: $id}) RETURN c {.*} AS c", id=campaign_id)[0]["c"]
    compiled = graph.read(lambda tx: compile_for(tx, node))
    assert compiled is not None
    params = {"campaignId": campaign_id, "cursor": "", "limit": 100, "now": "2026-03-01T12:00:00.000000Z",
              "readyAt": {}, "fallbackReadyAt": "2026-03-01T12:00:00.000000Z", "staleBefore": None,
              **policy_params(NOW, 18), **compiled.params(NOW)}  # fmt: skip
    return segment_query("dispatch_page", compiled), params
