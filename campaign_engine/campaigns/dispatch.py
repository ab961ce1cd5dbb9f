"""Reviewed dispatch: preview what a send would do, confirm it once, and read its progress.

``preview_dispatch`` is read-only and returns a token that digests the definition, revision and the
sorted eligible profile ids. ``dispatch`` recomputes the same thing under the campaign lock: a stale
token is CONFLICT, and success advances the revision so one token confirms one send. The Dispatch
record commits *before* the first page job is enqueued (the lock is released first); if that enqueue
fails the dispatch still stands and the sweeper re-arms it ("duplicate over drop").

A new dispatch supersedes a dispatch of the same campaign still ``sending`` (it is marked stopped), so
two confirmations never leave two chains walking one audience.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from campaign_engine.delivery.queue.port import Queue, QueueError
from campaign_engine.domain.dispatch import (
    DeliveryChannel,
    DispatchStatus,
    PageJob,
    job_json,
    preview_token,
    send_blocked,
)
from campaign_engine.domain.errors import BadRequest, Conflict, NotFound
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_campaign
from campaign_engine.graph.policy import policy_params, policy_query

__all__ = [
    "ALL_CHANNELS",
    "DispatchPreview",
    "DispatchPublic",
    "DispatchStarted",
    "dispatch",
    "get_dispatch",
    "list_dispatches",
    "preview_dispatch",
]

log = logging.getLogger(__name__)

_WIRE = ConfigDict(populate_by_name=True)


class DispatchPreview(BaseModel):
    model_config = _WIRE

    audience_count: Annotated[int, Field(alias="audienceCount")]
    already_notified_count: Annotated[int, Field(alias="alreadyNotifiedCount")]
    recipient_count: Annotated[int, Field(alias="recipientCount")]
    notification_recipient_count: Annotated[int, Field(alias="notificationRecipientCount")]
    email_recipient_count: Annotated[int, Field(alias="emailRecipientCount")]
    preview_token: Annotated[str, Field(alias="previewToken")]
    blocked_reason: Annotated[str | None, Field(alias="blockedReason")] = None


class DispatchStarted(BaseModel):
    model_config = _WIRE

    dispatch_id: Annotated[str, Field(alias="dispatchId")]
    channels: list[DeliveryChannel]
    dispatch_ids: Annotated[dict[str, str], Field(alias="dispatchIds")] = {}


class DispatchPublic(BaseModel):
    model_config = _WIRE

    dispatch_id: Annotated[str, Field(alias="dispatchId")]
    campaign_id: Annotated[str, Field(alias="campaignId")]
    campaign_created_at: Annotated[str, Field(alias="campaignCreatedAt")]
    channel: str
    status: DispatchStatus
    pages: int
    enqueued: int
    acknowledged: int
    rejected: int
    suppressed: int
    # Email dispatches: emailed = accepted by the provider; uncertain = claimed, fate unknown (an
    # operator must look; never retried); throttled = deferred by back-pressure, not an error.
    emailed: int = 0
    throttled: int = 0
    uncertain: int = 0
    cursor: str | None = None
    started_at: Annotated[str, Field(alias="startedAt")]
    last_progress_at: Annotated[str, Field(alias="lastProgressAt")]
    finished_at: Annotated[str | None, Field(alias="finishedAt")] = None
    next_page_at: Annotated[str | None, Field(alias="nextPageAt")] = None
    last_error: Annotated[str | None, Field(alias="lastError")] = None
    # Consecutive failed attempts at the page after `cursor` (CAMPAIGN_DISPATCH_MAX_PAGE_FAILURES fails
    # the dispatch); pastErrors: the lastError of each failure a resumeDispatch cleared, oldest first.
    page_failures: Annotated[int, Field(alias="pageFailures")] = 0
    past_errors: Annotated[list[str], Field(alias="pastErrors")] = []


class _Computed(BaseModel):
    campaign: dict[str, Any]
    preview: DispatchPreview


def _preview_cypher() -> str:
    return policy_query("dispatch_preview")


def blocked_reason(campaign: dict[str, Any], *, now: str) -> str | None:
    """Why a campaign cannot be sent right now, before looking at recipients (issue order)."""
    return send_blocked(campaign, channels=["notify", "email"], missing="notify_disabled", now=now)


ALL_CHANNELS: frozenset[DeliveryChannel] = frozenset({"notify", "email"})

# A channel of the campaign this deployment cannot deliver blocks the whole send (issue 11): its Dispatch
# could only fail in the worker. The API passes the channels it can deliver, decided from its Settings.
_HINTS = {"email_not_configured": "this deployment has no email provider; set CAMPAIGN_EMAIL_PROVIDER"}


def _undeliverable(campaign: dict[str, Any], deliverable: frozenset[DeliveryChannel]) -> str | None:
    channels = campaign.get("channels") or []
    missing = [ch for ch in ("notify", "email") if ch in channels and ch not in deliverable]
    return f"{missing[0]}_not_configured" if missing else None


def _why(reason: str) -> str:
    hint = _HINTS.get(reason)
    return f"campaign cannot be dispatched: {reason}" + (f" ({hint})" if hint else "")


def _compute(
    tx: Tx,
    *,
    campaign_id: str,
    now: datetime,
    adult_age: int,
    max_recipients: int,
    deliverable: frozenset[DeliveryChannel] = ALL_CHANNELS,
) -> _Computed:
    # The channel flag is read from the node in a first, cheap query so the recipient query can skip
    # the audience walk entirely for campaigns without the notify channel.
    record = tx.run("MATCH (c:Campaign {id: $id}) RETURN c.channels AS channels", id=campaign_id).single()
    if record is None:
        raise NotFound(f"campaign '{campaign_id}' not found")
    row = tx.run(
        _preview_cypher(),
        campaignId=campaign_id,
        notify="notify" in (record["channels"] or []),
        cap=max_recipients + 1,
        **policy_params(now, adult_age),
    ).single()
    assert row is not None
    campaign = dict(row["campaign"])
    ids: list[str] = list(row["notifyIds"])
    email_rows: list[tuple[str, str]] = []
    if "email" in (record["channels"] or []):
        email_rows = [
            (r["profileId"], r["address"])
            for r in tx.run(
                policy_query("email_preview"),
                campaignId=campaign_id,
                cap=max_recipients + 1,
                **policy_params(now, adult_age),
            )
        ]
    if len(ids) > max_recipients or len(email_rows) > max_recipients:
        raise BadRequest(
            f"more than {max_recipients} eligible recipients; raise CAMPAIGN_PREVIEW_MAX_RECIPIENTS to send"
        )
    token = preview_token(
        campaign_id=campaign["id"],
        created_at=campaign["createdAt"],
        revision=int(campaign["revision"]),
        definition=campaign["definition"],
        # Email destinations (profile and address) join the digest: a changed address is a new preview.
        profile_ids=[*ids, *(f"email\x1f{pid}\x1f{address}" for pid, address in email_rows)],
    )
    recipients = set(ids) | {pid for pid, _ in email_rows}
    reason = blocked_reason(campaign, now=format_ts(now)) or _undeliverable(campaign, deliverable)
    if reason is None and not recipients:
        reason = "no_recipients"
    preview = DispatchPreview(
        audience_count=row["audienceCount"],
        already_notified_count=row["alreadyNotifiedCount"],
        recipient_count=len(recipients),  # distinct profiles across notify and email
        notification_recipient_count=len(ids),
        email_recipient_count=len(email_rows),
        preview_token=token,
        blocked_reason=reason,
    )
    return _Computed(campaign=campaign, preview=preview)


def preview_dispatch(
    graph: Graph,
    *,
    campaign_id: str,
    now: datetime,
    adult_age: int,
    max_recipients: int,
    deliverable: frozenset[DeliveryChannel] = ALL_CHANNELS,
) -> DispatchPreview:
    """``deliverable``: the channels this deployment can deliver (the API's ``Services``)."""
    computed = graph.read(
        _compute,
        campaign_id=campaign_id,
        now=now,
        adult_age=adult_age,
        max_recipients=max_recipients,
        deliverable=deliverable,
    )
    return computed.preview


_WALKED_CHANNELS: tuple[DeliveryChannel, ...] = ("notify", "email")

_SUPERSEDE = """
MATCH (old:Dispatch {status: 'sending'})-[:DISPATCH_OF]->(:Campaign {id: $campaignId})
SET old.status = 'stopped', old.lastError = 'superseded', old.finishedAt = $now
"""

# One Dispatch (own cursor) per delivery channel of the campaign; the revision advances once.
_CREATE = """
MATCH (c:Campaign {id: $campaignId})
SET c.revision = c.revision + 1
WITH c
UNWIND $dispatches AS row
CREATE (d:Dispatch {id: row.id, channel: row.channel, status: 'sending', cursor: null, pages: 0,
                    enqueued: 0, acknowledged: 0, rejected: 0, suppressed: 0, emailed: 0, throttled: 0,
                    uncertain: 0, startedAt: $now, lastProgressAt: $now,
                    campaignCreatedAt: c.createdAt})-[:DISPATCH_OF]->(c)
RETURN DISTINCT c.createdAt AS createdAt
"""


def dispatch(
    graph: Graph,
    queue: Queue,
    *,
    campaign_id: str,
    expected_token: str | None,
    now: datetime,
    adult_age: int,
    max_recipients: int,
    deliverable: frozenset[DeliveryChannel] = ALL_CHANNELS,
) -> DispatchStarted:
    # Ids are drawn outside the tx function: a driver retry keeps them.
    ids: dict[DeliveryChannel, str] = {ch: f"dsp_{uuid.uuid4().hex}" for ch in _WALKED_CHANNELS}
    stamp = format_ts(now)

    def tx_fn(tx: Tx) -> tuple[str, list[DeliveryChannel]]:
        if lock_campaign(tx, campaign_id) is None:
            raise NotFound(f"campaign '{campaign_id}' not found")
        computed = _compute(
            tx,
            campaign_id=campaign_id,
            now=now,
            adult_age=adult_age,
            max_recipients=max_recipients,
            deliverable=deliverable,
        )
        preview = computed.preview
        if expected_token is not None and expected_token != preview.preview_token:
            raise Conflict("the dispatch preview is stale; preview again and confirm the new token")
        if preview.blocked_reason is not None:
            raise BadRequest(_why(preview.blocked_reason))
        tx.run(_SUPERSEDE, campaignId=campaign_id, now=stamp).consume()
        walked = [ch for ch in _WALKED_CHANNELS if ch in (computed.campaign.get("channels") or [])]
        rows = [{"id": ids[ch], "channel": ch} for ch in walked]
        row = tx.run(_CREATE, campaignId=campaign_id, dispatches=rows, now=stamp).single()
        assert row is not None
        return str(row["createdAt"]), walked

    created_at, channels = graph.write(tx_fn)
    # The lock is released and the Dispatch committed: queue I/O may now fail without losing the send.
    jobs = [
        PageJob(dispatch_id=ids[ch], campaign_id=campaign_id, campaign_created_at=created_at, channel=ch)
        for ch in channels
    ]
    try:
        queue.send_batch([job_json(job) for job in jobs])
    except QueueError:
        log.warning("dispatch.first_page_enqueue_failed campaign_id=%s", campaign_id)
    log.info("dispatch.started dispatch_id=%s campaign_id=%s", ids[channels[0]], campaign_id)
    return DispatchStarted(
        dispatch_id=ids[channels[0]], channels=channels, dispatch_ids={ch: ids[ch] for ch in channels}
    )


_GET = """
MATCH (d:Dispatch {id: $dispatchId})-[:DISPATCH_OF]->(c:Campaign)
RETURN d {.*, campaignId: c.id} AS dispatch
"""

_LIST = """
MATCH (d:Dispatch)-[:DISPATCH_OF]->(c:Campaign {id: $campaignId})
RETURN d {.*, campaignId: c.id} AS dispatch
ORDER BY d.startedAt DESC, d.id
LIMIT 200
"""


def dispatch_from_node(node: dict[str, Any]) -> DispatchPublic:
    return DispatchPublic.model_validate({**node, "dispatchId": node["id"]})


def get_dispatch(graph: Graph, dispatch_id: str) -> DispatchPublic:
    rows = graph.read(lambda tx: [dict(r["dispatch"]) for r in tx.run(_GET, dispatchId=dispatch_id)])
    if not rows:
        raise NotFound(f"dispatch '{dispatch_id}' not found")
    return dispatch_from_node(rows[0])


def list_dispatches(graph: Graph, campaign_id: str) -> list[DispatchPublic]:
    rows = graph.read(lambda tx: [dict(r["dispatch"]) for r in tx.run(_LIST, campaignId=campaign_id)])
    return [dispatch_from_node(row) for row in rows]
