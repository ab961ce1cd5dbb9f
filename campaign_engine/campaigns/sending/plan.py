"""The review's forecast: when each walked channel of a send would start and finish, and why.

``previewDispatch`` answers ``plan``: per channel (``notify``, ``email``) ``startsAt`` and ``finishesAt``,
the ``rate`` it assumes (recipients/s) and ``rateSource``, and ``shapedBy``, what moves it. The model:

- A channel sends ``n`` recipients at ``rate``, plus the wave delay (``CAMPAIGN_DISPATCH_DELAY_SECONDS``)
  after every page that sent but the last: ``n / rate + (pages - 1) * delay``. ``finishesAt`` is when
  the last recipient is sent; the Dispatch completes one wave delay later when its last page was full
  (one more read finds nothing).
- ``rate`` is ``measured`` when this deployment completed a send on the channel recently: recipients
  over active seconds (start to the last outcome, less the wave delays) of its newest completed
  Dispatches of at least ``MIN_MEASURED`` recipients that waited for no one (quiet hours, local times,
  a test wave): the median of the newest three of a size comparable to this send's, else the median
  of the newest five (``measured_rates``); one index-backed read of at most ``_SCAN`` Dispatches
  per channel (``cypher/sending/plan_rates.cypher``). Otherwise ``configured``: ``CONFIGURED_RATE``, a
  conservative rate of a small machine, as the settings give no rate of their own.
- Quiet hours (not for a critical campaign): the recipients' zones, counted by the preview pass, are
  grouped by when each may first receive (``domain/schedule.py:ready_at``). A per-recipient schedule
  groups them by their own local start the same way. The groups are walked as the worker walks pages
  (``pass_model.py``): a group whose time comes while a pass runs goes out on that pass's later pages
  and the next pass's earlier ones, and a pass pauses after each page that sent.
- A test wave (an experiment asked about): its share is sent first; the rest waits for the decision
  (``decideAfterSeconds``) and then goes out.
- The lane's backlog: other campaigns' Dispatches still sending. Those of the same lane share the
  worker by tenant (``queue/lanes.py``), so this send's rate is its tenant's share while they run
  (assumed to outlast it: the forecast errs late); higher lanes are named, not timed. Other tenants
  are never named, nor their sends counted, in the answer: only this send's share is.
- Frequency caps are named: a capped recipient is skipped, which can only make the send shorter.

The preview's cost stays one pass: the forecast reads the counts the pass kept and two small reads.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from campaign_engine.campaigns.sending.pass_model import finish, passes
from campaign_engine.domain.ab_variants import Experiment
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.dispatch import DeliveryChannel
from campaign_engine.domain.frequency_cap import DEFAULT_TENANT, CapChannel, ChannelCap
from campaign_engine.domain.priority import LANE_RANK, skips_pacing_rules
from campaign_engine.domain.schedule import QuietHours, WallClock, known_zone, ready_at
from campaign_engine.domain.types import format_ts, parse_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Tx
from campaign_engine.graph.tenant_lane import tenant_lane

__all__ = ["CONFIGURED_RATE", "MIN_MEASURED", "ChannelPlan", "Pace", "Shaping", "forecast", "measured_rates"]

# Recipients/s assumed when nothing was measured: what a 2-core machine sustains with room to spare.
CONFIGURED_RATE: dict[str, float] = {"notify": 50.0, "email": 20.0}
# A send smaller than this is not measured: its fixed costs (first page, queue hops) dominate its rate.
MIN_MEASURED = 100
_KEEP = 5  # newest qualifying sends whose median is taken when none is of a comparable size
_COMPARABLE = 3  # newest sends of a comparable size whose median rate is taken
_SCALE = 4  # comparable: within this factor of the send's recipients
_SCAN = 50  # newest finished Dispatches read per channel (bounded whatever the history)

ShapingKind = Literal[
    "waves", "quiet_hours", "test_wave", "backlog", "higher_lanes", "frequency_cap", "deadline"
]


class Shaping(CamelModel):
    kind: ShapingKind
    adds_seconds: int
    """What it adds to the finish (0: named, not timed)."""
    message: str


class ChannelPlan(CamelModel):
    recipients: int
    starts_at: str
    finishes_at: str
    rate: float
    """Recipients per second of sending, before wave delays and waits."""
    rate_source: Literal["measured", "configured"]
    shaped_by: list[Shaping] = []

    def stored(self) -> dict[str, Any]:
        """What a confirmed Dispatch keeps of its forecast, for ``getDispatch``'s live estimate."""
        return {"planRecipients": self.recipients, "planFinishesAt": self.finishes_at, "planRate": self.rate,
                "planRateSource": self.rate_source}  # fmt: skip


