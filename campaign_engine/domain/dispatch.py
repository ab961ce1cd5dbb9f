"""Dispatch job messages and the pure identities of a send: delivery ids and preview tokens.

Every job carries ``campaignId`` *and* ``campaignCreatedAt`` so work queued for an older incarnation of
a campaign id (delete + recreate) is recognised and dropped. Message ``type`` names are wire names and
stay stable when modules move. Bodies are validated at the edge (``parse_job``) and trusted inside.

The delivery id is a digest over the campaign incarnation and the profile: the same recipient gets the
same id on every retry *and* on a re-dispatch, so it doubles as the Standard Webhooks ``webhook-id``
that receivers may deduplicate on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, TypeAdapter

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.priority import JobLane
from campaign_engine.domain.reasons import BlockedReason

__all__ = [
    "DeliveryChannel",
    "DeliveryJob",
    "DispatchStatus",
    "Job",
    "PageJob",
    "RelayJob",
    "TokenDigest",
    "delivery_id",
    "job_json",
    "parse_job",
    "preview_token",
    "send_blocked",
]

DeliveryChannel = Literal["notify", "email"]
"""Channels that a Dispatch walks; each has its own Dispatch record, cursor and page worker."""

DispatchStatus = Literal[
    "scheduled", "sending", "paused", "completed", "stopped", "failed", "missed", "cancelled", "needs_review"
]
"""``scheduled`` waits for its ``sendAt`` (campaigns/sending/schedule.py), then becomes ``sending``, or
``missed`` (too late), ``cancelled`` (by an admin, or the campaign stopped being live) or ``needs_review``.
``paused``: the health guard held it before a page (``pauseReason``, domain/dispatch_health.py) until an
admin's ``campaigns.resumeDispatch``; nothing is sent, and the sweeper leaves it alone."""

_Id = Annotated[str, Field(min_length=1, max_length=200)]


class _Message(CamelModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PageJob(_Message):
    """Read the page of members after ``cursor`` (None = from the beginning) and enqueue deliveries."""

    type: Literal["page"] = "page"
    dispatch_id: _Id
    campaign_id: _Id
    campaign_created_at: str
    channel: DeliveryChannel = "notify"
    cursor: Annotated[str | None, Field(max_length=200)] = None
    lane: JobLane | None = None
    """The lane its walk sends in (``domain/priority.py``); each page sets its successor's from the
    campaign and tenant it read, so a priority or weight changed mid-send applies from the next page."""
    _message_id: str | None = PrivateAttr(default=None)

    @property
    def message_id(self) -> str | None:
        """The queue message this job arrived in (None when not received from a queue); never on the
        wire. Each cursor move records it, so a redelivery of that very message can tell that its walk
        died before enqueueing the successor (``dispatch_cursor.resend_lost_successor``)."""
        return self._message_id

    def received_in(self, message_id: str) -> PageJob:
        """This job as received in ``message_id``; copies of it (the pages of one walk) keep the id."""
        job = self.model_copy()
        job._message_id = message_id
        return job


class DeliveryJob(_Message):
    """POST one announcement to one profile. ``campaignTestId`` marks an admin's send-to-me test."""

    type: Literal["notify"] = "notify"
    delivery_id: _Id
    dispatch_id: _Id | None = None
    campaign_id: _Id
    campaign_created_at: str
    profile_id: _Id
    campaign_test_id: _Id | None = None
    paged_member: bool | None = None
    """Enqueued by a page of a campaign with a live segment, which found the profile in its
    audience moments ago; the recheck does not evaluate the rule again (absent: a static member)."""
    routed_from: Annotated[list[_Id] | None, Field(max_length=1000)] = None
    """A guardian's job, routed from these members of the page that enqueued it (the
    age policy excludes them); the recheck holds the guardian to a link with consent granted to one of
    them instead of membership (absent: a member)."""


class RelayJob(_Message):
    """Send one event-webhook endpoint's queued events, oldest first (``delivery/webhook_relay.py``)."""

    type: Literal["webhooks"] = "webhooks"
    endpoint_id: _Id


Job = Annotated[PageJob | DeliveryJob | RelayJob, Field(discriminator="type")]
_JOB: TypeAdapter[PageJob | DeliveryJob | RelayJob] = TypeAdapter(Job)


def parse_job(body: str) -> PageJob | DeliveryJob | RelayJob:
    """Validate a queue body; raises ``pydantic.ValidationError`` on anything else."""
    return _JOB.validate_json(body)


def job_json(job: PageJob | DeliveryJob | RelayJob) -> str:
    return job.model_dump_json(by_alias=True, exclude_none=True)


def delivery_id(
    *, campaign_id: str, campaign_created_at: str, profile_id: str, test_id: str | None = None
) -> str:
    """Stable per (campaign incarnation, profile[, test]): retries and re-dispatches reuse it."""
    parts = [campaign_id, campaign_created_at, profile_id] + ([test_id] if test_id else [])
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
    return f"dlv_{digest[:40]}"


class TokenDigest:
    """A preview token built entry by entry, so no recipient list is held whole. ``scope`` names a
    token over part of a preview (``"inApp"``: only who sees the in-app card); it joins the head, so
    a part's token never equals a whole preview's."""

    def __init__(
        self, *, campaign_id: str, created_at: str, revision: int, definition: str, scope: str | None = None
    ) -> None:
        head: dict[str, Any] = {
            "campaignId": campaign_id,
            "createdAt": created_at,
            "revision": revision,
            "definition": definition,
        }
        if scope is not None:
            head["scope"] = scope
        self._hasher = hashlib.sha256(json.dumps(head, sort_keys=True, separators=(",", ":")).encode())

    def add(self, entry: str) -> None:
        self._hasher.update(b"\x1e" + entry.encode())

    def token(self) -> str:
        return f"pvw_{self._hasher.hexdigest()}"


def preview_token(
    *, campaign_id: str, created_at: str, revision: int, definition: str, profile_ids: Iterable[str]
) -> str:
    """Digest of what a dispatch would send; any change to the definition, revision or set differs.

    ``profile_ids`` must be sorted by the caller (the query returns them ordered); they never leave
    the server, only this digest does.
    """
    digest = TokenDigest(
        campaign_id=campaign_id, created_at=created_at, revision=revision, definition=definition
    )
    for profile_id in profile_ids:
        digest.add(profile_id)
    return digest.token()


def send_blocked(
    campaign: Mapping[str, Any], *, channels: Iterable[str], missing: BlockedReason, now: str
) -> BlockedReason | None:
    """Why ``campaign`` (node properties) cannot send now: not live, none of ``channels`` enabled
    (reported as ``missing``), or outside its window; ``None`` when it can. ``now`` is a stored
    timestamp, compared as text like the graph's own."""
    if campaign.get("status") != "live":
        return "not_live"
    if not set(channels) & set(campaign.get("channels") or []):
        return missing
    if campaign.get("startsAt") and now < campaign["startsAt"]:
        return "not_started"
    if campaign.get("endsAt") and now >= campaign["endsAt"]:
        return "ended"
    return None
