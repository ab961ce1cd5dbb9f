"""A job's lane as the queue's ``Lane``, and sending page jobs each in its own lane.

Every sender of page jobs (the dispatch, a schedule, a resume, the sweeper, the walks' successors)
goes through ``send_pages``, so a walk's jobs never fall back to the normal lane on one path.
"""

from __future__ import annotations

from collections.abc import Sequence

from campaign_engine.domain.dispatch import PageJob, job_json
from campaign_engine.domain.priority import LANE_RANK, JobLane
from campaign_engine.queue.port import Lane, Queue

__all__ = ["queue_lane", "send_pages"]


def queue_lane(lane: JobLane | None) -> Lane | None:
    """None (the default lane) for a job without one."""
    if lane is None:
        return None
    return Lane(rank=LANE_RANK[lane.priority], group=lane.tenant, weight=float(lane.weight))


def send_pages(queue: Queue, jobs: Sequence[PageJob], *, delay_seconds: int = 0) -> None:
    """Send ``jobs``, one batch per distinct lane (in practice one: a dispatch's channels share it)."""
    by_lane: dict[JobLane | None, list[str]] = {}
    for job in jobs:
        by_lane.setdefault(job.lane, []).append(job_json(job))
    for lane, bodies in by_lane.items():
        queue.send_batch(bodies, delay_seconds=delay_seconds, lane=queue_lane(lane))