@dataclass(frozen=True)
class Pace:
    """The dispatch settings that pace a walk (``DispatchSettings.pace``)."""

    page_size: int = 1000  # CAMPAIGN_DISPATCH_PAGE_SIZE
    email_page_size: int = 500  # CAMPAIGN_EMAIL_PAGE_SIZE
    wave_delay: int = 60  # CAMPAIGN_DISPATCH_DELAY_SECONDS
    min_delay: int = 0  # CAMPAIGN_DEADLINE_MIN_DELAY_SECONDS: the shortest a deadline may pace to
    caps: Mapping[str, Mapping[CapChannel, ChannelCap]] = field(default_factory=dict)

    def page(self, channel: str) -> int:
        return self.email_page_size if channel == "email" else self.page_size


def measured_rates(
    tx: Tx, channels: list[DeliveryChannel], *, pace: Pace, sizes: Mapping[str, int] | None = None
) -> dict[str, float]:
    """Per channel with a recent qualifying send, its rate in recipients per active second: the median
    of the newest ``_COMPARABLE`` sends of a size comparable to ``sizes[channel]`` (within a factor of
    ``_SCALE``), else the median of the newest ``_KEEP``. A rate follows the size (fixed costs weigh on
    a small send, a large one runs warm) and the deployment's current speed; a pooled average (recipients
    over seconds) let one cold, slow send weigh by its length and lagged a deployment whose JIT warmed."""
    out: dict[str, float] = {}
    for row in tx.run(statement("plan_rates"), channels=channels, scan=_SCAN):
        channel = str(row["channel"])
        page = pace.page(channel)
        runs = [run for run in (_active(send, pace.wave_delay, page) for send in row["sends"]) if run]
        size = (sizes or {}).get(channel, 0)
        alike = [r for r in runs if size and size / _SCALE <= r[0] <= size * _SCALE][:_COMPARABLE]
        if alike:
            out[channel] = statistics.median(sent / active for sent, active in alike)
        elif runs:  # the median, not the pooled rate: a slow cold send would weigh by its length
            out[channel] = statistics.median(sent / active for sent, active in runs[:_KEEP])
    return out


def _active(send: Mapping[str, Any], wave_delay: int, page: int) -> tuple[int, float] | None:
    """(recipients, active seconds) of a qualifying send, None for one too small to measure."""
    sent = int(send["sent"] or 0)
    if sent < MIN_MEASURED:
        return None
    elapsed = (parse_ts(send["endedAt"]) - parse_ts(send["startedAt"])).total_seconds()
    # The pauses before the last outcome: one after each page but the last that sent. ``pages`` also
    # counts the read that found nothing after a full last page, which came after the last outcome.
    pauses = max(0, min(int(send["pages"] or 0), math.ceil(sent / page)) - 1)
    used = send.get("used")  # the pause the worker kept after its pages (dispatch_cursor.advance)
    if used is not None:  # waves dominate a waved send (60 s against 0.4 s a page): no floor but noise
        return sent, max(elapsed - pauses * int(used), elapsed / 10_000, 0.001)
    # Sent before the worker recorded its pause: the configured one (or the deadline's, shorter), and a
    # floor in case the worker kept a shorter one than this deployment's settings say.
    paced = send.get("waveDelay")
    waits = pauses * (wave_delay if paced is None else min(wave_delay, int(paced)))
    return sent, max(elapsed - waits, elapsed / 10, 0.001)


def _backlog(tx: Tx, channels: list[DeliveryChannel], campaign_id: str) -> list[dict[str, Any]]:
    return [dict(r) for r in tx.run(statement("plan_backlog"), channels=channels, campaignId=campaign_id)]


def _duration(n: int, rate: float, page: int, delay: int) -> float:
    return n / rate + max(0, math.ceil(n / page) - 1) * delay if n else 0.0


def _groups(
    zones: Counter[str],
    n: int,
    *,
    start: datetime,
    fallback: ZoneInfo,
    quiet: QuietHours | None,
    local: WallClock | None = None,
) -> list[tuple[datetime, float]]:
    """Recipients by the instant they may first receive, earliest first (all at ``start`` without
    quiet hours or a per-recipient ``local`` start); recipients the pass saw without a zone (routed
    guardians) get the campaign's zone."""
    if quiet is None and local is None:
        return [(start, n)]

    def first(zone: ZoneInfo) -> datetime:
        wave = start if local is None else max(start, local.at(zone))
        return max(wave, ready_at(wave=wave, now=wave, zone=zone, quiet=quiet))

    by: Counter[datetime] = Counter()
    for name, k in zones.items():
        by[first(known_zone(name) or fallback)] += k
    rest = n - sum(zones.values())
    if rest > 0:
        by[first(fallback)] += rest
    return sorted((max(at, start), k) for at, k in by.items())


def forecast(
    tx: Tx,
    *,
    campaign: Mapping[str, Any],
    counts: Mapping[str, int],
    zones: Mapping[str, Counter[str]],
    pace: Pace,
    now: datetime,
    experiment: Experiment | None = None,
    local_start: WallClock | None = None,
) -> dict[str, ChannelPlan]:
    """The plan of each channel the campaign walks (``counts``: its recipients) if confirmed at ``now``;
    ``local_start``: a per-recipient schedule's wall clock, each zone starting at its own."""
    walked = campaign.get("channels") or []
    channels: list[DeliveryChannel] = [ch for ch in ("notify", "email") if ch in walked]
    definition = json.loads(campaign["definition"])
    weight = tenant_lane(tx, campaign.get("tenantId"))[1] or 1
    rates = measured_rates(tx, channels, pace=pace, sizes=counts)
    backlog = _backlog(tx, channels, str(campaign["id"]))
    priority = str(campaign.get("priority") or "normal")
    tenant = str(campaign.get("tenantId") or "")
    skips = skips_pacing_rules(priority)
    window = None if skips else definition.get("quietHours")
    quiet = None if not window else QuietHours(*(_wall(window[k]) for k in ("start", "end")))
    fallback = known_zone(str(definition.get("timeZone") or "")) or ZoneInfo("UTC")
    out: dict[str, ChannelPlan] = {}
    for channel in channels:
        n = counts[channel]
        base = rates.get(channel)
        source: Literal["measured", "configured"] = "measured" if base else "configured"
        rate = base or CONFIGURED_RATE[channel]
        shaped: list[Shaping] = []
        page, delay = pace.page(channel), pace.wave_delay
        ahead = sum(int(b["dispatches"]) for b in backlog if b["channel"] == channel
                    and LANE_RANK.get(b["priority"], 1) < LANE_RANK.get(priority, 1))  # fmt: skip
        lane = [b for b in backlog if b["channel"] == channel and b["priority"] == priority]
        if lane:
            others = {b["tenant"] for b in lane} - {tenant}
            own = sum(int(b["dispatches"]) for b in lane if b["tenant"] == tenant)
            share = weight / (weight + len(others)) / (1 + own)
            slow = _duration(n, rate * share, page, delay) - _duration(n, rate, page, delay)
            rate *= share
            shaped.append(Shaping(kind="backlog", adds_seconds=round(slow), message=(
                f"other {priority} sends still running: this send gets {share:.0%} of the worker "
                "while they run")))  # fmt: skip
        if ahead:
            shaped.append(Shaping(kind="higher_lanes", adds_seconds=0, message=(
                f"{ahead} dispatches of a higher lane still sending are served first")))  # fmt: skip
        start = now
        t = now
        if experiment is not None and n:
            tested = min(n, round(n * experiment.test_share))
            decide = now + timedelta(seconds=experiment.decide_after_seconds)
            t = now + timedelta(seconds=_duration(tested, rate, page, delay))
            waited = max(0.0, (decide - t).total_seconds())
            t = max(t, decide)
            shaped.append(Shaping(kind="test_wave", adds_seconds=round(waited), message=(
                f"a test wave of {tested} first; the rest waits for the decision "
                f"{experiment.decide_after_seconds} s after the start")))  # fmt: skip
            n -= tested
        groups = _groups(zones.get(channel, Counter()), n, start=t, fallback=fallback, quiet=quiet,
                         local=local_start)  # fmt: skip
        walked = passes(groups, n, start=t, rate=rate, page=page, delay=delay)
        if walked and experiment is None:
            start = walked[0].at
        ends = finish(walked) or t
        if quiet is not None and window:
            late = sum(k for at, k in groups if at > groups[0][0])
            plain = finish(passes([(t, n)], n, start=t, rate=rate, page=page, delay=delay)) or t
            adds = round((ends - plain).total_seconds())
            shaped.append(Shaping(kind="quiet_hours", adds_seconds=adds, message=(
                f"quiet hours {window['start']}-{window['end']} in recipients' local time: "
                f"{late} recipients wait for them to end")))  # fmt: skip
        t = ends
        pages = math.ceil(max(n, 1) / page)
        if delay and pages > 1:
            shaped.append(Shaping(kind="waves", adds_seconds=(pages - 1) * delay,
                                  message=f"{pages} waves of {page}, {delay} s apart"))  # fmt: skip
        cap = None if skips else (pace.caps.get(tenant) or pace.caps.get(DEFAULT_TENANT) or {}).get(channel)
        if cap is not None:
            shaped.append(Shaping(kind="frequency_cap", adds_seconds=0, message=(
                f"at most {cap.max} per {cap.window_seconds} s: recipients at their cap are "
                "skipped, which can only finish it sooner")))  # fmt: skip
        out[channel] = ChannelPlan(
            recipients=counts[channel], starts_at=format_ts(start), finishes_at=format_ts(t),
            rate=round(rate, 3), rate_source=source, shaped_by=shaped,
        )  # fmt: skip
    return out


def _wall(value: str) -> time:
    return datetime.strptime(value, "%H:%M").time()
